/* oci/runtime_spec.h: the OCI runtime specification 1.1 (config.json of a
 * bundle, the process of `exec --process`, the resources of `update`) as
 * typed structs, with a strict parser and the default config of `spec`.
 *
 * Strict: every key of the Linux config of runtime-spec 1.1 is known; a key
 * the spec does not define, a value of the wrong type or out of its range,
 * and a field ohbox cannot honour (Solaris, Windows, VM and z/OS sections,
 * Intel RDT, RDMA limits, seccomp notification) is an OHBOX_ERR_USAGE or
 * OHBOX_ERR_UNSUPPORTED error that names the field as a path from the
 * document's root ("linux.resources.memory.limit", "mounts[3].options[1]"),
 * so that nothing that would weaken the container's isolation is dropped
 * without a word. What the spec allows runtimes to skip and that only
 * concerns other platforms or annotations is kept as it is.
 *
 * Mount options are parsed here too (the table runc and crun share): a
 * bundle's mount is described by flags for mount(2), mount attributes for
 * mount_setattr(2), a propagation and the filesystem's own data string.
 *
 * Capability names are kept as strings: which ones the kernel knows is the
 * runtime's business (sandbox/bundle.c). Seccomp is validated here (keys,
 * actions, operators, architectures, flags) and kept as JSON for
 * security/seccomp.c, whose profile format is a superset of the OCI one. */
#ifndef OHBOX_OCI_RUNTIME_SPEC_H
#define OHBOX_OCI_RUNTIME_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* The version `spec` writes and `state` reports; configs of 1.0.0 and later
 * 1.x releases are accepted (1.x only adds optional fields). */
#define OCI_RUNTIME_SPEC_VERSION "1.1.0"
#define OCI_RUNTIME_SPEC_VERSION_MIN "1.0.0"

/* Bounds on attacker-sized input (a config.json is a few KiB; Docker's and
 * podman's with the default seccomp profile about 30 KiB). */
#define OCI_RUNTIME_MAX_CONFIG (8 * 1024 * 1024)
#define OCI_RUNTIME_MAX_LIST 65536 /* entries of any one array */
#define OCI_RUNTIME_MAX_IDMAPS 340 /* lines of a uid_map (the kernel's limit) */

struct oci_idmap
{
  uint32_t container_id;
  uint32_t host_id;
  uint32_t size;
};

struct oci_idmaps
{
  struct oci_idmap *v;
  size_t n;
};

/* A parsed list of mount options. */
struct oci_mount_options
{
  unsigned long flags;   /* MS_* for mount(2): ro, nosuid, nodev, noexec, sync, ... */
  unsigned long cleared; /* MS_* that an option turned off again (rw, suid, ...) */
  /* mount_setattr(2) attributes for every mount below a bind (rro, rnosuid, ...). */
  uint64_t rec_attr_set;
  uint64_t rec_attr_clr;
  unsigned long propagation; /* MS_SHARED / MS_SLAVE / MS_PRIVATE / MS_UNBINDABLE (| MS_REC), or 0 */
  bool bind;                 /* bind or rbind */
  bool recursive;            /* rbind */
  bool tmpcopyup;            /* tmpfs: copy the image's content of the target into it */
  bool idmap;                /* idmap/ridmap: ids mapped (by the mount's maps, else the container's) */
  bool remount;
  char *data; /* the options that are the filesystem's own ("mode=755,size=64k"), or NULL */
};

struct oci_mount
{
  char *destination;
  char *source;   /* NULL when absent */
  char *type;     /* NULL when absent */
  char **options; /* as given, NULL-terminated */
  struct oci_mount_options opts;
  struct oci_idmaps uid_mappings;
  struct oci_idmaps gid_mappings;
};

enum oci_hook_kind
{
  OCI_HOOK_PRESTART = 0,
  OCI_HOOK_CREATE_RUNTIME,
  OCI_HOOK_CREATE_CONTAINER,
  OCI_HOOK_START_CONTAINER,
  OCI_HOOK_POSTSTART,
  OCI_HOOK_POSTSTOP,
  OCI_HOOK_KINDS,
};
/* "prestart", "createRuntime", ... */
const char *oci_hook_kind_name (enum oci_hook_kind k);

struct oci_hook
{
  char *path;  /* absolute */
  char **args; /* NULL-terminated, may be NULL (then argv is just PATH) */
  char **env;  /* NULL-terminated, may be NULL */
  int timeout; /* seconds, > 0; 0: none */
};

struct oci_hooks
{
  struct oci_hook *v[OCI_HOOK_KINDS];
  size_t n[OCI_HOOK_KINDS];
};

struct oci_rlimit
{
  int resource; /* RLIMIT_* */
  char *name;   /* "RLIMIT_NOFILE" */
  uint64_t soft;
  uint64_t hard;
};

/* The five sets as names; a NULL set was absent (empty), as the spec says. */
struct oci_capabilities
{
  char **bounding, **effective, **inheritable, **permitted, **ambient;
};

struct oci_user
{
  uint32_t uid;
  uint32_t gid;
  bool has_umask;
  uint32_t umask;
  uint32_t *additional_gids;
  size_t n_additional_gids;
};

struct oci_scheduler
{
  bool present;
  int policy; /* SCHED_* */
  int nice;
  int priority;
  uint64_t flags; /* SCHED_FLAG_* */
  uint64_t runtime, deadline, period;
};

struct oci_io_priority
{
  bool present;
  int ioclass; /* IOPRIO_CLASS_RT = 1, BE = 2, IDLE = 3 */
  int priority;
};

struct oci_process
{
  bool terminal;
  bool has_console_size;
  unsigned console_height, console_width;
  char *cwd;   /* absolute */
  char **env;  /* NULL-terminated (may be empty) */
  char **args; /* NULL-terminated, at least one */
  struct oci_rlimit *rlimits;
  size_t n_rlimits;
  char *apparmor_profile;
  bool has_capabilities;
  struct oci_capabilities caps;
  bool no_new_privileges;
  bool has_oom_score_adj;
  int oom_score_adj;
  char *selinux_label;
  struct oci_scheduler scheduler;
  struct oci_io_priority io_priority;
  struct oci_user user;
};

struct oci_namespace
{
  int type;   /* CLONE_NEW* */
  char *path; /* join this one; NULL: a new one */
};

struct oci_device
{
  char type; /* 'c', 'b', 'u' (unbuffered char), 'p' (fifo) */
  char *path;
  int64_t major, minor;
  bool has_file_mode;
  uint32_t file_mode;
  bool has_uid, has_gid;
  uint32_t uid, gid;
};

struct oci_device_rule
{
  bool allow;
  char type;      /* 'a', 'c' or 'b' */
  int64_t major;  /* -1: any */
  int64_t minor;  /* -1: any */
  char access[4]; /* subset of "rwm", "" = all of them */
};

struct oci_memory
{
  bool has_limit, has_reservation, has_swap, has_kernel, has_kernel_tcp, has_swappiness;
  int64_t limit, reservation, swap, kernel, kernel_tcp;
  uint64_t swappiness;
  bool has_disable_oom_killer, disable_oom_killer;
  bool has_use_hierarchy, use_hierarchy;
  bool check_before_update;
};

struct oci_cpu
{
  bool has_shares, has_quota, has_burst, has_period, has_rt_runtime, has_rt_period, has_idle;
  uint64_t shares, burst, period, rt_period;
  int64_t quota, rt_runtime, idle;
  char *cpus, *mems;
};

struct oci_blkio_device
{
  int64_t major, minor;
  bool has_weight, has_leaf_weight;
  uint16_t weight, leaf_weight;
  uint64_t rate; /* throttle lists */
};

struct oci_blkio_list
{
  struct oci_blkio_device *v;
  size_t n;
};

struct oci_blkio
{
  bool has_weight, has_leaf_weight;
  uint16_t weight, leaf_weight;
  struct oci_blkio_list weight_device, throttle_read_bps, throttle_write_bps, throttle_read_iops, throttle_write_iops;
};

struct oci_hugepage_limit
{
  char *page_size; /* "2MB", "1GB" */
  uint64_t limit;
};

struct oci_net_priority
{
  char *name;
  uint32_t priority;
};

/* A string map kept in order (annotations, sysctl, unified). */
struct oci_map
{
  char **keys;
  char **values;
  size_t n;
};
const char *oci_map_get (const struct oci_map *m, const char *key);

struct oci_resources
{
  struct oci_device_rule *devices;
  size_t n_devices;
  bool has_memory, has_cpu, has_pids, has_blkio, has_network;
  struct oci_memory memory;
  struct oci_cpu cpu;
  int64_t pids_limit; /* <= 0: unlimited */
  struct oci_blkio blkio;
  struct oci_hugepage_limit *hugepages;
  size_t n_hugepages;
  bool has_class_id;
  uint32_t class_id;
  struct oci_net_priority *net_priorities;
  size_t n_net_priorities;
  struct oci_map unified;
};

struct oci_time_offset
{
  bool present;
  int64_t secs;
  uint32_t nanosecs;
};

struct oci_linux
{
  struct oci_namespace *namespaces;
  size_t n_namespaces;
  struct oci_idmaps uid_mappings, gid_mappings;
  struct oci_time_offset monotonic, boottime;
  struct oci_device *devices;
  size_t n_devices;
  char *cgroups_path; /* NULL: the runtime's default */
  bool has_resources;
  struct oci_resources resources;
  struct oci_map sysctl;
  json_t *seccomp;                  /* validated; NULL: none */
  unsigned long rootfs_propagation; /* MS_* | MS_REC, 0: the default */
  char **masked_paths;              /* NULL-terminated, may be NULL */
  char **readonly_paths;            /* NULL-terminated, may be NULL */
  char *mount_label;
  bool has_personality;
  unsigned long personality; /* PER_LINUX or PER_LINUX32 */
};

struct oci_runtime_spec
{
  char *oci_version;
  char *root_path; /* as written (relative to the bundle, or absolute) */
  bool root_readonly;
  struct oci_process *process; /* NULL: absent (a config for `create` needs it) */
  char *hostname, *domainname;
  struct oci_mount *mounts;
  size_t n_mounts;
  struct oci_hooks hooks;
  struct oci_map annotations;
  struct oci_linux *linux_config; /* "linux" (a predefined macro in GNU C); NULL: absent */
};

/* Parses config.json TEXT. Errors name the field ("config.json: ...").
 * A config without `process` is valid (the spec lets `create` refuse it). */
int oci_runtime_spec_parse (const char *text, size_t len, struct oci_runtime_spec **ret, ohbox_error_t *err);
void oci_runtime_spec_free (struct oci_runtime_spec *s);

/* A process object alone (`exec --process FILE`); WHAT names it in errors. */
int oci_runtime_process_parse (const char *text, size_t len, const char *what, struct oci_process **ret,
                               ohbox_error_t *err);
/* From a parsed JSON object (the caller builds one from flags). */
int oci_runtime_process_from_json (json_t *j, const char *what, struct oci_process **ret, ohbox_error_t *err);
void oci_process_free (struct oci_process *p);

/* A linux.resources object alone (`update --resources`). */
int oci_runtime_resources_parse (const char *text, size_t len, const char *what, struct oci_resources *ret,
                                 ohbox_error_t *err);
int oci_runtime_resources_from_json (json_t *j, const char *what, struct oci_resources *ret, ohbox_error_t *err);
void oci_resources_clear (struct oci_resources *r);

/* Parses one list of mount options (OPTIONS NULL-terminated) for a mount
 * of TYPE (NULL: none given); WHERE names the list in errors. */
int oci_mount_options_parse (char **options, const char *type, const char *where, struct oci_mount_options *ret,
                             ohbox_error_t *err);
void oci_mount_options_clear (struct oci_mount_options *o);
/* The option names oci_mount_options_parse knows (for `features`),
 * NULL-terminated. */
extern const char *const oci_mount_option_names[];
/* "RLIMIT_NOFILE" -> RLIMIT_NOFILE, -1 when unknown. */
int oci_rlimit_lookup (const char *name);
/* The names the parser accepts for these, NULL-terminated (`features`). */
extern const char *const oci_namespace_names[];
extern const char *const oci_seccomp_action_names[];
extern const char *const oci_seccomp_operator_names[];
extern const char *const oci_seccomp_arch_names[];
extern const char *const oci_seccomp_flag_names[];
/* CLONE_NEW* -> "pid", "network", ... */
const char *oci_namespace_name (int type);

/* The config.json `spec` writes: a busybox-style `sh` with a terminal, the
 * usual mounts, masked and read-only paths, and namespaces; ROOTLESS: with
 * a user namespace mapping the caller's uid and gid to root, no network
 * namespace of its own and no cgroup mount, as runc's --rootless. */
json_t *oci_runtime_spec_default (bool rootless, uid_t uid, gid_t gid);
/* A JSON array of the strings of V (NULL-terminated). */
json_t *oci_json_strings (const char *const *v);

#endif
