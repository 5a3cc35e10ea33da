/* registry_auth.c: authentication with a registry (see registry_internal.h).
 *
 * Bearer (the token flow of Docker Hub, GHCR, Quay, distribution's token
 * auth): GET REALM?service=S&scope=repository:REPO:pull, with Basic
 * credentials when there are any; the answer {"token"|"access_token",
 * "expires_in", "issued_at"} is cached per scope until shortly before it
 * expires. Basic: the credentials go with every request to the registry.
 * Credentials come from --creds, else from the auth files (looked up per
 * repository, since keys may name one). */
#include "config.h"

#include <jansson.h>
#include "common/dl_crypto.h"
#include <string.h>
#include <strings.h>
#include <time.h>

#include "registry/registry_internal.h"

#define DEFAULT_TOKEN_LIFETIME_S 60

static char *
scope_for (const struct ohbox_registry *r, const char *repository)
{
  return xasprintf ("repository:%s:%s", repository, r->push_scope ? "pull,push" : "pull");
}

/* ---- token cache ---- */

static void
token_clear (struct reg_token *t)
{
  if (t->token)
    explicit_bzero (t->token, strlen (t->token));
  free (t->token);
  free (t->scope);
  memset (t, 0, sizeof *t);
}

static struct reg_token *
token_find (struct ohbox_registry *r, const char *scope)
{
  double now = ohbox_monotonic ();
  for (size_t i = 0; i < REG_MAX_TOKENS; i++)
    {
      struct reg_token *t = &r->tokens[i];
      if (t->scope == NULL || strcmp (t->scope, scope) != 0)
        continue;
      if (t->expires > now)
        return t;
      token_clear (t);
    }
  return NULL;
}

static void
token_drop (struct ohbox_registry *r, const char *scope)
{
  for (size_t i = 0; i < REG_MAX_TOKENS; i++)
    if (r->tokens[i].scope && strcmp (r->tokens[i].scope, scope) == 0)
      token_clear (&r->tokens[i]);
}

static struct reg_token *
token_put (struct ohbox_registry *r, const char *scope, const char *token, double lifetime, bool with_creds)
{
  token_drop (r, scope);
  /* A free slot, else the one expiring first. */
  struct reg_token *slot = &r->tokens[0];
  for (size_t i = 0; i < REG_MAX_TOKENS; i++)
    {
      if (r->tokens[i].scope == NULL)
        {
          slot = &r->tokens[i];
          break;
        }
      if (r->tokens[i].expires < slot->expires)
        slot = &r->tokens[i];
    }
  token_clear (slot);
  /* Renew a little before the server's expiry, so a request never carries a
   * token that expires on the way. */
  double margin = lifetime / 10 > 30 ? 30 : lifetime / 10;
  slot->scope = xstrdup (scope);
  slot->token = xstrdup (token);
  slot->expires = ohbox_monotonic () + lifetime - margin;
  slot->with_creds = with_creds;
  return slot;
}

void
reg_auth_clear (struct ohbox_registry *r)
{
  for (size_t i = 0; i < REG_MAX_TOKENS; i++)
    token_clear (&r->tokens[i]);
  ohbox_auth_challenge_clear (&r->challenge);
  ohbox_credentials_free (r->creds);
  r->creds = NULL;
  free (r->creds_repo);
  r->creds_repo = NULL;
}

/* ---- credentials ---- */

/* Credentials for REPOSITORY (NULL: for the registry as a whole). */
static int
credentials_for (struct ohbox_registry *r, const char *repository, const struct ohbox_credentials **out,
                 ohbox_error_t *err)
{
  if (r->opt_creds)
    {
      *out = r->opt_creds;
      return 0;
    }
  if (repository == NULL)
    repository = "";
  if (r->creds_repo == NULL || strcmp (r->creds_repo, repository) != 0)
    {
      ohbox_credentials_free (r->creds);
      r->creds = NULL;
      free (r->creds_repo);
      r->creds_repo = NULL;
      struct ohbox_auth_sources src = { .json = r->auth_json,
                                        .json_name = r->auth_json_name,
                                        .authfile = r->authfile,
                                        .no_defaults = r->no_default_authfiles };
      if (ohbox_authfile_lookup_in (&src, r->host, repository, &r->creds, err) < 0)
        return -1;
      r->creds_repo = xstrdup (repository);
    }
  *out = r->creds;
  return 0;
}

static char *
basic_header (const struct ohbox_credentials *c)
{
  cleanup_free char *plain = xasprintf ("%s:%s", c->username, c->password);
  size_t len = strlen (plain);
  cleanup_free char *b64 = xmalloc (4 * ((len + 2) / 3) + 1);
  ohbox_crypto_require ();
  EVP_EncodeBlock ((unsigned char *) b64, (const unsigned char *) plain, (int) len);
  explicit_bzero (plain, len);
  char *h = xasprintf ("Authorization: Basic %s", b64);
  explicit_bzero (b64, strlen (b64));
  return h;
}

/* ---- token flow ---- */

/* Seconds since the epoch of an RFC 3339 time ("2026-11-22T10:00:00.123Z"), or -1. */
static double
parse_rfc3339 (const char *s)
{
  struct tm tm = { 0 };
  int consumed = 0;
  if (s == NULL
      || sscanf (s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                 &tm.tm_sec, &consumed)
           != 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  time_t t = timegm (&tm);
  if (t == (time_t) -1)
    return -1;
  /* Fractions are ignored; a numeric offset is applied. */
  const char *p = s + consumed;
  while (*p == '.' || (*p >= '0' && *p <= '9'))
    p++;
  int oh = 0, om = 0;
  if ((*p == '+' || *p == '-') && sscanf (p + 1, "%2d:%2d", &oh, &om) == 2)
    t -= (*p == '+' ? 1 : -1) * (time_t) (oh * 3600 + om * 60);
  return (double) t;
}

/* Parses the token server's answer; *LIFETIME in seconds. */
static int
parse_token_response (const char *realm, const struct ohbox_buf *body, char **token, double *lifetime,
                      ohbox_error_t *err)
{
  json_error_t jerr;
  json_t *j = json_loadb (body->data, body->len, 0, &jerr);
  if (j == NULL || !json_is_object (j))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "token server `%.200s` sent invalid JSON", realm);
    }
  const char *t = json_string_value (json_object_get (j, "token"));
  if (t == NULL || t[0] == '\0')
    t = json_string_value (json_object_get (j, "access_token"));
  bool ok = t != NULL && t[0] != '\0';
  /* The token goes into a header line: visible ASCII only. */
  for (const char *p = t; ok && *p; p++)
    if (*p < 0x21 || *p > 0x7e)
      ok = false;
  if (!ok)
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "token server `%.200s` sent no usable `token` or `access_token`",
                          realm);
    }
  double expires_in = DEFAULT_TOKEN_LIFETIME_S;
  json_t *e = json_object_get (j, "expires_in");
  if (json_is_number (e) && json_number_value (e) > 0)
    expires_in = json_number_value (e);
  double life = expires_in;
  /* issued_at only shortens the lifetime (the token may have waited in a
   * cache); a clock skew that would make it negative is ignored. */
  double issued = parse_rfc3339 (json_string_value (json_object_get (j, "issued_at")));
  if (issued > 0)
    {
      double left = issued + expires_in - (double) time (NULL);
      if (left > 0 && left < life)
        life = left;
    }
  *token = xstrdup (t);
  *lifetime = life;
  json_decref (j);
  return 0;
}

/* Asks the token server of challenge C for a token for SCOPE_PARAM (NULL:
 * none, as for a login check). Credentials are those for REPOSITORY (NULL:
 * only --creds). */
static int
request_token (struct ohbox_registry *r, const char *repository, const struct ohbox_auth_challenge *c,
               const char *scope_param, char **token, double *lifetime, bool *with_creds, ohbox_error_t *err)
{
  const char *realm = c->realm;
  bool https = strncasecmp (realm, "https://", 8) == 0;
  if (!https && strncasecmp (realm, "http://", 7) != 0)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s: token realm `%.200s` is not an http or https URL", r->display,
                        realm);
  const struct ohbox_credentials *creds = NULL;
  if (credentials_for (r, repository, &creds, err) < 0)
    return -1;
  if (creds && !https && !r->insecure && r->base_url && strncmp (r->base_url, "https://", 8) == 0)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "%s: refusing to send credentials to the plain-http token realm `%.200s`; use "
                        "--tls-verify=false if this is intended",
                        r->display, realm);

  struct ohbox_buf q = { 0 };
  ohbox_buf_append (&q, realm, strlen (realm));
  char sep = strchr (realm, '?') ? '&' : '?';
  const char *names[2] = { "service", "scope" };
  const char *values[2] = { c->service, scope_param };
  for (size_t i = 0; i < 2; i++)
    {
      if (values[i] == NULL)
        continue;
      char *esc = curl_easy_escape (r->easy, values[i], 0);
      if (esc == NULL)
        abort ();
      cleanup_free char *param = xasprintf ("%c%s=%s", sep, names[i], esc);
      curl_free (esc);
      ohbox_buf_append (&q, param, strlen (param));
      sep = '&';
    }

  struct reg_membody m = { .max = REG_MAX_TOKEN_RESPONSE, .what = "token server answer" };
  struct reg_xfer x;
  reg_xfer_init (&x, r, r->easy, q.data);
  ohbox_buf_free (&q);
  x.accept = "application/json";
  if (creds)
    x.authorization = basic_header (creds);
  reg_membody_attach (&x, &m);
  int ret = reg_run (&x, true, err);
  long status = x.resp.status;
  cleanup_free char *detail = ret == 0 ? reg_error_detail (&x.resp) : NULL;
  reg_xfer_clear (&x);
  if (ret < 0)
    {
      ohbox_buf_free (&m.buf);
      return ohbox_error_prefix (err, "%s: token request", r->display);
    }
  if (status == 401 || status == 403)
    {
      ohbox_buf_free (&m.buf);
      if (creds)
        return ohbox_error (err, OHBOX_ERR_AUTH, 0,
                            "unauthorized: credentials for %s were refused by the token server (HTTP %ld)%s; "
                            "check the user name and password given with --creds or ohbox login",
                            r->display, status, detail);
      return reg_auth_error (r, repository, false, err);
    }
  if (status != 200)
    {
      ohbox_buf_free (&m.buf);
      return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s: token request to `%.200s` failed: HTTP %ld%s", r->display,
                          realm, status, detail);
    }
  if (m.buf.data == NULL)
    ohbox_buf_append (&m.buf, "", 0);
  ret = parse_token_response (realm, &m.buf, token, lifetime, err);
  explicit_bzero (m.buf.data, m.buf.len);
  ohbox_buf_free (&m.buf);
  *with_creds = creds != NULL;
  return ret;
}

/* Gets a token for SCOPE_PARAM and caches it as SCOPE_KEY; *OUT (may be
 * NULL) points at the cache entry. */
static int
fetch_token (struct ohbox_registry *r, const char *repository, const struct ohbox_auth_challenge *c,
             const char *scope_param, const char *scope_key, struct reg_token **out, ohbox_error_t *err)
{
  char *token = NULL;
  double lifetime = 0;
  bool with_creds = false;
  if (request_token (r, repository, c, scope_param, &token, &lifetime, &with_creds, err) < 0)
    return -1;
  struct reg_token *t = token_put (r, scope_key, token, lifetime, with_creds);
  if (out)
    *out = t;
  explicit_bzero (token, strlen (token));
  free (token);
  return 0;
}

int
reg_auth_header (struct ohbox_registry *r, const char *repository, char **out, bool *creds_sent, ohbox_error_t *err)
{
  *out = NULL;
  *creds_sent = false;
  if (r->challenge.scheme == OHBOX_AUTH_BEARER)
    {
      cleanup_free char *scope = scope_for (r, repository);
      struct reg_token *t = token_find (r, scope);
      if (t == NULL && fetch_token (r, repository, &r->challenge, scope, scope, &t, err) < 0)
        return -1;
      *out = xasprintf ("Authorization: Bearer %s", t->token);
      *creds_sent = t->with_creds;
      r->creds_used |= t->with_creds;
      return 0;
    }
  if (r->challenge.scheme == OHBOX_AUTH_BASIC)
    {
      const struct ohbox_credentials *creds = NULL;
      if (credentials_for (r, repository, &creds, err) < 0)
        return -1;
      if (creds)
        {
          *out = basic_header (creds);
          *creds_sent = true;
          r->creds_used = true;
        }
    }
  return 0;
}

int
reg_auth_challenged (struct ohbox_registry *r, const char *repository, const char *www_authenticate, bool creds_sent,
                     ohbox_error_t *err)
{
  if (www_authenticate == NULL)
    return 0;
  struct ohbox_auth_challenge c;
  if (ohbox_auth_challenge_parse (www_authenticate, &c, err) < 0)
    return ohbox_error_prefix (err, "%s/%s", r->display, repository);
  ohbox_auth_challenge_clear (&r->challenge);
  r->challenge = c;
  if (c.scheme == OHBOX_AUTH_BEARER)
    {
      /* A fresh token, with the scope the registry asked for if it said. */
      cleanup_free char *scope = scope_for (r, repository);
      token_drop (r, scope);
      if (fetch_token (r, repository, &r->challenge, r->challenge.scope ? r->challenge.scope : scope, scope, NULL, err)
          < 0)
        return -1;
      return 1;
    }
  /* Basic: a retry helps only if we have credentials we did not send yet. */
  const struct ohbox_credentials *creds = NULL;
  if (credentials_for (r, repository, &creds, err) < 0)
    return -1;
  return creds != NULL && !creds_sent ? 1 : 0;
}

int
reg_auth_error (struct ohbox_registry *r, const char *repository, bool creds_sent, ohbox_error_t *err)
{
  if (repository == NULL)
    return ohbox_error (err, OHBOX_ERR_AUTH, 0,
                        "unauthorized: credentials for %s were refused; check the user name and password", r->display);
  if (creds_sent)
    return ohbox_error (err, OHBOX_ERR_AUTH, 0,
                        "unauthorized: credentials for %s were refused for %s/%s; check the user name and "
                        "password given with --creds or ohbox login",
                        r->display, r->display, repository);
  return ohbox_error (err, OHBOX_ERR_AUTH, 0,
                      "unauthorized: authentication required for %s/%s; use --creds or ohbox login", r->display,
                      repository);
}

static int
discard_body (struct reg_xfer *x, const char *data, size_t len)
{
  (void) x;
  (void) data;
  (void) len;
  return 0;
}

int
ohbox_registry_check_credentials (struct ohbox_registry *r, ohbox_error_t *err)
{
  if (r->opt_creds == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s: no credentials to check", r->display);
  /* A fresh ping: the challenge it answers says how to authenticate. */
  ohbox_auth_challenge_clear (&r->challenge);
  if (ohbox_registry_ping (r, err) < 0)
    return -1;
  char *authorization = NULL;
  switch (r->challenge.scheme)
    {
    case OHBOX_AUTH_NONE:
      return 0;
    case OHBOX_AUTH_BASIC:
      authorization = basic_header (r->opt_creds);
      break;
    case OHBOX_AUTH_BEARER:
      {
        char *token = NULL;
        double lifetime;
        bool with_creds;
        if (request_token (r, NULL, &r->challenge, NULL, &token, &lifetime, &with_creds, err) < 0)
          return -1;
        authorization = xasprintf ("Authorization: Bearer %s", token);
        explicit_bzero (token, strlen (token));
        free (token);
        break;
      }
    }
  cleanup_free char *url = xasprintf ("%s/v2/", r->base_url);
  struct reg_xfer x;
  reg_xfer_init (&x, r, r->easy, url);
  x.authorization = authorization;
  x.on_data = discard_body;
  int ret = reg_run (&x, true, err);
  if (ret == 0)
    {
      reg_xfer_note_origin (&x);
      if (x.resp.status == 401 || x.resp.status == 403)
        ret = reg_auth_error (r, NULL, true, err);
      else if (x.resp.status != 200)
        {
          cleanup_free char *what = xasprintf ("login to %s", r->display);
          ret = reg_status_error (r, "", what, &x.resp, true, err);
        }
    }
  reg_xfer_clear (&x);
  return ret;
}
