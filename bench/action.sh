#!/bin/bash
# bench/action.sh: round-trip latency of `run` (echo hi) and `read` actions
# against ohbox-executor with one keep-alive client (p50, p99, actions/s, and
# the CPU time the executor and its bash spend per action), and the memory
# of the idle executor and of its bash (/proc/PID/smaps_rollup: Rss, Pss,
# private pages).
#
# Usage: bench/action.sh [N]   (N actions per kind, default 2000)
# When executor-mhd-notls/lib (make executor-mhd-notls) exists in the build
# directory, the idle memory of an executor using that libmicrohttpd
# (without HTTPS, hence without GnuTLS) is measured too.
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
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
user=$(id -un)

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_alive() {
  for _ in $(seq 100); do
    $py -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$1/alive')" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# mem PID: "Rss Pss Private" in KiB
mem() {
  awk '/^Rss:/ {r=$2} /^Pss:/ {p=$2} /^Private_(Clean|Dirty):/ {v+=$2} END {printf "%d %d %d", r, p, v}' \
    "/proc/$1/smaps_rollup"
}
child_of() { ps -o pid= --ppid "$1" | head -n 1 | tr -d ' '; }

port=$(free_port)
"$exe" "$port" --working-dir "$tmp/ws" --username "$user" --user-id "$(id -u)" 2>"$tmp/log" &
pid=$!
pids+=("$pid")
wait_alive "$port" || { echo "bench: the executor did not start" >&2; cat "$tmp/log" >&2; exit 1; }
sleep 0.5
bash_pid=$(child_of "$pid")
read -r idle_rss idle_pss idle_priv <<<"$(mem "$pid")"
read -r bash_rss bash_pss bash_priv <<<"$(mem "$bash_pid")"

$py - "$port" "$n" "$tmp/ws" "$pid" "$bash_pid" <<'PY'
import http.client, json, os, sys, time
port, n, ws, epid, bpid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
with open(f'{ws}/bench.txt', 'w') as f:
    f.write('line\n' * 20)
c = http.client.HTTPConnection('127.0.0.1', port)
tick = os.sysconf('SC_CLK_TCK')
def cpu(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick
def act(a):
    c.request('POST', '/execute_action', json.dumps({'action': a}), {'Content-Type': 'application/json'})
    return json.loads(c.getresponse().read())
kinds = {
    'run `echo hi`': ({'action': 'run', 'args': {'command': 'echo hi'}, 'timeout': 120.0}, lambda o: o['content'] == 'hi'),
    'read (20 lines)': ({'action': 'read', 'args': {'path': f'{ws}/bench.txt'}, 'timeout': 120.0},
                        lambda o: o['observation'] == 'read'),
}
print(f'| action | n | p50 (ms) | p99 (ms) | actions/s | executor CPU (ms/action) | bash CPU (ms/action) |')
print(f'|---|---|---|---|---|---|---|')
for name, (a, ok) in kinds.items():
    for _ in range(50):
        act(a)
    ts = []
    e0, b0 = cpu(epid), cpu(bpid)
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        o = act(a)
        ts.append(time.perf_counter() - t)
        assert ok(o), o
    total = time.perf_counter() - t0
    e1, b1 = cpu(epid), cpu(bpid)
    ts.sort()
    print(f'| {name} | {n} | {ts[n // 2] * 1e3:.3f} | {ts[int(n * 0.99)] * 1e3:.3f} | {n / total:.0f} '
          f'| {(e1 - e0) / n * 1e3:.3f} | {(b1 - b0) / n * 1e3:.3f} |')
PY
sleep 0.5
read -r after_rss after_pss after_priv <<<"$(mem "$pid")"
echo
echo "| process | Rss idle (KiB) | Pss idle (KiB) | private idle (KiB) | Rss after the runs (KiB) |"
echo "|---|---|---|---|---|"
echo "| ohbox-executor | $idle_rss | $idle_pss | $idle_priv | $after_rss |"

notls=$build/executor-mhd-notls/lib
if [ -e "$notls/libmicrohttpd.so.12" ]; then
  loader=$(ldd "$exe" | awk '$1 ~ /^\/.*ld-linux/ {print $1; exit}')
  port2=$(free_port)
  "$loader" --library-path "$notls" "$exe" "$port2" --working-dir "$tmp/ws2" --username "$user" \
    --user-id "$(id -u)" 2>"$tmp/log2" &
  pid2=$!
  pids+=("$pid2")
  if wait_alive "$port2"; then
    sleep 0.5
    read -r r2 p2 v2 <<<"$(mem "$pid2")"
    echo "| ohbox-executor, libmicrohttpd without HTTPS | $r2 | $p2 | $v2 | — |"
  fi
fi
echo "| its bash | $bash_rss | $bash_pss | $bash_priv | $(mem "$bash_pid" | cut -d' ' -f1) |"
