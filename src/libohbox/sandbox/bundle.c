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
#include <sys/sysmacros.h>
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

/* linux.resources.devices, in order, over a device cgroup that denies
 * every device (cgroup_devices.c); as runc does, ohbox's own /dev nodes and
 * linux.devices are allowed after them (load_devices). */
static void
load_device_rules (struct ohbox_bundle *b)
{
  const struct oci_resources *r = &b->config->linux_config->resources;
  for (size_t i = 0; i < r->n_devices; i++)
    {
      const struct oci_device_rule *d = &r->devices[i];
      struct ohbox_device_rule *rule = &b->rules[b->n_rules++];
      *rule = (struct ohbox_device_rule){ .type = d->type, .major = d->major, .minor = d->minor, .deny = !d->allow };
      snprintf (rule->access, sizeof rule->access, "%s", d->access[0] ? d->access : "rwm");
    }
}

/* linux.devices: nodes made afresh (mounts.c, as `ohbox run --device`
 * makes them for root), owned by their ids as the host sees them; the
 * device cgroup allows them besides ohbox's own /dev nodes and what
 * linux.resources.devices allows (B->rules). */
static int
load_devices (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_linux *l = b->config->linux_config;
  size_t n_resource_rules = l->resources.n_devices;
  b->rules = xcalloc (n_resource_rules + ohbox_n_default_device_rules + l->n_devices, sizeof *b->rules);
  load_device_rules (b);
  memcpy (&b->rules[b->n_rules], ohbox_default_device_rules, ohbox_n_default_device_rules * sizeof *b->rules);
  b->n_rules += ohbox_n_default_device_rules;
  for (size_t i = 0; i < l->n_devices; i++)
    {
      const struct oci_device *d = &l->devices[i];
      char field[64];
      snprintf (field, sizeof field, "linux.devices[%zu].type", i);
      if (d->type != 'c' && d->type != 'b')
        return unsupported (err, field, "a device other than a character or block one");
      uint32_t uid = d->has_uid ? d->uid : 0, gid = d->has_gid ? d->gid : 0;
      if (b->spec.userns)
        {
          uint32_t hu = ohbox_idmap_to_host (&b->userns_plan.uids, uid),
                   hg = ohbox_idmap_to_host (&b->userns_plan.gids, gid);
          if (hu == (uint32_t) -1 || hg == (uint32_t) -1)
            return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                                "config.json: linux.devices[%zu]: its uid or gid is not mapped", i);
          uid = hu;
          gid = hg;
        }
      b->mounts[b->n_mounts++] = (struct ohbox_mount_spec){ .source = xasprintf ("config.json linux.devices[%zu]", i),
                                                            .target = xstrdup (d->path),
                                                            .device = true,
                                                            .mknod = true,
                                                            .rdev = makedev ((unsigned) d->major, (unsigned) d->minor),
                                                            .mode = (d->type == 'b' ? S_IFBLK : S_IFCHR)
                                                                    | (d->has_file_mode ? d->file_mode & 07777 : 0666),
                                                            .host_uid = uid,
                                                            .host_gid = gid,
                                                            .fd = -1 };
      b->rules[b->n_rules++] = (struct ohbox_device_rule){
        .type = d->type, .major = d->major, .minor = d->minor, .access = "rwm"
      };
    }
  return 0;
}

static int
load_mounts (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_runtime_spec *c = b->config;
  b->mounts = xcalloc (c->n_mounts + c->linux_config->n_devices + 1, sizeof *b->mounts);
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

/* Whether [A, A + AN) and [B, B + BN) share an id (64 bits: no wrap). */
static bool
ids_overlap (uint32_t a, uint32_t an, uint32_t b, uint32_t bn)
{
  return (uint64_t) a < (uint64_t) b + bn && (uint64_t) b < (uint64_t) a + an;
}

/* Range I of FIELD against those before it (the parser refused empty
 * ones): the kernel refuses a map whose ranges share container or host ids
 * with a bare EINVAL (from newuidmap: "write to uid_map failed: Invalid
 * argument"). */
static int
check_idmap_range (const struct ohbox_idmap *m, size_t i, const char *field, ohbox_error_t *err)
{
  const struct ohbox_idmap_range *r = &m->r[i];
  for (size_t j = 0; j < i; j++)
    {
      const struct ohbox_idmap_range *o = &m->r[j];
      bool inside = ids_overlap (r->inside, r->count, o->inside, o->count);
      if (inside || ids_overlap (r->outside, r->count, o->outside, o->count))
        {
          uint32_t a = inside ? r->inside : r->outside, b = inside ? o->inside : o->outside;
          return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                              "config.json: %s[%zu]: %s ids %u-%u overlap those of %s[%zu] (%u-%u)", field, i,
                              inside ? "container" : "host", a, a + r->count - 1, field, j, b, b + o->count - 1);
        }
    }
  return 0;
}

static int
load_idmap (const struct oci_idmaps *in, const char *field, struct ohbox_idmap *out, ohbox_error_t *err)
{
  if (in->n == 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: %s: missing for a user namespace", field);
  if (in->n > OHBOX_IDMAP_MAX)
    {
      char what[32];
      snprintf (what, sizeof what, "more than %d ranges", OHBOX_IDMAP_MAX);
      return unsupported (err, field, what);
    }
  for (size_t i = 0; i < in->n; i++)
    {
      out->r[i] = (struct ohbox_idmap_range){ .inside = in->v[i].container_id,
                                              .outside = in->v[i].host_id,
                                              .count = in->v[i].size };
      if (check_idmap_range (out, i, field, err) < 0)
        return -1;
    }
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

/* linux.resources' memory: what ohbox's limits carry, the rest refused by name. */
static int
memory_limits (const struct oci_memory *m, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  const char *field = (m->has_reservation && m->reservation > 0)    ? "linux.resources.memory.reservation"
                      : (m->has_kernel && m->kernel > 0)            ? "linux.resources.memory.kernel"
                      : (m->has_kernel_tcp && m->kernel_tcp > 0)    ? "linux.resources.memory.kernelTCP"
                      : m->has_swappiness                           ? "linux.resources.memory.swappiness"
                      : m->disable_oom_killer                       ? "linux.resources.memory.disableOOMKiller"
                      : (m->has_use_hierarchy && !m->use_hierarchy) ? "linux.resources.memory.useHierarchy"
                      : m->check_before_update                      ? "linux.resources.memory.checkBeforeUpdate"
                                                                    : NULL;
  if (field)
    return unsupported (err, field, "this memory setting");
  if (m->has_limit && m->limit > 0)
    l->memory = m->limit;
  /* swap is memory + swap, as Docker's --memory-swap (-1: unlimited);
   * unset, ohbox's default (twice the memory) bounds it. */
  if (m->has_swap && m->swap != 0)
    l->memory_swap = m->swap < 0 ? -1 : m->swap;
  return 0;
}

static int
cpu_limits (const struct oci_cpu *c, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  const char *field = (c->cpus && *c->cpus) || (c->mems && *c->mems) ? "linux.resources.cpu.cpus/mems"
                      : (c->has_rt_runtime && c->rt_runtime) || (c->has_rt_period && c->rt_period)
                        ? "linux.resources.cpu.realtimeRuntime/realtimePeriod"
                      : (c->has_burst && c->burst) ? "linux.resources.cpu.burst"
                      : (c->has_idle && c->idle)   ? "linux.resources.cpu.idle"
                                                   : NULL;
  if (field)
    return unsupported (err, field, "this cpu setting");
  if (c->has_shares && c->shares)
    l->cpu_shares = c->shares;
  if (c->has_quota && c->quota > 0)
    l->cpu_quota = c->quota;
  if (c->has_period && c->period && (l->cpu_quota || (c->has_quota && c->quota < 0)))
    l->cpu_period = c->period;
  return 0;
}

/* linux.resources.blockIO: a weight or rate of 0 (below the kernel's
 * range for weights: "unset" for runc and crun, and what Docker writes)
 * sets nothing; leaf weights (CFQ's, gone from the kernel) are refused. */
static int
blkio_limits (const struct oci_blkio *b, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  const struct
  {
    const struct oci_blkio_list *list;
    enum ohbox_blkio_kind kind;
  } lists[] = { { &b->weight_device, OHBOX_BLKIO_WEIGHT_DEVICE },
                { &b->throttle_read_bps, OHBOX_BLKIO_READ_BPS },
                { &b->throttle_write_bps, OHBOX_BLKIO_WRITE_BPS },
                { &b->throttle_read_iops, OHBOX_BLKIO_READ_IOPS },
                { &b->throttle_write_iops, OHBOX_BLKIO_WRITE_IOPS } };
  if (b->has_leaf_weight && b->leaf_weight)
    return unsupported (err, "linux.resources.blockIO.leafWeight", "a leaf weight");
  if (b->has_weight)
    l->blkio_weight = b->weight;
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
    for (size_t j = 0; j < lists[i].list->n; j++)
      {
        const struct oci_blkio_device *dev = &lists[i].list->v[j];
        if (dev->has_leaf_weight && dev->leaf_weight)
          return unsupported (err, "linux.resources.blockIO.weightDevice.leafWeight", "a leaf weight");
        uint64_t value = lists[i].kind == OHBOX_BLKIO_WEIGHT_DEVICE ? (dev->has_weight ? dev->weight : 0) : dev->rate;
        if (value == 0)
          continue;
        if (l->n_blkio >= OHBOX_CGROUP_MAX_BLKIO)
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: linux.resources.blockIO: more than %d devices",
                              OHBOX_CGROUP_MAX_BLKIO);
        l->blkio[l->n_blkio].kind = lists[i].kind;
        l->blkio[l->n_blkio].major = dev->major;
        l->blkio[l->n_blkio].minor = dev->minor;
        l->blkio[l->n_blkio++].value = value;
      }
  return 0;
}

static int
hugetlb_limits (const struct oci_resources *r, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  if (r->n_hugepages > OHBOX_CGROUP_MAX_HUGETLB)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "config.json: linux.resources.hugepageLimits: more than %d page sizes",
                        OHBOX_CGROUP_MAX_HUGETLB);
  for (size_t i = 0; i < r->n_hugepages; i++)
    {
      const char *size = r->hugepages[i].page_size ? r->hugepages[i].page_size : "";
      if (strlen (size) >= sizeof l->hugetlb[i].page_size)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "config.json: linux.resources.hugepageLimits[%zu].pageSize `%s`: invalid", i, size);
      strcpy (l->hugetlb[i].page_size, size);
      l->hugetlb[i].limit = r->hugepages[i].limit;
    }
  l->n_hugetlb = r->n_hugepages;
  return 0;
}

int
ohbox_bundle_limits (const struct oci_resources *r, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  memset (l, 0, sizeof *l);
  const char *field = r->has_network || r->has_class_id || r->n_net_priorities ? "linux.resources.network" : NULL;
  if (field)
    return unsupported (err, field, "this resource limit");
  if ((r->has_memory && memory_limits (&r->memory, l, err) < 0) || (r->has_cpu && cpu_limits (&r->cpu, l, err) < 0))
    return -1;
  if (r->has_pids && r->pids_limit > 0) /* <= 0: unlimited */
    l->pids = r->pids_limit;
  l->n_unified = r->unified.n;
  l->unified_keys = r->unified.keys;
  l->unified_values = r->unified.values;
  if (hugetlb_limits (r, l, err) < 0 || (r->has_blkio && blkio_limits (&r->blkio, l, err) < 0))
    return -1;
  if (ohbox_cgroup_limits_validate (l, err) < 0)
    return ohbox_error_prefix (err, "config.json: linux.resources");
  return 0;
}

/* linux.resources: the limits of the container's cgroup. */
static int
load_resources (struct ohbox_bundle *b, ohbox_error_t *err)
{
  const struct oci_resources *r = &b->config->linux_config->resources;
  if (!b->config->linux_config->has_resources)
    return 0;
  /* resources.devices: in the device cgroup's rules (load_devices). */
  return ohbox_bundle_limits (r, &b->limits, err);
}

int
ohbox_bundle_cgroup_path (const char *cgroups_path, const char *id, char **ret_parent, char **ret_name,
                          ohbox_error_t *err)
{
  if (cgroups_path == NULL || *cgroups_path == '\0')
    {
      *ret_parent = xstrdup ("/ohbox-runc");
      *ret_name = xstrdup (id);
      return 0;
    }
  /* "/a/b/name": below the hierarchies' roots; "a/b/name": below ours.
   * Never up, never a "slice:prefix:name" (systemd's, which needs
   * --systemd-cgroup). */
  const char *p = cgroups_path;
  bool bad = strchr (p, ':') != NULL || strstr (p, "//") != NULL || p[strlen (p) - 1] == '/';
  for (const char *s = p; !bad && (s = strstr (s, "..")) != NULL; s += 2)
    bad = (s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/');
  for (const char *s = p; !bad && (s = strstr (s, "./")) != NULL; s += 2)
    bad = s == p || s[-1] == '/';
  if (bad)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "config.json: linux.cgroupsPath: `%s` is not a path of cgroups (no `..`, `.`, `//` or `:`; "
                        "a systemd slice needs --systemd-cgroup)",
                        p);
  const char *slash = strrchr (p, '/');
  *ret_name = xstrdup (slash ? slash + 1 : p);
  if (slash == NULL)
    *ret_parent = xstrdup ("");
  else if (slash == p)
    *ret_parent = xstrdup ("/");
  else
    *ret_parent = xstrndup (p, (size_t) (slash - p));
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
  if (load_namespaces (b, err) < 0 || load_resources (b, err) < 0)
    return -1;
  if (l->monotonic.present || l->boottime.present)
    return unsupported (err, "linux.timeOffsets", "a time offset");
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

static char **
strv_copy (char **v, const char *first)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  char **out = xcalloc (n + 2, sizeof *out);
  size_t k = 0;
  if (n == 0 && first)
    out[k++] = xstrdup (first);
  for (size_t i = 0; i < n; i++)
    out[k++] = xstrdup (v[i]);
  return out;
}

_Static_assert((int) OCI_HOOK_PRESTART == (int) OHBOX_HOOK_PRESTART
                 && (int) OCI_HOOK_START_CONTAINER == (int) OHBOX_HOOK_START_CONTAINER
                 && (int) OCI_HOOK_POSTSTOP == (int) OHBOX_HOOK_POSTSTOP,
               "the OCI hook kinds and ohbox's hook stages are in the same order");

void
ohbox_bundle_hooks (const struct oci_runtime_spec *c, struct ohbox_device_edits *e)
{
  /* The OCI kinds and ohbox's stages are in the same order. */
  for (int k = 0; k < OCI_HOOK_KINDS; k++)
    for (size_t i = 0; i < c->hooks.n[k]; i++)
      {
        const struct oci_hook *h = &c->hooks.v[k][i];
        e->hooks = xrealloc (e->hooks, (e->n_hooks + 1) * sizeof *e->hooks);
        e->hooks[e->n_hooks++] = (struct ohbox_device_hook){ .stage = (enum ohbox_hook_stage) k,
                                                             .path = xstrdup (h->path),
                                                             .args = strv_copy (h->args, h->path),
                                                             .env = strv_copy (h->env, NULL),
                                                             .timeout = h->timeout };
      }
}

static int
check_config (const struct oci_runtime_spec *c, ohbox_error_t *err)
{
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
      || load_linux (b, err) < 0 || load_mounts (b, err) < 0 || load_devices (b, err) < 0)
    {
      ohbox_bundle_free (b);
      return -1;
    }
  ohbox_bundle_hooks (b->config, &b->hooks);
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
  free (b->rules);
  if (b->spec.join_netns_fd >= 0)
    close (b->spec.join_netns_fd);
  ohbox_seccomp_filter_free (b->seccomp);
  oci_runtime_spec_free (b->config);
  free (b->config_text);
  ohbox_device_edits_free (&b->hooks);
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

/* An unprivileged user writes its own single-id maps (setgroups denied
 * first); wider ones go through newuidmap/newgidmap and /etc/subuid, as
 * runc's. Root of a user namespace (rootless podman's) writes any map of
 * ids it has. A node cannot be made without host privileges: the host's is
 * bound. */
static int
prepare_rootless (struct ohbox_bundle *b, ohbox_error_t *err)
{
  if (!b->rootless)
    {
      if (geteuid () != 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "not root and --rootless false: run as root, or rootless (--rootless auto or true)");
      return 0;
    }
  for (size_t i = 0; i < b->n_mounts; i++)
    if (b->mounts[i].mknod)
      {
        b->mounts[i].mknod = false;
        free (b->mounts[i].source);
        b->mounts[i].source = xstrdup (b->mounts[i].target);
      }
  if (geteuid () == 0)
    return 0;
  /* Binds are cloned in the container's own user namespace (linux.c). */
  b->spec.rootless = true;
  if (!b->spec.userns)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "config.json: linux.namespaces: rootless without a user namespace: an unprivileged user "
                        "needs one, with its ids in linux.uidMappings and linux.gidMappings (`ohbox-runc spec "
                        "--rootless` writes such a config)");
  const struct ohbox_idmap *u = &b->userns_plan.uids, *g = &b->userns_plan.gids;
  bool own = u->n == 1 && u->r[0].count == 1 && u->r[0].outside == geteuid () && g->n == 1 && g->r[0].count == 1
             && g->r[0].outside == getegid ();
  b->userns_plan.single = own;
  b->userns_plan.use_helpers = !own;
  return 0;
}

int
ohbox_bundle_start (struct ohbox_bundle *b, const char *id, const int stdio[3],
                    int (*before_start) (pid_t pid, void *data, ohbox_error_t *err), void *data,
                    struct ohbox_linux_proc *ret, ohbox_error_t *err)
{
  struct ohbox_linux_spec *s = &b->spec;
  if (prepare_rootless (b, err) < 0)
    return -1;
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
      || (!s->rootless && ohbox_mounts_prepare_binds (b->mounts, b->n_mounts, err) < 0))
    return -1;
  int r = ohbox_linux_start (s, ret, err);
  s->rootdir_fd = -1;
  return r;
}
