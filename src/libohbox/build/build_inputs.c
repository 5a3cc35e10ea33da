/* build_inputs.c: what goes into a runtime image, found, digested and
 * cached (see build.h): the executor binary, its library closure, the
 * static bash, the executor source tree; and the dependency lock. */
#include "config.h"
#include "build/build.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/digest.h"
#include "common/utils.h"

#ifndef OHBOX_PKGDATADIR
#define OHBOX_PKGDATADIR "/usr/local/share/ohbox"
#endif
#ifndef OHBOX_PKGLIBEXECDIR
#define OHBOX_PKGLIBEXECDIR "/usr/local/libexec/ohbox"
#endif
#ifndef OHBOX_SRCDIR
#define OHBOX_SRCDIR "."
#endif
#ifndef OHBOX_BUILDDIR
#define OHBOX_BUILDDIR OHBOX_SRCDIR
#endif
#ifndef OHBOX_MHD_NOTLS_DIR
#define OHBOX_MHD_NOTLS_DIR "" /* configure's --with-mhd-notls */
#endif
#define MHD_SONAME "libmicrohttpd.so.12"

#define CACHE_FILE "build/cache.json"
#define CACHE_MAX (4 * 1024 * 1024)
#define CLOSURE_OUTPUT_MAX (64 * 1024)
#define CLOSURE_MAX_FILES 512

/* The first of the N candidates (NULL entries skipped) that
 * exists; WHAT and HINT make the error when none does. */
static int
first_existing (const char *const *cand, size_t n, const char *what, const char *hint, char **out, ohbox_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    if (cand[i] && *cand[i] && access (cand[i], F_OK) == 0)
      {
        *out = xstrdup (cand[i]);
        return 0;
      }
  struct ohbox_buf tried = { 0 };
  for (size_t i = 0; i < n; i++)
    if (cand[i] && *cand[i])
      {
        if (tried.len)
          ohbox_buf_append (&tried, ", ", 2);
        ohbox_buf_append (&tried, cand[i], strlen (cand[i]));
      }
  ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "%s not found (looked at %s); %s", what,
               tried.data ? tried.data : "nothing", hint);
  ohbox_buf_free (&tried);
  return -1;
}

static char *
stat_key (const struct stat *st)
{
  return xasprintf ("%lu:%lu:%lld:%lld.%09ld:%lld.%09ld", (unsigned long) st->st_dev, (unsigned long) st->st_ino,
                    (long long) st->st_size, (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
                    (long long) st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static int
sha256_file (const char *path, char out[65], int64_t *size, ohbox_error_t *err)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s`", path);
  char d[OHBOX_DIGEST_LEN + 1];
  if (ohbox_sha256_fd (fd, path, d, size, err) < 0)
    return -1;
  memcpy (out, ohbox_digest_hex (d), 65);
  return 0;
}

/* The digest of PATH, from CACHE["files"] when its stat did not change. */
static int
cached_digest (json_t *cache, bool *dirty, const char *path, char **out, ohbox_error_t *err)
{
  struct stat st;
  if (stat (path, &st) < 0)
    return ohbox_error_errno (err, "stat `%s`", path);
  cleanup_free char *key = stat_key (&st);
  json_t *files = json_object_get (cache, "files");
  json_t *e = json_object_get (files, path);
  const char *k = json_string_value (json_object_get (e, "key"));
  const char *h = json_string_value (json_object_get (e, "sha256"));
  if (k && h && strcmp (k, key) == 0 && strlen (h) == 64)
    {
      *out = xstrdup (h);
      return 0;
    }
  char hex[65];
  if (sha256_file (path, hex, NULL, err) < 0)
    return -1;
  json_object_set_new (files, path, json_pack ("{s:s, s:s}", "key", key, "sha256", hex));
  *dirty = true;
  *out = xstrdup (hex);
  return 0;
}

/* The directory of the libmicrohttpd built without HTTPS
 * (executor/mhd-notls.sh) that closure.sh packs instead of the system's,
 * whose GnuTLS stack (6.7 MB of libraries) the executor would load and
 * never use: $OHBOX_MHD_NOTLS (a directory, or `none`: the system's), the
 * build tree's `make executor-mhd-notls`, configure's --with-mhd-notls
 * (where contrib/install-deps.sh builds it).  *OUT = NULL: the system's. */
static int
mhd_notls_dir (char **out, ohbox_error_t *err)
{
  *out = NULL;
  const char *env = getenv ("OHBOX_MHD_NOTLS");
  if (env && strcmp (env, "none") == 0)
    return 0;
  if (env && *env)
    {
      /* Absolute: closure.sh runs ldd with it, and the cache keys by it. */
      cleanup_free char *dir = realpath (env, NULL);
      cleanup_free char *lib = dir ? xasprintf ("%s/" MHD_SONAME, dir) : NULL;
      if (lib == NULL || access (lib, F_OK) < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "OHBOX_MHD_NOTLS `%s` has no " MHD_SONAME
                            ": give the lib directory executor/mhd-notls.sh made, or `none`",
                            env);
      *out = dir;
      dir = NULL;
      return 0;
    }
  const char *cand[] = { OHBOX_BUILDDIR "/executor-mhd-notls/lib", OHBOX_MHD_NOTLS_DIR };
  for (size_t i = 0; i < sizeof cand / sizeof *cand; i++)
    {
      cleanup_free char *lib = xasprintf ("%s/" MHD_SONAME, cand[i]);
      if (*cand[i] && access (lib, F_OK) == 0)
        {
          *out = xstrdup (cand[i]);
          return 0;
        }
    }
  return 0;
}

/* The environment of closure.sh: ours, with OHBOX_CLOSURE_LIBS=LIBS (or
 * without any: an inherited one would change the closure behind the
 * cache's back).  Made before the fork: the child only execs. */
static char **
closure_env (const char *libs)
{
  extern char **environ;
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = xmalloc ((n + 2) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp (environ[i], "OHBOX_CLOSURE_LIBS=", 19) != 0)
      env[k++] = environ[i];
  if (libs)
    env[k++] = xasprintf ("OHBOX_CLOSURE_LIBS=%s", libs);
  env[k] = NULL;
  return env;
}

static void
closure_env_free (char **env, const char *libs)
{
  if (libs)
    for (size_t i = 0; env[i]; i++)
      if (strncmp (env[i], "OHBOX_CLOSURE_LIBS=", 19) == 0)
        free (env[i]);
  free (env);
}

/* Runs `sh CLOSURE_SH EXE DIR` (OHBOX_CLOSURE_LIBS=LIBS when LIBS); its
 * output goes into the error when it fails. */
static int
run_closure_sh (const char *script, const char *exe, const char *dir, const char *libs, ohbox_error_t *err)
{
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return ohbox_error_errno (err, "pipe");
  pid_t parent = getpid ();
  char **env = closure_env (libs);
  pid_t pid = fork ();
  if (pid < 0)
    {
      int e = errno;
      closure_env_free (env, libs);
      close (p[0]);
      close (p[1]);
      errno = e;
      return ohbox_error_errno (err, "fork");
    }
  if (pid == 0)
    {
      /* A killed build must not leave closure.sh writing into the store's
       * build area after it (check and prune remove tmp-PID of a dead PID). */
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      if (getppid () != parent)
        _exit (127);
      dup2 (p[1], 1);
      dup2 (p[1], 2);
      int nul = open ("/dev/null", O_RDONLY);
      if (nul >= 0)
        dup2 (nul, 0);
      execle ("/bin/sh", "sh", script, exe, dir, (char *) NULL, env);
      _exit (127);
    }
  closure_env_free (env, libs);
  close (p[1]);
  cleanup_free char *output = NULL;
  size_t len = 0;
  cleanup_error ohbox_error_t rerr = NULL;
  /* A runaway output is cut, not an error of its own: the status decides. */
  if (ohbox_read_fd (p[0], "closure.sh output", CLOSURE_OUTPUT_MAX, &output, &len, &rerr) < 0)
    output = NULL;
  close (p[0]);
  int status;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return ohbox_error_errno (err, "wait for closure.sh");
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return 0;
  if (output)
    {
      size_t l = strlen (output);
      while (l && output[l - 1] == '\n')
        output[--l] = '\0';
    }
  /* The script copies into the store: a full disk is a store error (exit
   * 7), whichever tool of the script met it. */
  bool full = output && (strstr (output, "No space left on device") || strstr (output, "Disk quota exceeded"));
  int r = ohbox_error (err, full ? OHBOX_ERR_STORE : OHBOX_ERR_GENERIC, 0, "`%s %s %s` failed: %s", script, exe, dir,
                       output && *output ? output : "no output");
  if (full)
    ohbox_error_hint (err, "no space left in `%s`: free some (`ohbox prune`) and build again", dir);
  return r;
}

static int
cmp_json_path (const void *a, const void *b)
{
  return strcmp (json_string_value (json_object_get (*(json_t *const *) a, "path")),
                 json_string_value (json_object_get (*(json_t *const *) b, "path")));
}

/* Digests of every file of DIR/lib, sorted. */
static int
digest_closure (const char *dir, json_t **out, ohbox_error_t *err)
{
  cleanup_free char *lib = xasprintf ("%s/lib", dir);
  cleanup_dir DIR *d = opendir (lib);
  if (d == NULL)
    return ohbox_error_errno (err, "open the executor closure `%s`", lib);
  json_t *items[CLOSURE_MAX_FILES];
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (de->d_name[0] == '.')
        continue;
      if (n == CLOSURE_MAX_FILES)
        {
          for (size_t i = 0; i < n; i++)
            json_decref (items[i]);
          return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "executor closure `%s` has over %d files", lib,
                              CLOSURE_MAX_FILES);
        }
      cleanup_free char *p = xasprintf ("%s/%s", lib, de->d_name);
      char hex[65];
      int64_t size;
      if (sha256_file (p, hex, &size, err) < 0)
        {
          for (size_t i = 0; i < n; i++)
            json_decref (items[i]);
          return -1;
        }
      cleanup_free char *rel = xasprintf ("lib/%s", de->d_name);
      items[n++] = json_pack ("{s:s, s:s, s:I}", "path", rel, "sha256", hex, "size", (json_int_t) size);
    }
  qsort (items, n, sizeof *items, cmp_json_path);
  json_t *arr = json_array ();
  for (size_t i = 0; i < n; i++)
    json_array_append_new (arr, items[i]);
  *out = arr;
  return 0;
}

/* Removes every closure but KEEP (those of older executor binaries, and
 * what a killed build left in tmp-*), and their cache entries: the store
 * keeps one closure, not one per executor ever built. */
static void
sweep_closures (struct ohbox_store *s, json_t *closures, const char *keep)
{
  cleanup_free char *dir = xasprintf ("%s/build/closures", ohbox_store_root (s));
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (de->d_name[0] == '.' || strcmp (de->d_name, keep) == 0)
        continue;
      /* A concurrent build's tmp-PID of a live process is left alone. */
      if (strncmp (de->d_name, "tmp-", 4) == 0 && kill ((pid_t) atol (de->d_name + 4), 0) == 0)
        continue;
      cleanup_error ohbox_error_t ignored = NULL;
      ohbox_rm_rf_at (dirfd (d), de->d_name, &ignored);
    }
  const char *k;
  json_t *v;
  void *tmp;
  json_object_foreach_safe (closures, tmp, k, v)
  {
    (void) v;
    if (strncmp (k, keep, strlen (keep)) != 0)
      json_object_del (closures, k);
  }
}

/* What the closure was made from besides the executor: the ld.so.cache
 * (the system's libraries) and the libmicrohttpd without HTTPS, if any. */
static char *
closure_key (const char *notls)
{
  struct stat st;
  cleanup_free char *ld = stat ("/etc/ld.so.cache", &st) == 0 ? stat_key (&st) : xstrdup ("none");
  if (notls == NULL)
    return xasprintf ("%s|system libmicrohttpd", ld);
  cleanup_free char *lib = xasprintf ("%s/" MHD_SONAME, notls);
  cleanup_free char *mhd = stat (lib, &st) == 0 ? stat_key (&st) : xstrdup ("none");
  return xasprintf ("%s|%s %s", ld, notls, mhd);
}

/* The closure of the executor whose digest is EXE_HEX: from the cache when
 * it was made from the same libraries, else made again with closure.sh. */
static int
load_closure (struct ohbox_store *s, json_t *cache, bool *dirty, struct ohbox_build_inputs *in, ohbox_error_t *err)
{
  cleanup_free char *notls = NULL;
  if (mhd_notls_dir (&notls, err) < 0)
    return -1;
  cleanup_free char *ldkey = closure_key (notls);
  cleanup_free char *name = xasprintf ("build/closures/%.32s", in->executor_digest);
  const char *root = ohbox_store_root (s);
  json_t *closures = json_object_get (cache, "closures");
  json_t *c = json_object_get (closures, in->executor_digest);
  const char *k = json_string_value (json_object_get (c, "ld_cache"));
  json_t *files = json_object_get (c, "files");
  in->closure_dir = xasprintf ("%s/%s", root, name);
  if (k && strcmp (k, ldkey) == 0 && json_is_array (files) && access (in->closure_dir, F_OK) == 0)
    {
      in->closure_files = json_incref (files);
      return 0;
    }
  const char *env = getenv ("OHBOX_CLOSURE_SH");
  const char *cand[] = { env, OHBOX_PKGDATADIR "/closure.sh", OHBOX_SRCDIR "/executor/closure.sh" };
  cleanup_free char *script = NULL;
  if (first_existing (cand, 3, "executor/closure.sh", "set OHBOX_CLOSURE_SH", &script, err) < 0)
    return -1;
  int dirfd = ohbox_store_dirfd (s);
  if (ohbox_mkdir_p (dirfd, "build/closures", 0700, err) < 0)
    return -1;
  cleanup_free char *tmpname = xasprintf ("build/closures/tmp-%ld", (long) getpid ());
  cleanup_free char *tmp = xasprintf ("%s/%s", root, tmpname);
  if (ohbox_rm_rf_at (dirfd, tmpname, err) < 0 || run_closure_sh (script, in->executor, tmp, notls, err) < 0)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      ohbox_rm_rf_at (dirfd, tmpname, &ignored);
      return ohbox_error_prefix (err, "make the executor's library closure");
    }
  if (ohbox_rm_rf_at (dirfd, name, err) < 0)
    return -1;
  if (renameat (dirfd, tmpname, dirfd, name) < 0)
    {
      /* Another build made the same closure meanwhile: use that one. */
      if (errno != ENOTEMPTY && errno != EEXIST)
        return ohbox_error_errno (err, "rename `%s`", tmp);
      cleanup_error ohbox_error_t ignored = NULL;
      ohbox_rm_rf_at (dirfd, tmpname, &ignored);
    }
  cleanup_free char *loader = xasprintf ("%s/lib/ld-linux-x86-64.so.2", in->closure_dir);
  if (access (loader, F_OK) < 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "the executor closure `%s` has no ld-linux-x86-64.so.2: only x86-64 glibc hosts are "
                        "supported",
                        in->closure_dir);
  if (digest_closure (in->closure_dir, &in->closure_files, err) < 0)
    return -1;
  sweep_closures (s, closures, name + strlen ("build/closures/"));
  json_object_set_new (closures, in->executor_digest,
                       json_pack ("{s:s, s:O}", "ld_cache", ldkey, "files", in->closure_files));
  *dirty = true;
  return 0;
}

static json_t *
read_cache (struct ohbox_store *s)
{
  cleanup_free char *data = NULL;
  size_t len;
  cleanup_error ohbox_error_t ignored = NULL;
  json_t *c = NULL;
  /* A missing or damaged cache is rebuilt: it only saves time. */
  if (ohbox_read_file_at (ohbox_store_dirfd (s), CACHE_FILE, CACHE_MAX, &data, &len, &ignored) == 0)
    c = json_loadb (data, len, 0, NULL);
  if (!json_is_object (c))
    {
      json_decref (c);
      c = json_object ();
    }
  if (!json_is_object (json_object_get (c, "files")))
    json_object_set_new (c, "files", json_object ());
  if (!json_is_object (json_object_get (c, "closures")))
    json_object_set_new (c, "closures", json_object ());
  return c;
}

static int
write_cache (struct ohbox_store *s, json_t *cache, ohbox_error_t *err)
{
  int dirfd = ohbox_store_dirfd (s);
  if (ohbox_mkdir_p (dirfd, "build", 0700, err) < 0)
    return -1;
  cleanup_free char *data = json_dumps (cache, JSON_COMPACT | JSON_SORT_KEYS);
  return ohbox_write_file_atomic (dirfd, CACHE_FILE, data, strlen (data), 0600, err);
}

static bool
is_static_elf (const char *path)
{
  /* A static executable has no PT_INTERP: closure.sh's ldd says so too,
   * but reading the program headers needs no process. */
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  unsigned char h[64];
  if (fd < 0 || pread (fd, h, sizeof h, 0) != (ssize_t) sizeof h || memcmp (h, "\177ELF", 4) != 0 || h[4] != 2)
    return false;
  uint64_t phoff;
  uint16_t phentsize, phnum;
  memcpy (&phoff, h + 32, 8);
  memcpy (&phentsize, h + 54, 2);
  memcpy (&phnum, h + 56, 2);
  if (phentsize < 4 || phnum > 256)
    return false;
  for (uint16_t i = 0; i < phnum; i++)
    {
      uint32_t type;
      if (pread (fd, &type, 4, (off_t) (phoff + (uint64_t) i * phentsize)) != 4)
        return false;
      if (type == 3 /* PT_INTERP */)
        return false;
    }
  return true;
}

int
ohbox_build_inputs_load (struct ohbox_store *s, const struct ohbox_build_options *opts, struct ohbox_build_inputs *in,
                         ohbox_error_t *err)
{
  memset (in, 0, sizeof *in);
  json_t *cache = read_cache (s);
  bool dirty = false;
  int ret = -1;
  const char *exe_cand[] = { opts->executor, getenv ("OHBOX_EXECUTOR"), OHBOX_PKGLIBEXECDIR "/ohbox-executor",
                             OHBOX_BUILDDIR "/ohbox-executor" };
  const char *src_cand[] = { opts->executor_src, getenv ("OHBOX_EXECUTOR_SRCDIR"), OHBOX_PKGDATADIR "/executor-src",
                             OHBOX_SRCDIR "/executor" };
  const char *bash_cand[] = { opts->bash, opts->bash ? NULL : "/bin/bash-static" };
  cleanup_free char *srcdir = NULL;
  char srchex[65];
  if (first_existing (exe_cand, 4, "the executor (ohbox-executor)", "build it (make) or set OHBOX_EXECUTOR",
                      &in->executor, err)
        < 0
      || cached_digest (cache, &dirty, in->executor, &in->executor_digest, err) < 0)
    goto out;
  if (first_existing (src_cand, 4, "the executor source tree", "set OHBOX_EXECUTOR_SRCDIR", &srcdir, err) < 0
      || ohbox_build_source_digest (srcdir, in->executor_digest, srchex, err) < 0)
    goto out;
  in->source_digest = xstrdup (srchex);
  if (first_existing (bash_cand, 2, "a static bash", "install bash-static or pass --bash", &in->bash, err) < 0)
    goto out;
  if (!is_static_elf (in->bash))
    {
      ohbox_error (err, OHBOX_ERR_USAGE, 0,
                   "bash `%s` is not a static executable: it must run in bases without a libc; install "
                   "bash-static (/bin/bash-static)",
                   in->bash);
      goto out;
    }
  if (cached_digest (cache, &dirty, in->bash, &in->bash_digest, err) < 0
      || load_closure (s, cache, &dirty, in, err) < 0)
    goto out;
  if (dirty)
    {
      /* Only a cache: failing to save it costs time next build, not this one. */
      cleanup_error ohbox_error_t ignored = NULL;
      write_cache (s, cache, &ignored);
    }
  ret = 0;
out:
  json_decref (cache);
  if (ret < 0)
    ohbox_build_inputs_clear (in);
  return ret;
}

void
ohbox_build_inputs_clear (struct ohbox_build_inputs *in)
{
  free (in->executor);
  free (in->executor_digest);
  free (in->closure_dir);
  json_decref (in->closure_files);
  free (in->bash);
  free (in->bash_digest);
  free (in->source_digest);
  memset (in, 0, sizeof *in);
}

char *
ohbox_build_lock_json (const struct ohbox_build_inputs *in, bool with_bash)
{
  json_t *lock = json_pack ("{s:i, s:s, s:O}", "lock_version", 1, "platform", "linux/amd64", "executor_closure",
                            in->closure_files);
  if (with_bash)
    json_object_set_new (lock, "bash", json_pack ("{s:s, s:s}", "path", OHBOX_RUNTIME_BASH, "sha256", in->bash_digest));
  char *s = json_dumps (lock, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref (lock);
  return s;
}
