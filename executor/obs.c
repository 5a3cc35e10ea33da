/* obs.c: see obs.h. */
#include "config.h"
#include "obs.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utils.h"

static const char truncation_marker[] = "\n[... Observation truncated due to length ...]\n";

void
run_meta_init (struct run_meta *m)
{
  memset (m, 0, sizeof (*m));
  m->exit_code = -1;
  m->pid = -1;
}

void
run_meta_release (struct run_meta *m)
{
  free (m->username);
  free (m->hostname);
  free (m->working_dir);
  free (m->py_interpreter_path);
  free (m->prefix);
  free (m->suffix);
  run_meta_init (m);
}

static json_t *
str_or_null (const char *s)
{
  return s ? json_str_lossy (s, strlen (s)) : json_null ();
}

json_t *
obs_run (const char *content, const char *command, const struct run_meta *m, bool hidden)
{
  cleanup_free char *text = hidden ? xstrdup (content) : truncate_middle (content, OBS_MAX_CMD_OUTPUT);
  json_t *meta = json_object ();
  json_object_set_new (meta, "exit_code", json_integer (m->exit_code));
  json_object_set_new (meta, "pid", json_integer (m->pid));
  json_object_set_new (meta, "username", str_or_null (m->username));
  json_object_set_new (meta, "hostname", str_or_null (m->hostname));
  json_object_set_new (meta, "working_dir", str_or_null (m->working_dir));
  json_object_set_new (meta, "py_interpreter_path", str_or_null (m->py_interpreter_path));
  json_object_set_new (meta, "prefix", json_str_lossy (m->prefix ? m->prefix : "", m->prefix ? strlen (m->prefix) : 0));
  json_object_set_new (meta, "suffix", json_str_lossy (m->suffix ? m->suffix : "", m->suffix ? strlen (m->suffix) : 0));

  json_t *extras = json_object ();
  json_object_set_new (extras, "command", json_str_lossy (command, strlen (command)));
  json_object_set_new (extras, "metadata", meta);
  json_object_set_new (extras, "hidden", json_boolean (hidden));

  cleanup_free char *message = xasprintf ("Command `%s` executed with exit code %d.", command, m->exit_code);
  json_t *obs = json_object ();
  json_object_set_new (obs, "message", json_str_lossy (message, strlen (message)));
  json_object_set_new (obs, "observation", json_string ("run"));
  json_object_set_new (obs, "content", json_str_lossy (text, strlen (text)));
  json_object_set_new (obs, "extras", extras);
  json_object_set_new (obs, "success", json_boolean (m->exit_code == 0));
  return obs;
}

json_t *
obs_error (const char *content)
{
  json_t *obs = json_object ();
  json_object_set_new (obs, "message", json_str_lossy (content, strlen (content)));
  json_object_set_new (obs, "observation", json_string ("error"));
  json_object_set_new (obs, "content", json_str_lossy (content, strlen (content)));
  json_t *extras = json_object ();
  json_object_set_new (extras, "error_id", json_string (""));
  json_object_set_new (obs, "extras", extras);
  return obs;
}

json_t *
obs_errorf (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = xvasprintf (fmt, ap);
  va_end (ap);
  json_t *o = obs_error (s);
  free (s);
  return o;
}

/* Length of the valid UTF-8 sequence at S (0 when invalid). */
static size_t
utf8_seq (const unsigned char *s, size_t len)
{
  unsigned char c = s[0];
  size_t n;
  unsigned int cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (len < n)
    return 0;
  for (size_t i = 1; i < n; i++)
    {
      if ((s[i] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[i] & 0x3f);
    }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

size_t
count_lines (const char *s)
{
  size_t n = 0, len = strlen (s);
  for (size_t i = 0; i < len; i++)
    if (s[i] == '\n')
      n++;
  if (len && s[len - 1] != '\n')
    n++;
  return n;
}

bool
utf8_valid (const char *s, size_t len)
{
  const unsigned char *p = (const unsigned char *) s;
  size_t i = 0;
  while (i < len)
    {
      size_t n = utf8_seq (p + i, len - i);
      if (n == 0)
        return false;
      i += n;
    }
  return true;
}

json_t *
json_str_lossy (const char *s, size_t len)
{
  if (utf8_valid (s, len))
    {
      json_t *ok = json_stringn (s, len);
      if (ok)
        return ok;
    }
  struct ohbox_buf b = { 0 };
  const unsigned char *p = (const unsigned char *) s;
  size_t i = 0;
  while (i < len)
    {
      size_t n = utf8_seq (p + i, len - i);
      if (n == 0)
        {
          ohbox_buf_append (&b, "\xef\xbf\xbd", 3);
          i++;
        }
      else
        {
          ohbox_buf_append (&b, p + i, n);
          i += n;
        }
    }
  ohbox_buf_append (&b, "", 0);
  json_t *j = json_stringn (b.data, b.len);
  free (b.data);
  return j ? j : json_string ("");
}

size_t
utf8_count (const char *s, size_t len)
{
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char) s[i] & 0xc0) != 0x80)
      n++;
  return n;
}

size_t
utf8_offset (const char *s, size_t len, size_t n)
{
  size_t count = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char) s[i] & 0xc0) != 0x80)
      {
        if (count == n)
          return i;
        count++;
      }
  return len;
}

char *
truncate_middle (const char *s, size_t max)
{
  size_t len = strlen (s);
  size_t count = utf8_count (s, len);
  if (count <= max)
    return xstrdup (s);
  size_t half = max / 2;
  size_t head_end = utf8_offset (s, len, half);
  size_t tail_start = utf8_offset (s, len, count - half);
  return xasprintf ("%.*s%s%s", (int) head_end, s, truncation_marker, s + tail_start);
}

char *
py_float_repr (double v)
{
  if (isnan (v))
    return xstrdup ("nan");
  if (isinf (v))
    return xstrdup (v > 0 ? "inf" : "-inf");
  /* Shortest digits that read back as V, then Python's layout: fixed
   * notation for exponents in [-4, 16), with at least one decimal. */
  char buf[64];
  int prec;
  for (prec = 1; prec <= 17; prec++)
    {
      snprintf (buf, sizeof (buf), "%.*e", prec - 1, v);
      if (strtod (buf, NULL) == v)
        break;
    }
  if (prec > 17)
    prec = 17;
  int exp = atoi (strchr (buf, 'e') + 1);
  if (exp >= -4 && exp < 16)
    {
      int dec = prec - 1 - exp;
      snprintf (buf, sizeof (buf), "%.*f", dec > 0 ? dec : 0, v);
      if (strchr (buf, '.') == NULL)
        strcat (buf, ".0");
    }
  return xstrdup (buf);
}

char *
py_number_str (json_t *num)
{
  if (json_is_integer (num))
    return xasprintf ("%lld", (long long) json_integer_value (num));
  return py_float_repr (json_number_value (num));
}

char *
base64_encode (const unsigned char *data, size_t len)
{
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *out = xmalloc ((len + 2) / 3 * 4 + 1);
  size_t o = 0, i = 0;
  for (; i + 2 < len; i += 3)
    {
      unsigned v = (unsigned) data[i] << 16 | (unsigned) data[i + 1] << 8 | data[i + 2];
      out[o++] = tbl[v >> 18];
      out[o++] = tbl[(v >> 12) & 63];
      out[o++] = tbl[(v >> 6) & 63];
      out[o++] = tbl[v & 63];
    }
  if (i < len)
    {
      unsigned v = (unsigned) data[i] << 16 | (i + 1 < len ? (unsigned) data[i + 1] << 8 : 0);
      out[o++] = tbl[v >> 18];
      out[o++] = tbl[(v >> 12) & 63];
      out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
      out[o++] = '=';
    }
  out[o] = '\0';
  return out;
}
