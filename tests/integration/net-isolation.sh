#!/bin/bash
# net-isolation.sh: root bridge sandboxes are isolated on the network
# (issue 14 items 2, 4, 8): no CAP_NET_RAW by default (ping still works),
# forged frames from a sandbox port dropped (tests/escape/netspoof.c, run
# with --cap-add NET_RAW so that the bridge's filtering is what is shown),
# no router advertisement reaches the host, sandboxes reach each other only
# through published ports, the host's services and private ranges are out
# of reach unless --egress says otherwise. tests/escape/README.md lists
# each test with the attack it stands for; each one failed on the code
# before the fix.
#
# NETWORK RULE: traffic goes only to the bridge subnet and to a namespace
# this script makes, linked to the host by two veth pairs: "public"
# 198.51.100.2 (TEST-NET-2) and "private" 10.99.0.2, with 169.254.169.254
# (the cloud metadata address) and 100.64.0.2 (shared space) routed to it.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run

BB=localhost/busybox:latest
GW=10.213.0.1
NS=ohbi$$
PUB_HOST=198.51.100.1 PUB=198.51.100.2
PRIV_HOST=10.99.0.1 PRIV=10.99.0.2
META=169.254.169.254 SHARED=100.64.0.2
SPOOF=$T_TMP/netspoof
UDP_LOG=$T_TMP/udp.log # (what the namespace's UDP sink got, for every test)

make_world ()
{
  ip netns add "$NS" || return 1
  ip link add "${NS}p" type veth peer name "${NS}q" || return 1
  ip link add "${NS}r" type veth peer name "${NS}s" || return 1
  ip link set "${NS}q" netns "$NS" && ip link set "${NS}s" netns "$NS" || return 1
  ip addr add "$PUB_HOST/24" dev "${NS}p" && ip link set "${NS}p" up || return 1
  ip addr add "$PRIV_HOST/24" dev "${NS}r" && ip link set "${NS}r" up || return 1
  ip -n "$NS" addr add "$PUB/24" dev "${NS}q" && ip -n "$NS" link set "${NS}q" up || return 1
  ip -n "$NS" addr add "$PRIV/24" dev "${NS}s" && ip -n "$NS" link set "${NS}s" up || return 1
  ip -n "$NS" addr add "$META/32" dev lo && ip -n "$NS" addr add "$SHARED/32" dev lo || return 1
  ip -n "$NS" link set lo up
  ip route add "$META/32" via "$PRIV" && ip route add "$SHARED/32" via "$PRIV" || return 1
  # One HTTP server on every address of the namespace: it answers with
  # the address it was reached on. A UDP sink (ports 9999 and 53) writes each
  # datagram's text to $UDP_LOG.
  t_start "$T_TMP/ns-http.log" ip netns exec "$NS" "$T_PY" -c "import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = ('reached ' + self.connection.getsockname()[0] + '\n').encode()
        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(('0.0.0.0', 8080), H).serve_forever()"
  t_start "$T_TMP/ns-udp.log" ip netns exec "$NS" "$T_PY" -c "import select, socket
socks = []
for port in (9999, 53):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', port)); socks.append(s)
while True:
    for s in select.select(socks, [], [])[0]:
        d, a = s.recvfrom(2048)
        with open('$UDP_LOG', 'a') as f: f.write(d.decode(errors='replace').strip() + '\n')"
  t_wait_until 5 sh -c "ip netns exec $NS ss -ltn | grep -q ':8080 '"
}

cleanup_world ()
{
  ip netns del "$NS" 2>/dev/null
  ip link del "${NS}p" 2>/dev/null
  ip link del "${NS}r" 2>/dev/null
  ip route del "$META/32" 2>/dev/null
  ip route del "$SHARED/32" 2>/dev/null
  true
}

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (bridge, veth, nftables)"; return 1; }
  command -v ip >/dev/null && command -v nft >/dev/null && command -v bridge >/dev/null ||
    { echo "needs ip, bridge and nft (iproute2, nftables)"; return 1; }
  gcc -static -O1 -Wall -Wextra -Werror -o "$SPOOF" "$OHBOX_SRCDIR/tests/escape/netspoof.c" ||
    { echo "gcc -static failed (needs gcc and libc6-dev)"; return 1; }
  img_build || return 1
  # (common.sh's own EXIT trap after it: the temp dir goes and the summary
  # line is printed)
  trap '_rc=$?; cleanup_world; (exit $_rc); _t_cleanup' EXIT
  make_world || { echo "cannot make the test's namespace"; return 1; }
}
t_setup_or_die setup setup

# Each test has a store of its own.
load_bb ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
}

# sb_ip ID, sb_mac ID: a sandbox's address and MAC on its bridge.
sb_ip ()
{
  ohbox ps --format json | jq -r --arg id "$1" '.[] | select(.id == $id) | .ip'
}
sb_mac ()
{
  ohbox exec "$1" cat /sys/class/net/eth0/address
}
gw_mac ()
{
  # (not from /sys: a private network namespace sees the host's sysfs)
  ip -j link show ohbox0 | jq -r '.[0].address'
}

# udp_got TEXT...: whether the namespace's UDP sink got one of the TEXTs
# (waits 2 s for it).
udp_got ()
{
  local t a=()
  for t in "$@"; do
    a+=(-e "$t")
  done
  t_wait_until 2 grep -qx "${a[@]}" "$UDP_LOG" 2>/dev/null
}

# udp_none_got TEXT...: none of the datagrams TEXT..., all sent already,
# reached the namespace's UDP sink: one wait of 2 s for all of them (not
# one each), then each named if it came.
udp_none_got ()
{
  local t
  udp_got "$@" || return 0
  for t in "$@"; do
    grep -qx "$t" "$UDP_LOG" && echo "$t"
  done
  return 1
}

# assert_unreachable URL...: a sandbox on ohbox0 tries every URL at once
# (wget, 2 s each) and reaches none: one sandbox and one wait for
# destinations that must all be out of reach.
assert_unreachable ()
{
  local u script=
  for u in "$@"; do
    script="$script (timeout 2 wget -qO /dev/null $u && echo reached $u || echo blocked $u) &"
  done
  assert_ok ohbox run --rm "$BB" sh -c "$script wait"
  for u in "$@"; do
    assert_contains "$out" "blocked $u" "what the sandbox reached"
  done
}

# A served sandbox: httpd on port 80 answering its id at /hostname,
# published on the host's $1 (free port).
start_served ()
{
  assert_ok ohbox run -d ${2:+--name "$2"} -p "$1:80" "$BB" httpd -f -p 80 -h /etc
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$1/hostname"
}

# CAP_NET_RAW is not in the default set: no raw or packet socket; ping
# works through ICMP datagram sockets (as iputils' ping uses them), as root
# and as another user, on loopback and across the bridge; --cap-add NET_RAW
# gives raw sockets back (busybox 1.35's ping needs them) with a warning.
test_no_net_raw_ping ()
{
  load_bb
  local u
  for u in 0:0 1000:1000; do
    assert_ok ohbox run --rm --network none --user "$u" -v "$SPOOF:/spoof:ro" "$BB" sh -c '/spoof raw; /spoof ping 127.0.0.1'
    assert_contains "$out" "packet EPERM" "user $u"
    assert_contains "$out" "icmp-raw EPERM" "user $u"
    assert_contains "$out" "icmp-dgram ok" "user $u"
    assert_contains "$out" "reply from 127.0.0.1" "user $u"
    assert_ok ohbox run --rm --user "$u" -v "$SPOOF:/spoof:ro" "$BB" /spoof ping "$PUB"
    assert_contains "$out" "reply from $PUB" "user $u"
  done
  assert_ok ohbox run --rm --cap-add NET_RAW -v "$SPOOF:/spoof:ro" "$BB" sh -c "/spoof raw; ping -c 1 -W 2 $PUB"
  assert_contains "$out" "packet ok"
  assert_contains "$out" "1 packets received"
  assert_contains "$err" "CAP_NET_RAW"
}

# The review's attack: a sandbox answers ARP for a neighbour's address and
# receives the host's requests to that neighbour's published port (the
# executor's, with its session key). The host keeps a permanent neighbour
# entry for each sandbox and the bridge drops ARP that claims another
# port's address: every request still reaches the victim.
test_arp_spoof ()
{
  load_bb
  local port a mac_a ip_a i
  port=$(t_free_port)
  start_served "$port"
  a=$out ip_a=$(sb_ip "$out") mac_a=$(sb_mac "$out")
  assert_ok ohbox run -d --cap-add NET_RAW -v "$SPOOF:/spoof:ro" "$BB" sh -c \
    "/spoof arp eth0 $ip_a $(gw_mac) 40 & /spoof arp eth0 $ip_a ff:ff:ff:ff:ff:ff 40; wait"
  local b=$out
  for i in $(seq 8); do
    sleep 0.4
    assert_ok curl -sf -m 2 "http://127.0.0.1:$port/hostname"
    assert_eq "$out" "${a:0:12}" "request $i to the victim's published port"
  done
  assert_ok ip neigh show "$ip_a" dev ohbox0
  assert_contains "$out" "lladdr $mac_a"
  ohbox rm -f "$a" "$b" >/dev/null
}

# IPv4 with another sandbox's address (or a free one) as source, to the
# internet through the host and to a neighbour directly; a frame with a
# forged source MAC. Only what the sandbox may send as itself passes.
test_forged_sources ()
{
  load_bb
  local c ip_c mac_c ip_a b ip_b gw
  assert_ok ohbox run -d -v "$SPOOF:/spoof:ro" "$BB" sh -c '/spoof listen 5000 >/tmp/got'
  c=$out ip_c=$(sb_ip "$out") mac_c=$(sb_mac "$out")
  assert_ok ohbox run -d "$BB" sleep 600
  ip_a=$(sb_ip "$out")
  local a=$out
  assert_ok ohbox run -d --cap-add NET_RAW -v "$SPOOF:/spoof:ro" "$BB" sleep 600
  b=$out ip_b=$(sb_ip "$out") gw=$(gw_mac)
  # (the program works: its own addresses pass)
  assert_ok ohbox exec "$b" /spoof udp eth0 own "$ip_b" "$gw" "$PUB" 9999 genuine
  udp_got genuine || _t_assert_fail "the sandbox's own datagram did not arrive"
  assert_ok ohbox exec "$b" /spoof udp eth0 own "$ip_a" "$gw" "$PUB" 9999 spoofed-neighbour
  assert_ok ohbox exec "$b" /spoof udp eth0 own 10.213.77.77 "$gw" "$PUB" 9999 spoofed-free
  assert_ok ohbox exec "$b" /spoof udp eth0 02:00:de:ad:be:ef "$ip_b" "$gw" "$PUB" 9999 forged-mac
  assert_ok ohbox exec "$b" /spoof udp eth0 own "$ip_a" "$mac_c" "$ip_c" 5000 to-neighbour
  local came
  came=$(udp_none_got spoofed-neighbour spoofed-free forged-mac) || true
  assert_not_contains "$came" spoofed-neighbour "datagrams with a neighbour's source address that left the host"
  assert_not_contains "$came" spoofed-free "datagrams with an unleased source address that left the host"
  assert_not_contains "$came" forged-mac "frames with a forged source MAC that left the host"
  assert_ok ohbox exec "$c" cat /tmp/got
  assert_eq "$out" "" "what the neighbour received"
  assert_no_match "$(bridge fdb show br ohbox0)" "02:00:de:ad:be:ef" "the bridge learnt the forged MAC"
  ohbox rm -f "$a" "$b" "$c" >/dev/null
}

# CVE-2020-13401's shape: router advertisements from a sandbox port gave
# the host a prefix route (and would give it a default route).
test_router_advert ()
{
  load_bb
  assert_ok ohbox run --rm --cap-add NET_RAW -v "$SPOOF:/spoof:ro" "$BB" /spoof ra eth0 2001:db8:5a:: 10
  sleep 1
  assert_no_match "$(ip -6 route show)" "2001:db8:5a" "the host's IPv6 routes"
  assert_no_match "$(ip -6 route show default)" "ohbox0" "the host's IPv6 default route"
  assert_eq "$(cat /proc/sys/net/ipv6/conf/ohbox0/accept_ra)" 0 "accept_ra on ohbox0"
  assert_eq "$(cat /proc/sys/net/ipv6/conf/ohbox0/disable_ipv6)" 1 "disable_ipv6 on ohbox0"
}

# Sandboxes reach each other through the host's published ports only.
test_sandbox_to_sandbox ()
{
  load_bb
  local port a ip_a
  port=$(t_free_port)
  start_served "$port"
  a=$out ip_a=$(sb_ip "$out")
  assert_fails ohbox run --rm "$BB" timeout 3 wget -qO- "http://$ip_a/hostname"
  assert_ok ohbox run --rm "$BB" timeout 3 wget -qO- "http://$GW:$port/hostname"
  assert_eq "$out" "${a:0:12}" "through the published port"
  assert_ok ohbox run --rm "$BB" timeout 3 wget -qO- "http://$PUB_HOST:$port/hostname"
  assert_eq "$out" "${a:0:12}" "through the published port on another host address"
  ohbox rm -f "$a" >/dev/null
}

# Services of the host that listen on every address or on the gateway's
# are out of reach (--egress all opens them, with a warning); DNS on the
# host only for sandboxes whose resolv.conf names it.
test_host_services ()
{
  load_bb
  local port gport
  assert_ok ohbox run --rm "$BB" true # (the bridge exists)
  port=$(t_free_port) gport=$(t_free_port)
  t_start "$T_WORK/any.log" "$T_PY" -m http.server --bind 0.0.0.0 "$port"
  t_start "$T_WORK/gw.log" "$T_PY" -m http.server --bind "$GW" "$gport"
  t_wait_until 5 sh -c "ss -ltn | grep -q ':$port '"
  t_wait_until 5 sh -c "ss -ltn | grep -q '$GW:$gport '"
  assert_unreachable "http://$GW:$port/" "http://$PUB_HOST:$port/" "http://$GW:$gport/"
  assert_ok ohbox run --rm --egress all "$BB" timeout 2 wget -qO /dev/null "http://$GW:$gport/"
  assert_contains "$err" "egress"
  # DNS: a resolver on the gateway's address, named by --dns
  t_start "$T_WORK/dns.log" "$T_PY" -c "import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('$GW', 53))
while True:
    d, a = s.recvfrom(2048); open('$T_WORK/dns.got', 'a').write(a[0] + '\n')"
  t_wait_until 5 sh -c "ss -lun | grep -q '$GW:53 '"
  assert_ok ohbox run --rm -v "$SPOOF:/spoof:ro" "$BB" /spoof send "$GW" 53 query
  sleep 0.5
  assert_file_absent "$T_WORK/dns.got"
  assert_ok ohbox run --rm --dns "$GW" -v "$SPOOF:/spoof:ro" "$BB" /spoof send "$GW" 53 query
  t_wait_until 3 test -s "$T_WORK/dns.got" || _t_assert_fail "the sandbox's resolver got nothing"
}

# Egress: the internet yes; private, shared and link-local ranges (the
# metadata address) no, unless --egress names them; none: nothing leaves.
test_egress ()
{
  load_bb
  assert_ok ohbox run --rm "$BB" timeout 3 wget -qO- "http://$PUB:8080/"
  assert_eq "$out" "reached $PUB"
  assert_unreachable "http://$PRIV:8080/" "http://$META:8080/" "http://$SHARED:8080/"
  assert_ok ohbox run --rm --egress 10.99.0.0/24 "$BB" sh -c \
    "timeout 3 wget -qO- http://$PRIV:8080/; timeout 3 wget -qO- http://$PUB:8080/; timeout 2 wget -qO- http://$META:8080/ || echo no-meta"
  assert_eq "$out" "reached $PRIV
reached $PUB
no-meta"
  assert_contains "$err" "10.99.0.0/24"
  assert_ok ohbox run --rm --egress all "$BB" timeout 3 wget -qO- "http://$META:8080/"
  assert_eq "$out" "reached $META"
  assert_fails ohbox run --rm --egress none "$BB" timeout 2 wget -qO- "http://$PUB:8080/"
  # a resolver in a blocked range stays reachable, on port 53 only, for
  # the sandboxes whose resolv.conf names it
  assert_ok ohbox run --rm --dns "$PRIV" -v "$SPOOF:/spoof:ro" "$BB" sh -c \
    "/spoof send $PRIV 53 dns-query; /spoof send $PRIV 9999 dns-other-port; timeout 2 wget -qO- http://$PRIV:8080/ || echo no-http"
  assert_eq "$out" "no-http"
  udp_got dns-query || _t_assert_fail "the sandbox's resolver (--dns $PRIV) got nothing on port 53"
  assert_ok ohbox run --rm -v "$SPOOF:/spoof:ro" "$BB" /spoof send "$PRIV" 53 dns-not-mine
  local came
  came=$(udp_none_got dns-other-port dns-not-mine) || true
  assert_not_contains "$came" dns-other-port "the resolver's address reached on another port than 53"
  assert_not_contains "$came" dns-not-mine "port 53 of a private address its resolv.conf does not name reached"
  # refused where it cannot apply, and nonsense
  assert_exit 125 ohbox run --rm --egress bogus "$BB" true
  assert_contains "$err" "--egress"
  assert_exit 125 ohbox run --rm --network none --egress all "$BB" true
  assert_contains "$err" "--egress"
}

# Named networks: made, listed, inspected and removed by name; their
# sandboxes reach each other (and the internet), with the same source
# checks; nothing else reaches them but through published ports, and they
# reach neither ohbox0's sandboxes nor another network's.
NET_A=niso-a-$$ NET_B=niso-b-$$
test_named_networks ()
{
  load_bb
  trap 'ohbox network rm "$NET_A" "$NET_B" >/dev/null 2>&1 || true; trap - RETURN' RETURN
  assert_ok ohbox network create "$NET_A"
  assert_eq "$out" "$NET_A"
  assert_ok ohbox network create --subnet 10.215.7.0/24 --format json "$NET_B"
  assert_jq "$out" '.name == "'"$NET_B"'" and .subnet == "10.215.7.0/24" and .gateway == "10.215.7.1"'
  local br_a br_b
  assert_ok ohbox network inspect "$NET_A"
  assert_jq "$out" '.[0].subnet | test("^10\\.214\\.[0-9]+\\.0/24$")'
  br_a=$(jq -r '.[0].bridge' <<<"$out")
  br_b=$(ohbox network inspect "$NET_B" | jq -r '.[0].bridge')
  assert_eq "$(cat "/proc/sys/net/ipv6/conf/$br_a/accept_ra") $(cat "/proc/sys/net/ipv6/conf/$br_a/disable_ipv6")" \
    "0 1" "accept_ra and disable_ipv6 on $br_a"
  assert_ok ohbox network ls
  assert_contains "$out" "$NET_A"
  assert_ok ohbox network ls --format json
  assert_jq "$out" 'map(.name) | index("'"$NET_B"'") != null'
  # refusals: the same name, a taken subnet, nonsense
  assert_exit 1 ohbox network create "$NET_A"
  assert_contains "$err" "exists"
  assert_fails ohbox network create --subnet 10.215.7.0/24 niso-c-$$
  assert_fails ohbox network create --subnet 10.213.0.0/24 niso-c-$$
  assert_exit 2 ohbox network create "bad/name"
  assert_exit 2 ohbox network create --subnet 10.215.8.1/33 niso-c-$$
  assert_exit 125 ohbox run --rm --network niso-none-$$ "$BB" true
  assert_contains "$err" "niso-none-$$"
  # members reach each other; the others do not
  assert_ok ohbox run -d --network "$NET_A" "$BB" httpd -f -p 80 -h /etc
  local a1=$out ip_a1
  ip_a1=$(sb_ip "$a1")
  assert_match "$ip_a1" '^10\.214\.'
  assert_ok ohbox run --rm --network "$NET_A" "$BB" timeout 3 wget -qO- "http://$ip_a1/hostname"
  assert_eq "$out" "${a1:0:12}" "a member of the same network"
  assert_fails ohbox run --rm "$BB" timeout 3 wget -qO- "http://$ip_a1/hostname"
  assert_fails ohbox run --rm --network "$NET_B" "$BB" timeout 3 wget -qO- "http://$ip_a1/hostname"
  assert_ok ohbox run --rm --network "$NET_A" "$BB" timeout 3 wget -qO- "http://$PUB:8080/"
  assert_eq "$out" "reached $PUB" "a member's egress"
  assert_fails ohbox run --rm --network "$NET_A" "$BB" timeout 2 wget -qO- "http://$PRIV:8080/"
  # --network container: of a member shares its network
  assert_ok ohbox run --rm --network "container:$a1" "$BB" timeout 3 wget -qO- "http://127.0.0.1/hostname"
  assert_eq "$out" "${a1:0:12}"
  # the same source checks inside a named network
  local gw
  gw=$(ip -j link show "$br_a" | jq -r '.[0].address')
  assert_ok ohbox run --rm --network "$NET_A" --cap-add NET_RAW -v "$SPOOF:/spoof:ro" "$BB" sh -c \
    "/spoof udp eth0 own \$(ip -4 -o addr show eth0 | sed 's/.*inet \\([0-9.]*\\).*/\\1/') $gw $PUB 9999 named-genuine; /spoof udp eth0 own $ip_a1 $gw $PUB 9999 named-spoofed"
  udp_got named-genuine || _t_assert_fail "a member's own datagram did not arrive"
  ! udp_got named-spoofed || _t_assert_fail "a datagram with another member's address left the host"
  # in use: not removed
  assert_exit 1 ohbox network rm "$NET_A"
  assert_contains "$err" "${a1:0:12}"
  assert_ok ip link show "$br_a"
  assert_ok ohbox rm -f "$a1"
  assert_ok ohbox network rm "$NET_A" "$NET_B"
  # nothing left: bridges, the tables' elements, definitions
  assert_fails ip link show "$br_a"
  assert_fails ip link show "$br_b"
  assert_no_match "$(nft list table inet ohbox; nft list table bridge ohbox)" "$br_a|$br_b|10\.215\.7\." "the tables"
  assert_ok ohbox network ls -q
  assert_not_contains "$out" "niso-"
  assert_exit 3 ohbox network inspect "$NET_A"
}

run_test no_net_raw_ping test_no_net_raw_ping
run_test arp_spoof test_arp_spoof
run_test forged_sources test_forged_sources
run_test router_advert test_router_advert
run_test sandbox_to_sandbox test_sandbox_to_sandbox
run_test host_services test_host_services
run_test egress test_egress
run_test named_networks test_named_networks
