/* yaml_json.c: see yaml_json.h.
 *
 * libyaml parses (it is the YAML 1.1 parser Debian ships); this file only
 * builds the value from its events.  A plain scalar is typed as YAML 1.1's
 * core schema types it (null, booleans, integers with 0/0o/0x prefixes,
 * floats), a quoted or `!!str` one stays a string.  Aliases are refused:
 * CDI specs do not use them, and a few nested aliases expand to gigabytes
 * ("billion laughs").  Nesting is bounded for the same reason. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/dl_yaml.h"
#include "common/utils.h"
#include "common/yaml_json.h"

#define MAX_DEPTH 64

struct reader
{
  yaml_parser_t parser;
  const char *what;
  ohbox_error_t *err;
};

static int
parser_error (struct reader *r)
{
  yaml_parser_t *p = &r->parser;
  if (p->error == YAML_MEMORY_ERROR)
    return ohbox_error (r->err, OHBOX_ERR_GENERIC, ENOMEM, "%s: out of memory", r->what);
  return ohbox_error (r->err, OHBOX_ERR_USAGE, 0, "%s: line %zu, column %zu: %s%s%s", r->what,
                      (size_t) p->problem_mark.line + 1, (size_t) p->problem_mark.column + 1,
                      p->problem ? p->problem : "invalid YAML", p->context ? " " : "", p->context ? p->context : "");
}

static int
node_error (struct reader *r, const yaml_event_t *ev, const char *problem)
{
  return ohbox_error (r->err, OHBOX_ERR_USAGE, 0, "%s: line %zu, column %zu: %s", r->what,
                      (size_t) ev->start_mark.line + 1, (size_t) ev->start_mark.column + 1, problem);
}

static int
next_event (struct reader *r, yaml_event_t *ev)
{
  if (!yaml_parser_parse (&r->parser, ev))
    return parser_error (r);
  return 0;
}

static bool
all_digits (const char *s, const char *digits)
{
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (strchr (digits, *s) == NULL)
      return false;
  return true;
}

/* A plain scalar's integer value, as YAML 1.1 reads it. */
static bool
plain_integer (const char *s, json_int_t *out)
{
  const char *d = s + (*s == '-' || *s == '+');
  int base = 10;
  const char *digits = "0123456789";
  if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
    base = 16, d += 2, digits = "0123456789abcdefABCDEF";
  else if (d[0] == '0' && d[1] == 'o')
    base = 8, d += 2, digits = "01234567";
  else if (d[0] == '0' && d[1] != '\0')
    base = 8, d += 1, digits = "01234567";
  if (!all_digits (d, digits))
    return false;
  errno = 0;
  char *end = NULL;
  long long v = strtoll (d, &end, base);
  if (errno != 0 || *end != '\0')
    return false;
  *out = *s == '-' ? -v : v;
  return true;
}

static bool
plain_float (const char *s, double *out)
{
  if (strspn (s, "0123456789+-.eE") != strlen (s) || strpbrk (s, "0123456789") == NULL || strchr (s, '.') == NULL)
    return false;
  char *end = NULL;
  errno = 0;
  double v = strtod (s, &end);
  if (errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

static json_t *
scalar_value (const yaml_event_t *ev)
{
  const char *s = (const char *) ev->data.scalar.value;
  size_t len = ev->data.scalar.length;
  const char *tag = (const char *) ev->data.scalar.tag;
  if (tag != NULL && strcmp (tag, YAML_STR_TAG) == 0)
    return json_stringn (s, len);
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || strlen (s) != len)
    return json_stringn (s, len);
  static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
  static const char *const trues[] = { "true", "True", "TRUE" };
  static const char *const falses[] = { "false", "False", "FALSE" };
  for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
    if (strcmp (s, nulls[i]) == 0)
      return json_null ();
  for (size_t i = 0; i < 3; i++)
    {
      if (strcmp (s, trues[i]) == 0)
        return json_true ();
      if (strcmp (s, falses[i]) == 0)
        return json_false ();
    }
  json_int_t i;
  double d;
  if (plain_integer (s, &i))
    return json_integer (i);
  if (plain_float (s, &d))
    return json_real (d);
  return json_stringn (s, len);
}

static int read_node (struct reader *r, yaml_event_t *ev, int depth, json_t **out);

static int
read_sequence (struct reader *r, int depth, json_t *arr)
{
  for (;;)
    {
      yaml_event_t ev;
      if (next_event (r, &ev) < 0)
        return -1;
      if (ev.type == YAML_SEQUENCE_END_EVENT)
        {
          yaml_event_delete (&ev);
          return 0;
        }
      json_t *item = NULL;
      int rc = read_node (r, &ev, depth, &item);
      yaml_event_delete (&ev);
      if (rc < 0)
        return -1;
      json_array_append_new (arr, item);
    }
}

static int
read_mapping (struct reader *r, int depth, json_t *obj)
{
  for (;;)
    {
      yaml_event_t key;
      if (next_event (r, &key) < 0)
        return -1;
      if (key.type == YAML_MAPPING_END_EVENT)
        {
          yaml_event_delete (&key);
          return 0;
        }
      if (key.type != YAML_SCALAR_EVENT)
        {
          node_error (r, &key, "a mapping key must be a plain string");
          yaml_event_delete (&key);
          return -1;
        }
      cleanup_free char *name = xstrdup ((const char *) key.data.scalar.value);
      if (json_object_get (obj, name) != NULL)
        {
          cleanup_free char *msg = xasprintf ("the key `%s` appears twice", name);
          node_error (r, &key, msg);
          yaml_event_delete (&key);
          return -1;
        }
      yaml_event_delete (&key);
      yaml_event_t ev;
      if (next_event (r, &ev) < 0)
        return -1;
      json_t *value = NULL;
      int rc = read_node (r, &ev, depth, &value);
      yaml_event_delete (&ev);
      if (rc < 0)
        return -1;
      json_object_set_new (obj, name, value);
    }
}

/* The value whose first event is EV (owned by the caller). */
static int
read_node (struct reader *r, yaml_event_t *ev, int depth, json_t **out)
{
  if (depth >= MAX_DEPTH)
    return node_error (r, ev, "nested more than 64 levels deep");
  switch (ev->type)
    {
    case YAML_SCALAR_EVENT:
      *out = scalar_value (ev);
      return 0;
    case YAML_SEQUENCE_START_EVENT:
      *out = json_array ();
      if (read_sequence (r, depth + 1, *out) < 0)
        {
          json_decref (*out);
          *out = NULL;
          return -1;
        }
      return 0;
    case YAML_MAPPING_START_EVENT:
      *out = json_object ();
      if (read_mapping (r, depth + 1, *out) < 0)
        {
          json_decref (*out);
          *out = NULL;
          return -1;
        }
      return 0;
    case YAML_ALIAS_EVENT:
      return node_error (r, ev, "aliases (*name) are not supported");
    default:
      return node_error (r, ev, "unexpected YAML event");
    }
}

/* The next event, which must be of TYPE. */
static int
expect (struct reader *r, yaml_event_type_t type, const char *problem)
{
  yaml_event_t ev;
  if (next_event (r, &ev) < 0)
    return -1;
  int rc = ev.type == type ? 0 : node_error (r, &ev, problem);
  yaml_event_delete (&ev);
  return rc;
}

json_t *
ohbox_yaml_to_json (const char *text, size_t len, const char *what, ohbox_error_t *err)
{
  if (ohbox_dl_yaml_load (err) < 0)
    return NULL;
  struct reader r = { .what = what, .err = err };
  if (!yaml_parser_initialize (&r.parser))
    {
      ohbox_error (err, OHBOX_ERR_GENERIC, ENOMEM, "%s: out of memory", what);
      return NULL;
    }
  yaml_parser_set_input_string (&r.parser, (const unsigned char *) text, len);
  json_t *value = NULL;
  yaml_event_t ev;
  if (expect (&r, YAML_STREAM_START_EVENT, "not a YAML stream") < 0 || next_event (&r, &ev) < 0)
    goto out;
  if (ev.type != YAML_DOCUMENT_START_EVENT)
    {
      node_error (&r, &ev, "the file holds no YAML document");
      yaml_event_delete (&ev);
      goto out;
    }
  yaml_event_delete (&ev);
  if (next_event (&r, &ev) < 0)
    goto out;
  int rc = read_node (&r, &ev, 0, &value);
  yaml_event_delete (&ev);
  if (rc < 0 || expect (&r, YAML_DOCUMENT_END_EVENT, "the document does not end here") < 0
      || expect (&r, YAML_STREAM_END_EVENT, "more than one YAML document in the file") < 0)
    {
      json_decref (value);
      value = NULL;
    }
out:
  yaml_parser_delete (&r.parser);
  return value;
}
