/* userns.c: uid/gid maps of a sandbox's user namespace.
 *
 * Root's sandboxes: a block of 65536 ids of their own, leased from the
 * pool (linux.h: the ranges /etc/subuid gives "root", else the dedicated
 * range from OHBOX_USERNS_DEFAULT_START), written directly to
 * /proc/PID/uid_map. Unprivileged callers: 0 -> their own uid plus the
 * subordinate range from 1 on, written by the setuid helpers newuidmap and
 * newgidmap; without a range (or the helpers), a single-id map 0 -> uid
 * with setgroups denied, and a warning (files owned by other ids show up as
 * "nobody", and the command cannot change to another user). */
#include "config.h"
#include "sandbox/linux.h"
#include "common/utils.h"
#include "common/strv.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SUBID_FILE_MAX (4 * 1024 * 1024)

int
ohbox_subid_parse (const char *text, const char *name, uint32_t id, uint32_t first_inside, struct ohbox_idmap *map)
{
  char idstr[16];
  snprintf (idstr, sizeof idstr, "%u", id);
  int found = 0;
  uint32_t inside = first_inside;
  const char *p = text;
  while (p && *p && map->n < OHBOX_IDMAP_MAX)
    {
      const char *eol = strchr (p, '\n');
      size_t len = eol ? (size_t) (eol - p) : strlen (p);
      char line[256];
      if (len < sizeof line && p[0] != '#')
        {
          memcpy (line, p, len);
          line[len] = '\0';
          char *c1 = strchr (line, ':');
          char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
          if (c1 && c2)
            {
              *c1 = *c2 = '\0';
              char *end1, *end2;
              errno = 0;
              unsigned long start = strtoul (c1 + 1, &end1, 10);
              unsigned long count = strtoul (c2 + 1, &end2, 10);
              bool ok = errno == 0 && *end1 == '\0' && *end2 == '\0' && count > 0 && start + count <= UINT32_MAX
                        && (uint64_t) inside + count <= UINT32_MAX;
              if (ok && ((name && strcmp (line, name) == 0) || strcmp (line, idstr) == 0))
                {
                  map->r[map->n].inside = inside;
                  map->r[map->n].outside = (uint32_t) start;
                  map->r[map->n].count = (uint32_t) count;
                  map->n++;
                  inside += (uint32_t) count;
                  found++;
                }
            }
        }
      p = eol ? eol + 1 : NULL;
    }
  return found;
}

uint32_t
ohbox_idmap_to_host (const struct ohbox_idmap *map, uint32_t id)
{
  for (size_t i = 0; i < map->n; i++)
    if (id >= map->r[i].inside && id - map->r[i].inside < map->r[i].count)
      return map->r[i].outside + (id - map->r[i].inside);
  return (uint32_t) -1;
}

static int
read_subids (const char *path, const char *name, uint32_t id, uint32_t first, struct ohbox_idmap *map)
{
  cleanup_free char *text = NULL;
  size_t len;
  ohbox_error_t e = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, SUBID_FILE_MAX, &text, &len, &e) < 0)
    {
      /* A missing or unreadable file is "no range": the fallbacks apply. */
      ohbox_error_release (&e);
      return 0;
    }
  return ohbox_subid_parse (text, name, id, first, map);
}

static bool
have_helper (const char *name)
{
  static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/sbin", "/sbin" };
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    {
      char p[64];
      snprintf (p, sizeof p, "%s/%s", dirs[i], name);
      if (access (p, X_OK) == 0)
        return true;
    }
  return false;
}

/* Blocks of OHBOX_USERNS_BLOCK ids in MAP's ranges. */
static uint32_t
count_blocks (const struct ohbox_idmap *map)
{
  uint64_t n = 0;
  for (size_t i = 0; i < map->n; i++)
    n += map->r[i].count / OHBOX_USERNS_BLOCK;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

/* The host id block INDEX of MAP's ranges starts at. */
static uint32_t
block_start (const struct ohbox_idmap *map, uint32_t index)
{
  for (size_t i = 0; i < map->n; i++)
    {
      uint32_t n = map->r[i].count / OHBOX_USERNS_BLOCK;
      if (index < n)
        return map->r[i].outside + index * OHBOX_USERNS_BLOCK;
      index -= n;
    }
  return (uint32_t) -1;
}

/* Root's subordinate IDs from SUBIDS into MAP, which is also the pool
 * leased from; when root has none there, the legacy default range and the
 * default pool, and true. */
static bool
plan_root_ids (const char *subids, const char *name, struct ohbox_idmap *map, struct ohbox_idmap *pool_map)
{
  static const struct ohbox_idmap_range pool = { 0, OHBOX_USERNS_DEFAULT_START,
                                                 OHBOX_USERNS_BLOCK * OHBOX_USERNS_POOL_BLOCKS };
  static const struct ohbox_idmap_range legacy = { 0, OHBOX_USERNS_DEFAULT_START, OHBOX_USERNS_DEFAULT_COUNT };
  if (read_subids (subids, name, 0, 0, map) != 0)
    {
      *pool_map = *map;
      return false;
    }
  map->r[0] = legacy;
  map->n = 1;
  pool_map->r[0] = pool;
  pool_map->n = 1;
  return true;
}

/* Root: the pool, and until a block is leased, the maps ohbox used before
 * ranges were leased. */
static void
plan_root (const char *subuid, const char *subgid, const char *name, struct ohbox_userns_plan *plan)
{
  bool dflt_uids = plan_root_ids (subuid, name, &plan->uids, &plan->pool_uids);
  bool dflt_gids = plan_root_ids (subgid, name, &plan->gids, &plan->pool_gids);
  bool dflt = dflt_uids || dflt_gids;
  uint32_t nu = count_blocks (&plan->pool_uids), ng = count_blocks (&plan->pool_gids);
  plan->pool_blocks = nu < ng ? nu : ng;
  /* The default pool's first block is what every sandbox of an older ohbox
   * maps to: never leased. */
  plan->pool_first = dflt ? 1 : 0;
  if (plan->pool_blocks < plan->pool_first + 2)
    {
      plan->pool_blocks = 0;
      plan->warning = xasprintf ("the ranges of `root` in %s and %s hold fewer than two blocks of %u ids: every "
                                 "sandbox shares them (and is the same host user as every other); give root more, "
                                 "e.g. `root:100000:6553600`, for a range per sandbox",
                                 subuid, subgid, OHBOX_USERNS_BLOCK);
    }
}

int
ohbox_userns_plan (const char *subuid, const char *subgid, struct ohbox_userns_plan *plan, ohbox_error_t *err)
{
  (void) err;
  memset (plan, 0, sizeof *plan);
  plan->lease = -1;
  uid_t uid = geteuid ();
  gid_t gid = getegid ();
  struct passwd *pw = getpwuid (uid);
  const char *name = pw ? pw->pw_name : NULL;
  if (subuid == NULL)
    subuid = "/etc/subuid";
  if (subgid == NULL)
    subgid = "/etc/subgid";
  if (uid == 0)
    {
      plan_root (subuid, subgid, name, plan);
      return 0;
    }
  plan->uids.r[0] = (struct ohbox_idmap_range){ 0, uid, 1 };
  plan->gids.r[0] = (struct ohbox_idmap_range){ 0, gid, 1 };
  plan->uids.n = plan->gids.n = 1;
  if (have_helper ("newuidmap") && have_helper ("newgidmap") && read_subids (subuid, name, uid, 1, &plan->uids) > 0
      && read_subids (subgid, name, uid, 1, &plan->gids) > 0)
    {
      plan->use_helpers = true;
      return 0;
    }
  plan->uids.n = plan->gids.n = 1;
  plan->single = true;
  plan->warning = xasprintf ("no subordinate ids for user `%s` in %s/%s (or no newuidmap/newgidmap): the sandbox "
                             "maps only your uid to root; add a range with `usermod --add-subuids` and "
                             "`--add-subgids` for more",
                             name ? name : "?", subuid, subgid);
  return 0;
}

/* ---- leases of root's blocks ---- */

/* The lease directory, locked (the lock's fd in *RET_LOCK). */
static int
open_leases (int *ret_lock, ohbox_error_t *err)
{
  int fd = ohbox_private_dir_open (OHBOX_USERNS_LEASES, err);
  if (fd < 0)
    return ohbox_error_prefix (err, "id range leases");
  *ret_lock = ohbox_lock_file (fd, "lock", true, false, err);
  if (*ret_lock < 0)
    {
      close (fd);
      return ohbox_error_prefix (err, "lock the id range leases");
    }
  return fd;
}

/* Whether lease NAME names a state directory that is gone (its sandbox was
 * removed by a removal that died, or by hand). */
static bool
lease_stale (int dirfd, const char *name)
{
  char target[PATH_MAX];
  ssize_t n = readlinkat (dirfd, name, target, sizeof target - 1);
  if (n <= 0)
    return false;
  target[n] = '\0';
  struct stat st;
  return stat (target, &st) < 0 && errno == ENOENT;
}

int
ohbox_userns_lease (struct ohbox_userns_plan *plan, const char *owner, ohbox_error_t *err)
{
  if (plan->pool_blocks == 0)
    return 0;
  cleanup_close int lock = -1;
  cleanup_close int dfd = open_leases (&lock, err);
  if (dfd < 0)
    return -1;
  /* From a random block on: a sandbox's ids are not guessable from how
   * many started before it, and a free block is found at once while the
   * pool is far from full. */
  uint32_t n = plan->pool_blocks - plan->pool_first, start = 0;
  if (getrandom (&start, sizeof start, 0) != (ssize_t) sizeof start)
    start = (uint32_t) getpid ();
  for (uint32_t k = 0; k < n; k++)
    {
      uint32_t block = plan->pool_first + (start + k) % n;
      char name[16];
      snprintf (name, sizeof name, "%u", block);
      if (symlinkat (owner, dfd, name) < 0)
        {
          if (errno != EEXIST)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "lease id block %u in `%s`", block, OHBOX_USERNS_LEASES);
          if (!lease_stale (dfd, name) || unlinkat (dfd, name, 0) < 0 || symlinkat (owner, dfd, name) < 0)
            continue;
        }
      uint32_t u = block_start (&plan->pool_uids, block), g = block_start (&plan->pool_gids, block);
      plan->uids.r[0] = (struct ohbox_idmap_range){ 0, u, OHBOX_USERNS_BLOCK };
      plan->gids.r[0] = (struct ohbox_idmap_range){ 0, g, OHBOX_USERNS_BLOCK };
      plan->uids.n = plan->gids.n = 1;
      plan->lease = block;
      return 0;
    }
  return ohbox_error (err, OHBOX_ERR_SANDBOX, 0,
                      "no free id range: all %u blocks of %u ids are leased to sandboxes "
                      "(`ohbox ps -a` in every store; `ohbox check --repair` frees those of removed ones)",
                      n, OHBOX_USERNS_BLOCK);
}

int
ohbox_userns_release (const char *owner, ohbox_error_t *err)
{
  if (geteuid () != 0 || access (OHBOX_USERNS_LEASES, F_OK) < 0)
    return 0;
  cleanup_close int lock = -1;
  cleanup_close int dfd = open_leases (&lock, err);
  if (dfd < 0)
    return -1;
  cleanup_dir DIR *d = fdopendir (dup (dfd));
  if (d == NULL)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "read `%s`", OHBOX_USERNS_LEASES);
  struct dirent *de;
  size_t len = strlen (owner);
  while ((de = readdir (d)) != NULL)
    {
      char target[PATH_MAX];
      ssize_t n = readlinkat (dfd, de->d_name, target, sizeof target);
      if (n == (ssize_t) len && memcmp (target, owner, len) == 0 && unlinkat (dfd, de->d_name, 0) < 0
          && errno != ENOENT)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "release id block `%s/%s`", OHBOX_USERNS_LEASES, de->d_name);
    }
  return 0;
}

int
ohbox_userns_leases (void (*fn) (const char *lease, const char *owner, void *data), void *data, ohbox_error_t *err)
{
  cleanup_dir DIR *d = opendir (OHBOX_USERNS_LEASES);
  if (d == NULL)
    return errno == ENOENT ? 0 : ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "read `%s`", OHBOX_USERNS_LEASES);
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      char target[PATH_MAX];
      ssize_t n = readlinkat (dirfd (d), de->d_name, target, sizeof target - 1);
      if (n <= 0)
        continue;
      target[n] = '\0';
      cleanup_free char *lease = xasprintf ("%s/%s", OHBOX_USERNS_LEASES, de->d_name);
      fn (lease, target, data);
    }
  return 0;
}

int
ohbox_userns_drop_lease (const char *lease, const char *owner, ohbox_error_t *err)
{
  cleanup_close int lock = -1;
  cleanup_close int dfd = open_leases (&lock, err);
  if (dfd < 0)
    return -1;
  const char *name = strrchr (lease, '/');
  name = name ? name + 1 : lease;
  char target[PATH_MAX];
  ssize_t n = readlinkat (dfd, name, target, sizeof target - 1);
  if (n <= 0)
    return 0;
  target[n] = '\0';
  if (strcmp (target, owner) == 0 && unlinkat (dfd, name, 0) < 0 && errno != ENOENT)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "remove `%s`", lease);
  return 0;
}

void
ohbox_userns_plan_release (struct ohbox_userns_plan *plan)
{
  free (plan->warning);
  plan->warning = NULL;
}

static void
format_map (const struct ohbox_idmap *map, char *buf, size_t size)
{
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < map->n && len < size; i++)
    len += snprintf (buf + len, size - len, "%u %u %u\n", map->r[i].inside, map->r[i].outside, map->r[i].count);
}

static int
write_proc (pid_t pid, const char *file, const char *data, ohbox_error_t *err)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/%s", pid, file);
  cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", path);
  if (write (fd, data, strlen (data)) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "write `%s` (\"%s\")", path, data);
  return 0;
}

/* newuidmap PID inside outside count ...: the setuid helper checks the
 * ranges against /etc/subuid (the caller's own id aside). Looked up in
 * PATH, as runc does; without it there is no wider map (never a narrower
 * one instead). What it says (which range, why) goes into the error. */
static int
run_helper (const char *helper, const char *ids, pid_t pid, const struct ohbox_idmap *map, ohbox_error_t *err)
{
  char text[48 * OHBOX_IDMAP_MAX] = "";
  for (size_t i = 0, len = 0; i < map->n && len < sizeof text; i++)
    len += snprintf (text + len, sizeof text - len, "%s%u %u %u", i ? ", " : "", map->r[i].inside, map->r[i].outside,
                     map->r[i].count);
  const char *path_env = getenv ("PATH");
  cleanup_free char *path = ohbox_path_find (path_env, OHBOX_DEFAULT_PATH, helper);
  if (path == NULL)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0,
                        "`%s` not found in PATH (%s): it writes the %s map `%s` (wider than your own id); install "
                        "it (Debian: uidmap)",
                        helper, path_env && *path_env ? path_env : OHBOX_DEFAULT_PATH, ids, text);
  char *argv[3 + 3 * OHBOX_IDMAP_MAX + 1];
  char nums[1 + 3 * OHBOX_IDMAP_MAX][16];
  size_t n = 0, k = 0;
  argv[n++] = (char *) helper;
  snprintf (nums[k], sizeof nums[k], "%d", pid);
  argv[n++] = nums[k++];
  for (size_t i = 0; i < map->n; i++)
    {
      uint32_t v[3] = { map->r[i].inside, map->r[i].outside, map->r[i].count };
      for (int j = 0; j < 3; j++)
        {
          snprintf (nums[k], sizeof nums[k], "%u", v[j]);
          argv[n++] = nums[k++];
        }
    }
  argv[n] = NULL;
  char said[512];
  int status;
  if (ohbox_run_helper (path, argv, NULL, said, sizeof said, &status, OHBOX_ERR_SANDBOX, err) < 0)
    return -1;
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "`%s` could not write the %s map `%s` (%s %d)%s%s: check /etc/sub%s",
                        path, ids, text, WIFEXITED (status) ? "exit" : "signal",
                        WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status), said[0] ? ": " : "", said, ids);
  return 0;
}

int
ohbox_userns_write_maps (pid_t pid, const struct ohbox_userns_plan *plan, ohbox_error_t *err)
{
  if (plan->use_helpers)
    {
      if (run_helper ("newuidmap", "uid", pid, &plan->uids, err) < 0
          || run_helper ("newgidmap", "gid", pid, &plan->gids, err) < 0)
        return -1;
      return 0;
    }
  char buf[64 * OHBOX_IDMAP_MAX];
  format_map (&plan->uids, buf, sizeof buf);
  if (write_proc (pid, "uid_map", buf, err) < 0)
    return -1;
  /* An unprivileged single-id map needs setgroups denied (user_namespaces(7)). */
  if (plan->single && write_proc (pid, "setgroups", "deny", err) < 0)
    return -1;
  format_map (&plan->gids, buf, sizeof buf);
  return write_proc (pid, "gid_map", buf, err);
}
