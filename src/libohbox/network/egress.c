/* egress.c: `--egress` and the ranges a sandbox does not reach by default
 * (see egress.h). */
#include "config.h"
#include "network/egress.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Special-purpose IPv4 ranges (RFC 6890) that lead into the host's own
 * networks or nowhere on the internet. The documentation ranges (TEST-NET)
 * and the benchmarking range are not in it: nothing routes them to a
 * private network, and the tests use TEST-NET-2 as "the internet". */
const char *const ohbox_egress_blocked[] = {
  "0.0.0.0/8",      /* "this network" */
  "10.0.0.0/8",     /* private (RFC 1918) */
  "100.64.0.0/10",  /* shared address space: carrier-grade NAT, some clouds' metadata services */
  "127.0.0.0/8",    /* loopback */
  "169.254.0.0/16", /* link-local, with the cloud metadata address 169.254.169.254 */
  "172.16.0.0/12",  /* private */
  "192.0.0.0/24",   /* IETF protocol assignments */
  "192.168.0.0/16", /* private */
  "224.0.0.0/4",    /* multicast */
  "240.0.0.0/4",    /* reserved, and the broadcast address */
  NULL,
};

int
ohbox_cidr4_parse (const char *s, bool loose, struct ohbox_cidr4 *ret)
{
  char buf[INET_ADDRSTRLEN];
  const char *slash = strchr (s, '/');
  size_t len = slash ? (size_t) (slash - s) : strlen (s);
  int prefix = 32;
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy (buf, s, len);
  buf[len] = '\0';
  if (slash)
    {
      char *end;
      errno = 0;
      long p = strtol (slash + 1, &end, 10);
      if (end == slash + 1 || *end || errno || p < 0 || p > 32)
        return -1;
      prefix = (int) p;
    }
  struct in_addr a;
  if (inet_pton (AF_INET, buf, &a) != 1)
    return -1;
  uint32_t mask = prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
  if (!loose && (ntohl (a.s_addr) & ~mask) != 0)
    return -1;
  ret->net.s_addr = htonl (ntohl (a.s_addr) & mask);
  ret->prefix = prefix;
  return 0;
}

static uint32_t
mask_of (int prefix)
{
  return prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
}

bool
ohbox_cidr4_contains (const struct ohbox_cidr4 *c, struct in_addr a)
{
  return (ntohl (a.s_addr) & mask_of (c->prefix)) == ntohl (c->net.s_addr);
}

bool
ohbox_cidr4_overlap (const struct ohbox_cidr4 *a, const struct ohbox_cidr4 *b)
{
  /* Two prefixes overlap exactly when the shorter one contains the other. */
  return a->prefix <= b->prefix ? ohbox_cidr4_contains (a, b->net) : ohbox_cidr4_contains (b, a->net);
}

struct in_addr
ohbox_cidr4_last (const struct ohbox_cidr4 *c)
{
  return (struct in_addr){ .s_addr = htonl (ntohl (c->net.s_addr) | ~mask_of (c->prefix)) };
}

/* Adds C to E unless a range of E holds it; drops those C holds. */
static void
add_range (struct ohbox_egress *e, const struct ohbox_cidr4 *c)
{
  for (size_t i = 0; i < e->n; i++)
    if (e->cidrs[i].prefix <= c->prefix && ohbox_cidr4_overlap (&e->cidrs[i], c))
      return;
  size_t k = 0;
  for (size_t i = 0; i < e->n; i++)
    if (!ohbox_cidr4_overlap (&e->cidrs[i], c))
      e->cidrs[k++] = e->cidrs[i];
  e->cidrs[k++] = *c;
  e->n = k;
}

int
ohbox_egress_parse (const char *spec, struct ohbox_egress *ret, ohbox_error_t *err)
{
  memset (ret, 0, sizeof *ret);
  if (spec == NULL || *spec == '\0' || strcmp (spec, "public") == 0)
    return 0;
  if (strcmp (spec, "all") == 0 || strcmp (spec, "none") == 0)
    {
      ret->mode = spec[0] == 'a' ? OHBOX_EGRESS_ALL : OHBOX_EGRESS_NONE;
      return 0;
    }
  if (strlen (spec) > 4096)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--egress: too long");
  ret->mode = OHBOX_EGRESS_LIST;
  cleanup_free char *copy = xstrdup (spec);
  char *save = NULL;
  size_t n = 0;
  for (char *t = strtok_r (copy, ",", &save); t; t = strtok_r (NULL, ",", &save))
    {
      struct ohbox_cidr4 c;
      if (strchr (t, ':'))
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "--egress: `%s` is IPv6: ohbox's bridges carry IPv4 only",
                            t);
      if (ohbox_cidr4_parse (t, false, &c) < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "invalid --egress `%s`: use public, all, none or IPv4 ranges A.B.C.D/N (host bits "
                            "zero), separated by commas",
                            t);
      if (++n > OHBOX_EGRESS_MAX_CIDRS)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--egress: at most %d ranges", OHBOX_EGRESS_MAX_CIDRS);
      add_range (ret, &c);
    }
  if (n == 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid --egress `%s`: no range", spec);
  return 0;
}

char *
ohbox_egress_format (const struct ohbox_egress *e)
{
  if (e->mode != OHBOX_EGRESS_LIST)
    return xstrdup (e->mode == OHBOX_EGRESS_ALL ? "all" : e->mode == OHBOX_EGRESS_NONE ? "none" : "public");
  struct ohbox_buf b = { 0 };
  for (size_t i = 0; i < e->n; i++)
    {
      char a[INET_ADDRSTRLEN], one[INET_ADDRSTRLEN + 8];
      inet_ntop (AF_INET, &e->cidrs[i].net, a, sizeof a);
      int len = snprintf (one, sizeof one, "%s%s/%d", i ? "," : "", a, e->cidrs[i].prefix);
      ohbox_buf_append (&b, one, (size_t) len);
    }
  return b.data;
}

char *
ohbox_egress_warning (const struct ohbox_egress *e)
{
  static const char metadata[] = "169.254.169.254";
  if (e->mode == OHBOX_EGRESS_ALL)
    return xasprintf ("--egress all: the sandbox reaches private and link-local networks and the cloud metadata "
                      "address %s",
                      metadata);
  if (e->mode != OHBOX_EGRESS_LIST)
    return NULL;
  struct ohbox_buf b = { 0 };
  bool meta = false;
  for (size_t i = 0; i < e->n; i++)
    for (size_t k = 0; ohbox_egress_blocked[k]; k++)
      {
        struct ohbox_cidr4 blocked;
        ohbox_cidr4_parse (ohbox_egress_blocked[k], false, &blocked);
        if (!ohbox_cidr4_overlap (&e->cidrs[i], &blocked))
          continue;
        struct in_addr m;
        inet_pton (AF_INET, metadata, &m);
        meta |= ohbox_cidr4_contains (&e->cidrs[i], m);
        char a[INET_ADDRSTRLEN], one[INET_ADDRSTRLEN + 8];
        inet_ntop (AF_INET, &e->cidrs[i].net, a, sizeof a);
        int len = snprintf (one, sizeof one, "%s%s/%d", b.len ? ", " : "", a, e->cidrs[i].prefix);
        ohbox_buf_append (&b, one, (size_t) len);
        break;
      }
  if (b.len == 0)
    return NULL;
  char *w = xasprintf ("--egress: the sandbox reaches %s, which %s not reached by default%s", b.data,
                       strchr (b.data, ',') ? "are" : "is", meta ? " (with the cloud metadata address)" : "");
  ohbox_buf_free (&b);
  return w;
}
