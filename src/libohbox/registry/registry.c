/* registry.c: the registry client object, its TLS material, the /v2/ ping,
 * manifests and small blobs (see registry.h; HTTP in registry_http.c,
 * authentication in registry_auth.c, layer downloads in registry_fetch.c). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include "common/dl_crypto.h"
#include <string.h>
#include <sys/stat.h>

#include "oci/image_spec.h"
#include "registry/registry_internal.h"

/* Bounds for the certificate directory (local configuration, but a wrong
 * --cert-dir must not make us read a huge tree). */
#define MAX_CERT_FILES 256
#define MAX_CERT_FILE_SIZE (1024 * 1024)
#define MAX_CAS 256
#define MAX_SYSTEM_BUNDLE_SIZE (16 * 1024 * 1024)

/* ---- validation of what goes into URLs ---- */

static bool
valid_host (const char *h)
{
  if (h == NULL || h[0] == '\0' || strlen (h) > 255)
    return false;
  for (const char *p = h; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
          || strchr (".-:[]_", *p) != NULL))
      return false;
  return true;
}

static int
validate_repository (const char *repo, ohbox_error_t *err)
{
  bool ok = repo != NULL && repo[0] != '\0' && repo[0] != '/' && strlen (repo) <= 255;
  for (const char *p = repo; ok && *p; p++)
    {
      if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr ("._-/", *p) != NULL))
        ok = false;
      /* No empty, "." or ".." components: the name becomes a URL path. */
      if (*p == '/' && (p[1] == '/' || p[1] == '\0'))
        ok = false;
      bool component_start = p == repo || p[-1] == '/';
      if (component_start && p[0] == '.'
          && (p[1] == '/' || p[1] == '\0' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0'))))
        ok = false;
    }
  if (!ok)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid repository name `%.255s`", repo ? repo : "");
  return 0;
}

static int
validate_tag (const char *tag, ohbox_error_t *err)
{
  size_t n = tag ? strlen (tag) : 0;
  bool ok = n > 0 && n <= 128 && tag[0] != '.' && tag[0] != '-';
  for (size_t i = 0; ok && i < n; i++)
    if (!((tag[i] >= 'a' && tag[i] <= 'z') || (tag[i] >= 'A' && tag[i] <= 'Z') || (tag[i] >= '0' && tag[i] <= '9')
          || strchr ("_.-", tag[i]) != NULL))
      ok = false;
  if (!ok)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid tag `%.128s`", tag ? tag : "");
  return 0;
}

/* ---- TLS material ---- */

static bool
has_suffix (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n > m && strcmp (s + n - m, suffix) == 0;
}

/* Checks that NAME holds PEM certificates and appends them to EXTRA. */
static int
load_cas (struct ohbox_registry *r, int dfd, const char *dir, const char *name, struct ohbox_buf *extra,
          ohbox_error_t *err)
{
  cleanup_free char *pem = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (dfd, name, MAX_CERT_FILE_SIZE, &pem, &len, err) < 0)
    return ohbox_error_prefix (err, "CA certificate in `%s`", dir);
  BIO *bio = BIO_new_mem_buf (pem, (int) len);
  if (bio == NULL)
    abort ();
  size_t found = 0;
  X509 *cert;
  while ((cert = PEM_read_bio_X509 (bio, NULL, NULL, NULL)) != NULL)
    {
      X509_free (cert);
      found++;
    }
  BIO_free (bio);
  if (found == 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "no PEM certificate in `%s/%s`", dir, name);
  r->n_cas += found;
  if (r->n_cas > MAX_CAS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s`: more than %d CA certificates", dir, MAX_CAS);
  ohbox_buf_append (extra, "\n", 1);
  ohbox_buf_append (extra, pem, len);
  return 0;
}

/* The system CA bundle libcurl would use, or NULL. */
static char *
system_ca_bundle (struct ohbox_registry *r)
{
#if LIBCURL_VERSION_NUM >= 0x075400
  char *path = NULL;
  if (curl_easy_getinfo (r->easy, CURLINFO_CAINFO, &path) == CURLE_OK && path != NULL && access (path, R_OK) == 0)
    return xstrdup (path);
#else
  (void) r;
#endif
  static const char *const known[] = { "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                                       "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem" };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (access (known[i], R_OK) == 0)
      return xstrdup (known[i]);
  return NULL;
}

static int
load_cert_dir (struct ohbox_registry *r, const char *dir, struct ohbox_buf *extra, ohbox_error_t *err)
{
  cleanup_close int dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_REGISTRY, "open certificate directory `%s`", dir);
  struct dirent **names = NULL;
  int n = scandir (dir, &names, NULL, alphasort);
  if (n < 0)
    return ohbox_error_sys (err, OHBOX_ERR_REGISTRY, "read certificate directory `%s`", dir);
  int ret = 0;
  if (n > MAX_CERT_FILES + 2)
    ret = ohbox_error (err, OHBOX_ERR_USAGE, 0, "certificate directory `%s` has more than %d entries", dir,
                       MAX_CERT_FILES);
  for (int i = 0; i < n && ret == 0; i++)
    {
      const char *name = names[i]->d_name;
      if (has_suffix (name, ".crt"))
        ret = load_cas (r, dfd, dir, name, extra, err);
      else if (has_suffix (name, ".cert") || has_suffix (name, ".key"))
        {
          /* Client certificates come in NAME.cert + NAME.key pairs. */
          bool is_cert = has_suffix (name, ".cert");
          size_t base_len = strlen (name) - (is_cert ? 5 : 4);
          cleanup_free char *other = xasprintf ("%.*s%s", (int) base_len, name, is_cert ? ".key" : ".cert");
          if (faccessat (dfd, other, R_OK, 0) < 0)
            ret = ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s/%s` has no matching `%s`", dir, name, other);
          else if (is_cert && r->client_cert == NULL)
            {
              r->client_cert = xasprintf ("%s/%s", dir, name);
              r->client_key = xasprintf ("%s/%s", dir, other);
            }
        }
    }
  for (int i = 0; i < n; i++)
    free (names[i]);
  free (names);
  return ret;
}

/* The certificate directory: --cert-dir, else the first existing of the
 * per-user directory (rootless), /etc/containers/certs.d/HOST and
 * /etc/docker/certs.d/HOST. */
static int
load_cert_dirs (struct ohbox_registry *r, const char *cert_dir, struct ohbox_buf *extra, ohbox_error_t *err)
{
  if (cert_dir != NULL && cert_dir[0] != '\0')
    return load_cert_dir (r, cert_dir, extra, err);
  char *candidates[3] = { NULL };
  size_t n = 0;
  if (geteuid () != 0)
    {
      const char *config = getenv ("XDG_CONFIG_HOME");
      const char *home = getenv ("HOME");
      if (config && config[0] == '/')
        candidates[n++] = xasprintf ("%s/containers/certs.d/%s", config, r->host);
      else if (home && home[0] == '/')
        candidates[n++] = xasprintf ("%s/.config/containers/certs.d/%s", home, r->host);
    }
  candidates[n++] = xasprintf ("/etc/containers/certs.d/%s", r->host);
  candidates[n++] = xasprintf ("/etc/docker/certs.d/%s", r->host);
  int ret = 0;
  for (size_t i = 0; i < n; i++)
    {
      struct stat st;
      if (stat (candidates[i], &st) == 0 && S_ISDIR (st.st_mode))
        {
          ret = load_cert_dir (r, candidates[i], extra, err);
          break;
        }
    }
  for (size_t i = 0; i < n; i++)
    free (candidates[i]);
  return ret;
}

static int
load_tls_material (struct ohbox_registry *r, const char *cert_dir, ohbox_error_t *err)
{
  struct ohbox_buf extra = { 0 };
  if (load_cert_dirs (r, cert_dir, &extra, err) < 0)
    {
      ohbox_buf_free (&extra);
      return -1;
    }
  if (r->n_cas > 0)
    {
      /* A CA blob replaces libcurl's CA file: put the system bundle first. */
      cleanup_free char *system = system_ca_bundle (r);
      if (system != NULL)
        {
          cleanup_free char *text = NULL;
          size_t len = 0;
          if (ohbox_read_file_at (AT_FDCWD, system, MAX_SYSTEM_BUNDLE_SIZE, &text, &len, err) < 0)
            {
              ohbox_buf_free (&extra);
              return ohbox_error_prefix (err, "system CA bundle");
            }
          ohbox_buf_append (&r->ca_blob, text, len);
        }
      ohbox_buf_append (&r->ca_blob, extra.data, extra.len);
    }
  ohbox_buf_free (&extra);
  return 0;
}

/* ---- the object ---- */

int
ohbox_registry_new (const char *host, const struct ohbox_registry_options *opts, struct ohbox_registry **out,
                    ohbox_error_t *err)
{
  *out = NULL;
  /* Every libcurl call goes through a registry object: it is loaded here. */
  if (ohbox_curl_ready (OHBOX_ERR_REGISTRY, err) < 0 || ohbox_dl_crypto_load (err) < 0)
    return -1;
  if (!valid_host (host))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid registry host `%.255s`", host ? host : "");
  static const struct ohbox_registry_options defaults = { 0 };
  if (opts == NULL)
    opts = &defaults;

  struct ohbox_registry *r = xcalloc (1, sizeof *r);
  r->host = xstrdup (host);
  r->display = xstrdup (strcmp (host, "registry-1.docker.io") == 0 ? "docker.io" : host);
  r->insecure = opts->insecure;
  r->authfile = opts->authfile ? xstrdup (opts->authfile) : NULL;
  if (opts->creds)
    {
      r->opt_creds = xcalloc (1, sizeof *r->opt_creds);
      r->opt_creds->username = xstrdup (opts->creds->username);
      r->opt_creds->password = xstrdup (opts->creds->password);
    }
  r->max_parallel = opts->max_parallel ? opts->max_parallel : 6;
  if (r->max_parallel > 64)
    r->max_parallel = 64;
  r->max_attempts = opts->max_attempts ? opts->max_attempts : 5;
  r->retry_delay_ms = opts->retry_delay_ms ? opts->retry_delay_ms : 250;
  r->connect_timeout_s = opts->connect_timeout_s > 0 ? opts->connect_timeout_s : 30;
  r->low_speed_timeout_s = opts->low_speed_timeout_s > 0 ? opts->low_speed_timeout_s : 60;
  /* $OHBOX_LOW_SPEED_TIMEOUT (seconds, 1..3600) replaces the default: a
   * slow link needs more patience, a test of a stalled server less. */
  const char *low = getenv ("OHBOX_LOW_SPEED_TIMEOUT");
  if (opts->low_speed_timeout_s <= 0 && low && *low)
    {
      char *end;
      long v = strtol (low, &end, 10);
      if (*end == '\0' && v >= 1 && v <= 3600)
        r->low_speed_timeout_s = v;
    }
  r->request_timeout_s = opts->request_timeout_s > 0 ? opts->request_timeout_s : REG_DEFAULT_REQUEST_TIMEOUT_S;
  const char *req = getenv ("OHBOX_REQUEST_TIMEOUT");
  if (opts->request_timeout_s <= 0 && req && *req)
    {
      char *end;
      long v = strtol (req, &end, 10);
      if (*end == '\0' && v >= 1 && v <= 3600)
        r->request_timeout_s = v;
    }
  r->deadline = opts->deadline;
  r->timeout_s = opts->timeout_s;
  r->auth_json = opts->auth_json ? xstrdup (opts->auth_json) : NULL;
  r->auth_json_name = xstrdup (opts->auth_json_name ? opts->auth_json_name : "credentials in memory");
  r->no_default_authfiles = opts->no_default_authfiles;
  r->user_agent = xstrdup (opts->user_agent ? opts->user_agent : "ohbox/" PACKAGE_VERSION);

  r->easy = curl_easy_init ();
  r->share = curl_share_init ();
  if (r->easy == NULL || r->share == NULL)
    abort ();
  /* One object is used by one thread at a time: no lock callbacks needed. */
  curl_share_setopt (r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt (r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);

  if (load_tls_material (r, opts->cert_dir, err) < 0)
    {
      ohbox_registry_free (r);
      return ohbox_error_prefix (err, "registry `%s`", host);
    }
  *out = r;
  return 0;
}

void
ohbox_registry_free (struct ohbox_registry *r)
{
  if (r == NULL)
    return;
  reg_auth_clear (r);
  if (r->easy)
    curl_easy_cleanup (r->easy);
  if (r->share)
    curl_share_cleanup (r->share);
  ohbox_buf_free (&r->ca_blob);
  free (r->client_cert);
  free (r->client_key);
  ohbox_credentials_free (r->opt_creds);
  free (r->authfile);
  if (r->auth_json)
    explicit_bzero (r->auth_json, strlen (r->auth_json));
  free (r->auth_json);
  free (r->auth_json_name);
  free (r->user_agent);
  free (r->base_url);
  free (r->display);
  free (r->host);
  free (r);
}

bool
ohbox_registry_used_credentials (const struct ohbox_registry *r)
{
  return r->creds_used;
}

/* ---- ping ---- */

static int
discard_data (struct reg_xfer *x, const char *data, size_t len)
{
  (void) x;
  (void) data;
  (void) len;
  return 0;
}

static int
ping_one (struct ohbox_registry *r, const char *scheme, ohbox_error_t *err)
{
  cleanup_free char *base = xasprintf ("%s://%s", scheme, r->host);
  cleanup_free char *url = xasprintf ("%s/v2/", base);
  free (r->base_url);
  r->base_url = xstrdup (base);
  struct reg_xfer x;
  reg_xfer_init (&x, r, r->easy, url);
  x.on_data = discard_data;
  int ret = reg_run (&x, false, err);
  if (ret == 0 && x.resp.status != 200 && x.resp.status != 401)
    ret = ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "`%s` does not look like a registry: GET /v2/ answered HTTP %ld",
                       r->display, x.resp.status);
  if (ret == 0 && x.resp.status == 401 && x.resp.www_authenticate)
    {
      /* Learn how to authenticate; an unusable challenge is reported by the
       * request that needs it, not by the ping. */
      struct ohbox_auth_challenge c;
      ohbox_error_t ignored = NULL;
      if (ohbox_auth_challenge_parse (x.resp.www_authenticate, &c, &ignored) == 0)
        {
          ohbox_auth_challenge_clear (&r->challenge);
          r->challenge = c;
        }
      ohbox_error_release (&ignored);
    }
  reg_xfer_clear (&x);
  if (ret < 0)
    {
      free (r->base_url);
      r->base_url = NULL;
    }
  return ret;
}

int
ohbox_registry_ping (struct ohbox_registry *r, ohbox_error_t *err)
{
  ohbox_error_t https_err = NULL;
  if (ping_one (r, "https", &https_err) == 0)
    return 0;
  if (!r->insecure)
    {
      ohbox_error_move (err, &https_err);
      return ohbox_error_prefix (err, "ping registry `%s`", r->display);
    }
  /* Insecure registries may speak plain HTTP. */
  ohbox_error_t http_err = NULL;
  if (ping_one (r, "http", &http_err) == 0)
    {
      ohbox_error_release (&https_err);
      return 0;
    }
  ohbox_error (err, http_err->kind, 0, "ping registry `%s`: %s (and over https: %s)", r->display, http_err->msg,
               https_err->msg);
  ohbox_error_release (&http_err);
  ohbox_error_release (&https_err);
  return -1;
}

static int
ensure_pinged (struct ohbox_registry *r, ohbox_error_t *err)
{
  if (r->base_url != NULL)
    return 0;
  return ohbox_registry_ping (r, err);
}

/* ---- manifests and small blobs ---- */

/* The media type without parameters ("application/json; charset=utf-8" -> "application/json"). */
static char *
bare_media_type (const char *ct)
{
  if (ct == NULL)
    return NULL;
  size_t n = strcspn (ct, "; \t");
  return n ? xstrndup (ct, n) : NULL;
}

int
ohbox_registry_get_manifest (struct ohbox_registry *r, const char *repository, const char *ref, char **body,
                             size_t *len, char **content_type, char digest_out[OHBOX_DIGEST_LEN + 1],
                             ohbox_error_t *err)
{
  *body = NULL;
  if (content_type)
    *content_type = NULL;
  bool by_digest = ref != NULL && strncmp (ref, "sha256:", 7) == 0;
  if (validate_repository (repository, err) < 0)
    return -1;
  if (by_digest ? ohbox_digest_validate (ref, err) < 0 : validate_tag (ref, err) < 0)
    return -1;
  if (ensure_pinged (r, err) < 0)
    return -1;

  char sep = by_digest ? '@' : ':';
  cleanup_free char *url = xasprintf ("%s/v2/%s/manifests/%s", r->base_url, repository, ref);
  cleanup_free char *what = xasprintf ("manifest of `%s/%s%c%s`", r->display, repository, sep, ref);
  struct ohbox_buf buf = { 0 };
  struct reg_response resp = { 0 };
  bool creds_sent = false;
  if (reg_get (r, repository, url, OCI_MANIFEST_ACCEPT, OCI_MAX_MANIFEST_SIZE, what, &buf, &resp, &creds_sent, err) < 0)
    return ohbox_error_prefix (err, "get manifest %s/%s%c%s", r->display, repository, sep, ref);
  int ret = 0;
  if (resp.status == 404)
    ret = ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "manifest unknown: %s/%s%c%s not found", r->display, repository,
                       sep, ref);
  else if (resp.status < 200 || resp.status >= 300)
    ret = reg_status_error (r, repository, what, &resp, creds_sent, err);
  if (ret == 0)
    {
      char digest[OHBOX_DIGEST_LEN + 1];
      ohbox_sha256_buffer (buf.data, buf.len, digest);
      if (by_digest && strcmp (digest, ref) != 0)
        ret = ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "manifest %s/%s@%s: the registry sent content with digest %s",
                           r->display, repository, ref, digest);
      else if (!by_digest && resp.content_digest && ohbox_digest_is_valid (resp.content_digest)
               && strcmp (digest, resp.content_digest) != 0)
        /* By tag the content cannot be checked against the reference, but
         * the registry says what it sent: a manifest changed on the way
         * (or a registry contradicting itself) is refused. Other
         * algorithms than sha256 are not compared. */
        ret = ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                           "manifest %s/%s:%s: the content hashes to %s, but the registry's Docker-Content-Digest "
                           "says %s",
                           r->display, repository, ref, digest, resp.content_digest);
      else
        {
          if (digest_out)
            memcpy (digest_out, digest, sizeof digest);
          if (content_type)
            *content_type = bare_media_type (resp.content_type);
          *len = buf.len;
          *body = steal_pointer (&buf.data);
        }
    }
  ohbox_buf_free (&buf);
  reg_response_clear (&resp);
  return ret;
}

int
ohbox_registry_get_blob (struct ohbox_registry *r, const char *repository, const char *digest, size_t max, char **body,
                         size_t *len, ohbox_error_t *err)
{
  *body = NULL;
  if (validate_repository (repository, err) < 0 || ohbox_digest_validate (digest, err) < 0)
    return -1;
  if (ensure_pinged (r, err) < 0)
    return -1;
  cleanup_free char *url = xasprintf ("%s/v2/%s/blobs/%s", r->base_url, repository, digest);
  cleanup_free char *what = xasprintf ("blob %s of `%s/%s`", digest, r->display, repository);
  struct ohbox_buf buf = { 0 };
  struct reg_response resp = { 0 };
  bool creds_sent = false;
  if (reg_get (r, repository, url, NULL, max, what, &buf, &resp, &creds_sent, err) < 0)
    return ohbox_error_prefix (err, "get blob %s from %s/%s", digest, r->display, repository);
  int ret = 0;
  if (resp.status == 404)
    ret = ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "blob unknown: %s not found in %s/%s", digest, r->display,
                       repository);
  else if (resp.status < 200 || resp.status >= 300)
    ret = reg_status_error (r, repository, what, &resp, creds_sent, err);
  if (ret == 0)
    {
      char got[OHBOX_DIGEST_LEN + 1];
      ohbox_sha256_buffer (buf.data, buf.len, got);
      if (strcmp (got, digest) != 0)
        ret = ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "blob %s from %s/%s: the registry sent content with digest %s",
                           digest, r->display, repository, got);
      else
        {
          *len = buf.len;
          *body = steal_pointer (&buf.data);
        }
    }
  ohbox_buf_free (&buf);
  reg_response_clear (&resp);
  return ret;
}

int
reg_prepare_repository (struct ohbox_registry *r, const char *repository, ohbox_error_t *err)
{
  if (validate_repository (repository, err) < 0)
    return -1;
  return ensure_pinged (r, err);
}
