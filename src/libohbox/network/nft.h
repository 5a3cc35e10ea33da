/* nft.h: ohbox's nftables tables, through libnftables (the start's fast
 * path goes over nfnetlink instead: nfnl.h).
 *
 * Everything lives in `table inet ohbox` and `table bridge ohbox`; no other
 * table is read or changed. Rules never change per sandbox or network:
 * they look up sets and maps, and a sandbox (or a named network) adds and
 * deletes elements.
 *
 * inet ohbox, maps (published ports, DNAT):
 *   pub4      ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service
 *             (-p IP:HOSTPORT:CTRPORT: that host address only)
 *   puball    inet_proto . inet_service : ipv4_addr . inet_service
 *             (-p HOSTPORT:CTRPORT: every local address)
 * sets of the networks (elements per bridge):
 *   bridges   ifname                   ohbox0 and the named networks' bridges
 *   peers     ifname . ifname          a named network's bridge twice: its
 *                                      members reach each other
 *   subnets   ipv4_addr . ifname (intervals)  each bridge's subnet . the bridge
 *   blocked4  ipv4_addr (intervals)    what `--egress public` leaves out (egress.h)
 * sets of the sandboxes (elements added at start, deleted at release):
 *   dns       ipv4_addr . ipv4_addr    sandbox . a resolver of its resolv.conf
 *   egress    ipv4_addr . ipv4_addr (intervals)  sandbox . a range --egress allows
 *   noegress  ipv4_addr                sandboxes with --egress none
 * chains: prerouting and output DNAT local addresses through the maps;
 * postrouting masquerades; guard drops packets from the bridges to
 * 127.0.0.0/8 (route_localnet); input lets a sandbox reach the host only
 * for answers, DNS and its --egress; forward lets it reach published
 * ports, its named network's members and its --egress, and lets nothing
 * reach a sandbox but through a published port.
 *
 * bridge ohbox, on every sandbox port (veths named OHBOX_NFT_PORT_PREFIX*),
 * before br_netfilter and the bridge's MAC learning:
 *   ports     ifname . ether_addr . ipv4_addr  the veth, its sandbox's MAC and address
 *   uplink    ifname . ipv4_addr . ether_addr  the veth, its address, its bridge's
 *                                    own MAC (fixed: ohbox_bridge_mac): ohbox0's ports
 *   open      ifname . ipv4_addr    the veth and its address: a named network's ports
 * A frame from a sandbox port passes only as IPv4 or ARP with that MAC and
 * address (router advertisements, IPv6, VLAN tags, other protocols are
 * dropped), and only to the host (the bridge's own MAC) unless the port is
 * open (a named network's members reach each other). */
#ifndef OHBOX_NFT_H
#define OHBOX_NFT_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define OHBOX_NFT_TABLE "ohbox"
/* An empty chain in both tables: the rules are this version's (nft.c). */
#define OHBOX_NFT_MARKER "v2"
/* The sandboxes' host veths: "ohb" + 12 hex digits of the sandbox id. */
#define OHBOX_NFT_PORT_PREFIX "ohb"

/* A bridge the rules apply to: its name and subnet; PEERS: its sandboxes
 * reach each other (a named network; ohbox0's do not). */
struct ohbox_nft_bridge
{
  const char *name;
  struct in_addr subnet;
  int prefix;
  bool peers;
};

/* Runs nft commands CMDS (one transaction); the error carries nft's message. */
int ohbox_nft_run (const char *cmds, ohbox_error_t *err);
/* Whether both tables have every chain of this version, asked over
 * nfnetlink (a start does not load libnftables for it). */
int ohbox_nft_complete (bool *ret, ohbox_error_t *err);
/* Makes both tables, or brings an older version's rules up to date
 * (keeping every set's elements), with the N bridges NETS as the networks'
 * elements. The caller serializes (network lock). */
int ohbox_nft_ensure (const struct ohbox_nft_bridge *nets, size_t n, ohbox_error_t *err);
/* The published ports' elements of both maps, as an array of
 * {"family": "inet", "map", "key" (in nft's syntax), "addr" (the sandbox
 * address they point at)}; empty when the table does not exist. */
int ohbox_nft_port_elements (json_t **ret, ohbox_error_t *err);
/* The sandboxes' elements (ports, dns, egress, noegress), as
 * {"family", "set", "key", "addr" (the sandbox address)}. */
int ohbox_nft_sandbox_elements (json_t **ret, ohbox_error_t *err);
/* Deletes ELEMS (as the two above give them), in one transaction. */
int ohbox_nft_delete_elements (json_t *elems, ohbox_error_t *err);

#endif
