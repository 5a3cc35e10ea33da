/* capabilities.h: the sandbox process's capability sets (libcap).
 *
 * In the parent: ohbox_caps_tweak() applies --cap-add/--cap-drop to the
 * default set (Docker's without NET_RAW) with Docker's rules;
 * ohbox_caps_sets_for_user() spreads the result over the five sets as OCI
 * runtimes do; and
 * ohbox_caps_plan_new() checks everything and prepares what the child needs.
 * In the child, right before seccomp and execve, ohbox_caps_apply() drops
 * the bounding set, switches uid/gid (keeping capabilities across setuid),
 * sets effective/permitted/inheritable, raises the ambient set and sets
 * no_new_privs, with no allocation.
 *
 * A capability set is a uint64_t, bit N for capability N (CAP_CHOWN = 0). */
#ifndef OHBOX_CAPABILITIES_H
#define OHBOX_CAPABILITIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define OHBOX_CAP_BIT(c) (UINT64_C (1) << (c))

/* Docker's default set without NET_RAW: CHOWN, DAC_OVERRIDE, FSETID,
 * FOWNER, MKNOD, SETGID, SETUID, SETFCAP, SETPCAP, NET_BIND_SERVICE,
 * SYS_CHROOT, KILL, AUDIT_WRITE. */
uint64_t ohbox_caps_default (void);
/* Every capability the running kernel knows (0 .. cap_last_cap). */
uint64_t ohbox_caps_all (void);

/* The number of capability NAME ("chown", "CAP_CHOWN", "Cap_Chown"), or -1
 * when it is not a capability name known to libcap ("ALL" is not one). */
int ohbox_cap_lookup (const char *name);
/* Same with an error naming NAME and suggesting `ohbox run --help`. */
int ohbox_cap_parse (const char *name, int *ret_cap, ohbox_error_t *err);
/* "CAP_CHOWN,CAP_KILL" (xmalloc'd; "" for none). */
char *ohbox_caps_format (uint64_t caps);

/* Docker's --cap-add/--cap-drop (names as ohbox_cap_parse, or "ALL"):
 * ADD has ALL: every capability except those dropped; else DROP has ALL:
 * exactly ADD; else BASE minus DROP plus ADD (an added name wins over the
 * same name dropped). *RET_CAPS is the final set; *RET_ADDED (may be NULL)
 * the capabilities requested with ADD that are in it, which is what a
 * non-root process user gets. A capability the running kernel does not
 * support is an error when added, ignored when dropped. */
int ohbox_caps_tweak (uint64_t base, const char *const *add, size_t n_add, const char *const *drop, size_t n_drop,
                      uint64_t *ret_caps, uint64_t *ret_added, ohbox_error_t *err);

struct ohbox_caps_sets
{
  uint64_t bounding;
  uint64_t effective;
  uint64_t permitted;
  uint64_t inheritable;
  uint64_t ambient;
};

/* The sets for a sandbox whose process runs as uid 0 (ROOT) or another
 * uid. Root: bounding = effective = permitted = CAPS, inheritable = ambient
 * = 0 (execve as root gives back the bounding set; inheritable stays empty
 * since CVE-2022-24769). Non-root: bounding = CAPS; effective, permitted,
 * inheritable and ambient = ADDED & CAPS, so that only what was asked for
 * explicitly survives execve (as podman does; Docker gives nothing). */
void ohbox_caps_sets_for_user (uint64_t caps, uint64_t added, bool root, struct ohbox_caps_sets *ret);

/* The ids the process switches to (inside the sandbox's user namespace). */
struct ohbox_caps_user
{
  uid_t uid;
  gid_t gid;
  const gid_t *groups; /* supplementary groups, copied */
  size_t n_groups;     /* at most OHBOX_CAPS_MAX_GROUPS */
  bool set_groups;     /* call setgroups(2); false where the user namespace denies it */
};
#define OHBOX_CAPS_MAX_GROUPS 65536

#define OHBOX_CAPS_NO_NEW_PRIVS (1u << 0) /* set PR_SET_NO_NEW_PRIVS */

struct ohbox_caps_plan;

/* Checks SETS (effective and ambient within permitted, ambient within
 * inheritable, inheritable within bounding, all known to the kernel) and
 * prepares them. USER NULL keeps the current ids. */
int ohbox_caps_plan_new (const struct ohbox_caps_sets *sets, const struct ohbox_caps_user *user, unsigned int flags,
                         struct ohbox_caps_plan **ret, ohbox_error_t *err);
void ohbox_caps_plan_free (struct ohbox_caps_plan *plan);

/* In the child, with full capabilities in its user namespace: applies PLAN
 * to the calling thread. No allocation, async-signal-safe. On failure
 * returns -1 with errno set and *RET_STEP naming the failed call (static). */
int ohbox_caps_apply (const struct ohbox_caps_plan *plan, const char **ret_step);

#endif
