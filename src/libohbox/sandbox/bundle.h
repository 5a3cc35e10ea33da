/* bundle.h: running an OCI bundle (a directory with config.json and a root
 * filesystem) through the same Linux machinery as `ohbox run` (linux.c),
 * for ohbox-runc.
 *
 * ohbox_bundle_load parses config.json (oci/runtime_spec.c) and turns it
 * into a struct ohbox_linux_spec; whatever of the config ohbox does not
 * honour yet is an OHBOX_ERR_UNSUPPORTED error naming the field, never
 * dropped. ohbox_bundle_start starts it (root only). */
#ifndef OHBOX_BUNDLE_H
#define OHBOX_BUNDLE_H

#include <sys/types.h>

#include "devices/devices.h"
#include "oci/runtime_spec.h"
#include "sandbox/linux.h"
#include "security/capabilities.h"

struct ohbox_bundle
{
  char *dir;    /* absolute */
  char *rootfs; /* absolute, resolved */
  struct oci_runtime_spec *config;
  char *config_text; /* config.json as read (the state keeps a copy for exec) */
  size_t config_len;
  char *user; /* "uid:gid" */
  struct ohbox_caps_sets caps;
  struct ohbox_mount_spec *mounts;
  size_t n_mounts;
  struct ohbox_userns_plan userns_plan;
  struct ohbox_seccomp_filter *seccomp;
  struct ohbox_cgroup_limits limits; /* linux.resources */
  struct ohbox_device_edits hooks;   /* config.json's hooks (hooks alone) */
  /* The device cgroup's allow list: ohbox's /dev nodes and linux.devices. */
  struct ohbox_device_rule *rules;
  size_t n_rules;
  struct ohbox_linux_spec spec;
  /* Set by the caller before ohbox_bundle_start: no host privileges (an
   * unprivileged user, or root of a user namespace such as rootless
   * podman's): linux.devices bound from the host's nodes, not made. */
  bool rootless;
};

/* Loads and checks the bundle at DIR (relative to the cwd or absolute). */
int ohbox_bundle_load (const char *dir, struct ohbox_bundle **ret, ohbox_error_t *err);
void ohbox_bundle_free (struct ohbox_bundle *b);

/* Checks the fields of process P that ohbox-runc does not honour (an error
 * naming the first) and fills CAPS with its five capability sets. */
int ohbox_bundle_process_check (const struct oci_process *p, struct ohbox_caps_sets *caps, ohbox_error_t *err);
/* linux.resources R as ohbox's cgroup limits (an error naming the first
 * field they cannot carry). */
int ohbox_bundle_limits (const struct oci_resources *r, struct ohbox_cgroup_limits *l, ohbox_error_t *err);
/* Where the container ID's cgroup goes: linux.cgroupsPath CGROUPS_PATH
 * (may be NULL: "/ohbox-runc" and ID) split into the parent, as
 * ohbox_cgroup_detect_opts.parent takes it, and the cgroup's name. */
int ohbox_bundle_cgroup_path (const char *cgroups_path, const char *id, char **ret_parent, char **ret_name,
                              ohbox_error_t *err);
/* The hooks of config C into E (hooks alone), for ohbox_device_hooks_run:
 * the caller runs each kind where the runtime spec puts it. */
void ohbox_bundle_hooks (const struct oci_runtime_spec *c, struct ohbox_device_edits *e);
/* P's rlimits, umask and oom_score_adj, set on this process for the
 * container's process (or an exec'd one) to inherit. */
int ohbox_bundle_apply_inherited (const struct oci_process *p, ohbox_error_t *err);

/* Starts the container ID from B with STDIO as its standard streams (with
 * process.terminal: a terminal's slave, made the controlling terminal).
 * BEFORE_START (may be NULL) runs once the container is set up and its
 * process waits to execve (where `create` stops until `start`). Sets this
 * process's rlimits and oom_score_adj to the config's (the container
 * inherits them): call it from a process of the container's own. */
int ohbox_bundle_start (struct ohbox_bundle *b, const char *id, const int stdio[3],
                        int (*before_start) (pid_t pid, void *data, ohbox_error_t *err), void *data,
                        struct ohbox_linux_proc *ret, ohbox_error_t *err);

#endif
