/* devices.c: the edits devices make (devices.h), and `--device HOSTPATH`. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/strv.h"
#include "common/utils.h"
#include "devices/devices.h"

static void
node_free (struct ohbox_device_node *n)
{
  free (n->path);
  free (n->host_path);
}

void
ohbox_device_edits_free (struct ohbox_device_edits *e)
{
  for (size_t i = 0; i < e->n_nodes; i++)
    node_free (&e->nodes[i]);
  for (size_t i = 0; i < e->n_mounts; i++)
    {
      free (e->mounts[i].host_path);
      free (e->mounts[i].container_path);
      free (e->mounts[i].type);
      ohbox_strv_free (e->mounts[i].options);
    }
  for (size_t i = 0; i < e->n_hooks; i++)
    {
      free (e->hooks[i].path);
      ohbox_strv_free (e->hooks[i].args);
      ohbox_strv_free (e->hooks[i].env);
    }
  free (e->nodes);
  free (e->mounts);
  free (e->hooks);
  ohbox_strv_free (e->names);
  ohbox_strv_free (e->env);
  free (e->additional_gids);
  ohbox_strv_free (e->ldconfig_dirs);
  memset (e, 0, sizeof *e);
}

json_t *
ohbox_device_nodes_json (const struct ohbox_device_edits *e)
{
  json_t *nodes = json_array ();
  for (size_t i = 0; i < e->n_nodes; i++)
    {
      const struct ohbox_device_node *n = &e->nodes[i];
      json_array_append_new (nodes,
                             json_pack ("{s:s, s:s, s:s%, s:I, s:I, s:s}", "path", n->path, "host_path", n->host_path,
                                        "type", &n->type, (size_t) 1, "major", (json_int_t) n->major, "minor",
                                        (json_int_t) n->minor, "access", n->access));
    }
  return nodes;
}

int
ohbox_device_edits_add_node (struct ohbox_device_edits *e, struct ohbox_device_node *node, ohbox_error_t *err)
{
  for (size_t i = 0; i < e->n_nodes; i++)
    {
      struct ohbox_device_node *o = &e->nodes[i];
      if (strcmp (o->path, node->path) != 0)
        continue;
      bool same = o->type == node->type && o->major == node->major && o->minor == node->minor;
      if (!same)
        {
          ohbox_error (err, OHBOX_ERR_USAGE, 0,
                       "two devices want `%s` in the sandbox: %c %lld:%lld (from `%s`) and %c %lld:%lld (from `%s`)",
                       node->path, o->type, (long long) o->major, (long long) o->minor, o->host_path, node->type,
                       (long long) node->major, (long long) node->minor, node->host_path);
          node_free (node);
          return -1;
        }
      /* The same node twice (two GPUs share nvidiactl): once, with the
       * union of the accesses asked for. */
      for (const char *a = node->access; *a; a++)
        {
          size_t len = strlen (o->access);
          if (strchr (o->access, *a) == NULL && len < 3)
            o->access[len] = *a, o->access[len + 1] = '\0';
        }
      node_free (node);
      return 0;
    }
  e->nodes = xrealloc (e->nodes, (e->n_nodes + 1) * sizeof *e->nodes);
  e->nodes[e->n_nodes++] = *node;
  memset (node, 0, sizeof *node);
  return 0;
}

void
ohbox_device_edits_set_env (struct ohbox_device_edits *e, const char *kv)
{
  ohbox_strv_env_set (&e->env, &e->n_env, kv);
}

void
ohbox_device_edits_add_name (struct ohbox_device_edits *e, const char *name)
{
  for (size_t i = 0; i < e->n_names; i++)
    if (strcmp (e->names[i], name) == 0)
      return;
  ohbox_strv_push (&e->names, &e->n_names, xstrdup (name));
}

int
ohbox_device_node_from_host (struct ohbox_device_node *node, bool have_type, bool have_numbers, bool have_mode,
                             ohbox_error_t *err)
{
  struct stat st;
  if (stat (node->host_path, &st) < 0)
    return ohbox_error (err, errno == ENOENT ? OHBOX_ERR_NOT_FOUND : OHBOX_ERR_GENERIC, errno, "device `%s`",
                        node->host_path);
  char type = S_ISCHR (st.st_mode) ? 'c' : S_ISBLK (st.st_mode) ? 'b' : '\0';
  if (type == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is not a device node (a character or block device)",
                        node->host_path);
  if (have_type && node->type != type)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "device `%s`: the spec says type `%c`, the host's node is `%c`",
                        node->host_path, node->type, type);
  if (have_numbers && (node->major != (int64_t) major (st.st_rdev) || node->minor != (int64_t) minor (st.st_rdev)))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "device `%s`: the spec says %lld:%lld, the host's node is %u:%u",
                        node->host_path, (long long) node->major, (long long) node->minor, major (st.st_rdev),
                        minor (st.st_rdev));
  node->type = type;
  node->major = major (st.st_rdev);
  node->minor = minor (st.st_rdev);
  if (!have_mode)
    node->file_mode = st.st_mode & 07777;
  /* The owner inside: the spec's, else the host node's (root:video stays
   * root:video in the sandbox). */
  if (!node->has_uid)
    node->uid = st.st_uid;
  if (!node->has_gid)
    node->gid = st.st_gid;
  return 0;
}

static bool
valid_access (const char *s)
{
  if (*s == '\0' || strlen (s) > 3)
    return false;
  for (const char *c = s; *c; c++)
    if (strchr ("rwm", *c) == NULL || strchr (c + 1, *c) != NULL)
      return false;
  return true;
}

/* HOSTPATH[:CTRPATH][:PERMISSIONS]: a last field made of r, w and m only
 * is the permissions (as Docker reads it). */
int
ohbox_device_parse_host (const char *arg, struct ohbox_device_edits *e, ohbox_error_t *err)
{
  cleanup_free char *copy = xstrdup (arg);
  char *fields[3] = { NULL, NULL, NULL };
  size_t n = 0;
  for (char *save = NULL, *f = strtok_r (copy, ":", &save); f; f = strtok_r (NULL, ":", &save))
    {
      if (n == 3)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--device `%s`: expected HOSTPATH[:CTRPATH][:rwm]", arg);
      fields[n++] = f;
    }
  const char *access = "rwm";
  if (n >= 2 && valid_access (fields[n - 1]) && fields[n - 1][0] != '/')
    access = fields[--n];
  else if (n == 3)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--device `%s`: `%s` is not a permission set (r, w and m)", arg,
                        fields[2]);
  if (n == 0 || fields[0][0] != '/' || (n == 2 && fields[1][0] != '/'))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--device `%s`: the host and sandbox paths must be absolute", arg);
  struct ohbox_device_node node = {
    .host_path = xstrdup (fields[0]),
    .path = xstrdup (n == 2 ? fields[1] : fields[0]),
  };
  strcpy (node.access, access);
  if (ohbox_device_node_from_host (&node, false, false, false, err) < 0)
    {
      ohbox_error_prefix (err, "--device `%s`", arg);
      node_free (&node);
      return -1;
    }
  ohbox_device_edits_add_name (e, fields[0]);
  return ohbox_device_edits_add_node (e, &node, err);
}

int
ohbox_devices_resolve (const char *const *devices, const char *const *cdi_dirs, const char *gpus,
                       struct ohbox_device_edits *e, ohbox_error_t *err)
{
  for (size_t i = 0; devices && devices[i]; i++)
    {
      const char *d = devices[i];
      int r = ohbox_cdi_is_qualified_name (d) ? ohbox_cdi_resolve (cdi_dirs, &d, 1, e, err)
                                              : ohbox_device_parse_host (d, e, err);
      if (r < 0)
        return -1;
    }
  if (gpus == NULL)
    return 0;
  struct ohbox_gpu_request req;
  if (ohbox_gpu_request_parse (gpus, &req, err) < 0)
    return -1;
  int r = ohbox_gpus_resolve (cdi_dirs, &req, e, err);
  ohbox_gpu_request_free (&req);
  return r;
}
