/* toml_subset.c: see toml_subset.h. A hand-written recursive-descent
 * parser over a NUL-terminated text; every allocation is bounded by the
 * limits in the header. */
#include "config.h"
#include "common/toml_subset.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utils.h"

struct toml
{
  const char *p;
  const char *file;
  int line;
};

void
ohbox_toml_value_clear (struct toml_value *v)
{
  free (v->s);
  for (size_t i = 0; i < v->n; i++)
    free (v->items[i]);
  free (v->items);
  memset (v, 0, sizeof *v);
}

int
ohbox_toml_error (ohbox_error_t *err, const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = xvasprintf (fmt, ap);
  va_end (ap);
  /* Values quoted in messages may hold escaped control characters. */
  for (char *p = msg; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  if (line <= 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s: %s", file, msg);
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s:%d: %s", file, line, msg);
}

#define toml_error(t, err, ...) ohbox_toml_error (err, (t)->file, (t)->line, __VA_ARGS__)

static void
skip_blank (struct toml *t)
{
  while (*t->p == ' ' || *t->p == '\t')
    t->p++;
}

static void
skip_comment (struct toml *t)
{
  if (*t->p == '#')
    while (*t->p && *t->p != '\n')
      t->p++;
}

/* Consumes the end of a line (blanks, a comment, the newline or the end of
 * the text); false when something else is there. */
static bool
eat_eol (struct toml *t)
{
  skip_blank (t);
  skip_comment (t);
  if (*t->p == '\0')
    return true;
  if (t->p[0] == '\r' && t->p[1] == '\n')
    t->p++;
  if (*t->p != '\n')
    return false;
  t->p++;
  t->line++;
  return true;
}

/* Blank lines and comments, inside arrays and between statements. */
static void
skip_space_lines (struct toml *t)
{
  for (;;)
    {
      const char *before = t->p;
      skip_blank (t);
      if (*t->p == '#' || *t->p == '\n' || (t->p[0] == '\r' && t->p[1] == '\n'))
        {
          eat_eol (t);
          continue;
        }
      if (t->p == before)
        return;
    }
}

static int
hex_value (char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static void
append_utf8 (struct ohbox_buf *b, unsigned long cp)
{
  unsigned char u[4];
  size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static const unsigned char lead[] = { 0, 0xc0, 0xe0, 0xf0 };
  for (size_t i = n - 1; i > 0; i--)
    {
      u[i] = (unsigned char) (0x80 | (cp & 0x3f));
      cp >>= 6;
    }
  u[0] = (unsigned char) (lead[n - 1] | cp);
  ohbox_buf_append (b, u, n);
}

/* \uXXXX or \UXXXXXXXX after the backslash and the letter. */
static int
parse_unicode_escape (struct toml *t, struct ohbox_buf *b, int digits, ohbox_error_t *err)
{
  unsigned long cp = 0;
  for (int i = 0; i < digits; i++)
    {
      int h = hex_value (t->p[i]);
      if (h < 0)
        return toml_error (t, err, "`\\%c` needs %d hexadecimal digits", digits == 4 ? 'u' : 'U', digits);
      cp = cp * 16 + (unsigned long) h;
    }
  /* NUL would cut the C string; surrogates and beyond are not characters. */
  if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return toml_error (t, err, "invalid character U+%04lX in a string", cp);
  t->p += digits;
  append_utf8 (b, cp);
  return 0;
}

static int
parse_string (struct toml *t, char **out, ohbox_error_t *err)
{
  const char q = *t->p;
  if (t->p[1] == q && t->p[2] == q)
    return toml_error (t, err, "multi-line strings are not supported");
  t->p++;
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  for (;;)
    {
      unsigned char c = (unsigned char) *t->p;
      if (c == '\0' || c == '\n' || c == '\r')
        {
          ohbox_buf_free (&b);
          return toml_error (t, err, "unterminated string (missing %c)", q);
        }
      t->p++;
      if (c == (unsigned char) q)
        break;
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        {
          ohbox_buf_free (&b);
          return toml_error (t, err, "control character 0x%02x in a string", c);
        }
      if (q == '"' && c == '\\')
        {
          static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
          char e = *t->p;
          const char *pos = e ? strchr (from, e) : NULL;
          if (e)
            t->p++;
          int r = 0;
          if (pos)
            ohbox_buf_append (&b, &to[pos - from], 1);
          else if (e == 'u' || e == 'U')
            r = parse_unicode_escape (t, &b, e == 'u' ? 4 : 8, err);
          else
            r = toml_error (t, err, "unknown escape `\\%c` in a string", e >= 0x20 && e < 0x7f ? e : '?');
          if (r < 0)
            {
              ohbox_buf_free (&b);
              return -1;
            }
        }
      else
        ohbox_buf_append (&b, &c, 1);
      if (b.len > TOML_STRING_MAX)
        {
          ohbox_buf_free (&b);
          return toml_error (t, err, "string longer than %d bytes", TOML_STRING_MAX);
        }
    }
  *out = b.data;
  return 0;
}

static bool
is_bare_key_char (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int
parse_key (struct toml *t, char **out, ohbox_error_t *err)
{
  if (*t->p == '"' || *t->p == '\'')
    return parse_string (t, out, err);
  const char *start = t->p;
  while (is_bare_key_char (*t->p))
    t->p++;
  if (t->p == start)
    {
      char c = *t->p;
      return toml_error (t, err, "expected a key, found `%c`", c >= 0x20 && c < 0x7f ? c : '?');
    }
  if ((size_t) (t->p - start) > TOML_STRING_MAX)
    return toml_error (t, err, "key longer than %d bytes", TOML_STRING_MAX);
  *out = xstrndup (start, (size_t) (t->p - start));
  return 0;
}

static int
parse_array (struct toml *t, struct toml_value *v, ohbox_error_t *err)
{
  v->type = TOML_ARRAY;
  v->items = xcalloc (1, sizeof (char *));
  t->p++;
  for (;;)
    {
      skip_space_lines (t);
      if (*t->p == ']')
        break;
      if (*t->p == '\0')
        return toml_error (t, err, "unterminated array (missing `]`)");
      if (*t->p != '"' && *t->p != '\'')
        return toml_error (t, err, "arrays may only hold strings");
      if (v->n == TOML_ARRAY_MAX)
        return toml_error (t, err, "array with more than %d elements", TOML_ARRAY_MAX);
      char *s = NULL;
      if (parse_string (t, &s, err) < 0)
        return -1;
      v->items = xrealloc (v->items, (v->n + 2) * sizeof (char *));
      v->items[v->n++] = s;
      v->items[v->n] = NULL;
      skip_space_lines (t);
      if (*t->p == ',')
        {
          t->p++;
          continue;
        }
      if (*t->p == ']')
        break;
      return toml_error (t, err, *t->p ? "expected `,` or `]` in an array" : "unterminated array (missing `]`)");
    }
  t->p++;
  return 0;
}

static int
parse_value (struct toml *t, struct toml_value *v, ohbox_error_t *err)
{
  memset (v, 0, sizeof *v);
  if (*t->p == '"' || *t->p == '\'')
    {
      v->type = TOML_STRING;
      return parse_string (t, &v->s, err);
    }
  if (*t->p == '[')
    return parse_array (t, v, err);
  for (int b = 0; b < 2; b++)
    {
      const char *word = b ? "true" : "false";
      size_t n = strlen (word);
      if (strncmp (t->p, word, n) == 0 && !is_bare_key_char (t->p[n]))
        {
          t->p += n;
          v->type = TOML_BOOL;
          v->b = b;
          return 0;
        }
    }
  if (*t->p == '\0' || *t->p == '\n' || *t->p == '\r' || *t->p == '#')
    return toml_error (t, err, "missing value after `=`");
  return toml_error (t, err, "unsupported value: only strings, true/false and arrays of strings are understood");
}

/* `[a.b]` or `[[a.b]]` up to the end of its line. */
static int
parse_header (struct toml *t, const struct toml_handler *h, void *data, ohbox_error_t *err)
{
  int line = t->line;
  bool array = t->p[1] == '[';
  t->p += array ? 2 : 1;
  char *path[TOML_PATH_MAX] = { NULL };
  size_t n = 0;
  int ret = -1;
  for (;;)
    {
      skip_blank (t);
      if (n == TOML_PATH_MAX)
        {
          toml_error (t, err, "table name with more than %d parts", TOML_PATH_MAX);
          goto out;
        }
      if (parse_key (t, &path[n++], err) < 0)
        goto out;
      skip_blank (t);
      if (*t->p != '.')
        break;
      t->p++;
    }
  if (*t->p != ']' || (array && t->p[1] != ']'))
    {
      toml_error (t, err, "expected `%s` to end the table name", array ? "]]" : "]");
      goto out;
    }
  t->p += array ? 2 : 1;
  if (!eat_eol (t))
    {
      toml_error (t, err, "unexpected text after the table name");
      goto out;
    }
  ret = h->table (data, path, n, array, line, err);
out:
  for (size_t i = 0; i < n; i++)
    free (path[i]);
  return ret;
}

/* `key = value` up to the end of its line (or of its array). */
static int
parse_statement (struct toml *t, const struct toml_handler *h, void *data, ohbox_error_t *err)
{
  cleanup_free char *key = NULL;
  struct toml_value v = { 0 };
  int line = t->line;
  int ret = -1;
  if (parse_key (t, &key, err) < 0)
    return -1;
  skip_blank (t);
  if (*t->p == '.')
    return toml_error (t, err, "dotted keys are not supported");
  if (*t->p != '=')
    return toml_error (t, err, "expected `=` after `%s`", key);
  t->p++;
  skip_blank (t);
  if (parse_value (t, &v, err) < 0)
    goto out;
  if (!eat_eol (t))
    {
      toml_error (t, err, "unexpected text after the value of `%s`", key);
      goto out;
    }
  ret = h->keyval (data, key, &v, line, err);
out:
  ohbox_toml_value_clear (&v);
  return ret;
}

int
ohbox_toml_parse (const char *text, const char *filename, const struct toml_handler *h, void *data, ohbox_error_t *err)
{
  struct toml t = { .p = text, .file = filename, .line = 1 };
  for (;;)
    {
      skip_space_lines (&t);
      if (*t.p == '\0')
        return 0;
      if ((*t.p == '[' ? parse_header (&t, h, data, err) : parse_statement (&t, h, data, err)) < 0)
        return -1;
    }
}
