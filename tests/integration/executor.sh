#!/bin/bash
# executor.sh: ohbox-executor as a plain process on a free loopback port,
# driven over HTTP by tests/executor/client.py (Debian python3-httpx) with
# the exact envelopes of the OpenHands protocol.  As root the executor gets
# --username/--user-id of a test user; it creates that user, so it runs in a
# private mount namespace with copies of /etc/passwd, /etc/shadow and an
# empty /home: the host's files are never touched.
set -u
. "$(dirname "$0")/../lib/executor_script.sh"
/usr/bin/python3 -c 'import httpx' 2>/dev/null || skip_all "python3-httpx is missing (apt-get install python3-httpx)"
command -v bash >/dev/null || skip_all "no bash"

tmp=$(mktemp -d /tmp/ohbox-executor-test.XXXXXX)
chmod 755 "$tmp"
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$tmp/workspace
key=key-$RANDOM-$RANDOM
export SESSION_API_KEY=$key NO_CHANGE_TIMEOUT_SECONDS=2

# launch: starts the executor (environment as given) on $port; sets pid.
# Each launch has its own log ($log): a failure shows the right one.
launch() {
  log=$tmp/executor.$((++launches)).log
  if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    cp /etc/passwd /etc/group "$tmp/"
    if [ -e /etc/shadow ]; then cp /etc/shadow "$tmp/shadow"; else : >"$tmp/shadow"; fi
    uid=4242
    while getent passwd "$uid" >/dev/null; do uid=$((uid + 1)); done
    user=ohboxtest$uid
    unshare -m --propagation private sh -c '
      t=$1; shift
      mount --bind "$t/passwd" /etc/passwd && mount --bind "$t/group" /etc/group &&
      { [ ! -e /etc/shadow ] || mount --bind "$t/shadow" /etc/shadow; } && mount -t tmpfs tmpfs /home && exec "$@"' \
      sh "$tmp" "$exe" "$port" --working-dir "$work" --plugins agent_skills jupyter --username "$user" \
      --user-id "$uid" --no-enable-browser >"$log" 2>&1 &
    pid=$!
    echo "# running as root: shell user $user (uid $uid), private /etc/passwd"
  else
    "$exe" "$port" --working-dir "$work" --username "$(id -un)" --user-id "$(id -u)" >"$log" 2>&1 &
    pid=$!
  fi

  for _ in $(seq 100); do
    /usr/bin/python3 -c "import httpx,sys; sys.exit(httpx.get('http://127.0.0.1:$port/alive').status_code != 200)" \
      2>/dev/null && break
    sleep 0.1
  done
}

launches=0
launch
start=$SECONDS
/usr/bin/python3 "$src/tests/executor/client.py" "http://127.0.0.1:$port" "$key" "$work" http run files ipython
rc=$?
echo "# client: $((SECONDS - start)) s"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "FAIL: $name/server_survived: the executor exited"
  rc=1
fi

# A second executor with 2 workers and 2 queue slots: a request arriving
# while both workers are busy and the queue is full gets 503 at once.
kill "$pid" && wait "$pid" 2>/dev/null
pid=
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OHBOX_EXECUTOR_WORKERS=2 OHBOX_EXECUTOR_QUEUE=2 launch
/usr/bin/python3 "$src/tests/executor/client.py" "http://127.0.0.1:$port" "$key" "$work" queue || rc=1
if ! kill -0 "$pid" 2>/dev/null; then
  echo "FAIL: $name/server_survived_queue: the executor exited"
  rc=1
fi
if [ $rc -ne 0 ]; then
  for l in "$tmp"/executor.*.log; do
    echo "---- $(basename "$l")"
    tail -n 30 "$l"
  done
fi
exit $rc
