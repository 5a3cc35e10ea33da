/* oci/runtime_spec.c: config.json of the OCI runtime spec 1.1, parsed
 * strictly (see runtime_spec.h). Every value is checked where it is read,
 * and every error names its field as a path from the document's root. */
#include "config.h"
#include "oci/runtime_spec.h"
#include "common/utils.h"

#include <errno.h>
#include <limits.h>
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

static int perr (struct pctx *c, int kind, const char *path, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

static int
perr (struct pctx *c, int kind, const char *path, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  if (path && *path)
    return ohbox_error (c->err, kind, 0, "%s: %s: %s", c->doc, path, msg);
  return ohbox_error (c->err, kind, 0, "%s: %s", c->doc, msg);
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

static void
strv_free (char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free (v[i]);
  free (v);
}

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
    cleanup_free char *p = sub (path, key);
    for (size_t i = 0; unsupported && unsupported[i]; i++)
      if (strcmp (unsupported[i], key) == 0)
        return perr (c, OHBOX_ERR_UNSUPPORTED, p, "not supported by ohbox");
    return perr (c, OHBOX_ERR_USAGE, p, "unknown field (not in the OCI runtime spec %s)", OCI_RUNTIME_SPEC_VERSION);
  }
  return 0;
}

/* The member KEY of OBJ checked with IS (NULL when absent; JSON null counts
 * as absent, as Go's decoders read it). */
static int
member (struct pctx *c, json_t *obj, const char *path, const char *key, int (*is) (const json_t *), const char *type,
        json_t **ret)
{
  json_t *v = json_object_get (obj, key);
  *ret = NULL;
  if (v == NULL || json_is_null (v))
    return 0;
  if (!is (v))
    {
      cleanup_free char *p = sub (path, key);
      return perr (c, OHBOX_ERR_USAGE, p, "must be %s", type);
    }
  *ret = v;
  return 0;
}

static int
is_string (const json_t *j)
{
  return json_is_string (j);
}
static int
is_object (const json_t *j)
{
  return json_is_object (j);
}
static int
is_array (const json_t *j)
{
  return json_is_array (j);
}
static int
is_integer (const json_t *j)
{
  return json_is_integer (j);
}
static int
is_bool (const json_t *j)
{
  return json_is_boolean (j);
}

static int
get_string (struct pctx *c, json_t *obj, const char *path, const char *key, bool required, char **ret)
{
  json_t *v;
  *ret = NULL;
  if (member (c, obj, path, key, is_string, "a string", &v) < 0)
    return -1;
  if (v == NULL)
    {
      if (!required)
        return 0;
      cleanup_free char *p = sub (path, key);
      return perr (c, OHBOX_ERR_USAGE, p, "required");
    }
  if (strlen (json_string_value (v)) != json_string_length (v))
    {
      cleanup_free char *p = sub (path, key);
      return perr (c, OHBOX_ERR_USAGE, p, "contains a NUL byte");
    }
  *ret = xstrdup (json_string_value (v));
  return 0;
}

static int
get_bool (struct pctx *c, json_t *obj, const char *path, const char *key, bool *has, bool *ret)
{
  json_t *v;
  if (member (c, obj, path, key, is_bool, "true or false", &v) < 0)
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
  if (member (c, obj, path, key, is_integer, "an integer", &v) < 0)
    return -1;
  if (has)
    *has = v != NULL;
  if (v == NULL)
    {
      if (!required)
        return 0;
      cleanup_free char *p = sub (path, key);
      return perr (c, OHBOX_ERR_USAGE, p, "required");
    }
  int64_t x = json_integer_value (v);
  if (x < lo || x > hi)
    {
      cleanup_free char *p = sub (path, key);
      return perr (c, OHBOX_ERR_USAGE, p, "%lld is out of range (%lld..%lld)", (long long) x, (long long) lo,
                   (long long) hi);
    }
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

/* An array of strings as a NULL-terminated vector (NULL when absent). */
static int
get_strv (struct pctx *c, json_t *obj, const char *path, const char *key, char ***ret)
{
  json_t *a;
  *ret = NULL;
  if (member (c, obj, path, key, is_array, "an array of strings", &a) < 0)
    return -1;
  if (a == NULL)
    return 0;
  cleanup_free char *p = sub (path, key);
  if (json_array_size (a) > OCI_RUNTIME_MAX_LIST)
    return perr (c, OHBOX_ERR_USAGE, p, "more than %d entries", OCI_RUNTIME_MAX_LIST);
  char **v = xcalloc (json_array_size (a) + 1, sizeof (char *));
  for (size_t i = 0; i < json_array_size (a); i++)
    {
      json_t *s = json_array_get (a, i);
      if (!json_is_string (s) || strlen (json_string_value (s)) != json_string_length (s))
        {
          strv_free (v);
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
  if (member (c, obj, path, key, is_object, "an object of strings", &o) < 0)
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
    if (!json_is_string (v) || strlen (json_string_value (v)) != json_string_length (v))
      {
        cleanup_free char *pk = sub (p, k);
        return perr (c, OHBOX_ERR_USAGE, pk, "must be a string (without NUL bytes)");
      }
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

/* An array member: *RET (NULL when absent) and its size in *N. */
static int
get_array (struct pctx *c, json_t *obj, const char *path, const char *key, json_t **ret, size_t *n)
{
  if (member (c, obj, path, key, is_array, "an array", ret) < 0)
    return -1;
  *n = *ret ? json_array_size (*ret) : 0;
  if (*n > OCI_RUNTIME_MAX_LIST)
    {
      cleanup_free char *p = sub (path, key);
      return perr (c, OHBOX_ERR_USAGE, p, "more than %d entries", OCI_RUNTIME_MAX_LIST);
    }
  return 0;
}

/* The I-th element of A, which must be an object. */
static int
element_object (struct pctx *c, json_t *a, const char *path, size_t i, json_t **ret)
{
  *ret = json_array_get (a, i);
  if (!json_is_object (*ret))
    {
      cleanup_free char *p = idx (path, i);
      return perr (c, OHBOX_ERR_USAGE, p, "must be an object");
    }
  return 0;
}

static int
check_absolute (struct pctx *c, const char *path, const char *value)
{
  if (value[0] != '/')
    return perr (c, OHBOX_ERR_USAGE, path, "`%.256s` is not an absolute path", value);
  if (strlen (value) >= PATH_MAX)
    return perr (c, OHBOX_ERR_USAGE, path, "longer than %d bytes", PATH_MAX - 1);
  return 0;
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
parse_idmaps (struct pctx *c, json_t *obj, const char *path, const char *key, struct oci_idmaps *ret)
{
  json_t *a;
  size_t n;
  memset (ret, 0, sizeof *ret);
  if (get_array (c, obj, path, key, &a, &n) < 0)
    return -1;
  cleanup_free char *p = sub (path, key);
  if (n > OCI_RUNTIME_MAX_IDMAPS)
    return perr (c, OHBOX_ERR_USAGE, p, "more than %d mappings (the kernel's limit)", OCI_RUNTIME_MAX_IDMAPS);
  ret->v = xcalloc (n + 1, sizeof *ret->v);
  static const char *const keys[] = { "containerID", "hostID", "size", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *m;
      cleanup_free char *pi = idx (p, i);
      struct oci_idmap *x = &ret->v[i];
      if (element_object (c, a, p, i, &m) < 0 || check_keys (c, m, pi, keys, NULL) < 0
          || get_u32 (c, m, pi, "containerID", true, NULL, &x->container_id) < 0
          || get_u32 (c, m, pi, "hostID", true, NULL, &x->host_id) < 0
          || get_u32 (c, m, pi, "size", true, NULL, &x->size) < 0)
        return -1;
      if (x->size == 0 || (uint64_t) x->container_id + x->size > UINT32_MAX
          || (uint64_t) x->host_id + x->size > UINT32_MAX)
        return perr (c, OHBOX_ERR_USAGE, pi, "an empty range, or one past 4294967295");
      ret->n++;
    }
  return 0;
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
      const struct mount_opt *m = NULL;
      for (size_t k = 0; k < sizeof mount_opts / sizeof mount_opts[0] && !m; k++)
        if (strcmp (mount_opts[k].name, o) == 0)
          m = &mount_opts[k];
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
  strv_free (m->options);
  oci_mount_options_clear (&m->opts);
  idmaps_clear (&m->uid_mappings);
  idmaps_clear (&m->gid_mappings);
}

static int
parse_mount (struct pctx *c, json_t *j, const char *p, struct oci_mount *m)
{
  static const char *const keys[] = { "destination", "source", "options", "type", "uidMappings", "gidMappings", NULL };
  if (check_keys (c, j, p, keys, NULL) < 0 || get_string (c, j, p, "destination", true, &m->destination) < 0
      || get_string (c, j, p, "source", false, &m->source) < 0 || get_string (c, j, p, "type", false, &m->type) < 0
      || get_strv (c, j, p, "options", &m->options) < 0 || parse_idmaps (c, j, p, "uidMappings", &m->uid_mappings) < 0
      || parse_idmaps (c, j, p, "gidMappings", &m->gid_mappings) < 0)
    return -1;
  cleanup_free char *pd = sub (p, "destination");
  if (*m->destination == '\0')
    return perr (c, OHBOX_ERR_USAGE, pd, "empty");
  if (m->destination[0] != '/')
    {
      /* Relative destinations are deprecated and mean relative to "/". */
      char *abs = xasprintf ("/%s", m->destination);
      free (m->destination);
      m->destination = abs;
    }
  if (check_absolute (c, pd, m->destination) < 0)
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

static const char *const hook_names[OCI_HOOK_KINDS] = { "prestart",       "createRuntime", "createContainer",
                                                        "startContainer", "poststart",     "poststop" };

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
          strv_free (h->v[k][i].args);
          strv_free (h->v[k][i].env);
        }
      free (h->v[k]);
    }
  memset (h, 0, sizeof *h);
}

static int
parse_hooks (struct pctx *c, json_t *root, struct oci_hooks *h)
{
  json_t *o;
  if (member (c, root, "", "hooks", is_object, "an object", &o) < 0)
    return -1;
  if (o == NULL)
    return 0;
  static const char *const keys[] = {
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop", NULL
  };
  static const char *const hook_keys[] = { "path", "args", "env", "timeout", NULL };
  if (check_keys (c, o, "hooks", keys, NULL) < 0)
    return -1;
  for (int k = 0; k < OCI_HOOK_KINDS; k++)
    {
      json_t *a;
      size_t n;
      if (get_array (c, o, "hooks", hook_names[k], &a, &n) < 0)
        return -1;
      h->v[k] = xcalloc (n + 1, sizeof (struct oci_hook));
      cleanup_free char *p = xasprintf ("hooks.%s", hook_names[k]);
      for (size_t i = 0; i < n; i++)
        {
          json_t *j;
          cleanup_free char *pi = idx (p, i);
          struct oci_hook *x = &h->v[k][i];
          h->n[k]++;
          int64_t timeout = 0;
          bool has_timeout = false;
          if (element_object (c, a, p, i, &j) < 0 || check_keys (c, j, pi, hook_keys, NULL) < 0
              || get_string (c, j, pi, "path", true, &x->path) < 0 || get_strv (c, j, pi, "args", &x->args) < 0
              || get_strv (c, j, pi, "env", &x->env) < 0
              || get_int (c, j, pi, "timeout", false, INT_MIN, INT_MAX, &has_timeout, &timeout) < 0)
            return -1;
          cleanup_free char *pp = sub (pi, "path");
          if (check_absolute (c, pp, x->path) < 0)
            return -1;
          if (has_timeout && timeout <= 0)
            {
              cleanup_free char *pt = sub (pi, "timeout");
              return perr (c, OHBOX_ERR_USAGE, pt, "must be greater than zero");
            }
          x->timeout = (int) timeout;
        }
    }
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
  strv_free (p->env);
  strv_free (p->args);
  for (size_t i = 0; i < p->n_rlimits; i++)
    free (p->rlimits[i].name);
  free (p->rlimits);
  free (p->apparmor_profile);
  strv_free (p->caps.bounding);
  strv_free (p->caps.effective);
  strv_free (p->caps.inheritable);
  strv_free (p->caps.permitted);
  strv_free (p->caps.ambient);
  free (p->selinux_label);
  free (p->user.additional_gids);
  free (p);
}

static int
parse_user (struct pctx *c, json_t *proc, const char *path, struct oci_user *u)
{
  json_t *j;
  cleanup_free char *p = sub (path, "user");
  if (member (c, proc, path, "user", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  static const char *const keys[] = { "uid", "gid", "umask", "additionalGids", "username", NULL };
  if (check_keys (c, j, p, keys, NULL) < 0 || get_u32 (c, j, p, "uid", false, NULL, &u->uid) < 0
      || get_u32 (c, j, p, "gid", false, NULL, &u->gid) < 0
      || get_u32 (c, j, p, "umask", false, &u->has_umask, &u->umask) < 0)
    return -1;
  if (u->has_umask && u->umask > 0777)
    {
      cleanup_free char *pu = sub (p, "umask");
      return perr (c, OHBOX_ERR_USAGE, pu, "%o is not a umask (at most 0777)", u->umask);
    }
  if (json_object_get (j, "username"))
    {
      cleanup_free char *pn = sub (p, "username");
      return perr (c, OHBOX_ERR_UNSUPPORTED, pn, "a Windows field; give uid and gid");
    }
  json_t *a;
  size_t n;
  if (get_array (c, j, p, "additionalGids", &a, &n) < 0)
    return -1;
  u->additional_gids = xcalloc (n + 1, sizeof (uint32_t));
  cleanup_free char *pa = sub (p, "additionalGids");
  for (size_t i = 0; i < n; i++)
    {
      json_t *g = json_array_get (a, i);
      if (!json_is_integer (g) || json_integer_value (g) < 0 || json_integer_value (g) > UINT32_MAX - 1)
        {
          cleanup_free char *pi = idx (pa, i);
          return perr (c, OHBOX_ERR_USAGE, pi, "must be a gid (0..4294967294)");
        }
      u->additional_gids[u->n_additional_gids++] = (uint32_t) json_integer_value (g);
    }
  return 0;
}

static int
parse_caps (struct pctx *c, json_t *proc, const char *path, struct oci_process *pr)
{
  json_t *j;
  if (member (c, proc, path, "capabilities", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  pr->has_capabilities = true;
  cleanup_free char *p = sub (path, "capabilities");
  static const char *const keys[] = { "bounding", "effective", "inheritable", "permitted", "ambient", NULL };
  if (check_keys (c, j, p, keys, NULL) < 0 || get_strv (c, j, p, "bounding", &pr->caps.bounding) < 0
      || get_strv (c, j, p, "effective", &pr->caps.effective) < 0
      || get_strv (c, j, p, "inheritable", &pr->caps.inheritable) < 0
      || get_strv (c, j, p, "permitted", &pr->caps.permitted) < 0
      || get_strv (c, j, p, "ambient", &pr->caps.ambient) < 0)
    return -1;
  return 0;
}

static int
parse_rlimits (struct pctx *c, json_t *proc, const char *path, struct oci_process *pr)
{
  json_t *a;
  size_t n;
  if (get_array (c, proc, path, "rlimits", &a, &n) < 0)
    return -1;
  cleanup_free char *p = sub (path, "rlimits");
  pr->rlimits = xcalloc (n + 1, sizeof (struct oci_rlimit));
  static const char *const keys[] = { "type", "soft", "hard", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *j;
      cleanup_free char *pi = idx (p, i);
      struct oci_rlimit *r = &pr->rlimits[i];
      pr->n_rlimits++;
      int64_t soft = 0, hard = 0;
      /* RLIM_INFINITY is 2^64-1, which JSON decoders in Go write as such;
       * jansson reads integers as int64, so -1 stands for it too. */
      if (element_object (c, a, p, i, &j) < 0 || check_keys (c, j, pi, keys, NULL) < 0
          || get_string (c, j, pi, "type", true, &r->name) < 0
          || get_int (c, j, pi, "soft", true, -1, INT64_MAX, NULL, &soft) < 0
          || get_int (c, j, pi, "hard", true, -1, INT64_MAX, NULL, &hard) < 0)
        return -1;
      r->soft = soft < 0 ? RLIM_INFINITY : (uint64_t) soft;
      r->hard = hard < 0 ? RLIM_INFINITY : (uint64_t) hard;
      r->resource = oci_rlimit_lookup (r->name);
      cleanup_free char *pt = sub (pi, "type");
      if (r->resource < 0)
        return perr (c, OHBOX_ERR_USAGE, pt, "unknown resource `%.64s`", r->name);
      for (size_t k = 0; k < i; k++)
        if (pr->rlimits[k].resource == r->resource)
          return perr (c, OHBOX_ERR_USAGE, pt, "`%s` given twice", r->name);
      if (r->soft > r->hard)
        return perr (c, OHBOX_ERR_USAGE, pi, "soft limit above the hard limit");
    }
  return 0;
}

static const char *const sched_policies[] = { "SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",       "SCHED_BATCH",
                                              "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE", NULL };
static const char *const sched_flags[] = { "SCHED_FLAG_RESET_ON_FORK",  "SCHED_FLAG_RECLAIM",
                                           "SCHED_FLAG_DL_OVERRUN",     "SCHED_FLAG_KEEP_POLICY",
                                           "SCHED_FLAG_KEEP_PARAMS",    "SCHED_FLAG_UTIL_CLAMP_MIN",
                                           "SCHED_FLAG_UTIL_CLAMP_MAX", NULL };

static int
parse_scheduler (struct pctx *c, json_t *proc, const char *path, struct oci_scheduler *s)
{
  json_t *j;
  if (member (c, proc, path, "scheduler", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = sub (path, "scheduler");
  static const char *const keys[] = { "policy", "nice", "priority", "flags", "runtime", "deadline", "period", NULL };
  cleanup_free char *policy = NULL;
  char **flags = NULL;
  int64_t nice = 0, prio = 0;
  if (check_keys (c, j, p, keys, NULL) < 0 || get_string (c, j, p, "policy", true, &policy) < 0
      || get_int (c, j, p, "nice", false, -20, 19, NULL, &nice) < 0
      || get_int (c, j, p, "priority", false, 0, 99, NULL, &prio) < 0
      || get_u64 (c, j, p, "runtime", NULL, &s->runtime) < 0 || get_u64 (c, j, p, "deadline", NULL, &s->deadline) < 0
      || get_u64 (c, j, p, "period", NULL, &s->period) < 0 || get_strv (c, j, p, "flags", &flags) < 0)
    return -1;
  s->present = true;
  s->nice = (int) nice;
  s->priority = (int) prio;
  s->policy = -1;
  for (int i = 0; sched_policies[i]; i++)
    if (strcmp (sched_policies[i], policy) == 0)
      s->policy = i == 4 ? -2 : i; /* the list's order is Linux's numbering */
  cleanup_free char *pp = sub (p, "policy");
  if (s->policy == -2)
    {
      strv_free (flags);
      return perr (c, OHBOX_ERR_UNSUPPORTED, pp, "SCHED_ISO is not implemented by Linux");
    }
  if (s->policy < 0)
    {
      strv_free (flags);
      return perr (c, OHBOX_ERR_USAGE, pp, "unknown policy `%.64s`", policy);
    }
  for (size_t i = 0; flags && flags[i]; i++)
    {
      int bit = -1;
      for (int k = 0; sched_flags[k]; k++)
        if (strcmp (sched_flags[k], flags[i]) == 0)
          bit = k;
      if (bit < 0)
        {
          cleanup_free char *pf = xasprintf ("%s.flags[%zu]", p, i);
          strv_free (flags);
          return perr (c, OHBOX_ERR_USAGE, pf, "unknown flag");
        }
      /* SCHED_FLAG_RESET_ON_FORK 0x01, RECLAIM 0x02, DL_OVERRUN 0x04,
       * KEEP_POLICY 0x08, KEEP_PARAMS 0x10, UTIL_CLAMP_MIN 0x20, MAX 0x40. */
      s->flags |= UINT64_C (1) << bit;
    }
  strv_free (flags);
  return 0;
}

static int
parse_io_priority (struct pctx *c, json_t *proc, const char *path, struct oci_io_priority *io)
{
  json_t *j;
  if (member (c, proc, path, "ioPriority", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = sub (path, "ioPriority");
  static const char *const keys[] = { "class", "priority", NULL };
  cleanup_free char *cls = NULL;
  int64_t prio = 0;
  if (check_keys (c, j, p, keys, NULL) < 0 || get_string (c, j, p, "class", true, &cls) < 0
      || get_int (c, j, p, "priority", false, 0, 7, NULL, &prio) < 0)
    return -1;
  io->present = true;
  io->priority = (int) prio;
  if (strcmp (cls, "IOPRIO_CLASS_RT") == 0)
    io->ioclass = 1;
  else if (strcmp (cls, "IOPRIO_CLASS_BE") == 0)
    io->ioclass = 2;
  else if (strcmp (cls, "IOPRIO_CLASS_IDLE") == 0)
    io->ioclass = 3;
  else
    {
      cleanup_free char *pc = sub (p, "class");
      return perr (c, OHBOX_ERR_USAGE, pc, "unknown class `%.64s`", cls);
    }
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
      || get_strv (c, j, p, "args", &pr->args) < 0 || parse_rlimits (c, j, p, pr) < 0
      || get_string (c, j, p, "apparmorProfile", false, &pr->apparmor_profile) < 0 || parse_caps (c, j, p, pr) < 0
      || get_bool (c, j, p, "noNewPrivileges", NULL, &pr->no_new_privileges) < 0
      || get_int (c, j, p, "oomScoreAdj", false, -1000, 1000, &pr->has_oom_score_adj, &oom) < 0
      || get_string (c, j, p, "selinuxLabel", false, &pr->selinux_label) < 0 || parse_user (c, j, p, &pr->user) < 0
      || parse_scheduler (c, j, p, &pr->scheduler) < 0 || parse_io_priority (c, j, p, &pr->io_priority) < 0)
    goto fail;
  pr->oom_score_adj = (int) oom;
  {
    cleanup_free char *pc = sub (p, "cwd");
    if (check_absolute (c, pc, pr->cwd) < 0)
      goto fail;
  }
  if (pr->args == NULL || pr->args[0] == NULL || *pr->args[0] == '\0')
    {
      cleanup_free char *pa = sub (p, "args");
      perr (c, OHBOX_ERR_USAGE, pa, "required: the command to run (at least one entry, not empty)");
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
  json_t *cs;
  if (member (c, j, p, "consoleSize", is_object, "an object", &cs) < 0)
    goto fail;
  if (cs)
    {
      cleanup_free char *pc = sub (p, "consoleSize");
      static const char *const ckeys[] = { "height", "width", NULL };
      uint32_t h, w;
      if (check_keys (c, cs, pc, ckeys, NULL) < 0 || get_u32 (c, cs, pc, "height", true, NULL, &h) < 0
          || get_u32 (c, cs, pc, "width", true, NULL, &w) < 0)
        goto fail;
      if (h > 65535 || w > 65535)
        {
          perr (c, OHBOX_ERR_USAGE, pc, "larger than 65535");
          goto fail;
        }
      pr->has_console_size = true;
      pr->console_height = h;
      pr->console_width = w;
    }
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
} namespaces[] = {
  { "pid", CLONE_NEWPID }, { "network", CLONE_NEWNET }, { "mount", CLONE_NEWNS },      { "ipc", CLONE_NEWIPC },
  { "uts", CLONE_NEWUTS }, { "user", CLONE_NEWUSER },   { "cgroup", CLONE_NEWCGROUP }, { "time", CLONE_NEWTIME },
};

const char *const oci_namespace_names[] = { "cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts", NULL };

const char *
oci_namespace_name (int type)
{
  for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++)
    if (namespaces[i].type == type)
      return namespaces[i].name;
  return "?";
}

static int
parse_namespaces (struct pctx *c, json_t *lx, struct oci_linux *l)
{
  json_t *a;
  size_t n;
  if (get_array (c, lx, "linux", "namespaces", &a, &n) < 0)
    return -1;
  l->namespaces = xcalloc (n + 1, sizeof (struct oci_namespace));
  static const char *const keys[] = { "type", "path", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *j;
      cleanup_free char *pi = xasprintf ("linux.namespaces[%zu]", i);
      struct oci_namespace *ns = &l->namespaces[i];
      l->n_namespaces++;
      cleanup_free char *type = NULL;
      if (element_object (c, a, "linux.namespaces", i, &j) < 0 || check_keys (c, j, pi, keys, NULL) < 0
          || get_string (c, j, pi, "type", true, &type) < 0 || get_string (c, j, pi, "path", false, &ns->path) < 0)
        return -1;
      for (size_t k = 0; k < sizeof namespaces / sizeof namespaces[0]; k++)
        if (strcmp (namespaces[k].name, type) == 0)
          ns->type = namespaces[k].type;
      cleanup_free char *pt = sub (pi, "type");
      if (ns->type == 0)
        return perr (c, OHBOX_ERR_USAGE, pt, "unknown namespace type `%.64s`", type);
      for (size_t k = 0; k < i; k++)
        if (l->namespaces[k].type == ns->type)
          return perr (c, OHBOX_ERR_USAGE, pt, "the %s namespace is listed twice", type);
      if (ns->path)
        {
          cleanup_free char *pp = sub (pi, "path");
          if (*ns->path == '\0')
            {
              free (ns->path);
              ns->path = NULL;
            }
          else if (check_absolute (c, pp, ns->path) < 0)
            return -1;
        }
    }
  return 0;
}

static int
parse_devices (struct pctx *c, json_t *lx, struct oci_linux *l)
{
  json_t *a;
  size_t n;
  if (get_array (c, lx, "linux", "devices", &a, &n) < 0)
    return -1;
  l->devices = xcalloc (n + 1, sizeof (struct oci_device));
  static const char *const keys[] = { "type", "path", "major", "minor", "fileMode", "uid", "gid", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *j;
      cleanup_free char *pi = xasprintf ("linux.devices[%zu]", i);
      struct oci_device *d = &l->devices[i];
      l->n_devices++;
      cleanup_free char *type = NULL;
      bool has_major, has_minor;
      if (element_object (c, a, "linux.devices", i, &j) < 0 || check_keys (c, j, pi, keys, NULL) < 0
          || get_string (c, j, pi, "type", true, &type) < 0 || get_string (c, j, pi, "path", true, &d->path) < 0
          || get_int (c, j, pi, "major", false, 0, 4095, &has_major, &d->major) < 0
          || get_int (c, j, pi, "minor", false, 0, 1048575, &has_minor, &d->minor) < 0
          || get_u32 (c, j, pi, "fileMode", false, &d->has_file_mode, &d->file_mode) < 0
          || get_u32 (c, j, pi, "uid", false, &d->has_uid, &d->uid) < 0
          || get_u32 (c, j, pi, "gid", false, &d->has_gid, &d->gid) < 0)
        return -1;
      cleanup_free char *pt = sub (pi, "type");
      if (strlen (type) != 1 || strchr ("cbup", type[0]) == NULL)
        return perr (c, OHBOX_ERR_USAGE, pt, "`%.16s` is not a device type (c, b, u or p)", type);
      d->type = type[0];
      if (d->type != 'p' && (!has_major || !has_minor))
        return perr (c, OHBOX_ERR_USAGE, pi, "a %s device needs major and minor", d->type == 'b' ? "block" : "char");
      cleanup_free char *pp = sub (pi, "path");
      if (check_absolute (c, pp, d->path) < 0)
        return -1;
      if (strncmp (d->path, "/dev/", 5) != 0)
        return perr (c, OHBOX_ERR_USAGE, pp, "`%.256s` is not below /dev", d->path);
      if (d->has_file_mode && (d->file_mode & ~07777u))
        {
          cleanup_free char *pm = sub (pi, "fileMode");
          return perr (c, OHBOX_ERR_USAGE, pm, "%o has bits beyond permissions (07777)", d->file_mode);
        }
    }
  return 0;
}

static int
parse_device_rules (struct pctx *c, json_t *res, const char *p, struct oci_resources *r)
{
  json_t *a;
  size_t n;
  if (get_array (c, res, p, "devices", &a, &n) < 0)
    return -1;
  r->devices = xcalloc (n + 1, sizeof (struct oci_device_rule));
  cleanup_free char *pd = sub (p, "devices");
  static const char *const keys[] = { "allow", "type", "major", "minor", "access", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *j;
      cleanup_free char *pi = idx (pd, i);
      struct oci_device_rule *d = &r->devices[i];
      r->n_devices++;
      cleanup_free char *type = NULL, *access = NULL;
      bool has_allow, has_major, has_minor;
      if (element_object (c, a, pd, i, &j) < 0 || check_keys (c, j, pi, keys, NULL) < 0
          || get_bool (c, j, pi, "allow", &has_allow, &d->allow) < 0 || get_string (c, j, pi, "type", false, &type) < 0
          || get_int (c, j, pi, "major", false, -1, 4095, &has_major, &d->major) < 0
          || get_int (c, j, pi, "minor", false, -1, 1048575, &has_minor, &d->minor) < 0
          || get_string (c, j, pi, "access", false, &access) < 0)
        return -1;
      if (!has_allow)
        {
          cleanup_free char *pa = sub (pi, "allow");
          return perr (c, OHBOX_ERR_USAGE, pa, "required");
        }
      if (!has_major)
        d->major = -1;
      if (!has_minor)
        d->minor = -1;
      d->type = type && *type ? type[0] : 'a';
      if ((type && strlen (type) > 1) || strchr ("acb", d->type) == NULL)
        {
          cleanup_free char *pt = sub (pi, "type");
          return perr (c, OHBOX_ERR_USAGE, pt, "`%.16s` is not a device rule type (a, c or b)", type);
        }
      const char *acc = access && *access ? access : "rwm";
      size_t k = 0;
      for (const char *s = acc; *s; s++)
        {
          if (strchr ("rwm", *s) == NULL || strchr (d->access, *s) || k >= 3)
            {
              cleanup_free char *pa = sub (pi, "access");
              return perr (c, OHBOX_ERR_USAGE, pa, "`%.16s` is not a subset of \"rwm\"", acc);
            }
          d->access[k++] = *s;
        }
    }
  return 0;
}

static int
parse_memory (struct pctx *c, json_t *res, const char *path, struct oci_resources *r)
{
  json_t *j;
  if (member (c, res, path, "memory", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = sub (path, "memory");
  struct oci_memory *m = &r->memory;
  r->has_memory = true;
  static const char *const keys[] = {
    "limit",        "reservation",       "swap", "kernel", "kernelTCP", "swappiness", "disableOOMKiller",
    "useHierarchy", "checkBeforeUpdate", NULL
  };
  if (check_keys (c, j, p, keys, NULL) < 0
      || get_int (c, j, p, "limit", false, -1, INT64_MAX, &m->has_limit, &m->limit) < 0
      || get_int (c, j, p, "reservation", false, -1, INT64_MAX, &m->has_reservation, &m->reservation) < 0
      || get_int (c, j, p, "swap", false, -1, INT64_MAX, &m->has_swap, &m->swap) < 0
      || get_int (c, j, p, "kernel", false, -1, INT64_MAX, &m->has_kernel, &m->kernel) < 0
      || get_int (c, j, p, "kernelTCP", false, -1, INT64_MAX, &m->has_kernel_tcp, &m->kernel_tcp) < 0
      || get_bool (c, j, p, "disableOOMKiller", &m->has_disable_oom_killer, &m->disable_oom_killer) < 0
      || get_bool (c, j, p, "useHierarchy", &m->has_use_hierarchy, &m->use_hierarchy) < 0
      || get_bool (c, j, p, "checkBeforeUpdate", NULL, &m->check_before_update) < 0)
    return -1;
  /* Go writes an unset swappiness as 2^64-1 (uint64 -1) in some versions:
   * jansson cannot read that, and -1 means "unset" too. */
  int64_t sw = 0;
  if (get_int (c, j, p, "swappiness", false, -1, 100, &m->has_swappiness, &sw) < 0)
    return -1;
  if (sw < 0)
    m->has_swappiness = false;
  m->swappiness = (uint64_t) (sw < 0 ? 0 : sw);
  if (m->has_limit && m->limit == 0)
    m->has_limit = false; /* 0: not set (runc) */
  return 0;
}

static int
parse_cpu (struct pctx *c, json_t *res, const char *path, struct oci_resources *r)
{
  json_t *j;
  if (member (c, res, path, "cpu", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = sub (path, "cpu");
  struct oci_cpu *x = &r->cpu;
  r->has_cpu = true;
  static const char *const keys[] = { "shares",         "quota", "burst", "period", "realtimeRuntime",
                                      "realtimePeriod", "cpus",  "mems",  "idle",   NULL };
  if (check_keys (c, j, p, keys, NULL) < 0 || get_u64 (c, j, p, "shares", &x->has_shares, &x->shares) < 0
      || get_int (c, j, p, "quota", false, -1, INT64_MAX, &x->has_quota, &x->quota) < 0
      || get_u64 (c, j, p, "burst", &x->has_burst, &x->burst) < 0
      || get_u64 (c, j, p, "period", &x->has_period, &x->period) < 0
      || get_int (c, j, p, "realtimeRuntime", false, -1, INT64_MAX, &x->has_rt_runtime, &x->rt_runtime) < 0
      || get_u64 (c, j, p, "realtimePeriod", &x->has_rt_period, &x->rt_period) < 0
      || get_string (c, j, p, "cpus", false, &x->cpus) < 0 || get_string (c, j, p, "mems", false, &x->mems) < 0
      || get_int (c, j, p, "idle", false, 0, 1, &x->has_idle, &x->idle) < 0)
    return -1;
  for (const char *s = x->cpus; s && *s; s++)
    if (strchr ("0123456789,-", *s) == NULL)
      {
        cleanup_free char *pc = sub (p, "cpus");
        return perr (c, OHBOX_ERR_USAGE, pc, "`%.64s` is not a CPU list such as \"0-3,6\"", x->cpus);
      }
  for (const char *s = x->mems; s && *s; s++)
    if (strchr ("0123456789,-", *s) == NULL)
      {
        cleanup_free char *pm = sub (p, "mems");
        return perr (c, OHBOX_ERR_USAGE, pm, "`%.64s` is not a node list such as \"0-1\"", x->mems);
      }
  return 0;
}

static int
parse_blkio_list (struct pctx *c, json_t *b, const char *p, const char *key, bool weights, struct oci_blkio_list *l)
{
  json_t *a;
  size_t n;
  if (get_array (c, b, p, key, &a, &n) < 0)
    return -1;
  cleanup_free char *pk = sub (p, key);
  l->v = xcalloc (n + 1, sizeof (struct oci_blkio_device));
  static const char *const wkeys[] = { "major", "minor", "weight", "leafWeight", NULL };
  static const char *const tkeys[] = { "major", "minor", "rate", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *j;
      cleanup_free char *pi = idx (pk, i);
      struct oci_blkio_device *d = &l->v[i];
      l->n++;
      int64_t w = 0, lw = 0;
      if (element_object (c, a, pk, i, &j) < 0 || check_keys (c, j, pi, weights ? wkeys : tkeys, NULL) < 0
          || get_int (c, j, pi, "major", true, 0, 4095, NULL, &d->major) < 0
          || get_int (c, j, pi, "minor", true, 0, 1048575, NULL, &d->minor) < 0)
        return -1;
      if (weights)
        {
          if (get_int (c, j, pi, "weight", false, 0, 10000, &d->has_weight, &w) < 0
              || get_int (c, j, pi, "leafWeight", false, 0, 10000, &d->has_leaf_weight, &lw) < 0)
            return -1;
          d->weight = (uint16_t) w;
          d->leaf_weight = (uint16_t) lw;
        }
      else if (get_u64 (c, j, pi, "rate", NULL, &d->rate) < 0)
        return -1;
    }
  return 0;
}

static int
parse_blkio (struct pctx *c, json_t *res, const char *path, struct oci_resources *r)
{
  json_t *j;
  if (member (c, res, path, "blockIO", is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = sub (path, "blockIO");
  struct oci_blkio *b = &r->blkio;
  r->has_blkio = true;
  static const char *const keys[] = { "weight",
                                      "leafWeight",
                                      "weightDevice",
                                      "throttleReadBpsDevice",
                                      "throttleWriteBpsDevice",
                                      "throttleReadIOPSDevice",
                                      "throttleWriteIOPSDevice",
                                      NULL };
  int64_t w = 0, lw = 0;
  if (check_keys (c, j, p, keys, NULL) < 0 || get_int (c, j, p, "weight", false, 0, 10000, &b->has_weight, &w) < 0
      || get_int (c, j, p, "leafWeight", false, 0, 10000, &b->has_leaf_weight, &lw) < 0
      || parse_blkio_list (c, j, p, "weightDevice", true, &b->weight_device) < 0
      || parse_blkio_list (c, j, p, "throttleReadBpsDevice", false, &b->throttle_read_bps) < 0
      || parse_blkio_list (c, j, p, "throttleWriteBpsDevice", false, &b->throttle_write_bps) < 0
      || parse_blkio_list (c, j, p, "throttleReadIOPSDevice", false, &b->throttle_read_iops) < 0
      || parse_blkio_list (c, j, p, "throttleWriteIOPSDevice", false, &b->throttle_write_iops) < 0)
    return -1;
  b->weight = (uint16_t) w;
  b->leaf_weight = (uint16_t) lw;
  return 0;
}

static int
parse_resources_obj (struct pctx *c, json_t *j, const char *p, struct oci_resources *r)
{
  static const char *const keys[] = { "devices",        "memory",  "cpu",  "pids",    "blockIO",
                                      "hugepageLimits", "network", "rdma", "unified", NULL };
  if (check_keys (c, j, p, keys, NULL) < 0 || parse_device_rules (c, j, p, r) < 0 || parse_memory (c, j, p, r) < 0
      || parse_cpu (c, j, p, r) < 0 || parse_blkio (c, j, p, r) < 0 || get_map (c, j, p, "unified", &r->unified) < 0)
    return -1;
  json_t *o;
  if (member (c, j, p, "pids", is_object, "an object", &o) < 0)
    return -1;
  if (o)
    {
      cleanup_free char *pp = sub (p, "pids");
      static const char *const pkeys[] = { "limit", NULL };
      if (check_keys (c, o, pp, pkeys, NULL) < 0
          || get_int (c, o, pp, "limit", true, INT64_MIN, INT64_MAX, NULL, &r->pids_limit) < 0)
        return -1;
      r->has_pids = true;
    }
  json_t *a;
  size_t n;
  if (get_array (c, j, p, "hugepageLimits", &a, &n) < 0)
    return -1;
  cleanup_free char *ph = sub (p, "hugepageLimits");
  r->hugepages = xcalloc (n + 1, sizeof (struct oci_hugepage_limit));
  static const char *const hkeys[] = { "pageSize", "limit", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *e;
      cleanup_free char *pi = idx (ph, i);
      struct oci_hugepage_limit *h = &r->hugepages[i];
      r->n_hugepages++;
      bool has_limit;
      if (element_object (c, a, ph, i, &e) < 0 || check_keys (c, e, pi, hkeys, NULL) < 0
          || get_string (c, e, pi, "pageSize", true, &h->page_size) < 0
          || get_u64 (c, e, pi, "limit", &has_limit, &h->limit) < 0)
        return -1;
      if (!has_limit)
        {
          cleanup_free char *pl = sub (pi, "limit");
          return perr (c, OHBOX_ERR_USAGE, pl, "required");
        }
      const char *s = h->page_size;
      while (*s >= '0' && *s <= '9')
        s++;
      if (s == h->page_size || (strcmp (s, "KB") != 0 && strcmp (s, "MB") != 0 && strcmp (s, "GB") != 0))
        {
          cleanup_free char *ps = sub (pi, "pageSize");
          return perr (c, OHBOX_ERR_USAGE, ps, "`%.32s` is not a page size such as \"2MB\"", h->page_size);
        }
    }
  if (member (c, j, p, "network", is_object, "an object", &o) < 0)
    return -1;
  if (o)
    {
      cleanup_free char *pn = sub (p, "network");
      static const char *const nkeys[] = { "classID", "priorities", NULL };
      if (check_keys (c, o, pn, nkeys, NULL) < 0
          || get_u32 (c, o, pn, "classID", false, &r->has_class_id, &r->class_id) < 0
          || get_array (c, o, pn, "priorities", &a, &n) < 0)
        return -1;
      r->has_network = true;
      cleanup_free char *pp = sub (pn, "priorities");
      r->net_priorities = xcalloc (n + 1, sizeof (struct oci_net_priority));
      static const char *const pkeys[] = { "name", "priority", NULL };
      for (size_t i = 0; i < n; i++)
        {
          json_t *e;
          cleanup_free char *pi = idx (pp, i);
          struct oci_net_priority *np = &r->net_priorities[i];
          r->n_net_priorities++;
          if (element_object (c, a, pp, i, &e) < 0 || check_keys (c, e, pi, pkeys, NULL) < 0
              || get_string (c, e, pi, "name", true, &np->name) < 0
              || get_u32 (c, e, pi, "priority", true, NULL, &np->priority) < 0)
            return -1;
        }
    }
  if (member (c, j, p, "rdma", is_object, "an object", &o) < 0)
    return -1;
  if (o && json_object_size (o) > 0)
    {
      cleanup_free char *pr = sub (p, "rdma");
      return perr (c, OHBOX_ERR_UNSUPPORTED, pr, "RDMA limits are not supported by ohbox");
    }
  for (size_t i = 0; i < r->unified.n; i++)
    {
      const char *k = r->unified.keys[i];
      if (*k == '\0' || *k == '.' || strchr (k, '/') || strchr (k, '.') == NULL)
        {
          cleanup_free char *pu = xasprintf ("%s.unified.%s", p, k);
          return perr (c, OHBOX_ERR_USAGE, pu, "not a cgroup v2 interface file name such as \"memory.high\"");
        }
    }
  return 0;
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

static bool
in_list (const char *const *list, const char *s)
{
  for (size_t i = 0; list[i]; i++)
    if (strcmp (list[i], s) == 0)
      return true;
  return false;
}

static int
check_action (struct pctx *c, const char *p, const char *action)
{
  if (strcmp (action, "SCMP_ACT_NOTIFY") == 0)
    return perr (c, OHBOX_ERR_UNSUPPORTED, p, "SCMP_ACT_NOTIFY needs a seccomp agent, which ohbox does not support");
  if (!in_list (oci_seccomp_action_names, action))
    return perr (c, OHBOX_ERR_USAGE, p, "unknown action `%.64s`", action);
  return 0;
}

static int
check_seccomp (struct pctx *c, json_t *s)
{
  static const char *const keys[] = { "defaultAction", "defaultErrnoRet", "architectures",    "flags",
                                      "syscalls",      "listenerPath",    "listenerMetadata", NULL };
  const char *p = "linux.seccomp";
  cleanup_free char *action = NULL, *listener = NULL, *meta = NULL;
  char **arches = NULL, **flags = NULL;
  int64_t dummy;
  int r = -1;
  if (check_keys (c, s, p, keys, NULL) < 0 || get_string (c, s, p, "defaultAction", true, &action) < 0
      || get_int (c, s, p, "defaultErrnoRet", false, 0, 4095, NULL, &dummy) < 0
      || get_string (c, s, p, "listenerPath", false, &listener) < 0
      || get_string (c, s, p, "listenerMetadata", false, &meta) < 0 || get_strv (c, s, p, "architectures", &arches) < 0
      || get_strv (c, s, p, "flags", &flags) < 0 || check_action (c, "linux.seccomp.defaultAction", action) < 0)
    goto out;
  if (listener && *listener)
    {
      perr (c, OHBOX_ERR_UNSUPPORTED, "linux.seccomp.listenerPath", "seccomp agents are not supported by ohbox");
      goto out;
    }
  for (size_t i = 0; arches && arches[i]; i++)
    if (!in_list (oci_seccomp_arch_names, arches[i]))
      {
        cleanup_free char *pa = xasprintf ("linux.seccomp.architectures[%zu]", i);
        perr (c, OHBOX_ERR_USAGE, pa, "unknown architecture `%.64s`", arches[i]);
        goto out;
      }
  for (size_t i = 0; flags && flags[i]; i++)
    if (!in_list (oci_seccomp_flag_names, flags[i]))
      {
        cleanup_free char *pf = xasprintf ("linux.seccomp.flags[%zu]", i);
        perr (c,
              strcmp (flags[i], "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0 ? OHBOX_ERR_UNSUPPORTED
                                                                               : OHBOX_ERR_USAGE,
              pf, "flag `%.64s` is not supported", flags[i]);
        goto out;
      }
  json_t *a;
  size_t n;
  if (get_array (c, s, p, "syscalls", &a, &n) < 0)
    goto out;
  static const char *const skeys[] = { "names", "action", "errnoRet", "args", NULL };
  static const char *const akeys[] = { "index", "value", "valueTwo", "op", NULL };
  for (size_t i = 0; i < n; i++)
    {
      json_t *e, *args;
      size_t na;
      cleanup_free char *pi = xasprintf ("linux.seccomp.syscalls[%zu]", i);
      cleanup_free char *act = NULL;
      char **names = NULL;
      if (element_object (c, a, "linux.seccomp.syscalls", i, &e) < 0 || check_keys (c, e, pi, skeys, NULL) < 0
          || get_strv (c, e, pi, "names", &names) < 0)
        goto out;
      bool empty = names == NULL || names[0] == NULL;
      strv_free (names);
      cleanup_free char *pa = sub (pi, "action");
      if (empty)
        {
          cleanup_free char *pn = sub (pi, "names");
          perr (c, OHBOX_ERR_USAGE, pn, "required (at least one system call)");
          goto out;
        }
      if (get_string (c, e, pi, "action", true, &act) < 0 || check_action (c, pa, act) < 0
          || get_int (c, e, pi, "errnoRet", false, 0, 4095, NULL, &dummy) < 0
          || get_array (c, e, pi, "args", &args, &na) < 0)
        goto out;
      for (size_t k = 0; k < na; k++)
        {
          json_t *arg;
          cleanup_free char *pk = xasprintf ("%s.args[%zu]", pi, k);
          cleanup_free char *pak = xasprintf ("%s.args", pi);
          cleanup_free char *op = NULL;
          if (element_object (c, args, pak, k, &arg) < 0 || check_keys (c, arg, pk, akeys, NULL) < 0
              || get_int (c, arg, pk, "index", true, 0, 5, NULL, &dummy) < 0
              || get_int (c, arg, pk, "value", true, 0, INT64_MAX, NULL, &dummy) < 0
              || get_int (c, arg, pk, "valueTwo", false, 0, INT64_MAX, NULL, &dummy) < 0
              || get_string (c, arg, pk, "op", true, &op) < 0)
            goto out;
          if (!in_list (oci_seccomp_operator_names, op))
            {
              cleanup_free char *po = sub (pk, "op");
              perr (c, OHBOX_ERR_USAGE, po, "unknown operator `%.64s`", op);
              goto out;
            }
        }
    }
  r = 0;
out:
  strv_free (arches);
  strv_free (flags);
  return r;
}

static const struct
{
  const char *name;
  unsigned long flags;
} propagations[] = {
  { "private", MS_PRIVATE },
  { "shared", MS_SHARED },
  { "slave", MS_SLAVE },
  { "unbindable", MS_UNBINDABLE },
  { "rprivate", MS_PRIVATE | MS_REC },
  { "rshared", MS_SHARED | MS_REC },
  { "rslave", MS_SLAVE | MS_REC },
  { "runbindable", MS_UNBINDABLE | MS_REC },
};

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

static int
parse_time_offset (struct pctx *c, json_t *to, const char *key, struct oci_time_offset *t)
{
  json_t *j;
  if (member (c, to, "linux.timeOffsets", key, is_object, "an object", &j) < 0)
    return -1;
  if (j == NULL)
    return 0;
  cleanup_free char *p = xasprintf ("linux.timeOffsets.%s", key);
  static const char *const keys[] = { "secs", "nanosecs", NULL };
  if (check_keys (c, j, p, keys, NULL) < 0 || get_int (c, j, p, "secs", false, INT64_MIN, INT64_MAX, NULL, &t->secs) < 0
      || get_u32 (c, j, p, "nanosecs", false, NULL, &t->nanosecs) < 0)
    return -1;
  if (t->nanosecs >= 1000000000u)
    return perr (c, OHBOX_ERR_USAGE, p, "nanosecs must be below 1000000000");
  t->present = true;
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
  strv_free (l->masked_paths);
  strv_free (l->readonly_paths);
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
  if (check_keys (c, lx, "linux", keys, unsupported) < 0 || parse_namespaces (c, lx, l) < 0
      || parse_idmaps (c, lx, "linux", "uidMappings", &l->uid_mappings) < 0
      || parse_idmaps (c, lx, "linux", "gidMappings", &l->gid_mappings) < 0 || parse_devices (c, lx, l) < 0
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
      for (size_t i = 0; i < sizeof propagations / sizeof propagations[0]; i++)
        if (strcmp (propagations[i].name, prop) == 0)
          l->rootfs_propagation = propagations[i].flags;
      if (l->rootfs_propagation == 0)
        return perr (c, OHBOX_ERR_USAGE, "linux.rootfsPropagation", "unknown propagation `%.64s`", prop);
    }
  json_t *j;
  if (member (c, lx, "linux", "resources", is_object, "an object", &j) < 0)
    return -1;
  if (j)
    {
      l->has_resources = true;
      if (parse_resources_obj (c, j, "linux.resources", &l->resources) < 0)
        return -1;
    }
  if (member (c, lx, "linux", "seccomp", is_object, "an object", &j) < 0)
    return -1;
  if (j)
    {
      if (check_seccomp (c, j) < 0)
        return -1;
      l->seccomp = json_incref (j);
    }
  if (member (c, lx, "linux", "timeOffsets", is_object, "an object", &j) < 0)
    return -1;
  if (j)
    {
      static const char *const tkeys[] = { "monotonic", "boottime", NULL };
      if (check_keys (c, j, "linux.timeOffsets", tkeys, NULL) < 0
          || parse_time_offset (c, j, "monotonic", &l->monotonic) < 0
          || parse_time_offset (c, j, "boottime", &l->boottime) < 0)
        return -1;
    }
  if (member (c, lx, "linux", "personality", is_object, "an object", &j) < 0)
    return -1;
  if (j)
    {
      static const char *const pkeys[] = { "domain", "flags", NULL };
      cleanup_free char *domain = NULL;
      char **flags = NULL;
      if (check_keys (c, j, "linux.personality", pkeys, NULL) < 0
          || get_string (c, j, "linux.personality", "domain", true, &domain) < 0
          || get_strv (c, j, "linux.personality", "flags", &flags) < 0)
        return -1;
      bool any_flag = flags && flags[0];
      strv_free (flags);
      if (any_flag)
        return perr (c, OHBOX_ERR_UNSUPPORTED, "linux.personality.flags", "no personality flag is supported");
      if (strcmp (domain, "LINUX") == 0)
        l->personality = PER_LINUX;
      else if (strcmp (domain, "LINUX32") == 0)
        l->personality = PER_LINUX32;
      else
        return perr (c, OHBOX_ERR_USAGE, "linux.personality.domain", "`%.32s` is not LINUX or LINUX32", domain);
      l->has_personality = true;
    }
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

static int
parse_root (struct pctx *c, json_t *root, struct oci_runtime_spec *s)
{
  static const char *const keys[] = { "ociVersion", "root",  "process",     "hostname", "domainname",
                                      "mounts",     "hooks", "annotations", "linux",    NULL };
  static const char *const unsupported[] = { "solaris", "windows", "vm", "zos", "freebsd", NULL };
  if (check_keys (c, root, "", keys, unsupported) < 0
      || get_string (c, root, "", "ociVersion", true, &s->oci_version) < 0 || check_version (c, s->oci_version) < 0
      || get_string (c, root, "", "hostname", false, &s->hostname) < 0
      || get_string (c, root, "", "domainname", false, &s->domainname) < 0 || parse_hooks (c, root, &s->hooks) < 0
      || get_map (c, root, "", "annotations", &s->annotations) < 0)
    return -1;
  json_t *j;
  if (member (c, root, "", "root", is_object, "an object", &j) < 0)
    return -1;
  if (j)
    {
      static const char *const rkeys[] = { "path", "readonly", NULL };
      if (check_keys (c, j, "root", rkeys, NULL) < 0 || get_string (c, j, "root", "path", true, &s->root_path) < 0
          || get_bool (c, j, "root", "readonly", NULL, &s->root_readonly) < 0)
        return -1;
      if (*s->root_path == '\0')
        return perr (c, OHBOX_ERR_USAGE, "root.path", "empty");
    }
  if (member (c, root, "", "process", is_object, "an object", &j) < 0)
    return -1;
  if (j && parse_process (c, j, "process", &s->process) < 0)
    return -1;
  json_t *a;
  size_t n;
  if (get_array (c, root, "", "mounts", &a, &n) < 0)
    return -1;
  s->mounts = xcalloc (n + 1, sizeof (struct oci_mount));
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *pi = xasprintf ("mounts[%zu]", i);
      s->n_mounts++;
      if (element_object (c, a, "mounts", i, &j) < 0 || parse_mount (c, j, pi, &s->mounts[i]) < 0)
        return -1;
    }
  if (member (c, root, "", "linux", is_object, "an object", &j) < 0)
    return -1;
  if (j && parse_linux (c, j, &s->linux_config) < 0)
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
