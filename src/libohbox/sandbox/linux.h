/* linux.h: internal interface of the Linux sandbox machinery (linux.c:
 * clone3 and the child's steps; mounts.c: the rootfs and its special
 * mounts; userns.c: uid/gid maps; init.c: PID 1 and the command).
 * sandbox.c fills a struct ohbox_linux_spec and calls ohbox_linux_start();
 * nothing here prints or exits except in the child, which reports to the
 * parent over the sync socket and _exit()s. */
#ifndef OHBOX_LINUX_H
#define OHBOX_LINUX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/error.h"
#include "security/seccomp.h"
#include "sandbox/snapshot.h"

/* ---- user namespaces (userns.c) ---- */

#define OHBOX_IDMAP_MAX 8 /* newuidmap accepts more; /etc/subuid rarely has more than one range per user */

/* Root's sandboxes get a range of OHBOX_USERNS_BLOCK ids of their own
 * (ids 0..65535 inside), leased per sandbox so that no two running
 * sandboxes are ever the same host user (on a shared volume, a shared
 * network namespace's sockets, signals): as podman's --userns=auto. The
 * pool: the ranges /etc/subuid and /etc/subgid give "root" (or uid 0), cut
 * into blocks; without such a range, OHBOX_USERNS_POOL_BLOCKS blocks from
 * host id OHBOX_USERNS_DEFAULT_START on (a range no distribution
 * allocates: useradd starts subordinate ids at 100000 and hands out 65536
 * per user), whose first block, which every sandbox shared before ranges
 * were leased, is never handed out. A configured range too small for two
 * blocks is shared by every sandbox, with a warning. Documented in
 * ohbox-run(1). */
#define OHBOX_USERNS_DEFAULT_START 1879048192u /* 0x70000000 */
#define OHBOX_USERNS_DEFAULT_COUNT 65536u
#define OHBOX_USERNS_BLOCK 65536u
#define OHBOX_USERNS_POOL_BLOCKS 4096u /* 0x70000000 .. 0x7fffffff */
/* Where leases are: LEASES/<block> is a symlink to the owning sandbox's
 * state directory (host-wide for root, whatever the state root; a lease
 * whose owner is gone is reclaimed). */
#define OHBOX_USERNS_LEASES "/run/ohbox/userns"

struct ohbox_idmap_range
{
  uint32_t inside;
  uint32_t outside;
  uint32_t count;
};

struct ohbox_idmap
{
  struct ohbox_idmap_range r[OHBOX_IDMAP_MAX];
  size_t n;
};

struct ohbox_userns_plan
{
  struct ohbox_idmap uids;
  struct ohbox_idmap gids;
  bool use_helpers; /* rootless with subordinate ids: newuidmap/newgidmap */
  bool single;      /* rootless without: one id, setgroups denied */
  char *warning;    /* for the caller to print (single-id fallback) */
  /* Root: the pool (the ranges of uids and gids its blocks are cut from),
   * its blocks POOL_FIRST..POOL_BLOCKS-1 to lease, and the block leased, or
   * -1 (then UIDS and GIDS map the whole configured range, or the first
   * default block). */
  struct ohbox_idmap pool_uids;
  struct ohbox_idmap pool_gids;
  uint32_t pool_first;
  uint32_t pool_blocks;
  int64_t lease;
};

/* Plans the maps for the calling user: SUBUID/SUBGID are the files' paths
 * (NULL: /etc/subuid, /etc/subgid). */
int ohbox_userns_plan (const char *subuid, const char *subgid, struct ohbox_userns_plan *plan, ohbox_error_t *err);
void ohbox_userns_plan_release (struct ohbox_userns_plan *plan);
/* Parses subuid/subgid TEXT for user NAME or uid ID into MAP (inside ids
 * from FIRST_INSIDE on). Returns the number of ranges found. */
int ohbox_subid_parse (const char *text, const char *name, uint32_t id, uint32_t first_inside, struct ohbox_idmap *map);
/* The host id of ID inside, or (uint32_t) -1 when unmapped. */
uint32_t ohbox_idmap_to_host (const struct ohbox_idmap *map, uint32_t id);
/* Root: leases a free block of the pool for the sandbox whose state
 * directory is OWNER and maps PLAN to it (nothing when the pool is one
 * block: then PLAN maps that, shared). OHBOX_ERR_SANDBOX when every block is
 * leased. */
int ohbox_userns_lease (struct ohbox_userns_plan *plan, const char *owner, ohbox_error_t *err);
/* Gives back the leases OWNER holds (none: fine). */
int ohbox_userns_release (const char *owner, ohbox_error_t *err);
/* Calls FN with each lease's path and the state directory it names. */
int ohbox_userns_leases (void (*fn) (const char *lease, const char *owner, void *data), void *data, ohbox_error_t *err);
/* Removes the lease at LEASE (a path FN got) if it still names OWNER. */
int ohbox_userns_drop_lease (const char *lease, const char *owner, ohbox_error_t *err);
/* Writes the maps of process PID (its user namespace). */
int ohbox_userns_write_maps (pid_t pid, const struct ohbox_userns_plan *plan, ohbox_error_t *err);

/* ---- mounts (mounts.c) ---- */

struct ohbox_mount_spec
{
  char *source; /* host path; NULL for tmpfs */
  char *target; /* absolute path in the sandbox */
  bool read_only;
  bool idmap; /* ids mapped through the sandbox's user namespace (:idmap) */
  bool tmpfs;
  /* A tmpfs's own options ("mode=755,size=64k"; NULL: mode=1777) and the
   * MS_* flags it adds to nosuid,nodev (noexec, the atime ones); an OCI
   * bundle's. */
  char *tmpfs_data;
  unsigned long tmpfs_flags;
  /* A device node given with --device, --gpus or CDI: the only binds
   * through which device nodes can be opened (every other bind is nodev). */
  bool device;
  /* Root's sandboxes with a user namespace: the device is a node made
   * afresh (RDEV, MODE) in a detached tmpfs of the sandbox's own, owned by
   * HOST_UID:HOST_GID (the sandbox's ids the node belongs to, as the host
   * sees them), instead of a bind of the host's node, which the sandbox's
   * root would see as nobody's. */
  bool mknod;
  dev_t rdev;
  mode_t mode; /* S_IFCHR or S_IFBLK and the permission bits */
  uid_t host_uid;
  gid_t host_gid;
  int fd;         /* the source as a detached tree the parent cloned, or -1 */
  bool single;    /* the source mount alone, without the mounts under it (OCI `bind`, not `rbind`) */
  uint64_t attrs; /* MOUNT_ATTR_NOSUID / NOEXEC for the whole bind (an OCI bundle's options) */
};

/* In the parent, before clone: clones each bind source as a detached tree
 * (read-only when asked; nodev unless it is a device). The child may lack the right to even look the
 * source up (its root is an unprivileged host uid), and the path is
 * resolved once, by the caller's credentials. */
int ohbox_mounts_prepare_binds (struct ohbox_mount_spec *mounts, size_t n, ohbox_error_t *err);
/* In the parent, once the child's user namespace USERNS_FD exists and
 * before the child attaches them: idmaps the :idmap binds through it. */
int ohbox_mounts_idmap_binds (const struct ohbox_mount_spec *mounts, size_t n, int userns_fd, ohbox_error_t *err);

struct ohbox_linux_spec;
/* In the child, in its mount namespace, with ROOTFD the attached rootfs:
 * /proc, /dev, /sys, the user's mounts, masked and read-only paths. On
 * failure fills ERR (the child sends it to the parent). */
int ohbox_mounts_setup (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err);
/* /sys/fs/cgroup: the sandbox's own cgroups, read-only (see mounts.c).
 * Called after unshare(CLONE_NEWCGROUP), so that a cgroup2 mount shows the
 * sandbox's cgroup as its root. Nothing when SPEC has no cgroup. */
int ohbox_mounts_cgroup (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err);
/* pivot_root into ROOTFD (the cwd afterwards is "/"), then --read-only. */
int ohbox_mounts_pivot (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err);

/* ---- the sandbox process (linux.c, init.c) ---- */

struct ohbox_linux_spec
{
  const char *id;
  char **argv; /* NULL-terminated, argv[0] resolved through PATH of ENV */
  char **env;  /* NULL-terminated */
  const char *cwd;
  const char *user; /* "uid[:gid]", "name[:group]" or NULL (root) */
  const char *hostname;
  int stdio[3];     /* fds the command gets as 0, 1, 2 */
  bool tty;         /* stdio[0] is a terminal slave: make it the controlling tty */
  int preserve_fds; /* the caller's fds 3 .. 3+N-1 (open, not CLOEXEC) stay open in the command */
  int listen_fd;    /* > 2: a listening socket the command gets as fd 3 + PRESERVE_FDS */
  bool no_pivot;    /* the rootfs moved onto / and chrooted into (runc's --no-pivot), not pivot_root */

  bool userns; /* new user namespace (false: --userns=host) */
  const struct ohbox_userns_plan *userns_plan;
  bool rootless;     /* the caller is not root: mount the overlay inside */
  bool netns;        /* new network namespace (false: --network host) */
  bool join_netns;   /* join JOIN_NETNS_FD's network namespace (--network container:) */
  int join_netns_fd; /* a netns fd or a pidfd (setns(2) takes both) */
  /* Called in the parent once the init exists, before its command runs
   * (network setup in its namespace), with fds of the init's user and
   * network namespaces (which the init passes: an unprivileged parent
   * cannot open them); may be NULL. */
  int (*after_clone) (pid_t pid, int userns_fd, int netns_fd, void *data, ohbox_error_t *err);
  /* The same, called first, right after the clone (before the id maps are
   * written and the rootfs mounted): for what can start meanwhile; may be
   * NULL. */
  int (*right_after_clone) (int userns_fd, int netns_fd, void *data, ohbox_error_t *err);
  void *after_clone_data;
  /* Called in the parent once the sandbox is set up (its mounts made, its
   * root pivoted, its command's process waiting to execve) and its network
   * attached, before the command runs; may be NULL (then there is no such
   * wait). */
  int (*before_start) (pid_t pid, void *data, ohbox_error_t *err);
  void *before_start_data;

  const struct ohbox_snapshot *snap;
  /* An OCI bundle's root filesystem, a host directory used as it is
   * (bundle.c; root only): a recursive bind of it instead of SNAP. */
  const char *rootfs_dir;
  bool read_only;
  const struct ohbox_mount_spec *mounts;
  size_t n_mounts;
  int rootdir_fd; /* O_PATH fd of the directory the rootfs is attached on */

  uint64_t caps;
  uint64_t caps_added;
  /* The five sets as given (an OCI bundle's process.capabilities); NULL:
   * from CAPS and CAPS_ADDED by the user (ohbox_caps_sets_for_user). */
  const struct ohbox_caps_sets *caps_sets;
  bool no_new_privs;
  const struct ohbox_seccomp_filter *seccomp; /* NULL: unconfined */

  const struct ohbox_cgroup *cgroup; /* NULL: none */
  bool cgroupns;                     /* a cgroup namespace even without CGROUP (an OCI bundle's) */
  /* Paths masked and made read-only besides ohbox's own (NULL-terminated
   * or NULL): an OCI bundle's linux.maskedPaths and readonlyPaths. */
  char **masked_paths;
  char **readonly_paths;
  /* Namespaced sysctls (an OCI bundle's linux.sysctl, checked by bundle.c):
   * names as "net.ipv4.ping_group_range", set in the sandbox's namespaces. */
  char **sysctl_keys;
  char **sysctl_values;
  size_t n_sysctl;

  /* Devices (devices/devices.h): groups the command's user joins besides
   * its own, and library folders the sandbox's linker cache is rebuilt with
   * (its own ldconfig, run as the sandbox's root with the sandbox's
   * capabilities and seccomp filter, before the command). */
  const uint32_t *additional_gids;
  size_t n_additional_gids;
  /* The groups are ADDITIONAL_GIDS alone, not those the image's /etc/group
   * lists the user in (an OCI process.user, as runc). */
  bool exact_groups;
  /* The init outlives its parent once set up (an OCI runtime's `create`:
   * the engine's subreaper, conmon or a shim, becomes its parent and reaps
   * it); else it is killed when its parent dies. */
  bool outlive_parent;
  char **ldconfig_dirs; /* NULL-terminated or NULL */
};

struct ohbox_linux_proc
{
  pid_t pid;          /* the sandbox's init, as the host sees it */
  int pidfd;          /* O_CLOEXEC */
  int exit_code_hint; /* 126/127 when the command could not be executed, else 0 */
};

/* Exit codes of the documented contract (ohbox-run(1)). */
#define OHBOX_EXIT_RUNTIME 125
#define OHBOX_EXIT_NOEXEC 126
#define OHBOX_EXIT_NOTFOUND 127

/* Starts the sandbox: clones the init into new namespaces, maps ids,
 * mounts the rootfs, and returns once the command was executed (or failed
 * to be: then ERR says why and its kind is OHBOX_ERR_NOT_FOUND (127) or
 * OHBOX_ERR_GENERIC with *RET_EXEC_FAILED set (126), and the init is
 * reaped). The caller is the sandbox's parent: it reaps it. */
int ohbox_linux_start (const struct ohbox_linux_spec *spec, struct ohbox_linux_proc *ret, ohbox_error_t *err);

/* init.c: runs as PID 1 after the rootfs is ready: forks the command
 * (EXEC_FN with ARG, which never returns), forwards signals to it, reaps
 * every process, and exits with the command's status (128+N for a signal).
 * WIPE_ARGS: ohbox_hide_host_args failed, wipe the arguments and the
 * environment in PID 1's memory once the command is forked. */
__attribute__ ((noreturn)) void ohbox_init_run (void (*exec_fn) (void *arg), void *arg, int sync_fd, bool wipe_args);

/* init.c: makes the process's /proc/PID/cmdline show TITLE alone and its
 * /proc/PID/environ nothing (a clone or fork of ohbox inside a sandbox
 * would show the host's command line, paths and variables), without
 * touching its memory; names the process TITLE. False where the kernel
 * does not allow it (no CONFIG_CHECKPOINT_RESTORE). */
bool ohbox_hide_host_args (const char *title);

/* init.c: finds USER in the rootfs (ROOTFD, resolved in-root) and fills
 * uid, gid, home and the supplementary groups (xmalloc'd). */
struct ohbox_user_ids
{
  uid_t uid;
  gid_t gid;
  gid_t *groups;
  size_t n_groups;
  char *home;
};
int ohbox_user_lookup (int rootfd, const char *user, struct ohbox_user_ids *ret, ohbox_error_t *err);
void ohbox_user_ids_release (struct ohbox_user_ids *ids);
/* Adds the groups devices bring (CDI additionalGids) besides the user's
 * own, each once: the init's command and exec's processes alike. */
void ohbox_user_ids_add_groups (struct ohbox_user_ids *ids, const uint32_t *gids, size_t n);

#endif
