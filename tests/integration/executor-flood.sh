#!/bin/bash
# executor-flood.sh: ohbox-executor under connection floods (issue 14 item
# 3), as a plain process on a free loopback port, attacked over real
# sockets by tests/executor/flood.py: 300 idle connections held from
# 127.0.0.1 must not stop /alive and an action from 127.0.0.2 (nor a new
# connection from 127.0.0.1 itself), floods from many addresses must not
# lock out another one, the executor answers at once when a flood closes, a
# trusted action survives a flood from its own address; headers dripped
# (slowloris), silent connections and unauthenticated dripped bodies are
# closed after the header timeout, while a `run` action longer than both
# timeouts completes.
set -u
src=${OHBOX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${OHBOX_BUILDDIR:-$src}
exe=$build/ohbox-executor
name=executor-flood

skip_all() { echo "SKIP: $name/all: $1"; exit 0; }
[ -x "$exe" ] || skip_all "ohbox-executor is not built (make ohbox-executor)"
command -v bash >/dev/null || skip_all "no bash"
/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
  skip_all "cannot bind 127.0.0.2 (loopback is not 127.0.0.0/8 here)"

tmp=$(mktemp -d /tmp/ohbox-executor-flood.XXXXXX)
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/work"
key=key-$RANDOM-$RANDOM
export SESSION_API_KEY=$key NO_CHANGE_TIMEOUT_SECONDS=2
rc=0

# launch: starts the executor (environment as given) on a new $port.
launch() {
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # As root the shell user is root itself: no user is created on the host.
  "$exe" "$port" --working-dir "$tmp/work" --username "$(id -un)" --user-id "$(id -u)" >>"$tmp/executor.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/alive', timeout=1)" \
      2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: $name/starts: the executor did not answer /alive"
  tail -n 20 "$tmp/executor.log"
  exit 1
}

survived() {
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: $name/server_survived_$1: the executor exited"
    rc=1
  fi
}

# The default limits (256 connections, 64 per address).
launch
/usr/bin/python3 "$src/tests/executor/flood.py" "$port" "$key" 10 60 64 flood || rc=1
survived flood
stop

# Short timeouts, so that dripping clients are measured in seconds.
OHBOX_EXECUTOR_HEADER_TIMEOUT=1.5 OHBOX_EXECUTOR_IDLE_TIMEOUT=2 launch
/usr/bin/python3 "$src/tests/executor/flood.py" "$port" "$key" 1.5 2 64 timeouts || rc=1
survived timeouts
stop

# A bad limit is refused at start, naming the variable.
out=$(OHBOX_EXECUTOR_CONNECTIONS_PER_ADDRESS=0 timeout 10 "$exe" "$port" --working-dir "$tmp/work" \
  --username "$(id -un)" --user-id "$(id -u)" 2>&1)
if [ $? -ne 0 ] && grep -q 'OHBOX_EXECUTOR_CONNECTIONS_PER_ADDRESS' <<<"$out"; then
  echo "PASS: $name/bad_limit_refused"
else
  echo "FAIL: $name/bad_limit_refused: $out"
  rc=1
fi
if [ $rc -ne 0 ]; then
  echo "---- executor log"
  tail -n 30 "$tmp/executor.log"
fi
exit $rc
