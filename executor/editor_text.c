/* editor_text.c: how openhands-aci's Python sees paths, file text and
 * parameters, so the editor's texts come out the same: pathlib's form of a
 * path, text files read with universal newlines and written back in their
 * own encoding, repr() of parameters in error messages, str.splitlines(). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "editor_private.h"
#include "obs.h"
#include "common/utils.h"

char *
editor_py_path (const char *p)
{
  size_t slashes = strspn (p, "/");
  struct ohbox_buf b = { 0 };
  /* POSIX leaves a path starting with exactly two slashes to the system;
   * pathlib keeps them, and folds three or more into one. */
  if (slashes == 2)
    ohbox_buf_append (&b, "//", 2);
  else if (slashes)
    ohbox_buf_append (&b, "/", 1);
  size_t root = b.len;
  for (const char *s = p + slashes; *s;)
    {
      size_t n = strcspn (s, "/");
      if (n && !(n == 1 && s[0] == '.'))
        {
          if (b.len > root)
            ohbox_buf_append (&b, "/", 1);
          ohbox_buf_append (&b, s, n);
        }
      s += n;
      s += strspn (s, "/");
    }
  if (b.len == 0)
    ohbox_buf_append (&b, ".", 1);
  ohbox_buf_append (&b, "", 0);
  return b.data;
}

/* One code point of valid UTF-8 at S (length in *N). */
static unsigned
utf8_decode_one (const unsigned char *s, size_t *n)
{
  if (s[0] < 0x80)
    return *n = 1, s[0];
  if (s[0] < 0xe0)
    return *n = 2, ((s[0] & 0x1fu) << 6) | (s[1] & 0x3fu);
  if (s[0] < 0xf0)
    return *n = 3, ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
  return *n = 4, ((s[0] & 0x07u) << 18) | ((s[1] & 0x3fu) << 12) | ((s[2] & 0x3fu) << 6) | (s[3] & 0x3fu);
}

char *
editor_decode (char *data, size_t len, enum editor_encoding *enc)
{
  char *text = data;
  *enc = EDITOR_UTF8;
  if (!utf8_valid (data, len))
    {
      /* Latin-1 maps every byte to a character and back, so a file in a
       * legacy encoding is shown readably and untouched bytes survive. */
      *enc = EDITOR_LATIN1;
      text = xmalloc (len * 2 + 1);
      size_t o = 0;
      for (size_t i = 0; i < len; i++)
        {
          unsigned char c = (unsigned char) data[i];
          if (c < 0x80)
            text[o++] = (char) c;
          else
            {
              text[o++] = (char) (0xc0 | (c >> 6));
              text[o++] = (char) (0x80 | (c & 0x3f));
            }
        }
      text[o] = '\0';
      len = o;
      free (data);
    }
  /* Python's universal newlines: "\r\n" and a lone "\r" read as "\n". */
  size_t o = 0;
  for (size_t i = 0; i < len; i++)
    {
      if (text[i] == '\r')
        {
          text[o++] = '\n';
          if (i + 1 < len && text[i + 1] == '\n')
            i++;
        }
      else
        text[o++] = text[i];
    }
  text[o] = '\0';
  return text;
}

char *
editor_encode (const char *text, enum editor_encoding enc, size_t *out_len, char **why)
{
  size_t len = strlen (text);
  if (enc == EDITOR_UTF8)
    {
      *out_len = len;
      return xstrdup (text);
    }
  char *out = xmalloc (len + 1);
  size_t o = 0, index = 0;
  for (size_t i = 0; i < len; index++)
    {
      size_t n;
      unsigned cp = utf8_decode_one ((const unsigned char *) text + i, &n);
      if (cp > 0xff)
        {
          /* Python names the whole run of characters it cannot encode. */
          size_t end = index + 1, j = i + n, m;
          while (j < len && utf8_decode_one ((const unsigned char *) text + j, &m) > 0xff)
            j += m, end++;
          if (end - index == 1)
            *why = xasprintf ("'latin-1' codec can't encode character '\\%s%0*x' in position %zu: ordinal not in "
                              "range(256)",
                              cp > 0xffff ? "U" : "u", cp > 0xffff ? 8 : 4, cp, index);
          else
            *why = xasprintf ("'latin-1' codec can't encode characters in position %zu-%zu: ordinal not in range(256)",
                              index, end - 1);
          free (out);
          return NULL;
        }
      out[o++] = (char) cp;
      i += n;
    }
  out[o] = '\0';
  *out_len = o;
  return out;
}

/* repr() of a Python str holding S. */
static void
py_repr_str (struct ohbox_buf *b, const char *s)
{
  char q = strchr (s, '\'') && !strchr (s, '"') ? '"' : '\'';
  ohbox_buf_append (b, &q, 1);
  size_t len = strlen (s);
  for (size_t i = 0; i < len;)
    {
      size_t n;
      unsigned cp = utf8_decode_one ((const unsigned char *) s + i, &n);
      char esc[16];
      const char *e = NULL;
      if (cp == '\\' || cp == (unsigned char) q)
        e = cp == '\\' ? "\\\\" : q == '\'' ? "\\'" : "\\\"";
      else if (cp == '\n')
        e = "\\n";
      else if (cp == '\r')
        e = "\\r";
      else if (cp == '\t')
        e = "\\t";
      else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
        snprintf (esc, sizeof (esc), "\\x%02x", cp), e = esc;
      else if (cp == 0x2028 || cp == 0x2029)
        snprintf (esc, sizeof (esc), "\\u%04x", cp), e = esc;
      if (e)
        ohbox_buf_append (b, e, strlen (e));
      else
        ohbox_buf_append (b, s + i, n);
      i += n;
    }
  ohbox_buf_append (b, &q, 1);
}

static void
py_repr_into (struct ohbox_buf *b, json_t *v)
{
  char *s = NULL;
  switch (json_typeof (v))
    {
    case JSON_STRING:
      py_repr_str (b, json_string_value (v));
      return;
    case JSON_INTEGER:
    case JSON_REAL:
      s = py_number_str (v);
      break;
    case JSON_TRUE:
      s = xstrdup ("True");
      break;
    case JSON_FALSE:
      s = xstrdup ("False");
      break;
    case JSON_NULL:
      s = xstrdup ("None");
      break;
    case JSON_ARRAY:
      ohbox_buf_append (b, "[", 1);
      for (size_t i = 0; i < json_array_size (v); i++)
        {
          if (i)
            ohbox_buf_append (b, ", ", 2);
          py_repr_into (b, json_array_get (v, i));
        }
      ohbox_buf_append (b, "]", 1);
      return;
    case JSON_OBJECT:
      {
        const char *k;
        json_t *x;
        bool first = true;
        ohbox_buf_append (b, "{", 1);
        json_object_foreach (v, k, x)
        {
          if (!first)
            ohbox_buf_append (b, ", ", 2);
          first = false;
          py_repr_str (b, k);
          ohbox_buf_append (b, ": ", 2);
          py_repr_into (b, x);
        }
        ohbox_buf_append (b, "}", 1);
        return;
      }
    }
  ohbox_buf_append (b, s, strlen (s));
  free (s);
}

char *
editor_py_repr (json_t *v)
{
  struct ohbox_buf b = { 0 };
  if (v == NULL)
    ohbox_buf_append (&b, "None", 4);
  else
    py_repr_into (&b, v);
  ohbox_buf_append (&b, "", 0);
  return b.data;
}

char *
editor_py_str (json_t *v)
{
  return json_is_string (v) ? xstrdup (json_string_value (v)) : editor_py_repr (v);
}

/* Length of the str.splitlines() boundary at S, 0 if none. */
static size_t
line_boundary (const unsigned char *s)
{
  if (s[0] == '\r' && s[1] == '\n')
    return 2;
  if (s[0] && strchr ("\n\r\v\f\x1c\x1d\x1e", s[0]))
    return 1;
  if (s[0] == 0xc2 && s[1] == 0x85)
    return 2;
  if (s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9))
    return 3;
  return 0;
}

char *
editor_splitlines_join (const char *s)
{
  size_t len = strlen (s), o = 0;
  char *out = xmalloc (len + 1);
  bool ends_with_boundary = false;
  for (size_t i = 0; i < len;)
    {
      size_t n = line_boundary ((const unsigned char *) s + i);
      if (n)
        {
          out[o++] = '\n';
          i += n;
          ends_with_boundary = true;
        }
      else
        {
          out[o++] = s[i++];
          ends_with_boundary = false;
        }
    }
  if (ends_with_boundary)
    o--; /* splitlines() gives no empty piece after the last boundary */
  out[o] = '\0';
  return out;
}
