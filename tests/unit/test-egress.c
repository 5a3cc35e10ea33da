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
  static const struct
  {
    const char *spec, *want; /* WANT NULL: not compared */
    bool check_warning;
    const char *warns[2]; /* what the warning says; none: no warning */
  } cases[] = {
    { NULL, "public", true, { NULL } },
    { "public", "public", false, { NULL } },
    { "", "public", false, { NULL } },
    { "none", "none", false, { NULL } },
    { "all", "all", true, { "169.254.169.254" } },
    /* public ranges: no warning; a single address is a /32 */
    { "198.51.100.0/24,203.0.113.7", "198.51.100.0/24,203.0.113.7/32", true, { NULL } },
    /* a range inside another is dropped, whichever comes first */
    { "10.1.2.0/24,10.1.0.0/16", "10.1.0.0/16", false, { NULL } },
    { "10.1.0.0/16,10.1.2.0/24,10.1.0.0/16", "10.1.0.0/16", false, { NULL } },
    /* blocked ranges are warned about, by name; the metadata address too */
    { "10.1.0.0/16,192.168.7.0/24", NULL, true, { "10.1.0.0/16, 192.168.7.0/24", "are" } },
    { "169.254.0.0/16", NULL, true, { "metadata" } },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      const char *spec = cases[i].spec ? cases[i].spec : "(default)";
      cleanup_free char *w = NULL;
      cleanup_free char *got = canonical (cases[i].spec, &w);
      if (cases[i].want)
        CHECK_STR (got, cases[i].want);
      if (!cases[i].check_warning)
        continue;
      CHECK (cases[i].warns[0] || w == NULL, "%s: warning %s", spec, w);
      for (size_t j = 0; j < 2 && cases[i].warns[j]; j++)
        CHECK (w && strstr (w, cases[i].warns[j]), "%s: warning %s", spec, w ? w : "(none)");
    }
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
