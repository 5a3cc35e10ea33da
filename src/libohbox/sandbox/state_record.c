/* state_record.c: config.json and state.json to typed records and back
 * (state.h); no I/O, so the unit tests drive it directly. */
#include "config.h"
#include "sandbox/state.h"
#include "common/utils.h"

#include <string.h>

static const char *const status_names[OHBOX_STATUS_COUNT] = {
  [OHBOX_STATUS_CREATED] = "created",
  [OHBOX_STATUS_RUNNING] = "running",
  [OHBOX_STATUS_PAUSED] = "paused",
  [OHBOX_STATUS_EXITED] = "exited",
};

const char *
ohbox_status_name (enum ohbox_sandbox_status s)
{
  return (unsigned) s < OHBOX_STATUS_COUNT ? status_names[s] : "unknown";
}

int
ohbox_status_parse (const char *name, enum ohbox_sandbox_status *ret)
{
  for (int i = 0; name && i < OHBOX_STATUS_COUNT; i++)
    if (strcmp (name, status_names[i]) == 0)
      {
        *ret = (enum ohbox_sandbox_status) i;
        return 0;
      }
  return -1;
}

/* ---- field helpers: a field of the wrong type is absent ---- */

static bool
get_string (json_t *doc, const char *key, char **ret)
{
  const char *s = json_string_value (json_object_get (doc, key));
  if (s == NULL)
    return false;
  *ret = xstrdup (s);
  return true;
}

static bool
get_bool (json_t *doc, const char *key, bool *ret)
{
  json_t *v = json_object_get (doc, key);
  if (!json_is_boolean (v))
    return false;
  *ret = json_is_true (v);
  return true;
}

static bool
get_int (json_t *doc, const char *key, json_int_t *ret)
{
  json_t *v = json_object_get (doc, key);
  if (!json_is_integer (v))
    return false;
  *ret = json_integer_value (v);
  return true;
}

static char **
strings_of (json_t *arr)
{
  if (!json_is_array (arr))
    return NULL;
  size_t i;
  json_t *v;
  json_array_foreach (arr, i, v) if (!json_is_string (v)) return NULL;
  char **out = xcalloc (json_array_size (arr) + 1, sizeof *out);
  json_array_foreach (arr, i, v) out[i] = xstrdup (json_string_value (v));
  return out;
}

static json_t *
strings_json (char *const *v)
{
  json_t *arr = json_array ();
  for (size_t i = 0; v && v[i]; i++)
    json_array_append_new (arr, json_string (v[i]));
  return arr;
}

static json_t *
string_or_null (const char *s)
{
  return s ? json_string (s) : json_null ();
}

/* A copy of DOC to write back (its unknown keys kept in their places), or a
 * new object. */
static json_t *
start_from (json_t *doc)
{
  return json_is_object (doc) ? json_deep_copy (doc) : json_object ();
}

/* ---- config.json ---- */

int
ohbox_sandbox_config_parse (json_t *doc, struct ohbox_sandbox_config *c)
{
  memset (c, 0, sizeof *c);
  if (!json_is_object (doc))
    return -1;
  c->doc = json_incref (doc);
  json_int_t v;
  c->present |= get_string (doc, "id", &c->id) ? OHBOX_CONFIG_ID : 0;
  if (json_is_null (json_object_get (doc, "name")) || get_string (doc, "name", &c->name))
    c->present |= OHBOX_CONFIG_NAME;
  c->present |= get_string (doc, "image", &c->image) ? OHBOX_CONFIG_IMAGE : 0;
  c->present |= get_string (doc, "image_id", &c->image_id) ? OHBOX_CONFIG_IMAGE_ID : 0;
  c->command = strings_of (json_object_get (doc, "command"));
  c->present |= c->command ? OHBOX_CONFIG_COMMAND : 0;
  c->present |= get_string (doc, "created", &c->created) ? OHBOX_CONFIG_CREATED : 0;
  c->present |= get_bool (doc, "rm", &c->rm) ? OHBOX_CONFIG_RM : 0;
  c->present |= get_bool (doc, "detached", &c->detached) ? OHBOX_CONFIG_DETACHED : 0;
  c->present |= get_string (doc, "store", &c->store) ? OHBOX_CONFIG_STORE : 0;
  if (get_int (doc, "stop_signal", &v))
    {
      c->stop_signal = (int) v;
      c->present |= OHBOX_CONFIG_STOP_SIGNAL;
    }
  c->present |= get_bool (doc, "tty", &c->tty) ? OHBOX_CONFIG_TTY : 0;
  if (get_int (doc, "storage_size", &v) && v >= 0)
    {
      c->storage_size = (unsigned long long) v;
      c->present |= OHBOX_CONFIG_STORAGE_SIZE;
    }
  if ((c->devices = json_object_get (doc, "devices")))
    {
      json_incref (c->devices);
      c->present |= OHBOX_CONFIG_DEVICES;
    }
  json_t *labels = json_object_get (doc, "labels");
  if (json_is_object (labels))
    {
      c->labels = json_incref (labels);
      c->present |= OHBOX_CONFIG_LABELS;
    }
  return 0;
}

json_t *
ohbox_sandbox_config_to_json (const struct ohbox_sandbox_config *c)
{
  json_t *j = start_from (c->doc);
  unsigned p = c->present;
  if (p & OHBOX_CONFIG_ID)
    json_object_set_new (j, "id", json_string (c->id));
  if (p & OHBOX_CONFIG_NAME)
    json_object_set_new (j, "name", string_or_null (c->name));
  if (p & OHBOX_CONFIG_IMAGE)
    json_object_set_new (j, "image", json_string (c->image));
  if (p & OHBOX_CONFIG_IMAGE_ID)
    json_object_set_new (j, "image_id", json_string (c->image_id));
  if (p & OHBOX_CONFIG_COMMAND)
    json_object_set_new (j, "command", strings_json (c->command));
  if (p & OHBOX_CONFIG_CREATED)
    json_object_set_new (j, "created", json_string (c->created));
  if (p & OHBOX_CONFIG_RM)
    json_object_set_new (j, "rm", json_boolean (c->rm));
  if (p & OHBOX_CONFIG_DETACHED)
    json_object_set_new (j, "detached", json_boolean (c->detached));
  if (p & OHBOX_CONFIG_STORE)
    json_object_set_new (j, "store", json_string (c->store));
  if (p & OHBOX_CONFIG_STOP_SIGNAL)
    json_object_set_new (j, "stop_signal", json_integer (c->stop_signal));
  if (p & OHBOX_CONFIG_TTY)
    json_object_set_new (j, "tty", json_boolean (c->tty));
  if (p & OHBOX_CONFIG_STORAGE_SIZE)
    json_object_set_new (j, "storage_size", json_integer ((json_int_t) c->storage_size));
  if (p & OHBOX_CONFIG_DEVICES)
    json_object_set (j, "devices", c->devices);
  if (p & OHBOX_CONFIG_LABELS)
    json_object_set (j, "labels", c->labels);
  return j;
}

void
ohbox_sandbox_config_clear (struct ohbox_sandbox_config *c)
{
  free (c->id);
  free (c->name);
  free (c->image);
  free (c->image_id);
  for (size_t i = 0; c->command && c->command[i]; i++)
    free (c->command[i]);
  free (c->command);
  free (c->created);
  free (c->store);
  json_decref (c->devices);
  json_decref (c->labels);
  json_decref (c->doc);
  memset (c, 0, sizeof *c);
}

/* ---- state.json ---- */

int
ohbox_sandbox_record_parse (json_t *doc, struct ohbox_sandbox_record *r)
{
  memset (r, 0, sizeof *r);
  if (!json_is_object (doc))
    return -1;
  r->doc = json_incref (doc);
  const char *status = json_string_value (json_object_get (doc, "status"));
  if (ohbox_status_parse (status, &r->status) == 0)
    r->present |= OHBOX_RECORD_STATUS;
  else if (status)
    r->status_unknown = xstrdup (status);
  json_int_t v;
  if (get_int (doc, "pid", &v))
    {
      r->pid = (pid_t) v;
      r->present |= OHBOX_RECORD_PID;
    }
  if (get_int (doc, "pid_start", &v))
    {
      r->pid_start = (unsigned long long) v;
      r->present |= OHBOX_RECORD_PID_START;
    }
  r->present |= get_string (doc, "started_at", &r->started_at) ? OHBOX_RECORD_STARTED_AT : 0;
  if (get_int (doc, "exit_code", &v))
    {
      r->exit_code = (int) v;
      r->present |= OHBOX_RECORD_EXIT_CODE;
    }
  r->present |= get_string (doc, "finished_at", &r->finished_at) ? OHBOX_RECORD_FINISHED_AT : 0;
  r->present |= get_bool (doc, "paused", &r->paused) ? OHBOX_RECORD_PAUSED : 0;
  r->present |= get_bool (doc, "timed_out", &r->timed_out) ? OHBOX_RECORD_TIMED_OUT : 0;
  r->present |= get_string (doc, "hook_warning", &r->hook_warning) ? OHBOX_RECORD_HOOK_WARNING : 0;
  json_t *notes = json_object_get (doc, "annotations");
  if (json_is_object (notes))
    {
      r->annotations = json_deep_copy (notes);
      r->present |= OHBOX_RECORD_ANNOTATIONS;
    }
  return 0;
}

json_t *
ohbox_sandbox_record_to_json (const struct ohbox_sandbox_record *r)
{
  json_t *j = start_from (r->doc);
  unsigned p = r->present;
  if (p & OHBOX_RECORD_STATUS)
    json_object_set_new (j, "status", json_string (ohbox_status_name (r->status)));
  if (p & OHBOX_RECORD_PID)
    json_object_set_new (j, "pid", json_integer (r->pid));
  if (p & OHBOX_RECORD_PID_START)
    json_object_set_new (j, "pid_start", json_integer ((json_int_t) r->pid_start));
  if (p & OHBOX_RECORD_STARTED_AT)
    json_object_set_new (j, "started_at", json_string (r->started_at));
  if (p & OHBOX_RECORD_EXIT_CODE)
    json_object_set_new (j, "exit_code", json_integer (r->exit_code));
  if (p & OHBOX_RECORD_FINISHED_AT)
    json_object_set_new (j, "finished_at", json_string (r->finished_at));
  if (p & OHBOX_RECORD_PAUSED)
    json_object_set_new (j, "paused", json_boolean (r->paused));
  if (p & OHBOX_RECORD_TIMED_OUT)
    json_object_set_new (j, "timed_out", json_boolean (r->timed_out));
  if (p & OHBOX_RECORD_HOOK_WARNING)
    json_object_set_new (j, "hook_warning", json_string (r->hook_warning));
  if (p & OHBOX_RECORD_ANNOTATIONS)
    json_object_set (j, "annotations", r->annotations);
  return j;
}

void
ohbox_sandbox_record_clear (struct ohbox_sandbox_record *r)
{
  free (r->status_unknown);
  free (r->started_at);
  free (r->finished_at);
  free (r->hook_warning);
  json_decref (r->annotations);
  json_decref (r->doc);
  memset (r, 0, sizeof *r);
}

/* ---- what ps and inspect print ---- */

static json_t *
config_field (const struct ohbox_sandbox_config *c, unsigned bit, json_t *value)
{
  if (c->present & bit)
    return value;
  json_decref (value);
  return json_null ();
}

json_t *
ohbox_sandbox_info_to_json (const struct ohbox_sandbox_info *info)
{
  const struct ohbox_sandbox_config *c = &info->config;
  const struct ohbox_sandbox_record *r = &info->record;
  bool alive = info->status != OHBOX_STATUS_EXITED;
  unsigned p = r->present;
  json_t *j = json_object ();
  json_object_set_new (j, "id", json_string (info->id));
  json_object_set_new (j, "name", config_field (c, OHBOX_CONFIG_NAME, string_or_null (c->name)));
  json_object_set_new (j, "image", config_field (c, OHBOX_CONFIG_IMAGE, string_or_null (c->image)));
  json_object_set_new (j, "image_id", config_field (c, OHBOX_CONFIG_IMAGE_ID, string_or_null (c->image_id)));
  json_object_set_new (j, "command", config_field (c, OHBOX_CONFIG_COMMAND, strings_json (c->command)));
  json_object_set_new (j, "created", config_field (c, OHBOX_CONFIG_CREATED, string_or_null (c->created)));
  json_object_set_new (j, "devices", c->devices ? json_incref (c->devices) : json_null ());
  json_object_set_new (j, "status", json_string (ohbox_status_name (info->status)));
  /* pid while it runs; exit code and end time once it exited. */
  json_object_set_new (j, "pid", alive && (p & OHBOX_RECORD_PID) ? json_integer (r->pid) : json_null ());
  json_object_set_new (j, "started_at", p & OHBOX_RECORD_STARTED_AT ? json_string (r->started_at) : json_null ());
  json_object_set_new (j, "exit_code",
                       !alive && (p & OHBOX_RECORD_EXIT_CODE) ? json_integer (r->exit_code) : json_null ());
  json_object_set_new (j, "finished_at",
                       !alive && (p & OHBOX_RECORD_FINISHED_AT) ? json_string (r->finished_at) : json_null ());
  /* --timeout killed it (state.json of older versions has no such field). */
  json_object_set_new (j, "timed_out", json_boolean (!alive && r->timed_out));
  /* Address and published ports while they are held. */
  json_t *net = info->network;
  if (net && json_is_true (json_object_get (net, "active")))
    {
      json_object_set (j, "ip", json_object_get (net, "ip") ?: json_null ());
      json_object_set (j, "ports", json_object_get (net, "ports") ?: json_null ());
    }
  const char *mode = json_string_value (json_object_get (net, "mode"));
  json_object_set_new (j, "network", json_string (net ? mode ?: "bridge" : "none"));
  json_object_set_new (j, "labels", c->labels ? json_incref (c->labels) : json_object ());
  json_object_set_new (j, "annotations", r->annotations ? json_incref (r->annotations) : json_object ());
  return j;
}

void
ohbox_sandbox_info_clear (struct ohbox_sandbox_info *info)
{
  ohbox_sandbox_config_clear (&info->config);
  ohbox_sandbox_record_clear (&info->record);
  json_decref (info->network);
  info->network = NULL;
}
