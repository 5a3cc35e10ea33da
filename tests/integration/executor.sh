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

# --listen-fd: a listening unix socket made by the caller (as `ohbox run`
# makes one) is served beside the port; anything else is refused by name.
/usr/bin/python3 - "$exe" "$tmp" <<'PY' || rc=1
import os, pwd, socket, subprocess, sys
import httpx
exe, tmp = sys.argv[1:3]
# The caller's own user: as root, no user is added to the host's files.
me = ["--working-dir", tmp, "--username", pwd.getpwuid(os.getuid()).pw_name, "--user-id", str(os.getuid())]
name = "executor"
def check(test, ok, why):
    print("%s: %s/%s%s" % ("PASS" if ok else "FAIL", name, test, "" if ok else ": " + why))
    return ok
path = os.path.join(tmp, "x.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(8)
env = dict(os.environ, SESSION_API_KEY="k1")
p = subprocess.Popen([exe, "0", "--listen-address", "127.0.0.1", "--listen-fd", str(s.fileno())] + me,
                     pass_fds=(s.fileno(),), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
s.close()
c = httpx.Client(transport=httpx.HTTPTransport(uds=path), base_url="http://localhost", timeout=30)
try:
    h = {"X-Session-API-Key": "k1"}
    r = c.get("/alive", headers=h)
    check("listen_fd_alive", r.status_code == 200, "%d %s" % (r.status_code, r.text))
    r = c.post("/execute_action", headers=h, json={"action": {"action": "run", "args": {"command": "echo hi"}}})
    check("listen_fd_action", r.status_code == 200 and r.json().get("content") == "hi", r.text)
finally:
    p.terminate()
    p.wait()
for args, fds, want in ((["--listen-fd", "2"], (), "is not a file descriptor above 2"),
                        (["--listen-fd", "x"], (), "is not a file descriptor above 2"),
                        (["--listen-fd", "%d" % os.open("/dev/null", os.O_RDONLY)], "null", "is not a listening socket")):
    pf = (int(args[1]),) if fds == "null" else ()
    q = subprocess.run([exe, "0", "--listen-address", "127.0.0.1"] + me + args, pass_fds=pf, env=env, capture_output=True, text=True,
                       timeout=30)
    check("listen_fd_refused_" + args[1] if fds != "null" else "listen_fd_refused_not_a_socket",
          q.returncode != 0 and want in q.stderr, "%d %s" % (q.returncode, q.stderr))
PY

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
