# bench/own_namespaces.sh: sourced first (before common.sh) by a benchmark
# that runs in network and mount namespaces of its own: it re-executes the
# script there, with its loopback up and /run a tmpfs. What the engines and
# ohbox keep under /run (state, CNI's leases, the bridge's and nftables'
# bookkeeping) then stays in the run, and lives on a tmpfs as systemd mounts
# /run on Debian and Ubuntu: this project's VM keeps /run on its disk, where
# each state file written costs ~0.3 ms.
if [ -z "${BENCH_OWN_NAMESPACES:-}" ]; then
  export BENCH_OWN_NAMESPACES=1
  exec unshare --net --mount --propagation private -- "$BASH" "$0" "$@"
fi
ip link set lo up
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=755 tmpfs /var/lib/cni 2>/dev/null || true
