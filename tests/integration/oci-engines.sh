#!/bin/bash
# oci-engines.sh: podman, Docker and containerd running containers with
# ohbox-runc as their OCI runtime, each engine with its own storage and
# state under this script's tmp dir, started and stopped here.
#
# Isolation: the script re-executes itself in a network and mount
# namespace of its own, with tmpfs over /run and /var/lib/cni there: the
# engines' bridges, firewall rules, netns files, IPAM leases and default
# runtime roots (/run/ohbox-runc, /run/containerd/runc) never reach the
# host's, and vanish with the namespace. The engines' cgroups go under
# parents named after this run, removed at the end.
#
# Where ohbox-runc refuses what an engine asks for (a config field or a
# command it does not support yet), the test SKIPs naming it; every test
# runs with the engine's defaults (limits, devices, hooks) as they are.
if [ -z "${T_ENGINES_NS:-}" ] && [ "$(id -u)" = 0 ]; then
  export T_ENGINES_NS=1
  exec unshare --net --mount --propagation private -- "$BASH" "$0" "$@"
fi
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"

RUNC=$OHBOX_BUILDDIR/ohbox-runc
# The run's own cgroup parent name (engines make cgroups under it).
CG=ohbox-engines-$$
# The Debian docker.io client (/usr/local/bin may hold another one).
DOCKER_CLI=/usr/bin/docker
# Storage under the tmp dir; sockets and run dirs on this namespace's /run
# (podman wants a runroot under 50 characters, a socket path 108 at most).
PODMAN_DIR=$T_TMP/podman
PODMAN_RUN=/run/$CG-pm
DOCKER_DIR=$T_TMP/docker
DOCKER_RUN=/run/$CG-dk
CTRD_DIR=$T_TMP/containerd
CTRD_RUN=/run/$CG-ctrd

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (ohbox-runc runs containers as root only)"; return 1; }
  [ -x "$RUNC" ] || { echo "ohbox-runc is not built (make ohbox-runc)"; return 1; }
  ip link set lo up
  mount -t tmpfs -o mode=755 tmpfs /run
  mount -t tmpfs -o mode=755 tmpfs /var/lib/cni 2>/dev/null || true
  img_build
}
t_setup_or_die setup setup

# The limits this machine lets root set: engines ask for more (podman:
# nofile 1048576) and setrlimit(2) fails without CAP_SYS_RESOURCE, for
# runc and crun as for ohbox-runc.
NOFILE=$(ulimit -Hn)
# podman's own (it lowers its nproc to 32768 and conmon inherits that).
NPROC=$(ulimit -Hu)
if [ "$NPROC" = unlimited ] || [ "$NPROC" -gt 32768 ]; then
  NPROC=32768
fi

# ---------------------------------------------------------------- refusals

# skip_if_refused OUTPUT: ends the test as skipped when ohbox-runc refused
# what the engine asked for (a field or a command it does not support yet),
# naming it.
skip_if_refused ()
{
  local what
  what=$(grep -o -E '[^ ]+: [^:]{0,100}not supported by ohbox-runc( yet)?' <<<"$1" | head -n 1) || true
  [ -z "$what" ] || skip "ohbox-runc: $what"
}

# engine_ok CMD...: runs CMD (t_run); skips when ohbox-runc refused, fails
# on any other error.
engine_ok ()
{
  t_run "$@"
  if [ "$rc" != 0 ]; then
    skip_if_refused "$out$err"
    echo "\`$*\` failed ($rc): $err" >&2
    return 1
  fi
}

# ---------------------------------------------------------------- engines

# need_engine NAME STATUS: STATUS is what NAME's setup returned: 0 ready,
# 2 a tool is missing (skip), else its setup failed (the test fails).
need_engine ()
{
  case $2 in
    0) return 0 ;;
    2) skip "$1: $(tail -n 1 "$T_TMP/setup-$1.log")" ;;
    *) _t_assert_fail "$1 setup failed ($2): $(tail -n 3 "$T_TMP/setup-$1.log")" ;;
  esac
}

# ---------------------------------------------------------------- podman

podman_ready=
podman_setup ()
{
  command -v podman >/dev/null && command -v conmon >/dev/null || { echo "podman or conmon is not installed"; return 2; }
  mkdir -p "$PODMAN_DIR"/{root,cni} "$PODMAN_RUN"/{run,tmp}
  pm pull -q "oci:$IMG_BUSYBOX:latest" >/dev/null && pm tag "$(pm images -q | head -n 1)" localhost/busybox:latest
}

# pm ARGS...: podman on this run's storage.
pm ()
{
  echo "+ podman $*" >&9
  timeout -k 5 120 podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_RUN/run" --tmpdir "$PODMAN_RUN/tmp" \
    --storage-driver vfs --network-config-dir "$PODMAN_DIR/cni" --cgroup-manager cgroupfs --events-backend file \
    --log-level warn "$@"
}

# pm_run ARGS...: `podman run --runtime ohbox-runc` in this run's cgroup
# parent, with no limit over what this machine allows (NOFILE, NPROC).
pm_run ()
{
  pm run --runtime "$RUNC" --cgroup-parent "/$CG" --ulimit "nofile=$NOFILE:$NOFILE" --ulimit "nproc=$NPROC:$NPROC" "$@"
}

pm_logs_have ()
{
  grep -q "$2" <<<"$(pm logs "$1" 2>&1)"
}

need_podman ()
{
  need_engine podman "$podman_ready"
}

test_podman_run ()
{
  need_podman
  engine_ok pm_run --rm --network none localhost/busybox sh -c 'echo hi; cat /proc/1/comm'
  # ohbox's init is the container's PID 1 (the engine ran ohbox-runc).
  assert_eq $'hi\nohbox-init' "$out"
  t_run pm_run --rm --network none localhost/busybox sh -c 'exit 7'
  assert_eq 7 "$rc"
  assert_eq "" "$(pm ps -aq)"
  [ -z "$(ls -A /run/ohbox-runc 2>/dev/null)" ]
}

test_podman_detached ()
{
  need_podman
  local id
  engine_ok pm_run -d --network none localhost/busybox sh -c 'echo up; trap "echo bye; exit 0" TERM; sleep 1000 & wait'
  id=$out
  t_wait_until 20 pm_logs_have "$id" up
  assert_eq running "$(pm inspect -f '{{.State.Status}}' "$id")"
  assert_ok pm stop -t 10 "$id"
  assert_eq 0 "$(pm inspect -f '{{.State.ExitCode}}' "$id")"
  assert_contains "$(pm logs "$id")" $'up\nbye'
  assert_ok pm rm "$id"
  # An exit of its own, seen by conmon and `podman wait`.
  engine_ok pm_run -d --network none localhost/busybox sh -c 'sleep 0.5; exit 3'
  id=$out
  assert_eq 3 "$(pm wait "$id")"
  assert_ok pm rm "$id"
  [ -z "$(ls -A /run/ohbox-runc 2>/dev/null)" ]
}

test_podman_kill ()
{
  need_podman
  local id pid
  engine_ok pm_run -d --network none localhost/busybox sleep 1000
  id=$out
  pid=$(pm inspect -f '{{.State.Pid}}' "$id")
  assert_int -gt "$pid" 1 "the container's pid"
  assert_ok pm kill -s KILL "$id"
  assert_eq 137 "$(pm wait "$id")"
  ! kill -0 "$pid" 2>/dev/null
  assert_ok pm rm "$id"
  # rm -f of a running container.
  engine_ok pm_run -d --network none localhost/busybox sleep 1000
  id=$out
  pid=$(pm inspect -f '{{.State.Pid}}' "$id")
  assert_ok pm rm -f -t 0 "$id"
  t_wait_until 10 sh -c "! kill -0 $pid 2>/dev/null"
  assert_eq "" "$(pm ps -aq)"
  [ -z "$(ls -A /run/ohbox-runc 2>/dev/null)" ]
}

# published_www: a free host port in $port, and ./www with the page the
# publishing tests fetch through it.
published_www ()
{
  port=$(t_free_port)
  mkdir -p www
  echo served-by-ohbox >www/index.html
}

# -p through podman's CNI bridge and portmap (in this script's netns).
test_podman_publish ()
{
  need_podman
  local id port
  published_www
  engine_ok pm_run -d -p "127.0.0.1:$port:8080" -v "$PWD/www:/www:ro" localhost/busybox httpd -f -p 8080 -h /www
  id=$out
  t_wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$port/"
  assert_eq served-by-ohbox "$(curl -sf "http://127.0.0.1:$port/")"
  assert_ok pm rm -f -t 0 "$id"
  ! curl -sf -m 2 -o /dev/null "http://127.0.0.1:$port/"
}

test_podman_limits ()
{
  need_podman
  engine_ok pm_run --rm --network none --memory 64m --pids-limit 40 localhost/busybox \
    sh -c 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max'
  assert_eq $'67108864\n40' "$out"
}

test_podman_exec ()
{
  need_podman
  local id
  engine_ok pm_run -d --network none localhost/busybox sleep 1000
  id=$out
  t_run pm exec "$id" sh -c 'echo in-$(hostname); exit 4'
  pm rm -f -t 0 "$id" >/dev/null
  [ "$rc" = 4 ] || skip_if_refused "$err"
  assert_eq 4 "$rc"
  assert_match "$out" '^in-'
}

# A terminal through conmon (--console-socket): run -t, exec -t.
test_podman_tty ()
{
  need_podman
  local id
  t_run pm_run --rm -t --network none localhost/busybox sh -c 'test -t 0 && test -t 1 && echo a-tty; exit 3'
  [ "$rc" = 3 ] || skip_if_refused "$err"
  assert_eq 3 "$rc"
  assert_contains "$out" a-tty
  engine_ok pm_run -d --network none localhost/busybox sleep 1000
  id=$out
  t_run pm exec -t "$id" sh -c 'test -t 1 && echo exec-tty; exit 5'
  pm rm -f -t 0 "$id" >/dev/null
  [ "$rc" = 5 ] || skip_if_refused "$err"
  assert_eq 5 "$rc"
  assert_contains "$out" exec-tty
}

test_podman_pause ()
{
  need_podman
  local id
  engine_ok pm_run -d --network none localhost/busybox sleep 1000
  id=$out
  t_run pm pause "$id"
  if [ "$rc" != 0 ]; then
    pm rm -f -t 0 "$id" >/dev/null
    skip_if_refused "$err"
    false
  fi
  assert_eq paused "$(pm inspect -f '{{.State.Status}}' "$id")"
  assert_ok pm unpause "$id"
  assert_eq running "$(pm inspect -f '{{.State.Status}}' "$id")"
  assert_ok pm rm -f -t 0 "$id"
}

# ---------------------------------------------------------------- Docker

docker_ready=
docker_setup ()
{
  [ -x /usr/sbin/dockerd ] && [ -x "$DOCKER_CLI" ] || { echo "docker.io is not installed"; return 2; }
  command -v skopeo >/dev/null || { echo "skopeo is not installed"; return 2; }
  mkdir -p "$DOCKER_DIR" || return 1
  # Its own data root, exec root, socket and cgroup parent; the bridge and
  # iptables rules it makes live in this script's network namespace.
  t_start "$DOCKER_DIR/dockerd.log" /usr/sbin/dockerd --data-root "$DOCKER_DIR/data" --exec-root "$DOCKER_RUN/exec" \
    --host "unix://$DOCKER_RUN/docker.sock" --pidfile "$DOCKER_RUN/docker.pid" --storage-driver vfs \
    --cgroup-parent "/$CG-docker" --add-runtime "ohbox=$RUNC" --default-ulimit "nofile=$NOFILE:$NOFILE" \
    --userland-proxy=false
  t_wait_until 60 test -S "$DOCKER_RUN/docker.sock" && t_wait_until 60 dk version >/dev/null &&
    skopeo copy -q "oci:$IMG_BUSYBOX:latest" "docker-archive:$DOCKER_DIR/busybox.tar:busybox:latest" &&
    dk load -i "$DOCKER_DIR/busybox.tar"
}

dk ()
{
  echo "+ docker $*" >&9
  timeout -k 5 120 "$DOCKER_CLI" --host "unix://$DOCKER_RUN/docker.sock" "$@"
}

dk_logs_have ()
{
  grep -q "$2" <<<"$(dk logs "$1" 2>&1)"
}

need_docker ()
{
  need_engine docker "$docker_ready"
}

test_docker_run ()
{
  need_docker
  engine_ok dk run --rm --runtime ohbox --network none busybox sh -c 'echo hi; cat /proc/1/comm'
  assert_eq $'hi\nohbox-init' "$out"
  t_run dk run --rm --runtime ohbox busybox sh -c 'exit 6'
  assert_eq 6 "$rc"
}

test_docker_detached ()
{
  need_docker
  local id
  engine_ok dk run -d --runtime ohbox busybox sh -c 'echo up; trap "exit 0" TERM; sleep 1000 & wait'
  id=$out
  t_wait_until 20 dk_logs_have "$id" up
  t_run dk exec "$id" sh -c 'echo in-exec; exit 5'
  if [ "$rc" != 5 ]; then
    dk rm -f "$id" >/dev/null
    skip_if_refused "$out$err"
  fi
  assert_eq in-exec "$out"
  assert_ok dk stop -t 10 "$id"
  assert_eq 0 "$(dk inspect -f '{{.State.ExitCode}}' "$id")"
  assert_ok dk rm "$id"
}

test_docker_publish ()
{
  need_docker
  local id port
  published_www
  engine_ok dk run -d --runtime ohbox -p "127.0.0.1:$port:8080" -v "$PWD/www:/www:ro" busybox httpd -f -p 8080 -h /www
  id=$out
  t_wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$port/"
  assert_eq served-by-ohbox "$(curl -sf "http://127.0.0.1:$port/")"
  assert_ok dk rm -f "$id"
}

test_docker_memory_stats ()
{
  need_docker
  local id
  engine_ok dk run -d --runtime ohbox --memory 64m busybox sleep 1000
  id=$out
  t_run dk stats --no-stream --format '{{.MemUsage}}' "$id"
  dk rm -f "$id" >/dev/null
  assert_eq 0 "$rc"
  assert_match "$out" '/ 64MiB$'
}

# ---------------------------------------------------------------- containerd

ctrd_ready=
ctrd_setup ()
{
  command -v containerd >/dev/null && command -v ctr >/dev/null && command -v containerd-shim-runc-v2 >/dev/null ||
    { echo "containerd is not installed"; return 2; }
  command -v skopeo >/dev/null || { echo "skopeo is not installed"; return 2; }
  mkdir -p "$CTRD_DIR" || return 1
  # Its own root, state and sockets; the CRI plugin is off (no CNI here):
  # the tests give the runc v2 shim ohbox-runc as its binary with ctr's
  # --runc-binary, the option a RuntimeClass handler's BinaryName sets.
  cat >"$CTRD_DIR/config.toml" <<EOF
version = 2
root = "$CTRD_DIR/root"
state = "$CTRD_RUN/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CTRD_RUN/containerd.sock"
[ttrpc]
  address = "$CTRD_RUN/containerd.sock.ttrpc"
EOF
  t_start "$CTRD_DIR/containerd.log" containerd --config "$CTRD_DIR/config.toml"
  t_wait_until 60 ct version >/dev/null &&
    skopeo copy -q "oci:$IMG_BUSYBOX:latest" "oci-archive:$CTRD_DIR/busybox.tar:docker.io/library/busybox:latest" &&
    ct images import "$CTRD_DIR/busybox.tar"
}

# ct ARGS...: ctr on this run's containerd, in the namespace named after the
# run (its containers' cgroups go under /NAMESPACE/ID).
ct ()
{
  echo "+ ctr $*" >&9
  timeout -k 5 120 ctr --address "$CTRD_RUN/containerd.sock" --namespace "$CG" "$@"
}

# ct_task_is ID STATUS
ct_task_is ()
{
  [ "$(ct task ls | awk -v id="$1" '$1 == id {print $3}')" = "$2" ]
}

need_ctrd ()
{
  need_engine ctrd "$ctrd_ready"
}

CTR_IMAGE=docker.io/library/busybox:latest

test_ctr_run ()
{
  need_ctrd
  t_run ct run --rm --runc-binary "$RUNC" --runc-root "$CTRD_RUN/runc-root" "$CTR_IMAGE" c-run \
    sh -c 'echo hi; cat /proc/1/comm; exit 3'
  [ "$rc" = 3 ] || skip_if_refused "$err"
  assert_eq 3 "$rc"
  assert_eq $'hi\nohbox-init' "$out"
  # The shim's state root for the runtime (--runc-root): nothing left there.
  [ -z "$(ls -A "$CTRD_RUN/runc-root/$CG" 2>/dev/null)" ]
  assert_eq "" "$(ct containers ls -q)"
}

test_ctr_kill_delete ()
{
  need_ctrd
  engine_ok ct run -d --runc-binary "$RUNC" --runc-root "$CTRD_RUN/runc-root" "$CTR_IMAGE" \
    c-kill sleep 1000
  t_wait_until 10 ct_task_is c-kill RUNNING
  # ohbox-runc's state, under the root the shim gave it.
  assert_jq "$(cat "$CTRD_RUN/runc-root/$CG/c-kill/state.json")" '.id == "c-kill"' 
  local pid
  pid=$(ct task ls | awk '$1 == "c-kill" {print $2}')
  assert_int -gt "$pid" 1 "the task's pid"
  assert_ok ct task kill --signal SIGKILL c-kill
  t_wait_until 10 ct_task_is c-kill STOPPED
  ! kill -0 "$pid" 2>/dev/null
  assert_ok ct task delete c-kill
  assert_ok ct containers delete c-kill
  assert_file_absent "$CTRD_RUN/runc-root/$CG/c-kill"
  assert_eq "" "$(ct containers ls -q)"
}

test_ctr_tty ()
{
  need_ctrd
  # ctr -t wants a terminal of its own: script(1) gives it one.
  local cmd
  cmd=$(printf '%q ' ctr --address "$CTRD_RUN/containerd.sock" --namespace "$CG" run --rm -t --runc-binary "$RUNC" \
    "$CTR_IMAGE" c-tty sh -c 'test -t 0 && test -t 1 && echo a-tty; exit 4')
  t_run timeout -k 5 60 script -q -e -c "$cmd" /dev/null
  [ "$rc" = 4 ] || skip_if_refused "$out$err"
  assert_eq 4 "$rc"
  assert_contains "$out" a-tty
}

test_ctr_exec ()
{
  need_ctrd
  engine_ok ct run -d --runc-binary "$RUNC" "$CTR_IMAGE" c-exec sleep 1000
  t_run ct task exec --exec-id e1 c-exec sh -c 'echo in-exec; exit 2'
  ct task kill --signal SIGKILL c-exec >/dev/null
  t_wait_until 10 ct_task_is c-exec STOPPED
  ct task delete c-exec >/dev/null
  ct containers delete c-exec >/dev/null
  [ "$rc" = 2 ] || skip_if_refused "$out$err"
  assert_eq 2 "$rc"
  assert_eq in-exec "$out"
}

# ---------------------------------------------------------------- teardown

# Stops the engines (their containers first) before common.sh removes the
# tmp dir, and removes the cgroups they made under this run's parents.
engines_teardown ()
{
  if [ "$podman_ready" = 0 ]; then
    pm rm -a -f -t 0 >/dev/null 2>&1
  fi
  if [ "$docker_ready" = 0 ]; then
    dk ps -aq 2>/dev/null | xargs -r "$DOCKER_CLI" --host "unix://$DOCKER_RUN/docker.sock" rm -f >/dev/null 2>&1
  fi
  if [ "$ctrd_ready" = 0 ]; then
    local c
    for c in $(ct containers ls -q 2>/dev/null); do
      ct task kill --signal SIGKILL "$c" >/dev/null 2>&1
      ct task delete --force "$c" >/dev/null 2>&1
      ct containers delete "$c" >/dev/null 2>&1
    done
  fi
  _t_kill_pidfile "$T_TMP/pids"
  # The shims (daemons of their own) of a task that never got deleted, and
  # what runs under them; named by this run's namespace or socket path.
  local p
  for p in $(pgrep -f "containerd-shim-runc-v2 -namespace ($CG|moby) -id [^ ]+ -address /run/$CG-"); do
    _t_kill_tree "$p"
  done
  # What the engines mounted under the tmp dir (this namespace's only).
  grep -o " $T_TMP/[^ ]*" /proc/self/mountinfo | sort -r | xargs -r umount -l 2>/dev/null
  local d
  for d in /sys/fs/cgroup/*/"$CG"* /sys/fs/cgroup/"$CG"*; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}
trap 'T_RC=$?; [ "$BASHPID" != "$T_MAIN_PID" ] || engines_teardown; (exit $T_RC); _t_cleanup' EXIT

# Each engine's tests after its setup (whose outcome they check first).
podman_ready=0
(podman_setup) >"$T_TMP/setup-podman.log" 2>&1 </dev/null || podman_ready=$?
for t in run detached kill publish limits exec pause tty; do run_test "podman_$t" "test_podman_$t"; done

docker_ready=0
docker_setup >"$T_TMP/setup-docker.log" 2>&1 </dev/null || docker_ready=$?
for t in run detached publish memory_stats; do run_test "docker_$t" "test_docker_$t"; done

ctrd_ready=0
ctrd_setup >"$T_TMP/setup-ctrd.log" 2>&1 </dev/null || ctrd_ready=$?
for t in run kill_delete tty exec; do run_test "ctr_$t" "test_ctr_$t"; done
