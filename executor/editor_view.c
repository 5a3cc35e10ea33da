/* editor_view.c: the editor's `view` (openhands-aci 0.3.2): directories
 * up to depth 2 without hidden entries, files `cat -n` style with an
 * optional view_range. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "editor_private.h"
#include "obs.h"
#include "common/utils.h"

#define DIRECTORY_CONTENT_TRUNCATED_NOTICE                                                                             \
  "<response clipped><NOTE>Due to the max output limit, only part of this directory has been shown to you. "           \
  "You should use `ls -la` instead to view large directories incrementally.</NOTE>"

/* ---- view ---------------------------------------------------------------- */

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* `find -L DIR -maxdepth 2`: entries below DIR, hidden ones left out at
 * both depths (find still enters a hidden directory, and complains about
 * one it cannot read).  What find would print on stderr goes to ERRS. */
/* A directory find has entered, for its loop check. */
struct dir_seen
{
  const char *path;
  dev_t dev;
  ino_t ino;
  const struct dir_seen *up;
};

static void find_error (struct ohbox_buf *errs, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
find_error (struct ohbox_buf *errs, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = xvasprintf (fmt, ap);
  va_end (ap);
  ohbox_buf_append (errs, s, strlen (s));
  free (s);
}

static void
list_dir (const struct dir_seen *here, int depth, bool hidden, char ***out, size_t *n, size_t *cap,
          struct ohbox_buf *errs)
{
  const char *dir = here->path;
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    {
      find_error (errs, "find: \u2018%s\u2019: %s\n", dir, strerror (errno));
      return;
    }
  size_t dl = strlen (dir);
  struct dirent *de;
  while ((de = readdir (d)) != NULL && *n < 100000)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      char *p = xasprintf ("%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", de->d_name);
      struct stat st;
      /* -L: a link is what it points to; a dangling one is itself. */
      if (stat (p, &st) < 0 && lstat (p, &st) < 0)
        {
          find_error (errs, "find: \u2018%s\u2019: %s\n", p, strerror (errno));
          free (p);
          continue;
        }
      bool is_dir = S_ISDIR (st.st_mode);
      for (const struct dir_seen *a = here; is_dir && a; a = a->up)
        if (a->dev == st.st_dev && a->ino == st.st_ino)
          {
            find_error (errs,
                        "find: File system loop detected; \u2018%s\u2019 is part of the same file system loop as "
                        "\u2018%s\u2019.\n",
                        p, a->path);
            is_dir = false;
            break;
          }
      bool skip = hidden || de->d_name[0] == '.';
      if (!skip)
        {
          if (*n + 1 >= *cap)
            *out = xrealloc (*out, (*cap *= 2) * sizeof (char *));
          (*out)[(*n)++] = is_dir ? xasprintf ("%s/", p) : xstrdup (p);
        }
      if (is_dir && depth < 2)
        {
          struct dir_seen below = { p, st.st_dev, st.st_ino, here };
          list_dir (&below, depth + 1, skip, out, n, cap, errs);
        }
      free (p);
    }
}

static char *
view_dir (const char *path)
{
  size_t hidden = 0;
  {
    cleanup_dir DIR *d = opendir (path);
    struct dirent *de;
    while (d && (de = readdir (d)) != NULL)
      if (de->d_name[0] == '.' && strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
        hidden++;
  }
  size_t n = 0, cap = 64;
  char **items = xmalloc (cap * sizeof (char *));
  struct ohbox_buf errs = { 0 };
  items[n++] = xasprintf ("%s/", path);
  struct stat top;
  struct dir_seen root = { path, 0, 0, NULL };
  if (stat (path, &top) == 0)
    root.dev = top.st_dev, root.ino = top.st_ino;
  list_dir (&root, 1, false, &items, &n, &cap, &errs);
  if (errs.len)
    {
      /* openhands-aci reports find's stderr instead of the listing. */
      for (size_t i = 0; i < n; i++)
        free (items[i]);
      free (items);
      char *e = editor_err_text ("%s", errs.data);
      free (errs.data);
      return e;
    }
  /* `find ... | sort`: sort the paths as find prints them (without the slash). */
  for (size_t i = 0; i < n; i++)
    {
      size_t l = strlen (items[i]);
      if (l > 1 && items[i][l - 1] == '/')
        items[i][l - 1] = '\x01'; /* keep the marker, sort as if absent */
    }
  qsort (items, n, sizeof (char *), cmp_str);
  struct ohbox_buf listing = { 0 };
  for (size_t i = 0; i < n; i++)
    {
      size_t l = strlen (items[i]);
      if (l && items[i][l - 1] == '\x01')
        items[i][l - 1] = '/';
      if (i)
        ohbox_buf_append (&listing, "\n", 1);
      ohbox_buf_append (&listing, items[i], l);
      free (items[i]);
    }
  free (items);
  ohbox_buf_append (&listing, "", 0);
  cleanup_free char *shown = editor_maybe_truncate (listing.data, DIRECTORY_CONTENT_TRUNCATED_NOTICE);
  free (listing.data);
  char *msg = xasprintf ("Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s",
                         path, shown);
  if (hidden > 0)
    {
      char *m2 = xasprintf ("%s\n\n%zu hidden files/directories in this directory are excluded. You can use 'ls -la "
                            "%s' to see them.",
                            msg, hidden, path);
      free (msg);
      msg = m2;
    }
  return msg;
}

/* Python's truth value of a JSON value as json.loads gives it. */
static bool
py_truthy (json_t *v)
{
  if (v == NULL || json_is_null (v) || json_is_false (v))
    return false;
  if (json_is_array (v))
    return json_array_size (v) > 0;
  if (json_is_object (v))
    return json_object_size (v) > 0;
  if (json_is_string (v))
    return json_string_length (v) > 0;
  if (json_is_number (v))
    return json_number_value (v) != 0;
  return true;
}

/* isinstance(V, int): Python's bools are ints too. */
static bool
py_int (json_t *v, long *out)
{
  if (json_is_integer (v))
    *out = (long) json_integer_value (v);
  else if (json_is_boolean (v))
    *out = json_is_true (v);
  else
    return false;
  return true;
}

/* The file part of view: whole, or lines [start, end] of VIEW_RANGE. */
static char *
view_file (const char *path, json_t *view_range)
{
  char *err = NULL;
  cleanup_free char *text = editor_read_text (path, NULL, &err);
  if (text == NULL)
    return err;
  if (editor_supported_binary (path))
    return editor_err_text (
      "Error in converting file to Markdown: no converter in ohbox-executor. Please use Python code "
      "to read %s",
      path);
  if (!py_truthy (view_range))
    return editor_make_output (text, path, 1);

  cleanup_free char *r = editor_py_str (view_range);
  if (json_is_number (view_range) || json_is_true (view_range))
    return editor_err_text ("object of type '%s' has no len()", json_is_integer (view_range) ? "int"
                                                                : json_is_real (view_range)  ? "float"
                                                                                             : "bool");
  long start, end;
  if (!json_is_array (view_range) || json_array_size (view_range) != 2
      || !py_int (json_array_get (view_range, 0), &start) || !py_int (json_array_get (view_range, 1), &end))
    return editor_err_text ("Invalid `view_range` parameter: %s. It should be a list of two integers.", r);
  long num_lines = (long) count_lines (text);
  if (start < 1 || start > num_lines)
    return editor_err_text (
      "Invalid `view_range` parameter: %s. Its first element `%ld` should be within the range of lines "
      "of the file: [1, %ld].",
      r, start, num_lines);
  bool clamped = false;
  if (end == -1)
    end = num_lines;
  else if (end > num_lines)
    {
      end = num_lines;
      clamped = true;
    }
  if (end < start)
    return editor_err_text (
      "Invalid `view_range` parameter: %s. Its second element `%ld` should be greater than or equal "
      "to the first element `%ld`.",
      r, end, start);
  cleanup_free char *part = editor_line_range (text, start, end);
  cleanup_free char *joined = editor_splitlines_join (part);
  char *out = editor_make_output (joined, path, start);
  if (clamped)
    {
      char *o2 = xasprintf ("NOTE: We only show up to %ld since there're only %ld lines in this file.\n%s", num_lines,
                            num_lines, out);
      free (out);
      out = o2;
    }
  return out;
}

char *
editor_do_view (const char *path, json_t *view_range)
{
  struct stat st;
  if (stat (path, &st) == 0 && S_ISDIR (st.st_mode))
    {
      if (py_truthy (view_range))
        {
          cleanup_free char *r = editor_py_str (view_range);
          return editor_err_text (
            "Invalid `view_range` parameter: %s. The `view_range` parameter is not allowed when `path` "
            "points to a directory.",
            r);
        }
      return view_dir (path);
    }
  return view_file (path, view_range);
}
