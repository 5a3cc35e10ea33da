#!/bin/bash
# policy.sh: the run policy (src/libohbox/policy/run_policy.h) through its
# front doors. The same requests through `ohbox run --dry-run --format json`
# and through libohbox's ohbox_run_plan() (tests/lib/libohbox-plan.c) give
# the same plan, as root and as a rootless user made here with pasta only,
# slirp4netns only and neither (the helpers hidden from its $PATH); and the
# sandboxes both start are what the plan says: the network mode and its
# backend, the executor of a runtime image listening on 0.0.0.0:8000 of its
# own network namespace only and published on the host's 127.0.0.1 only
# (nothing of it listening on the host), its URL in executor.json, `ohbox
# action` reaching it; with --network host (root) on the host's 127.0.0.1
# only; with --network none reached through its unix socket only;
# rootless with --network host refused, and rootless with neither helper a
# runtime sandbox refused unless --network none is asked for, and an
# ordinary one on loopback only.
#
# NETWORK RULE: traffic only to 127.0.0.1 and to the sandboxes made here.
# run-tests: host-network lock=users
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"

export OHBOX_RUNROOT=$T_TMP/run
export OHBOX_EXECUTOR=$OHBOX_BUILDDIR/ohbox-executor
export OHBOX_EXECUTOR_SRCDIR=$OHBOX_SRCDIR/executor
PLAN=$OHBOX_BUILDDIR/tests/lib/libohbox-plan
BB=localhost/busybox:latest

. "$T_LIB/rootless_user.sh"
ru_init ohbp


# $U_DIR/path-WHICH: every command of /usr/bin but the user-mode network
# helpers WHICH hides, so that ohbox (which looks them up in $PATH) sees a
# host without them.
path_without ()
{
  local dir=$U_DIR/path-$1
  shift
  mkdir -p "$dir"
  ln -s /usr/bin/* "$dir/" 2>/dev/null
  local t
  for t in "$@"; do
    rm -f "$dir/$t"
  done
}

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, bridge, a user made here)"; return 1; }
  [ -x "$PLAN" ] || { echo "tests/lib/libohbox-plan is not built (make check)"; return 1; }
  [ -x "$OHBOX_EXECUTOR" ] || { echo "ohbox-executor is not built (make ohbox-executor)"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
  local c
  for c in useradd setpriv newuidmap nsenter ss curl jq pasta slirp4netns; do
    command -v "$c" >/dev/null || { echo "$c is not installed"; return 1; }
  done
  img_build || return 1
  ru_make_user 400000 || return 1
  cp -r "$IMG_BUSYBOX" "$U_DIR/busybox" && chown -R "$T_USER:" "$U_DIR/busybox" || return 1
  path_without pasta slirp4netns
  path_without slirp pasta passt
  path_without neither pasta passt slirp4netns
}
t_setup_or_die setup setup

# as_user PATHDIR CMD...: CMD as the user, with PATH the one of path_without.
as_user ()
{
  local path=$U_DIR/path-$1
  shift
  echo "+ (as $T_USER, PATH $path) $*" >&9
  ru_as_user PATH="$path" "$@"
}
uohbox ()
{
  local path=$1
  shift
  as_user "$path" "$OHBOX_BIN" "$@"
}
USTORE=

# The runtime image in the store of the test (root) or of the user (once).
root_images ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  assert_ok ohbox build --no-pull -q "$BB"
  RT=$out
}
user_images ()
{
  USTORE=$U_DIR/home/.local/share/ohbox
  if [ ! -s "$U_DIR/rt" ]; then
    assert_ok uohbox slirp load "oci:$U_DIR/busybox:latest"
    assert_ok uohbox slirp build --no-pull -q "$BB"
    echo "$out" >"$U_DIR/rt"
  fi
  RT=$(cat "$U_DIR/rt")
}

# same_plan RUNNER ARGS...: `ohbox run --dry-run --format json ARGS` and
# libohbox-plan with the same request (ARGS in libohbox-plan's syntax, which
# ohbox run shares) print the same plan, or fail with the same message;
# the plan in $plan.
same_plan ()
{
  local runner=$1 cli lib cli_rc=0 lib_rc=0
  shift
  if [ "$runner" = root ]; then
    cli=$(ohbox run --dry-run --format json "$@" 2>"$T_WORK/cli.err") || cli_rc=$?
    lib=$("$PLAN" "$T_ROOT" "$@" 2>"$T_WORK/lib.err") || lib_rc=$?
  else
    cli=$(uohbox "$runner" run --dry-run --format json "$@" 2>"$T_WORK/cli.err") || cli_rc=$?
    lib=$(as_user "$runner" "$PLAN" "$USTORE" "$@" 2>"$T_WORK/lib.err") || lib_rc=$?
  fi
  if [ "$cli_rc" != 0 ] || [ "$lib_rc" != 0 ]; then
    [ "$cli_rc" = 125 ] && [ "$lib_rc" = 1 ] ||
      _t_assert_fail "$*: ohbox run exited $cli_rc ($(cat "$T_WORK/cli.err")), libohbox $lib_rc ($(cat "$T_WORK/lib.err"))"
    # The same refusal, in the same words.
    assert_eq "$(sed 's/^ohbox run: //' "$T_WORK/cli.err")" "$(sed 's/^error [0-9]*: //' "$T_WORK/lib.err")" \
      "the refusal of $*"
    plan=
    refusal=$(cat "$T_WORK/cli.err")
    return 0
  fi
  assert_eq "$(jq -S . <<<"$lib")" "$(jq -S . <<<"$cli")" "the plans of \`$*\` (libohbox vs ohbox run)"
  plan=$cli
  refusal=
}

# ---------------------------------------------------------------- plans

test_root_plans ()
{
  root_images
  local port
  port=$(t_free_port)
  same_plan root "$BB"
  assert_jq "$plan" '.runtime_image == false and .executor == null and .network.mode == "bridge" and .network.backend == "veth" and .network.explicit == false and .process.command == null'
  same_plan root "$BB" true
  assert_jq "$plan" '.process.command == ["true"]'
  same_plan root "$RT"
  assert_jq "$plan" '.runtime_image == true and .network.mode == "bridge" and .network.backend == "veth"
    and .network.publish == ["127.0.0.1::8000/tcp"] and .executor.port == 8000
    and .executor.listen_address == "0.0.0.0" and .executor.host_address == "127.0.0.1"
    and .executor.host_port == null and .executor.session_key == "generated" and .warnings == []'
  same_plan root --executor-port "$port" "$RT"
  assert_jq "$plan" ".network.publish == [\"127.0.0.1:$port:$port/tcp\"] and .executor.url == \"http://127.0.0.1:$port\""
  same_plan root --network host "$RT"
  assert_jq "$plan" '.network.mode == "host" and .network.publish == [] and .executor.listen_address == "127.0.0.1"
    and (.warnings | length) == 1 and (.warnings[0] | contains("abstract unix sockets"))'
  same_plan root --network none --executor-port "$port" "$RT"
  assert_jq "$plan" ".executor.reachable_from_host == false and .executor.listen_address == \"127.0.0.1\" and .executor.port == $port"
  same_plan root -e SESSION_API_KEY=mine "$RT"
  assert_jq "$plan" '.executor.session_key == "environment" and .process.env == ["SESSION_API_KEY"]'
  assert_not_contains "$plan" mine "the key in the plan"
  same_plan root -e SESSION_API_KEY= "$RT"
  assert_contains "$refusal" "the session API key is empty"
  same_plan root --network bridge "$RT" sh -c true
  assert_jq "$plan" '.executor == null and .network.explicit == true and .network.publish == []'
  same_plan root no/such:image
  assert_contains "$refusal" "no/such:image"
  same_plan root --storage-size 32m "$BB" true
  assert_jq "$plan" '.limits.storage_size == 33554432 and .warnings == []'
  same_plan root --storage-size 1m "$BB" true
  assert_contains "$refusal" "at least 16 MiB"
  # Devices are decided by the policy too: the same nodes, the same refusals.
  mkdir -p "$T_WORK/cdi"
  printf 'cdiVersion: 0.5.0\nkind: test.ohbox/card\ndevices:\n  - name: c0\n    containerEdits:\n      env: [CARD=0]\n      deviceNodes:\n        - path: /dev/card0\n          hostPath: /dev/zero\n' \
    >"$T_WORK/cdi/card.yaml"
  same_plan root --cdi-spec-dir "$T_WORK/cdi" --device test.ohbox/card=c0 --device /dev/full:/dev/f:r "$BB" true
  assert_jq "$plan" '.devices.names == ["test.ohbox/card=c0", "/dev/full"] and [.devices.nodes[].path] == ["/dev/card0", "/dev/f"]
    and .devices.nodes[1].access == "r" and .devices.env == ["CARD"]'
  same_plan root --cdi-spec-dir "$T_WORK/cdi" --device test.ohbox/card=c9 "$BB" true
  assert_contains "$refusal" "is not defined by any spec"
  [ -e /dev/nvidiactl ] || { same_plan root --gpus 1 "$BB" true; assert_contains "$refusal" "no NVIDIA driver found"; }
  # Nothing was started by any of it.
  assert_ok ohbox ps -a -q
  assert_eq "$out" "" "sandboxes after dry runs"
}

# Named networks and --egress are decided by the run policy for every
# front door: the same plan (or refusal) through ohbox run and ohbox_run().
test_network_plans ()
{
  root_images
  same_plan root "$BB"
  assert_jq "$plan" '.network.egress == "public" and .network.name == null and .warnings == []'
  same_plan root --egress 198.51.100.0/24 "$BB"
  assert_jq "$plan" '.network.egress == "198.51.100.0/24" and .warnings == []'
  same_plan root --egress 10.1.0.0/16,192.168.7.0/24 "$BB"
  assert_jq "$plan" '.network.egress == "10.1.0.0/16,192.168.7.0/24" and (.warnings | length) == 1'
  same_plan root --egress all "$BB"
  assert_jq "$plan" '.network.egress == "all" and (.warnings[0] | test("169.254.169.254"))'
  same_plan root --egress none "$BB"
  assert_jq "$plan" '.network.egress == "none"'
  same_plan root --network mynet --egress none "$BB"
  assert_jq "$plan" '.network.mode == "bridge" and .network.backend == "veth" and .network.name == "mynet"'
  same_plan root --network none --egress all "$BB"
  assert_contains "$refusal" "--egress needs --network bridge"
  same_plan root --network host "$BB"
  assert_jq "$plan" '.network.egress == null'
  same_plan root --egress 10.0.0.1/8 "$BB"
  assert_contains "$refusal" "--egress"
  same_plan root --egress 300.1.2.3/8 "$BB"
  assert_contains "$refusal" "--egress"
  # (the library's network_name is only ever a name: its own words)
  assert_exit 125 ohbox run --dry-run --network -bad- "$BB"
  assert_contains "$err" "unknown --network"
  assert_exit 1 "$PLAN" "$T_ROOT" --network -bad- "$BB"
  assert_contains "$err" "invalid network name"
}

test_rootless_plans ()
{
  user_images
  same_plan pasta --egress all "$BB"
  assert_contains "$refusal" "--egress needs root"
  same_plan pasta --network mynet "$BB"
  assert_contains "$refusal" "named networks need root"
  same_plan pasta "$BB"
  assert_jq "$plan" '.caller.rootless == true and .host.pasta == true and .host.slirp4netns == false
    and .network.mode == "bridge" and .network.backend == "pasta"'
  same_plan pasta "$RT"
  assert_jq "$plan" '.network.backend == "pasta" and .network.publish == ["127.0.0.1::8000/tcp"] and .executor.listen_address == "0.0.0.0"'
  same_plan slirp "$BB"
  assert_jq "$plan" '.host.pasta == false and .host.slirp4netns == true and .network.backend == "slirp4netns"'
  same_plan slirp "$RT"
  assert_jq "$plan" '.network.backend == "slirp4netns" and .network.publish == ["127.0.0.1::8000/tcp"]'
  same_plan neither "$BB"
  assert_jq "$plan" '.network.mode == "none" and .network.backend == null and (.warnings[0] | contains("loopback only"))'
  same_plan neither "$RT"
  assert_contains "$refusal" "needs a network on which the host reaches its executor"
  same_plan neither --network none "$RT"
  assert_jq "$plan" '.executor.reachable_from_host == false'
  # The host's network for an executor: refused rootless, whatever is installed.
  local p
  for p in pasta slirp neither; do
    same_plan "$p" --network host "$RT"
    assert_contains "$refusal" "abstract unix sockets"
  done
  # ... not for an ordinary command.
  same_plan pasta --network host "$BB" true
  assert_jq "$plan" '.network.mode == "host" and .warnings == []'
  # A bounded writable layer needs a loop device: root's.
  same_plan pasta --storage-size 32m "$BB" true
  assert_contains "$refusal" "--storage-size needs root"
}

# ---------------------------------------------------------------- sandboxes

# sandbox_facts RUNDIR ID: "MODE|CTR_PORT|HOST_IP|URL-PORT-MATCH|LISTEN" of a
# running runtime sandbox: network.json, executor.json and what listens in
# its network namespace.
sandbox_facts ()
{
  local dir=$1/$2 pid net url hp listen
  pid=$(jq -r .pid "$dir/state.json")
  net=$(cat "$dir/network.json")
  url=$(jq -r .url "$dir/executor.json")
  hp=$(jq -r '.ports[] | select(.container_port == 8000) | .host_port' <<<"$net")
  [ "$url" = "http://127.0.0.1:$hp" ] || echo "executor.json has $url, network.json host port $hp" >&2
  t_wait_until 10 curl -sf -m 1 -o /dev/null "$url/alive"
  listen=$(nsenter --net="/proc/$pid/ns/net" ss -Hltn | awk '{print $4}' | sort | tr '\n' ' ')
  echo "$(jq -r .mode <<<"$net")|$(jq -r '[.ports[].container_port] | join(",")' <<<"$net")|$(jq -r '[.ports[].host_ip] | join(",")' <<<"$net")|$listen"
}

# Nothing listens on the host (this test's network namespace) on PORT but
# on 127.0.0.1 (rootless, where slirp4netns or pasta listens for the
# sandbox); as root nothing at all (the port is only reserved).
host_listeners ()
{
  ss -Hltn "sport = :$1" | awk '{print $4}' | sort | tr '\n' ' '
}

test_root_sandboxes ()
{
  root_images
  assert_ok ohbox run -d --rm -e SESSION_API_KEY=k "$RT"
  local cli=$out
  assert_ok "$PLAN" "$T_ROOT" -e SESSION_API_KEY=k --run --rm "$RT"
  local lib
  lib=$(sed -n 's/^id: //p' <<<"$out")
  local a b
  a=$(sandbox_facts "$OHBOX_RUNROOT" "$cli")
  b=$(sandbox_facts "$OHBOX_RUNROOT" "$lib")
  assert_eq "$a" "bridge|8000|127.0.0.1|0.0.0.0:8000 " "the CLI's runtime sandbox"
  assert_eq "$b" "$a" "libohbox's runtime sandbox"
  local id url hp
  for id in "$cli" "$lib"; do
    url=$(jq -r .url "$OHBOX_RUNROOT/$id/executor.json")
    hp=${url##*:}
    assert_eq "$(host_listeners "$hp")" "" "listeners on the host's port $hp"
    assert_ok ohbox action "$id" run 'echo planned'
    assert_contains "$out" planned
  done
  assert_ok ohbox stop "$cli" "$lib"
  # --network host (asked for, warned about): the executor on the host's
  # 127.0.0.1 only, through either door.
  assert_ok ohbox run -d --rm --network host -e SESSION_API_KEY=k "$RT"
  cli=$out
  assert_contains "$err" "warning: --network host"
  assert_ok "$PLAN" "$T_ROOT" --network host -e SESSION_API_KEY=k --run --rm "$RT"
  lib=$(sed -n 's/^id: //p' <<<"$out")
  assert_contains "$out" "warning: --network host"
  for id in "$cli" "$lib"; do
    url=$(jq -r .url "$OHBOX_RUNROOT/$id/executor.json")
    hp=${url##*:}
    t_wait_until 10 curl -sf -m 1 -o /dev/null "$url/alive"
    assert_eq "$(host_listeners "$hp")" "127.0.0.1:$hp " "the executor's listeners (host network)"
  done
  assert_ok ohbox stop "$cli" "$lib"
  # --network none: no URL for the host, but `ohbox action` reaches the
  # executor through its unix socket.
  assert_ok ohbox run -d --rm --network none -e SESSION_API_KEY=k "$RT"
  id=$out
  assert_contains "$err" "through its unix socket"
  assert_jq "$(cat "$OHBOX_RUNROOT/$id/executor.json")" '.url == null and .socket == "executor.sock"'
  assert_ok ohbox action "$id" run 'echo no network: $(ls /sys/class/net)'
  assert_contains "$out" "no network: lo"
  assert_ok ohbox stop "$id"
}

no_user_sandboxes ()
{
  [ -z "$(uohbox neither ps -a -q)" ]
}

user_processes ()
{
  { pgrep -u "$T_USER" || true; } | wc -l
}

no_user_processes ()
{
  [ "$(user_processes)" = 0 ]
}

test_rootless_sandboxes ()
{
  user_images
  local p mode id url hp facts
  for p in pasta slirp; do
    mode=$p
    [ "$p" = slirp ] && mode=slirp4netns
    assert_ok uohbox "$p" run -d --rm -e SESSION_API_KEY=k "$RT"
    id=$out
    facts=$(sandbox_facts "$U_DIR/run/ohbox" "$id")
    assert_eq "$facts" "$mode|8000|127.0.0.1|0.0.0.0:8000 " "the rootless ($p) runtime sandbox"
    url=$(jq -r .url "$U_DIR/run/ohbox/$id/executor.json")
    hp=${url##*:}
    # The user-mode helper listens for it, on 127.0.0.1 only.
    assert_eq "$(host_listeners "$hp")" "127.0.0.1:$hp " "listeners on the host's port $hp ($p)"
    assert_ok uohbox "$p" action "$id" run 'echo rootless'
    assert_contains "$out" rootless
    # libohbox: the same sandbox.
    assert_ok as_user "$p" "$PLAN" "$USTORE" -e SESSION_API_KEY=k --run --rm "$RT"
    local lib
    lib=$(sed -n 's/^id: //p' <<<"$out")
    assert_eq "$(sandbox_facts "$U_DIR/run/ohbox" "$lib")" "$facts" "libohbox's rootless ($p) runtime sandbox"
    assert_ok uohbox "$p" stop "$id" "$lib"
  done
  # Neither helper: an ordinary sandbox on loopback only, with a warning;
  # a runtime sandbox refused, nothing left of it.
  assert_ok uohbox neither run --rm "$BB" ls /sys/class/net
  assert_eq "$out" "lo"
  assert_contains "$err" "loopback only"
  assert_exit 125 uohbox neither run -d --rm "$RT"
  assert_contains "$err" "install slirp4netns or passt"
  # ... unless --network none is asked for: then reached through its socket.
  assert_ok uohbox neither run -d --rm --network none -e SESSION_API_KEY=k "$RT"
  id=$out
  assert_ok uohbox neither action "$id" run 'echo rootless, no network'
  assert_contains "$out" "rootless, no network"
  assert_ok uohbox neither stop "$id"
  assert_exit 1 as_user neither "$PLAN" "$USTORE" --run --rm "$RT"
  assert_contains "$err" "install slirp4netns or passt"
  # (--rm sandboxes stopped above are removed by their monitors, which
  # may finish their teardown after `ps` no longer lists them.)
  t_wait_until 10 no_user_sandboxes
  assert_ok uohbox neither ps -a -q
  assert_eq "$out" "" "sandboxes left"
  t_wait_until 10 no_user_processes
  assert_eq "$(user_processes)" 0 "processes of $T_USER left"
}

# Issue 14 item 1, rootless: the host's network for a runtime sandbox is
# refused (its abstract unix sockets would see agent code as the user);
# nothing is started. (escape-shaped: tests/escape/README.md)
test_rootless_runtime_host_network_refused ()
{
  user_images
  t_wait_until 10 no_user_sandboxes
  assert_exit 125 uohbox pasta run -d --rm --network host "$RT"
  assert_contains "$err" "refused for a runtime sandbox of a rootless user"
  assert_exit 1 as_user pasta "$PLAN" "$USTORE" --network host --run --rm "$RT"
  assert_contains "$err" "abstract unix sockets"
  assert_ok uohbox pasta ps -a -q
  assert_eq "$out" "" "sandboxes left"
  assert_eq "$(user_processes)" 0 "processes of $T_USER left"
}

run_test root_plans test_root_plans
run_test network_plans test_network_plans
run_test rootless_plans test_rootless_plans
run_test root_sandboxes test_root_sandboxes
run_test rootless_sandboxes test_rootless_sandboxes
run_test rootless_runtime_host_network_refused test_rootless_runtime_host_network_refused
