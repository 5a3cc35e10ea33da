/* cgroup_internal.h: what cgroup.c (detection, lifecycle, dispatch) shares
 * with the two backends, cgroup_v1.c and cgroup_v2.c.  Not a public API. */
#ifndef OHBOX_CGROUP_INTERNAL_H
#define OHBOX_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cgroup/cgroup.h"
#include "common/error.h"

/* The largest cgroup file ohbox reads: cgroup.procs of a sandbox with many
 * tasks is the big one (pid_max is at most 4194304, 8 bytes a line). */
#define OHBOX_CG_READ_MAX (40u << 20)
/* Small files (limits, counters, events). */
#define OHBOX_CG_SMALL_MAX (64u << 10)

/* v1 hierarchies a sandbox joins; others (perf_event, net_cls, hugetlb...)
 * are left as they are. */
#define OHBOX_CG_V1_JOINED                                                                                             \
  (OHBOX_CGROUP_CPU | OHBOX_CGROUP_CPUACCT | OHBOX_CGROUP_CPUSET | OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS             \
   | OHBOX_CGROUP_FREEZER | OHBOX_CGROUP_IO | OHBOX_CGROUP_DEVICES | OHBOX_CGROUP_HUGETLB)
/* v2 controllers ohbox enables for its sandboxes (each one costs at cgroup
 * creation; cpuset and hugetlb carry nothing ohbox sets). */
#define OHBOX_CG_V2_WANTED (OHBOX_CGROUP_CPU | OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS | OHBOX_CGROUP_IO)
/* v2 controllers enabled only for a sandbox whose limits need them. */
#define OHBOX_CG_V2_ON_DEMAND OHBOX_CGROUP_HUGETLB
/* The sandbox's directory in one hierarchy. */
struct ohbox_cgroup_dir
{
  int version;
  unsigned controllers;
  char *path;  /* PARENT/ID */
  char *procs; /* PARENT/ID/cgroup.procs */
  char *self;  /* where the calling thread moves itself ("0"): v1 PARENT/ID/tasks, v2 cgroup.procs */
  char *name;  /* the hierarchy's mount point's name: "memory", "cpu,cpuacct", "unified" */
};

struct ohbox_cgroup
{
  char *id;
  size_t n;
  struct ohbox_cgroup_dir dirs[OHBOX_CGROUP_MAX_HIER];
  int v2_fd; /* O_DIRECTORY fd of the v2 directory, for CLONE_INTO_CGROUP */
};

/* Helpers (cgroup.c).  DIR/FILE are joined with a '/'. */
int ohbox_cg_write (const char *dir, const char *file, const char *value, ohbox_error_t *err);
int ohbox_cg_read (const char *dir, const char *file, size_t max, char **out, ohbox_error_t *err);
/* A single number; "max" reads as UINT64_MAX. */
int ohbox_cg_read_u64 (const char *dir, const char *file, uint64_t *out, ohbox_error_t *err);
/* "KEY VALUE" lines (memory.events, cpu.stat, memory.oom_control...):
 * returns 1 and *OUT when KEY is there, 0 when not, -1 on error. */
int ohbox_cg_read_key (const char *dir, const char *file, const char *key, uint64_t *out, ohbox_error_t *err);
bool ohbox_cg_has (const char *dir, const char *file);
/* Parses "cpu memory pids" (cgroup.controllers) or "cpu,cpuacct" into a mask. */
unsigned ohbox_cg_parse_controllers (const char *list, const char *separators);
const char *ohbox_cg_controller_name (unsigned bit, int version);
/* The names of MASK joined by SEP ("cpu,cpuacct"; version 2: "cpu memory"). */
char *ohbox_cg_controllers_list (unsigned mask, int version, char sep);
/* Sleeps with a growing delay; false once DEADLINE (ohbox_monotonic) passed. */
bool ohbox_cg_backoff (double deadline, unsigned *round);

/* cgroup v1 (cgroup_v1.c). */
int ohbox_cgroup_v1_init_cpuset (const char *mount, const char *dir, ohbox_error_t *err);
int ohbox_cgroup_v1_set_memory (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err);
int ohbox_cgroup_v1_set_cpu (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err);
int ohbox_cgroup_v1_freeze (const char *dir, bool freeze, int timeout_ms, ohbox_error_t *err);
int ohbox_cgroup_v1_stats (const struct ohbox_cgroup *cg, struct ohbox_cgroup_stats *st, ohbox_error_t *err);

/* cgroup v2 (cgroup_v2.c). */
/* Enables CONTROLLERS in cgroup.subtree_control of BASE and of every cgroup
 * between it and DIR (DIR included; created when missing). */
int ohbox_cgroup_v2_enable (const char *base, const char *dir, unsigned controllers, ohbox_error_t *err);
int ohbox_cgroup_v2_set_memory (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err);
int ohbox_cgroup_v2_set_cpu (const char *dir, const struct ohbox_cgroup_limits *l, ohbox_error_t *err);
int ohbox_cgroup_v2_freeze (const char *dir, bool freeze, int timeout_ms, ohbox_error_t *err);
int ohbox_cgroup_v2_stats (const char *dir, unsigned controllers, struct ohbox_cgroup_stats *st, ohbox_error_t *err);
/* Writes cgroup.kill; *SUPPORTED false when there is none (Linux < 5.14,
 * or the directory is gone). */
int ohbox_cgroup_v2_kill (const char *dir, bool *supported, ohbox_error_t *err);
int ohbox_cgroup_v2_populated (const char *dir, bool *populated, ohbox_error_t *err);
/* Waits up to TIMEOUT_MS for "populated 0" (a missing cgroup is empty). */
int ohbox_cgroup_v2_wait_unpopulated (const char *dir, int timeout_ms, bool *empty, ohbox_error_t *err);
/* Rootless: the topmost cgroup, from OWN (the process's cgroup, relative to
 * MOUNT) upwards, that is delegated to EUID.  *BASE is NULL when none;
 * *WHY then says why. */
int ohbox_cgroup_v2_find_delegated (const char *mount, const char *own, uid_t euid, char **base, char **why,
                                    ohbox_error_t *err);

#endif
