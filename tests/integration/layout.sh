#!/bin/bash
# layout.sh: `ohbox save` and `ohbox load` of OCI image layouts, checked
# against skopeo (which must read what ohbox writes) and against layouts
# built by tests/lib/images.sh (which ohbox must import, verifying digests).
. "$(dirname "$0")/../lib/common.sh"
setup_more ()
{
  img_push REG "oci:$IMG_ZSTD:latest" test/busybox-zstd:latest
}
. "$T_LIB/registries.sh"

BB=$REG_HOST/test/busybox:latest

# assert_layout_valid DIR: oci-layout present, every blob hashes to its name.
assert_layout_valid ()
{
  local f
  assert_jq "$(cat "$1/oci-layout")" '.imageLayoutVersion == "1.0.0"' "oci-layout of $1"
  for f in "$1"/blobs/sha256/*; do
    assert_eq "$(basename "$f")" "$(t_sha256 "$f")" "blob $f of the saved layout"
  done
}

test_save_skopeo ()
{
  assert_ok ohbox pull -q --tls-verify=false "$BB"
  assert_ok ohbox save "$BB" "oci:$T_WORK/out:v1"
  assert_layout_valid "$T_WORK/out"
  assert_ok skopeo inspect "oci:$T_WORK/out:v1"
  assert_jq "$out" ".Digest == \"$IMG_BB_MANIFEST\" and .Layers == [\"$IMG_BB_LAYER1\", \"$IMG_BB_LAYER2\"]
    and .Architecture == \"amd64\"" "skopeo inspect of the saved layout"
  # skopeo copies it elsewhere: to a registry, and to a directory
  assert_ok skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$T_WORK/out:v1" \
    "docker://$REG_HOST/test/saved:v1"
  assert_eq "$IMG_BB_MANIFEST" "$(reg_manifest_digest REG test/saved v1)" "manifest after a skopeo copy"
  assert_ok skopeo --insecure-policy copy -q "oci:$T_WORK/out:v1" "dir:$T_WORK/dir"
  assert_file_exists "$T_WORK/dir/${IMG_BB_LAYER1#sha256:}"
}

test_save_podman ()
{
  # podman reads what ohbox writes: it pulls the layout into a store of this
  # test's own (vfs: no mounts to leave behind) and keeps the same digests.
  # podman refuses a runroot path longer than 50 characters, and names the
  # image after the layout's path, which must then be lowercase.
  local run=/tmp/ohbox-pm-$BASHPID-$RANDOM
  mkdir -p "$run/run"
  assert_ok ohbox pull -q --tls-verify=false "$BB"
  assert_ok ohbox save "$BB" "oci:$run/out:v1"
  local pm=(podman --root "$T_WORK/podman" --runroot "$run/run" --storage-driver vfs)
  local id view
  id=$("${pm[@]}" pull -q "oci:$run/out:v1" 2>"$T_WORK/podman.err") || id=
  view=$([ -n "$id" ] && "${pm[@]}" image inspect --format '{{.Digest}} {{.Architecture}} {{len .RootFS.Layers}}' \
    "$id" 2>>"$T_WORK/podman.err") || view=
  "${pm[@]}" rmi -af >/dev/null 2>&1 || true
  rm -rf "$run"
  assert_eq "$IMG_BB_MANIFEST amd64 2" "$view" "podman's view of the saved image ($(tr '\n' ' ' <"$T_WORK/podman.err"))"
}

test_save_default_tag ()
{
  assert_ok ohbox pull -q --tls-verify=false "$BB"
  assert_ok ohbox save "$BB" "oci:$T_WORK/out"
  assert_jq "$(cat "$T_WORK/out/index.json")" \
    "[.manifests[] | select(.annotations[\"org.opencontainers.image.ref.name\"] == \"latest\") | .digest] == [\"$IMG_BB_MANIFEST\"]" \
    "index.json of the saved layout"
  assert_ok skopeo inspect "oci:$T_WORK/out:latest"
}

test_save_by_id_zstd ()
{
  assert_ok ohbox pull -q --tls-verify=false "$REG_HOST/test/busybox-zstd:latest"
  assert_ok ohbox save "$IMG_ZSTD_MANIFEST" "oci:$T_WORK/out:z"
  assert_layout_valid "$T_WORK/out"
  assert_ok skopeo inspect --raw "oci:$T_WORK/out:z"
  assert_jq "$out" "[.layers[].mediaType] == [\"$IMG_OCI_LAYER_ZSTD\", \"$IMG_OCI_LAYER_ZSTD\"]"
}

test_save_two_tags_one_layout ()
{
  # saving into an existing layout adds a tag and keeps the other
  assert_ok ohbox pull -q --tls-verify=false "$BB"
  assert_ok ohbox pull -q --tls-verify=false "$REG_HOST/test/busybox-zstd:latest"
  assert_ok ohbox save "$BB" "oci:$T_WORK/out:gzip"
  assert_ok ohbox save "$REG_HOST/test/busybox-zstd:latest" "oci:$T_WORK/out:zstd"
  assert_ok skopeo inspect "oci:$T_WORK/out:gzip"
  assert_jq "$out" ".Digest == \"$IMG_BB_MANIFEST\""
  assert_ok skopeo inspect "oci:$T_WORK/out:zstd"
  assert_jq "$out" ".Digest == \"$IMG_ZSTD_MANIFEST\""
}

test_save_unknown ()
{
  assert_exit 3 ohbox save "$REG_HOST/test/nothing:latest" "oci:$T_WORK/out:x"
  assert_file_absent "$T_WORK/out/index.json"
}

test_load ()
{
  assert_ok ohbox load "oci:$IMG_BUSYBOX:latest"
  assert_ok ohbox images --format json
  assert_jq "$out" "length == 1 and .[0].id == \"$IMG_BB_MANIFEST\" and .[0].names == [\"localhost/busybox:latest\"]"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_layer_present "$IMG_BB_DIFF2"
  assert_eq "character special file 0:0" "$(stat -c '%F %t:%T' "$(t_layer_path "$IMG_BB_DIFF2")/etc/remove-me")" \
    "whiteout in a loaded layer"
  assert_ok ohbox inspect localhost/busybox:latest
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\" and .RootFS.Layers == [\"$IMG_BB_DIFF1\", \"$IMG_BB_DIFF2\"]"
}

test_load_only_manifest ()
{
  # no tag: the layout's only manifest
  assert_ok ohbox load "oci:$IMG_ZSTD"
  assert_ok ohbox images --format json
  assert_jq "$out" ".[0].id == \"$IMG_ZSTD_MANIFEST\" and .[0].names == [\"localhost/busybox-zstd:latest\"]"
}

test_load_with_name ()
{
  assert_ok ohbox load "oci:$IMG_BUSYBOX:latest" localhost/mybox:1
  assert_ok ohbox inspect localhost/mybox:1
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\" and .RepoTags == [\"localhost/mybox:1\"]"
}

test_load_tag_choice ()
{
  assert_ok ohbox load "oci:$IMG_COMBO:zstd"
  assert_ok ohbox load "oci:$IMG_COMBO:gzip"
  assert_ok ohbox inspect localhost/combo:zstd
  assert_jq "$out" ".Id == \"$IMG_ZSTD_MANIFEST\""
  assert_ok ohbox inspect localhost/combo:gzip
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\""
  assert_store_blobs_valid
}

test_load_ambiguous ()
{
  # two manifests and no tag: refused, nothing stored
  assert_fails ohbox load "oci:$IMG_COMBO"
  assert_ok ohbox images -q
  assert_eq "" "$out"
}

test_load_unknown_tag ()
{
  assert_exit 3 ohbox load "oci:$IMG_BUSYBOX:no-such-tag"
  assert_contains "$err" "no-such-tag" "error message"
  assert_fails ohbox load "oci:$T_WORK/no-such-dir:latest"
}

test_load_corrupt ()
{
  cp -a "$IMG_BUSYBOX" "$T_WORK/bad"
  local blob=$T_WORK/bad/blobs/sha256/${IMG_BB_LAYER1#sha256:}
  t_flip_byte "$blob" $((IMG_BB_LAYER1_SIZE / 2))
  assert_ne "${IMG_BB_LAYER1#sha256:}" "$(t_sha256 "$blob")" "the corrupted blob"
  assert_exit 6 ohbox load "oci:$T_WORK/bad:latest"
  assert_contains "$err" "$(short_hex "$IMG_BB_LAYER1")" "error message naming the digest"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed load"
}

test_save_load_roundtrip ()
{
  assert_ok ohbox pull -q --tls-verify=false "$BB"
  assert_ok ohbox save "$BB" "oci:$T_WORK/out:latest"
  assert_ok ohbox rmi "$BB"
  assert_eq "" "$(store_blob_files)" "blobs after rmi"
  assert_ok ohbox load "oci:$T_WORK/out:latest" "$BB"
  assert_ok ohbox inspect "$BB"
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\" and .Layers[0].Digest == \"$IMG_BB_LAYER1\""
  assert_layer_present "$IMG_BB_DIFF1"
  assert_store_blobs_valid
}

test_usage ()
{
  assert_exit 2 ohbox save "$BB"
  assert_exit 2 ohbox save "$BB" "docker-archive:$T_WORK/x.tar"
  assert_exit 2 ohbox load
  assert_exit 2 ohbox load "dir:$T_WORK/x"
}

run_test save_skopeo test_save_skopeo
run_test save_podman test_save_podman
run_test save_default_tag test_save_default_tag
run_test save_by_id_zstd test_save_by_id_zstd
run_test save_two_tags_one_layout test_save_two_tags_one_layout
run_test save_unknown test_save_unknown
run_test load test_load
run_test load_only_manifest test_load_only_manifest
run_test load_with_name test_load_with_name
run_test load_tag_choice test_load_tag_choice
run_test load_ambiguous test_load_ambiguous
run_test load_unknown_tag test_load_unknown_tag
run_test load_corrupt test_load_corrupt
run_test save_load_roundtrip test_save_load_roundtrip
run_test usage test_usage
