/* reference.c: image references with the grammar of distribution/reference
 * (reference.go, regexp.go) and Docker's normalisation (normalize.go):
 *
 *   reference  := name [ ":" tag ] [ "@" digest ]
 *   name       := [ domain "/" ] path-component ( "/" path-component )*
 *   domain     := host [ ":" port ]
 *   host       := domain-component ( "." domain-component )* | "[" ipv6 "]"
 *   path-comp  := [a-z0-9]+ ( separator [a-z0-9]+ )*
 *   separator  := "." | "_" | "__" | "-"+
 *   tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
 *
 * The grammar is hand-written rather than a regex: each rule reports its
 * own reason, which is what the user reads. Digests are stricter than the
 * upstream grammar: only the form ohbox_digest_is_valid() accepts. */
#include "config.h"
#include "registry/reference.h"

#include <ctype.h>
#include <string.h>

#include "common/digest.h"
#include "common/utils.h"

#define DEFAULT_DOMAIN "docker.io"
#define LEGACY_DEFAULT_DOMAIN "index.docker.io"
#define DEFAULT_ENDPOINT "registry-1.docker.io"
#define OFFICIAL_PREFIX "library/"
#define DEFAULT_TAG "latest"

/* Upstream NameTotalLengthMax: the normalised "registry/repository". */
#define NAME_TOTAL_MAX 255
#define TAG_MAX 128
/* Nothing valid is longer (255 + 1 + 128 + 1 + 71), with room for the
 * familiar form; longer input is refused before it is looked at. */
#define REFERENCE_MAX 512
/* How much of the user's input an error message shows. */
#define SHOWN_MAX 120

static bool
is_lower_alnum (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool
is_alnum (char c)
{
  return is_lower_alnum (c) || (c >= 'A' && c <= 'Z');
}

static bool
is_word (char c)
{
  return is_alnum (c) || c == '_';
}

/* domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9] */
static bool
valid_domain_name (const char *s, size_t len)
{
  size_t start = 0;
  if (len == 0)
    return false;
  for (size_t i = 0; i <= len; i++)
    {
      if (i < len && s[i] != '.')
        {
          if (!is_alnum (s[i]) && s[i] != '-')
            return false;
          continue;
        }
      if (i == start || s[start] == '-' || s[i - 1] == '-')
        return false;
      start = i + 1;
    }
  return true;
}

bool
ohbox_reference_valid_domain (const char *s, size_t len)
{
  size_t host_len = len;
  if (len > 0 && s[0] == '[')
    {
      /* "[" [a-fA-F0-9:]+ "]": no zone identifiers, no embedded IPv4. */
      const char *close = memchr (s, ']', len);
      if (close == NULL || close == s + 1)
        return false;
      for (const char *p = s + 1; p < close; p++)
        if (!isxdigit ((unsigned char) *p) && *p != ':')
          return false;
      host_len = (size_t) (close - s) + 1;
    }
  else
    {
      const char *colon = memchr (s, ':', len);
      if (colon)
        host_len = (size_t) (colon - s);
      if (!valid_domain_name (s, host_len))
        return false;
    }
  if (host_len == len)
    return true;
  if (s[host_len] != ':')
    return false;
  /* The grammar allows any run of digits; five is all a port can have. */
  size_t port_len = len - host_len - 1;
  if (port_len == 0 || port_len > 5)
    return false;
  for (size_t i = host_len + 1; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/* path-component, or NULL when valid; otherwise why not. Upper case has
 * been refused before with its own message. */
static const char *
path_component_error (const char *s, size_t len)
{
  if (len == 0)
    return "empty path component (`//`, or a leading or trailing `/`)";
  for (size_t i = 0; i < len; i++)
    if (!is_lower_alnum (s[i]) && (s[i] == '\0' || strchr ("._-", s[i]) == NULL))
      return "repository names use only lowercase letters, digits, `.`, `_`, `-` and `/`";
  if (!is_lower_alnum (s[0]) || !is_lower_alnum (s[len - 1]))
    return "each path component must start and end with a lowercase letter or a digit";
  size_t i = 0;
  while (i < len)
    {
      if (is_lower_alnum (s[i]))
        {
          i++;
          continue;
        }
      /* A separator is the whole run between two alphanumerics. */
      size_t j = i;
      while (j < len && !is_lower_alnum (s[j]))
        j++;
      size_t n = j - i;
      bool dashes = strspn (s + i, "-") >= n;
      if (!dashes && !(n == 1 && (s[i] == '.' || s[i] == '_')) && !(n == 2 && s[i] == '_' && s[i + 1] == '_'))
        return "separators in a path component are `.`, `_`, `__` or dashes";
      i = j;
    }
  return NULL;
}

static const char *
path_error (const char *s, size_t len)
{
  size_t start = 0;
  for (size_t i = 0; i <= len; i++)
    {
      if (i < len && s[i] != '/')
        continue;
      const char *why = path_component_error (s + start, i - start);
      if (why)
        return why;
      start = i + 1;
    }
  return NULL;
}

bool
ohbox_reference_valid_path (const char *s, size_t len)
{
  return path_error (s, len) == NULL;
}

static const char *
tag_error (const char *s, size_t len)
{
  if (len == 0)
    return "empty tag after `:`";
  if (len > TAG_MAX)
    return "tag is longer than 128 characters";
  if (!is_word (s[0]))
    return "a tag must start with a letter, a digit or `_`";
  for (size_t i = 1; i < len; i++)
    if (!is_word (s[i]) && s[i] != '.' && s[i] != '-')
      return "a tag uses only letters, digits, `_`, `.` and `-`";
  return NULL;
}

/* algorithm ":" hex{32,} as upstream's digest rule, to tell "a digest of
 * another algorithm" from "not a digest at all" in messages. */
static bool
looks_like_other_digest (const char *s)
{
  const char *colon = strchr (s, ':');
  if (colon == NULL || colon == s || !isalpha ((unsigned char) s[0]))
    return false;
  for (const char *p = s; p < colon; p++)
    if (!isalnum ((unsigned char) *p) && strchr ("-_+.", *p) == NULL)
      return false;
  size_t n = strlen (colon + 1);
  if (n < 32)
    return false;
  for (const char *p = colon + 1; *p; p++)
    if (!isxdigit ((unsigned char) *p))
      return false;
  return strncmp (s, "sha256:", 7) != 0;
}

static bool
has_upper (const char *s, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (s[i] >= 'A' && s[i] <= 'Z')
      return true;
  return false;
}

/* The input as an error message shows it: printable, bounded. */
static char *
shown (const char *s)
{
  size_t n = strlen (s);
  size_t m = n > SHOWN_MAX ? SHOWN_MAX : n;
  char *r = xmalloc (m + 4);
  for (size_t i = 0; i < m; i++)
    r[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  strcpy (r + m, n > m ? "..." : "");
  return r;
}

static int
ref_error (ohbox_error_t *err, const char *s, const char *why)
{
  cleanup_free char *x = shown (s);
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid image reference `%s`: %s", x, why);
}

/* Splits NAME (no tag, no digest) into registry and repository as Docker
 * does; the first component is a registry only when it looks like a host. */
static void
split_domain (const char *name, size_t len, char **registry, char **repository, bool *explicit)
{
  const char *slash = memchr (name, '/', len);
  *explicit = false;
  if (slash)
    {
      size_t first = (size_t) (slash - name);
      if (memchr (name, '.', first) || memchr (name, ':', first) || (first == 9 && memcmp (name, "localhost", 9) == 0))
        {
          *explicit = true;
          *registry = xstrndup (name, first);
          *repository = xstrndup (slash + 1, len - first - 1);
        }
    }
  if (!*explicit)
    {
      *registry = xstrdup (DEFAULT_DOMAIN);
      *repository = xstrndup (name, len);
    }
  if (strcmp (*registry, LEGACY_DEFAULT_DOMAIN) == 0)
    {
      free (*registry);
      *registry = xstrdup (DEFAULT_DOMAIN);
    }
  if (strcmp (*registry, DEFAULT_DOMAIN) == 0 && strchr (*repository, '/') == NULL)
    {
      char *r = xasprintf (OFFICIAL_PREFIX "%s", *repository);
      free (*repository);
      *repository = r;
    }
}

int
ohbox_reference_parse (const char *s, struct ohbox_reference **out, ohbox_error_t *err)
{
  *out = NULL;
  if (s == NULL || *s == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid image reference ``: empty reference");
  if (strlen (s) > REFERENCE_MAX)
    return ref_error (err, s, "longer than 512 characters");
  if (ohbox_digest_hex_is_valid (s))
    return ref_error (err, s, "a 64-character hexadecimal string is an image ID, not a name");

  const char *digest = NULL;
  const char *at = strchr (s, '@');
  size_t name_len = at ? (size_t) (at - s) : strlen (s);
  if (at)
    {
      digest = at + 1;
      if (!ohbox_digest_is_valid (digest))
        return ref_error (err, s,
                          looks_like_other_digest (digest)
                            ? "only sha256 digests are supported"
                            : "the digest must be `sha256:` and 64 lowercase hexadecimal characters");
    }

  /* The tag is after the last ':' that follows the last '/', so that
   * "host:5000/img" keeps its port and "img:1.0" gets its tag. */
  const char *tag = NULL;
  size_t tag_len = 0;
  const char *last_slash = memrchr (s, '/', name_len);
  const char *tail = last_slash ? last_slash + 1 : s;
  const char *colon = memrchr (tail, ':', name_len - (size_t) (tail - s));
  if (colon)
    {
      tag = colon + 1;
      tag_len = name_len - (size_t) (tag - s);
      const char *why = tag_error (tag, tag_len);
      if (why)
        return ref_error (err, s, why);
      name_len = (size_t) (colon - s);
    }
  if (name_len == 0)
    return ref_error (err, s, "missing repository name");

  cleanup_free char *registry = NULL;
  cleanup_free char *repository = NULL;
  bool explicit = false;
  split_domain (s, name_len, &registry, &repository, &explicit);

  if (!ohbox_reference_valid_domain (registry, strlen (registry)))
    return ref_error (err, s, "the registry must be a host name or an IP address with an optional port");
  if (has_upper (repository, strlen (repository)))
    {
      cleanup_free char *why = NULL;
      cleanup_free char *x = shown (repository);
      why = xasprintf ("repository name `%s` must be lowercase", x);
      return ref_error (err, s, why);
    }
  const char *why = path_error (repository, strlen (repository));
  if (why)
    return ref_error (err, s, why);
  if (strlen (registry) + 1 + strlen (repository) > NAME_TOTAL_MAX)
    return ref_error (err, s, "the name (registry and repository) is longer than 255 characters");

  struct ohbox_reference *r = xcalloc (1, sizeof *r);
  r->registry = steal_pointer (&registry);
  r->repository = steal_pointer (&repository);
  r->registry_explicit = explicit;
  if (tag)
    r->tag = xstrndup (tag, tag_len);
  else if (digest == NULL)
    r->tag = xstrdup (DEFAULT_TAG);
  if (digest)
    r->digest = xstrdup (digest);
  *out = r;
  return 0;
}

void
ohbox_reference_free (struct ohbox_reference *r)
{
  if (r == NULL)
    return;
  free (r->registry);
  free (r->repository);
  free (r->tag);
  free (r->digest);
  free (r);
}

struct ohbox_reference *
ohbox_reference_dup (const struct ohbox_reference *r)
{
  struct ohbox_reference *d = xcalloc (1, sizeof *d);
  d->registry = xstrdup (r->registry);
  d->repository = xstrdup (r->repository);
  d->tag = r->tag ? xstrdup (r->tag) : NULL;
  d->digest = r->digest ? xstrdup (r->digest) : NULL;
  d->registry_explicit = r->registry_explicit;
  return d;
}

char *
ohbox_reference_name (const struct ohbox_reference *r)
{
  return xasprintf ("%s/%s", r->registry, r->repository);
}

static char *
with_tag_digest (const char *name, const struct ohbox_reference *r)
{
  return xasprintf ("%s%s%s%s%s", name, r->tag ? ":" : "", r->tag ? r->tag : "", r->digest ? "@" : "",
                    r->digest ? r->digest : "");
}

char *
ohbox_reference_string (const struct ohbox_reference *r)
{
  cleanup_free char *name = ohbox_reference_name (r);
  return with_tag_digest (name, r);
}

char *
ohbox_reference_familiar (const struct ohbox_reference *r)
{
  if (strcmp (r->registry, DEFAULT_DOMAIN) != 0)
    return ohbox_reference_string (r);
  const char *repo = r->repository;
  /* "library/x" is shown as "x", but "library/a/b" keeps its namespace. */
  if (strncmp (repo, OFFICIAL_PREFIX, strlen (OFFICIAL_PREFIX)) == 0
      && strchr (repo + strlen (OFFICIAL_PREFIX), '/') == NULL)
    repo += strlen (OFFICIAL_PREFIX);
  return with_tag_digest (repo, r);
}

const char *
ohbox_registry_endpoint_host (const char *registry)
{
  if (strcmp (registry, DEFAULT_DOMAIN) == 0 || strcmp (registry, LEGACY_DEFAULT_DOMAIN) == 0)
    return DEFAULT_ENDPOINT;
  return registry;
}
