/* cgroup.h: resource limits, accounting, freezing and cleanup of sandboxes
 * through cgroups, with one interface over three kinds of hosts:
 *
 *   - pure cgroup v2 (the design target): one cgroup2 mount, controllers
 *     enabled down the tree through cgroup.subtree_control;
 *   - cgroup v1: one hierarchy per controller (or per set, "cpu,cpuacct");
 *   - hybrid: v1 controller hierarchies plus a cgroup2 mount (usually
 *     /sys/fs/cgroup/unified) holding few or no controllers.  Each controller
 *     is served by the hierarchy it is bound to; the cgroup2 mount is joined
 *     too (it tracks every process, gives cgroup.kill and CLONE_INTO_CGROUP).
 *
 * A sandbox gets the directory PARENT/<id> in every hierarchy it joins
 * (PARENT is "/ohbox" at the root of each hierarchy by default).  Rootless
 * callers get the same below the delegated cgroup v2 subtree they are in
 * (e.g. systemd's user@UID.service); without one, every operation is a
 * successful no-op and ohbox_cgroup_detect() sets host->warning for the
 * caller to print once.
 *
 * Paths are deterministic (host + id), so later commands reach a sandbox's
 * cgroup with ohbox_cgroup_open() and no state file.  Library code: nothing
 * is printed, nothing exits. */
#ifndef OHBOX_CGROUP_H
#define OHBOX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

enum ohbox_cgroup_mode
{
  OHBOX_CGROUP_MODE_NONE = 0, /* no cgroup filesystem mounted */
  OHBOX_CGROUP_MODE_V1,
  OHBOX_CGROUP_MODE_HYBRID,
  OHBOX_CGROUP_MODE_V2,
};

/* Controllers, as a bit mask. */
#define OHBOX_CGROUP_CPU (1u << 0)
#define OHBOX_CGROUP_CPUACCT (1u << 1) /* v1 only: on v2 cpu.stat is always there */
#define OHBOX_CGROUP_CPUSET (1u << 2)
#define OHBOX_CGROUP_MEMORY (1u << 3)
#define OHBOX_CGROUP_PIDS (1u << 4)
#define OHBOX_CGROUP_FREEZER (1u << 5) /* v1 freezer; on v2 cgroup.freeze is core */
#define OHBOX_CGROUP_IO (1u << 6)      /* v2 io, v1 blkio */
#define OHBOX_CGROUP_DEVICES (1u << 7)
#define OHBOX_CGROUP_HUGETLB (1u << 8)
#define OHBOX_CGROUP_NAMED (1u << 9) /* a v1 hierarchy without controller (name=systemd) */

#define OHBOX_CGROUP_MAX_HIER 16
/* Huge page sizes a limit may name (x86 has 2: 2MB and 1GB; arm64 4). */
#define OHBOX_CGROUP_MAX_HUGETLB 8
/* Per-device blkio entries a sandbox's limits may carry. */
#define OHBOX_CGROUP_MAX_BLKIO 64
enum ohbox_blkio_kind
{
  OHBOX_BLKIO_WEIGHT_DEVICE,
  OHBOX_BLKIO_READ_BPS,
  OHBOX_BLKIO_WRITE_BPS,
  OHBOX_BLKIO_READ_IOPS,
  OHBOX_BLKIO_WRITE_IOPS,
};

/* One mounted hierarchy ohbox uses. */
struct ohbox_cgroup_hier
{
  int version;          /* 1 or 2 */
  unsigned controllers; /* controllers served by this hierarchy (v2: the usable ones) */
  char *name;           /* "memory", "cpu,cpuacct", "name=systemd", "unified" */
  char *mount;          /* mount point */
  char *parent;         /* absolute directory that holds the sandboxes' cgroups */
  char *base;           /* v2: the cgroup whose subtree ohbox manages (root or delegated) */
};

struct ohbox_cgroup_host
{
  enum ohbox_cgroup_mode mode;
  unsigned controllers; /* controllers that can carry limits and stats */
  bool rootless;
  bool disabled; /* rootless without a delegated v2 subtree: no cgroups at all */
  char *warning; /* set when disabled: for the caller to print once */
  size_t n_hier;
  struct ohbox_cgroup_hier hier[OHBOX_CGROUP_MAX_HIER];
};

struct ohbox_cgroup_detect_opts
{
  /* Where sandbox cgroups go: "/X" is X below the root of each hierarchy
   * (below the delegated subtree when rootless), "X" is X below the calling
   * process's own cgroup in each hierarchy.  NULL: "/ohbox". */
  const char *parent;
  /* Text of /proc/self/mountinfo and /proc/self/cgroup; NULL reads them
   * (tests pass made-up hosts). */
  const char *mountinfo;
  const char *self_cgroup;
  /* -1: from geteuid(); 0/1 force it (tests). */
  int rootless;
};

/* Finds the cgroup hierarchies of this host and what they can do.  OPTS may
 * be NULL.  Release *OUT with ohbox_cgroup_host_release(). */
int ohbox_cgroup_detect (const struct ohbox_cgroup_detect_opts *opts, struct ohbox_cgroup_host *out,
                         ohbox_error_t *err);
void ohbox_cgroup_host_release (struct ohbox_cgroup_host *host);
const char *ohbox_cgroup_mode_name (enum ohbox_cgroup_mode mode);

/* Limits.  A zeroed struct means "no limit"; fill it with
 * ohbox_cgroup_limits_set_option() from CLI flags. */
struct ohbox_cgroup_limits
{
  int64_t memory;      /* bytes; 0: none; -1: unlimited (written: lifts a limit) */
  int64_t memory_swap; /* memory + swap in bytes (Docker semantics); 0: 2 * memory; -1: unlimited swap */
  int64_t cpu_quota;   /* microseconds per period; 0: none; -1: unlimited (written) */
  uint64_t cpu_period; /* microseconds; 0: 100000 */
  uint64_t cpu_shares; /* v1 units (2..262144); 0: none; converted on v2 */
  uint64_t cpu_weight; /* v2 units (1..10000); 0: none; converted on v1 */
  int64_t pids;        /* > 0: at most that many tasks; 0: none; -1: unlimited (written) */
  /* hugetlb: bytes of huge pages of each size, the size as the kernel
   * names it in its cgroup files ("2MB", "1GB", "64KB"). */
  size_t n_hugetlb;
  struct
  {
    char page_size[16];
    uint64_t limit;
  } hugetlb[OHBOX_CGROUP_MAX_HUGETLB];
  uint16_t blkio_weight; /* 0: none */
  /* Per-device blkio settings: a weight or a throttle. */
  size_t n_blkio;
  struct
  {
    enum ohbox_blkio_kind kind;
    int64_t major, minor;
    uint64_t value;
  } blkio[OHBOX_CGROUP_MAX_BLKIO];
  /* cgroup v2 files and the values written to them (OCI's unified), on a
   * pure v2 hierarchy only; borrowed: the caller keeps them alive. */
  size_t n_unified;
  char *const *unified_keys;
  char *const *unified_values;
};

/* Sets one limit from a CLI option: "memory" (512m, 1g, bytes), "memory-swap"
 * (same, or -1), "cpus" (1.5 = quota 150000 per period 100000),
 * "cpu-period", "cpu-shares", "cpu-weight", "pids-limit" (N, or -1 for none).
 * Errors are OHBOX_ERR_USAGE and name the option. */
int ohbox_cgroup_limits_set_option (struct ohbox_cgroup_limits *l, const char *option, const char *value,
                                    ohbox_error_t *err);
/* Checks the limits together (swap needs memory and is >= it, shares and
 * weight exclusive, the quota fits the period). */
int ohbox_cgroup_limits_validate (const struct ohbox_cgroup_limits *l, ohbox_error_t *err);
bool ohbox_cgroup_limits_any (const struct ohbox_cgroup_limits *l);
/* "512m" -> 536870912: suffixes b, k, m, g, t (powers of 1024), case-insensitive. */
int ohbox_cgroup_parse_size (const char *s, int64_t *out, ohbox_error_t *err);
/* "1.5" -> quota in microseconds for PERIOD (0.01 .. 4096 CPUs, exact decimal arithmetic). */
int ohbox_cgroup_parse_cpus (const char *s, uint64_t period, int64_t *quota, ohbox_error_t *err);
/* v1 cpu.shares <-> v2 cpu.weight (the mapping runc and crun use). */
uint64_t ohbox_cgroup_shares_to_weight (uint64_t shares);
uint64_t ohbox_cgroup_weight_to_shares (uint64_t weight);

/* A sandbox's cgroup: its directory in each hierarchy. */
struct ohbox_cgroup;

/* Creates PARENT/ID in every hierarchy (enabling v2 controllers down the
 * tree, initialising v1 cpuset) and applies LIMITS (may be NULL).  A limit
 * whose controller the host lacks fails with OHBOX_ERR_UNSUPPORTED and
 * nothing is left behind.  ID: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.  On a
 * disabled host *OUT is an empty cgroup on which everything is a no-op. */
int ohbox_cgroup_create (const struct ohbox_cgroup_host *host, const char *id, const struct ohbox_cgroup_limits *limits,
                         struct ohbox_cgroup **out, ohbox_error_t *err);
/* As ohbox_cgroup_create, where a manager has made PARENT/ID in some
 * hierarchies already (systemd's scope with Delegate=yes, for ohbox-runc
 * --systemd-cgroup): those are used as they are, the others made; on
 * failure only the directories this call made go. */
int ohbox_cgroup_adopt (const struct ohbox_cgroup_host *host, const char *id, const struct ohbox_cgroup_limits *limits,
                        struct ohbox_cgroup **out, ohbox_error_t *err);
/* A device rule: TYPE 'c', 'b' or 'a' (all), MAJOR and MINOR (-1: any),
 * ACCESS a subset of "rwm". */
struct ohbox_device_rule
{
  char type;
  int64_t major, minor;
  char access[4];
  bool deny; /* takes ACCESS back from what the rules before it allow */
};
/* What every sandbox may open: the nodes ohbox puts in its /dev. */
extern const struct ohbox_device_rule ohbox_default_device_rules[];
extern const size_t ohbox_n_default_device_rules;
/* Denies every device, then applies RULES in order (cgroup_devices.c):
 * the v1 devices controller's lists, a v2 device filter program in which
 * the last rule that matches decides. */
int ohbox_cgroup_set_devices (const struct ohbox_cgroup *cg, const struct ohbox_device_rule *rules, size_t n,
                              ohbox_error_t *err);

/* Sets LIMITS on the existing cgroup CG (the limits it leaves at zero stay
 * as they are), checked as ohbox_cgroup_create checks them. */
int ohbox_cgroup_update (const struct ohbox_cgroup_host *host, const struct ohbox_cgroup *cg,
                         const struct ohbox_cgroup_limits *limits, ohbox_error_t *err);
/* Reaches the cgroup of an existing sandbox (OHBOX_ERR_NOT_FOUND when no
 * hierarchy has it). */
int ohbox_cgroup_open (const struct ohbox_cgroup_host *host, const char *id, struct ohbox_cgroup **out,
                       ohbox_error_t *err);
/* Frees the handle (closing its fds); the cgroup itself stays. */
void ohbox_cgroup_free (struct ohbox_cgroup *cg);

/* Directory serving CONTROLLER (an OHBOX_CGROUP_* bit; 0: the v2 directory,
 * else the first one), or NULL. */
const char *ohbox_cgroup_path (const struct ohbox_cgroup *cg, unsigned controller);

/* The sandbox's I-th directory (NULL when I is past the last), for the
 * view of its own cgroups mounted inside it: *VERSION, and in *NAME the
 * last component of its hierarchy's mount point ("memory", "cpu,cpuacct",
 * "systemd", "unified" on a v1 or hybrid host). */
const char *ohbox_cgroup_dir_at (const struct ohbox_cgroup *cg, size_t i, int *version, const char **name);

/* Moves PID into the cgroup in every hierarchy. */
int ohbox_cgroup_attach (const struct ohbox_cgroup *cg, pid_t pid, ohbox_error_t *err);
/* Moves the calling process (writes "0", so it works from inside a new pid
 * namespace).  Meant for the child between fork/clone and exec, before it
 * enters a user namespace (it then lacks the right to open the host's
 * cgroup files) and before it unshares its cgroup namespace (so the sandbox's
 * cgroup becomes the namespace root).  The caller must be single-threaded:
 * on v1 only the calling thread moves (through `tasks`, which spares every
 * start an RCU grace period).  Allocates nothing: paths were built at
 * create/open time. */
int ohbox_cgroup_enter (const struct ohbox_cgroup *cg, ohbox_error_t *err);

/* ohbox_cgroup_enter in two steps, for a child that enters a user namespace
 * before it can move: the parent opens the files before clone (as the host's
 * root), the child writes through them.  SKIP_V2: the v2 hierarchy is left
 * alone (CLONE_INTO_CGROUP put the child there).  join closes the fds either
 * way; join_close is for the parent's copies. */
struct ohbox_cgroup_join
{
  size_t n;
  int fd[OHBOX_CGROUP_MAX_HIER];
  bool v2[OHBOX_CGROUP_MAX_HIER];
  const char *path[OHBOX_CGROUP_MAX_HIER]; /* for messages; owned by the cgroup handle */
};
int ohbox_cgroup_join_open (const struct ohbox_cgroup *cg, struct ohbox_cgroup_join *j, ohbox_error_t *err);
int ohbox_cgroup_join (struct ohbox_cgroup_join *j, bool skip_v2, ohbox_error_t *err);
void ohbox_cgroup_join_close (struct ohbox_cgroup_join *j);

/* CLONE_INTO_CGROUP: an O_DIRECTORY fd of the v2 directory (owned by CG,
 * -1 when there is no v2 hierarchy).  Put it in clone_args.cgroup with
 * CLONE_INTO_CGROUP (Linux >= 5.7; fall back to ohbox_cgroup_attach on
 * ENOSYS/E2BIG/EINVAL): the child starts in the sandbox's cgroup, so with
 * CLONE_NEWCGROUP in the same call that cgroup is its namespace root.  The
 * kernel only moves the child in the v2 hierarchy: on v1 and hybrid hosts
 * the child joins the v1 ones with ohbox_cgroup_join (skip_v2), or the
 * parent calls ohbox_cgroup_attach_after_clone() (slower: a move by pid
 * takes the global threadgroup lock) before letting the child exec (a no-op
 * on pure v2). */
int ohbox_cgroup_clone_fd (const struct ohbox_cgroup *cg);
int ohbox_cgroup_attach_after_clone (const struct ohbox_cgroup *cg, pid_t pid, ohbox_error_t *err);

/* Freezes (true) or thaws every process and waits until the kernel says it
 * is done (v2 cgroup.events "frozen", v1 freezer.state).  Errors with
 * OHBOX_ERR_UNSUPPORTED when the host has no freezer. */
int ohbox_cgroup_freeze (const struct ohbox_cgroup *cg, bool freeze, ohbox_error_t *err);

struct ohbox_cgroup_stats
{
  unsigned valid;             /* OHBOX_CGROUP_MEMORY | CPU | PIDS for the fields filled */
  uint64_t memory_current;    /* bytes (page cache included, as the kernel counts it) */
  uint64_t memory_max;        /* bytes; UINT64_MAX: unlimited */
  uint64_t memory_swap_max;   /* v2 swap alone, v1 memory+swap; UINT64_MAX: unlimited */
  uint64_t memory_max_events; /* limit hits: v2 memory.events max; v1 failcnt + memsw.failcnt (6.x may say 0) */
  uint64_t oom_kills;         /* processes killed by the OOM killer in this cgroup */
  uint64_t cpu_usage_usec;
  uint64_t cpu_user_usec;
  uint64_t cpu_system_usec;
  uint64_t cpu_nr_throttled; /* periods in which the quota stopped the cgroup */
  uint64_t pids_current;
  uint64_t pids_max;        /* UINT64_MAX: unlimited */
  uint64_t pids_max_events; /* forks refused by pids.max */
};
int ohbox_cgroup_stats (const struct ohbox_cgroup *cg, struct ohbox_cgroup_stats *out, ohbox_error_t *err);

/* True when no process is left (v2 cgroup.events "populated 0", else an
 * empty cgroup.procs in every hierarchy). */
int ohbox_cgroup_is_empty (const struct ohbox_cgroup *cg, bool *empty, ohbox_error_t *err);
/* SIGKILLs every process and waits (up to TIMEOUT_MS) until none is left:
 * v2 cgroup.kill when the kernel has it (5.14), else freeze, SIGKILL each
 * process of cgroup.procs through a pidfd (so a recycled pid never gets it),
 * thaw, until empty. */
int ohbox_cgroup_kill_all (const struct ohbox_cgroup *cg, int timeout_ms, ohbox_error_t *err);
/* Removes the directories in every hierarchy: one rmdir each when the
 * sandbox's processes are gone (the common case); otherwise kill_all (up to
 * 10 s) and the cgroups the sandbox created below its own go too.  Missing
 * directories are fine: destroy is what cleans up after a crashed sandbox.
 * CG stays allocated (ohbox_cgroup_free). */
int ohbox_cgroup_destroy (struct ohbox_cgroup *cg, ohbox_error_t *err);

/* Destroys the cgroups under the host's parent whose sandbox no longer
 * exists (ALIVE returns false for its id).  Names that are not sandbox ids
 * are left alone.  *REMOVED (may be NULL) counts the sandboxes cleaned.
 * Call it holding the lock that sandbox creation takes, or a sandbox being
 * started (cgroup made, state not yet written) looks dead. */
int ohbox_cgroup_reconcile (const struct ohbox_cgroup_host *host, bool (*alive) (const char *id, void *data),
                            void *data, unsigned *removed, ohbox_error_t *err);

#endif
