#!/bin/bash
# bench/start-phases.sh: where the time of `ohbox run --rm --network=none
# busybox /bin/true` goes, from the start's own timestamps
# (OHBOX_TRACE_START, utils.h: ohbox_trace): for each step, the median over
# RUNS starts of the time since the step before it (in any process of the
# start: parent, the sandbox's init, its command), and the median total.
# The rest of what bench/start.sh measures is ohbox's own exec and exit.
#
#   bench/start-phases.sh [RUNS] [RUN-OPTIONS...]   (root; default 30 runs)
. "$(dirname "$0")/common.sh"
RUNS=${1:-30}
shift || true
ob run --rm --network=none "$@" "$BB" /bin/true # warm the seccomp cache
: >"$W/trace"
for i in $(seq "$RUNS"); do
  OHBOX_TRACE_START=1 "$OHBOX" --root "$STORE" run --rm --network=none "$@" "$BB" /bin/true 2>&1 |
    awk -v run="$i" '$1 == "ohbox-trace" { $1 = run; print }' >>"$W/trace"
done
echo "start phases (median of $RUNS runs; ms since the step before)"
bench_load_note
# per run: sort by time, delta to the previous event; then medians per step
sort -k1,1n -k2,2n "$W/trace" | awk '
  { run = $1; t = $2; step = $4; for (i = 5; i <= NF; i++) step = step " " $i
    if (run != last) { prev = t; last = run; if (!(step in seen)) { order[++n] = step; seen[step] = 1 } }
    else if (!(step in seen)) { order[++n] = step; seen[step] = 1 }
    d[step] = d[step] " " (t - prev); prev = t; total[run] = t }
  function median(list,   a, k, i, j, x) {
    k = split(list, a, " ")
    for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  END {
    for (i = 1; i <= n; i++) printf "%-28s %7.2f ms\n", order[i], median(d[order[i]])
    all = ""; for (r in total) all = all " " total[r]
    printf "%-28s %7.2f ms\n", "total (begin to removed)", median(all) }'
