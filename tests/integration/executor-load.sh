#!/bin/bash
# executor-load.sh: the executor of a runtime image (ohbox build of the
# busybox image, started by `ohbox run IMAGE` with its session API key and
# --pids-limit 64) under load, driven by tests/executor/load.py (httpx):
#  - hammer: CLIENTS concurrent clients (default 32) each ROUNDS times
#    (default 10) /alive then a `run` action echoing a value unique to the
#    client and round: every reply correct; p50/p99 printed;
#  - big_output: a command printing OHBOX_LOAD_BYTES (default 64 MiB; set
#    1073741824 for the 1 GiB run, ~3 min here) through a `run` action: the
#    observation is middle-truncated as the protocol says (15000 + marker +
#    15000 characters), the executor's peak RSS (VmHWM) stays under 64 MiB,
#    /alive answers meanwhile (in a sanitizer tree with the executor built
#    without them, tests/executor/ohbox-executor-release: ASan's shadow
#    memory and quarantine would be most of the RSS measured);
#  - fork_bomb: a fork bomb started by a `run` action fills the pids limit;
#    the host stays responsive, the executor survives, answers again once the
#    bomb is gone, and `ohbox stop` during a bomb removes every process and
#    cgroup of the sandbox;
#  - alive_during_fork_bomb: while the bomb holds the pids limit, /alive
#    (each time on a new connection) and a new `run` action (`echo ok`, a
#    bash builtin: no fork needed) answer within seconds: the executor
#    creates no task per connection or request (executor/README.md).
# Figures go to the log as "# figures: {...}" lines (OHBOX_TEST_KEEP=1 keeps it).
# run-tests: alone
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run
export OHBOX_EXECUTOR=$OHBOX_BUILDDIR/ohbox-executor
export OHBOX_EXECUTOR_SRCDIR=$OHBOX_SRCDIR/executor
LOAD=(/usr/bin/python3 "$OHBOX_SRCDIR/tests/executor/load.py")
CLIENTS=${OHBOX_LOAD_CLIENTS:-32}
ROUNDS=${OHBOX_LOAD_ROUNDS:-10}
BYTES=${OHBOX_LOAD_BYTES:-67108864}
PIDS=64
BIG_EXECUTOR=$OHBOX_EXECUTOR BIG_KIND=
if t_sanitized && [ -x "$OHBOX_BUILDDIR/tests/executor/ohbox-executor-release" ]; then
  BIG_EXECUTOR=$OHBOX_BUILDDIR/tests/executor/ohbox-executor-release BIG_KIND=release
fi

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups)"; return 1; }
  [ -x "$OHBOX_EXECUTOR" ] || { echo "ohbox-executor is not built (make ohbox-executor)"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
  /usr/bin/python3 -c 'import httpx' || { echo "python3-httpx is not installed"; return 1; }
  img_build || return 1
}
t_setup_or_die setup setup

# start: builds the runtime image in this test's store and runs it with the
# limits; sets SID, URL, KEY, PORT, EXE (the executor's host pid), CG (its
# pids cgroup).
start ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  assert_ok ohbox build --no-pull --format json localhost/busybox:latest
  local image
  image=$(jq -r .image <<<"$out")
  PORT=$(t_free_port)
  KEY=key$RANDOM$RANDOM
  assert_ok ohbox run -d --rm --pids-limit "$PIDS" --executor-port "$PORT" -e "SESSION_API_KEY=$KEY" "$image"
  SID=$out
  # Removed even when the test fails half-way (a bomb still running).
  trap 'timeout 30 "$OHBOX_BIN" --root "$T_ROOT" rm -f "$SID" >/dev/null 2>&1 || true' EXIT
  URL=http://127.0.0.1:$PORT
  t_wait_until 10 curl -sf "$URL/alive" >/dev/null
  local init
  init=$(ohbox ps --format json | jq -r ".[] | select(.id == \"$SID\") | .pid")
  EXE=$(pgrep -P "$init" -f ohbox-executor)
  assert_match "$EXE" '^[0-9]+$'
  CG=$(find /sys/fs/cgroup/pids -maxdepth 3 -type d -name "$SID" 2>/dev/null || true)
  assert_eq "$(cat "$CG/pids.max")" "$PIDS"
}

hwm_kib ()
{
  awk '/^VmHWM:/ {print $2}' "/proc/$EXE/status"
}

# action COMMAND: a run action; its reply in $out.
action ()
{
  out=$(curl -sf --max-time "${2:-10}" -X POST -H "X-Session-API-Key: $KEY" -H 'Content-Type: application/json' \
    "$URL/execute_action" -d "$(jq -cn --arg c "$1" '{action: {action: "run", args: {command: $c}, timeout: 30}}')")
}

# sandbox_gone: no process, cgroup or state of $SID is left.
sandbox_gone ()
{
  [ -z "$(find /sys/fs/cgroup -maxdepth 3 -type d -name "$SID" 2>/dev/null)" ] &&
    ! kill -0 "$EXE" 2>/dev/null && [ ! -e "$OHBOX_RUNROOT/$SID" ]
}

test_hammer ()
{
  start
  assert_ok "${LOAD[@]}" hammer "$URL" "$KEY" "$CLIENTS" "$ROUNDS"
  echo "# figures: hammer $out" >&9
  local want=$((CLIENTS * ROUNDS))
  assert_jq "$out" ".errors == 0 and .runs == $want and .alive == $want" "load"
  # Latency bound: generous for a shared 2-core machine, but a stalled
  # executor (a lost wakeup, a serialised /alive) exceeds it.
  assert_jq "$out" '.alive_p99_ms < 5000 and .run_p99_ms < 10000' "latencies"
  assert_ok ohbox stop "$SID"
  t_wait_until 10 sandbox_gone
}

test_big_output ()
{
  export OHBOX_EXECUTOR=$BIG_EXECUTOR
  start
  local before
  before=$(hwm_kib)
  assert_ok "${LOAD[@]}" during "$URL" "$KEY" \
    "yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz | head -c $BYTES; echo END" 600
  local after
  after=$(hwm_kib)
  echo "# figures: big_output bytes=$BYTES vmhwm_before_kib=$before vmhwm_after_kib=$after $out" >&9
  # Truncated as the protocol says: first 15000 + marker + last 15000.
  assert_jq "$out" '.status == 200 and .observation == "run" and .exit_code == 0' "reply"
  assert_jq "$out" '.marker and .content_len == 30047 and (.tail | endswith("END"))' "truncation"
  # Memory does not follow the output (bounded by the terminal history):
  # judged after the test (t_judge_memory), as big_output_memory.
  echo "$after" >"$T_TMP/big-output-vmhwm"
  # /alive answered all along, promptly.
  assert_jq "$out" '.alive >= 3 and .alive_failures == 0 and .alive_max_ms < 2000' "/alive during the output"
  assert_ok ohbox stop "$SID"
  t_wait_until 10 sandbox_gone
}

# host_fork_ms: how long the host takes to fork and exec a process, in ms.
host_fork_ms ()
{
  local t0 t1
  t0=$(date +%s%N)
  /bin/true
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

bomb_at_limit ()
{
  [ "$(awk '{print $2}' "$CG/pids.events")" -gt 0 ] && [ "$(cat "$CG/pids.current")" -ge $((PIDS - 4)) ]
}

# (read on each try of t_wait_until, not once when it is called)
bomb_at_half ()
{
  [ "$(cat "$CG/pids.current")" -ge $((PIDS / 2)) ]
}

test_fork_bomb ()
{
  start
  action '(bomb() { bomb | bomb & }; bomb) >/dev/null 2>&1 &'
  assert_jq "$out" '.extras.metadata.exit_code == 0'
  # The bomb fills the limit: forks fail (pids.events counts them).
  t_wait_until 10 bomb_at_limit
  # During the bomb: /alive on new connections for 3 s, then a new action.
  assert_ok "${LOAD[@]}" alive "$URL" "$KEY" 3
  local during=$out
  assert_ok "${LOAD[@]}" during "$URL" "$KEY" 'echo ok' 15
  local act=$out still=no
  bomb_at_limit && still=yes
  echo "# figures: fork_bomb pids=$(cat "$CG/pids.current")/$PIDS $(cat "$CG/pids.events") alive_during=$during" \
    "action_during=$act bomb_still_at_limit=$still" >&9
  # Judged after the cleanup below (reported as alive_during_fork_bomb).
  local why=
  jq -e '.alive >= 3 and .alive_failures == 0 and .alive_max_ms < 5000' <<<"$during" >/dev/null ||
    why="/alive during the bomb: $(jq -c '{alive, alive_failures, alive_first_failures, alive_max_ms}' <<<"$during")"
  # `ok` on a line of its own (bash may add a job notice of the bomb after it).
  jq -e '.status == 200 and .observation == "run" and (.head | test("^ok(\n|$)")) and .seconds < 10' <<<"$act" \
    >/dev/null || why="$why; a run action during the bomb: $act"
  [ $still = yes ] || why="$why; the bomb no longer held the pids limit after the checks (not a test of the bomb)"
  echo "${why:-PASS}" >"$T_TMP/alive-during-bomb"
  # The host stays responsive: forking a process takes well under a second.
  local ms
  ms=$(host_fork_ms)
  [ "$ms" -lt 1000 ] || _t_assert_fail "host fork+exec took $ms ms during the bomb"
  kill -0 "$EXE" || _t_assert_fail "the executor died under the fork bomb"
  # Freeze the sandbox, kill the bomb's processes (all but PID 1, the
  # executor and its shell), thaw.
  local keep shell p
  shell=$(pgrep -P "$EXE" -o)
  keep=" $(ps -o ppid= -p "$EXE" | tr -d ' ') $EXE $shell "
  assert_ok ohbox pause "$SID"
  for p in $(cat "$CG/cgroup.procs"); do
    case $keep in *" $p "*) ;; *) kill -KILL "$p" 2>/dev/null || true ;; esac
  done
  assert_ok ohbox unpause "$SID"
  # Then it answers within seconds: /alive and a run action.
  t_wait_until 10 curl -sf "$URL/alive" >/dev/null
  action 'echo back' 10
  assert_jq "$out" '.content | startswith("back")'
  # A bomb again, and `ohbox stop` while it runs: nothing is left.
  action '(bomb() { bomb | bomb & }; bomb) >/dev/null 2>&1 &'
  assert_jq "$out" '.extras.metadata.exit_code == 0'
  # (A loaded machine may take longer than 10 s to fork 32 processes.)
  t_wait_until 30 bomb_at_half
  local t0=$SECONDS
  assert_ok ohbox stop "$SID"
  t_wait_until 10 sandbox_gone
  echo "# figures: fork_bomb stop_s=$((SECONDS - t0))" >&9
  assert_eq "$(ohbox ps -a -q)" ""
}

run_test hammer test_hammer
run_test big_output test_big_output
t_judge_memory big_output_memory "$T_TMP/big-output-vmhwm" 65536 "executor VmHWM after the output" $BIG_KIND
run_test fork_bomb test_fork_bomb
# The executor creates no task per connection or request (one epoll thread,
# a fixed pool of workers): while the bomb holds every task the pids limit
# allows, it still answers.  Observed inside fork_bomb, judged here.
if [ -e "$T_TMP/alive-during-bomb" ]; then
  if [ "$(cat "$T_TMP/alive-during-bomb")" = PASS ]; then
    t_pass alive_during_fork_bomb
  else
    t_fail alive_during_fork_bomb "$(cat "$T_TMP/alive-during-bomb")"
  fi
fi
