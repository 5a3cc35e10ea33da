#!/bin/bash
# bench/oci.sh: ohbox-runc as the OCI runtime of podman and containerd, side
# by side with crun and runc, in one run (medians, ratios to ohbox-runc):
#   - `podman run --rm --network none busybox true` with --runtime each;
#   - `ctr run --rm busybox true` with --runc-binary each (the runc v2 shim);
#   - create + start + delete --force of one bundle, the runtime alone.
# crun runs with the hybrid workaround (bench/common.sh crun_hybrid: it
# refuses a cgroup2 mount with no controller beside v1). The same engine
# flags for every runtime: --pids-limit 0 and --cpu-shares 0 / no CAP_MKNOD,
# and limits this machine allows.
#
#   bench/oci.sh [RUNS]          (root; hyperfine, jq, podman, containerd, crun, runc)
#   OHBOX_RUNC_BIN=PATH          the ohbox-runc to measure (build it without sanitizers)
#   BENCH_SKIP=podman,ctr,bundle leave some out
# Its own network and mount namespaces, /run a tmpfs (own_namespaces.sh).
. "$(dirname "$0")/own_namespaces.sh"
. "$(dirname "$0")/common.sh"
RUNS=${1:-20}
# The engines' cgroups go under a parent of the run's own, removed at exit.
CG=bench-oci-$$
BENCH_CLEANUP+=("for d in /sys/fs/cgroup/*/$CG /sys/fs/cgroup/$CG; do [ -d \$d ] && find \$d -depth -type d -exec rmdir {} +; done")
RUNC_OHBOX=${OHBOX_RUNC_BIN:-$SRC/ohbox-runc}
[ -x "$RUNC_OHBOX" ] || { echo "bench: build ohbox-runc first (make)" >&2; exit 1; }

# crun with the hybrid workaround, as one path an engine can be given.
cat >"$W/crun-hybrid" <<'EOF'
#!/bin/sh
exec unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun "$@"' crun "$@"
EOF
chmod +x "$W/crun-hybrid"
runtimes=(ohbox-runc "$RUNC_OHBOX")
want crun && runtimes+=(crun "$W/crun-hybrid")
want runc && runtimes+=(runc "$(command -v runc)")

NOFILE=$(ulimit -Hn)
NPROC=$(ulimit -Hu)
[ "$NPROC" != unlimited ] && [ "$NPROC" -le 32768 ] || NPROC=32768
bench_load_note

# ---------------------------------------------------------------- bundle
case $SKIP in *,bundle,*) ;; *)
  bench_bundle '["/bin/true"]'
  # The ambient set within the inheritable one (the kernel's rule: crun's
  # and runc's spec leave it out and skip the ambient set, ohbox-runc
  # refuses such a config).
  jq '.process.capabilities.inheritable = .process.capabilities.ambient' "$BUNDLE/config.json" >"$W/c.json" &&
    mv "$W/c.json" "$BUNDLE/config.json"
  cmds=()
  for ((i = 0; i < ${#runtimes[@]}; i += 2)); do
    rt=${runtimes[i + 1]} root=/run/bench-oci-${runtimes[i]}
    cmds+=("${runtimes[i]}" "sh -c '$rt --root $root create --bundle $BUNDLE b >/dev/null && $rt --root $root start b && $rt --root $root delete --force b'")
  done
  bench_hyperfine "$RUNS" "$W/bundle.json" "${cmds[@]}"
  echo "== create + start + delete --force of one bundle (/bin/true, user namespace)"
  bench_table "$W/bundle.json" ohbox-runc
  ;;
esac

# ---------------------------------------------------------------- podman
if want podman && [[ $SKIP != *,podman,* ]]; then
  PM="podman --root $W/pm-root --runroot /run/pm --tmpdir /run/pm-tmp --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --network-config-dir $W/cni"
  mkdir -p "$W/cni"
  $PM pull -q "oci:$IMG_BUSYBOX:latest" >/dev/null
  $PM tag "$($PM images -q | head -n 1)" localhost/busybox:latest
  cmds=()
  for ((i = 0; i < ${#runtimes[@]}; i += 2)); do
    cmds+=("${runtimes[i]}" "$PM run --rm --network none --pids-limit 0 --ulimit nofile=$NOFILE:$NOFILE --ulimit nproc=$NPROC:$NPROC --cgroup-parent /$CG --runtime ${runtimes[i + 1]} localhost/busybox true")
  done
  BENCH_CLEANUP=("$PM rm -a -f -t 0" "${BENCH_CLEANUP[@]}")
  bench_hyperfine "$RUNS" "$W/podman.json" "${cmds[@]}"
  echo "== podman run --rm --network none busybox true"
  bench_table "$W/podman.json" ohbox-runc
fi

# ---------------------------------------------------------------- containerd
if want containerd && [[ $SKIP != *,ctr,* ]]; then
  cat >"$W/containerd.toml" <<EOF
version = 2
root = "$W/ctrd-root"
state = "/run/ctrd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/run/ctrd.sock"
[ttrpc]
  address = "/run/ctrd.sock.ttrpc"
EOF
  containerd --config "$W/containerd.toml" >"$W/containerd.log" 2>&1 &
  ctrd=$!
  BENCH_CLEANUP=("kill $ctrd; wait $ctrd" "${BENCH_CLEANUP[@]}")
  CT="ctr --address /run/ctrd.sock --namespace $CG"
  for i in $(seq 100); do $CT version >/dev/null 2>&1 && break; sleep 0.1; done
  skopeo copy -q "oci:$IMG_BUSYBOX:latest" "oci-archive:$W/bb.tar:docker.io/library/busybox:latest"
  $CT images import "$W/bb.tar" >/dev/null
  cmds=()
  for ((i = 0; i < ${#runtimes[@]}; i += 2)); do
    cmds+=("${runtimes[i]}" "$CT run --rm --cpu-shares 0 --cap-drop CAP_MKNOD --runc-binary ${runtimes[i + 1]} docker.io/library/busybox:latest c-${runtimes[i]} true")
  done
  bench_hyperfine "$RUNS" "$W/ctr.json" "${cmds[@]}"
  echo "== ctr run --rm busybox true (runc v2 shim)"
  bench_table "$W/ctr.json" ohbox-runc
fi
