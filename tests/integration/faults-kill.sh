#!/bin/bash
# faults-kill.sh: SIGKILL of `ohbox` at random points of pull (through a
# rate-limited fault proxy, so a pull lasts about a second), build, run and
# rm. After each kill: `ohbox check` reports only repairable findings,
# `ohbox check --repair` repairs them all, `ohbox check` is then clean and
# the same operation, run normally, succeeds. At the end of each test
# nothing leaked (mounts under the store and state, cgroup directories,
# veths, leases, published ports' nft elements and processes of every
# sandbox seen) and every blob is intact.
#
#   OHBOX_FAULTS_SEED=N     the random seed (printed: a failure is reproducible)
#   OHBOX_FAULTS_POINTS=N   kill points per operation (default 10: the seed changes
#                           every run, so CI runs add up; 20 or more by hand)
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

t_runtime_exports

SEED=${OHBOX_FAULTS_SEED:-$(( $(date +%s%N) / 1000 % 1000000 ))}
POINTS=${OHBOX_FAULTS_POINTS:-10}
FIGURES=$T_TMP/figures
: >"$FIGURES"
echo "# faults-kill: seed $SEED, $POINTS kill points per operation (OHBOX_FAULTS_SEED=$SEED to reproduce)"
[ "$POINTS" -le 20 ] || T_TEST_TIMEOUT=$((POINTS * 15))

setup ()
{
  t_needs_runtime_build "namespaces, overlay, cgroups" || return 1
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
}
t_setup_or_die setup setup

BB=localhost/busybox:latest

# now_ms: monotonic enough for durations of a second.
now_ms ()
{
  echo $(($(date +%s%N) / 1000000))
}

# record_ids: remembers the sandboxes of this test's state directory, to
# look for their leftovers at the end.
record_ids ()
{
  ls "$OHBOX_RUNROOT" 2>/dev/null | grep -E '^[0-9a-f]{64}$' >>"$T_WORK/ids" || true
}

# kill_point DELAY_MS ARGS...: starts `ohbox ARGS...`, SIGKILLs it DELAY_MS
# later (the random point; not a synchronisation) unless it ended, and
# counts what happened in $killed / $finished.
kill_point ()
{
  local delay=$1
  shift
  ohbox_bg "$T_WORK/kill.out" "$@"
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  if kill -KILL "$OHBOX_BG_PID" 2>/dev/null; then
    killed=$((killed + 1))
  else
    finished=$((finished + 1))
  fi
  wait "$OHBOX_BG_PID" 2>/dev/null || true
  record_ids
}

# after_kill: check reports only repairable findings, --repair repairs
# them, check is then clean.
after_kill ()
{
  t_run ohbox check --format json
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 6 ]; then
    _t_assert_fail "ohbox check failed with $rc: $(_t_short "$err")"
    return 1
  fi
  assert_jq "$out" '[.findings[] | select(.repairable | not)] == []' "findings that are not repairable"
  jq -r '.findings[].kind' <<<"$out" >>"$T_WORK/kinds"
  findings=$((findings + $(jq '.found' <<<"$out")))
  assert_ok ohbox check --repair --format json
  assert_jq "$out" '.remaining == 0' "findings left after --repair"
  assert_ok ohbox check
  assert_match "$out" ': consistent$'
}

# live_procs ID: the processes (not zombies) in a cgroup of sandbox ID.
live_procs ()
{
  local f p
  for f in $(grep -ls "/ohbox/$1" /proc/[0-9]*/cgroup 2>/dev/null); do
    p=${f#/proc/}
    p=${p%/cgroup}
    [ "$(awk '/^State:/ { print $2 }' "/proc/$p/status" 2>/dev/null)" != Z ] || continue
    [ -e "/proc/$p" ] && echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
  done
}

no_live_procs ()
{
  [ -z "$(live_procs "$1")" ]
}

# assert_no_leaks: nothing of any sandbox this test saw is left on the host.
assert_no_leaks ()
{
  record_ids
  local ids id mp bad=
  # mounts below the store or the state directory
  mp=$(awk -v a="$T_ROOT/" -v b="$OHBOX_RUNROOT/" 'index($5, a) == 1 || index($5, b) == 1 { print $5 }' \
    /proc/self/mountinfo)
  [ -z "$mp" ] || bad="$bad mounts: $mp;"
  ids=$(sort -u "$T_WORK/ids" 2>/dev/null || true)
  for id in $ids; do
    local cg
    for cg in /sys/fs/cgroup/*/ohbox/"$id" /sys/fs/cgroup/ohbox/"$id"; do
      [ ! -d "$cg" ] || bad="$bad cgroup $cg;"
    done
    [ ! -e "/sys/class/net/ohb${id:0:12}" ] || bad="$bad veth ohb${id:0:12};"
    # A killed sandbox's processes may be zombies a moment, until the
    # host's init reaps them: wait for that, but not for a live one.
    if ! t_wait_until 5 no_live_procs "$id"; then
      bad="$bad processes of sandbox ${id:0:12}: $(live_procs "$id" | head -3 | tr '\n' ' ');"
    fi
  done
  local netroot=${OHBOX_NETROOT:-/run/ohbox/net} l
  for l in "$netroot"/ip/* "$netroot"/port/*; do
    [ -L "$l" ] || continue
    case $(readlink "$l") in "$OHBOX_RUNROOT"/*) bad="$bad lease $l;" ;; esac
  done
  # (the suite runs one file at a time: an orphan element is this test's)
  local orphans
  orphans=$(nft_orphan_elements "$netroot")
  [ -z "$orphans" ] || bad="$bad nft elements for $(tr '\n' ' ' <<<"$orphans");"
  if pgrep -f -- "--root $T_ROOT " >/dev/null; then
    bad="$bad ohbox processes: $(pgrep -af -- "--root $T_ROOT " | head -3 | tr '\n' ' ');"
  fi
  [ -z "$bad" ] || { _t_assert_fail "leaked:$bad"; return 1; }
  assert_store_blobs_valid
  assert_ok ohbox check
  echo "sandboxes seen: $(echo "$ids" | grep -c . || true)"
}

# begin_operation N: the kill points of operation N (the seed and N give
# them), its counts at zero.
begin_operation ()
{
  RANDOM=$((SEED + $1))
  killed=0 finished=0 findings=0
}

# end_operation OP: nothing left behind, and the figures of OP.
end_operation ()
{
  assert_no_leaks
  figures "$1"
}

# figures OP: one line for the README figures.
figures ()
{
  local kinds
  kinds=$(sort "$T_WORK/kinds" 2>/dev/null | uniq -c | awk '{printf "%s%s=%s", sep, $2, $1; sep=", "}')
  echo "$1: $POINTS kill points in 0-$span ms ($killed killed mid-operation, $finished finished first), $findings findings (${kinds:-none}), all repaired" \
    | tee -a "$FIGURES"
}

rm_all_sandboxes ()
{
  local ids
  ids=$(ohbox ps -aq)
  [ -z "$ids" ] || ohbox rm -f $ids >/dev/null
}

test_kill_pull ()
{
  begin_operation 0
  fp_start REG FP
  # 1.5 MB/s: the busybox layer takes most of a second, so points fall mid-blob.
  fp_set FP '{"rate": 1500000}'
  local ref=$FP_HOST/test/busybox:latest t0 span i
  t0=$(now_ms)
  assert_ok ohbox pull --tls-verify=false "$ref"
  span=$(($(now_ms) - t0 + 100))
  for i in $(seq "$POINTS"); do
    assert_ok ohbox rmi "$ref"
    assert_ok ohbox prune
    kill_point $((RANDOM % span)) pull --tls-verify=false "$ref"
    after_kill
    t0=$(now_ms)
    assert_ok ohbox pull --tls-verify=false "$ref"
    assert_match "$out" "^pulled $ref $IMG_BB_MANIFEST linux/amd64\$"
    # The next points span this pull (the machine's load changes).
    span=$(($(now_ms) - t0 + 100))
  done
  assert_layer_present "$IMG_BB_DIFF1"
  assert_ok ohbox run --rm "$ref" true
  end_operation pull
}
run_test kill_pull test_kill_pull

# runtime_names: the runtime image tags in the store.
runtime_names ()
{
  ohbox images --format json | jq -r '.[].names[] | select(contains("ohbox/runtime"))'
}

test_kill_build ()
{
  begin_operation 1
  assert_ok ohbox load "oci:$IMG_BUSYBOX:latest"
  local t0 span i image names
  # The first build also makes the executor's library closure (cached after).
  assert_ok ohbox build --no-pull "$BB"
  t0=$(now_ms)
  assert_ok ohbox rmi $(runtime_names)
  assert_ok ohbox prune
  assert_ok ohbox build --no-pull "$BB"
  span=$(($(now_ms) - t0 + 100))
  for i in $(seq "$POINTS"); do
    names=$(runtime_names)
    [ -z "$names" ] || assert_ok ohbox rmi $names
    assert_ok ohbox prune
    kill_point $((RANDOM % span)) build --no-pull "$BB"
    after_kill
    t0=$(now_ms)
    assert_ok ohbox build --no-pull --format json "$BB"
    # A whole build sets the span of the next points (the load changes);
    # one the killed build finished is a reuse.
    [ "$(jq -r .path <<<"$out")" != from-scratch ] || span=$(($(now_ms) - t0 + 100))
    image=$(jq -r .image <<<"$out")
  done
  # The image is whole: its executor answers.
  assert_ok ohbox run --rm "$image" --help
  assert_match "$out" "^Usage: ohbox-executor"
  end_operation build
}
run_test kill_build test_kill_build

test_kill_run ()
{
  begin_operation 2
  assert_ok ohbox load "oci:$IMG_BUSYBOX:latest"
  local t0 span i args
  t0=$(now_ms)
  assert_ok ohbox run --rm --network bridge "$BB" true
  span=$(($(now_ms) - t0 + 200))
  for i in $(seq "$POINTS"); do
    # Three shapes: foreground --rm on the bridge with a published port,
    # foreground kept, detached.
    case $((i % 3)) in
      0) args=(run --rm --network bridge -p 127.0.0.1::8080 "$BB" sleep 0.3) ;;
      1) args=(run --name "k$i" "$BB" sleep 0.3) ;;
      2) args=(run -d --network bridge --name "k$i" "$BB" sleep 86399) ;;
    esac
    kill_point $((RANDOM % span)) "${args[@]}"
    after_kill
    # The same start, normally (names taken by the killed one are freed).
    rm_all_sandboxes
    assert_ok ohbox "${args[@]}"
    record_ids
    rm_all_sandboxes
  done
  end_operation run
}
run_test kill_run test_kill_run

test_kill_rm ()
{
  begin_operation 3
  assert_ok ohbox load "oci:$IMG_BUSYBOX:latest"
  local t0 span i id net
  assert_ok ohbox run -d --network bridge "$BB" sleep 86399
  id=$out
  t0=$(now_ms)
  assert_ok ohbox rm -f "$id"
  span=$(($(now_ms) - t0))
  for i in $(seq "$POINTS"); do
    net=none
    [ $((i % 2)) = 0 ] || net=bridge
    local pub=()
    [ "$net" = none ] || pub=(-p 127.0.0.1::80)
    assert_ok ohbox run -d --network "$net" "${pub[@]}" "$BB" sleep 86399
    id=$out
    record_ids
    kill_point $((RANDOM % span)) rm -f "$id"
    after_kill
    # Finish the removal if the kill came first, then a normal one.
    if ohbox ps -aq | grep -q "^${id:0:12}"; then
      assert_ok ohbox rm -f "$id"
    fi
    assert_ok ohbox run -d --network "$net" "$BB" sleep 86399
    id=$out
    record_ids
    t0=$(now_ms)
    assert_ok ohbox rm -f "$id"
    # Points up to the longest removal seen (bridge ones take longer).
    [ $(($(now_ms) - t0)) -le "$span" ] || span=$(($(now_ms) - t0))
  done
  assert_eq "" "$(ohbox ps -aq)" "sandboxes left"
  end_operation rm
}
run_test kill_rm test_kill_rm

sed 's/^/# faults-kill: /' "$FIGURES"
