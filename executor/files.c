/* files.c: the `read` (default implementation) and `write` actions and
 * POST /list_files, with the semantics of the Python server (read_lines,
 * insert_lines, the error texts).  `read` with impl_source oh_aci goes to
 * the editor (editor.c). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "editor.h"
#include "executor.h"
#include "obs.h"
#include "common/utils.h"

/* Largest file `read` returns: the reply is built in memory. */
#define MAX_READ_BYTES (256u << 20)
/* The working directory of the Python server (its image's code directory):
 * relative paths in its binary check are resolved there. */
#define PY_SERVER_CWD "/openhands/code"

static bool
has_suffix_ci (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n >= m && strcasecmp (s + n - m, suffix) == 0;
}

static bool
has_suffix (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n >= m && strcmp (s + n - m, suffix) == 0;
}

static const char *
media_type (const char *path)
{
  static const struct
  {
    const char *ext, *mime;
  } types[] = {
    { ".png", "image/png" }, { ".jpg", "image/jpeg" },  { ".jpeg", "image/jpeg" },
    { ".bmp", "image/bmp" }, { ".gif", "image/gif" },   { ".pdf", "application/pdf" },
    { ".mp4", "video/mp4" }, { ".webm", "video/webm" }, { ".ogg", "audio/ogg" },
  };
  for (size_t i = 0; i < sizeof (types) / sizeof (types[0]); i++)
    if (has_suffix_ci (path, types[i].ext))
      return types[i].mime;
  return NULL;
}

static json_t *
obs_read (const char *content, size_t len, const char *path, const char *impl_source)
{
  cleanup_free char *message = xasprintf ("I read the file %s.", path);
  json_t *extras = json_pack ("{s:s, s:s}", "path", path, "impl_source", impl_source);
  json_t *o = json_object ();
  json_object_set_new (o, "message", json_str_lossy (message, strlen (message)));
  json_object_set_new (o, "observation", json_string ("read"));
  json_object_set_new (o, "content", json_str_lossy (content, len));
  json_object_set_new (o, "extras", extras);
  return o;
}

/* Splits into lines that keep their '\n' (Python readlines()). */
static size_t
split_lines_keep (const char *s, size_t len, const char ***starts, size_t **lens)
{
  size_t n = 0, cap = 16;
  *starts = xmalloc (cap * sizeof (char *));
  *lens = xmalloc (cap * sizeof (size_t));
  size_t i = 0;
  while (i < len)
    {
      const char *nl = memchr (s + i, '\n', len - i);
      size_t l = nl ? (size_t) (nl - (s + i)) + 1 : len - i;
      if (n == cap)
        {
          cap *= 2;
          *starts = xrealloc (*starts, cap * sizeof (char *));
          *lens = xrealloc (*lens, cap * sizeof (size_t));
        }
      (*starts)[n] = s + i;
      (*lens)[n] = l;
      n++;
      i += l;
    }
  return n;
}

json_t *
action_read (struct executor *ex, json_t *args)
{
  json_t *jpath = json_object_get (args, "path");
  if (!json_is_string (jpath))
    return obs_error ("Missing required argument `path` (a string) for action `read`.");
  const char *given = json_string_value (jpath);
  /* The Python server first asks binaryornot about the path as given, i.e.
   * relative to its own working directory, before any other treatment:
   * images and PDFs named by an absolute path are binary there, relative
   * names usually miss (a missing file is not binary), and *.pyc always is. */
  cleanup_free char *as_given = given[0] == '/' ? xstrdup (given) : xasprintf (PY_SERVER_CWD "/%s", given);
  if (has_suffix (given, ".pyc") || file_is_binary (as_given))
    return obs_error ("ERROR_BINARY_FILE");
  json_t *impl = json_object_get (args, "impl_source");
  if (json_is_string (impl) && strcmp (json_string_value (impl), "oh_aci") == 0)
    {
      char *text = editor_view (ex->editor, given, json_object_get (args, "view_range"));
      json_t *o = obs_read (text, strlen (text), given, "oh_aci");
      free (text);
      return o;
    }

  cleanup_free char *path = executor_resolve (ex, given);
  cleanup_free char *cwd = ex->bash ? bash_session_cwd (ex->bash) : xstrdup (ex->work_dir);
  const char *mime = media_type (path);

  struct stat st;
  if (stat (path, &st) < 0)
    {
      if (errno == ENOENT || errno == ENOTDIR)
        return obs_errorf ("File not found: %s. Your current working directory is %s.", path, cwd);
      return obs_errorf ("Cannot read %s: %s", path, strerror (errno));
    }
  if (S_ISDIR (st.st_mode))
    return obs_errorf ("Path is a directory: %s. You can only read files", path);

  cleanup_free char *data = NULL;
  size_t len = 0;
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, MAX_READ_BYTES, &data, &len, &err) < 0)
    return obs_errorf ("Cannot read %s: %s", path, err->msg);

  if (mime)
    {
      cleanup_free char *b64 = base64_encode ((const unsigned char *) data, len);
      cleanup_free char *url = xasprintf ("data:%s;base64,%s", mime, b64);
      return obs_read (url, strlen (url), path, "default");
    }
  if (!utf8_valid (data, len))
    return obs_errorf ("File could not be decoded as utf-8: %s.", path);

  /* read_lines(all_lines, start, end) */
  json_t *js = json_object_get (args, "start"), *je = json_object_get (args, "end");
  long long start = json_is_integer (js) ? json_integer_value (js) : 0;
  long long end = json_is_integer (je) ? json_integer_value (je) : -1;
  const char **ls = NULL;
  size_t *ll = NULL;
  long long n = (long long) split_lines_keep (data, len, &ls, &ll);
  long long from, to;
  if (start < 0)
    start = 0;
  if (start > n)
    start = n;
  if (end != -1 && end < 0)
    end = 0;
  if (end > n)
    end = n;
  if (end == -1)
    {
      from = start;
      to = n;
    }
  else
    {
      from = start < n - 2 ? start : n - 2;
      if (from < 0)
        from = 0;
      to = end > n ? n : (end > from + 1 ? end : from + 1);
      if (to > n)
        to = n;
    }
  struct ohbox_buf b = { 0 };
  for (long long i = from; i < to; i++)
    ohbox_buf_append (&b, ls[i], ll[i]);
  ohbox_buf_append (&b, "", 0);
  json_t *o = obs_read (b.data, b.len, path, "default");
  free (b.data);
  free (ls);
  free (ll);
  return o;
}

static json_t *
obs_write (const char *path)
{
  cleanup_free char *message = xasprintf ("I wrote to the file %s.", path);
  json_t *o = json_object ();
  json_object_set_new (o, "message", json_str_lossy (message, strlen (message)));
  json_object_set_new (o, "observation", json_string ("write"));
  json_object_set_new (o, "content", json_string (""));
  json_object_set_new (o, "extras", json_pack ("{s:s}", "path", path));
  return o;
}

json_t *
action_write (struct executor *ex, json_t *args)
{
  json_t *jpath = json_object_get (args, "path"), *jcontent = json_object_get (args, "content");
  if (!json_is_string (jpath) || !json_is_string (jcontent))
    return obs_error ("Missing required arguments `path` and `content` (strings) for action `write`.");
  cleanup_free char *path = executor_resolve (ex, json_string_value (jpath));
  const char *content = json_string_value (jcontent);
  size_t clen = json_string_length (jcontent);
  json_t *js = json_object_get (args, "start"), *je = json_object_get (args, "end");
  long long start = json_is_integer (js) ? json_integer_value (js) : 0;
  long long end = json_is_integer (je) ? json_integer_value (je) : -1;

  /* Parent directories are created (os.makedirs). */
  cleanup_free char *dir = xstrdup (path);
  char *slash = strrchr (dir, '/');
  if (slash && slash != dir)
    {
      *slash = '\0';
      cleanup_error ohbox_error_t err = NULL;
      if (ohbox_mkdir_p (AT_FDCWD, dir, 0755, &err) < 0)
        return obs_errorf ("Cannot create the directory of %s: %s", path, err->msg);
    }

  struct stat st;
  bool exists = stat (path, &st) == 0;
  if (exists && S_ISDIR (st.st_mode))
    return obs_errorf ("Path is a directory: %s. You can only write to files", path);

  /* The inserted lines: content split on '\n', each newline-terminated. */
  struct ohbox_buf ins = { 0 };
  const char *p = content, *stop = content + clen;
  for (;;)
    {
      const char *nl = memchr (p, '\n', (size_t) (stop - p));
      size_t l = nl ? (size_t) (nl - p) : (size_t) (stop - p);
      ohbox_buf_append (&ins, p, l);
      ohbox_buf_append (&ins, "\n", 1);
      if (!nl)
        break;
      p = nl + 1;
    }

  struct ohbox_buf out = { 0 };
  if (!exists)
    ohbox_buf_append (&out, ins.data, ins.len);
  else
    {
      cleanup_free char *old = NULL;
      size_t olen = 0;
      cleanup_error ohbox_error_t err = NULL;
      if (ohbox_read_file_at (AT_FDCWD, path, MAX_READ_BYTES, &old, &olen, &err) < 0)
        {
          free (ins.data);
          return obs_errorf ("Cannot read %s: %s", path, err->msg);
        }
      if (!utf8_valid (old, olen))
        {
          free (ins.data);
          return obs_errorf ("File could not be decoded as utf-8: %s", path);
        }
      const char **ls = NULL;
      size_t *ll = NULL;
      long long n = (long long) split_lines_keep (old, olen, &ls, &ll);
      /* insert_lines: original[:start] + inserted + original[end:] (nothing when end == -1) */
      long long s0 = start < 0 ? n + start : start;
      if (s0 < 0)
        s0 = 0;
      if (s0 > n)
        s0 = n;
      for (long long i = 0; i < s0; i++)
        ohbox_buf_append (&out, ls[i], ll[i]);
      ohbox_buf_append (&out, ins.data, ins.len);
      if (end != -1)
        {
          long long e0 = end < 0 ? n + end : end;
          if (e0 < 0)
            e0 = 0;
          for (long long i = e0; i < n; i++)
            ohbox_buf_append (&out, ls[i], ll[i]);
        }
      free (ls);
      free (ll);
    }
  free (ins.data);

  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0664);
  if (fd < 0)
    {
      int e = errno;
      free (out.data);
      if (e == ENOENT)
        return obs_errorf ("File not found: %s", path);
      return obs_errorf ("Cannot write %s: %s", path, strerror (e));
    }
  int w = ohbox_write_all (fd, out.data ? out.data : "", out.len);
  int e = errno;
  close (fd);
  free (out.data);
  if (w < 0)
    return obs_errorf ("Cannot write %s: %s", path, strerror (e));
  if (!exists && geteuid () == 0)
    {
      /* New files belong to the sandbox user, group-writable (0664). */
      if (chmod (path, 0664) < 0 || chown (path, ex->uid, ex->uid) < 0)
        return obs_errorf ("File %s written, but failed to change ownership and permissions: %s", path,
                           strerror (errno));
    }
  return obs_write (path);
}

/* ---- /list_files ---------------------------------------------------------- */

static int
cmp_ci (const void *a, const void *b)
{
  return strcasecmp (*(char *const *) a, *(char *const *) b);
}

json_t *
executor_list_files (struct executor *ex, json_t *body)
{
  json_t *jp = json_is_object (body) ? json_object_get (body, "path") : NULL;
  cleanup_free char *path = NULL;
  if (json_is_string (jp) && *json_string_value (jp))
    {
      const char *p = json_string_value (jp);
      path = p[0] == '/' ? xstrdup (p) : xasprintf ("%s/%s", ex->work_dir, p);
    }
  else
    path = xstrdup (ex->work_dir);

  json_t *list = json_array ();
  cleanup_dir DIR *d = opendir (path);
  if (d == NULL)
    return list; /* missing, not a directory, unreadable: [] */
  size_t nd = 0, nf = 0, cd = 16, cf = 16;
  char **dirs = xmalloc (cd * sizeof (char *)), **files = xmalloc (cf * sizeof (char *));
  struct dirent *de;
  /* A directory listing is attacker-sized: cap it. */
  while ((de = readdir (d)) != NULL && nd + nf < 1000000)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      struct stat st;
      bool is_dir = fstatat (dirfd (d), de->d_name, &st, 0) == 0 && S_ISDIR (st.st_mode);
      if (is_dir)
        {
          if (nd == cd)
            dirs = xrealloc (dirs, (cd *= 2) * sizeof (char *));
          dirs[nd++] = xasprintf ("%s/", de->d_name);
        }
      else
        {
          if (nf == cf)
            files = xrealloc (files, (cf *= 2) * sizeof (char *));
          files[nf++] = xstrdup (de->d_name);
        }
    }
  qsort (dirs, nd, sizeof (char *), cmp_ci);
  qsort (files, nf, sizeof (char *), cmp_ci);
  for (size_t i = 0; i < nd; i++)
    {
      json_array_append_new (list, json_str_lossy (dirs[i], strlen (dirs[i])));
      free (dirs[i]);
    }
  for (size_t i = 0; i < nf; i++)
    {
      json_array_append_new (list, json_str_lossy (files[i], strlen (files[i])));
      free (files[i]);
    }
  free (dirs);
  free (files);
  return list;
}
