#!/bin/bash
# serve.sh: `ohbox serve`, OpenHands' remote runtime API, driven as
# OpenHands' own clients drive it (tests/lib/serve_client.py with Debian's
# httpx: the V0 agent loop's build, start, actions, pause, 503, resume,
# duplicate session, stop, stop of null; the V1 app server's start with
# run_as_user of an image serving port 60000, list, pause, resume, stop),
# against a real registry on 127.0.0.1. Also: keys (API and session,
# X-API-Key never reaching a sandbox), every field checked with a 4xx that
# names it, hostile build contexts, warm pools (the session's key,
# environment and directories in effect, a replacement started), idle
# pause and transparent resume, --max-sandboxes, work hosts, resource
# factors as limits, /metrics, the JSON log, the unix socket without a key,
# requests to sandboxes through their executors' unix sockets.
#
# NETWORK RULE: traffic only to 127.0.0.1 (the registry, the server, the
# sandboxes' published ports).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/serve.sh"

t_setup_or_die setup sv_setup
SVC=(/usr/bin/python3 "$T_LIB/serve_client.py")

# ---------------------------------------------------------------- the clients

test_v0_flow ()
{
  trap sv_cleanup EXIT
  sv_start
  mkdir -p "$T_WORK/ctx/code"
  echo "print('openhands')" >"$T_WORK/ctx/code/main.py"
  # Build from scratch (FROM the registry's busybox), start, actions, pause,
  # 503, resume, duplicate, stop, stop of null.
  assert_ok "${SVC[@]}" v0 --api "$SV_URL" --key-file "$SV_KEYFILE" --session conv-a --base-image "$SV_BB" \
    --context-dir "$T_WORK/ctx" --build-poll 0.5
  assert_contains "$out" '"step": "stop_null"'
  assert_match "$(grep '"step": "build_status"' <<<"$out")" 'are not run'
  # A client with other sources builds again FROM the lock tag this server
  # stored: that runtime image is used as it is.
  echo "print('changed')" >"$T_WORK/ctx/code/main.py"
  assert_ok "${SVC[@]}" v0 --api "$SV_URL" --key-file "$SV_KEYFILE" --session conv-b --base-image "$SV_BB" \
    --context-dir "$T_WORK/ctx" --build-poll 0.5
  assert_match "$(grep '"step": "build"' <<<"$out")" '"frm": "localhost/ohbox-serve/runtime:oh_v'
  assert_match "$(grep '"step": "build_status"' <<<"$out")" 'FROM names a runtime image of this store'
  # The same sources again: the image exists, nothing is built.
  assert_ok "${SVC[@]}" v0 --api "$SV_URL" --key-file "$SV_KEYFILE" --session conv-c --base-image "$SV_BB" \
    --context-dir "$T_WORK/ctx" --build-poll 0.5
  assert_contains "$out" '"step": "reuse"'
  sv_stop
  sv_assert_clean
}
run_test v0_flow test_v0_flow

# An image with its own server on port 60000 (busybox httpd) whose CGI
# shows what the sandbox's process sees.
V1_CMD='["sh","-c","pwd >/tmp/start-cwd && mkdir -p /tmp/www/cgi-bin && echo hello-v1 >/tmp/www/index.html && printf '"'"'#!/bin/sh\\necho Content-Type: text/plain\\necho\\nid\\necho cwd=$(cat /tmp/start-cwd)\\nenv\\n'"'"' >/tmp/www/cgi-bin/env && chmod 755 /tmp/www/cgi-bin/env && exec httpd -f -p 60000 -h /tmp/www"]'

test_v1_flow ()
{
  trap sv_cleanup EXIT
  sv_start
  assert_ok "${SVC[@]}" v1 --api "$SV_URL" --key-file "$SV_KEYFILE" --image "$SV_BB" --command "$V1_CMD"
  assert_contains "$out" '"step": "stop"'
  sv_stop
  sv_assert_clean
}
run_test v1_flow test_v1_flow

# ---------------------------------------------------------------- keys

test_keys ()
{
  trap sv_cleanup EXIT
  # No key, and no unix socket: refused.
  assert_exit 2 "$OHBOX_BIN" --root "$SV_ROOT" serve --listen 127.0.0.1:0
  assert_contains "$err" "an API key is required"
  # A key file others can read: refused.
  openssl rand -hex 24 >"$T_WORK/k2"
  chmod 644 "$T_WORK/k2"
  assert_exit 2 "$OHBOX_BIN" --root "$SV_ROOT" serve --api-key-file "$T_WORK/k2"
  assert_contains "$err" "readable by every user"
  sv_start
  assert_http_status 401 "no key" "$SV_URL/list"
  assert_http_status 401 "a longer key" -H "X-API-Key: ${SV_KEY}x" "$SV_URL/list"
  assert_http_status 401 "a prefix of the key" -H "X-API-Key: ${SV_KEY:0:10}" "$SV_URL/list"
  sv_new_session keys-a
  local a_id=$SV_ID a_sk=$SV_SK
  sv_new_session keys-b
  assert_ne "$a_sk" "$SV_SK" "two sandboxes have the same session key"
  # The sandbox's URL: its own key, or the server's; not another's.
  assert_http_status 401 "no key to a sandbox" "$SV_URL/$a_id/alive"
  assert_http_status 401 "another sandbox's key" -H "X-Session-API-Key: $SV_SK" "$SV_URL/$a_id/alive"
  assert_http_status 200 "its own key" -H "X-Session-API-Key: $a_sk" "$SV_URL/$a_id/alive"
  # The server's key alone: forwarded with the sandbox's key, never its own.
  assert_http_status 200 "the server's key" -H "X-API-Key: $SV_KEY" -X POST -H 'Content-Type: application/json' \
    --data '{"action":{"action":"run","args":{"command":"true"}}}' "$SV_URL/$a_id/execute_action"
  # Directly at the executor, only the session key works.
  local up
  up=$(jq -r .url "$SV_RUN/$a_id/executor.json")
  assert_http_status 403 "the server's key at the executor" -H "X-Session-API-Key: $SV_KEY" -X POST --data '{}' \
    "$up/execute_action"
  sv_stop
  sv_cleanup
  sv_assert_clean
}
run_test keys test_keys

# Uploads beyond the proxy's memory buffer (spooled), a zip download
# streamed back and one cut short by its client, a HEAD, a query string
# and an encoded path, all through a sandbox's URL.
test_proxy_files ()
{
  trap sv_cleanup EXIT
  sv_start
  sv_new_session files
  head -c 3000000 /dev/urandom >"$T_WORK/big.bin"
  code=$(curl -s -o "$T_WORK/up.json" -w '%{http_code}' -H "X-Session-API-Key: $SV_SK" \
    -F "file=@$T_WORK/big.bin;filename=big.bin" "$SV_URL/$SV_ID/upload_file?destination=/tmp/d&recursive=false")
  assert_eq "$code" 200 "$(cat "$T_WORK/up.json")"
  sv_run_action "$SV_ID" 'sha256sum /tmp/d/big.bin; mkdir -p "/tmp/d/a b" && echo x > "/tmp/d/a b/c"'
  assert_contains "$out" "$(t_sha256 "$T_WORK/big.bin")"
  code=$(curl -s -o "$T_WORK/d.zip" -w '%{http_code}' -H "X-Session-API-Key: $SV_SK" \
    "$SV_URL/$SV_ID/download_files?path=/tmp/d")
  assert_eq "$code" 200
  mkdir "$T_WORK/unz"
  "$T_PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$T_WORK/d.zip" "$T_WORK/unz"
  assert_eq "$(t_sha256 "$T_WORK/unz/big.bin")" "$(t_sha256 "$T_WORK/big.bin")" "the download through the proxy"
  assert_eq "$(cat "$T_WORK/unz/a b/c")" x
  # A download its client cuts short: the server drops the half-read answer
  # with its connection to the sandbox (not used again half-read), and the
  # client's next request, on a new connection, is answered.
  { curl -s -H "X-Session-API-Key: $SV_SK" "$SV_URL/$SV_ID/download_files?path=/tmp/d" || true; } | head -c 1000 >/dev/null
  sv_run_action "$SV_ID" 'echo after the cut download'
  assert_eq "$code" 200 "$out"
  assert_contains "$out" "after the cut download"
  code=$(curl -s -o /dev/null -w '%{http_code}' -I -H "X-Session-API-Key: $SV_SK" "$SV_URL/$SV_ID/alive")
  assert_match "$code" '^(200|405)$'
  sv_call POST /stop "{\"runtime_id\":\"$SV_ID\"}"
  sv_stop
  sv_assert_clean
}
run_test proxy_files test_proxy_files

# What the proxy forwards of a request, seen by an image's own server (a
# CGI prints its environment): the sandbox's own session key, whatever
# other one came beside the server's key; not the headers a Connection
# header names, either way; header lines the sandbox's
# server may read otherwise than libmicrohttpd (a space before the colon, a
# control character) refused with 400. And a client that hangs up while
# the sandbox never answers takes its thread on the server with it.
test_proxy_headers ()
{
  trap sv_cleanup EXIT
  sv_start
  sv_new_session heads-a
  local other=$SV_SK a_id=$SV_ID
  local script='mkdir -p /tmp/www/cgi-bin && printf "#!/bin/sh\necho Content-Type: text/plain\necho\nenv\n" >/tmp/www/cgi-bin/env && printf "#!/bin/sh\nsleep 1000\n" >/tmp/www/cgi-bin/hang && printf "#!/bin/sh\necho Content-Type: text/plain\necho Connection: X-Hop\necho X-Hop: 1\necho X-Kept: 2\necho\necho hop\n" >/tmp/www/cgi-bin/hop && chmod 755 /tmp/www/cgi-bin/* && echo ok >/tmp/www/index.html && exec httpd -f -p 60000 -h /tmp/www'
  sv_new_session heads-v1 "$(jq -cn --arg i "$SV_BB" --arg s "$script" '{image: $i, command: ["sh", "-c", $s]}')"
  out=$(curl -s -H "X-API-Key: $SV_KEY" -H "X-Session-API-Key: $other" "$SV_URL/$SV_ID/cgi-bin/env")
  assert_contains "$out" "HTTP_X_SESSION_API_KEY=$SV_SK"
  assert_not_contains "$out" "$other" "another sandbox's key reached this one"
  assert_not_contains "$out" "$SV_KEY" "the server's key reached a sandbox"
  # Headers a Connection header names are for one hop: not forwarded,
  # either way.
  out=$(curl -s -H "X-Session-API-Key: $SV_SK" -H "Connection: X-Drop" -H "X-Drop: hop" -H "X-Stay: on" \
    "$SV_URL/$SV_ID/cgi-bin/env")
  assert_contains "$out" "HTTP_X_STAY=on"
  assert_not_contains "$out" "HTTP_X_DROP" "a header the request's Connection names reached the sandbox"
  out=$(curl -s -D - -o /dev/null -H "X-Session-API-Key: $SV_SK" "$SV_URL/$SV_ID/cgi-bin/hop")
  assert_contains "$out" "X-Kept: 2"
  assert_not_contains "$out" "X-Hop:" "a header the answer's Connection names reached the client"
  # A HEAD's answer says how long the GET's body is (it was 0).
  out=$(curl -s -I -H "X-Session-API-Key: $SV_SK" "$SV_URL/$SV_ID/index.html" | tr -d '\r')
  assert_contains "$out" "Content-Length: 3"
  # The same to ohbox's executor, which reads the first of two keys: with
  # the other's forwarded first, it refused the request.
  code=$(curl -s -o "$T_WORK/act" -w '%{http_code}' -H "X-API-Key: $SV_KEY" -H "X-Session-API-Key: $SV_SK" \
    -H 'Content-Type: application/json' --data '{"action":{"action":"run","args":{"command":"echo via-api-key"}}}' \
    "$SV_URL/$a_id/execute_action")
  assert_eq "$code" 200 "the server's key beside another sandbox's: $(cat "$T_WORK/act")"
  assert_contains "$(cat "$T_WORK/act")" via-api-key
  code=$(curl -s -o "$T_WORK/odd" -w '%{http_code}' -H "X-Session-API-Key: $SV_SK" -H "X-Odd : 1" \
    "$SV_URL/$SV_ID/cgi-bin/env")
  assert_eq "$code" 400 "a space before a header's colon: $(cat "$T_WORK/odd")"
  assert_contains "$(cat "$T_WORK/odd")" "X-Odd"
  assert_http_status 400 "a control character in a header" -H "X-Session-API-Key: $SV_SK" -H "$(printf 'X-Ctl: a\001b')" \
    "$SV_URL/$SV_ID/cgi-bin/env"
  # The hanging CGI: the client gives up after 1 s; the server's thread for
  # it ends with it (it waited for the sandbox with no end before).
  local before after
  sleep 0.3 # (the threads of the connections above are gone)
  before=$(ls "/proc/$SV_PID/task" | wc -l)
  curl -s -m 1 -H "X-Session-API-Key: $SV_SK" "$SV_URL/$SV_ID/cgi-bin/hang" >/dev/null || true
  for _ in $(seq 50); do
    after=$(ls "/proc/$SV_PID/task" | wc -l)
    [ "$after" -le "$before" ] && break
    sleep 0.1
  done
  assert_eq "$after" "$before" "threads of the server after a client gave up on a sandbox that never answers"
  assert_match "$(grep -F '/cgi-bin/hang' "$SV_LOG")" '"status": ?502'
  sv_stop
  sv_cleanup
  sv_assert_clean
}
run_test proxy_headers test_proxy_headers

# ---------------------------------------------------------------- fields

# bad_start BODY FIELD: /start answers 400 naming FIELD.
bad_start ()
{
  sv_call POST /start "$1"
  assert_eq "$code" 400 "body $1: $out"
  assert_eq "$(jq -r .field <<<"$out")" "$2" "the field named for $1: $out"
}

test_fields ()
{
  trap sv_cleanup EXIT
  sv_start
  local img="\"image\":\"$SV_RT\""
  bad_start '{"session_id":"x"}' image
  bad_start '{"image":"Bad Image!","session_id":"x"}' image
  bad_start "{\"image\":\"$(head -c 600 /dev/zero | tr '\0' a)\",\"session_id\":\"x\"}" image
  bad_start "{$img}" session_id
  bad_start "{$img,\"session_id\":\"../etc\"}" session_id
  bad_start "{$img,\"session_id\":\"x\",\"command\":\"ls\"}" command
  bad_start "{$img,\"session_id\":\"x\",\"command\":[]}" command
  bad_start "{$img,\"session_id\":\"x\",\"command\":[1]}" command
  # NUL in a string: not JSON jansson takes (400, whatever the field).
  sv_call POST /start "{$img,\"session_id\":\"x\",\"command\":[\"a\\u0000b\"]}"
  assert_eq "$code" 400
  bad_start "{$img,\"session_id\":\"x\",\"command\":$(jq -cn '[range(5000)|"a"]')}" command
  bad_start "{$img,\"session_id\":\"x\",\"working_dir\":\"rel\"}" working_dir
  bad_start "{$img,\"session_id\":\"x\",\"environment\":[\"A=B\"]}" environment
  bad_start "{$img,\"session_id\":\"x\",\"environment\":{\"A=B\":\"c\"}}" environment
  bad_start "{$img,\"session_id\":\"x\",\"environment\":{\"A\":1}}" environment
  bad_start "{$img,\"session_id\":\"x\",\"environment\":{\"SESSION_API_KEY\":\"mine\"}}" environment
  bad_start "{$img,\"session_id\":\"x\",\"environment\":$(jq -cn '[range(5000)|{key:"K\(.)",value:"v"}]|from_entries')}" environment
  bad_start "{$img,\"session_id\":\"x\",\"resource_factor\":0}" resource_factor
  bad_start "{$img,\"session_id\":\"x\",\"resource_factor\":16}" resource_factor
  bad_start "{$img,\"session_id\":\"x\",\"resource_factor\":\"2\"}" resource_factor
  bad_start "{$img,\"session_id\":\"x\",\"run_as_user\":-1}" run_as_user
  bad_start "{$img,\"session_id\":\"x\",\"run_as_group\":70000}" run_as_group
  bad_start "{$img,\"session_id\":\"x\",\"runtime_class\":7}" runtime_class
  sv_call POST /start '[1,2]'
  assert_eq "$code" 400
  sv_call POST /start '{not json'
  assert_eq "$code" 400
  # A body over the limit is refused before it is read whole.
  head -c 3000000 /dev/zero | tr '\0' ' ' >"$T_WORK/big"
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $SV_KEY" --data-binary "@$T_WORK/big" "$SV_URL/start")
  assert_eq "$code" 413
  sv_call POST /stop '{"runtime_id":7}'
  assert_eq "$code" 400
  sv_call POST /stop '{"runtime_id":"nope"}'
  assert_eq "$code" 404
  sv_call POST /pause '{"runtime_id":null}'
  assert_eq "$code" 400
  sv_call POST /resume "{\"runtime_id\":\"$(printf '%064d' 0)\"}"
  assert_eq "$code" 404
  sv_call GET '/sessions/a%20b'
  assert_eq "$code" 400
  sv_call GET /runtime/zzz
  assert_eq "$code" 404
  sv_call GET '/image_exists?image=Bad%20Name'
  assert_eq "$code" 400
  assert_eq "$(jq -r .field <<<"$out")" image
  sv_call GET '/image_exists?image=localhost/ohbox-serve/runtime:none'
  assert_eq "$code" 200
  assert_jq "$out" '.exists == false'
  sv_call GET /build_status
  assert_eq "$code" 400
  sv_call GET /nowhere
  assert_eq "$code" 404
  sv_call GET /start
  assert_eq "$code" 405
  # An image that is not in the store and cannot be pulled.
  sv_call POST /start "{\"image\":\"$REG_HOST/test/missing:latest\",\"session_id\":\"x\"}"
  assert_eq "$code" 400 "$out"
  assert_contains "$out" "missing"
  # None of this started anything.
  assert_eq "$("$OHBOX_BIN" --root "$SV_ROOT" ps -a -q)" ""
  sv_stop
}
run_test fields test_fields

# ---------------------------------------------------------------- builds

# build_context NAME: posts $T_WORK/$NAME.tgz (base64) and waits for the
# build's end: $status, $error.
post_build ()
{
  local tgz=$1 target=${2:-localhost/ohbox-serve/runtime:hostile}
  base64 -w0 "$tgz" >"$T_WORK/ctx.b64"
  out=$(curl -s -H "X-API-Key: $SV_KEY" -F "context=@$T_WORK/ctx.b64;filename=context.tar.gz" \
    -F "target_image=$target" "$SV_URL/build")
  local id
  id=$(jq -r .build_id <<<"$out")
  [ -n "$id" ] && [ "$id" != null ] || { _t_assert_fail "/build: $out"; return 1; }
  local i
  for i in $(seq 600); do
    out=$(curl -s -H "X-API-Key: $SV_KEY" "$SV_URL/build_status?build_id=$id")
    status=$(jq -r .status <<<"$out")
    case $status in SUCCESS | FAILURE) break ;; esac
    sleep 0.1
  done
  error=$(jq -r '.error // ""' <<<"$out")
  echo "+ build $tgz: $status $error" >&9
}

test_hostile_builds ()
{
  trap sv_cleanup EXIT
  sv_start --max-build-context 2m
  local h=$T_WORK/h
  mkdir -p "$h"
  # ../ and absolute paths, a symlink out and a file written through it, a
  # hard link out: refused, and nothing outside.
  "$T_PY" - "$h" "$T_WORK/outside" <<'EOF'
import io, sys, tarfile
d, outside = sys.argv[1], sys.argv[2]
def make(name, entries):
    with tarfile.open("%s/%s.tgz" % (d, name), "w:gz") as t:
        for e in entries:
            t.addfile(*e)
def f(name, data=b"x"):
    i = tarfile.TarInfo(name); i.size = len(data); return (i, io.BytesIO(data))
def l(name, target, kind=tarfile.SYMTYPE):
    i = tarfile.TarInfo(name); i.type = kind; i.linkname = target; return (i,)
def dockerfile(): return f("Dockerfile", b"FROM busybox\n")
make("dotdot", [dockerfile(), f("../../escape-dotdot")])
make("absolute", [dockerfile(), f(outside + "/abs")])
make("symlink", [dockerfile(), l("out", outside), f("out/through-symlink")])
make("hardlink", [dockerfile(), l("hl", "/etc/passwd", tarfile.LNKTYPE)])
make("nodockerfile", [f("README")])
make("dfsymlink", [l("Dockerfile", "/etc/hostname")])
make("arg", [f("Dockerfile", b"ARG BASE\nFROM $BASE\n")])
make("nofrom", [f("Dockerfile", b"RUN true\n")])
# A gzip bomb: 64 MiB of zeros, far beyond 4x its compressed size.
i = tarfile.TarInfo("bomb"); i.size = 64 << 20
class Zeros:
    def __init__(self, n): self.n = n
    def read(self, k=-1):
        k = self.n if k < 0 else min(k, self.n); self.n -= k; return bytes(k)
make("bomb", [dockerfile(), (i, Zeros(64 << 20))])
open(d + "/notgzip.tgz", "wb").write(b"this is not a tar.gz at all" * 10)
EOF
  mkdir -p "$T_WORK/outside"
  local name
  for name in dotdot absolute symlink hardlink nodockerfile dfsymlink arg nofrom bomb notgzip; do
    post_build "$h/$name.tgz"
    assert_eq "$status" FAILURE "$name: $out"
    assert_ne "$error" "" "$name"
  done
  assert_eq "$(ls -A "$T_WORK/outside")" "" "something was created outside the context"
  assert_file_absent "$T_WORK/escape-dotdot"
  # Not base64: refused at once, naming the field.
  printf 'not base64 !!!' >"$T_WORK/bad.b64"
  out=$(curl -s -w ' %{http_code}' -H "X-API-Key: $SV_KEY" -F "context=@$T_WORK/bad.b64;filename=context.tar.gz" \
    -F "target_image=localhost/ohbox-serve/runtime:x" "$SV_URL/build")
  assert_match "$out" '"field":"context".* 400$'
  # Larger than --max-build-context: refused while it arrives.
  head -c 4000000 /dev/urandom | gzip -1 >"$T_WORK/big.tgz"
  base64 -w0 "$T_WORK/big.tgz" >"$T_WORK/big.b64"
  out=$(curl -s -w ' %{http_code}' -H "X-API-Key: $SV_KEY" -F "context=@$T_WORK/big.b64;filename=context.tar.gz" \
    -F "target_image=localhost/ohbox-serve/runtime:x" "$SV_URL/build")
  assert_match "$out" ' 413$'
  # A target that is not a name with a tag.
  mkdir -p "$T_WORK/okctx"
  echo "FROM $SV_BB" >"$T_WORK/okctx/Dockerfile"
  tar -C "$T_WORK/okctx" -czf "$T_WORK/ok.tgz" .
  base64 -w0 "$T_WORK/ok.tgz" >"$T_WORK/ok.b64"
  out=$(curl -s -w ' %{http_code}' -H "X-API-Key: $SV_KEY" -F "context=@$T_WORK/ok.b64;filename=context.tar.gz" \
    -F "target_image=Not A Name" "$SV_URL/build")
  assert_match "$out" '"field":"target_image".* 400$'
  # A base the registry does not have: FAILURE with the registry's error.
  echo "FROM $REG_HOST/test/absent:latest" >"$T_WORK/okctx/Dockerfile"
  tar -C "$T_WORK/okctx" -czf "$T_WORK/absent.tgz" .
  post_build "$T_WORK/absent.tgz"
  assert_eq "$status" FAILURE
  assert_match "$error" 'absent'
  assert_match "$error" '(not found|unknown|MANIFEST_UNKNOWN|NAME_UNKNOWN)'
  # Nothing of the builds stays in the temporary directory.
  assert_eq "$(ls -d /var/tmp/ohbox-serve-build.* 2>/dev/null | wc -l)" 0
  sv_stop
}
run_test hostile_builds test_hostile_builds

# ---------------------------------------------------------------- pools

# what_session ID: what the agent's shell sees (user, directory, the
# environment variable FOO, the executor's directory).
what_session ()
{
  sv_run_action "$1" 'echo "user=$(id -un) dir=$(pwd) foo=${FOO:-} exec_cwd=$(readlink /proc/$PPID/cwd)"'
  assert_eq "$code" 200 "$out"
  jq -r .content <<<"$out"
}

test_pool ()
{
  trap sv_cleanup EXIT
  sv_start --pool "$SV_RT=2"
  t_wait_until 60 sh -c "[ \"\$(curl -s -H 'X-API-Key: $SV_KEY' $SV_URL/metrics | grep '^ohbox_serve_pool_ready' | awk '{print \$2}')\" = 2 ]"
  # The members' keys, which only the server knew: none is a session's.
  local pool_keys
  pool_keys=$(cat "$SV_RUN"/*/executor.json | jq -r .api_key | sort)
  assert_eq "$(wc -l <<<"$pool_keys")" 2
  local env='{"command":'"$SV_V0_CMD"',"working_dir":"/openhands/code/","environment":{"SU_TO_USER":"false","FOO":"bar"}}'
  sv_new_session pool-a "$env"
  local a_id=$SV_ID a_sk=$SV_SK
  assert_eq "$(sv_metric 'ohbox_serve_starts_total{source="pool"}')" 1
  assert_not_contains "$pool_keys" "$a_sk"
  # The session's environment and directories are in effect, as in a cold
  # start of the same request (no pool: the cold one below).
  local pooled cold
  pooled=$(what_session "$a_id")
  assert_eq "$pooled" "user=root dir=/workspace foo=bar exec_cwd=/openhands/code"
  # The member's pool key is refused from now on.
  local up old
  up=$(jq -r .url "$SV_RUN/$a_id/executor.json")
  for old in $pool_keys; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Session-API-Key: $old" "$up/server_info")
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Session-API-Key: $old" --data '{}' "$up/list_files")
    assert_eq "$code" 403 "a pool key after the adoption"
  done
  # A second session from the pool: its own key; OpenHands' defaults.
  sv_new_session pool-b '{"command":'"$SV_V0_CMD"',"working_dir":"/openhands/code/","environment":{"FOO":"baz"}}'
  assert_ne "$SV_SK" "$a_sk"
  assert_eq "$(what_session "$SV_ID")" "user=openhands dir=/workspace foo= exec_cwd="
  assert_eq "$(sv_metric 'ohbox_serve_starts_total{source="pool"}')" 2
  # Replacements come in the background.
  t_wait_until 60 sh -c "[ \"\$(curl -s -H 'X-API-Key: $SV_KEY' $SV_URL/metrics | grep '^ohbox_serve_pool_ready' | awk '{print \$2}')\" = 2 ]"
  # A start the pool cannot serve (another user) is cold.
  sv_new_session pool-c '{"command":'"$SV_V0_CMD"',"working_dir":"/openhands/code/","environment":{"SU_TO_USER":"false","FOO":"bar"},"resource_factor":2}'
  assert_eq "$(sv_metric 'ohbox_serve_starts_total{source="cold"}')" 1
  cold=$(what_session "$SV_ID")
  assert_eq "$cold" "$pooled" "a cold start of the same request"
  # The name moved to another image since the members started: they are
  # not what it means now (the server keeps what the name resolved to only
  # while no name changes).
  assert_ok "$OHBOX_BIN" --root "$SV_ROOT" save "$SV_RT" "oci:$T_WORK/rt-layout:rt"
  assert_ok "$OHBOX_BIN" --root "$SV_ROOT" save "$SV_BB" "oci:$T_WORK/bb-layout:bb"
  assert_ok "$OHBOX_BIN" --root "$SV_ROOT" load "oci:$T_WORK/bb-layout:bb" "$SV_RT"
  sv_call POST /start "$(jq -cn --arg i "$SV_RT" --argjson c "$SV_V0_CMD" '{image: $i, session_id: "pool-moved", command: $c}')"
  assert_eq "$(sv_metric 'ohbox_serve_starts_total{source="pool"}')" 2 "a start after the name moved: $code $out"
  assert_ok "$OHBOX_BIN" --root "$SV_ROOT" load "oci:$T_WORK/rt-layout:rt" "$SV_RT"
  # Stopped on purpose, the server stops the members nobody was given.
  sv_stop
  t_wait_until 30 sh -c "[ \$('$OHBOX_BIN' --root '$SV_ROOT' ps -q | wc -l) = 3 ]"
  sv_cleanup
  sv_assert_clean
}
run_test pool test_pool

# ---------------------------------------------------------------- idle, limits

test_pause_idle ()
{
  trap sv_cleanup EXIT
  sv_start --pause-idle 1s --max-sandboxes 2
  sv_new_session idle-a
  local a_id=$SV_ID a_sk=$SV_SK
  sv_new_session idle-b
  # At the limit: 429, naming it.
  sv_call POST /start "{\"image\":\"$SV_RT\",\"session_id\":\"idle-c\"}"
  assert_eq "$code" 429
  assert_contains "$out" "--max-sandboxes"
  t_wait_until 10 sh -c "curl -s -H 'X-API-Key: $SV_KEY' $SV_URL/sessions/idle-a | grep -q '\"paused_by\":\"idle\"'"
  # Frozen for real ...
  assert_eq "$("$OHBOX_BIN" --root "$SV_ROOT" ps --format json | jq -r --arg i "$a_id" '.[] | select(.id == $i) | .status')" paused
  # ... and the next request to it resumes it (the client never paused it).
  SV_SK=$a_sk
  sv_run_action "$a_id" 'echo awake'
  assert_eq "$code" 200 "$out"
  assert_contains "$out" awake
  sv_call GET /sessions/idle-a
  assert_jq "$out" '.status == "running"'
  # Paused by /pause: 503 at once, not resumed.
  sv_call POST /pause "{\"runtime_id\":\"$a_id\"}"
  sv_run_action "$a_id" 'echo no'
  assert_eq "$code" 503
  sv_call POST /stop "{\"runtime_id\":\"$a_id\"}"
  assert_eq "$code" 200
  sv_call POST /start "{\"image\":\"$SV_RT\",\"session_id\":\"idle-c\"}"
  assert_eq "$code" 200 "a start after a stop made room"
  sv_stop
  sv_cleanup
  sv_assert_clean
}
run_test pause_idle test_pause_idle

test_work_hosts_and_limits ()
{
  trap sv_cleanup EXIT
  sv_start --work-ports 12000 --resources cpus=0.5,memory=128m,pids=256
  sv_new_session wh '{"resource_factor":2}'
  local host
  host=$(jq -r '.work_hosts | keys[0]' <<<"$out")
  assert_match "$host" '^http://127\.0\.0\.1:[0-9]+$'
  assert_jq "$out" '.work_hosts[] == 12000'
  # An app the agent starts on the work port is reachable at the work host.
  sv_run_action "$SV_ID" 'mkdir -p /tmp/app && echo work-app >/tmp/app/index.html && (httpd -p 12000 -h /tmp/app &) ; sleep 0.3; echo started'
  assert_eq "$code" 200
  t_wait_until 10 sh -c "curl -s $host/index.html | grep -q work-app"
  # resource_factor 2 of 128m: 256m, as the sandbox's cgroup says.
  sv_run_action "$SV_ID" 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max'
  assert_contains "$out" 268435456
  sv_run_action "$SV_ID" 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max'
  assert_contains "$out" 512
  sv_stop
  sv_cleanup
  sv_assert_clean
}
run_test work_hosts_and_limits test_work_hosts_and_limits

# Devices configured for the server (ohbox serve --device): every sandbox
# gets them, through the same run policy; a wrong one stops the server
# before it listens.
test_devices ()
{
  trap sv_cleanup EXIT
  assert_exit 2 "$OHBOX_BIN" --root "$SV_ROOT" serve --socket "$T_WORK/never.sock" --device /etc/hostname
  assert_contains "$err" "is not a device node"
  assert_exit 2 "$OHBOX_BIN" --root "$SV_ROOT" serve --socket "$T_WORK/never.sock" --egress 10.0.0.1/8
  assert_contains "$err" "invalid --egress"
  sv_start --device /dev/full:/dev/served:r
  sv_new_session dv
  sv_run_action "$SV_ID" 'stat -c "%n %t:%T" /dev/served'
  assert_eq "$code" 200
  assert_jq "$out" '.content == "/dev/served 1:7"'
  sv_stop
  sv_cleanup
  sv_assert_clean
}
run_test devices test_devices

# ---------------------------------------------------------------- operations

test_metrics_and_log ()
{
  trap sv_cleanup EXIT
  sv_start
  sv_new_session m1
  sv_run_action "$SV_ID" 'echo x'
  sv_call POST /stop "{\"runtime_id\":\"$SV_ID\"}"
  sv_call GET /metrics
  assert_eq "$code" 200
  local m
  for m in 'ohbox_serve_sandboxes{status="running"}' 'ohbox_serve_starts_total{source="cold"} 1' \
    'ohbox_serve_start_seconds_count 1' 'ohbox_serve_stops_total 1' '# TYPE ohbox_serve_start_seconds histogram'; do
    assert_contains "$out" "$m"
  done
  sv_stop
  # One JSON line per request, each with what it was.
  local n
  n=$(grep -c '"method"' "$SV_LOG")
  [ "$n" -ge 5 ] || { _t_assert_fail "only $n request lines"; return 1; }
  grep '"method"' "$SV_LOG" | jq -e 'has("ts") and has("path") and has("status") and has("ms")' >/dev/null
  assert_contains "$(cat "$SV_LOG")" '"path":"/'"$SV_ID"'/execute_action","status":200'
  # No key in the log.
  assert_not_contains "$(cat "$SV_LOG")" "$SV_KEY"
  assert_not_contains "$(cat "$SV_LOG")" "$SV_SK"
  sv_assert_clean
}
run_test metrics_and_log test_metrics_and_log

test_unix_socket ()
{
  trap sv_cleanup EXIT
  local sock=$T_WORK/serve.sock
  "$OHBOX_BIN" --root "$SV_ROOT" serve --socket "$sock" >"$T_WORK/serve.log" 2>&1 </dev/null &
  SV_PID=$!
  t_track "$SV_PID"
  t_wait_until 10 test -S "$sock"
  assert_eq "$(stat -c %a "$sock")" 600
  assert_eq "$(stat -c %u "$sock")" "$(id -u)"
  out=$(curl -s --unix-socket "$sock" http://localhost/registry_prefix)
  assert_jq "$out" '.registry_prefix == "localhost/ohbox-serve"'
  out=$(curl -s --unix-socket "$sock" -X POST --data "{\"image\":\"$SV_RT\",\"session_id\":\"u1\"}" http://localhost/start)
  local id sk
  id=$(jq -r .runtime_id <<<"$out")
  sk=$(jq -r .session_api_key <<<"$out")
  assert_jq "$out" ".url == \"http://localhost/$id\""
  out=$(curl -s --unix-socket "$sock" -H "X-Session-API-Key: $sk" "http://localhost/$id/alive")
  assert_jq "$out" '.status == "ok"'
  sv_stop
  assert_file_absent "$sock"
  sv_cleanup
}
run_test unix_socket test_unix_socket

# A sandbox's URL goes to its executor through the unix socket the run
# made in the sandbox's state (no TCP, no NAT): with its published port's
# packets dropped, the URL still answers. The socket is the state owner's
# only.
test_executor_socket ()
{
  trap 'sv_cleanup; nft delete table inet ohbox_test_sock 2>/dev/null || true' EXIT
  require_cmd nft setpriv
  sv_start
  sv_new_session sock
  local state=$SV_RUN/$SV_ID up
  assert_eq "$(jq -r .socket "$state/executor.json")" executor.sock
  assert_eq "$(stat -c %a "$state/executor.sock")" 600 "the socket's mode"
  up=$(jq -r .url "$state/executor.json")
  nft -f - <<EOF || return 1
table inet ohbox_test_sock {
  chain out { type filter hook output priority -300; tcp dport ${up##*:} drop; }
}
EOF
  assert_exit 28 curl -s -m 1 "$up/alive"
  assert_http_status 200 "the sandbox's URL, its published port dropped" -H "X-Session-API-Key: $SV_SK" \
    "$SV_URL/$SV_ID/alive"
  sv_run_action "$SV_ID" 'echo through the socket'
  assert_contains "$out" "through the socket"
  nft delete table inet ohbox_test_sock
  # Another user cannot connect, even from inside the state directory (a
  # relative path: the full one is longer than a socket address holds).
  cd "$state" || return 1
  out=$(curl -s --unix-socket executor.sock -H "X-Session-API-Key: $SV_SK" http://localhost/alive)
  assert_jq "$out" '.status == "ok"'
  assert_exit 7 setpriv --reuid 65534 --regid 65534 --clear-groups -- curl -s --unix-socket executor.sock \
    -H "X-Session-API-Key: $SV_SK" http://localhost/alive
  cd - >/dev/null || return 1
  sv_call POST /stop "{\"runtime_id\":\"$SV_ID\"}"
  sv_stop
  sv_assert_clean
}
run_test executor_socket test_executor_socket

# Clients by the thousand: connections whose sockets are numbered beyond
# select()'s FD_SETSIZE (1024) are served like the first ones, and a limit
# on open files too low for --connection-limit is said at startup.
test_many_connections ()
{
  trap sv_cleanup EXIT
  [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 4096 ] \
    || { t_skip "the hard limit on open files ($(ulimit -Hn)) is below the 4096 this test opens"; return 0; }
  sv_start --connection-limit 1500
  /usr/bin/python3 - "$SV_PORT" "$SV_KEY" >"$T_WORK/conns.out" 2>&1 <<'PY'
import resource, socket, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
port, key = int(sys.argv[1]), sys.argv[2].encode()
conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(1200)]
ok = 0
for c in conns:
    c.settimeout(10)
for c in conns[-300:]:
    c.sendall(b"GET /list HTTP/1.1\r\nHost: t\r\nX-API-Key: " + key + b"\r\n\r\n")
for c in conns[-300:]:
    try:
        ok += c.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        pass
print("answered", ok)
PY
  assert_eq "$(cat "$T_WORK/conns.out")" "answered 300"
  assert_not_contains "$(cat "$SV_LOG")" FD_SETSIZE
  sv_stop
  # A hard limit of 600 open files cannot hold 1024 connections: said.
  prlimit --nofile=600:600 "$OHBOX_BIN" --root "$SV_ROOT" serve --api-key-file "$SV_KEYFILE" \
    --listen "127.0.0.1:$SV_PORT" --log "$T_WORK/low.log" >"$T_WORK/low.err" 2>&1 </dev/null &
  SV_PID=$!
  t_track "$SV_PID"
  t_wait_until 10 grep -q '"event":"listening"' "$T_WORK/low.log"
  assert_contains "$(cat "$T_WORK/low.err")" "the limit on open files (600) is below what --connection-limit 1024 needs"
  assert_contains "$(cat "$T_WORK/low.err")" "raise the hard limit"
  assert_http_status 200 "/list under a low limit" -H "X-API-Key: $SV_KEY" "$SV_URL/list"
  sv_stop
  sv_cleanup
}
run_test many_connections test_many_connections
