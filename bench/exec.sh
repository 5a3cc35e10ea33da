#!/bin/bash
# bench/exec.sh: latency of `ohbox exec ID true` in a running sandbox side
# by side with `crun exec`, `runc exec` and `podman exec` in running
# containers of the same busybox rootfs (each running `sleep`), and the
# floor `nsenter --all` into the ohbox sandbox's namespaces (no cgroup,
# capabilities or seccomp), in one run: medians and ratios to the floor.
# A peer that is not installed is left out with a note.  Target: ohbox
# under 5 ms median.
#
#   bench/exec.sh [RUNS]         (root; hyperfine, jq; crun, runc, podman if installed)
#   BENCH_SKIP=podman,runc       leave some out
#   OHBOX_BEFORE=PATH            also an older ohbox binary (bench/common.sh)
. "$(dirname "$0")/common.sh"
RUNS=${1:-100}

bench_bundle '["sleep", "3600"]'
cmds=()
add ()
{
  case $SKIP in *",$1,"*) return ;; esac
  cmds+=("$1" "$2")
}

id=$(ob run -d --network=none "$BB" sleep 3600)
pid=$(ob ps --format json | jq -r --arg id "$id" '.[] | select(.id == $id) | .pid')
add floor "nsenter -t $pid --all true"
add ohbox "$OHBOX --root $STORE exec $id true"
if [ -n "$OHBOX_BEFORE" ]; then
  id_before=$($OB_BEFORE run -d --network=none "$BB" sleep 3600)
  add "ohbox (before)" "$OB_BEFORE exec $id_before true"
fi

if want crun; then
  BENCH_CLEANUP+=("$(crun_hybrid "delete -f cx$$")")
  eval "$(crun_hybrid "run -d -b $BUNDLE cx$$")" </dev/null >/dev/null
  add crun "$(crun_hybrid "exec cx$$ true")"
fi
if want runc; then
  BENCH_CLEANUP+=("runc delete -f rx$$")
  runc run -d -b "$BUNDLE" "rx$$" </dev/null >/dev/null
  add runc "runc exec rx$$ true"
fi
if want podman; then
  P="podman --root $W/podman --runroot $W/podman-run --runtime runc --cgroup-manager cgroupfs"
  BENCH_CLEANUP+=("$P rm -f -t 0 px$$")
  $P run -d --name "px$$" --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --rootfs "$ROOTFS" sleep 3600 >/dev/null
  add podman "$P exec px$$ true"
fi

bench_hyperfine "$RUNS" "$W/exec.json" "${cmds[@]}"
echo "exec latency of \`true\` in a running sandbox (median of $RUNS runs; ratio to nsenter --all)"
bench_load_note
bench_table "$W/exec.json" floor
