/* test-reference.c: image reference parsing and normalisation. */
#include "config.h"

#include <string.h>

#include "registry/reference.h"
#include "unit.h"
#include "common/utils.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct good_case
{
  const char *in;
  const char *registry;
  const char *repository;
  const char *tag;
  const char *digest;
  bool explicit_registry;
  const char *string;
  const char *familiar;
};

static const struct good_case good[] = {
  { "busybox", "docker.io", "library/busybox", "latest", NULL, false, "docker.io/library/busybox:latest",
    "busybox:latest" },
  { "library/busybox:1.36", "docker.io", "library/busybox", "1.36", NULL, false, "docker.io/library/busybox:1.36",
    "busybox:1.36" },
  { "docker.io/busybox", "docker.io", "library/busybox", "latest", NULL, true, "docker.io/library/busybox:latest",
    "busybox:latest" },
  { "index.docker.io/busybox:musl", "docker.io", "library/busybox", "musl", NULL, true,
    "docker.io/library/busybox:musl", "busybox:musl" },
  { "index.docker.io/user/app", "docker.io", "user/app", "latest", NULL, true, "docker.io/user/app:latest",
    "user/app:latest" },
  { "user/app", "docker.io", "user/app", "latest", NULL, false, "docker.io/user/app:latest", "user/app:latest" },
  { "docker.io/library/a/b", "docker.io", "library/a/b", "latest", NULL, true, "docker.io/library/a/b:latest",
    "library/a/b:latest" },
  { "docker.io/x/y@sha256:" D64, "docker.io", "x/y", NULL, "sha256:" D64, true, "docker.io/x/y@sha256:" D64,
    "x/y@sha256:" D64 },
  { "alpine:3.19@sha256:" D64, "docker.io", "library/alpine", "3.19", "sha256:" D64, false,
    "docker.io/library/alpine:3.19@sha256:" D64, "alpine:3.19@sha256:" D64 },
  { "127.0.0.1:5000/ns/img:tag", "127.0.0.1:5000", "ns/img", "tag", NULL, true, "127.0.0.1:5000/ns/img:tag",
    "127.0.0.1:5000/ns/img:tag" },
  { "localhost/img", "localhost", "img", "latest", NULL, true, "localhost/img:latest", "localhost/img:latest" },
  { "localhost:5000/a/b/c:v1.0-rc_1", "localhost:5000", "a/b/c", "v1.0-rc_1", NULL, true,
    "localhost:5000/a/b/c:v1.0-rc_1", "localhost:5000/a/b/c:v1.0-rc_1" },
  /* Single component: "localhost:5000" is docker.io/library/localhost, tag 5000 (as Docker). */
  { "localhost:5000", "docker.io", "library/localhost", "5000", NULL, false, "docker.io/library/localhost:5000",
    "localhost:5000" },
  { "[::1]:5000/img", "[::1]:5000", "img", "latest", NULL, true, "[::1]:5000/img:latest", "[::1]:5000/img:latest" },
  { "[2001:db8::1]/x/y:t", "[2001:db8::1]", "x/y", "t", NULL, true, "[2001:db8::1]/x/y:t", "[2001:db8::1]/x/y:t" },
  { "quay.io/a_b/c__d/e---f/g.h:TAG_x", "quay.io", "a_b/c__d/e---f/g.h", "TAG_x", NULL, true,
    "quay.io/a_b/c__d/e---f/g.h:TAG_x", "quay.io/a_b/c__d/e---f/g.h:TAG_x" },
  { "Registry.Example.COM:443/app", "Registry.Example.COM:443", "app", "latest", NULL, true,
    "Registry.Example.COM:443/app:latest", "Registry.Example.COM:443/app:latest" },
};

static void
test_good (void)
{
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    {
      const struct good_case *c = &good[i];
      cleanup_error ohbox_error_t err = NULL;
      cleanup_reference struct ohbox_reference *r = NULL;
      CHECK (ohbox_reference_parse (c->in, &r, &err) == 0, "%s: %s", c->in, err ? err->msg : "");
      CHECK_STR (r->registry, c->registry);
      CHECK_STR (r->repository, c->repository);
      CHECK_STR (r->tag, c->tag);
      CHECK_STR (r->digest, c->digest);
      CHECK (r->registry_explicit == c->explicit_registry, "%s", c->in);
      cleanup_free char *s = ohbox_reference_string (r);
      CHECK_STR (s, c->string);
      cleanup_free char *f = ohbox_reference_familiar (r);
      CHECK_STR (f, c->familiar);
      cleanup_free char *name = ohbox_reference_name (r);
      cleanup_free char *expect_name = xasprintf ("%s/%s", c->registry, c->repository);
      CHECK_STR (name, expect_name);

      /* The normalised string parses back to the same thing. */
      cleanup_reference struct ohbox_reference *again = NULL;
      CHECK (ohbox_reference_parse (s, &again, &err) == 0, "%s", s);
      cleanup_free char *s2 = ohbox_reference_string (again);
      CHECK_STR (s2, s);
    }
}

struct bad_case
{
  const char *in;
  const char *why; /* a substring of the message */
};

static const struct bad_case bad[] = {
  { "", "empty reference" },
  { "Busybox", "must be lowercase" },
  { "library/BusyBox:1", "repository name `library/BusyBox` must be lowercase" },
  { "MyOrg/app", "must be lowercase" },
  { "quay.io/Org/App", "must be lowercase" },
  { "busybox:", "empty tag" },
  { "busybox:-x", "a tag must start" },
  { "busybox:a/b", "registry" }, /* "busybox:a" has a ':', so it is a host with a bad port */
  { "busybox:t@g", "digest" },
  { "busybox@", "digest must be" },
  { "busybox@sha256:abc", "digest must be" },
  { "busybox@sha256:" D64 "0", "digest must be" },
  { "busybox@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "digest must be" },
  { "busybox@sha256:../../../../etc/passwd", "digest must be" },
  { "busybox@sha512:" D64 D64, "only sha256" },
  { "busybox@md5:0123456789abcdef0123456789abcdef", "only sha256" },
  { "busybox@sha256:" D64 "@sha256:" D64, "digest must be" },
  { D64, "image ID" },
  { "a//b", "empty path component" },
  { "a/b/", "empty path component" },
  { "/a", "empty path component" },
  { "example.com/", "empty path component" },
  { "-a", "start and end" },
  { "a-", "start and end" },
  { "a..b", "separators" },
  { "a___b", "separators" },
  { "a.-b", "separators" },
  { "a_-b", "separators" },
  { "a b", "only lowercase letters" },
  { "a$b", "only lowercase letters" },
  { "-example.com/a", "registry" },
  { "example-.com/a", "registry" },
  { "exa_mple.com/a", "registry" },
  { "example.com:/a", "registry" },
  { "example.com:99999999/a", "registry" },
  { "example.com:80a/a", "registry" },
  { "[::1/a", "registry" },
  { "[]:5000/a", "registry" },
  { "[fe80::1%eth0]/a", "registry" },
  { ":tag", "missing repository name" },
  { "@sha256:" D64, "missing repository name" },
};

static void
test_bad (void)
{
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct ohbox_reference *r = (struct ohbox_reference *) 0x1;
      int ret = ohbox_reference_parse (bad[i].in, &r, &err);
      if (ret == 0)
        ohbox_reference_free (r);
      CHECK (ret < 0, "`%s` was accepted", bad[i].in);
      CHECK (r == NULL, "%s: *out not reset", bad[i].in);
      CHECK (err != NULL && err->kind == OHBOX_ERR_USAGE, "%s", bad[i].in);
      CHECK (strncmp (err->msg, "invalid image reference `", 25) == 0, "%s: %s", bad[i].in, err->msg);
      CHECK (strstr (err->msg, bad[i].why) != NULL, "`%s`: message `%s` lacks `%s`", bad[i].in, err->msg, bad[i].why);
    }
}

static void
test_null (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_reference *r = NULL;
  CHECK (ohbox_reference_parse (NULL, &r, &err) < 0);
  CHECK (err && err->kind == OHBOX_ERR_USAGE);
}

/* Tag limits: 128 characters is the maximum. */
static void
test_tag_length (void)
{
  char in[256];
  char tag[130];
  memset (tag, 'a', 128);
  tag[128] = '\0';
  snprintf (in, sizeof in, "img:%s", tag);
  cleanup_error ohbox_error_t err = NULL;
  cleanup_reference struct ohbox_reference *r = NULL;
  CHECK (ohbox_reference_parse (in, &r, &err) == 0, "%s", err ? err->msg : "");
  CHECK (strlen (r->tag) == 128);

  tag[128] = 'a';
  tag[129] = '\0';
  snprintf (in, sizeof in, "img:%s", tag);
  struct ohbox_reference *r2 = NULL;
  CHECK (ohbox_reference_parse (in, &r2, &err) < 0);
  CHECK (strstr (err->msg, "longer than 128") != NULL, "%s", err->msg);
}

/* The normalised name ("docker.io/" + repository) is limited to 255. */
static void
test_name_length (void)
{
  char in[600];
  cleanup_error ohbox_error_t err = NULL;

  /* "example.com/" (12) + 243 = 255: accepted. */
  strcpy (in, "example.com/");
  memset (in + 12, 'a', 243);
  in[255] = '\0';
  cleanup_reference struct ohbox_reference *r = NULL;
  CHECK (ohbox_reference_parse (in, &r, &err) == 0, "%s", err ? err->msg : "");

  /* One more: refused. */
  strcpy (in, "example.com/");
  memset (in + 12, 'a', 244);
  in[256] = '\0';
  struct ohbox_reference *r2 = NULL;
  CHECK (ohbox_reference_parse (in, &r2, &err) < 0);
  CHECK (strstr (err->msg, "longer than 255") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  /* A familiar name short enough as typed but too long once normalised:
   * "docker.io/library/" adds 18. */
  memset (in, 'b', 240);
  in[240] = '\0';
  CHECK (ohbox_reference_parse (in, &r2, &err) < 0);
  CHECK (strstr (err->msg, "longer than 255") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  /* Very long input: refused early, and the message stays short. */
  memset (in, 'c', 599);
  in[599] = '\0';
  CHECK (ohbox_reference_parse (in, &r2, &err) < 0);
  CHECK (strstr (err->msg, "longer than 512") != NULL, "%s", err->msg);
  CHECK (strlen (err->msg) < 250, "message of %zu bytes", strlen (err->msg));
}

/* Control characters never reach the message as such. */
static void
test_message_escaping (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_reference *r = NULL;
  CHECK (ohbox_reference_parse ("a\nb\x1b[31m", &r, &err) < 0);
  CHECK (strchr (err->msg, '\n') == NULL && strchr (err->msg, '\x1b') == NULL, "%s", err->msg);
  CHECK (strstr (err->msg, "`a?b?[31m`") != NULL, "%s", err->msg);
}

static void
test_dup (void)
{
  cleanup_error ohbox_error_t err = NULL;
  cleanup_reference struct ohbox_reference *r = NULL;
  CHECK (ohbox_reference_parse ("quay.io/a/b:1@sha256:" D64, &r, &err) == 0);
  cleanup_reference struct ohbox_reference *d = ohbox_reference_dup (r);
  CHECK (d != r && d->registry != r->registry);
  CHECK_STR (d->registry, "quay.io");
  CHECK_STR (d->repository, "a/b");
  CHECK_STR (d->tag, "1");
  CHECK_STR (d->digest, "sha256:" D64);
  CHECK (d->registry_explicit);
}

/* Random strings over the characters that matter: every accepted one
 * round-trips through its normalised form; every refusal is a usage error. */
static void
test_random (void)
{
  static const char alphabet[] = "ab0.:/@_-A[]sha256:0123456789abcdef";
  unsigned int seed = 1;
  for (int round = 0; round < 20000; round++)
    {
      char in[80];
      seed = seed * 1103515245u + 12345u;
      size_t n = 1 + (seed >> 8) % 40;
      for (size_t i = 0; i < n; i++)
        {
          seed = seed * 1103515245u + 12345u;
          in[i] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
        }
      in[n] = '\0';
      cleanup_error ohbox_error_t err = NULL;
      cleanup_reference struct ohbox_reference *r = NULL;
      if (ohbox_reference_parse (in, &r, &err) < 0)
        {
          CHECK (err->kind == OHBOX_ERR_USAGE, "%s", in);
          continue;
        }
      cleanup_free char *s = ohbox_reference_string (r);
      cleanup_reference struct ohbox_reference *again = NULL;
      CHECK (ohbox_reference_parse (s, &again, &err) == 0, "`%s` -> `%s`: %s", in, s, err->msg);
      cleanup_free char *s2 = ohbox_reference_string (again);
      CHECK_STR (s2, s);
      CHECK (ohbox_reference_valid_path (r->repository, strlen (r->repository)), "%s", in);
      CHECK (ohbox_reference_valid_domain (r->registry, strlen (r->registry)), "%s", in);
    }
}

static void
test_endpoint_host (void)
{
  CHECK_STR (ohbox_registry_endpoint_host ("docker.io"), "registry-1.docker.io");
  CHECK_STR (ohbox_registry_endpoint_host ("index.docker.io"), "registry-1.docker.io");
  CHECK_STR (ohbox_registry_endpoint_host ("quay.io"), "quay.io");
  CHECK_STR (ohbox_registry_endpoint_host ("localhost:5000"), "localhost:5000");
}

static void
test_grammar_helpers (void)
{
  CHECK (ohbox_reference_valid_domain ("a", 1));
  CHECK (ohbox_reference_valid_domain ("a-b.c:1", 7));
  CHECK (ohbox_reference_valid_domain ("[::1]", 5));
  CHECK (!ohbox_reference_valid_domain ("", 0));
  CHECK (!ohbox_reference_valid_domain ("a..b", 4));
  CHECK (!ohbox_reference_valid_domain ("a.b:", 4));
  CHECK (!ohbox_reference_valid_domain ("a\0b", 3));
  CHECK (!ohbox_reference_valid_domain ("[::1]x", 6));
  CHECK (ohbox_reference_valid_path ("a/b-c/d__e", 10));
  CHECK (!ohbox_reference_valid_path ("a/b\0c", 5));
  CHECK (!ohbox_reference_valid_path ("a/", 2));
  CHECK (!ohbox_reference_valid_path ("A", 1));
}

UNIT_MAIN_BEGIN ("test-reference")
RUN_TEST (test_good);
RUN_TEST (test_bad);
RUN_TEST (test_null);
RUN_TEST (test_tag_length);
RUN_TEST (test_name_length);
RUN_TEST (test_message_escaping);
RUN_TEST (test_dup);
RUN_TEST (test_random);
RUN_TEST (test_endpoint_host);
RUN_TEST (test_grammar_helpers);
UNIT_MAIN_END
