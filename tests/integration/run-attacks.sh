#!/bin/bash
# run-attacks.sh: a long start/stop loop that must leak nothing (mounts,
# cgroups, processes, fds, state). The attack shapes that were here (symlinks
# to host paths, leaked fds, /proc/self/exe) are in escape.sh with the others.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"

# What sandboxes of this test's store leave on the host (only theirs: other
# programs on the machine come and go): mounts naming the test's paths,
# cgroup directories of ids this store knows, processes of this store's
# runtime, state and writable-layer directories.
leak_snapshot ()
{
  local mounts cg procs state upper
  mounts=$(grep -c "$T_TMP" /proc/self/mountinfo || true)
  # Only the ids this test created (in $IDS): other engineers' and tests'
  # sandboxes come and go meanwhile. (grep exits 1 when nothing matches.)
  cg=$({ find /sys/fs/cgroup -maxdepth 3 -path '*/ohbox/*' -type d 2>/dev/null || true; } |
    { grep -F -f "$IDS" || true; } | wc -l)
  procs=$(pgrep -c -f -- "--root $T_ROOT " || true)
  state=$(ls -A "$STATE_ROOT" 2>/dev/null | grep -cv '^names$\|^seccomp-cache$\|^create.lock$' || true)
  upper=$(ls -A "$T_ROOT/sandboxes" 2>/dev/null | wc -l)
  echo "mounts=$mounts cgroups=$cg procs=$procs state=$state sandboxes=$upper"
}

test_start_stop_loop ()
{
  load_bb
  local n=${OHBOX_RUN_CYCLES:-200} i id before after keeper mon fds_before fds_after
  # a long-lived sandbox whose monitor's fds must not grow meanwhile
  assert_ok ohbox run -d "$BB" sleep 600
  keeper=$out
  assert_ok ohbox ps --format json
  mon=$(ps -o ppid= -p "$(jq '.[0].pid' <<<"$out")" | tr -d ' ')
  fds_before=$(ls /proc/$mon/fd | wc -l)
  STATE_ROOT=$OHBOX_RUNROOT
  IDS=$T_WORK/ids
  : >"$IDS"
  before=$(leak_snapshot)
  for i in $(seq "$n"); do
    id=$("$OHBOX_BIN" --root "$T_ROOT" run -d "$BB" sleep 600) || t_fail "run $i failed"
    echo "$id" >>"$IDS"
    if [ $((i % 2)) = 0 ]; then
      "$OHBOX_BIN" --root "$T_ROOT" rm -f "$id" >/dev/null || t_fail "rm -f $i failed"
    else
      "$OHBOX_BIN" --root "$T_ROOT" stop -t 0 "$id" >/dev/null || t_fail "stop $i failed"
      "$OHBOX_BIN" --root "$T_ROOT" rm "$id" >/dev/null || t_fail "rm $i failed"
    fi
  done
  # and foreground --rm runs, some killed by a signal (the hostname is the
  # short id: its cgroup directories are looked for too)
  for i in $(seq 20); do
    "$OHBOX_BIN" --root "$T_ROOT" run --rm "$BB" sh -c 'hostname; kill -9 $$' >>"$IDS" &&
      t_fail "exit 0 from a killed command"
  done
  [ "$(grep -c -E '^[0-9a-f]{12}' "$IDS")" = $((n + 20)) ] || t_fail "ids of the sandboxes not all known"
  after=$(leak_snapshot)
  fds_after=$(ls /proc/$mon/fd | wc -l)
  assert_eq "$after" "$before" "host resources after $n cycles"
  assert_eq "$fds_after" "$fds_before" "fds of a running sandbox's monitor"
  assert_ok ohbox rm -f "$keeper"
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

run_test start_stop_loop test_start_stop_loop
