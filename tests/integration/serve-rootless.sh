#!/bin/bash
# serve-rootless.sh: `ohbox serve` run by an ordinary user (made here, with
# a subordinate id range) serves that user's sandboxes: the V0 flow on a
# runtime image the user built (rootless network, published on 127.0.0.1),
# the V1 flow with run_as_user 10001 (an id of the user's range), a warm
# pool; afterwards no process of the user is left and no state.
#
# NETWORK RULE: traffic only to 127.0.0.1.
# run-tests: host-network lock=users
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"

. "$T_LIB/rootless_user.sh"
ru_init ohbs


setup ()
{
  ru_need curl jq openssl || return 1
  /usr/bin/python3 -c 'import httpx' 2>/dev/null || { echo "python3-httpx is not installed"; return 1; }
  command -v slirp4netns >/dev/null || command -v pasta >/dev/null ||
    { echo "neither slirp4netns nor passt is installed"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  ru_make_user 400000 tmp || return 1
  openssl rand -hex 24 >"$U_DIR/home/key"
  chmod 600 "$U_DIR/home/key"
  chown "$T_USER:" "$U_DIR/home/key"
  uohbox pull --tls-verify=false "$REG_HOST/test/busybox:latest" || return 1
  U_RT=$(uohbox build -q --tls-verify=false "$REG_HOST/test/busybox:latest") || return 1
}

# uohbox ARGS...: the binary under test as the user.
uohbox ()
{
  echo "+ (as $T_USER) ohbox $*" >&9
  ru_as_user TMPDIR="$U_DIR/tmp" "$OHBOX_BIN" "$@"
}

t_setup_or_die setup setup

test_rootless_serve ()
{
  local port key pid
  port=$(t_free_port)
  key=$U_DIR/home/key
  cp "$key" "$T_WORK/key"
  echo "+ (as $T_USER, bg) ohbox serve" >&9
  setpriv --reuid="$T_USER" --regid="$T_USER" --init-groups --reset-env \
    env HOME="$U_DIR/home" XDG_RUNTIME_DIR="$U_DIR/run" XDG_DATA_HOME="$U_DIR/home/.local/share" TMPDIR="$U_DIR/tmp" \
    PATH=/usr/local/bin:/usr/bin:/bin "$OHBOX_BIN" serve --api-key-file "$key" --listen "127.0.0.1:$port" \
    --pool "$U_RT=1" >"$T_WORK/serve.log" 2>&1 </dev/null &
  pid=$!
  t_track "$pid"
  t_wait_port "$port" 10
  local url=http://127.0.0.1:$port
  # The V0 flow on the user's runtime image.
  assert_ok /usr/bin/python3 "$T_LIB/serve_client.py" v0 --api "$url" --key-file "$T_WORK/key" --runtime-image "$U_RT" \
    --keep --session rl-v0
  local rt
  rt=$(tail -n 1 <<<"$out")
  # Its processes are the user's (ids of the user's range), none root's.
  local uid
  uid=$(id -u "$T_USER")
  assert_ne "$(pgrep -u "$T_USER" | wc -l)" 0
  assert_eq "$(ps -o user= -p "$pid")" "$T_USER"
  # The V1 flow: an image's own server as 10001, an id of the user's range.
  local v1cmd='["sh","-c","pwd >/tmp/start-cwd && mkdir -p /tmp/www/cgi-bin && echo hello-v1 >/tmp/www/index.html && printf '"'"'#!/bin/sh\\necho Content-Type: text/plain\\necho\\nid\\necho cwd=$(cat /tmp/start-cwd)\\nenv\\n'"'"' >/tmp/www/cgi-bin/env && chmod 755 /tmp/www/cgi-bin/env && exec httpd -f -p 60000 -h /tmp/www"]'
  assert_ok /usr/bin/python3 "$T_LIB/serve_client.py" v1 --api "$url" --key-file "$T_WORK/key" \
    --image "$REG_HOST/test/busybox:latest" --command "$v1cmd"
  # The pool gave the V0 session its sandbox, or a start was cold: both work.
  curl -s -H "X-API-Key: $(cat "$key")" "$url/metrics" | grep '^ohbox_serve_starts_total' >&9
  curl -s -H "X-API-Key: $(cat "$key")" --data "{\"runtime_id\":\"$(jq -r .runtime_id <<<"$rt")\"}" "$url/stop" >/dev/null
  kill -TERM "$pid"
  wait "$pid" || true
  # Nothing of the user runs any more: the pool member stopped with the
  # server, the session with /stop.
  local base
  base=$(awk -F: -v u="$T_USER" '$1 == u { print $2 }' /etc/subuid)
  cat "$T_WORK/serve.log" | grep -v "\"method\"" >&9
  t_wait_until 30 sh -c "! pgrep -u $T_USER >/dev/null && [ -z \"\$(ps -eo uid= | awk -v b=$base '\$1 >= b && \$1 < b + 65536')\" ]" ||
    { _t_assert_fail "processes of $T_USER left: $(ps -eo pid,uid,args | awk -v u="$uid" -v b="$base" '$2 == u || ($2 >= b && $2 < b + 65536)')"; return 1; }
  assert_eq "$(uohbox ps -a -q)" ""
  assert_eq "$(grep -c " $U_DIR/" /proc/mounts)" 0
}
run_test rootless_serve test_rootless_serve
