#!/usr/bin/env python3
"""bench/serve_load.py: the client side of bench/serve.sh (stdlib only).

  sessions URL KEY IMAGE N CONCURRENCY [--pool-wait] [--new-connection]
      N sessions, CONCURRENCY at a time, each as OpenHands V0 on one
      connection: GET /sessions/ID (404), POST /start (V0's command), the
      first `run` action through the sandbox's URL, POST /stop.
      Prints JSON: start (ms to the /start answer) and first (ms from /start
      to the first successful action), one per session. --pool-wait: before
      each batch, wait until the server's pool is full again (each start is
      then one "from the pool"). --new-connection: /start on a connection
      of its own, without the lookup (a new connection costs the server a
      thread).
  proxy URL KEY IMAGE N [--nginx] [--serve-pid=PID]
      One session; N round trips of GET /alive and of a `run` action, in turns,
      through the server's URL and straight to the sandbox's published port;
      --nginx: also through nginx (the peer) proxying to the same executor
      socket as the server. --serve-pid: then N more with this client, the
      server (PID), nginx and the sandbox's processes on one CPU (keys
      ending in _1cpu), their masks restored after.
  podman PODMAN-ARGS... run RUN-OPTIONS... -- IMAGE N
      N times: `podman run -d` of IMAGE, polling its /alive until 200, the
      first action, `podman rm -f` (the peer of a cold start).
  cycles URL KEY IMAGE N
      N start/stop cycles, one at a time.
  idle URL KEY IMAGE N
      One session; N `run` actions through the server's URL and straight to
      the sandbox's port, and N round trips of `echo hi` to a bash on a
      pseudo-terminal of this process's own (no ohbox: the machine's floor
      for an executor), in turns, back to back and each after 50 ms idle.
"""
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

V0 = ["/openhands/micromamba/bin/micromamba", "run", "-n", "openhands", "poetry", "run", "python", "-u", "-m",
      "openhands.runtime.action_execution_server", "60000", "--working-dir", "/workspace", "--username",
      "openhands", "--user-id", "1000", "--no-enable-browser"]
ACTION = json.dumps({"action": {"action": "run", "args": {"command": "echo hi"}}})


class Conn:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)

    def call(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.c.request(method, path, body, h)
        r = self.c.getresponse()
        return r.status, r.read()


def metric(url, key, name):
    c = Conn(url)
    st, d = c.call("GET", "/metrics", headers={"X-API-Key": key})
    for line in d.decode().splitlines():
        if line.startswith(name):
            return float(line.split()[-1])
    return 0.0


def one_session(url, key, image, sid, out, new_connection):
    c = Conn(url)
    h = {"X-API-Key": key}
    # V0's first call for a session, on the connection it then uses for
    # /start and the sandbox's URL (RUNTIME-API.md, detail 10): /start comes
    # on an open connection, as from OpenHands.
    if not new_connection:
        st, _ = c.call("GET", "/sessions/" + sid, headers=h)
        if st != 404:
            raise SystemExit("session lookup %s: %d" % (sid, st))
    t0 = time.perf_counter()
    st, d = c.call("POST", "/start", json.dumps({"image": image, "session_id": sid, "command": V0,
                                                  "working_dir": "/openhands/code/", "environment": {}}), h)
    t1 = time.perf_counter()
    if st != 200:
        raise SystemExit("start %s: %d %s" % (sid, st, d[:300]))
    j = json.loads(d)
    path = urllib.parse.urlparse(j["url"]).path
    st, d = c.call("POST", path + "/execute_action", ACTION, {"X-Session-API-Key": j["session_api_key"]})
    t2 = time.perf_counter()
    if st != 200 or b"hi" not in d:
        raise SystemExit("action %s: %d %s" % (sid, st, d[:300]))
    out.append(((t1 - t0) * 1000, (t2 - t0) * 1000))
    c.call("POST", "/stop", json.dumps({"runtime_id": j["runtime_id"]}), h)


def sessions(url, key, image, n, conc, pool_wait, new_connection):
    out = []
    done = 0
    target = metric(url, key, "ohbox_serve_pool_target") if pool_wait else 0
    while done < n:
        batch = min(conc, n - done)
        if pool_wait:
            t = time.time()
            while metric(url, key, "ohbox_serve_pool_ready") < min(batch, target):
                if time.time() - t > 120:
                    raise SystemExit("the pool does not fill")
                time.sleep(0.05)
        threads = [threading.Thread(target=one_session, args=(url, key, image, "b%d" % (done + i), out, new_connection))
                   for i in range(batch)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        done += batch
    print(json.dumps({"start": [a for a, _ in out], "first": [b for _, b in out]}))


NGINX_CONF = """daemon off; user root; worker_processes 1; pid %(d)s/nginx.pid; error_log %(d)s/error.log;
events { worker_connections 64; }
http { access_log %(d)s/access.log; client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/proxy;
  upstream executor { server unix:%(d)s/executor.sock; keepalive 8; }
  server { listen 127.0.0.1:%(port)d;
    location / { proxy_pass http://executor; proxy_http_version 1.1; proxy_set_header Connection "";
                 proxy_buffering off; } } }
"""


def start_nginx(runtime_dir):
    """nginx on a free 127.0.0.1 port, proxying to the executor's socket
    (like the server: one worker, a kept connection, a log line per
    request); (process, URL, its directory)."""
    import socket
    import tempfile
    d = tempfile.mkdtemp(prefix="ohbox-bench-nginx.")
    # The socket's path is too long for a socket address: a link to it.
    os.symlink(os.path.join(runtime_dir, "executor.sock"), os.path.join(d, "executor.sock"))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF % {"d": d, "port": port})
    p = subprocess.Popen(["nginx", "-c", os.path.join(d, "nginx.conf")])
    url = "http://127.0.0.1:%d" % port
    for _ in range(200):
        try:
            Conn(url).call("GET", "/")
            break
        except OSError:
            time.sleep(0.02)
    return p, url, d


def one_sandbox(c, key, sid):
    """POST /start of the runtime image on C: its answer, its path on the
    server, its session key header, its state directory and its executor
    record (the sandbox's own published port)."""
    st, d = c.call("POST", "/start", json.dumps({"image": c.image, "session_id": sid}), {"X-API-Key": key})
    if st != 200:
        raise SystemExit("start %s: %d %s" % (sid, st, d[:300]))
    j = json.loads(d)
    runtime_dir = os.path.join(os.environ["OHBOX_RUNROOT"], j["runtime_id"])
    rec = json.load(open(os.path.join(runtime_dir, "executor.json")))
    return (j, urllib.parse.urlparse(j["url"]).path, {"X-Session-API-Key": j["session_api_key"]}, runtime_dir,
            rec)


def threads_of(pids):
    """Every thread of PIDS and of their descendants."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        try:
            out += [int(t) for t in os.listdir("/proc/%d/task" % p)]
        except OSError:
            continue
        todo += children.get(p, [])
    return out


def in_cgroup_of(runtime_id):
    """The processes whose cgroup path names RUNTIME_ID (the sandbox's)."""
    out = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and runtime_id in open("/proc/%s/cgroup" % d).read():
                out.append(int(d))
        except OSError:
            pass
    return out


def pin_to_one_cpu(tids):
    """Each of TIDS on the first CPU this process may use; returns how to
    undo it (each one's own mask)."""
    cpu = min(os.sched_getaffinity(0))
    saved = []
    for t in tids:
        try:
            saved.append((t, os.sched_getaffinity(t)))
            os.sched_setaffinity(t, {cpu})
        except OSError:
            pass
    return saved


def unpin(saved):
    for t, mask in saved:
        try:
            os.sched_setaffinity(t, mask)
        except OSError:
            pass


def proxy(url, key, image, n, with_nginx, serve_pid):
    import shutil
    c = Conn(url)
    c.image = image
    h = {"X-API-Key": key}
    j, path, sk, runtime_dir, rec = one_sandbox(c, key, "proxy")
    turns = [("proxy", c, path), ("direct", Conn(rec["url"]), "")]
    ng = None
    if with_nginx:
        ng, ng_url, ng_dir = start_nginx(runtime_dir)
        turns.append(("nginx", Conn(ng_url), ""))
    res = {}
    try:
        # Then again with the client, the server, nginx and the sandbox on
        # one CPU: no hop is a wake-up of another, maybe halted, CPU (what
        # the proxy's own work costs, beside nginx's).
        for phase in ("", "_1cpu"):
            saved = []
            if phase and serve_pid:
                saved = pin_to_one_cpu(threads_of([os.getpid(), serve_pid] + ([ng.pid] if ng else []))
                                       + threads_of(in_cgroup_of(j["runtime_id"])))
            try:
                res.update(proxy_turns(turns, n, sk, phase))
            finally:
                unpin(saved)
    finally:
        if ng:
            ng.terminate()
            ng.wait()
            shutil.rmtree(ng_dir, ignore_errors=True)
    c.call("POST", "/stop", json.dumps({"runtime_id": j["runtime_id"]}), h)
    print(json.dumps(res))


def proxy_turns(turns, n, sk, phase):
    res = {"%s_%s%s" % (r, k, phase): [] for r in ("alive", "action") for k, _, _ in turns}
    for i in range(n + 50):
        # Which goes first rotates: a request right after an action meets
        # the shell's after-work (its prompt), ~0.1 ms here, and a fixed
        # order gave that to one side only.
        for kind, conn, p in turns[i % len(turns):] + turns[:i % len(turns)]:
            t = time.perf_counter()
            st, _ = conn.call("GET", p + "/alive", headers=sk)
            a = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            st2, _ = conn.call("POST", p + "/execute_action", ACTION, sk)
            b = (time.perf_counter() - t) * 1000
            if st != 200 or st2 != 200:
                raise SystemExit("proxy bench (%s): %d %d" % (kind, st, st2))
            if i >= 50:  # warm-up
                res["alive_%s%s" % (kind, phase)].append(a)
                res["action_%s%s" % (kind, phase)].append(b)
    return res


def podman(run, image, n):
    """RUN: podman's command line up to and with `run` and its options."""
    args = run[:run.index("run")]
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        r = subprocess.run(run + ["-d", "-p", "127.0.0.1::60000", "-e", "SESSION_API_KEY=k", "--entrypoint",
                                   V0[0], image] + V0[1:], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("podman run: exit %d: %s" % (r.returncode, r.stderr.strip()[-500:]))
        cid = r.stdout.strip()
        port = subprocess.run(args + ["port", cid, "60000"], check=True, capture_output=True,
                              text=True).stdout.strip().split(":")[-1]
        c = None
        while True:
            try:
                c = Conn("http://127.0.0.1:%s" % port)
                st, _ = c.call("GET", "/alive")
                if st == 200:
                    break
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.002)
        t1 = time.perf_counter()
        st, d = c.call("POST", "/execute_action", ACTION, {"X-Session-API-Key": "k"})
        t2 = time.perf_counter()
        if st != 200:
            raise SystemExit("podman action: %d %s" % (st, d[:200]))
        out.append(((t1 - t0) * 1000, (t2 - t0) * 1000))
        subprocess.run(args + ["rm", "-f", cid], check=True, capture_output=True)
    print(json.dumps({"start": [a for a, _ in out], "first": [b for _, b in out]}))


def cycles(url, key, image, n):
    c = Conn(url)
    h = {"X-API-Key": key}
    t0 = time.time()
    for i in range(n):
        st, d = c.call("POST", "/start", json.dumps({"image": image, "session_id": "cyc%d" % i}), h)
        if st != 200:
            raise SystemExit("cycle %d: %d %s" % (i, st, d[:200]))
        st, d = c.call("POST", "/stop", json.dumps({"runtime_id": json.loads(d)["runtime_id"]}), h)
    print(json.dumps({"cycles": n, "seconds": time.time() - t0}))


class PtyBash:
    """A bash on a pseudo-terminal of its own, prompt `#END#`, no echo."""

    def __init__(self):
        import pty
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
        os.write(self.fd, b"PS1='#END#'; stty -echo\n")
        self.read_prompt()

    def read_prompt(self):
        import select
        buf = b""
        while not buf.endswith(b"#END#"):
            select.select([self.fd], [], [])
            buf += os.read(self.fd, 65536)

    def call(self):
        os.write(self.fd, b"echo hi\n")
        self.read_prompt()

    def close(self):
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)


def idle(url, key, image, n):
    c = Conn(url)
    c.image = image
    h = {"X-API-Key": key}
    j, path, sk, _, rec = one_sandbox(c, key, "idle")
    direct = Conn(rec["url"])
    bash = PtyBash()
    turns = [("pty", bash.call), ("direct", lambda: direct.call("POST", "/execute_action", ACTION, sk)),
             ("proxy", lambda: c.call("POST", path + "/execute_action", ACTION, sk))]
    res = {}
    for gap in (0, 0.05):
        for kind, _ in turns:
            res["%s_%g" % (kind, gap)] = []
        for i in range(n + 10):
            for kind, f in turns[i % 3:] + turns[:i % 3]:
                if gap:
                    time.sleep(gap)
                t = time.perf_counter()
                f()
                if i >= 10:
                    res["%s_%g" % (kind, gap)].append((time.perf_counter() - t) * 1000)
    bash.close()
    c.call("POST", "/stop", json.dumps({"runtime_id": j["runtime_id"]}), h)
    print(json.dumps(res))


def main():
    a = sys.argv[1:]
    if a[0] == "sessions":
        sessions(a[1], a[2], a[3], int(a[4]), int(a[5]), "--pool-wait" in a, "--new-connection" in a)
    elif a[0] == "proxy":
        pin = [int(x.split("=", 1)[1]) for x in a[5:] if x.startswith("--serve-pid=")]
        proxy(a[1], a[2], a[3], int(a[4]), "--nginx" in a[5:], pin[0] if pin else 0)
    elif a[0] == "podman":
        k = a.index("--")
        podman(a[1:k], a[k + 1], int(a[k + 2]))
    elif a[0] == "cycles":
        cycles(a[1], a[2], a[3], int(a[4]))
    elif a[0] == "idle":
        idle(a[1], a[2], a[3], int(a[4]))


if __name__ == "__main__":
    main()
