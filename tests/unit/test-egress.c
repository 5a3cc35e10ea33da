/* test-egress.c: --egress parsing, its canonical form and warnings, and
 * the IPv4 range helpers (network/egress.c). */
#include "config.h"
#include "network/egress.h"
#include "common/utils.h"
#include "unit.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* SPEC's canonical form, or "error: MESSAGE"; its warning in *WARNING. */
static char *
canonical (const char *spec, char **warning)
{
  struct ohbox_egress e;
  ohbox_error_t err = NULL;
  if (ohbox_egress_parse (spec, &e, &err) < 0)
    {
      char *s = xasprintf ("error: %s", err->msg);
      ohbox_error_release (&err);
      return s;
    }
  if (warning)
    *warning = ohbox_egress_warning (&e);
  return ohbox_egress_format (&e);
}

static void
test_parse (void)
{
  cleanup_free char *w = NULL;
  cleanup_free char *a = canonical (NULL, &w);
  CHECK_STR (a, "public");
  CHECK (w == NULL);
  cleanup_free char *b = canonical ("public", NULL);
  CHECK_STR (b, "public");
  cleanup_free char *c = canonical ("", NULL);
  CHECK_STR (c, "public");
  cleanup_free char *d = canonical ("none", NULL);
  CHECK_STR (d, "none");
  cleanup_free char *wa = NULL;
  cleanup_free char *all = canonical ("all", &wa);
  CHECK_STR (all, "all");
  CHECK (wa && strstr (wa, "169.254.169.254"), "%s", wa ? wa : "(none)");
  /* public ranges: no warning; a single address is a /32 */
  cleanup_free char *wp = NULL;
  cleanup_free char *pub = canonical ("198.51.100.0/24,203.0.113.7", &wp);
  CHECK_STR (pub, "198.51.100.0/24,203.0.113.7/32");
  CHECK (wp == NULL, "%s", wp);
  /* a range inside another is dropped, whichever comes first */
  cleanup_free char *in1 = canonical ("10.1.2.0/24,10.1.0.0/16", NULL);
  CHECK_STR (in1, "10.1.0.0/16");
  cleanup_free char *in2 = canonical ("10.1.0.0/16,10.1.2.0/24,10.1.0.0/16", NULL);
  CHECK_STR (in2, "10.1.0.0/16");
  /* blocked ranges are warned about, by name; the metadata address too */
  cleanup_free char *wb = NULL;
  cleanup_free char *blk = canonical ("10.1.0.0/16,192.168.7.0/24", &wb);
  CHECK (wb && strstr (wb, "10.1.0.0/16, 192.168.7.0/24") && strstr (wb, "are"), "%s", wb ? wb : "(none)");
  cleanup_free char *wm = NULL;
  cleanup_free char *meta = canonical ("169.254.0.0/16", &wm);
  CHECK (wm && strstr (wm, "metadata"), "%s", wm ? wm : "(none)");
}

static void
test_refused (void)
{
  static const char *const bad[] = { "10.0.0.1/8", "300.1.2.3/8",   "10.0.0.0/33", "10.0.0.0/",  "bogus",
                                     ",",          "10.0.0.0/8,,x", "fd00::/8",    "1.2.3.4/-1", NULL };
  for (size_t i = 0; bad[i]; i++)
    {
      cleanup_free char *s = canonical (bad[i], NULL);
      CHECK (strncmp (s, "error: ", 7) == 0 && strstr (s, "--egress"), "%s: %s", bad[i], s);
    }
  /* at most OHBOX_EGRESS_MAX_CIDRS ranges */
  struct ohbox_buf b = { 0 };
  for (int i = 0; i <= OHBOX_EGRESS_MAX_CIDRS; i++)
    {
      cleanup_free char *one = xasprintf ("%s198.51.%d.0/24", i ? "," : "", i);
      ohbox_buf_append (&b, one, strlen (one));
    }
  cleanup_free char *many = canonical (b.data, NULL);
  ohbox_buf_free (&b);
  CHECK (strstr (many, "at most"), "%s", many);
}

static void
test_ranges (void)
{
  struct ohbox_cidr4 a, b, c;
  CHECK (ohbox_cidr4_parse ("10.0.0.0/8", false, &a) == 0);
  CHECK (ohbox_cidr4_parse ("10.200.3.0/24", false, &b) == 0);
  CHECK (ohbox_cidr4_parse ("11.0.0.0/8", false, &c) == 0);
  CHECK (ohbox_cidr4_overlap (&a, &b) && ohbox_cidr4_overlap (&b, &a));
  CHECK (!ohbox_cidr4_overlap (&a, &c));
  char s[INET_ADDRSTRLEN];
  struct in_addr last = ohbox_cidr4_last (&b);
  CHECK_STR (inet_ntop (AF_INET, &last, s, sizeof s), "10.200.3.255");
  /* LOOSE keeps the prefix and clears the host bits */
  CHECK (ohbox_cidr4_parse ("10.1.2.3/16", true, &a) == 0 && a.prefix == 16);
  CHECK_STR (inet_ntop (AF_INET, &a.net, s, sizeof s), "10.1.0.0");
  CHECK (ohbox_cidr4_parse ("10.1.2.3/16", false, &a) < 0);
  CHECK (ohbox_cidr4_parse ("0.0.0.0/0", false, &a) == 0 && a.prefix == 0);
  struct in_addr any;
  inet_pton (AF_INET, "203.0.113.9", &any);
  CHECK (ohbox_cidr4_contains (&a, any));
  /* every blocked range parses (nft's set and the docs use them as is) */
  for (size_t i = 0; ohbox_egress_blocked[i]; i++)
    CHECK (ohbox_cidr4_parse (ohbox_egress_blocked[i], false, &a) == 0, "%s", ohbox_egress_blocked[i]);
}

UNIT_MAIN_BEGIN ("test-egress")
RUN_TEST (test_parse);
RUN_TEST (test_refused);
RUN_TEST (test_ranges);
UNIT_MAIN_END
