#!/bin/bash
# pull-conf.sh: `ohbox --registries-conf FILE pull` with the
# containers-registries.conf(5) v2 settings ohbox honours: the
# unqualified-search-registries list (order, the image stored under the
# registry that had it, not found anywhere), [[registry]] prefix/location
# rewriting, mirrors (asked first, skipped when down, mirror-by-digest-only),
# blocked and insecure registries, and malformed files (file:line in the
# message). Also here: a Docker schema1 manifest is refused (exit 8), served
# by a tiny stdlib server since distribution 2.8 no longer serves schema1.
#
# Three registries (A without test/busybox, B and MIR with it) and, per test,
# fault proxies in front of them (FPA, FPB, FPM) whose request logs tell
# which registry was asked, in which order.
. "$(dirname "$0")/../lib/common.sh"
setup_registries ()
{
  reg_start http A || return 1
  reg_start http B || return 1
  reg_start http MIR || return 1
  # A has an image, just not the one the tests pull.
  img_push A "oci:$IMG_ZSTD:latest" test/other:latest || return 1
  img_push B "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  img_push MIR "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
}
. "$T_LIB/registries.sh"

CONF=registries.conf

# proxies: starts FPA, FPB and FPM in front of A, B and MIR (fresh logs).
proxies ()
{
  fp_start A FPA
  fp_start B FPB
  fp_start MIR FPM
}

# conf_pull ARGS...: ohbox pull with $T_WORK/registries.conf.
conf_pull ()
{
  ohbox --registries-conf "$T_WORK/$CONF" pull "$@"
}

# requests PREFIX [JQ-FILTER]: requests the proxy PREFIX logged (matching FILTER).
requests ()
{
  fp_count "$1" "${2:-true}"
}

manifest_gets ()
{
  requests "$1" '.method == "GET" and (.path | contains("/manifests/"))'
}

# blob_gets PREFIX DIGEST: GETs of that blob answered with data.
blob_gets ()
{
  requests "$1" ".method == \"GET\" and (.path | endswith(\"/blobs/$2\")) and (.status == 200 or .status == 206)"
}

# first_time PREFIX: when the proxy's first request ended (seconds, float).
first_time ()
{
  jq -s 'map(.time) | min' "$(_reg_get "$1" LOG)"
}

# conf_mirrors PREFIX MIRROR...: the registries.conf in which the insecure
# registry PREFIX has the insecure MIRRORs, asked in that order.
conf_mirrors ()
{
  local m
  printf '[[registry]]\nprefix = "%s"\ninsecure = true\n' "$1" >"$CONF"
  shift
  for m in "$@"; do
    printf '\n[[registry.mirror]]\nlocation = "%s"\ninsecure = true\n' "$m" >>"$CONF"
  done
}

# stored_names: the names in the store, one JSON array.
stored_names ()
{
  ohbox images --format json | jq -c '[.[].names[]] | sort'
}

# ---- unqualified-search-registries

test_search_second_has_it ()
{
  proxies
  cat >"$CONF" <<EOF
unqualified-search-registries = ["$FPA_HOST", "$FPB_HOST"]
EOF
  assert_ok conf_pull --tls-verify=false test/busybox:latest
  assert_match "$out" "^pulled $FPB_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_eq "[\"$FPB_HOST/test/busybox:latest\"]" "$(stored_names)" "stored names"
  # A was asked first, and said it does not have it
  assert_int -ge "$(manifest_gets FPA)" 1 "manifest requests to A"
  assert_int -eq "$(requests FPA '(.path | contains("/manifests/")) and .status != 404')" 0 \
    "answers of A other than 404"
  assert_jq "$(jq -n --argjson a "$(first_time FPA)" --argjson b "$(first_time FPB)" '$a < $b')" '. == true' \
    "A asked before B"
  assert_int -eq "$(blob_gets FPB "$IMG_BB_LAYER1")" 1 "downloads of layer 1 from B"
  assert_store_blobs_valid
}

test_search_order ()
{
  # B first: B has it, so A is never asked.
  proxies
  cat >"$CONF" <<EOF
# comments and blank lines are fine

unqualified-search-registries = [
  "$FPB_HOST",   # has it
  "$FPA_HOST",
]
EOF
  assert_ok conf_pull --tls-verify=false test/busybox
  assert_match "$out" "^pulled $FPB_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_int -eq "$(requests FPA)" 0 "requests to A"
}

test_search_none_has_it ()
{
  proxies
  cat >"$CONF" <<EOF
unqualified-search-registries = ["$FPA_HOST", "$FPB_HOST"]
EOF
  assert_exit 3 conf_pull --tls-verify=false test/nothing:latest
  assert_contains "$err" "$FPA_HOST" "error output"
  assert_contains "$err" "$FPB_HOST" "error output"
  assert_contains "$err" "test/nothing" "error output"
  assert_int -ge "$(manifest_gets FPA)" 1 "manifest requests to A"
  assert_int -ge "$(manifest_gets FPB)" 1 "manifest requests to B"
  assert_eq "" "$(store_blob_files)" "blobs after a failed pull"
}

test_search_none_has_it_quiet ()
{
  # -q and --format json print no progress (no "trying the next source"
  # notice): the error itself must say every registry that was searched.
  proxies
  cat >"$CONF" <<EOF
unqualified-search-registries = ["$FPA_HOST", "$FPB_HOST"]
EOF
  assert_exit 3 conf_pull -q --tls-verify=false test/nothing:latest
  assert_eq "" "$out" "stdout of pull -q"
  assert_int -ge "$(manifest_gets FPA)" 1 "manifest requests to A"
  assert_contains "$err" "$FPB_HOST" "error output of pull -q"
  assert_contains "$err" "$FPA_HOST" "error output of pull -q"
}

test_search_qualified_name_ignores_list ()
{
  # a name with a registry is pulled from that registry only
  proxies
  cat >"$CONF" <<EOF
unqualified-search-registries = ["$FPB_HOST"]
EOF
  assert_exit 3 conf_pull --tls-verify=false "$FPA_HOST/test/busybox:latest"
  assert_int -eq "$(requests FPB)" 0 "requests to B"
}

# ---- [[registry]] prefix and location

test_prefix_location ()
{
  proxies
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$FPA_HOST/test"
location = "$FPB_HOST/test"
insecure = true
EOF
  # no --tls-verify=false: insecure = true covers the location
  assert_ok conf_pull "$FPA_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $FPA_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_eq "[\"$FPA_HOST/test/busybox:latest\"]" "$(stored_names)" "stored names"
  assert_int -eq "$(requests FPA)" 0 "requests to A"
  assert_int -ge "$(requests FPB '(.path | endswith("/v2/test/busybox/manifests/latest")) and .status == 200')" 1 \
    "manifest requests to B for the rewritten name"
  assert_int -eq "$(blob_gets FPB "$IMG_BB_LAYER1")" 1 "downloads of layer 1 from B"
  # outside the prefix (component boundary): not rewritten, A is asked
  assert_exit 3 conf_pull --tls-verify=false "$FPA_HOST/testing/busybox:latest"
  assert_int -ge "$(manifest_gets FPA)" 1 "manifest requests to A"
}

# ---- mirrors

test_mirror_first ()
{
  proxies
  conf_mirrors "$FPB_HOST" "$FPM_HOST"
  assert_ok conf_pull "$FPB_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $FPB_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_eq "[\"$FPB_HOST/test/busybox:latest\"]" "$(stored_names)" "stored names (the image's, not the mirror's)"
  assert_int -ge "$(manifest_gets FPM)" 1 "manifest requests to the mirror"
  assert_int -eq "$(blob_gets FPM "$IMG_BB_LAYER1")" 1 "downloads of layer 1 from the mirror"
  assert_int -eq "$(blob_gets FPM "$IMG_BB_LAYER2")" 1 "downloads of layer 2 from the mirror"
  assert_int -eq "$(requests FPB)" 0 "requests to B"
  assert_store_blobs_valid
}

test_mirror_down ()
{
  proxies
  local port
  port=$(t_free_port)
  conf_mirrors "$FPB_HOST" "127.0.0.1:$port"
  assert_ok conf_pull "$FPB_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $FPB_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_contains "$err" "127.0.0.1:$port" "the notice about the mirror that is down"
  assert_int -ge "$(manifest_gets FPB)" 1 "manifest requests to B"
  assert_int -eq "$(blob_gets FPB "$IMG_BB_LAYER1")" 1 "downloads of layer 1 from B"
  assert_store_blobs_valid
}

test_mirror_lacks_image ()
{
  # a mirror that answers 404 is skipped too (A has no test/busybox)
  proxies
  conf_mirrors "$FPB_HOST" "$FPA_HOST" "$FPM_HOST"
  assert_ok conf_pull "$FPB_HOST/test/busybox:latest"
  assert_int -ge "$(manifest_gets FPA)" 1 "manifest requests to the first mirror"
  assert_int -eq "$(blob_gets FPM "$IMG_BB_LAYER1")" 1 "downloads of layer 1 from the second mirror"
  assert_int -eq "$(requests FPB)" 0 "requests to B"
}

test_mirror_by_digest_only ()
{
  proxies
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$FPB_HOST"
insecure = true
mirror-by-digest-only = true

[[registry.mirror]]
location = "$FPM_HOST"
insecure = true
EOF
  # by digest: the mirror serves everything, B is not asked
  assert_ok conf_pull "$FPB_HOST/test/busybox@$IMG_BB_MANIFEST"
  assert_match "$out" "^pulled $FPB_HOST/test/busybox@$IMG_BB_MANIFEST $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_int -ge "$(requests FPM "(.path | endswith(\"/manifests/$IMG_BB_MANIFEST\")) and .status == 200")" 1 \
    "manifest requests by digest to the mirror"
  assert_int -eq "$(blob_gets FPM "$IMG_BB_LAYER1")" 1 "downloads of layer 1 from the mirror"
  assert_int -eq "$(requests FPB)" 0 "requests to B for the pull by digest"
  # by tag: the mirror is not used
  local before
  before=$(requests FPM)
  assert_ok conf_pull "$FPB_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $FPB_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_int -eq "$(requests FPM)" "$before" "requests to the mirror for the pull by tag"
  assert_int -ge "$(manifest_gets FPB)" 1 "manifest requests to B"
}

# ---- blocked, insecure

test_blocked ()
{
  proxies
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$FPB_HOST/test/busybox"
blocked = true
EOF
  assert_exit 2 conf_pull --tls-verify=false "$FPB_HOST/test/busybox:latest"
  assert_contains "$err" "blocked" "error message"
  assert_contains "$err" "$FPB_HOST/test/busybox" "error message"
  assert_int -eq "$(requests FPB)" 0 "requests to the blocked registry"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
  # a short name that resolves to it is blocked too, before anything is asked
  cat >"$CONF" <<EOF
unqualified-search-registries = ["$FPB_HOST"]

[[registry]]
prefix = "$FPB_HOST"
blocked = true
EOF
  assert_exit 2 conf_pull --tls-verify=false test/busybox:latest
  assert_contains "$err" "blocked" "error message"
  assert_int -eq "$(requests FPB)" 0 "requests to the blocked registry"
}

test_blocked_is_scoped ()
{
  # blocking a repository leaves its neighbours (and prefix look-alikes) alone
  proxies
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$FPB_HOST/test/busy"
blocked = true

[[registry]]
prefix = "$FPB_HOST/test/busybox/sub"
blocked = true
EOF
  assert_ok conf_pull --tls-verify=false "$FPB_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $FPB_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
}

test_insecure ()
{
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$B_HOST"
insecure = true
EOF
  assert_ok conf_pull "$B_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $B_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_ok ohbox rmi "$B_HOST/test/busybox:latest"
  assert_ok ohbox prune
  # the same entry without insecure: HTTPS is required and B has none
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$B_HOST"
EOF
  assert_exit 5 conf_pull "$B_HOST/test/busybox:latest"
  assert_contains "$err" "$B_HOST" "error message"
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$B_HOST"
insecure = false
EOF
  assert_exit 5 conf_pull "$B_HOST/test/busybox:latest"
  # insecure for another registry does not leak to this one
  cat >"$CONF" <<EOF
[[registry]]
prefix = "$A_HOST"
insecure = true
EOF
  assert_exit 5 conf_pull "$B_HOST/test/busybox:latest"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after the refused pulls"
}

# ---- malformed files

# assert_conf_error LINE TEXT: a registries.conf with TEXT is refused with
# exit 2 and "FILE:LINE" in the message, before any registry is asked.
assert_conf_error ()
{
  printf '%s\n' "$2" >"$CONF"
  assert_exit 2 conf_pull --tls-verify=false "$FPB_HOST/test/busybox:latest"
  assert_contains "$err" "$T_WORK/$CONF:$1" "error message for line $1 of: $2"
}

test_malformed ()
{
  proxies
  assert_conf_error 1 'unqualified-search-registries = ["a.io" "b.io"]'
  assert_conf_error 4 $'unqualified-search-registries = ["a.io"]\n\n[[registry]]\nprefix = "a.io" junk'
  assert_conf_error 3 $'# comment\n\nunqualified-search-registries = "not-a-list"'
  assert_conf_error 3 $'[[registry]]\nprefix = "a.io"\nblocked = maybe'
  assert_conf_error 2 $'[[registry]]\nprefix = "a.io\nlocation = "b.io"'
  # a misspelt key must not silently unblock a registry
  assert_conf_error 3 $'[[registry]]\nprefix = "a.io"\nblockd = true'
  assert_conf_error 1 $'[[registry.mirror]]\nlocation = "m.io"'
  assert_conf_error 2 $'[[registry]]\nnot toml at all'
  assert_int -eq "$(requests FPB)" 0 "requests with a malformed configuration"
  # a file given explicitly must exist
  assert_fails ohbox --registries-conf "$T_WORK/no-such.conf" pull --tls-verify=false "$FPB_HOST/test/busybox:latest"
  assert_contains "$err" "no-such.conf" "error message"
  assert_int -eq "$(requests FPB)" 0 "requests with a missing configuration"
}

# ---- Docker schema1

# A registry that has one image, test/old:latest, as a Docker schema1
# manifest (distribution 2.8 refuses to serve schema1 by default).
SCHEMA1_SERVER='
import http.server, json, os, sys
body = json.dumps({
    "schemaVersion": 1, "name": "test/old", "tag": "latest", "architecture": "amd64",
    "fsLayers": [{"blobSum": "sha256:" + "a" * 64}],
    "history": [{"v1Compatibility": "{\"id\": \"" + "b" * 64 + "\"}"}],
    "signatures": [{"header": {"alg": "ES256"}, "signature": "c2ln", "protected": "e30"}],
}, indent=3).encode()
types = {"/v2/test/old/manifests/latest": "application/vnd.docker.distribution.manifest.v1+prettyjws",
         "/v2/test/old/manifests/json": "application/json"}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))
    def answer(self, send_body):
        path = self.path.split("?")[0]
        if path == "/v2/":
            status, ctype, data = 200, "application/json", b"{}"
        elif path in types:
            status, ctype, data = 200, types[path], body
        else:
            status, ctype, data = 404, "application/json", b"{\"errors\": [{\"code\": \"MANIFEST_UNKNOWN\"}]}"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        self.end_headers()
        if send_body:
            self.wfile.write(data)
    def do_GET(self):
        self.answer(True)
    def do_HEAD(self):
        self.answer(False)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
'

# schema1_server: starts it for this test; sets SCHEMA1_HOST (its log is
# $T_WORK/schema1.log, one "METHOD PATH" line per request).
schema1_server ()
{
  t_start "$T_WORK/schema1.log" "$T_PY" -c "$SCHEMA1_SERVER" "$T_WORK/schema1.port"
  t_wait_until 5 test -s "$T_WORK/schema1.port"
  SCHEMA1_HOST=127.0.0.1:$(cat "$T_WORK/schema1.port")
}

test_schema1_refused ()
{
  schema1_server
  local host=$SCHEMA1_HOST
  assert_exit 8 ohbox pull --tls-verify=false "$host/test/old:latest"
  assert_contains "$err" "schema1" "error message"
  assert_contains "$err" "not supported" "error message"
  # recognised by schemaVersion too, whatever the Content-Type says
  assert_exit 8 ohbox pull --tls-verify=false "$host/test/old:json"
  assert_contains "$err" "schema1" "error message"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a refused pull"
  # the server was really asked (the test cannot pass on a connection error)
  assert_contains "$(cat "$T_WORK/schema1.log")" "GET /v2/test/old/manifests/latest" "server log"
  assert_contains "$(cat "$T_WORK/schema1.log")" "GET /v2/test/old/manifests/json" "server log"
}

test_schema1_error_names_image ()
{
  # as every pull error does, the message says which image was refused
  schema1_server
  assert_exit 8 ohbox pull --tls-verify=false "$SCHEMA1_HOST/test/old:latest"
  assert_contains "$err" "$SCHEMA1_HOST/test/old" "error message"
}

run_test search_second_has_it test_search_second_has_it
run_test search_order test_search_order
run_test search_none_has_it test_search_none_has_it
run_test search_none_has_it_quiet test_search_none_has_it_quiet
run_test search_qualified_name_ignores_list test_search_qualified_name_ignores_list
run_test prefix_location test_prefix_location
run_test mirror_first test_mirror_first
run_test mirror_down test_mirror_down
run_test mirror_lacks_image test_mirror_lacks_image
run_test mirror_by_digest_only test_mirror_by_digest_only
run_test blocked test_blocked
run_test blocked_is_scoped test_blocked_is_scoped
run_test insecure test_insecure
run_test malformed test_malformed
run_test schema1_refused test_schema1_refused
run_test schema1_error_names_image test_schema1_error_names_image
