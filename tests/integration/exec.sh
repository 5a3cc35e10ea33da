#!/bin/bash
# exec.sh: `ohbox exec` on real sandboxes from the busybox image: the exec'd
# process is in every namespace and the cgroup of the sandbox, with its
# capabilities, seccomp and no_new_privs; exit codes; env, -w, -u; a real
# terminal session (a pty driven from Debian's python3): raw mode, window
# size at start and on resize, Ctrl-C delivered inside, terminal restored;
# -t with a pipe; stopped and paused sandboxes.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"
PY=/usr/bin/python3

# start_sb NAME [RUN OPTIONS...]: a detached busybox sandbox running sleep;
# sets SB_ID, SB_INIT (its init's host pid) and SB_CMD (its command's).
start_sb ()
{
  local name=$1
  shift
  load_bb
  SB_ID=$(ohbox run -d --name "$name" "$@" "$BB" sleep 1000)
  SB_INIT=$(jq -r .pid "$OHBOX_RUNROOT/$SB_ID/state.json")
  # Its monitor is killed when the test ends, pass or fail: the init dies
  # with it (PDEATHSIG), and every exec'd process with the PID namespace.
  t_track "$(awk '{print $4}' "/proc/$SB_INIT/stat")"
  SB_CMD=$(cat "/proc/$SB_INIT/task/$SB_INIT/children" | awk '{print $1}')
  [ -n "$SB_CMD" ] || { echo "no command process under init $SB_INIT" >&2; return 1; }
}

status_field ()
{
  awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"
}

# The host pid of the process running exactly CMDLINE, waited for.
wait_pid_of ()
{
  local i p
  for i in $(seq 100); do
    p=$(pgrep -xf "$1" | head -1 || true)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.05
  done
  return 1
}

test_namespaces_cgroup_security ()
{
  start_sb ns1
  local tag=777.$BASHPID
  ohbox exec ns1 sleep "$tag" &
  local bg=$!
  t_track "$bg"
  local p
  p=$(wait_pid_of "sleep $tag")
  local ns
  for ns in user mnt pid uts ipc net cgroup; do
    assert_eq "$(readlink /proc/$p/ns/$ns)" "$(readlink /proc/$SB_INIT/ns/$ns)"
    # and not the host's (every one of these is new for a default sandbox)
    assert_ne "$(readlink /proc/$p/ns/$ns)" "$(readlink /proc/self/ns/$ns)"
  done
  assert_eq "$(cat /proc/$p/cgroup)" "$(cat /proc/$SB_INIT/cgroup)"
  assert_contains "$(cat /proc/$p/cgroup)" "$SB_ID"
  # The capabilities against the default set written out (tests/lib/ohbox.sh),
  # not against the sandbox's own processes: a capability both kept by
  # mistake would pass that comparison.
  assert_default_caps "$(cat /proc/$p/status)" "the exec'd process"
  assert_default_caps "$(cat /proc/$SB_CMD/status)" "the sandbox's command"
  local f
  for f in NoNewPrivs Seccomp; do
    assert_eq "$(status_field $p $f)" "$(status_field $SB_CMD $f)"
  done
  assert_eq "$(status_field $p Seccomp)" 2
  # Docker's default: no no_new_privs (sudo works), the filter loaded anyway
  assert_eq "$(status_field $p NoNewPrivs)" 0
  # its root is the sandbox's rootfs, its parent pid inside the sandbox 0
  assert_eq "$(stat -L -c %d:%i /proc/$p/root)" "$(stat -L -c %d:%i /proc/$SB_CMD/root)"
  kill "$p"
  wait "$bg" || true
  # Seen from inside: the sandbox's /proc, pid 1 is the init.
  assert_ok ohbox exec ns1 sh -c 'cat /proc/self/cgroup; grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status; ps -o pid,args'
  assert_contains "$out" "0::/"
  assert_match "$out" "Seccomp:[[:space:]]+2"
  assert_match "$out" "sleep 1000"
  assert_no_match "$out" "pytest|run-tests|bash"
  ohbox rm -f ns1 >/dev/null
}

test_same_profile_as_run ()
{
  start_sb prof --security-opt seccomp=unconfined --cap-add SYS_ADMIN --cap-drop NET_RAW
  assert_ok ohbox exec prof sh -c 'grep -E "^(Seccomp|CapEff):" /proc/self/status'
  assert_match "$out" "Seccomp:[[:space:]]+0"
  # the default set with CAP_SYS_ADMIN in and CAP_NET_RAW out
  local want n
  want=$(t_caps_mask SYS_ADMIN $(for n in $T_DEFAULT_CAPS; do [ "$n" = NET_RAW ] || echo "$n"; done))
  assert_contains "$out" "CapEff:	$want"
  assert_eq "$want" "$(status_field $SB_CMD CapEff)" "the sandbox's command"
  ohbox rm -f prof >/dev/null
  # no_new_privs asked for: the exec'd process has it and the filter too
  start_sb nnp --security-opt no-new-privileges
  assert_ok ohbox exec -u 1000 nnp sh -c 'grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status'
  assert_match "$out" "Seccomp:[[:space:]]+2"
  assert_match "$out" "NoNewPrivs:[[:space:]]+1"
  ohbox rm -f nnp >/dev/null
}

test_exit_codes ()
{
  start_sb codes
  assert_ok ohbox exec codes echo hello
  assert_eq "$out" "hello"
  assert_exit 7 ohbox exec codes sh -c 'exit 7'
  assert_exit 127 ohbox exec codes no-such-command
  assert_contains "$err" "not found"
  assert_exit 126 ohbox exec codes /etc/passwd
  assert_exit 137 ohbox exec codes sh -c 'kill -9 $$'
  assert_exit 125 ohbox exec no-such-sandbox true
  assert_exit 125 ohbox exec codes
  ohbox rm -f codes >/dev/null
}

test_env_workdir_user ()
{
  start_sb envs -e FROM_RUN=1 -e OVER=run -w /etc
  assert_ok ohbox exec envs sh -c 'echo "$FROM_RUN $OVER $HOME"; pwd; id -u; id -g'
  assert_eq "$out" "1 run /root
/etc
0
0"
  assert_ok ohbox exec -e OVER=exec -e NEW=2 -w /tmp -u 1000:1001 envs sh -c 'echo "$FROM_RUN $OVER $NEW"; pwd; id -u; id -g; grep ^CapEff: /proc/self/status'
  assert_eq "$(echo "$out" | head -4)" "1 exec 2
/tmp
1000
1001"
  # a user other than root gets no capabilities (as with run -u)
  assert_match "$out" "CapEff:[[:space:]]+0+$"
  # root gets exactly the default set (the sandbox's -e/-w change nothing)
  assert_ok ohbox exec envs cat /proc/self/status
  assert_default_caps "$out" "exec as root"
  assert_exit 125 ohbox exec -w relative envs true
  assert_exit 125 ohbox exec -u no-such-user envs true
  ohbox rm -f envs >/dev/null
}

test_stdin ()
{
  start_sb stdin
  assert_ok sh -c "echo piped | '$OHBOX_BIN' --root '$T_ROOT' exec -i stdin cat"
  assert_eq "$out" "piped"
  # without -i the command's stdin is /dev/null
  assert_ok sh -c "echo piped | '$OHBOX_BIN' --root '$T_ROOT' exec stdin cat"
  assert_eq "$out" ""
  # -t with a pipe as stdin: its end is the terminal's end of file
  assert_ok sh -c "printf 'abc\n' | timeout 20 '$OHBOX_BIN' --root '$T_ROOT' exec -it stdin cat"
  assert_contains "$out" "abc"
  assert_ok sh -c "printf 'tty; exit 4\n' | timeout 20 '$OHBOX_BIN' --root '$T_ROOT' exec -it stdin sh; echo rc=\$?"
  assert_contains "$out" "/dev/pts/"
  assert_contains "$out" "rc=4"
  ohbox rm -f stdin >/dev/null
}

test_terminal_session ()
{
  [ -x "$PY" ] || skip "no $PY"
  start_sb term
  cat > "$T_WORK/drive.py" <<'PYEOF'
import fcntl, os, select, signal, struct, sys, termios, time
from ptydrive import check_raw_resize_interrupt, expect, setsize, spawn

pid, fd = spawn(sys.argv[1:])
setsize(fd, 40, 100)
before = termios.tcgetattr(fd)
os.write(fd, b"stty size; echo MARK1\r")
expect(fd, "40 100")
expect(fd, "MARK1\r\n")
check_raw_resize_interrupt(fd)
os.write(fd, b"exit 5\r")
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
after = termios.tcgetattr(fd)
if after != before:
    sys.exit("terminal not restored: %r != %r" % (after, before))
print("exit", code)
PYEOF
  assert_ok env PYTHONPATH="$T_LIB" timeout 60 "$PY" "$T_WORK/drive.py" "$OHBOX_BIN" --root "$T_ROOT" exec -it term sh
  assert_contains "$out" "exit 5"
  ohbox rm -f term >/dev/null
}

test_stopped_and_paused ()
{
  start_sb life
  assert_ok ohbox pause life
  assert_exit 125 ohbox exec life true
  assert_contains "$err" "paused"
  assert_contains "$err" "ohbox unpause"
  assert_ok ohbox unpause life
  assert_ok ohbox exec life true
  assert_ok ohbox stop -t 1 life
  assert_exit 125 ohbox exec life true
  assert_contains "$err" "not running"
  ohbox rm -f life >/dev/null
}

test_dies_with_sandbox ()
{
  start_sb dies
  local tag=555.$BASHPID
  ohbox exec dies sleep "$tag" &
  local bg=$! p
  t_track "$bg"
  p=$(wait_pid_of "sleep $tag")
  assert_ok ohbox stop -t 1 dies
  local rc=0
  wait "$bg" || rc=$?
  assert_eq "$rc" 137
  assert_gone_pid ()
  {
    [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' /proc/$1/stat)" = Z ]
  }
  assert_gone_pid "$p"
  ohbox rm -f dies >/dev/null
}

test_detach_keys ()
{
  [ -x "$PY" ] || skip "no $PY"
  start_sb det
  cat > "$T_WORK/detach.py" <<'PYEOF'
import os, sys, time
from ptydrive import spawn

pid, fd = spawn(sys.argv[1:])
time.sleep(0.5)
os.write(fd, b"sleep %s\r" % os.environ["SLEEP_ARG"].encode())
time.sleep(0.5)
os.write(fd, b"\x18x")  # ctrl-x,x: the --detach-keys below
_, status = os.waitpid(pid, 0)
print("exit", os.waitstatus_to_exitcode(status))
PYEOF
  local tag=333.$BASHPID
  assert_ok env SLEEP_ARG="$tag" PYTHONPATH="$T_LIB" timeout 30 "$PY" "$T_WORK/detach.py" "$OHBOX_BIN" --root "$T_ROOT" exec -it --detach-keys ctrl-x,x det sh
  assert_contains "$out" "exit 0"
  # the session goes on without us
  local p
  p=$(wait_pid_of "sleep $tag")
  assert_eq "$(readlink /proc/$p/ns/pid)" "$(readlink /proc/$SB_INIT/ns/pid)"
  assert_exit 125 ohbox exec -it --detach-keys ctrl-7 det true
  assert_contains "$err" "invalid detach key"
  ohbox rm -f det >/dev/null
}

run_test namespaces_cgroup_security test_namespaces_cgroup_security
run_test same_profile_as_run test_same_profile_as_run
run_test exit_codes test_exit_codes
run_test env_workdir_user test_env_workdir_user
run_test stdin test_stdin
run_test terminal_session test_terminal_session
run_test stopped_and_paused test_stopped_and_paused
run_test dies_with_sandbox test_dies_with_sandbox
run_test detach_keys test_detach_keys
