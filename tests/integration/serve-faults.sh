#!/bin/bash
# serve-faults.sh: `ohbox serve` under faults and load. kill -9 of the
# server between requests (sessions, URLs, keys and actions survive; a
# sandbox that died meanwhile shows failed) and in the middle of starts
# (of the server, and of the worker doing the start: nothing half-made is
# left, `ohbox check` finds nothing; a pooled sandbox's adoption); 20 starts at once; 200 start/stop
# cycles with nothing left; a teardown killed half-way is finished by the
# next command.
#
# NETWORK RULE: traffic only to 127.0.0.1.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/serve.sh"

t_setup_or_die setup sv_setup

# The sandbox findings of `ohbox check` (the shared store's own findings,
# such as unreferenced blobs of earlier builds, are not these tests').
check_sandboxes ()
{
  local j
  j=$("$OHBOX_BIN" --root "$SV_ROOT" check --format json "$@" || true)
  jq -c '[.findings[]? | select(.kind | test("sandbox|leftover|lease|port-element")) | select(.repaired != true)]' <<<"$j"
}

# A server on a busybox image that answers after DELAY seconds.
slow_cmd ()
{
  jq -cn --arg d "$1" '["sh", "-c", "sleep \($d); mkdir -p /tmp/w && echo up >/tmp/w/index.html && exec httpd -f -p 60000 -h /tmp/w"]'
}

test_restart ()
{
  trap sv_cleanup EXIT
  sv_start
  sv_new_session keep '{"command":'"$SV_V0_CMD"',"working_dir":"/openhands/code/"}'
  local id=$SV_ID sk=$SV_SK
  sv_run_action "$id" 'echo before > /tmp/mark'
  assert_eq "$code" 200
  sv_call POST /start "$(jq -cn --arg i "$SV_BB" --argjson c "$(slow_cmd 0)" '{image: $i, session_id: "dies", command: $c}')"
  assert_eq "$code" 200 "$out"
  local dead=$(jq -r .runtime_id <<<"$out")
  sv_call POST /start "$(jq -cn --arg i "$SV_BB" --argjson c "$(slow_cmd 0)" '{image: $i, session_id: "paused"}
    + {command: $c}')"
  local paused=$(jq -r .runtime_id <<<"$out")
  sv_call POST /pause "{\"runtime_id\":\"$paused\"}"
  assert_eq "$code" 200
  sv_kill9
  # Meanwhile a sandbox's command dies.
  "$OHBOX_BIN" --root "$SV_ROOT" kill "$dead"
  t_wait_until 10 sh -c "'$OHBOX_BIN' --root '$SV_ROOT' ps -a --format json | jq -e '.[] | select(.id == \"$dead\" and .status == \"exited\")' >/dev/null"
  sv_restart
  # The session, its URL and its key are where they were.
  sv_call GET /sessions/keep
  assert_eq "$code" 200
  assert_jq "$out" ".status == \"running\" and .runtime_id == \"$id\" and .session_api_key == \"$sk\" and .url == \"$SV_URL/$id\""
  SV_SK=$sk
  sv_run_action "$id" 'cat /tmp/mark'
  assert_eq "$code" 200 "$out"
  assert_contains "$out" before
  sv_call GET /sessions/paused
  assert_jq "$out" '.status == "paused" and .paused_by == "api"'
  sv_call GET /sessions/dies
  assert_jq "$out" '.pod_status == "failed" and .status == "stopped" and .exit_code == 137'
  sv_call GET "/runtime/$dead"
  assert_jq "$out" '.pod_status == "failed"'
  sv_call GET /list
  assert_jq "$out" '[.runtimes[].session_id] | sort == ["dies", "keep", "paused"]'
  # A failed session's /start starts it anew (RUNTIME-API.md, detail 8).
  sv_call POST /start "$(jq -cn --arg i "$SV_BB" --argjson c "$(slow_cmd 0)" '{image: $i, session_id: "dies", command: $c}')"
  assert_eq "$code" 200
  assert_ne "$(jq -r .runtime_id <<<"$out")" "$dead"
  for s in keep paused dies; do
    sv_call GET "/sessions/$s"
    sv_call POST /stop "{\"runtime_id\":\"$(jq -r .runtime_id <<<"$out")\"}"
    assert_eq "$code" 200
  done
  sv_stop
  sv_assert_clean
}
run_test restart test_restart

test_kill_mid_start ()
{
  trap sv_cleanup EXIT
  sv_start
  # The server killed while a start waits for the sandbox's server.
  curl -s -o "$T_WORK/mid.out" -H "X-API-Key: $SV_KEY" --data-binary \
    "$(jq -cn --arg i "$SV_BB" --argjson c "$(slow_cmd 2)" '{image: $i, session_id: "mid", command: $c}')" "$SV_URL/start" &
  local curl_pid=$!
  t_wait_until 20 sh -c "ls '$SV_RUN' | grep -Eq '^[0-9a-f]{64}$'"
  sv_kill9
  wait "$curl_pid" || true
  # The worker of a start killed half-way (the starter's child).
  sv_restart
  curl -s -o "$T_WORK/worker.out" -w '%{http_code}' -H "X-API-Key: $SV_KEY" --data-binary \
    "{\"image\":\"$SV_RT\",\"session_id\":\"worker\"}" "$SV_URL/start" >"$T_WORK/worker.code" &
  curl_pid=$!
  local starter worker=
  starter=$(pgrep -P "$SV_PID" | head -1)
  for i in $(seq 400); do
    worker=$(pgrep -P "$starter" | head -1 || true)
    [ -n "$worker" ] && break
    sleep 0.005
  done
  [ -n "$worker" ] && kill -KILL "$worker"
  wait "$curl_pid" || true
  echo "worker start: $(cat "$T_WORK/worker.code") $(cat "$T_WORK/worker.out")" >&9
  # Whatever either start made is a whole sandbox of its session, or
  # nothing: the library finished what the dead left.
  t_wait_until 20 sh -c "[ \"\$(cd '$SV_RUN' && ls -A | grep -c '^\.new-')\" = 0 ]" || true
  "$OHBOX_BIN" --root "$SV_ROOT" ps -a >&9
  assert_eq "$(check_sandboxes)" "[]" "ohbox check after the kills"
  sv_call GET /sessions/mid
  if [ "$code" = 200 ]; then
    # The start completed without its server: the session is there, and a
    # client that asks again gets it.
    t_wait_until 20 sh -c "curl -s -H 'X-Session-API-Key: $(jq -r .session_api_key <<<"$out")' $SV_URL/$(jq -r .runtime_id <<<"$out")/index.html | grep -q up"
  fi
  sv_stop
  sv_cleanup
  assert_eq "$(check_sandboxes --repair)" "[]"
  sv_assert_clean
}
run_test kill_mid_start test_kill_mid_start

# The server killed while a pooled sandbox's executor adopts a session: the
# server records the session (its id and new key) while the executor
# works, so the record can name a session the executor never got. Started
# again, the server finds that session's key refused and stops the
# sandbox; a session whose adoption finished stays, key and all.
test_kill_mid_adoption ()
{
  trap sv_cleanup EXIT
  sv_start --pool "$SV_RT=2"
  local ready="curl -s -H 'X-API-Key: $SV_KEY' $SV_URL/metrics | grep -q '^ohbox_serve_pool_ready{.*} 2'"
  t_wait_until 60 sh -c "$ready"
  sv_new_session adopted '{"command":'"$SV_V0_CMD"',"working_dir":"/openhands/code/"}'
  local id=$SV_ID sk=$SV_SK
  sv_run_action "$id" 'echo one'
  assert_eq "$code" 200 "$out"
  sv_kill9
  # What the killed server had written of a session given to a member.
  local half
  half=$("$OHBOX_BIN" --root "$SV_ROOT" ps --format json \
    | jq -r '[.[] | select(.labels["org.ohbox.serve.pool"] and .annotations["org.ohbox.serve.session"] == null)][0].id')
  assert_match "$half" '^[0-9a-f]{64}$' "a pool member"
  jq -c '.annotations["org.ohbox.serve.session"] = "half"' "$SV_RUN/$half/state.json" >"$T_WORK/state.json"
  cat "$T_WORK/state.json" >"$SV_RUN/$half/state.json"
  jq -c '.api_key = "00112233445566778899aabbccddeeff"' "$SV_RUN/$half/executor.json" >"$T_WORK/executor.json"
  cat "$T_WORK/executor.json" >"$SV_RUN/$half/executor.json"
  sv_restart
  t_wait_until 20 sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'X-API-Key: $SV_KEY' $SV_URL/sessions/half) = 404 ]"
  t_wait_until 20 sh -c "! [ -e '$SV_RUN/$half' ]"
  sv_call GET /sessions/adopted
  assert_jq "$out" ".status == \"running\" and .runtime_id == \"$id\" and .session_api_key == \"$sk\""
  SV_SK=$sk
  sv_run_action "$id" 'echo two'
  assert_eq "$code" 200 "$out"
  sv_stop
  sv_cleanup
  sv_assert_clean
}
run_test kill_mid_adoption test_kill_mid_adoption

test_concurrent ()
{
  trap sv_cleanup EXIT
  sv_start
  seq 20 | xargs -P 20 -I{} curl -s -o "$T_WORK/c{}.json" -w '{} %{http_code}\n' -H "X-API-Key: $SV_KEY" \
    --data-binary "{\"image\":\"$SV_RT\",\"session_id\":\"c{}\"}" "$SV_URL/start" >"$T_WORK/codes"
  assert_eq "$(awk '$2 == 200' "$T_WORK/codes" | wc -l)" 20 "$(cat "$T_WORK/codes")"
  assert_eq "$(cat "$T_WORK"/c*.json | jq -r .session_api_key | sort -u | wc -l)" 20 "session keys are not all distinct"
  # An action in each, at once (waited for by pid: a bare `wait` would wait
  # for the server too).
  local pids=()
  for n in $(seq 20); do
    (
      j=$(cat "$T_WORK/c$n.json")
      curl -s -H "X-Session-API-Key: $(jq -r .session_api_key <<<"$j")" -H 'Content-Type: application/json' \
        --data '{"action":{"action":"run","args":{"command":"echo sandbox-'"$n"'"}}}' \
        "$SV_URL/$(jq -r .runtime_id <<<"$j")/execute_action" >"$T_WORK/a$n.json"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  for n in $(seq 20); do
    assert_contains "$(cat "$T_WORK/a$n.json")" "sandbox-$n"
  done
  sv_call GET /list
  assert_jq "$out" '.runtimes | length == 20'
  pids=()
  for n in $(seq 20); do
    curl -s -o /dev/null -H "X-API-Key: $SV_KEY" --data "{\"runtime_id\":\"$(jq -r .runtime_id "$T_WORK/c$n.json")\"}" \
      "$SV_URL/stop" &
    pids+=($!)
  done
  wait "${pids[@]}"
  sv_stop
  sv_assert_clean
}
run_test concurrent test_concurrent

test_cycles ()
{
  trap sv_cleanup EXIT
  sv_start
  "$T_PY" - "$SV_URL" "$SV_KEY" "$SV_RT" 200 <<'EOF'
import http.client, json, sys, time
url, key, image, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
host, port = url.split("//")[1].split(":")
c = http.client.HTTPConnection(host, int(port), timeout=120)
def call(method, path, body):
    c.request(method, path, json.dumps(body), {"X-API-Key": key, "Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()
t0 = time.time()
for i in range(n):
    st, d = call("POST", "/start", {"image": image, "session_id": "cyc%d" % i})
    assert st == 200, (i, st, d)
    st, d = call("POST", "/stop", {"runtime_id": json.loads(d)["runtime_id"]})
    assert st == 200, (i, st, d)
print("%d cycles in %.1f s" % (n, time.time() - t0))
EOF
  sv_stop
  sv_assert_clean
}
run_test cycles test_cycles

# `ohbox run --rm` returns before its teardown; a teardown killed half-way
# is finished by the next command that looks (ps), as `ohbox check` would.
test_teardown_killed ()
{
  trap sv_cleanup EXIT
  local try caught=
  for try in 1 2 3 4 5; do
    "$OHBOX_BIN" --root "$SV_ROOT" run --rm -p 127.0.0.1::8080 "$SV_BB" \
      sh -c 'mkdir /many && cd /many && for i in $(seq 6000); do : > f$i; done' >/dev/null 2>&1
    local td
    td=$(pgrep -f -- "--root $SV_ROOT run --rm" || true)
    if [ -n "$td" ]; then
      kill -KILL $td
      caught=1
      break
    fi
  done
  [ -n "$caught" ] || skip "the teardown finished before it could be killed (5 tries)"
  # kill returns before the process is dead: until it is (or a zombie), its
  # teardown lock is held and the next look leaves the sandbox to it.
  local p
  for p in $td; do
    t_wait_until 10 sh -c "[ ! -e /proc/$p/stat ] || [ \"\$(cut -d')' -f2 /proc/$p/stat | cut -c2)\" = Z ]"
  done
  # What it left is finished by the next look, not reported as lost.
  assert_eq "$("$OHBOX_BIN" --root "$SV_ROOT" ps -a -q)" ""
  t_wait_until 30 sh -c "! ls -A '$SV_RUN' | grep -Eq '^([0-9a-f]{64}|\.rm-)'"
  assert_eq "$(check_sandboxes)" "[]"
  local netroot=${OHBOX_NETROOT:-/run/ohbox/net}
  assert_eq "$(find "$netroot/ip" "$netroot/port" -type l -lname "$SV_RUN/*" 2>/dev/null)" ""
}
run_test teardown_killed test_teardown_killed
