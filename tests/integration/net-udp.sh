#!/bin/bash
# net-udp.sh: UDP through a root bridge sandbox end to end: `-p
# HOSTPORT:CTRPORT/udp` with a UDP echo server in the sandbox (a static
# helper of the suite's own: busybox's nc has no UDP) answers a datagram
# from the host's 127.0.0.1 and from a network namespace this script makes;
# a TCP mapping of the same number does not catch UDP; rm removes the
# mapping.
#
# NETWORK RULE: traffic only to 127.0.0.1, the bridge subnet (ohbox makes
# it) and 198.51.100.4/30 on a veth pair of this script's own.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"

export OHBOX_RUNROOT=$T_TMP/run

BB=localhost/busybox:latest
T_NS=ohbu$$
T_NS_HOST_IP=198.51.100.5
T_NS_IP=198.51.100.6

ns_cleanup ()
{
  ip netns del "$T_NS" 2>/dev/null || true
  ip link del "${T_NS}h" 2>/dev/null || true
}
trap '_rc=$?; ns_cleanup; (exit $_rc); _t_cleanup' EXIT

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (bridge, veth, nftables)"; return 1; }
  command -v ip >/dev/null || { echo "needs ip"; return 1; }
  command -v cc >/dev/null || { echo "needs cc (to build the UDP echo helper)"; return 1; }
  img_build || return 1
  mkdir -p "$T_TMP/h"
  cc -static -O2 -o "$T_TMP/h/udp_echo" "$T_LIB/udp_echo.c" || { echo "cannot build udp_echo (cc -static)"; return 1; }
  t_veth_netns "$T_NS" "$T_NS_HOST_IP" "$T_NS_IP"
}
t_setup_or_die setup setup

ping_udp ()
{
  "$T_PY" "$T_LIB/udp_ping.py" "$@"
}

test_udp_echo ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  local port
  port=$(t_free_port)
  # UDP on PORT to the echo on 7; TCP on PORT to an httpd on 80: the same
  # host number, two protocols, two sandbox ports
  assert_ok ohbox run -d -v "$T_TMP/h:/h:ro" -p "$port:7/udp" -p "$port:80/tcp" "$BB" \
    sh -c 'echo tcp-ok >/tmp/i; httpd -p 80 -h /tmp; exec /h/udp_echo 7'
  local id=$out
  assert_ok ohbox port "$id"
  assert_contains "$out" "7/udp -> 0.0.0.0:$port"
  assert_ok ping_udp 127.0.0.1 "$port" from-loopback
  assert_eq "$out" from-loopback
  assert_ok ip netns exec "$T_NS" "$T_PY" "$T_LIB/udp_ping.py" "$T_NS_HOST_IP" "$port" from-netns
  assert_eq "$out" from-netns
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$port/i"
  assert_ok curl -sf -m 2 "http://127.0.0.1:$port/i"
  assert_eq "$out" tcp-ok
  assert_ok ohbox rm -f "$id"
  # the mapping is gone with the sandbox: nothing answers any more
  assert_fails ping_udp 127.0.0.1 "$port" after-rm 1
}

# A UDP mapping only on 127.0.0.1: the other namespace gets no answer.
test_udp_host_ip ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  local port
  port=$(t_free_port)
  assert_ok ohbox run -d -v "$T_TMP/h:/h:ro" -p "127.0.0.1:$port:$port/udp" "$BB" /h/udp_echo "$port"
  local id=$out
  assert_ok ping_udp 127.0.0.1 "$port" lo-only
  assert_eq "$out" lo-only
  assert_fails ip netns exec "$T_NS" "$T_PY" "$T_LIB/udp_ping.py" "$T_NS_HOST_IP" "$port" not-here 1
  assert_ok ohbox rm -f "$id"
}

run_test udp_echo test_udp_echo
run_test udp_host_ip test_udp_host_ip
