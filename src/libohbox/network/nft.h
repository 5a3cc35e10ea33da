/* nft.h: ohbox's nftables table, through libnftables.
 *
 * Everything lives in `table inet ohbox`; no other table is read or
 * changed. Published ports are elements of two maps the static rules look
 * up, so a sandbox adds and deletes elements, never rules:
 *
 *   pub4    ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service
 *           (-p IP:HOSTPORT:CTRPORT: that host address only)
 *   puball  inet_proto . inet_service : ipv4_addr . inet_service
 *           (-p HOSTPORT:CTRPORT: every local address)
 *
 * prerouting (other hosts, other namespaces, sandboxes) and output (the
 * host's own processes, 127.0.0.1 included) DNAT packets for local
 * addresses through the maps. postrouting masquerades the subnet's egress,
 * hairpin connections, and connections from 127.0.0.0/8 (which the kernel
 * routes to the bridge only with route_localnet set on it). guard drops
 * packets from the bridge to 127.0.0.0/8, which route_localnet would
 * otherwise let a sandbox send to the host's loopback-only services. */
#ifndef OHBOX_NFT_H
#define OHBOX_NFT_H

#include <jansson.h>

#include "common/error.h"

#define OHBOX_NFT_TABLE "ohbox"

/* Runs nft commands CMDS (one transaction); the error carries nft's message. */
int ohbox_nft_run (const char *cmds, ohbox_error_t *err);
/* Creates the table, maps and rules for BRIDGE and SUBNET ("10.213.0.0/16")
 * unless the table already exists. The caller serializes (network lock). */
int ohbox_nft_ensure (const char *bridge, const char *subnet, ohbox_error_t *err);
/* The published ports' elements of both maps, as an array of
 * {"map", "key" (in nft's syntax), "addr" (the sandbox address they point
 * at)}; empty when the table does not exist. */
int ohbox_nft_port_elements (json_t **ret, ohbox_error_t *err);
/* Deletes ELEMS (as ohbox_nft_port_elements gives them), in one transaction. */
int ohbox_nft_delete_elements (json_t *elems, ohbox_error_t *err);

#endif
