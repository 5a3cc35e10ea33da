/* editor_view.c: the editor's `view` (openhands-aci 0.3.2): directories
 * up to depth 2 without hidden entries, files `cat -n` style with an
 * optional view_range. */
#include "config.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "editor_private.h"
#include "obs.h"
#include "common/utils.h"

#define DIRECTORY_CONTENT_TRUNCATED_NOTICE                                                                     \
  "<response clipped><NOTE>Due to the max output limit, only part of this directory has been shown to you. "   \
  "You should use `ls -la` instead to view large directories incrementally.</NOTE>"

/* ---- view ---------------------------------------------------------------- */

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static void
list_dir (const char *dir, int depth, char ***out, size_t *n, size_t *cap)
{
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir (d)) != NULL && *n < 100000)
    {
      if (de->d_name[0] == '.')
        continue; /* hidden entries (and . ..) are excluded at both depths */
      char *p = xasprintf ("%s/%s", dir, de->d_name);
      struct stat st;
      bool is_dir = stat (p, &st) == 0 && S_ISDIR (st.st_mode);
      if (*n + 1 >= *cap)
        *out = xrealloc (*out, (*cap *= 2) * sizeof (char *));
      (*out)[(*n)++] = is_dir ? xasprintf ("%s/", p) : xstrdup (p);
      if (is_dir && depth < 2)
        list_dir (p, depth + 1, out, n, cap);
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
  items[n++] = xasprintf ("%s/", path);
  list_dir (path, 1, &items, &n, &cap);
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

/* Python's str(list) of ints, for error texts. */
static char *
range_repr (json_t *r)
{
  if (!json_is_array (r))
    {
      char *s = json_dumps (r, JSON_ENCODE_ANY | JSON_COMPACT);
      return s ? s : xstrdup ("None");
    }
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "[", 1);
  for (size_t i = 0; i < json_array_size (r); i++)
    {
      char *s = json_dumps (json_array_get (r, i), JSON_ENCODE_ANY);
      if (i)
        ohbox_buf_append (&b, ", ", 2);
      ohbox_buf_append (&b, s, strlen (s));
      free (s);
    }
  ohbox_buf_append (&b, "]", 1);
  return b.data;
}

char *
editor_do_view (const char *path, json_t *view_range)
{
  struct stat st;
  bool has_range = json_is_array (view_range) && json_array_size (view_range) > 0;
  if (stat (path, &st) == 0 && S_ISDIR (st.st_mode))
    {
      if (has_range)
        {
          cleanup_free char *r = range_repr (view_range);
          return editor_err_text ("Invalid `view_range` parameter: %s. The `view_range` parameter is not allowed when `path` "
                           "points to a directory.",
                           r);
        }
      return view_dir (path);
    }
  char *err = NULL;
  cleanup_free char *text = editor_read_text (path, &err);
  if (text == NULL)
    return err;
  if (editor_supported_binary (path))
    return editor_err_text ("Error in converting file to Markdown: no converter in ohbox-executor. Please use Python code "
                     "to read %s",
                     path);
  if (!has_range)
    return editor_make_output (text, path, 1);

  cleanup_free char *r = range_repr (view_range);
  if (json_array_size (view_range) != 2 || !json_is_integer (json_array_get (view_range, 0))
      || !json_is_integer (json_array_get (view_range, 1)))
    return editor_err_text ("Invalid `view_range` parameter: %s. It should be a list of two integers.", r);
  long num_lines = (long) editor_count_lines (text);
  long start = (long) json_integer_value (json_array_get (view_range, 0));
  long end = (long) json_integer_value (json_array_get (view_range, 1));
  if (start < 1 || start > num_lines)
    return editor_err_text ("Invalid `view_range` parameter: %s. Its first element `%ld` should be within the range of lines "
                     "of the file: [1, %ld].",
                     r, start, num_lines);
  cleanup_free char *warning = NULL;
  if (end == -1)
    end = num_lines;
  else if (end > num_lines)
    {
      warning = xasprintf ("We only show up to %ld since there's only %ld lines in this file", num_lines, num_lines);
      end = num_lines;
    }
  if (end < start)
    return editor_err_text ("Invalid `view_range` parameter: %s. Its second element `%ld` should be greater than or equal "
                     "to the first element `%ld`.",
                     r, end, start);
  cleanup_free char *part = editor_line_range (text, start, end);
  /* '\n'.join(content.splitlines()) */
  size_t pl = strlen (part);
  if (pl && part[pl - 1] == '\n')
    part[--pl] = '\0';
  if (pl && part[pl - 1] == '\r')
    part[--pl] = '\0';
  char *out = editor_make_output (part, path, start);
  if (warning)
    {
      char *o2 = xasprintf ("%s\nNOTE: %s\n", out, warning);
      free (out);
      out = o2;
    }
  return out;
}

