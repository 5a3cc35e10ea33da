/* test-authfile: auth.json lookup, parsing and updates (authfile.c). Every
 * test points the environment ($HOME, $REGISTRY_AUTH_FILE, $XDG_*) at files
 * in a private temporary directory. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>

#include "registry/authfile.h"
#include "unit.h"
#include "common/utils.h"

static char tmpdir[] = "/tmp/test-authfile-XXXXXX";

/* Writes TEXT to tmpdir/NAME (creating parent directories); returns the path. */
static char *
put_file (const char *name, const char *text)
{
  char *path = xasprintf ("%s/%s", tmpdir, name);
  char *slash = strrchr (path, '/');
  *slash = '\0';
  ohbox_error_t e = NULL;
  if (ohbox_mkdir_p (AT_FDCWD, path, 0700, &e) < 0)
    abort ();
  *slash = '/';
  FILE *f = fopen (path, "w");
  if (f == NULL)
    abort ();
  fputs (text, f);
  fclose (f);
  return path;
}

/* A clean environment: nothing but the files a test creates is found. */
static void
reset_env (void)
{
  char *home = xasprintf ("%s/home", tmpdir);
  char *runtime = xasprintf ("%s/run", tmpdir);
  char *config = xasprintf ("%s/config", tmpdir);
  setenv ("HOME", home, 1);
  setenv ("XDG_RUNTIME_DIR", runtime, 1);
  setenv ("XDG_CONFIG_HOME", config, 1);
  unsetenv ("REGISTRY_AUTH_FILE");
  unsetenv ("DOCKER_CONFIG");
  free (home);
  free (runtime);
  free (config);
  ohbox_error_t e = NULL;
  /* Start every test from an empty directory tree. */
  if (ohbox_rm_rf_at (AT_FDCWD, tmpdir, &e) < 0 || mkdir (tmpdir, 0700) < 0)
    abort ();
}

/* Looks up REGISTRY/REPO; returns NULL when the result is USER:PASS (or no
 * credentials when USER is NULL), else a description of what was found. */
static char *
creds_mismatch (const char *authfile, const char *registry, const char *repo, const char *user, const char *pass)
{
  struct ohbox_credentials *c = NULL;
  ohbox_error_t e = NULL;
  char *why = NULL;
  if (ohbox_authfile_lookup (authfile, registry, repo, &c, &e) < 0)
    why = xasprintf ("lookup %s/%s failed: %s", registry, repo, e->msg);
  else if (user == NULL && c != NULL)
    why = xasprintf ("%s/%s: expected no credentials, got %s", registry, repo, c->username);
  else if (user != NULL && c == NULL)
    why = xasprintf ("%s/%s: no credentials, expected %s", registry, repo, user);
  else if (user != NULL && (strcmp (c->username, user) != 0 || strcmp (c->password, pass) != 0))
    why = xasprintf ("%s/%s: got %s:%s, expected %s:%s", registry, repo, c->username, c->password, user, pass);
  ohbox_credentials_free (c);
  ohbox_error_release (&e);
  return why;
}

#define EXPECT_CREDS(authfile, registry, repo, user, pass)                                                             \
  do                                                                                                                   \
    {                                                                                                                  \
      cleanup_free char *_why = creds_mismatch ((authfile), (registry), (repo), (user), (pass));                       \
      CHECK (_why == NULL, "%s", _why);                                                                                \
    }                                                                                                                  \
  while (0)

/* Expects the lookup to fail with KIND and a message containing WHAT. */
#define EXPECT_LOOKUP_ERROR(authfile, registry, want_kind, what)                                                       \
  do                                                                                                                   \
    {                                                                                                                  \
      struct ohbox_credentials *_c = NULL;                                                                             \
      ohbox_error_t _e = NULL;                                                                                         \
      int _r = ohbox_authfile_lookup ((authfile), (registry), "repo", &_c, &_e);                                       \
      ohbox_credentials_free (_c);                                                                                     \
      CHECK (_r < 0 && _e != NULL, "lookup of %s should fail", (registry));                                            \
      int _ok = _e->kind == (want_kind) && strstr (_e->msg, (what)) != NULL;                                           \
      if (!_ok)                                                                                                        \
        unit_fail_at (__FILE__, __LINE__, "kind %d, message: %s (expected kind %d and `%s`)", _e->kind, _e->msg,       \
                      (want_kind), (what));                                                                            \
      ohbox_error_release (&_e);                                                                                       \
      if (!_ok)                                                                                                        \
        return;                                                                                                        \
    }                                                                                                                  \
  while (0)

/* base64 of "user:pass" strings used below:
 *   a:1 YTox        b:2 Yjoy        c:3 Yzoz        d:4 ZDo0        e:5 ZTo1
 *   u:p:w:d dTpwOnc6ZA==  ("p:w:d" has colons)     f:6 Zjo2 */

static void
test_credentials_parse (void)
{
  struct ohbox_credentials *c = NULL;
  ohbox_error_t e = NULL;
  CHECK (ohbox_credentials_parse ("alice:s3:cr:et", &c, &e) == 0);
  CHECK_STR (c->username, "alice");
  CHECK_STR (c->password, "s3:cr:et");
  ohbox_credentials_free (c);
  c = NULL;
  CHECK (ohbox_credentials_parse ("bob:", &c, &e) == 0);
  CHECK_STR (c->password, "");
  ohbox_credentials_free (c);
  c = NULL;
  CHECK (ohbox_credentials_parse ("nocolon", &c, &e) < 0 && e->kind == OHBOX_ERR_USAGE);
  CHECK (strstr (e->msg, "USERNAME:PASSWORD") != NULL, "%s", e->msg);
  ohbox_error_release (&e);
  CHECK (ohbox_credentials_parse (":pass", &c, &e) < 0 && c == NULL);
  ohbox_error_release (&e);
  CHECK (ohbox_credentials_parse ("u:p\nx", &c, &e) < 0 && c == NULL);
  ohbox_error_release (&e);
}

static void
test_lookup_order (void)
{
  reset_env ();
  char *explicit_file = put_file ("explicit.json", "{\"auths\":{\"reg.a\":{\"auth\":\"ZTo1\"}}}");
  char *env_file = put_file ("env.json", "{\"auths\":{\"reg.a\":{\"auth\":\"YTox\"}}}");
  free (
    put_file ("run/containers/auth.json", "{\"auths\":{\"reg.a\":{\"auth\":\"Zjo2\"},\"reg.b\":{\"auth\":\"Yjoy\"}}}"));
  free (put_file ("config/containers/auth.json",
                  "{\"auths\":{\"reg.b\":{\"auth\":\"Zjo2\"},\"reg.c\":{\"auth\":\"Yzoz\"}}}"));
  free (
    put_file ("home/.docker/config.json", "{\"auths\":{\"reg.c\":{\"auth\":\"Zjo2\"},\"reg.d\":{\"auth\":\"ZDo0\"}}}"));
  setenv ("REGISTRY_AUTH_FILE", env_file, 1);

  EXPECT_CREDS (NULL, "reg.a", "x/y", "a", "1"); /* $REGISTRY_AUTH_FILE first */
  EXPECT_CREDS (NULL, "reg.b", "x/y", "b", "2"); /* then $XDG_RUNTIME_DIR/containers */
  EXPECT_CREDS (NULL, "reg.c", "x/y", "c", "3"); /* then $XDG_CONFIG_HOME/containers */
  EXPECT_CREDS (NULL, "reg.d", "x/y", "d", "4"); /* then ~/.docker/config.json */
  EXPECT_CREDS (NULL, "reg.e", "x/y", NULL, NULL);
  /* --authfile comes before everything, and falls through when it has no entry. */
  EXPECT_CREDS (explicit_file, "reg.a", "x/y", "e", "5");
  EXPECT_CREDS (explicit_file, "reg.b", "x/y", "b", "2");

  /* $DOCKER_CONFIG replaces ~/.docker. */
  free (put_file ("dockercfg/config.json", "{\"auths\":{\"reg.d\":{\"auth\":\"Zjo2\"}}}"));
  char *dc = xasprintf ("%s/dockercfg", tmpdir);
  setenv ("DOCKER_CONFIG", dc, 1);
  EXPECT_CREDS (NULL, "reg.d", "x/y", "f", "6");
  free (dc);

  /* A missing --authfile is an error; missing default files are not. */
  char *missing = xasprintf ("%s/nope.json", tmpdir);
  EXPECT_LOOKUP_ERROR (missing, "reg.a", OHBOX_ERR_NOT_FOUND, "nope.json");
  free (missing);
  free (explicit_file);
  free (env_file);
}

/* One lookup through ohbox_authfile_lookup_in: USER (NULL: none expected). */
static void
expect_in (const struct ohbox_auth_sources *src, const char *registry, const char *user, const char *pass)
{
  struct ohbox_credentials *c = NULL;
  ohbox_error_t e = NULL;
  CHECK (ohbox_authfile_lookup_in (src, registry, "x/y", &c, &e) == 0, "lookup %s: %s", registry, e ? e->msg : "");
  if (user == NULL)
    CHECK (c == NULL, "%s: expected no credentials, got %s", registry, c->username);
  else
    {
      CHECK (c != NULL, "%s: no credentials, expected %s", registry, user);
      CHECK_STR (c->username, user);
      CHECK_STR (c->password, pass);
    }
  ohbox_credentials_free (c);
}

/* A CI job's own credentials: a document in memory first, then --authfile,
 * then (unless no_defaults) the user's files; ohbox_auth_json_add keeps
 * the first entry for a registry, in whatever spelling. */
static void
test_sources_in_memory (void)
{
  reset_env ();
  free (
    put_file ("home/.docker/config.json", "{\"auths\":{\"reg.a\":{\"auth\":\"Zjo2\"},\"reg.b\":{\"auth\":\"Yjoy\"}}}"));
  char *explicit_file = put_file ("explicit.json", "{\"auths\":{\"reg.c\":{\"auth\":\"Yzoz\"}}}");
  json_t *doc = json_loads ("{\"auths\":{\"https://reg.a/\":{\"auth\":\"YTox\"}}}", 0, NULL);
  ohbox_error_t e = NULL;
  CHECK (ohbox_auth_json_add (doc, "reg.a", "z", "9", &e) == 0); /* kept: reg.a has one */
  CHECK (ohbox_auth_json_add (doc, "reg.d:5000", "d", "4", &e) == 0);
  CHECK (ohbox_auth_json_add (doc, "reg.e", "bad:user", "x", &e) < 0 && e->kind == OHBOX_ERR_USAGE);
  ohbox_error_release (&e);
  char *text = json_dumps (doc, JSON_COMPACT);
  json_decref (doc);

  struct ohbox_auth_sources src = { .json = text, .json_name = "the job's", .authfile = explicit_file };
  expect_in (&src, "reg.a", "a", "1");
  expect_in (&src, "reg.d:5000", "d", "4");
  expect_in (&src, "reg.c", "c", "3");
  expect_in (&src, "reg.b", "b", "2"); /* the user's file */
  src.no_defaults = true;
  expect_in (&src, "reg.b", NULL, NULL);
  expect_in (&src, "reg.a", "a", "1");
  setenv ("REGISTRY_AUTH_FILE", explicit_file, 1);
  src.authfile = NULL;
  expect_in (&src, "reg.c", NULL, NULL); /* $REGISTRY_AUTH_FILE is a default too */

  struct ohbox_auth_sources bad = { .json = "{\"auths\": []}", .json_name = "the job's" };
  struct ohbox_credentials *c = NULL;
  CHECK (ohbox_authfile_lookup_in (&bad, "reg.a", "x", &c, &e) < 0 && e->kind == OHBOX_ERR_USAGE);
  CHECK (strstr (e->msg, "the job's") != NULL, "%s", e->msg);
  ohbox_error_release (&e);
  free (text);
  free (explicit_file);
}

static void
test_docker_keys (void)
{
  reset_env ();
  free (put_file ("home/.docker/config.json", "{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"YTox\"},"
                                              "\"http://reg.local:5000/v2/\":{\"auth\":\"Yjoy\"},"
                                              "\"https://quay.io\":{\"auth\":\"Yzoz\"}}}"));
  EXPECT_CREDS (NULL, "docker.io", "library/busybox", "a", "1");
  EXPECT_CREDS (NULL, "registry-1.docker.io", "library/busybox", "a", "1");
  EXPECT_CREDS (NULL, "index.docker.io", "x/y", "a", "1");
  EXPECT_CREDS (NULL, "reg.local:5000", "ns/img", "b", "2");
  EXPECT_CREDS (NULL, "reg.local", "ns/img", NULL, NULL); /* the port matters */
  EXPECT_CREDS (NULL, "quay.io", "org/app", "c", "3");
}

static void
test_repository_keys (void)
{
  reset_env ();
  char *f = put_file ("auth.json", "{\"auths\":{"
                                   "\"reg:5000\":{\"auth\":\"YTox\"},"
                                   "\"reg:5000/ns\":{\"auth\":\"Yjoy\"},"
                                   "\"reg:5000/ns/img/\":{\"auth\":\"Yzoz\"},"
                                   "\"docker.io/library\":{\"auth\":\"ZDo0\"}}}");
  EXPECT_CREDS (f, "reg:5000", "ns/img", "c", "3");
  EXPECT_CREDS (f, "reg:5000", "ns/img/sub", "c", "3");
  EXPECT_CREDS (f, "reg:5000", "ns/other", "b", "2");
  EXPECT_CREDS (f, "reg:5000", "nsx/img", "a", "1"); /* "ns" only at a '/' boundary */
  EXPECT_CREDS (f, "reg:5000", "other", "a", "1");
  EXPECT_CREDS (f, "registry-1.docker.io", "library/busybox", "d", "4");
  EXPECT_CREDS (f, "docker.io", "someone/busybox", NULL, NULL);
  free (f);
}

static void
test_base64_forms (void)
{
  reset_env ();
  /* A password with ':' and unpadded base64 ("dTpwOnc6ZA" without "=="). */
  char *f = put_file ("auth.json", "{\"auths\":{\"r1\":{\"auth\":\"dTpwOnc6ZA==\"},\"r2\":{\"auth\":\"dTpwOnc6ZA\"}}}");
  EXPECT_CREDS (f, "r1", "x", "u", "p:w:d");
  EXPECT_CREDS (f, "r2", "x", "u", "p:w:d");
  free (f);
}

static void
test_malformed (void)
{
  reset_env ();
  /* One mistake a file; the error names the file or the mistake. */
  static const struct
  {
    const char *name, *text, *what;
  } bad[] = {
    { "bad.json", "{\"auths\": {\"r\": {\"auth\": \"YTox\"}\n,,}", "bad.json`: line 2" },
    { "bad2.json", "{\"auths\": []}", "`auths` must be an object" },
    { "bad3.json", "{\"auths\": {\"r\": {\"auth\": \"!!!notbase64\"}}}", "entry `r` is not valid base64" },
    { "bad4.json", "{\"auths\": {\"r\": {\"auth\": \"bm9jb2xvbg==\"}}}" /* "nocolon" */,
      "base64 of USERNAME:PASSWORD" },
    { "bad5.json", "{\"auths\": {\"r\": {\"auth\": 12}}}", "must be a string" },
    { "bad6.json", "[1, 2]", "expected a JSON object" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      char *f = put_file (bad[i].name, bad[i].text);
      EXPECT_LOOKUP_ERROR (f, "r", OHBOX_ERR_USAGE, bad[i].what);
      free (f);
    }
  /* Malformed files in the default locations are reported too, not skipped. */
  free (put_file ("run/containers/auth.json", "not json"));
  EXPECT_LOOKUP_ERROR (NULL, "r", OHBOX_ERR_USAGE, "run/containers/auth.json");
}

static void
test_credential_helpers (void)
{
  reset_env ();
  char *f = put_file ("helpers.json", "{\"auths\":{},\"credHelpers\":{\"gcr.io\":\"gcloud\"}}");
  EXPECT_LOOKUP_ERROR (f, "gcr.io", OHBOX_ERR_UNSUPPORTED, "docker-credential-gcloud");
  EXPECT_CREDS (f, "other.io", "x", NULL, NULL);
  free (f);
  f = put_file ("store.json", "{\"auths\":{\"reg.io\":{}},\"credsStore\":\"desktop\"}");
  EXPECT_LOOKUP_ERROR (f, "reg.io", OHBOX_ERR_UNSUPPORTED, "docker-credential-desktop");
  /* credsStore alone does not hide registries it has no entry for. */
  EXPECT_CREDS (f, "other.io", "x", NULL, NULL);
  free (f);
}

static int
count_entries (const char *dir)
{
  DIR *d = opendir (dir);
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      n++;
  closedir (d);
  return n;
}

static void
test_store_and_remove (void)
{
  reset_env ();
  char *f = put_file ("login/auth.json", "{\"auths\":{\"keep.io\":{\"auth\":\"YTox\"},"
                                         "\"https://index.docker.io/v1/\":{\"auth\":\"Yjoy\"}},"
                                         "\"HttpHeaders\":{\"X-Keep\":\"1\"}}");
  chmod (f, 0644);
  struct ohbox_credentials creds = { .username = (char *) "new", .password = (char *) "pa:ss" };
  ohbox_error_t e = NULL;
  CHECK (ohbox_authfile_store (f, "new.io:5000", &creds, &e) == 0, "%s", e ? e->msg : "");
  /* docker.io replaces the legacy key for the same registry. */
  CHECK (ohbox_authfile_store (f, "docker.io", &creds, &e) == 0, "%s", e ? e->msg : "");

  struct stat st;
  CHECK (stat (f, &st) == 0);
  CHECK ((st.st_mode & 07777) == 0600, "mode %o", st.st_mode & 07777);
  char *dir = xasprintf ("%s/login", tmpdir);
  int n = count_entries (dir);
  free (dir);
  CHECK (n == 1, "%d files in the directory: a temporary file was left behind", n);

  EXPECT_CREDS (f, "new.io:5000", "x", "new", "pa:ss");
  EXPECT_CREDS (f, "keep.io", "x", "a", "1");
  EXPECT_CREDS (f, "docker.io", "library/x", "new", "pa:ss");

  json_error_t jerr;
  json_t *j = json_load_file (f, 0, &jerr);
  CHECK (j != NULL);
  int kept = json_object_get (json_object_get (j, "HttpHeaders"), "X-Keep") != NULL;
  int legacy = json_object_get (json_object_get (j, "auths"), "https://index.docker.io/v1/") != NULL;
  json_decref (j);
  CHECK (kept, "other top-level keys must be kept");
  CHECK (!legacy, "the legacy key for docker.io must be replaced");

  CHECK (ohbox_authfile_remove (f, "new.io:5000", &e) == 1, "%s", e ? e->msg : "");
  CHECK (ohbox_authfile_remove (f, "new.io:5000", &e) == 0);
  EXPECT_CREDS (f, "new.io:5000", "x", NULL, NULL);
  EXPECT_CREDS (f, "keep.io", "x", "a", "1");
  CHECK (stat (f, &st) == 0 && (st.st_mode & 07777) == 0600);

  /* Removing from a missing file is not an error. */
  char *missing = xasprintf ("%s/none/auth.json", tmpdir);
  CHECK (ohbox_authfile_remove (missing, "x.io", &e) == 0);
  /* Storing creates the file and its directory. */
  CHECK (ohbox_authfile_store (missing, "x.io", &creds, &e) == 0, "%s", e ? e->msg : "");
  EXPECT_CREDS (missing, "x.io", "y", "new", "pa:ss");
  free (missing);
  free (f);
}

static void
test_store_refuses_malformed (void)
{
  reset_env ();
  const char *text = "{\"auths\": broken";
  char *f = put_file ("auth.json", text);
  struct ohbox_credentials creds = { .username = (char *) "u", .password = (char *) "p" };
  ohbox_error_t e = NULL;
  CHECK (ohbox_authfile_store (f, "r.io", &creds, &e) < 0 && e != NULL);
  CHECK (strstr (e->msg, "auth.json") != NULL, "%s", e->msg);
  ohbox_error_release (&e);
  char *back = NULL;
  CHECK (ohbox_read_file_at (AT_FDCWD, f, 1024, &back, NULL, &e) == 0);
  int same = strcmp (back, text) == 0;
  free (back);
  free (f);
  CHECK (same, "a malformed file must be left as it was");
}

static void
test_default_path (void)
{
  reset_env ();
  char *p = ohbox_authfile_default_path ("/x/explicit.json");
  int ok = strcmp (p, "/x/explicit.json") == 0;
  free (p);
  CHECK (ok);
  setenv ("REGISTRY_AUTH_FILE", "/x/env.json", 1);
  p = ohbox_authfile_default_path (NULL);
  ok = strcmp (p, "/x/env.json") == 0;
  free (p);
  CHECK (ok);
  unsetenv ("REGISTRY_AUTH_FILE");
  p = ohbox_authfile_default_path (NULL);
  char *want = xasprintf ("%s/run/containers/auth.json", tmpdir);
  ok = strcmp (p, want) == 0;
  free (p);
  free (want);
  CHECK (ok);
  unsetenv ("XDG_RUNTIME_DIR");
  p = ohbox_authfile_default_path (NULL);
  want = xasprintf ("/run/containers/%u/auth.json", (unsigned) getuid ());
  ok = strcmp (p, want) == 0;
  free (p);
  free (want);
  CHECK (ok);
}

UNIT_MAIN_BEGIN ("test-authfile")
if (mkdtemp (tmpdir) == NULL)
  {
    printf ("FAIL: test-authfile: mkdtemp failed\n");
    return 1;
  }
RUN_TEST (test_credentials_parse);
RUN_TEST (test_sources_in_memory);
RUN_TEST (test_lookup_order);
RUN_TEST (test_docker_keys);
RUN_TEST (test_repository_keys);
RUN_TEST (test_base64_forms);
RUN_TEST (test_malformed);
RUN_TEST (test_credential_helpers);
RUN_TEST (test_store_and_remove);
RUN_TEST (test_store_refuses_malformed);
RUN_TEST (test_default_path);
ohbox_rm_rf_at (AT_FDCWD, tmpdir, NULL);
UNIT_MAIN_END
