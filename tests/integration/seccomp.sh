#!/bin/bash
# seccomp.sh: the seccomp profile as a process inside a real sandbox sees it.
# tests/escape/seccomp-probe.c (built static here) runs in `ohbox run` of the
# busybox image pulled from a test registry, bind-mounted read-only, and
# prints one "SYSCALL RESULT" line per probe; each result is asserted:
#  - the calls Docker's profile blocks fail with EPERM under the default
#    profile (mount, unshare with namespace flags, setns, keyrings, bpf,
#    perf_event_open, open_by_handle_at, kexec, modules, clocks, swap, reboot,
#    pivot_root, acct, quotactl, lookup_dcookie, unsafe personality, ...);
#  - the everyday ones work (threads, fork, sockets, mmap+mprotect(EXEC),
#    getrandom, memfd_create), and the ones the profile treats specially get
#    what it says (clone3: ENOSYS so that libc falls back to clone;
#    io_uring_setup and AF_VSOCK sockets: EPERM);
#  - (ptrace and process_vm_readv of a host process and of PID 1 are in
#    escape.sh, test ptrace_host, with the same prober);
#  - `--security-opt seccomp=unconfined` changes the result of calls the
#    profile blocks (so the profile, not the missing capability, blocked
#    them), and a custom profile file is applied (its own errno comes back).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run
PROBE=$T_TMP/seccomp-probe

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups)"; return 1; }
  [ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -n "$(gcc -print-file-name=libc.a | grep /)" ] ||
    { echo "gcc -static needs libc.a (apt-get install libc6-dev)"; return 1; }
  gcc -static -O1 -Wall -Wextra -Werror -pthread -I"$OHBOX_BUILDDIR" -o "$PROBE" \
    "$OHBOX_SRCDIR/tests/escape/seccomp-probe.c" || return 1
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
}
t_setup_or_die setup setup

BB=$REG_HOST/test/busybox:latest

pull_bb ()
{
  ohbox pull --tls-verify=false -q "$BB" >/dev/null
}

# probe [RUN-OPTIONS...] -- [PROBE-ARGS...]: runs the prober in a sandbox;
# its lines in $out, and each result in R[SYSCALL].
declare -A R
probe ()
{
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    opts+=("$1")
    shift
  done
  shift
  assert_ok ohbox run --rm --network none -v "$PROBE:/probe:ro" "${opts[@]}" "$BB" /probe 0 "$@"
  R=()
  local name result
  while read -r name result; do
    R[$name]=$result
  done <<<"$out"
}

# expect RESULT NAME...: each probe NAME gave RESULT.
expect ()
{
  local want=$1 n bad=
  shift
  for n in "$@"; do
    [ "${R[$n]:-missing}" = "$want" ] || bad+=" $n=${R[$n]:-missing}"
  done
  [ -z "$bad" ] || _t_assert_fail "expected $want from:$bad"
}

BLOCKED=(mount umount2 pivot_root keyctl add_key request_key bpf perf_event_open open_by_handle_at
  name_to_handle_at kexec_load kexec_file_load init_module finit_module delete_module clock_settime
  settimeofday clock_adjtime swapon swapoff reboot acct quotactl lookup_dcookie personality_unsafe
  personality_no_aslr syslog iopl ioperm fsopen open_tree move_mount uselib mbind kcmp unshare_user
  unshare_ns setns clone_newns userfaultfd)
EVERYDAY=(thread fork mmap_mprotect_exec memfd_create getrandom personality_query socket_inet
  socket_inet_udp socket_unix)

# The default profile of this build. ohbox prefers an installed copy
# (PKGDATADIR/seccomp/default.json, so that an administrator can edit it)
# over the one compiled in: when an older `make install` left one that
# differs from this tree's, this tree's is passed explicitly (the same
# bytes the build compiled in), so the test checks the profile under test.
default_opts ()
{
  DEFAULT_OPTS=()
  local installed
  installed=$(strings -a "$OHBOX_BIN" | grep -m1 '^/.*/seccomp/default\.json$' || true)
  if [ -n "$installed" ] && [ -e "$installed" ] &&
    ! cmp -s "$installed" "$OHBOX_SRCDIR/seccomp-profiles/default.json"; then
    echo "# $installed differs from this tree's profile: testing this tree's" >&9
    DEFAULT_OPTS=(--security-opt "seccomp=$OHBOX_SRCDIR/seccomp-profiles/default.json")
  fi
}

test_default_profile ()
{
  pull_bb
  default_opts
  probe "${DEFAULT_OPTS[@]}" --
  expect EPERM "${BLOCKED[@]}"
  expect ok "${EVERYDAY[@]}"
  # What the profile says about these: clone3 ENOSYS (libc falls back to
  # clone, whose namespace flags the filter can inspect), io_uring and vsock
  # refused.
  expect ENOSYS clone3
  expect EPERM io_uring_setup socket_vsock
  echo "# $(wc -l <<<"$out") probes" >&9
  # Even root of the host's user namespace (--userns host) is held back by
  # the profile (it has no CAP_SYS_ADMIN and friends either way, but the
  # probes whose arguments the kernel refuses before any capability check
  # show the filter: EINVAL without it).
  probe "${DEFAULT_OPTS[@]}" --userns host -- clock_settime settimeofday reboot keyctl unshare_user
  expect EPERM clock_settime settimeofday reboot keyctl unshare_user
}

test_unconfined ()
{
  pull_bb
  probe --security-opt seccomp=unconfined --
  # The kernel now answers: bad arguments are refused before the capability
  # checks, and unprivileged calls succeed.
  expect EINVAL clock_settime settimeofday clone3
  expect ok keyctl personality_unsafe personality_no_aslr
  expect ok "${EVERYDAY[@]}"
  # The results that changed, for the log: the profile is what blocked them.
  local n changed=0
  for n in "${BLOCKED[@]}"; do
    [ "${R[$n]}" != EPERM ] && changed=$((changed + 1))
  done
  echo "# unconfined: $changed of ${#BLOCKED[@]} blocked probes answered by the kernel instead" >&9
  [ "$changed" -ge 8 ] || _t_assert_fail "only $changed probes changed without the profile"
}

test_custom_profile ()
{
  pull_bb
  # Everything allowed but getrandom and keyctl, refused with errnos no
  # kernel path gives them here.
  cat >"$T_WORK/profile.json" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["getrandom"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18},
              {"names": ["keyctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": 33}]}
EOF
  probe --security-opt "seccomp=$T_WORK/profile.json" -- getrandom keyctl personality_unsafe thread fork
  expect EXDEV getrandom
  expect EDOM keyctl
  expect ok personality_unsafe thread fork
  # A broken profile is refused before anything runs.
  echo '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["nosuchcall"], "action": "BOGUS"}]}' \
    >"$T_WORK/bad.json"
  assert_exit 125 ohbox run --rm --security-opt "seccomp=$T_WORK/bad.json" "$BB" true
  assert_contains "$err" "bad.json"
  assert_exit 125 ohbox run --rm --security-opt "seccomp=$T_WORK/missing.json" "$BB" true
  assert_contains "$err" "missing.json"
}

run_test default_profile test_default_profile
run_test unconfined test_unconfined
run_test custom_profile test_custom_profile
