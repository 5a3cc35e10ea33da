/* ci_gitlab_job.c: who the job of an `ohbox ci gitlab` stage is, which
 * sandboxes it owns, and its registry credentials (see ci_gitlab.h).
 *
 * A job can set any of its variables (CUSTOM_ENV_*), CI_JOB_ID and
 * CI_CONCURRENT_ID included, so none of them may name a sandbox: a job that
 * claimed another running job's id would otherwise have its prepare remove
 * that job's sandbox and put its own image in its place. The job's id comes
 * from the job response the runner writes ($JOB_RESPONSE_FILE), config makes
 * the sandbox's name (the id and random bits) and a secret key, and the
 * runner hands both to the later stages through job_env, as variables a job
 * cannot set. prepare records, for each sandbox it starts, the sha256 of the
 * key; run and cleanup touch a sandbox only when the key they were given
 * matches that record. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ci_gitlab.h"
#include "cli.h"

#define OWN_DIR "ci-gitlab"
#define OWN_RECORD_MAX (64 * 1024)
/* Past the job's timeout: the time the runner has for its cleanup. */
#define EXPIRY_MARGIN_S 3600.0
/* A job response without a timeout: GitLab's longest is a month. */
#define EXPIRY_UNKNOWN_S (31 * 86400.0)

static void
cleanup_json_fn (json_t **j)
{
  json_decref (*j);
}
#define cleanup_json __attribute__ ((cleanup (cleanup_json_fn)))

/* ---- the job ---- */

int
ci_job_response (json_t **ret, ohbox_error_t *err)
{
  *ret = NULL;
  const char *file = getenv ("JOB_RESPONSE_FILE");
  if (file == NULL || *file == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "`JOB_RESPONSE_FILE` is not set: ohbox ci gitlab runs under GitLab Runner's custom "
                        "executor, whose job response file says which job this is");
  cleanup_free char *text = NULL;
  size_t len;
  if (ohbox_read_file_at (AT_FDCWD, file, CI_JOB_RESPONSE_MAX, &text, &len, err) < 0)
    return ohbox_error_prefix (err, "read the job response (JOB_RESPONSE_FILE)");
  json_error_t je;
  json_t *job = json_loadb (text, len, 0, &je);
  explicit_bzero (text, len); /* it holds the job's token */
  if (job == NULL || !json_is_object (job))
    {
      json_decref (job);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "parse the job response `%s`: %s", file,
                          job ? "not a JSON object" : je.text);
    }
  *ret = job;
  return 0;
}

static int
random_hex (char *out, size_t n_bytes, ohbox_error_t *err)
{
  unsigned char r[64];
  if (n_bytes > sizeof r || getrandom (r, n_bytes, 0) != (ssize_t) n_bytes)
    return ohbox_error_errno (err, "getrandom");
  for (size_t i = 0; i < n_bytes; i++)
    sprintf (out + 2 * i, "%02x", r[i]);
  explicit_bzero (r, sizeof r);
  return 0;
}

int
ci_job_new (json_t *response, struct ci_job *job, ohbox_error_t *err)
{
  json_t *id = json_object_get (response, "id");
  if (!json_is_integer (id) || json_integer_value (id) <= 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the job response has no job `id`");
  /* The random part keeps two GitLab instances' jobs of the same id (one
   * host, two runners) apart, and a name from being guessed ahead. */
  char rnd[9];
  if (random_hex (rnd, 4, err) < 0 || random_hex (job->key, CI_KEY_HEX / 2, err) < 0)
    return -1;
  snprintf (job->name, sizeof job->name, "gitlab-%lld-%s", (long long) json_integer_value (id), rnd);
  return 0;
}

static bool
all_hex (const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return s[n] == '\0';
}

/* gitlab-DIGITS-8HEX, as ci_job_new makes them. */
static bool
valid_name (const char *s)
{
  if (strncmp (s, "gitlab-", 7) != 0)
    return false;
  const char *p = s + 7;
  size_t digits = strspn (p, "0123456789");
  return digits > 0 && digits <= 20 && p[digits] == '-' && all_hex (p + digits + 1, 8);
}

int
ci_job_from_env (struct ci_job *job, ohbox_error_t *err)
{
  const char *name = getenv (CI_ENV_SANDBOX);
  const char *key = getenv (CI_ENV_KEY);
  if (name == NULL || key == NULL || *name == '\0' || *key == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "`%s` and `%s` are not set: the runner's config_exec must be `ohbox ci gitlab config`, "
                        "whose job_env hands them to the later stages (contrib/gitlab-runner/config.toml)",
                        CI_ENV_SANDBOX, CI_ENV_KEY);
  if (!valid_name (name) || strlen (key) != CI_KEY_HEX || !all_hex (key, CI_KEY_HEX))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` or `%s` is not what `ohbox ci gitlab config` made",
                        CI_ENV_SANDBOX, CI_ENV_KEY);
  snprintf (job->name, sizeof job->name, "%s", name);
  memcpy (job->key, key, CI_KEY_HEX + 1);
  return 0;
}

double
ci_job_expiry (json_t *response)
{
  json_t *t = json_object_get (json_object_get (response, "runner_info"), "timeout");
  double timeout = json_is_integer (t) && json_integer_value (t) > 0 ? (double) json_integer_value (t)
                                                                     : EXPIRY_UNKNOWN_S;
  return (double) time (NULL) + timeout + EXPIRY_MARGIN_S;
}

/* ---- the sandboxes a job owns ---- */

/* STATE/ci-gitlab, made on first use: only its owner may look in. */
static int
own_dir (struct ci_ctx *c, ohbox_error_t *err)
{
  cleanup_free char *root = ohbox_runtime_default_state_root (ohbox_store_root (c->store));
  cleanup_close int rfd = open (root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0)
    return ohbox_error_errno (err, "open the state directory `%s`", root);
  if (mkdirat (rfd, OWN_DIR, 0700) < 0 && errno != EEXIST)
    return ohbox_error_errno (err, "create `%s/" OWN_DIR "`", root);
  int fd = openat (rfd, OWN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s/" OWN_DIR "`", root);
  struct stat st;
  if (fstat (fd, &st) < 0 || st.st_uid != geteuid () || (st.st_mode & 0022))
    {
      close (fd);
      return ohbox_error (err, OHBOX_ERR_STORE, 0, "`%s/" OWN_DIR "` is not a private directory of this user", root);
    }
  return fd;
}

static void
key_hash (const struct ci_job *job, char out[OHBOX_DIGEST_LEN + 1])
{
  ohbox_sha256_buffer (job->key, CI_KEY_HEX, out);
}

int
ci_own_record (struct ci_ctx *c, const struct ci_job *job, const char *id, double expires, ohbox_error_t *err)
{
  cleanup_close int dfd = own_dir (c, err);
  if (dfd < 0)
    return -1;
  char hash[OHBOX_DIGEST_LEN + 1];
  key_hash (job, hash);
  cleanup_json json_t *rec = json_pack ("{s:s, s:s, s:I}", "name", job->name, "key_sha256", hash, "expires",
                                        (json_int_t) expires);
  cleanup_free char *text = json_dumps (rec, JSON_COMPACT);
  cleanup_free char *file = xasprintf ("%s.json", id);
  if (ohbox_write_file_atomic (dfd, file, text, strlen (text), 0600, err) < 0)
    return ohbox_error_prefix (err, "record sandbox `%s` as the job's", job->name);
  return 0;
}

static int
own_read (int dfd, const char *id, json_t **ret, ohbox_error_t *err)
{
  cleanup_free char *file = xasprintf ("%s.json", id);
  cleanup_free char *text = NULL;
  size_t len;
  if (ohbox_read_file_at (dfd, file, OWN_RECORD_MAX, &text, &len, err) < 0)
    return -1;
  *ret = json_loadb (text, len, 0, NULL);
  return *ret ? 0 : ohbox_error (err, OHBOX_ERR_STORE, 0, "`%s` is damaged", file);
}

/* Constant time: the comparison must not tell how much of a guess was right. */
static bool
same_secret (const char *a, const char *b, size_t n)
{
  unsigned char d = 0;
  for (size_t i = 0; i < n; i++)
    d |= (unsigned char) (a[i] ^ b[i]);
  return d == 0;
}

int
ci_own_check (struct ci_ctx *c, const struct ci_job *job, const char *id, const char *name, ohbox_error_t *err)
{
  cleanup_close int dfd = own_dir (c, err);
  if (dfd < 0)
    return -1;
  cleanup_json json_t *rec = NULL;
  cleanup_error ohbox_error_t e = NULL;
  bool ok = false;
  if (own_read (dfd, id, &rec, &e) == 0)
    {
      const char *stored = json_string_value (json_object_get (rec, "key_sha256"));
      char hash[OHBOX_DIGEST_LEN + 1];
      key_hash (job, hash);
      ok = stored && strlen (stored) == OHBOX_DIGEST_LEN && same_secret (stored, hash, OHBOX_DIGEST_LEN);
    }
  if (ok)
    return 0;
  return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                      "sandbox `%s` (%.12s) was not created by this job: refusing to use or remove it", name, id);
}

void
ci_own_forget (struct ci_ctx *c, const char *id)
{
  cleanup_error ohbox_error_t e = NULL;
  cleanup_close int dfd = own_dir (c, &e);
  cleanup_free char *file = xasprintf ("%s.json", id);
  if (dfd >= 0)
    unlinkat (dfd, file, 0);
}

/* "HEX64.json" */
static bool
record_id (const char *file, char id[65])
{
  size_t n = strlen (file);
  if (n != 64 + 5 || strcmp (file + 64, ".json") != 0)
    return false;
  memcpy (id, file, 64);
  id[64] = '\0';
  return all_hex (id, 64);
}

void
ci_own_collect (struct ci_ctx *c)
{
  cleanup_error ohbox_error_t e = NULL;
  int dfd = own_dir (c, &e);
  if (dfd < 0)
    return;
  cleanup_dir DIR *d = fdopendir (dfd);
  if (d == NULL)
    {
      close (dfd);
      return;
    }
  double now = (double) time (NULL);
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      char id[65];
      if (!record_id (de->d_name, id))
        continue;
      cleanup_free char *found = NULL;
      cleanup_error ohbox_error_t ignored = NULL;
      if (ohbox_sandbox_resolve (c->rt, id, &found, &ignored) < 0)
        {
          if (ignored->kind == OHBOX_ERR_NOT_FOUND)
            unlinkat (dirfd (d), de->d_name, 0);
          continue;
        }
      cleanup_json json_t *rec = NULL;
      if (own_read (dirfd (d), id, &rec, &ignored) < 0)
        continue;
      json_t *exp = json_object_get (rec, "expires");
      if (!json_is_integer (exp) || (double) json_integer_value (exp) > now)
        continue;
      /* The job's time is long up and its runner never cleaned up. */
      if (ohbox_sandbox_remove (c->rt, id, true, &ignored) == 0)
        {
          printf ("Removed sandbox %s (%.12s), left by a job whose time is up\n",
                  json_string_value (json_object_get (rec, "name")), id);
          unlinkat (dirfd (d), de->d_name, 0);
        }
    }
}

/* ---- credentials ---- */

/* $DOCKER_AUTH_CONFIG of the job: a Docker config.json document. Only its
 * "auths" count; credential helpers are never run (a job would choose a
 * program for the host to execute). */
static int
add_docker_auth_config (json_t *doc, ohbox_error_t *err)
{
  const char *text = getenv ("CUSTOM_ENV_DOCKER_AUTH_CONFIG");
  if (text == NULL || *text == '\0')
    return 0;
  json_error_t je;
  cleanup_json json_t *j = json_loads (text, JSON_REJECT_DUPLICATES, &je);
  json_t *auths = json_object_get (j, "auths");
  if (j == NULL || !json_is_object (j) || (auths && !json_is_object (auths)))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "the job's `DOCKER_AUTH_CONFIG` is not a Docker config.json document (`{\"auths\": {...}}`)");
  if (json_object_get (j, "credHelpers") || json_object_get (j, "credsStore"))
    ci_warn ("DOCKER_AUTH_CONFIG names credential helpers, which are not run");
  const char *key;
  json_t *v;
  json_object_foreach (auths, key, v) if (json_object_get (json_object_get (doc, "auths"), key) == NULL)
    json_object_set (json_object_get (doc, "auths"), key, v);
  return 0;
}

int
ci_job_auth_json (json_t *response, char **ret, ohbox_error_t *err)
{
  *ret = NULL;
  cleanup_json json_t *doc = json_pack ("{s:{}}", "auths");
  if (add_docker_auth_config (doc, err) < 0)
    return -1;
  json_t *creds = json_object_get (response, "credentials");
  for (size_t i = 0; json_is_array (creds) && i < json_array_size (creds); i++)
    {
      json_t *cr = json_array_get (creds, i);
      const char *type = json_string_value (json_object_get (cr, "type"));
      const char *url = json_string_value (json_object_get (cr, "url"));
      const char *user = json_string_value (json_object_get (cr, "username"));
      const char *pass = json_string_value (json_object_get (cr, "password"));
      if (type && strcmp (type, "registry") == 0 && url && user && pass
          && ohbox_auth_json_add (doc, url, user, pass, err) < 0)
        return ohbox_error_prefix (err, "the job response's credentials");
    }
  const char *reg = getenv ("CUSTOM_ENV_CI_REGISTRY");
  const char *user = getenv ("CUSTOM_ENV_CI_REGISTRY_USER");
  const char *pass = getenv ("CUSTOM_ENV_CI_REGISTRY_PASSWORD");
  if (reg && *reg && user && *user && pass && ohbox_auth_json_add (doc, reg, user, pass, err) < 0)
    return ohbox_error_prefix (err, "the job's CI_REGISTRY_USER");
  if (json_object_size (json_object_get (doc, "auths")) == 0)
    return 0;
  *ret = json_dumps (doc, JSON_COMPACT);
  return 0;
}
