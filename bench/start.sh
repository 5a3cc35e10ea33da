#!/bin/bash
# bench/start.sh: start latency of `ohbox run --rm --network=none busybox
# /bin/true` side by side with crun, runc, bwrap, podman and the bare
# `unshare ... chroot` floor on the same busybox rootfs, in one run (medians
# and ratios to the floor), then memory per sandbox of N detached sandboxes
# running `sleep` (host side: their monitors; the init inside counted apart).
#
#   bench/start.sh [RUNS]        (root; hyperfine, crun, runc, bwrap, podman)
#   BENCH_SANDBOXES=1000 bench/start.sh   number of sleeping sandboxes (default 1000)
#   BENCH_SKIP=podman,runc       leave some out
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
OHBOX=${OHBOX_BIN:-$SRC/ohbox}
RUNS=${1:-50}
N=${BENCH_SANDBOXES:-1000}
SKIP=",${BENCH_SKIP:-},"
W=$(mktemp -d /tmp/ohbox-bench.XXXXXX)

for t in hyperfine jq; do
  command -v $t >/dev/null || { echo "bench/start.sh: needs $t (apt-get install hyperfine jq)" >&2; exit 1; }
done

# The busybox image of the test harness: an OCI layout and its rootfs.
. "$SRC/tests/lib/common.sh" >/dev/null 2>&1 || true
. "$SRC/tests/lib/images.sh"
# (after common.sh, which sets its own EXIT trap)
export OHBOX_RUNROOT=$W/run
trap 'set +e; "$OHBOX" --root "$W/store" ps -a -q | xargs -r "$OHBOX" --root "$W/store" rm -f >/dev/null 2>&1; rm -rf "$W"' EXIT
img_build >/dev/null
ROOTFS=$W/rootfs
mkdir -p "$ROOTFS"
cp -a "$(dirname "$IMG_BUSYBOX")/rootfs-layer1/." "$ROOTFS/"
mkdir -p "$ROOTFS/proc" "$ROOTFS/dev" "$ROOTFS/sys"
"$OHBOX" --root "$W/store" load "oci:$IMG_BUSYBOX:latest" >/dev/null
BB=localhost/busybox:latest

# An OCI bundle for crun and runc, with the same work as ohbox: user
# namespace, pid/mount/net/uts/ipc/cgroup namespaces, default caps.
mkdir -p "$W/bundle"
ln -s "$ROOTFS" "$W/bundle/rootfs"
spec=$(command -v crun || command -v runc || true)
if [ -n "$spec" ]; then
  (cd "$W/bundle" && "$spec" spec --rootless >/dev/null 2>&1 || "$spec" spec)
  jq '.process.args = ["/bin/true"] | .process.terminal = false | .root.readonly = true' \
    "$W/bundle/config.json" >"$W/bundle/c" && mv "$W/bundle/c" "$W/bundle/config.json"
fi

cmds=()
names=()
add ()
{
  case $SKIP in *",$1,"*) return ;; esac
  names+=("$1")
  cmds+=("$2")
}
add floor "unshare --user --map-root-user --pid --fork --mount --net --uts --ipc chroot $ROOTFS /bin/true"
add ohbox "$OHBOX --root $W/store run --rm --network=none $BB /bin/true"
command -v bwrap >/dev/null && add bwrap "bwrap --unshare-all --ro-bind $ROOTFS / --proc /proc --dev /dev /bin/true"
# crun 1.8 refuses hybrid cgroups: run it where the unified mount is hidden.
command -v crun >/dev/null && add crun "unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun run -b $W/bundle c\$\$'"
command -v runc >/dev/null && add runc "sh -c 'runc run -b $W/bundle r\$\$'"
command -v podman >/dev/null && add podman "podman --root $W/podman --runroot $W/podman-run --runtime runc --cgroup-manager cgroupfs run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs $ROOTFS /bin/true"

args=()
for i in "${!cmds[@]}"; do
  args+=(-n "${names[$i]}" "${cmds[$i]}")
done
hyperfine -w 3 -r "$RUNS" -N --export-json "$W/start.json" "${args[@]}" >/dev/null 2>&1 ||
  hyperfine -w 3 -r "$RUNS" --export-json "$W/start.json" "${args[@]}" >/dev/null
floor=$(jq '.results[] | select(.command == "floor") | .median' "$W/start.json")
echo "start latency (median of $RUNS runs; ratio to the unshare+chroot floor)"
jq -r --argjson f "$floor" '.results[] | "\(.command)\t\(.median * 1000 | . * 10 | round / 10) ms\t\(.median / $f | . * 100 | round / 100)x"' \
  "$W/start.json" | column -t -s $'\t'

# Memory: N sandboxes running sleep, the Pss of their monitors (host side).
echo
echo "memory of $N sandboxes running sleep (Pss, /proc/PID/smaps_rollup)"
for i in $(seq "$N"); do
  "$OHBOX" --root "$W/store" run -d --network=none "$BB" sleep 3600 >/dev/null
done
pids=$("$OHBOX" --root "$W/store" ps --format json | jq -r '.[].pid')
mon=0 init=0 n=0
for p in $pids; do
  m=$(ps -o ppid= -p "$p" | tr -d ' ')
  mon=$((mon + $(awk '/^Pss:/ {print $2}' "/proc/$m/smaps_rollup")))
  init=$((init + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup")))
  n=$((n + 1))
done
echo "sandboxes: $n"
echo "monitor Pss per sandbox: $((mon / n)) KiB"
echo "init (inside the sandbox) Pss per sandbox: $((init / n)) KiB"
