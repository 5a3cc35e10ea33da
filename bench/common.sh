# bench/common.sh: what bench/start.sh, exec.sh and density.sh share (bash,
# sourced): the test harness's busybox image loaded into a fresh store, the
# same rootfs unpacked for the peers, an OCI bundle for crun and runc, and
# the cleanup.  Sets SRC, OHBOX (the binary), W (a temp dir, removed at
# exit), STORE, BB (the image's name in STORE), ROOTFS and BUNDLE, and
# `ob` (ohbox with that store).  The runtime state goes to a tmpfs under
# /run when there is one (as /run/ohbox is for root), not to /tmp's disk.
set -eu
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OHBOX=${OHBOX_BIN:-$SRC/ohbox}
SKIP=",${BENCH_SKIP:-},"
# OHBOX_BEFORE=PATH: an older ohbox binary (a release build of another
# commit) measured in the same run, with its own store, runtime and network
# state directories, in rows named "... (before)": before/after ratios in
# one run, as the issues ask for a change's cost.
OHBOX_BEFORE=${OHBOX_BEFORE:-}
# (before anything is made: this exit comes before the cleanup trap)
for t in hyperfine jq; do
  command -v $t >/dev/null || { echo "bench: needs $t (apt-get install hyperfine jq)" >&2; exit 1; }
done
W=$(mktemp -d /tmp/ohbox-bench.XXXXXX)
chmod 755 "$W" # the peers' containers run as an unprivileged host id
RUNROOT=$W/run
if [ "$(stat -f -c %T /run 2>/dev/null)" = tmpfs ] && [ -w /run ]; then
  RUNROOT=$(mktemp -d /run/ohbox-bench.XXXXXX)
fi
export OHBOX_RUNROOT=$RUNROOT
STORE=$W/store
BB=localhost/busybox:latest

ob ()
{
  "$OHBOX" --root "$STORE" "$@"
}

# The older binary's command line prefix (env: its own runtime and network
# state, so that neither binary reads the other's).
STORE_BEFORE=$W/store-before
OB_BEFORE="env OHBOX_RUNROOT=$RUNROOT-before OHBOX_NETROOT=$RUNROOT-net-before $OHBOX_BEFORE --root $STORE_BEFORE"

# With OHBOX_BEFORE, each binary's bridge starts run in a network namespace
# of their own (NS_NOW, NS_BEFORE: `nsenter --net=...` prefixes): the two
# versions' bridge and nftables table must not meet.
NS_NOW='' NS_BEFORE=''
bench_netns_pair ()
{
  local n
  for n in now before; do
    ip netns add "ohbox-bench-$n-$$"
    ip -n "ohbox-bench-$n-$$" link set lo up
    BENCH_CLEANUP+=("ip netns delete ohbox-bench-$n-$$")
  done
  NS_NOW="nsenter --net=/run/netns/ohbox-bench-now-$$"
  NS_BEFORE="nsenter --net=/run/netns/ohbox-bench-before-$$"
}

# Cleanup hooks of the scripts run first (peers' containers), then ohbox's.
BENCH_CLEANUP=()
bench_cleanup ()
{
  set +e
  local c
  for c in "${BENCH_CLEANUP[@]}"; do
    eval "$c" >/dev/null 2>&1
  done
  ob ps -a -q 2>/dev/null | xargs -r "$OHBOX" --root "$STORE" rm -f >/dev/null 2>&1
  if [ -n "$OHBOX_BEFORE" ]; then
    $OB_BEFORE ps -a -q 2>/dev/null | xargs -r $OB_BEFORE rm -f >/dev/null 2>&1
    rm -rf "$RUNROOT-before" "$RUNROOT-net-before"
  fi
  rm -rf "$W"
  [ "$RUNROOT" = "$W/run" ] || rm -rf "$RUNROOT"
  # (this trap replaces the harness's, which would remove its temp dir)
  [ -z "${T_TMP:-}" ] || rm -rf "$T_TMP"
}

# The busybox image of the test harness: an OCI layout and its rootfs.
. "$SRC/tests/lib/common.sh" >/dev/null 2>&1 || true
. "$SRC/tests/lib/images.sh"
# (after common.sh, which sets its own EXIT trap)
trap bench_cleanup EXIT
img_build >/dev/null
ROOTFS=$W/rootfs
mkdir -p "$ROOTFS"
cp -a "$(dirname "$IMG_BUSYBOX")/rootfs-layer1/." "$ROOTFS/"
mkdir -p "$ROOTFS/proc" "$ROOTFS/dev" "$ROOTFS/sys"
ob load "oci:$IMG_BUSYBOX:latest" >/dev/null
[ -z "$OHBOX_BEFORE" ] || $OB_BEFORE load "oci:$IMG_BUSYBOX:latest" >/dev/null

# bench_bundle ARGS_JSON: an OCI bundle for crun and runc in $W/bundle, with
# the same work as ohbox: user namespace, pid/mount/net/uts/ipc/cgroup
# namespaces, default caps, read-only rootfs.
BUNDLE=$W/bundle
bench_bundle ()
{
  local spec
  spec=$(command -v crun || command -v runc || true)
  [ -n "$spec" ] || return 0
  mkdir -p "$BUNDLE"
  (cd "$BUNDLE" && rm -f config.json && { "$spec" spec --rootless >/dev/null 2>&1 || "$spec" spec; })
  # crun fills in the id maps of a rootless spec, runc does not: root in
  # the container is an unprivileged host id, as in ohbox's sandboxes.
  jq --argjson a "$1" --arg r "$ROOTFS" '.process.args = $a | .process.terminal = false
      | .root.path = $r | .root.readonly = true
      | .linux.uidMappings = [{containerID: 0, hostID: 200000, size: 65536}]
      | .linux.gidMappings = [{containerID: 0, hostID: 200000, size: 65536}]
      | .linux.namespaces |= (map(select(.type != "cgroup")) + [{type: "cgroup"}])' \
    "$BUNDLE/config.json" >"$BUNDLE/c" && mv "$BUNDLE/c" "$BUNDLE/config.json"
}

# crun_hybrid ARGS: the command line of `crun ARGS` where crun 1.8 works:
# it refuses hybrid cgroups, so it runs in a mount namespace where the
# unified mount is hidden (ARGS: no single quotes).
crun_hybrid ()
{
  echo "unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun $*'"
}

# want NAME: true unless BENCH_SKIP lists NAME or its command is missing
# (then says so once).
want ()
{
  case $SKIP in *",$1,"*) return 1 ;; esac
  if ! command -v "$1" >/dev/null; then
    echo "note: $1 is not installed: its column is left out" >&2
    return 1
  fi
  return 0
}

# bench_hyperfine RUNS JSON NAME CMD [NAME CMD...]: medians in JSON.
bench_hyperfine ()
{
  local runs=$1 json=$2 args=()
  shift 2
  while [ $# -gt 0 ]; do
    args+=(-n "$1" "$2")
    shift 2
  done
  hyperfine -w 3 -r "$runs" -N --export-json "$json" "${args[@]}" >/dev/null 2>&1 ||
    hyperfine -w 3 -r "$runs" --export-json "$json" "${args[@]}" >/dev/null
}

# bench_table JSON BASE [BASE2]: "name  median  ratio to BASE  cpu" lines
# (cpu: mean user + system time of the command and the children it waited
# for, which a loaded machine inflates less than wall time), and a last
# column of ratios to BASE2 when JSON has it.
bench_table ()
{
  local base base2
  base=$(jq --arg b "$2" '.results[] | select(.command == $b) | .median' "$1")
  base2=$(jq --arg b "${3:-}" '[.results[] | select(.command == $b) | .median][0] // 0' "$1")
  {
    printf 'command\tmedian\tratio\tcpu%s\n' "$([ "$base2" = 0 ] || printf '\tvs %s' "$3")"
    jq -r --argjson f "$base" --argjson g "$base2" '.results[] | "\(.command)\t\(.median * 1000 | . * 10 | round / 10) ms\t\(.median / $f | . * 100 | round / 100)x\t\((.user + .system) * 1000 | . * 10 | round / 10) ms" + (if $g > 0 then "\t\(.median / $g | . * 100 | round / 100)x" else "" end)' "$1"
  } | column -t -s $'\t'
}

bench_load_note ()
{
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
