#!/bin/bash
# agent-user.sh: the runtime image on a realistic Debian base
# (img_build_debian_agent: python3, git, sudo, procps), started the way
# OpenHands' DockerRuntime starts its server (`... action_execution_server
# PORT --working-dir /workspace --plugins agent_skills jupyter --username
# openhands --user-id 1000`, a root-owned host directory at /workspace
# (idmapped, as Docker's root sees it), the default network with the port
# published), driven over the action protocol as its client does:
#   sudo_as_openhands          the user in groups root and sudo, `sudo -n
#                              true` with no password and no `unable to
#                              resolve host`, apt-get under sudo, sudo chown
#   workspace_0700             a root-owned 0700 workspace becomes the user's
#                              (ls, git init + remote add + commit)
#   workspace_0777             a root-owned 0777 one (git: no `dubious
#                              ownership`)
#   restart_idempotent         later starts add no second user, group member
#                              or sudoers line, make a new working directory
#                              the user's, and give the user what root made
#                              in the workspace meanwhile
# The Debian image is built with debootstrap once (~2 min) and cached.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

t_runtime_exports

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, idmapped mounts)"; return 1; }
  [ -x "$OHBOX_EXECUTOR" ] || { echo "ohbox-executor is not built (make ohbox-executor)"; return 1; }
  command -v curl >/dev/null || { echo "curl is not installed"; return 1; }
  command -v debootstrap >/dev/null || { echo "debootstrap is not installed"; return 1; }
  img_build_debian_agent >&2 || { echo "img_build_debian_agent failed"; return 1; }
  ohbox load "oci:$IMG_DEBIAN_AGENT:bookworm" localhost/debian-agent:bookworm >/dev/null || return 1
  local j
  j=$(ohbox build --no-pull --format json localhost/debian-agent:bookworm) || return 1
  # each test has a store of its own: they load the runtime image from here
  ohbox save "$(jq -r .image <<<"$j")" "oci:$T_TMP/runtime:agent" >/dev/null || return 1
}
t_setup_or_die setup setup
IMAGE=localhost/debian-agent-runtime:test

# start_agent WORKSPACE_MODE [WORKING_DIR]: a root-owned host directory of
# that mode at /workspace, the server as OpenHands starts it; $sid, $port,
# $ws set.
start_agent ()
{
  ws=$T_WORK/ws-$1-$RANDOM
  mkdir -p "$ws"
  chown 0:0 "$ws"
  chmod "$1" "$ws"
  assert_ok ohbox load "oci:$T_TMP/runtime:agent" "$IMAGE"
  port=$(t_free_port)
  assert_ok ohbox run -d -p "127.0.0.1:$port:$port" -e SESSION_API_KEY=k -v "$ws:/workspace:idmap" \
    --entrypoint /openhands/micromamba/bin/micromamba "$IMAGE" run -n openhands poetry run python -u -m \
    openhands.runtime.action_execution_server "$port" --working-dir "${2:-/workspace}" --plugins agent_skills \
    jupyter --username openhands --user-id 1000
  sid=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $sid >/dev/null 2>&1 || true" EXIT
  t_wait_until 20 curl -sf "http://127.0.0.1:$port/alive" >/dev/null || {
    ohbox logs "$sid" >&9 2>&1
    _t_assert_fail "the server did not answer /alive on $port"
  }
}

# run_cmd COMMAND: a `run` action; $content and $code of its observation.
run_cmd ()
{
  local body
  body=$(jq -cn --arg c "$1" '{action: {action: "run", args: {command: $c}, timeout: 60}}')
  out=$(curl -sf -X POST -H 'X-Session-API-Key: k' -H 'Content-Type: application/json' \
    "http://127.0.0.1:$port/execute_action" -d "$body") || _t_assert_fail "execute_action failed for: $1"
  content=$(jq -r .content <<<"$out")
  code=$(jq -r .extras.metadata.exit_code <<<"$out")
}

# assert_run COMMAND: runs it, exit code 0.
assert_run ()
{
  run_cmd "$1"
  [ "$code" = 0 ] || _t_assert_fail "\`$1\` exited $code: $content"
}

stop_agent ()
{
  ohbox rm -f "$sid" >/dev/null
}

test_sudo_as_openhands ()
{
  start_agent 0755
  assert_run 'id'
  assert_eq "$content" "uid=1000(openhands) gid=0(root) groups=0(root),27(sudo)"
  # what OpenHands' own runtime answers: nothing, exit 0
  assert_run 'sudo -n true'
  assert_eq "$content" ""
  assert_run 'sudo -n whoami'
  assert_eq "$content" "root"
  assert_run 'sudo -n apt-get --help | head -n 1'
  assert_match "$content" "^apt [0-9.]+ \\("
  assert_run 'cd /workspace && touch f && sudo chown -R openhands:root . && stat -c "%U:%G" . f'
  assert_eq "$content" "openhands:root
openhands:root"
  assert_run 'grep -c "^%sudo ALL=(ALL) NOPASSWD:ALL$" /etc/sudoers; hostname; getent hosts "$(hostname)" | wc -l'
  assert_eq "$(sed -n 1p <<<"$content")" 1
  assert_eq "$(sed -n 3p <<<"$content")" 1 "the hostname resolves"
  stop_agent
}

# git init + remote add + commit, as agents do first in a workspace.
assert_git_works ()
{
  assert_run 'git init -q && git remote add origin https://example.invalid/repo.git && echo hi > README &&
    git add README && git -c user.name=agent -c user.email=agent@example.invalid commit -qm init && git log --oneline | wc -l'
  assert_eq "$content" 1
  assert_not_contains "$content" "dubious ownership"
}

test_workspace_0700 ()
{
  start_agent 0700
  assert_run 'ls -alh /workspace | head -n 2 | tail -n 1'
  assert_match "$content" "^drwxrw---- +[0-9]+ openhands root "
  assert_git_works
  # the host sees its files owned by the host's uid 1000 (idmapped)
  assert_eq "$(stat -c %u "$ws" "$ws/README")" "1000
1000"
  stop_agent
}

test_workspace_0777 ()
{
  start_agent 0777
  assert_run 'stat -c "%U:%G %a" /workspace'
  assert_eq "$content" "openhands:root 777"
  assert_git_works
  stop_agent
}

test_restart_idempotent ()
{
  start_agent 0755
  # root makes a file in the workspace; then the server starts once more
  assert_ok ohbox exec "$sid" sh -c 'mkdir /workspace/by-root && touch /workspace/by-root/f'
  local p2
  p2=$(t_free_port)
  "$OHBOX_BIN" --root "$T_ROOT" exec "$sid" timeout -s KILL 5 /openhands/micromamba/bin/micromamba run -n openhands \
    poetry run python -u -m openhands.runtime.action_execution_server "$p2" --working-dir /workspace/new/sub \
    --username openhands --user-id 1000 >&9 2>&1 || true
  assert_ok ohbox exec "$sid" sh -c 'grep -c "^openhands:" /etc/passwd; grep "^sudo:" /etc/group;
    grep -c "^%sudo ALL=(ALL) NOPASSWD:ALL$" /etc/sudoers;
    stat -c "%U:%G %a %n" /workspace/by-root /workspace/by-root/f /workspace/new /workspace/new/sub'
  # only the working directory is given away (here a new one, made with
  # umask 002 as the Python server does); what root made elsewhere stays
  assert_eq "$out" "1
sudo:x:27:openhands
1
root:root 755 /workspace/by-root
root:root 644 /workspace/by-root/f
root:root 775 /workspace/new
openhands:root 775 /workspace/new/sub"
  # and at the next start with /workspace, root's files become the user's
  "$OHBOX_BIN" --root "$T_ROOT" exec "$sid" timeout -s KILL 5 /openhands/micromamba/bin/micromamba run -n openhands \
    poetry run python -u -m openhands.runtime.action_execution_server "$p2" --working-dir /workspace \
    --username openhands --user-id 1000 >&9 2>&1 || true
  assert_ok ohbox exec "$sid" sh -c 'grep -c "^openhands:" /etc/passwd; grep "^sudo:" /etc/group;
    grep -c "^%sudo ALL=(ALL) NOPASSWD:ALL$" /etc/sudoers; stat -c "%U:%G" /workspace/by-root/f'
  assert_eq "$out" "1
sudo:x:27:openhands
1
openhands:root"
  stop_agent
}

run_test sudo_as_openhands test_sudo_as_openhands
run_test workspace_0700 test_workspace_0700
run_test workspace_0777 test_workspace_0777
run_test restart_idempotent test_restart_idempotent
t_summary 2>/dev/null || true
