/* test-auth-challenge: WWW-Authenticate parsing (auth_challenge.c). */
#include "config.h"

#include <stdbool.h>

#include "registry/auth_challenge.h"
#include "unit.h"
#include "common/utils.h"

/* Parses H and expects an error of KIND whose message contains WHAT. */
#define PARSE_FAILS(h, want_kind, what)                                                                                \
  do                                                                                                                   \
    {                                                                                                                  \
      struct ohbox_auth_challenge _c;                                                                                  \
      ohbox_error_t _e = NULL;                                                                                         \
      int _r = ohbox_auth_challenge_parse ((h), &_c, &_e);                                                             \
      CHECK (_r < 0, "parse of [%s] should fail", (h));                                                                \
      CHECK (_e != NULL && _e->kind == (want_kind), "kind %d", _e ? _e->kind : -1);                                    \
      CHECK (strstr (_e->msg, (what)) != NULL, "message: %s", _e->msg);                                                \
      CHECK (_c.realm == NULL && _c.scheme == OHBOX_AUTH_NONE);                                                        \
      ohbox_error_release (&_e);                                                                                       \
    }                                                                                                                  \
  while (0)

/* A header and the challenge it must give (NULL: the parameter is absent). */
struct parsed
{
  const char *header;
  enum ohbox_auth_scheme scheme;
  const char *realm, *service, *scope;
};

static void
check_parsed (const struct parsed *p)
{
  struct ohbox_auth_challenge c;
  cleanup_error ohbox_error_t e = NULL;
  CHECK (ohbox_auth_challenge_parse (p->header, &c, &e) == 0, "parse of [%s] failed: %s", p->header, e ? e->msg : "?");
  bool same = c.scheme == p->scheme;
  const char *got[] = { c.realm, c.service, c.scope }, *want[] = { p->realm, p->service, p->scope };
  for (size_t i = 0; i < 3; i++)
    same = same && (got[i] == NULL || want[i] == NULL ? got[i] == want[i] : strcmp (got[i], want[i]) == 0);
  cleanup_free char *gave = xasprintf ("scheme %d realm %s service %s scope %s", (int) c.scheme,
                                       c.realm ? c.realm : "(none)", c.service ? c.service : "(none)",
                                       c.scope ? c.scope : "(none)");
  ohbox_auth_challenge_clear (&c);
  CHECK (same, "[%s] gave %s", p->header, gave);
  CHECK (c.realm == NULL && c.service == NULL && c.scope == NULL && c.scheme == OHBOX_AUTH_NONE);
}

/* check_parsed on every element of the array CASES. */
#define CHECK_PARSED(cases)                                                                                            \
  do                                                                                                                   \
    for (size_t _i = 0; _i < sizeof (cases) / sizeof ((cases)[0]); _i++)                                               \
      check_parsed (&(cases)[_i]);                                                                                     \
  while (0)

static void
test_bearer_distribution (void)
{
  static const struct parsed cases[] = {
    { "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
      "scope=\"repository:library/busybox:pull\"",
      OHBOX_AUTH_BEARER, "https://auth.docker.io/token", "registry.docker.io", "repository:library/busybox:pull" },
  };
  CHECK_PARSED (cases);
}

static void
test_basic (void)
{
  static const struct parsed cases[] = {
    { "Basic realm=\"Registry Realm\"", OHBOX_AUTH_BASIC, "Registry Realm", NULL, NULL },
    /* Basic without parameters is tolerated. */
    { "Basic", OHBOX_AUTH_BASIC, NULL, NULL, NULL },
  };
  CHECK_PARSED (cases);
}

static void
test_case_insensitive (void)
{
  static const struct parsed cases[] = {
    { "bEARer REALM=\"http://127.0.0.1:1/t\", Service=svc", OHBOX_AUTH_BEARER, "http://127.0.0.1:1/t", "svc", NULL },
    { "BASIC realm=x", OHBOX_AUTH_BASIC, "x", NULL, NULL },
  };
  CHECK_PARSED (cases);
}

static void
test_multiple_challenges (void)
{
  static const struct parsed cases[] = {
    /* Bearer is preferred whatever the order. */
    { "Basic realm=\"b\", Bearer realm=\"https://a/token\",service=\"s\"", OHBOX_AUTH_BEARER, "https://a/token", "s",
      NULL },
    { "Bearer realm=\"https://a/token\", Basic realm=\"b\"", OHBOX_AUTH_BEARER, "https://a/token", NULL, NULL },
    /* An unknown scheme with a token68 and one with parameters are skipped. */
    { "Negotiate abc123==, Digest realm=\"d\", nonce=\"n,1\", Basic realm=\"b\"", OHBOX_AUTH_BASIC, "b", NULL, NULL },
    /* Empty list elements and a challenge without parameters before another. */
    { " , Basic, ,Bearer realm=r ,", OHBOX_AUTH_BEARER, "r", NULL, NULL },
    /* The first Bearer wins over a second one. */
    { "Bearer realm=first, Bearer realm=second", OHBOX_AUTH_BEARER, "first", NULL, NULL },
  };
  CHECK_PARSED (cases);
}

static void
test_quoted_pairs (void)
{
  static const struct parsed cases[] = {
    { "Bearer realm=\"https://a/t\",scope=\"x\\\"y\\\\z\\q\"", OHBOX_AUTH_BEARER, "https://a/t", NULL, "x\"y\\zq" },
    /* Commas, '=' and spaces inside quotes belong to the value. */
    { "Bearer realm=\"https://a/t?x=1,y=2\",scope=\"repository:a/b:pull,push repository:c:pull\"", OHBOX_AUTH_BEARER,
      "https://a/t?x=1,y=2", NULL, "repository:a/b:pull,push repository:c:pull" },
    /* Whitespace around '=' (BWS) and an empty quoted value. */
    { "Bearer realm = \"r\" , service=\"\"", OHBOX_AUTH_BEARER, "r", "", NULL },
  };
  CHECK_PARSED (cases);
}

static void
test_errors (void)
{
  PARSE_FAILS ("Bearer service=\"s\",scope=\"x\"", OHBOX_ERR_REGISTRY, "without a realm");
  PARSE_FAILS ("Bearer realm=\"unterminated", OHBOX_ERR_REGISTRY, "unterminated");
  PARSE_FAILS ("Negotiate abc==", OHBOX_ERR_UNSUPPORTED, "`Negotiate`");
  PARSE_FAILS ("", OHBOX_ERR_REGISTRY, "empty");
  PARSE_FAILS ("   ,  ", OHBOX_ERR_REGISTRY, "empty");
  PARSE_FAILS ("realm=\"x\"", OHBOX_ERR_REGISTRY, "without a scheme");
  PARSE_FAILS ("Bearer realm=\"a\" junk", OHBOX_ERR_REGISTRY, "malformed");
  PARSE_FAILS ("Bearer realm=@", OHBOX_ERR_REGISTRY, "malformed");
}

static void
test_missing_realm_with_basic_fallback (void)
{
  /* A Bearer challenge we cannot use does not hide a usable Basic one. */
  static const struct parsed cases[] = {
    { "Bearer service=\"s\", Basic realm=\"b\"", OHBOX_AUTH_BASIC, "b", NULL, NULL },
  };
  CHECK_PARSED (cases);
}

static void
test_huge_header (void)
{
  size_t n = 70 * 1024;
  char *h = malloc (n + 1);
  CHECK (h != NULL);
  memcpy (h, "Bearer realm=\"", 14);
  memset (h + 14, 'a', n - 15);
  h[n - 1] = '"';
  h[n] = '\0';
  struct ohbox_auth_challenge c;
  ohbox_error_t e = NULL;
  int r = ohbox_auth_challenge_parse (h, &c, &e);
  free (h);
  CHECK (r < 0 && e != NULL && strstr (e->msg, "longer than") != NULL);
  ohbox_error_release (&e);
}

UNIT_MAIN_BEGIN ("test-auth-challenge")
RUN_TEST (test_bearer_distribution);
RUN_TEST (test_basic);
RUN_TEST (test_case_insensitive);
RUN_TEST (test_multiple_challenges);
RUN_TEST (test_quoted_pairs);
RUN_TEST (test_errors);
RUN_TEST (test_missing_realm_with_basic_fallback);
RUN_TEST (test_huge_header);
UNIT_MAIN_END
