#!/bin/bash
# faults-disk.sh: a full disk under the store (a size-limited tmpfs with a
# filler file) during a pull (while writing a blob, and while unpacking a
# layer) and during a build (while making the executor's library closure,
# and while storing the runtime layer): a clean error (exit 7, "No space
# left on device", the path named), no blob or layer visible half-made,
# `ohbox check` clean after `ohbox prune`, and the same operation
# succeeding once space is freed.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run
export OHBOX_EXECUTOR=$OHBOX_BUILDDIR/ohbox-executor
export OHBOX_EXECUTOR_SRCDIR=$OHBOX_SRCDIR/executor

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (mounts a tmpfs)"; return 1; }
  [ -x "$OHBOX_EXECUTOR" ] || { echo "ohbox-executor is not built (make ohbox-executor)"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
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

# pull_full LEAVE_KIB [TEXT]: a pull of busybox with LEAVE_KIB free; the
# error names the path (and TEXT).
pull_full ()
{
  small_store 20
  local ref=$REG_HOST/test/busybox:latest
  fill "$1"
  assert_exit 7 ohbox pull --tls-verify=false "$ref"
  assert_match "$err" "No space left on device"
  assert_match "$err" "\`$T_ROOT/[a-z]+/"
  assert_match "$err" "${2:-}"
  assert_eq "" "$(ohbox images -q)" "images after the failed pull"
  assert_nothing_half_made
  after_full
  unfill
  assert_ok ohbox pull --tls-verify=false "$ref"
  assert_match "$out" "^pulled $ref $IMG_BB_MANIFEST linux/amd64\$"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
  assert_ok ohbox check
  assert_ok ohbox run --rm "$ref" true
}

# The busybox layer is 1 MB compressed, 2 MB unpacked.
test_pull_blob_full ()
{
  pull_full 500 "$(short_hex "$IMG_BB_LAYER1")"
}
run_test pull_blob_full test_pull_blob_full

test_pull_unpack_full ()
{
  pull_full 1800
}
run_test pull_unpack_full test_pull_unpack_full

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
