/* check_state.c: the sandbox-state half of `ohbox check` (see check.h).
 *
 * A sandbox whose monitor still holds monitor.lock is alive and left alone
 * whatever its files say. Dead ones are repaired with what the lifecycle
 * commands use (ohbox_state_reconcile, ohbox_cgroup_destroy,
 * ohbox_network_release), so check never invents a second way to clean up.
 * Host-wide objects (cgroups under the shared parent, veths, leases) are
 * only considered when they belong to a sandbox of this state directory:
 * another store's sandboxes are not ours to judge. */
#include "config.h"
#include "store/check.h"

#include <errno.h>
#include <net/if.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "network/netlink.h"
#include "network/network.h"
#include "network/nft.h"
#include "sandbox/linux.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

#define MOUNTINFO_MAX (16 * 1024 * 1024)

static void
count_sandbox (struct ohbox_check_ctx *c)
{
  json_t *n = json_object_get (c->checked, "sandboxes");
  json_integer_set (n, json_integer_value (n) + 1);
}

static bool
veth_exists (const char *id)
{
  /* (this network namespace's links: /sys may show another's) */
  char name[IF_NAMESIZE];
  snprintf (name, sizeof name, "ohb%.12s", id);
  return if_nametoindex (name) != 0;
}

static int
delete_veth (const char *id, ohbox_error_t *err)
{
  char name[16];
  snprintf (name, sizeof name, "ohb%.12s", id);
  struct ohbox_nl *nl = NULL;
  if (ohbox_nl_open (-1, &nl, err) < 0)
    return -1;
  int r = ohbox_nl_link_del (nl, name, err);
  ohbox_nl_close (nl);
  return r;
}

/* An exited sandbox (kept, not --rm) whose monitor is gone: its cgroup,
 * network and veth must be gone too. */
static int
check_exited (struct ohbox_check_ctx *c, const char *id, int dfd, const char *where, ohbox_error_t *err)
{
  const struct ohbox_cgroup_host *host;
  if (ohbox_runtime_cgroup_host (c->rt, &host, err) < 0)
    return -1;
  struct ohbox_cgroup *cg = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_cgroup_open (host, id, &cg, &e) == 0)
    {
      const char *p = ohbox_cgroup_path (cg, 0);
      json_t *f = ohbox_check_add (c, "leftover-cgroup", p ? p : where, true, "cgroup of exited sandbox `%.12s`", id);
      if (c->repair)
        ohbox_check_repaired (f, ohbox_cgroup_destroy (cg, &e), &e);
      ohbox_cgroup_free (cg);
    }
  ohbox_error_release (&e);
  json_t *net = ohbox_network_read (dfd);
  bool active = net && json_is_true (json_object_get (net, "active"));
  json_decref (net);
  if (active)
    {
      json_t *f = ohbox_check_add (c, "leftover-network", where, true,
                                   "exited sandbox `%.12s` still holds its "
                                   "address, ports and nft elements",
                                   id);
      if (c->repair)
        ohbox_check_repaired (f, ohbox_network_release (where, dfd, &e), &e);
    }
  if (veth_exists (id))
    {
      cleanup_free char *vwhere = xasprintf ("/sys/class/net/ohb%.12s", id);
      json_t *f = ohbox_check_add (c, "leftover-veth", vwhere, true, "host veth of exited sandbox `%.12s`", id);
      if (c->repair)
        ohbox_check_repaired (f, delete_veth (id, &e), &e);
    }
  return 0;
}

/* A sandbox's monitor may still be alive (only its state directory went):
 * once its command is killed it destroys the cgroup too, under our feet. */
static int
destroy_orphan_cgroup (const struct ohbox_cgroup_host *host, const char *id, struct ohbox_cgroup *cg,
                       ohbox_error_t *err)
{
  if (ohbox_cgroup_destroy (cg, err) == 0)
    return 0;
  struct ohbox_cgroup *again = NULL;
  ohbox_error_t e = NULL;
  bool gone = ohbox_cgroup_open (host, id, &again, &e) < 0 && e->kind == OHBOX_ERR_NOT_FOUND;
  ohbox_cgroup_free (again);
  ohbox_error_release (&e);
  if (!gone)
    return -1;
  ohbox_error_release (err);
  return 0;
}

void
ohbox_check_sandbox_gone (struct ohbox_check_ctx *c, const char *id)
{
  const struct ohbox_cgroup_host *host;
  struct ohbox_cgroup *cg = NULL;
  ohbox_error_t e = NULL;
  json_t *veth = NULL;
  cleanup_free char *vwhere = xasprintf ("/sys/class/net/ohb%.12s", id);
  if (veth_exists (id))
    veth = ohbox_check_add (c, "leftover-veth", vwhere, true, "host veth of sandbox `%.12s`, whose state is gone", id);
  /* The cgroup's name is the sandbox's id, unique whatever the state root
   * (random, 256 bits): no other sandbox's. Destroying it ends what still
   * runs in it. */
  if (ohbox_runtime_cgroup_host (c->rt, &host, &e) == 0 && ohbox_cgroup_open (host, id, &cg, &e) == 0)
    {
      const char *p = ohbox_cgroup_path (cg, 0);
      json_t *f = ohbox_check_add (c, "orphan-cgroup", p ? p : id, true,
                                   "cgroup of sandbox `%.12s`, whose state is gone", id);
      if (c->repair)
        ohbox_check_repaired (f, destroy_orphan_cgroup (host, id, cg, &e), &e);
      ohbox_cgroup_free (cg);
    }
  ohbox_error_release (&e);
  /* Gone with the sandbox's network namespace when its processes ended
   * (or its monitor, still alive, took it away meanwhile). */
  if (veth && c->repair)
    {
      int r = veth_exists (id) ? delete_veth (id, &e) : 0;
      if (r < 0 && !veth_exists (id))
        {
          ohbox_error_release (&e);
          r = 0;
        }
      ohbox_check_repaired (veth, r, &e);
    }
}

static int
check_sandbox (struct ohbox_check_ctx *c, const char *id, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  ohbox_error_t e = NULL;
  if (ohbox_state_open (c->rt, id, &dfd, &e) < 0)
    {
      ohbox_error_release (&e);
      return 0; /* removed meanwhile */
    }
  count_sandbox (c);
  /* Alive, or exited with its teardown at work (sandbox_internal.h). */
  if (ohbox_state_monitor_alive (dfd) || ohbox_state_teardown_busy (dfd))
    return 0;
  cleanup_free char *where = xasprintf ("%s/%s", c->rt->root, id);
  bool exited, rm;
  ohbox_state_recorded_end (dfd, &exited, &rm);
  if (exited && !rm)
    return check_exited (c, id, dfd, where, err);
  struct ohbox_sandbox_info info;
  ohbox_state_describe (dfd, id, &info);
  const char *status = info.record.doc == NULL                     ? "never started"
                       : info.record.present & OHBOX_RECORD_STATUS ? ohbox_status_name (info.record.status)
                       : info.record.status_unknown                ? info.record.status_unknown
                                                                   : "never started";
  json_t *f = ohbox_check_add (c, "dead-sandbox", where, true,
                               info.config.doc == NULL
                                 ? "sandbox `%.12s` was killed while starting (%s): its monitor is gone"
                                 : "the monitor of sandbox `%.12s` (%s) died before it finished",
                               id, status);
  ohbox_sandbox_info_clear (&info);
  if (c->repair)
    {
      /* What ps, rm and wait do on meeting it: kill what is left in its
       * cgroup, release its network, mark it exited (or remove it, --rm). */
      bool removed;
      ohbox_check_repaired (f, ohbox_state_reconcile (c->rt, id, dfd, &removed, &e), &e);
      if (!removed && !json_object_get (f, "repair_error"))
        return check_exited (c, id, dfd, where, err);
    }
  return 0;
}

static int
check_names (struct ohbox_check_ctx *c)
{
  cleanup_close int fd = openat (c->rt->dirfd, "names", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    return 0;
  fd = -1;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (de->d_name[0] == '.')
        continue;
      char target[OHBOX_ID_LEN + 2];
      ssize_t n = readlinkat (dirfd (d), de->d_name, target, sizeof target - 1);
      struct stat st;
      if (n == OHBOX_ID_LEN && (target[n] = '\0', ohbox_state_id_is_valid (target))
          && fstatat (c->rt->dirfd, target, &st, AT_SYMLINK_NOFOLLOW) == 0)
        continue;
      cleanup_free char *where = xasprintf ("%s/names/%s", c->rt->root, de->d_name);
      json_t *f = ohbox_check_add (c, "dangling-sandbox-name", where, true, "name `%s` of a sandbox that is gone",
                                   de->d_name);
      if (c->repair)
        {
          ohbox_error_t e = NULL;
          ohbox_check_repaired (f,
                                unlinkat (dirfd (d), de->d_name, 0) < 0 && errno != ENOENT
                                  ? ohbox_error_sys (&e, OHBOX_ERR_SANDBOX, "remove `%s`", where)
                                  : 0,
                                &e);
        }
    }
  return 0;
}

/* Leases (network.h) owned by a directory of this state root that is gone. */
static int
check_leases (struct ohbox_check_ctx *c, ohbox_error_t *err)
{
  const char *netroot = ohbox_network_root ();
  size_t rootlen = strlen (c->rt->root);
  json_t *stale = json_array ();
  for (int k = 0; k < 2; k++)
    {
      const char *sub = k == 0 ? "ip" : "port";
      cleanup_free char *dir = xasprintf ("%s/%s", netroot, sub);
      cleanup_dir DIR *d = opendir (dir);
      struct dirent *de;
      while (d && (de = readdir (d)) != NULL)
        {
          if (de->d_name[0] == '.')
            continue;
          char target[PATH_MAX];
          ssize_t n = readlinkat (dirfd (d), de->d_name, target, sizeof target - 1);
          if (n <= 0)
            continue;
          target[n] = '\0';
          struct stat st;
          if (strncmp (target, c->rt->root, rootlen) != 0 || target[rootlen] != '/' || stat (target, &st) == 0)
            continue;
          cleanup_free char *where = xasprintf ("%s/%s", dir, de->d_name);
          json_array_append (stale, ohbox_check_add (c, "stale-lease", where, true,
                                                     "lease of sandbox `%s`, which is gone", target));
        }
    }
  int ret = 0;
  if (c->repair && json_array_size (stale) > 0)
    {
      /* The GC every removal runs: it drops leases whose owner is gone. */
      ohbox_error_t e = NULL;
      int r = ohbox_network_gc (&e);
      size_t i;
      json_t *f;
      json_array_foreach (stale, i, f)
      {
        ohbox_error_t e2 = NULL;
        if (r < 0)
          ohbox_error (&e2, e->kind, 0, "%s", e->msg);
        ohbox_check_repaired (f, r, &e2);
      }
      ohbox_error_release (&e);
    }
  json_decref (stale);
  (void) err;
  return ret;
}

/* Root's id range leases (linux.h) whose sandbox of this state root is
 * gone: the range would stay out of the pool until a start happens to
 * reclaim it. */
static void
userns_lease_found (const char *lease, const char *owner, void *data)
{
  struct ohbox_check_ctx *c = data;
  size_t rootlen = strlen (c->rt->root);
  struct stat st;
  if (strncmp (owner, c->rt->root, rootlen) != 0 || owner[rootlen] != '/'
      || !ohbox_state_id_is_valid (owner + rootlen + 1) || stat (owner, &st) == 0)
    return;
  json_t *f = ohbox_check_add (c, "stale-id-lease", lease, true, "id range of sandbox `%.12s`, which is gone",
                               owner + rootlen + 1);
  if (c->repair)
    {
      ohbox_error_t e = NULL;
      ohbox_check_repaired (f, ohbox_userns_drop_lease (lease, owner, &e), &e);
    }
}

static int
check_userns_leases (struct ohbox_check_ctx *c, ohbox_error_t *err)
{
  if (geteuid () != 0)
    return 0;
  return ohbox_userns_leases (userns_lease_found, c, err);
}

static bool
strictly_below (const char *path, const char *dir)
{
  size_t n = strlen (dir);
  return strncmp (path, dir, n) == 0 && path[n] == '/';
}

/* Sandboxes mount only in their own mount namespaces: a mount below the
 * store or the state directory in ours is a leak (an older version, or a
 * helper killed halfway). */

/* A leftover state directory NAME: reported as KIND, removed with --repair. */
static void
leftover_state_dir (struct ohbox_check_ctx *c, const char *name, const char *kind, const char *what)
{
  cleanup_free char *where = xasprintf ("%s/%s", c->rt->root, name);
  json_t *f = ohbox_check_add (c, kind, where, true, "%s", what);
  if (c->repair)
    {
      ohbox_error_t e = NULL;
      ohbox_check_repaired (f, ohbox_rm_rf_at (c->rt->dirfd, name, &e), &e);
    }
}

static int
check_mounts (struct ohbox_check_ctx *c, ohbox_error_t *err)
{
  cleanup_free char *data = NULL;
  if (ohbox_read_file_at (AT_FDCWD, "/proc/self/mountinfo", MOUNTINFO_MAX, &data, NULL, err) < 0)
    return -1;
  char store_real[PATH_MAX], state_real[PATH_MAX];
  const char *store_root = realpath (ohbox_store_root (c->s), store_real) ? store_real : ohbox_store_root (c->s);
  const char *state_root = realpath (c->rt->root, state_real) ? state_real : c->rt->root;
  json_t *found = json_array ();
  char *save = NULL;
  for (char *line = strtok_r (data, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      /* id parent major:minor root mountpoint ... */
      char *fields[5];
      char *fs = NULL;
      int i = 0;
      for (char *t = strtok_r (line, " ", &fs); t && i < 5; t = strtok_r (NULL, " ", &fs))
        fields[i++] = t;
      if (i < 5)
        continue;
      ohbox_mountinfo_unescape (fields[4]);
      if (strictly_below (fields[4], store_root) || strictly_below (fields[4], state_root))
        json_array_append_new (found, json_string (fields[4]));
    }
  /* Deepest first, so an unmount never leaves a mount hidden under another. */
  for (size_t i = json_array_size (found); i-- > 0;)
    {
      const char *mp = json_string_value (json_array_get (found, i));
      json_t *f = ohbox_check_add (c, "leftover-mount", mp, true, "a mount below the %s",
                                   strictly_below (mp, store_root) ? "store" : "state directory");
      if (c->repair)
        {
          /* MNT_DETACH: whatever still uses it keeps it until done; nothing
           * new can reach it. Paths come from our own mount table. */
          ohbox_error_t e = NULL;
          ohbox_check_repaired (f,
                                umount2 (mp, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL
                                  ? ohbox_error_sys (&e, OHBOX_ERR_SANDBOX, "unmount `%s`", mp)
                                  : 0,
                                &e);
        }
    }
  json_decref (found);
  return 0;
}

/* One kind of network leftover that a scan of network/ lists. */
struct orphan_kind
{
  int (*list) (json_t **ret, ohbox_error_t *err);
  const char *unreadable; /* the finding when the list cannot be read */
  const char *scanned;    /* and where it was looked for */
  const char *kind;       /* the finding for each orphan */
  /* Where orphan O is and what it is (xmalloc'd). */
  void (*describe) (json_t *o, char **ret_where, char **ret_what);
  int (*drop) (json_t *o, ohbox_error_t *err);
};

static void
check_orphans (struct ohbox_check_ctx *c, const struct orphan_kind *k)
{
  json_t *orphans = NULL;
  ohbox_error_t e = NULL;
  if (k->list (&orphans, &e) < 0)
    {
      ohbox_check_add (c, k->unreadable, k->scanned, false, "%s", e->msg);
      ohbox_error_release (&e);
      return;
    }
  size_t i;
  json_t *o;
  json_array_foreach (orphans, i, o)
  {
    cleanup_free char *where = NULL;
    cleanup_free char *what = NULL;
    k->describe (o, &where, &what);
    json_t *f = ohbox_check_add (c, k->kind, where, true, "%s", what);
    if (c->repair)
      ohbox_check_repaired (f, k->drop (o, &e), &e);
  }
  json_decref (orphans);
}

static const char *
field (json_t *o, const char *key)
{
  return json_string_value (json_object_get (o, key));
}

static int
drop_element (json_t *o, ohbox_error_t *err)
{
  json_t *one = json_pack ("[O]", o);
  int r = ohbox_network_drop_orphan_elements (one, err);
  json_decref (one);
  return r;
}

static void
describe_port_element (json_t *o, char **ret_where, char **ret_what)
{
  *ret_where = xasprintf ("table inet " OHBOX_NFT_TABLE " map %s { %s }", field (o, "map"), field (o, "key"));
  *ret_what = xasprintf ("published port to %s, an address no sandbox holds", field (o, "addr"));
}

static void
describe_sandbox_element (json_t *o, char **ret_where, char **ret_what)
{
  *ret_where = xasprintf ("table %s " OHBOX_NFT_TABLE " set %s { %s }", field (o, "family"), field (o, "set"),
                          field (o, "key"));
  *ret_what = xasprintf ("filter element of %s, an address no sandbox holds (or another veth's)", field (o, "addr"));
}

static void
describe_neighbour (json_t *o, char **ret_where, char **ret_what)
{
  *ret_where = xasprintf ("neighbour %s dev %s", field (o, "addr"), field (o, "bridge"));
  *ret_what = xstrdup ("permanent neighbour entry for an address no sandbox holds");
}

/* Published ports' nft elements whose address no lease names: left by a
 * release that died or failed, they would send their host port to
 * whichever sandbox gets that address next, and refuse the port to the
 * next sandbox that leases it. Host-wide, but no sandbox of any state
 * directory can own an address without a lease. Only where the table is
 * ohbox's to read (root). */
static const struct orphan_kind port_elements = {
  ohbox_network_orphan_elements, "unreadable-port-elements", "table inet " OHBOX_NFT_TABLE,
  "orphan-port-element",         describe_port_element,      drop_element,
};

/* The sandboxes' other nft elements (anti-spoofing in `table bridge
 * ohbox`, DNS and --egress in `table inet ohbox`) that no live lease
 * accounts for: left, they would lend their filters to whichever sandbox
 * gets that address (or veth) next. */
static const struct orphan_kind sandbox_elements = {
  ohbox_network_orphan_sandbox_elements,
  "unreadable-sandbox-elements",
  "tables inet and bridge " OHBOX_NFT_TABLE,
  "orphan-sandbox-element",
  describe_sandbox_element,
  drop_element,
};

/* Permanent neighbour entries on ohbox's bridges for addresses no lease
 * names: the host would keep sending that address's traffic to a MAC no
 * sandbox has (or the next one's, were MACs not derived from addresses). */
static const struct orphan_kind neighbours = {
  ohbox_network_orphan_neighbours,
  "unreadable-neighbours",
  "the bridges' neighbour tables",
  "orphan-neighbour",
  describe_neighbour,
  ohbox_network_drop_orphan_neighbour,
};

/* Named networks whose bridge is gone (removed by hand, a reboot): the next
 * start on them makes it again; --repair does it now. And tables that are
 * not this version's whole rules while a bridge exists (an older ohbox's,
 * or changed by hand): sandboxes would run unfiltered or cut off. */
static void
check_networks (struct ohbox_check_ctx *c)
{
  json_t *missing = NULL;
  ohbox_error_t e = NULL;
  bool complete = true;
  if (ohbox_network_tables_complete (&complete, &e) < 0)
    {
      ohbox_check_add (c, "unreadable-nft-tables", "tables inet and bridge " OHBOX_NFT_TABLE, false, "%s", e->msg);
      ohbox_error_release (&e);
    }
  else if (!complete)
    {
      json_t *f = ohbox_check_add (c, "incomplete-nft-tables", "tables inet and bridge " OHBOX_NFT_TABLE, true,
                                   "the rules are missing or an older version's while a bridge of ohbox exists");
      if (c->repair)
        ohbox_check_repaired (f, ohbox_network_repair_tables (&e), &e);
    }
  if (ohbox_network_missing_bridges (&missing, &e) < 0)
    {
      ohbox_check_add (c, "unreadable-networks", ohbox_network_defs_dir (), false, "%s", e->msg);
      ohbox_error_release (&e);
      return;
    }
  size_t i;
  json_t *o;
  json_array_foreach (missing, i, o)
  {
    const char *name = json_string_value (json_object_get (o, "name"));
    json_t *f = ohbox_check_add (c, "missing-network-bridge", json_string_value (json_object_get (o, "bridge")), true,
                                 "bridge of named network `%s` does not exist", name);
    if (c->repair)
      ohbox_check_repaired (f, ohbox_network_repair_bridge (name, &e), &e);
  }
  json_decref (missing);
}

int
ohbox_check_state (struct ohbox_check_ctx *c, ohbox_error_t *err)
{
  if (check_mounts (c, err) < 0)
    return -1;
  cleanup_close int fd = openat (c->rt->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", c->rt->root);
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", c->rt->root);
  fd = -1;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      /* A state dir whose creator died before renaming it into place, or
       * whose remover died after renaming it away. */
      if (strncmp (de->d_name, ".new-", 5) == 0)
        {
          if (ohbox_state_half_created_stale (c->rt, de->d_name))
            leftover_state_dir (c, de->d_name, "half-created-sandbox",
                                "state of a sandbox whose creator died before it was complete");
          continue;
        }
      if (strncmp (de->d_name, OHBOX_STATE_REMOVING, strlen (OHBOX_STATE_REMOVING)) == 0)
        {
          leftover_state_dir (c, de->d_name, "half-removed-sandbox",
                              "state of a sandbox whose removal did not "
                              "finish");
          continue;
        }
      if (ohbox_state_id_is_valid (de->d_name) && check_sandbox (c, de->d_name, err) < 0)
        return -1;
    }
  check_names (c);
  if (check_leases (c, err) < 0 || check_userns_leases (c, err) < 0)
    return -1;
  if (geteuid () == 0)
    check_orphans (c, &port_elements);
  /* (host-wide, and only where ohbox's tables and bridges are its to
   * read and change: root) */
  if (geteuid () == 0)
    {
      check_networks (c);
      check_orphans (c, &sandbox_elements);
      check_orphans (c, &neighbours);
    }
  return 0;
}
