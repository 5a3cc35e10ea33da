/* cgroup_v1.c: the cgroup v1 backend: one hierarchy per controller (or set
 * of controllers), limits in memory.limit_in_bytes,
 * memory.memsw.limit_in_bytes, cpu.cfs_quota_us/cpu.cfs_period_us,
 * cpu.shares; freezing through freezer.state; accounting from memory.*,
 * cpuacct.* and cpu.stat.  Used on v1 hosts and for the v1 controllers of
 * hybrid hosts. */
#include "cgroup/cgroup_internal.h"
#include "cgroup/cgroup.h"
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/utils.h"

/* A cpuset cgroup starts with empty cpuset.cpus and cpuset.mems, and the
 * kernel refuses to attach a task to it (ENOSPC) until both are set: copy
 * them down from the parent (first initialising the parent the same way
 * when ohbox just created it too). */
int
ohbox_cgroup_v1_init_cpuset (const char *mount, const char *dir, ohbox_error_t *err)
{
  static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
  size_t mlen = strlen (mount);
  if (strncmp (dir, mount, mlen) != 0 || dir[mlen] != '/')
    return ohbox_error (err, OHBOX_ERR_GENERIC, EINVAL, "cgroup `%s` is not below `%s`", dir, mount);
  cleanup_free char *parent = xstrndup (dir, (size_t) (strrchr (dir, '/') - dir));
  for (size_t i = 0; i < 2; i++)
    {
      cleanup_free char *mine = NULL, *theirs = NULL;
      if (ohbox_cg_read (dir, files[i], OHBOX_CG_SMALL_MAX, &mine, err) < 0)
        return -1;
      if (mine[0] != '\0' && mine[0] != '\n')
        continue;
      if (ohbox_cg_read (parent, files[i], OHBOX_CG_SMALL_MAX, &theirs, err) < 0)
        return -1;
      if ((theirs[0] == '\0' || theirs[0] == '\n') && strlen (parent) > mlen)
        {
          /* The parent is empty as well: fill it first, then read again. */
          free (theirs);
          theirs = NULL;
          if (ohbox_cgroup_v1_init_cpuset (mount, parent, err) < 0
              || ohbox_cg_read (parent, files[i], OHBOX_CG_SMALL_MAX, &theirs, err) < 0)
            return -1;
        }
      theirs[strcspn (theirs, "\n")] = '\0';
      if (ohbox_cg_write (dir, files[i], theirs, err) < 0)
        return -1;
    }
  return 0;
}

int
ohbox_cgroup_v1_set_memory (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  char v[32];
  /* A fresh cgroup has both limits unlimited: memory first, then
   * memory+swap, which must never be below it. */
  bool memory_after = false;
  if (l->memory)
    {
      snprintf (v, sizeof v, "%" PRId64, l->memory);
      if (ohbox_cg_write (dir, "memory.limit_in_bytes", v, err) < 0)
        {
          /* An update raising memory above the current memory+swap:
           * that one goes first. */
          if ((*err)->errno_value != EINVAL || !ohbox_cg_has (dir, "memory.memsw.limit_in_bytes"))
            return -1;
          ohbox_error_release (err);
          memory_after = true;
        }
    }
  if (!ohbox_cg_has (dir, "memory.memsw.limit_in_bytes"))
    {
      if (l->memory_swap == 0)
        return 0; /* no swap accounting, and no swap limit asked for */
      return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                          "--memory-swap: swap accounting is off on this host (no `%s/memory.memsw.limit_in_bytes`); "
                          "boot the kernel with swapaccount=1 or drop --memory-swap",
                          dir);
    }
  int64_t memsw = l->memory_swap;
  if (memsw == 0)
    /* Docker's default: as much swap as memory (none with memory unlimited). */
    memsw = l->memory < 0 || l->memory > INT64_MAX / 2 ? -1 : 2 * l->memory;
  snprintf (v, sizeof v, "%" PRId64, memsw);
  if (ohbox_cg_write (dir, "memory.memsw.limit_in_bytes", v, err) < 0)
    return -1;
  snprintf (v, sizeof v, "%" PRId64, l->memory);
  return memory_after ? ohbox_cg_write (dir, "memory.limit_in_bytes", v, err) : 0;
}

int
ohbox_cgroup_v1_set_cpu (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  char v[32];
  if (l->cpu_quota || l->cpu_period)
    {
      /* The period first: the kernel checks the quota against it. */
      snprintf (v, sizeof v, "%" PRIu64, l->cpu_period ? l->cpu_period : 100000);
      if (ohbox_cg_write (dir, "cpu.cfs_period_us", v, err) < 0)
        return -1;
      if (l->cpu_quota)
        {
          snprintf (v, sizeof v, "%" PRId64, l->cpu_quota);
          if (ohbox_cg_write (dir, "cpu.cfs_quota_us", v, err) < 0)
            return -1;
        }
    }
  uint64_t shares = l->cpu_shares ? l->cpu_shares : ohbox_cgroup_weight_to_shares (l->cpu_weight);
  if (shares)
    {
      snprintf (v, sizeof v, "%" PRIu64, shares);
      if (ohbox_cg_write (dir, "cpu.shares", v, err) < 0)
        return -1;
    }
  return 0;
}

static int
read_state (const char *dir, char *buf, size_t size, ohbox_error_t *err)
{
  cleanup_free char *s = NULL;
  if (ohbox_cg_read (dir, "freezer.state", OHBOX_CG_SMALL_MAX, &s, err) < 0)
    return -1;
  s[strcspn (s, "\n")] = '\0';
  snprintf (buf, size, "%s", s);
  return 0;
}

/* Writing FROZEN starts the freeze; the state reads FREEZING until every
 * task has stopped.  A task in uninterruptible sleep can keep it there, so
 * the wait is bounded, and a freeze that does not complete is undone. */
int
ohbox_cgroup_v1_freeze (const char *dir, bool freeze, int timeout_ms, ohbox_error_t *err)
{
  const char *want = freeze ? "FROZEN" : "THAWED";
  if (ohbox_cg_write (dir, "freezer.state", want, err) < 0)
    return -1;
  double deadline = ohbox_monotonic () + timeout_ms / 1000.0;
  unsigned round = 0;
  for (;;)
    {
      char state[32];
      if (read_state (dir, state, sizeof state, err) < 0)
        return -1;
      if (strcmp (state, want) == 0)
        return 0;
      if (!ohbox_cg_backoff (deadline, &round))
        break;
      /* Writing FROZEN again retries tasks that were busy last time. */
      if (freeze && round % 8 == 0 && ohbox_cg_write (dir, "freezer.state", want, err) < 0)
        return -1;
    }
  if (freeze)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      ohbox_cg_write (dir, "freezer.state", "THAWED", &ignored);
    }
  return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "%s `%s`: not %s after %d ms (a process in uninterruptible sleep?)",
                      freeze ? "freeze" : "thaw", dir, want, timeout_ms);
}

/* memory.limit_in_bytes reads PAGE_COUNTER_MAX pages when unlimited. */
static uint64_t
v1_limit (uint64_t v)
{
  return v >= ((uint64_t) INT64_MAX & ~(uint64_t) 0xfffff) ? UINT64_MAX : v;
}

int
ohbox_cgroup_v1_stats (const struct ohbox_cgroup *cg, struct ohbox_cgroup_stats *st, ohbox_error_t *err)
{
  for (size_t i = 0; i < cg->n; i++)
    {
      const struct ohbox_cgroup_dir *d = &cg->dirs[i];
      if (d->version != 1)
        continue;
      if (d->controllers & OHBOX_CGROUP_MEMORY)
        {
          if (ohbox_cg_read_u64 (d->path, "memory.usage_in_bytes", &st->memory_current, err) < 0
              || ohbox_cg_read_u64 (d->path, "memory.limit_in_bytes", &st->memory_max, err) < 0
              || ohbox_cg_read_u64 (d->path, "memory.failcnt", &st->memory_max_events, err) < 0
              || ohbox_cg_read_key (d->path, "memory.oom_control", "oom_kill", &st->oom_kills, err) < 0)
            return -1;
          st->memory_max = v1_limit (st->memory_max);
          st->memory_swap_max = UINT64_MAX;
          if (ohbox_cg_has (d->path, "memory.memsw.limit_in_bytes"))
            {
              if (ohbox_cg_read_u64 (d->path, "memory.memsw.limit_in_bytes", &st->memory_swap_max, err) < 0)
                return -1;
              st->memory_swap_max = v1_limit (st->memory_swap_max);
              /* With swap limited too, the memory+swap counter is the one
               * that fails first. */
              uint64_t swfail;
              if (ohbox_cg_read_u64 (d->path, "memory.memsw.failcnt", &swfail, err) < 0)
                return -1;
              st->memory_max_events += swfail;
            }
          st->valid |= OHBOX_CGROUP_MEMORY;
        }
      if (d->controllers & OHBOX_CGROUP_CPUACCT)
        {
          uint64_t ns, user = 0, sys = 0;
          if (ohbox_cg_read_u64 (d->path, "cpuacct.usage", &ns, err) < 0
              || ohbox_cg_read_key (d->path, "cpuacct.stat", "user", &user, err) < 0
              || ohbox_cg_read_key (d->path, "cpuacct.stat", "system", &sys, err) < 0)
            return -1;
          /* cpuacct.stat counts USER_HZ ticks. */
          long hz = sysconf (_SC_CLK_TCK);
          if (hz <= 0)
            hz = 100;
          st->cpu_usage_usec = ns / 1000;
          st->cpu_user_usec = user * (1000000 / (uint64_t) hz);
          st->cpu_system_usec = sys * (1000000 / (uint64_t) hz);
          st->valid |= OHBOX_CGROUP_CPU;
        }
      if ((d->controllers & OHBOX_CGROUP_CPU) && ohbox_cg_has (d->path, "cpu.stat")
          && ohbox_cg_read_key (d->path, "cpu.stat", "nr_throttled", &st->cpu_nr_throttled, err) < 0)
        return -1;
    }
  return 0;
}
