/* authfile.c: see authfile.h. */
#include "config.h"
#include "registry/authfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/digest.h"
#include "common/dl_crypto.h"
#include "common/utils.h"

/* Auth files are small; a larger one is refused rather than read into memory. */
#define MAX_AUTHFILE_SIZE (4 * 1024 * 1024)
/* Bounds for one decoded "user:pass" (registries accept a few kB at most). */
#define MAX_AUTH_FIELD (64 * 1024)

static void
cleanup_json_fn (json_t **j)
{
  if (*j)
    json_decref (*j);
}
#define cleanup_json __attribute__ ((cleanup (cleanup_json_fn)))

void
ohbox_credentials_free (struct ohbox_credentials *c)
{
  if (c == NULL)
    return;
  /* Scrub the password: it may otherwise linger in freed memory. */
  if (c->password)
    explicit_bzero (c->password, strlen (c->password));
  free (c->username);
  free (c->password);
  free (c);
}

static struct ohbox_credentials *
credentials_new (const char *user, size_t user_len, const char *pass)
{
  struct ohbox_credentials *c = xcalloc (1, sizeof *c);
  c->username = xstrndup (user, user_len);
  c->password = xstrdup (pass);
  return c;
}

int
ohbox_credentials_parse (const char *s, struct ohbox_credentials **out, ohbox_error_t *err)
{
  *out = NULL;
  /* The first ':' separates: user names cannot hold one, passwords can. */
  const char *colon = s ? strchr (s, ':') : NULL;
  if (colon == NULL || colon == s)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid credentials: expected USERNAME:PASSWORD");
  if (strlen (s) > MAX_AUTH_FIELD)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid credentials: longer than %d bytes", MAX_AUTH_FIELD);
  for (const char *p = s; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid credentials: control characters are not allowed");
  *out = credentials_new (s, (size_t) (colon - s), colon + 1);
  return 0;
}

/* ---- keys ---- */

/* The canonical form of a registry host: Docker Hub has several names. */
static const char *
canonical_host (const char *host, size_t len, size_t *out_len)
{
  static const char *const hub[] = { "docker.io", "index.docker.io", "registry-1.docker.io",
                                     "registry.hub.docker.com" };
  for (size_t i = 0; i < sizeof hub / sizeof hub[0]; i++)
    if (strlen (hub[i]) == len && strncasecmp (host, hub[i], len) == 0)
      {
        *out_len = strlen ("docker.io");
        return "docker.io";
      }
  *out_len = len;
  return host;
}

/* Normalises an auth file key: "https://index.docker.io/v1/" -> "docker.io",
 * "http://reg:5000" -> "reg:5000", "reg/ns/repo" kept. A key with a scheme is
 * the legacy Docker form and names a whole registry (its path is dropped). */
static char *
normalize_key (const char *key)
{
  const char *p = key;
  bool legacy = false;
  if (strncasecmp (p, "https://", 8) == 0)
    p += 8, legacy = true;
  else if (strncasecmp (p, "http://", 7) == 0)
    p += 7, legacy = true;
  size_t host_len = strcspn (p, "/");
  const char *rest = p + host_len;
  size_t canon_len;
  const char *host = canonical_host (p, host_len, &canon_len);
  if (legacy || *rest == '\0')
    return xstrndup (host, canon_len);
  /* Drop trailing slashes of a repository key. */
  size_t rest_len = strlen (rest);
  while (rest_len > 0 && rest[rest_len - 1] == '/')
    rest_len--;
  return xasprintf ("%.*s%.*s", (int) canon_len, host, (int) rest_len, rest);
}

/* How well KEY (normalised) matches NAME ("registry/repository"): the length
 * of KEY when it is NAME or a prefix of it at a '/' boundary, else -1. */
static long
key_match (const char *key, const char *name)
{
  size_t kl = strlen (key);
  if (strncmp (key, name, kl) != 0)
    return -1;
  if (name[kl] != '\0' && name[kl] != '/')
    return -1;
  return (long) kl;
}

/* ---- base64 (OpenSSL) ---- */

static char *
base64_encode (const char *data, size_t len)
{
  ohbox_crypto_require ();
  char *out = xmalloc (4 * ((len + 2) / 3) + 1);
  EVP_EncodeBlock ((unsigned char *) out, (const unsigned char *) data, (int) len);
  return out;
}

/* Decodes standard base64 (padding optional); NULL when invalid. */
static char *
base64_decode (const char *in, size_t *out_len)
{
  size_t len = strlen (in);
  while (len > 0 && (in[len - 1] == '\n' || in[len - 1] == ' '))
    len--;
  if (len > 4 * (MAX_AUTH_FIELD / 3) + 4)
    return NULL;
  /* EVP_DecodeBlock wants padded input and reports padding as zero bytes. */
  cleanup_free char *padded = xmalloc (len + 4);
  memcpy (padded, in, len);
  while (len % 4 != 0)
    padded[len++] = '=';
  padded[len] = '\0';
  size_t pad = 0;
  if (len >= 1 && padded[len - 1] == '=')
    pad++;
  if (len >= 2 && padded[len - 2] == '=')
    pad++;
  char *out = xmalloc (len / 4 * 3 + 1);
  ohbox_crypto_require ();
  int n = EVP_DecodeBlock ((unsigned char *) out, (const unsigned char *) padded, (int) len);
  if (n < 0 || (size_t) n < pad)
    {
      free (out);
      return NULL;
    }
  *out_len = (size_t) n - pad;
  out[*out_len] = '\0';
  return out;
}

/* ---- reading ---- */

/* Parses an auth.json document (PATH names it in messages). */
static int
parse_doc (const char *path, const char *text, size_t len, json_t **out, ohbox_error_t *err)
{
  *out = NULL;
  json_error_t jerr;
  json_t *j = json_loadb (text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (j == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "parse auth file `%s`: line %d: %s", path, jerr.line, jerr.text);
  if (!json_is_object (j))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "parse auth file `%s`: expected a JSON object", path);
    }
  json_t *auths = json_object_get (j, "auths");
  if (auths != NULL && !json_is_object (auths))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "parse auth file `%s`: `auths` must be an object", path);
    }
  *out = j;
  return 0;
}

/* Loads PATH. *OUT is NULL (and 0 returned) when the file does not exist and
 * MISSING_OK. */
static int
load_file (const char *path, bool missing_ok, json_t **out, ohbox_error_t *err)
{
  *out = NULL;
  cleanup_free char *text = NULL;
  size_t len = 0;
  ohbox_error_t read_err = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, MAX_AUTHFILE_SIZE, &text, &len, &read_err) < 0)
    {
      if (missing_ok && read_err->errno_value == ENOENT)
        {
          ohbox_error_release (&read_err);
          return 0;
        }
      ohbox_error_move (err, &read_err);
      return ohbox_error_prefix (err, "auth file");
    }
  int r = parse_doc (path, text, len, out, err);
  explicit_bzero (text, len);
  return r;
}

/* Credentials of one "auths" entry. */
static int
entry_credentials (const char *path, const char *key, json_t *entry, struct ohbox_credentials **out, ohbox_error_t *err)
{
  if (!json_is_object (entry))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "auth file `%s`: entry `%s` must be an object", path, key);
  json_t *auth = json_object_get (entry, "auth");
  if (auth == NULL || (json_is_string (auth) && json_string_length (auth) == 0))
    {
      if (json_object_get (entry, "identitytoken") != NULL)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "auth file `%s`: entry `%s` holds an identity token, which ohbox does not support; "
                            "use --creds or ohbox login",
                            path, key);
      return 1; /* no credentials here */
    }
  if (!json_is_string (auth))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "auth file `%s`: `auth` of entry `%s` must be a string", path, key);
  size_t len = 0;
  cleanup_free char *decoded = base64_decode (json_string_value (auth), &len);
  if (decoded == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "auth file `%s`: `auth` of entry `%s` is not valid base64", path, key);
  char *colon = memchr (decoded, ':', len);
  bool ok = colon != NULL && colon != decoded && memchr (decoded, '\0', len) == NULL;
  if (ok)
    *out = credentials_new (decoded, (size_t) (colon - decoded), colon + 1);
  explicit_bzero (decoded, len);
  if (!ok)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "auth file `%s`: `auth` of entry `%s` must be base64 of USERNAME:PASSWORD", path, key);
  return 0;
}

/* Looks NAME ("registry/repository") up in one file. Returns 0 with *OUT set
 * (or NULL when the file has no entry). */
static int
lookup_in_doc (const char *path, json_t *j, const char *registry, const char *name, struct ohbox_credentials **out,
               ohbox_error_t *err)
{
  json_t *auths = json_object_get (j, "auths");
  const char *best_key = NULL;
  json_t *best = NULL;
  long best_len = -1;
  const char *key;
  json_t *value;
  json_object_foreach (auths, key, value)
  {
    cleanup_free char *norm = normalize_key (key);
    long m = key_match (norm, name);
    /* Longest match wins; on a tie the key written in canonical form wins. */
    if (m > best_len || (m == best_len && m >= 0 && strcmp (norm, key) == 0))
      {
        best_len = m;
        best_key = key;
        best = value;
      }
  }
  if (best != NULL)
    {
      int r = entry_credentials (path, best_key, best, out, err);
      if (r <= 0)
        return r;
    }

  /* Credential helpers are not run; say so rather than pulling anonymously
   * and failing with a confusing "unauthorized". */
  const char *helper = NULL;
  json_t *helpers = json_object_get (j, "credHelpers");
  if (json_is_object (helpers))
    {
      json_object_foreach (helpers, key, value)
      {
        cleanup_free char *norm = normalize_key (key);
        if (strcmp (norm, registry) == 0 && json_is_string (value))
          helper = json_string_value (value);
      }
    }
  json_t *store = json_object_get (j, "credsStore");
  if (helper == NULL && best != NULL && json_is_string (store))
    helper = json_string_value (store);
  if (helper != NULL)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "auth file `%s`: the credentials for `%s` are kept by the credential helper "
                        "`docker-credential-%.64s`, which ohbox does not run; use --creds or ohbox login",
                        path, registry, helper);
  return 0;
}

static int
lookup_in_file (const char *path, bool missing_ok, const char *registry, const char *name,
                struct ohbox_credentials **out, ohbox_error_t *err)
{
  *out = NULL;
  cleanup_json json_t *j = NULL;
  if (load_file (path, missing_ok, &j, err) < 0)
    return -1;
  if (j == NULL)
    return 0;
  return lookup_in_doc (path, j, registry, name, out, err);
}

static const char *
home_dir (void)
{
  const char *home = getenv ("HOME");
  if (home != NULL && home[0] == '/')
    return home;
  struct passwd *pw = getpwuid (getuid ());
  return pw ? pw->pw_dir : NULL;
}

char *
ohbox_authfile_default_path (const char *authfile)
{
  if (authfile != NULL && authfile[0] != '\0')
    return xstrdup (authfile);
  const char *env = getenv ("REGISTRY_AUTH_FILE");
  if (env != NULL && env[0] != '\0')
    return xstrdup (env);
  const char *runtime = getenv ("XDG_RUNTIME_DIR");
  if (runtime != NULL && runtime[0] == '/')
    return xasprintf ("%s/containers/auth.json", runtime);
  return xasprintf ("/run/containers/%u/auth.json", (unsigned) getuid ());
}

int
ohbox_authfile_lookup (const char *authfile, const char *registry, const char *repository,
                       struct ohbox_credentials **out, ohbox_error_t *err)
{
  struct ohbox_auth_sources src = { .authfile = authfile };
  return ohbox_authfile_lookup_in (&src, registry, repository, out, err);
}

int
ohbox_authfile_lookup_in (const struct ohbox_auth_sources *src, const char *registry, const char *repository,
                          struct ohbox_credentials **out, ohbox_error_t *err)
{
  *out = NULL;
  size_t canon_len;
  const char *canon = canonical_host (registry, strlen (registry), &canon_len);
  cleanup_free char *reg = xstrndup (canon, canon_len);
  cleanup_free char *name = repository && repository[0] ? xasprintf ("%s/%s", reg, repository) : xstrdup (reg);

  if (src->json != NULL)
    {
      const char *what = src->json_name ? src->json_name : "credentials in memory";
      cleanup_json json_t *j = NULL;
      if (parse_doc (what, src->json, strlen (src->json), &j, err) < 0
          || lookup_in_doc (what, j, reg, name, out, err) < 0)
        return -1;
      if (*out)
        return 0;
    }
  /* An explicit --authfile must exist; the default locations are optional. */
  const char *authfile = src->authfile;
  if (authfile != NULL && authfile[0] != '\0')
    {
      if (lookup_in_file (authfile, false, reg, name, out, err) < 0)
        return -1;
      if (*out)
        return 0;
    }
  if (src->no_defaults)
    return 0;

  char *candidates[5] = { NULL };
  size_t n = 0;
  const char *env = getenv ("REGISTRY_AUTH_FILE");
  if (env != NULL && env[0] != '\0')
    candidates[n++] = xstrdup (env);
  const char *runtime = getenv ("XDG_RUNTIME_DIR");
  if (runtime != NULL && runtime[0] == '/')
    candidates[n++] = xasprintf ("%s/containers/auth.json", runtime);
  else
    candidates[n++] = xasprintf ("/run/containers/%u/auth.json", (unsigned) getuid ());
  const char *config_home = getenv ("XDG_CONFIG_HOME");
  const char *home = home_dir ();
  if (config_home != NULL && config_home[0] == '/')
    candidates[n++] = xasprintf ("%s/containers/auth.json", config_home);
  else if (home != NULL)
    candidates[n++] = xasprintf ("%s/.config/containers/auth.json", home);
  const char *docker_config = getenv ("DOCKER_CONFIG");
  if (docker_config != NULL && docker_config[0] != '\0')
    candidates[n++] = xasprintf ("%s/config.json", docker_config);
  else if (home != NULL)
    candidates[n++] = xasprintf ("%s/.docker/config.json", home);

  int ret = 0;
  for (size_t i = 0; i < n && ret == 0 && *out == NULL; i++)
    ret = lookup_in_file (candidates[i], true, reg, name, out, err);
  for (size_t i = 0; i < n; i++)
    free (candidates[i]);
  return ret;
}

int
ohbox_auth_json_add (json_t *doc, const char *key, const char *username, const char *password, ohbox_error_t *err)
{
  if (key == NULL || *key == '\0' || username == NULL || *username == '\0' || strchr (username, ':') || password == NULL
      || strlen (username) + strlen (password) > MAX_AUTH_FIELD)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unusable credentials for `%.200s`", key ? key : "");
  json_t *auths = json_object_get (doc, "auths");
  if (auths == NULL)
    {
      auths = json_object ();
      json_object_set_new (doc, "auths", auths);
    }
  if (!json_is_object (auths))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`auths` must be an object");
  cleanup_free char *want = normalize_key (key);
  const char *k;
  json_t *v;
  json_object_foreach (auths, k, v)
  {
    cleanup_free char *norm = normalize_key (k);
    if (strcmp (norm, want) == 0)
      return 0;
  }
  cleanup_free char *plain = xasprintf ("%s:%s", username, password);
  char *b64 = base64_encode (plain, strlen (plain));
  explicit_bzero (plain, strlen (plain));
  json_object_set_new (auths, key, json_pack ("{s:s}", "auth", b64));
  explicit_bzero (b64, strlen (b64));
  free (b64);
  return 0;
}

/* ---- writing ---- */

/* Loads PATH for an update (missing -> a new empty document) and returns its
 * "auths" object (created when absent). */
static int
load_for_update (const char *path, json_t **doc, json_t **auths, ohbox_error_t *err)
{
  if (load_file (path, true, doc, err) < 0)
    return -1;
  if (*doc == NULL)
    *doc = json_object ();
  *auths = json_object_get (*doc, "auths");
  if (*auths == NULL)
    {
      *auths = json_object ();
      json_object_set_new (*doc, "auths", *auths);
    }
  return 0;
}

/* Removes every key of AUTHS that names REGISTRY (in any spelling). */
static int
remove_equivalent_keys (json_t *auths, const char *registry)
{
  cleanup_free char *target = normalize_key (registry);
  int removed = 0;
  const char *key;
  json_t *value;
  void *tmp;
  json_object_foreach_safe (auths, tmp, key, value)
  {
    cleanup_free char *norm = normalize_key (key);
    if (strcmp (norm, target) == 0)
      {
        json_object_del (auths, key);
        removed = 1;
      }
  }
  return removed;
}

static int
save_file (const char *path, json_t *doc, ohbox_error_t *err)
{
  const char *slash = strrchr (path, '/');
  if (slash != NULL && slash != path)
    {
      cleanup_free char *dir = xstrndup (path, (size_t) (slash - path));
      if (ohbox_mkdir_p (AT_FDCWD, dir, 0700, err) < 0)
        return ohbox_error_prefix (err, "write auth file `%s`", path);
    }
  cleanup_free char *text = json_dumps (doc, JSON_INDENT (1) | JSON_PRESERVE_ORDER);
  if (text == NULL)
    abort ();
  size_t len = strlen (text);
  int r = ohbox_write_file_atomic (AT_FDCWD, path, text, len, 0600, err);
  explicit_bzero (text, len);
  if (r < 0)
    return ohbox_error_prefix (err, "write auth file `%s`", path);
  return 0;
}

int
ohbox_authfile_store (const char *path, const char *registry, const struct ohbox_credentials *c, ohbox_error_t *err)
{
  if (registry == NULL || registry[0] == '\0' || c == NULL || c->username == NULL || c->password == NULL
      || strchr (c->username, ':') != NULL || c->username[0] == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "store credentials: expected a registry, a user name without `:` and a password");
  cleanup_json json_t *doc = NULL;
  json_t *auths = NULL;
  if (load_for_update (path, &doc, &auths, err) < 0)
    return -1;
  remove_equivalent_keys (auths, registry);
  cleanup_free char *plain = xasprintf ("%s:%s", c->username, c->password);
  cleanup_free char *encoded = base64_encode (plain, strlen (plain));
  explicit_bzero (plain, strlen (plain));
  json_object_set_new (auths, registry, json_pack ("{s:s}", "auth", encoded));
  explicit_bzero (encoded, strlen (encoded));
  return save_file (path, doc, err);
}

int
ohbox_authfile_remove (const char *path, const char *registry, ohbox_error_t *err)
{
  cleanup_json json_t *doc = NULL;
  if (load_file (path, true, &doc, err) < 0)
    return -1;
  if (doc == NULL)
    return 0;
  json_t *auths = json_object_get (doc, "auths");
  if (auths == NULL || !remove_equivalent_keys (auths, registry))
    return 0;
  if (save_file (path, doc, err) < 0)
    return -1;
  return 1;
}
