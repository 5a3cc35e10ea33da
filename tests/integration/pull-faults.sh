#!/bin/bash
# pull-faults.sh: `ohbox pull` through tests/lib/fault_proxy.py: dropped
# connections (resume with Range), 429 and 503 (retry, honouring
# Retry-After), corrupted and truncated bodies (integrity errors, nothing
# stored), concurrent pulls (each blob fetched once) and a pull killed
# mid-blob (no half blob, the next pull resumes); stalled connections
# (the low-speed limit ends them, the pull retries), descriptor sizes and
# manifest digests that do not match, and blob redirects to another host
# (followed, without the registry's Authorization; loops refused; from a
# registry elsewhere, never to this host's loopback or link-local
# addresses, whether by address, by name or as a token realm); a
# registry that drips its answers just above the low-speed limit (the
# pull's deadline, --timeout, and the request timeout end it).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registries.sh"

# pull_via_proxy [OPTIONS]: pulls test/busybox through the proxy FP.
pull_via_proxy ()
{
  ohbox pull --tls-verify=false "$@" "$FP_HOST/test/busybox:latest"
}

# blob_gets DIGEST: GETs of that blob the proxy answered with data.
blob_gets ()
{
  fp_count FP ".method == \"GET\" and (.path | endswith(\"/blobs/$1\")) and (.status == 200 or .status == 206)"
}

# only_blob DIGEST: a "match" setting for fp_set that selects one blob.
only_blob ()
{
  printf '"match": "/blobs/%s$"' "$1"
}

test_drop_resume ()
{
  fp_start REG FP
  fp_set FP "{\"drop_after\": 300000, $(only_blob "$IMG_BB_LAYER1")}"
  assert_ok pull_via_proxy
  assert_match "$out" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  assert_int -eq 1 "$(fp_count FP '.fault == "drop"')" "dropped responses"
  assert_int -ge "$(fp_count FP "(.path | endswith(\"/blobs/$IMG_BB_LAYER1\")) and .status == 206
    and (.range // \"\" | test(\"^bytes=[1-9][0-9]*-\"))")" 1 "Range requests resuming the layer"
  assert_store_blobs_valid
  assert_blob_present "$IMG_BB_LAYER1"
  assert_layer_present "$IMG_BB_DIFF1"
}

# min_retry_gap STATUS: the shortest time between an answer STATUS and the
# next request for the same path.
min_retry_gap ()
{
  jq -s --argjson st "$1" '. as $all | [ $all[] | select(.status == $st) | . as $e
    | ([ $all[] | select(.path == $e.path and .time > $e.time) | .time ] | min) - $e.time ] | min' "$FP_LOG"
}

test_429_retry ()
{
  fp_start REG FP
  fp_set FP '{"status_429": 2}'
  assert_ok pull_via_proxy
  assert_match "$out" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  assert_int -eq 2 "$(fp_count FP '.status == 429')" "429 answers"
  # Retry-After: 1 is honoured
  assert_jq "$(min_retry_gap 429)" '. >= 0.9' "seconds between a 429 and the retry"
  assert_store_blobs_valid
}

test_503_retry ()
{
  fp_start REG FP
  fp_set FP '{"status_503": 2}'
  assert_ok pull_via_proxy
  assert_int -eq 2 "$(fp_count FP '.status == 503')" "503 answers"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
}

test_manifest_503_retry ()
{
  fp_start REG FP
  fp_set FP '{"status_503": 1, "match": "/manifests/"}'
  assert_ok pull_via_proxy
  assert_int -eq 1 "$(fp_count FP '.status == 503 and (.path | contains("/manifests/"))')" "503 on the manifest"
}

# pull_gives_up SECONDS [PULL-ARGS...]: the pull through the proxy fails
# with a registry error (exit 5) within SECONDS.
pull_gives_up ()
{
  local limit=$1 start=$SECONDS
  shift
  assert_exit 5 pull_via_proxy "$@"
  assert_int -le $((SECONDS - start)) "$limit" "seconds before giving up"
}

test_503_gives_up ()
{
  # a registry that never recovers: the pull fails with a registry error
  # (exit 5) naming the status, in bounded time
  fp_start REG FP
  fp_set FP '{"status_503": -1}'
  pull_gives_up 90
  assert_contains "$err" "503" "error message"
  assert_eq "" "$(find "$T_ROOT/blobs" -type f -name "*${IMG_BB_LAYER1#sha256:}*" 2>/dev/null)" "layer blob"
}

test_corrupt_layer ()
{
  fp_start REG FP
  fp_set FP "{\"corrupt\": -1, $(only_blob "$IMG_BB_LAYER1")}"
  assert_exit 6 pull_via_proxy
  assert_contains "$err" "$(short_hex "$IMG_BB_LAYER1")" "error message naming the digest"
  assert_blob_absent "$IMG_BB_LAYER1" "the corrupted layer"
  assert_layer_absent "$IMG_BB_DIFF1"
  assert_store_blobs_valid
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed pull"
}

test_corrupt_config ()
{
  fp_start REG FP
  fp_set FP "{\"corrupt\": -1, $(only_blob "$IMG_BB_CONFIG")}"
  assert_exit 6 pull_via_proxy
  assert_contains "$err" "$(short_hex "$IMG_BB_CONFIG")" "error message naming the digest"
  assert_blob_absent "$IMG_BB_CONFIG" "the corrupted config"
  assert_store_blobs_valid
}

test_corrupt_once_then_clean ()
{
  # after a failed pull, a clean one works (nothing bad was kept)
  fp_start REG FP
  fp_set FP "{\"corrupt\": -1, $(only_blob "$IMG_BB_LAYER1")}"
  assert_exit 6 pull_via_proxy
  fp_set FP '{}'
  assert_ok pull_via_proxy
  assert_blob_present "$IMG_BB_LAYER1"
  assert_store_blobs_valid
}

test_truncated_body_recovers ()
{
  # the body announced is longer than the one sent, once: resume or retry
  fp_start REG FP
  fp_set FP "{\"bad_length\": \"long\", \"bad_length_count\": 1, $(only_blob "$IMG_BB_LAYER1")}"
  assert_ok pull_via_proxy
  assert_int -eq 1 "$(fp_count FP '.fault == "bad_length_long"')" "truncated answers"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_store_blobs_valid
}

test_short_body ()
{
  # a complete-looking body one byte short of the descriptor's size, always:
  # a size mismatch (6), or a transfer that never completes (5)
  fp_start REG FP
  fp_set FP "{\"bad_length\": \"short\", \"bad_length_count\": -1, $(only_blob "$IMG_BB_LAYER1")}"
  assert_fails pull_via_proxy
  assert_match "$rc" '^[56]$' "exit status"
  assert_contains "$err" "$(short_hex "$IMG_BB_LAYER1")" "error message naming the digest"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_store_blobs_valid
}

test_concurrent_pulls ()
{
  fp_start REG FP
  # slow enough that the two pulls overlap
  fp_set FP '{"rate": 1500000}'
  ohbox_bg "$T_WORK/pull1.out" pull --tls-verify=false "$FP_HOST/test/busybox:latest"
  local p1=$OHBOX_BG_PID
  ohbox_bg "$T_WORK/pull2.out" pull --tls-verify=false "$FP_HOST/test/busybox:latest"
  local p2=$OHBOX_BG_PID rc1=0 rc2=0
  wait "$p1" || rc1=$?
  wait "$p2" || rc2=$?
  sed 's/^/  pull1| /' "$T_WORK/pull1.out" >&9
  sed 's/^/  pull2| /' "$T_WORK/pull2.out" >&9
  assert_eq 0 "$rc1" "exit status of the first pull"
  assert_eq 0 "$rc2" "exit status of the second pull"
  assert_match "$(cat "$T_WORK/pull1.out")" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST"
  assert_match "$(cat "$T_WORK/pull2.out")" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST"
  local d
  for d in "$IMG_BB_CONFIG" "$IMG_BB_LAYER1" "$IMG_BB_LAYER2"; do
    assert_int -eq 1 "$(blob_gets "$d")" "downloads of blob $d"
  done
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_layer_present "$IMG_BB_DIFF2"
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out"
}

# partial_over N: some file of the store outside blobs/ (the download in
# progress) has more than N bytes.
partial_over ()
{
  find "$T_ROOT" -path "$T_ROOT/blobs" -prune -o -type f -size "+$1c" -print 2>/dev/null | grep -q .
}

# kill_mid_blob: starts a pull slowed down on layer 1 and SIGKILLs it once
# part of the layer arrived.
kill_mid_blob ()
{
  fp_set FP "{\"rate\": 200000, $(only_blob "$IMG_BB_LAYER1")}"
  ohbox_bg "$T_WORK/killed.out" pull --tls-verify=false "$FP_HOST/test/busybox:latest"
  local pid=$OHBOX_BG_PID
  if ! t_wait_until 30 partial_over 200000; then
    kill -KILL "$pid" 2>/dev/null
    _t_assert_fail "no partial download of more than 200000 bytes appeared: $(cat "$T_WORK/killed.out")"
    return 1
  fi
  kill -KILL "$pid"
  wait "$pid" || true
  sed 's/^/  killed pull| /' "$T_WORK/killed.out" >&9
  fp_set FP '{}'
}

test_sigkill_resume ()
{
  fp_start REG FP
  kill_mid_blob
  # no half blob is visible as a blob
  assert_blob_absent "$IMG_BB_LAYER1" "the interrupted layer"
  assert_store_blobs_valid
  assert_layer_absent "$IMG_BB_DIFF1"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a killed pull"
  # the next pull completes, resuming the partial download
  assert_ok pull_via_proxy
  assert_match "$out" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_int -ge "$(fp_count FP "(.path | endswith(\"/blobs/$IMG_BB_LAYER1\")) and .status == 206
    and (.range // \"\" | test(\"^bytes=[1-9][0-9]*-\"))")" 1 "Range requests resuming the layer"
}

test_sigkill_prune ()
{
  fp_start REG FP
  kill_mid_blob
  assert_ok ohbox prune --format json
  assert_jq "$out" '.partials >= 1' "prune after a killed pull"
  assert_eq "" "$(find "$T_ROOT" -path "$T_ROOT/blobs" -prune -o -type f -size +200000c -print)" \
    "partial files after prune"
  assert_ok pull_via_proxy
  assert_store_blobs_valid
}

# ---- stalled connections ----

test_stall_retry ()
{
  # the layer's connection stalls once after 2 kB: the low-speed limit
  # (2 s here) ends it and the pull resumes, well before the stall ends
  fp_start REG FP
  fp_set FP "{\"stall_after\": 2000, \"stall_count\": 1, \"stall_seconds\": 60, $(only_blob "$IMG_BB_LAYER1")}"
  local start=$SECONDS
  OHBOX_LOW_SPEED_TIMEOUT=2 assert_ok pull_via_proxy
  assert_int -le $((SECONDS - start)) 30 "seconds for the pull"
  assert_int -eq 1 "$(fp_count FP '.fault == "stall"')" "stalled answers"
  assert_int -ge "$(blob_gets "$IMG_BB_LAYER1")" 2 "GETs of the stalled layer"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_store_blobs_valid
}

test_stall_gives_up ()
{
  # a server that always stalls: a registry error (exit 5) in bounded time
  fp_start REG FP
  fp_set FP "{\"stall_after\": 0, \"stall_count\": -1, \"stall_seconds\": 60, $(only_blob "$IMG_BB_LAYER1")}"
  OHBOX_LOW_SPEED_TIMEOUT=1 pull_gives_up 45
  assert_contains "$err" "$(short_hex "$IMG_BB_LAYER1")" "error message naming the digest"
  assert_match "$err" "too slow|timed out|[Tt]imeout"
  assert_int -ge "$(fp_count FP '.fault == "stall"')" 2 "attempts"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_store_blobs_valid
}

# ---- registries that drip ----

test_drip_deadline ()
{
  # the layer comes at 1100 B/s, above the 1 kB/s low-speed limit: hours
  # for the padded blob, so the pull's deadline has to end it
  fp_start REG FP
  fp_set FP "{\"drip\": 1100, $(only_blob "$IMG_BB_LAYER1")}"
  pull_gives_up 15 --timeout 3s
  assert_contains "$err" "$FP_HOST did not finish within the pull's deadline of 3s"
  assert_contains "$err" "--timeout"
  assert_int -ge "$(fp_count FP '.fault == "drip"')" 1 "dripped answers"
  assert_nothing_pulled
  # 503 after 503 with Retry-After: the retries stop at the deadline too
  fp_set FP '{"status_503": -1}'
  start=$SECONDS
  assert_exit 5 pull_via_proxy --timeout 2s
  assert_int -le $((SECONDS - start)) 10 "seconds before giving up"
  assert_contains "$err" "deadline of 2s"
  assert_contains "$err" "HTTP 503"
  assert_exit 2 pull_via_proxy --timeout 1x
  assert_contains "$err" "--timeout takes a duration"
}

test_drip_manifest ()
{
  # the manifest drips (4 MB of padding at 1100 B/s, an hour): the request timeout
  # ends that request, whatever the pull's deadline
  fp_start REG FP
  fp_set FP '{"drip": 1100, "drip_pad": 4000000, "match": "/manifests/"}'
  T_OHBOX_TIMEOUT=60 OHBOX_REQUEST_TIMEOUT=2 pull_gives_up 15
  assert_contains "$err" "did not answer within 2s"
  assert_contains "$err" "/manifests/latest"
  assert_nothing_pulled
}

# ---- sizes and digests that do not match ----

# put_manifest NAME TAG JQ: pushes the busybox manifest changed by JQ to the
# registry REG as NAME:TAG (the registry checks that blobs exist, not sizes).
put_manifest ()
{
  local m ct
  m=$(reg_curl REG -f -H "Accept: $T_REG_ACCEPT" "$REG_URL/v2/test/busybox/manifests/latest")
  ct=$(jq -r .mediaType <<<"$m")
  jq -c "$3" <<<"$m" | reg_curl REG -f -X PUT -H "Content-Type: $ct" --data-binary @- \
    "$REG_URL/v2/$1/manifests/$2" >/dev/null
}

# assert_nothing_pulled: no image, every blob sound, a store check finds
# only what prune removes.
assert_nothing_pulled ()
{
  assert_store_blobs_valid
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed pull"
  assert_ok ohbox prune
  assert_ok ohbox check
}

# assert_layer_size_refused TAG JQ PATTERN: the busybox manifest whose first
# layer's size JQ changes, pushed as TAG, is refused with an error naming
# that layer and matching PATTERN; the layer is not kept.
assert_layer_size_refused ()
{
  put_manifest test/busybox "$1" "$2"
  assert_exit 6 ohbox pull --tls-verify=false "$REG_HOST/test/busybox:$1"
  assert_contains "$err" "$(short_hex "$IMG_BB_LAYER1")" "error message naming the digest"
  assert_match "$err" "$3"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_nothing_pulled
}

test_descriptor_size_larger ()
{
  assert_layer_size_refused size-larger '.layers[0].size += 100' "size"
}

test_descriptor_size_smaller ()
{
  assert_layer_size_refused size-smaller '.layers[0].size -= 1' "more than|size"
}

test_manifest_digest_mismatch ()
{
  # the manifest served is not the one asked for (by digest), or not the
  # one the registry's Docker-Content-Digest names (by tag)
  fp_start REG FP
  fp_set FP "{\"manifest_replace\": [\"${IMG_BB_LAYER2#sha256:}\", \"${IMG_BB_LAYER1#sha256:}\"]}"
  assert_exit 6 ohbox pull --tls-verify=false "$FP_HOST/test/busybox@$IMG_BB_MANIFEST"
  assert_contains "$err" "$(short_hex "$IMG_BB_MANIFEST")" "error message naming the digest"
  assert_int -ge "$(fp_count FP '.fault == "manifest_replace"')" 1 "manifests altered"
  # By tag: the content does not hash to the registry's Docker-Content-Digest
  assert_exit 6 pull_via_proxy
  assert_match "$err" "Docker-Content-Digest says $IMG_BB_MANIFEST"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_nothing_pulled
}

test_manifest_wrong_layer_digest ()
{
  # the manifest names the layers in the wrong order: each blob is sound,
  # but not the layer the config's DiffIDs say
  put_manifest test/busybox swapped '.layers |= reverse'
  assert_exit 6 ohbox pull --tls-verify=false "$REG_HOST/test/busybox:swapped"
  assert_match "$err" "config says|diff"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed pull"
  assert_layer_absent "$IMG_BB_DIFF1"
  assert_ok ohbox prune
  assert_ok ohbox check
}

# ---- redirects ----

# storage_start: a second server on 127.0.0.2 (another host for ohbox),
# serving the blobs of REG without authentication, as S3 does for a
# registry; sets STORE_URL and STORE_LOG.
storage_start ()
{
  local dir=$T_WORK/storage
  mkdir -p "$dir"
  : >"$dir/requests.log"
  t_start "$dir/out" "$T_PY" "$T_LIB/fault_proxy.py" --upstream "$REG_URL" --bind 127.0.0.2 --port 0 \
    --port-file "$dir/port" --log "$dir/requests.log"
  t_wait_until 5 test -s "$dir/port"
  STORE_URL=http://127.0.0.2:$(cat "$dir/port")
  STORE_LOG=$dir/requests.log
}

test_redirect_other_host ()
{
  reg_start http-basic REGA
  img_push REGA "oci:$IMG_BUSYBOX:latest" test/busybox:latest
  storage_start
  fp_start REGA FP
  fp_set FP "{\"redirect\": \"$STORE_URL\"}"
  assert_ok ohbox pull --tls-verify=false --creds "$REGA_USER:$REGA_PASS" "$FP_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  # the registry got the credentials, the storage host got the blobs and
  # never the credentials
  assert_int -ge "$(fp_count FP '.authorization')" 1 "requests to the registry with Authorization"
  assert_int -ge "$(fp_count FP '.status == 307')" 3 "blob redirects"
  assert_int -ge "$(jq -c 'select(.method == "GET" and .status == 200)' "$STORE_LOG" | wc -l)" 3 \
    "blobs served by the storage host"
  assert_eq 0 "$(jq -c 'select(.authorization)' "$STORE_LOG" | wc -l)" \
    "requests to the storage host carrying Authorization"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
}

# A registry elsewhere may not send ohbox to this host's own services. The
# test registries listen on 127.0.0.1, so this one runs in a network
# namespace of the test's own, where a veth pair carries 192.0.2.10 and
# 192.0.2.11 (documentation addresses, reached without leaving it): the
# "remote" registries on 192.0.2.10 redirect their blobs (or name their
# token realm) to a service on 127.0.0.1, to a name /etc/hosts resolves to
# 127.0.0.1, to 169.254.169.254, or to the storage host 192.0.2.11 (fine);
# a registry on 127.0.0.1 redirecting to 127.0.0.1 is fine too.
ns_script ()
{
  cat <<'EOF'
set -u
cd "$NS_DIR" || exit 90
ip link set lo up && ip link add ohbt0 type veth peer name ohbt1 && ip addr add 192.0.2.10/32 dev ohbt0 &&
  ip addr add 192.0.2.11/32 dev ohbt1 && ip link set ohbt0 up && ip link set ohbt1 up || exit 91
printf '127.0.0.1 localhost\n127.0.0.1 internal.test\n' >hosts && mount --bind hosts /etc/hosts || exit 92
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT
# serve NAME ADDR [ARGS]: a static registry; PORT_NAME its port
serve ()
{
  local name=$1 addr=$2 i
  shift 2
  : >"$name.log"
  "$PY" "$LIB/static_registry.py" --layout "$LAYOUT" --bind "$addr" --port 0 --port-file "$name.port" \
    --log "$name.log" "$@" >"$name.out" 2>&1 &
  pids+=($!)
  for i in $(seq 100); do [ -s "$name.port" ] && break; sleep 0.05; done
  printf -v "PORT_$name" '%s' "$(cat "$name.port")"
}
# pull CASE HOST:PORT: a pull into a store of its own; CASE.rc, .out, .err
pull ()
{
  timeout 60 "$OHBOX" --root "$NS_DIR/root-$1" pull --tls-verify=false "$2/test/busybox:latest" >"$1.out" 2>"$1.err"
  echo $? >"$1.rc"
}
serve internal 127.0.0.1
serve internal2 127.0.0.1
serve storage 192.0.2.11
serve to_storage 192.0.2.10 --redirect-blobs "http://192.0.2.11:$PORT_storage"
serve to_loopback 192.0.2.10 --redirect-blobs "http://127.0.0.1:$PORT_internal"
serve to_name 192.0.2.10 --redirect-blobs "http://internal.test:$PORT_internal"
serve to_metadata 192.0.2.10 --redirect-blobs "http://169.254.169.254:$PORT_internal"
serve realm_loopback 192.0.2.10 --token-realm "http://127.0.0.1:$PORT_internal/token"
serve local_to_loopback 127.0.0.1 --redirect-blobs "http://127.0.0.1:$PORT_internal2"
pull to_storage "192.0.2.10:$PORT_to_storage"
pull to_loopback "192.0.2.10:$PORT_to_loopback"
pull to_name "192.0.2.10:$PORT_to_name"
pull to_metadata "192.0.2.10:$PORT_to_metadata"
pull realm_loopback "192.0.2.10:$PORT_realm_loopback"
pull local_to_loopback "127.0.0.1:$PORT_local_to_loopback"
EOF
}

test_redirect_to_this_host ()
{
  command -v unshare >/dev/null && command -v ip >/dev/null || skip "needs unshare(1) and ip(8)"
  local d=$T_WORK/ns c
  mkdir -p "$d"
  ns_script >"$d/run.sh"
  NS_DIR=$d PY=$T_PY LIB=$T_LIB LAYOUT=$IMG_BUSYBOX OHBOX=$OHBOX_BIN \
    assert_ok unshare --net --mount --propagation private bash "$d/run.sh"
  # the storage host elsewhere, and the local registry's own loopback, are fine
  for c in to_storage local_to_loopback; do
    assert_eq 0 "$(cat "$d/$c.rc")" "$c: $(cat "$d/$c.err")"
  done
  assert_int -ge "$(jq -s 'map(select(.status == 200)) | length' "$d/storage.log")" 2 "blobs from the storage host"
  assert_int -ge "$(jq -s 'map(select(.status == 200)) | length' "$d/internal2.log")" 2 "blobs the local registry sent"
  # this host's loopback (by address and by name), the metadata address and
  # a token realm on loopback are refused: a registry error, nothing pulled
  for c in to_loopback to_name to_metadata realm_loopback; do
    assert_eq 5 "$(cat "$d/$c.rc")" "$c: $(cat "$d/$c.err")"
    assert_match "$(cat "$d/$c.err")" "refusing .*(loopback|link-local).* 192\.0\.2\.10:[0-9]+ is not on this host"
    assert_eq "" "$(ls "$d/root-$c/images")" "$c: images"
  done
  assert_contains "$(cat "$d/to_name.err")" "refusing to connect to 127.0.0.1 (loopback) for \`http://internal.test:"
  assert_contains "$(cat "$d/to_metadata.err")" "link-local"
  assert_eq "" "$(cat "$d/internal.log")" "requests that reached this host's service"
}

test_redirect_loop ()
{
  fp_start REG FP
  fp_set FP '{"redirect": "loop"}'
  pull_gives_up 60
  assert_contains "$err" "too many redirects" "error message"
  assert_int -le "$(fp_count FP '.fault == "redirect_loop"')" 400 "redirects followed"
  assert_nothing_pulled
}

run_test drop_resume test_drop_resume
run_test 429_retry test_429_retry
run_test 503_retry test_503_retry
run_test manifest_503_retry test_manifest_503_retry
run_test 503_gives_up test_503_gives_up
run_test corrupt_layer test_corrupt_layer
run_test corrupt_config test_corrupt_config
run_test corrupt_once_then_clean test_corrupt_once_then_clean
run_test truncated_body_recovers test_truncated_body_recovers
run_test short_body test_short_body
run_test concurrent_pulls test_concurrent_pulls
run_test sigkill_resume test_sigkill_resume
run_test sigkill_prune test_sigkill_prune
run_test stall_retry test_stall_retry
run_test stall_gives_up test_stall_gives_up
run_test drip_deadline test_drip_deadline
run_test drip_manifest test_drip_manifest
run_test descriptor_size_larger test_descriptor_size_larger
run_test descriptor_size_smaller test_descriptor_size_smaller
run_test manifest_digest_mismatch test_manifest_digest_mismatch
run_test manifest_wrong_layer_digest test_manifest_wrong_layer_digest
run_test redirect_other_host test_redirect_other_host
run_test redirect_loop test_redirect_loop
run_test redirect_to_this_host test_redirect_to_this_host
