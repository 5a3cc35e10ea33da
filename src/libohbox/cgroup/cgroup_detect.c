/* cgroup_detect.c: which cgroup hierarchies this host has (v1, v2, hybrid),
 * which controllers each serves, and where sandbox cgroups go in each one
 * (rootless: below the delegated v2 subtree).  Reads /proc/self/mountinfo
 * and /proc/self/cgroup, or the texts a test passes. */
#include "cgroup/cgroup_internal.h"
#include "cgroup/cgroup.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/utils.h"

void
ohbox_cgroup_host_release (struct ohbox_cgroup_host *host)
{
  if (host == NULL)
    return;
  for (size_t i = 0; i < host->n_hier; i++)
    {
      free (host->hier[i].name);
      free (host->hier[i].mount);
      free (host->hier[i].parent);
      free (host->hier[i].base);
    }
  free (host->warning);
  memset (host, 0, sizeof *host);
}

struct mount_line
{
  char *root, *point, *fstype, *superopts;
};

static bool
parse_mount_line (char *line, struct mount_line *m)
{
  char *f[64];
  size_t n = 0;
  char *save = NULL;
  for (char *tok = strtok_r (line, " ", &save); tok && n < 64; tok = strtok_r (NULL, " ", &save))
    f[n++] = tok;
  size_t dash = 6;
  while (dash < n && strcmp (f[dash], "-") != 0)
    dash++;
  /* ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
  if (dash + 3 >= n)
    return false;
  m->root = f[3];
  m->point = f[4];
  m->fstype = f[dash + 1];
  m->superopts = f[dash + 3];
  ohbox_mountinfo_unescape (m->root);
  ohbox_mountinfo_unescape (m->point);
  return true;
}

/* Whether the comma-separated OPTIONS hold OPT exactly. */
static bool
has_option (const char *options, const char *opt)
{
  size_t len = strlen (opt);
  for (const char *p = options; (p = strstr (p, opt)) != NULL; p += len)
    if ((p == options || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
      return true;
  return false;
}

/* The process's cgroup, from /proc/self/cgroup text, in the v2 hierarchy
 * (VERSION 2), the named v1 hierarchy NAMED ("name=systemd") or the v1
 * hierarchy of the controllers MASK.  "/" when not listed. */
static char *
own_cgroup (const char *self_cgroup, int version, unsigned mask, const char *named)
{
  cleanup_free char *copy = xstrdup (self_cgroup);
  char *save = NULL;
  for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char *c1 = strchr (line, ':');
      char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
      if (c2 == NULL)
        continue;
      *c1 = '\0';
      *c2 = '\0';
      const char *ctrls = c1 + 1, *path = c2 + 1;
      bool match;
      if (version == 2)
        match = strcmp (line, "0") == 0 && *ctrls == '\0';
      else if (named)
        match = strcmp (ctrls, named) == 0;
      else
        match = *ctrls != '\0' && ohbox_cg_parse_controllers (ctrls, ",") == mask;
      if (match)
        {
          char *r = xstrdup (path);
          char *del = strstr (r, " (deleted)");
          if (del)
            *del = '\0';
          return r;
        }
    }
  return xstrdup ("/");
}

/* Checks a parent given by the caller: relative components only, no "." or
 * "..", so that it cannot point outside the hierarchy. */
static int
check_parent (const char *parent, ohbox_error_t *err)
{
  const char *p = parent[0] == '/' ? parent + 1 : parent;
  if (*p == '\0' || strlen (p) > 1024)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid cgroup parent `%s`", parent);
  cleanup_free char *copy = xstrdup (p);
  char *save = NULL;
  for (char *c = strtok_r (copy, "/", &save); c; c = strtok_r (NULL, "/", &save))
    if (strcmp (c, ".") == 0 || strcmp (c, "..") == 0)
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid cgroup parent `%s`: `%s` component", parent, c);
  if (strstr (p, "//") || p[strlen (p) - 1] == '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid cgroup parent `%s`: empty component", parent);
  return 0;
}

/* MOUNT + the path of OWN below the mount's root MROOT. */
static int
own_dir (const char *mount, const char *mroot, const char *own, char **out, ohbox_error_t *err)
{
  const char *rel = own;
  if (strcmp (mroot, "/") != 0)
    {
      size_t l = strlen (mroot);
      if (strncmp (own, mroot, l) != 0 || (own[l] != '\0' && own[l] != '/'))
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "cgroup `%s` of this process is outside the cgroup mount `%s` (root `%s`)", own, mount,
                            mroot);
      rel = own + l;
    }
  while (*rel == '/')
    rel++;
  *out = *rel ? xasprintf ("%s/%s", mount, rel) : xstrdup (mount);
  return 0;
}

static struct ohbox_cgroup_hier *
add_hier (struct ohbox_cgroup_host *h, int version, unsigned controllers, const char *name, const char *mount)
{
  if (h->n_hier >= OHBOX_CGROUP_MAX_HIER)
    return NULL;
  struct ohbox_cgroup_hier *x = &h->hier[h->n_hier++];
  memset (x, 0, sizeof *x);
  x->version = version;
  x->controllers = controllers;
  x->name = xstrdup (name);
  x->mount = xstrdup (mount);
  return x;
}

static void
disable (struct ohbox_cgroup_host *h, char *warning)
{
  for (size_t i = 0; i < h->n_hier; i++)
    {
      free (h->hier[i].name);
      free (h->hier[i].mount);
      free (h->hier[i].parent);
      free (h->hier[i].base);
    }
  h->n_hier = 0;
  h->controllers = 0;
  h->disabled = true;
  h->warning = warning;
}

#define ROOTLESS_HINT                                                                                                  \
  "sandboxes run without resource limits (--memory, --cpus, --pids-limit are ignored), stats or pause; "               \
  "for limits run ohbox in a delegated cgroup v2 scope (systemd-run --user --scope -p Delegate=yes ohbox ...)"

static int
detect_parse (const struct ohbox_cgroup_detect_opts *o, const char *mountinfo, const char *self_cgroup,
              struct ohbox_cgroup_host *h, ohbox_error_t *err)
{
  const char *parent = o->parent ? o->parent : "/ohbox";
  if (check_parent (parent, err) < 0)
    return -1;
  h->rootless = o->rootless >= 0 ? o->rootless != 0 : geteuid () != 0;

  int ret = -1;
  cleanup_free char *mi = xstrdup (mountinfo);
  cleanup_free char *v2_mount = NULL, *v2_root = NULL;
  unsigned v1_served = 0;
  char *save = NULL;
  char *roots[OHBOX_CGROUP_MAX_HIER] = { NULL };
  for (char *line = strtok_r (mi, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      struct mount_line m;
      if (!parse_mount_line (line, &m))
        continue;
      if (strcmp (m.fstype, "cgroup2") == 0)
        {
          if (v2_mount == NULL)
            {
              v2_mount = xstrdup (m.point);
              v2_root = xstrdup (m.root);
            }
          continue;
        }
      if (strcmp (m.fstype, "cgroup") != 0)
        continue;
      unsigned mask = ohbox_cg_parse_controllers (m.superopts, ",");
      bool named = has_option (m.superopts, "name=systemd");
      /* A controller is bound to one hierarchy: a second mount of the same
       * set is a bind mount of it. */
      if ((mask & OHBOX_CG_V1_JOINED) == 0 ? !named : (mask & v1_served) != 0)
        continue;
      if ((mask & OHBOX_CG_V1_JOINED) == 0)
        {
          bool seen = false;
          for (size_t i = 0; i < h->n_hier; i++)
            seen |= (h->hier[i].controllers & OHBOX_CGROUP_NAMED) != 0;
          if (seen)
            continue;
          mask = OHBOX_CGROUP_NAMED;
        }
      /* The name is the controller list as /proc/self/cgroup spells it. */
      cleanup_free char *name = mask == OHBOX_CGROUP_NAMED ? xstrdup ("name=systemd")
                                                           : ohbox_cg_controllers_list (mask, 1, ',');
      if (add_hier (h, 1, mask, name, m.point) == NULL)
        {
          ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "too many cgroup v1 hierarchies");
          goto out;
        }
      roots[h->n_hier - 1] = xstrdup (m.root);
      v1_served |= mask & ~OHBOX_CGROUP_NAMED;
    }

  bool has_v1 = (v1_served & OHBOX_CG_V1_JOINED) != 0;
  if (has_v1)
    h->mode = v2_mount ? OHBOX_CGROUP_MODE_HYBRID : OHBOX_CGROUP_MODE_V1;
  else if (v2_mount)
    {
      h->mode = OHBOX_CGROUP_MODE_V2;
      /* Pure v2: a name=systemd v1 mount is systemd's own affair. */
      for (size_t i = 0; i < h->n_hier; i++)
        {
          free (h->hier[i].name);
          free (h->hier[i].mount);
          free (roots[i]);
          roots[i] = NULL;
        }
      h->n_hier = 0;
    }
  if (h->rootless && has_v1)
    {
      disable (h, xasprintf ("rootless on a cgroup %s host: cgroup v1 hierarchies cannot be delegated; %s",
                             ohbox_cgroup_mode_name (h->mode), ROOTLESS_HINT));
      ret = 0;
      goto out;
    }

  for (size_t i = 0; i < h->n_hier; i++)
    {
      struct ohbox_cgroup_hier *x = &h->hier[i];
      bool named = x->controllers == OHBOX_CGROUP_NAMED;
      cleanup_free char *own = own_cgroup (self_cgroup, 1, x->controllers, named ? "name=systemd" : NULL);
      if (parent[0] == '/')
        x->parent = xasprintf ("%s%s", x->mount, parent);
      else
        {
          cleanup_free char *dir = NULL;
          if (own_dir (x->mount, roots[i], own, &dir, err) < 0)
            goto out;
          x->parent = xasprintf ("%s/%s", dir, parent);
        }
      x->base = xstrdup (x->mount);
      h->controllers |= x->controllers & ~OHBOX_CGROUP_NAMED;
    }

  if (v2_mount)
    {
      cleanup_free char *own = own_cgroup (self_cgroup, 2, 0, NULL);
      cleanup_free char *base = NULL, *owndir = NULL;
      if (own_dir (v2_mount, v2_root, own, &owndir, err) < 0)
        goto out;
      if (h->rootless)
        {
          cleanup_free char *why = NULL;
          cleanup_free char *rel = NULL;
          if (ohbox_cgroup_v2_find_delegated (v2_mount, owndir + strlen (v2_mount), geteuid (), &rel, &why, err) < 0)
            goto out;
          if (rel == NULL)
            {
              disable (h, xasprintf ("rootless: %s; %s", why, ROOTLESS_HINT));
              ret = 0;
              goto out;
            }
          base = xasprintf ("%s%s", v2_mount, rel);
        }
      else
        base = xstrdup (v2_mount);

      cleanup_free char *list = NULL;
      cleanup_error ohbox_error_t ignored = NULL;
      unsigned avail = 0;
      if (ohbox_cg_read (base, "cgroup.controllers", OHBOX_CG_SMALL_MAX, &list, &ignored) == 0)
        avail = ohbox_cg_parse_controllers (list, " \n");
      /* Core v2 features stand in for the v1 freezer and cpuacct. */
      unsigned ctrls = (avail & (OHBOX_CG_V2_WANTED | OHBOX_CG_V2_ON_DEMAND) & ~v1_served)
                       | (~v1_served & (OHBOX_CGROUP_FREEZER | OHBOX_CGROUP_CPUACCT));
      struct ohbox_cgroup_hier *x = add_hier (h, 2, ctrls, "unified", v2_mount);
      if (x == NULL)
        {
          ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "too many cgroup hierarchies");
          goto out;
        }
      if (parent[0] == '/')
        x->parent = xasprintf ("%s%s", base, parent);
      else
        x->parent = xasprintf ("%s/%s", owndir, parent);
      x->base = steal_pointer (&base);
      h->controllers |= ctrls;
    }
  ret = 0;
out:
  for (size_t i = 0; i < OHBOX_CGROUP_MAX_HIER; i++)
    free (roots[i]);
  return ret;
}

int
ohbox_cgroup_detect (const struct ohbox_cgroup_detect_opts *opts, struct ohbox_cgroup_host *out, ohbox_error_t *err)
{
  static const struct ohbox_cgroup_detect_opts defaults = { .rootless = -1 };
  const struct ohbox_cgroup_detect_opts *o = opts ? opts : &defaults;
  cleanup_free char *mi_buf = NULL, *cg_buf = NULL;
  const char *mountinfo = o->mountinfo, *self_cgroup = o->self_cgroup;
  if (mountinfo == NULL)
    {
      if (ohbox_read_file_at (AT_FDCWD, "/proc/self/mountinfo", 16u << 20, &mi_buf, NULL, err) < 0)
        return ohbox_error_prefix (err, "detect cgroups");
      mountinfo = mi_buf;
    }
  if (self_cgroup == NULL)
    {
      if (ohbox_read_file_at (AT_FDCWD, "/proc/self/cgroup", 1u << 20, &cg_buf, NULL, err) < 0)
        return ohbox_error_prefix (err, "detect cgroups");
      self_cgroup = cg_buf;
    }
  memset (out, 0, sizeof *out);
  if (detect_parse (o, mountinfo, self_cgroup, out, err) < 0)
    {
      ohbox_cgroup_host_release (out);
      return ohbox_error_prefix (err, "detect cgroups");
    }
  return 0;
}
