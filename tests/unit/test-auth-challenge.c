/* test-auth-challenge: WWW-Authenticate parsing (auth_challenge.c). */
#include "config.h"

#include "registry/auth_challenge.h"
#include "unit.h"

/* Parses H and expects success; the challenge is left in *C. */
#define PARSE_OK(h, c)                                                                                                 \
  do                                                                                                                   \
    {                                                                                                                  \
      ohbox_error_t _e = NULL;                                                                                         \
      int _r = ohbox_auth_challenge_parse ((h), (c), &_e);                                                             \
      CHECK (_r == 0, "parse failed: %s", _e ? _e->msg : "?");                                                         \
    }                                                                                                                  \
  while (0)

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

static void
test_bearer_distribution (void)
{
  struct ohbox_auth_challenge c;
  PARSE_OK ("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
            "scope=\"repository:library/busybox:pull\"",
            &c);
  CHECK (c.scheme == OHBOX_AUTH_BEARER);
  CHECK_STR (c.realm, "https://auth.docker.io/token");
  CHECK_STR (c.service, "registry.docker.io");
  CHECK_STR (c.scope, "repository:library/busybox:pull");
  ohbox_auth_challenge_clear (&c);
  CHECK (c.realm == NULL && c.scheme == OHBOX_AUTH_NONE);
}

static void
test_basic (void)
{
  struct ohbox_auth_challenge c;
  PARSE_OK ("Basic realm=\"Registry Realm\"", &c);
  CHECK (c.scheme == OHBOX_AUTH_BASIC);
  CHECK_STR (c.realm, "Registry Realm");
  CHECK (c.service == NULL && c.scope == NULL);
  ohbox_auth_challenge_clear (&c);

  /* Basic without parameters is tolerated. */
  PARSE_OK ("Basic", &c);
  CHECK (c.scheme == OHBOX_AUTH_BASIC);
  CHECK (c.realm == NULL);
  ohbox_auth_challenge_clear (&c);
}

static void
test_case_insensitive (void)
{
  struct ohbox_auth_challenge c;
  PARSE_OK ("bEARer REALM=\"http://127.0.0.1:1/t\", Service=svc", &c);
  CHECK (c.scheme == OHBOX_AUTH_BEARER);
  CHECK_STR (c.realm, "http://127.0.0.1:1/t");
  CHECK_STR (c.service, "svc");
  ohbox_auth_challenge_clear (&c);

  PARSE_OK ("BASIC realm=x", &c);
  CHECK (c.scheme == OHBOX_AUTH_BASIC);
  CHECK_STR (c.realm, "x");
  ohbox_auth_challenge_clear (&c);
}

static void
test_multiple_challenges (void)
{
  struct ohbox_auth_challenge c;
  /* Bearer is preferred whatever the order. */
  PARSE_OK ("Basic realm=\"b\", Bearer realm=\"https://a/token\",service=\"s\"", &c);
  CHECK (c.scheme == OHBOX_AUTH_BEARER);
  CHECK_STR (c.realm, "https://a/token");
  CHECK_STR (c.service, "s");
  ohbox_auth_challenge_clear (&c);

  PARSE_OK ("Bearer realm=\"https://a/token\", Basic realm=\"b\"", &c);
  CHECK (c.scheme == OHBOX_AUTH_BEARER);
  CHECK_STR (c.realm, "https://a/token");
  CHECK (c.service == NULL);
  ohbox_auth_challenge_clear (&c);

  /* An unknown scheme with a token68 and one with parameters are skipped. */
  PARSE_OK ("Negotiate abc123==, Digest realm=\"d\", nonce=\"n,1\", Basic realm=\"b\"", &c);
  CHECK (c.scheme == OHBOX_AUTH_BASIC);
  CHECK_STR (c.realm, "b");
  ohbox_auth_challenge_clear (&c);

  /* Empty list elements and a challenge without parameters before another. */
  PARSE_OK (" , Basic, ,Bearer realm=r ,", &c);
  CHECK (c.scheme == OHBOX_AUTH_BEARER);
  CHECK_STR (c.realm, "r");
  ohbox_auth_challenge_clear (&c);

  /* The first Bearer wins over a second one. */
  PARSE_OK ("Bearer realm=first, Bearer realm=second", &c);
  CHECK_STR (c.realm, "first");
  ohbox_auth_challenge_clear (&c);
}

static void
test_quoted_pairs (void)
{
  struct ohbox_auth_challenge c;
  PARSE_OK ("Bearer realm=\"https://a/t\",scope=\"x\\\"y\\\\z\\q\"", &c);
  CHECK_STR (c.scope, "x\"y\\zq");
  ohbox_auth_challenge_clear (&c);

  /* Commas, '=' and spaces inside quotes belong to the value. */
  PARSE_OK ("Bearer realm=\"https://a/t?x=1,y=2\",scope=\"repository:a/b:pull,push repository:c:pull\"", &c);
  CHECK_STR (c.realm, "https://a/t?x=1,y=2");
  CHECK_STR (c.scope, "repository:a/b:pull,push repository:c:pull");
  ohbox_auth_challenge_clear (&c);

  /* Whitespace around '=' (BWS) and an empty quoted value. */
  PARSE_OK ("Bearer realm = \"r\" , service=\"\"", &c);
  CHECK_STR (c.realm, "r");
  CHECK_STR (c.service, "");
  ohbox_auth_challenge_clear (&c);
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
  struct ohbox_auth_challenge c;
  /* A Bearer challenge we cannot use does not hide a usable Basic one. */
  PARSE_OK ("Bearer service=\"s\", Basic realm=\"b\"", &c);
  CHECK (c.scheme == OHBOX_AUTH_BASIC);
  CHECK_STR (c.realm, "b");
  ohbox_auth_challenge_clear (&c);
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
