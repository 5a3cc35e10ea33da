/* cgroup.c: see cgroup.h.  The lifecycle of a sandbox's cgroup across
 * hierarchies (create, join, kill, destroy, reconcile) and the dispatch of
 * each controller's work to the backend of the hierarchy serving it
 * (cgroup_v1.c, cgroup_v2.c).  Host detection is in cgroup_detect.c, limit
 * parsing in cgroup_limits.c. */
#include "cgroup/cgroup_internal.h"
#include "cgroup/cgroup.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/utils.h"

#define ID_MAX 128
/* A freeze waits for every task to stop; one stuck in uninterruptible sleep
 * (a hung FUSE or NFS request) never does, so the wait is bounded. */
#define FREEZE_TIMEOUT_MS 10000
/* How long destroy waits for killed processes to be gone. */
#define DESTROY_TIMEOUT_MS 10000
/* pidfds a kill round holds at once (well under RLIMIT_NOFILE). */
#define KILL_BATCH 256

/* ------------------------------------------------------------ lifecycle */

static int
check_id (const char *id, ohbox_error_t *err)
{
  size_t n = id ? strlen (id) : 0;
  bool ok = n > 0 && n <= ID_MAX && id[0] != '.' && id[0] != '-' && id[0] != '_';
  for (size_t i = 0; ok && i < n; i++)
    ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9')
         || id[i] == '_' || id[i] == '.' || id[i] == '-';
  if (!ok)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid sandbox id `%s` for a cgroup name", id ? id : "");
  return 0;
}

void
ohbox_cgroup_free (struct ohbox_cgroup *cg)
{
  if (cg == NULL)
    return;
  for (size_t i = 0; i < cg->n; i++)
    {
      free (cg->dirs[i].path);
      free (cg->dirs[i].procs);
      free (cg->dirs[i].name);
      free (cg->dirs[i].self);
    }
  if (cg->v2_fd >= 0)
    close (cg->v2_fd);
  free (cg->id);
  free (cg);
}

static struct ohbox_cgroup *
cgroup_new (const struct ohbox_cgroup_host *host, const char *id)
{
  struct ohbox_cgroup *cg = xcalloc (1, sizeof *cg);
  cg->id = xstrdup (id);
  cg->v2_fd = -1;
  for (size_t i = 0; i < host->n_hier; i++)
    {
      struct ohbox_cgroup_dir *d = &cg->dirs[cg->n++];
      d->version = host->hier[i].version;
      d->controllers = host->hier[i].controllers;
      d->path = xasprintf ("%s/%s", host->hier[i].parent, id);
      d->procs = xasprintf ("%s/cgroup.procs", d->path);
      const char *slash = strrchr (host->hier[i].mount, '/');
      d->name = xstrdup (slash ? slash + 1 : host->hier[i].mount);
      /* v1: a thread moving itself through `tasks` skips the global
       * threadgroup lock, whose first writer waits for an RCU grace period
       * (5-15 ms here, most of a start); cgroup.procs takes it always.  The
       * mover is single-threaded (a fresh clone or fork), so moving the
       * thread moves the whole process. */
      d->self = d->version == 1 ? xasprintf ("%s/tasks", d->path) : xstrdup (d->procs);
    }
  return cg;
}

static void
open_v2_fd (struct ohbox_cgroup *cg)
{
  for (size_t i = 0; i < cg->n; i++)
    if (cg->dirs[i].version == 2 && cg->v2_fd < 0)
      cg->v2_fd = open (cg->dirs[i].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

const char *
ohbox_cgroup_path (const struct ohbox_cgroup *cg, unsigned controller)
{
  for (size_t i = 0; cg && i < cg->n; i++)
    if (controller == 0 ? cg->dirs[i].version == 2 : (cg->dirs[i].controllers & controller) != 0)
      return cg->dirs[i].path;
  return NULL;
}

const char *
ohbox_cgroup_dir_at (const struct ohbox_cgroup *cg, size_t i, int *version, const char **name)
{
  if (cg == NULL || i >= cg->n)
    return NULL;
  *version = cg->dirs[i].version;
  *name = cg->dirs[i].name;
  return cg->dirs[i].path;
}

static const struct ohbox_cgroup_dir *
dir_for (const struct ohbox_cgroup *cg, unsigned controller)
{
  for (size_t i = 0; i < cg->n; i++)
    if (cg->dirs[i].controllers & controller)
      return &cg->dirs[i];
  return NULL;
}

static int
missing_controller (const struct ohbox_cgroup_host *host, unsigned bit, const char *option, ohbox_error_t *err)
{
  ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
               "%s: the `%s` cgroup controller is not available on this host (cgroup mode: %s)", option,
               ohbox_cg_controller_name (bit, host->mode == OHBOX_CGROUP_MODE_V2 ? 2 : 1),
               ohbox_cgroup_mode_name (host->mode));
  return ohbox_error_hint (err, "enable the controller on the host or drop %s", option);
}

/* Which controller each requested limit needs, checked before anything is
 * created. */
static int
check_controllers (const struct ohbox_cgroup_host *host, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  if ((l->memory || l->memory_swap) && !(host->controllers & OHBOX_CGROUP_MEMORY))
    return missing_controller (host, OHBOX_CGROUP_MEMORY, "--memory", err);
  if ((l->cpu_quota || l->cpu_period || l->cpu_shares || l->cpu_weight) && !(host->controllers & OHBOX_CGROUP_CPU))
    return missing_controller (host, OHBOX_CGROUP_CPU, l->cpu_quota ? "--cpus" : "--cpu-shares", err);
  if (l->pids && !(host->controllers & OHBOX_CGROUP_PIDS))
    return missing_controller (host, OHBOX_CGROUP_PIDS, "--pids-limit", err);
  /* As runc: the files of v2 controllers are not v1's, and a hybrid
   * host's v2 hierarchy has (almost) no controllers. */
  if (l->n_unified && host->mode != OHBOX_CGROUP_MODE_V2)
    {
      ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                   "linux.resources.unified: `%s`: needs a pure cgroup v2 host (cgroup mode here: %s)",
                   l->unified_keys[0], ohbox_cgroup_mode_name (host->mode));
      return ohbox_error_hint (err, "set the limit through the v1 fields of linux.resources");
    }
  if ((l->blkio_weight || l->n_blkio) && !(host->controllers & OHBOX_CGROUP_IO))
    return missing_controller (host, OHBOX_CGROUP_IO, "linux.resources.blockIO", err);
  if (l->n_hugetlb && !(host->controllers & OHBOX_CGROUP_HUGETLB))
    return missing_controller (host, OHBOX_CGROUP_HUGETLB, "the huge page limits", err);
  return 0;
}

/* hugetlb.SIZE.limit_in_bytes (v1) or hugetlb.SIZE.max (v2); the kernel
 * has one for each huge page size it supports, and no other. */
static int
set_hugetlb (const struct ohbox_cgroup_dir *d, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  for (size_t i = 0; i < l->n_hugetlb; i++)
    {
      cleanup_free char *file = xasprintf ("hugetlb.%s.%s", l->hugetlb[i].page_size,
                                           d->version == 1 ? "limit_in_bytes" : "max");
      char v[32];
      if (!ohbox_cg_has (d->path, file))
        {
          ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "huge page size `%s`: this kernel has no such huge pages",
                       l->hugetlb[i].page_size);
          return ohbox_error_hint (err, "the sizes it has are under /sys/kernel/mm/hugepages");
        }
      snprintf (v, sizeof v, "%llu", (unsigned long long) l->hugetlb[i].limit);
      if (ohbox_cg_write (d->path, file, v, err) < 0)
        return -1;
    }
  return 0;
}

/* The file of a blkio setting in each version, BFQ's first (the weight
 * of the default scheduler, CFQ, is gone from recent kernels), and the
 * OCI field it comes from. */
static const struct
{
  const char *field, *v1[2], *v2[2];
} blkio_files[] = {
  [OHBOX_BLKIO_WEIGHT_DEVICE] = { "weightDevice",
                                  { "blkio.bfq.weight_device", "blkio.weight_device" },
                                  { "io.bfq.weight", "io.weight" } },
  [OHBOX_BLKIO_READ_BPS] = { "throttleReadBpsDevice", { "blkio.throttle.read_bps_device" }, { "io.max" } },
  [OHBOX_BLKIO_WRITE_BPS] = { "throttleWriteBpsDevice", { "blkio.throttle.write_bps_device" }, { "io.max" } },
  [OHBOX_BLKIO_READ_IOPS] = { "throttleReadIOPSDevice", { "blkio.throttle.read_iops_device" }, { "io.max" } },
  [OHBOX_BLKIO_WRITE_IOPS] = { "throttleWriteIOPSDevice", { "blkio.throttle.write_iops_device" }, { "io.max" } },
};
static const char *const io_max_keys[] = { [OHBOX_BLKIO_READ_BPS] = "rbps",
                                           [OHBOX_BLKIO_WRITE_BPS] = "wbps",
                                           [OHBOX_BLKIO_READ_IOPS] = "riops",
                                           [OHBOX_BLKIO_WRITE_IOPS] = "wiops" };

/* The first of CANDIDATES the kernel has in DIR; an error naming FIELD
 * when none. */
static int
blkio_file (const char *dir, const char *const candidates[2], const char *field, const char **out, ohbox_error_t *err)
{
  for (int i = 0; i < 2 && candidates[i]; i++)
    if (ohbox_cg_has (dir, candidates[i]))
      {
        *out = candidates[i];
        return 0;
      }
  ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "linux.resources.blockIO.%s: this kernel has no %s%s%s in `%s`", field,
               candidates[0], candidates[1] ? " or " : "", candidates[1] ? candidates[1] : "", dir);
  return ohbox_error_hint (err, "weights need the BFQ I/O scheduler (or CFQ on old kernels)");
}

static int
set_blkio (const struct ohbox_cgroup_dir *d, const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  const char *file;
  char v[96];
  if (l->blkio_weight)
    {
      static const char *const v1[2] = { "blkio.bfq.weight", "blkio.weight" }, *const v2[2] = { "io.bfq.weight",
                                                                                                "io.weight" };
      if (blkio_file (d->path, d->version == 1 ? v1 : v2, "weight", &file, err) < 0)
        return -1;
      snprintf (v, sizeof v, "%u", (unsigned) l->blkio_weight);
      if (ohbox_cg_write (d->path, file, v, err) < 0)
        return -1;
    }
  for (size_t i = 0; i < l->n_blkio; i++)
    {
      enum ohbox_blkio_kind k = l->blkio[i].kind;
      if (blkio_file (d->path, d->version == 1 ? blkio_files[k].v1 : blkio_files[k].v2, blkio_files[k].field, &file,
                      err)
          < 0)
        return -1;
      if (d->version == 2 && k != OHBOX_BLKIO_WEIGHT_DEVICE)
        snprintf (v, sizeof v, "%lld:%lld %s=%llu", (long long) l->blkio[i].major, (long long) l->blkio[i].minor,
                  io_max_keys[k], (unsigned long long) l->blkio[i].value);
      else
        snprintf (v, sizeof v, "%lld:%lld %llu", (long long) l->blkio[i].major, (long long) l->blkio[i].minor,
                  (unsigned long long) l->blkio[i].value);
      if (ohbox_cg_write (d->path, file, v, err) < 0)
        return ohbox_error_prefix (err, "linux.resources.blockIO.%s", blkio_files[k].field);
    }
  return 0;
}

static int
apply_limits (const struct ohbox_cgroup_host *host, const struct ohbox_cgroup *cg, const struct ohbox_cgroup_limits *l,
              ohbox_error_t *err)
{
  const struct ohbox_cgroup_dir *d;
  if (l->memory || l->memory_swap)
    {
      if ((d = dir_for (cg, OHBOX_CGROUP_MEMORY)) == NULL)
        return missing_controller (host, OHBOX_CGROUP_MEMORY, "--memory", err);
      if ((d->version == 1 ? ohbox_cgroup_v1_set_memory (d->path, l, err)
                           : ohbox_cgroup_v2_set_memory (d->path, l, err))
          < 0)
        return -1;
    }
  if (l->cpu_quota || l->cpu_period || l->cpu_shares || l->cpu_weight)
    {
      if ((d = dir_for (cg, OHBOX_CGROUP_CPU)) == NULL)
        return missing_controller (host, OHBOX_CGROUP_CPU, l->cpu_quota ? "--cpus" : "--cpu-shares", err);
      if ((d->version == 1 ? ohbox_cgroup_v1_set_cpu (d->path, l, err) : ohbox_cgroup_v2_set_cpu (d->path, l, err)) < 0)
        return -1;
    }
  if (l->pids)
    {
      if ((d = dir_for (cg, OHBOX_CGROUP_PIDS)) == NULL)
        return missing_controller (host, OHBOX_CGROUP_PIDS, "--pids-limit", err);
      char v[32];
      if (l->pids < 0)
        snprintf (v, sizeof v, "max");
      else
        snprintf (v, sizeof v, "%lld", (long long) l->pids);
      if (ohbox_cg_write (d->path, "pids.max", v, err) < 0)
        return -1;
    }
  if (l->blkio_weight || l->n_blkio)
    {
      if ((d = dir_for (cg, OHBOX_CGROUP_IO)) == NULL)
        return missing_controller (host, OHBOX_CGROUP_IO, "linux.resources.blockIO", err);
      if (set_blkio (d, l, err) < 0)
        return -1;
    }
  if (l->n_hugetlb)
    {
      if ((d = dir_for (cg, OHBOX_CGROUP_HUGETLB)) == NULL)
        return missing_controller (host, OHBOX_CGROUP_HUGETLB, "the huge page limits", err);
      if (set_hugetlb (d, l, err) < 0)
        return -1;
    }
  const char *v2 = ohbox_cgroup_path (cg, 0);
  for (size_t i = 0; i < l->n_unified; i++)
    if (v2 == NULL || ohbox_cg_write (v2, l->unified_keys[i], l->unified_values[i], err) < 0)
      return v2 ? ohbox_error_prefix (err, "linux.resources.unified: `%s`", l->unified_keys[i])
                : ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "linux.resources.unified: no cgroup v2 directory");
  return 0;
}

/* Removes DIR and the cgroups below it (cgroupfs directories go with
 * rmdir(2) alone; their files cannot be unlinked).  A cgroup whose last
 * task is still exiting answers EBUSY for a moment: retry briefly. */
static int
rmdir_tree (const char *dir, int depth, ohbox_error_t *err)
{
  if (depth > 64)
    return ohbox_error (err, OHBOX_ERR_GENERIC, ELOOP, "remove cgroup `%s`", dir);
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return errno == ENOENT ? 0 : ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open cgroup `%s`", dir);
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (de->d_type != DT_DIR || strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      cleanup_free char *sub = xasprintf ("%s/%s", dir, de->d_name);
      if (rmdir_tree (sub, depth + 1, err) < 0)
        return -1;
    }
  double deadline = ohbox_monotonic () + 2.0;
  unsigned round = 0;
  while (rmdir (dir) < 0)
    {
      if (errno == ENOENT)
        return 0;
      if (errno != EBUSY || !ohbox_cg_backoff (deadline, &round))
        return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "remove cgroup `%s`", dir);
    }
  return 0;
}

/* Creates PATH (PARENT/ID) in hierarchy X, ready for processes; with
 * ADOPT an existing one (a manager's) is used as it is.  *MADE says whether
 * this call made it.  On failure nothing it made is left. */
static int
make_dir (const struct ohbox_cgroup_hier *x, const char *path, const struct ohbox_cgroup_limits *l, bool adopt,
          bool *made, ohbox_error_t *err)
{
  unsigned wanted = OHBOX_CG_V2_WANTED | (l->n_hugetlb ? OHBOX_CGROUP_HUGETLB : 0);
  unsigned want = x->version == 2 ? x->controllers & wanted : 0;
  /* The parent usually exists, made for an earlier sandbox: one mkdir.
   * Otherwise make it, and try again (a few times: a concurrent
   * reconciliation may remove an empty parent meanwhile). */
  bool adopted = false;
  *made = false;
  for (int attempt = 0; mkdir (path, 0755) < 0; attempt++)
    {
      int e = errno;
      if (e == EEXIST && adopt)
        {
          adopted = true;
          break;
        }
      if (e == EEXIST)
        return ohbox_error (err, OHBOX_ERR_GENERIC, EEXIST,
                            "create cgroup `%s`: a cgroup of another sandbox with this id exists, or a leftover of "
                            "one that crashed (ohbox reconciles leftovers on its next command)",
                            path);
      if (e != ENOENT || attempt >= 3)
        return ohbox_error (err, e == ENOENT ? OHBOX_ERR_NOT_FOUND : OHBOX_ERR_CGROUP, e, "create cgroup `%s`", path);
      if ((x->version == 2 ? ohbox_cgroup_v2_enable (x->base, x->parent, want, err)
                           : ohbox_mkdir_p (AT_FDCWD, x->parent, 0755, err))
          < 0)
        return -1;
    }
  *made = !adopted;
  int r = 0;
  if (want)
    {
      /* A parent made by hand (or by an older ohbox) may lack controllers:
       * enable them down the tree; the new, empty cgroup gets them too. */
      cleanup_free char *have = NULL;
      r = ohbox_cg_read (path, "cgroup.controllers", OHBOX_CG_SMALL_MAX, &have, err);
      if (r == 0 && (want & ~ohbox_cg_parse_controllers (have, " \n")) != 0)
        r = ohbox_cgroup_v2_enable (x->base, x->parent, want, err);
    }
  else if (x->version == 1 && (x->controllers & OHBOX_CGROUP_CPUSET))
    r = ohbox_cgroup_v1_init_cpuset (x->mount, path, err);
  if (r < 0 && *made)
    rmdir (path);
  return r;
}

static int
create_or_adopt (const struct ohbox_cgroup_host *host, const char *id, const struct ohbox_cgroup_limits *limits,
                 bool adopt, struct ohbox_cgroup **out, ohbox_error_t *err)
{
  static const struct ohbox_cgroup_limits none;
  const struct ohbox_cgroup_limits *l = limits ? limits : &none;
  if (check_id (id, err) < 0 || ohbox_cgroup_limits_validate (l, err) < 0)
    return -1;
  if (host->disabled)
    {
      /* Rootless without delegation: the caller printed host->warning. */
      *out = cgroup_new (host, id);
      return 0;
    }
  if (check_controllers (host, l, err) < 0)
    return ohbox_error_prefix (err, "sandbox `%s`", id);
  struct ohbox_cgroup *cg = cgroup_new (host, id);
  bool made[OHBOX_CGROUP_MAX_HIER] = { false };
  for (size_t i = 0; i < host->n_hier; i++)
    if (make_dir (&host->hier[i], cg->dirs[i].path, l, adopt, &made[i], err) < 0)
      goto fail;
  if (apply_limits (host, cg, l, err) < 0)
    goto fail;
  open_v2_fd (cg);
  *out = cg;
  return 0;

fail:
  for (size_t i = 0; i < host->n_hier; i++)
    if (made[i])
      {
        cleanup_error ohbox_error_t ignored = NULL;
        rmdir_tree (cg->dirs[i].path, 0, &ignored);
      }
  ohbox_cgroup_free (cg);
  return ohbox_error_prefix (err, "sandbox `%s`", id);
}

int
ohbox_cgroup_create (const struct ohbox_cgroup_host *host, const char *id, const struct ohbox_cgroup_limits *limits,
                     struct ohbox_cgroup **out, ohbox_error_t *err)
{
  return create_or_adopt (host, id, limits, false, out, err);
}

int
ohbox_cgroup_adopt (const struct ohbox_cgroup_host *host, const char *id, const struct ohbox_cgroup_limits *limits,
                    struct ohbox_cgroup **out, ohbox_error_t *err)
{
  return create_or_adopt (host, id, limits, true, out, err);
}

int
ohbox_cgroup_update (const struct ohbox_cgroup_host *host, const struct ohbox_cgroup *cg,
                     const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  if (host->disabled)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "no cgroups on this host: %s",
                        host->warning ? host->warning : "disabled");
  if (ohbox_cgroup_limits_validate (l, err) < 0 || check_controllers (host, l, err) < 0)
    return -1;
  /* v2 hugetlb is enabled at creation only when asked for: enable it now
   * (in the parent's subtree_control, which holds no processes). */
  for (size_t i = 0; l->n_hugetlb && i < host->n_hier; i++)
    if (host->hier[i].version == 2 && (host->hier[i].controllers & OHBOX_CGROUP_HUGETLB)
        && ohbox_cgroup_v2_enable (host->hier[i].base, host->hier[i].parent, OHBOX_CGROUP_HUGETLB, err) < 0)
      return -1;
  return apply_limits (host, cg, l, err);
}

int
ohbox_cgroup_open (const struct ohbox_cgroup_host *host, const char *id, struct ohbox_cgroup **out, ohbox_error_t *err)
{
  if (check_id (id, err) < 0)
    return -1;
  struct ohbox_cgroup *cg = cgroup_new (host, id);
  bool any = host->disabled;
  for (size_t i = 0; i < cg->n; i++)
    any |= access (cg->dirs[i].path, F_OK) == 0;
  if (!any)
    {
      ohbox_cgroup_free (cg);
      return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no cgroup for sandbox `%s`", id);
    }
  open_v2_fd (cg);
  *out = cg;
  return 0;
}

/* ------------------------------------------------------------ joining */

static int
write_procs (const struct ohbox_cgroup_dir *d, const char *value, ohbox_error_t *err)
{
  int fd = open (d->procs, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open `%s`", d->procs);
  ssize_t w;
  do
    w = write (fd, value, strlen (value));
  while (w < 0 && errno == EINTR);
  int saved = errno;
  close (fd);
  if (w < 0)
    {
      errno = saved;
      return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "move process %s into cgroup `%s`", value, d->path);
    }
  return 0;
}

static int
attach (const struct ohbox_cgroup *cg, pid_t pid, bool skip_v2, ohbox_error_t *err)
{
  char v[24];
  snprintf (v, sizeof v, "%d", (int) pid);
  for (size_t i = 0; i < cg->n; i++)
    if (!(skip_v2 && cg->dirs[i].version == 2) && write_procs (&cg->dirs[i], v, err) < 0)
      return -1;
  return 0;
}

int
ohbox_cgroup_attach (const struct ohbox_cgroup *cg, pid_t pid, ohbox_error_t *err)
{
  return attach (cg, pid, false, err);
}

int
ohbox_cgroup_attach_after_clone (const struct ohbox_cgroup *cg, pid_t pid, ohbox_error_t *err)
{
  return attach (cg, pid, cg->v2_fd >= 0, err);
}

int
ohbox_cgroup_enter (const struct ohbox_cgroup *cg, ohbox_error_t *err)
{
  struct ohbox_cgroup_join j;
  if (ohbox_cgroup_join_open (cg, &j, err) < 0)
    return -1;
  return ohbox_cgroup_join (&j, false, err);
}

int
ohbox_cgroup_join_open (const struct ohbox_cgroup *cg, struct ohbox_cgroup_join *j, ohbox_error_t *err)
{
  j->n = 0;
  for (size_t i = 0; i < cg->n; i++)
    {
      j->fd[i] = open (cg->dirs[i].self, O_WRONLY | O_CLOEXEC);
      if (j->fd[i] < 0)
        {
          ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open `%s`", cg->dirs[i].self);
          ohbox_cgroup_join_close (j);
          return -1;
        }
      j->v2[i] = cg->dirs[i].version == 2;
      j->path[i] = cg->dirs[i].path;
      j->n = i + 1;
    }
  return 0;
}

int
ohbox_cgroup_join (struct ohbox_cgroup_join *j, bool skip_v2, ohbox_error_t *err)
{
  int ret = 0;
  for (size_t i = 0; i < j->n && ret == 0; i++)
    {
      if (skip_v2 && j->v2[i])
        continue;
      /* The kernel checks the opener's credentials (f_cred), not ours: the
       * fds were opened by the host's root before we entered a user
       * namespace.  "0" names the calling thread in any pid namespace. */
      ssize_t w;
      do
        w = write (j->fd[i], "0", 1);
      while (w < 0 && errno == EINTR);
      if (w < 0)
        ret = ohbox_error_sys (err, OHBOX_ERR_CGROUP, "move into cgroup `%s`", j->path[i]);
    }
  ohbox_cgroup_join_close (j);
  return ret;
}

void
ohbox_cgroup_join_close (struct ohbox_cgroup_join *j)
{
  for (size_t i = 0; i < j->n; i++)
    if (j->fd[i] >= 0)
      close (j->fd[i]);
  j->n = 0;
}

int
ohbox_cgroup_clone_fd (const struct ohbox_cgroup *cg)
{
  return cg->v2_fd;
}

/* ------------------------------------------------------------ dispatch */

int
ohbox_cgroup_freeze (const struct ohbox_cgroup *cg, bool freeze, ohbox_error_t *err)
{
  if (cg->n == 0)
    return 0;
  const struct ohbox_cgroup_dir *d = dir_for (cg, OHBOX_CGROUP_FREEZER);
  if (d == NULL)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "%s sandbox `%s`: no cgroup freezer on this host",
                        freeze ? "pause" : "unpause", cg->id);
  int r = d->version == 1 ? ohbox_cgroup_v1_freeze (d->path, freeze, FREEZE_TIMEOUT_MS, err)
                          : ohbox_cgroup_v2_freeze (d->path, freeze, FREEZE_TIMEOUT_MS, err);
  if (r < 0)
    return ohbox_error_prefix (err, "%s sandbox `%s`", freeze ? "pause" : "unpause", cg->id);
  return 0;
}

int
ohbox_cgroup_stats (const struct ohbox_cgroup *cg, struct ohbox_cgroup_stats *out, ohbox_error_t *err)
{
  memset (out, 0, sizeof *out);
  /* v1 first: on hybrid hosts the v2 directory only fills what no v1
   * hierarchy serves. */
  if (ohbox_cgroup_v1_stats (cg, out, err) < 0)
    return ohbox_error_prefix (err, "stats of sandbox `%s`", cg->id);
  for (size_t i = 0; i < cg->n; i++)
    if (cg->dirs[i].version == 2
        && ohbox_cgroup_v2_stats (cg->dirs[i].path, cg->dirs[i].controllers & ~out->valid, out, err) < 0)
      return ohbox_error_prefix (err, "stats of sandbox `%s`", cg->id);
  const struct ohbox_cgroup_dir *d = dir_for (cg, OHBOX_CGROUP_PIDS);
  if (d)
    {
      if (ohbox_cg_read_u64 (d->path, "pids.current", &out->pids_current, err) < 0
          || ohbox_cg_read_u64 (d->path, "pids.max", &out->pids_max, err) < 0
          || ohbox_cg_read_key (d->path, "pids.events", "max", &out->pids_max_events, err) < 0)
        return ohbox_error_prefix (err, "stats of sandbox `%s`", cg->id);
      out->valid |= OHBOX_CGROUP_PIDS;
    }
  return 0;
}

/* ------------------------------------------------------------ killing */

static int
cmp_pid (const void *a, const void *b)
{
  pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
  return x < y ? -1 : x > y;
}

struct pid_set
{
  pid_t *v;
  size_t n, cap;
};

/* Adds the pids of DIR/cgroup.procs and of the cgroups below it. */
static int
read_procs_tree (const char *dir, int depth, struct pid_set *s, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  cleanup_error ohbox_error_t local = NULL;
  if (ohbox_cg_read (dir, "cgroup.procs", OHBOX_CG_READ_MAX, &text, &local) < 0)
    {
      /* A missing cgroup has no process. */
      if (local->errno_value == ENOENT || local->errno_value == ENODEV)
        return 0;
      ohbox_error_move (err, &local);
      return -1;
    }
  for (char *p = text; *p;)
    {
      char *end;
      long v = strtol (p, &end, 10);
      if (end == p)
        break;
      if (v > 0)
        {
          if (s->n == s->cap)
            {
              s->cap = s->cap ? s->cap * 2 : 64;
              s->v = xrealloc (s->v, s->cap * sizeof *s->v);
            }
          s->v[s->n++] = (pid_t) v;
        }
      p = end;
      while (*p == '\n')
        p++;
    }
  if (depth >= 32)
    return 0;
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    if (de->d_type == DT_DIR && strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      {
        cleanup_free char *sub = xasprintf ("%s/%s", dir, de->d_name);
        if (read_procs_tree (sub, depth + 1, s, err) < 0)
          return -1;
      }
  return 0;
}

/* Every pid in any hierarchy of CG, sorted, without duplicates. */
static int
collect_pids (const struct ohbox_cgroup *cg, struct pid_set *s, ohbox_error_t *err)
{
  s->n = 0;
  for (size_t i = 0; i < cg->n; i++)
    if (read_procs_tree (cg->dirs[i].path, 0, s, err) < 0)
      return -1;
  if (s->n > 1)
    {
      qsort (s->v, s->n, sizeof *s->v, cmp_pid);
      size_t w = 1;
      for (size_t r = 1; r < s->n; r++)
        if (s->v[r] != s->v[w - 1])
          s->v[w++] = s->v[r];
      s->n = w;
    }
  return 0;
}

static int
dir_populated (const struct ohbox_cgroup_dir *d, bool *populated, ohbox_error_t *err)
{
  if (d->version == 2)
    return ohbox_cgroup_v2_populated (d->path, populated, err);
  struct pid_set s = { 0 };
  int r = read_procs_tree (d->path, 0, &s, err);
  free (s.v);
  *populated = s.n > 0;
  return r;
}

int
ohbox_cgroup_is_empty (const struct ohbox_cgroup *cg, bool *empty, ohbox_error_t *err)
{
  *empty = true;
  /* v2 first: its cgroup.events answers for the whole subtree in one read,
   * and holds every process ohbox put in the sandbox; the v1 hierarchies
   * only matter when it says empty. */
  for (int pass = 2; pass >= 1; pass--)
    for (size_t i = 0; i < cg->n; i++)
      {
        bool populated = false;
        if (cg->dirs[i].version != pass)
          continue;
        if (dir_populated (&cg->dirs[i], &populated, err) < 0)
          return -1;
        if (populated)
          {
            *empty = false;
            return 0;
          }
      }
  return 0;
}

static int
sys_pidfd_open (pid_t pid)
{
#ifdef SYS_pidfd_open
  return (int) syscall (SYS_pidfd_open, pid, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

static int
sys_pidfd_send_signal (int pidfd, int sig)
{
#ifdef SYS_pidfd_send_signal
  return (int) syscall (SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/* One round of SIGKILL through cgroup.procs, for kernels without
 * cgroup.kill.  The processes are frozen first, so that none forks or exits
 * meanwhile.  A pid read from cgroup.procs may be recycled by an unrelated
 * process before kill(2) reaches it; so each pid is opened as a pidfd and
 * only signalled when it is still listed after the pidfd was opened (if
 * the process the pidfd names were gone, the signal fails harmlessly; if
 * it is alive, it owns the pid, which is in the cgroup). */
static int
kill_round (const struct ohbox_cgroup *cg, ohbox_error_t *err)
{
  const struct ohbox_cgroup_dir *fz = dir_for (cg, OHBOX_CGROUP_FREEZER);
  bool frozen = false;
  if (fz)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      frozen = (fz->version == 1 ? ohbox_cgroup_v1_freeze (fz->path, true, 200, &ignored)
                                 : ohbox_cgroup_v2_freeze (fz->path, true, 200, &ignored))
               == 0;
    }
  struct pid_set before = { 0 }, after = { 0 };
  int ret = collect_pids (cg, &before, err);
  for (size_t start = 0; ret == 0 && start < before.n; start += KILL_BATCH)
    {
      size_t n = before.n - start < KILL_BATCH ? before.n - start : KILL_BATCH;
      int fds[KILL_BATCH];
      bool no_pidfd = false;
      for (size_t i = 0; i < n; i++)
        {
          fds[i] = sys_pidfd_open (before.v[start + i]);
          no_pidfd |= fds[i] < 0 && errno == ENOSYS;
        }
      ret = collect_pids (cg, &after, err);
      for (size_t i = 0; i < n; i++)
        {
          pid_t pid = before.v[start + i];
          bool listed = ret == 0 && bsearch (&pid, after.v, after.n, sizeof pid, cmp_pid) != NULL;
          if (listed && fds[i] >= 0)
            sys_pidfd_send_signal (fds[i], SIGKILL);
          else if (listed && no_pidfd && frozen)
            /* Without pidfds (Linux < 5.3): a frozen process cannot exit,
             * so its pid cannot be recycled before this kill. */
            kill (pid, SIGKILL);
          if (fds[i] >= 0)
            close (fds[i]);
        }
    }
  free (before.v);
  free (after.v);
  if (frozen)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      if (fz->version == 1)
        ohbox_cgroup_v1_freeze (fz->path, false, 200, &ignored);
      else
        ohbox_cgroup_v2_freeze (fz->path, false, 200, &ignored);
    }
  return ret;
}

int
ohbox_cgroup_kill_all (const struct ohbox_cgroup *cg, int timeout_ms, ohbox_error_t *err)
{
  if (cg->n == 0)
    return 0;
  double deadline = ohbox_monotonic () + timeout_ms / 1000.0;
  const char *v2 = ohbox_cgroup_path (cg, 0);
  bool kill_file = v2 != NULL;
  unsigned round = 0;
  for (;;)
    {
      bool empty;
      if (ohbox_cgroup_is_empty (cg, &empty, err) < 0)
        return ohbox_error_prefix (err, "kill sandbox `%s`", cg->id);
      if (empty)
        return 0;
      /* cgroup.kill (Linux 5.14) kills the whole subtree atomically, forks
       * in flight included; the procs loop is the fallback, and the second
       * pass for processes only a v1 hierarchy holds. */
      bool killed = false;
      if (kill_file && round == 0)
        {
          if (ohbox_cgroup_v2_kill (v2, &kill_file, err) < 0)
            return ohbox_error_prefix (err, "kill sandbox `%s`", cg->id);
          killed = kill_file;
        }
      if (!killed && kill_round (cg, err) < 0)
        return ohbox_error_prefix (err, "kill sandbox `%s`", cg->id);
      unsigned wait = 0;
      double until = ohbox_monotonic () + 0.05;
      if (v2 && ohbox_cgroup_v2_wait_unpopulated (v2, 50, &empty, err) < 0)
        return ohbox_error_prefix (err, "kill sandbox `%s`", cg->id);
      for (;;)
        {
          if (ohbox_cgroup_is_empty (cg, &empty, err) < 0)
            return ohbox_error_prefix (err, "kill sandbox `%s`", cg->id);
          if (empty)
            return 0;
          if (!ohbox_cg_backoff (until < deadline ? until : deadline, &wait))
            break;
        }
      if (ohbox_monotonic () >= deadline)
        return ohbox_error (err, OHBOX_ERR_GENERIC, 0,
                            "kill sandbox `%s`: processes still in its cgroup after %d ms (in uninterruptible "
                            "sleep?)",
                            cg->id, timeout_ms);
      round++;
    }
}

int
ohbox_cgroup_destroy (struct ohbox_cgroup *cg, ohbox_error_t *err)
{
  if (cg->v2_fd >= 0)
    {
      close (cg->v2_fd);
      cg->v2_fd = -1;
    }
  /* Fast path, the usual case: the sandbox's processes are gone, and one
   * rmdir per hierarchy does it.  The kernel refuses (EBUSY) to remove a
   * cgroup that holds processes or child cgroups; then kill and sweep. */
  size_t left = cg->n;
  while (left > 0 && (rmdir (cg->dirs[left - 1].path) == 0 || errno == ENOENT))
    left--;
  if (left == 0)
    return 0;
  int ret = ohbox_cgroup_kill_all (cg, DESTROY_TIMEOUT_MS, err);
  /* A v1 freezer left FROZEN would keep nothing alive (the cgroup is
   * empty), and rmdir works on frozen cgroups: no thaw needed. */
  for (size_t i = left; i-- > 0;)
    if (rmdir_tree (cg->dirs[i].path, 0, err) < 0)
      ret = -1;
  if (ret < 0)
    ohbox_error_prefix (err, "destroy cgroup of sandbox `%s`", cg->id);
  return ret;
}

/* ------------------------------------------------------------ reconcile */

/* Ids a reconcile pass looks at, at most: the parent is root's (or the
 * user's) own directory, but a bound keeps a bad state from eating memory. */
#define RECONCILE_MAX 65536

int
ohbox_cgroup_reconcile (const struct ohbox_cgroup_host *host, bool (*alive) (const char *id, void *data), void *data,
                        unsigned *removed, ohbox_error_t *err)
{
  if (removed)
    *removed = 0;
  char **ids = NULL;
  size_t n = 0;
  int ret = 0;
  for (size_t h = 0; h < host->n_hier && n < RECONCILE_MAX; h++)
    {
      cleanup_dir DIR *d = opendir (host->hier[h].parent);
      struct dirent *de;
      while (d && n < RECONCILE_MAX && (de = readdir (d)) != NULL)
        {
          cleanup_error ohbox_error_t ignored = NULL;
          if (de->d_type != DT_DIR || check_id (de->d_name, &ignored) < 0)
            continue;
          bool seen = false;
          for (size_t i = 0; i < n && !seen; i++)
            seen = strcmp (ids[i], de->d_name) == 0;
          if (seen)
            continue;
          ids = xrealloc (ids, (n + 1) * sizeof *ids);
          ids[n++] = xstrdup (de->d_name);
        }
    }
  for (size_t i = 0; i < n; i++)
    {
      if (!alive (ids[i], data))
        {
          struct ohbox_cgroup *cg = NULL;
          cleanup_error ohbox_error_t local = NULL;
          if (ohbox_cgroup_open (host, ids[i], &cg, &local) == 0 && ohbox_cgroup_destroy (cg, &local) == 0)
            {
              if (removed)
                (*removed)++;
            }
          else if (local && local->kind != OHBOX_ERR_NOT_FOUND)
            {
              /* Go on with the others; report the first failure. */
              if (ret == 0)
                ohbox_error_move (err, &local);
              ret = -1;
            }
          ohbox_cgroup_free (cg);
        }
      free (ids[i]);
    }
  free (ids);
  return ret;
}
