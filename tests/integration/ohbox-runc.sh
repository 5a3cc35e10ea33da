#!/bin/bash
# ohbox-runc.sh: ohbox-runc driven the way runc's users drive runc, on a
# bundle unpacked (umoci) from the busybox test image: create/start/state/
# kill/delete, run in the foreground, the process and mount fields of
# config.json seen from inside, and bad bundles refused with an error that
# names the field, on stderr and in --log, with nothing left under --root.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"

RUNC=$OHBOX_BUILDDIR/ohbox-runc
BUNDLE=$T_TMP/bundle

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (ohbox-runc runs containers as root only)"; return 1; }
  [ -x "$RUNC" ] || { echo "ohbox-runc is not built (make ohbox-runc)"; return 1; }
  command -v umoci >/dev/null || { echo "umoci is not installed (contrib/install-deps.sh)"; return 1; }
  img_build || return 1
  umoci --log error unpack --image "$IMG_BUSYBOX:latest" "$BUNDLE" || return 1
  # runc's defaults as umoci writes them, without a terminal.
  jq '.process.terminal = false | .hostname = "runc-test"' "$BUNDLE/config.json" >"$T_TMP/config.json" &&
    mv "$T_TMP/config.json" "$BUNDLE/config.json"
}
t_setup_or_die setup setup

# runc_cmd ARGS...: ohbox-runc on this test's state root, with a JSON log.
runc_cmd ()
{
  echo "+ ohbox-runc $*" >&9
  timeout -k 5 60 "$RUNC" --root "$T_WORK/state" --log "$T_WORK/runc.log" --log-format json "$@"
}

# Whatever a failed test left under its state root goes (run_test runs each
# test in a subshell: its EXIT trap runs on failure too).
remove_containers ()
{
  local d
  for d in "$T_WORK"/state/*/; do
    [ -d "$d" ] && "$RUNC" --root "$T_WORK/state" delete --force "$(basename "$d")" >/dev/null 2>&1
  done
  return 0
}

# my_bundle JQ-FILTER: a copy of the bundle's config (rootfs shared) with FILTER applied.
my_bundle ()
{
  trap remove_containers EXIT
  mkdir -p "$T_WORK/bundle"
  ln -sfn "$BUNDLE/rootfs" "$T_WORK/bundle/rootfs"
  jq "$1" "$BUNDLE/config.json" >"$T_WORK/bundle/config.json"
}

status_of ()
{
  runc_cmd state "$1" | jq -r .status
}

status_is ()
{
  [ "$(status_of "$1")" = "$2" ]
}

# pid_gone PID: ended (a zombie left to whoever reaps the reparented init counts).
pid_gone ()
{
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || true
  [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}

state_root_empty ()
{
  [ -z "$(ls -A "$T_WORK/state" 2>/dev/null)" ]
}

test_run_foreground ()
{
  my_bundle '.process.args = ["sh", "-c", "echo hello from $(hostname); exit 7"]'
  assert_exit 7 runc_cmd run --bundle "$T_WORK/bundle" fg1
  assert_eq "hello from runc-test" "$out"
  # runc run removes the container when it ends.
  assert_fails runc_cmd state fg1
  assert_contains "$err" "does not exist"
  state_root_empty
}

# run --detach: create then start; returns while the process runs, which
# keeps run's stdout; the container stays until delete.
test_run_detach ()
{
  my_bundle '.process.args = ["sh", "-c", "echo detached; exec sleep 1000"]'
  runc_cmd run -d --bundle "$T_WORK/bundle" --pid-file "$T_WORK/d.pid" d1 >"$T_WORK/d.out" 2>&1 ||
    _t_assert_fail "run -d: $(cat "$T_WORK/d.out")"
  local pid
  pid=$(cat "$T_WORK/d.pid")
  assert_int -gt "$pid" 1 "the pid in --pid-file"
  t_wait_until 10 grep -q detached "$T_WORK/d.out"
  assert_eq running "$(status_of d1)"
  assert_jq "$(runc_cmd state d1)" ".pid == $pid"
  # A terminal with nobody to take it is refused, and nothing stays.
  my_bundle '.process.terminal = true'
  assert_fails runc_cmd run --detach --bundle "$T_WORK/bundle" d2
  assert_contains "$err" "--console-socket"
  assert_fails runc_cmd state d2
  assert_ok runc_cmd kill d1 KILL
  t_wait_until 10 status_is d1 stopped
  assert_ok runc_cmd delete d1
  pid_gone "$pid"
  state_root_empty
}

# create --preserve-fds N: fds 3 .. 3+N-1 reach the container's process as
# the same fds, no other fd of ohbox-runc's does; one not open is refused.
test_create_preserve_fds ()
{
  my_bundle '.process.args = ["sh", "-c", "echo via-fd3 >&3; echo via-fd4 >&4; ls /proc/$$/fd; :"]'
  runc_cmd create --bundle "$T_WORK/bundle" --preserve-fds 2 p1 3>"$T_WORK/fd3" 4>"$T_WORK/fd4" 5>/dev/null \
    >"$T_WORK/p.out" 2>&1 || _t_assert_fail "create --preserve-fds: $(cat "$T_WORK/p.out")"
  assert_ok runc_cmd start p1
  t_wait_until 10 status_is p1 stopped
  assert_eq via-fd3 "$(cat "$T_WORK/fd3")"
  assert_eq via-fd4 "$(cat "$T_WORK/fd4")"
  assert_eq "$(printf '0\n1\n2\n3\n4')" "$(cat "$T_WORK/p.out")"
  assert_ok runc_cmd delete p1
  assert_fails runc_cmd create --bundle "$T_WORK/bundle" --preserve-fds 2 p2 3>/dev/null
  assert_contains "$err" "create --preserve-fds 2: fd 4 is not open"
  assert_fails runc_cmd run --bundle "$T_WORK/bundle" --preserve-fds x p2
  assert_contains "$err" "run --preserve-fds: \`x\` is not a number"
  state_root_empty
}

# --no-pivot: runc's MS_MOVE + chroot, with a warning that it is weaker;
# the container runs in its rootfs.
test_no_pivot ()
{
  my_bundle '.process.args = ["sh", "-c", "ls /; exec sleep 1000"]'
  local pid
  runc_cmd create --no-pivot --bundle "$T_WORK/bundle" --pid-file "$T_WORK/np.pid" np1 >"$T_WORK/np.out" 2>&1 ||
    _t_assert_fail "create --no-pivot: $(cat "$T_WORK/np.out")"
  assert_contains "$(cat "$T_WORK/np.out")" "warning: --no-pivot: the container's root is a chroot"
  pid=$(cat "$T_WORK/np.pid")
  assert_ok runc_cmd start np1
  t_wait_until 10 grep -q '^bin$' "$T_WORK/np.out"
  assert_eq "$(ls "$BUNDLE/rootfs")" "$(grep -v warning "$T_WORK/np.out")"
  assert_eq running "$(status_of np1)"
  assert_ok runc_cmd exec np1 ls /
  assert_eq "$(ls "$BUNDLE/rootfs")" "$out"
  assert_ok runc_cmd delete --force np1
  pid_gone "$pid"
  state_root_empty
}

test_lifecycle ()
{
  my_bundle '.process.args = ["sh", "-c", "echo started; exec sleep 1000"]'
  local pid
  runc_cmd create --bundle "$T_WORK/bundle" --pid-file pidfile c1 >"$T_WORK/ctr.out" 2>&1
  pid=$(cat pidfile)
  assert_int -gt "$pid" 1 "the pid in --pid-file"
  assert_ok runc_cmd state c1
  assert_jq "$out" '.ociVersion == "1.1.0" and .id == "c1" and .status == "created"'
  assert_jq "$out" ".pid == $pid and .bundle == \"$T_WORK/bundle\""
  assert_jq "$out" '.annotations["org.ohbox.test.image"] == "busybox"'
  kill -0 "$pid"
  # Created: the process waits for start.
  sleep 0.3
  assert_eq "" "$(cat "$T_WORK/ctr.out")"
  assert_ok runc_cmd start c1
  t_wait_until 10 grep -q started "$T_WORK/ctr.out"
  assert_eq running "$(status_of c1)"
  assert_fails runc_cmd start c1
  assert_contains "$err" "only a created container can be started"
  assert_fails runc_cmd delete c1
  assert_contains "$err" "use --force"
  assert_ok runc_cmd kill c1 TERM
  t_wait_until 10 status_is c1 stopped
  assert_jq "$(runc_cmd state c1)" '.pid == 0'
  assert_fails runc_cmd kill c1 KILL
  assert_ok runc_cmd delete c1
  assert_fails runc_cmd state c1
  pid_gone "$pid"
  state_root_empty
}

test_kill_before_start ()
{
  my_bundle '.process.args = ["sleep", "1000"]'
  runc_cmd create --bundle "$T_WORK/bundle" --pid-file pidfile c2 >/dev/null 2>&1
  assert_ok runc_cmd kill c2 9
  t_wait_until 10 status_is c2 stopped
  assert_fails runc_cmd start c2
  assert_ok runc_cmd delete c2
  pid_gone "$(cat pidfile)"
  state_root_empty
}

test_delete_force ()
{
  my_bundle '.process.args = ["sleep", "1000"]'
  runc_cmd create --bundle "$T_WORK/bundle" --pid-file pidfile c3 >/dev/null 2>&1
  assert_ok runc_cmd start c3
  assert_eq running "$(status_of c3)"
  assert_ok runc_cmd delete --force c3
  pid_gone "$(cat pidfile)"
  assert_fails runc_cmd state c3
  state_root_empty
}

test_duplicate_id ()
{
  my_bundle '.process.args = ["sleep", "1000"]'
  runc_cmd create --bundle "$T_WORK/bundle" c4 >/dev/null 2>&1
  assert_fails runc_cmd create --bundle "$T_WORK/bundle" c4
  assert_contains "$err" "already exists"
  assert_not_contains "$err" "mkfifo"
  # run with the id of another container: refused before anything runs.
  assert_exit 1 runc_cmd run --bundle "$T_WORK/bundle" c4
  assert_contains "$err" "already exists"
  assert_eq created "$(status_of c4)"
  # A state root whose parents do not exist yet (containerd's shim gives
  # /run/containerd/runc/NAMESPACE): made with them, as runc does.
  assert_ok timeout 60 "$RUNC" --root "$T_WORK/deep/state/root" create --bundle "$T_WORK/bundle" c5
  assert_ok "$RUNC" --root "$T_WORK/deep/state/root" delete --force c5
  assert_ok runc_cmd delete --force c4
  assert_fails runc_cmd create --bundle "$T_WORK/bundle" ../escape
  assert_contains "$err" "invalid container id"
  state_root_empty
}

# The process and mount fields of config.json, seen from inside.
test_process_fields ()
{
  mkdir -p vol
  echo from-host >vol/file
  my_bundle '.process.user = {"uid": 1000, "gid": 1000, "additionalGids": [5]}
    | .process.env = ["PATH=/bin", "FOO=bar"] | .process.cwd = "/tmp"
    | .process.capabilities = {"bounding": ["CAP_KILL"]}
    | .process.rlimits = [{"type": "RLIMIT_NOFILE", "soft": 321, "hard": 321}]
    | .linux.maskedPaths += ["/etc/passwd"] | .linux.readonlyPaths += ["/home"]
    | .mounts += [{"destination": "/mnt", "type": "bind", "source": "'"$T_WORK"'/vol", "options": ["rbind", "ro", "nosuid"]},
                  {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]}]
    | .linux.sysctl = {"net.ipv4.ping_group_range": "0 0"}
    | .process.args = ["sh", "-c", "cat /proc/sys/net/ipv4/ping_group_range; grep -E \"^(Uid|Gid|Groups|CapBnd|CapEff|NoNewPrivs)\" /proc/self/status; echo foo=$FOO; pwd; ulimit -n; wc -c </etc/passwd; cat /mnt/file; touch /mnt/x 2>/dev/null || echo mnt-ro; touch /run/x && echo run-rw; grep -E \" /(home|mnt) \" /proc/self/mountinfo"]'
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" p1
  assert_match "$out" $'^0\t0\n'
  assert_match "$out" $'Uid:\t1000\t1000\t1000\t1000'
  assert_match "$out" $'Gid:\t1000\t1000\t1000\t1000'
  assert_match "$out" $'Groups:\t5 *\n'
  assert_match "$out" $'CapBnd:\t0000000000000020'
  assert_match "$out" $'CapEff:\t0000000000000000'
  assert_match "$out" $'NoNewPrivs:\t1'
  assert_contains "$out" "foo=bar"
  assert_contains "$out" $'/tmp\n321\n0\nfrom-host\nmnt-ro\nrun-rw'
  assert_match "$out" ' /home ro,'
  assert_match "$out" ' /mnt ro,nosuid,nodev'
  state_root_empty
}

# A tmpfs with the options engines write (containerd's /run: mode, size,
# strictatime, noexec); one that is not a size, mode or owner is refused.
test_tmpfs_options ()
{
  my_bundle '.mounts += [{"destination": "/run", "type": "tmpfs", "source": "tmpfs",
      "options": ["nosuid", "strictatime", "noexec", "mode=750", "size=64k"]}]
    | .process.args = ["sh", "-c", "grep \" /run \" /proc/self/mounts; stat -c %a /run"]'
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" tm1
  assert_match "$out" ' /run tmpfs [^ ]*nosuid,nodev,noexec'
  assert_match "$out" ' /run tmpfs [^ ]*size=64k,mode=750'
  assert_contains "$out" $'\n750'
  expect_refused '.mounts += [{"destination": "/run", "type": "tmpfs", "options": ["huge=always"]}]' "mounts[7].options"
  expect_refused '.mounts += [{"destination": "/run", "type": "tmpfs", "options": ["size=1m,mpol=bind"]}]' "mounts[7].options"
}

# A network namespace joined by path (as podman and CNI give one).
test_join_netns ()
{
  unshare --net sh -c 'ip link set lo mtu 1234 && touch netns-ready && exec sleep 1000' &
  local holder=$!
  t_wait_until 10 test -e netns-ready
  my_bundle '.linux.namespaces |= map(if .type == "network" then .path = "/proc/'"$holder"'/ns/net" else . end)
    | .process.args = ["ip", "link"]'
  t_run runc_cmd run --bundle "$T_WORK/bundle" n1
  kill "$holder"
  wait "$holder" || true
  assert_eq 0 "$rc"
  assert_contains "$out" "mtu 1234"
  state_root_empty
}

# started ID JQ-FILTER: a container made from my_bundle's FILTER, created
# and started, its init's pid in $init.
started ()
{
  my_bundle "$2"
  runc_cmd create --bundle "$T_WORK/bundle" --pid-file "$T_WORK/$1.pid" "$1" >/dev/null 2>&1 </dev/null
  runc_cmd start "$1"
  init=$(cat "$T_WORK/$1.pid")
}

# exec_detached ID CMD...: CMD exec'd with -d into container ID, its pid
# (from --pid-file) in $xpid.
exec_detached ()
{
  local id=$1
  shift
  assert_ok runc_cmd exec -d --pid-file "$T_WORK/x.pid" "$id" "$@"
  xpid=$(cat "$T_WORK/x.pid")
}

# same_ns PID1 PID2 NS: both processes in the same NS namespace.
same_ns ()
{
  [ "$(readlink "/proc/$1/ns/$3")" = "$(readlink "/proc/$2/ns/$3")" ]
}

# exec joins the container: its namespaces, user, capabilities, seccomp
# filter, environment and cwd by default; the flags go over them.
test_exec ()
{
  started e1 '.process.args = ["sleep", "1000"] | .process.user = {"uid": 1000, "gid": 1000, "additionalGids": [5]}
    | .process.env = ["PATH=/bin", "FOO=bar"] | .process.cwd = "/tmp"
    | .process.capabilities = {"bounding": ["CAP_KILL"], "effective": [], "permitted": []}
    | .linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]}'
  assert_ok runc_cmd exec e1 sh -c 'hostname; grep -E "^(Uid|Groups|CapBnd|Seccomp):" /proc/self/status; echo foo=$FOO; pwd; ls -d /proc/[0-9]* | wc -l; mkdir /tmp/d 2>&1; exit 0'
  assert_contains "$out" "runc-test"
  assert_match "$out" $'Uid:\t1000\t1000\t1000\t1000'
  assert_match "$out" $'Groups:\t5 *\n'
  assert_match "$out" $'CapBnd:\t0000000000000020'
  assert_match "$out" $'Seccomp:\t2'
  assert_contains "$out" $'foo=bar\n/tmp\n'
  assert_contains "$out" "Permission denied"
  # The container's pid namespace: its init, the sleep, sh and ls.
  assert_match "$out" $'\n[2-4]\n'
  # The flags over the container's process; the exit status is the command's.
  assert_exit 3 runc_cmd exec --user 0:0 --cwd / --env FOO=baz --cap CAP_NET_RAW --no-new-privs e1 \
    sh -c 'grep -E "^(Uid|CapBnd|CapEff|NoNewPrivs):" /proc/self/status; echo foo=$FOO; pwd; exit 3'
  assert_match "$out" $'Uid:\t0\t0\t0\t0'
  assert_match "$out" $'CapBnd:\t0000000000002020'
  assert_match "$out" $'CapEff:\t0000000000002000'
  assert_match "$out" $'NoNewPrivs:\t1'
  assert_contains "$out" $'foo=baz\n/'
  assert_exit 127 runc_cmd exec e1 no-such-command
  assert_contains "$err" "no-such-command"
  assert_fails runc_cmd exec --cap CAP_NO_SUCH e1 true
  assert_contains "$err" "CAP_NO_SUCH"
  # --process FILE: that process, checked as strictly as config.json's.
  jq -n '{"args": ["sh", "-c", "echo $A-$(id -u):$(id -G)"], "cwd": "/", "env": ["A=from-file"],
          "user": {"uid": 2, "gid": 3, "additionalGids": [4]}}' >proc.json
  assert_ok runc_cmd exec --process proc.json e1
  assert_eq "from-file-2:3 4" "$out"
  jq -n '{"args": ["true"], "cwd": "/", "bogus": 1}' >bad.json
  assert_fails runc_cmd exec --process bad.json e1
  assert_contains "$err" "bogus"
  jq -n '{"args": ["true"], "cwd": "/", "apparmorProfile": "x"}' >bad.json
  assert_fails runc_cmd exec --process bad.json e1
  assert_contains "$err" "process.apparmorProfile"
  assert_ok runc_cmd delete --force e1
  pid_gone "$init"
  state_root_empty
}

# -d with --pid-file: the process goes on in the container after exec ended;
# --preserve-fds hands fds over, and no other fd of ohbox-runc's reaches it.
test_exec_detach ()
{
  started e2 '.process.args = ["sleep", "1000"]'
  local xpid pid
  exec_detached e2 sleep 1000
  pid=$xpid
  assert_int -gt "$pid" 1 "the exec'd pid"
  kill -0 "$pid"
  for ns in pid mnt net ipc uts; do same_ns "$init" "$pid" $ns || _t_assert_fail "not in the container's $ns namespace"; done
  assert_eq "sleep 1000" "$(tr '\0' ' ' <"/proc/$pid/cmdline" | sed 's/ $//')"
  assert_ok runc_cmd exec --preserve-fds 1 e2 sh -c 'echo via-fd3 >&3; ls /proc/$$/fd; :' 3>"$T_WORK/fd3" 4>/dev/null
  assert_eq via-fd3 "$(cat "$T_WORK/fd3")"
  assert_eq "$(printf '0\n1\n2\n3')" "$out"
  assert_fails runc_cmd exec --preserve-fds 2 e2 true 3>/dev/null
  assert_contains "$err" "fd 4 is not open"
  assert_ok runc_cmd delete --force e2
  pid_gone "$init"
  t_wait_until 10 pid_gone "$pid"
  state_root_empty
}

# -t --console-socket: the terminal's master goes to the engine over the
# socket, the process has it as its controlling terminal.
test_exec_console ()
{
  started e3 '.process.args = ["sleep", "1000"]'
  /usr/bin/python3 "$T_LIB/console_recv.py" "$T_WORK/cs.sock" >"$T_WORK/console.out" 2>&1 &
  local recv=$!
  t_wait_until 10 test -e "$T_WORK/cs.sock.ready"
  assert_ok runc_cmd exec -t -d --console-socket "$T_WORK/cs.sock" e3 sh -c 'tty; test -t 0 && echo is-a-tty; stty size'
  wait "$recv"
  assert_match "$(cat "$T_WORK/console.out")" 'name=/dev/pts/[0-9]+'
  assert_match "$(cat "$T_WORK/console.out")" $'/dev/pts/[0-9]+\r\nis-a-tty'
  # consoleSize from a process file.
  rm -f "$T_WORK/cs.sock" "$T_WORK/cs.sock.ready"
  /usr/bin/python3 "$T_LIB/console_recv.py" "$T_WORK/cs.sock" >"$T_WORK/console.out" 2>&1 &
  recv=$!
  t_wait_until 10 test -e "$T_WORK/cs.sock.ready"
  jq -n '{"args": ["stty", "size"], "cwd": "/", "terminal": true, "consoleSize": {"height": 33, "width": 111}}' >proc.json
  assert_ok runc_cmd exec -d --console-socket "$T_WORK/cs.sock" --process proc.json e3
  wait "$recv"
  assert_contains "$(cat "$T_WORK/console.out")" "33 111"
  assert_fails runc_cmd exec -t -d e3 true
  assert_contains "$err" "--console-socket is needed"
  assert_fails runc_cmd exec --console-socket "$T_WORK/cs.sock" e3 true
  assert_contains "$err" "without a terminal"
  assert_ok runc_cmd delete --force e3
  state_root_empty
}

# exec needs a running container.
test_exec_states ()
{
  my_bundle '.process.args = ["sleep", "1000"]'
  runc_cmd create --bundle "$T_WORK/bundle" e4 >/dev/null 2>&1 </dev/null
  assert_fails runc_cmd exec e4 true
  assert_contains "$err" "is created"
  assert_ok runc_cmd kill e4 KILL
  t_wait_until 10 status_is e4 stopped
  assert_fails runc_cmd exec e4 true
  assert_contains "$err" "is stopped"
  assert_ok runc_cmd delete e4
  assert_fails runc_cmd exec e4 true
  assert_contains "$err" "does not exist"
  assert_fails runc_cmd exec
  assert_contains "$err" "usage: exec"
  state_root_empty
}

# console_start: the engine's side of --console-socket at $T_WORK/cs.sock,
# its output in $T_WORK/console.out, its pid in $recv.
console_start ()
{
  rm -f "$T_WORK/cs.sock" "$T_WORK/cs.sock.ready"
  /usr/bin/python3 "$T_LIB/console_recv.py" "$T_WORK/cs.sock" >"$T_WORK/console.out" 2>&1 &
  recv=$!
  t_wait_until 10 test -e "$T_WORK/cs.sock.ready"
}

# process.terminal: create sends the terminal's master over --console-socket
# before it returns (as conmon and containerd's shim expect); run without
# one proxies the terminal itself.
test_terminal ()
{
  local recv
  console_start
  my_bundle '.process.terminal = true | .process.consoleSize = {"height": 21, "width": 77}
    | .process.args = ["sh", "-c", "tty; stty size; read line; echo got-$line"]'
  assert_ok runc_cmd create --bundle "$T_WORK/bundle" --console-socket "$T_WORK/cs.sock" t1 </dev/null
  # The engine has the terminal before start.
  t_wait_until 10 grep -q name= "$T_WORK/console.out"
  assert_ok runc_cmd start t1
  t_wait_until 10 grep -q "21 77" "$T_WORK/console.out"
  t_wait_until 10 status_is t1 running
  kill "$recv"
  wait "$recv" || true
  t_wait_until 10 status_is t1 stopped
  assert_match "$(cat "$T_WORK/console.out")" $'/dev/pts/[0-9]+\r\n21 77'
  assert_ok runc_cmd delete t1
  # Input through the terminal, run in the foreground.
  console_start
  /usr/bin/python3 "$T_LIB/console_recv.py" "$T_WORK/cs2.sock" hello$'\n' >"$T_WORK/console2.out" 2>&1 &
  local recv2=$!
  t_wait_until 10 test -e "$T_WORK/cs2.sock.ready"
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" --console-socket "$T_WORK/cs2.sock" t2 </dev/null
  wait "$recv2"
  assert_contains "$(cat "$T_WORK/console2.out")" "got-hello"
  kill "$recv" 2>/dev/null || true
  # run without --console-socket proxies the terminal (stdin at EOF: ^D).
  my_bundle '.process.terminal = true | .process.consoleSize = {"height": 20, "width": 70}
    | .process.args = ["sh", "-c", "test -t 0 && test -t 1 && echo tty-ok; stty size; exit 4"]'
  assert_exit 4 runc_cmd run --bundle "$T_WORK/bundle" t3 </dev/null
  assert_contains "$out" "tty-ok"
  assert_contains "$out" "20 70"
  # A terminal for a process without one, none for a process with one.
  assert_fails runc_cmd create --bundle "$T_WORK/bundle" t4
  assert_contains "$err" "needs --console-socket"
  my_bundle '.process.args = ["true"]'
  assert_fails runc_cmd create --bundle "$T_WORK/bundle" --console-socket "$T_WORK/cs.sock" t5
  assert_contains "$err" "has no terminal"
  state_root_empty
}

# kill --all, list, ps: every process of the container's pid namespace,
# its exec'd ones too.
test_kill_all_list_ps ()
{
  started k1 '.process.args = ["sh", "-c", "trap \"\" TERM; while :; do sleep 1000 & wait; done"]'
  local xpid
  exec_detached k1 sleep 1001
  assert_ok runc_cmd ps --format json k1
  assert_jq "$out" "length == 4 and (map(. == $init) | any) and (map(. == $xpid) | any)"
  assert_ok runc_cmd ps k1
  assert_match "$out" '^UID +PID'
  assert_contains "$out" "sleep 1001"
  assert_not_contains "$out" "ohbox-runc"
  assert_eq 4 "$(($(wc -l <<<"$out") - 1))"
  assert_ok runc_cmd ps k1 -o pid,comm
  assert_match "$out" $'^ *PID COMMAND\n'
  assert_ok runc_cmd list
  assert_match "$out" $'\nk1 +'"$init"' +running'
  assert_ok runc_cmd list --format json
  assert_jq "$out" 'length == 1 and .[0].id == "k1" and .[0].status == "running" and .[0].pid == '"$init"
  assert_eq k1 "$(runc_cmd list -q)"
  # The shell ignores TERM: --all reaches the sleeps (its children) too.
  assert_ok runc_cmd kill --all k1 TERM
  t_wait_until 10 pid_gone "$xpid"
  kill -0 "$init"
  assert_eq running "$(status_of k1)"
  assert_ok runc_cmd kill --all k1 KILL
  t_wait_until 10 status_is k1 stopped
  assert_ok runc_cmd ps --format json k1
  assert_eq "[]" "$out"
  assert_ok runc_cmd delete k1
  assert_eq "[]" "$(runc_cmd list --format json)"
  state_root_empty
}

# A state directory a create killed midway left (no state.json, unlocked)
# goes with the next list or delete.
test_stale_state ()
{
  mkdir -p "$T_WORK/state/s1" "$T_WORK/state/s2"
  mkfifo "$T_WORK/state/s2/exec.fifo"
  assert_ok runc_cmd list -q
  assert_eq "" "$out"
  assert_file_absent "$T_WORK/state/s1"
  assert_file_absent "$T_WORK/state/s2"
  mkdir -p "$T_WORK/state/s3"
  assert_ok runc_cmd delete s3
  assert_file_absent "$T_WORK/state/s3"
  mkdir -p "$T_WORK/state/s4"
  assert_fails runc_cmd state s4
  assert_contains "$err" "does not exist"
  # A real one: create killed while its container waits for start leaves a
  # container that delete --force removes whole.
  my_bundle '.process.args = ["sleep", "1000"]'
  runc_cmd create --bundle "$T_WORK/bundle" --pid-file "$T_WORK/s5.pid" s5 >/dev/null 2>&1 </dev/null
  assert_ok runc_cmd delete --force s5
  pid_gone "$(cat "$T_WORK/s5.pid")"
  state_root_empty
}

# spec, features and the commands ohbox-runc refuses by name.
test_spec_features ()
{
  mkdir -p sp
  assert_ok runc_cmd spec --bundle sp
  assert_jq "$(cat sp/config.json)" '.ociVersion == "1.1.0" and .root.path == "rootfs" and .process.terminal == true
    and (.linux.namespaces | map(.type) | index("network") != null)'
  assert_fails runc_cmd spec --bundle sp
  assert_contains "$err" "File exists"
  rm sp/config.json
  assert_ok runc_cmd spec --rootless --bundle sp
  assert_jq "$(cat sp/config.json)" '(.linux.namespaces | map(.type) | index("user") != null) and (.linux.uidMappings | length) == 1'
  assert_ok runc_cmd features
  assert_jq "$out" '.ociVersionMax == "1.1.0" and (.hooks | length) == 6 and (.mountOptions | index("rbind") != null)
    and (.mountOptions | index("rshared") == null) and .linux.seccomp.enabled
    and (.linux.capabilities | index("CAP_SYS_ADMIN") != null) and .linux.cgroup.v2
    and (.linux.namespaces | index("time") == null)'
  for cmd in checkpoint restore; do
    assert_exit 1 runc_cmd "$cmd" x
    assert_contains "$err" "not supported"
  done
  # (--systemd-cgroup and .linux.cgroup.systemd: runc-systemd.sh)
}

# The command lines as runc's users meet them: --help and a missing command
# list every command; each command's wrong option, wrong argument count or
# wrong value is its usage line (on stderr and in --log, exit 1); options
# end at the first argument, as runc's (urfave/cli) do.
test_command_lines ()
{
  local all="create, start, run, state, kill, delete, exec, list, ps, spec, features, pause, resume, update, events"
  assert_ok "$RUNC" --help
  assert_contains "$out" "commands: $all"
  assert_exit 1 "$RUNC" --root "$T_WORK/state"
  assert_contains "$err" "no command given ($all)"
  assert_exit 1 runc_cmd frob x
  assert_contains "$err" '`frob`: not supported by ohbox-runc'
  while IFS=';' read -r usage args; do
    # shellcheck disable=SC2086 # ARGS are words
    assert_exit 1 runc_cmd $args </dev/null
    assert_contains "$err" "ohbox-runc: usage: $usage" "stderr of $args"
    assert_contains "$(tail -n 1 "$T_WORK/runc.log")" "\"level\":\"error\",\"msg\":\"usage: $usage" "--log of $args"
  done <<'EOF2'
create [--bundle DIR];create
run [--detach] [--bundle DIR];run a b
create [--bundle DIR];create c1 --bundle .
run [--detach] [--bundle DIR];run --frob c1
start ID;start
state ID;state a b
kill [--all] ID [SIGNAL];kill
kill [--all] ID [SIGNAL];kill a TERM c
delete [--force] ID;delete --all a
exec [--process FILE];exec
list [--format table|json] [--quiet];list x
list [--format table|json] [--quiet];list --format yaml
ps [--format table|json] ID [PS-OPTIONS...];ps
ps [--format table|json] ID [PS-OPTIONS...];ps --format json a -ef
spec [--bundle DIR] [--rootless];spec x
features;features x
pause ID;pause
resume ID;resume a b
update [--resources FILE|-];update
update [--resources FILE|-];update --frob 1 a
events [--stats] [--interval DURATION] ID;events --interval 0 a
events [--stats] [--interval DURATION] ID;events a b
EOF2
  # A --log that cannot be written is an error before anything is done (an
  # engine would never see the runtime's errors): a missing directory, a
  # directory.
  assert_exit 1 "$RUNC" --root "$T_WORK/state" --log "$T_WORK/no/such/runc.log" spec --bundle "$T_WORK"
  assert_contains "$err" "ohbox-runc: --log \`$T_WORK/no/such/runc.log\`: No such file or directory"
  assert_file_absent "$T_WORK/config.json" "the spec of a command whose --log failed"
  assert_exit 1 "$RUNC" --root "$T_WORK/state" --log "$T_WORK" list
  assert_contains "$err" "ohbox-runc: --log \`$T_WORK\`: Is a directory"
  # The right count goes on to the container.
  assert_exit 1 runc_cmd kill --all nosuch
  assert_contains "$err" "container \`nosuch\` does not exist"
}

# man_options [CMD]: the long options of CMD's lines in the SYNOPSIS of
# ohbox-runc(1) (no CMD: the global ones), one a line, sorted.
man_options ()
{
  sed 's/\\-/-/g' "$OHBOX_SRCDIR/man/ohbox-runc.1" | awk -v cmd="${1:-}" '
    /^\.SH SYNOPSIS/ { on = 1; next }
    /^\.SH / { on = 0 }
    !on { next }
    /^\.B ohbox-runc/ { cur = $0; sub(/^\.B ohbox-runc */, "", cur); next }
    cur == cmd' | { grep -o -e '--[a-z-]*' || true; } | sort -u
}

# Each command's --help: its usage on stdout (exit 0), with the options the
# man page's SYNOPSIS gives it, no more, no fewer; the global ones too.
test_help_matches_man ()
{
  local cmd want got
  assert_ok "$RUNC" --help
  got=$(head -n 1 <<<"$out" | grep -o -e '--[a-z-]*' | grep -v -x -e --help | sort -u)
  assert_eq "$(man_options)" "$got" "global options: ohbox-runc(1) SYNOPSIS vs --help"
  for cmd in create start run state kill delete exec list ps spec features pause resume update events; do
    assert_ok "$RUNC" "$cmd" --help
    assert_match "$out" "^usage: ohbox-runc \[GLOBAL OPTIONS\] $cmd( |$)"
    got=$(head -n 1 <<<"$out" | sed 's/^usage: ohbox-runc \[GLOBAL OPTIONS\] //' | { grep -o -e '--[a-z-]*' || true; } |
      sort -u)
    want=$(man_options "$cmd")
    assert_eq "$want" "$got" "options of $cmd: ohbox-runc(1) SYNOPSIS vs $cmd --help"
  done
  # After the id, --help is the process's.
  assert_exit 1 runc_cmd exec nosuch sh --help
  assert_contains "$err" "container \`nosuch\` does not exist"
}

# cg_file PID CONTROLLER FILE-V1 FILE-V2: the path of a cgroup file of PID's
# cgroup (v1 hierarchy of CONTROLLER, else the v2 one).
cg_file ()
{
  local p
  p=$(awk -F: -v c="$2" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$1/cgroup")
  if [ -n "$p" ] && [ -e "/sys/fs/cgroup/$2$p/$3" ]; then
    echo "/sys/fs/cgroup/$2$p/$3"
  else
    # v2: /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host.
    p=$(awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup")
    echo "$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)$p/$4"
  fi
}

# linux.cgroupsPath and linux.resources through ohbox's cgroups: the
# limits set, exec joining the cgroup, pause/resume with its freezer,
# and delete removing it.
test_cgroup ()
{
  started cg1 '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = "/ohbox-runc-test/cg1"
    | .linux.resources.memory = {"limit": 104857600} | .linux.resources.pids = {"limit": 50}
    | .linux.resources.cpu = {"quota": 50000, "period": 100000}'
  assert_match "$(cat "/proc/$init/cgroup")" ':/ohbox-runc-test/cg1'
  assert_eq 104857600 "$(cat "$(cg_file "$init" memory memory.limit_in_bytes memory.max)")"
  assert_eq 50 "$(cat "$(cg_file "$init" pids pids.max pids.max)")"
  local xpid
  exec_detached cg1 sleep 1001
  assert_eq "$(cat "/proc/$init/cgroup")" "$(cat "/proc/$xpid/cgroup")"
  # update: raising memory (above the memory+swap limit it had) and pids.
  assert_ok runc_cmd update --memory 262144000 --pids-limit 30 cg1
  assert_eq 262144000 "$(cat "$(cg_file "$init" memory memory.limit_in_bytes memory.max)")"
  assert_eq 30 "$(cat "$(cg_file "$init" pids pids.max pids.max)")"
  echo '{"memory": {"limit": 157286400}, "pids": {"limit": 40}}' >res.json
  assert_ok runc_cmd update --resources res.json cg1
  assert_eq 157286400 "$(cat "$(cg_file "$init" memory memory.limit_in_bytes memory.max)")"
  assert_ok runc_cmd update -r - --pids-limit 20 cg1 <res.json
  assert_eq 20 "$(cat "$(cg_file "$init" pids pids.max pids.max)")"
  assert_fails runc_cmd update --cpuset-cpus 0 cg1
  assert_contains "$err" "--cpuset-cpus"
  echo '{"blockIO": {"leafWeight": 10}}' >res.json
  assert_fails runc_cmd update --resources res.json cg1
  assert_contains "$err" "blockIO.leafWeight"
  assert_fails runc_cmd update cg1
  assert_contains "$err" "nothing to update"
  # events: one stats object, or the stream.
  assert_ok runc_cmd events --stats cg1
  assert_jq "$out" '.type == "stats" and .id == "cg1" and .data.pids.current == 3 and .data.pids.limit == 20
    and .data.memory.usage.limit == 157286400 and .data.memory.usage.usage > 0 and .data.cpu.usage.total >= 0'
  t_run timeout 2.5 "$RUNC" --root "$T_WORK/state" events --interval 1s cg1
  assert_int -ge "$(wc -l <<<"$out")" 2 "stats events in 2.5 s"
  assert_jq "$(head -n 1 <<<"$out")" '.type == "stats" and .data.pids.current == 3'
  assert_ok runc_cmd pause cg1
  assert_eq paused "$(status_of cg1)"
  assert_fails runc_cmd exec cg1 true
  assert_contains "$err" "is paused"
  assert_fails runc_cmd pause cg1
  assert_ok runc_cmd resume cg1
  assert_eq running "$(status_of cg1)"
  assert_fails runc_cmd resume cg1
  local dir
  dir=$(dirname "$(cg_file "$init" memory memory.limit_in_bytes memory.max)")
  assert_dir_exists "$dir"
  # A paused container is thawed to die.
  assert_ok runc_cmd pause cg1
  assert_ok runc_cmd delete --force cg1
  pid_gone "$init"
  assert_file_absent "$dir"
  # run removes its cgroup when the container ends.
  my_bundle '.process.args = ["sh", "-c", "cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null"]
    | .linux.cgroupsPath = "/ohbox-runc-test/cg2" | .linux.resources.pids = {"limit": 77}'
  assert_exit 1 runc_cmd run --bundle "$T_WORK/bundle" cg2
  assert_eq 77 "$out"
  assert_file_absent "$(dirname "$dir")/cg2"
  expect_refused '.linux.cgroupsPath = "/ohbox-runc-test/../escape"' "linux.cgroupsPath"
  expect_refused '.linux.cgroupsPath = "machine.slice:libpod:x"' "linux.cgroupsPath"
  expect_refused '.linux.resources.memory = {"limit": 104857600, "swappiness": 10}' "linux.resources.memory.swappiness"
  expect_refused '.linux.resources.cpu = {"cpus": "0"}' "linux.resources.cpu.cpus"
  rmdir /sys/fs/cgroup/*/ohbox-runc-test /sys/fs/cgroup/ohbox-runc-test 2>/dev/null || true
  state_root_empty
}

# unlimited FILE: a cgroup limit file reading "no limit" (v2's max, v1's
# -1 or its PAGE_COUNTER_MAX in bytes).
unlimited ()
{
  local v
  v=$(cat "$1")
  case $v in max | "max "* | -1 | 92233720368547*) return 0 ;; esac
  _t_assert_fail "$1 reads \`$v\`, not unlimited"
}

# update with -1 lifts the memory, pids and CPU quota limits (as runc's);
# 0 is refused, naming the flag.
test_update_unlimited ()
{
  started cg3 '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = "/ohbox-runc-test/cg3"
    | .linux.resources.memory = {"limit": 104857600} | .linux.resources.pids = {"limit": 50}
    | .linux.resources.cpu = {"quota": 50000, "period": 100000}'
  local mem pids cpu
  mem=$(cg_file "$init" memory memory.limit_in_bytes memory.max)
  pids=$(cg_file "$init" pids pids.max pids.max)
  cpu=$(cg_file "$init" cpu cpu.cfs_quota_us cpu.max)
  assert_eq 104857600 "$(cat "$mem")"
  assert_match "$(cat "$cpu")" '^50000'
  assert_ok runc_cmd update --memory -1 --pids-limit -1 --cpu-quota -1 cg3
  unlimited "$mem"
  unlimited "$pids"
  unlimited "$cpu"
  # And back, then memory and its swap lifted together.
  assert_ok runc_cmd update --memory 104857600 --pids-limit 9 cg3
  assert_eq 104857600 "$(cat "$mem")"
  assert_eq 9 "$(cat "$pids")"
  assert_ok runc_cmd update --memory -1 --memory-swap -1 cg3
  unlimited "$mem"
  assert_fails runc_cmd update --pids-limit 0 cg3
  assert_contains "$err" "--pids-limit: \`0\` is not a positive number (or -1 for unlimited)"
  assert_fails runc_cmd update --memory -1 --memory-swap 209715200 cg3
  assert_contains "$err" "with unlimited memory"
  assert_ok runc_cmd delete --force cg3
  pid_gone "$init"
  rmdir /sys/fs/cgroup/*/ohbox-runc-test /sys/fs/cgroup/ohbox-runc-test 2>/dev/null || true
  state_root_empty
}

# hooks: each kind where the runtime spec puts it, with the state on its
# stdin; a failing or hanging (timeout) create hook fails create and
# leaves nothing; a failing poststart or poststop hook is a warning.
test_hooks ()
{
  local h='{"path": "/bin/sh", "args": ["sh", "-c", "cat >'"$T_WORK"'/hook-KIND.json"], "env": ["A=b"]}'
  local hooks='{}' k
  for k in prestart createRuntime createContainer startContainer poststart poststop; do
    hooks=$(jq --arg k "$k" --argjson h "${h//KIND/$k}" '.[$k] = [$h]' <<<"$hooks")
  done
  my_bundle '.process.args = ["sleep", "1000"] | .hooks = '"$hooks"
  runc_cmd create --bundle "$T_WORK/bundle" --pid-file "$T_WORK/h1.pid" h1 >/dev/null 2>&1 </dev/null
  local pid
  pid=$(cat "$T_WORK/h1.pid")
  for k in prestart createRuntime createContainer; do
    assert_jq "$(cat "$T_WORK/hook-$k.json")" '.id == "h1" and .status == "created" and .pid == '"$pid"' and .bundle == "'"$T_WORK/bundle"'"'
  done
  assert_file_absent "$T_WORK/hook-startContainer.json"
  assert_ok runc_cmd start h1
  t_wait_until 10 test -s "$T_WORK/hook-poststart.json"
  assert_jq "$(cat "$T_WORK/hook-poststart.json")" '.status == "running" and .pid == '"$pid"
  assert_jq "$(cat "$T_WORK/hook-startContainer.json")" '.id == "h1"'
  assert_file_absent "$T_WORK/hook-poststop.json"
  assert_ok runc_cmd delete --force h1
  assert_jq "$(cat "$T_WORK/hook-poststop.json")" '.status == "stopped" and .id == "h1"'
  # A hook that hangs: its timeout, a clear error, nothing left.
  my_bundle '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = "/ohbox-runc-test/h2"
    | .hooks = {"createRuntime": [{"path": "/bin/sleep", "args": ["sleep", "100"], "timeout": 1}]}'
  : >"$T_WORK/runc.log"
  assert_exit 1 runc_cmd create --bundle "$T_WORK/bundle" --pid-file "$T_WORK/h2.pid" h2 </dev/null
  assert_contains "$err" "createRuntime hook \`/bin/sleep\` did not finish within 1 s"
  assert_contains "$(cat "$T_WORK/runc.log")" "did not finish within 1 s"
  [ ! -s "$T_WORK/h2.pid" ] || t_wait_until 10 pid_gone "$(cat "$T_WORK/h2.pid")"
  assert_no_match "$(pgrep -a -x sleep || true)" '^[0-9]+ sleep 100$'
  assert_file_absent /sys/fs/cgroup/pids/ohbox-runc-test/h2
  assert_file_absent /sys/fs/cgroup/ohbox-runc-test/h2
  state_root_empty
  # A failing prestart hook fails create; a failing poststart one warns.
  my_bundle '.process.args = ["sleep", "1000"] | .hooks = {"prestart": [{"path": "/bin/false"}]}'
  assert_exit 1 runc_cmd create --bundle "$T_WORK/bundle" h3 </dev/null
  assert_contains "$err" "/bin/false"
  state_root_empty
  my_bundle '.process.args = ["sh", "-c", "exit 0"] | .hooks = {"poststart": [{"path": "/bin/false"}]}'
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" h4 </dev/null
  assert_contains "$err" "warning"
  rmdir /sys/fs/cgroup/*/ohbox-runc-test /sys/fs/cgroup/ohbox-runc-test 2>/dev/null || true
  state_root_empty
}

# linux.devices: nodes made in the container (root's), which its device
# cgroup lets it open, and none other (the host's /dev/loop-control, made
# with mknod inside, cannot be opened).
test_devices ()
{
  my_bundle '.process.args = ["sh", "-c", "ls -ln /dev/mydev /dev/myblk; head -c 4 /dev/mydev | wc -c; mknod /tmp/lc c 10 237 && cat /tmp/lc; echo rc=$?"]
    | .process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.effective += ["CAP_MKNOD"]
    | .process.capabilities.permitted += ["CAP_MKNOD"]
    | .linux.devices = [{"path": "/dev/mydev", "type": "c", "major": 1, "minor": 5, "fileMode": 438, "uid": 7, "gid": 8},
                        {"path": "/dev/myblk", "type": "b", "major": 7, "minor": 0}]'
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" d1 </dev/null
  assert_match "$out" 'crw-rw-rw- +1 7 +8 +1, +5 .* /dev/mydev'
  assert_match "$out" 'brw-rw-rw- +1 0 +0 +7, +0 .* /dev/myblk'
  assert_contains "$out" $'\n4\n'
  assert_contains "$err" "Operation not permitted"
  assert_contains "$out" "rc=1"
  expect_refused '.linux.devices = [{"path": "/dev/p", "type": "p"}]' "linux.devices[0].type"
  state_root_empty
}

# linux.resources.devices, in order: an allow rule lets the container open
# a device it could not otherwise (loop-control, c 10:237, made with mknod
# inside); a deny rule after it takes back what it names (Docker sends
# such rules).
test_device_rules ()
{
  local args='.process.args = ["sh", "-c", "rm -f /tmp/lcr; mknod /tmp/lcr c 10 237 && if true </tmp/lcr; then echo opened; fi"]
    | .process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.effective += ["CAP_MKNOD"]
    | .process.capabilities.permitted += ["CAP_MKNOD"]'
  my_bundle "$args | .linux.resources.devices = [{\"allow\": false, \"access\": \"rwm\"}]"
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" r1 </dev/null
  assert_contains "$err" "Operation not permitted"
  assert_eq "$out" ""
  my_bundle "$args | .linux.resources.devices = [{\"allow\": false, \"access\": \"rwm\"},
    {\"allow\": true, \"type\": \"c\", \"major\": 10, \"minor\": 237, \"access\": \"rw\"}]"
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" r2 </dev/null
  assert_eq "$out" "opened"
  my_bundle "$args | .linux.resources.devices = [{\"allow\": false, \"access\": \"rwm\"},
    {\"allow\": true, \"type\": \"c\", \"major\": 10, \"minor\": 237, \"access\": \"rwm\"},
    {\"allow\": false, \"type\": \"c\", \"major\": 10, \"minor\": 237, \"access\": \"r\"}]"
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" r3 </dev/null
  assert_contains "$err" "Operation not permitted"
  assert_eq "$out" ""
  state_root_empty
}

# The host's root asking for --rootless true keeps its device cgroup (and
# cgroups): a node made in the container is still refused.
test_root_rootless_true ()
{
  my_bundle '.process.args = ["sh", "-c", "rm -f /tmp/lcq; mknod /tmp/lcq c 10 237 && if true </tmp/lcq; then echo opened; fi"]
    | .process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.effective += ["CAP_MKNOD"]
    | .process.capabilities.permitted += ["CAP_MKNOD"]'
  assert_ok runc_cmd --rootless true run --bundle "$T_WORK/bundle" rr1 </dev/null
  assert_contains "$err" "Operation not permitted"
  assert_eq "$out" ""
  state_root_empty
}

# expect_refused JQ-FILTER TEXT: create fails naming TEXT, on stderr and in
# the JSON log, and leaves nothing behind.
expect_refused ()
{
  my_bundle "$1"
  : >"$T_WORK/runc.log"
  assert_exit 1 runc_cmd create --bundle "$T_WORK/bundle" bad
  assert_contains "$err" "$2"
  assert_jq "$(tail -n 1 "$T_WORK/runc.log")" '.level == "error"'
  assert_contains "$(tail -n 1 "$T_WORK/runc.log")" "$2"
  state_root_empty
}

test_bad_bundles ()
{
  expect_refused '.ociVersion = "2.0.0"' "ociVersion"
  expect_refused '.linux.namespaces[0].path = "/proc/1/ns/pid"' "linux.namespaces[0].path"
  expect_refused '.linux.namespaces |= map(select(.type != "pid"))' "sharing the host's pid namespace"
  expect_refused '.linux.resources.blockIO = {"leafWeight": 10}' "linux.resources.blockIO.leafWeight"
  expect_refused '.process.terminal = true' "process.terminal"
  expect_refused '.process.capabilities.bounding += ["CAP_NO_SUCH"]' "process.capabilities.bounding[3]"
  expect_refused '.mounts += [{"destination": "/x", "type": "bind", "source": "/tmp", "options": ["rbind", "rshared"]}]' \
    "mounts[7].options"
  expect_refused '.root.path = "nonexistent"' "root.path"
  expect_refused '.linux.sysctl = {"kernel.randomize_va_space": "0"}' "linux.sysctl.kernel.randomize_va_space"
  expect_refused '.linux.sysctl = {"net.ipv4.ip_forward": "1"} | .linux.namespaces |= map(select(.type != "network"))' \
    "linux.sysctl.net.ipv4.ip_forward"
  expect_refused '.linux.namespaces[1].path = "/proc/1/ns/ipc"' "linux.namespaces[1].path"
  rm "$T_WORK/bundle/config.json"
  assert_exit 1 runc_cmd create --bundle "$T_WORK/bundle" bad
  assert_contains "$err" "config.json"
  state_root_empty
}

# create returns with nothing of the container's left holding its stdout
# and stderr (with a terminal the container's stdio is the terminal):
# containerd's shim reads create's output to its end before it goes on, and
# `ctr run -t` waited forever while the monitor kept create's copies.
test_create_releases_stdio ()
{
  local recv
  console_start
  my_bundle '.process.terminal = true | .process.args = ["sleep", "1000"]'
  # cat ends once every writer of the pipe is gone.
  assert_ok timeout 20 sh -c '"$1" --root "$2/state" create --bundle "$2/bundle" --console-socket "$2/cs.sock" s1 2>&1 </dev/null | cat' \
    sh "$RUNC" "$T_WORK"
  assert_eq created "$(status_of s1)"
  assert_ok runc_cmd delete --force s1
  kill "$recv" 2>/dev/null || true
  state_root_empty
}

# blockIO: nothing set (Docker writes {"weight": 0}: "unset" for runc and
# crun) is no limit; throttles reach blkio.throttle.* (v1) or io.max (v2)
# from create and update; a weight reaches the BFQ (or CFQ) file, or is
# refused naming the field when the kernel has none.
test_blkio ()
{
  my_bundle '.linux.resources.blockIO = {"weight": 0} | .process.args = ["true"]'
  assert_ok runc_cmd run --bundle "$T_WORK/bundle" bk1
  local dev d
  for d in /sys/block/*; do
    case ${d##*/} in loop* | ram* | zram*) continue ;; esac
    dev=$(cat "$d/dev")
    break
  done
  [ -n "$dev" ] || skip "no block device"
  local maj=${dev%:*} min=${dev#*:}
  started bk2 '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = "/ohbox-runc-test/bk2"
    | .linux.resources.blockIO = {"throttleReadBpsDevice": [{"major": '"$maj"', "minor": '"$min"', "rate": 1048576}],
        "throttleWriteIOPSDevice": [{"major": '"$maj"', "minor": '"$min"', "rate": 100}]}'
  local rbps wiops
  rbps=$(cg_file "$init" blkio blkio.throttle.read_bps_device io.max)
  wiops=$(cg_file "$init" blkio blkio.throttle.write_iops_device io.max)
  if [ "${rbps##*/}" = io.max ]; then
    assert_match "$(cat "$rbps")" "^$dev rbps=1048576 wbps=max riops=max wiops=100\$"
  else
    assert_eq "$dev 1048576" "$(cat "$rbps")"
    assert_eq "$dev 100" "$(cat "$wiops")"
  fi
  echo '{"blockIO": {"throttleReadBpsDevice": [{"major": '"$maj"', "minor": '"$min"', "rate": 2097152}]}}' >res.json
  assert_ok runc_cmd update --resources res.json bk2
  assert_match "$(cat "$rbps")" "^$dev (rbps=)?2097152( |\$)"
  local dir
  dir=$(dirname "$rbps")
  echo '{"blockIO": {"weight": 500}}' >res.json
  if [ -e "$dir/blkio.bfq.weight" ] || [ -e "$dir/blkio.weight" ] || [ -e "$dir/io.bfq.weight" ] || [ -e "$dir/io.weight" ]; then
    assert_ok runc_cmd update --resources res.json bk2
    assert_contains "$(cat "$dir"/*.weight)" 500
  else
    assert_fails runc_cmd update --resources res.json bk2
    assert_contains "$err" "linux.resources.blockIO.weight: this kernel has no"
    echo '{"blockIO": {"weightDevice": [{"major": '"$maj"', "minor": '"$min"', "weight": 300}]}}' >res.json
    assert_fails runc_cmd update --resources res.json bk2
    assert_contains "$err" "linux.resources.blockIO.weightDevice: this kernel has no"
  fi
  assert_ok runc_cmd delete --force bk2
  assert_file_absent "$dir"
  expect_refused '.linux.resources.blockIO = {"weightDevice": [{"major": 1, "minor": 3, "weight": 10, "leafWeight": 10}]}' \
    "linux.resources.blockIO.weightDevice.leafWeight"
  rmdir /sys/fs/cgroup/*/ohbox-runc-test /sys/fs/cgroup/ohbox-runc-test 2>/dev/null || true
  state_root_empty
}

# hugepageLimits: hugetlb.SIZE.limit_in_bytes (v1) or hugetlb.SIZE.max (v2,
# its controller enabled for this container only), set by create and by
# update; a size the kernel has not, or a malformed one, refused by name.
test_hugetlb ()
{
  local size
  size=$(ls /sys/kernel/mm/hugepages 2>/dev/null | head -n 1)
  if [ -z "$size" ] || ! grep -qw hugetlb /proc/cgroups; then
    t_skip "no huge pages or no hugetlb controller"
    return 0
  fi
  size=${size#hugepages-}
  size=$((${size%kB} / 1024))MB
  started hp1 '.process.args = ["sleep", "1000"] | .linux.cgroupsPath = "/ohbox-runc-test/hp1"
    | .linux.resources.hugepageLimits = [{"pageSize": "'"$size"'", "limit": 4194304}]'
  local f
  f=$(cg_file "$init" hugetlb "hugetlb.$size.limit_in_bytes" "hugetlb.$size.max")
  assert_eq 4194304 "$(cat "$f")"
  echo '{"hugepageLimits": [{"pageSize": "'"$size"'", "limit": 8388608}]}' >res.json
  assert_ok runc_cmd update --resources res.json hp1
  assert_eq 8388608 "$(cat "$f")"
  echo '{"hugepageLimits": [{"pageSize": "3MB", "limit": 8388608}]}' >res.json
  assert_fails runc_cmd update --resources res.json hp1
  assert_contains "$err" "huge page size \`3MB\`: this kernel has no such huge pages"
  assert_ok runc_cmd delete --force hp1
  assert_file_absent "$(dirname "$f")"
  expect_refused '.linux.resources.hugepageLimits = [{"pageSize": "3MB", "limit": 4194304}]' \
    "huge page size \`3MB\`: this kernel has no such huge pages"
  expect_refused '.linux.resources.hugepageLimits = [{"pageSize": "2MB/../x", "limit": 4194304}]' \
    "linux.resources.hugepageLimits[0].pageSize"
  rmdir /sys/fs/cgroup/*/ohbox-runc-test /sys/fs/cgroup/ohbox-runc-test 2>/dev/null || true
  state_root_empty
}

# unified: each key's file written (create and update) on a pure cgroup v2
# host, refused naming the key elsewhere (as runc); never a path.
test_unified ()
{
  expect_refused '.linux.resources.unified = {"../pids.max": "1"}' "linux.resources.unified.../pids.max: not a cgroup v2 interface file"
  local v2=false
  [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && v2=true
  echo '{"unified": {"pids.max": "43"}}' >res.json
  if $v2; then
    started un1 '.process.args = ["sleep", "1000"] | .linux.resources.unified = {"pids.max": "42"}'
    local f
    f=$(cg_file "$init" pids pids.max pids.max)
    assert_eq 42 "$(cat "$f")"
    assert_ok runc_cmd update --resources res.json un1
    assert_eq 43 "$(cat "$f")"
  else
    expect_refused '.linux.resources.unified = {"pids.max": "42"}' \
      "linux.resources.unified: \`pids.max\`: needs a pure cgroup v2 host"
    started un1 '.process.args = ["sleep", "1000"]'
    assert_fails runc_cmd update --resources res.json un1
    assert_contains "$err" "linux.resources.unified: \`pids.max\`: needs a pure cgroup v2 host"
  fi
  assert_ok runc_cmd delete --force un1
  state_root_empty
}

# Called from a mount namespace whose / is shared (systemd's default, and
# what dockerd's shim runs in): the rootfs cloned from it is made private
# before pivot_root, which refused it (EINVAL).
test_shared_root ()
{
  my_bundle '.process.args = ["echo", "pivoted"]'
  assert_ok unshare -m --propagation shared timeout 60 "$RUNC" --root "$T_WORK/state" run --bundle "$T_WORK/bundle" sh1
  assert_eq pivoted "$out"
  state_root_empty
}

run_test run_foreground test_run_foreground
run_test run_detach test_run_detach
run_test create_preserve_fds test_create_preserve_fds
run_test no_pivot test_no_pivot
run_test lifecycle test_lifecycle
run_test kill_before_start test_kill_before_start
run_test delete_force test_delete_force
run_test duplicate_id test_duplicate_id
run_test process_fields test_process_fields
run_test join_netns test_join_netns
run_test tmpfs_options test_tmpfs_options
run_test bad_bundles test_bad_bundles
run_test exec test_exec
run_test exec_detach test_exec_detach
run_test exec_console test_exec_console
run_test exec_states test_exec_states
run_test terminal test_terminal
run_test kill_all_list_ps test_kill_all_list_ps
run_test stale_state test_stale_state
run_test spec_features test_spec_features
run_test command_lines test_command_lines
run_test help_matches_man test_help_matches_man
run_test cgroup test_cgroup
run_test update_unlimited test_update_unlimited
run_test hooks test_hooks
run_test devices test_devices
run_test device_rules test_device_rules
run_test root_rootless_true test_root_rootless_true
run_test create_releases_stdio test_create_releases_stdio
run_test blkio test_blkio
run_test hugetlb test_hugetlb
run_test unified test_unified
run_test shared_root test_shared_root
