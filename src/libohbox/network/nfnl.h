/* nfnl.h: the nf_tables requests of a sandbox's start and release, over
 * nfnetlink with libmnl: whether ohbox's tables are whole, and adding or
 * deleting a sandbox's set elements in one transaction.
 *
 * This is the fast path: libnftables (nft.c) parses a ruleset language and
 * fetches the kernel's whole ruleset cache before each command (~2.5 ms a
 * call, more than a start's budget for networking); these messages are a
 * few hundred bytes built in place. Everything else (making the tables,
 * listing elements for `ohbox check`) goes through libnftables.
 *
 * A set element's key is the kernel's register layout of the set's type:
 * each field of a concatenation padded to 4 bytes (ifname 16, ether_addr
 * 6 + 2, ipv4_addr 4, inet_proto 1 + 3, inet_service 2 + 2, in network
 * order). Keys, and a map element's data, are built with ohbox_nfnl_key_*. */
#ifndef OHBOX_NFNL_H
#define OHBOX_NFNL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define OHBOX_NFNL_KEY_MAX 64

struct ohbox_nfnl_key
{
  uint8_t data[OHBOX_NFNL_KEY_MAX];
  uint32_t len;
};

/* One element of a set or map of ohbox's table of FAMILY (NFPROTO_INET,
 * NFPROTO_BRIDGE). END: the upper bound of a concatenation with a range
 * (sets with flags interval); DATA: what a map maps KEY to; END.len and
 * DATA.len 0 for the others. */
struct ohbox_nfnl_elem
{
  uint8_t family;
  const char *set;
  struct ohbox_nfnl_key key;
  struct ohbox_nfnl_key end;
  struct ohbox_nfnl_key data;
};

void ohbox_nfnl_key_ifname (struct ohbox_nfnl_key *k, const char *name);
void ohbox_nfnl_key_mac (struct ohbox_nfnl_key *k, const uint8_t mac[6]);
void ohbox_nfnl_key_ipv4 (struct ohbox_nfnl_key *k, struct in_addr a);
void ohbox_nfnl_key_proto (struct ohbox_nfnl_key *k, uint8_t proto);
void ohbox_nfnl_key_port (struct ohbox_nfnl_key *k, uint16_t port);

/* Adds (ADD) or deletes the N elements of TABLE in one transaction. Adding
 * an element that exists is fine; deleting one that is gone is fine (then
 * the others are deleted one by one). */
int ohbox_nfnl_elements (const char *table, bool add, const struct ohbox_nfnl_elem *e, size_t n, ohbox_error_t *err);

/* Whether TABLE of FAMILY has every chain of CHAINS (NULL-terminated):
 * *RET. A missing table is *RET false, not an error. */
int ohbox_nfnl_chains_present (uint8_t family, const char *table, const char *const *chains, bool *ret,
                               ohbox_error_t *err);

#endif
