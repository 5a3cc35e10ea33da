#!/bin/bash
# bench/start.sh: start latency of `ohbox run --rm --network=none busybox
# /bin/true` side by side with crun, runc, bwrap, podman and the bare
# `unshare ... chroot` floor on the same busybox rootfs, in one run (medians
# and ratios to the floor).  A peer that is not installed is left out with a
# note.  Also the work floor: bench/workfloor.c, the kernel work of ohbox's
# start (overlay, cgroups, mounts, seccomp...) with nothing else, on the
# same image, store and filesystems; the last column is the ratio to it.
# Memory per sandbox: bench/density.sh.
#
#   bench/start.sh [RUNS]        (root; hyperfine, jq; crun, runc, bwrap, podman if installed)
#   BENCH_SKIP=podman,runc       leave some out (also: work-floor, bridge)
#   OHBOX_BEFORE=PATH            also an older ohbox binary (bench/common.sh)
#
# The "bridge" rows start on the default bridge network (veth, address
# lease, the bridge's filter elements, neighbour entry) instead of none:
# with OHBOX_BEFORE, what a change to the network set-up costs a start
# (then both bridge rows run through nsenter, each binary in a network
# namespace of its own: bench/common.sh).
. "$(dirname "$0")/common.sh"
RUNS=${1:-50}

bench_bundle '["/bin/true"]'
cmds=()
add ()
{
  case $SKIP in *",$1,"*) return ;; esac
  cmds+=("$1" "$2")
}
add floor "unshare --user --map-root-user --pid --fork --mount --net --uts --ipc chroot $ROOTFS /bin/true"
add ohbox "$OHBOX --root $STORE run --rm --network=none $BB /bin/true"
[ -z "$OHBOX_BEFORE" ] || add "ohbox (before)" "$OB_BEFORE run --rm --network=none $BB /bin/true"
[ -z "$OHBOX_BEFORE" ] || bench_netns_pair
add bridge "$NS_NOW $OHBOX --root $STORE run --rm --network=bridge $BB /bin/true"
[ -z "$OHBOX_BEFORE" ] || add "bridge (before)" "$NS_BEFORE $OB_BEFORE run --rm --network=bridge $BB /bin/true"
# The work floor (bench/workfloor.c) takes the seccomp program and layers of
# a sandbox of the same image, and ohbox's parent cgroups, which that start
# makes.
case $SKIP in
  *,work-floor,*) ;;
  *)
    cc -O2 -o "$W/workfloor" "$SRC/bench/workfloor.c"
    id=$(ob run -d --network=none "$BB" sleep 60)
    cp "$RUNROOT/$id/seccomp.bpf" "$W/seccomp.bpf"
    layers=$(sed "s|^sha256:|$STORE/layers/sha256/|" "$STORE/sandboxes/$id/layers" | tr '\n' ' ')
    ob rm -f "$id" >/dev/null
    mkdir "$STORE/work-floor"
    add work-floor "$W/workfloor $STORE/work-floor $W/seccomp.bpf $layers -- /bin/true"
    ;;
esac
want bwrap && add bwrap "bwrap --unshare-all --ro-bind $ROOTFS / --proc /proc --dev /dev /bin/true"
want crun && add crun "$(crun_hybrid "run -b $BUNDLE c\$\$")"
want runc && add runc "sh -c 'exec runc run -b $BUNDLE r\$\$'"
want podman && add podman "podman --root $W/podman --runroot $W/podman-run --runtime runc --cgroup-manager cgroupfs run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs $ROOTFS /bin/true"

bench_hyperfine "$RUNS" "$W/start.json" "${cmds[@]}"
echo "start latency (median of $RUNS runs; ratios to the unshare+chroot floor and to the work floor)"
bench_load_note
bench_table "$W/start.json" floor work-floor
