/* bundle.c: an OCI bundle as one more way to describe a sandbox: its
 * config.json becomes a struct ohbox_linux_spec for ohbox_linux_start, the
 * machinery `ohbox run` uses (namespaces, pivot_root, /proc /dev /sys,
 * masked paths, capabilities, seccomp, the init).
 *
 * What ohbox makes itself is taken as it is: the mounts of /proc, /dev,
 * /dev/pts, /dev/shm, /dev/mqueue, /sys and /sys/fs/cgroup that every
 * config lists (ohbox mounts them as strictly as runc's defaults or more),
 * and its own masked and read-only paths, to which the config's are added.
 * Everything else the config asks for and ohbox does not do yet is an
 * OHBOX_ERR_UNSUPPORTED error naming the field. */
#include "config.h"
#include "sandbox/bundle.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int
unsupported (ohbox_error_t *err, const char *field, const char *what)
{
  return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "config.json: %s: %s is not supported by ohbox-runc yet", field,
                      what);
}

/* The mounts ohbox makes in every sandbox (mounts.c), by destination and type. */
static bool
made_by_ohbox (const struct oci_mount *m)
{
  static const char *const own[][2] = {
    { "/proc", "proc" },         { "/dev", "tmpfs" }, { "/dev/pts", "devpts" },       { "/dev/shm", "tmpfs" },
    { "/dev/mqueue", "mqueue" }, { "/sys", "sysfs" }, { "/sys/fs/cgroup", "cgroup" },
  };
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (strcmp (m->destination, own[i][0]) == 0 && m->type && strcmp (m->type, own[i][1]) == 0)
      return true;
  return false;
}

static int
bind_mount (const struct ohbox_bundle *b, const struct oci_mount *m, size_t i, struct ohbox_mount_spec *out,
            ohbox_error_t *err)
{
  char field[64];
  snprintf (field, sizeof field, "mounts[%zu].options", i);
  const struct oci_mount_options *o = &m->opts;
  unsigned long known = MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (o->flags & ~known)
    return unsupported (err, field, "an option other than rbind, ro/rw, nosuid, nodev, noexec and private");
  unsigned long prop = o->propagation & ~(unsigned long) MS_REC;
  if (prop != 0 && prop != MS_PRIVATE)
    return unsupported (err, field, "a propagation other than private/rprivate");
  if (o->idmap || o->tmpcopyup || o->remount || o->data || o->rec_attr_set || o->rec_attr_clr)
    return unsupported (err, field, "idmap, tmpcopyup, remount, recursive attributes or filesystem data");
  if (m->source == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: mounts[%zu].source: missing for a bind mount", i);
  out->source = m->source[0] == '/' ? xstrdup (m->source) : xasprintf ("%s/%s", b->dir, m->source);
  out->target = xstrdup (m->destination);
  out->read_only = (o->flags & MS_RDONLY) != 0;
  out->single = !o->recursive;
  out->attrs = ((o->flags & MS_NOSUID) ? MOUNT_ATTR_NOSUID : 0) | ((o->flags & MS_NOEXEC) ? MOUNT_ATTR_NOEXEC : 0);
  out->fd = -1;
  return 0;
}

/* A tmpfs option that is the filesystem's own and only sizes it or sets
 * its root's mode and owner: "mode=1777", "size=65536k", "nr_inodes=1k". */
static bool
tmpfs_data_allowed (const char *data)
{
  static const char *const keys[] = { "mode=", "size=", "nr_inodes=", "nr_blocks=", "uid=", "gid=" };
  cleanup_free char *copy = xstrdup (data);
  char *save = NULL;
  for (char *opt = strtok_r (copy, ",", &save); opt; opt = strtok_r (NULL, ",", &save))
    {
      bool known = false;
      for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !known; k++)
        known = strncmp (opt, keys[k], strlen (keys[k])) == 0 && opt[strlen (keys[k])] != '\0'
                && strspn (opt + strlen (keys[k]), "0123456789kmgKMG%") == strlen (opt + strlen (keys[k]));
      if (!known)
        return false;
    }
  return true;
}

static int
tmpfs_mount (const struct oci_mount *m, size_t i, struct ohbox_mount_spec *out, ohbox_error_t *err)
{
  char field[64];
  snprintf (field, sizeof field, "mounts[%zu].options", i);
  const struct oci_mount_options *o = &m->opts;
  /* ohbox's tmpfs is always nosuid,nodev (a config's "suid" or "dev" is
   * not honoured: stricter); these may be added. */
  const unsigned long allowed = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_STRICTATIME | MS_NOATIME
                                | MS_NODIRATIME | MS_RELATIME;
  if (o->flags & ~allowed || o->tmpcopyup || o->bind || o->idmap || o->remount || o->rec_attr_set || o->rec_attr_clr
      || (o->propagation & ~(unsigned long) (MS_REC | MS_PRIVATE)))
    return unsupported (err, field,
                        "a tmpfs option other than ro/rw, nosuid, nodev, noexec, the atime ones and private");
  if (o->data && !tmpfs_data_allowed (o->data))
    return unsupported (err, field, "a tmpfs option other than mode, size, nr_inodes, nr_blocks, uid and gid");
  out->target = xstrdup (m->destination);
  out->tmpfs = true;
  out->read_only = (o->flags & MS_RDONLY) != 0;
  out->tmpfs_flags = o->flags & ~(unsigned long) (MS_RDONLY | MS_NOSUID | MS_NODEV);
  out->tmpfs_data = o->data ? xstrdup (o->data) : NULL;
  out->fd = -1;
  return 0;
}

static int
load_mounts (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_runtime_spec *c = b->config;
  b->mounts = xcalloc (c->n_mounts + 1, sizeof *b->mounts);
  for (size_t i = 0; i < c->n_mounts; i++)
    {
      const struct oci_mount *m = &c->mounts[i];
      if (made_by_ohbox (m))
        continue;
      struct ohbox_mount_spec *out = &b->mounts[b->n_mounts];
      int r;
      if (m->opts.bind)
        r = bind_mount (b, m, i, out, err);
      else if (m->type && strcmp (m->type, "tmpfs") == 0)
        r = tmpfs_mount (m, i, out, err);
      else
        {
          char field[64];
          snprintf (field, sizeof field, "mounts[%zu]", i);
          r = unsupported (err, field, "a mount other than a bind, a tmpfs and the standard /proc, /dev, /sys ones");
        }
      if (r < 0)
        return -1;
      b->n_mounts++;
    }
  return 0;
}

static int
load_capability_set (char **names, const char *set, uint64_t *ret, ohbox_error_t *err)
{
  *ret = 0;
  for (size_t i = 0; names && names[i]; i++)
    {
      int cap = ohbox_cap_lookup (names[i]);
      if (cap < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "config.json: process.capabilities.%s[%zu]: unknown capability "
                            "`%s`",
                            set, i, names[i]);
      *ret |= (uint64_t) 1 << cap;
    }
  return 0;
}

int
ohbox_bundle_process_check (const struct oci_process *p, struct ohbox_caps_sets *caps, ohbox_error_t *err)
{
  if (p->apparmor_profile || p->selinux_label)
    return unsupported (err, p->apparmor_profile ? "process.apparmorProfile" : "process.selinuxLabel", "an LSM label");
  if (p->scheduler.present || p->io_priority.present)
    return unsupported (err, p->scheduler.present ? "process.scheduler" : "process.ioPriority", "scheduling");
  const struct oci_capabilities *c = &p->caps;
  if (load_capability_set (c->bounding, "bounding", &caps->bounding, err) < 0
      || load_capability_set (c->effective, "effective", &caps->effective, err) < 0
      || load_capability_set (c->permitted, "permitted", &caps->permitted, err) < 0
      || load_capability_set (c->inheritable, "inheritable", &caps->inheritable, err) < 0
      || load_capability_set (c->ambient, "ambient", &caps->ambient, err) < 0)
    return -1;
  return 0;
}

static int
load_process (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_process *p = b->config->process;
  if (p == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: process: missing (a container needs one)");
  if (ohbox_bundle_process_check (p, &b->caps, err) < 0)
    return -1;
  b->user = xasprintf ("%u:%u", p->user.uid, p->user.gid);
  struct ohbox_linux_spec *s = &b->spec;
  s->argv = p->args;
  s->env = p->env;
  s->cwd = p->cwd;
  s->user = b->user;
  s->caps_sets = &b->caps;
  s->caps = b->caps.bounding;
  s->no_new_privs = p->no_new_privileges;
  s->tty = p->terminal; /* the caller gives a terminal's slave as stdio */
  s->additional_gids = p->user.additional_gids;
  s->n_additional_gids = p->user.n_additional_gids;
  s->exact_groups = true;
  return 0;
}

static int
load_idmap (const struct oci_idmaps *in, const char *field, struct ohbox_idmap *out, ohbox_error_t *err)
{
  if (in->n == 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: %s: missing for a user namespace", field);
  if (in->n > OHBOX_IDMAP_MAX)
    return unsupported (err, field, "more than 8 ranges");
  for (size_t i = 0; i < in->n; i++)
    out->r[i] = (struct ohbox_idmap_range){ .inside = in->v[i].container_id,
                                            .outside = in->v[i].host_id,
                                            .count = in->v[i].size };
  out->n = in->n;
  return 0;
}

static int
load_namespaces (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_linux *l = b->config->linux_config;
  struct ohbox_linux_spec *s = &b->spec;
  int have = 0;
  for (size_t i = 0; i < l->n_namespaces; i++)
    {
      const struct oci_namespace *ns = &l->namespaces[i];
      char field[64];
      snprintf (field, sizeof field, "linux.namespaces[%zu].path", i);
      if (ns->path && ns->type == CLONE_NEWNET && b->spec.join_netns_fd < 0)
        {
          /* The engine's network namespace (podman's, a CNI plugin's):
           * joined as `--network container:` joins one (linux.c). */
          b->spec.join_netns_fd = open (ns->path, O_RDONLY | O_CLOEXEC);
          if (b->spec.join_netns_fd < 0)
            return ohbox_error (err, OHBOX_ERR_NOT_FOUND, errno, "config.json: %s: `%s`", field, ns->path);
          b->spec.join_netns = true;
        }
      else if (ns->path)
        return unsupported (err, field, "joining a namespace other than the network one by path");
      if (ns->type == CLONE_NEWTIME)
        return unsupported (err, "linux.namespaces", "a time namespace");
      have |= ns->type;
    }
  static const int needed[] = { CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS };
  for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
    if (!(have & needed[i]))
      {
        char what[96];
        snprintf (what, sizeof what, "sharing the host's %s namespace", oci_namespace_name (needed[i]));
        return unsupported (err, "linux.namespaces", what);
      }
  s->netns = (have & CLONE_NEWNET) != 0;
  s->cgroupns = (have & CLONE_NEWCGROUP) != 0;
  s->userns = (have & CLONE_NEWUSER) != 0;
  if (!s->userns && (l->uid_mappings.n || l->gid_mappings.n))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: linux.uidMappings: given without a user namespace");
  if (s->userns)
    {
      b->userns_plan.lease = -1;
      if (load_idmap (&l->uid_mappings, "linux.uidMappings", &b->userns_plan.uids, err) < 0
          || load_idmap (&l->gid_mappings, "linux.gidMappings", &b->userns_plan.gids, err) < 0)
        return -1;
      s->userns_plan = &b->userns_plan;
    }
  return 0;
}

/* linux.resources: none is applied yet (no cgroup of its own); device
 * rules are harmless only where no device node can be made. */
static int
check_resources (const struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_resources *r = &b->config->linux_config->resources;
  if (!b->config->linux_config->has_resources)
    return 0;
  const char *field = r->has_memory                      ? "linux.resources.memory"
                      : r->has_cpu                       ? "linux.resources.cpu"
                      : r->has_pids && r->pids_limit > 0 ? "linux.resources.pids" /* <= 0: unlimited */
                      : r->has_blkio                     ? "linux.resources.blockIO"
                      : r->n_hugepages                   ? "linux.resources.hugepageLimits"
                      : r->unified.n                     ? "linux.resources.unified"
                      : r->has_network || r->has_class_id || r->n_net_priorities ? "linux.resources.network"
                                                                                 : NULL;
  if (field)
    return unsupported (err, field, "a resource limit (no cgroup of its own yet)");
  if (r->n_devices && (b->caps.bounding & ((uint64_t) 1 << CAP_MKNOD)))
    return unsupported (err, "linux.resources.devices", "a device cgroup (needed with CAP_MKNOD)");
  return 0;
}

/* linux.sysctl: only names that are the container's own namespaces'
 * (net.* with a network namespace that is not the host's, the IPC ones),
 * and only names that map to a path under /proc/sys/ and nowhere else. */
static int
check_sysctls (struct ohbox_bundle *b, ohbox_error_t *err)
{
  static const char *const ipc[] = { "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
                                     "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced" };
  const struct oci_map *m = &b->config->linux_config->sysctl;
  for (size_t i = 0; i < m->n; i++)
    {
      const char *k = m->keys[i];
      bool ok = strspn (k, "abcdefghijklmnopqrstuvwxyz0123456789_-.") == strlen (k) && strstr (k, "..") == NULL
                && k[0] != '.' && k[strlen (k) - 1] != '.';
      bool namespaced = (strncmp (k, "net.", 4) == 0 && b->spec.netns) || strncmp (k, "fs.mqueue.", 10) == 0;
      for (size_t j = 0; j < sizeof ipc / sizeof ipc[0] && !namespaced; j++)
        namespaced = strcmp (k, ipc[j]) == 0;
      if (!ok || !namespaced)
        {
          char field[300];
          snprintf (field, sizeof field, "linux.sysctl.%.256s", k);
          return unsupported (err, field, "a sysctl that is not the container's namespaces' own");
        }
    }
  b->spec.sysctl_keys = m->keys;
  b->spec.sysctl_values = m->values;
  b->spec.n_sysctl = m->n;
  return 0;
}

static int
load_linux (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_linux *l = b->config->linux_config;
  if (l == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: linux: missing");
  if (load_namespaces (b, err) < 0 || check_resources (b, err) < 0)
    return -1;
  if (l->monotonic.present || l->boottime.present)
    return unsupported (err, "linux.timeOffsets", "a time offset");
  if (l->n_devices)
    return unsupported (err, "linux.devices", "a device node");
  if (check_sysctls (b, err) < 0)
    return -1;
  if (l->mount_label)
    return unsupported (err, "linux.mountLabel", "an SELinux label");
  if (l->has_personality)
    return unsupported (err, "linux.personality", "a personality");
  unsigned long prop = l->rootfs_propagation & ~(unsigned long) MS_REC;
  if (prop != 0 && prop != MS_PRIVATE)
    return unsupported (err, "linux.rootfsPropagation", "a propagation other than private");
  b->spec.masked_paths = l->masked_paths;
  b->spec.readonly_paths = l->readonly_paths;
  if (l->seccomp)
    {
      cleanup_free char *text = json_dumps (l->seccomp, JSON_COMPACT);
      struct ohbox_seccomp_options opts = { .caps = b->caps.bounding };
      if (text == NULL
          || ohbox_seccomp_compile_json (text, strlen (text), "config.json linux.seccomp", &opts, &b->seccomp, err) < 0)
        return text ? -1 : ohbox_error (err, OHBOX_ERR_GENERIC, ENOMEM, "linux.seccomp");
      b->spec.seccomp = b->seccomp;
    }
  return 0;
}

static int
load_root (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_runtime_spec *c = b->config;
  if (c->root_path == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: root.path: missing");
  cleanup_free char *path = c->root_path[0] == '/' ? xstrdup (c->root_path) : xasprintf ("%s/%s", b->dir, c->root_path);
  b->rootfs = realpath (path, NULL);
  struct stat st;
  if (b->rootfs == NULL || stat (b->rootfs, &st) < 0)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, errno, "config.json: root.path: `%s`", path);
  if (!S_ISDIR (st.st_mode))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: root.path: `%s` is not a directory", path);
  b->spec.rootfs_dir = b->rootfs;
  b->spec.read_only = c->root_readonly;
  return 0;
}

static int
check_config (const struct oci_runtime_spec *c, ohbox_error_t *err)
{
  for (int k = 0; k < OCI_HOOK_KINDS; k++)
    if (c->hooks.n[k])
      {
        char field[64];
        snprintf (field, sizeof field, "hooks.%s", oci_hook_kind_name (k));
        return unsupported (err, field, "a hook");
      }
  if (c->domainname)
    return unsupported (err, "domainname", "a domain name");
  return 0;
}

int
ohbox_bundle_load (const char *dir, struct ohbox_bundle **ret, ohbox_error_t *err)
{
  struct ohbox_bundle *b = xcalloc (1, sizeof *b);
  b->spec.join_netns_fd = -1;
  b->dir = realpath (dir, NULL);
  if (b->dir == NULL)
    {
      ohbox_bundle_free (b);
      return ohbox_error (err, OHBOX_ERR_NOT_FOUND, errno, "bundle `%s`", dir);
    }
  cleanup_free char *config = xasprintf ("%s/config.json", b->dir);
  if (ohbox_read_file_at (AT_FDCWD, config, OCI_RUNTIME_MAX_CONFIG, &b->config_text, &b->config_len, err) < 0
      || oci_runtime_spec_parse (b->config_text, b->config_len, &b->config, err) < 0
      || check_config (b->config, err) < 0 || load_root (b, err) < 0 || load_process (b, err) < 0
      || load_linux (b, err) < 0 || load_mounts (b, err) < 0)
    {
      ohbox_bundle_free (b);
      return -1;
    }
  b->spec.hostname = b->config->hostname;
  b->spec.mounts = b->mounts;
  b->spec.n_mounts = b->n_mounts;
  b->spec.rootdir_fd = -1;
  *ret = b;
  return 0;
}

void
ohbox_bundle_free (struct ohbox_bundle *b)
{
  if (b == NULL)
    return;
  for (size_t i = 0; i < b->n_mounts; i++)
    {
      free (b->mounts[i].source);
      free (b->mounts[i].target);
      free (b->mounts[i].tmpfs_data);
      if (b->mounts[i].fd >= 0)
        close (b->mounts[i].fd);
    }
  free (b->mounts);
  if (b->spec.join_netns_fd >= 0)
    close (b->spec.join_netns_fd);
  ohbox_seccomp_filter_free (b->seccomp);
  oci_runtime_spec_free (b->config);
  free (b->config_text);
  free (b->user);
  free (b->rootfs);
  free (b->dir);
  free (b);
}

int
ohbox_bundle_apply_inherited (const struct oci_process *p, ohbox_error_t *err)
{
  for (size_t i = 0; i < p->n_rlimits; i++)
    {
      struct rlimit rl = { .rlim_cur = p->rlimits[i].soft, .rlim_max = p->rlimits[i].hard };
      if (setrlimit (p->rlimits[i].resource, &rl) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "config.json: process.rlimits[%zu]: set %s", i,
                                p->rlimits[i].name);
    }
  if (p->user.has_umask)
    umask (p->user.umask & 0777);
  if (p->has_oom_score_adj)
    {
      char v[16];
      int n = snprintf (v, sizeof v, "%d", p->oom_score_adj);
      cleanup_close int fd = open ("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ohbox_write_all (fd, v, (size_t) n) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "config.json: process.oomScoreAdj: set %d", p->oom_score_adj);
    }
  return 0;
}

int
ohbox_bundle_start (struct ohbox_bundle *b, const char *id, const int stdio[3],
                    int (*before_start) (pid_t pid, void *data, ohbox_error_t *err), void *data,
                    struct ohbox_linux_proc *ret, ohbox_error_t *err)
{
  if (geteuid () != 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "ohbox-runc runs containers as root only (rootless: not yet)");
  struct ohbox_linux_spec *s = &b->spec;
  if (s->tty && !isatty (stdio[0]))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "process.terminal: the container's stdin is not a terminal");
  s->id = id;
  for (int i = 0; i < 3; i++)
    s->stdio[i] = stdio[i];
  s->before_start = before_start;
  s->outlive_parent = true;
  s->before_start_data = data;
  /* The directory the clone's child attaches the rootfs on: the rootfs
   * itself (the child's copy of the mount table has it; the attached
   * bind covers it there and never appears in the host's). */
  cleanup_close int rootdir = open (b->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootdir < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open the rootfs `%s`", b->rootfs);
  s->rootdir_fd = rootdir;
  if (ohbox_bundle_apply_inherited (b->config->process, err) < 0
      || ohbox_mounts_prepare_binds (b->mounts, b->n_mounts, err) < 0)
    return -1;
  int r = ohbox_linux_start (s, ret, err);
  s->rootdir_fd = -1;
  return r;
}
