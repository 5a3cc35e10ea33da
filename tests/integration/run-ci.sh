#!/bin/bash
# run-ci.sh: what CI systems need of `ohbox run`: --timeout (exit status 124,
# SIGTERM then SIGKILL, --rm still cleans, detached too), output streamed as
# it is written (not when the command ends), and --format json events.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"

assert_no_sandboxes ()
{
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

# Every line of $1 is a JSON object with an "event".
assert_json_lines ()
{
  local line
  while IFS= read -r line; do
    jq -e 'type == "object" and (.event | type == "string")' <<<"$line" >/dev/null ||
      _t_assert_fail "not a JSON event line: $line"
  done <<<"$1"
}

test_timeout ()
{
  load_bb
  local t0=$SECONDS
  assert_exit 124 ohbox run --rm --timeout 1 "$BB" sleep 60
  # SIGTERM ended it: no need for the 5 s grace
  [ $((SECONDS - t0)) -lt 5 ] || _t_assert_fail "--timeout 1 took $((SECONDS - t0)) s"
  assert_no_sandboxes
  # not reached: the command's own status
  assert_exit 3 ohbox run --rm --timeout 30s "$BB" sh -c 'exit 3'
  assert_no_sandboxes
  assert_exit 125 ohbox run --rm --timeout 1x "$BB" true
  assert_contains "$err" "invalid --timeout"
}

test_timeout_kill ()
{
  load_bb
  # A command that ignores SIGTERM gets SIGKILL after the grace period.
  assert_exit 124 ohbox run --rm --format json --timeout 200ms "$BB" sh -c 'trap "" TERM; echo up; while :; do sleep 1; done'
  local exited
  exited=$(grep '"exited"' <<<"$out")
  assert_jq "$exited" '.exit_code == 124 and .timed_out == true and .signal == "SIGKILL"'
  assert_jq "$exited" '.duration >= 5 and .duration < 15'
  assert_no_sandboxes
}

test_timeout_detached ()
{
  load_bb
  local id
  assert_ok ohbox run -d --timeout 1 "$BB" sleep 60
  id=$out
  assert_ok ohbox wait "$id"
  assert_eq "$out" 124
  assert_ok ohbox ps -a --format json
  assert_jq "$out" ".[] | select(.id == \"$id\") | .exit_code == 124 and .timed_out == true"
  assert_ok ohbox rm "$id"
  assert_no_sandboxes
}

test_json_events ()
{
  load_bb
  assert_exit 3 ohbox run --rm --format json "$BB" sh -c 'echo hello; echo oops >&2; echo "wide ✓"; printf last; exit 3'
  assert_json_lines "$out"
  assert_eq "$(jq -r .event <<<"$out" | tr '\n' ' ')" "created started output output output output exited "
  local id
  id=$(jq -r 'select(.event == "created") | .id' <<<"$out")
  assert_match "$id" '^[0-9a-f]{64}$'
  assert_jq "$(grep '"started"' <<<"$out")" ".id == \"$id\" and (.pid | type == \"number\")"
  assert_eq "$(jq -r 'select(.event == "output") | "\(.stream):\(.line)"' <<<"$out" | sort)" "stderr:oops
stdout:hello
stdout:last
stdout:wide ✓"
  # the order within a stream is kept
  assert_eq "$(jq -r 'select(.event == "output" and .stream == "stdout") | .line' <<<"$out" | tr '\n' ' ')" \
    "hello wide ✓ last "
  assert_jq "$(grep '"exited"' <<<"$out")" \
    ".id == \"$id\" and .exit_code == 3 and .signal == null and .timed_out == false and .duration > 0"
  # nothing but JSON on stdout; the sandbox was removed (--rm)
  assert_no_sandboxes
  # a command killed by a signal
  assert_exit 137 ohbox run --rm --format json "$BB" sh -c 'kill -9 $$'
  assert_jq "$(grep '"exited"' <<<"$out")" '.exit_code == 137 and .signal == "SIGKILL" and .timed_out == false'
  # a line longer than the monitor's line buffer comes in pieces, none lost
  assert_ok ohbox run --rm --format json "$BB" sh -c 'head -c 40000 /dev/zero | tr "\0" a; echo'
  assert_eq "$(jq -r 'select(.event == "output") | .line | length' <<<"$out" | tr '\n' ' ')" "16384 16384 7232 "
}

test_json_errors ()
{
  load_bb
  assert_exit 125 ohbox run --rm --format json no-such-image true
  assert_json_lines "$out"
  assert_jq "$out" '.event == "error" and .exit_code == 125 and (.message | test("no-such-image"))'
  assert_exit 127 ohbox run --rm --format json "$BB" no-such-command
  assert_jq "$out" '.event == "error" and .exit_code == 127'
  # -d: one started event with the id
  assert_ok ohbox run -d --rm --format json "$BB" true
  assert_jq "$out" '.event == "started" and (.id | test("^[0-9a-f]{64}$"))'
}

# stream_check FILE PID: "first" reaches FILE while the command still runs
# (it sleeps 3 s before printing "second").
stream_check ()
{
  t_wait_until 20 grep -q first "$1"
  kill -0 "$2" || _t_assert_fail "ohbox run ended before its output was seen"
  assert_not_contains "$(cat "$1")" second
  wait "$2" || _t_assert_fail "ohbox run failed: $(cat "$1")"
  assert_contains "$(cat "$1")" second
}

test_streaming ()
{
  load_bb
  local f=$T_TMP/stream.out pid
  # stdout a pipe (as for a CI): the command's lines as they are written
  ohbox run --rm "$BB" sh -c 'echo first; sleep 3; echo second' | cat >"$f" &
  pid=$!
  t_track "$pid"
  stream_check "$f" "$pid"
  ohbox run --rm --format json "$BB" sh -c 'echo first; sleep 3; echo second' | cat >"$f.json" &
  pid=$!
  t_track "$pid"
  stream_check "$f.json" "$pid"
  assert_json_lines "$(cat "$f.json")"
  assert_no_sandboxes
}

test_add_host ()
{
  load_bb
  assert_ok ohbox run --rm --network none --add-host db:10.1.2.3 --add-host v6:fd00::1 "$BB" cat /etc/hosts
  assert_contains "$out" "10.1.2.3	db"
  assert_contains "$out" "fd00::1	v6"
  assert_exit 125 ohbox run --rm --add-host 'bad name:1.2.3.4' "$BB" true
  assert_contains "$err" "invalid --add-host"
  assert_exit 125 ohbox run --rm --add-host db:not-an-ip "$BB" true
  assert_no_sandboxes
}

run_test timeout test_timeout
run_test timeout-kill test_timeout_kill
run_test timeout-detached test_timeout_detached
run_test json-events test_json_events
run_test json-errors test_json_errors
run_test streaming test_streaming
run_test add-host test_add_host

t_remove_leftover_sandboxes
