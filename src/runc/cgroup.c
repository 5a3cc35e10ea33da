/* cgroup.c: the container's cgroup (linux.cgroupsPath, linux.resources)
 * through the library's cgroup code, as `ohbox run`'s: made by create (the
 * init starts in it), joined by exec, frozen by pause, destroyed by
 * delete. Its place is in the state directory's cgroup.json ({"parent",
 * "name"}), written before the cgroup is made: a create killed midway
 * leaves nothing the next delete or list does not find. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"
#include "sandbox/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void
runc_cgroup_release (struct runc_cgroup *rc)
{
  if (rc->cg)
    ohbox_cgroup_free (rc->cg);
  if (rc->detected)
    ohbox_cgroup_host_release (&rc->host);
  free (rc->parent);
  free (rc->name);
  memset (rc, 0, sizeof *rc);
}

static int
detect (struct runc_cgroup *rc, ohbox_error_t *err)
{
  struct ohbox_cgroup_detect_opts o = { .parent = rc->parent, .rootless = -1 };
  if (ohbox_cgroup_detect (&o, &rc->host, err) < 0)
    return -1;
  rc->detected = true;
  return 0;
}

int
runc_cgroup_create (struct ohbox_bundle *b, const char *id, int dirfd, struct runc_cgroup *rc, ohbox_error_t *err)
{
  memset (rc, 0, sizeof *rc);
  if (ohbox_bundle_cgroup_path (b->config->linux_config->cgroups_path, id, &rc->parent, &rc->name, err) < 0
      || detect (rc, err) < 0)
    return -1;
  json_t *j = json_pack ("{s:s, s:s}", "parent", rc->parent, "name", rc->name);
  cleanup_free char *text = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  if (ohbox_write_file_atomic (dirfd, RUNC_CGROUP_FILE, text, strlen (text), 0600, err) < 0
      || ohbox_cgroup_create (&rc->host, rc->name, &b->limits, &rc->cg, err) < 0)
    return -1;
  b->spec.cgroup = rc->cg;
  return 0;
}

int
runc_cgroup_open (int dirfd, struct runc_cgroup *rc, ohbox_error_t *err)
{
  memset (rc, 0, sizeof *rc);
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (dirfd, RUNC_CGROUP_FILE, 64 * 1024, &text, &len, err) < 0)
    return -1;
  json_t *j = json_loadb (text, len, 0, NULL);
  const char *parent = NULL, *name = NULL;
  if (j == NULL || json_unpack (j, "{s:s, s:s}", "parent", &parent, "name", &name) < 0)
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "the container's " RUNC_CGROUP_FILE " is unreadable");
    }
  rc->parent = xstrdup (parent);
  rc->name = xstrdup (name);
  json_decref (j);
  if (detect (rc, err) < 0)
    return -1;
  return ohbox_cgroup_open (&rc->host, rc->name, &rc->cg, err);
}

int
runc_cgroup_remove (int dirfd, ohbox_error_t *err)
{
  struct runc_cgroup rc;
  int r = runc_cgroup_open (dirfd, &rc, err);
  if (r < 0 && (*err)->kind == OHBOX_ERR_NOT_FOUND)
    {
      /* None (never made, or removed already). */
      ohbox_error_release (err);
      r = 0;
    }
  else if (r == 0)
    r = ohbox_cgroup_destroy (rc.cg, err);
  runc_cgroup_release (&rc);
  return r;
}


/* pause and resume: the cgroup freezer (v1 freezer.state, v2
 * cgroup.freeze); a paused container has RUNC_PAUSED_FILE in its state. */
static int
freeze (int argc, char **argv, bool pause)
{
  const char *cmd = pause ? "pause" : "resume";
  if (argc != 2)
    return fail ("usage: %s ID", cmd);
  struct container c;
  int rc = container_open (argv[1], &c, 0);
  if (rc == 0 && strcmp (c.status, pause ? "running" : "paused") != 0)
    rc = fail ("%s: container `%s` is %s, not %s", cmd, argv[1], c.status, pause ? "running" : "paused");
  cleanup_error ohbox_error_t err = NULL;
  struct runc_cgroup cgroup = { 0 };
  if (rc == 0
      && (runc_cgroup_open (c.dirfd, &cgroup, &err) < 0 || ohbox_cgroup_freeze (cgroup.cg, pause, &err) < 0
          || (pause ? ohbox_write_file_atomic (c.dirfd, RUNC_PAUSED_FILE, "", 0, 0600, &err)
                    : unlinkat (c.dirfd, RUNC_PAUSED_FILE, 0) < 0 && errno != ENOENT
                          ? ohbox_error_sys (&err, OHBOX_ERR_GENERIC, "remove `%s`", RUNC_PAUSED_FILE)
                          : 0)
                 < 0))
    rc = fail ("%s `%s`: %s", cmd, argv[1], err->msg);
  runc_cgroup_release (&cgroup);
  container_close (&c);
  return rc;
}

int
cmd_pause (int argc, char **argv)
{
  return freeze (argc, argv, true);
}

int
cmd_resume (int argc, char **argv)
{
  return freeze (argc, argv, false);
}

int
runc_cgroup_thaw (int dirfd, ohbox_error_t *err)
{
  if (faccessat (dirfd, RUNC_PAUSED_FILE, F_OK, 0) < 0)
    return 0;
  struct runc_cgroup cgroup;
  int r = runc_cgroup_open (dirfd, &cgroup, err);
  if (r == 0)
    r = ohbox_cgroup_freeze (cgroup.cg, false, err);
  runc_cgroup_release (&cgroup);
  if (r == 0)
    unlinkat (dirfd, RUNC_PAUSED_FILE, 0);
  return r;
}
