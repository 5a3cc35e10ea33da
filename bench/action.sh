#!/bin/bash
# bench/action.sh: round-trip latency of `run` (echo hi) and `read` actions
# against ohbox-executor with one keep-alive client (p50, p99, actions/s),
# and the idle RSS of the executor and of its bash.
#
# Usage: bench/action.sh [N]   (N actions per kind, default 2000)
# The OpenHands server polls its tmux pane every 0.5 s, so its floor is
# ~500 ms per command; the target here is p50 < 1 ms and an idle executor
# RSS < 4 MiB (bash not counted).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${OHBOX_BUILDDIR:-$src}
exe=$build/ohbox-executor
n=${1:-2000}
[ -x "$exe" ] || { echo "bench: build ohbox-executor first (make ohbox-executor)" >&2; exit 1; }
py=$(command -v python3)

tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=$(id -un)
"$exe" "$port" --working-dir "$tmp/ws" --username "$user" --user-id "$(id -u)" 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do
  $py -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/alive')" 2>/dev/null && break
  sleep 0.1
done

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
sleep 0.5
idle_exec=$(rss_kib $pid)
bash_pid=$(ps -o pid= --ppid $pid | head -n 1 | tr -d ' ')
idle_bash=$([ -n "$bash_pid" ] && rss_kib "$bash_pid" || echo "?")

$py - "$port" "$n" "$tmp/ws" <<'PY'
import http.client, json, sys, time
port, n, ws = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(f'{ws}/bench.txt', 'w') as f:
    f.write('line\n' * 20)
c = http.client.HTTPConnection('127.0.0.1', port)
def act(a):
    c.request('POST', '/execute_action', json.dumps({'action': a}), {'Content-Type': 'application/json'})
    return json.loads(c.getresponse().read())
kinds = {
    'run `echo hi`': ({'action': 'run', 'args': {'command': 'echo hi'}, 'timeout': 120.0}, lambda o: o['content'] == 'hi'),
    'read (20 lines)': ({'action': 'read', 'args': {'path': f'{ws}/bench.txt'}, 'timeout': 120.0},
                        lambda o: o['observation'] == 'read'),
}
print(f'| action | n | p50 (ms) | p99 (ms) | actions/s |')
print(f'|---|---|---|---|---|')
for name, (a, ok) in kinds.items():
    for _ in range(50):
        act(a)
    ts = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        o = act(a)
        ts.append(time.perf_counter() - t)
        assert ok(o), o
    total = time.perf_counter() - t0
    ts.sort()
    print(f'| {name} | {n} | {ts[n // 2] * 1e3:.3f} | {ts[int(n * 0.99)] * 1e3:.3f} | {n / total:.0f} |')
PY
sleep 0.5
echo
echo "| process | RSS idle at start (KiB) | RSS after the runs (KiB) |"
echo "|---|---|---|"
echo "| ohbox-executor | $idle_exec | $(rss_kib $pid) |"
echo "| its bash | $idle_bash | $([ -n "$bash_pid" ] && rss_kib "$bash_pid" || echo "?") |"
