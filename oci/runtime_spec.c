/* oci/runtime_spec.c: config.json of the OCI runtime spec 1.1, parsed
 * strictly (see runtime_spec.h). Every value is checked where it is read,
 * and every error names its field as a path from the document's root. */
#include "config.h"
#include "oci/runtime_spec.h"
#include "common/strv.h"
#include "common/utils.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef MOUNT_ATTR_NOSYMFOLLOW
#define MOUNT_ATTR_NOSYMFOLLOW 0x00200000
#endif
#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif

/* ------------------------------------------------------------ helpers */

struct pctx
{
  const char *doc; /* "config.json", "process.json", ... */
  ohbox_error_t *err;
};

static int
vperr (struct pctx *c, int kind, const char *path, const char *fmt, va_list ap)
{
  char msg[1024];
  vsnprintf (msg, sizeof msg, fmt, ap);
  if (path && *path)
    return ohbox_error (c->err, kind, 0, "%s: %s: %s", c->doc, path, msg);
  return ohbox_error (c->err, kind, 0, "%s: %s", c->doc, msg);
}

static int perr (struct pctx *c, int kind, const char *path, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

static int
perr (struct pctx *c, int kind, const char *path, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  int r = vperr (c, kind, path, fmt, ap);
  va_end (ap);
  return r;
}

/* PATH.KEY (KEY alone at the root). */
static char *
sub (const char *path, const char *key)
{
  return *path ? xasprintf ("%s.%s", path, key) : xstrdup (key);
}

static char *
idx (const char *path, size_t i)
{
  return xasprintf ("%s[%zu]", path, i);
}

/* perr about the member KEY of the object at PATH. */
static int perr_key (struct pctx *c, int kind, const char *path, const char *key, const char *fmt, ...)
  __attribute__ ((format (printf, 5, 6)));

static int
perr_key (struct pctx *c, int kind, const char *path, const char *key, const char *fmt, ...)
{
  cleanup_free char *p = sub (path, key);
  va_list ap;
  va_start (ap, fmt);
  int r = vperr (c, kind, p, fmt, ap);
  va_end (ap);
  return r;
}

/* A string vector freed when it goes out of scope. */
static void
strv_cleanup (char ***v)
{
  ohbox_strv_free (*v);
}
#define cleanup_strv __attribute__ ((cleanup (strv_cleanup)))

/* Every key of OBJ must be in KNOWN; those in UNSUPPORTED (may be NULL) are
 * spec fields ohbox does not honour. */
static int
check_keys (struct pctx *c, json_t *obj, const char *path, const char *const *known, const char *const *unsupported)
{
  const char *key;
  json_t *v;
  json_object_foreach (obj, key, v)
  {
    bool ok = false;
    for (size_t i = 0; known[i] && !ok; i++)
      ok = strcmp (known[i], key) == 0;
    if (ok)
      continue;
    for (size_t i = 0; unsupported && unsupported[i]; i++)
      if (strcmp (unsupported[i], key) == 0)
        return perr_key (c, OHBOX_ERR_UNSUPPORTED, path, key, "not supported by ohbox");
    return perr_key (c, OHBOX_ERR_USAGE, path, key, "unknown field (not in the OCI runtime spec %s)",
                     OCI_RUNTIME_SPEC_VERSION);
  }
  return 0;
}

/* The member KEY of OBJ, which must be of TYPE (JSON_TRUE: true or false;
 * WHAT says it in errors): NULL when absent, and JSON null counts as absent,
 * as Go's decoders read it. */
static int
member (struct pctx *c, json_t *obj, const char *path, const char *key, json_type type, const char *what, json_t **ret)
{
  json_t *v = json_object_get (obj, key);
  *ret = NULL;
  if (v == NULL || json_is_null (v))
    return 0;
  if (type == JSON_TRUE ? !json_is_boolean (v) : json_typeof (v) != type)
    return perr_key (c, OHBOX_ERR_USAGE, path, key, "must be %s", what);
  *ret = v;
  return 0;
}

/* Reads the object J at P into DATA. */
typedef int (*read_object_fn) (struct pctx *c, json_t *j, const char *p, void *data);

/* The object KEY of OBJ (absent: nothing to read), whose keys must be in
 * KNOWN, read by READ_ONE into DATA. */
static int
get_object (struct pctx *c, json_t *obj, const char *path, const char *key, const char *const *known,
            read_object_fn read_one, void *data)
{
  json_t *j;
  if (member (c, obj, path, key, JSON_OBJECT, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = sub (path, key);
  if (check_keys (c, j, p, known, NULL) < 0 || read_one (c, j, p, data) < 0)
    return -1;
  return 0;
}

/* The position of S in LIST (NULL-terminated), -1 when it is not there. */
static int
find_name (const char *const *list, const char *s)
{
  for (int i = 0; list[i]; i++)
    if (strcmp (list[i], s) == 0)
      return i;
  return -1;
}

/* A string that C can hold: without NUL bytes. */
static bool
is_c_string (const json_t *v)
{
  return json_is_string (v) && strlen (json_string_value (v)) == json_string_length (v);
}

static int
get_string (struct pctx *c, json_t *obj, const char *path, const char *key, bool required, char **ret)
{
  json_t *v;
  *ret = NULL;
  if (member (c, obj, path, key, JSON_STRING, "a string", &v) < 0)
    return -1;
  if (v == NULL)
    return required ? perr_key (c, OHBOX_ERR_USAGE, path, key, "required") : 0;
  if (!is_c_string (v))
    return perr_key (c, OHBOX_ERR_USAGE, path, key, "contains a NUL byte");
  *ret = xstrdup (json_string_value (v));
  return 0;
}

static int
get_bool (struct pctx *c, json_t *obj, const char *path, const char *key, bool *has, bool *ret)
{
  json_t *v;
  if (member (c, obj, path, key, JSON_TRUE, "true or false", &v) < 0)
    return -1;
  if (has)
    *has = v != NULL;
  *ret = v != NULL && json_is_true (v);
  return 0;
}

/* An integer in [LO, HI]. */
static int
get_int (struct pctx *c, json_t *obj, const char *path, const char *key, bool required, int64_t lo, int64_t hi,
         bool *has, int64_t *ret)
{
  json_t *v;
  if (member (c, obj, path, key, JSON_INTEGER, "an integer", &v) < 0)
    return -1;
  if (has)
    *has = v != NULL;
  if (v == NULL)
    return required ? perr_key (c, OHBOX_ERR_USAGE, path, key, "required") : 0;
  int64_t x = json_integer_value (v);
  if (x < lo || x > hi)
    return perr_key (c, OHBOX_ERR_USAGE, path, key, "%lld is out of range (%lld..%lld)", (long long) x, (long long) lo,
                     (long long) hi);
  *ret = x;
  return 0;
}

static int
get_u32 (struct pctx *c, json_t *obj, const char *path, const char *key, bool required, bool *has, uint32_t *ret)
{
  int64_t v = 0;
  if (get_int (c, obj, path, key, required, 0, UINT32_MAX, has, &v) < 0)
    return -1;
  *ret = (uint32_t) v;
  return 0;
}

/* JSON integers are int64 in jansson: a uint64 field takes 0..INT64_MAX. */
static int
get_u64 (struct pctx *c, json_t *obj, const char *path, const char *key, bool *has, uint64_t *ret)
{
  int64_t v = 0;
  if (get_int (c, obj, path, key, false, 0, INT64_MAX, has, &v) < 0)
    return -1;
  *ret = (uint64_t) v;
  return 0;
}

/* An array member: *RET (NULL when absent) and its size in *N. */
static int
get_array (struct pctx *c, json_t *obj, const char *path, const char *key, const char *what, json_t **ret, size_t *n)
{
  if (member (c, obj, path, key, JSON_ARRAY, what, ret) < 0)
    return -1;
  *n = *ret ? json_array_size (*ret) : 0;
  if (*n > OCI_RUNTIME_MAX_LIST)
    return perr_key (c, OHBOX_ERR_USAGE, path, key, "more than %d entries", OCI_RUNTIME_MAX_LIST);
  return 0;
}

/* An array of strings as a NULL-terminated vector (NULL when absent). */
static int
get_strv (struct pctx *c, json_t *obj, const char *path, const char *key, char ***ret)
{
  json_t *a;
  size_t n;
  *ret = NULL;
  if (get_array (c, obj, path, key, "an array of strings", &a, &n) < 0)
    return -1;
  if (a == NULL)
    return 0;
  char **v = xcalloc (n + 1, sizeof (char *));
  for (size_t i = 0; i < n; i++)
    {
      json_t *s = json_array_get (a, i);
      if (!is_c_string (s))
        {
          ohbox_strv_free (v);
          cleanup_free char *p = sub (path, key);
          cleanup_free char *pi = idx (p, i);
          return perr (c, OHBOX_ERR_USAGE, pi, "must be a string (without NUL bytes)");
        }
      v[i] = xstrdup (json_string_value (s));
    }
  *ret = v;
  return 0;
}

static int
get_map (struct pctx *c, json_t *obj, const char *path, const char *key, struct oci_map *ret)
{
  json_t *o;
  memset (ret, 0, sizeof *ret);
  if (member (c, obj, path, key, JSON_OBJECT, "an object of strings", &o) < 0)
    return -1;
  if (o == NULL)
    return 0;
  cleanup_free char *p = sub (path, key);
  if (json_object_size (o) > OCI_RUNTIME_MAX_LIST)
    return perr (c, OHBOX_ERR_USAGE, p, "more than %d entries", OCI_RUNTIME_MAX_LIST);
  ret->keys = xcalloc (json_object_size (o) + 1, sizeof (char *));
  ret->values = xcalloc (json_object_size (o) + 1, sizeof (char *));
  const char *k;
  json_t *v;
  json_object_foreach (o, k, v)
  {
    if (!is_c_string (v))
      return perr_key (c, OHBOX_ERR_USAGE, p, k, "must be a string (without NUL bytes)");
    ret->keys[ret->n] = xstrdup (k);
    ret->values[ret->n++] = xstrdup (json_string_value (v));
  }
  return 0;
}

static void
map_clear (struct oci_map *m)
{
  for (size_t i = 0; i < m->n; i++)
    {
      free (m->keys[i]);
      free (m->values[i]);
    }
  free (m->keys);
  free (m->values);
  memset (m, 0, sizeof *m);
}

const char *
oci_map_get (const struct oci_map *m, const char *key)
{
  for (size_t i = 0; m && i < m->n; i++)
    if (strcmp (m->keys[i], key) == 0)
      return m->values[i];
  return NULL;
}

/* Reads element I (the object J at P) of an array of objects into ELEMS[I]. */
typedef int (*read_element_fn) (struct pctx *c, json_t *j, const char *p, void *elems, size_t i);

/* The array KEY of OBJ (absent: empty), whose elements are objects with the
 * keys KNOWN, each read by READ_ONE. With ELEMS, into a new array *ELEMS of
 * N + 1 zeroed elements of SIZE, *N counting those READ_ONE was given (what
 * an error leaves is freed with them); without, READ_ONE only checks. */
static int
read_objects (struct pctx *c, json_t *obj, const char *path, const char *key, const char *const *known,
              read_element_fn read_one, size_t size, void **elems, size_t *n)
{
  json_t *a;
  size_t len;
  if (get_array (c, obj, path, key, "an array", &a, &len) < 0)
    return -1;
  cleanup_free char *p = sub (path, key);
  if (elems)
    *elems = xcalloc (len + 1, size);
  for (size_t i = 0; i < len; i++)
    {
      json_t *j = json_array_get (a, i);
      cleanup_free char *pi = idx (p, i);
      if (n)
        (*n)++;
      if (!json_is_object (j))
        return perr (c, OHBOX_ERR_USAGE, pi, "must be an object");
      if (check_keys (c, j, pi, known, NULL) < 0 || read_one (c, j, pi, elems ? *elems : NULL, i) < 0)
        return -1;
    }
  return 0;
}

/* read_objects into ARRAY, a pointer to elements of any type, and its count N. */
#define get_objects(c, obj, path, key, known, read_one, array, n)                                                      \
  ({                                                                                                                   \
    void *_elems = NULL;                                                                                               \
    int _r = read_objects (c, obj, path, key, known, read_one, sizeof *(array), &_elems, &(n));                        \
    (array) = _elems;                                                                                                  \
    _r;                                                                                                                \
  })

static int
check_absolute (struct pctx *c, const char *path, const char *value)
{
  if (value[0] != '/')
    return perr (c, OHBOX_ERR_USAGE, path, "`%.256s` is not an absolute path", value);
  if (strlen (value) >= PATH_MAX)
    return perr (c, OHBOX_ERR_USAGE, path, "longer than %d bytes", PATH_MAX - 1);
  return 0;
}

/* check_absolute for the member KEY of the object at PATH. */
static int
check_absolute_key (struct pctx *c, const char *path, const char *key, const char *value)
{
  cleanup_free char *p = sub (path, key);
  return check_absolute (c, p, value);
}

/* ------------------------------------------------------------ version */

/* "1.0.2-dev", "1.1.0", "1.2.0+x": major 1, at least 1.0.0. */
static int
check_version (struct pctx *c, const char *v)
{
  unsigned major, minor, patch;
  int n = 0;
  if (sscanf (v, "%u.%u.%u%n", &major, &minor, &patch, &n) != 3 || (v[n] != '\0' && v[n] != '-' && v[n] != '+'))
    return perr (c, OHBOX_ERR_USAGE, "ociVersion", "`%.64s` is not a version such as \"%s\"", v,
                 OCI_RUNTIME_SPEC_VERSION);
  if (major != 1)
    return perr (c, OHBOX_ERR_UNSUPPORTED, "ociVersion",
                 "version `%.64s` is not supported (ohbox implements the runtime spec %s; configs of 1.x are "
                 "accepted)",
                 v, OCI_RUNTIME_SPEC_VERSION);
  return 0;
}

/* ------------------------------------------------------------ idmaps */

static int
read_idmap (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_idmap *x = (struct oci_idmap *) elems + i;
  if (get_u32 (c, j, p, "containerID", true, NULL, &x->container_id) < 0
      || get_u32 (c, j, p, "hostID", true, NULL, &x->host_id) < 0
      || get_u32 (c, j, p, "size", true, NULL, &x->size) < 0)
    return -1;
  if (x->size == 0 || (uint64_t) x->container_id + x->size > UINT32_MAX || (uint64_t) x->host_id + x->size > UINT32_MAX)
    return perr (c, OHBOX_ERR_USAGE, p, "an empty range, or one past 4294967295");
  return 0;
}

static int
parse_idmaps (struct pctx *c, json_t *obj, const char *path, const char *key, struct oci_idmaps *ret)
{
  static const char *const keys[] = { "containerID", "hostID", "size", NULL };
  json_t *a;
  size_t n;
  memset (ret, 0, sizeof *ret);
  if (get_array (c, obj, path, key, "an array", &a, &n) < 0)
    return -1;
  if (n > OCI_RUNTIME_MAX_IDMAPS)
    return perr_key (c, OHBOX_ERR_USAGE, path, key, "more than %d mappings (the kernel's limit)",
                     OCI_RUNTIME_MAX_IDMAPS);
  return get_objects (c, obj, path, key, keys, read_idmap, ret->v, ret->n);
}

static void
idmaps_clear (struct oci_idmaps *m)
{
  free (m->v);
  memset (m, 0, sizeof *m);
}

/* ------------------------------------------------------------ mount options */

enum opt_kind
{
  OPT_FLAG,     /* sets FLAG in mount(2) flags (CLEAR: clears it) */
  OPT_REC_ATTR, /* recursive mount_setattr attribute (CLEAR: cleared) */
  OPT_PROP,     /* propagation */
  OPT_BIND,
  OPT_RBIND,
  OPT_TMPCOPYUP,
  OPT_IDMAP,
  OPT_RIDMAP,
  OPT_REMOUNT,
  OPT_DEFAULTS, /* nothing */
};

struct mount_opt
{
  const char *name;
  enum opt_kind kind;
  bool clear;
  unsigned long value; /* MS_* flag, or MOUNT_ATTR_* */
};

/* runc's list (runc features, 1.1 and 1.2), which crun shares. */
static const struct mount_opt mount_opts[] = {
  { "async", OPT_FLAG, true, MS_SYNCHRONOUS },
  { "atime", OPT_FLAG, true, MS_NOATIME },
  { "bind", OPT_BIND, false, 0 },
  { "defaults", OPT_DEFAULTS, false, 0 },
  { "dev", OPT_FLAG, true, MS_NODEV },
  { "diratime", OPT_FLAG, true, MS_NODIRATIME },
  { "dirsync", OPT_FLAG, false, MS_DIRSYNC },
  { "exec", OPT_FLAG, true, MS_NOEXEC },
  { "idmap", OPT_IDMAP, false, 0 },
  { "iversion", OPT_FLAG, false, MS_I_VERSION },
  { "lazytime", OPT_FLAG, false, MS_LAZYTIME },
  { "loud", OPT_FLAG, true, MS_SILENT },
  { "mand", OPT_FLAG, false, MS_MANDLOCK },
  { "noatime", OPT_FLAG, false, MS_NOATIME },
  { "nodev", OPT_FLAG, false, MS_NODEV },
  { "nodiratime", OPT_FLAG, false, MS_NODIRATIME },
  { "noexec", OPT_FLAG, false, MS_NOEXEC },
  { "noiversion", OPT_FLAG, true, MS_I_VERSION },
  { "nolazytime", OPT_FLAG, true, MS_LAZYTIME },
  { "nomand", OPT_FLAG, true, MS_MANDLOCK },
  { "norelatime", OPT_FLAG, true, MS_RELATIME },
  { "nostrictatime", OPT_FLAG, true, MS_STRICTATIME },
  { "nosuid", OPT_FLAG, false, MS_NOSUID },
  { "nosymfollow", OPT_FLAG, false, MS_NOSYMFOLLOW },
  { "private", OPT_PROP, false, MS_PRIVATE },
  { "rbind", OPT_RBIND, false, 0 },
  { "relatime", OPT_FLAG, false, MS_RELATIME },
  { "remount", OPT_REMOUNT, false, 0 },
  { "ridmap", OPT_RIDMAP, false, 0 },
  { "ro", OPT_FLAG, false, MS_RDONLY },
  { "rprivate", OPT_PROP, false, MS_PRIVATE | MS_REC },
  { "rshared", OPT_PROP, false, MS_SHARED | MS_REC },
  { "rslave", OPT_PROP, false, MS_SLAVE | MS_REC },
  { "runbindable", OPT_PROP, false, MS_UNBINDABLE | MS_REC },
  { "rw", OPT_FLAG, true, MS_RDONLY },
  { "shared", OPT_PROP, false, MS_SHARED },
  { "silent", OPT_FLAG, false, MS_SILENT },
  { "slave", OPT_PROP, false, MS_SLAVE },
  { "strictatime", OPT_FLAG, false, MS_STRICTATIME },
  { "suid", OPT_FLAG, true, MS_NOSUID },
  { "symfollow", OPT_FLAG, true, MS_NOSYMFOLLOW },
  { "sync", OPT_FLAG, false, MS_SYNCHRONOUS },
  { "tmpcopyup", OPT_TMPCOPYUP, false, 0 },
  { "unbindable", OPT_PROP, false, MS_UNBINDABLE },
  /* Recursive attributes (mount_setattr AT_RECURSIVE) for every mount below. */
  { "rro", OPT_REC_ATTR, false, MOUNT_ATTR_RDONLY },
  { "rrw", OPT_REC_ATTR, true, MOUNT_ATTR_RDONLY },
  { "rnosuid", OPT_REC_ATTR, false, MOUNT_ATTR_NOSUID },
  { "rsuid", OPT_REC_ATTR, true, MOUNT_ATTR_NOSUID },
  { "rnodev", OPT_REC_ATTR, false, MOUNT_ATTR_NODEV },
  { "rdev", OPT_REC_ATTR, true, MOUNT_ATTR_NODEV },
  { "rnoexec", OPT_REC_ATTR, false, MOUNT_ATTR_NOEXEC },
  { "rexec", OPT_REC_ATTR, true, MOUNT_ATTR_NOEXEC },
  { "rnodiratime", OPT_REC_ATTR, false, MOUNT_ATTR_NODIRATIME },
  { "rdiratime", OPT_REC_ATTR, true, MOUNT_ATTR_NODIRATIME },
  { "rnoatime", OPT_REC_ATTR, false, MOUNT_ATTR_NOATIME },
  { "ratime", OPT_REC_ATTR, true, MOUNT_ATTR__ATIME },
  { "rrelatime", OPT_REC_ATTR, false, MOUNT_ATTR_RELATIME },
  { "rnorelatime", OPT_REC_ATTR, true, MOUNT_ATTR_RELATIME },
  { "rstrictatime", OPT_REC_ATTR, false, MOUNT_ATTR_STRICTATIME },
  { "rnostrictatime", OPT_REC_ATTR, true, MOUNT_ATTR_STRICTATIME },
  { "rnosymfollow", OPT_REC_ATTR, false, MOUNT_ATTR_NOSYMFOLLOW },
  { "rsymfollow", OPT_REC_ATTR, true, MOUNT_ATTR_NOSYMFOLLOW },
};

const char *const oci_mount_option_names[] = {
  "async",         "atime",        "bind",
  "defaults",      "dev",          "diratime",
  "dirsync",       "exec",         "idmap",
  "iversion",      "lazytime",     "loud",
  "mand",          "noatime",      "nodev",
  "nodiratime",    "noexec",       "noiversion",
  "nolazytime",    "nomand",       "norelatime",
  "nostrictatime", "nosuid",       "nosymfollow",
  "private",       "ratime",       "rbind",
  "rdev",          "rdiratime",    "relatime",
  "remount",       "rexec",        "ridmap",
  "rnoatime",      "rnodev",       "rnodiratime",
  "rnoexec",       "rnorelatime",  "rnostrictatime",
  "rnosuid",       "rnosymfollow", "ro",
  "rprivate",      "rrelatime",    "rro",
  "rrw",           "rshared",      "rslave",
  "rstrictatime",  "rsuid",        "rsymfollow",
  "runbindable",   "rw",           "shared",
  "silent",        "slave",        "strictatime",
  "suid",          "symfollow",    "sync",
  "tmpcopyup",     "unbindable",   NULL,
};

static const struct mount_opt *
find_mount_opt (const char *name)
{
  for (size_t k = 0; k < sizeof mount_opts / sizeof mount_opts[0]; k++)
    if (strcmp (mount_opts[k].name, name) == 0)
      return &mount_opts[k];
  return NULL;
}

void
oci_mount_options_clear (struct oci_mount_options *o)
{
  free (o->data);
  memset (o, 0, sizeof *o);
}

int
oci_mount_options_parse (char **options, const char *type, const char *where, struct oci_mount_options *ret,
                         ohbox_error_t *err)
{
  struct pctx cx = { .doc = "config.json", .err = err };
  struct pctx *c = &cx;
  struct ohbox_buf data = { 0 };
  memset (ret, 0, sizeof *ret);
  bool bind_type = type && strcmp (type, "bind") == 0;
  for (size_t i = 0; options && options[i]; i++)
    {
      const char *o = options[i];
      const struct mount_opt *m = find_mount_opt (o);
      if (m == NULL)
        {
          if (*o == '\0' || strchr (o, ','))
            {
              cleanup_free char *p = idx (where, i);
              ohbox_buf_free (&data);
              return perr (c, OHBOX_ERR_USAGE, p, "`%.128s` is not a mount option", o);
            }
          /* The filesystem's own option ("mode=755", "newinstance"). */
          if (data.len)
            ohbox_buf_append (&data, ",", 1);
          ohbox_buf_append (&data, o, strlen (o));
          continue;
        }
      switch (m->kind)
        {
        case OPT_FLAG:
          if (m->clear)
            {
              ret->flags &= ~m->value;
              ret->cleared |= m->value;
            }
          else
            {
              ret->flags |= m->value;
              ret->cleared &= ~m->value;
            }
          /* The atime options exclude each other (the kernel's rule). */
          if (!m->clear && (m->value & (MS_NOATIME | MS_RELATIME | MS_STRICTATIME)))
            ret->flags &= ~((MS_NOATIME | MS_RELATIME | MS_STRICTATIME) & ~m->value);
          break;
        case OPT_REC_ATTR:
          if (m->value == MOUNT_ATTR_RELATIME || m->value == MOUNT_ATTR_NOATIME || m->value == MOUNT_ATTR_STRICTATIME
              || m->value == MOUNT_ATTR__ATIME)
            {
              /* The atime mode is one field: setting one clears the field. */
              ret->rec_attr_clr |= MOUNT_ATTR__ATIME;
              ret->rec_attr_set &= ~MOUNT_ATTR__ATIME;
              if (!m->clear)
                ret->rec_attr_set |= m->value;
            }
          else if (m->clear)
            {
              ret->rec_attr_set &= ~m->value;
              ret->rec_attr_clr |= m->value;
            }
          else
            {
              ret->rec_attr_set |= m->value;
              ret->rec_attr_clr &= ~m->value;
            }
          break;
        case OPT_PROP:
          ret->propagation = m->value;
          break;
        case OPT_BIND:
          ret->bind = true;
          break;
        case OPT_RBIND:
          ret->bind = ret->recursive = true;
          break;
        case OPT_TMPCOPYUP:
          ret->tmpcopyup = true;
          break;
        case OPT_IDMAP:
        case OPT_RIDMAP:
          ret->idmap = true;
          if (m->kind == OPT_RIDMAP)
            ret->recursive = true;
          break;
        case OPT_REMOUNT:
          ret->remount = true;
          break;
        case OPT_DEFAULTS:
          break;
        }
    }
  if (bind_type)
    ret->bind = true;
  if (ret->bind && data.len)
    {
      /* A bind mount takes no filesystem options: they would be dropped. */
      cleanup_free char *d = data.data;
      return perr (c, OHBOX_ERR_USAGE, where, "`%.128s`: not an option of a bind mount", d);
    }
  if (ret->tmpcopyup && (type == NULL || strcmp (type, "tmpfs") != 0))
    {
      ohbox_buf_free (&data);
      return perr (c, OHBOX_ERR_USAGE, where, "`tmpcopyup` is an option of tmpfs mounts");
    }
  if ((ret->rec_attr_set || ret->rec_attr_clr) && !ret->bind)
    {
      ohbox_buf_free (&data);
      return perr (c, OHBOX_ERR_USAGE, where, "recursive options (rro, rnosuid, ...) apply to bind mounts only");
    }
  ret->data = data.data;
  return 0;
}

/* ------------------------------------------------------------ mounts */

static void
mount_clear (struct oci_mount *m)
{
  free (m->destination);
  free (m->source);
  free (m->type);
  ohbox_strv_free (m->options);
  oci_mount_options_clear (&m->opts);
  idmaps_clear (&m->uid_mappings);
  idmaps_clear (&m->gid_mappings);
}

static const char *const mount_keys[] = {
  "destination", "source", "options", "type", "uidMappings", "gidMappings", NULL
};

static int
read_mount (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_mount *m = (struct oci_mount *) elems + i;
  if (get_string (c, j, p, "destination", true, &m->destination) < 0
      || get_string (c, j, p, "source", false, &m->source) < 0 || get_string (c, j, p, "type", false, &m->type) < 0
      || get_strv (c, j, p, "options", &m->options) < 0 || parse_idmaps (c, j, p, "uidMappings", &m->uid_mappings) < 0
      || parse_idmaps (c, j, p, "gidMappings", &m->gid_mappings) < 0)
    return -1;
  if (*m->destination == '\0')
    return perr_key (c, OHBOX_ERR_USAGE, p, "destination", "empty");
  if (m->destination[0] != '/')
    {
      /* Relative destinations are deprecated and mean relative to "/". */
      char *abs = xasprintf ("/%s", m->destination);
      free (m->destination);
      m->destination = abs;
    }
  if (check_absolute_key (c, p, "destination", m->destination) < 0)
    return -1;
  if ((m->uid_mappings.n == 0) != (m->gid_mappings.n == 0))
    return perr (c, OHBOX_ERR_USAGE, p, "uidMappings and gidMappings go together");
  cleanup_free char *po = sub (p, "options");
  if (oci_mount_options_parse (m->options, m->type, po, &m->opts, c->err) < 0)
    return -1;
  if (m->uid_mappings.n && !m->opts.bind)
    return perr (c, OHBOX_ERR_UNSUPPORTED, p, "uidMappings on a mount that is not a bind mount");
  if (m->uid_mappings.n)
    m->opts.idmap = true;
  if (m->opts.bind && (m->source == NULL || *m->source == '\0'))
    return perr (c, OHBOX_ERR_USAGE, p, "a bind mount needs a source");
  if (!m->opts.bind && m->type == NULL)
    return perr (c, OHBOX_ERR_USAGE, p, "neither a type nor the bind option");
  return 0;
}

/* ------------------------------------------------------------ hooks */

/* By kind, and the keys of "hooks". */
static const char *const hook_names[OCI_HOOK_KINDS + 1] = {
  "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop", NULL
};

const char *
oci_hook_kind_name (enum oci_hook_kind k)
{
  return k < OCI_HOOK_KINDS ? hook_names[k] : "?";
}

static void
hooks_clear (struct oci_hooks *h)
{
  for (int k = 0; k < OCI_HOOK_KINDS; k++)
    {
      for (size_t i = 0; i < h->n[k]; i++)
        {
          free (h->v[k][i].path);
          ohbox_strv_free (h->v[k][i].args);
          ohbox_strv_free (h->v[k][i].env);
        }
      free (h->v[k]);
    }
  memset (h, 0, sizeof *h);
}

static const char *const hook_keys[] = { "path", "args", "env", "timeout", NULL };

static int
read_hook (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_hook *x = (struct oci_hook *) elems + i;
  int64_t timeout = 0;
  bool has_timeout = false;
  if (get_string (c, j, p, "path", true, &x->path) < 0 || get_strv (c, j, p, "args", &x->args) < 0
      || get_strv (c, j, p, "env", &x->env) < 0
      || get_int (c, j, p, "timeout", false, INT_MIN, INT_MAX, &has_timeout, &timeout) < 0
      || check_absolute_key (c, p, "path", x->path) < 0)
    return -1;
  if (has_timeout && timeout <= 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "timeout", "must be greater than zero");
  x->timeout = (int) timeout;
  return 0;
}

/* "hooks": an array of hooks for each kind. */
static int
read_hooks (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_hooks *h = data;
  for (int k = 0; k < OCI_HOOK_KINDS; k++)
    if (get_objects (c, j, p, hook_names[k], hook_keys, read_hook, h->v[k], h->n[k]) < 0)
      return -1;
  return 0;
}

/* ------------------------------------------------------------ process */

static const struct
{
  const char *name;
  int resource;
} rlimits[] = {
  { "RLIMIT_AS", RLIMIT_AS },
  { "RLIMIT_CORE", RLIMIT_CORE },
  { "RLIMIT_CPU", RLIMIT_CPU },
  { "RLIMIT_DATA", RLIMIT_DATA },
  { "RLIMIT_FSIZE", RLIMIT_FSIZE },
  { "RLIMIT_LOCKS", RLIMIT_LOCKS },
  { "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
  { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
  { "RLIMIT_NICE", RLIMIT_NICE },
  { "RLIMIT_NOFILE", RLIMIT_NOFILE },
  { "RLIMIT_NPROC", RLIMIT_NPROC },
  { "RLIMIT_RSS", RLIMIT_RSS },
  { "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
  { "RLIMIT_RTTIME", RLIMIT_RTTIME },
  { "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
  { "RLIMIT_STACK", RLIMIT_STACK },
};

int
oci_rlimit_lookup (const char *name)
{
  for (size_t i = 0; i < sizeof rlimits / sizeof rlimits[0]; i++)
    if (strcmp (rlimits[i].name, name) == 0)
      return rlimits[i].resource;
  return -1;
}

void
oci_process_free (struct oci_process *p)
{
  if (p == NULL)
    return;
  free (p->cwd);
  ohbox_strv_free (p->env);
  ohbox_strv_free (p->args);
  for (size_t i = 0; i < p->n_rlimits; i++)
    free (p->rlimits[i].name);
  free (p->rlimits);
  free (p->apparmor_profile);
  ohbox_strv_free (p->caps.bounding);
  ohbox_strv_free (p->caps.effective);
  ohbox_strv_free (p->caps.inheritable);
  ohbox_strv_free (p->caps.permitted);
  ohbox_strv_free (p->caps.ambient);
  free (p->selinux_label);
  free (p->user.additional_gids);
  free (p);
}

static const char *const user_keys[] = { "uid", "gid", "umask", "additionalGids", "username", NULL };

static int
read_user (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_user *u = data;
  if (get_u32 (c, j, p, "uid", false, NULL, &u->uid) < 0 || get_u32 (c, j, p, "gid", false, NULL, &u->gid) < 0
      || get_u32 (c, j, p, "umask", false, &u->has_umask, &u->umask) < 0)
    return -1;
  if (u->has_umask && u->umask > 0777)
    return perr_key (c, OHBOX_ERR_USAGE, p, "umask", "%o is not a umask (at most 0777)", u->umask);
  if (json_object_get (j, "username"))
    return perr_key (c, OHBOX_ERR_UNSUPPORTED, p, "username", "a Windows field; give uid and gid");
  json_t *a;
  size_t n;
  if (get_array (c, j, p, "additionalGids", "an array", &a, &n) < 0)
    return -1;
  u->additional_gids = xcalloc (n + 1, sizeof (uint32_t));
  for (size_t i = 0; i < n; i++)
    {
      json_t *g = json_array_get (a, i);
      if (!json_is_integer (g) || json_integer_value (g) < 0 || json_integer_value (g) > UINT32_MAX - 1)
        {
          cleanup_free char *pi = xasprintf ("%s.additionalGids[%zu]", p, i);
          return perr (c, OHBOX_ERR_USAGE, pi, "must be a gid (0..4294967294)");
        }
      u->additional_gids[u->n_additional_gids++] = (uint32_t) json_integer_value (g);
    }
  return 0;
}

static const char *const caps_keys[] = { "bounding", "effective", "inheritable", "permitted", "ambient", NULL };

static int
read_caps (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_process *pr = data;
  pr->has_capabilities = true;
  if (get_strv (c, j, p, "bounding", &pr->caps.bounding) < 0 || get_strv (c, j, p, "effective", &pr->caps.effective) < 0
      || get_strv (c, j, p, "inheritable", &pr->caps.inheritable) < 0
      || get_strv (c, j, p, "permitted", &pr->caps.permitted) < 0
      || get_strv (c, j, p, "ambient", &pr->caps.ambient) < 0)
    return -1;
  return 0;
}

static const char *const rlimit_keys[] = { "type", "soft", "hard", NULL };

static int
read_rlimit (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_rlimit *all = elems, *r = &all[i];
  int64_t soft = 0, hard = 0;
  /* RLIM_INFINITY is 2^64-1, which JSON decoders in Go write as such;
   * jansson reads integers as int64, so -1 stands for it too. */
  if (get_string (c, j, p, "type", true, &r->name) < 0
      || get_int (c, j, p, "soft", true, -1, INT64_MAX, NULL, &soft) < 0
      || get_int (c, j, p, "hard", true, -1, INT64_MAX, NULL, &hard) < 0)
    return -1;
  r->soft = soft < 0 ? RLIM_INFINITY : (uint64_t) soft;
  r->hard = hard < 0 ? RLIM_INFINITY : (uint64_t) hard;
  r->resource = oci_rlimit_lookup (r->name);
  if (r->resource < 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "type", "unknown resource `%.64s`", r->name);
  for (size_t k = 0; k < i; k++)
    if (all[k].resource == r->resource)
      return perr_key (c, OHBOX_ERR_USAGE, p, "type", "`%s` given twice", r->name);
  if (r->soft > r->hard)
    return perr (c, OHBOX_ERR_USAGE, p, "soft limit above the hard limit");
  return 0;
}

static const char *const sched_policies[] = { "SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",       "SCHED_BATCH",
                                              "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE", NULL };
static const char *const sched_flags[] = { "SCHED_FLAG_RESET_ON_FORK",  "SCHED_FLAG_RECLAIM",
                                           "SCHED_FLAG_DL_OVERRUN",     "SCHED_FLAG_KEEP_POLICY",
                                           "SCHED_FLAG_KEEP_PARAMS",    "SCHED_FLAG_UTIL_CLAMP_MIN",
                                           "SCHED_FLAG_UTIL_CLAMP_MAX", NULL };

static const char *const scheduler_keys[] = { "policy",  "nice",     "priority", "flags",
                                              "runtime", "deadline", "period",   NULL };

static int
read_scheduler (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_scheduler *s = data;
  cleanup_free char *policy = NULL;
  cleanup_strv char **flags = NULL;
  int64_t nice = 0, prio = 0;
  if (get_string (c, j, p, "policy", true, &policy) < 0 || get_int (c, j, p, "nice", false, -20, 19, NULL, &nice) < 0
      || get_int (c, j, p, "priority", false, 0, 99, NULL, &prio) < 0
      || get_u64 (c, j, p, "runtime", NULL, &s->runtime) < 0 || get_u64 (c, j, p, "deadline", NULL, &s->deadline) < 0
      || get_u64 (c, j, p, "period", NULL, &s->period) < 0 || get_strv (c, j, p, "flags", &flags) < 0)
    return -1;
  s->present = true;
  s->nice = (int) nice;
  s->priority = (int) prio;
  s->policy = find_name (sched_policies, policy); /* the list's order is Linux's numbering */
  if (s->policy == 4)
    return perr_key (c, OHBOX_ERR_UNSUPPORTED, p, "policy", "SCHED_ISO is not implemented by Linux");
  if (s->policy < 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "policy", "unknown policy `%.64s`", policy);
  for (size_t i = 0; flags && flags[i]; i++)
    {
      int bit = find_name (sched_flags, flags[i]);
      if (bit < 0)
        {
          cleanup_free char *pf = xasprintf ("%s.flags[%zu]", p, i);
          return perr (c, OHBOX_ERR_USAGE, pf, "unknown flag");
        }
      /* SCHED_FLAG_RESET_ON_FORK 0x01, RECLAIM 0x02, DL_OVERRUN 0x04,
       * KEEP_POLICY 0x08, KEEP_PARAMS 0x10, UTIL_CLAMP_MIN 0x20, MAX 0x40. */
      s->flags |= UINT64_C (1) << bit;
    }
  return 0;
}

static const char *const io_priority_keys[] = { "class", "priority", NULL };
/* In the order of their numbers: IOPRIO_CLASS_RT is 1, BE 2, IDLE 3. */
static const char *const io_classes[] = { "IOPRIO_CLASS_RT", "IOPRIO_CLASS_BE", "IOPRIO_CLASS_IDLE", NULL };

static int
read_io_priority (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_io_priority *io = data;
  cleanup_free char *cls = NULL;
  int64_t prio = 0;
  if (get_string (c, j, p, "class", true, &cls) < 0 || get_int (c, j, p, "priority", false, 0, 7, NULL, &prio) < 0)
    return -1;
  io->present = true;
  io->priority = (int) prio;
  io->ioclass = find_name (io_classes, cls) + 1;
  if (io->ioclass == 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "class", "unknown class `%.64s`", cls);
  return 0;
}

static const char *const console_size_keys[] = { "height", "width", NULL };

static int
read_console_size (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_process *pr = data;
  uint32_t h, w;
  if (get_u32 (c, j, p, "height", true, NULL, &h) < 0 || get_u32 (c, j, p, "width", true, NULL, &w) < 0)
    return -1;
  if (h > 65535 || w > 65535)
    return perr (c, OHBOX_ERR_USAGE, p, "larger than 65535");
  pr->has_console_size = true;
  pr->console_height = h;
  pr->console_width = w;
  return 0;
}

static int
parse_process (struct pctx *c, json_t *j, const char *p, struct oci_process **ret)
{
  static const char *const keys[] = { "terminal",
                                      "consoleSize",
                                      "cwd",
                                      "env",
                                      "args",
                                      "rlimits",
                                      "apparmorProfile",
                                      "capabilities",
                                      "noNewPrivileges",
                                      "oomScoreAdj",
                                      "selinuxLabel",
                                      "user",
                                      "scheduler",
                                      "ioPriority",
                                      NULL };
  static const char *const unsupported[] = { "commandLine", NULL };
  struct oci_process *pr = xcalloc (1, sizeof *pr);
  *ret = NULL;
  int64_t oom = 0;
  if (check_keys (c, j, p, keys, unsupported) < 0 || get_bool (c, j, p, "terminal", NULL, &pr->terminal) < 0
      || get_string (c, j, p, "cwd", true, &pr->cwd) < 0 || get_strv (c, j, p, "env", &pr->env) < 0
      || get_strv (c, j, p, "args", &pr->args) < 0
      || get_objects (c, j, p, "rlimits", rlimit_keys, read_rlimit, pr->rlimits, pr->n_rlimits) < 0
      || get_string (c, j, p, "apparmorProfile", false, &pr->apparmor_profile) < 0
      || get_object (c, j, p, "capabilities", caps_keys, read_caps, pr) < 0
      || get_bool (c, j, p, "noNewPrivileges", NULL, &pr->no_new_privileges) < 0
      || get_int (c, j, p, "oomScoreAdj", false, -1000, 1000, &pr->has_oom_score_adj, &oom) < 0
      || get_string (c, j, p, "selinuxLabel", false, &pr->selinux_label) < 0
      || get_object (c, j, p, "user", user_keys, read_user, &pr->user) < 0
      || get_object (c, j, p, "scheduler", scheduler_keys, read_scheduler, &pr->scheduler) < 0
      || get_object (c, j, p, "ioPriority", io_priority_keys, read_io_priority, &pr->io_priority) < 0)
    goto fail;
  pr->oom_score_adj = (int) oom;
  if (check_absolute_key (c, p, "cwd", pr->cwd) < 0)
    goto fail;
  if (pr->args == NULL || pr->args[0] == NULL || *pr->args[0] == '\0')
    {
      perr_key (c, OHBOX_ERR_USAGE, p, "args", "required: the command to run (at least one entry, not empty)");
      goto fail;
    }
  if (pr->env == NULL)
    pr->env = xcalloc (1, sizeof (char *));
  for (size_t i = 0; pr->env[i]; i++)
    if (strchr (pr->env[i], '=') == NULL || pr->env[i][0] == '=')
      {
        cleanup_free char *pe = xasprintf ("%s%senv[%zu]", p, *p ? "." : "", i);
        perr (c, OHBOX_ERR_USAGE, pe, "`%.64s` is not KEY=VALUE", pr->env[i]);
        goto fail;
      }
  if (get_object (c, j, p, "consoleSize", console_size_keys, read_console_size, pr) < 0)
    goto fail;
  *ret = pr;
  return 0;
fail:
  oci_process_free (pr);
  return -1;
}

/* ------------------------------------------------------------ linux */

static const struct
{
  const char *name;
  int type;
} namespaces_by_name[] = {
  { "pid", CLONE_NEWPID }, { "network", CLONE_NEWNET }, { "mount", CLONE_NEWNS },      { "ipc", CLONE_NEWIPC },
  { "uts", CLONE_NEWUTS }, { "user", CLONE_NEWUSER },   { "cgroup", CLONE_NEWCGROUP }, { "time", CLONE_NEWTIME },
};

const char *const oci_namespace_names[] = { "cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts", NULL };

const char *
oci_namespace_name (int type)
{
  for (size_t i = 0; i < sizeof namespaces_by_name / sizeof namespaces_by_name[0]; i++)
    if (namespaces_by_name[i].type == type)
      return namespaces_by_name[i].name;
  return "?";
}

static const char *const namespace_keys[] = { "type", "path", NULL };

static int
read_namespace (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_namespace *namespaces = elems, *ns = &namespaces[i];
  cleanup_free char *type = NULL;
  if (get_string (c, j, p, "type", true, &type) < 0 || get_string (c, j, p, "path", false, &ns->path) < 0)
    return -1;
  for (size_t k = 0; k < sizeof namespaces_by_name / sizeof namespaces_by_name[0]; k++)
    if (strcmp (namespaces_by_name[k].name, type) == 0)
      ns->type = namespaces_by_name[k].type;
  if (ns->type == 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "type", "unknown namespace type `%.64s`", type);
  for (size_t k = 0; k < i; k++)
    if (namespaces[k].type == ns->type)
      return perr_key (c, OHBOX_ERR_USAGE, p, "type", "the %s namespace is listed twice", type);
  if (ns->path && *ns->path == '\0')
    {
      free (ns->path);
      ns->path = NULL;
    }
  if (ns->path && check_absolute_key (c, p, "path", ns->path) < 0)
    return -1;
  return 0;
}

static const char *const device_keys[] = { "type", "path", "major", "minor", "fileMode", "uid", "gid", NULL };

static int
read_device (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_device *d = (struct oci_device *) elems + i;
  cleanup_free char *type = NULL;
  bool has_major, has_minor;
  if (get_string (c, j, p, "type", true, &type) < 0 || get_string (c, j, p, "path", true, &d->path) < 0
      || get_int (c, j, p, "major", false, 0, 4095, &has_major, &d->major) < 0
      || get_int (c, j, p, "minor", false, 0, 1048575, &has_minor, &d->minor) < 0
      || get_u32 (c, j, p, "fileMode", false, &d->has_file_mode, &d->file_mode) < 0
      || get_u32 (c, j, p, "uid", false, &d->has_uid, &d->uid) < 0
      || get_u32 (c, j, p, "gid", false, &d->has_gid, &d->gid) < 0)
    return -1;
  if (strlen (type) != 1 || strchr ("cbup", type[0]) == NULL)
    return perr_key (c, OHBOX_ERR_USAGE, p, "type", "`%.16s` is not a device type (c, b, u or p)", type);
  d->type = type[0];
  if (d->type != 'p' && (!has_major || !has_minor))
    return perr (c, OHBOX_ERR_USAGE, p, "a %s device needs major and minor", d->type == 'b' ? "block" : "char");
  if (check_absolute_key (c, p, "path", d->path) < 0)
    return -1;
  if (strncmp (d->path, "/dev/", 5) != 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "path", "`%.256s` is not below /dev", d->path);
  if (d->has_file_mode && (d->file_mode & ~07777u))
    return perr_key (c, OHBOX_ERR_USAGE, p, "fileMode", "%o has bits beyond permissions (07777)", d->file_mode);
  return 0;
}

static const char *const device_rule_keys[] = { "allow", "type", "major", "minor", "access", NULL };

static int
read_device_rule (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_device_rule *d = (struct oci_device_rule *) elems + i;
  cleanup_free char *type = NULL, *access = NULL;
  bool has_allow, has_major, has_minor;
  if (get_bool (c, j, p, "allow", &has_allow, &d->allow) < 0 || get_string (c, j, p, "type", false, &type) < 0
      || get_int (c, j, p, "major", false, -1, 4095, &has_major, &d->major) < 0
      || get_int (c, j, p, "minor", false, -1, 1048575, &has_minor, &d->minor) < 0
      || get_string (c, j, p, "access", false, &access) < 0)
    return -1;
  if (!has_allow)
    return perr_key (c, OHBOX_ERR_USAGE, p, "allow", "required");
  if (!has_major)
    d->major = -1;
  if (!has_minor)
    d->minor = -1;
  d->type = type && *type ? type[0] : 'a';
  if ((type && strlen (type) > 1) || strchr ("acb", d->type) == NULL)
    return perr_key (c, OHBOX_ERR_USAGE, p, "type", "`%.16s` is not a device rule type (a, c or b)", type);
  const char *acc = access && *access ? access : "rwm";
  size_t k = 0;
  for (const char *s = acc; *s; s++)
    {
      if (strchr ("rwm", *s) == NULL || strchr (d->access, *s) || k >= 3)
        return perr_key (c, OHBOX_ERR_USAGE, p, "access", "`%.16s` is not a subset of \"rwm\"", acc);
      d->access[k++] = *s;
    }
  return 0;
}

static const char *const memory_keys[] = {
  "limit",        "reservation",       "swap", "kernel", "kernelTCP", "swappiness", "disableOOMKiller",
  "useHierarchy", "checkBeforeUpdate", NULL
};

static int
read_memory (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_resources *r = data;
  struct oci_memory *m = &r->memory;
  r->has_memory = true;
  /* Go writes an unset swappiness as 2^64-1 (uint64 -1) in some versions:
   * jansson cannot read that, and -1 means "unset" too. */
  int64_t sw = 0;
  if (get_int (c, j, p, "limit", false, -1, INT64_MAX, &m->has_limit, &m->limit) < 0
      || get_int (c, j, p, "reservation", false, -1, INT64_MAX, &m->has_reservation, &m->reservation) < 0
      || get_int (c, j, p, "swap", false, -1, INT64_MAX, &m->has_swap, &m->swap) < 0
      || get_int (c, j, p, "kernel", false, -1, INT64_MAX, &m->has_kernel, &m->kernel) < 0
      || get_int (c, j, p, "kernelTCP", false, -1, INT64_MAX, &m->has_kernel_tcp, &m->kernel_tcp) < 0
      || get_bool (c, j, p, "disableOOMKiller", &m->has_disable_oom_killer, &m->disable_oom_killer) < 0
      || get_bool (c, j, p, "useHierarchy", &m->has_use_hierarchy, &m->use_hierarchy) < 0
      || get_bool (c, j, p, "checkBeforeUpdate", NULL, &m->check_before_update) < 0
      || get_int (c, j, p, "swappiness", false, -1, 100, &m->has_swappiness, &sw) < 0)
    return -1;
  if (sw < 0)
    m->has_swappiness = false;
  m->swappiness = (uint64_t) (sw < 0 ? 0 : sw);
  if (m->has_limit && m->limit == 0)
    m->has_limit = false; /* 0: not set (runc) */
  return 0;
}

/* A list of CPUs or memory nodes ("0-3,6"), the member KEY of P. */
static int
check_cpu_list (struct pctx *c, const char *p, const char *key, const char *list, const char *what)
{
  for (const char *s = list; s && *s; s++)
    if (strchr ("0123456789,-", *s) == NULL)
      return perr_key (c, OHBOX_ERR_USAGE, p, key, "`%.64s` is not %s", list, what);
  return 0;
}

static const char *const cpu_keys[] = { "shares",         "quota", "burst", "period", "realtimeRuntime",
                                        "realtimePeriod", "cpus",  "mems",  "idle",   NULL };

static int
read_cpu (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_resources *r = data;
  struct oci_cpu *x = &r->cpu;
  r->has_cpu = true;
  if (get_u64 (c, j, p, "shares", &x->has_shares, &x->shares) < 0
      || get_int (c, j, p, "quota", false, -1, INT64_MAX, &x->has_quota, &x->quota) < 0
      || get_u64 (c, j, p, "burst", &x->has_burst, &x->burst) < 0
      || get_u64 (c, j, p, "period", &x->has_period, &x->period) < 0
      || get_int (c, j, p, "realtimeRuntime", false, -1, INT64_MAX, &x->has_rt_runtime, &x->rt_runtime) < 0
      || get_u64 (c, j, p, "realtimePeriod", &x->has_rt_period, &x->rt_period) < 0
      || get_string (c, j, p, "cpus", false, &x->cpus) < 0 || get_string (c, j, p, "mems", false, &x->mems) < 0
      || get_int (c, j, p, "idle", false, 0, 1, &x->has_idle, &x->idle) < 0
      || check_cpu_list (c, p, "cpus", x->cpus, "a CPU list such as \"0-3,6\"") < 0
      || check_cpu_list (c, p, "mems", x->mems, "a node list such as \"0-1\"") < 0)
    return -1;
  return 0;
}

static const char *const blkio_weight_keys[] = { "major", "minor", "weight", "leafWeight", NULL };
static const char *const blkio_rate_keys[] = { "major", "minor", "rate", NULL };

/* A weight (0..10000) and its presence. */
static int
get_weight (struct pctx *c, json_t *j, const char *p, const char *key, bool *has, uint16_t *ret)
{
  int64_t w = 0;
  if (get_int (c, j, p, key, false, 0, 10000, has, &w) < 0)
    return -1;
  *ret = (uint16_t) w;
  return 0;
}

/* An element of a blockIO device list; the keys of its list decide which of
 * weight, leafWeight and rate it may have. */
static int
read_blkio_device (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_blkio_device *d = (struct oci_blkio_device *) elems + i;
  if (get_int (c, j, p, "major", true, 0, 4095, NULL, &d->major) < 0
      || get_int (c, j, p, "minor", true, 0, 1048575, NULL, &d->minor) < 0
      || get_weight (c, j, p, "weight", &d->has_weight, &d->weight) < 0
      || get_weight (c, j, p, "leafWeight", &d->has_leaf_weight, &d->leaf_weight) < 0
      || get_u64 (c, j, p, "rate", NULL, &d->rate) < 0)
    return -1;
  return 0;
}

static int
get_blkio_list (struct pctx *c, json_t *j, const char *p, const char *key, const char *const *known,
                struct oci_blkio_list *l)
{
  return get_objects (c, j, p, key, known, read_blkio_device, l->v, l->n);
}

static const char *const blkio_keys[] = { "weight",
                                          "leafWeight",
                                          "weightDevice",
                                          "throttleReadBpsDevice",
                                          "throttleWriteBpsDevice",
                                          "throttleReadIOPSDevice",
                                          "throttleWriteIOPSDevice",
                                          NULL };

static int
read_blkio (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_resources *r = data;
  struct oci_blkio *b = &r->blkio;
  r->has_blkio = true;
  if (get_weight (c, j, p, "weight", &b->has_weight, &b->weight) < 0
      || get_weight (c, j, p, "leafWeight", &b->has_leaf_weight, &b->leaf_weight) < 0
      || get_blkio_list (c, j, p, "weightDevice", blkio_weight_keys, &b->weight_device) < 0
      || get_blkio_list (c, j, p, "throttleReadBpsDevice", blkio_rate_keys, &b->throttle_read_bps) < 0
      || get_blkio_list (c, j, p, "throttleWriteBpsDevice", blkio_rate_keys, &b->throttle_write_bps) < 0
      || get_blkio_list (c, j, p, "throttleReadIOPSDevice", blkio_rate_keys, &b->throttle_read_iops) < 0
      || get_blkio_list (c, j, p, "throttleWriteIOPSDevice", blkio_rate_keys, &b->throttle_write_iops) < 0)
    return -1;
  return 0;
}

static const char *const hugepage_keys[] = { "pageSize", "limit", NULL };

static int
read_hugepage_limit (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_hugepage_limit *h = (struct oci_hugepage_limit *) elems + i;
  bool has_limit;
  if (get_string (c, j, p, "pageSize", true, &h->page_size) < 0
      || get_u64 (c, j, p, "limit", &has_limit, &h->limit) < 0)
    return -1;
  if (!has_limit)
    return perr_key (c, OHBOX_ERR_USAGE, p, "limit", "required");
  const char *s = h->page_size;
  while (*s >= '0' && *s <= '9')
    s++;
  if (s == h->page_size || (strcmp (s, "KB") != 0 && strcmp (s, "MB") != 0 && strcmp (s, "GB") != 0))
    return perr_key (c, OHBOX_ERR_USAGE, p, "pageSize", "`%.32s` is not a page size such as \"2MB\"", h->page_size);
  return 0;
}

static const char *const net_priority_keys[] = { "name", "priority", NULL };

static int
read_net_priority (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  struct oci_net_priority *np = (struct oci_net_priority *) elems + i;
  if (get_string (c, j, p, "name", true, &np->name) < 0 || get_u32 (c, j, p, "priority", true, NULL, &np->priority) < 0)
    return -1;
  return 0;
}

static const char *const pids_keys[] = { "limit", NULL };

static int
read_pids (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_resources *r = data;
  r->has_pids = true;
  return get_int (c, j, p, "limit", true, INT64_MIN, INT64_MAX, NULL, &r->pids_limit);
}

static const char *const network_keys[] = { "classID", "priorities", NULL };

static int
read_network (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_resources *r = data;
  if (get_u32 (c, j, p, "classID", false, &r->has_class_id, &r->class_id) < 0)
    return -1;
  r->has_network = true;
  return get_objects (c, j, p, "priorities", net_priority_keys, read_net_priority, r->net_priorities,
                      r->n_net_priorities);
}

/* The keys of linux.resources.unified are cgroup v2 interface files. */
static int
check_unified (struct pctx *c, const char *p, const struct oci_map *unified)
{
  for (size_t i = 0; i < unified->n; i++)
    {
      const char *k = unified->keys[i];
      if (*k == '\0' || *k == '.' || strchr (k, '/') || strchr (k, '.') == NULL)
        {
          cleanup_free char *pu = xasprintf ("%s.unified.%s", p, k);
          return perr (c, OHBOX_ERR_USAGE, pu, "not a cgroup v2 interface file name such as \"memory.high\"");
        }
    }
  return 0;
}

static int
parse_resources_obj (struct pctx *c, json_t *j, const char *p, struct oci_resources *r)
{
  static const char *const keys[] = { "devices",        "memory",  "cpu",  "pids",    "blockIO",
                                      "hugepageLimits", "network", "rdma", "unified", NULL };
  json_t *o;
  if (check_keys (c, j, p, keys, NULL) < 0
      || get_objects (c, j, p, "devices", device_rule_keys, read_device_rule, r->devices, r->n_devices) < 0
      || get_object (c, j, p, "memory", memory_keys, read_memory, r) < 0
      || get_object (c, j, p, "cpu", cpu_keys, read_cpu, r) < 0
      || get_object (c, j, p, "blockIO", blkio_keys, read_blkio, r) < 0 || get_map (c, j, p, "unified", &r->unified) < 0
      || get_object (c, j, p, "pids", pids_keys, read_pids, r) < 0
      || get_objects (c, j, p, "hugepageLimits", hugepage_keys, read_hugepage_limit, r->hugepages, r->n_hugepages) < 0
      || get_object (c, j, p, "network", network_keys, read_network, r) < 0
      || member (c, j, p, "rdma", JSON_OBJECT, "an object", &o) < 0)
    return -1;
  if (o && json_object_size (o) > 0)
    return perr_key (c, OHBOX_ERR_UNSUPPORTED, p, "rdma", "RDMA limits are not supported by ohbox");
  return check_unified (c, p, &r->unified);
}

void
oci_resources_clear (struct oci_resources *r)
{
  free (r->devices);
  free (r->cpu.cpus);
  free (r->cpu.mems);
  free (r->blkio.weight_device.v);
  free (r->blkio.throttle_read_bps.v);
  free (r->blkio.throttle_write_bps.v);
  free (r->blkio.throttle_read_iops.v);
  free (r->blkio.throttle_write_iops.v);
  for (size_t i = 0; i < r->n_hugepages; i++)
    free (r->hugepages[i].page_size);
  free (r->hugepages);
  for (size_t i = 0; i < r->n_net_priorities; i++)
    free (r->net_priorities[i].name);
  free (r->net_priorities);
  map_clear (&r->unified);
  memset (r, 0, sizeof *r);
}

/* ---- seccomp: validated, kept as JSON ---- */

const char *const oci_seccomp_action_names[] = { "SCMP_ACT_ALLOW",        "SCMP_ACT_ERRNO",       "SCMP_ACT_KILL",
                                                 "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
                                                 "SCMP_ACT_TRACE",        "SCMP_ACT_TRAP",        NULL };
const char *const oci_seccomp_operator_names[] = { "SCMP_CMP_EQ", "SCMP_CMP_GE",        "SCMP_CMP_GT", "SCMP_CMP_LE",
                                                   "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", NULL };
const char *const oci_seccomp_arch_names[] = {
  "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM",      "SCMP_ARCH_MIPS",        "SCMP_ARCH_MIPS64",   "SCMP_ARCH_MIPS64N32",
  "SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",      "SCMP_ARCH_PPC64",
  "SCMP_ARCH_PPC64LE", "SCMP_ARCH_RISCV64",  "SCMP_ARCH_S390",        "SCMP_ARCH_S390X",    "SCMP_ARCH_X32",
  "SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_PARISC",      "SCMP_ARCH_PARISC64", NULL
};
const char *const oci_seccomp_flag_names[] = { "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                                               "SECCOMP_FILTER_FLAG_SPEC_ALLOW", NULL };

static int
check_action (struct pctx *c, const char *p, const char *action)
{
  if (strcmp (action, "SCMP_ACT_NOTIFY") == 0)
    return perr (c, OHBOX_ERR_UNSUPPORTED, p, "SCMP_ACT_NOTIFY needs a seccomp agent, which ohbox does not support");
  if (find_name (oci_seccomp_action_names, action) < 0)
    return perr (c, OHBOX_ERR_USAGE, p, "unknown action `%.64s`", action);
  return 0;
}

static const char *const seccomp_arg_keys[] = { "index", "value", "valueTwo", "op", NULL };

static int
check_seccomp_arg (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  cleanup_free char *op = NULL;
  int64_t ignored;
  if (get_int (c, j, p, "index", true, 0, 5, NULL, &ignored) < 0
      || get_int (c, j, p, "value", true, 0, INT64_MAX, NULL, &ignored) < 0
      || get_int (c, j, p, "valueTwo", false, 0, INT64_MAX, NULL, &ignored) < 0
      || get_string (c, j, p, "op", true, &op) < 0)
    return -1;
  if (find_name (oci_seccomp_operator_names, op) < 0)
    return perr_key (c, OHBOX_ERR_USAGE, p, "op", "unknown operator `%.64s`", op);
  return 0;
}

static const char *const seccomp_syscall_keys[] = { "names", "action", "errnoRet", "args", NULL };

static int
check_seccomp_syscall (struct pctx *c, json_t *j, const char *p, void *elems, size_t i)
{
  cleanup_strv char **names = NULL;
  if (get_strv (c, j, p, "names", &names) < 0)
    return -1;
  if (names == NULL || names[0] == NULL)
    return perr_key (c, OHBOX_ERR_USAGE, p, "names", "required (at least one system call)");
  cleanup_free char *action = NULL;
  cleanup_free char *pa = sub (p, "action");
  int64_t ignored;
  if (get_string (c, j, p, "action", true, &action) < 0 || check_action (c, pa, action) < 0
      || get_int (c, j, p, "errnoRet", false, 0, 4095, NULL, &ignored) < 0
      || read_objects (c, j, p, "args", seccomp_arg_keys, check_seccomp_arg, 0, NULL, NULL) < 0)
    return -1;
  return 0;
}

static int
check_seccomp (struct pctx *c, json_t *s)
{
  static const char *const keys[] = { "defaultAction", "defaultErrnoRet", "architectures",    "flags",
                                      "syscalls",      "listenerPath",    "listenerMetadata", NULL };
  const char *p = "linux.seccomp";
  cleanup_free char *action = NULL, *listener = NULL, *meta = NULL;
  cleanup_strv char **arches = NULL, **flags = NULL;
  int64_t ignored;
  if (check_keys (c, s, p, keys, NULL) < 0 || get_string (c, s, p, "defaultAction", true, &action) < 0
      || get_int (c, s, p, "defaultErrnoRet", false, 0, 4095, NULL, &ignored) < 0
      || get_string (c, s, p, "listenerPath", false, &listener) < 0
      || get_string (c, s, p, "listenerMetadata", false, &meta) < 0 || get_strv (c, s, p, "architectures", &arches) < 0
      || get_strv (c, s, p, "flags", &flags) < 0 || check_action (c, "linux.seccomp.defaultAction", action) < 0)
    return -1;
  if (listener && *listener)
    return perr (c, OHBOX_ERR_UNSUPPORTED, "linux.seccomp.listenerPath", "seccomp agents are not supported by ohbox");
  for (size_t i = 0; arches && arches[i]; i++)
    if (find_name (oci_seccomp_arch_names, arches[i]) < 0)
      {
        cleanup_free char *pa = xasprintf ("linux.seccomp.architectures[%zu]", i);
        return perr (c, OHBOX_ERR_USAGE, pa, "unknown architecture `%.64s`", arches[i]);
      }
  for (size_t i = 0; flags && flags[i]; i++)
    if (find_name (oci_seccomp_flag_names, flags[i]) < 0)
      {
        cleanup_free char *pf = xasprintf ("linux.seccomp.flags[%zu]", i);
        return perr (c,
                     strcmp (flags[i], "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0 ? OHBOX_ERR_UNSUPPORTED
                                                                                      : OHBOX_ERR_USAGE,
                     pf, "flag `%.64s` is not supported", flags[i]);
      }
  return read_objects (c, s, p, "syscalls", seccomp_syscall_keys, check_seccomp_syscall, 0, NULL, NULL);
}

static int
parse_paths (struct pctx *c, json_t *lx, const char *key, char ***ret)
{
  if (get_strv (c, lx, "linux", key, ret) < 0)
    return -1;
  for (size_t i = 0; *ret && (*ret)[i]; i++)
    {
      cleanup_free char *p = xasprintf ("linux.%s[%zu]", key, i);
      if (check_absolute (c, p, (*ret)[i]) < 0)
        return -1;
    }
  return 0;
}

static const char *const time_offset_keys[] = { "secs", "nanosecs", NULL };

static int
read_time_offset (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_time_offset *t = data;
  if (get_int (c, j, p, "secs", false, INT64_MIN, INT64_MAX, NULL, &t->secs) < 0
      || get_u32 (c, j, p, "nanosecs", false, NULL, &t->nanosecs) < 0)
    return -1;
  if (t->nanosecs >= 1000000000u)
    return perr (c, OHBOX_ERR_USAGE, p, "nanosecs must be below 1000000000");
  t->present = true;
  return 0;
}

static const char *const time_offsets_keys[] = { "monotonic", "boottime", NULL };

static int
read_time_offsets (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_linux *l = data;
  if (get_object (c, j, p, "monotonic", time_offset_keys, read_time_offset, &l->monotonic) < 0
      || get_object (c, j, p, "boottime", time_offset_keys, read_time_offset, &l->boottime) < 0)
    return -1;
  return 0;
}

static const char *const personality_keys[] = { "domain", "flags", NULL };

static int
read_personality (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_linux *l = data;
  cleanup_free char *domain = NULL;
  cleanup_strv char **flags = NULL;
  if (get_string (c, j, p, "domain", true, &domain) < 0 || get_strv (c, j, p, "flags", &flags) < 0)
    return -1;
  if (flags && flags[0])
    return perr_key (c, OHBOX_ERR_UNSUPPORTED, p, "flags", "no personality flag is supported");
  if (strcmp (domain, "LINUX") == 0)
    l->personality = PER_LINUX;
  else if (strcmp (domain, "LINUX32") == 0)
    l->personality = PER_LINUX32;
  else
    return perr_key (c, OHBOX_ERR_USAGE, p, "domain", "`%.32s` is not LINUX or LINUX32", domain);
  l->has_personality = true;
  return 0;
}

static void
linux_free (struct oci_linux *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->n_namespaces; i++)
    free (l->namespaces[i].path);
  free (l->namespaces);
  idmaps_clear (&l->uid_mappings);
  idmaps_clear (&l->gid_mappings);
  for (size_t i = 0; i < l->n_devices; i++)
    free (l->devices[i].path);
  free (l->devices);
  free (l->cgroups_path);
  oci_resources_clear (&l->resources);
  map_clear (&l->sysctl);
  if (l->seccomp)
    json_decref (l->seccomp);
  ohbox_strv_free (l->masked_paths);
  ohbox_strv_free (l->readonly_paths);
  free (l->mount_label);
  free (l);
}

static int
parse_linux (struct pctx *c, json_t *lx, struct oci_linux **ret)
{
  static const char *const keys[] = { "namespaces",  "uidMappings",   "gidMappings", "timeOffsets", "devices",
                                      "cgroupsPath", "resources",     "sysctl",      "seccomp",     "rootfsPropagation",
                                      "maskedPaths", "readonlyPaths", "mountLabel",  "personality", NULL };
  static const char *const unsupported[] = { "intelRdt", NULL };
  struct oci_linux *l = xcalloc (1, sizeof *l);
  *ret = l;
  cleanup_free char *prop = NULL;
  json_t *res, *seccomp;
  if (check_keys (c, lx, "linux", keys, unsupported) < 0
      || get_objects (c, lx, "linux", "namespaces", namespace_keys, read_namespace, l->namespaces, l->n_namespaces) < 0
      || parse_idmaps (c, lx, "linux", "uidMappings", &l->uid_mappings) < 0
      || parse_idmaps (c, lx, "linux", "gidMappings", &l->gid_mappings) < 0
      || get_objects (c, lx, "linux", "devices", device_keys, read_device, l->devices, l->n_devices) < 0
      || get_string (c, lx, "linux", "cgroupsPath", false, &l->cgroups_path) < 0
      || get_map (c, lx, "linux", "sysctl", &l->sysctl) < 0
      || get_string (c, lx, "linux", "rootfsPropagation", false, &prop) < 0
      || parse_paths (c, lx, "maskedPaths", &l->masked_paths) < 0
      || parse_paths (c, lx, "readonlyPaths", &l->readonly_paths) < 0
      || get_string (c, lx, "linux", "mountLabel", false, &l->mount_label) < 0)
    return -1;
  if (l->cgroups_path && *l->cgroups_path == '\0')
    {
      free (l->cgroups_path);
      l->cgroups_path = NULL;
    }
  if (prop && *prop)
    {
      /* The propagations are those of mount options (private, rslave, ...). */
      const struct mount_opt *m = find_mount_opt (prop);
      if (m == NULL || m->kind != OPT_PROP)
        return perr (c, OHBOX_ERR_USAGE, "linux.rootfsPropagation", "unknown propagation `%.64s`", prop);
      l->rootfs_propagation = m->value;
    }
  if (member (c, lx, "linux", "resources", JSON_OBJECT, "an object", &res) < 0)
    return -1;
  l->has_resources = res != NULL;
  if (res && parse_resources_obj (c, res, "linux.resources", &l->resources) < 0)
    return -1;
  if (member (c, lx, "linux", "seccomp", JSON_OBJECT, "an object", &seccomp) < 0
      || (seccomp && check_seccomp (c, seccomp) < 0))
    return -1;
  l->seccomp = seccomp ? json_incref (seccomp) : NULL;
  if (get_object (c, lx, "linux", "timeOffsets", time_offsets_keys, read_time_offsets, l) < 0
      || get_object (c, lx, "linux", "personality", personality_keys, read_personality, l) < 0)
    return -1;
  return 0;
}

/* ------------------------------------------------------------ the document */

void
oci_runtime_spec_free (struct oci_runtime_spec *s)
{
  if (s == NULL)
    return;
  free (s->oci_version);
  free (s->root_path);
  oci_process_free (s->process);
  free (s->hostname);
  free (s->domainname);
  for (size_t i = 0; i < s->n_mounts; i++)
    mount_clear (&s->mounts[i]);
  free (s->mounts);
  hooks_clear (&s->hooks);
  map_clear (&s->annotations);
  linux_free (s->linux_config);
  free (s);
}

static int
load (struct pctx *c, const char *text, size_t len, json_t **ret)
{
  json_error_t je;
  if (len > OCI_RUNTIME_MAX_CONFIG)
    return perr (c, OHBOX_ERR_USAGE, NULL, "larger than %d bytes", OCI_RUNTIME_MAX_CONFIG);
  *ret = json_loadb (text, len, JSON_REJECT_DUPLICATES, &je);
  if (*ret == NULL)
    return perr (c, OHBOX_ERR_USAGE, NULL, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
  if (!json_is_object (*ret))
    {
      json_decref (*ret);
      return perr (c, OHBOX_ERR_USAGE, NULL, "not a JSON object");
    }
  return 0;
}

static const char *const root_keys[] = { "path", "readonly", NULL };

static int
read_root (struct pctx *c, json_t *j, const char *p, void *data)
{
  struct oci_runtime_spec *s = data;
  if (get_string (c, j, p, "path", true, &s->root_path) < 0
      || get_bool (c, j, p, "readonly", NULL, &s->root_readonly) < 0)
    return -1;
  if (*s->root_path == '\0')
    return perr_key (c, OHBOX_ERR_USAGE, p, "path", "empty");
  return 0;
}

static int
parse_root (struct pctx *c, json_t *root, struct oci_runtime_spec *s)
{
  static const char *const keys[] = { "ociVersion", "root",  "process",     "hostname", "domainname",
                                      "mounts",     "hooks", "annotations", "linux",    NULL };
  static const char *const unsupported[] = { "solaris", "windows", "vm", "zos", "freebsd", NULL };
  json_t *process, *lx;
  if (check_keys (c, root, "", keys, unsupported) < 0
      || get_string (c, root, "", "ociVersion", true, &s->oci_version) < 0 || check_version (c, s->oci_version) < 0
      || get_string (c, root, "", "hostname", false, &s->hostname) < 0
      || get_string (c, root, "", "domainname", false, &s->domainname) < 0
      || get_object (c, root, "", "hooks", hook_names, read_hooks, &s->hooks) < 0
      || get_map (c, root, "", "annotations", &s->annotations) < 0
      || get_object (c, root, "", "root", root_keys, read_root, s) < 0
      || member (c, root, "", "process", JSON_OBJECT, "an object", &process) < 0
      || (process && parse_process (c, process, "process", &s->process) < 0)
      || get_objects (c, root, "", "mounts", mount_keys, read_mount, s->mounts, s->n_mounts) < 0
      || member (c, root, "", "linux", JSON_OBJECT, "an object", &lx) < 0
      || (lx && parse_linux (c, lx, &s->linux_config) < 0))
    return -1;
  return 0;
}

int
oci_runtime_spec_parse (const char *text, size_t len, struct oci_runtime_spec **ret, ohbox_error_t *err)
{
  struct pctx c = { .doc = "config.json", .err = err };
  json_t *root;
  *ret = NULL;
  if (load (&c, text, len, &root) < 0)
    return -1;
  struct oci_runtime_spec *s = xcalloc (1, sizeof *s);
  int r = parse_root (&c, root, s);
  json_decref (root);
  if (r < 0)
    {
      oci_runtime_spec_free (s);
      return -1;
    }
  *ret = s;
  return 0;
}

int
oci_runtime_process_from_json (json_t *j, const char *what, struct oci_process **ret, ohbox_error_t *err)
{
  struct pctx c = { .doc = what, .err = err };
  if (!json_is_object (j))
    return perr (&c, OHBOX_ERR_USAGE, NULL, "not a JSON object");
  return parse_process (&c, j, "", ret);
}

int
oci_runtime_process_parse (const char *text, size_t len, const char *what, struct oci_process **ret, ohbox_error_t *err)
{
  struct pctx c = { .doc = what, .err = err };
  json_t *root;
  *ret = NULL;
  if (load (&c, text, len, &root) < 0)
    return -1;
  int r = parse_process (&c, root, "", ret);
  json_decref (root);
  return r;
}

int
oci_runtime_resources_from_json (json_t *j, const char *what, struct oci_resources *ret, ohbox_error_t *err)
{
  struct pctx c = { .doc = what, .err = err };
  memset (ret, 0, sizeof *ret);
  if (!json_is_object (j))
    return perr (&c, OHBOX_ERR_USAGE, NULL, "not a JSON object");
  if (parse_resources_obj (&c, j, "", ret) < 0)
    {
      oci_resources_clear (ret);
      return -1;
    }
  return 0;
}

int
oci_runtime_resources_parse (const char *text, size_t len, const char *what, struct oci_resources *ret,
                             ohbox_error_t *err)
{
  struct pctx c = { .doc = what, .err = err };
  json_t *root;
  memset (ret, 0, sizeof *ret);
  if (load (&c, text, len, &root) < 0)
    return -1;
  int r = oci_runtime_resources_from_json (root, what, ret, err);
  json_decref (root);
  return r;
}
