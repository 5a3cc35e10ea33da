/* devices.h: devices given to a sandbox: what to create or bind in its
 * /dev, what to mount, which environment and hooks they bring, and which
 * accesses the device cgroup allows.  Filled from CDI specs (cdi.c), from
 * `--device HOSTPATH[:CTRPATH][:rwm]` (host_device.c) and from the NVIDIA
 * driver's files (nvidia.c); applied by the sandbox start. */
#ifndef OHBOX_DEVICES_H
#define OHBOX_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sys/types.h>

#include "common/error.h"

/* A device node: bound from the host's node (root and rootless alike: a
 * sandbox never makes nodes of its own), the cgroup allowing ACCESS to
 * TYPE MAJOR:MINOR and nothing else. */
struct ohbox_device_node
{
  char *path;      /* in the sandbox, absolute */
  char *host_path; /* on the host, absolute */
  char type;       /* 'c' or 'b' */
  int64_t major, minor;
  mode_t file_mode;      /* permission bits of the node in the sandbox */
  char access[4];        /* cgroup access: a subset of "rwm" */
  bool has_uid, has_gid; /* the spec gives the owner */
  uint32_t uid, gid;     /* owner of the node in the sandbox: the spec's, else the host node's */
};

/* A bind mount a device needs (libraries, tools, sockets). */
struct ohbox_device_mount
{
  char *host_path;
  char *container_path;
  char *type;     /* NULL: a bind mount */
  char **options; /* NULL-terminated, may be empty */
};

/* The OCI hook stages a device may hook into. */
enum ohbox_hook_stage
{
  OHBOX_HOOK_PRESTART,
  OHBOX_HOOK_CREATE_RUNTIME,
  OHBOX_HOOK_CREATE_CONTAINER,
  OHBOX_HOOK_START_CONTAINER,
  OHBOX_HOOK_POSTSTART,
  OHBOX_HOOK_POSTSTOP,
};

struct ohbox_device_hook
{
  enum ohbox_hook_stage stage;
  char *path;
  char **args; /* NULL-terminated; args[0] is argv[0] */
  char **env;  /* NULL-terminated */
  int timeout; /* seconds; 0: none */
};

/* Everything the requested devices add to a sandbox. */
struct ohbox_device_edits
{
  char **names; /* what was asked for, resolved ("vendor.com/class=name", host paths); NULL-terminated */
  size_t n_names;
  struct ohbox_device_node *nodes;
  size_t n_nodes;
  struct ohbox_device_mount *mounts;
  size_t n_mounts;
  struct ohbox_device_hook *hooks;
  size_t n_hooks;
  char **env; /* "KEY=VALUE", NULL-terminated */
  size_t n_env;
  uint32_t *additional_gids;
  size_t n_additional_gids;
  /* Folders of libraries mounted for the devices: the sandbox's linker
   * cache is rebuilt with them (its own ldconfig, run inside) before the
   * command starts. */
  char **ldconfig_dirs;
  size_t n_ldconfig_dirs;
};

void ohbox_device_edits_free (struct ohbox_device_edits *e);

/* Adds NODE (its strings are taken over).  A second node at the same path
 * is dropped when it is the same device, an error when it is another. */
int ohbox_device_edits_add_node (struct ohbox_device_edits *e, struct ohbox_device_node *node, ohbox_error_t *err);
/* Adds "KEY=VALUE", replacing an earlier value of KEY. */
void ohbox_device_edits_set_env (struct ohbox_device_edits *e, const char *kv);
void ohbox_device_edits_add_name (struct ohbox_device_edits *e, const char *name);
/* E's nodes as a JSON array of {path, host_path, type, major, minor,
 * access} (a sandbox's recorded config, a run plan). */
json_t *ohbox_device_nodes_json (const struct ohbox_device_edits *e);

/* Fills a node's type, numbers and mode from the host node at HOST_PATH
 * where NODE does not give them; an error when it is not a device node or
 * disagrees with what NODE says. */
int ohbox_device_node_from_host (struct ohbox_device_node *node, bool have_type, bool have_numbers, bool have_mode,
                                 ohbox_error_t *err);

/* `--device HOSTPATH[:CTRPATH][:PERMISSIONS]` as Docker and podman read it. */
int ohbox_device_parse_host (const char *arg, struct ohbox_device_edits *e, ohbox_error_t *err);

/* Everything a run asks for: DEVICES (--device values: CDI names or
 * HOSTPATH[:CTRPATH][:rwm], NULL-terminated or NULL), GPUS (--gpus, or
 * NULL), against the CDI specs of CDI_DIRS (NULL: the defaults). */
int ohbox_devices_resolve (const char *const *devices, const char *const *cdi_dirs, const char *gpus,
                           struct ohbox_device_edits *e, ohbox_error_t *err);

/* ---- CDI (cdi.c) ---- */

/* Whether S is a qualified CDI device name: VENDOR/CLASS=NAME. */
bool ohbox_cdi_is_qualified_name (const char *s);

/* The spec folders read when none are given, lowest priority first. */
extern const char *const ohbox_cdi_default_dirs[];

/* Resolves the CDI devices NAMES (N of them; VENDOR/CLASS=NAME or
 * VENDOR/CLASS=all) against the specs in DIRS (NULL-terminated, lowest
 * priority first; NULL: ohbox_cdi_default_dirs) and adds their edits to E. */
int ohbox_cdi_resolve (const char *const *dirs, const char *const *names, size_t n, struct ohbox_device_edits *e,
                       ohbox_error_t *err);

/* The names of the devices of KIND the specs in DIRS define (*NAMES
 * NULL-terminated, or NULL when no spec has that kind); an error when a spec
 * of that kind is malformed. */
int ohbox_cdi_kind_devices (const char *const *dirs, const char *kind, char ***names, ohbox_error_t *err);

/* ---- hooks (hooks.c) ---- */

/* Runs E's hooks of STAGE in order, as the caller, each with STATE (the OCI
 * state JSON) on its stdin; -1 at the first that fails or times out. */
int ohbox_device_hooks_run (const struct ohbox_device_edits *e, enum ohbox_hook_stage stage, const char *state,
                            ohbox_error_t *err);
const char *ohbox_hook_stage_name (enum ohbox_hook_stage stage);

/* ---- GPUs (gpus.c) ---- */

/* `--gpus all|N|device=ID[,ID...]` (Docker's forms; `"device=0,1"` quoted
 * too).  IDs are indices or GPU UUIDs. */
struct ohbox_gpu_request
{
  bool all;
  unsigned count; /* N, when not all and no ids */
  char **ids;     /* NULL-terminated, or NULL */
};

int ohbox_gpu_request_parse (const char *arg, struct ohbox_gpu_request *req, ohbox_error_t *err);
void ohbox_gpu_request_free (struct ohbox_gpu_request *req);

/* Adds the edits of the GPUs REQ asks for: from a CDI spec of kind
 * nvidia.com/gpu in DIRS (as ohbox_cdi_resolve) when there is one, else
 * from what the NVIDIA driver installed on this host. */
int ohbox_gpus_resolve (const char *const *cdi_dirs, const struct ohbox_gpu_request *req, struct ohbox_device_edits *e,
                        ohbox_error_t *err);

#endif
