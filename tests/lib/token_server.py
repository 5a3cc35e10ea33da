#!/usr/bin/python3
"""token_server.py: a Docker registry token server for tests (stdlib only).

Implements the token flow of the distribution spec, as Docker Hub, GHCR and
Quay do: the registry answers 401 with
  WWW-Authenticate: Bearer realm="http://127.0.0.1:PORT/token",service=S,scope=...
and the client asks
  GET /token?service=S&scope=repository:NAME:pull[&scope=...]   (Basic credentials optional)
  POST /token  (form: grant_type=password, username, password, service, scope)
and gets {"token", "access_token", "expires_in", "issued_at"}, where the token
is an RS256 JWT with an x5c header holding the signing certificate (issued by
the CA the registry trusts through auth.token.rootcertbundle). Signing uses
`openssl dgst -sha256 -sign` (PKCS#1 v1.5, what RS256 is).

Access control (--acl FILE, JSON):
  {"users": {"NAME": {"password": "PW",
                      "access": [{"type": "repository", "name": "GLOB", "actions": ["pull", "push"]}]}},
   "anonymous": [{"type": "repository", "name": "public/*", "actions": ["pull"]}]}
A request with credentials that do not match gets 401 (like Docker Hub); a
request without credentials is anonymous. The token grants, for each
requested scope, only the actions the user (or anonymous) has; it may grant
nothing, and then the registry refuses the request.

Every request is logged as one JSON line to --log:
  {"time", "method", "path", "service", "scopes", "user", "status", "granted"}
so tests can count token requests (e.g. to check that a client caches tokens).

The realm is plain HTTP, or HTTPS with --tls-cert/--tls-key (what real
registries use; clients rightly refuse to send a password to a plain-http
realm of an HTTPS registry).

Usage: token_server.py --port 0 --port-file F --sign-key K --sign-cert C --issuer I
                       --service S --acl ACL --log LOG [--expires-in 300]
                       [--tls-cert CRT --tls-key KEY]
"""

import argparse
import base64
import datetime
import fnmatch
import http.server
import json
import ssl
import subprocess
import sys

import testhttp
import threading
import time
import urllib.parse
import uuid


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pem_to_der(pem_text):
    lines = [l for l in pem_text.splitlines() if l and not l.startswith("-----")]
    return base64.b64decode("".join(lines))


def parse_scope(scope):
    """'repository:ns/name:pull,push' -> ('repository', 'ns/name', ['pull', 'push'])."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    if not kind or not name:
        return None
    return kind, name, [a for a in actions.split(",") if a]


class TokenServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.args = args
        with open(args.acl) as f:
            self.acl = json.load(f)
        with open(args.sign_cert) as f:
            self.x5c = base64.b64encode(pem_to_der(f.read())).decode("ascii")
        self.log_lock = threading.Lock()

    def sign(self, signing_input):
        proc = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.args.sign_key],
                              input=signing_input, capture_output=True, check=True)
        return proc.stdout

    def make_token(self, subject, access):
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.x5c]}
        claims = {
            "iss": self.args.issuer,
            "sub": subject,
            "aud": self.args.service,
            "exp": now + self.args.expires_in,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        signature = self.sign(signing_input.encode("ascii"))
        return signing_input + "." + b64url(signature)

    def rules_for(self, user):
        if user is None:
            return self.acl.get("anonymous", [])
        return self.acl["users"][user].get("access", [])

    def grant(self, user, scopes):
        access = []
        for scope in scopes:
            parsed = parse_scope(scope)
            if parsed is None:
                continue
            kind, name, wanted = parsed
            allowed = set()
            for rule in self.rules_for(user):
                if rule.get("type", "repository") == kind and fnmatch.fnmatchcase(name, rule["name"]):
                    allowed.update(rule["actions"])
            if "*" in allowed:
                actions = wanted
            else:
                actions = [a for a in wanted if a in allowed]
            access.append({"type": kind, "name": name, "actions": actions})
        return access

    def log(self, entry):
        entry["time"] = time.time()
        with self.log_lock:
            with open(self.args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ohbox-test-token-server"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, obj, extra_headers=()):
        testhttp.answer_json(self, status, obj, extra_headers)

    def basic_credentials(self):
        auth = self.headers.get("Authorization")
        if not auth or not auth.lower().startswith("basic "):
            return None
        try:
            user, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
        except Exception:
            return ("", "")
        return (user, password)

    def handle_token(self, params, credentials):
        srv = self.server
        entry = {"method": self.command, "path": self.path.split("?")[0],
                 "service": params.get("service", [None])[0],
                 "scopes": params.get("scope", []), "user": None}
        # Scopes may come space separated in one parameter, as some clients send them.
        scopes = []
        for s in params.get("scope", []):
            scopes.extend(s.split())
        user = None
        if credentials is not None:
            name, password = credentials
            known = srv.acl.get("users", {}).get(name)
            if known is None or known.get("password") != password:
                entry.update(user=name, status=401, granted=None)
                srv.log(entry)
                self.send_json(401, {"errors": [{"code": "UNAUTHORIZED",
                                                 "message": "incorrect username or password"}]},
                               [("WWW-Authenticate", 'Basic realm="ohbox-test-token"')])
                return
            user = name
        if entry["service"] not in (None, srv.args.service):
            entry.update(user=user, status=400, granted=None)
            srv.log(entry)
            self.send_json(400, {"errors": [{"code": "DENIED", "message": "unknown service"}]})
            return
        access = srv.grant(user, scopes)
        token = srv.make_token(user or "", access)
        entry.update(user=user, status=200, granted=access)
        srv.log(entry)
        issued = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.send_json(200, {"token": token, "access_token": token,
                             "expires_in": srv.args.expires_in, "issued_at": issued})

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            self.send_json(404, {"errors": [{"code": "NOT_FOUND", "message": url.path}]})
            return
        self.handle_token(urllib.parse.parse_qs(url.query), self.basic_credentials())

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(min(length, 65536)).decode())
        if url.path != "/token":
            self.send_json(404, {"errors": [{"code": "NOT_FOUND", "message": url.path}]})
            return
        credentials = None
        if form.get("grant_type", [""])[0] == "password":
            credentials = (form.get("username", [""])[0], form.get("password", [""])[0])
        self.handle_token(form, credentials or self.basic_credentials())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--sign-key", required=True, help="the token signing key (RSA)")
    p.add_argument("--sign-cert", required=True, help="its certificate, sent in the x5c header")
    p.add_argument("--tls-cert", help="serve HTTPS with this certificate")
    p.add_argument("--tls-key")
    p.add_argument("--issuer", default="ohbox-test-issuer")
    p.add_argument("--service", default="ohbox-test-registry")
    p.add_argument("--acl", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--expires-in", type=int, default=300)
    args = p.parse_args()
    srv = TokenServer(args)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        # The handshake happens on the first read, in the request's thread.
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    return testhttp.serve(srv, args.port_file)


if __name__ == "__main__":
    sys.exit(main())
