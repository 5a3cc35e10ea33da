/* build_tags.c: the three runtime image tags (see build.h). */
#include "config.h"
#include "build/build.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "common/digest.h"
#include "common/utils.h"

/* Bound on the hex input of trunc36 (a sha512 is 128 digits). */
#define TRUNC36_MAX_HEX 256
/* Bound on one executor source file and on their number. */
#define SOURCE_MAX_FILE (16 * 1024 * 1024)
#define SOURCE_MAX_FILES 4096

static int
hexval (char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  c = (char) tolower ((unsigned char) c);
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int
ohbox_build_trunc36 (const char *hex, char out[17], ohbox_error_t *err)
{
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  size_t n = strlen (hex);
  if (n == 0 || n > TRUNC36_MAX_HEX)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "hash `%.64s` has no digits or too many", hex);
  /* The integer as base-16 digits, most significant first; divided by 36
   * in place (schoolbook long division) once per output digit. */
  unsigned char num[TRUNC36_MAX_HEX];
  for (size_t i = 0; i < n; i++)
    {
      int v = hexval (hex[i]);
      if (v < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "hash `%.64s` is not hexadecimal", hex);
      num[i] = (unsigned char) v;
    }
  size_t start = 0, len = 0;
  while (len < 16)
    {
      while (start < n && num[start] == 0)
        start++;
      if (start == n)
        break;
      unsigned rem = 0;
      for (size_t i = start; i < n; i++)
        {
          unsigned cur = rem * 16 + num[i];
          num[i] = (unsigned char) (cur / 36);
          rem = cur % 36;
        }
      out[len++] = digits[rem];
    }
  if (len == 0)
    out[len++] = '0';
  out[len] = '\0';
  return 0;
}

char *
ohbox_build_versioned_tag (const char *prefix, const char *base)
{
  struct ohbox_buf b = { 0 };
  for (const char *p = base; *p; p++)
    {
      if (*p == '/')
        ohbox_buf_append (&b, "_s_", 3);
      else if (*p == ':')
        ohbox_buf_append (&b, "_t_", 3);
      else if (*p == '@')
        ohbox_buf_append (&b, "_at_", 4);
      else
        {
          char c = (char) tolower ((unsigned char) *p);
          /* A tag is [A-Za-z0-9_.-]: anything else (from an odd local name) becomes '_'. */
          if (!isalnum ((unsigned char) c) && c != '.' && c != '-' && c != '_')
            c = '_';
          ohbox_buf_append (&b, &c, 1);
        }
    }
  const char *s = b.data ? b.data : "";
  size_t l = b.len;
  char *out = xasprintf ("%s%s", prefix, l > 96 ? s + l - 96 : s);
  ohbox_buf_free (&b);
  return out;
}

int
ohbox_build_hash_tag (const char *prefix, const char *hex, char **out, ohbox_error_t *err)
{
  char t[17];
  if (ohbox_build_trunc36 (hex, t, err) < 0)
    return -1;
  *out = xasprintf ("%s%s", prefix, t);
  return 0;
}

void
ohbox_build_lock_digest (const char *base, const char *base_digest, const char *lock_json, char out[65])
{
  struct ohbox_sha256 *h = ohbox_sha256_new ();
  ohbox_sha256_update (h, base, strlen (base) + 1);
  ohbox_sha256_update (h, base_digest, strlen (base_digest) + 1);
  ohbox_sha256_update (h, lock_json, strlen (lock_json));
  char d[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_final (h, d);
  ohbox_sha256_free (h);
  memcpy (out, ohbox_digest_hex (d), 65);
}

static bool
is_source_name (const char *n)
{
  size_t l = strlen (n);
  if (n[0] == '.')
    return false;
  /* ipython_driver.py is compiled into the executor as a string. */
  return strcmp (n, "local.mk") == 0 || (l > 2 && n[l - 2] == '.' && (n[l - 1] == 'c' || n[l - 1] == 'h'))
         || (l > 3 && strcmp (n + l - 3, ".py") == 0);
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

int
ohbox_build_source_digest (const char *dir, const char *extra, char out[65], ohbox_error_t *err)
{
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return ohbox_error_errno (err, "open the executor source tree `%s`", dir);
  char **names = NULL;
  size_t n = 0;
  int ret = -1;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (!is_source_name (de->d_name))
        continue;
      if (n >= SOURCE_MAX_FILES)
        {
          ohbox_error (err, OHBOX_ERR_USAGE, 0, "executor source tree `%s` has more than %d files", dir,
                       SOURCE_MAX_FILES);
          goto out;
        }
      names = xrealloc (names, (n + 1) * sizeof *names);
      names[n++] = xstrdup (de->d_name);
    }
  if (n == 0)
    {
      ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0,
                   "executor source tree `%s` has no *.c, *.h, *.py or local.mk; set OHBOX_EXECUTOR_SRCDIR", dir);
      goto out;
    }
  qsort (names, n, sizeof *names, cmp_str);
  struct ohbox_sha256 *h = ohbox_sha256_new ();
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *data = NULL;
      size_t len;
      if (ohbox_read_file_at (dirfd (d), names[i], SOURCE_MAX_FILE, &data, &len, err) < 0)
        {
          ohbox_sha256_free (h);
          ohbox_error_prefix (err, "executor source tree `%s`", dir);
          goto out;
        }
      char fd_[OHBOX_DIGEST_LEN + 1];
      ohbox_sha256_buffer (data, len, fd_);
      ohbox_sha256_update (h, names[i], strlen (names[i]) + 1);
      ohbox_sha256_update (h, ohbox_digest_hex (fd_), 64);
      ohbox_sha256_update (h, "\n", 1);
    }
  if (extra)
    ohbox_sha256_update (h, extra, strlen (extra));
  char dd[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_final (h, dd);
  ohbox_sha256_free (h);
  memcpy (out, ohbox_digest_hex (dd), 65);
  ret = 0;
out:
  for (size_t i = 0; i < n; i++)
    free (names[i]);
  free (names);
  return ret;
}

const char *
ohbox_build_path_name (enum ohbox_build_path p)
{
  switch (p)
    {
    case OHBOX_BUILD_REUSE:
      return "reuse";
    case OHBOX_BUILD_FROM_LOCK:
      return "from-lock";
    case OHBOX_BUILD_FROM_VERSIONED:
      return "from-versioned";
    case OHBOX_BUILD_FROM_SCRATCH:
      return "from-scratch";
    }
  return "unknown";
}
