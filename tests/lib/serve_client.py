#!/usr/bin/python3
"""serve_client.py: OpenHands' remote runtime clients, replayed for tests.

Drives `ohbox serve` the way OpenHands' own clients drive the remote
runtime API (shared/protocol/RUNTIME-API.md), with Debian's httpx (run it
with /usr/bin/python3):

  v0  the V0 agent loop (RemoteRuntime, RemoteRuntimeBuilder): one HTTP
      session for the API and the sandbox (X-API-Key on everything, then
      X-Session-API-Key too), /sessions lookup, /registry_prefix, the
      three-tier tags and up to seven /image_exists, /build of a base64
      tar.gz context with a 30 s POST timeout, /build_status at once and
      every --build-poll seconds (30 in OpenHands), /start with OpenHands'
      own server argv, /runtime polled at once and every 2 s until "ready"
      (runtime_id asserted, pod_status compared case-insensitively), GET
      url/alive, actions, /pause, the 503 of a paused sandbox, /resume, a
      duplicate session_id, /stop, /stop with runtime_id null.
  v1  the V1 app server (RemoteSandboxService): /start with run_as_user,
      run_as_group, fs_group and an image's own server on port 60000,
      /sessions (pod_status first, then status), /list (status running,
      session_api_key read unconditionally), /pause, /resume, /stop, and a
      404 from them taken as False.

Each step prints one JSON line ({"step": ..., ...}); a check that fails
prints {"error": ...} and exits 1.
"""

import argparse
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import time

import httpx

V0_PREFIX = [
    "/openhands/micromamba/bin/micromamba", "run", "-n", "openhands", "poetry", "run",
    "python", "-u", "-m", "openhands.runtime.action_execution_server",
]
OH_VERSION = "0.62.0"


class Fail(Exception):
    pass


def step(name, **kw):
    kw["step"] = name
    print(json.dumps(kw), flush=True)


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def raise_for_status(r):
    """OpenHands' send_request: any status >= 400 raises."""
    r.raise_for_status()
    return r


# ---------------------------------------------------------------- V0

def trunc36(hexdigest):
    """OpenHands' truncate_hash (ACTION-PROTOCOL.md section 5)."""
    n = int(hexdigest, 16)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n and len(out) < 16:
        n, r = divmod(n, 36)
        out += digits[r]
    return out or "0"


def three_tier_tags(repo, base, context_dir):
    """The client's names: versioned (from the base), lock (base + a lock
    of dependencies), source (lock + the sources)."""
    versioned = "oh_v%s_%s" % (OH_VERSION, base.replace("/", "_s_").replace(":", "_t_").lower()[-96:])
    lock = "oh_v%s_%s" % (OH_VERSION, trunc36(hashlib.md5(("lock" + base).encode()).hexdigest()))
    h = hashlib.md5()
    # The sources (OpenHands hashes its own code), not the Dockerfile the
    # build writes into the directory.
    for root, _, files in sorted(os.walk(context_dir)):
        for f in sorted(files):
            if f == "Dockerfile" and root == context_dir:
                continue
            with open(os.path.join(root, f), "rb") as fh:
                h.update(fh.read())
    source = "%s_%s" % (lock, trunc36(h.hexdigest()))
    return ["%s:%s" % (repo, source), "%s:%s" % (repo, lock), "%s:%s" % (repo, versioned)]


def context_b64(context_dir):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(context_dir, arcname=".")
    return base64.b64encode(buf.getvalue()).decode()


class V0:
    def __init__(self, api, key, sid, build_poll):
        self.api = api.rstrip("/")
        self.sid = sid
        self.build_poll = build_poll
        # One session for the API and the sandbox (RUNTIME-API.md, detail 10).
        self.s = httpx.Client(headers={"X-API-Key": key}, timeout=180)
        self.runtime_id = None
        self.url = None

    def req(self, method, path, **kw):
        return raise_for_status(self.s.request(method, self.api + path, **kw))

    def existing(self):
        r = self.s.get(self.api + "/sessions/" + self.sid)
        if r.status_code == 404:
            return None
        raise_for_status(r)
        return r.json()

    def image_exists(self, image):
        j = self.req("GET", "/image_exists", params={"image": image}).json()
        if j["exists"]:
            # The client formats both, logging or not (detail 5).
            "%s %.2f" % (j["image"]["upload_time"], j["image"]["image_size_bytes"] / 1024 / 1024)
        return bool(j["exists"])

    def build(self, base, context_dir, force_scratch=False):
        prefix = self.req("GET", "/registry_prefix").json()["registry_prefix"]
        repo = prefix.rstrip("/") + "/runtime"
        source, lock, versioned = three_tier_tags(repo, base, context_dir)
        step("tags", source=source, lock=lock, versioned=versioned)
        calls = 0
        if self.image_exists(source) and not force_scratch:
            step("reuse", image=source)
            return source, calls + 1
        calls += 1
        if self.image_exists(lock):
            frm, tags = lock, [source]
        elif self.image_exists(versioned):
            frm, tags = versioned, [source, lock]
        else:
            frm, tags = base, [source, lock, versioned]
        calls += 2
        with open(os.path.join(context_dir, "Dockerfile"), "w") as f:
            f.write("FROM %s\n\n# OpenHands' own steps (not run by ohbox serve)\nRUN echo building\n"
                    "COPY ./code /openhands/code\nWORKDIR /openhands/code\n" % frm)
        files = [("context", ("context.tar.gz", context_b64(context_dir))), ("target_image", (None, tags[0]))]
        for t in tags[1:]:
            files.append(("tags", (None, t)))
        t0 = time.time()
        r = self.req("POST", "/build", files=files, timeout=30)
        check(time.time() - t0 < 30, "POST /build took over the client's 30 s")
        build_id = r.json()["build_id"]
        step("build", build_id=build_id, target=tags[0], frm=frm)
        while True:
            j = self.req("GET", "/build_status", params={"build_id": build_id}).json()
            if j["status"] == "SUCCESS":
                check("image" in j, "SUCCESS without image")
                step("build_status", status="SUCCESS", log=j.get("log", []))
                break
            if j["status"] in ("FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED"):
                step("build_status", status=j["status"], error=j.get("error"), log=j.get("log", []))
                raise Fail("build failed: %s" % j.get("error"))
            time.sleep(self.build_poll)
        # The client goes on with target_image; every tag resolves too (detail 6).
        for t in tags:
            check(self.image_exists(t), "tag %s does not exist after the build" % t)
        return tags[0], calls

    def start(self, image, env=None, factor=1):
        cmd = V0_PREFIX + ["60000", "--working-dir", "/workspace", "--plugins", "agent_skills", "jupyter",
                           "--username", "openhands", "--user-id", "1000", "--no-enable-browser"]
        body = {"image": image, "command": cmd, "working_dir": "/openhands/code/", "environment": env or {},
                "session_id": self.sid, "resource_factor": factor}
        t0 = time.time()
        j = self.req("POST", "/start", json=body).json()
        self.parse(j)
        step("start", runtime_id=self.runtime_id, url=self.url, seconds=round(time.time() - t0, 3),
             work_hosts=j.get("work_hosts"))
        return j

    def parse(self, j):
        self.runtime_id = j["runtime_id"]
        self.url = j["url"]
        if "session_api_key" in j:
            self.s.headers["X-Session-API-Key"] = j["session_api_key"]

    def wait_until_alive(self, timeout=60):
        t0 = time.time()
        polls = 0
        while True:
            j = self.req("GET", "/runtime/" + self.runtime_id).json()
            polls += 1
            check(j["runtime_id"] == self.runtime_id, "runtime_id mismatch")
            st = j["pod_status"].lower()
            if st == "ready":
                raise_for_status(self.s.get(self.url + "/alive"))
                return polls
            check(st in ("not found", "pending", "running"), "pod_status %s" % st)
            check(time.time() - t0 < timeout, "not ready after %d s" % timeout)
            time.sleep(2)

    def action(self, command, expect=200):
        body = {"action": {"action": "run", "args": {"command": command, "blocking": True, "hidden": False},
                           "timeout": 30}}
        r = self.s.post(self.url + "/execute_action", json=body)
        check(r.status_code == expect, "action: status %d, expected %d: %s" % (r.status_code, expect, r.text[:300]))
        return r.json() if expect == 200 else r

    def pause(self):
        self.req("POST", "/pause", json={"runtime_id": self.runtime_id})

    def resume(self):
        self.req("POST", "/resume", json={"runtime_id": self.runtime_id})
        # The client polls again and sets its environment up again (detail 9).
        self.wait_until_alive()

    def stop(self, runtime_id=True):
        rid = self.runtime_id if runtime_id is True else runtime_id
        return self.req("POST", "/stop", json={"runtime_id": rid})


def run_v0(a):
    c = V0(a.api, open(a.key_file).read().strip(), a.session, a.build_poll)
    check(c.existing() is None, "a session that was never started exists")
    step("sessions", found=False)
    if a.base_image:
        image, calls = c.build(a.base_image, a.context_dir)
        check(calls <= 7, "more than seven /image_exists")
    else:
        image = a.runtime_image
    check(c.image_exists(image), "the runtime image does not exist")
    c.start(image, env={"DEBUG": "true", "SERVE_TEST": "v0"}, factor=a.resource_factor)
    polls = c.wait_until_alive()
    step("alive", polls=polls)
    check(polls == 1, "/start answered before the sandbox was ready")
    obs = c.action("echo hello-$((40+2)); whoami; pwd")
    check("hello-42" in obs["content"] and "openhands" in obs["content"], "action output: %r" % obs["content"])
    step("action", content=obs["content"])
    obs = c.action("echo data > /tmp/f.txt && cat /tmp/f.txt")
    check("data" in obs["content"], "file round trip: %r" % obs["content"])
    # A duplicate start of a live session answers the same runtime (detail 8).
    dup = c.req("POST", "/start", json={"image": image, "command": None, "session_id": a.session}).json()
    check(dup["runtime_id"] == c.runtime_id, "a duplicate session_id started another runtime")
    step("duplicate", runtime_id=dup["runtime_id"])
    # close() with keep_runtime_alive and pause_closed_runtimes: /pause.
    c.pause()
    j = c.existing()
    check(j["status"] == "paused" and j["runtime_id"] == c.runtime_id and j["url"], "paused session: %r" % j)
    step("paused", status=j["status"])
    # The sandbox's URL answers 503 at once (detail 4) ...
    t0 = time.time()
    c.action("echo nope", expect=503)
    check(time.time() - t0 < 2, "a paused sandbox's URL took %.1f s" % (time.time() - t0))
    step("paused_url", status=503)
    # ... and the client resumes it and goes on.
    c.resume()
    obs = c.action("cat /tmp/f.txt")
    check("data" in obs["content"], "state lost across pause/resume: %r" % obs["content"])
    step("resumed")
    # A new client attaching to the session (running: re-attach).
    c2 = V0(a.api, open(a.key_file).read().strip(), a.session, a.build_poll)
    j = c2.existing()
    check(j["status"] == "running" and j["session_api_key"], "existing session: %r" % j)
    c2.parse(j)
    check("data" in c2.action("cat /tmp/f.txt")["content"], "re-attached client")
    step("reattach")
    if a.keep:
        print(json.dumps({"runtime_id": c.runtime_id, "url": c.url, "session_api_key": c.s.headers["X-Session-API-Key"]}))
        return
    c.stop()
    r = c.s.get(c.url + "/alive")
    check(r.status_code == 404, "a stopped sandbox's URL answered %d" % r.status_code)
    check(c.existing() is None, "the stopped session is still found")
    step("stopped")
    # close() after a failed start sends runtime_id null (detail 3).
    c.stop(runtime_id=None)
    step("stop_null")


# ---------------------------------------------------------------- V1

POD_STATUS_MAPPING = {"ready": "RUNNING", "pending": "STARTING", "running": "STARTING", "failed": "ERROR",
                      "unknown": "ERROR", "crashloopbackoff": "ERROR"}
STATUS_MAPPING = {"running": "RUNNING", "paused": "PAUSED", "stopped": "MISSING", "starting": "STARTING",
                  "error": "ERROR"}


class V1:
    def __init__(self, api, key):
        self.api = api.rstrip("/")
        self.key = key
        self.h = httpx.Client(timeout=180)

    def req(self, method, path, **kw):
        return self.h.request(method, self.api + path, headers={"X-API-Key": self.key}, **kw)

    def get_runtime(self, sandbox_id):
        r = self.req("GET", "/sessions/" + sandbox_id)
        raise_for_status(r)
        return r.json()

    def status(self, runtime):
        if not runtime:
            return "MISSING"
        st = POD_STATUS_MAPPING.get(runtime["pod_status"].lower())
        if st is None and runtime.get("status"):
            st = STATUS_MAPPING.get(runtime["status"].lower())
        return st or "MISSING"

    def info(self, sandbox_id):
        try:
            rt = self.get_runtime(sandbox_id)
        except httpx.HTTPStatusError:
            rt = None
        st = self.status(rt)
        key = rt["session_api_key"] if rt else None
        return st, key, rt

    def lifecycle(self, path, sandbox_id):
        try:
            rt = self.get_runtime(sandbox_id)
        except httpx.HTTPStatusError:
            return False
        r = self.req("POST", path, json={"runtime_id": rt["runtime_id"]})
        if r.status_code == 404:
            return False
        raise_for_status(r)
        return True


def run_v1(a):
    c = V1(a.api, open(a.key_file).read().strip())
    sandbox_id = base64.b32encode(os.urandom(10)).decode().rstrip("=")
    body = {"image": a.image, "command": json.loads(a.command) if a.command else None, "working_dir": "/workspace",
            "environment": {"OH_ALLOW_CORS_ORIGINS_0": "http://localhost"}, "session_id": sandbox_id,
            "resource_factor": 1, "run_as_user": 10001, "run_as_group": 10001, "fs_group": 10001}
    r = c.req("POST", "/start", json=body)
    raise_for_status(r)
    data = r.json()
    data["pod_status"] = "pending"  # V1's own hack: the answer has no pod_status
    check(data["session_api_key"], "no session_api_key in /start")
    step("start", runtime_id=data["runtime_id"], url=data["url"])
    t0 = time.time()
    while True:
        st, key, rt = c.info(sandbox_id)
        if st == "RUNNING":
            break
        check(st == "STARTING" and time.time() - t0 < 60, "sandbox status %s" % st)
        time.sleep(1)
    check(key == data["session_api_key"], "the session key changed")
    url = rt["url"]
    r = c.h.get(url + "/cgi-bin/env", headers={"X-Session-API-Key": key, "X-API-Key": c.key})
    check(r.status_code == 200, "agent server: %d %s" % (r.status_code, r.text[:200]))
    env = r.text
    check("uid=10001" in env and "gid=10001" in env, "not run as 10001:10001: %r" % env[:400])
    check("HTTP_X_API_KEY" not in env, "the server's API key reached the sandbox (detail 10)")
    check("HTTP_X_SESSION_API_KEY=%s" % key in env, "the session key did not reach the sandbox")
    check("SESSION_API_KEY=%s" % key in env, "the sandbox's server does not have its key in SESSION_API_KEY")
    check("cwd=/workspace" in env, "working_dir not /workspace: %r" % env[:400])
    step("agent_server", ok=True)
    r = c.req("GET", "/list")
    raise_for_status(r)
    runtimes = {x["session_id"]: x for x in r.json()["runtimes"] if x["status"] == "running"}
    check(sandbox_id in runtimes and runtimes[sandbox_id]["session_api_key"] == key and runtimes[sandbox_id]["url"],
          "/list: %r" % r.json())
    step("list", running=len(runtimes))
    check(c.lifecycle("/pause", sandbox_id), "pause returned False")
    check(c.info(sandbox_id)[0] == "PAUSED", "not PAUSED after /pause")
    step("pause")
    check(c.lifecycle("/resume", sandbox_id), "resume returned False")
    check(c.info(sandbox_id)[0] == "RUNNING", "not RUNNING after /resume")
    r = c.h.get(url + "/index.html", headers={"X-Session-API-Key": key})
    check(r.status_code == 200 and "hello-v1" in r.text, "after resume: %d %r" % (r.status_code, r.text[:100]))
    step("resume")
    check(c.lifecycle("/stop", sandbox_id), "stop returned False")
    check(c.info(sandbox_id)[0] == "MISSING", "still there after /stop")
    check(not c.lifecycle("/pause", sandbox_id), "pause of a stopped sandbox returned True")
    r = c.req("POST", "/pause", json={"runtime_id": data["runtime_id"]})
    check(r.status_code == 404, "pause of a stopped runtime answered %d" % r.status_code)
    step("stop")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("flow", choices=["v0", "v1"])
    p.add_argument("--api", required=True)
    p.add_argument("--key-file", required=True)
    p.add_argument("--session", default="conv-" + os.urandom(4).hex())
    p.add_argument("--base-image")
    p.add_argument("--runtime-image")
    p.add_argument("--context-dir")
    p.add_argument("--build-poll", type=float, default=30)
    p.add_argument("--resource-factor", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="v0: leave the sandbox running, print its runtime")
    p.add_argument("--image")
    p.add_argument("--command")
    a = p.parse_args()
    try:
        run_v0(a) if a.flow == "v0" else run_v1(a)
    except (Fail, httpx.HTTPError, KeyError, AssertionError) as e:
        detail = ""
        if isinstance(e, httpx.HTTPStatusError):
            detail = ": " + e.response.text[:500]
        print(json.dumps({"error": "%s: %s%s" % (type(e).__name__, e, detail)}), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
