/* editor.c: see editor.h.  Texts follow openhands_aci/editor (editor.py,
 * exceptions.py, results.py) and the server's _execute_file_editor. */
#include "config.h"
#include "editor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "editor_private.h"
#include "executor.h"
#include "obs.h"
#include "common/utils.h"

#define SNIPPET_CONTEXT_WINDOW 4
#define HISTORY_PER_FILE 10
/* All histories together: an agent editing many big files must not grow
 * the executor without bound; the oldest versions go first. */
#define HISTORY_MAX_BYTES (64u << 20)

#define TEXT_FILE_CONTENT_TRUNCATED_NOTICE                                                                             \
  "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. You "            \
  "should retry this tool after you have searched inside the file with `grep -n` in order to find the line "           \
  "numbers of what you are looking for.</NOTE>"
struct hist_file
{
  char *path;
  char *versions[HISTORY_PER_FILE];
  int n;
  struct hist_file *next;
};

struct editor
{
  char *root;
  struct hist_file *files;
  size_t bytes;
};

struct editor *
editor_new (const char *workspace_root)
{
  struct editor *ed = xcalloc (1, sizeof (*ed));
  ed->root = xstrdup (workspace_root);
  return ed;
}

void
editor_free (struct editor *ed)
{
  if (ed == NULL)
    return;
  while (ed->files)
    {
      struct hist_file *f = ed->files;
      ed->files = f->next;
      for (int i = 0; i < f->n; i++)
        free (f->versions[i]);
      free (f->path);
      free (f);
    }
  free (ed->root);
  free (ed);
}

static struct hist_file *
hist_get (struct editor *ed, const char *path, bool create)
{
  for (struct hist_file *f = ed->files; f; f = f->next)
    if (strcmp (f->path, path) == 0)
      return f;
  if (!create)
    return NULL;
  struct hist_file *f = xcalloc (1, sizeof (*f));
  f->path = xstrdup (path);
  f->next = ed->files;
  ed->files = f;
  return f;
}

static void
hist_add (struct editor *ed, const char *path, const char *text)
{
  struct hist_file *f = hist_get (ed, path, true);
  if (f->n == HISTORY_PER_FILE)
    {
      ed->bytes -= strlen (f->versions[0]);
      free (f->versions[0]);
      memmove (f->versions, f->versions + 1, (HISTORY_PER_FILE - 1) * sizeof (char *));
      f->n--;
    }
  f->versions[f->n++] = xstrdup (text);
  ed->bytes += strlen (text);
  /* Over the global budget: drop the oldest version of any file. */
  while (ed->bytes > HISTORY_MAX_BYTES)
    {
      struct hist_file *victim = NULL;
      for (struct hist_file *g = ed->files; g; g = g->next)
        if (g->n > 0 && g != f)
          victim = g;
      if (victim == NULL)
        victim = f;
      if (victim->n == 0)
        break;
      ed->bytes -= strlen (victim->versions[0]);
      free (victim->versions[0]);
      memmove (victim->versions, victim->versions + 1, (size_t) (victim->n - 1) * sizeof (char *));
      victim->n--;
    }
}

static char *
hist_pop (struct editor *ed, const char *path)
{
  struct hist_file *f = hist_get (ed, path, false);
  if (f == NULL || f->n == 0)
    return NULL;
  char *t = f->versions[--f->n];
  ed->bytes -= strlen (t);
  return t;
}

bool
editor_supported_binary (const char *path)
{
  static const char *exts[] = { ".docx", ".xlsx", ".pptx", ".pdf", ".mp3", ".wav", ".m4a", ".flac" };
  const char *dot = strrchr (path, '.');
  const char *slash = strrchr (path, '/');
  if (dot == NULL || (slash && dot < slash))
    return false;
  for (size_t i = 0; i < sizeof (exts) / sizeof (exts[0]); i++)
    if (strcasecmp (dot, exts[i]) == 0)
      return true;
  return false;
}

bool
file_is_binary (const char *path)
{
  unsigned char buf[1024];
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat st;
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    {
      close (fd);
      return false;
    }
  ssize_t n = read (fd, buf, sizeof (buf));
  close (fd);
  if (n <= 0)
    return false;
  /* Text that decodes as UTF-8 (a sequence cut at the end is fine) is text. */
  size_t valid = (size_t) n;
  while (valid > 0 && valid > (size_t) n - 4 && (buf[valid - 1] & 0xc0) == 0x80)
    valid--;
  if (valid > 0 && buf[valid - 1] >= 0xc0)
    valid--;
  if (memchr (buf, 0, (size_t) n))
    return true;
  if (utf8_valid ((const char *) buf, valid))
    return false;
  /* binaryornot: many control characters or high bytes mean binary. */
  size_t control = 0, high = 0;
  for (ssize_t i = 0; i < n; i++)
    {
      if (buf[i] < 32 && buf[i] != '\n' && buf[i] != '\r' && buf[i] != '\t' && buf[i] != '\f' && buf[i] != '\b')
        control++;
      else if (buf[i] >= 127)
        high++;
    }
  return control * 10 > (size_t) n * 3 || high * 10 > (size_t) n * 3;
}

/* ---- small text helpers ---------------------------------------------------- */

char *
editor_maybe_truncate (const char *s, const char *notice)
{
  size_t len = strlen (s);
  if (utf8_count (s, len) <= MAX_RESPONSE_LEN_CHAR)
    return xstrdup (s);
  size_t cut = utf8_offset (s, len, MAX_RESPONSE_LEN_CHAR);
  return xasprintf ("%.*s%s", (int) cut, s, notice);
}

/* _make_output: `cat -n` style numbering of every '\n'-separated piece. */
char *
editor_make_output (const char *content, const char *descr, long start_line)
{
  cleanup_free char *t = editor_maybe_truncate (content, TEXT_FILE_CONTENT_TRUNCATED_NOTICE);
  struct ohbox_buf b = { 0 };
  cleanup_free char *head = xasprintf ("Here's the result of running `cat -n` on %s:\n", descr);
  ohbox_buf_append (&b, head, strlen (head));
  const char *p = t;
  long i = start_line;
  for (;;)
    {
      const char *nl = strchr (p, '\n');
      size_t l = nl ? (size_t) (nl - p) : strlen (p);
      char num[32];
      int k = snprintf (num, sizeof (num), "%6ld\t", i++);
      ohbox_buf_append (&b, num, (size_t) k);
      ohbox_buf_append (&b, p, l);
      ohbox_buf_append (&b, "\n", 1);
      if (!nl)
        break;
      p = nl + 1;
    }
  return b.data;
}

/* Lines [from, to] (1-based, inclusive) with their newlines. */
char *
editor_line_range (const char *s, long from, long to)
{
  long line = 1;
  const char *p = s, *start = NULL, *end = NULL;
  while (*p && line <= to)
    {
      const char *nl = strchr (p, '\n');
      const char *next = nl ? nl + 1 : p + strlen (p);
      if (line == from)
        start = p;
      if (line >= from)
        end = next;
      line++;
      p = next;
    }
  if (start == NULL)
    return xstrdup ("");
  return xstrndup (start, (size_t) (end - start));
}

char *
editor_err_text (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = xvasprintf (fmt, ap);
  va_end (ap);
  char *r = xasprintf ("ERROR:\n%s", s);
  free (s);
  return r;
}

/* str(OSError): "[Errno 13] Permission denied: '/path'". */
static char *
py_oserror (int e, const char *path)
{
  json_t *j = json_string (path);
  cleanup_free char *r = editor_py_repr (j);
  json_decref (j);
  return xasprintf ("[Errno %d] %s: %s", e, strerror (e), r);
}

static int
path_exists (const char *p, struct stat *st)
{
  return stat (p, st) == 0;
}

/* validate_file, then the contents; NULL with *ERR set on failure. */
char *
editor_read_text (const char *path, enum editor_encoding *enc, char **err)
{
  struct stat st;
  if (stat (path, &st) == 0 && S_ISREG (st.st_mode))
    {
      if ((uint64_t) st.st_size > MAX_FILE_SIZE)
        {
          *err = editor_err_text (
            "File validation failed for %s: File is too large (%.1fMB). Maximum allowed size is 10MB.", path,
            (double) st.st_size / 1024 / 1024);
          return NULL;
        }
      if (!editor_supported_binary (path) && file_is_binary (path))
        {
          *err = editor_err_text (
            "File validation failed for %s: File appears to be binary and this file type cannot be "
            "read or edited by this tool.",
            path);
          return NULL;
        }
    }
  char *data = NULL;
  size_t len = 0;
  cleanup_error ohbox_error_t e = NULL;
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      cleanup_free char *why = py_oserror (errno, path);
      *err = editor_err_text ("Ran into %s while trying to read %s", why, path);
      return NULL;
    }
  if (ohbox_read_fd (fd, path, MAX_FILE_SIZE + 1, &data, &len, &e) < 0)
    {
      *err = editor_err_text ("Ran into %s while trying to read %s", e->msg, path);
      return NULL;
    }
  enum editor_encoding ignored;
  return editor_decode (data, len, enc ? enc : &ignored);
}

/* open(path, 'w', encoding=ENC).write(TEXT); the error text or NULL. */
static char *
write_text (const char *path, const char *text, enum editor_encoding enc)
{
  size_t len;
  cleanup_free char *why = NULL;
  cleanup_free char *bytes = editor_encode (text, enc, &len, &why);
  if (bytes == NULL)
    return editor_err_text ("Ran into %s while trying to write to %s", why, path);
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ohbox_write_all (fd, bytes, len) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      why = py_oserror (e, path);
      return editor_err_text ("Ran into %s while trying to write to %s", why, path);
    }
  close (fd);
  return NULL;
}

static char *
validate_path (struct editor *ed, const char *command, const char *path)
{
  struct stat st;
  if (path[0] != '/')
    {
      cleanup_free char *joined = xasprintf ("%s/%s", ed->root, path);
      cleanup_free char *suggest = editor_py_path (joined);
      if (path_exists (suggest, &st))
        return editor_err_text (
          "Invalid `path` parameter: %s. The path should be an absolute path, starting with `/`. Maybe "
          "you meant %s?",
          path, suggest);
      return editor_err_text ("Invalid `path` parameter: %s. The path should be an absolute path, starting with `/`.",
                              path);
    }
  bool exists = path_exists (path, &st);
  if (strcmp (command, "create") == 0 && exists)
    return editor_err_text (
      "Invalid `path` parameter: %s. File already exists at: %s. Cannot overwrite files using command "
      "`create`.",
      path, path);
  if (strcmp (command, "create") != 0 && !exists)
    return editor_err_text ("Invalid `path` parameter: %s. The path %s does not exist. Please provide a valid path.",
                            path, path);
  if (strcmp (command, "view") != 0 && exists)
    {
      if (S_ISDIR (st.st_mode))
        return editor_err_text (
          "Invalid `path` parameter: %s. The path %s is a directory and only the `view` command can be "
          "used on directories.",
          path, path);
      if (editor_supported_binary (path))
        {
          const char *dot = strrchr (path, '.');
          return editor_err_text (
            "Invalid `path` parameter: %s. The path %s points to a binary file (%s) and only the `view` "
            "command can be used on supported binary files.",
            path, path, dot);
        }
    }
  return NULL;
}

char *
editor_view (struct editor *ed, const char *given, json_t *view_range)
{
  cleanup_free char *path = editor_py_path (given);
  char *e = validate_path (ed, "view", path);
  if (e)
    return e;
  return editor_do_view (path, view_range);
}

/* ---- edits --------------------------------------------------------------- */

struct edit_result
{
  char *output;
  char *old_content; /* file contents before/after, for the diff */
  char *new_content;
};

/* re.finditer(re.escape(NEEDLE), HAY): non-overlapping matches from the
 * left, and an empty NEEDLE matches at every position, the end included.
 * Returns their number, *FIRST the first one; LINES, if given, gets the
 * sorted distinct line numbers as Python prints the list.  Linear time. */
static size_t
find_occurrences (const char *hay, const char *needle, const char **first, struct ohbox_buf *lines)
{
  size_t hl = strlen (hay), nl = strlen (needle), n = 0;
  long line = 1, last = 0;
  const char *scanned = hay;
  *first = NULL;
  if (lines)
    ohbox_buf_append (lines, "[", 1);
  for (const char *p = hay; p <= hay + hl;)
    {
      const char *m = nl ? strstr (p, needle) : p;
      if (m == NULL)
        break;
      if (n++ == 0)
        *first = m;
      if (lines)
        {
          for (; scanned < m; scanned++)
            line += *scanned == '\n';
          if (line != last)
            {
              char num[32];
              int k = snprintf (num, sizeof (num), "%s%ld", last ? ", " : "", line);
              ohbox_buf_append (lines, num, (size_t) k);
              last = line;
            }
        }
      p = m + (nl ? nl : 1);
    }
  if (lines)
    ohbox_buf_append (lines, "]", 1);
  return n;
}

static char *
strip_dup (const char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
    s++;
  size_t n = strlen (s);
  while (n && strchr (" \t\n\r\v\f", s[n - 1]))
    n--;
  return xstrndup (s, n);
}

/* Writes UPDATED in place of CONTENT, kept for undo_edit and the diff;
 * false with R's output set (and both freed) when it cannot be written. */
static bool
commit_edit (struct editor *ed, const char *path, char *content, char *updated, enum editor_encoding enc,
             struct edit_result *r)
{
  r->output = write_text (path, updated, enc);
  if (r->output)
    {
      free (updated);
      free (content);
      return false;
    }
  hist_add (ed, path, content);
  r->old_content = content;
  r->new_content = updated;
  return true;
}

static void
do_str_replace (struct editor *ed, const char *path, const char *old_str, const char *new_str, struct edit_result *r)
{
  enum editor_encoding enc;
  char *content = editor_read_text (path, &enc, &r->output);
  if (content == NULL)
    return;
  cleanup_free char *old_s = xstrdup (old_str), *new_s = xstrdup (new_str ? new_str : "");
  const char *first;
  size_t n = find_occurrences (content, old_s, &first, NULL);
  if (n == 0)
    {
      /* One retry with both strings stripped of surrounding whitespace; the
       * messages from here on name the stripped old_str. */
      free (old_s);
      old_s = strip_dup (old_str);
      char *sn = strip_dup (new_s);
      free (new_s);
      new_s = sn;
      n = find_occurrences (content, old_s, &first, NULL);
    }
  if (n == 0)
    {
      r->output = editor_err_text ("No replacement was performed, old_str `%s` did not appear verbatim in %s.", old_s,
                                   path);
      free (content);
      return;
    }
  if (n > 1)
    {
      struct ohbox_buf lines = { 0 };
      find_occurrences (content, old_s, &first, &lines);
      r->output = editor_err_text (
        "No replacement was performed. Multiple occurrences of old_str `%s` in lines %s. Please "
        "ensure it is unique.",
        old_s, lines.data);
      free (lines.data);
      free (content);
      return;
    }
  size_t idx = (size_t) (first - content);
  long replacement_line = 1;
  for (size_t i = 0; i < idx; i++)
    replacement_line += content[i] == '\n';
  char *updated = xasprintf ("%.*s%s%s", (int) idx, content, new_s, content + idx + strlen (old_s));
  if (!commit_edit (ed, path, content, updated, enc, r))
    return;
  long start_line = replacement_line - SNIPPET_CONTEXT_WINDOW;
  if (start_line < 0)
    start_line = 0;
  long nl_new = 0;
  for (const char *p = new_s; *p; p++)
    nl_new += *p == '\n';
  long end_line = replacement_line + SNIPPET_CONTEXT_WINDOW + nl_new;
  cleanup_free char *snippet = editor_line_range (updated, start_line + 1, end_line);
  cleanup_free char *descr = xasprintf ("a snippet of %s", path);
  cleanup_free char *shown = editor_make_output (snippet, descr, start_line + 1);
  r->output = xasprintf ("The file %s has been edited. %sReview the changes and make sure they are as expected. Edit "
                         "the file again if necessary.",
                         path, shown);
}

static void
do_insert (struct editor *ed, const char *path, long insert_line, const char *new_str, struct edit_result *r)
{
  enum editor_encoding enc;
  char *content = editor_read_text (path, &enc, &r->output);
  if (content == NULL)
    return;
  long num_lines = (long) count_lines (content);
  if (insert_line < 0 || insert_line > num_lines)
    {
      r->output = editor_err_text (
        "Invalid `insert_line` parameter: %ld. It should be within the range of allowed values: "
        "[0, %ld]",
        insert_line, num_lines);
      free (content);
      return;
    }
  /* Split point: after INSERT_LINE lines. */
  const char *p = content;
  for (long i = 0; i < insert_line && *p; i++)
    {
      const char *nl = strchr (p, '\n');
      p = nl ? nl + 1 : p + strlen (p);
    }
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, content, (size_t) (p - content));
  long new_lines = 0;
  for (const char *q = new_str;;)
    {
      const char *nl = strchr (q, '\n');
      size_t l = nl ? (size_t) (nl - q) : strlen (q);
      ohbox_buf_append (&b, q, l);
      ohbox_buf_append (&b, "\n", 1);
      new_lines++;
      if (!nl)
        break;
      q = nl + 1;
    }
  ohbox_buf_append (&b, p, strlen (p));
  if (!commit_edit (ed, path, content, b.data, enc, r))
    return;
  long start_line = insert_line - SNIPPET_CONTEXT_WINDOW;
  if (start_line < 0)
    start_line = 0;
  long end_line = insert_line + SNIPPET_CONTEXT_WINDOW + new_lines;
  if (num_lines + new_lines < end_line)
    end_line = num_lines + new_lines;
  cleanup_free char *snippet = editor_line_range (b.data, start_line + 1, end_line);
  long shown_start = insert_line - SNIPPET_CONTEXT_WINDOW + 1;
  cleanup_free char *shown = editor_make_output (snippet, "a snippet of the edited file",
                                                 shown_start < 1 ? 1 : shown_start);
  r->output = xasprintf ("The file %s has been edited. %sReview the changes and make sure they are as expected "
                         "(correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
                         path, shown);
}

static void
editor_run (struct editor *ed, const char *command, const char *given, json_t *args, struct edit_result *r)
{
  /* OHEditor works on (and names) pathlib.Path(path). */
  cleanup_free char *path = editor_py_path (given);
  json_t *file_text = json_object_get (args, "file_text");
  json_t *old_str = json_object_get (args, "old_str");
  json_t *new_str = json_object_get (args, "new_str");
  json_t *insert_line = json_object_get (args, "insert_line");
  long line = 0;

  /* The server converts a numeric string (LLMs send them). */
  if (json_is_string (insert_line))
    {
      char *end;
      const char *s = json_string_value (insert_line);
      errno = 0;
      line = strtol (s, &end, 10);
      while (*end && strchr (" \t\n\r\v\f", *end))
        end++;
      if (end == s || *end || errno)
        {
          r->output = xasprintf ("ERROR:\nInvalid insert_line value: '%s'. Expected an integer.", s);
          return;
        }
    }
  else if (json_is_integer (insert_line))
    line = (long) json_integer_value (insert_line);
  else if (json_is_boolean (insert_line))
    line = json_is_true (insert_line); /* Python's bools are ints */
  else if (json_is_real (insert_line))
    line = (long) json_real_value (insert_line);

  r->output = validate_path (ed, command, path);
  if (r->output)
    return;
  if (strcmp (command, "view") == 0)
    r->output = editor_do_view (path, NULL); /* the server's edit passes no view_range */
  else if (strcmp (command, "create") == 0)
    {
      if (!json_is_string (file_text))
        {
          r->output = editor_err_text ("Parameter `file_text` is required for command: create.");
          return;
        }
      r->output = write_text (path, json_string_value (file_text), EDITOR_UTF8);
      if (r->output)
        return;
      hist_add (ed, path, json_string_value (file_text));
      r->output = xasprintf ("File created successfully at: %s", path);
      r->new_content = xstrdup (json_string_value (file_text));
    }
  else if (strcmp (command, "str_replace") == 0)
    {
      if (!json_is_string (old_str))
        r->output = editor_err_text ("Parameter `old_str` is required for command: str_replace.");
      else if (json_is_string (new_str) && strcmp (json_string_value (new_str), json_string_value (old_str)) == 0)
        r->output = editor_err_text (
          "Invalid `new_str` parameter: %s. No replacement was performed. `new_str` and `old_str` "
          "must be different.",
          json_string_value (new_str));
      else
        do_str_replace (ed, path, json_string_value (old_str), json_string_value (new_str), r);
    }
  else if (strcmp (command, "insert") == 0)
    {
      if (insert_line == NULL || json_is_null (insert_line))
        r->output = editor_err_text ("Parameter `insert_line` is required for command: insert.");
      else if (!json_is_string (new_str))
        r->output = editor_err_text ("Parameter `new_str` is required for command: insert.");
      else if (json_is_real (insert_line) && json_real_value (insert_line) != (double) line)
        {
          /* OHEditor takes a fraction and numbers the snippet's lines with
           * fractions; it is refused here instead. */
          cleanup_free char *shown = py_number_str (insert_line);
          r->output = editor_err_text ("Invalid `insert_line` parameter: %s. It should be an integer.", shown);
        }
      else
        do_insert (ed, path, line, json_string_value (new_str), r);
    }
  else if (strcmp (command, "undo_edit") == 0)
    {
      enum editor_encoding enc;
      char *current = editor_read_text (path, &enc, &r->output);
      if (current == NULL)
        return;
      char *old = hist_pop (ed, path);
      if (old == NULL)
        {
          r->output = editor_err_text ("No edit history found for %s.", path);
          free (current);
          return;
        }
      r->output = write_text (path, old, enc);
      if (r->output)
        {
          free (current);
          free (old);
          return;
        }
      cleanup_free char *shown = editor_make_output (old, path, 1);
      r->output = xasprintf ("Last edit to %s undone successfully. %s", path, shown);
      r->old_content = current;
      r->new_content = old;
    }
  else
    r->output = editor_err_text (
      "Unrecognized command %s. The allowed commands for the oh_editor tool are: view, create, "
      "str_replace, insert, undo_edit",
      command);
}

static json_t *
str_or_null (json_t *v)
{
  return json_is_string (v) ? json_copy (v) : json_null ();
}

json_t *
action_edit (struct executor *ex, json_t *args)
{
  json_t *jpath = json_object_get (args, "path");
  json_t *jcmd = json_object_get (args, "command");
  json_t *impl = json_object_get (args, "impl_source");
  if (json_is_string (impl) && strcmp (json_string_value (impl), "oh_aci") != 0)
    return obs_errorf ("edit with impl_source `%s` is not supported: the LLM-based editor runs in the backend.",
                       json_string_value (impl));
  if (!json_is_string (jpath))
    return obs_error ("Missing required argument `path` (a string) for action `edit`.");
  const char *path = json_string_value (jpath);
  const char *command = json_is_string (jcmd) ? json_string_value (jcmd) : "";

  struct edit_result r = { 0 };
  editor_run (ex->editor, command, path, args, &r);
  bool failed = strncmp (r.output, "ERROR:\n", 7) == 0;
  char *diff = failed ? xstrdup ("")
                      : unified_diff (r.old_content ? r.old_content : "", r.new_content ? r.new_content : "", path);

  cleanup_free char *message = xasprintf ("I edited the file %s.", path);
  json_t *extras = json_object ();
  json_object_set_new (extras, "path", json_str_lossy (path, strlen (path)));
  json_object_set_new (extras, "prev_exist", json_false ());
  json_object_set_new (extras, "old_content", str_or_null (json_object_get (args, "old_str")));
  json_object_set_new (extras, "new_content", str_or_null (json_object_get (args, "new_str")));
  json_object_set_new (extras, "impl_source", json_string ("oh_aci"));
  json_object_set_new (extras, "diff", json_str_lossy (diff, strlen (diff)));
  json_object_set_new (extras, "_diff_cache", json_null ());
  json_t *o = json_object ();
  json_object_set_new (o, "message", json_str_lossy (message, strlen (message)));
  json_object_set_new (o, "observation", json_string ("edit"));
  json_object_set_new (o, "content", json_str_lossy (r.output, strlen (r.output)));
  json_object_set_new (o, "extras", extras);
  free (diff);
  free (r.output);
  free (r.old_content);
  free (r.new_content);
  return o;
}
