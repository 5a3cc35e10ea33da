# tests/lib/plain_executor.sh: ohbox-executor as a plain process of the test
# (no sandbox) on a free port of 127.0.0.1, for tests that attack its HTTP
# server directly (executor-flood.sh, executor-zip.sh).  Sourced by bash.
#
#   pe_scratch              PE_TMP: a temporary directory with work/ in it,
#                           removed (after pe_stop) when the script exits;
#                           PE_KEY: a fresh key, exported as SESSION_API_KEY
#   pe_launch LOG WORKDIR   starts $PE_EXE with the caller's environment
#                           (SESSION_API_KEY, OHBOX_EXECUTOR_*), waits for
#                           /alive; sets PE_PORT and PE_PID, exits 1 on failure
#   pe_stop                 stops it (also meant for the caller's EXIT trap)
#   pe_survived NAME        FAIL line "NAME" when the executor died
: "${PE_EXE:=${OHBOX_BUILDDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/ohbox-executor}"
PE_PID=
PE_PORT=

pe_scratch() {
  PE_TMP=$(mktemp -d "/tmp/ohbox-${name:-executor}.XXXXXX")
  trap 'pe_stop; rm -rf "$PE_TMP"' EXIT
  mkdir -p "$PE_TMP/work"
  PE_KEY=key-$RANDOM-$RANDOM
  export SESSION_API_KEY=$PE_KEY
}

pe_launch() {
  local log=$1 work=$2
  PE_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # As root the shell user is root itself: no user is created on the host.
  "$PE_EXE" "$PE_PORT" --working-dir "$work" --username "$(id -un)" --user-id "$(id -u)" >>"$log" 2>&1 &
  PE_PID=$!
  for _ in $(seq 100); do
    /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PE_PORT/alive', timeout=1)" \
      2>/dev/null && return 0
    kill -0 "$PE_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: ${name:-executor}/starts: the executor did not answer /alive"
  tail -n 20 "$log"
  exit 1
}

pe_stop() {
  [ -n "$PE_PID" ] && kill "$PE_PID" 2>/dev/null && wait "$PE_PID" 2>/dev/null
  PE_PID=
}

pe_survived() {
  if ! kill -0 "$PE_PID" 2>/dev/null; then
    echo "FAIL: $1: the executor exited"
    return 1
  fi
}
