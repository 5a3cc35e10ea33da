#!/bin/bash
# soak-short.sh: a short run of tests/soak/soak.sh (start/action/stop cycles
# of a runtime image on the bridge, without a network and on the host's,
# with a long-lived sentinel sandbox sampled for memory): every cycle works,
# nothing is left (mounts, cgroups, veths, nft elements, leases, processes,
# state and store files), memory and fds steady. OHBOX_SOAK_CYCLES (default
# 24) and OHBOX_SOAK_CONCURRENCY (default 3) size it; the long run is
# `tests/soak/soak.sh --cycles 10000`.
. "$(dirname "$0")/../lib/common.sh"

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, bridge, nftables)"; return 1; }
  [ -x "$OHBOX_BUILDDIR/ohbox-executor" ] || { echo "ohbox-executor is not built (make ohbox-executor)"; return 1; }
}
t_setup_or_die setup setup

test_soak_short ()
{
  local n=${OHBOX_SOAK_CYCLES:-24} c=${OHBOX_SOAK_CONCURRENCY:-3}
  t_run bash "$OHBOX_SRCDIR/tests/soak/soak.sh" --cycles "$n" --concurrency "$c" --sample 1 \
    --report "$T_WORK/report.txt"
  echo "$out" >&9
  echo "$err" >&9
  [ -f "$T_WORK/report.txt" ] || _t_assert_fail "soak.sh wrote no report (status $rc): $(tail -n 5 <<<"$err")"
  local report
  report=$(cat "$T_WORK/report.txt")
  # The counters saw the cycling sandboxes (more cgroups half-way than with
  # the sentinel alone), and nothing is left.
  assert_match "$report" '^cgroup dirs \(v1 controllers \+ unified\) +[0-9]+ +[0-9]+ +[0-9]+ +0$'
  assert_eq "$(awk '/^cgroup dirs/ {print ($(NF - 2) > $(NF - 3)) ? "seen" : "not seen"}' <<<"$report")" seen \
    "cgroups of cycling sandboxes half-way"
  assert_match "$report" '^processes \(monitors, init, executors, ohbox\) .* +0$'
  assert_match "$report" '^address and port leases .* +0$'
  assert_match "$report" '^veths .* +0$'
  assert_match "$report" '^nft elements .* +0$'
  assert_match "$report" '^mounts .* +0$'
  assert_match "$report" '^files under the state root .* +0$'
  assert_match "$report" '^files under the store .* +0$'
  assert_match "$report" "^soak: $n cycles \\(bridge [0-9]+, none [0-9]+, host [0-9]+\\) at concurrency $c .* 0 failed; left: 0; memory (steady|not judged \\(sanitizer build\\))"
  assert_eq "$rc" 0 "soak.sh status"
}
run_test soak_short test_soak_short
