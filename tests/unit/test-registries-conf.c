/* test-registries-conf.c: registries.conf parsing (TOML subset, v1 and v2),
 * prefix matching, pull sources, default locations and drop-ins. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "registry/registries_conf.h"
#include "unit.h"
#include "common/utils.h"

static struct ohbox_registries_conf *
parse_ok (const char *text)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registries_conf *c = NULL;
  if (ohbox_registries_conf_parse (text, "test.conf", &c, &err) < 0)
    {
      printf ("# unexpected parse error: %s\n", err->msg);
      return NULL;
    }
  return c;
}

/* The sources for NAME as "loc|insecure, loc|insecure", or the error message. */
static char *
sources (const struct ohbox_registries_conf *c, const char *name, bool by_digest)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registry_endpoint *e = NULL;
  size_t n = 0;
  if (ohbox_registries_conf_pull_sources_ex (c, name, by_digest, &e, &n, &err) < 0)
    return xasprintf ("error %d: %s", err->kind, err->msg);
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *s = xasprintf ("%s%s%s", i ? ", " : "", e[i].location, e[i].insecure ? "|insecure" : "");
      ohbox_buf_append (&b, s, strlen (s));
    }
  ohbox_registry_endpoints_free (e, n);
  return b.data;
}

static const char man_example[] = "unqualified-search-registries = [\"example.com\"]\n"
                                  "\n"
                                  "[[registry]]\n"
                                  "prefix = \"example.com/foo\"\n"
                                  "insecure = false\n"
                                  "blocked = false\n"
                                  "location = \"internal-registry-for-example.com/bar\"\n"
                                  "\n"
                                  "[[registry.mirror]]\n"
                                  "location = \"example-mirror-0.local/mirror-for-foo\"\n"
                                  "\n"
                                  "[[registry.mirror]]\n"
                                  "location = \"example-mirror-1.local/mirrors/foo\"\n"
                                  "insecure = true\n"
                                  "\n"
                                  "[[registry]]\n"
                                  "location = \"registry.com\"\n"
                                  "\n"
                                  "[[registry.mirror]]\n"
                                  "location = \"mirror.registry.com\"\n";

static void
test_man_example (void)
{
  struct ohbox_registries_conf *c = parse_ok (man_example);
  CHECK (c != NULL);
  bool ok = c->unqualified_search[0] && strcmp (c->unqualified_search[0], "example.com") == 0
            && c->unqualified_search[1] == NULL && c->n_entries == 2 && c->entries[0].n_mirrors == 2
            && c->entries[1].n_mirrors == 1 && strcmp (c->entries[1].prefix, "registry.com") == 0
            && strcmp (c->entries[1].location, "registry.com") == 0 && !c->entries[0].insecure
            && c->entries[0].mirrors[1].insecure && !c->entries[0].mirrors[0].insecure;
  cleanup_free char *s1 = sources (c, "example.com/foo/image", false);
  cleanup_free char *s2 = sources (c, "registry.com/image", false);
  cleanup_free char *s3 = sources (c, "other.io/x", false);
  cleanup_free char *s4 = sources (c, "example.com/foobar/x", false);
  ohbox_registries_conf_free (c);
  CHECK (ok);
  CHECK_STR (s1, "example-mirror-0.local/mirror-for-foo/image, example-mirror-1.local/mirrors/foo/image|insecure, "
                 "internal-registry-for-example.com/bar/image");
  CHECK_STR (s2, "mirror.registry.com/image, registry.com/image");
  CHECK_STR (s3, "other.io/x");
  CHECK_STR (s4, "example.com/foobar/x");
}

static const char matching_conf[] = "[[registry]]\n"
                                    "prefix = \"a.io\"\n"
                                    "location = \"mirror-a.io\"\n"
                                    "[[registry]]\n"
                                    "prefix = \"a.io/x\"\n"
                                    "location = \"x.a.io/deep/path\"\n"
                                    "insecure = true\n"
                                    "[[registry]]\n"
                                    "prefix = \"*.example.com\"\n"
                                    "insecure = true\n"
                                    "[[registry.mirror]]\n"
                                    "location = \"cache.local:5000/ex\"\n"
                                    "[[registry]]\n"
                                    "prefix = \"special.team.example.com/secret\"\n"
                                    "blocked = true\n"
                                    "[[registry]]\n"
                                    "location = \"localhost:5000/\"\n"
                                    "insecure = true\n";

static void
test_prefix_matching (void)
{
  struct ohbox_registries_conf *c = parse_ok (matching_conf);
  CHECK (c != NULL);
  static const struct
  {
    const char *name;
    const char *want;
  } cases[] = {
    { "a.io/x", "x.a.io/deep/path|insecure" },
    { "a.io/x/y", "x.a.io/deep/path/y|insecure" }, /* longest prefix wins */
    { "a.io/xy", "mirror-a.io/xy" },               /* component boundary */
    { "a.io/y/x", "mirror-a.io/y/x" },
    { "a.io:5000/x", "a.io:5000/x" }, /* a port is not a boundary */
    { "a.iox/y", "a.iox/y" },
    { "foo.example.com/img", "cache.local:5000/ex/img, foo.example.com/img|insecure" },
    { "a.b.example.com/n/img", "cache.local:5000/ex/n/img, a.b.example.com/n/img|insecure" },
    { "foo.example.com:8443/img", "cache.local:5000/ex/img, foo.example.com:8443/img|insecure" },
    { "example.com/img", "example.com/img" },
    { "fooexample.com/img", "fooexample.com/img" },
    { "foo.example.com.evil.io/img", "foo.example.com.evil.io/img" },
    { "special.team.example.com/secret/x", "error 2: pulling `special.team.example.com/secret/x` is blocked by "
                                           "registries.conf (prefix `special.team.example.com/secret`); edit the "
                                           "configuration to allow it" },
    { "special.team.example.com/public", "cache.local:5000/ex/public, special.team.example.com/public|insecure" },
    { "localhost:5000/img", "localhost:5000/img|insecure" }, /* trailing '/' of the location dropped */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      cleanup_free char *s = sources (c, cases[i].name, false);
      if (strcmp (s, cases[i].want) != 0)
        ohbox_registries_conf_free (c);
      CHECK_STR (s, cases[i].want);
    }
  const struct ohbox_registry_entry *e = ohbox_registries_conf_find (c, "a.io/x/z");
  bool found = e && strcmp (e->prefix, "a.io/x") == 0;
  bool none = ohbox_registries_conf_find (c, "b.io/x") == NULL;
  ohbox_registries_conf_free (c);
  CHECK (found);
  CHECK (none);
  CHECK (ohbox_registries_conf_find (NULL, "a.io/x") == NULL);
  cleanup_free char *s = sources (NULL, "a.io/x", false);
  CHECK_STR (s, "a.io/x");
}

static void
test_digest_only_mirrors (void)
{
  struct ohbox_registries_conf *c = parse_ok ("[[registry]]\n"
                                              "prefix = \"docker.io\"\n"
                                              "mirror-by-digest-only = true\n"
                                              "[[registry.mirror]]\n"
                                              "location = \"m1.local\"\n"
                                              "[[registry]]\n"
                                              "prefix = \"quay.io\"\n"
                                              "[[registry.mirror]]\n"
                                              "location = \"d.local\"\n"
                                              "pull-from-mirror = \"digest-only\"\n"
                                              "[[registry.mirror]]\n"
                                              "location = \"t.local\"\n"
                                              "pull-from-mirror = \"tag-only\"\n"
                                              "[[registry.mirror]]\n"
                                              "location = \"a.local\"\n"
                                              "pull-from-mirror = \"all\"\n");
  CHECK (c != NULL);
  cleanup_free char *tag1 = sources (c, "docker.io/library/busybox", false);
  cleanup_free char *dig1 = sources (c, "docker.io/library/busybox", true);
  cleanup_free char *tag2 = sources (c, "quay.io/a/b", false);
  cleanup_free char *dig2 = sources (c, "quay.io/a/b", true);
  struct ohbox_registry_endpoint *e = NULL;
  size_t n = 0;
  cleanup_error ohbox_error_t err = NULL;
  int r = ohbox_registries_conf_pull_sources (c, "quay.io/a/b", &e, &n, &err);
  ohbox_registries_conf_free (c);
  CHECK_STR (tag1, "docker.io/library/busybox");
  CHECK_STR (dig1, "m1.local/library/busybox, docker.io/library/busybox");
  CHECK_STR (tag2, "t.local/a/b, a.local/a/b, quay.io/a/b");
  CHECK_STR (dig2, "d.local/a/b, a.local/a/b, quay.io/a/b");
  /* The plain function is the tag behaviour. */
  CHECK (r == 0 && n == 3 && strcmp (e[0].location, "t.local/a/b") == 0);
  ohbox_registry_endpoints_free (e, n);
  ohbox_registry_endpoints_free (NULL, 0);
}

static void
test_syntax_accepted (void)
{
  static const char good[] = "# comment at the top\r\n"
                             "\n"
                             "   \t\n"
                             "unqualified-search-registries = [ # a comment inside\r\n"
                             "  \"a.io\",   # first\n"
                             "  'b.io:5000',\n"
                             "\n"
                             "  \"c\\u002eio\", # an escape\n"
                             "]   # trailing comma above\n"
                             "credential-helpers = []\n"
                             "additional-layer-store-auth-helper = \"\"\n"
                             "short-name-mode = 'enforcing'\n"
                             "[[ registry ]]   # spaces inside the brackets\n"
                             "\"prefix\" = \"q.io/a\"\n"
                             "location\t=\t'q.io/b'\n"
                             "blocked=false\n"
                             "[[registry.\"mirror\"]]\n"
                             "location = \"m.io\"\n"
                             "insecure = true\n"
                             "[aliases]\n"
                             "\"fedora\" = \"registry.fedoraproject.org/fedora\"\n"
                             "'ubi8/ubi' = \"registry.access.redhat.com/ubi8/ubi\"\n"
                             "erased = \"\"\n"
                             "# no newline at the end";
  struct ohbox_registries_conf *c = parse_ok (good);
  CHECK (c != NULL);
  bool ok = c->unqualified_search[0] && strcmp (c->unqualified_search[0], "a.io") == 0 && c->unqualified_search[1]
            && strcmp (c->unqualified_search[1], "b.io:5000") == 0 && c->unqualified_search[2]
            && strcmp (c->unqualified_search[2], "c.io") == 0 && c->unqualified_search[3] == NULL && c->n_entries == 1
            && c->entries[0].n_mirrors == 1 && c->entries[0].mirrors[0].insecure
            && strcmp (c->entries[0].location, "q.io/b") == 0;
  const char *fedora = ohbox_registries_conf_alias (c, "fedora");
  bool alias_ok = fedora && strcmp (fedora, "registry.fedoraproject.org/fedora") == 0
                  && ohbox_registries_conf_alias (c, "ubi8/ubi") != NULL
                  && ohbox_registries_conf_alias (c, "nope") == NULL;
  cleanup_free char *s = sources (c, "q.io/a/img", false);
  ohbox_registries_conf_free (c);
  CHECK (ok);
  CHECK (alias_ok);
  CHECK_STR (s, "m.io/img|insecure, q.io/b/img");

  /* Empty and comment-only files are empty configurations. */
  static const char *const empties[] = { "", "\n\n", "# only\n# comments", "  \t  " };
  for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++)
    {
      c = parse_ok (empties[i]);
      CHECK (c && c->n_entries == 0 && c->unqualified_search && c->unqualified_search[0] == NULL);
      ohbox_registries_conf_free (c);
    }
  /* Escapes decode, and then the value is checked: é is not a host character. */
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_registries_conf_parse ("unqualified-search-registries = [\"\\u00e9x\"]\n", "t", &c, &err) < 0);
  CHECK (strstr (err->msg, "`\xc3\xa9x` is not a host[:port]") != NULL, "%s", err->msg);
}

static const struct
{
  const char *text;
  const char *msg; /* whole message prefix, or a substring after the line */
} bad_conf[] = {
  { "unqualified-search-registries = [\"a.io\"\n", "test.conf:2: unterminated array" },
  { "x = 1\n", "test.conf:1: unsupported value" },
  { "\n\nunqualified-search-registries = [\"a.io]\n", "test.conf:3: unterminated string" },
  { "unqualified-search-registries = ['a.io\n']", "test.conf:1: unterminated string" },
  { "[[registry]]\nlocation = \"\"\"a.io\"\"\"\n", "test.conf:2: multi-line strings are not supported" },
  { "[[registry]]\nlocation = { a = 1 }\n", "test.conf:2: unsupported value" },
  { "[[registry]]\nlocation = 2024-01-01\n", "test.conf:2: unsupported value" },
  { "[[registry]]\nlocation.x = \"a\"\n", "test.conf:2: dotted keys are not supported" },
  { "unqualified-search-registries = [[\"a\"]]\n", "test.conf:1: arrays may only hold strings" },
  { "unqualified-search-registries = [\"a\", true]\n", "test.conf:1: arrays may only hold strings" },
  { "unqualified-search-registries = [\"a\" \"b\"]\n", "test.conf:1: expected `,` or `]`" },
  { "unqualified-search-registries = \"a.io\"\n", "test.conf:1: `unqualified-search-registries` must be an array" },
  { "[[registry]]\nlocation = \"a.io\"\ninsecure = \"yes\"\n", "test.conf:3: `insecure` must be true or false" },
  { "[[registry]]\nlocation = \"a.io\"\nblocked = True\n", "test.conf:3: unsupported value" },
  { "[[registry]]\nlocation = \"a.io\" x\n", "test.conf:2: unexpected text after the value" },
  { "[[registry]] x\n", "test.conf:1: unexpected text after the table name" },
  { "[[registry]\n", "test.conf:1: expected `]]`" },
  { "[registry\n", "test.conf:1: expected `]`" },
  { "[[registry]]\nlocation =\n", "test.conf:2: missing value" },
  { "[[registry]]\nlocation\n", "test.conf:2: expected `=`" },
  { "= \"a\"\n", "test.conf:1: expected a key" },
  { "[[registry]]\nlocation = \"a.io\"\nlocation = \"b.io\"\n", "test.conf:3: key `location` is set twice" },
  { "unqualified-search-registries = []\nunqualified-search-registries = []\n", "test.conf:2: key" },
  { "[[registry]]\nlocation = \"a.io\"\nblock = true\n", "test.conf:3: unknown key `block` in [[registry]]" },
  { "registries = [\"a\"]\n", "test.conf:1: unknown key `registries`" },
  { "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nprefix = \"b\"\n",
    "test.conf:4: unknown key `prefix` in [[registry.mirror]]" },
  { "[registries]\nsearch = [\"a\"]\n", "test.conf:2: unknown key `search` in this table" },
  { "[mirrors]\n", "test.conf:1: unknown table `[mirrors]`" },
  { "[[aliases]]\n", "test.conf:1: unknown array of tables" },
  { "[registry]\nlocation = \"a.io\"\n", "test.conf:1: [registry] must be written [[registry]]" },
  { "[aliases]\n[aliases]\n", "test.conf:2: table `[aliases]` is defined twice" },
  { "[a.b.c.d.e]\n", "test.conf:1: table name with more than 4 parts" },
  { "[[registry.mirror]]\nlocation = \"m.io\"\n", "test.conf:1: [[registry.mirror]] outside of a [[registry]]" },
  { "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\ninsecure = true\n",
    "test.conf:3: [[registry.mirror]] without a `location`" },
  { "[[registry]]\ninsecure = true\n", "test.conf:1: [[registry]] needs a `prefix` or a `location`" },
  { "[[registry]]\nlocation = \"https://a.io\"\n", "test.conf:1: location `https://a.io`: URI schemes" },
  { "[[registry]]\nprefix = \"a.io/b:tag\"\n", "test.conf:1: prefix `a.io/b:tag`: a tag or a digest" },
  { "[[registry]]\nprefix = \"a.io/B\"\n", "test.conf:1: prefix `a.io/B`: the path must be lowercase" },
  { "[[registry]]\nprefix = \"a..io\"\n", "test.conf:1: prefix `a..io`: not a valid host" },
  { "[[registry]]\nprefix = \"*.example.com/foo\"\n", "only the form `*.example.com`" },
  { "[[registry]]\nprefix = \"example.*.com\"\n", "not a valid host" },
  { "[[registry]]\nprefix = \"*example.com\"\n", "only the form `*.example.com`" },
  { "[[registry]]\nprefix = \"*.example.com:5000\"\n", "only the form `*.example.com`" },
  { "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m io\"\n",
    "test.conf:3: mirror location `m io`" },
  { "[[registry]]\nlocation = \"a.io\"\n\n[[registry]]\nlocation = \"a.io/\"\n",
    "test.conf:4: prefix `a.io` is defined twice" },
  { "[[registry]]\nprefix = \"a.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.io\"\n"
    "pull-from-mirror = \"digest-only\"\n",
    "test.conf:1: `pull-from-mirror` cannot be used with `mirror-by-digest-only`" },
  { "[[registry]]\nprefix = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"some\"\n",
    "test.conf:5: pull-from-mirror must be" },
  { "short-name-mode = \"lax\"\n", "test.conf:1: short-name-mode must be" },
  { "unqualified-search-registries = [\"a.io/x\"]\n", "test.conf:1: unqualified-search-registries: `a.io/x`" },
  { "unqualified-search-registries = [\"a\\qb\"]\n", "test.conf:1: unknown escape `\\q`" },
  { "unqualified-search-registries = [\"a\\u00\"]\n", "test.conf:1: `\\u` needs 4 hexadecimal digits" },
  { "unqualified-search-registries = [\"a\\u0000b\"]\n", "test.conf:1: invalid character U+0000" },
  { "unqualified-search-registries = [\"a\\ud800\"]\n", "test.conf:1: invalid character U+D800" },
  { "unqualified-search-registries = [\"a\\U00110000\"]\n", "test.conf:1: invalid character" },
  { "unqualified-search-registries = [\"a\x01\"]\n", "test.conf:1: control character 0x01" },
  { "unqualified-search-registries = [\"a\"]\r\r\n", "test.conf:1: unexpected text after the value" },
  { "[[registry]]\nlocation = \"a\\n\\u001b[2Jb\"\n", "test.conf:1: location `a??[2Jb`: not a valid" },
  { "[aliases]\n\"Fedora\" = \"registry.fedoraproject.org/fedora\"\n", "test.conf:2: alias `Fedora`" },
  { "[aliases]\nfedora = \"fedora\"\n", "test.conf:2: alias `fedora`: `fedora` is not registry/repository" },
  { "[aliases]\nfedora = \"a.io/f:1\"\n", "test.conf:2: alias `fedora`" },
  { "[aliases]\nfedora = true\n", "test.conf:2: alias `fedora`: the value must be a string" },
  { "[aliases]\nf = \"a.io/f\"\n'f' = \"b.io/f\"\n", "test.conf:3: alias `f` is defined twice" },
  { "[registries.search]\nregistries = [\"a.io\"]\n[[registry]]\nlocation = \"b.io\"\n", "test.conf: mixing the v1" },
  { "[registries.block]\nregistries = [\"http://a.io\"]\n", "test.conf: registries.block: `http://a.io`" },
};

static void
test_syntax_refused (void)
{
  for (size_t i = 0; i < sizeof bad_conf / sizeof bad_conf[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct ohbox_registries_conf *c = (struct ohbox_registries_conf *) 0x1;
      int r = ohbox_registries_conf_parse (bad_conf[i].text, "test.conf", &c, &err);
      if (r == 0)
        ohbox_registries_conf_free (c);
      CHECK (r < 0, "case %zu accepted: %s", i, bad_conf[i].text);
      CHECK (c == NULL, "case %zu", i);
      CHECK (err->kind == OHBOX_ERR_USAGE, "case %zu: %s", i, err->msg);
      const char *m = bad_conf[i].msg;
      bool ok = strncmp (m, "test.conf", 9) == 0 ? strncmp (err->msg, m, strlen (m)) == 0
                                                 : strstr (err->msg, m) != NULL;
      CHECK (ok, "case %zu: `%s`, expected `%s`", i, err->msg, m);
    }
}

/* Hostile sizes: every limit holds and nothing leaks. */
static void
test_limits (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registries_conf *c = NULL;
  struct ohbox_buf b = { 0 };

  /* 1000 array elements are fine, 1001 are not. */
  for (int n = 1000; n <= 1001; n++)
    {
      ohbox_buf_free (&b);
      ohbox_buf_append (&b, "unqualified-search-registries = [", 33);
      for (int i = 0; i < n; i++)
        ohbox_buf_append (&b, "\"a.io\",\n", 8);
      ohbox_buf_append (&b, "]\n", 2);
      int r = ohbox_registries_conf_parse (b.data, "big.conf", &c, &err);
      if (n == 1000)
        {
          CHECK (r == 0, "%s", err ? err->msg : "");
          ohbox_registries_conf_free (c);
        }
      else
        CHECK (r < 0 && strstr (err->msg, "array with more than 1000 elements") != NULL, "%s",
               err ? err->msg : "accepted");
    }
  ohbox_error_release (&err);

  /* A 5000-byte string. */
  ohbox_buf_free (&b);
  ohbox_buf_append (&b, "short-name-mode = \"", 19);
  for (int i = 0; i < 5000; i++)
    ohbox_buf_append (&b, "x", 1);
  ohbox_buf_append (&b, "\"\n", 2);
  CHECK (ohbox_registries_conf_parse (b.data, "big.conf", &c, &err) < 0);
  CHECK (strstr (err->msg, "string longer than 4096 bytes") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  /* 1001 [[registry]] tables. */
  ohbox_buf_free (&b);
  for (int i = 0; i < 1001; i++)
    {
      char line[64];
      int n = snprintf (line, sizeof line, "[[registry]]\nlocation = \"r%d.io\"\n", i);
      ohbox_buf_append (&b, line, (size_t) n);
    }
  CHECK (ohbox_registries_conf_parse (b.data, "big.conf", &c, &err) < 0);
  CHECK (strstr (err->msg, "big.conf:2001: more than 1000 [[registry]] tables") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  /* 101 mirrors. */
  ohbox_buf_free (&b);
  ohbox_buf_append (&b, "[[registry]]\nlocation = \"a.io\"\n", 31);
  for (int i = 0; i < 101; i++)
    ohbox_buf_append (&b, "[[registry.mirror]]\nlocation = \"m.io\"\n", 38);
  CHECK (ohbox_registries_conf_parse (b.data, "big.conf", &c, &err) < 0);
  CHECK (strstr (err->msg, "more than 100 mirrors") != NULL, "%s", err->msg);
  ohbox_buf_free (&b);
}

/* Random damage to a valid file: never a crash or a leak, and every
 * refusal is a usage error that names the file and line. */
static void
test_mutations (void)
{
  unsigned int seed = 42;
  const size_t len = strlen (man_example);
  static const char alphabet[] = "[]\"'=#,.\\\n\r\t u{}*/:@\x01\xff";
  for (int round = 0; round < 3000; round++)
    {
      char *text = xstrdup (man_example);
      for (int k = 0; k < 1 + round % 4; k++)
        {
          seed = seed * 1103515245u + 12345u;
          size_t pos = (seed >> 8) % len;
          seed = seed * 1103515245u + 12345u;
          if (round % 7 == 0)
            text[pos] = '\0'; /* truncation */
          else
            text[pos] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
        }
      cleanup_error ohbox_error_t err = NULL;
      struct ohbox_registries_conf *c = NULL;
      int r = ohbox_registries_conf_parse (text, "test.conf", &c, &err);
      free (text);
      ohbox_registries_conf_free (c);
      CHECK (r == 0 || (err->kind == OHBOX_ERR_USAGE && strncmp (err->msg, "test.conf", 9) == 0), "round %d: %s", round,
             err ? err->msg : "");
    }
}

static void
test_v1 (void)
{
  struct ohbox_registries_conf *c = parse_ok ("[registries.search]\n"
                                              "registries = ['registry1.com', 'registry2.com']\n"
                                              "\n"
                                              "[registries.insecure]\n"
                                              "registries = ['registry3.com', 'registry1.com']\n"
                                              "\n"
                                              "[registries.block]\n"
                                              "registries = ['registry.untrusted.com', 'registry.unsafe.com']\n");
  CHECK (c != NULL);
  bool ok = strcmp (c->unqualified_search[0], "registry1.com") == 0
            && strcmp (c->unqualified_search[1], "registry2.com") == 0 && c->unqualified_search[2] == NULL
            && c->n_entries == 4;
  cleanup_free char *s1 = sources (c, "registry3.com/a", false);
  cleanup_free char *s2 = sources (c, "registry1.com/a", false);
  cleanup_free char *s3 = sources (c, "registry.unsafe.com/a/b", false);
  cleanup_free char *s4 = sources (c, "registry2.com/a", false);
  ohbox_registries_conf_free (c);
  CHECK (ok);
  CHECK_STR (s1, "registry3.com/a|insecure");
  CHECK_STR (s2, "registry1.com/a|insecure");
  CHECK (strstr (s3, "error 2: pulling `registry.unsafe.com/a/b` is blocked") == s3, "%s", s3);
  CHECK_STR (s4, "registry2.com/a");

  /* An empty v1 table next to v2 is not mixing (as containers/image). */
  c = parse_ok ("unqualified-search-registries = [\"a.io\"]\n[registries]\n[registries.search]\nregistries = []\n");
  CHECK (c != NULL && strcmp (c->unqualified_search[0], "a.io") == 0);
  ohbox_registries_conf_free (c);
}

/* ------------------------------------------------------------- loading */

static char tmpdir[] = "/tmp/ohbox-test-regconf-XXXXXX";

static void
write_file (const char *rel, const char *text)
{
  cleanup_free char *path = xasprintf ("%s/%s", tmpdir, rel);
  cleanup_free char *dir = xstrdup (path);
  *strrchr (dir, '/') = '\0';
  ohbox_error_t err = NULL;
  if (ohbox_mkdir_p (AT_FDCWD, dir, 0755, &err) < 0
      || ohbox_write_file_atomic (AT_FDCWD, path, text, strlen (text), 0644, &err) < 0)
    {
      printf ("# %s\n", err->msg);
      abort ();
    }
}

static void
test_load_explicit (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registries_conf *c = NULL;
  cleanup_free char *missing = xasprintf ("%s/missing.conf", tmpdir);
  CHECK (ohbox_registries_conf_load (missing, &c, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_NOT_FOUND && strstr (err->msg, "missing.conf") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  write_file ("explicit.conf", "unqualified-search-registries = [\"x.io\"]\n");
  cleanup_free char *path = xasprintf ("%s/explicit.conf", tmpdir);
  CHECK (ohbox_registries_conf_load (path, &c, &err) == 0, "%s", err ? err->msg : "");
  bool ok = strcmp (c->unqualified_search[0], "x.io") == 0;
  ohbox_registries_conf_free (c);
  CHECK (ok);

  /* $CONTAINERS_REGISTRIES_CONF when no path is given. */
  write_file ("env.conf", "unqualified-search-registries = [\"env.io\"]\n");
  cleanup_free char *env = xasprintf ("%s/env.conf", tmpdir);
  setenv ("CONTAINERS_REGISTRIES_CONF", env, 1);
  int r = ohbox_registries_conf_load (NULL, &c, &err);
  unsetenv ("CONTAINERS_REGISTRIES_CONF");
  CHECK (r == 0, "%s", err ? err->msg : "");
  ok = strcmp (c->unqualified_search[0], "env.io") == 0;
  ohbox_registries_conf_free (c);
  CHECK (ok);

  /* Errors name the file. */
  write_file ("bad.conf", "\n[[registry]]\nnope = 1\n");
  cleanup_free char *bad = xasprintf ("%s/bad.conf", tmpdir);
  CHECK (ohbox_registries_conf_load (bad, &c, &err) < 0);
  cleanup_free char *expect = xasprintf ("%s:3: unsupported value", bad);
  CHECK (strncmp (err->msg, expect, strlen (expect)) == 0, "%s", err->msg);
  ohbox_error_release (&err);

  /* A NUL byte in the file. */
  cleanup_free char *nul = xasprintf ("%s/nul.conf", tmpdir);
  int fd = open (nul, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CHECK (fd >= 0 && ohbox_write_all (fd, "# a\0b\n", 6) == 0);
  close (fd);
  CHECK (ohbox_registries_conf_load (nul, &c, &err) < 0);
  CHECK (strstr (err->msg, "NUL byte") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  /* Larger than 1 MiB. */
  cleanup_free char *big = xasprintf ("%s/big.conf", tmpdir);
  fd = open (big, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CHECK (fd >= 0 && ftruncate (fd, 1024 * 1024 + 1) == 0);
  close (fd);
  CHECK (ohbox_registries_conf_load (big, &c, &err) < 0);
  CHECK (strstr (err->msg, "registries configuration") != NULL, "%s", err->msg);
}

static void
test_load_dirs (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registries_conf *c = NULL;
  cleanup_free char *sys = xasprintf ("%s/etc", tmpdir);
  cleanup_free char *user = xasprintf ("%s/home", tmpdir);
  cleanup_free char *nothing = xasprintf ("%s/nothing", tmpdir);

  /* Nothing anywhere: empty. */
  CHECK (ohbox_registries_conf_load_dirs (nothing, NULL, &c, &err) == 0, "%s", err ? err->msg : "");
  bool empty = c->n_entries == 0 && c->unqualified_search[0] == NULL;
  ohbox_registries_conf_free (c);
  CHECK (empty);

  write_file ("etc/registries.conf", "unqualified-search-registries = [\"sys.io\"]\n"
                                     "[[registry]]\nprefix = \"a.io\"\nlocation = \"sys-a.io\"\n"
                                     "[[registry]]\nprefix = \"b.io\"\nlocation = \"sys-b.io\"\n"
                                     "[aliases]\nx = \"sys.io/x\"\ny = \"sys.io/y\"\n");
  /* Drop-ins in name order (10, 20, 30), whatever order the directory
   * lists them in; the others are not read. */
  write_file ("etc/registries.conf.d/20-middle.conf",
              "[[registry]]\nprefix = \"a.io\"\nlocation = \"drop20-a.io\"\n[aliases]\ny = \"\"\n");
  write_file ("etc/registries.conf.d/30-last.conf", "[[registry]]\nprefix = \"a.io\"\nlocation = \"drop30-a.io\"\n");
  write_file ("etc/registries.conf.d/10-first.conf", "unqualified-search-registries = [\"drop.io\"]\n"
                                                     "[[registry]]\nprefix = \"a.io\"\nlocation = \"drop10-a.io\"\n"
                                                     "[[registry]]\nprefix = \"c.io\"\nblocked = true\n");
  write_file ("etc/registries.conf.d/30.ignore", "this is not TOML");
  write_file ("etc/registries.conf.d/sub.conf/inner.conf", "not read either");
  CHECK (ohbox_registries_conf_load_dirs (sys, user, &c, &err) == 0, "%s", err ? err->msg : "");
  cleanup_free char *a = sources (c, "a.io/img", false);
  cleanup_free char *b = sources (c, "b.io/img", false);
  cleanup_free char *cc = sources (c, "c.io/img", false);
  bool ok = strcmp (c->unqualified_search[0], "drop.io") == 0 && c->unqualified_search[1] == NULL && c->n_entries == 3
            && ohbox_registries_conf_alias (c, "x") != NULL && ohbox_registries_conf_alias (c, "y") == NULL;
  ohbox_registries_conf_free (c);
  CHECK (ok);
  CHECK_STR (a, "drop30-a.io/img");
  CHECK_STR (b, "sys-b.io/img");
  CHECK (strncmp (cc, "error 2:", 8) == 0, "%s", cc);

  /* The user's drop-ins come after the system's. */
  write_file ("home/registries.conf.d/x.conf", "[[registry]]\nprefix = \"b.io\"\nlocation = \"user-b.io\"\n");
  CHECK (ohbox_registries_conf_load_dirs (sys, user, &c, &err) == 0, "%s", err ? err->msg : "");
  cleanup_free char *b2 = sources (c, "b.io/img", false);
  cleanup_free char *a2 = sources (c, "a.io/img", false);
  ohbox_registries_conf_free (c);
  CHECK_STR (b2, "user-b.io/img");
  CHECK_STR (a2, "drop30-a.io/img");

  /* A user registries.conf replaces the system file and its drop-ins. */
  write_file ("home/registries.conf", "unqualified-search-registries = [\"user.io\"]\n");
  CHECK (ohbox_registries_conf_load_dirs (sys, user, &c, &err) == 0, "%s", err ? err->msg : "");
  cleanup_free char *a3 = sources (c, "a.io/img", false);
  cleanup_free char *b3 = sources (c, "b.io/img", false);
  ok = strcmp (c->unqualified_search[0], "user.io") == 0 && ohbox_registries_conf_alias (c, "x") == NULL;
  ohbox_registries_conf_free (c);
  CHECK (ok);
  CHECK_STR (a3, "a.io/img");
  CHECK_STR (b3, "user-b.io/img");

  /* Drop-ins must be v2; errors in them name them. */
  write_file ("home/registries.conf.d/y.conf", "[registries.search]\nregistries = [\"a.io\"]\n");
  CHECK (ohbox_registries_conf_load_dirs (sys, user, &c, &err) < 0);
  CHECK (strstr (err->msg, "y.conf: drop-in files must use the v2 format") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  write_file ("home/registries.conf.d/y.conf", "[[registry]]\nprefix = 1\n");
  CHECK (ohbox_registries_conf_load_dirs (sys, user, &c, &err) < 0);
  CHECK (strstr (err->msg, "registries.conf.d/y.conf:2: unsupported value") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  /* Too many drop-ins. */
  for (int i = 0; i < 101; i++)
    {
      char rel[64];
      snprintf (rel, sizeof rel, "etc2/registries.conf.d/%03d.conf", i);
      write_file (rel, "");
    }
  cleanup_free char *sys2 = xasprintf ("%s/etc2", tmpdir);
  CHECK (ohbox_registries_conf_load_dirs (sys2, NULL, &c, &err) < 0);
  CHECK (strstr (err->msg, "more than 100 .conf files") != NULL, "%s", err->msg);
}

/* The files this system really has (Debian ships shortnames.conf with
 * [aliases]) must be understood. */
static void
test_system_files (void)
{
  struct stat sb;
  if (stat ("/etc/containers/registries.conf", &sb) < 0 && stat ("/etc/containers/registries.conf.d", &sb) < 0)
    {
      unit_skip ("no /etc/containers/registries.conf here");
      return;
    }
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registries_conf *c = NULL;
  CHECK (ohbox_registries_conf_load_dirs ("/etc/containers", NULL, &c, &err) == 0, "%s", err ? err->msg : "");
  ohbox_registries_conf_free (c);
}

UNIT_MAIN_BEGIN ("test-registries-conf")
if (unit_mkdtemp (tmpdir) < 0)
  return 1;
RUN_TEST (test_man_example);
RUN_TEST (test_prefix_matching);
RUN_TEST (test_digest_only_mirrors);
RUN_TEST (test_syntax_accepted);
RUN_TEST (test_syntax_refused);
RUN_TEST (test_limits);
RUN_TEST (test_mutations);
RUN_TEST (test_v1);
RUN_TEST (test_load_explicit);
RUN_TEST (test_load_dirs);
RUN_TEST (test_system_files);
ohbox_rm_rf_at (AT_FDCWD, tmpdir, NULL);
UNIT_MAIN_END
