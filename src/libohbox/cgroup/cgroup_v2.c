/* cgroup_v2.c: the cgroup v2 backend: controllers enabled down the tree
 * through cgroup.subtree_control, limits in memory.max, memory.swap.max,
 * cpu.max, cpu.weight; cgroup.freeze / cgroup.events to freeze;
 * cgroup.kill; accounting from memory.*, cpu.stat; and finding the subtree
 * systemd delegates to a rootless user. */
#include "cgroup/cgroup_internal.h"
#include "cgroup/cgroup.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/utils.h"

/* Makes sure CONTROLLERS are in DIR/cgroup.subtree_control, writing only
 * the missing ones (the common case, a parent set up by an earlier
 * sandbox, costs one read). */
static int
ensure_subtree (const char *dir, unsigned controllers, ohbox_error_t *err)
{
  cleanup_free char *cur = NULL;
  if (ohbox_cg_read (dir, "cgroup.subtree_control", OHBOX_CG_SMALL_MAX, &cur, err) < 0)
    return -1;
  unsigned missing = controllers & ~ohbox_cg_parse_controllers (cur, " \n");
  if (missing == 0)
    return 0;
  cleanup_free char *names = ohbox_cg_controllers_list (missing, 2, ' ');
  struct ohbox_buf b = { 0 };
  for (char *tok = names; *tok;)
    {
      size_t len = strcspn (tok, " ");
      ohbox_buf_append (&b, b.len ? " +" : "+", b.len ? 2 : 1);
      ohbox_buf_append (&b, tok, len);
      tok += len;
      tok += *tok == ' ';
    }
  cleanup_free char *value = b.data;
  cleanup_error ohbox_error_t local = NULL;
  if (ohbox_cg_write (dir, "cgroup.subtree_control", value, &local) == 0)
    return 0;
  int e = local->errno_value;
  ohbox_error_move (err, &local);
  if (e == EBUSY)
    return ohbox_error_hint (err,
                             "cgroup `%s` holds processes of its own, and cgroup v2 lets only leaf cgroups "
                             "hold processes once controllers are enabled below them: move them into a child cgroup "
                             "or choose another cgroup parent",
                             dir);
  if (e == ENOENT)
    return ohbox_error_hint (err, "a controller is missing from `%s/cgroup.controllers` (not delegated by the parent)",
                             dir);
  return -1;
}

int
ohbox_cgroup_v2_enable (const char *base, const char *dir, unsigned controllers, ohbox_error_t *err)
{
  size_t blen = strlen (base);
  if (strncmp (dir, base, blen) != 0 || (dir[blen] != '/' && dir[blen] != '\0'))
    return ohbox_error (err, OHBOX_ERR_GENERIC, EINVAL, "cgroup `%s` is not below `%s`", dir, base);
  if (controllers == 0)
    return ohbox_mkdir_p (AT_FDCWD, dir, 0755, err);
  /* Controller X reaches PARENT/ID only when every cgroup from BASE down
   * to PARENT has X in its subtree_control. */
  if (ensure_subtree (base, controllers, err) < 0)
    return -1;
  cleanup_free char *cur = xstrdup (dir);
  for (char *p = cur + blen; *p;)
    {
      char *next = strchr (p + 1, '/');
      if (next)
        *next = '\0';
      if (mkdir (cur, 0755) < 0 && errno != EEXIST)
        return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "create cgroup `%s`", cur);
      if (ensure_subtree (cur, controllers, err) < 0)
        return -1;
      if (next == NULL)
        break;
      *next = '/';
      p = next;
    }
  return 0;
}

int
ohbox_cgroup_v2_set_memory (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  char v[32];
  if (l->memory)
    {
      if (l->memory < 0)
        snprintf (v, sizeof v, "max");
      else
        snprintf (v, sizeof v, "%" PRId64, l->memory);
      if (ohbox_cg_write (dir, "memory.max", v, err) < 0)
        return -1;
    }
  if (!ohbox_cg_has (dir, "memory.swap.max"))
    {
      if (l->memory_swap == 0)
        return 0;
      return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                          "--memory-swap: swap accounting is off on this host (no `%s/memory.swap.max`); "
                          "drop --memory-swap",
                          dir);
    }
  /* v2 limits swap alone; --memory-swap is memory plus swap. */
  if (l->memory_swap == -1 || l->memory < 0)
    snprintf (v, sizeof v, "max");
  else if (l->memory_swap > 0)
    snprintf (v, sizeof v, "%" PRId64, l->memory_swap - l->memory);
  else
    snprintf (v, sizeof v, "%" PRId64, l->memory); /* Docker's default: as much swap as memory */
  return ohbox_cg_write (dir, "memory.swap.max", v, err);
}

int
ohbox_cgroup_v2_set_cpu (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  char v[64];
  if (l->cpu_quota || l->cpu_period)
    {
      uint64_t period = l->cpu_period ? l->cpu_period : 100000;
      if (l->cpu_quota > 0)
        snprintf (v, sizeof v, "%" PRId64 " %" PRIu64, l->cpu_quota, period);
      else
        snprintf (v, sizeof v, "max %" PRIu64, period);
      if (ohbox_cg_write (dir, "cpu.max", v, err) < 0)
        return -1;
    }
  uint64_t weight = l->cpu_weight ? l->cpu_weight : ohbox_cgroup_shares_to_weight (l->cpu_shares);
  if (weight)
    {
      snprintf (v, sizeof v, "%" PRIu64, weight);
      if (ohbox_cg_write (dir, "cpu.weight", v, err) < 0)
        return -1;
    }
  return 0;
}

/* Reads KEY from an open cgroup.events (kernfs files are read from offset
 * 0 each time). */
static int
events_key (int fd, const char *path, const char *key, uint64_t *out, ohbox_error_t *err)
{
  char buf[1024];
  ssize_t r = pread (fd, buf, sizeof buf - 1, 0);
  if (r < 0)
    return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "read `%s`", path);
  buf[r] = '\0';
  size_t klen = strlen (key);
  for (char *line = buf; line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
    if (strncmp (line, key, klen) == 0 && line[klen] == ' ')
      {
        *out = strtoull (line + klen + 1, NULL, 10);
        return 0;
      }
  return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "read `%s`: no `%s` (kernel older than 5.2?)", path, key);
}

/* cgroup.freeze asks; cgroup.events "frozen" says when every task has
 * stopped.  The kernel signals changes of cgroup.events to poll(2) with
 * POLLPRI, so the wait sleeps until then, bounded by TIMEOUT_MS; a freeze
 * that does not complete is undone. */
int
ohbox_cgroup_v2_freeze (const char *dir, bool freeze, int timeout_ms, ohbox_error_t *err)
{
  if (!ohbox_cg_has (dir, "cgroup.freeze"))
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "no `%s/cgroup.freeze`: the cgroup v2 freezer needs Linux 5.2",
                        dir);
  cleanup_free char *path = xasprintf ("%s/cgroup.events", dir);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open `%s`", path);
  if (ohbox_cg_write (dir, "cgroup.freeze", freeze ? "1" : "0", err) < 0)
    return -1;
  double deadline = ohbox_monotonic () + timeout_ms / 1000.0;
  for (;;)
    {
      uint64_t frozen;
      if (events_key (fd, path, "frozen", &frozen, err) < 0)
        return -1;
      if ((frozen != 0) == freeze)
        return 0;
      int left = (int) ((deadline - ohbox_monotonic ()) * 1000.0);
      if (left <= 0)
        break;
      struct pollfd pfd = { .fd = fd, .events = POLLPRI };
      /* Wake up now and then anyway: a notification can slip in between
       * the read and the poll. */
      if (poll (&pfd, 1, left < 50 ? left : 50) < 0 && errno != EINTR)
        return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "poll `%s`", path);
    }
  if (freeze)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      ohbox_cg_write (dir, "cgroup.freeze", "0", &ignored);
    }
  return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "%s `%s`: not %s after %d ms (a process in uninterruptible sleep?)",
                      freeze ? "freeze" : "thaw", dir, freeze ? "frozen" : "thawed", timeout_ms);
}

int
ohbox_cgroup_v2_stats (const char *dir, unsigned controllers, struct ohbox_cgroup_stats *st, ohbox_error_t *err)
{
  if (controllers & OHBOX_CGROUP_MEMORY)
    {
      if (ohbox_cg_read_u64 (dir, "memory.current", &st->memory_current, err) < 0
          || ohbox_cg_read_u64 (dir, "memory.max", &st->memory_max, err) < 0
          || ohbox_cg_read_key (dir, "memory.events", "max", &st->memory_max_events, err) < 0
          || ohbox_cg_read_key (dir, "memory.events", "oom_kill", &st->oom_kills, err) < 0)
        return -1;
      st->memory_swap_max = UINT64_MAX;
      if (ohbox_cg_has (dir, "memory.swap.max")
          && ohbox_cg_read_u64 (dir, "memory.swap.max", &st->memory_swap_max, err) < 0)
        return -1;
      st->valid |= OHBOX_CGROUP_MEMORY;
    }
  /* cpu.stat is core in v2 (usage without the cpu controller); the
   * throttling counters come with the controller. */
  if (controllers & (OHBOX_CGROUP_CPU | OHBOX_CGROUP_CPUACCT))
    {
      if (ohbox_cg_read_key (dir, "cpu.stat", "usage_usec", &st->cpu_usage_usec, err) < 0
          || ohbox_cg_read_key (dir, "cpu.stat", "user_usec", &st->cpu_user_usec, err) < 0
          || ohbox_cg_read_key (dir, "cpu.stat", "system_usec", &st->cpu_system_usec, err) < 0
          || ohbox_cg_read_key (dir, "cpu.stat", "nr_throttled", &st->cpu_nr_throttled, err) < 0)
        return -1;
      st->valid |= OHBOX_CGROUP_CPU;
    }
  return 0;
}

int
ohbox_cgroup_v2_kill (const char *dir, bool *supported, ohbox_error_t *err)
{
  if (!ohbox_cg_has (dir, "cgroup.kill"))
    {
      /* Linux < 5.14, or the cgroup is gone (its processes may still be in
       * v1 hierarchies): the caller kills through cgroup.procs. */
      *supported = false;
      return 0;
    }
  cleanup_error ohbox_error_t local = NULL;
  if (ohbox_cg_write (dir, "cgroup.kill", "1", &local) < 0 && local->errno_value != ENOENT
      && local->errno_value != ENODEV)
    {
      ohbox_error_move (err, &local);
      return -1;
    }
  return 0;
}

int
ohbox_cgroup_v2_populated (const char *dir, bool *populated, ohbox_error_t *err)
{
  uint64_t v = 0;
  cleanup_error ohbox_error_t local = NULL;
  int r = ohbox_cg_read_key (dir, "cgroup.events", "populated", &v, &local);
  if (r < 0)
    {
      if (local->errno_value == ENOENT || local->errno_value == ENODEV)
        {
          *populated = false;
          return 0;
        }
      ohbox_error_move (err, &local);
      return -1;
    }
  *populated = v != 0;
  return 0;
}

int
ohbox_cgroup_v2_wait_unpopulated (const char *dir, int timeout_ms, bool *empty, ohbox_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/cgroup.events", dir);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      if (errno != ENOENT && errno != ENODEV)
        return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open `%s`", path);
      *empty = true;
      return 0;
    }
  double deadline = ohbox_monotonic () + timeout_ms / 1000.0;
  for (;;)
    {
      uint64_t populated;
      if (events_key (fd, path, "populated", &populated, err) < 0)
        return -1;
      *empty = populated == 0;
      int left = (int) ((deadline - ohbox_monotonic ()) * 1000.0);
      if (*empty || left <= 0)
        return 0;
      /* The kernel notifies cgroup.events changes (POLLPRI): no sleeping
       * longer than needed for the last process to exit. */
      struct pollfd pfd = { .fd = fd, .events = POLLPRI };
      if (poll (&pfd, 1, left < 20 ? left : 20) < 0 && errno != EINTR)
        return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "poll `%s`", path);
    }
}

/* A cgroup is delegated to EUID when EUID owns it and may write its
 * cgroup.procs and cgroup.subtree_control (what systemd's Delegate=yes and
 * the cgroup v2 delegation model hand over).  Moving a process between two
 * cgroups needs write access to cgroup.procs of their common ancestor, so
 * only ancestors of the process's own cgroup can serve. */
static bool
delegated (const char *dir, uid_t euid)
{
  struct stat st;
  if (stat (dir, &st) < 0 || st.st_uid != euid)
    return false;
  cleanup_free char *procs = xasprintf ("%s/cgroup.procs", dir);
  cleanup_free char *subtree = xasprintf ("%s/cgroup.subtree_control", dir);
  return faccessat (AT_FDCWD, dir, W_OK, AT_EACCESS) == 0 && faccessat (AT_FDCWD, procs, W_OK, AT_EACCESS) == 0
         && faccessat (AT_FDCWD, subtree, W_OK, AT_EACCESS) == 0;
}

int
ohbox_cgroup_v2_find_delegated (const char *mount, const char *own, uid_t euid, char **base, char **why,
                                ohbox_error_t *err)
{
  (void) err;
  *base = NULL;
  *why = NULL;
  cleanup_free char *cur = xstrdup (*own ? own : "/");
  cleanup_free char *best = NULL;
  for (;;)
    {
      if (strcmp (cur, "/") == 0)
        break;
      cleanup_free char *dir = xasprintf ("%s%s", mount, cur);
      if (!delegated (dir, euid))
        break;
      free (best);
      best = xstrdup (cur);
      char *slash = strrchr (cur, '/');
      if (slash == cur)
        cur[1] = '\0';
      else
        *slash = '\0';
    }
  if (best == NULL)
    {
      *why = xasprintf ("the cgroup of this process, `%s`, is not delegated to uid %d", *own ? own : "/", (int) euid);
      return 0;
    }
  /* The delegated cgroup itself must hold no process, or no controller can
   * be enabled below it. */
  cleanup_free char *dir = xasprintf ("%s%s", mount, best);
  cleanup_free char *procs = NULL;
  cleanup_error ohbox_error_t local = NULL;
  if (ohbox_cg_read (dir, "cgroup.procs", OHBOX_CG_READ_MAX, &procs, &local) < 0)
    {
      *why = xasprintf ("cannot read `%s/cgroup.procs`: %s", dir, local->msg);
      return 0;
    }
  if (procs[0] != '\0')
    {
      *why = xasprintf ("the delegated cgroup `%s` holds processes itself, and cgroup v2 lets only leaf cgroups "
                        "hold processes once controllers are enabled below them",
                        best);
      return 0;
    }
  *base = steal_pointer (&best);
  return 0;
}
