/* egress.h: where a bridge sandbox's traffic may go (`--egress`).
 *
 *   public (the default)  the internet: every IPv4 address except the
 *                         ranges below, which nobody outside the host's own
 *                         networks uses (private, shared, link-local with
 *                         the cloud metadata address 169.254.169.254,
 *                         loopback, multicast, reserved)
 *   CIDR[,CIDR...]        public, and these ranges too (a weaker setting
 *                         when one of them is a blocked range: warned)
 *   all                   every address (weaker: warned)
 *   none                  nothing leaves the host: published ports, and
 *                         the answers to what reaches the sandbox through
 *                         them, only
 *
 * Whatever the setting: the host itself only answers established
 * connections, its published ports and DNS on the servers in the sandbox's
 * resolv.conf; other sandboxes are reached through the host's published
 * ports only (or inside a named network); and the bridges carry no IPv6.
 * The resolvers of the sandbox's resolv.conf (port 53) stay reachable
 * whatever range they are in. Rules and sets: nft.h. */
#ifndef OHBOX_EGRESS_H
#define OHBOX_EGRESS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define OHBOX_EGRESS_MAX_CIDRS 32

enum ohbox_egress_mode
{
  OHBOX_EGRESS_PUBLIC = 0,
  OHBOX_EGRESS_LIST,
  OHBOX_EGRESS_ALL,
  OHBOX_EGRESS_NONE,
};

struct ohbox_cidr4
{
  struct in_addr net; /* host bits zero */
  int prefix;
};

struct ohbox_egress
{
  enum ohbox_egress_mode mode;
  size_t n; /* OHBOX_EGRESS_LIST: the ranges allowed besides public ones */
  struct ohbox_cidr4 cidrs[OHBOX_EGRESS_MAX_CIDRS];
};

/* The ranges `public` leaves out, as "A.B.C.D/N" (NULL-terminated), for
 * nft's set and the documentation. */
extern const char *const ohbox_egress_blocked[];

/* Parses SPEC (NULL or "": public). Ranges inside another one of the list
 * are dropped (the kernel's interval sets refuse overlaps). */
int ohbox_egress_parse (const char *spec, struct ohbox_egress *ret, ohbox_error_t *err);
/* SPEC in its canonical form ("public", "all", "none", "10.1.0.0/16,..."): xmalloc'd. */
char *ohbox_egress_format (const struct ohbox_egress *e);
/* What a weaker setting opens, for a warning, or NULL (xmalloc'd). */
char *ohbox_egress_warning (const struct ohbox_egress *e);
/* Parses "A.B.C.D[/N]" (no /N: /32); host bits must be zero unless LOOSE. */
int ohbox_cidr4_parse (const char *s, bool loose, struct ohbox_cidr4 *ret);
/* Whether A is in C; whether two ranges share an address. */
bool ohbox_cidr4_contains (const struct ohbox_cidr4 *c, struct in_addr a);
bool ohbox_cidr4_overlap (const struct ohbox_cidr4 *a, const struct ohbox_cidr4 *b);
/* The last address of C. */
struct in_addr ohbox_cidr4_last (const struct ohbox_cidr4 *c);

#endif
