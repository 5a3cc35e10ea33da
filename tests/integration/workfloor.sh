#!/bin/bash
# workfloor.sh: bench/workfloor.c, the work floor bench/start.sh compares
# ohbox's start with, does the work of an ohbox start: inside, the same
# mounts (mount point and filesystem type), capability sets, no_new_privs,
# one seccomp filter, a cgroup in every hierarchy and 65536 mapped ids; and
# it leaves nothing behind, whether the command succeeds or the start
# fails.  When ohbox's start changes what it mounts, this fails until the
# work floor does the same.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run
BB=localhost/busybox:latest
WF=$T_TMP/workfloor

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups)"; return 1; }
  command -v cc >/dev/null || { echo "needs a C compiler (cc) to build bench/workfloor.c"; return 1; }
  img_build || return 1
  cc -O2 -o "$WF" "$OHBOX_SRCDIR/bench/workfloor.c" || return 1
}
t_setup_or_die setup setup

# What a process inside sees of its sandbox, one fact per line.
VIEW='awk '"'"'{ for (i = 7; i <= NF; i++) if ($i == "-") { print "mount", $5, $(i + 1); break } }'"'"' /proc/self/mountinfo | sort
grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status
echo "cgroups $(wc -l </proc/self/cgroup)"
awk '"'"'{ print "ids", $3 }'"'"' /proc/self/uid_map'

# The image in this test's store, and the seccomp program and layers of a
# sandbox of it (as bench/start.sh takes them); the start also makes
# ohbox's parent cgroups.
wf_inputs ()
{
  local id
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null || return 1
  id=$(ohbox run -d --network=none "$BB" sleep 60) || return 1
  cp "$OHBOX_RUNROOT/$id/seccomp.bpf" "$T_TMP/seccomp.bpf"
  LAYERS=$(sed "s|^sha256:|$T_ROOT/layers/sha256/|" "$T_ROOT/sandboxes/$id/layers" | tr '\n' ' ')
  ohbox rm -f "$id" >/dev/null
  SCRATCH=$T_ROOT/work-floor
  mkdir -p "$SCRATCH"
}

leftovers ()
{
  {
    ls -A "$SCRATCH"
    find /sys/fs/cgroup -maxdepth 3 -name 'workfloor-*' || true
  } 2>/dev/null
}

test_same_sandbox ()
{
  wf_inputs
  t_run ohbox run --rm --network=none "$BB" sh -c "$VIEW"
  assert_eq 0 "$rc" "ohbox run"
  local want=$out
  # shellcheck disable=SC2086 # LAYERS: one argument per layer
  t_run "$WF" "$SCRATCH" "$T_TMP/seccomp.bpf" $LAYERS -- /bin/sh -c "$VIEW"
  assert_eq 0 "$rc" "workfloor: $err"
  assert_eq "$want" "$out" "the view inside ohbox's sandbox and the work floor's"
  assert_match "$out" 'mount /etc/hosts '
  assert_match "$out" 'Seccomp:[[:space:]]+2'
  assert_eq "" "$(leftovers)" "left behind by the work floor"
}

test_exit_codes_and_failures ()
{
  wf_inputs
  # shellcheck disable=SC2086
  t_run "$WF" "$SCRATCH" "$T_TMP/seccomp.bpf" $LAYERS -- /bin/sh -c 'echo x >/new; mkdir -p /a/b; exit 7'
  assert_eq 7 "$rc" "the command's exit code"
  # shellcheck disable=SC2086
  t_run "$WF" "$SCRATCH" "$T_TMP/seccomp.bpf" $LAYERS -- /no/such/command
  assert_eq 125 "$rc" "a command that is not there"
  assert_match "$err" 'exec /no/such/command'
  t_run "$WF" "$SCRATCH" "$T_TMP/seccomp.bpf" "$T_TMP/no-such-layer" -- /bin/true
  assert_eq 125 "$rc" "a layer that is not there"
  assert_match "$err" 'idmapped layer .*no-such-layer'
  t_run "$WF" "$SCRATCH" "$T_TMP/seccomp.bpf" /x
  assert_eq 125 "$rc" "usage"
  assert_match "$err" 'usage: workfloor'
  assert_eq "" "$(leftovers)" "left behind by the work floor"
}

run_test same_sandbox test_same_sandbox
run_test exit_codes_and_failures test_exit_codes_and_failures
