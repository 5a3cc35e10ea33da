#!/bin/bash
# net.sh: root networking of `ohbox run` (network.h): the ohbox0 bridge,
# sandbox to sandbox, published ports from 127.0.0.1 and from a network
# namespace this script makes, the gateway, egress NAT, /etc files, the
# other --network modes, `ohbox port`.
#
# NETWORK RULE: traffic goes only to 127.0.0.1, to the bridge subnet (ohbox
# creates it) and to addresses inside namespaces this script creates
# (198.51.100.0/30, TEST-NET-2, on a veth pair of its own).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run

BB=localhost/busybox:latest
NETROOT=${OHBOX_NETROOT:-/run/ohbox/net}
T_NS=ohbt$$
T_NS_HOST_IP=198.51.100.1
T_NS_IP=198.51.100.2

load_bb ()
{
  t_load_busybox
}

# sb_ip ID: the sandbox's bridge address (from ohbox ps).
sb_ip ()
{
  ohbox ps --format json | jq -r --arg id "$1" '.[] | select(.id == $id) | .ip'
}

# free_range N: the first of N consecutive TCP ports free on the host now.
free_range ()
{
  "$T_PY" -c "import random, socket
n = $1
while True:
    base = random.randrange(20000, 29000)
    try:
        socks = []
        for p in range(base, base + n):
            s = socket.socket(); s.bind(('0.0.0.0', p)); socks.append(s)
        print(base); break
    except OSError:
        pass"
}

# make_test_netns: a namespace $T_NS holding $T_NS_IP, linked to the host
# (which gets $T_NS_HOST_IP) by a veth pair; removed when the test ends.
make_test_netns ()
{
  trap 'ip netns del "$T_NS" 2>/dev/null || true; ip link del "${T_NS}h" 2>/dev/null || true' EXIT
  t_veth_netns "$T_NS" "$T_NS_HOST_IP" "$T_NS_IP"
}

# foreign_veth VETH: true when an address lease names VETH's sandbox (by
# its id prefix) in a state root other than this script's.
foreign_veth ()
{
  local l t
  for l in "$NETROOT"/ip/*; do
    t=$(readlink "$l" 2>/dev/null) || continue
    case $t in
      "$OHBOX_RUNROOT"/*) ;;
      */"${1#ohb}"*) return 0 ;;
    esac
  done
  return 1
}

# Leftovers of this script's sandboxes: leases naming its state root, veths
# of sandboxes that are gone, nft elements for addresses nobody leases.
leftovers ()
{
  local l
  local t
  for l in "$NETROOT"/ip/* "$NETROOT"/port/*; do
    # (a lease of another ohbox user's sandbox may go meanwhile)
    t=$(readlink "$l" 2>/dev/null) || continue
    case $t in "$OHBOX_RUNROOT"/*) ;; *) continue ;; esac
    [ -e "$t" ] && [ -n "${1:-}" ] && continue
    echo "lease $l -> $t"
  done
  local ids v
  ids=$(ls "$OHBOX_RUNROOT" 2>/dev/null | grep -E '^[0-9a-f]{64}$' | cut -c1-12 || true)
  for v in $(ip -o link show | sed -n 's/^[0-9]*: \(ohb[0-9a-f]\{12\}\)[@:].*/\1/p'); do
    # Sandboxes of other ohbox users that were there before this script are not ours.
    grep -qx "$v" <<<"$VETHS_BEFORE" && continue
    # Nor those other users start meanwhile (the machine is shared): their
    # address lease names a sandbox outside this script's state root.
    foreign_veth "$v" && continue
    grep -qx "${v#ohb}" <<<"$ids" || echo "veth $v"
  done
  local e
  for e in $(nft_orphan_elements "$NETROOT"); do
    echo "nft element for $e"
  done
}

# assert_no_leftovers [keep-live]: none (the kernel deletes a dead
# namespace's veth asynchronously: allow it a few seconds).
assert_no_leftovers ()
{
  local i l
  for i in $(seq 50); do
    l=$(leftovers "${1:-}")
    [ -z "$l" ] && return 0
    sleep 0.1
  done
  _t_assert_fail "left behind: $(tr '\n' ' ' <<<"$l")"
}

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (bridge, veth, nftables)"; return 1; }
  command -v ip >/dev/null && command -v nft >/dev/null || { echo "needs ip and nft"; return 1; }
  img_build || return 1
}
t_setup_or_die setup setup
VETHS_BEFORE=$(ip -o link show | sed -n 's/^[0-9]*: \(ohb[0-9a-f]\{12\}\)[@:].*/\1/p')

test_two_sandboxes ()
{
  load_bb
  local port
  port=$(t_free_port)
  assert_ok ohbox run -d --name a -p "$port:80" "$BB" httpd -f -p 80 -h /etc
  local a=$out ip_a
  ip_a=$(sb_ip "$a")
  assert_match "$ip_a" '^10\.213\.'
  # (one reaches the other through the host's published port only:
  # net-isolation.sh)
  assert_ok ohbox run --rm "$BB" sh -c "ip -4 -o addr show eth0; wget -qO- http://10.213.0.1:$port/hostname"
  assert_match "$out" "inet 10\.213\."
  assert_not_contains "$out" "$ip_a/"
  assert_contains "$out" "${a:0:12}"
  # /etc files: own name and address, the gateway, loopback
  assert_ok ohbox run --rm --name b --hostname bee "$BB" sh -c 'cat /etc/hostname /etc/hosts; hostname'
  assert_contains "$out" "bee"
  assert_match "$out" "10\.213\.[0-9.]+	bee b"
  assert_match "$out" "10\.213\.0\.1	host.ohbox.internal"
  assert_contains "$out" "127.0.0.1	localhost"
  assert_ok ohbox run --rm --dns 192.0.2.53 --dns 2001:db8::53 "$BB" cat /etc/resolv.conf
  assert_eq "$out" "nameserver 192.0.2.53
nameserver 2001:db8::53"
  assert_exit 125 ohbox run --rm --dns not-an-ip "$BB" true
  assert_contains "$err" "--dns"
  # no loopback resolver leaks into a bridge sandbox
  assert_ok ohbox run --rm "$BB" cat /etc/resolv.conf
  assert_no_match "$out" "nameserver (127\.|::1)"
  assert_ok ohbox rm -f "$a"
  assert_no_leftovers
}

test_published_ports ()
{
  require_cmd curl
  load_bb
  local p1 p2
  p1=$(t_free_port)
  assert_ok ohbox run -d -p "$p1:80" -p 127.0.0.1::81 -p 8000-8001 "$BB" sh -c \
    'echo eighty >/tmp/i80; echo eightyone >/tmp/i81; httpd -p 80 -h /tmp; httpd -p 81 -h /tmp; httpd -p 8001 -h /tmp; sleep 60'
  local id=$out
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$p1/i80"
  assert_ok curl -sf -m 2 "http://127.0.0.1:$p1/i80"
  assert_eq "$out" "eighty"
  assert_ok ohbox port "$id" 81
  assert_match "$out" '^127\.0\.0\.1:[0-9]+$'
  p2=${out#127.0.0.1:}
  assert_ok curl -sf -m 2 "http://127.0.0.1:$p2/i81"
  assert_eq "$out" "eightyone"
  assert_ok ohbox port "$id"
  assert_contains "$out" "80/tcp -> 0.0.0.0:$p1"
  assert_contains "$out" "81/tcp -> 127.0.0.1:$p2"
  assert_match "$out" "8001/tcp -> 0\.0\.0\.0:[0-9]+"
  local p3
  p3=$(sed -n 's|^8001/tcp -> 0.0.0.0:||p' <<<"$out")
  assert_ok curl -sf -m 2 "http://127.0.0.1:$p3/i80"
  assert_ok ohbox ps --format json
  assert_jq "$out" ".[0].ports | length == 4" "4 ports in ps"
  assert_jq "$out" ".[0].ip | startswith(\"10.213.\")" "ip in ps"
  assert_ok ohbox port --format json "$id"
  assert_jq "$out" "map(select(.container_port == 80))[0].host_port == $p1" "json port"
  # hairpin: another sandbox reaches the published port on the host's address
  assert_ok ohbox run --rm "$BB" wget -qO- "http://10.213.0.1:$p1/i80"
  assert_eq "$out" "eighty"
  # a port bound to 127.0.0.1 only does not answer on the bridge gateway
  assert_fails curl -sf -m 1 "http://10.213.0.1:$p2/i81"
  assert_ok ohbox rm -f "$id"
  assert_fails curl -sf -m 1 "http://127.0.0.1:$p1/i80"
  assert_no_leftovers
}

test_ranges_and_pools ()
{
  require_cmd curl
  load_bb
  local base
  base=$(free_range 3)
  assert_ok ohbox run -d -p "$base-$((base + 2)):7000-7002" "$BB" sh -c \
    'echo r >/tmp/r; for p in 7000 7001 7002; do httpd -p $p -h /tmp; done; sleep 60'
  local a=$out
  local i
  for i in 0 1 2; do
    t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$((base + i))/r"
  done
  # a pool: two sandboxes asking for one port of the same 2-port range get
  # both ports, a third is refused
  local pool
  pool=$(free_range 2)
  assert_ok ohbox run -d -p "$pool-$((pool + 1)):80" "$BB" sleep 60
  local b=$out
  assert_ok ohbox run -d -p "$pool-$((pool + 1)):80" "$BB" sleep 60
  local c=$out
  assert_ok ohbox port "$b" 80
  local pb=$out
  assert_ok ohbox port "$c" 80
  assert_ne "$out" "$pb" "two sandboxes got the same pool port"
  assert_exit 125 ohbox run --rm -p "$pool-$((pool + 1)):80" "$BB" true
  assert_contains "$err" "no free host port in $pool-$((pool + 1))"
  assert_ok ohbox rm -f "$a" "$b" "$c"
  # bad specs are usage errors
  assert_exit 125 ohbox run --rm -p 1-3:1-2 "$BB" true
  assert_contains "$err" "as long as"
  assert_exit 125 ohbox run --rm -p 70000 "$BB" true
  assert_exit 125 ohbox run --rm -p 80/sctp "$BB" true
  assert_exit 125 ohbox run --rm --network none -p 80 "$BB" true
  assert_contains "$err" "bridge"
  assert_no_leftovers
}

test_port_in_use ()
{
  load_bb
  local port
  port=$(t_free_port)
  t_start "$T_WORK/listener.log" "$T_PY" -c "import socket, time
s = socket.socket(); s.bind(('127.0.0.1', $port)); s.listen(); time.sleep(120)"
  t_wait_port "$port"
  assert_exit 125 ohbox run --rm -p "$port:80" "$BB" true
  assert_contains "$err" "publish host port \`0.0.0.0:$port/tcp\`: Address already in use"
  assert_contains "$err" "choose another host port"
  # ohbox's own: a second sandbox cannot take a port the first publishes
  local q
  q=$(t_free_port)
  assert_ok ohbox run -d -p "$q:80" "$BB" sleep 60
  local id=$out
  assert_exit 125 ohbox run --rm -p "127.0.0.1:$q:80" "$BB" true
  assert_contains "$err" "Address already in use"
  # and the host cannot bind it meanwhile
  assert_fails "$T_PY" -c "import socket; socket.socket().bind(('0.0.0.0', $q))"
  assert_ok ohbox rm -f "$id"
  assert_ok "$T_PY" -c "import socket; socket.socket().bind(('0.0.0.0', $q))"
  assert_no_leftovers
}

test_other_netns_and_egress ()
{
  require_cmd curl
  load_bb
  make_test_netns
  local port
  port=$(t_free_port)
  assert_ok ohbox run -d -p "$port:80" "$BB" sh -c 'echo from-ns >/tmp/x; httpd -f -p 80 -h /tmp'
  local id=$out
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$port/x"
  # published port from the test's namespace, through the host's veth address
  assert_ok ip netns exec "$T_NS" curl -sf -m 3 "http://$T_NS_HOST_IP:$port/x"
  assert_eq "$out" "from-ns"
  # egress: a listener in the test's namespace sees the host's address (NAT)
  local lport=18500 peerfile=$T_WORK/peer
  t_start "$T_WORK/nslistener.log" ip netns exec "$T_NS" "$T_PY" -c "import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$T_NS_IP', $lport)); s.listen()
c, a = s.accept(); c.recv(4096); open('$peerfile', 'w').write(a[0]); c.sendall(b'HTTP/1.0 200 OK\r\n\r\negress-ok\n'); c.close()"
  t_wait_until 5 sh -c "ip netns exec $T_NS ss -ltn | grep -q ':$lport '"
  assert_ok ohbox run --rm "$BB" wget -qO- "http://$T_NS_IP:$lport/"
  assert_eq "$out" "egress-ok"
  assert_eq "$(cat "$peerfile")" "$T_NS_HOST_IP" "egress is masqueraded to the host's address"
  assert_ok ohbox rm -f "$id"
  assert_no_leftovers
}

test_gateway_listener ()
{
  load_bb
  # the bridge exists once a sandbox ran
  assert_ok ohbox run --rm "$BB" true
  local port gw=10.213.0.1
  port=$(t_free_port)
  t_start "$T_WORK/listener.log" "$T_PY" -c "import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$gw', $port)); s.listen()
c, a = s.accept(); c.recv(4096); c.sendall(b'HTTP/1.0 200 OK\r\n\r\nhost-here\n'); c.close()"
  t_wait_until 5 sh -c "ss -ltn | grep -q '$gw:$port '"
  # (the host's services are out of reach unless --egress all says so:
  # net-isolation.sh host_services)
  assert_ok ohbox run --rm --egress all "$BB" wget -qO- "http://host.ohbox.internal:$port/"
  assert_eq "$out" "host-here"
}

test_modes ()
{
  load_bb
  assert_ok ohbox run --rm --network none "$BB" sh -c 'ls /sys/class/net; cat /etc/hosts'
  assert_contains "$out" "lo"
  assert_not_contains "$out" "eth0"
  assert_contains "$out" "localhost"
  # its hostname resolves without an address of its own (sudo needs it)
  assert_ok ohbox run --rm --network none --hostname nohost "$BB" grep nohost /etc/hosts
  assert_match "$out" "^127\.0\.1\.1	nohost"
  assert_ok ohbox run --rm --network host "$BB" cat /etc/hosts
  assert_eq "$out" "$(cat /etc/hosts)"
  # container:NAME shares the other sandbox's namespace (and its /etc/hosts)
  assert_ok ohbox run -d --name first "$BB" sh -c 'echo shared >/tmp/s; httpd -f -p 127.0.0.1:8080 -h /tmp'
  local first=$out ip
  ip=$(sb_ip "$first")
  assert_ok ohbox run --rm --network container:first "$BB" sh -c \
    'ip -4 -o addr show eth0; wget -qO- http://127.0.0.1:8080/s; cat /etc/hostname'
  assert_contains "$out" "inet $ip/"
  assert_contains "$out" "shared"
  assert_contains "$out" "${first:0:12}"
  assert_exit 125 ohbox run --rm --network container:nope "$BB" true
  assert_exit 125 ohbox run --rm --network bogus "$BB" true
  assert_ok ohbox rm -f "$first"
  assert_no_leftovers
}

# N concurrent start/stop cycles (OHBOX_NET_CYCLES, default 20; the issue's
# 100 with OHBOX_NET_CYCLES=100): distinct addresses and ports while they
# run, nothing left once they are gone.
test_concurrent_cycles ()
{
  load_bb
  local n=${OHBOX_NET_CYCLES:-20} i
  for i in $(seq "$n"); do
    ohbox run -d -p 80 -p 30000-39999:8000 "$BB" sleep 60 >"$T_WORK/id.$i" 2>"$T_WORK/err.$i" &
  done
  wait
  for i in $(seq "$n"); do
    [ -s "$T_WORK/id.$i" ] || t_fail concurrent "run $i failed: $(cat "$T_WORK/err.$i")"
  done
  assert_ok ohbox ps --format json
  assert_jq "$out" "length == $n" "$n running"
  assert_jq "$out" "map(.ip) | unique | length == $n" "distinct addresses"
  assert_jq "$out" "[.[].ports[].host_port] | unique | length == $((2 * n))" "distinct host ports"
  assert_jq "$out" "[.[].ports[] | select(.container_port == 8000) | .host_port] | all(. >= 30000 and . <= 39999)" \
    "executor ports from the pool"
  # half stop (their monitors release), half are removed running; all concurrently
  for i in $(seq "$n"); do
    if [ $((i % 2)) = 0 ]; then
      ohbox stop -t 0 "$(cat "$T_WORK/id.$i")" >/dev/null &
    else
      ohbox rm -f "$(cat "$T_WORK/id.$i")" >/dev/null &
    fi
  done
  wait
  assert_ok ohbox ps --format json
  assert_jq "$out" "length == 0" "none running"
  # stopped ones hold nothing (the veths of removed ones go with their
  # namespaces, which the kernel frees asynchronously)
  assert_no_leftovers keep-live
  assert_ok ohbox rm $(ohbox ps -a --format json | jq -r '.[].id')
  for i in $(seq "$n"); do
    ohbox run --rm -p 80 "$BB" true >/dev/null 2>"$T_WORK/err.$i" &
  done
  wait
  assert_no_leftovers
}

# ohbox killed (SIGKILL) at points of its start: the next command leaves nothing.
test_sigkill_mid_start ()
{
  load_bb
  local d port
  for d in 0 0.005 0.01 0.02 0.04 0.08; do
    port=$(t_free_port)
    ohbox_bg "$T_WORK/bg.out" run -p "$port:80" -p 80 "$BB" sleep 60
    sleep "$d"
    kill -9 "$OHBOX_BG_PID" 2>/dev/null || true
    wait "$OHBOX_BG_PID" 2>/dev/null || true
    # the next command reconciles (the init died with ohbox: PDEATHSIG)
    assert_ok ohbox ps -a --format json
    local ids
    ids=$(jq -r '.[].id' <<<"$out")
    [ -z "$ids" ] || assert_ok ohbox rm -f $ids
    assert_no_leftovers
    assert_ok ohbox run --rm -p "$port:80" "$BB" true
  done
}

# A release killed between deleting a published port's DNAT element and
# unlinking its leases: the next command finds the leases and finishes. (The
# other order left an element no lease named, that nothing ever deleted:
# seen once in CI after faults-kill's random kills.) strace kills `rm` at
# its first sendto, the nf_tables transaction of the delete (over
# nfnetlink), deterministically.
test_release_killed_mid_way ()
{
  require_cmd strace
  load_bb
  local port id pid mon
  port=$(t_free_port)
  assert_ok ohbox run -d -p "127.0.0.1:$port:80" "$BB" sleep 600
  id=$out
  # Its monitor dies first: the release is left to the `rm` below.
  pid=$(jq -r .pid "$OHBOX_RUNROOT/$id/state.json")
  mon=$(awk '{print $4}' "/proc/$pid/stat")
  kill -9 "$mon"
  t_run strace -f -qq -o "$T_WORK/strace" -e trace=sendto -e inject=sendto:signal=KILL:when=1 \
    "$OHBOX_BIN" --root "$T_ROOT" rm -f "$id"
  assert_eq 137 "$rc" "status of the rm killed mid-way"
  assert_match "$(grep sendto "$T_WORK/strace" | tail -n 1)" 'NFNL_MSG_BATCH_BEGIN' "the syscall it was killed at"
  assert_contains "$(nft list map inet ohbox pub4)" "127.0.0.1 . tcp . $port :" "the element before the transaction"
  assert_ok ohbox rm -f "$id"
  assert_not_contains "$(nft list map inet ohbox pub4)" "127.0.0.1 . tcp . $port :" "the element after the next rm"
  assert_no_leftovers
}

# A published port's element that no lease names (an orphan) and one whose
# lease is stale (its sandbox's state was removed by hand): `ohbox check`
# finds the first, repairs both (the stale lease's GC deletes its elements);
# a start that publishes a host port an orphan still holds drops it and
# starts. The addresses are TEST-NET-1's: no sandbox ever gets them.
test_orphan_port_elements ()
{
  load_bb
  assert_ok ohbox run --rm "$BB" true
  local p1 p2 p3 ghost
  p1=$(t_free_port) p2=$(t_free_port) p3=$(t_free_port)
  # (three keys: the same port twice would be one element)
  while [ "$p2" = "$p1" ]; do p2=$(t_free_port); done
  while [ "$p3" = "$p1" ] || [ "$p3" = "$p2" ]; do p3=$(t_free_port); done
  ghost=$OHBOX_RUNROOT/$(printf '%064d' 7)
  trap "rm -f '$NETROOT/ip/192.0.2.2'; for p in $p1 $p2 $p3; do nft delete element inet ohbox pub4 \"{ 127.0.0.1 . tcp . \$p }\" 2>/dev/null || true; done" EXIT
  nft add element inet ohbox pub4 "{ 127.0.0.1 . tcp . $p1 : 192.0.2.1 . 80 }"
  ln -s "$ghost" "$NETROOT/ip/192.0.2.2"
  nft add element inet ohbox pub4 "{ 127.0.0.1 . tcp . $p2 : 192.0.2.2 . 80 }"
  assert_exit 6 ohbox check --format json
  assert_jq "$out" "any(.findings[]; .kind == \"orphan-port-element\" and (.where | contains(\"127.0.0.1 . tcp . $p1 }\")) and (.what | contains(\"192.0.2.1\")))" "the orphan"
  assert_jq "$out" "any(.findings[]; .kind == \"stale-lease\" and (.where | endswith(\"/ip/192.0.2.2\")))" "the stale lease"
  assert_jq "$out" ".found == 2" "findings"
  assert_ok ohbox check --repair
  assert_ok ohbox check
  local map
  map=$(nft list map inet ohbox pub4)
  assert_not_contains "$map" "tcp . $p1 :" "the orphan after --repair"
  assert_not_contains "$map" "tcp . $p2 :" "the stale lease's element after --repair"
  [ ! -L "$NETROOT/ip/192.0.2.2" ] || _t_assert_fail "the stale lease is left"
  # A start whose host port an orphan holds
  nft add element inet ohbox pub4 "{ 127.0.0.1 . tcp . $p3 : 192.0.2.1 . 80 }"
  assert_ok ohbox run -d -p "127.0.0.1:$p3:80" "$BB" httpd -f -p 80 -h /etc
  local id=$out
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$p3/hostname"
  assert_ok curl -sf -m 2 "http://127.0.0.1:$p3/hostname"
  assert_eq "${id:0:12}" "$out" "the port's answer"
  assert_ok ohbox rm -f "$id"
  assert_not_contains "$(nft list map inet ohbox pub4)" "tcp . $p3 :" "elements after rm"
  assert_no_leftovers
}

# route_localnet is on for ohbox0 (published ports from 127.0.0.1): a
# machine on the bridge must still not reach the host's loopback services
# (CVE-2020-8558). The "sandbox" here is a namespace of this test on the
# bridge, with the routes a sandbox with NET_ADMIN could set itself.
test_loopback_guard ()
{
  require_cmd curl
  load_bb
  assert_ok ohbox run --rm "$BB" true
  # (a port name outside ohbox's "ohb" prefix: the bridge table would
  # drop this namespace's frames as a sandbox's with no address leased)
  local ns=lgrd$$ port
  port=$(t_free_port)
  trap "ip netns del $ns 2>/dev/null || true; ip link del ${ns}h 2>/dev/null || true" EXIT
  ip netns add "$ns"
  ip link add "${ns}h" type veth peer name "${ns}n"
  ip link set "${ns}n" netns "$ns"
  ip link set "${ns}h" master ohbox0 up
  ip -n "$ns" addr add 10.213.255.250/16 dev "${ns}n"
  ip -n "$ns" link set "${ns}n" up
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw "net.ipv4.conf.${ns}n.route_localnet=1" net.ipv4.conf.all.route_localnet=1
  ip -n "$ns" route del table local local 127.0.0.0/8 dev lo
  ip -n "$ns" route add 127.0.0.2/32 via 10.213.0.1 dev "${ns}n"
  t_start "$T_WORK/listener.log" "$T_PY" -c "import socket
s = socket.socket(); s.bind(('127.0.0.2', $port)); s.listen()
while True:
    c, a = s.accept(); c.recv(4096); c.sendall(b'HTTP/1.0 200 OK\r\n\r\nleaked\n'); c.close()"
  t_wait_until 5 sh -c "ss -ltn | grep -q '127.0.0.2:$port '"
  # the namespace reaches the host (a published port on the gateway
  # address: the host's own services are not for sandboxes)...
  local gport
  gport=$(t_free_port)
  assert_ok ohbox run -d -p "$gport:80" "$BB" httpd -f -p 80 -h /etc
  local id=$out
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$gport/hostname"
  assert_ok ip netns exec "$ns" curl -sf -m 2 "http://10.213.0.1:$gport/hostname"
  assert_eq "$out" "${id:0:12}"
  # ...but nothing reaches the host's loopback
  assert_exit 28 ip netns exec "$ns" curl -s -m 2 "http://127.0.0.2:$port/"
  nft list chain inet ohbox guard >/dev/null
  ohbox rm -f "$id" >/dev/null
}

# A start checks over netlink that ohbox's nftables tables are whole (no
# libnftables for that) and makes them again when one was deleted, entirely or
# in part, or is an older version's (no marker chain), duplicating nothing.
test_nft_table_made_again ()
{
  require_cmd curl
  load_bb
  assert_ok ohbox run --rm "$BB" true
  nft delete table inet ohbox
  local p
  p=$(t_free_port)
  assert_ok ohbox run -d -p "$p:80" "$BB" httpd -f -p 80 -h /etc
  local id=$out
  t_wait_until 5 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$p/hostname"
  assert_ok curl -sf -m 2 "http://127.0.0.1:$p/hostname"
  assert_eq "$out" "${id:0:12}"
  assert_ok ohbox rm -f "$id"
  local rules
  rules=$({ nft list table inet ohbox; nft list table bridge ohbox; } | sort)
  # part of it; the bridge table; the marker of this version's rules (a
  # host with an older ohbox's table): made again, nothing duplicated
  local what
  for what in "chain inet ohbox guard" "table bridge ohbox" "chain inet ohbox v2" "chain bridge ohbox v2"; do
    nft delete $what
    assert_ok ohbox run --rm "$BB" true
    # (line by line: a chain made again comes last)
    assert_eq "$({ nft list table inet ohbox; nft list table bridge ohbox; } | sort)" "$rules" \
      "the tables after \`nft delete $what\`"
  done
  # and a start that finds the table whole does not load libnftables
  assert_no_match "$(LD_DEBUG=files "$OHBOX_BIN" --root "$T_ROOT" run --rm "$BB" true 2>&1)" 'libnftables' \
    "libraries a bridge start loads"
  assert_no_leftovers
}

# The sandboxes' filter elements (table bridge ohbox's ports and uplink;
# table inet ohbox's dns, egress, noegress) and permanent neighbour entries
# that no lease accounts for, a named network whose bridge is gone, tables
# an older ohbox made: `ohbox check` finds each, --repair mends it, and a
# running sandbox's own are left alone.
test_orphan_filter_elements ()
{
  load_bb
  local net=ochk-$$ a=10.213.250.5 mac=02:6f:0a:d5:fa:05 br
  assert_ok ohbox run -d "$BB" sleep 600
  local id=$out
  assert_ok ohbox network create "$net"
  br=$(ohbox network inspect "$net" | jq -r '.[0].bridge')
  trap "ohbox network rm $net >/dev/null 2>&1 || true; ip neigh del $a dev ohbox0 2>/dev/null || true" EXIT
  nft add element bridge ohbox ports "{ \"ohb00000000f00d\" . $mac . $a }"
  nft add element bridge ohbox uplink "{ \"ohb00000000f00d\" . $a . 02:6e:0a:d5:00:01 }"
  nft add element inet ohbox dns "{ $a . 192.0.2.53 }"
  nft add element inet ohbox egress "{ $a . 10.0.0.0/8 }"
  nft add element inet ohbox noegress "{ $a }"
  ip neigh replace "$a" lladdr "$mac" dev ohbox0 nud permanent
  ip link del "$br"
  nft delete chain inet ohbox v2
  assert_exit 6 ohbox check --format json
  local f=$out
  assert_jq "$f" '[.findings[] | select(.kind == "orphan-sandbox-element")] | length == 5' "the orphan elements"
  assert_jq "$f" 'all(.findings[] | select(.kind == "orphan-sandbox-element"); .what | contains("'"$a"'"))'
  assert_jq "$f" 'any(.findings[]; .kind == "orphan-neighbour" and (.where | contains("'"$a"' dev ohbox0")))'
  assert_jq "$f" 'any(.findings[]; .kind == "missing-network-bridge" and .where == "'"$br"'")'
  assert_jq "$f" 'any(.findings[]; .kind == "incomplete-nft-tables")'
  assert_jq "$f" '.found == 8' "findings"
  assert_ok ohbox check --repair
  assert_ok ohbox check
  assert_no_match "$(nft list table inet ohbox; nft list table bridge ohbox)" "10\.213\.250\.5" "the tables after --repair"
  assert_eq "$(ip neigh show "$a" dev ohbox0)" "" "the neighbour entry after --repair"
  assert_ok ip link show "$br"
  assert_ok nft list chain inet ohbox v2
  # the running sandbox kept its own: it still reaches the internet
  local ip
  ip=$(sb_ip "$id")
  assert_contains "$(nft list set bridge ohbox ports)" "$ip"
  assert_contains "$(ip neigh show "$ip" dev ohbox0)" "PERMANENT"
  assert_ok ohbox rm -f "$id"
  assert_ok ohbox network rm "$net"
  assert_no_leftovers
}

run_test two_sandboxes test_two_sandboxes
run_test nft_table_made_again test_nft_table_made_again
run_test published_ports test_published_ports
run_test ranges_and_pools test_ranges_and_pools
run_test port_in_use test_port_in_use
run_test other_netns_and_egress test_other_netns_and_egress
run_test gateway_listener test_gateway_listener
run_test modes test_modes
run_test loopback_guard test_loopback_guard
run_test concurrent_cycles test_concurrent_cycles
run_test sigkill_mid_start test_sigkill_mid_start
run_test release_killed_mid_way test_release_killed_mid_way
run_test orphan_port_elements test_orphan_port_elements
run_test orphan_filter_elements test_orphan_filter_elements
