/* auth_challenge.c: see auth_challenge.h.
 *
 * Grammar (RFC 7235 section 2.1, RFC 7230 section 3.2.6):
 *   header    = #challenge
 *   challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
 *   auth-param = token BWS "=" BWS ( token / quoted-string )
 * Commas separate both challenges and the parameters of one challenge, so a
 * token after a comma starts a new challenge unless "=" follows it. */
#include "config.h"
#include "registry/auth_challenge.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "common/utils.h"

#define MALFORMED "malformed WWW-Authenticate header: "

/* A header value longer than this is refused: it comes from the network and
 * a real one is a few hundred bytes. */
#define MAX_HEADER_LEN (64 * 1024)

static bool
is_tchar (char c)
{
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return true;
  return c != '\0' && strchr ("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool
is_token68_char (char c)
{
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return true;
  return c != '\0' && strchr ("-._~+/", c) != NULL;
}

static const char *
skip_ows (const char *p)
{
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

static const char *
skip_token (const char *p)
{
  while (is_tchar (*p))
    p++;
  return p;
}

/* At P, is there a token68 that ends the challenge (followed by "," or the end)? */
static const char *
match_token68 (const char *p)
{
  const char *q = p;
  while (is_token68_char (*q))
    q++;
  if (q == p)
    return NULL;
  while (*q == '=')
    q++;
  const char *e = skip_ows (q);
  if (*e != ',' && *e != '\0')
    return NULL;
  return q;
}

/* At P, does "token BWS = BWS value" start (an auth-param rather than a new
 * challenge or a token68 such as "abc==")? */
static bool
starts_param (const char *p)
{
  const char *q = skip_token (p);
  if (q == p)
    return false;
  q = skip_ows (q);
  if (*q != '=')
    return false;
  q = skip_ows (q + 1);
  return *q == '"' || is_tchar (*q);
}

/* Parses a token or a quoted-string at *P into a new string. */
static int
parse_value (const char **pp, char **out, ohbox_error_t *err)
{
  const char *p = *pp;
  if (*p != '"')
    {
      const char *e = skip_token (p);
      if (e == p)
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "missing parameter value");
      *out = xstrndup (p, (size_t) (e - p));
      *pp = e;
      return 0;
    }
  p++;
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  for (;;)
    {
      if (*p == '\0')
        {
          ohbox_buf_free (&b);
          return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "unterminated quoted string");
        }
      if (*p == '"')
        break;
      /* quoted-pair: the backslash escapes any following character. */
      if (*p == '\\' && p[1] != '\0')
        p++;
      ohbox_buf_append (&b, p, 1);
      p++;
    }
  *out = b.data;
  *pp = p + 1;
  return 0;
}

static enum ohbox_auth_scheme
scheme_of (const char *name, size_t len)
{
  if (len == 5 && strncasecmp (name, "basic", 5) == 0)
    return OHBOX_AUTH_BASIC;
  if (len == 6 && strncasecmp (name, "bearer", 6) == 0)
    return OHBOX_AUTH_BEARER;
  return OHBOX_AUTH_NONE;
}

/* Sets *SLOT to VALUE unless already set (the first occurrence wins). */
static void
set_param (char **slot, char **value)
{
  if (*slot == NULL)
    *slot = steal_pointer (value);
}

/* Parses the parameters of one challenge at *PP into C (C may be NULL for a
 * scheme we do not use: the parameters are then only skipped). Stops before
 * the comma that starts the next challenge or at the end. */
static int
parse_params (const char **pp, struct ohbox_auth_challenge *c, ohbox_error_t *err)
{
  const char *p = skip_ows (*pp);
  const char *t68 = match_token68 (p);
  if (t68 != NULL && !starts_param (p))
    {
      *pp = t68;
      return 0;
    }
  for (;;)
    {
      p = skip_ows (p);
      if (*p == '\0')
        break;
      if (*p == ',')
        {
          /* Empty list elements are allowed; a comma followed by something
           * other than a parameter ends this challenge. */
          const char *q = p;
          while (*q == ',' || *q == ' ' || *q == '\t')
            q++;
          if (!starts_param (q))
            break;
          p = q;
        }
      const char *name = p;
      p = skip_token (p);
      if (p == name)
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "unexpected `%c`",
                            *p >= 0x20 && *p < 0x7f ? *p : '?');
      size_t name_len = (size_t) (p - name);
      p = skip_ows (p);
      if (*p != '=')
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "expected `=` after a parameter name");
      p = skip_ows (p + 1);
      cleanup_free char *value = NULL;
      if (parse_value (&p, &value, err) < 0)
        return -1;
      if (c != NULL)
        {
          if (name_len == 5 && strncasecmp (name, "realm", 5) == 0)
            set_param (&c->realm, &value);
          else if (name_len == 7 && strncasecmp (name, "service", 7) == 0)
            set_param (&c->service, &value);
          else if (name_len == 5 && strncasecmp (name, "scope", 5) == 0)
            set_param (&c->scope, &value);
        }
      p = skip_ows (p);
      if (*p != ',' && *p != '\0')
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "expected `,` between parameters");
    }
  *pp = p;
  return 0;
}

void
ohbox_auth_challenge_clear (struct ohbox_auth_challenge *c)
{
  if (c == NULL)
    return;
  free (c->realm);
  free (c->service);
  free (c->scope);
  memset (c, 0, sizeof *c);
}

static void
challenge_move (struct ohbox_auth_challenge *to, struct ohbox_auth_challenge *from)
{
  ohbox_auth_challenge_clear (to);
  *to = *from;
  memset (from, 0, sizeof *from);
}

int
ohbox_auth_challenge_parse (const char *header_value, struct ohbox_auth_challenge *out, ohbox_error_t *err)
{
  memset (out, 0, sizeof *out);
  if (header_value == NULL)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "missing WWW-Authenticate header");
  if (strlen (header_value) > MAX_HEADER_LEN)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "WWW-Authenticate header longer than %d bytes", MAX_HEADER_LEN);

  struct ohbox_auth_challenge bearer = { 0 }, basic = { 0 };
  bool bearer_without_realm = false;
  cleanup_free char *unknown = NULL;
  const char *p = header_value;
  int ret = -1;

  for (;;)
    {
      while (*p == ',' || *p == ' ' || *p == '\t')
        p++;
      if (*p == '\0')
        break;
      const char *name = p;
      p = skip_token (p);
      if (p == name)
        {
          ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "unexpected `%c`", *p >= 0x20 && *p < 0x7f ? *p : '?');
          goto out;
        }
      if (*p == '=')
        {
          ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "parameter without a scheme");
          goto out;
        }
      enum ohbox_auth_scheme scheme = scheme_of (name, (size_t) (p - name));
      struct ohbox_auth_challenge c = { .scheme = scheme };
      if (parse_params (&p, scheme == OHBOX_AUTH_NONE ? NULL : &c, err) < 0)
        {
          ohbox_auth_challenge_clear (&c);
          goto out;
        }
      c.scheme = scheme;
      if (scheme == OHBOX_AUTH_NONE)
        {
          if (unknown == NULL)
            unknown = xstrndup (name, (size_t) (skip_token (name) - name));
        }
      else if (scheme == OHBOX_AUTH_BEARER && c.realm == NULL)
        bearer_without_realm = true;
      /* The first challenge of each scheme wins. */
      else if (scheme == OHBOX_AUTH_BEARER && bearer.scheme == OHBOX_AUTH_NONE)
        challenge_move (&bearer, &c);
      else if (scheme == OHBOX_AUTH_BASIC && basic.scheme == OHBOX_AUTH_NONE)
        challenge_move (&basic, &c);
      ohbox_auth_challenge_clear (&c);
    }

  if (bearer.scheme != OHBOX_AUTH_NONE)
    challenge_move (out, &bearer);
  else if (basic.scheme != OHBOX_AUTH_NONE)
    challenge_move (out, &basic);
  else if (bearer_without_realm)
    {
      ohbox_error (err, OHBOX_ERR_REGISTRY, 0, MALFORMED "Bearer challenge without a realm");
      goto out;
    }
  else if (unknown != NULL)
    {
      ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                   "unsupported authentication scheme `%.40s` (ohbox supports Basic and Bearer)", unknown);
      goto out;
    }
  else
    {
      ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "empty WWW-Authenticate header");
      goto out;
    }
  ret = 0;
out:
  ohbox_auth_challenge_clear (&bearer);
  ohbox_auth_challenge_clear (&basic);
  return ret;
}
