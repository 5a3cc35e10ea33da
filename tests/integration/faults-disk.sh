#!/bin/bash
# faults-disk.sh: a full disk under the store (a size-limited tmpfs with a
# filler file) during a pull (no room for the blobs, checked before any
# download; the disk filled by something else while a blob downloads; the
# unpacked layers reaching the store's margin) and during a build (while
# making the executor's library closure, and while storing the runtime
# layer): a clean error (exit 7, "No space left on device", the store or
# path named), no blob or layer visible half-made, `ohbox check` clean
# after `ohbox prune`, and the same operation succeeding once space is
# freed. Decompression bombs (zstd layers of zeros, a few kB for hundreds of
# MiB): stopped before the store's disk is full, and an image's layers
# together held to --max-image-size.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

t_runtime_exports

setup ()
{
  t_needs_runtime_build "mounts a tmpfs" || return 1
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  bomb_image bomb 256 || return 1
  bomb_image bombs 12 12 || return 1
}

# bomb_image NAME MIB...: test/NAME:latest in REG, one zstd layer per MIB,
# each a tar of one file of MIB MiB of zeros (a few kB compressed).
bomb_image ()
{
  local name=$1 l=$T_TMP/$1 i=0 mib src tar descs=() diffs='[]' desc
  shift
  img_layout_init "$l" || return 1
  for mib in "$@"; do
    i=$((i + 1))
    src=$T_TMP/$name-src$i tar=$l/.layer$i
    mkdir -p "$src" && truncate -s "${mib}M" "$src/zeros$i" || return 1
    diffs=$(jq -cn --argjson a "$diffs" --arg d "sha256:$(bomb_tar "$src" "zeros$i" | sha256sum | cut -d' ' -f1)" \
      '$a + [$d]') || return 1
    bomb_tar "$src" "zeros$i" | zstd -q -3 -c >"$tar" || return 1
    _img_put_blob "$l" "$tar" || return 1
    descs+=("$(_img_desc "$IMG_OCI_LAYER_ZSTD" "$BLOB_DIGEST" "$BLOB_SIZE")") || return 1
  done
  img_add_image "$l" amd64 "" "$name" "$(_img_layers_json "${descs[@]}")" "$diffs" || return 1
  desc=$(_img_desc "$IMG_OCI_MANIFEST" "$MANIFEST_DIGEST" "$MANIFEST_SIZE" amd64) || return 1
  img_set_refs "$l" "latest=$desc" || return 1
  img_push REG "oci:$l:latest" "test/$name:latest"
}

# bomb_tar DIR FILE: the tar stream of DIR/FILE (a sparse file: its zeros
# are read, never stored).
bomb_tar ()
{
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 --format=gnu -C "$1" -cf - "$2"
}
t_setup_or_die setup setup

BB=localhost/busybox:latest

# small_store MIB: a tmpfs of MIB MiB at $T_WORK/disk holding the store
# (T_ROOT) and the filler; unmounted when the test ends, even on failure.
small_store ()
{
  DISK=$T_WORK/disk
  mkdir -p "$DISK"
  mount -t tmpfs -o "size=${1}m,mode=700" ohbox-test-disk "$DISK"
  trap 'umount -l "$DISK" 2>/dev/null || true' EXIT
  T_ROOT=$DISK/store
  mkdir -p "$T_ROOT"
}

# fill KIB: a filler file leaving about KIB KiB free.
fill ()
{
  local avail
  avail=$(df -k --output=avail "$DISK" | tail -n 1)
  rm -f "$DISK/filler"
  avail=$(df -k --output=avail "$DISK" | tail -n 1)
  [ "$avail" -gt "$1" ] || { _t_assert_fail "only $avail KiB free, cannot leave $1"; return 1; }
  fallocate -l $(((avail - $1) * 1024)) "$DISK/filler"
  echo "free: $(df -k --output=avail "$DISK" | tail -n 1) KiB"
}

unfill ()
{
  rm -f "$DISK/filler"
}

# assert_nothing_half_made: every blob hashes to its name, every entry of
# layers/ is a layer directory (they appear by rename once complete, so a
# complete layer of an image not recorded yet is fine: prune removes it).
assert_nothing_half_made ()
{
  assert_store_blobs_valid
  local l
  for l in "$T_ROOT"/layers/sha256/*; do
    [ -e "$l" ] || continue
    [[ ${l##*/} =~ ^[0-9a-f]{64}$ ]] && [ -d "$l" ] && [ ! -L "$l" ] \
      || { _t_assert_fail "\`$l\` is not a layer directory"; return 1; }
  done
}

# after_full: prune, then check finds nothing.
after_full ()
{
  assert_ok ohbox prune
  assert_ok ohbox check
  assert_match "$out" ': consistent$'
}

# pull_on_full_disk KIB REF: REF pulled into a 20 MiB store left with about
# KIB KiB free is refused for the lack of room.
pull_on_full_disk ()
{
  small_store 20
  fill "$1"
  assert_exit 7 ohbox pull --tls-verify=false "$2"
  assert_match "$err" "No space left on device"
}

# after_failed_pull REF: nothing of the pull is visible; once the filler
# is gone the same pull succeeds.
after_failed_pull ()
{
  assert_eq "" "$(ohbox images -q)" "images after the failed pull"
  assert_nothing_half_made
  after_full
  unfill
  assert_ok ohbox pull --tls-verify=false "$1"
  assert_match "$out" "^pulled $1 $IMG_BB_MANIFEST linux/amd64\$"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_ok ohbox check
  assert_ok ohbox run --rm "$1" true
}

# The busybox layers are 1 MB compressed, 2 MB unpacked; the store's margin
# on a 20 MiB filesystem is 256 KiB. No room for the blobs: refused before
# any download, naming the store and the sizes.
test_pull_blob_full ()
{
  local ref=$REG_HOST/test/busybox:latest
  pull_on_full_disk 500 "$ref"
  assert_match "$err" "the store \`$T_ROOT\` has [0-9.]+ kB free; the image's blobs to download take 1\.0 MB, and ohbox keeps 262\.1 kB free"
  assert_eq "" "$(ls "$T_ROOT/ingest")" "downloads started"
  after_failed_pull "$ref"
}
run_test pull_blob_full test_pull_blob_full

# Room for the blobs, not for the unpacked layers: the unpack stops at the
# store's margin, before the disk is full.
test_pull_unpack_full ()
{
  local ref=$REG_HOST/test/busybox:latest
  pull_on_full_disk 1800 "$ref"
  assert_match "$err" "unpack layer .* into \`$T_ROOT/tmp/layer-"
  assert_match "$err" "unpacking would leave the store \`$T_ROOT\` less than 262\.1 kB free \([0-9.]+ kB free now\); stopped before its disk is full"
  after_failed_pull "$ref"
}
run_test pull_unpack_full test_pull_unpack_full

# The disk fills up while a blob downloads (something else writes to it):
# the write fails, cleanly.
test_pull_filled_meanwhile ()
{
  small_store 20
  fp_start REG FP
  fp_set FP "{\"rate\": 200000}"
  local ref=$FP_HOST/test/busybox:latest pid
  ohbox pull --tls-verify=false "$ref" >"$T_WORK/pull.out" 2>"$T_WORK/pull.err" &
  pid=$!
  t_wait_until 20 sh -c "ls '$T_ROOT/ingest' | grep -q partial"
  fill 100
  local rc=0
  wait "$pid" || rc=$?
  assert_eq 7 "$rc" "exit status of the pull ($(cat "$T_WORK/pull.err"))"
  assert_match "$(cat "$T_WORK/pull.err")" "No space left on device"
  assert_match "$(cat "$T_WORK/pull.err")" "\`$T_ROOT(/[a-z]+/|\`)"
  fp_set FP '{}'
  after_failed_pull "$ref"
}
run_test pull_filled_meanwhile test_pull_filled_meanwhile

# 256 MiB of zeros in a 64 MiB store: the unpack stops at the margin (640
# kB there), the disk keeps it free, nothing half-made stays.
test_pull_bomb ()
{
  small_store 64
  local ref=$REG_HOST/test/bomb:latest avail
  assert_exit 7 ohbox pull --tls-verify=false "$ref"
  assert_match "$err" "No space left on device"
  assert_match "$err" "unpacking would leave the store \`$T_ROOT\` less than 671\.1 kB free \([0-9.]+ [kM]B free now\); stopped before its disk is full"
  avail=$(df -k --output=avail "$DISK" | tail -n 1)
  assert_int -ge "$avail" 300 "KiB still free on the store's filesystem"
  assert_eq "" "$(ohbox images -q)" "images after the failed pull"
  assert_nothing_half_made
  after_full
}
run_test pull_bomb test_pull_bomb

# Two layers of 12 MiB of zeros: each within --max-layer-size, together
# over --max-image-size.
test_pull_image_budget ()
{
  small_store 64
  local ref=$REG_HOST/test/bombs:latest
  assert_exit 6 ohbox pull --tls-verify=false --max-layer-size 20M --max-image-size 20M "$ref"
  assert_contains "$err" "the image's layers exceed the unpacked size limit of 21.0 MB (20971520 bytes) together"
  assert_eq "" "$(ohbox images -q)" "images after the failed pull"
  assert_nothing_half_made
  after_full
  assert_ok ohbox pull --tls-verify=false --max-image-size 30M "$ref"
  assert_exit 2 ohbox pull --tls-verify=false --max-image-size 0 "$ref"
  assert_contains "$err" "--max-image-size takes a size"
}
run_test pull_image_budget test_pull_image_budget

# build_full MIB LEAVE_KIB [PREPARE]: a build of the runtime image from
# busybox in a store of MIB MiB with LEAVE_KIB free.
build_full ()
{
  small_store "$1"
  assert_ok ohbox load "oci:$IMG_BUSYBOX:latest"
  if [ -n "${3:-}" ]; then
    # The closure is cached from a first build; the runtime layer is not.
    assert_ok ohbox build --no-pull "$BB"
    assert_ok ohbox rmi $(ohbox images --format json | jq -r '.[].names[] | select(contains("ohbox/runtime"))')
    assert_ok ohbox prune
  fi
  fill "$2"
  assert_exit 7 ohbox build --no-pull "$BB"
  assert_match "$err" "No space left on device"
  assert_match "$err" "\`$T_ROOT/"
  assert_eq "$(ohbox images --format json | jq -r '[.[].names[]] | join(" ")')" "$BB" "images after the failed build"
  assert_nothing_half_made
  [ -z "$(ls "$T_ROOT/build/closures" 2>/dev/null | grep '^tmp-')" ] \
    || { _t_assert_fail "a half-made closure is left: $(ls "$T_ROOT/build/closures")"; return 1; }
  after_full
  unfill
  assert_ok ohbox build --no-pull --format json "$BB"
  assert_ok ohbox run --rm "$(jq -r .image <<<"$out")" --help
  assert_match "$out" "^Usage: ohbox-executor"
  assert_store_blobs_valid
  assert_ok ohbox check
}

# The closure (about 50 MB of libraries) does not fit in 20 MB.
test_build_closure_full ()
{
  build_full 200 20000
}
run_test build_closure_full test_build_closure_full

# Closure cached: the runtime layer's blob (as big) does not fit.
test_build_layer_full ()
{
  build_full 300 30000 cached
}
run_test build_layer_full test_build_layer_full
