/* netlink.h: the few rtnetlink operations ohbox's networking needs, over
 * libmnl: links (bridge, veth pair, up, delete, MAC, bridge port mode),
 * IPv4 addresses, neighbours and routes. A socket can be opened inside
 * another network namespace (the sandbox's): every request on it then
 * applies there. */
#ifndef OHBOX_NETLINK_H
#define OHBOX_NETLINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct ohbox_nl;

/* Opens a NETLINK_ROUTE socket in the network namespace NETNS_FD (-1: the
 * caller's). The calling thread enters it only for the socket(2) call. */
int ohbox_nl_open (int netns_fd, struct ohbox_nl **ret, ohbox_error_t *err);
void ohbox_nl_close (struct ohbox_nl *nl);

/* The index of link NAME, 0 when there is none (not an error). */
int ohbox_nl_link_index (struct ohbox_nl *nl, const char *name, int *ret, ohbox_error_t *err);
/* Creates bridge NAME unless it exists; *RET_CREATED says which. */
int ohbox_nl_bridge_ensure (struct ohbox_nl *nl, const char *name, bool *ret_created, ohbox_error_t *err);
/* Creates the veth pair HOST_NAME (enslaved to MASTER_INDEX, down) and
 * PEER_NAME (with PEER_MAC unless NULL), the peer created directly in the
 * namespace PEER_NETNS_FD. */
int ohbox_nl_veth_create (struct ohbox_nl *nl, const char *host_name, int master_index, const char *peer_name,
                          const uint8_t peer_mac[6], int peer_netns_fd, ohbox_error_t *err);
/* Sets hairpin mode on bridge port INDEX. */
int ohbox_nl_brport_hairpin (struct ohbox_nl *nl, int index, ohbox_error_t *err);
/* The MAC of link INDEX; sets it. */
int ohbox_nl_link_mac (struct ohbox_nl *nl, int index, uint8_t mac[6], ohbox_error_t *err);
int ohbox_nl_link_set_mac (struct ohbox_nl *nl, int index, const uint8_t mac[6], ohbox_error_t *err);
/* A permanent neighbour entry ADDR -> MAC on link INDEX (replacing any). */
int ohbox_nl_neigh_set (struct ohbox_nl *nl, int index, struct in_addr addr, const uint8_t mac[6], ohbox_error_t *err);
/* Deletes the neighbour entry ADDR of link INDEX; a missing one is fine. */
int ohbox_nl_neigh_del (struct ohbox_nl *nl, int index, struct in_addr addr, ohbox_error_t *err);
/* The addresses of link INDEX's permanent IPv4 neighbour entries (*RET
 * malloc'd). */
int ohbox_nl_neigh_permanent (struct ohbox_nl *nl, int index, struct in_addr **ret, size_t *ret_n, ohbox_error_t *err);
/* The IPv4 routes of the main table but the default ones. */
struct ohbox_nl_route4
{
  struct in_addr dst;
  int prefix;
  int oif;
};
int ohbox_nl_routes4 (struct ohbox_nl *nl, struct ohbox_nl_route4 **ret, size_t *ret_n, ohbox_error_t *err);
/* Sets link INDEX up. */
int ohbox_nl_link_up (struct ohbox_nl *nl, int index, ohbox_error_t *err);
/* Deletes link NAME; a missing link is fine. */
int ohbox_nl_link_del (struct ohbox_nl *nl, const char *name, ohbox_error_t *err);
/* Adds ADDR/PREFIX to link INDEX; an existing identical address is fine. */
int ohbox_nl_addr_add (struct ohbox_nl *nl, int index, struct in_addr addr, int prefix, ohbox_error_t *err);
/* Whether link INDEX has ADDR/PREFIX. */
int ohbox_nl_addr_has (struct ohbox_nl *nl, int index, struct in_addr addr, int prefix, bool *ret, ohbox_error_t *err);
/* Adds the default route via GW on link INDEX. */
int ohbox_nl_route_default (struct ohbox_nl *nl, int index, struct in_addr gw, ohbox_error_t *err);
/* Whether nftables has CHAIN in TABLE of FAMILY (NFPROTO_INET...): *RET. */
int ohbox_nl_nft_chain_exists (int family, const char *table, const char *chain, bool *ret, ohbox_error_t *err);

#endif
