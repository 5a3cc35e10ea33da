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

# Maps wider than the user's own id: container 0 is the user, 1..N its
# range in /etc/subuid and /etc/subgid (ru_make_user gives one), written by
# newuidmap and newgidmap.
U_SUBUID=
U_SUBGID=
U_SUBN=

wide_setup ()
{
  U_SUBUID=$(awk -F: -v u="$T_USER" '$1 == u {print $2; exit}' /etc/subuid)
  U_SUBGID=$(awk -F: -v u="$T_USER" '$1 == u {print $2; exit}' /etc/subgid)
  local nu ng
  nu=$(awk -F: -v u="$T_USER" '$1 == u {print $3; exit}' /etc/subuid)
  ng=$(awk -F: -v u="$T_USER" '$1 == u {print $3; exit}' /etc/subgid)
  U_SUBN=$((nu < ng ? nu : ng))
  U_SUBN=$((U_SUBN < 65536 ? U_SUBN : 65536))
  [ "$U_SUBN" -ge 1000 ] || _t_assert_fail "the user's sub ids hold fewer than 1000 ids: $nu, $ng"
}

# umaps UIDS GIDS: a jq filter giving the maps UIDS and GIDS ("INSIDE HOST
# COUNT" ranges, comma-separated).
umaps ()
{
  local u g
  u=$(tr ',' '\n' <<<"$1" | awk 'NF {printf "%s{\"containerID\":%s,\"hostID\":%s,\"size\":%s}", s, $1, $2, $3; s=","}')
  g=$(tr ',' '\n' <<<"$2" | awk 'NF {printf "%s{\"containerID\":%s,\"hostID\":%s,\"size\":%s}", s, $1, $2, $3; s=","}')
  echo ".linux.uidMappings = [$u] | .linux.gidMappings = [$g]"
}

# uwide_maps: the maps of the first test: the user, then its sub ids.
uwide_maps ()
{
  umaps "0 $(id -u "$T_USER") 1, 1 $U_SUBUID $U_SUBN" "0 $(id -g "$T_USER") 1, 1 $U_SUBGID $U_SUBN"
}

# ubind DIR: a filter binding the host's DIR on /share, read-write.
ubind ()
{
  echo ".mounts += [{\"destination\": \"/share\", \"type\": \"bind\", \"source\": \"$1\", \"options\": [\"rbind\", \"rw\"]}]"
}

# nothing_left ID: no state, no process, no cgroup of container ID.
nothing_left ()
{
  assert_exit 1 urunc state "$1"
  assert_file_absent "$U_DIR/run/ohbox-runc/$1" "state directory"
  t_wait_until 5 sh -c "! pgrep -u $T_USER >/dev/null"
  assert_eq "$(find /sys/fs/cgroup -name "*$1*" 2>/dev/null)" "" "cgroups named after $1"
}

# Files made as root and as uid 1000 in the container are the user's and
# its sub id 999's on the host; the maps inside are those asked for.
test_user_wide_maps ()
{
  wide_setup
  local share=$U_DIR/bundle/share uid gid
  uid=$(id -u "$T_USER") gid=$(id -g "$T_USER")
  rm -rf "$share" && mkdir "$share" && chown "$T_USER:" "$share"
  # (chown needs CAP_CHOWN, not in the caps `spec --rootless` gives)
  ubundle "$(uwide_maps) | $(ubind "$share") | .process.capabilities[] += [\"CAP_CHOWN\"] | .process.args = [\"sh\", \"-c\",
    \"cat /proc/self/uid_map /proc/self/gid_map; touch /share/root; touch /share/given; chown 1000:1000 /share/given; mkdir /share/d; chown 1000:1000 /share/d\"]"
  assert_exit 0 urunc run --bundle "$U_DIR/bundle/b" rl6
  assert_eq "$(awk '{print $1, $2, $3}' <<<"$out")" "0 $uid 1
1 $U_SUBUID $U_SUBN
0 $gid 1
1 $U_SUBGID $U_SUBN"
  ubundle "$(uwide_maps) | $(ubind "$share") | .process.user = {\"uid\": 1000, \"gid\": 1000} |
    .process.args = [\"sh\", \"-c\", \"id -u; id -g; touch /share/d/made\"]"
  assert_exit 0 urunc run --bundle "$U_DIR/bundle/b" rl6
  assert_eq "$out" "1000
1000"
  local sub999="$((U_SUBUID + 999)):$((U_SUBGID + 999))"
  assert_eq "$(stat -c %u:%g "$share/root")" "$uid:$gid" "owner of a file root made"
  assert_eq "$(stat -c %u:%g "$share/given")" "$sub999" "owner of a file chowned to 1000"
  assert_eq "$(stat -c %u:%g "$share/d")" "$sub999" "owner of a folder chowned to 1000"
  assert_eq "$(stat -c %u:%g "$share/d/made")" "$sub999" "owner of a file uid 1000 made"
  nothing_left rl6
}

# Sub ids that are not the user's: newuidmap refuses, and the error says
# which map; nothing is left.
test_user_wide_maps_not_owned ()
{
  wide_setup
  local uid beyond
  uid=$(id -u "$T_USER")
  beyond=$(awk -F: -v u="$T_USER" '$1 == u {print $2 + $3; exit}' /etc/subuid)
  ubundle "$(umaps "0 $uid 1, 1 $beyond 100" "0 $(id -g "$T_USER") 1, 1 $U_SUBGID 100") | .process.args = [\"true\"]"
  rm -f "$U_DIR/run/runc.log"
  assert_exit 1 urunc run --bundle "$U_DIR/bundle/b" rl7
  local says="could not write the uid map \`0 $uid 1, 1 $beyond 100\` (exit 1): newuidmap: "
  assert_contains "$err" "$says"
  assert_match "$err" "check /etc/subuid$"
  assert_contains "$(cat "$U_DIR/run/runc.log")" "$says"
  nothing_left rl7
}

# More ranges than ohbox-runc takes, overlapping ranges: refused by name
# before anything starts.
test_user_wide_maps_invalid ()
{
  wide_setup
  local uid gid max many="" i
  uid=$(id -u "$T_USER") gid=$(id -g "$T_USER")
  max=$(awk '$2 == "OHBOX_IDMAP_MAX" {print $3}' "$OHBOX_SRCDIR/src/libohbox/sandbox/linux.h")
  for i in $(seq 1 "$max"); do many="$many, $i $((U_SUBUID + i)) 1"; done
  ubundle "$(umaps "0 $uid 1$many" "0 $gid 1") | .process.args = [\"true\"]"
  assert_exit 1 urunc run --bundle "$U_DIR/bundle/b" rl8
  assert_contains "$err" "linux.uidMappings: more than $max ranges is not supported"
  nothing_left rl8
  ubundle "$(umaps "0 $uid 1, 1 $U_SUBUID 100, 50 $((U_SUBUID + 200)) 100" "0 $gid 1") | .process.args = [\"true\"]"
  assert_exit 1 urunc run --bundle "$U_DIR/bundle/b" rl8
  assert_contains "$err" "linux.uidMappings[2]: container ids 50-149 overlap those of linux.uidMappings[1] (1-100)"
  nothing_left rl8
  ubundle "$(umaps "0 $uid 1" "0 $gid 1, 1 $U_SUBGID 100, 200 $((U_SUBGID + 50)) 10") | .process.args = [\"true\"]"
  assert_exit 1 urunc run --bundle "$U_DIR/bundle/b" rl8
  assert_contains "$err" "linux.gidMappings[2]: host ids $((U_SUBGID + 50))-$((U_SUBGID + 59)) overlap those of linux.gidMappings[1]"
  nothing_left rl8
}

# newuidmap not in PATH: the error says so; no narrower map instead.
test_user_wide_maps_no_helper ()
{
  wide_setup
  mkdir -p "$U_DIR/bin"
  ubundle "$(uwide_maps) | .process.args = [\"true\"]"
  rm -f "$U_DIR/run/runc.log"
  assert_exit 1 ru_as_user PATH="$U_DIR/bin" "$U_DIR/ohbox-runc" --log "$U_DIR/run/runc.log" run --bundle "$U_DIR/bundle/b" rl9
  local says="\`newuidmap\` not found in PATH ($U_DIR/bin): it writes the uid map \`0 $(id -u "$T_USER") 1, 1 $U_SUBUID $U_SUBN\`"
  assert_contains "$err" "$says"
  assert_contains "$(cat "$U_DIR/run/runc.log")" "$says"
  nothing_left rl9
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
run_test user_wide_maps test_user_wide_maps
run_test user_wide_maps_not_owned test_user_wide_maps_not_owned
run_test user_wide_maps_invalid test_user_wide_maps_invalid
run_test user_wide_maps_no_helper test_user_wide_maps_no_helper
run_test podman_rootless test_podman_rootless
