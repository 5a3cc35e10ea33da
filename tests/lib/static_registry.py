#!/usr/bin/python3
"""static_registry.py: a read-only registry serving one OCI layout (stdlib only).

For tests that need a registry at an address of their choosing (one that is
not loopback, in a network namespace the test made), where Debian's
docker-registry with its configuration would be more than needed:

  GET|HEAD /v2/                          200
  GET|HEAD /v2/NAME/manifests/TAG        the layout's manifest whose
                                         org.opencontainers.image.ref.name is TAG
  GET|HEAD /v2/NAME/manifests/DIGEST     that manifest
  GET|HEAD /v2/NAME/blobs/DIGEST         the blob, or with --redirect-blobs URL
                                         a 307 to URL + the request's path
  --token-realm URL                      every /v2/ request without an
                                         Authorization header gets 401 with
                                         "Bearer realm=URL" (to see where a
                                         client goes for its token)

Every request is logged to --log as one JSON line {"method", "path", "status"}.

Usage: static_registry.py --layout DIR --bind ADDR --port 0 --port-file F --log LOG
"""

import argparse
import http.server
import json
import os
import re
import sys

import testhttp

MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")
BLOB = re.compile(r"^/v2/(.+)/blobs/(sha256:[0-9a-f]{64})$")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ohbox-test-static-registry"

    def log_message(self, fmt, *args):
        pass

    def log(self, status):
        with open(self.server.args.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "status": status}) + "\n")

    def answer(self, status, body=b"", headers=()):
        testhttp.answer(self, status, body, headers)
        self.log(status)

    def blob(self, digest):
        path = os.path.join(self.server.args.layout, "blobs", "sha256", digest[7:])
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def manifest(self, ref):
        with open(os.path.join(self.server.args.layout, "index.json")) as f:
            index = json.load(f)
        for d in index.get("manifests", []):
            if d["digest"] == ref or d.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref:
                return d
        return None

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        args = self.server.args
        path = self.path.split("?")[0]
        if args.token_realm and self.headers.get("Authorization") is None and path.startswith("/v2/"):
            return self.answer(401, b"{}", [("WWW-Authenticate",
                                             'Bearer realm="%s",service="static"' % args.token_realm)])
        if path == "/v2/":
            return self.answer(200, b"{}", [("Content-Type", "application/json")])
        m = MANIFEST.match(path)
        if m:
            d = self.manifest(m.group(2))
            body = d and self.blob(d["digest"])
            if not body:
                return self.answer(404, b"{}")
            return self.answer(200, body, [("Content-Type", d["mediaType"]),
                                           ("Docker-Content-Digest", d["digest"])])
        m = BLOB.match(path)
        if m:
            if args.redirect_blobs:
                return self.answer(307, b"", [("Location", args.redirect_blobs.rstrip("/") + self.path)])
            body = self.blob(m.group(2))
            if body is None:
                return self.answer(404, b"{}")
            return self.answer(200, body, [("Content-Type", "application/octet-stream"),
                                           ("Docker-Content-Digest", m.group(2))])
        return self.answer(404, b"{}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layout", required=True)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--redirect-blobs")
    p.add_argument("--token-realm")
    args = p.parse_args()
    srv = Server((args.bind, args.port), Handler)
    srv.args = args
    return testhttp.serve(srv, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
