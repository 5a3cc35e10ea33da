#!/bin/bash
# footprint.sh: what a start and a running sandbox cost the host.  The
# binary does not link libcurl, libarchive, libnftables or libcrypto (loaded
# on first use: dl.h), so neither the monitor nor the init maps them; the monitor's
# anonymous memory stays small; the init moved itself into every cgroup
# hierarchy (v1 `tasks`); exec applies the seccomp filter its sandbox
# started with (saved in its state dir), even after the profile changed.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"
LAZY='libcurl|libarchive|libnftables|libxml2|libgnutls|libicu'
# `run` hashes nothing (the store verified the image's blobs when they came
# in; the seccomp cache compares whole keys), so it never loads libcrypto,
# with or without the kernel's sha256 (AF_ALG).
LAZY_RUN="$LAZY|libcrypto"

test_binary_links ()
{
  local libs
  libs=$(ldd "$OHBOX_BIN")
  assert_match "$libs" 'libjansson'
  assert_no_match "$libs" "$LAZY|libcrypto" "ldd ohbox"
  # ps and --version load none of them (the loader says what it loads).
  assert_no_match "$(LD_DEBUG=files "$OHBOX_BIN" --root "$T_ROOT" ps -a 2>&1)" "$LAZY|libcrypto" "ohbox ps"
  assert_no_match "$(LD_DEBUG=files "$OHBOX_BIN" --version 2>&1)" "$LAZY|libcrypto" "ohbox --version"
}

test_monitor_and_init ()
{
  load_bb
  local id init mon cmd line
  id=$(ohbox run -d --network=none "$BB" sleep 60)
  init=$(ohbox ps --format json | jq -r --arg id "$id" '.[] | select(.id == $id) | .pid')
  mon=$(ps -o ppid= -p "$init" | tr -d ' ')
  t_wait_until 10 pgrep -P "$init"
  cmd=$(pgrep -P "$init" | head -n 1)
  assert_no_match "$(cat "/proc/$mon/maps")" "$LAZY_RUN" "the monitor's mappings"
  assert_no_match "$(cat "/proc/$init/maps")" "$LAZY_RUN" "the init's mappings"
  # Anonymous memory of the monitor: ~450 KiB now (1.9 MiB with a 1 MiB
  # __thread buffer and libcurl's relocations).
  # (judged after the test: t_judge_memory, as monitor_memory)
  awk '/^Anonymous:/ {print $2}' "/proc/$mon/smaps_rollup" >"$T_TMP/monitor-anon"
  # Every hierarchy, v1 and v2, for the init and the command.
  for p in "$init" "$cmd"; do
    while read -r line; do
      assert_match "$line" "/ohbox/$id\$" "/proc/$p/cgroup"
    done <"/proc/$p/cgroup"
  done
  [ ! -d "/sys/fs/cgroup/pids/ohbox/$id" ] || assert_match "$(cat "/sys/fs/cgroup/pids/ohbox/$id/tasks")" "^$cmd\$"
  ohbox rm -f "$id" >/dev/null
}

test_exec_keeps_sandbox_seccomp ()
{
  load_bb
  local prof=$T_TMP/profile.json id
  echo '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}' >"$prof"
  id=$(ohbox run -d --network=none --security-opt "seccomp=$prof" "$BB" sleep 60)
  assert_file_exists "$OHBOX_RUNROOT/$id/seccomp.bpf"
  # The profile changes after the start: exec still gets the sandbox's filter.
  echo '{"defaultAction": "SCMP_ACT_ALLOW"}' >"$prof"
  assert_fails ohbox exec "$id" mkdir /tmp/x
  assert_ok ohbox exec "$id" touch /tmp/y
  # Without the saved filter (a sandbox an older ohbox started): compiled
  # from the profile again, still confined.
  rm "$OHBOX_RUNROOT/$id/seccomp.bpf"
  assert_ok ohbox exec "$id" sh -c 'mkdir /tmp/z && grep "^Seccomp:" /proc/self/status'
  assert_match "$out" '^Seccomp:[[:space:]]+2$'
  ohbox rm -f "$id" >/dev/null
}

# OHBOX_TRACE_START (bench/start-phases.sh): each step of a start once, in
# order, from the parent, the init (pid 1) and the command (pid 2); nothing
# without it. Without a network to release, the teardown after the exit is
# recorded is done in the caller's process (with one, it runs off the
# critical path, in a process whose stderr is not the caller's).
test_trace_start ()
{
  load_bb
  OHBOX_TRACE_START=1 t_run "$OHBOX_BIN" --root "$T_ROOT" run --rm --network=none "$BB" true
  assert_eq 0 "$rc" "traced run"
  local steps
  steps=$(sed -n 's/^ohbox-trace [0-9.]* [0-9]* //p' <<<"$err" | tr '\n' '|')
  assert_match "$steps" '^run: begin\|state directory\|image\|'
  assert_match "$steps" '\|monitor: exited\|monitor: cgroups removed\|monitor: state updated\|monitor: torn down\|$'
  assert_match "$err" 'ohbox-trace [0-9.]+ 1 child: pivot_root'
  assert_match "$err" 'ohbox-trace [0-9.]+ 2 command: execve'
  assert_eq 20 "$(grep -c '^ohbox-trace ' <<<"$err")" "trace lines"
  assert_ok ohbox run --rm --network=none "$BB" true
  assert_not_contains "$err" "ohbox-trace"
}

run_test binary_links test_binary_links
run_test monitor_and_init test_monitor_and_init
t_judge_memory monitor_memory "$T_TMP/monitor-anon" 1024 "the monitor's anonymous memory"
run_test exec_keeps_sandbox_seccomp test_exec_keeps_sandbox_seccomp
run_test trace_start test_trace_start
