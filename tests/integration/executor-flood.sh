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
. "$(dirname "$0")/../lib/executor_script.sh"
command -v bash >/dev/null || skip_all "no bash"
/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
  skip_all "cannot bind 127.0.0.2 (loopback is not 127.0.0.0/8 here)"

PE_EXE=$exe
. "$src/tests/lib/plain_executor.sh"
pe_scratch
export NO_CHANGE_TIMEOUT_SECONDS=2
rc=0

# The default limits (256 connections, 64 per address).
pe_launch "$PE_TMP/executor.log" "$PE_TMP/work"
/usr/bin/python3 "$src/tests/executor/flood.py" "$PE_PORT" "$PE_KEY" 10 60 64 flood || rc=1
pe_survived "$name/server_survived_flood" || rc=1
pe_stop

# Short timeouts, so that dripping clients are measured in seconds.
OHBOX_EXECUTOR_HEADER_TIMEOUT=1.5 OHBOX_EXECUTOR_IDLE_TIMEOUT=2 pe_launch "$PE_TMP/executor.log" "$PE_TMP/work"
/usr/bin/python3 "$src/tests/executor/flood.py" "$PE_PORT" "$PE_KEY" 1.5 2 64 timeouts || rc=1
pe_survived "$name/server_survived_timeouts" || rc=1
pe_stop

# A bad limit is refused at start, naming the variable.
out=$(OHBOX_EXECUTOR_CONNECTIONS_PER_ADDRESS=0 timeout 10 "$exe" "$PE_PORT" --working-dir "$PE_TMP/work" \
  --username "$(id -un)" --user-id "$(id -u)" 2>&1)
if [ $? -ne 0 ] && grep -q 'OHBOX_EXECUTOR_CONNECTIONS_PER_ADDRESS' <<<"$out"; then
  echo "PASS: $name/bad_limit_refused"
else
  echo "FAIL: $name/bad_limit_refused: $out"
  rc=1
fi
if [ $rc -ne 0 ]; then
  echo "---- executor log"
  tail -n 30 "$PE_TMP/executor.log"
fi
exit $rc
