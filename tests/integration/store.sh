#!/bin/bash
# store.sh: the local store after pulls: `ohbox images` (table, json, -q,
# --digests), `ohbox inspect` (by name, id, id prefix), `ohbox rmi` (names,
# ids, shared blobs and layers) and `ohbox prune` (untagged images,
# unreferenced blobs, partial files).
. "$(dirname "$0")/../lib/common.sh"
setup_registries ()
{
  reg_start http REG || return 1
  img_push_standard REG test || return 1
}
. "$T_LIB/registries.sh"

BB=$REG_HOST/test/busybox:latest
ZS=$REG_HOST/test/busybox-zstd:latest
MULTI=$REG_HOST/test/multi:latest

pull ()
{
  ohbox pull -q --tls-verify=false "$@"
}

test_images_table ()
{
  assert_ok pull "$BB"
  assert_ok pull "$ZS"
  assert_ok ohbox images
  assert_match "$out" '^REPOSITORY +TAG +IMAGE ID +CREATED +SIZE' "header"
  assert_match "$out" "^$REG_HOST/test/busybox +latest +$(short_hex "$IMG_BB_MANIFEST") " "busybox row"
  assert_match "$out" "^$REG_HOST/test/busybox-zstd +latest +$(short_hex "$IMG_ZSTD_MANIFEST") " "zstd row"
  assert_eq 3 "$(printf '%s\n' "$out" | wc -l)" "lines"
  assert_ok ohbox images --digests
  assert_match "$out" 'DIGEST' "header with --digests"
  assert_contains "$out" "$IMG_BB_MANIFEST" "--digests"
}

test_images_json ()
{
  assert_ok pull "$BB"
  assert_ok pull "$REG_HOST/test/busybox@$IMG_BB_MANIFEST"
  assert_ok ohbox images --format json
  assert_jq "$out" "type == \"array\" and length == 1" "images json"
  assert_jq "$out" ".[0] | .id == \"$IMG_BB_MANIFEST\" and .config_digest == \"$IMG_BB_CONFIG\"
    and .platform == \"linux/amd64\" and (.size | type) == \"number\" and .size >= $IMG_BB_LAYER1_SIZE
    and (.created | type) == \"string\"
    and (.names | sort) == ([\"$BB\", \"$REG_HOST/test/busybox@$IMG_BB_MANIFEST\"] | sort)" "image object"
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out" "images -q"
}

test_images_empty ()
{
  assert_ok ohbox images --format json
  assert_jq "$out" '. == []' "images json of an empty store"
  assert_ok ohbox images -q
  assert_eq "" "$out"
  assert_exit 2 ohbox images --format yaml
}

test_inspect ()
{
  assert_ok pull "$BB"
  assert_ok ohbox inspect "$BB"
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\" and .Digest == \"$IMG_BB_MANIFEST\"
    and .RepoTags == [\"$BB\"] and (.RepoDigests | index(\"$REG_HOST/test/busybox@$IMG_BB_MANIFEST\") != null)
    and .Created == \"1970-01-01T00:00:00Z\" and .Os == \"linux\" and .Architecture == \"amd64\"
    and (.Variant == null) and .Size >= $IMG_BB_LAYER1_SIZE
    and .Config.Cmd == [\"/bin/sh\"] and .Config.Labels[\"org.ohbox.test.image\"] == \"busybox\"
    and .RootFS == {\"Type\": \"layers\", \"Layers\": [\"$IMG_BB_DIFF1\", \"$IMG_BB_DIFF2\"]}
    and .Layers == [
      {\"Digest\": \"$IMG_BB_LAYER1\", \"DiffID\": \"$IMG_BB_DIFF1\", \"Size\": $IMG_BB_LAYER1_SIZE, \"MediaType\": \"$IMG_OCI_LAYER_GZIP\"},
      {\"Digest\": \"$IMG_BB_LAYER2\", \"DiffID\": \"$IMG_BB_DIFF2\", \"Size\": $IMG_BB_LAYER2_SIZE, \"MediaType\": \"$IMG_OCI_LAYER_GZIP\"}]
    and .ManifestMediaType == \"$IMG_OCI_MANIFEST\" and .IndexDigest == null" "inspect"
}

test_inspect_by_id ()
{
  assert_ok pull "$BB"
  local hex=${IMG_BB_MANIFEST#sha256:}
  local what
  for what in "$IMG_BB_MANIFEST" "$hex" "${hex:0:12}" "${hex:0:4}"; do
    assert_ok ohbox inspect "$what"
    assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\"" "inspect $what"
  done
  assert_exit 3 ohbox inspect "$REG_HOST/test/nothing:latest"
  assert_exit 3 ohbox inspect "$(printf 'nothing' | sha256sum | cut -c1-12)"
}

test_inspect_prefix_rules ()
{
  # with two images: a prefix shorter than 4 hex is refused, and a prefix both
  # ids share (when they share 4 or more digits) is ambiguous; one digit more is unique
  assert_ok pull "$BB"
  assert_ok pull "$ZS"
  local a=${IMG_BB_MANIFEST#sha256:} b=${IMG_ZSTD_MANIFEST#sha256:} n=0
  while [ "${a:n:1}" = "${b:n:1}" ]; do
    n=$((n + 1))
  done
  assert_fails ohbox inspect "${a:0:3}"
  if [ "$n" -ge 4 ]; then
    assert_fails ohbox inspect "${a:0:$n}"
    assert_ok ohbox inspect "${a:0:$((n + 1))}"
  else
    assert_ok ohbox inspect "${a:0:4}"
  fi
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\""
}

test_inspect_multiarch ()
{
  assert_ok ohbox pull -q --platform linux/arm64/v8 --tls-verify=false "$MULTI"
  assert_ok ohbox inspect "$MULTI"
  assert_jq "$out" ".Id == \"$IMG_ARM_MANIFEST\" and .Architecture == \"arm64\" and .Variant == \"v8\"
    and .IndexDigest == \"$IMG_MULTI_INDEX\" and .RootFS.Layers == [\"$IMG_ARM_DIFF\"]"
}

test_rmi_name ()
{
  assert_ok pull "$BB"
  assert_ok ohbox rmi "$BB"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after rmi"
  assert_eq "" "$(store_blob_files)" "blobs after rmi"
  assert_layer_absent "$IMG_BB_DIFF1"
  assert_layer_absent "$IMG_BB_DIFF2"
  assert_exit 3 ohbox inspect "$BB"
}

test_rmi_unknown ()
{
  assert_exit 3 ohbox rmi "$REG_HOST/test/nothing:latest"
  assert_contains "$err" "test/nothing" "error message"
  assert_ok pull "$BB"
  assert_exit 3 ohbox rmi "$REG_HOST/test/busybox:other"
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out" "images after a failed rmi"
}

test_rmi_shared ()
{
  # the gzip and zstd images share their config blob and their unpacked
  # layers (same DiffIDs), not their layer blobs
  assert_ok pull "$BB"
  assert_ok pull "$ZS"
  assert_ok ohbox rmi "$ZS"
  assert_blob_absent "$IMG_ZSTD_MANIFEST"
  assert_blob_absent "$IMG_ZSTD_LAYER1"
  assert_blob_absent "$IMG_ZSTD_LAYER2"
  assert_blob_present "$IMG_BB_CONFIG" "the shared config"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_layer_present "$IMG_BB_DIFF1" "the shared unpacked layer"
  assert_layer_present "$IMG_BB_DIFF2" "the shared unpacked layer"
  assert_ok ohbox inspect "$BB"
  assert_ok ohbox rmi "$BB"
  assert_eq "" "$(store_blob_files)" "blobs after both rmi"
  assert_layer_absent "$IMG_BB_DIFF1"
}

test_rmi_id_with_names ()
{
  local byd=$REG_HOST/test/busybox@$IMG_BB_MANIFEST
  assert_ok pull "$BB"
  assert_ok pull "$byd"
  # an id naming an image with two names needs -f
  assert_fails ohbox rmi "$IMG_BB_MANIFEST"
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out" "images after a refused rmi"
  assert_ok ohbox rmi -f "$IMG_BB_MANIFEST"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after rmi -f"
  assert_exit 3 ohbox inspect "$byd"
  assert_eq "" "$(store_blob_files)" "blobs after rmi -f"
}

test_rmi_one_of_two_names ()
{
  local byd=$REG_HOST/test/busybox@$IMG_BB_MANIFEST
  assert_ok pull "$BB"
  assert_ok pull "$byd"
  assert_ok ohbox rmi "$BB"
  assert_ok ohbox inspect "$byd"
  assert_jq "$out" ".Id == \"$IMG_BB_MANIFEST\" and .RepoTags == []" "the image under its other name"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_layer_present "$IMG_BB_DIFF1"
}

test_rmi_several ()
{
  assert_ok pull "$BB"
  assert_ok pull "$ZS"
  assert_ok ohbox rmi "$BB" "$ZS"
  assert_ok ohbox images -q
  assert_eq "" "$out"
  assert_eq "" "$(store_blob_files)"
}

test_prune_untagged ()
{
  # a tag that moves to another image leaves the old one untagged
  local name=$REG_HOST/test/moving:latest
  img_push REG "oci:$IMG_BUSYBOX:latest" test/moving:latest
  assert_ok pull "$name"
  img_push REG "oci:$IMG_ZSTD:latest" test/moving:latest
  assert_ok pull "$name"
  assert_eq "$IMG_ZSTD_MANIFEST" "$out" "the tag's new image"
  assert_ok ohbox images
  assert_match "$out" "^<none> +<none> +$(short_hex "$IMG_BB_MANIFEST") " "untagged row"
  assert_ok ohbox images --format json
  assert_jq "$out" "length == 2 and (.[] | select(.id == \"$IMG_BB_MANIFEST\") | .names) == []"
  assert_ok ohbox prune
  assert_match "$out" '^removed 1 images, [0-9]+ blobs, [0-9]+ layers, [0-9]+ partial files; freed ' "prune output"
  assert_ok ohbox images --format json
  assert_jq "$out" "length == 1 and .[0].id == \"$IMG_ZSTD_MANIFEST\""
  assert_blob_absent "$IMG_BB_MANIFEST"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_blob_present "$IMG_ZSTD_LAYER1"
  assert_layer_present "$IMG_BB_DIFF1" "the layer the zstd image uses"
  assert_store_blobs_valid
}

test_prune_json ()
{
  assert_ok pull "$BB"
  # an unreferenced blob and a partial download
  printf 'stray blob' >"$T_WORK/stray"
  local hex
  hex=$(t_sha256 "$T_WORK/stray")
  cp "$T_WORK/stray" "$T_ROOT/blobs/sha256/$hex"
  mkdir -p "$T_ROOT/ingest"
  head -c 5000 /dev/urandom >"$T_ROOT/ingest/$(printf 'partial' | sha256sum | cut -d' ' -f1).partial"
  assert_ok ohbox prune --format json
  assert_jq "$out" '(.images | type) == "number" and .images == 0 and .blobs == 1 and .layers == 0
    and .partials == 1 and .bytes >= 5010' "prune --format json"
  assert_file_absent "$T_ROOT/blobs/sha256/$hex" "the stray blob"
  assert_eq "" "$(find "$T_ROOT/ingest" -type f)" "files in ingest/"
  # what the image uses stays
  assert_blob_present "$IMG_BB_LAYER1"
  assert_layer_present "$IMG_BB_DIFF1"
  assert_ok ohbox inspect "$BB"
  # nothing left to prune
  assert_ok ohbox prune --format json
  assert_jq "$out" '.images == 0 and .blobs == 0 and .layers == 0 and .partials == 0 and .bytes == 0'
}

test_prune_keeps_names ()
{
  assert_ok pull "$REG_HOST/test/busybox@$IMG_BB_MANIFEST"
  # an image only named by digest is not untagged: prune keeps it
  assert_ok ohbox prune --format json
  assert_jq "$out" '.images == 0 and .blobs == 0'
  assert_ok ohbox images -q
  assert_eq "$IMG_BB_MANIFEST" "$out"
}

# An image pulled through an index keeps its index blob (the digest it was
# pulled by, `inspect`'s IndexDigest): prune must mark it, or `ohbox check`
# then finds an incomplete image it cannot repair.
test_prune_keeps_index ()
{
  assert_ok pull "$MULTI"
  assert_ok pull "$REG_HOST/test/multi@$IMG_MULTI_INDEX"
  assert_blob_present "$IMG_MULTI_INDEX" "the index"
  assert_ok ohbox prune --format json
  assert_jq "$out" '.images == 0 and .blobs == 0 and .layers == 0' "prune of a store whose images are all named"
  assert_blob_present "$IMG_MULTI_INDEX" "the index after prune"
  assert_blob_present "$IMG_MULTI_AMD64" "the manifest after prune"
  assert_ok ohbox check --format json
  assert_jq "$out" '.found == 0' "check after prune"
  assert_ok ohbox inspect "$MULTI"
  assert_jq "$out" ".Id == \"$IMG_MULTI_AMD64\" and .IndexDigest == \"$IMG_MULTI_INDEX\""
  assert_store_blobs_valid
  if [ "$(id -u)" = 0 ]; then
    OHBOX_RUNROOT=$T_WORK/run assert_ok ohbox run --rm --network none "$MULTI" echo ran
    assert_eq ran "$out" "a run of the image after prune"
  fi
}

run_test images_table test_images_table
run_test images_json test_images_json
run_test images_empty test_images_empty
run_test inspect test_inspect
run_test inspect_by_id test_inspect_by_id
run_test inspect_prefix_rules test_inspect_prefix_rules
run_test inspect_multiarch test_inspect_multiarch
run_test rmi_name test_rmi_name
run_test rmi_unknown test_rmi_unknown
run_test rmi_shared test_rmi_shared
run_test rmi_id_with_names test_rmi_id_with_names
run_test rmi_one_of_two_names test_rmi_one_of_two_names
run_test rmi_several test_rmi_several
run_test prune_untagged test_prune_untagged
run_test prune_json test_prune_json
run_test prune_keeps_names test_prune_keeps_names
run_test prune_keeps_index test_prune_keeps_index
