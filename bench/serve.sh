#!/bin/bash
# bench/serve.sh: `ohbox serve` as OpenHands uses it. From POST /start to the
# first successful action through the sandbox's URL (OpenHands' V0 command
# on the runtime image of the harness's busybox, on the connection of the
# session's lookup, as OpenHands does), p50 and p99 over N sessions: cold
# and from a warm pool, one at a time (also on a new connection each) and
# 20 at a time; beside `podman run -d` of the same runtime image plus
# polling its /alive (the peer's cold start). The proxy's added round trip:
# GET /alive and a `run` action through the server's URL and straight to
# the sandbox's port, in turns (which goes first rotating), and through
# nginx proxying to the same executor socket (the peer; when installed);
# then with all of them on one CPU (the proxies' own work, without the
# wake-ups of other CPUs). An action back to back and after 50 ms idle,
# beside bash on a pseudo-terminal without ohbox (what waking idle threads
# costs the machine). Last, 1000 sessions started and stopped one after the other and
# what is left of them (nothing, expected).
#
#   bench/serve.sh [N]        (root; hyperfine and jq for common.sh; podman, nginx if installed)
#   BENCH_SKIP=podman,nginx,leaks   leave some out
#   OHBOX_BIN=...             the ohbox to measure (an -O2 build, not the sanitizers')
# Its own network and mount namespaces, /run a tmpfs (own_namespaces.sh).
. "$(dirname "$0")/own_namespaces.sh"
. "$(dirname "$0")/common.sh"
N=${1:-100}
PY=$(command -v python3)
LOAD="$PY $SRC/bench/serve_load.py"

RT=$(ob build -q localhost/busybox:latest)
KEY=$W/key
openssl rand -hex 24 >"$KEY"
chmod 600 "$KEY"
K=$(cat "$KEY")

# serve_up [OPTIONS]: a server on a free port (URL, SPID).
serve_up ()
{
  local port
  port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  URL=http://127.0.0.1:$port
  "$OHBOX" --root "$STORE" serve --api-key-file "$KEY" --listen "127.0.0.1:$port" --log "$W/serve.log" "$@" \
    >>"$W/serve.err" 2>&1 &
  SPID=$!
  for _ in $(seq 200); do
    curl -s -o /dev/null "$URL/list" && return 0
    sleep 0.05
  done
  echo "bench: ohbox serve did not start" >&2
  cat "$W/serve.err" >&2
  exit 1
}
serve_down ()
{
  kill -TERM "$SPID"
  wait "$SPID" || true
}
BENCH_CLEANUP+=('[ -n "${SPID:-}" ] && kill -TERM "$SPID" && wait "$SPID"')

# stats NAME FILE KEY: p50, p99 of the list KEY of FILE.
stats ()
{
  jq -r --arg n "$1" --arg k "$3" '.[$k] | sort | length as $l
    | "\($n)\t\(.[($l * 0.5 | floor)] | . * 100 | round / 100)\t\(.[([($l * 0.99 | floor), $l - 1] | min)] | . * 100 | round / 100)\t\($l)"' "$2"
}

echo "# ohbox serve: /start to the first action (ms), image $RT"
bench_load_note
printf 'case\tp50\tp99\tsessions\n'
serve_up
$LOAD sessions "$URL" "$K" "$RT" "$N" 1 >"$W/cold1.json"
stats "cold, one at a time: /start answered" "$W/cold1.json" start
stats "cold, one at a time: first action" "$W/cold1.json" first
$LOAD sessions "$URL" "$K" "$RT" "$N" 20 >"$W/cold20.json"
stats "cold, 20 at a time: /start answered" "$W/cold20.json" start
stats "cold, 20 at a time: first action" "$W/cold20.json" first
$LOAD proxy "$URL" "$K" "$RT" 1000 --serve-pid="$SPID" $(want nginx && echo --nginx) >"$W/proxy.json"
$LOAD idle "$URL" "$K" "$RT" "$N" >"$W/idle.json"
serve_down

serve_up --pool "$RT=20"
$LOAD sessions "$URL" "$K" "$RT" "$N" 1 --pool-wait >"$W/pool1.json"
stats "pool, one at a time: /start answered" "$W/pool1.json" start
stats "pool, one at a time: first action" "$W/pool1.json" first
$LOAD sessions "$URL" "$K" "$RT" "$N" 1 --pool-wait --new-connection >"$W/pool1n.json"
stats "pool, one at a time, a new connection each: /start answered" "$W/pool1n.json" start
stats "pool, one at a time, a new connection each: first action" "$W/pool1n.json" first
$LOAD sessions "$URL" "$K" "$RT" "$N" 20 --pool-wait >"$W/pool20.json"
stats "pool, 20 at a time: /start answered" "$W/pool20.json" start
stats "pool, 20 at a time: first action" "$W/pool20.json" first
echo "# starts by source: $(curl -s -H "X-API-Key: $K" "$URL/metrics" | grep '^ohbox_serve_starts_total' | tr '\n' ' ')"
serve_down

case $SKIP in
  *,podman,*) ;;
  *)
    if want podman; then
      PODMAN=(podman --root "$W/podman" --runroot /run/podman-run --runtime runc --cgroup-manager cgroupfs)
      # podman names an image pulled from an OCI layout after the layout's
      # path, which must then be lowercase: mktemp's is not.
      layout=/tmp/ohbox-bench-rt-$$
      BENCH_CLEANUP+=("rm -rf $layout")
      ob save "$RT" "oci:$layout:rt" >/dev/null
      "${PODMAN[@]}" tag "$("${PODMAN[@]}" pull -q "oci:$layout:rt")" localhost/rt:latest
      BENCH_CLEANUP+=("${PODMAN[*]} rm -af; ${PODMAN[*]} system reset -f")
      pn=$((N < 20 ? N : 20))
      $LOAD podman "${PODMAN[@]}" run --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 -- localhost/rt:latest "$pn" \
        >"$W/podman.json" 2>"$W/podman.err" || { echo "podman failed: $(tail -3 "$W/podman.err")"; }
      [ -s "$W/podman.json" ] && stats "podman run -d + /alive: answered" "$W/podman.json" start &&
        stats "podman run -d + /alive: first action" "$W/podman.json" first
    fi
    ;;
esac

echo
echo "# the proxy's added round trip (ms; 1000 in turns, one keep-alive client each; nginx: the peer;"
echo "# then the same with the client, the server, nginx and the sandbox on one CPU: no cross-CPU wake-ups)"
printf 'request\tproxy\tdirect p50\tproxied p50\tadded p50\tdirect p99\tproxied p99\n'
for ph in "" _1cpu; do
  for k in alive action; do
    for side in proxy nginx; do
      jq -r --arg k "$k" --arg s "$side" --arg ph "$ph" 'def p($q): sort | .[(length * $q | floor)] * 1000 | round / 1000;
        select(has($k + "_" + $s + $ph)) | (.[$k + "_direct" + $ph] | p(0.5)) as $d | (.[$k + "_" + $s + $ph] | p(0.5)) as $p
        | "\($k)\t\(if $s == "proxy" then "ohbox serve" else $s end)\(if $ph == "" then "" else ", one CPU" end)\t\($d)\t\($p)\t\(($p - $d) * 1000 | round / 1000)\t\(.[$k + "_direct" + $ph] | p(0.99))\t\(.[$k + "_" + $s + $ph] | p(0.99))"' \
        "$W/proxy.json"
    done
  done
done
for ph in "" _1cpu; do
  jq -r --arg ph "$ph" 'def p50: sort | .[length / 2 | floor]; select(has("action_nginx" + $ph))
    | "ohbox serve adds \(((.["action_proxy" + $ph] | p50) - (.["action_direct" + $ph] | p50)) / ((.["action_nginx" + $ph] | p50) - (.["action_direct" + $ph] | p50)) * 100 | round / 100) times what nginx adds to an action\(if $ph == "" then "" else ", on one CPU" end)"' "$W/proxy.json"
done

# A first action comes after the client's own work: threads and CPUs gone
# idle, each woken again on the way (client, server, executor, its
# worker, the terminal's kernel worker, bash, and back). What that costs
# this machine, with bash on a pseudo-terminal of the client's own as the
# floor of any executor.
echo
echo "# an action back to back and after 50 ms idle (ms, p50 / p90 of $N in turns)"
printf 'path\tback to back\tafter 50 ms idle\n'
jq -r 'def p: sort | "\(.[length / 2 | floor] * 1000 | round / 1000) / \(.[length * 0.9 | floor] * 1000 | round / 1000)";
  ["pty", "bash on a pseudo-terminal (no ohbox)"], ["direct", "a run action, straight"], ["proxy", "a run action, through ohbox serve"]
  | "\(.[1])\t\($d[0][.[0] + "_0"] | p)\t\($d[0][.[0] + "_0.05"] | p)"' --slurpfile d "$W/idle.json" -n

case $SKIP in
  *,leaks,*) ;;
  *)
    echo
    serve_up
    $LOAD cycles "$URL" "$K" "$RT" 1000 >"$W/cycles.json"
    serve_down
    # What the removals (after /stop's answers) leave: nothing.
    for _ in $(seq 100); do
      [ -z "$(ob ps -a -q)" ] && ! ls -A "$RUNROOT" | grep -Eq '^([0-9a-f]{64}|\.rm-|\.new-)' && break
      sleep 0.1
    done
    ids=$(grep -o '"runtime_id":"[0-9a-f]\{64\}"' "$W/serve.log" | cut -d'"' -f4 | sort -u)
    cg=0 veth=0
    for id in $ids; do
      [ -z "$(find /sys/fs/cgroup -maxdepth 4 -type d -name "$id" 2>/dev/null)" ] || cg=$((cg + 1))
      ip link show "ohb${id:0:12}" >/dev/null 2>&1 && veth=$((veth + 1))
    done
    netroot=${OHBOX_NETROOT:-/run/ohbox/net}
    leases=$(find "$netroot/ip" "$netroot/port" -type l -lname "$RUNROOT/*" 2>/dev/null | wc -l)
    printf '# 1000 sessions started and stopped in %s s: %s sandboxes, %s state dirs, %s cgroups, %s veths, %s leases left\n' \
      "$(jq -r '.seconds | . * 10 | round / 10' "$W/cycles.json")" "$(ob ps -a -q | wc -l)" \
      "$(ls -A "$RUNROOT" | grep -Ec '^([0-9a-f]{64}|\.rm-|\.new-)')" "$cg" "$veth" "$leases"
    ;;
esac
