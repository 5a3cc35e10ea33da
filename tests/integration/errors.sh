#!/bin/bash
# errors.sh: the exit code says which part of ohbox failed (man/ohbox.1,
# EXIT STATUS). Real sandboxes, and the kernel refusing a step for real:
# signals refused by a seccomp filter (tests/lib/deny_syscall.c: root owns
# the sandbox's user namespace, no capability it could drop would stop the
# signal), and ohbox started without CAP_DAC_OVERRIDE writing or reading a
# cgroup file made read-only or unreadable. Before
# errors were kinded by module, every such EPERM/EACCES left as a store
# error (7), and a sandbox nothing could kill made `ohbox stop` wait for ever.
# The source rule behind it: errno decides a kind only in store code.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, cgroups, capabilities to drop)"; return 1; }
  command -v capsh >/dev/null || { echo "capsh is not installed (apt-get install libcap2-bin)"; return 1; }
  cc -O1 -o "$T_TMP/deny_syscall" "$T_LIB/deny_syscall.c" -lseccomp ||
    { echo "cannot build deny_syscall (libseccomp-dev)"; return 1; }
  img_build || return 1
}
t_setup_or_die setup setup

BB=localhost/busybox:latest

# ohbox_without CAPS ARGS...: ohbox with CAPS (capsh's comma list) gone from
# its bounding set, so from everything it and its children can hold.
ohbox_without ()
{
  local caps=$1
  shift
  echo "+ (without $caps) ohbox --root $T_ROOT $*" >&9
  timeout -k 5 "$T_OHBOX_TIMEOUT" capsh --drop="$caps" -- -c 'exec "$@"' capsh "$OHBOX_BIN" --root "$T_ROOT" "$@"
}

# ohbox_unsignalled ARGS...: ohbox whose signals the kernel refuses (EPERM).
ohbox_unsignalled ()
{
  echo "+ (kill refused) ohbox --root $T_ROOT $*" >&9
  timeout -k 5 "$T_OHBOX_TIMEOUT" "$T_TMP/deny_syscall" 1 kill,tgkill,pidfd_send_signal "$OHBOX_BIN" --root "$T_ROOT" "$@"
}

# start_sb NAME: a detached busybox sandbox running sleep; sets SB_ID.
start_sb ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  SB_ID=$(ohbox run -d --name "$1" "$BB" sleep 1000)
  local init
  init=$(jq -r .pid "$OHBOX_RUNROOT/$SB_ID/state.json")
  t_track "$(awk '{print $4}' "/proc/$init/stat")"
}

# cgroup_file CONTROLLER FILE: the sandbox's cgroup file of CONTROLLER
# (v1 hierarchy or the unified one), or nothing.
cgroup_file ()
{
  local f
  for f in "/sys/fs/cgroup/$1/ohbox/$SB_ID/$2" "/sys/fs/cgroup/unified/ohbox/$SB_ID/$2" \
    "/sys/fs/cgroup/ohbox/$SB_ID/$2"; do
    if [ -e "$f" ]; then
      echo "$f"
      return 0
    fi
  done
}

status_of ()
{
  ohbox ps -a --format json | jq -r --arg id "$SB_ID" '.[] | select(.id == $id) | .status'
}

test_kill_refused ()
{
  start_sb ek
  assert_exit 9 ohbox_unsignalled kill -s TERM ek
  assert_contains "$err" "ohbox kill: signal sandbox \`${SB_ID:0:12}\`: Operation not permitted"
  assert_eq "$(status_of)" running "the sandbox after a refused kill"
  # a wrong target and a wrong signal keep their own codes
  assert_exit 3 ohbox kill nosuchsandbox
  assert_exit 2 ohbox kill -s SIGNOPE ek
  assert_ok ohbox rm -f ek
}

# unkillable: neither a signal nor the sandbox's cgroup.kill works (made
# read-only, and ohbox without CAP_DAC_OVERRIDE): nothing can stop it.
# The old code waited for an exit that could not come.
unkillable ()
{
  local f
  f=$(cgroup_file . cgroup.kill)
  if [ -n "$f" ]; then chmod a-w "$f"; fi
  UNKILL_FILE=$f
}

# ohbox_unkillable ARGS...: ohbox_unsignalled without CAP_DAC_OVERRIDE.
ohbox_unkillable ()
{
  echo "+ (kill refused, no dac_override) ohbox --root $T_ROOT $*" >&9
  timeout -k 5 "$T_OHBOX_TIMEOUT" capsh --drop=cap_dac_override,cap_dac_read_search -- -c 'exec "$@"' capsh \
    "$T_TMP/deny_syscall" 1 kill,tgkill,pidfd_send_signal "$OHBOX_BIN" --root "$T_ROOT" "$@"
}

test_stop_refused ()
{
  start_sb es
  unkillable
  local t0=$SECONDS
  assert_exit 9 ohbox_unkillable stop -t 1 es
  if [ -n "$UNKILL_FILE" ]; then chmod u+w "$UNKILL_FILE"; fi
  assert_contains "$err" "ohbox stop: stop sandbox \`${SB_ID:0:12}\`: SIGKILL: Operation not permitted"
  [ $((SECONDS - t0)) -lt 30 ] || _t_assert_fail "a refused stop took $((SECONDS - t0)) s"
  assert_eq "$(status_of)" running "the sandbox after a refused stop"
  # a refused stop signal alone: the kill of its cgroup still stops it
  assert_ok ohbox_unsignalled stop -t 1 es
  assert_eq "$(status_of)" exited "the sandbox after a stop without signals"
  assert_ok ohbox rm es
}

test_rm_force_refused ()
{
  start_sb er
  unkillable
  assert_exit 9 ohbox_unkillable rm -f er
  if [ -n "$UNKILL_FILE" ]; then chmod u+w "$UNKILL_FILE"; fi
  assert_contains "$err" "ohbox rm: stop sandbox \`${SB_ID:0:12}\`: SIGKILL: Operation not permitted"
  assert_eq "$(status_of)" running "the sandbox after a refused rm -f"
  assert_ok ohbox rm -f er
  assert_eq "$(status_of)" "" "the sandbox after rm -f"
}

test_pause_refused ()
{
  start_sb ep
  local f
  f=$(cgroup_file freezer freezer.state)
  [ -n "$f" ] || f=$(cgroup_file . cgroup.freeze)
  [ -n "$f" ] || { skip "no freezer file for the sandbox's cgroup"; return; }
  chmod a-w "$f"
  assert_exit 11 ohbox_without cap_dac_override,cap_dac_read_search pause ep
  chmod u+w "$f"
  assert_contains "$err" "ohbox pause: pause sandbox \`${SB_ID:0:12}\`"
  assert_contains "$err" "Permission denied"
  assert_eq "$(status_of)" running "the sandbox after a refused pause"
  assert_ok ohbox pause ep
  assert_ok ohbox unpause ep
  assert_ok ohbox rm -f ep
}

test_stats_refused ()
{
  start_sb et
  local f
  f=$(cgroup_file pids pids.current)
  [ -n "$f" ] || { skip "no pids.current for the sandbox's cgroup"; return; }
  chmod a-r "$f"
  assert_exit 11 ohbox_without cap_dac_override,cap_dac_read_search stats --format json et
  chmod u+r "$f"
  assert_contains "$err" "ohbox stats: "
  assert_contains "$err" "pids.current"
  assert_contains "$err" "Permission denied"
  assert_ok ohbox stats --format json et
  assert_jq "$out" '.pids_current >= 1' "stats once readable"
  assert_ok ohbox rm -f et
}

# Store code still lets errno decide: an unwritable store is 7.
test_store_refused ()
{
  local ro=$T_TMP/ro-store
  mkdir -p "$ro" && chmod 0555 "$ro"
  t_run capsh --drop=cap_dac_override,cap_dac_read_search -- -c 'exec "$@"' capsh \
    "$OHBOX_BIN" --root "$ro/sub" load "oci:$IMG_BUSYBOX:latest"
  assert_eq "$rc" 7 "exit status of a load into an unwritable store"
  assert_contains "$err" "Permission denied"
}

# Each error once, from one place, in one format: "ohbox COMMAND: MESSAGE".
test_reported_once ()
{
  assert_exit 3 ohbox rm nosuch1 nosuch2
  assert_eq "$err" "ohbox rm: no such sandbox \`nosuch1\`; see \`ohbox ps -a\`
ohbox rm: no such sandbox \`nosuch2\`; see \`ohbox ps -a\`" "stderr of rm"
  assert_exit 2 ohbox images --format yaml
  assert_eq "$err" "ohbox images: --format takes json or table, not \`yaml\`
Run 'ohbox images --help' for usage." "stderr of images"
  assert_exit 125 ohbox run --format yaml "$BB" true
  assert_eq "$(grep -c '^ohbox run: ' <<<"$err")" 1 "ohbox run's error lines"
  assert_exit 2 ohbox ci gitlab nope
  assert_eq "$err" "ohbox ci gitlab: unknown stage \`nope\`: use config, prepare, run or cleanup" "stderr of ci"
  assert_exit 3 ohbox logout nohost.invalid
  assert_eq "$(grep -c '^ohbox logout: not logged in to nohost.invalid' <<<"$err")" 1 "ohbox logout's error lines"
}

# errno chooses a kind (ohbox_error_errno) only in store code: store/,
# image/, build/, common/ (file helpers) and the command lines' own files
# (src/cli, src/runc: their state and arguments); the
# other modules say which they are (ohbox_error_sys with their kind).
test_source_rule ()
{
  local bad
  bad=$(cd "$OHBOX_SRCDIR" && grep -rnI --include='*.[ch]' 'ohbox_error_errno (' src executor \
    | grep -v -e '^src/libohbox/\(store\|image\|build\|common\)/' -e '^src/cli/' -e '^src/runc/' || true)
  assert_eq "$bad" "" "ohbox_error_errno outside store code"
}

run_test kill_refused test_kill_refused
run_test stop_refused test_stop_refused
run_test rm_force_refused test_rm_force_refused
run_test pause_refused test_pause_refused
run_test stats_refused test_stats_refused
run_test store_refused test_store_refused
run_test reported_once test_reported_once
run_test source_rule test_source_rule
