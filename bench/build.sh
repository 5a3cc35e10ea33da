#!/bin/bash
# bench/build.sh: `ohbox build`, each of the four paths, on a busybox base
# and a debootstrap Debian minbase base (built once and cached; skipped with
# OHBOX_BENCH_DEBIAN=0): the median wall time of RUNS runs of each, as
# reported by ohbox build itself (--format json .seconds) and as the
# process's wall time (exec, store open, printing included).
#
#   reuse           nothing changed
#   from-lock       the executor source tree changed (a copy, touched each run)
#   from-versioned  the dependency lock changed (another static bash each run)
#   from-scratch    --force-rebuild
# The first build of a store also makes the executor's closure (closure.sh,
# once per executor binary): not part of any path's time. from-scratch
# with --force-rebuild finds its layers already stored (same bytes): it
# measures assembly; from-versioned on busybox writes and unpacks a new
# dependency layer (the closure, ~50 MB), the cost of a first build.
#
# Targets (issue 5): reuse < 20 ms, from lock < 200 ms, from scratch on
# busybox < 1 s. OpenHands' docker build takes minutes.
#
# Then the lean layer (issue 16), side by side in one run: the dependency
# layer a busybox build makes with the system's libmicrohttpd (GnuTLS and
# its libraries in the closure; OHBOX_MHD_NOTLS=none) and with the one
# without HTTPS (contrib/install-deps.sh), its bytes, and the median time of
# a first build on an empty store (closure.sh, every layer written) and of
# from-versioned (a new dependency layer written), with the ratios.
#
# Usage: bench/build.sh [RUNS]   (default 5; root; a built ./ohbox and
#        ./ohbox-executor; bash-static; debootstrap for Debian).  A
#        sanitizer build's runtimes would be measured too: point
#        OHBOX_BUILDDIR at a release build (or OHBOX_EXECUTOR at one).
set -uo pipefail
RUNS=${1:-5}
. "$(dirname "$0")/harness.sh"
export OHBOX_EXECUTOR=${OHBOX_EXECUTOR:-$OHBOX_BUILDDIR/ohbox-executor}
[ -x "$OHBOX_EXECUTOR" ] || { echo "bench: build ohbox-executor first" >&2; exit 1; }
ldd "$OHBOX_EXECUTOR" | grep -q libasan && echo "bench: warning: $OHBOX_EXECUTOR is a sanitizer build" >&2
[ -x /bin/bash-static ] || { echo "bench: apt-get install bash-static" >&2; exit 1; }
. "$here/tests/lib/common.sh"
. "$here/tests/lib/images.sh"
exec 9>/dev/null

img_build || exit 1
debian=${OHBOX_BENCH_DEBIAN:-1}
if [ "$debian" = 1 ]; then
  img_build_debian || { echo "bench: img_build_debian failed (OHBOX_BENCH_DEBIAN=0 to skip)" >&2; exit 1; }
fi

work=$(mktemp -d /tmp/obench-build.XXXXXX)
trap 'rm -rf "$work"; _t_cleanup' EXIT
mkdir -p "$work/src"
cp "$here"/executor/*.[ch] "$here/executor/local.mk" "$work/src/"
export OHBOX_EXECUTOR_SRCDIR=$work/src

median ()
{
  sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# one ROOT BASE WANT-PATH ARGS...: one build; prints "internal wall" seconds.
one ()
{
  local root=$1 base=$2 want=$3 t0 t1 out
  shift 3
  t0=$(date +%s.%N)
  out=$("$OHBOX" --root "$root" build --no-pull --format json "$@" "$base") || { echo "bench: build failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  [ "$(jq -r .path <<<"$out")" = "$want" ] || { echo "bench: expected $want, got $(jq -r .path <<<"$out")" >&2; exit 1; }
  echo "$(jq -r .seconds <<<"$out") $(echo "$t1 - $t0" | bc -l)"
}

# bench_base LABEL LAYOUT-REF NAME
bench_base ()
{
  local label=$1 layout=$2 name=$3 root=$work/root-$1 p i r
  "$OHBOX" --root "$root" load "$layout" "$name" >/dev/null || exit 1
  "$OHBOX" --root "$root" build --no-pull "$name" >/dev/null || exit 1 # closure made here
  for p in reuse from-lock from-versioned from-scratch; do
    if [ "$p" = from-versioned ] && [ "$label" != busybox ]; then
      # Its lock has no bash in it (the base has one): --bash does not change it.
      printf '%-8s %-15s %11s %11s\n' "$label" "$p" n/a n/a
      continue
    fi
    : >"$work/t"
    for i in $(seq "$RUNS"); do
      case $p in
        reuse) r=$(one "$root" "$name" reuse) ;;
        from-lock)
          echo "/* $i */" >>"$work/src/obs.h"
          r=$(one "$root" "$name" from-lock)
          ;;
        from-versioned)
          cp /bin/bash-static "$work/bash$i"
          printf '%s' "$i" >>"$work/bash$i"
          r=$(one "$root" "$name" from-versioned --bash "$work/bash$i")
          ;;
        from-scratch) r=$(one "$root" "$name" from-scratch --force-rebuild) ;;
      esac
      echo "$r" >>"$work/t"
    done
    printf '%-8s %-15s %8.1f ms %8.1f ms\n' "$label" "$p" \
      "$(awk '{print $1 * 1000}' "$work/t" | median)" "$(awk '{print $2 * 1000}' "$work/t" | median)"
  done
}

# dep_layer ROOT IMAGE: the blob of IMAGE's dependency layer (the layer
# with .ohbox/lock.json; ohbox's layers are plain tars).
dep_layer ()
{
  local d blob
  for d in $("$OHBOX" --root "$1" inspect "$2" | jq -r '.Layers[].Digest'); do
    blob=$1/blobs/sha256/${d#sha256:}
    if tar -tf "$blob" | grep -qx '\.ohbox/lock\.json'; then
      echo "$blob"
      return 0
    fi
  done
  echo "bench: no dependency layer in $2" >&2
  exit 1
}

# lean VAR MHD: busybox builds with OHBOX_MHD_NOTLS=MHD; sets VAR_bytes,
# VAR_first, VAR_versioned (median ms in ohbox) and prints a row.
lean ()
{
  local v=$1 root i image blob
  export OHBOX_MHD_NOTLS=$2
  : >"$work/first" && : >"$work/versioned"
  for i in $(seq "$RUNS"); do
    root=$work/lean-$v-$i
    "$OHBOX" --root "$root" load "oci:$IMG_BUSYBOX:latest" localhost/busybox:latest >/dev/null || exit 1
    one "$root" localhost/busybox:latest from-scratch >>"$work/first"
    cp /bin/bash-static "$work/lbash$i"
    printf '%s' "$i" >>"$work/lbash$i"
    one "$root" localhost/busybox:latest from-versioned --bash "$work/lbash$i" >>"$work/versioned"
  done
  image=$("$OHBOX" --root "$root" build --no-pull --format json localhost/busybox:latest | jq -r .image)
  blob=$(dep_layer "$root" "$image")
  if [ "$v" = without_https ] && tar -tf "$blob" | grep -q libgnutls; then
    echo "bench: the layer still has GnuTLS: no libmicrohttpd without HTTPS (contrib/install-deps.sh)" >&2
    exit 1
  fi
  printf -v "${v}_bytes" '%s' "$(stat -c %s "$blob")"
  printf -v "${v}_first" '%s' "$(awk '{print $1 * 1000}' "$work/first" | median)"
  printf -v "${v}_versioned" '%s' "$(awk '{print $1 * 1000}' "$work/versioned" | median)"
  local b=${v}_bytes f=${v}_first n=${v}_versioned
  printf '%-22s %12d %14.1f %16.1f\n' "${v//_/-}" "${!b}" "${!f}" "${!n}"
  rm -rf "$work"/lean-"$v"-*
  unset OHBOX_MHD_NOTLS
}

printf '%-8s %-15s %11s %11s   (median of %d)\n' base path "in ohbox" "wall" "$RUNS"
bench_base busybox "oci:$IMG_BUSYBOX:latest" localhost/busybox:latest
[ "$debian" = 1 ] && bench_base debian "oci:$IMG_DEBIAN:bookworm" localhost/debian:bookworm

echo
printf '%-22s %12s %14s %16s   (busybox; ms in ohbox, median of %d)\n' libmicrohttpd "dep. layer B" "first build" \
  "from-versioned" "$RUNS"
lean system none
lean without_https ""
awk -v b0="$system_bytes" -v b1="$without_https_bytes" -v f0="$system_first" -v f1="$without_https_first" \
  -v v0="$system_versioned" -v v1="$without_https_versioned" \
  'BEGIN { printf "%-22s %11.2fx %13.2fx %15.2fx\n", "system / without-https", b0 / b1, f0 / f1, v0 / v1 }'
exit 0
