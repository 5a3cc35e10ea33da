#!/bin/bash
# attach.sh: `ohbox attach` to sandboxes started with `ohbox run -d -t`,
# driven through a real pty (Debian's python3): output and input, raw mode,
# window size at start and on resize, Ctrl-C inside, detach keys, attach
# again, the command's exit code; one client at a time (and the monitor
# takes the terminal back when a client dies); clear errors for sandboxes
# without a terminal, exited or paused; the monitor's memory stays flat.
. "$(dirname "$0")/../lib/common.sh"
PY=/usr/bin/python3
setup_more ()
{
  [ -x "$PY" ] || { echo "needs Debian's $PY (the pty driver)"; return 1; }
}
. "$T_LIB/sandbox.sh"

# start_tty NAME: a detached sandbox with a terminal running sh; sets
# SB_ID and SB_MONITOR (its monitor's pid, killed when the test ends).
start_tty ()
{
  load_bb
  SB_ID=$(ohbox run -d -t --name "$1" "$BB" sh)
  local init
  init=$(jq -r .pid "$OHBOX_RUNROOT/$SB_ID/state.json")
  SB_MONITOR=$(awk '{print $4}' "/proc/$init/stat")
  t_track "$SB_MONITOR"
}

cat >"$T_TMP/drive.py" <<'PYEOF'
import fcntl, os, select, struct, sys, termios, time
from ptydrive import check_raw_resize_interrupt, expect, setsize, spawn

def finish(pid, fd, before):
    _, status = os.waitpid(pid, 0)
    if termios.tcgetattr(fd) != before:
        sys.exit("terminal not restored")
    return os.waitstatus_to_exitcode(status)

args = sys.argv[1:]
# 1: size, raw mode, resize, Ctrl-C, detach
pid, fd = spawn(args)
setsize(fd, 40, 100)
before = termios.tcgetattr(fd)
time.sleep(0.3)
os.write(fd, b"stty size; echo MARK$((1+0))\r")
expect(fd, "MARK1")
check_raw_resize_interrupt(fd)
os.write(fd, b"echo state-kept > /tmp/s; echo SAVED$((0))\r")
expect(fd, "SAVED0")
os.write(fd, b"\x10\x11")  # ctrl-p,ctrl-q
code = finish(pid, fd, before)
print("detach", code)
# 2: attach again: the same shell; its exit code is ours
pid, fd = spawn(args)
before = termios.tcgetattr(fd)
time.sleep(0.3)
os.write(fd, b"cat /tmp/s; echo AGAIN$((0))\r")
expect(fd, "state-kept")
expect(fd, "AGAIN0")
os.write(fd, b"exit 7\r")
print("exit", finish(pid, fd, before))
PYEOF

test_session ()
{
  start_tty sess
  assert_ok env PYTHONPATH="$T_LIB" timeout 60 "$PY" "$T_TMP/drive.py" "$OHBOX_BIN" --root "$T_ROOT" attach sess
  assert_contains "$out" "detach 0"
  assert_contains "$out" "exit 7"
  assert_ok ohbox wait sess
  assert_eq "$out" 7
  assert_ok ohbox rm sess
}

test_one_client ()
{
  start_tty one
  local fifo=$T_TMP/one.in first=$T_TMP/one.out pid
  mkfifo "$fifo"
  # the first client: stdin a pipe that stays open
  "$OHBOX_BIN" --root "$T_ROOT" attach one <"$fifo" >"$first" 2>&1 &
  pid=$!
  t_track "$pid"
  exec 7>"$fifo"
  echo 'echo ready-$((40+2))' >&7
  t_wait_until 20 grep -q ready-42 "$first"
  assert_exit 125 ohbox attach one
  assert_contains "$err" "already has a client attached"
  # the first client dies: the monitor takes the terminal back
  kill -KILL "$pid"
  wait "$pid" || true
  exec 7>&-
  t_wait_until 10 sh -c "echo 'echo third-\$((1+2))' | \"$OHBOX_BIN\" --root \"$T_ROOT\" attach one >\"$T_TMP/third\" 2>&1 || true; grep -q third-3 \"$T_TMP/third\""
  ohbox rm -f one >/dev/null
}

test_errors ()
{
  load_bb
  ohbox run -d --name plain "$BB" sleep 1000 >/dev/null
  assert_exit 125 ohbox attach plain
  assert_contains "$err" "has no terminal"
  assert_contains "$err" "ohbox run -d -t"
  ohbox rm -f plain >/dev/null
  start_tty paused
  assert_ok ohbox pause paused
  assert_exit 125 ohbox attach paused
  assert_contains "$err" "paused"
  assert_ok ohbox unpause paused
  assert_ok ohbox stop -t 1 paused
  assert_exit 125 ohbox attach paused
  assert_contains "$err" "not running"
  assert_exit 125 ohbox attach no-such-sandbox
  assert_exit 125 ohbox attach --detach-keys ctrl-7 paused
  ohbox rm -f paused >/dev/null
}

rss_kb ()
{
  awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}

# attach_churn SOCK N PAUSE_S: N clients, one after the other (PAUSE_S
# apart), connect to the monitor's attach socket SOCK, are handed the
# terminal and go.
attach_churn ()
{
  "$PY" - "$@" <<'PYEOF'
import os, socket, sys, time
os.chdir(os.path.dirname(sys.argv[1]))  # sun_path is short
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect("attach.sock")
    msg, anc, flags, addr = s.recvmsg(1, socket.CMSG_SPACE(4))
    assert msg == b"O", msg
    for level, kind, data in anc:
        os.close(int.from_bytes(data[:4], "little"))
    s.close()
    time.sleep(float(sys.argv[3]))
PYEOF
}

# fd_count_is PID N: PID has N open descriptors.
fd_count_is ()
{
  [ "$(ls "/proc/$1/fd" | wc -l)" = "$2" ]
}

test_monitor_memory ()
{
  start_tty mem
  local sock=$OHBOX_RUNROOT/$SB_ID/attach.sock before after fds
  assert_eq "$(stat -c %a "$sock")" 600
  # warm up, then 300 connections (each handed the terminal, then gone).
  # A leak grows with every round, a one-time growth (a region the
  # allocator maps, code first run) once: a round that grew is followed by
  # a second, which must not grow (once seen in CI: +1988 kB, a sanitizer
  # build under the suite's load).
  attach_churn "$sock" 20 0
  fds=$(ls "/proc/$SB_MONITOR/fd" | wc -l)
  local round
  for round in 1 2; do
    before=$(rss_kb "$SB_MONITOR")
    attach_churn "$sock" 300 0.002
    after=$(rss_kb "$SB_MONITOR")
    echo "monitor RSS: $before kB before, $after kB after 300 attaches (round $round)" >&9
    [ "$after" -gt $((before + 32)) ] || break
  done
  [ "$after" -le $((before + 32)) ] || _t_assert_fail "the monitor grew from $before to $after kB in each of two rounds"
  # no descriptor left behind either
  # (counted on each try: a descriptor may close just after the last attach)
  t_wait_until 5 fd_count_is "$SB_MONITOR" "$fds"
  ohbox rm -f mem >/dev/null
}

run_test session test_session
run_test one-client test_one_client
run_test errors test_errors
run_test monitor-memory test_monitor_memory

t_remove_leftover_sandboxes
