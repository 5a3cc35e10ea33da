#!/bin/bash
# runc-rootless.sh: ohbox-runc without host privileges. An ordinary user
# made here runs a bundle from `ohbox-runc spec --rootless` (its single-id
# maps) through create/start/state/exec/kill/delete and run; a cgroup limit
# it cannot apply is refused by name; rootless podman (the same user, its
# own user namespace) runs busybox with --runtime ohbox-runc: run, run -d,
# exec, stop, rm. Nothing of the user is left running.
#
# NETWORK RULE: no network (podman --network none).
# run-tests: host-network lock=users
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/rootless_user.sh"
ru_init ohrr

RUNC=$OHBOX_BUILDDIR/ohbox-runc

setup ()
{
  ru_need umoci jq || return 1
  [ -x "$RUNC" ] || { echo "ohbox-runc is not built (make ohbox-runc)"; return 1; }
  img_build || return 1
  ru_make_user 400000 bundle image || return 1
  cp "$RUNC" "$U_DIR/ohbox-runc" && chmod 755 "$U_DIR/ohbox-runc" || return 1
  cp -a "$IMG_BUSYBOX/." "$U_DIR/image/" && chown -R "$T_USER:" "$U_DIR/image" || return 1
  # the bundle as the user unpacks it (umoci --rootless), the config as `spec --rootless` writes it
  ru_as_user umoci --log error unpack --rootless --image "$U_DIR/image:latest" "$U_DIR/bundle/b" || return 1
  (cd "$U_DIR/bundle/b" && rm -f config.json && ru_as_user "$U_DIR/ohbox-runc" spec --rootless) &&
    cp "$U_DIR/bundle/b/config.json" "$T_TMP/config.orig"
}
t_setup_or_die setup setup

# urunc ARGS...: ohbox-runc as the user, its state under its XDG_RUNTIME_DIR.
urunc ()
{
  echo "+ (as $T_USER) ohbox-runc $*" >&9
  ru_as_user "$U_DIR/ohbox-runc" --log "$U_DIR/run/runc.log" "$@"
}

# ubundle JQ-FILTER: the user's bundle's config, as `spec --rootless` wrote
# it, with FILTER applied.
ubundle ()
{
  jq ".process.terminal = false | $1" "$T_TMP/config.orig" >"$T_TMP/c.json" &&
    cat "$T_TMP/c.json" >"$U_DIR/bundle/b/config.json"
}

ustatus_is ()
{
  [ "$(urunc state "$1" | jq -r .status)" = "$2" ]
}

test_user_lifecycle ()
{
  ubundle '.process.args = ["sh", "-c", "id -u; cat /proc/self/uid_map; sleep 1000"]'
  assert_exit 0 urunc create --bundle "$U_DIR/bundle/b" rl1
  assert_eq "$(urunc state rl1 | jq -r .status)" created
  assert_dir_exists "$U_DIR/run/ohbox-runc/rl1"
  assert_exit 0 urunc start rl1
  assert_eq "$(urunc state rl1 | jq -r .status)" running
  local pid
  pid=$(urunc state rl1 | jq -r .pid)
  # the container's init is the user's, in a user namespace mapping 0 to it
  assert_eq "$(stat -c %U "/proc/$pid")" "$T_USER"
  assert_eq "$(awk '{print $1, $2, $3}' "/proc/$pid/uid_map")" "0 $(id -u "$T_USER") 1"
  assert_exit 0 urunc exec rl1 sh -c 'id -u; hostname'
  assert_eq "$(head -n 1 <<<"$out")" 0
  assert_exit 0 urunc kill rl1 KILL
  t_wait_until 10 ustatus_is rl1 stopped
  assert_exit 0 urunc delete rl1
  assert_exit 1 urunc state rl1
  t_wait_until 5 sh -c "! pgrep -u $T_USER >/dev/null"
}

test_user_run_foreground ()
{
  ubundle '.process.args = ["sh", "-c", "echo in-$(id -u); exit 5"]'
  assert_exit 5 urunc run --bundle "$U_DIR/bundle/b" rl2
  assert_eq "$out" in-0
  assert_exit 1 urunc state rl2
}

# A limit that cannot be applied (no cgroup delegated to the user on this
# host) is refused by its name; nothing is left.
test_user_limit_refused ()
{
  ubundle '.process.args = ["true"] | .linux.resources = {"pids": {"limit": 50}}'
  assert_exit 1 urunc run --bundle "$U_DIR/bundle/b" rl3
  assert_contains "$err" "linux.resources.pids.limit: cannot be applied rootless"
  assert_exit 1 urunc state rl3
}

# A cgroupsPath with no limit: no cgroup, said in the --debug log only.
test_user_cgroups_path_skipped ()
{
  ubundle '.process.args = ["true"] | .linux.cgroupsPath = "/ohbox-rr-test/rl5" | del(.linux.resources)'
  assert_exit 0 urunc --debug run --bundle "$U_DIR/bundle/b" rl5
  assert_eq "$err" ""
  assert_contains "$(cat "$U_DIR/run/runc.log")" 'level=debug msg="rootless: no cgroup for the container'
  assert_exit 1 test -e /sys/fs/cgroup/pids/ohbox-rr-test
}

# Root's runtime directory is not the user's; --rootless false is refused.
test_user_not_rootless ()
{
  ubundle '.process.args = ["true"]'
  assert_exit 1 urunc --rootless false run --bundle "$U_DIR/bundle/b" rl4
  assert_contains "$err" "--rootless false"
  ubundle '.process.args = ["true"] | .linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)'
  assert_exit 1 urunc run --bundle "$U_DIR/bundle/b" rl4
  assert_contains "$err" "rootless without a user namespace"
}

# upm ARGS...: rootless podman as the user, on its own storage.
upm ()
{
  echo "+ (as $T_USER) podman $*" >&9
  (cd "$U_DIR" && ru_as_user podman --root "$U_DIR/home/pm" --runroot "$U_DIR/run/pm" --storage-driver vfs \
    --cgroup-manager cgroupfs --events-backend file --log-level warn "$@")
}

pm_setup ()
{
  command -v podman >/dev/null && command -v conmon >/dev/null || { echo "podman or conmon is not installed"; return 2; }
  command -v skopeo >/dev/null || { echo "skopeo is not installed"; return 2; }
  # (an archive: podman names an oci: layout after its path, which mktemp's capitals make invalid)
  skopeo copy -q "oci:$U_DIR/image:latest" "docker-archive:$U_DIR/busybox.tar:localhost/busybox:latest" &&
    chown "$T_USER:" "$U_DIR/busybox.tar" && upm load -q -i "$U_DIR/busybox.tar"
}

# Whether rootless podman works here at all, whatever the runtime: with
# Debian's runc (and crun if installed); the reason when not.
pm_host_reason ()
{
  local rt
  for rt in runc crun; do
    command -v "$rt" >/dev/null || continue
    if upm run --rm --network none --runtime "$(command -v "$rt")" localhost/busybox echo hi >"$T_TMP/pm-$rt.out" 2>&1 &&
      grep -q '^hi$' "$T_TMP/pm-$rt.out"; then
      return 0
    fi
  done
  echo "rootless podman fails with runc too: $(tail -n 1 "$T_TMP/pm-runc.out")"
  return 1
}

test_podman_rootless ()
{
  pm_ready=0
  pm_setup >"$T_TMP/pm-setup.log" 2>&1 || pm_ready=$?
  [ "$pm_ready" = 2 ] && skip "$(tail -n 1 "$T_TMP/pm-setup.log")"
  [ "$pm_ready" = 0 ] || _t_assert_fail "podman setup failed: $(tail -n 3 "$T_TMP/pm-setup.log")"
  local why
  why=$(pm_host_reason) || skip "$why"
  local rt=$U_DIR/ohbox-runc
  assert_exit 0 upm run --rm --network none --runtime "$rt" localhost/busybox sh -c 'echo hi; id -u'
  assert_eq "$out" "hi
0"
  assert_exit 0 upm run -d --name rlpm --network none --runtime "$rt" localhost/busybox sleep 1000
  assert_exit 0 upm exec rlpm sh -c 'echo from-exec'
  assert_eq "$out" from-exec
  assert_exit 0 upm stop -t 2 rlpm
  assert_exit 0 upm rm rlpm
  assert_exit 0 upm ps -a -q
  assert_eq "$out" ""
}

run_test user_lifecycle test_user_lifecycle
run_test user_run_foreground test_user_run_foreground
run_test user_limit_refused test_user_limit_refused
run_test user_cgroups_path_skipped test_user_cgroups_path_skipped
run_test user_not_rootless test_user_not_rootless
run_test podman_rootless test_podman_rootless
