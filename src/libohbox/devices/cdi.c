/* cdi.c: Container Device Interface specs (cdiVersion 0.3.0 to 0.8.0), read
 * from JSON or YAML files, and the edits of the devices asked for.
 *
 * Every spec file in the folders is read (a request may name any kind), and
 * read strictly: an unknown field, a field newer than the file's cdiVersion,
 * or a value of the wrong type is an error that names the file and the
 * field, as the reference implementation does.  A device defined by two
 * files of one folder is an error when it is asked for; a later folder
 * (by default /var/run/cdi, which generators refresh at boot) overrides an
 * earlier one (/etc/cdi). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strv.h"
#include "common/utils.h"
#include "common/yaml_json.h"
#include "devices/devices.h"

const char *const ohbox_cdi_default_dirs[] = { "/etc/cdi", "/var/run/cdi", NULL };

#define MAX_SPEC_SIZE (4u << 20)
#define MAX_SPEC_FILES 1024

struct spec
{
  char *file;
  json_t *root;
  unsigned version; /* major * 10000 + minor * 100 + patch */
  size_t priority;  /* index of its folder */
};

/* A spec file that cannot be used: what is wrong, and its kind when that
 * could be read.  It matters only to requests of its kind (or, kind
 * unknown, to requests nothing else answers): one broken file does not
 * take every other vendor's devices away. */
struct broken_spec
{
  char *kind;
  ohbox_error_t error;
};

struct specs
{
  struct spec *v;
  size_t n;
  struct broken_spec *broken;
  size_t n_broken;
};

static void
specs_free (struct specs *s)
{
  for (size_t i = 0; i < s->n; i++)
    {
      free (s->v[i].file);
      json_decref (s->v[i].root);
    }
  for (size_t i = 0; i < s->n_broken; i++)
    {
      free (s->broken[i].kind);
      ohbox_error_release (&s->broken[i].error);
    }
  free (s->v);
  free (s->broken);
}

/* ---- names ---- */

static bool
alnum (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Alphanumeric at both ends, and only alphanumerics or EXTRA between. */
static bool
valid_segment (const char *s, size_t len, const char *extra)
{
  if (len == 0 || !alnum (s[0]) || !alnum (s[len - 1]))
    return false;
  for (size_t i = 0; i < len; i++)
    if (!alnum (s[i]) && strchr (extra, s[i]) == NULL)
      return false;
  return true;
}

/* VENDOR/CLASS: a vendor of DNS labels, a class of at most 63 characters. */
static bool
valid_kind (const char *kind)
{
  const char *slash = strchr (kind, '/');
  if (slash == NULL || strchr (slash + 1, '/') != NULL)
    return false;
  size_t vlen = (size_t) (slash - kind), clen = strlen (slash + 1);
  return vlen <= 253 && valid_segment (kind, vlen, "-.") && clen <= 63 && valid_segment (slash + 1, clen, "-_.");
}

static bool
valid_device_name (const char *name)
{
  return valid_segment (name, strlen (name), "-_.:");
}

bool
ohbox_cdi_is_qualified_name (const char *s)
{
  const char *eq = strchr (s, '=');
  if (eq == NULL)
    return false;
  cleanup_free char *kind = xstrndup (s, (size_t) (eq - s));
  return valid_kind (kind) && valid_device_name (eq + 1);
}

/* ---- reading and checking a spec ---- */

/* The error for a spec: FILE: FIELD: what is wrong. */
static int __attribute__ ((format (printf, 4, 5)))
spec_error (ohbox_error_t *err, const struct spec *s, const char *field, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = xvasprintf (fmt, ap);
  va_end (ap);
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "CDI spec `%s`: %s%s%s", s->file, field ? field : "", field ? ": " : "",
                      msg);
}

/* Fields of an object: name, the cdiVersion that introduced it. */
struct field
{
  const char *name;
  unsigned since;
};

#define V(major, minor) ((major) *10000u + (minor) *100u)

static int
check_fields (const struct spec *s, json_t *obj, const char *where, const struct field *fields, ohbox_error_t *err)
{
  if (!json_is_object (obj))
    return spec_error (err, s, where, "must be an object");
  const char *key;
  json_t *value;
  json_object_foreach (obj, key, value)
  {
    const struct field *f = fields;
    while (f->name != NULL && strcmp (f->name, key) != 0)
      f++;
    cleanup_free char *path = xasprintf ("%s%s%s", where ? where : "", where ? "." : "", key);
    if (f->name == NULL)
      return spec_error (err, s, path, "unknown field");
    if (s->version < f->since)
      return spec_error (err, s, path, "needs cdiVersion %u.%u.0 or later (the file says %u.%u.%u)", f->since / 10000,
                         f->since / 100 % 100, s->version / 10000, s->version / 100 % 100, s->version % 100);
  }
  return 0;
}

static int
check_strings (const struct spec *s, json_t *arr, const char *where, ohbox_error_t *err)
{
  size_t i;
  json_t *x;
  if (!json_is_array (arr))
    return spec_error (err, s, where, "must be a list of strings");
  json_array_foreach (arr, i, x) if (!json_is_string (x)) return spec_error (err, s, where, "item %zu is not a string",
                                                                             i);
  return 0;
}

static int
check_annotations (const struct spec *s, json_t *obj, const char *where, ohbox_error_t *err)
{
  const char *key;
  json_t *value;
  if (!json_is_object (obj))
    return spec_error (err, s, where, "must be a map of strings");
  json_object_foreach (obj, key, value) if (!json_is_string (value)) return spec_error (err, s, where,
                                                                                        "`%s` is not a string", key);
  return 0;
}

static const char *
string_or_null (json_t *obj, const char *key)
{
  return json_string_value (json_object_get (obj, key));
}

static int
check_absolute (const struct spec *s, json_t *obj, const char *key, bool required, const char *where,
                ohbox_error_t *err)
{
  json_t *v = json_object_get (obj, key);
  cleanup_free char *path = xasprintf ("%s.%s", where, key);
  if (v == NULL)
    return required ? spec_error (err, s, path, "missing") : 0;
  if (!json_is_string (v) || json_string_value (v)[0] != '/')
    return spec_error (err, s, path, "must be an absolute path");
  return 0;
}

static int
check_uint32 (const struct spec *s, json_t *obj, const char *key, const char *where, ohbox_error_t *err)
{
  json_t *v = json_object_get (obj, key);
  if (v == NULL)
    return 0;
  if (!json_is_integer (v) || json_integer_value (v) < 0 || json_integer_value (v) > 0xffffffffLL)
    {
      cleanup_free char *path = xasprintf ("%s.%s", where, key);
      return spec_error (err, s, path, "must be an integer from 0 to 4294967295");
    }
  return 0;
}

static int
check_node (const struct spec *s, json_t *n, const char *where, ohbox_error_t *err)
{
  static const struct field fields[] = {
    { "path", 0 },     { "hostPath", V (0, 5) }, { "type", 0 }, { "major", 0 }, { "minor", 0 },
    { "fileMode", 0 }, { "permissions", 0 },     { "uid", 0 },  { "gid", 0 },   { NULL, 0 }
  };
  if (check_fields (s, n, where, fields, err) < 0 || check_absolute (s, n, "path", true, where, err) < 0
      || check_absolute (s, n, "hostPath", false, where, err) < 0 || check_uint32 (s, n, "uid", where, err) < 0
      || check_uint32 (s, n, "gid", where, err) < 0 || check_uint32 (s, n, "fileMode", where, err) < 0
      || check_uint32 (s, n, "major", where, err) < 0 || check_uint32 (s, n, "minor", where, err) < 0)
    return -1;
  const char *type = string_or_null (n, "type");
  if (json_object_get (n, "type") != NULL && (type == NULL || strcmp (type, "c") != 0)
      && (type == NULL || strcmp (type, "b") != 0))
    return spec_error (err, s, where, "type `%s`: ohbox gives only character (c) and block (b) devices",
                       type ? type : "?");
  if ((json_object_get (n, "major") != NULL) != (json_object_get (n, "minor") != NULL))
    return spec_error (err, s, where, "major and minor must be given together");
  json_t *perm = json_object_get (n, "permissions");
  if (perm != NULL)
    {
      const char *p = json_string_value (perm);
      if (p == NULL || *p == '\0' || strspn (p, "rwm") != strlen (p))
        return spec_error (err, s, where, "permissions must be made of r, w and m");
    }
  return 0;
}

static int
check_mount (const struct spec *s, json_t *m, const char *where, ohbox_error_t *err)
{
  static const struct field fields[] = {
    { "hostPath", 0 }, { "containerPath", 0 }, { "options", 0 }, { "type", V (0, 4) }, { NULL, 0 }
  };
  if (check_fields (s, m, where, fields, err) < 0 || check_absolute (s, m, "hostPath", true, where, err) < 0
      || check_absolute (s, m, "containerPath", true, where, err) < 0)
    return -1;
  json_t *options = json_object_get (m, "options");
  cleanup_free char *path = xasprintf ("%s.options", where);
  if (options != NULL && check_strings (s, options, path, err) < 0)
    return -1;
  json_t *type = json_object_get (m, "type");
  if (type != NULL && !json_is_string (type))
    return spec_error (err, s, where, "type must be a string");
  return 0;
}

static int
hook_stage (const char *name)
{
  for (int i = OHBOX_HOOK_PRESTART; i <= OHBOX_HOOK_POSTSTOP; i++)
    if (name != NULL && strcmp (name, ohbox_hook_stage_name ((enum ohbox_hook_stage) i)) == 0)
      return i;
  return -1;
}

static int
check_hook (const struct spec *s, json_t *h, const char *where, ohbox_error_t *err)
{
  static const struct field fields[] = { { "hookName", 0 }, { "path", 0 },    { "args", 0 },
                                         { "env", 0 },      { "timeout", 0 }, { NULL, 0 } };
  if (check_fields (s, h, where, fields, err) < 0 || check_absolute (s, h, "path", true, where, err) < 0)
    return -1;
  if (hook_stage (string_or_null (h, "hookName")) < 0)
    return spec_error (err, s, where,
                       "hookName must be one of createRuntime, createContainer, startContainer, "
                       "poststart, poststop (or prestart)");
  static const char *const lists[] = { "args", "env" };
  for (size_t i = 0; i < 2; i++)
    {
      json_t *v = json_object_get (h, lists[i]);
      cleanup_free char *path = xasprintf ("%s.%s", where, lists[i]);
      if (v != NULL && check_strings (s, v, path, err) < 0)
        return -1;
    }
  json_t *t = json_object_get (h, "timeout");
  if (t != NULL && (!json_is_integer (t) || json_integer_value (t) <= 0 || json_integer_value (t) > 86400))
    return spec_error (err, s, where, "timeout must be a number of seconds from 1 to 86400");
  return 0;
}

/* Checks each item of the list KEY of EDITS with CHECK. */
static int
check_list (const struct spec *s, json_t *edits, const char *key, const char *where,
            int (*check) (const struct spec *, json_t *, const char *, ohbox_error_t *), ohbox_error_t *err)
{
  json_t *list = json_object_get (edits, key);
  if (list == NULL)
    return 0;
  cleanup_free char *path = xasprintf ("%s.%s", where, key);
  if (!json_is_array (list))
    return spec_error (err, s, path, "must be a list");
  size_t i;
  json_t *x;
  json_array_foreach (list, i, x)
  {
    cleanup_free char *item = xasprintf ("%s[%zu]", path, i);
    if (check (s, x, item, err) < 0)
      return -1;
  }
  return 0;
}

static int
check_edits (const struct spec *s, json_t *edits, const char *where, ohbox_error_t *err)
{
  static const struct field fields[] = { { "env", 0 },    { "deviceNodes", 0 },     { "hooks", 0 },
                                         { "mounts", 0 }, { "intelRdt", V (0, 7) }, { "additionalGids", V (0, 7) },
                                         { NULL, 0 } };
  if (check_fields (s, edits, where, fields, err) < 0
      || check_list (s, edits, "deviceNodes", where, check_node, err) < 0
      || check_list (s, edits, "mounts", where, check_mount, err) < 0
      || check_list (s, edits, "hooks", where, check_hook, err) < 0)
    return -1;
  json_t *env = json_object_get (edits, "env");
  cleanup_free char *env_path = xasprintf ("%s.env", where);
  if (env != NULL && check_strings (s, env, env_path, err) < 0)
    return -1;
  size_t i;
  json_t *x;
  json_array_foreach (env, i, x)
  {
    const char *kv = json_string_value (x);
    if (kv[0] == '=' || strchr (kv, '=') == NULL)
      return spec_error (err, s, env_path, "`%s` is not KEY=VALUE", kv);
  }
  json_t *gids = json_object_get (edits, "additionalGids");
  if (gids != NULL && !json_is_array (gids))
    return spec_error (err, s, where, "additionalGids must be a list of group ids");
  json_array_foreach (gids, i, x) if (!json_is_integer (x) || json_integer_value (x) < 0
                                      || json_integer_value (x)
                                           > 0xffffffffLL) return spec_error (err, s, where,
                                                                              "additionalGids[%zu] is not a group id",
                                                                              i);
  return 0;
}

static int
parse_version (struct spec *s, ohbox_error_t *err)
{
  const char *v = string_or_null (s->root, "cdiVersion");
  unsigned major, minor, patch;
  char extra;
  if (v == NULL)
    return spec_error (err, s, "cdiVersion", "missing");
  if (sscanf (v, "%u.%u.%u%c", &major, &minor, &patch, &extra) != 3 || minor > 99 || patch > 99)
    return spec_error (err, s, "cdiVersion", "`%s` is not a version (MAJOR.MINOR.PATCH)", v);
  s->version = major * 10000 + minor * 100 + patch;
  if (s->version < V (0, 3) || s->version >= V (0, 9))
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "CDI spec `%s`: cdiVersion %s is not supported (ohbox reads 0.3.0 to 0.8.x)", s->file, v);
  return 0;
}

static int
check_spec (struct spec *s, ohbox_error_t *err)
{
  static const struct field fields[] = { { "cdiVersion", 0 }, { "kind", 0 },           { "annotations", V (0, 6) },
                                         { "devices", 0 },    { "containerEdits", 0 }, { NULL, 0 } };
  if (!json_is_object (s->root))
    return spec_error (err, s, NULL, "not an object");
  if (parse_version (s, err) < 0 || check_fields (s, s->root, NULL, fields, err) < 0)
    return -1;
  const char *kind = string_or_null (s->root, "kind");
  if (kind == NULL || !valid_kind (kind))
    return spec_error (err, s, "kind", "must be VENDOR/CLASS (for example vendor.com/gpu)");
  json_t *ann = json_object_get (s->root, "annotations");
  if (ann != NULL && check_annotations (s, ann, "annotations", err) < 0)
    return -1;
  json_t *edits = json_object_get (s->root, "containerEdits");
  if (edits != NULL && check_edits (s, edits, "containerEdits", err) < 0)
    return -1;
  json_t *devices = json_object_get (s->root, "devices");
  if (!json_is_array (devices) || json_array_size (devices) == 0)
    return spec_error (err, s, "devices", "must be a list of at least one device");
  size_t i;
  json_t *d;
  json_array_foreach (devices, i, d)
  {
    static const struct field dfields[] = {
      { "name", 0 }, { "annotations", V (0, 6) }, { "containerEdits", 0 }, { NULL, 0 }
    };
    cleanup_free char *where = xasprintf ("devices[%zu]", i);
    if (check_fields (s, d, where, dfields, err) < 0)
      return -1;
    const char *name = string_or_null (d, "name");
    if (name == NULL || !valid_device_name (name))
      return spec_error (err, s, where,
                         "name must be letters, digits, `-`, `_`, `.` and `:`, starting and "
                         "ending with a letter or digit");
    cleanup_free char *ewhere = xasprintf ("%s.containerEdits", where);
    json_t *dedits = json_object_get (d, "containerEdits");
    if (dedits == NULL || json_object_size (dedits) == 0)
      return spec_error (err, s, ewhere, "missing or empty (a device must change something)");
    if (check_edits (s, dedits, ewhere, err) < 0)
      return -1;
    ann = json_object_get (d, "annotations");
    cleanup_free char *awhere = xasprintf ("%s.annotations", where);
    if (ann != NULL && check_annotations (s, ann, awhere, err) < 0)
      return -1;
    for (size_t j = 0; j < i; j++)
      if (strcmp (name, string_or_null (json_array_get (devices, j), "name")) == 0)
        return spec_error (err, s, where, "the device `%s` is defined twice", name);
  }
  return 0;
}

static bool
spec_file_name (const char *name)
{
  size_t n = strlen (name);
  return name[0] != '.'
         && ((n > 5 && strcmp (name + n - 5, ".json") == 0) || (n > 5 && strcmp (name + n - 5, ".yaml") == 0)
             || (n > 4 && strcmp (name + n - 4, ".yml") == 0));
}

static int
read_spec (const char *dir, const char *name, size_t priority, struct specs *out, ohbox_error_t *err)
{
  struct spec s = { .file = xasprintf ("%s/%s", dir, name), .priority = priority };
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (AT_FDCWD, s.file, MAX_SPEC_SIZE, &text, &len, err) < 0)
    ohbox_error_prefix (err, "CDI spec `%s`", s.file);
  else if (strcmp (name + strlen (name) - 5, ".json") == 0)
    {
      json_error_t jerr;
      s.root = json_loadb (text, len, JSON_REJECT_DUPLICATES, &jerr);
      if (s.root == NULL)
        ohbox_error (err, OHBOX_ERR_USAGE, 0, "CDI spec `%s`: line %d, column %d: %s", s.file, jerr.line, jerr.column,
                     jerr.text);
    }
  else
    s.root = ohbox_yaml_to_json (text, len, s.file, err);
  if (s.root == NULL || check_spec (&s, err) < 0)
    {
      const char *kind = string_or_null (s.root, "kind");
      if (kind != NULL && !valid_kind (kind))
        kind = NULL;
      out->broken = xrealloc (out->broken, (out->n_broken + 1) * sizeof *out->broken);
      out->broken[out->n_broken] = (struct broken_spec){ .kind = kind ? xstrdup (kind) : NULL };
      ohbox_error_move (&out->broken[out->n_broken++].error, err);
      free (s.file);
      json_decref (s.root);
      return 0;
    }
  out->v = xrealloc (out->v, (out->n + 1) * sizeof *out->v);
  out->v[out->n++] = s;
  return 0;
}

static int
compare_names (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The spec files of DIR, in name order; a missing folder has none. */
static int
read_dir (const char *dir, size_t priority, struct specs *out, ohbox_error_t *err)
{
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return errno == ENOENT || errno == ENOTDIR
             ? 0
             : ohbox_error (err, OHBOX_ERR_GENERIC, errno, "CDI spec folder `%s`", dir);
  char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    if (spec_file_name (de->d_name) && n < MAX_SPEC_FILES)
      ohbox_strv_push (&names, &n, xstrdup (de->d_name));
  if (n > 0)
    qsort (names, n, sizeof *names, compare_names);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = read_spec (dir, names[i], priority, out, err);
  ohbox_strv_free (names);
  return rc;
}

/* ---- edits ---- */

static char **
strings_of (json_t *arr)
{
  char **v = xcalloc (json_array_size (arr) + 1, sizeof (char *));
  size_t i;
  json_t *x;
  json_array_foreach (arr, i, x) v[i] = xstrdup (json_string_value (x));
  return v;
}

static int
apply_node (json_t *n, struct ohbox_device_edits *e, ohbox_error_t *err)
{
  const char *path = string_or_null (n, "path"), *host = string_or_null (n, "hostPath");
  const char *type = string_or_null (n, "type"), *perm = string_or_null (n, "permissions");
  json_t *mode = json_object_get (n, "fileMode"), *uid = json_object_get (n, "uid"), *gid = json_object_get (n, "gid");
  bool numbers = json_object_get (n, "major") != NULL;
  struct ohbox_device_node node = {
    .path = xstrdup (path),
    .host_path = xstrdup (host ? host : path),
    .type = type ? type[0] : '\0',
    .major = json_integer_value (json_object_get (n, "major")),
    .minor = json_integer_value (json_object_get (n, "minor")),
    .file_mode = (mode_t) (json_integer_value (mode) & 07777),
    .has_uid = uid != NULL,
    .has_gid = gid != NULL,
    .uid = (uint32_t) json_integer_value (uid),
    .gid = (uint32_t) json_integer_value (gid),
  };
  /* Duplicates in "permissions" ("rrw") are folded. */
  const char *want = perm ? perm : "rwm";
  size_t len = 0;
  for (const char *c = "rwm"; *c; c++)
    if (strchr (want, *c) != NULL)
      node.access[len++] = *c;
  if (ohbox_device_node_from_host (&node, type != NULL, numbers, mode != NULL, err) < 0)
    {
      free (node.path);
      free (node.host_path);
      return -1;
    }
  return ohbox_device_edits_add_node (e, &node, err);
}

static void
apply_mount (json_t *m, struct ohbox_device_edits *e)
{
  json_t *options = json_object_get (m, "options");
  const char *type = string_or_null (m, "type");
  e->mounts = xrealloc (e->mounts, (e->n_mounts + 1) * sizeof *e->mounts);
  e->mounts[e->n_mounts++] = (struct ohbox_device_mount){
    .host_path = xstrdup (string_or_null (m, "hostPath")),
    .container_path = xstrdup (string_or_null (m, "containerPath")),
    .type = type ? xstrdup (type) : NULL,
    .options = options ? strings_of (options) : xcalloc (1, sizeof (char *)),
  };
}

static void
apply_hook (json_t *h, struct ohbox_device_edits *e)
{
  json_t *args = json_object_get (h, "args"), *env = json_object_get (h, "env");
  e->hooks = xrealloc (e->hooks, (e->n_hooks + 1) * sizeof *e->hooks);
  struct ohbox_device_hook *hook = &e->hooks[e->n_hooks++];
  *hook = (struct ohbox_device_hook){
    .stage = (enum ohbox_hook_stage) hook_stage (string_or_null (h, "hookName")),
    .path = xstrdup (string_or_null (h, "path")),
    .args = args ? strings_of (args) : NULL,
    .env = env ? strings_of (env) : xcalloc (1, sizeof (char *)),
    .timeout = (int) json_integer_value (json_object_get (h, "timeout")),
  };
  /* An OCI hook without args runs with argv[0] = path. */
  if (hook->args == NULL || hook->args[0] == NULL)
    {
      ohbox_strv_free (hook->args);
      hook->args = xcalloc (2, sizeof (char *));
      hook->args[0] = xstrdup (hook->path);
    }
}

static int
apply_edits (const struct spec *s, json_t *edits, const char *device, struct ohbox_device_edits *e, ohbox_error_t *err)
{
  size_t i;
  json_t *x;
  if (json_object_get (edits, "intelRdt") != NULL)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "CDI device `%s` (%s): intelRdt is not supported", device,
                        s->file);
  json_array_foreach (json_object_get (edits, "env"), i, x) ohbox_device_edits_set_env (e, json_string_value (x));
  json_array_foreach (json_object_get (edits, "deviceNodes"), i, x)
  {
    if (apply_node (x, e, err) < 0)
      return ohbox_error_prefix (err, "CDI device `%s` (%s)", device, s->file);
  }
  json_array_foreach (json_object_get (edits, "mounts"), i, x) apply_mount (x, e);
  json_array_foreach (json_object_get (edits, "hooks"), i, x) apply_hook (x, e);
  json_array_foreach (json_object_get (edits, "additionalGids"), i, x)
  {
    uint32_t gid = (uint32_t) json_integer_value (x);
    bool seen = false;
    for (size_t j = 0; j < e->n_additional_gids; j++)
      seen = seen || e->additional_gids[j] == gid;
    if (!seen)
      {
        e->additional_gids = xrealloc (e->additional_gids, (e->n_additional_gids + 1) * sizeof (uint32_t));
        e->additional_gids[e->n_additional_gids++] = gid;
      }
  }
  return 0;
}

/* ---- resolution ---- */

struct resolver
{
  struct specs specs;
  bool *spec_applied; /* per spec: its containerEdits were added */
};

static json_t *
device_of (const struct spec *s, const char *name)
{
  size_t i;
  json_t *d;
  json_array_foreach (json_object_get (s->root, "devices"), i,
                      d) if (strcmp (string_or_null (d, "name"), name) == 0) return d;
  return NULL;
}

/* The spec that defines KIND=NAME: of the highest priority; two of that
 * priority are an error naming both files. */
static int
find_device (struct resolver *r, const char *kind, const char *name, size_t *which, ohbox_error_t *err)
{
  size_t found = (size_t) -1;
  for (size_t i = 0; i < r->specs.n; i++)
    {
      const struct spec *s = &r->specs.v[i];
      if (strcmp (string_or_null (s->root, "kind"), kind) != 0 || device_of (s, name) == NULL)
        continue;
      if (found != (size_t) -1 && r->specs.v[found].priority == s->priority)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "CDI device `%s=%s` is defined twice: in `%s` and in `%s`", kind,
                            name, r->specs.v[found].file, s->file);
      if (found == (size_t) -1 || s->priority > r->specs.v[found].priority)
        found = i;
    }
  for (size_t i = 0; i < r->specs.n_broken; i++)
    {
      const struct broken_spec *b = &r->specs.broken[i];
      if ((b->kind != NULL && strcmp (b->kind, kind) == 0) || (b->kind == NULL && found == (size_t) -1))
        return ohbox_error (err, b->error->kind, 0, "%s", b->error->msg);
    }
  if (found == (size_t) -1)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "CDI device `%s=%s` is not defined by any spec", kind, name);
  *which = found;
  return 0;
}

static int
apply_device (struct resolver *r, const char *kind, const char *name, struct ohbox_device_edits *e, ohbox_error_t *err)
{
  size_t i;
  if (find_device (r, kind, name, &i, err) < 0)
    return -1;
  const struct spec *s = &r->specs.v[i];
  cleanup_free char *qualified = xasprintf ("%s=%s", kind, name);
  if (apply_edits (s, json_object_get (device_of (s, name), "containerEdits"), qualified, e, err) < 0)
    return -1;
  json_t *spec_edits = json_object_get (s->root, "containerEdits");
  if (!r->spec_applied[i] && spec_edits != NULL && apply_edits (s, spec_edits, qualified, e, err) < 0)
    return -1;
  r->spec_applied[i] = true;
  ohbox_device_edits_add_name (e, qualified);
  return 0;
}

/* KIND=all: every device any spec defines for KIND. */
static int
apply_all (struct resolver *r, const char *kind, struct ohbox_device_edits *e, ohbox_error_t *err)
{
  size_t applied = 0;
  for (size_t i = 0; i < r->specs.n; i++)
    {
      const struct spec *s = &r->specs.v[i];
      if (strcmp (string_or_null (s->root, "kind"), kind) != 0)
        continue;
      size_t j;
      json_t *d;
      json_array_foreach (json_object_get (s->root, "devices"), j, d)
      {
        size_t which;
        const char *name = string_or_null (d, "name");
        if (find_device (r, kind, name, &which, err) < 0)
          return -1;
        if (which == i && apply_device (r, kind, name, e, err) < 0)
          return -1;
        applied += which == i;
      }
    }
  for (size_t i = 0; applied == 0 && i < r->specs.n_broken; i++)
    {
      const struct broken_spec *b = &r->specs.broken[i];
      if (b->kind == NULL || strcmp (b->kind, kind) == 0)
        return ohbox_error (err, b->error->kind, 0, "%s", b->error->msg);
    }
  if (applied == 0)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "CDI: no spec defines devices of kind `%s`", kind);
  return 0;
}

static int
read_dirs (const char *const *dirs, struct specs *specs, ohbox_error_t *err)
{
  if (dirs == NULL)
    dirs = ohbox_cdi_default_dirs;
  for (size_t i = 0; dirs[i] != NULL; i++)
    if (read_dir (dirs[i], i, specs, err) < 0)
      return -1;
  return 0;
}

int
ohbox_cdi_kind_devices (const char *const *dirs, const char *kind, char ***names, ohbox_error_t *err)
{
  struct specs specs = { NULL, 0, NULL, 0 };
  size_t n = 0;
  *names = NULL;
  int rc = read_dirs (dirs, &specs, err);
  for (size_t i = 0; rc == 0 && i < specs.n_broken; i++)
    if (specs.broken[i].kind != NULL && strcmp (specs.broken[i].kind, kind) == 0)
      rc = ohbox_error (err, specs.broken[i].error->kind, 0, "%s", specs.broken[i].error->msg);
  for (size_t i = 0; rc == 0 && i < specs.n; i++)
    {
      if (strcmp (string_or_null (specs.v[i].root, "kind"), kind) != 0)
        continue;
      size_t j;
      json_t *d;
      json_array_foreach (json_object_get (specs.v[i].root, "devices"), j, d)
        ohbox_strv_push (names, &n, xstrdup (string_or_null (d, "name")));
    }
  specs_free (&specs);
  return rc;
}

int
ohbox_cdi_resolve (const char *const *dirs, const char *const *names, size_t n, struct ohbox_device_edits *e,
                   ohbox_error_t *err)
{
  struct resolver r = { { NULL, 0, NULL, 0 }, NULL };
  int rc = read_dirs (dirs, &r.specs, err);
  r.spec_applied = xcalloc (r.specs.n + 1, sizeof (bool));
  for (size_t i = 0; i < n && rc == 0; i++)
    {
      if (!ohbox_cdi_is_qualified_name (names[i]))
        {
          rc = ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is not a CDI device name (VENDOR/CLASS=NAME)", names[i]);
          break;
        }
      const char *eq = strchr (names[i], '=');
      cleanup_free char *kind = xstrndup (names[i], (size_t) (eq - names[i]));
      rc = strcmp (eq + 1, "all") == 0 ? apply_all (&r, kind, e, err) : apply_device (&r, kind, eq + 1, e, err);
    }
  free (r.spec_applied);
  specs_free (&r.specs);
  return rc;
}
