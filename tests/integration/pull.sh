#!/bin/bash
# pull.sh: `ohbox pull` from real registries on loopback: plain HTTP and TLS,
# output formats, platforms and indexes, zstd and Docker schema 2 images,
# pulls by digest, errors, and what lands in the store (blobs and unpacked
# layers with their whiteouts). Auth: pull-auth.sh; faults: pull-faults.sh.
. "$(dirname "$0")/../lib/common.sh"
setup_registries ()
{
  reg_start http REG || return 1
  reg_start tls TLS || return 1
  img_push_standard REG test || return 1
  img_push TLS "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
}
. "$T_LIB/registries.sh"

BB=$REG_HOST/test/busybox:latest

test_http ()
{
  assert_ok ohbox pull --tls-verify=false "$BB"
  assert_match "$out" "^pulling $BB\$" "output"
  assert_match "$out" "^layer sha256:$(short_hex "$IMG_BB_LAYER1") downloaded" "output"
  assert_match "$out" "^layer sha256:$(short_hex "$IMG_BB_LAYER2") downloaded" "output"
  assert_match "$out" "^pulled $BB $IMG_BB_MANIFEST linux/amd64\$" "output"
  assert_blob_present "$IMG_BB_MANIFEST" manifest
  assert_blob_present "$IMG_BB_CONFIG" config
  assert_blob_present "$IMG_BB_LAYER1" "layer 1"
  assert_blob_present "$IMG_BB_LAYER2" "layer 2"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_layer_present "$IMG_BB_DIFF2"
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out" "images -q"
}

test_http_needs_tls_verify_false ()
{
  # TLS is verified by default: a plain HTTP registry is refused.
  assert_exit 5 ohbox pull "$BB"
  assert_contains "$err" "$REG_HOST" "error message"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
}

test_tls_cert_dir ()
{
  assert_ok ohbox pull --cert-dir "$TLS_CERTDIR" "$TLS_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $TLS_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  assert_store_blobs_valid
}

test_tls_certs_d_dir ()
{
  # A certs.d/HOST:PORT directory as containers-certs.d(5) has it: every
  # *.crt is a CA; the right one need not be called ca.crt nor come first.
  local d=$T_WORK/certs.d/$TLS_HOST
  mkdir -p "$d"
  reg_other_ca "$T_WORK/other"
  cp "$T_WORK/other/ca.crt" "$d/aa-unrelated.crt"
  cp "$TLS_CA" "$d/zz-test-ca.crt"
  echo "not a key" >"$d/README"
  assert_ok ohbox pull --cert-dir "$d" "$TLS_HOST/test/busybox:latest"
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out"
}

test_tls_no_ca ()
{
  assert_exit 5 ohbox pull "$TLS_HOST/test/busybox:latest"
  assert_match "$err" '[Tt][Ll][Ss]|SSL|[Cc]ertificate' "error message"
  assert_contains "$err" "$TLS_HOST" "error message"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
}

test_tls_wrong_ca ()
{
  reg_other_ca "$T_WORK/other"
  assert_exit 5 ohbox pull --cert-dir "$T_WORK/other" "$TLS_HOST/test/busybox:latest"
  assert_match "$err" '[Tt][Ll][Ss]|SSL|[Cc]ertificate' "error message"
}

test_tls_verify_false ()
{
  # --tls-verify=false also accepts an unverified TLS server.
  assert_ok ohbox pull --tls-verify=false "$TLS_HOST/test/busybox:latest"
  assert_match "$out" "^pulled $TLS_HOST/test/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
}

test_quiet ()
{
  assert_ok ohbox pull -q --tls-verify=false "$BB"
  assert_eq "$IMG_BB_MANIFEST" "$out" "stdout of pull -q"
}

test_format_json ()
{
  assert_ok ohbox pull --format json --tls-verify=false "$BB"
  assert_jq "$out" "type == \"object\" and .image == \"$BB\" and .id == \"$IMG_BB_MANIFEST\"
    and .digest == \"$IMG_BB_MANIFEST\" and .index_digest == null and .platform == \"linux/amd64\"
    and .layers == 2 and .blobs_downloaded >= 2 and .blobs_reused == 0
    and .bytes_downloaded >= $((IMG_BB_LAYER1_SIZE + IMG_BB_LAYER2_SIZE))" "pull --format json"
  # again: everything is there already
  assert_ok ohbox pull --format json --tls-verify=false "$BB"
  assert_jq "$out" ".id == \"$IMG_BB_MANIFEST\" and .blobs_downloaded == 0 and .blobs_reused >= 2
    and .bytes_downloaded < $IMG_BB_LAYER1_SIZE" "second pull --format json"
}

test_second_pull_reuses ()
{
  assert_ok ohbox pull --tls-verify=false "$BB"
  assert_ok ohbox pull --tls-verify=false "$BB"
  assert_match "$out" "^layer sha256:$(short_hex "$IMG_BB_LAYER1") already present" "second pull"
  assert_no_match "$out" "downloaded" "second pull"
  assert_match "$out" "^pulled $BB $IMG_BB_MANIFEST linux/amd64\$" "second pull"
}

test_default_tag ()
{
  assert_ok ohbox pull --tls-verify=false "$REG_HOST/test/busybox"
  assert_match "$out" "^pulled $BB $IMG_BB_MANIFEST linux/amd64\$" "name normalised with :latest"
  assert_ok ohbox images --format json
  assert_jq "$out" "[.[].names[]] == [\"$BB\"]" "stored names"
}

test_multiarch_default ()
{
  assert_ok ohbox pull --format json --tls-verify=false "$REG_HOST/test/multi:latest"
  assert_jq "$out" ".id == \"$IMG_MULTI_AMD64\" and .index_digest == \"$IMG_MULTI_INDEX\"
    and .platform == \"linux/amd64\" and .layers == 2" "pull of an index, host platform"
  assert_blob_present "$IMG_MULTI_AMD64"
  assert_blob_absent "$IMG_ARM_MANIFEST" "the arm64 manifest"
  assert_blob_absent "$IMG_ARM_LAYER" "the arm64 layer"
  assert_ok ohbox inspect "$REG_HOST/test/multi:latest"
  assert_jq "$out" ".Id == \"$IMG_MULTI_AMD64\" and .IndexDigest == \"$IMG_MULTI_INDEX\" and .Architecture == \"amd64\""
}

test_multiarch_arm64 ()
{
  assert_ok ohbox pull --platform linux/arm64/v8 --tls-verify=false "$REG_HOST/test/multi:latest"
  assert_match "$out" "^pulled $REG_HOST/test/multi:latest $IMG_ARM_MANIFEST linux/arm64/v8\$"
  assert_blob_present "$IMG_ARM_LAYER" "the arm64 layer"
  assert_blob_absent "$IMG_BB_LAYER1" "the amd64 layer"
  assert_eq arm64 "$(cat "$(t_layer_path "$IMG_ARM_DIFF")/etc/arch")" "/etc/arch in the arm64 layer"
  assert_ok ohbox inspect "$REG_HOST/test/multi:latest"
  assert_jq "$out" ".Id == \"$IMG_ARM_MANIFEST\" and .Os == \"linux\" and .Architecture == \"arm64\"
    and .Variant == \"v8\" and .IndexDigest == \"$IMG_MULTI_INDEX\""
}

test_platform_missing ()
{
  assert_exit 8 ohbox pull --platform linux/s390x --tls-verify=false "$REG_HOST/test/multi:latest"
  assert_contains "$err" "linux/s390x" "error message"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed pull"
}

test_zstd ()
{
  assert_ok ohbox pull --tls-verify=false "$REG_HOST/test/busybox-zstd:latest"
  assert_match "$out" "^pulled $REG_HOST/test/busybox-zstd:latest $IMG_ZSTD_MANIFEST linux/amd64\$"
  assert_blob_present "$IMG_ZSTD_LAYER1"
  assert_blob_present "$IMG_ZSTD_LAYER2"
  # unpacked layers are keyed by DiffID: the same as the gzip image's
  assert_layer_present "$IMG_BB_DIFF1"
  assert_layer_present "$IMG_BB_DIFF2"
  assert_file_exists "$(t_layer_path "$IMG_BB_DIFF1")/bin/busybox"
  assert_ok ohbox inspect "$REG_HOST/test/busybox-zstd:latest"
  assert_jq "$out" "[.Layers[].MediaType] == [\"$IMG_OCI_LAYER_ZSTD\", \"$IMG_OCI_LAYER_ZSTD\"]
    and .RootFS.Layers == [\"$IMG_BB_DIFF1\", \"$IMG_BB_DIFF2\"]"
}

test_docker_schema2 ()
{
  assert_ok ohbox pull --tls-verify=false "$REG_HOST/test/busybox-v2s2:latest"
  assert_match "$out" "^pulled $REG_HOST/test/busybox-v2s2:latest $IMG_V2S2_MANIFEST linux/amd64\$"
  assert_blob_present "$IMG_V2S2_MANIFEST"
  assert_layer_present "$IMG_BB_DIFF1"
  assert_ok ohbox inspect "$REG_HOST/test/busybox-v2s2:latest"
  assert_jq "$out" '.ManifestMediaType == "application/vnd.docker.distribution.manifest.v2+json"
    and [.Layers[].MediaType] == ["application/vnd.docker.image.rootfs.diff.tar.gzip",
                                  "application/vnd.docker.image.rootfs.diff.tar.gzip"]'
}

test_by_digest ()
{
  local ref=$REG_HOST/test/busybox@$IMG_BB_MANIFEST
  assert_ok ohbox pull --tls-verify=false "$ref"
  assert_match "$out" "^pulled $ref $IMG_BB_MANIFEST linux/amd64\$"
  assert_ok ohbox images --format json
  assert_jq "$out" "length == 1 and .[0].id == \"$IMG_BB_MANIFEST\" and (.[0].names | index(\"$ref\") != null)"
  # a digest of an index selects the platform, like a tag does
  assert_ok ohbox pull -q --tls-verify=false "$REG_HOST/test/multi@$IMG_MULTI_INDEX"
  assert_eq "$IMG_MULTI_AMD64" "$out" "pull of an index by digest"
}

test_unknown_digest ()
{
  assert_exit 3 ohbox pull --tls-verify=false "$REG_HOST/test/busybox@sha256:$(printf 'nothing' | sha256sum | cut -d' ' -f1)"
}

test_unknown_tag ()
{
  assert_exit 3 ohbox pull --tls-verify=false "$REG_HOST/test/busybox:no-such-tag"
  assert_contains "$err" "test/busybox" "error message"
  assert_contains "$err" "no-such-tag" "error message"
  assert_exit 3 ohbox pull --tls-verify=false "$REG_HOST/test/no-such-repo:latest"
  assert_contains "$err" "no-such-repo" "error message"
}

test_usage_errors ()
{
  assert_exit 2 ohbox pull
  assert_exit 2 ohbox pull --tls-verify=false "$REG_HOST/Test/UPPER:latest"
  assert_exit 2 ohbox pull --tls-verify=false "$REG_HOST/test/busybox:bad:tag"
  assert_exit 2 ohbox pull --no-such-option "$BB"
  # The pull's limits: a wrong value is a usage error naming the option.
  assert_exit 2 ohbox pull --max-layer-size 1Q "$BB"
  assert_contains "$err" "ohbox pull: --max-layer-size takes a size in bytes (suffixes K, M, G, T), not \`1Q\`"
  assert_contains "$err" "Run 'ohbox pull --help' for usage."
  assert_exit 2 ohbox pull --timeout 1x "$BB"
  assert_contains "$err" "ohbox pull: --timeout takes a duration (30s, 10m, 1h) or 0 for none, not \`1x\`"
  assert_exit 2 ohbox pull --platform nonsense --tls-verify=false "$BB"
}

test_connection_refused ()
{
  local port
  port=$(t_free_port)
  assert_exit 5 ohbox pull --tls-verify=false "127.0.0.1:$port/test/busybox:latest"
  assert_contains "$err" "127.0.0.1:$port" "error message"
}

test_layer_contents ()
{
  assert_ok ohbox pull --tls-verify=false "$BB"
  local l1 l2 src=$IMG_DIR/rootfs-layer1
  l1=$(t_layer_path "$IMG_BB_DIFF1")
  l2=$(t_layer_path "$IMG_BB_DIFF2")
  # layer 1: the busybox tree, with modes and owners from the tar
  assert_eq "$(t_sha256 "$src/bin/busybox")" "$(t_sha256 "$l1/bin/busybox")" "bin/busybox"
  assert_eq "755 0:0 regular file" "$(stat -c '%a %u:%g %F' "$l1/bin/busybox")" "bin/busybox"
  assert_eq busybox "$(readlink "$l1/bin/sh")" "bin/sh"
  assert_eq "1777 directory" "$(stat -c '%a %F' "$l1/tmp")" "tmp"
  assert_eq "700" "$(stat -c '%a' "$l1/root")" "root"
  assert_eq "$(cat "$src/etc/passwd")" "$(cat "$l1/etc/passwd")" "etc/passwd"
  assert_eq "$(cd "$src" && find . | sort)" "$(cd "$l1" && find . | sort)" "the entries of layer 1"
  # layer 2: whiteouts as 0:0 character devices owned by 0:0, the opaque
  # marker as an xattr, no .wh. file left
  assert_eq "character special file 0:0 0:0" "$(stat -c '%F %t:%T %u:%g' "$l2/etc/remove-me")" "whiteout etc/remove-me"
  assert_eq "character special file 0:0 0:0" "$(stat -c '%F %t:%T %u:%g' "$l2/var")" "whiteout of the directory var"
  assert_eq "y" "$("$T_PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "trusted.overlay.opaque").decode())' \
    "$l2/opt/opaque")" "opaque xattr on opt/opaque"
  assert_eq "new in layer 2" "$(cat "$l2/opt/opaque/new")" "opt/opaque/new"
  assert_eq "layer 2" "$(cat "$l2/etc/layer2")" "etc/layer2"
  assert_eq "" "$(find "$l1" "$l2" -name '.wh.*')" ".wh. files in unpacked layers"
  assert_file_absent "$l2/opt/opaque/old-a" "a file of layer 1 in layer 2's dir"
}

test_max_layer_size ()
{
  assert_exit 6 ohbox pull --max-layer-size 100000 --tls-verify=false "$BB"
  assert_contains "$err" "exceeds" "error message"
  assert_layer_absent "$IMG_BB_DIFF1" "the layer that is too large"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed pull"
  # a bound above the layer's size is fine
  assert_ok ohbox pull --max-layer-size 100000000 --tls-verify=false "$BB"
}

test_parallel_one ()
{
  assert_ok ohbox pull --parallel 1 --tls-verify=false "$REG_HOST/test/busybox-zstd:latest"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_layer_present "$IMG_BB_DIFF2"
}

run_test http test_http
run_test http_needs_tls_verify_false test_http_needs_tls_verify_false
run_test tls_cert_dir test_tls_cert_dir
run_test tls_certs_d_dir test_tls_certs_d_dir
run_test tls_no_ca test_tls_no_ca
run_test tls_wrong_ca test_tls_wrong_ca
run_test tls_verify_false test_tls_verify_false
run_test quiet test_quiet
run_test format_json test_format_json
run_test second_pull_reuses test_second_pull_reuses
run_test default_tag test_default_tag
run_test multiarch_default test_multiarch_default
run_test multiarch_arm64 test_multiarch_arm64
run_test platform_missing test_platform_missing
run_test zstd test_zstd
run_test docker_schema2 test_docker_schema2
run_test by_digest test_by_digest
run_test unknown_digest test_unknown_digest
run_test unknown_tag test_unknown_tag
run_test usage_errors test_usage_errors
run_test connection_refused test_connection_refused
run_test layer_contents test_layer_contents
run_test max_layer_size test_max_layer_size
run_test parallel_one test_parallel_one
