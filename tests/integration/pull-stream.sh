#!/bin/bash
# pull-stream.sh: `ohbox pull` unpacks a layer while its blob downloads.
# Through tests/lib/fault_proxy.py with the busybox layer slowed down: the
# unpack starts before the blob is complete, and the layer appears only once
# the blob is complete and verified. A corrupted download, a dropped
# connection (resumed with Range under the running unpack) and a pull killed
# in the middle of the unpack leave no half layer and no half blob visible.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registries.sh"

# slow_layer1 [MORE-JSON]: layer 1 at 300 kB/s (about 3.5 s), other faults added.
slow_layer1 ()
{
  fp_set FP "{\"rate\": 300000, \"match\": \"/blobs/$IMG_BB_LAYER1\$\"${1:+, $1}}"
}

# unpacking_early: a temporary layer has entries while layer 1's blob is
# still incomplete (the only layer big enough to be caught doing so).
unpacking_early ()
{
  [ ! -e "$(t_blob_path "$IMG_BB_LAYER1")" ] || return 1
  find "$T_ROOT/tmp" -mindepth 2 -print -quit 2>/dev/null | grep -q .
}

# pull_bg: starts the pull in the background (PULL_PID).
pull_bg ()
{
  ohbox_bg "$T_WORK/pull.out" pull --tls-verify=false "$FP_HOST/test/busybox:latest"
  PULL_PID=$OHBOX_BG_PID
}

# pull_wait: waits for it; its exit status in $rc, its output in the log.
pull_wait ()
{
  rc=0
  wait "$PULL_PID" || rc=$?
  sed 's/^/  pull| /' "$T_WORK/pull.out" >&9
}

# assert_layer1_tree: layer 1 holds the tree it was made from.
assert_layer1_tree ()
{
  local src=$IMG_DIR/rootfs-layer1 l1
  l1=$(t_layer_path "$IMG_BB_DIFF1")
  assert_eq "$(t_sha256 "$src/bin/busybox")" "$(t_sha256 "$l1/bin/busybox")" "bin/busybox"
  assert_eq "$(cd "$src" && find . | sort)" "$(cd "$l1" && find . | sort)" "the entries of layer 1"
}

resume_requests ()
{
  fp_count FP "(.path | endswith(\"/blobs/$IMG_BB_LAYER1\")) and .status == 206
    and (.range // \"\" | test(\"^bytes=[1-9][0-9]*-\"))"
}

test_unpack_overlaps_download ()
{
  fp_start REG FP
  slow_layer1
  pull_bg
  assert_ok t_wait_until 30 unpacking_early
  assert_layer_absent "$IMG_BB_DIFF1" "layer 1 before its blob is complete"
  pull_wait
  assert_eq 0 "$rc" "exit status of the pull"
  assert_match "$(cat "$T_WORK/pull.out")" "^pulled $FP_HOST/test/busybox:latest $IMG_BB_MANIFEST"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF2"
  assert_layer1_tree
  assert_eq "" "$(ls -A "$T_ROOT/tmp")" "temporary layers left behind"
  assert_int -eq 1 "$(fp_count FP ".method == \"GET\" and (.path | endswith(\"/blobs/$IMG_BB_LAYER1\"))")" \
    "downloads of layer 1"
}

test_corrupt_blob_while_unpacking ()
{
  # the blob fails its digest after the unpack has started: exit 6 naming
  # it, no layer, no blob, no temporary layer left
  fp_start REG FP
  slow_layer1 '"corrupt": -1'
  pull_bg
  assert_ok t_wait_until 30 unpacking_early
  pull_wait
  assert_eq 6 "$rc" "exit status of the pull"
  assert_contains "$(cat "$T_WORK/pull.out")" "$(short_hex "$IMG_BB_LAYER1")" "error message naming the digest"
  assert_layer_absent "$IMG_BB_DIFF1"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_store_blobs_valid
  assert_eq "" "$(ls -A "$T_ROOT/tmp")" "temporary layers left behind"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a failed pull"
}

test_drop_resume_while_unpacking ()
{
  # the connection drops under the running unpack; the download resumes
  # with Range and the unpack reads on
  fp_start REG FP
  slow_layer1 '"drop_after": 400000'
  pull_bg
  assert_ok t_wait_until 30 unpacking_early
  pull_wait
  assert_eq 0 "$rc" "exit status of the pull"
  assert_int -eq 1 "$(fp_count FP '.fault == "drop"')" "dropped responses"
  assert_int -ge "$(resume_requests)" 1 "Range requests resuming layer 1"
  assert_store_blobs_valid
  assert_layer1_tree
}

test_sigkill_while_unpacking ()
{
  fp_start REG FP
  slow_layer1
  pull_bg
  if ! t_wait_until 30 unpacking_early; then
    kill -KILL "$PULL_PID" 2>/dev/null || true
    _t_assert_fail "the unpack did not start before the download ended"
    return 1
  fi
  kill -KILL "$PULL_PID"
  pull_wait
  # nothing half-done is visible
  assert_layer_absent "$IMG_BB_DIFF1"
  assert_blob_absent "$IMG_BB_LAYER1"
  assert_store_blobs_valid
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a killed pull"
  # the next pull resumes the download and unpacks again from scratch
  fp_set FP '{}'
  assert_ok ohbox pull --tls-verify=false "$FP_HOST/test/busybox:latest"
  assert_int -ge "$(resume_requests)" 1 "Range requests resuming layer 1"
  assert_blob_present "$IMG_BB_LAYER1"
  assert_store_blobs_valid
  assert_layer1_tree
  # what the killed pull left in tmp/ is GC's: prune removes it
  assert_ok ohbox prune
  assert_eq "" "$(ls -A "$T_ROOT/tmp")" "temporary layers after prune"
  assert_layer1_tree
}

run_test unpack_overlaps_download test_unpack_overlaps_download
run_test corrupt_blob_while_unpacking test_corrupt_blob_while_unpacking
run_test drop_resume_while_unpacking test_drop_resume_while_unpacking
run_test sigkill_while_unpacking test_sigkill_while_unpacking
