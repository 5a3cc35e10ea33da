#!/bin/bash
# bench/density.sh: host memory per running sandbox.  Starts N sandboxes
# (`ohbox run -d --network=none busybox sleep 3600`, default 1000), then
# reports per sandbox:
#   - the Pss of its monitor (host side) and of its init (the ohbox process
#     that is PID 1 inside), from /proc/PID/smaps_rollup, and the Pss of the
#     `sleep` itself (the workload, counted apart);
#   - the kernel side: growth of Slab, KernelStack and PageTables in
#     /proc/meminfo over the whole start, divided by N (namespaces, mounts,
#     cgroups, processes; other work on the machine adds noise);
# then removes them all and checks that nothing is left: no sandbox, no
# process, no mount of the store, no cgroup, no state directory.
# Target: monitor + init under 1 MiB per sandbox.
#
#   bench/density.sh [N]         (root; hyperfine, jq)
. "$(dirname "$0")/common.sh"
N=${1:-1000}

meminfo ()
{
  awk -v k="$1" '$1 == k ":" { print $2 }' /proc/meminfo
}
kernel_kib ()
{
  echo $(($(meminfo Slab) + $(meminfo KernelStack) + $(meminfo PageTables)))
}
sync
echo 2 >/proc/sys/vm/drop_caches 2>/dev/null || true # settle reclaimable slab first
slab0=$(meminfo Slab) kern0=$(kernel_kib) avail0=$(meminfo MemAvailable)
t0=$(date +%s.%N)
for i in $(seq "$N"); do
  ob run -d --network=none "$BB" sleep 3600 >/dev/null
done
t1=$(date +%s.%N)
slab1=$(meminfo Slab) kern1=$(kernel_kib) avail1=$(meminfo MemAvailable)

# Full ids: the leftover checks below look for cgroups and state dirs by them.
ids=$(ob ps --format json | jq -r '.[].id')
mon=0 init=0 work=0 n=0 monrss=0 anon=0
for p in $(ob ps --format json | jq -r '.[] | select(.status == "running") | .pid'); do
  # (from /proc/PID itself: ps -p and pgrep -P read every process's stat,
  # which with 3 000 processes made this loop take minutes)
  m=$(awk '{print $4}' "/proc/$p/stat")
  c=$(awk '{print $1}' "/proc/$p/task/$p/children")
  mon=$((mon + $(awk '/^Pss:/ {print $2}' "/proc/$m/smaps_rollup")))
  monrss=$((monrss + $(awk '/^Rss:/ {print $2}' "/proc/$m/smaps_rollup")))
  init=$((init + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup")))
  anon=$((anon + $(cat "/proc/$m/smaps_rollup" "/proc/$p/smaps_rollup" | awk '/^Pss_Anon:/ {s += $2} END {print s}')))
  [ -n "$c" ] && work=$((work + $(awk '/^Pss:/ {print $2}' "/proc/$c/smaps_rollup")))
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no running sandbox" >&2; exit 1; }
echo "$n sandboxes running sleep (started in $(echo "$t1 - $t0" | bc) s)"
bench_load_note
echo "host memory per sandbox (KiB):"
printf '  %-44s %6d\n' "monitor Pss" $((mon / n)) "init Pss (ohbox as PID 1 inside)" $((init / n)) \
  "monitor + init Pss" $(((mon + init) / n)) "  of which anonymous (Pss_Anon)" $((anon / n)) "monitor Rss (shared pages counted fully)" $((monrss / n)) \
  "kernel: Slab+KernelStack+PageTables growth" $(((kern1 - kern0) / n)) "  of which Slab" $(((slab1 - slab0) / n)) \
  "MemAvailable drop (all of the above, page cache)" $(((avail0 - avail1) / n)) \
  "the workload (sleep) Pss, not counted above" $((work / n))

# Remove them all, then look for anything left.
t2=$(date +%s.%N)
echo "$ids" | xargs -r -n 50 "$OHBOX" --root "$STORE" rm -f >/dev/null
echo "removed in $(echo "$(date +%s.%N) - $t2" | bc) s (\`ohbox rm -f\` of 50 at a time)"
left=0
report ()
{
  echo "LEFT: $*"
  left=1
}
[ -z "$(ob ps -a -q)" ] || report "sandboxes: $(ob ps -a -q | wc -l)"
[ -z "$(pgrep -f -- "--root $STORE" || true)" ] || report "processes: $(pgrep -f -- "--root $STORE" | tr '\n' ' ')"
grep -q -- "$STORE" /proc/self/mountinfo && report "mounts: $(grep -c -- "$STORE" /proc/self/mountinfo)"
for id in $ids; do
  for d in /sys/fs/cgroup/*/ohbox/"$id" /sys/fs/cgroup/ohbox/"$id"; do
    [ -e "$d" ] && report "cgroup $d"
  done
  [ -e "$RUNROOT/$id" ] && report "state dir $RUNROOT/$id"
done
[ $left = 0 ] && echo "removed all $n: no sandbox, process, mount, cgroup or state dir left"
exit $left
