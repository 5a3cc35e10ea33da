#!/usr/bin/python3
"""fault_proxy.py: an HTTP reverse proxy that injects faults (stdlib only).

Listens on 127.0.0.1 (plain HTTP) in front of a registry (--upstream URL,
http or https) and forwards every request, Range headers included, so a
client resuming a download gets the registry's 206 answers. The client's Host
header is forwarded too, so the URLs the registry builds (upload Locations)
point back at the proxy.

Faults apply to requests whose path matches --match (a regex, default: blob
downloads), counted from the start (or from the last change of the control
file). Each has a count K: the fault hits the first K matching requests
(K = -1: all of them).
  --drop-after N [--drop-count K]      GET: send the headers and N bytes of the
                                       body, then close the connection (the
                                       client must resume with Range)
  --status-429 K                       answer 429 Too Many Requests, Retry-After: 1
  --status-503 K                       answer 503 Service Unavailable, Retry-After: 1
  --corrupt K                          GET: flip one byte in the middle of the body
  --bad-length long|short [--bad-length-count K]
                                       long: announce 100 more bytes than sent and
                                       close (a truncated body); short: announce
                                       and send 1 byte less (a complete-looking,
                                       wrong body)
  --rate BYTES_PER_S                   slow every matching body down
  --stall-after N [--stall-count K]    GET: send N bytes of the body, then
                                       nothing (connection kept open) for
                                       --stall-seconds (default 60), then close
  --drip BYTES_PER_S [--drip-pad N]    GET: announce the body with N more
                                       bytes (spaces, default 8 MiB) and send
                                       it all at BYTES_PER_S: a registry just
                                       above a client's low-speed limit that
                                       would take hours
Control-file only (JSON values):
  "redirect": URL [, "redirect_count": K]
                                       GET: answer 307 with Location URL + path
                                       (another server, as registries do with
                                       S3); "redirect": "loop" redirects to
                                       this proxy again, endlessly
  "manifest_replace": [FROM, TO]       GET of a manifest: replace the text FROM
                                       by TO in the body (every time); the
                                       registry's Docker-Content-Digest stays
--control FILE: a JSON object with the same settings (keys drop_after,
drop_count, status_429, status_503, corrupt, bad_length, bad_length_count,
rate, stall_after, stall_count, stall_seconds, drip, drip_pad, redirect,
redirect_count, manifest_replace, match), re-read whenever the file changes; it replaces the
command-line settings and restarts the counts, so one proxy serves a whole
test script.

--bind ADDR listens on another loopback address (default 127.0.0.1).

Every request is logged to --log as one JSON line when it ends:
  {"time", "method", "path", "range", "status", "bytes", "fault", "host",
   "authorization"}
(bytes: body bytes sent; status "aborted" when the client went away;
authorization: whether the request carried an Authorization header).

Usage: fault_proxy.py --upstream http://127.0.0.1:5000 --port 0 --port-file F --log LOG [faults]
"""

import argparse
import http.client
import http.server
import json
import os
import re
import socket
import ssl
import sys

import testhttp
import threading
import time
import urllib.parse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "trailers", "transfer-encoding", "upgrade", "content-length"}
DEFAULT_MATCH = r"/v2/.+/blobs/sha256:[0-9a-f]{64}$"
FAULT_KEYS = {"drop_after": None, "drop_count": 1, "status_429": 0, "status_503": 0, "corrupt": 0,
              "bad_length": None, "bad_length_count": 1, "rate": 0, "match": DEFAULT_MATCH,
              "stall_after": None, "stall_count": 1, "stall_seconds": 60, "drip": 0, "drip_pad": 8 << 20,
              "redirect": None,
              "redirect_count": -1, "manifest_replace": None}
MANIFEST_MATCH = re.compile(r"/v2/.+/manifests/[^/]+$")
CHUNK = 16384


class Faults:
    """The fault settings and how many times each fault has hit."""

    def __init__(self, settings):
        self.lock = threading.Lock()
        self.load(settings)

    def load(self, settings):
        with self.lock:
            self.s = dict(FAULT_KEYS)
            self.s.update({k: v for k, v in settings.items() if k in FAULT_KEYS and v is not None})
            self.match = re.compile(self.s["match"])
            self.hits = {}

    def take(self, name, limit):
        """True when fault NAME should hit this request (and counts it)."""
        if not limit:
            return False
        with self.lock:
            n = self.hits.get(name, 0)
            if limit >= 0 and n >= limit:
                return False
            self.hits[name] = n + 1
            return True


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, args):
        super().__init__((args.bind, args.port), Handler)
        self.args = args
        self.upstream = urllib.parse.urlsplit(args.upstream)
        self.faults = Faults({k: getattr(args, k) for k in FAULT_KEYS if hasattr(args, k)})
        self.log_lock = threading.Lock()
        self.control_stamp = None
        self.control_lock = threading.Lock()
        if self.upstream.scheme == "https":
            if args.upstream_ca:
                self.ssl_ctx = ssl.create_default_context(cafile=args.upstream_ca)
            else:
                self.ssl_ctx = ssl._create_unverified_context()
        self.reload_control()

    def reload_control(self):
        path = self.args.control
        if not path:
            return
        with self.control_lock:
            try:
                st = os.stat(path)
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            except FileNotFoundError:
                stamp = None
            if stamp == self.control_stamp:
                return
            self.control_stamp = stamp
            settings = {}
            if stamp is not None:
                with open(path) as f:
                    text = f.read().strip()
                settings = json.loads(text) if text else {}
            self.faults.load(settings)

    def connect_upstream(self):
        host = self.upstream.hostname
        port = self.upstream.port
        if self.upstream.scheme == "https":
            return http.client.HTTPSConnection(host, port or 443, timeout=60, context=self.ssl_ctx)
        return http.client.HTTPConnection(host, port or 80, timeout=60)

    def log(self, entry):
        entry["time"] = time.time()
        with self.log_lock:
            with open(self.args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")


class ClientGone(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ohbox-test-fault-proxy"

    def log_message(self, fmt, *args):
        pass

    # ---- request body (pushes through the proxy) ----
    def read_request_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def do_HEAD(self):
        self.proxy()

    def do_GET(self):
        self.proxy()

    def do_POST(self):
        self.proxy()

    def do_PUT(self):
        self.proxy()

    def do_PATCH(self):
        self.proxy()

    def do_DELETE(self):
        self.proxy()

    # ---- faults and forwarding ----
    def send_simple(self, status, message, headers=()):
        code = "TOOMANYREQUESTS" if status == 429 else "UNAVAILABLE"
        return testhttp.answer_json(self, status, {"errors": [{"code": code, "message": message}]}, headers)

    def hard_close(self):
        """Ends the response here: what was written arrives, then the
        connection closes (FIN, not RST, so no sent byte is lost and the client
        sees a body shorter than announced)."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.close_connection = True

    def write_body(self, data, rate):
        sent = 0
        step = CHUNK if not rate else max(1, min(CHUNK, rate // 20))
        start = time.monotonic()
        while sent < len(data):
            piece = data[sent:sent + step]
            try:
                self.wfile.write(piece)
                self.wfile.flush()
            except OSError:
                raise ClientGone(sent)
            sent += len(piece)
            if rate:
                ahead = sent / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        return sent

    def proxy(self):
        srv = self.server
        srv.reload_control()
        faults = srv.faults
        s = faults.s
        path = self.path.split("?")[0]
        matched = bool(faults.match.search(path))
        entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                 "status": None, "bytes": 0, "fault": None, "host": self.headers.get("Host"),
                 "authorization": self.headers.get("Authorization") is not None}
        try:
            body = self.read_request_body()
            if matched and self.command == "GET" and s["redirect"] and \
                    faults.take("redirect", s["redirect_count"]):
                if s["redirect"] == "loop":
                    n = int(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                            .get("loop", ["0"])[0])
                    target = "http://%s%s?loop=%d" % (self.headers.get("Host"), path, n + 1)
                    entry["fault"] = "redirect_loop"
                else:
                    target = s["redirect"].rstrip("/") + self.path
                    entry["fault"] = "redirect"
                entry["status"] = 307
                self.send_response(307)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if matched and faults.take("status_429", s["status_429"]):
                entry.update(status=429, fault="429")
                entry["bytes"] = self.send_simple(429, "slow down", [("Retry-After", "1")])
                return
            if matched and faults.take("status_503", s["status_503"]):
                entry.update(status=503, fault="503")
                entry["bytes"] = self.send_simple(503, "try again later", [("Retry-After", "1")])
                return
            conn = srv.connect_upstream()
            # Header by header: clients send several Accept lines, all of them count.
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for k, v in self.headers.items():
                if k.lower() not in HOP_BY_HOP:
                    conn.putheader(k, v)
            if "Host" not in self.headers:
                conn.putheader("Host", srv.upstream.netloc)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            try:
                data = resp.read()
            except http.client.IncompleteRead as e:
                # distribution 2.8 (Go 1.19 http.Error) answers a Range past
                # the end with 416, a short message and the blob's
                # Content-Length: pass on what it really sent.
                data = e.partial
                entry["upstream"] = "incomplete"
            conn.close()
            status = resp.status
            entry["status"] = status
            is_body = self.command == "GET" and status in (200, 206) and matched
            if self.command == "GET" and status == 200 and s["manifest_replace"] and \
                    MANIFEST_MATCH.search(path):
                a, b = (x.encode() for x in s["manifest_replace"])
                if a in data:
                    data = data.replace(a, b)
                    entry["fault"] = "manifest_replace"
            if is_body and s["drip"]:
                data = data + b" " * s["drip_pad"]
                entry["fault"] = "drip"
            announced = len(data)
            send = data
            close_after = False
            if is_body and s["corrupt"] and data and faults.take("corrupt", s["corrupt"]):
                i = len(data) // 2
                send = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
                entry["fault"] = "corrupt"
            if is_body and s["bad_length"] in ("long", "short") and data and \
                    faults.take("bad_length", s["bad_length_count"]):
                if s["bad_length"] == "long":
                    announced = len(data) + 100
                    close_after = True
                else:
                    announced = len(data) - 1
                    send = send[:-1]
                entry["fault"] = "bad_length_" + s["bad_length"]
            drop = None
            if is_body and s["drop_after"] is not None and len(data) > s["drop_after"] and \
                    faults.take("drop", s["drop_count"]):
                drop = s["drop_after"]
                entry["fault"] = "drop"
            self.send_response(status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() not in ("server", "date"):
                    self.send_header(k, v)
            if self.command == "HEAD":
                length = resp.getheader("Content-Length")
                if length is not None:
                    self.send_header("Content-Length", length)
                self.end_headers()
                return
            self.send_header("Content-Length", str(announced))
            self.end_headers()
            rate = s["rate"] if matched else 0
            if is_body and s["drip"]:
                rate = s["drip"]
            if is_body and s["stall_after"] is not None and len(data) > s["stall_after"] and \
                    faults.take("stall", s["stall_count"]):
                # The server hangs with the connection open: only the
                # client's own low-speed limit can end this.
                entry["fault"] = "stall"
                entry["bytes"] = self.write_body(send[:s["stall_after"]], rate)
                # Logged now, not when the stall ends: tests count stalls
                # while they last; the final line says "stall_end".
                srv.log(dict(entry))
                entry["fault"] = "stall_end"
                deadline = time.monotonic() + s["stall_seconds"]
                while time.monotonic() < deadline:
                    time.sleep(0.1)
                self.hard_close()
                return
            if drop is not None:
                entry["bytes"] = self.write_body(send[:drop], rate)
                self.hard_close()
                return
            entry["bytes"] = self.write_body(send, rate)
            if close_after:
                self.hard_close()
        except ClientGone as e:
            entry["status"] = "aborted"
            entry["bytes"] = e.args[0]
            self.close_connection = True
        except (OSError, http.client.HTTPException) as e:
            if entry["status"] is None:
                entry["status"] = "upstream-error"
                entry["error"] = str(e)
                try:
                    self.send_simple(502, "upstream: %s" % e)
                except OSError:
                    pass
            else:
                entry["status"] = "aborted"
            self.close_connection = True
        finally:
            srv.log(entry)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--upstream", required=True)
    p.add_argument("--upstream-ca")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port-file")
    p.add_argument("--log", required=True)
    p.add_argument("--control")
    p.add_argument("--match", default=DEFAULT_MATCH)
    p.add_argument("--drop-after", type=int)
    p.add_argument("--drop-count", type=int, default=1)
    p.add_argument("--status-429", type=int, default=0)
    p.add_argument("--status-503", type=int, default=0)
    p.add_argument("--corrupt", type=int, default=0)
    p.add_argument("--bad-length", choices=["long", "short"])
    p.add_argument("--bad-length-count", type=int, default=1)
    p.add_argument("--rate", type=int, default=0)
    p.add_argument("--stall-after", type=int)
    p.add_argument("--stall-count", type=int, default=1)
    p.add_argument("--stall-seconds", type=float, default=60)
    p.add_argument("--drip", type=int, default=0)
    p.add_argument("--drip-pad", type=int, default=8 << 20)
    args = p.parse_args()
    srv = Proxy(args)
    return testhttp.serve(srv, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
