#!/bin/bash
# harness.sh: checks the test harness itself (tests/lib): each registry mode,
# the token server, the image builder, skopeo pushes, the fault proxy and
# the test runner helpers. None of this needs ohbox: these tests must pass on
# any machine where contrib/install-deps.sh ran.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"

setup ()
{
  img_build || return 1
  reg_start http REG || return 1
  reg_start tls TLS || return 1
  reg_start basic BASIC || return 1
  reg_start token TOKEN || return 1
  img_push_standard REG test || return 1
}
t_setup_or_die setup setup

# header NAME: the value of response header NAME in $out (from curl -i).
header ()
{
  printf '%s\n' "$out" | tr -d '\r' | sed -n "s/^$1: *//Ip" | head -n 1
}

# status: the HTTP status in $out (from curl -i).
status ()
{
  printf '%s\n' "$out" | tr -d '\r' | sed -n 's/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' | tail -n 1
}

test_http_v2 ()
{
  assert_ok curl -sS -i "$REG_URL/v2/"
  assert_eq 200 "$(status)" "GET /v2/ status"
  assert_eq registry/2.0 "$(header Docker-Distribution-Api-Version)" "API version header"
  # HTTPS to a plain HTTP port must fail (what ohbox's default verification hits).
  assert_fails curl -sS --max-time 5 "https://$REG_HOST/v2/"
}

test_tls_v2 ()
{
  assert_ok reg_curl TLS -i "$TLS_URL/v2/"
  assert_eq 200 "$(status)" "GET /v2/ status with the CA"
  assert_ok curl -sS --cacert "$TLS_CERTDIR/ca.crt" -o /dev/null "https://localhost:$TLS_PORT/v2/"
  # Without the CA: certificate verification fails (curl exit 60).
  assert_exit 60 curl -sS -o /dev/null "$TLS_URL/v2/"
  reg_other_ca "$T_WORK/other"
  assert_exit 60 curl -sS --cacert "$T_WORK/other/ca.crt" -o /dev/null "$TLS_URL/v2/"
  assert_ok curl -sS -k -o /dev/null "$TLS_URL/v2/"
  local san
  san=$(openssl x509 -in "$T_SERVER_CRT" -noout -ext subjectAltName)
  assert_contains "$san" "IP Address:127.0.0.1" "server certificate SAN"
  assert_contains "$san" "DNS:localhost" "server certificate SAN"
}

test_basic_v2 ()
{
  assert_ok reg_curl BASIC -i "$BASIC_URL/v2/"
  assert_eq 401 "$(status)" "GET /v2/ without credentials"
  assert_eq 'Basic realm="ohbox-test"' "$(header WWW-Authenticate)" "challenge"
  assert_ok reg_curl BASIC -i -u testuser:testpass "$BASIC_URL/v2/"
  assert_eq 200 "$(status)" "GET /v2/ with credentials"
  assert_ok reg_curl BASIC -i -u reader:readerpass "$BASIC_URL/v2/"
  assert_eq 200 "$(status)" "GET /v2/ as reader"
  assert_ok reg_curl BASIC -i -u testuser:wrong "$BASIC_URL/v2/"
  assert_eq 401 "$(status)" "GET /v2/ with a wrong password"
}

test_token_challenge ()
{
  assert_ok reg_curl TOKEN -i "$TOKEN_URL/v2/"
  assert_eq 401 "$(status)" "GET /v2/ without a token"
  assert_eq "Bearer realm=\"$TOKEN_REALM\",service=\"ohbox-test-registry\"" "$(header WWW-Authenticate)"
  assert_ok reg_curl TOKEN -i "$TOKEN_URL/v2/public/busybox/manifests/latest"
  assert_eq 401 "$(status)"
  assert_contains "$(header WWW-Authenticate)" 'scope="repository:public/busybox:pull"'
}

# token USER:PASS|"" SCOPE...: prints the token server's JSON answer.
token ()
{
  local creds=$1 args=() s
  shift
  for s in "$@"; do
    args+=(--data-urlencode "scope=$s")
  done
  reg_curl TOKEN ${creds:+-u "$creds"} -G "$TOKEN_REALM" --data-urlencode service=ohbox-test-registry "${args[@]}"
}

# jwt_part TOKEN N: decodes part N (0 header, 1 claims) of a JWT.
jwt_part ()
{
  local p
  p=$(printf '%s' "$1" | cut -d. -f$(($2 + 1)) | tr '_-' '/+')
  while [ $((${#p} % 4)) -ne 0 ]; do
    p="$p="
  done
  printf '%s' "$p" | base64 -d
}

test_token_flow ()
{
  img_push TOKEN "oci:$IMG_BUSYBOX:latest" public/busybox:latest
  img_push TOKEN "oci:$IMG_BUSYBOX:latest" private/busybox:latest
  local before t hdr claims
  before=$(token_log_count TOKEN)

  # anonymous, public repository: the registry accepts the token
  assert_ok token "" repository:public/busybox:pull
  assert_jq "$out" '(.token | length) > 0 and .access_token == .token and .expires_in == 300 and (.issued_at | test("Z$"))'
  t=$(jq -r .token <<<"$out")
  hdr=$(jwt_part "$t" 0)
  assert_jq "$hdr" '.alg == "RS256" and .typ == "JWT" and (.x5c | length) == 1' "JWT header"
  claims=$(jwt_part "$t" 1)
  assert_jq "$claims" '.iss == "ohbox-test-issuer" and .aud == "ohbox-test-registry" and .sub == ""
    and .exp > .iat and .nbf <= .iat and (.jti | length) > 0
    and .access == [{"type":"repository","name":"public/busybox","actions":["pull"]}]' "JWT claims"
  assert_ok reg_curl TOKEN -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t" \
    -H "Accept: $IMG_OCI_MANIFEST" "$TOKEN_URL/v2/public/busybox/manifests/latest"
  assert_eq 200 "$out" "manifest GET with an anonymous token"

  # anonymous, private repository: a token that grants nothing, refused by the registry
  assert_ok token "" repository:private/busybox:pull
  t=$(jq -r .token <<<"$out")
  assert_jq "$(jwt_part "$t" 1)" '.access == [{"type":"repository","name":"private/busybox","actions":[]}]'
  assert_ok reg_curl TOKEN -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t" \
    -H "Accept: $IMG_OCI_MANIFEST" "$TOKEN_URL/v2/private/busybox/manifests/latest"
  assert_eq 401 "$out" "manifest GET without the pull grant"

  # reader: pull, not push; several scopes in one request
  assert_ok token reader:readerpass repository:private/busybox:pull,push repository:other/x:pull
  t=$(jq -r .token <<<"$out")
  assert_jq "$(jwt_part "$t" 1)" '.sub == "reader" and .access == [
    {"type":"repository","name":"private/busybox","actions":["pull"]},
    {"type":"repository","name":"other/x","actions":["pull"]}]'
  assert_ok reg_curl TOKEN -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t" \
    -H "Accept: $IMG_OCI_MANIFEST" "$TOKEN_URL/v2/private/busybox/manifests/latest"
  assert_eq 200 "$out" "manifest GET as reader"

  # wrong password: 401 from the token server, nothing issued
  assert_ok reg_curl TOKEN -o /dev/null -w '%{http_code}' -u reader:wrong -G "$TOKEN_REALM" \
    --data-urlencode service=ohbox-test-registry --data-urlencode scope=repository:private/busybox:pull
  assert_eq 401 "$out" "token request with a wrong password"

  # OAuth2 password grant (POST)
  assert_ok reg_curl TOKEN -X POST -d grant_type=password -d username=testuser -d password=testpass \
    -d service=ohbox-test-registry -d scope=repository:private/busybox:pull "$TOKEN_REALM"
  assert_jq "$out" '.access_token | length > 0'

  # every request above was logged, with its status
  assert_int -eq $((before + 5)) "$(token_log_count TOKEN)" "token requests logged"
  assert_int -eq 1 "$(token_log_count TOKEN '.status == 401 and .user == "reader"')" "401s logged"
}

test_skopeo_push_inspect ()
{
  # The standard images were pushed to REG by the setup.
  local raw
  reg_skopeo_src_opts REG
  assert_ok skopeo inspect "${REG_SKOPEO_OPTS[@]}" "docker://$REG_HOST/test/busybox:latest"
  assert_jq "$out" ".Digest == \"$IMG_BB_MANIFEST\" and .Architecture == \"amd64\" and .Os == \"linux\"
    and .Layers == [\"$IMG_BB_LAYER1\", \"$IMG_BB_LAYER2\"]" "busybox"
  assert_ok skopeo inspect --raw "${REG_SKOPEO_OPTS[@]}" "docker://$REG_HOST/test/busybox-zstd:latest"
  assert_jq "$out" "[.layers[].mediaType] == [\"$IMG_OCI_LAYER_ZSTD\", \"$IMG_OCI_LAYER_ZSTD\"]" "zstd manifest"
  assert_eq "$IMG_ZSTD_MANIFEST" "$(reg_manifest_digest REG test/busybox-zstd latest)"
  assert_ok skopeo inspect --raw "${REG_SKOPEO_OPTS[@]}" "docker://$REG_HOST/test/multi:latest"
  assert_jq "$out" ".mediaType == \"$IMG_OCI_INDEX\" and [.manifests[] | .platform.architecture + (.platform.variant // \"\")] == [\"amd64\", \"arm64v8\"]
    and [.manifests[].digest] == [\"$IMG_MULTI_AMD64\", \"$IMG_ARM_MANIFEST\"]" "multi-arch index"
  assert_eq "$IMG_MULTI_INDEX" "$(reg_manifest_digest REG test/multi latest)"
  assert_ok skopeo inspect --override-arch arm64 --override-variant v8 "${REG_SKOPEO_OPTS[@]}" \
    "docker://$REG_HOST/test/multi:latest"
  assert_jq "$out" ".Architecture == \"arm64\" and .Layers == [\"$IMG_ARM_LAYER\"]" "arm64 image"
  assert_ok skopeo inspect --raw "${REG_SKOPEO_OPTS[@]}" "docker://$REG_HOST/test/busybox-v2s2:latest"
  assert_jq "$out" '.mediaType == "application/vnd.docker.distribution.manifest.v2+json"' "v2s2 manifest"
  assert_eq "$IMG_V2S2_MANIFEST" "sha256:$(printf '%s' "$out" | sha256sum | cut -d' ' -f1)" "v2s2 digest"

  # one push and inspect per secured mode
  local p
  for p in TLS BASIC TOKEN; do
    assert_ok img_push "$p" "oci:$IMG_BUSYBOX:latest" test/busybox:latest
    reg_skopeo_src_opts "$p"
    assert_ok skopeo inspect "${REG_SKOPEO_OPTS[@]}" "docker://$(_reg_get "$p" HOST)/test/busybox:latest"
    assert_jq "$out" ".Digest == \"$IMG_BB_MANIFEST\"" "busybox via $p"
  done
  # auth is enforced: no credentials, no access
  assert_fails skopeo inspect --cert-dir "$BASIC_CERTDIR" "docker://$BASIC_HOST/test/busybox:latest"
  assert_fails skopeo inspect --cert-dir "$TOKEN_CERTDIR" "docker://$TOKEN_HOST/test/busybox:latest"
  # TLS is enforced: no CA, no access
  assert_fails skopeo inspect "docker://$TLS_HOST/test/busybox:latest"
}

test_images_reproducible ()
{
  mkdir "$T_WORK/again"
  _img_build_all "$T_WORK/again"
  assert_eq "$(cat "$IMG_DIR/meta.env")" "$(cat "$T_WORK/again/meta.env")" "digests of a second build"
  assert_eq "$(cat "$IMG_MULTI/index.json")" "$(cat "$T_WORK/again/multi/index.json")" "multi index.json"
}

test_images_content ()
{
  local layout f hex
  # every blob is named after its sha256
  for layout in "$IMG_BUSYBOX" "$IMG_ZSTD" "$IMG_MULTI" "$IMG_COMBO"; do
    for f in "$layout"/blobs/sha256/*; do
      hex=$(basename "$f")
      assert_eq "$hex" "$(t_sha256 "$f")" "blob $f"
    done
  done
  local l1=$IMG_BUSYBOX/blobs/sha256/${IMG_BB_LAYER1#sha256:}
  local l2=$IMG_BUSYBOX/blobs/sha256/${IMG_BB_LAYER2#sha256:}
  assert_eq "${IMG_BB_DIFF1#sha256:}" "$(gzip -dc "$l1" | sha256sum | cut -d' ' -f1)" "diff id 1"
  assert_eq "${IMG_BB_DIFF2#sha256:}" "$(gzip -dc "$l2" | sha256sum | cut -d' ' -f1)" "diff id 2"
  assert_eq "${IMG_BB_DIFF1#sha256:}" \
    "$(zstd -dc "$IMG_ZSTD/blobs/sha256/${IMG_ZSTD_LAYER1#sha256:}" | sha256sum | cut -d' ' -f1)" "zstd diff id 1"
  assert_eq "$IMG_BB_LAYER1_SIZE" "$(stat -c %s "$l1")" "layer 1 size"
  local list1 list2
  list1=$(tar -tvzf "$l1")
  assert_match "$list1" '^-rwxr-xr-x 0/0 +[0-9]+ 1970-01-01 00:00 bin/busybox$' "layer 1"
  assert_match "$list1" '^lrwxrwxrwx 0/0 +0 1970-01-01 00:00 bin/sh -> busybox$' "layer 1"
  assert_match "$list1" '^drwxrwxrwt 0/0 .* tmp/$' "layer 1"
  assert_match "$list1" '^drwx------ 0/0 .* root/$' "layer 1"
  assert_match "$list1" ' etc/passwd$' "layer 1"
  assert_match "$list1" ' etc/remove-me$' "layer 1"
  assert_no_match "$list1" ' \./' "layer 1 (no ./ entries)"
  assert_int -ge "$(grep -c ' -> busybox$' <<<"$list1")" 100 "applet symlinks"
  list2=$(tar -tzf "$l2")
  assert_eq "$(printf '%s\n' .wh.var etc/ etc/.wh.remove-me etc/layer2 opt/ opt/opaque/ \
    opt/opaque/.wh..wh..opq opt/opaque/new)" "$list2" "layer 2 entries"
  assert_jq "$(cat "$IMG_COMBO/index.json")" \
    "[.manifests[] | .annotations[\"org.opencontainers.image.ref.name\"] + \"=\" + .digest] ==
     [\"gzip=$IMG_BB_MANIFEST\", \"zstd=$IMG_ZSTD_MANIFEST\"]" "combo index.json"
  # skopeo reads every layout
  for layout in busybox:latest busybox-zstd:latest combo:gzip combo:zstd; do
    assert_ok skopeo inspect "oci:$IMG_DIR/$layout"
  done
  assert_ok skopeo inspect --raw "oci:$IMG_MULTI:latest"
  assert_jq "$out" '.manifests | length == 2'
}

test_proxy_passthrough ()
{
  fp_start REG FP
  local hex=${IMG_BB_LAYER1#sha256:} blob=$IMG_BUSYBOX/blobs/sha256/${IMG_BB_LAYER1#sha256:}
  assert_ok skopeo --insecure-policy copy -q --src-tls-verify=false "docker://$FP_HOST/test/busybox:latest" \
    "oci:$T_WORK/copy:latest"
  assert_eq "$IMG_BB_MANIFEST" "$(jq -r '.manifests[0].digest' "$T_WORK/copy/index.json")" "manifest copied through the proxy"
  assert_eq "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/copy/blobs/sha256/${IMG_BB_LAYER1#sha256:}")" "layer copied through the proxy"
  # a Range request goes through: 206 and the right bytes
  assert_ok curl -sS -o "$T_WORK/part" -w '%{http_code}' -r 1000-1999 "$FP_URL/v2/test/busybox/blobs/$IMG_BB_LAYER1"
  assert_eq 206 "$out" "Range status"
  assert_eq "$(dd if="$blob" bs=1000 skip=1 count=1 status=none | sha256sum)" "$(sha256sum <"$T_WORK/part")" "Range bytes"
  assert_int -eq 1 "$(fp_count FP '.range == "bytes=1000-1999" and .status == 206 and .bytes == 1000')" "Range logged"
  # a Range past the end: the registry's 416 comes through (distribution 2.8
  # sends it with a wrong Content-Length, which the proxy must survive)
  assert_ok curl -sS -o /dev/null -w '%{http_code}' -r "$IMG_BB_LAYER1_SIZE-" "$FP_URL/v2/test/busybox/blobs/$IMG_BB_LAYER1"
  assert_eq 416 "$out" "status of a Range past the end"
  assert_int -ge "$(fp_count FP ".method == \"GET\" and (.path | endswith(\"$hex\")) and .status == 200")" 1 "blob GET logged"
  # pushes go through too (upload Locations point back at the proxy)
  assert_ok img_push FP "oci:$IMG_ZSTD:latest" test/through-proxy:latest
  assert_eq "$IMG_ZSTD_MANIFEST" "$(reg_manifest_digest REG test/through-proxy latest)"
  assert_int -ge "$(fp_count FP '.method == "PUT" and (.path | contains("/manifests/latest"))')" 1 "manifest PUT logged"
}

blob_url ()
{
  echo "$FP_URL/v2/test/busybox/blobs/$IMG_BB_LAYER1"
}

test_proxy_drop ()
{
  fp_start REG FP
  fp_set FP '{"drop_after": 100000}'
  assert_exit 18 curl -sS -o "$T_WORK/b" "$(blob_url)"
  assert_eq 100000 "$(stat -c %s "$T_WORK/b")" "bytes before the drop"
  # the client resumes with Range: only the first response is cut
  assert_ok curl -sS -C - -o "$T_WORK/b" "$(blob_url)"
  assert_eq "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/b")" "resumed blob"
  assert_int -eq 1 "$(fp_count FP '.fault == "drop" and .bytes == 100000')" "drop logged"
  assert_int -eq 1 "$(fp_count FP '.range == "bytes=100000-" and .status == 206')" "resume logged"
}

test_proxy_status ()
{
  fp_start REG FP
  local code
  for code in 429 503; do
    fp_set FP "{\"status_$code\": 2}"
    assert_ok curl -sS -i -o /dev/null -w '%{http_code}\n%header{retry-after}' "$(blob_url)"
    assert_eq "$(printf '%s\n1' "$code")" "$out" "first answer"
    assert_ok curl -sS -o /dev/null -w '%{http_code}' "$(blob_url)"
    assert_eq "$code" "$out" "second answer"
    assert_ok curl -sS -o "$T_WORK/b" -w '%{http_code}' "$(blob_url)"
    assert_eq 200 "$out" "third answer"
    assert_eq "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/b")" "blob after $code"
    # manifests are not matched by the default pattern
    assert_ok curl -sS -o /dev/null -w '%{http_code}' -H "Accept: $IMG_OCI_MANIFEST" \
      "$FP_URL/v2/test/busybox/manifests/latest"
    assert_eq 200 "$out" "manifest during $code faults"
  done
  assert_int -eq 2 "$(fp_count FP '.status == 429')" "429s logged"
  assert_int -eq 2 "$(fp_count FP '.status == 503')" "503s logged"
  # a pattern: fault the manifest instead
  fp_set FP '{"status_503": 1, "match": "/manifests/"}'
  assert_ok curl -sS -o /dev/null -w '%{http_code}' "$FP_URL/v2/test/busybox/manifests/latest"
  assert_eq 503 "$out" "manifest with match"
}

test_proxy_corrupt ()
{
  fp_start REG FP
  fp_set FP '{"corrupt": -1}'
  local i
  for i in 1 2; do
    assert_ok curl -sS -o "$T_WORK/b" "$(blob_url)"
    assert_eq "$IMG_BB_LAYER1_SIZE" "$(stat -c %s "$T_WORK/b")" "corrupted size"
    assert_ne "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/b")" "corrupted digest"
    assert_eq 1 "$(cmp -l "$T_WORK/b" "$IMG_BUSYBOX/blobs/sha256/${IMG_BB_LAYER1#sha256:}" | wc -l)" "bytes changed"
  done
  fp_set FP '{}'
  assert_ok curl -sS -o "$T_WORK/b" "$(blob_url)"
  assert_eq "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/b")" "after clearing"
}

test_proxy_bad_length ()
{
  fp_start REG FP
  fp_set FP '{"bad_length": "long"}'
  assert_exit 18 curl -sS -o "$T_WORK/b" "$(blob_url)"
  assert_eq "$IMG_BB_LAYER1_SIZE" "$(stat -c %s "$T_WORK/b")" "body before the close"
  fp_set FP '{"bad_length": "short"}'
  assert_ok curl -sS -o "$T_WORK/b" "$(blob_url)"
  assert_eq $((IMG_BB_LAYER1_SIZE - 1)) "$(stat -c %s "$T_WORK/b")" "short body"
  assert_ok curl -sS -o "$T_WORK/b" "$(blob_url)"
  assert_eq "$IMG_BB_LAYER1_SIZE" "$(stat -c %s "$T_WORK/b")" "count 1: the next answer is right"
}

test_proxy_rate ()
{
  fp_start REG FP
  fp_set FP '{"rate": 1000000}'
  local start end
  start=$(date +%s%N)
  assert_ok curl -sS -o "$T_WORK/b" "$(blob_url)"
  end=$(date +%s%N)
  assert_eq "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/b")" "slow blob"
  # ~1 MB at 1 MB/s
  assert_int -ge $(((end - start) / 1000000)) 900 "milliseconds for a slowed ~1 MB blob"
  assert_int -le $(((end - start) / 1000000)) 10000 "milliseconds for a slowed ~1 MB blob"
}

test_proxy_tls_upstream ()
{
  img_push TLS "oci:$IMG_BUSYBOX:latest" test/busybox:latest
  fp_start TLS FPT
  assert_ok curl -sS -o "$T_WORK/b" -w '%{http_code}' "$FPT_URL/v2/test/busybox/blobs/$IMG_BB_LAYER1"
  assert_eq 200 "$out" "blob through a proxy in front of TLS"
  assert_eq "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$T_WORK/b")"
}

# The runner helpers: a script with a passing, a failing, a skipping and an
# erroring test, which starts a registry and a background process; its
# result lines and reasons must be right, and nothing may outlive it.
test_runner_helpers ()
{
  cat >"$T_WORK/inner.sh" <<'EOF'
. "$OHBOX_SRCDIR/tests/lib/common.sh"
. "$T_LIB/registry.sh"
reg_start http REG || exit 1
echo "registry-pid $REG_PID"
echo "tmp-dir $T_TMP"
t_ok () { assert_eq a a; }
t_bad () { assert_eq expected actual "the thing"; echo "not" "reached"; }
t_err () { false; echo "not" "reached"; }
t_skipped () { skip "no reason at all"; }
t_bg () { t_start "$T_WORK/sleep.log" sleep 300; echo "$T_PID" >"$OHBOX_TEST_WORK/bg.pid"; }
t_slow () { sleep 30 & echo "$!" >"$OHBOX_TEST_WORK/slow.pid"; wait; }
run_test ok t_ok
run_test bad t_bad
run_test err t_err
run_test skipped t_skipped
run_test bg t_bg
T_TEST_TIMEOUT=1 run_test slow t_slow
EOF
  t_run env -u OHBOX_TEST_ONLY -u OHBOX_TEST_KEEP OHBOX_TEST_WORK="$T_WORK/work" bash "$T_WORK/inner.sh"
  assert_eq 1 "$rc" "exit status of a script with failures"
  assert_match "$out" '^PASS: inner/ok$'
  assert_match "$out" '^FAIL: inner/bad: the thing: expected "expected", got "actual" \(at inner.sh:[0-9]+\)$'
  assert_match "$out" '^FAIL: inner/err: inner.sh:[0-9]+: `false` exited with status 1$'
  assert_match "$out" '^SKIP: inner/skipped: no reason at all$'
  assert_match "$out" '^PASS: inner/bg$'
  assert_match "$out" '^FAIL: inner/slow: timed out after 1 s$'
  assert_no_match "$out" 'not reached'
  assert_match "$out" '^# inner: 2 passed, 3 failed, 1 skipped$'
  local pid tmp
  pid=$(sed -n 's/^registry-pid //p' <<<"$out")
  tmp=$(sed -n 's/^tmp-dir //p' <<<"$out")
  assert_ne "" "$pid" "registry pid"
  assert_gone "$pid" "the inner registry"
  assert_file_absent "$tmp" "the inner temp dir"
  pid=$(cat "$T_WORK/work/bg.pid")
  assert_gone "$pid" "the process a passing test started"
  pid=$(cat "$T_WORK/work/slow.pid")
  assert_gone "$pid" "the process of a test that timed out"
  assert_eq "" "$(ls "$T_WORK/work/tmp")" "leftovers in the inner work dir"
}

test_free_port ()
{
  local p
  p=$(t_free_port)
  assert_int -ge "$p" 1024 "port"
  assert_fails t_wait_port "$p" 1
  t_start "$T_WORK/http.log" "$T_PY" -m http.server --bind 127.0.0.1 "$p"
  assert_ok t_wait_port "$p" 5
}

# A condition given to t_wait_until is retried, but its arguments are expanded
# once, when t_wait_until is called: `t_wait_until 5 test "$(cat F)" = 1`
# compares the same text 100 times. Such a wait must read through a function
# (or sh -c with the substitution escaped).
test_wait_conditions_retried ()
{
  local frozen
  frozen=$(grep -nE '^[^#]*t_wait_until +[0-9]+ +(test|\[|!) [^#|;&]*\$\(' \
    "$OHBOX_SRCDIR"/tests/integration/*.sh "$OHBOX_SRCDIR"/tests/lib/*.sh || true)
  assert_eq "" "$frozen" "waits whose condition is expanded once"
}

# Other tests make and remove cgroups all the time: a find(1) over
# /sys/fs/cgroup that meets a directory removed under it exits 1, which
# must not end the test that ran it (an assignment from it under set -e).
test_cgroup_finds_tolerate_removals ()
{
  local fragile
  fragile=$(grep -nE '[A-Za-z_]=\$\(\{? *find /sys/fs/cgroup' "$OHBOX_SRCDIR"/tests/integration/*.sh \
    "$OHBOX_SRCDIR"/tests/lib/*.sh | grep -v -e '|| true' || true)
  assert_eq "" "$fragile" "assignments from a find over /sys/fs/cgroup that fail when a cgroup goes"
}

run_test http_v2 test_http_v2
run_test tls_v2 test_tls_v2
run_test basic_v2 test_basic_v2
run_test token_challenge test_token_challenge
run_test token_flow test_token_flow
run_test skopeo_push_inspect test_skopeo_push_inspect
run_test images_reproducible test_images_reproducible
run_test images_content test_images_content
run_test proxy_passthrough test_proxy_passthrough
run_test proxy_drop test_proxy_drop
run_test proxy_status test_proxy_status
run_test proxy_corrupt test_proxy_corrupt
run_test proxy_bad_length test_proxy_bad_length
run_test proxy_rate test_proxy_rate
run_test proxy_tls_upstream test_proxy_tls_upstream
run_test runner_helpers test_runner_helpers
run_test free_port test_free_port
run_test wait_conditions_retried test_wait_conditions_retried
run_test cgroup_finds_tolerate_removals test_cgroup_finds_tolerate_removals
