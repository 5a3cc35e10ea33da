#!/bin/bash
# net-rootless.sh: networking of an ordinary user's sandboxes (rootless:
# slirp4netns started and stopped by ohbox, published ports on the host's
# addresses, egress), and --network none/host as that user. The user is
# made here (useradd, subordinate ids from /etc/subuid) and removed after.
#
# NETWORK RULE: traffic only to 127.0.0.1 and to 198.51.100.0/30 inside a
# namespace this script makes.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"

T_USER=ohbt$$
T_NS=ohbr$$
U_DIR=

cleanup_user ()
{
  ip netns del "$T_NS" 2>/dev/null || true
  ip link del "${T_NS}h" 2>/dev/null || true
  if id "$T_USER" >/dev/null 2>&1; then
    pkill -KILL -u "$T_USER" 2>/dev/null || true
    sleep 0.2
    userdel "$T_USER" 2>/dev/null || true
  fi
  [ -n "$U_DIR" ] && rm -rf "$U_DIR"
  return 0
}
trap '_rc=$?; cleanup_user; (exit $_rc); _t_cleanup' EXIT

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (to make a user)"; return 1; }
  command -v slirp4netns >/dev/null || { echo "slirp4netns is not installed"; return 1; }
  command -v useradd >/dev/null || { echo "useradd is missing"; return 1; }
  img_build || return 1
  useradd -M -s /bin/sh "$T_USER" || return 1
  grep -q "^$T_USER:" /etc/subuid || echo "$T_USER:$((200000 + $$ % 1000 * 65536)):65536" >>/etc/subuid
  grep -q "^$T_USER:" /etc/subgid || echo "$T_USER:$((200000 + $$ % 1000 * 65536)):65536" >>/etc/subgid
  U_DIR=$(mktemp -d /tmp/ohbox-rootless.XXXXXX)
  chmod 755 "$U_DIR"
  mkdir -p "$U_DIR/home" "$U_DIR/run"
  cp -r "$IMG_BUSYBOX" "$U_DIR/busybox"
  chown -R "$T_USER:" "$U_DIR/home" "$U_DIR/run" "$U_DIR/busybox"
  chmod 700 "$U_DIR/run"
  as_user "$OHBOX_BIN" load "oci:$U_DIR/busybox:latest" >/dev/null || return 1
}

# as_user CMD...: CMD as the test's user, with its own HOME and XDG dirs.
as_user ()
{
  setpriv --reuid="$T_USER" --regid="$T_USER" --init-groups --reset-env \
    env HOME="$U_DIR/home" XDG_RUNTIME_DIR="$U_DIR/run" XDG_DATA_HOME="$U_DIR/home/.local/share" \
    PATH=/usr/local/bin:/usr/bin:/bin "$@"
}

# uohbox ARGS...: the binary under test as the user, with a time limit.
uohbox ()
{
  echo "+ (as $T_USER) ohbox $*" >&9
  timeout -k 5 "$T_OHBOX_TIMEOUT" setpriv --reuid="$T_USER" --regid="$T_USER" --init-groups --reset-env \
    env HOME="$U_DIR/home" XDG_RUNTIME_DIR="$U_DIR/run" XDG_DATA_HOME="$U_DIR/home/.local/share" \
    PATH=/usr/local/bin:/usr/bin:/bin "$OHBOX_BIN" "$@"
}

t_setup_or_die setup setup

BB=localhost/busybox:latest

slirps ()
{
  pgrep -u "$T_USER" -x slirp4netns | wc -l
}

test_published_port ()
{
  require_cmd curl
  local port
  port=$(t_free_port)
  assert_ok uohbox run -d -p "$port:80" -p 127.0.0.1::81 "$BB" sh -c \
    'echo rootless-ok >/tmp/i; httpd -p 80 -h /tmp; httpd -p 81 -h /tmp; sleep 60'
  local id=$out
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$port/i"
  assert_ok curl -sf -m 2 "http://127.0.0.1:$port/i"
  assert_eq "$out" "rootless-ok"
  assert_ok uohbox port "$id" 81
  assert_match "$out" '^127\.0\.0\.1:[0-9]+$'
  assert_ok curl -sf -m 2 "http://$out/i"
  assert_eq "$out" "rootless-ok"
  assert_ok uohbox ps --format json
  assert_jq "$out" '.[0].network == "slirp4netns" and .[0].ip == "10.0.2.100" and (.[0].ports | length) == 2'
  assert_eq "$(slirps)" "1" "one slirp4netns for the sandbox"
  # the same port again is refused clearly
  assert_exit 125 uohbox run --rm -p "$port:80" "$BB" true
  assert_contains "$err" "Address already in use"
  assert_ok uohbox rm -f "$id"
  # slirp4netns ends with the sandbox; the leases are gone
  t_wait_until 5 sh -c "[ \"\$(pgrep -u $T_USER -x slirp4netns | wc -l)\" = 0 ]"
  assert_eq "$(ls "$U_DIR/run/ohbox/net/port" | wc -l)" "0" "port leases left"
  assert_fails curl -sf -m 1 "http://127.0.0.1:$port/i"
}

test_egress_and_loopback ()
{
  # a listener in a namespace of this test, reached through the host
  ip netns add "$T_NS"
  ip link add "${T_NS}h" type veth peer name "${T_NS}n"
  ip link set "${T_NS}n" netns "$T_NS"
  ip addr add 198.51.100.5/30 dev "${T_NS}h"
  ip link set "${T_NS}h" up
  ip -n "$T_NS" addr add 198.51.100.6/30 dev "${T_NS}n"
  ip -n "$T_NS" link set "${T_NS}n" up
  ip -n "$T_NS" route add default via 198.51.100.5
  t_start "$T_WORK/l.log" ip netns exec "$T_NS" "$T_PY" -c "import socket
s = socket.socket(); s.bind(('198.51.100.6', 18600)); s.listen()
c, a = s.accept(); c.recv(4096); c.sendall(b'HTTP/1.0 200 OK\r\n\r\nout-ok\n'); c.close()"
  t_wait_until 5 sh -c "ip netns exec $T_NS ss -ltn | grep -q ':18600 '"
  assert_ok uohbox run --rm "$BB" wget -qO- http://198.51.100.6:18600/
  assert_eq "$out" "out-ok"
  # the host's loopback is not the sandbox's gateway (--disable-host-loopback)
  local port
  port=$(t_free_port)
  t_start "$T_WORK/lo.log" "$T_PY" -c "import socket
s = socket.socket(); s.bind(('127.0.0.1', $port)); s.listen()
while True:
    c, a = s.accept(); c.recv(4096); c.sendall(b'HTTP/1.0 200 OK\r\n\r\nleaked\n'); c.close()"
  t_wait_port "$port"
  assert_fails uohbox run --rm "$BB" wget -T 2 -qO- "http://10.0.2.2:$port/"
  assert_not_contains "$out" "leaked"
  ip netns del "$T_NS"
}

test_modes ()
{
  # /etc files: slirp4netns's resolver, own address and hostname
  assert_ok uohbox run --rm --hostname rl "$BB" cat /etc/resolv.conf /etc/hostname /etc/hosts
  assert_contains "$out" "nameserver 10.0.2.3"
  assert_match "$out" "10\.0\.2\.100	rl"
  assert_ok uohbox run --rm --dns 192.0.2.1 "$BB" cat /etc/resolv.conf
  assert_eq "$out" "nameserver 192.0.2.1"
  assert_ok uohbox run --rm --network none "$BB" ls /sys/class/net
  assert_eq "$out" "lo"
  assert_ok uohbox run --rm --network host "$BB" ls /sys/class/net
  assert_ne "$out" "lo"
  assert_exit 125 uohbox run --rm --network none -p 80 "$BB" true
  # slirp4netns of the sandboxes above end with their monitors
  t_wait_until 5 sh -c "[ \"\$(pgrep -u $T_USER -x slirp4netns | wc -l)\" = 0 ]" || true
  assert_eq "$(slirps)" "0" "no slirp4netns left"
}

run_test published_port test_published_port
run_test egress_and_loopback test_egress_and_loopback
run_test modes test_modes
