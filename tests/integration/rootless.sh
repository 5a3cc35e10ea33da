#!/bin/bash
# rootless.sh: the whole flow as an ordinary user made here (useradd, a
# subordinate id range in /etc/subuid and /etc/subgid), run as that user
# with its own HOME and XDG_RUNTIME_DIR: pull from the test registry (TLS,
# its CA), build a runtime image, run it detached with a published executor
# port, a `run` action over HTTP from the host's 127.0.0.1, exec, logs, ps,
# stop, rm; afterwards no process of the user, no mount, no sandbox state.
# Also the single-uid fallback (no subordinate ids, with its warning) and
# the one cgroup warning when limits are asked on this hybrid host.
#
# NETWORK RULE: traffic only to 127.0.0.1.
# run-tests: host-network lock=users
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"

. "$T_LIB/rootless_user.sh"
ru_init ohbr


setup ()
{
  ru_need curl jq || return 1
  [ -x "$OHBOX_BUILDDIR/ohbox-executor" ] || { echo "ohbox-executor is not built"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
  img_build || return 1
  reg_start tls REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  ru_make_user 300000 certs || return 1
  cp "$REG_CA" "$U_DIR/certs/ca.crt" && chown "$T_USER:" "$U_DIR/certs/ca.crt"
}

# uohbox ARGS...: the binary under test as the user, with a time limit.
uohbox ()
{
  echo "+ (as $T_USER) ohbox $*" >&9
  ru_as_user "$OHBOX_BIN" "$@"
}

t_setup_or_die setup setup

# The test image in the user's store (each test can run alone).
pull_bb ()
{
  assert_exit 0 uohbox pull --cert-dir "$U_DIR/certs" "$REG_HOST/test/busybox:latest"
}

user_procs ()
{
  { pgrep -u "$T_USER" || true; } | wc -l
}

# The user's mounts on the host: none may be left (overlays are in the
# sandbox's own mount namespace; anything in ours would be a leak).
user_mounts ()
{
  grep -c " $U_DIR/" /proc/mounts || true
}

test_whole_flow ()
{
  local ref=$REG_HOST/test/busybox:latest
  # pull over TLS with the registry's CA (the user's own cert dir)
  assert_exit 0 uohbox pull --cert-dir "$U_DIR/certs" "$ref"
  assert_contains "$out" "pulled"
  assert_dir_exists "$U_DIR/home/.local/share/ohbox/blobs/sha256"
  [ "$(stat -c %U "$U_DIR/home/.local/share/ohbox")" = "$T_USER" ] || _t_assert_fail "the store is not the user's"
  # a runtime image from it
  assert_exit 0 uohbox build --no-pull --format json "$ref"
  local image
  image=$(jq -r .image <<<"$out")
  assert_eq "$(jq -r .path <<<"$out")" from-scratch
  # detached, the executor's port published on the host's loopback
  local port
  port=$(t_free_port)
  assert_exit 0 uohbox run -d --name rl-flow --executor-port "$port" -p "127.0.0.1:$port:$port" \
    -e SESSION_API_KEY=rlkey "$image"
  local id=$out
  assert_contains "$err" "executor at http://127.0.0.1:$port, session API key rlkey"
  [ -d "$U_DIR/run/ohbox/$id" ] || _t_assert_fail "no state in \$XDG_RUNTIME_DIR/ohbox/$id"
  t_wait_until 10 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$port/alive" || {
    uohbox logs "$id" || true
    _t_assert_fail "the executor did not answer /alive on 127.0.0.1:$port"
  }
  local o
  o=$(curl -sf -m 30 -X POST -H 'X-Session-API-Key: rlkey' -H 'Content-Type: application/json' \
    "http://127.0.0.1:$port/execute_action" \
    -d '{"action": {"action": "run", "args": {"command": "echo from-action > /workspace/a; id -u"}, "timeout": 30}}')
  assert_jq "$o" '.observation == "run" and .extras.metadata.exit_code == 0 and .content == "0"'
  # exec joins the sandbox's user namespace (and the others): it sees the
  # action's file, is root there and its uid 0 is the user's uid outside
  assert_exit 0 uohbox exec rl-flow sh -c 'cat /workspace/a; id -u; head -n 1 /proc/self/uid_map'
  assert_match "$out" "^from-action
0
 *0 +$(id -u "$T_USER") +1\$"
  assert_exit 7 uohbox exec rl-flow sh -c 'exit 7'
  assert_exit 127 uohbox exec rl-flow /nonexistent
  assert_exit 0 uohbox logs rl-flow
  assert_contains "$out$err" "listening on port $port"
  assert_exit 0 uohbox ps --format json
  assert_jq "$out" "length == 1 and .[0].id == \"$id\" and .[0].status == \"running\" and .[0].name == \"rl-flow\""
  assert_exit 0 uohbox stop rl-flow
  assert_exit 0 uohbox ps -a --format json
  assert_jq "$out" ".[0].status == \"exited\""
  assert_exit 0 uohbox rm rl-flow
  assert_exit 0 uohbox ps -a --format json
  assert_jq "$out" 'length == 0'
  # nothing left: processes (monitor, slirp4netns/pasta), mounts, state
  t_wait_until 5 sh -c "! pgrep -u $T_USER >/dev/null"
  assert_eq "$(user_procs)" 0 "processes of $T_USER left"
  assert_eq "$(user_mounts)" 0 "mounts under $U_DIR left"
  assert_file_absent "$U_DIR/run/ohbox/$id"
  assert_eq "$(find "$U_DIR/run/ohbox/net/port" "$U_DIR/run/ohbox/names" -mindepth 1 | wc -l)" 0 \
    "port leases or names left"
  # what may stay in the runtime dir: caches, empty lease dirs and the
  # creation lock, no sandbox
  assert_eq "$(find "$U_DIR/run/ohbox" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')" \
    "create.lock names net seccomp-cache " "unexpected entries in \$XDG_RUNTIME_DIR/ohbox"
  assert_curl_refused "$port"
}

assert_curl_refused ()
{
  if curl -sf -m 1 -o /dev/null "http://127.0.0.1:$1/alive"; then
    _t_assert_fail "port $1 still answers after rm"
  fi
}

# No range in /etc/subuid: only the user's uid is mapped, with a warning
# that says how to add one; the sandbox still runs.
test_single_uid ()
{
  pull_bb
  cp /etc/subuid "$T_WORK/subuid"
  cp /etc/subgid "$T_WORK/subgid"
  sed -i "/^$T_USER:/d" /etc/subuid /etc/subgid
  # t_run never fails: the files are back before any assertion
  t_run uohbox run --rm --network none "$REG_HOST/test/busybox:latest" sh -c 'cat /proc/self/uid_map; id -u'
  cp "$T_WORK/subuid" /etc/subuid
  cp "$T_WORK/subgid" /etc/subgid
  assert_eq "$rc" 0
  assert_match "$out" "^ *0 +$(id -u "$T_USER") +1
0\$"
  assert_eq "$(grep -c 'warning: no subordinate ids' <<<"$err")" 1
  assert_contains "$err" "usermod --add-subuids"
  # with the range back: the full map, no warning
  assert_exit 0 uohbox run --rm --network none "$REG_HOST/test/busybox:latest" sh -c 'wc -l </proc/self/uid_map'
  assert_eq "$out" 2
  assert_not_contains "$err" "warning"
}

# This host has cgroup v1 controllers (hybrid): nothing can be delegated to
# an ordinary user. Limits asked: one warning, the sandbox runs without
# them; no limits asked: not a word.
test_cgroup_warning ()
{
  [ -z "$(find /sys/fs/cgroup/unified -maxdepth 0 -type d 2>/dev/null)" ] &&
    [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && skip "pure cgroup v2 host: see cgroup2-guest.sh"
  pull_bb
  assert_exit 0 uohbox run --rm --network none --memory 64m --cpus 0.5 --pids-limit 50 \
    "$REG_HOST/test/busybox:latest" true
  assert_eq "$(grep -c . <<<"$err")" 1 "exactly one line on stderr"
  assert_match "$err" "^ohbox run: warning: rootless on a cgroup hybrid host: .*without resource limits"
  assert_exit 0 uohbox run -d --network none --memory 64m "$REG_HOST/test/busybox:latest" sleep 30
  local id=$out
  assert_eq "$(grep -c warning <<<"$err")" 1
  # exec and stop of it: no repeat
  assert_exit 0 uohbox exec "$id" true
  assert_eq "$err" ""
  assert_exit 0 uohbox rm -f "$id"
  assert_eq "$err" ""
  assert_exit 0 uohbox run --rm --network none "$REG_HOST/test/busybox:latest" true
  assert_eq "$err" ""
}

# CDI devices rootless: the host's nodes bound (no node can be made), with
# the host's owner and mode; env and mounts as for root; a node on a volume
# cannot be opened (volumes are nodev); the warning that no device cgroup
# limits them.
test_cdi_devices ()
{
  local ref=$REG_HOST/test/busybox:latest specs=$U_DIR/cdi
  pull_bb
  mkdir -p "$specs" "$U_DIR/byhand"
  printf 'cdiVersion: 0.5.0\nkind: test.ohbox/card\ndevices:\n  - name: c0\n    containerEdits:\n      env: [CARD=0]\n      deviceNodes:\n        - path: /dev/card0\n          hostPath: /dev/zero\n' \
    >"$specs/card.yaml"
  mknod -m 0666 "$U_DIR/byhand/node" c 1 5
  chmod -R a+rX "$specs" "$U_DIR/byhand"
  assert_exit 0 uohbox run --rm --network none --cdi-spec-dir "$specs" --device test.ohbox/card=c0 \
    -v "$U_DIR/byhand:/x" "$ref" sh -c 'stat -c "%t:%T" /dev/card0; head -c 2 /dev/card0 | od -An -c; echo $CARD
      (exec 3</x/node) 2>/dev/null && echo byhand-opened; echo done'
  assert_eq "$out" "1:5
  \0  \0
0
done"
  assert_contains "$err" "no device cgroup"
}

run_test whole_flow test_whole_flow
run_test single_uid test_single_uid
run_test cgroup_warning test_cgroup_warning
run_test cdi_devices test_cdi_devices
