#!/bin/bash
# bench/pull.sh: `ohbox pull` (download + unpack) side by side with
# `skopeo copy` + `umoci unpack` and with `podman pull`, for a busybox image
# and a debootstrap Debian minbase image (built once and cached) served by a
# local registry on 127.0.0.1, in one run: medians and ratios.
#
# Usage: bench/pull.sh [RUNS]   (default 5; run as root; needs a built ./ohbox,
#        and podman, skopeo, umoci, debootstrap: apt-get install podman skopeo umoci debootstrap)
set -uo pipefail
RUNS=${1:-5}
for c in skopeo umoci podman debootstrap; do
  command -v $c >/dev/null || { echo "bench: $c is not installed (apt-get install $c)" >&2; exit 1; }
done
. "$(dirname "$0")/harness.sh"
. "$here/tests/lib/common.sh"
. "$here/tests/lib/registry.sh"
. "$here/tests/lib/images.sh"
exec 9>/dev/null

img_build || exit 1
img_build_debian || exit 1
reg_start http REG >/dev/null || exit 1
img_push REG "oci:$IMG_BUSYBOX:latest" bench/busybox:latest || exit 1
img_push REG "oci:$IMG_DEBIAN:bookworm" bench/debian:bookworm || exit 1

# Every run gets a freshly made ext4 filesystem (a sparse loop file in
# /dev/shm): the same conditions for every tool, and no carry-over between
# runs (on a long-lived ext4, creating files right after deleting thousands
# is slowed by the allocator skipping recently deleted inodes).
# podman refuses a runroot path longer than 50 characters: keep it short.
scratch=$(mktemp -d /tmp/obench.XXXXXX)
fsimg=/dev/shm/ohbox-bench-$$.img
cleanup_fs () { podman_reset; umount "$scratch" 2>/dev/null; rm -f "$fsimg"; }
trap 'cleanup_fs; _t_cleanup' EXIT
# One timed run of CMD (seconds, wall clock); PREPARE runs before, untimed.
timed ()
{
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>"$T_TMP/err" || { echo "bench: failed: $*" >&2; cat "$T_TMP/err" >&2; return 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
median () { sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f", m }'; }
fresh ()
{
  [ -d "$scratch/podman" ] && podman_reset
  umount "$scratch" 2>/dev/null
  rm -f "$fsimg"
  truncate -s 4G "$fsimg" && mkfs.ext4 -q -F "$fsimg" && mount -o loop "$fsimg" "$scratch" || return 1
}

run_ohbox () { "$OHBOX" --root "$scratch/store" pull --tls-verify=false "$REG_HOST/$1"; }
run_skopeo_umoci ()
{
  skopeo --insecure-policy copy -q --src-tls-verify=false "docker://$REG_HOST/$1" "oci:$scratch/layout:t" &&
    umoci unpack --image "$scratch/layout:t" "$scratch/bundle"
}
run_podman ()
{
  podman --root "$scratch/podman" --runroot "$scratch/podman-run" --storage-driver overlay \
    pull -q --tls-verify=false "$REG_HOST/$1"
}
# A podman store holds overlay mounts: unmount before the next fresh run.
podman_reset () { podman --root "$scratch/podman" --runroot "$scratch/podman-run" --storage-driver overlay system reset -f >/dev/null 2>&1 || true; }

declare -A result
for image in bench/busybox:latest bench/debian:bookworm; do
  for tool in ohbox skopeo_umoci podman; do
    times=()
    for _ in $(seq "$RUNS"); do
      fresh
      t=$(timed "run_$tool" "$image") || exit 1
      times+=("$t")
    done
    result[$image,$tool]=$(printf '%s\n' "${times[@]}" | median)
  done
done
cleanup_fs
rmdir "$scratch"

printf '\n%-24s %12s %16s %12s %16s %14s\n' image "ohbox (s)" "skopeo+umoci (s)" "podman (s)" "skopeo+umoci/ohbox" "podman/ohbox"
for image in bench/busybox:latest bench/debian:bookworm; do
  o=${result[$image,ohbox]} s=${result[$image,skopeo_umoci]} p=${result[$image,podman]}
  printf '%-24s %12s %16s %12s %16.1fx %13.1fx\n' "$image" "$o" "$s" "$p" "$(echo "$s / $o" | bc -l)" "$(echo "$p / $o" | bc -l)"
done
echo "(medians of $RUNS runs each, a fresh store on a fresh ext4 filesystem every run, registry on 127.0.0.1)"
