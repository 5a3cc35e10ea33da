/* mounts.c: the sandbox's mounts, done by the child in its own mount
 * namespace before pivot_root.
 *
 * Every target inside the rootfs is opened relative to the rootfs with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) and mounted on through
 * its fd (move_mount MOVE_MOUNT_T_EMPTY_PATH, or mount(2) on the fd's
 * /proc/self/fd link): a symlink in the image is followed as if the rootfs
 * were "/", so a target like /dev -> /../../dev or /data -> /etc lands
 * inside the rootfs and never on a host path (CVE-2021-30465 shape, where a
 * path string was checked and then re-resolved after an attacker swapped a
 * component for a symlink: here nothing is resolved twice). Missing targets
 * are created the same way, one component at a time.
 *
 * Binds use open_tree(OPEN_TREE_CLONE) + mount_setattr: read-only is set on
 * the detached copy before it is attached, so it is never writable, and
 * needs no restating of the locked nosuid/nodev flags a remount would. */
#include "config.h"
#include "sandbox/linux.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* The OCI runtime-spec defaults (as Docker, runc and crun apply them). */
static const char *const masked_paths[] = {
  "/proc/acpi",        "/proc/asound",        "/proc/interrupts", "/proc/kcore",
  "/proc/keys",        "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
  "/proc/sched_debug", "/proc/scsi",          "/sys/firmware",    "/sys/devices/virtual/powercap",
};
static const char *const readonly_paths[] = {
  "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

#define MAX_PATH_COMPONENTS 64

/* Opens PATH in ROOTFD (O_PATH), creating what is missing: directories on
 * the way, and the last component as a directory (DIR) or an empty file. */
static int
open_target (int rootfd, const char *path, bool dir, ohbox_error_t *err)
{
  int fd = ohbox_openat_in_root (rootfd, path, O_PATH | O_CLOEXEC, 0, 0);
  if (fd >= 0)
    return fd;
  if (errno != ENOENT)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s` in the rootfs", path);
  if (strlen (path) >= PATH_MAX)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "path `%.64s...` is too long", path);
  char buf[PATH_MAX];
  snprintf (buf, sizeof buf, "%s", path);
  size_t len = strlen (buf);
  while (len > 1 && buf[len - 1] == '/')
    buf[--len] = '\0';
  int depth = 0;
  /* Walk the components: parent opened in-root, child created in it. */
  for (char *p = buf; *p;)
    {
      while (*p == '/')
        p++;
      if (*p == '\0')
        break;
      char *slash = strchr (p, '/');
      bool last = slash == NULL;
      if (!last)
        *slash = '\0';
      if (++depth > MAX_PATH_COMPONENTS)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "path `%s` has too many components", path);
      fd = ohbox_openat_in_root (rootfd, buf, O_PATH | O_CLOEXEC, 0, 0);
      if (fd < 0 && errno == ENOENT)
        {
          /* The parent: everything before this component. */
          char *sep = strrchr (buf, '/');
          cleanup_close int pfd = -1;
          const char *name = buf;
          if (sep && sep != buf)
            {
              *sep = '\0';
              pfd = ohbox_openat_in_root (rootfd, buf, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
              *sep = '/';
              name = sep + 1;
            }
          else
            {
              pfd = fcntl (rootfd, F_DUPFD_CLOEXEC, 3);
              name = sep ? sep + 1 : buf;
            }
          if (pfd < 0)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open the parent of `%s` in the rootfs", buf);
          int r;
          if (last && !dir)
            {
              /* O_PATH dirfds cannot create files: reopen the parent. */
              cleanup_close int wd = openat (pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
              r = wd < 0 ? -1 : openat (wd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
              if (r >= 0)
                close (r);
            }
          else
            r = mkdirat (pfd, name, 0755);
          if (r < 0 && errno != EEXIST)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "create `%s` in the rootfs", buf);
          fd = ohbox_openat_in_root (rootfd, buf, O_PATH | O_CLOEXEC, 0, 0);
        }
      if (fd < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s` in the rootfs", buf);
      if (last)
        return fd;
      close (fd);
      *slash = '/';
      p = slash + 1;
    }
  return fcntl (rootfd, F_DUPFD_CLOEXEC, 3);
}

/* mount(2) of a filesystem on the target fd. */
static int
mount_fs_at (int rootfd, const char *target, const char *type, unsigned long flags, const char *data,
             ohbox_error_t *err)
{
  cleanup_close int fd = open_target (rootfd, target, true, err);
  if (fd < 0)
    return -1;
  char proc[64];
  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  if (mount (type, proc, type, flags, data) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mount %s on `%s`", type, target);
  return 0;
}

/* Attaches the detached mount MFD on TARGET (created as DIR or file). */
static int
attach_at (int rootfd, int mfd, const char *target, bool dir, ohbox_error_t *err)
{
  cleanup_close int fd = open_target (rootfd, target, dir, err);
  if (fd < 0)
    return -1;
  if (move_mount (mfd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach mount on `%s`", target);
  return 0;
}

static int
set_read_only (int mfd, bool recursive, const char *what, ohbox_error_t *err)
{
  struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
  if (mount_setattr (mfd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make `%s` read-only", what);
  return 0;
}

/* Binds host SOURCE (a path of the caller's) on TARGET inside. */
static int
bind_host (int rootfd, const char *source, const char *target, bool read_only, ohbox_error_t *err)
{
  cleanup_close int mfd = open_tree (AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (mfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "bind mount source `%s`", source);
  struct stat st;
  if (fstat (mfd, &st) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "stat `%s`", source);
  if (read_only && set_read_only (mfd, true, source, err) < 0)
    return -1;
  return attach_at (rootfd, mfd, target, S_ISDIR (st.st_mode), err);
}

static int
setup_dev (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err)
{
  if (mount_fs_at (rootfd, "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k", err) < 0)
    return -1;
  for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++)
    {
      char host[32], target[32];
      snprintf (host, sizeof host, "/dev/%s", dev_nodes[i]);
      snprintf (target, sizeof target, "/dev/%s", dev_nodes[i]);
      if (bind_host (rootfd, host, target, false, err) < 0)
        return -1;
    }
  /* gid 5 (tty) only when the namespace maps it. */
  bool tty_gid = !spec->userns || ohbox_idmap_to_host (&spec->userns_plan->gids, 5) != (uint32_t) -1;
  if (mount_fs_at (rootfd, "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                   tty_gid ? "newinstance,ptmxmode=0666,mode=0620,gid=5" : "newinstance,ptmxmode=0666,mode=0620", err)
      < 0)
    return -1;
  if (mount_fs_at (rootfd, "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k", err) < 0)
    return -1;
  if (mount_fs_at (rootfd, "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err) < 0)
    return -1;
  static const char *const links[][2] = {
    { "pts/ptmx", "ptmx" },          { "/proc/self/fd", "fd" },       { "/proc/self/fd/0", "stdin" },
    { "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" }, { "/proc/kcore", "core" },
  };
  /* /dev is our fresh tmpfs: open it in-root once and create the links in it. */
  cleanup_close int devfd = ohbox_openat_in_root (rootfd, "/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0);
  if (devfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open /dev in the rootfs");
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
    if (symlinkat (links[i][0], devfd, links[i][1]) < 0 && errno != EEXIST)
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "symlink /dev/%s", links[i][1]);
  return 0;
}

static int
setup_sys (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err)
{
  if (spec->netns || !spec->userns)
    return mount_fs_at (rootfd, "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err);
  /* A user namespace that shares the host's network namespace may not
   * mount sysfs: bind the host's, read-only (as rootless podman does). */
  return bind_host (rootfd, "/sys", "/sys", true, err);
}

static int
mask_path (int rootfd, const char *path, ohbox_error_t *err)
{
  cleanup_close int fd = ohbox_openat_in_root (rootfd, path, O_PATH | O_CLOEXEC, 0, 0);
  if (fd < 0)
    {
      if (errno == ENOENT || errno == EACCES)
        return 0;
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open masked path `%s`", path);
    }
  struct stat st;
  if (fstat (fd, &st) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "stat `%s`", path);
  char proc[64];
  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  if (S_ISDIR (st.st_mode))
    {
      if (mount ("tmpfs", proc, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=555") < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mask `%s`", path);
      return 0;
    }
  cleanup_close int mfd = open_tree (AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (mfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open_tree /dev/null");
  if (move_mount (mfd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mask `%s`", path);
  return 0;
}

static int
readonly_path (int rootfd, const char *path, ohbox_error_t *err)
{
  cleanup_close int fd = ohbox_openat_in_root (rootfd, path, O_PATH | O_CLOEXEC, 0, 0);
  if (fd < 0)
    {
      if (errno == ENOENT || errno == EACCES)
        return 0;
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open read-only path `%s`", path);
    }
  cleanup_close int mfd = open_tree (fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
  if (mfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open_tree `%s`", path);
  if (set_read_only (mfd, true, path, err) < 0)
    return -1;
  if (move_mount (mfd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "bind `%s` read-only", path);
  return 0;
}

/* Device nodes for a root sandbox (see ohbox_mount_spec.mknod), each a
 * detached mount of one file.  Safe: the tmpfs they are made in is never
 * reachable by anyone else (detached, or for a moment attached on a fresh
 * 0700 directory of root's), the nodes are the ones the caller asked for
 * by name, and the sandbox's device cgroup allows only them. */
static int
make_devfs (ohbox_error_t *err)
{
  cleanup_close int fsfd = fsopen ("tmpfs", FSOPEN_CLOEXEC);
  if (fsfd < 0 || fsconfig (fsfd, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0
      || fsconfig (fsfd, FSCONFIG_SET_STRING, "size", "64k", 0) < 0
      || fsconfig (fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make a tmpfs for device nodes");
  int devfs = fsmount (fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  if (devfs < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mount a tmpfs for device nodes");
  return devfs;
}

/* Linux before 6.15 clones no file of a detached mount (EINVAL): attach it
 * on a fresh directory of root's for the clones, then detach it. */
static int
clone_nodes_attached (int devfs, struct ohbox_mount_spec *mounts, size_t n, ohbox_error_t *err)
{
  if (mkdir ("/run/ohbox", 0755) < 0 && errno != EEXIST)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mkdir /run/ohbox");
  char dir[] = "/run/ohbox/devnodes.XXXXXX";
  if (mkdtemp (dir) == NULL)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make a directory for device nodes");
  int rc = 0;
  if (move_mount (devfs, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    rc = ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach the device nodes' tmpfs");
  for (size_t i = 0; rc == 0 && i < n; i++)
    {
      if (!mounts[i].mknod || mounts[i].fd >= 0)
        continue;
      cleanup_free char *path = xasprintf ("%s/%zu", dir, i);
      mounts[i].fd = open_tree (AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
      if (mounts[i].fd < 0)
        rc = ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "clone device node `%s`", mounts[i].target);
    }
  umount2 (dir, MNT_DETACH);
  rmdir (dir);
  return rc;
}

static int
prepare_device_nodes (struct ohbox_mount_spec *mounts, size_t n, ohbox_error_t *err)
{
  cleanup_close int devfs = -1;
  bool detached_clones = true;
  for (size_t i = 0; i < n; i++)
    {
      struct ohbox_mount_spec *m = &mounts[i];
      if (!m->mknod)
        continue;
      if (devfs < 0 && (devfs = make_devfs (err)) < 0)
        return -1;
      char name[24];
      snprintf (name, sizeof name, "%zu", i);
      if (mknodat (devfs, name, m->mode, m->rdev) < 0 || fchownat (devfs, name, m->host_uid, m->host_gid, 0) < 0
          || fchmodat (devfs, name, m->mode & 07777, 0) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make device node `%s` (of `%s`)", m->target, m->source);
      if (detached_clones)
        {
          m->fd = open_tree (devfs, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
          if (m->fd < 0 && errno != EINVAL)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "clone device node `%s`", m->target);
          detached_clones = m->fd >= 0;
        }
    }
  return detached_clones ? 0 : clone_nodes_attached (devfs, mounts, n, err);
}

int
ohbox_mounts_prepare_binds (struct ohbox_mount_spec *mounts, size_t n, ohbox_error_t *err)
{
  if (prepare_device_nodes (mounts, n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      struct ohbox_mount_spec *m = &mounts[i];
      if (m->tmpfs || m->mknod)
        continue;
      m->fd = open_tree (AT_FDCWD, m->source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (m->single ? 0 : AT_RECURSIVE));
      if (m->fd < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "bind mount source `%s`", m->source);
      if (m->read_only && set_read_only (m->fd, true, m->source, err) < 0)
        return -1;
      /* A volume is data, never a way to a device: a node reached through
       * it (`-v /dev:/x`, a node on a shared disk) cannot be opened.
       * Devices come with --device, as binds of their own. */
      struct mount_attr nodev = { .attr_set = MOUNT_ATTR_NODEV | m->attrs };
      if (m->device)
        nodev.attr_set &= ~(uint64_t) MOUNT_ATTR_NODEV;
      if (nodev.attr_set && mount_setattr (m->fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &nodev, sizeof nodev) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make volume `%s` nodev", m->source);
    }
  return 0;
}

int
ohbox_mounts_idmap_binds (const struct ohbox_mount_spec *mounts, size_t n, int userns_fd, ohbox_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    {
      const struct ohbox_mount_spec *m = &mounts[i];
      if (!m->idmap || m->fd < 0)
        continue;
      /* Safe: the tree is a detached clone only this sandbox will attach;
       * the mapping is the sandbox's own (its root sees host root's files
       * as its own, and what it creates is owned by host root), which is
       * what the user asked for by naming this volume :idmap. */
      struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = userns_fd };
      if (mount_setattr (m->fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
        {
          if (errno == EINVAL || errno == EOPNOTSUPP)
            return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, errno,
                                "volume `%s`: its filesystem (or one mounted below it) cannot be idmapped; "
                                "drop :idmap",
                                m->source);
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "idmap volume `%s`", m->source);
        }
    }
  return 0;
}

int
ohbox_mounts_setup (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err)
{
  if (mount_fs_at (rootfd, "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err) < 0)
    return -1;
  if (setup_dev (spec, rootfd, err) < 0)
    return -1;
  if (setup_sys (spec, rootfd, err) < 0)
    return -1;
  for (size_t i = 0; i < spec->n_mounts; i++)
    {
      const struct ohbox_mount_spec *m = &spec->mounts[i];
      int r;
      if (m->tmpfs)
        r = mount_fs_at (rootfd, m->target, "tmpfs",
                         MS_NOSUID | MS_NODEV | m->tmpfs_flags | (m->read_only ? MS_RDONLY : 0),
                         m->tmpfs_data ? m->tmpfs_data : "mode=1777", err);
      else
        {
          struct stat st;
          if (fstat (m->fd, &st) < 0)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "stat volume `%s`", m->source);
          r = attach_at (rootfd, m->fd, m->target, S_ISDIR (st.st_mode), err);
        }
      if (r < 0)
        return -1;
    }
  for (size_t i = 0; i < sizeof masked_paths / sizeof masked_paths[0]; i++)
    if (mask_path (rootfd, masked_paths[i], err) < 0)
      return -1;
  for (size_t i = 0; i < sizeof readonly_paths / sizeof readonly_paths[0]; i++)
    if (readonly_path (rootfd, readonly_paths[i], err) < 0)
      return -1;
  for (char **p = spec->masked_paths; p && *p; p++)
    if (mask_path (rootfd, *p, err) < 0)
      return -1;
  for (char **p = spec->readonly_paths; p && *p; p++)
    if (readonly_path (rootfd, *p, err) < 0)
      return -1;
  /* The working directory exists (as Docker creates it), resolved in-root:
   * a magic link such as /proc/self/fd/N is refused (RESOLVE_NO_MAGICLINKS). */
  if (spec->cwd && strcmp (spec->cwd, "/") != 0)
    {
      int fd = open_target (rootfd, spec->cwd, true, err);
      if (fd < 0)
        return ohbox_error_prefix (err, "working directory");
      close (fd);
    }
  return 0;
}

/* A detached read-only bind of the sandbox's cgroup directory DIR. */
static int
cgroup_bind (const char *dir, ohbox_error_t *err)
{
  int mfd = open_tree (AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (mfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "bind the sandbox's cgroup `%s`", dir);
  struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC };
  if (mount_setattr (mfd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make the bind of `%s` read-only", dir);
      close (mfd);
      return -1;
    }
  return mfd;
}

/* /sys/fs/cgroup on a pure v2 host: a cgroup2 mount made in the sandbox's
 * cgroup namespace, whose root is the sandbox's cgroup, read-only (as
 * Docker and podman do): tools inside read their own limits and usage,
 * and see nothing of the host's tree above.  Where the kernel refuses the
 * mount, the sandbox's own directory is bound read-only instead. */
static int
cgroup_v2_view (int rootfd, const char *dir, ohbox_error_t *err)
{
  cleanup_close int fd = open_target (rootfd, "/sys/fs/cgroup", true, err);
  if (fd < 0)
    return -1;
  char proc[64];
  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  if (mount ("cgroup2", proc, "cgroup2", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0)
    return 0;
  if (errno != EPERM)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mount cgroup2 on /sys/fs/cgroup");
  cleanup_close int mfd = cgroup_bind (dir, err);
  if (mfd < 0)
    return -1;
  if (move_mount (mfd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach the sandbox's cgroup on /sys/fs/cgroup");
  return 0;
}

/* /sys/fs/cgroup on a v1 or hybrid host: v1 hierarchies cannot be mounted
 * per cgroup namespace, so a small tmpfs holds, under each hierarchy's name
 * on the host (memory, cpu,cpuacct with cpu and cpuacct links, systemd,
 * unified), a read-only bind of the sandbox's own directory in it; then
 * the tmpfs becomes read-only too.  Safe: only the sandbox's own cgroups
 * are shown, read-only, and their files belong to host root, which the
 * sandbox's root is not (user namespace); making a mount writable again
 * needs CAP_SYS_ADMIN, which sandboxes do not have by default. */
static int
cgroup_v1_view (const struct ohbox_cgroup *cg, int rootfd, ohbox_error_t *err)
{
  if (mount_fs_at (rootfd, "/sys/fs/cgroup", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k", err) < 0)
    return -1;
  cleanup_close int cgfd = ohbox_openat_in_root (rootfd, "/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0);
  if (cgfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open /sys/fs/cgroup in the rootfs");
  int version;
  const char *name, *dir;
  for (size_t i = 0; (dir = ohbox_cgroup_dir_at (cg, i, &version, &name)) != NULL; i++)
    {
      if (*name == '\0' || strchr (name, '/'))
        return ohbox_error (err, OHBOX_ERR_GENERIC, EINVAL, "bad cgroup hierarchy name `%s`", name);
      if (mkdirat (cgfd, name, 0755) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "create /sys/fs/cgroup/%s", name);
      cleanup_close int mfd = cgroup_bind (dir, err);
      if (mfd < 0)
        return -1;
      if (move_mount (mfd, "", cgfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach the sandbox's cgroup on /sys/fs/cgroup/%s", name);
      /* "cpu,cpuacct": also reachable as cpu and cpuacct, as on the host. */
      if (strchr (name, ','))
        {
          cleanup_free char *copy = xstrdup (name);
          char *save = NULL;
          for (char *c = strtok_r (copy, ",", &save); c; c = strtok_r (NULL, ",", &save))
            if (symlinkat (name, cgfd, c) < 0 && errno != EEXIST)
              return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "symlink /sys/fs/cgroup/%s", c);
        }
    }
  struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
  if (mount_setattr (cgfd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make /sys/fs/cgroup read-only");
  return 0;
}

int
ohbox_mounts_cgroup (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err)
{
  if (spec->cgroup == NULL)
    return 0;
  /* Rootless without a delegated subtree: no cgroup of its own, nothing
   * to show (/sys/fs/cgroup stays the empty directory of sysfs). */
  int version, n_v1 = 0;
  const char *dir, *v2 = NULL;
  const char *name;
  for (size_t i = 0; (dir = ohbox_cgroup_dir_at (spec->cgroup, i, &version, &name)) != NULL; i++)
    {
      if (version == 1)
        n_v1++;
      else
        v2 = dir;
    }
  int r = 0;
  if (n_v1 > 0)
    r = cgroup_v1_view (spec->cgroup, rootfd, err);
  else if (v2)
    r = cgroup_v2_view (rootfd, v2, err);
  return r < 0 ? ohbox_error_prefix (err, "/sys/fs/cgroup in the sandbox") : 0;
}

int
ohbox_mounts_pivot (const struct ohbox_linux_spec *spec, int rootfd, ohbox_error_t *err)
{
  if (fchdir (rootfd) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "chdir to the rootfs");
  /* A rootfs cloned from a shared mount (an OCI bundle's, on a host whose
   * / is shared, as systemd makes it) is a peer of it, and pivot_root
   * refuses a shared new root: made private, in this mount namespace only. */
  if (mount (NULL, ".", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make the rootfs private");
  if (spec->no_pivot)
    {
      /* runc's --no-pivot (a root on ramfs, where pivot_root fails): the
       * rootfs moved over / and chrooted into; the host's root stays below
       * it in this mount namespace. */
      if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount (".", "/", NULL, MS_MOVE, NULL) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "move the rootfs onto / (--no-pivot)");
      if (chroot (".") < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "chroot into the rootfs (--no-pivot)");
    }
  /* pivot_root(".", "."): the old root ends up stacked under the new one
   * and is detached right away (no temporary directory in the image). */
  else if (syscall (SYS_pivot_root, ".", ".") < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pivot_root");
  else if (umount2 (".", MNT_DETACH) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "detach the host's root");
  if (chdir ("/") < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "chdir /");
  if (spec->read_only)
    {
      /* Only the root mount: /dev, /proc, tmpfs and volumes keep their own. */
      struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
      if (mount_setattr (AT_FDCWD, "/", 0, &attr, sizeof attr) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make the rootfs read-only");
    }
  return 0;
}
