/* snapshot.c: see snapshot.h. */
#include "config.h"
#include "sandbox/snapshot.h"
#include "sandbox/linux.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#define SANDBOXES_DIR "sandboxes"
/* A layers file lists at most MAX_LAYERS digests of 71 characters. */
#define LAYERS_FILE_MAX (OHBOX_SNAPSHOT_MAX_LAYERS * 80)

void
ohbox_snapshot_free (struct ohbox_snapshot *snap)
{
  if (snap == NULL)
    return;
  for (size_t i = 0; i < snap->n_lowers; i++)
    free (snap->lowers[i]);
  free (snap->lowers);
  free (snap->id);
  free (snap->dir);
  free (snap->upper);
  free (snap->work);
  if (snap->upper_mnt_fd >= 0)
    close (snap->upper_mnt_fd);
  free (snap);
}

/* ROOT/sandboxes/ID/OWNER_LINK: the sandbox's state directory. */
#define OWNER_LINK "state"

int
ohbox_snapshot_prepare (struct ohbox_store *s, const char *id, const char *owner, char *const *diff_ids,
                        size_t n_diff_ids, uid_t uid, gid_t gid, uint64_t upper_size, struct ohbox_snapshot **ret,
                        ohbox_error_t *err)
{
  if (owner[0] != '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "state directory `%s` is not an absolute path", owner);
  if (n_diff_ids == 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "image has no layers: nothing to run");
  if (n_diff_ids > OHBOX_SNAPSHOT_MAX_LAYERS)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "image has %zu layers (at most %d are supported)", n_diff_ids,
                        OHBOX_SNAPSHOT_MAX_LAYERS);
  int rootfd = ohbox_store_dirfd (s);
  struct ohbox_snapshot *snap = xcalloc (1, sizeof *snap);
  snap->upper_mnt_fd = -1;
  snap->id = xstrdup (id);
  snap->lowers = xcalloc (n_diff_ids, sizeof (char *));
  struct ohbox_buf list = { 0 };
  /* Overlay wants the top-most layer first; the config lists the base first. */
  for (size_t i = 0; i < n_diff_ids; i++)
    {
      const char *d = diff_ids[n_diff_ids - 1 - i];
      if (!ohbox_store_has_layer (s, d))
        {
          ohbox_buf_free (&list);
          ohbox_snapshot_free (snap);
          return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "layer `%s` is not unpacked in the store", d);
        }
      snap->lowers[snap->n_lowers++] = ohbox_store_layer_path (s, d);
      ohbox_buf_append (&list, d, strlen (d));
      ohbox_buf_append (&list, "\n", 1);
    }

  cleanup_free char *rel = xasprintf (SANDBOXES_DIR "/%s", id);
  snap->dir = xasprintf ("%s/%s", ohbox_store_root (s), rel);
  snap->upper = xasprintf ("%s/upper", snap->dir);
  snap->work = xasprintf ("%s/work", snap->dir);
  int ret_val = -1;
  cleanup_close int dfd = -1;
  if (ohbox_mkdir_p (rootfd, rel, 0700, err) < 0)
    goto out;
  dfd = ohbox_openat_beneath (rootfd, rel, O_DIRECTORY | O_RDONLY | O_CLOEXEC, 0, 0);
  if (dfd < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_STORE, "open `%s`", snap->dir);
      goto out;
    }
  /* Whose layer it is, for `ohbox check` (the layer is removed before the
   * state directory: a layer whose state is gone is a leftover). */
  if (symlinkat (owner, dfd, OWNER_LINK) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_STORE, "link `%s/" OWNER_LINK "` to `%s`", snap->dir, owner);
      goto out;
    }
  /* The layer list goes first: from now on GC keeps these layers. */
  if (ohbox_write_file_nosync (dfd, "layers", list.data, list.len, err) < 0)
    goto out;
  if (upper_size > 0)
    {
      if (ohbox_snapshot_bound_upper (snap, dfd, upper_size, uid, gid, err) < 0)
        goto out;
      ret_val = 0;
      goto out;
    }
  if ((mkdirat (dfd, "upper", 0755) < 0 && errno != EEXIST) || (mkdirat (dfd, "work", 0700) < 0 && errno != EEXIST))
    {
      ohbox_error_sys (err, OHBOX_ERR_STORE, "mkdir in `%s`", snap->dir);
      goto out;
    }
  /* The sandbox's root owns the top of its writable layer (CVE-less but
   * needed: a root-owned upper would be "nobody" inside the namespace). */
  if (fchownat (dfd, "upper", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_STORE, "chown `%s`", snap->upper);
      goto out;
    }
  ret_val = 0;
out:
  ohbox_buf_free (&list);
  if (ret_val < 0)
    {
      ohbox_error_t ignored = NULL;
      ohbox_rm_rf_at (rootfd, rel, &ignored);
      ohbox_error_release (&ignored);
      ohbox_snapshot_free (snap);
      return -1;
    }
  *ret = snap;
  return 0;
}

int
ohbox_snapshot_sandbox_gone (struct ohbox_store *s, const char *id, char **ret_owner)
{
  cleanup_free char *link = xasprintf (SANDBOXES_DIR "/%s/" OWNER_LINK, id);
  char owner[PATH_MAX];
  ssize_t n = readlinkat (ohbox_store_dirfd (s), link, owner, sizeof owner - 1);
  if (n <= 0)
    return -1;
  owner[n] = '\0';
  /* Only what prepare writes: an absolute path ending in /ID. */
  size_t len = (size_t) n, idlen = strlen (id);
  if (owner[0] != '/' || len <= idlen || owner[len - idlen - 1] != '/' || strcmp (owner + len - idlen, id) != 0)
    return -1;
  struct stat st;
  bool gone = lstat (owner, &st) < 0 && errno == ENOENT;
  if (ret_owner)
    *ret_owner = xstrdup (owner);
  return gone ? 1 : 0;
}

/* A detached clone of DIR, idmapped through USERNS_FD when >= 0. */
static int
clone_layer (const char *dir, int userns_fd, ohbox_error_t *err)
{
  int fd = open_tree (AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open_tree `%s`", dir);
  if (userns_fd >= 0)
    {
      struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY, .userns_fd = userns_fd };
      if (mount_setattr (fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
        {
          close (fd);
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "idmap layer `%s`", dir);
        }
    }
  return fd;
}

static int
set_string (int fsfd, const char *key, const char *value, ohbox_error_t *err)
{
  if (fsconfig (fsfd, FSCONFIG_SET_STRING, key, value, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "overlay option `%s=%s`", key, value);
  return 0;
}

/* Before Linux 6.13 overlay refuses a detached mount as a layer
 * (clone_private_mount() wants a mount of the caller's namespace, the
 * "failed to clone lowerpath" of dmesg).  Then the layers' clones (FDS) are
 * attached on SNAP->dir/lower-N for the time the overlay is created, and
 * named by their fds' /proc/self/fd links (short: they fit the option
 * strings).  The overlay takes private clones of its own, so they are
 * detached right after (detach_lowers).  This happens in the caller's mount
 * namespace: the sandbox's own for a rootless child, the host's for root,
 * where they sit below the store, which only root can reach, for the few
 * milliseconds of the overlay's creation. */
static int
attach_lowers (const struct ohbox_snapshot *snap, const int *fds, size_t *n_attached, ohbox_error_t *err)
{
  cleanup_close int dfd = open (snap->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "open `%s`", snap->dir);
  for (size_t i = 0; i < snap->n_lowers; i++)
    {
      char name[32];
      snprintf (name, sizeof name, "lower-%zu", i);
      if (mkdirat (dfd, name, 0700) < 0 && errno != EEXIST)
        return ohbox_error_sys (err, OHBOX_ERR_STORE, "create `%s/%s`", snap->dir, name);
      /* FDS[i] stays the layer's root, now attached. */
      if (move_mount (fds[i], "", dfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach layer `%s` on `%s/%s`", snap->lowers[i], snap->dir,
                                name);
      *n_attached = i + 1;
    }
  return 0;
}

static void
detach_lowers (const struct ohbox_snapshot *snap, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *path = xasprintf ("%s/lower-%zu", snap->dir, i);
      umount2 (path, MNT_DETACH | UMOUNT_NOFOLLOW);
      rmdir (path);
    }
}

/* The same for a bounded writable layer's filesystem (snapshot_size.c),
 * attached on SNAP->dir/upper-mnt: *RET_ATTACHED says it is. */
static int
attach_upper (const struct ohbox_snapshot *snap, bool *ret_attached, ohbox_error_t *err)
{
  cleanup_close int dfd = open (snap->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "open `%s`", snap->dir);
  if (mkdirat (dfd, "upper-mnt", 0700) < 0 && errno != EEXIST)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "create `%s/upper-mnt`", snap->dir);
  if (move_mount (snap->upper_mnt_fd, "", dfd, "upper-mnt", MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach the writable layer on `%s/upper-mnt`", snap->dir);
  *ret_attached = true;
  return 0;
}

static void
detach_upper (const struct ohbox_snapshot *snap)
{
  cleanup_free char *path = xasprintf ("%s/upper-mnt", snap->dir);
  umount2 (path, MNT_DETACH | UMOUNT_NOFOLLOW);
  rmdir (path);
}

/* Linux < 6.8: one "lowerdir" string of /proc/self/fd/N paths (fsconfig
 * strings are limited to 256 bytes). */
static int
add_lowers_legacy (int fsfd, const struct ohbox_snapshot *snap, int *fds, ohbox_error_t *err)
{
  char buf[256];
  size_t len = 0;
  for (size_t i = 0; i < snap->n_lowers; i++)
    {
      int n = snprintf (buf + len, sizeof buf - len, "%s/proc/self/fd/%d", i ? ":" : "", fds[i]);
      if (n < 0 || (size_t) n >= sizeof buf - len)
        {
          struct utsname u;
          uname (&u);
          return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                              "image has %zu layers: kernel %s lacks overlay's \"lowerdir+\" (Linux 6.8) and "
                              "its option string holds fewer; flatten the image or upgrade the kernel",
                              snap->n_lowers, u.release);
        }
      len += n;
    }
  return set_string (fsfd, "lowerdir", buf, err);
}

static int
mount_overlay (const struct ohbox_snapshot *snap, int userns_fd, unsigned flags, int *ret_fd, ohbox_error_t *err)
{
  int n = (int) snap->n_lowers;
  int *fds = xmalloc (sizeof (int) * n);
  int ret = -1;
  cleanup_close int fsfd = -1;
  size_t n_attached = 0;
  bool upper_is_attached = false;
  int i;
  for (i = 0; i < n; i++)
    fds[i] = -1;
  fsfd = fsopen ("overlay", FSOPEN_CLOEXEC);
  if (fsfd < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fsopen `overlay`");
      goto out;
    }
  /* Idmapped layers are needed for the mapping; legacy kernels get fds
   * anyway (short paths). */
  for (i = 0; i < n; i++)
    {
      fds[i] = clone_layer (snap->lowers[i], userns_fd, err);
      if (fds[i] < 0)
        goto out;
    }
  if ((flags & OHBOX_SNAPSHOT_USERXATTR) && fsconfig (fsfd, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "overlay option `userxattr`");
      goto out;
    }
  /* Layers by fd (Linux >= 6.13), else attached and by path: through
   * "lowerdir+" (Linux >= 6.8), else one "lowerdir" string.  EOPNOTSUPP
   * for the fd: overlay before Linux 6.5, which has no fs_context of its
   * own: the VFS's legacy one takes strings and passes them on unparsed
   * (a "lowerdir+" would only fail at CMD_CREATE). */
  bool by_fd = true, legacy = false;
  for (i = 0; i < n; i++)
    {
      if (by_fd)
        {
          if (fsconfig (fsfd, FSCONFIG_SET_FD, "lowerdir+", NULL, fds[i]) == 0)
            continue;
          if (i > 0 || (errno != EINVAL && errno != EOPNOTSUPP))
            {
              ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "overlay lower layer `%s`", snap->lowers[i]);
              goto out;
            }
          legacy = errno == EOPNOTSUPP;
          by_fd = false;
          if (attach_lowers (snap, fds, &n_attached, err) < 0)
            goto out;
        }
      if (!legacy)
        {
          char path[64];
          snprintf (path, sizeof path, "/proc/self/fd/%d", fds[i]);
          if (fsconfig (fsfd, FSCONFIG_SET_STRING, "lowerdir+", path, 0) == 0)
            continue;
          if (i > 0 || errno != EINVAL)
            {
              ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "overlay lower layer `%s`", snap->lowers[i]);
              goto out;
            }
        }
      if (add_lowers_legacy (fsfd, snap, fds, err) < 0)
        goto out;
      break;
    }
  if (!(flags & OHBOX_SNAPSHOT_READ_ONLY))
    {
      const char *upper = snap->upper, *work = snap->work;
      cleanup_free char *upper_attached = NULL, *work_attached = NULL;
      /* Before Linux 6.13 a detached upper is refused as the lowers are. */
      if (!by_fd && snap->upper_mnt_fd >= 0)
        {
          if (attach_upper (snap, &upper_is_attached, err) < 0)
            goto out;
          upper = upper_attached = xasprintf ("%s/upper-mnt/upper", snap->dir);
          work = work_attached = xasprintf ("%s/upper-mnt/work", snap->dir);
        }
      if (set_string (fsfd, "upperdir", upper, err) < 0 || set_string (fsfd, "workdir", work, err) < 0)
        goto out;
      /* No sync of the upper layer: a sandbox never outlives a crash of its
       * host (its state is under /run, nothing restarts it, its writable
       * layer is removed with it), so fsync and syncfs inside it need not
       * reach the disk, and the unmount at its end does not sync the
       * whole host filesystem the upper layer is on (overlay's sync_fs
       * does). Podman does the same for --rm, CRI-O for every container.
       * Volumes are bind mounts and keep their syncs. Linux >= 5.10; on an
       * older kernel the option is refused here and left out. */
      if (fsconfig (fsfd, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0 && errno != EINVAL)
        {
          ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "overlay option `volatile`");
          goto out;
        }
    }
  if (fsconfig (fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "create overlay for sandbox `%s` (%d layers)", snap->id, n);
      goto out;
    }
  int mfd = fsmount (fsfd, FSMOUNT_CLOEXEC, (flags & OHBOX_SNAPSHOT_READ_ONLY) ? MOUNT_ATTR_RDONLY : 0);
  if (mfd < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fsmount overlay for sandbox `%s`", snap->id);
      goto out;
    }
  *ret_fd = mfd;
  ret = 0;
out:
  detach_lowers (snap, n_attached);
  if (upper_is_attached)
    detach_upper (snap);
  for (i = 0; i < n; i++)
    if (fds[i] >= 0)
      close (fds[i]);
  free (fds);
  return ret;
}

int
ohbox_snapshot_mount (const struct ohbox_snapshot *snap, int userns_fd, unsigned flags, int *ret_fd,
                      bool *ret_read_only, ohbox_error_t *err)
{
  if (ret_read_only)
    *ret_read_only = (flags & OHBOX_SNAPSHOT_READ_ONLY) != 0;
  if (mount_overlay (snap, userns_fd, flags, ret_fd, err) == 0)
    return 0;
  int e = (*err)->errno_value;
  /* The documented fallback: overlay unavailable (ENODEV) or refusing the
   * filesystem (EINVAL/EOPNOTSUPP) and one layer: a read-only bind of it. */
  if (snap->n_lowers != 1 || (e != ENODEV && e != EOPNOTSUPP))
    return ohbox_error_hint (err, "overlayfs is needed for images with several layers");
  ohbox_error_release (err);
  int fd = clone_layer (snap->lowers[0], userns_fd, err);
  if (fd < 0)
    return -1;
  struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
  if (mount_setattr (fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
    {
      close (fd);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "make layer `%s` read-only", snap->lowers[0]);
    }
  if (ret_read_only)
    *ret_read_only = true;
  *ret_fd = fd;
  return 0;
}

/* Rootless, what the sandbox wrote as another id of the user's range (its
 * command as a user of the image: `run --user`, OpenHands' openhands user)
 * belongs to a subordinate id: outside the sandbox's user namespace the
 * user cannot remove it (a directory of that id, mode 0755). It is removed
 * as root of a new user namespace with the sandbox's maps (as `podman
 * unshare rm`): a child that unshares, whose maps the helpers write, and
 * which then holds exactly the ids the sandbox had. */
static int
remove_as_mapped_root (int dirfd, const char *rel, ohbox_error_t *err)
{
  struct ohbox_userns_plan plan;
  if (ohbox_userns_plan (NULL, NULL, &plan, err) < 0)
    return -1;
  if (plan.single)
    {
      ohbox_userns_plan_release (&plan);
      return ohbox_error (err, OHBOX_ERR_STORE, EACCES,
                          "files of other ids, and no subordinate ids to remove them with");
    }
  int ready[2], go[2];
  if (pipe2 (ready, O_CLOEXEC) < 0)
    {
      ohbox_userns_plan_release (&plan);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
    }
  if (pipe2 (go, O_CLOEXEC) < 0)
    {
      close (ready[0]);
      close (ready[1]);
      ohbox_userns_plan_release (&plan);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
    }
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (ready[0]);
      close (go[1]);
      char c = unshare (CLONE_NEWUSER) == 0 ? 'u' : 'e';
      if (write (ready[1], &c, 1) != 1 || c != 'u' || read (go[0], &c, 1) != 1 || c != 'g')
        _exit (2);
      if (setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0)
        _exit (3);
      ohbox_error_t e = NULL;
      _exit (ohbox_rm_rf_at (dirfd, rel, &e) == 0 ? 0 : 1);
    }
  close (ready[1]);
  close (go[0]);
  int r = 0;
  char c = 0;
  if (pid < 0)
    r = ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fork");
  else if (read (ready[0], &c, 1) != 1 || c != 'u')
    r = ohbox_error (err, OHBOX_ERR_STORE, 0, "could not make a user namespace to remove files of other ids");
  else if (ohbox_userns_write_maps (pid, &plan, err) < 0)
    r = -1;
  else if (write (go[1], "g", 1) != 1)
    r = ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "signal the remover");
  close (ready[0]);
  close (go[1]);
  int status = 0;
  while (pid > 0 && waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (r == 0 && !(WIFEXITED (status) && WEXITSTATUS (status) == 0))
    r = ohbox_error (err, OHBOX_ERR_STORE, 0, "removing as root of the sandbox's user namespace failed (status %d)",
                     status);
  ohbox_userns_plan_release (&plan);
  return r;
}

int
ohbox_snapshot_remove (struct ohbox_store *s, const char *id, ohbox_error_t *err)
{
  cleanup_free char *rel = xasprintf (SANDBOXES_DIR "/%s", id);
  if (strchr (id, '/') != NULL || id[0] == '.' || id[0] == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid sandbox id `%s`", id);
  if (ohbox_rm_rf_at (ohbox_store_dirfd (s), rel, err) < 0)
    {
      bool denied = (*err)->errno_value == EACCES || (*err)->errno_value == EPERM;
      if (!denied || geteuid () == 0)
        return ohbox_error_prefix (err, "remove the writable layer of sandbox `%s`", id);
      ohbox_error_release (err);
      if (remove_as_mapped_root (ohbox_store_dirfd (s), rel, err) < 0)
        return ohbox_error_prefix (err, "remove the writable layer of sandbox `%s`", id);
    }
  return 0;
}

int
ohbox_snapshot_layers_in_use (struct ohbox_store *s, int (*fn) (const char *diff_id, void *data), void *data,
                              ohbox_error_t *err)
{
  cleanup_close int dfd = ohbox_openat_beneath (ohbox_store_dirfd (s), SANDBOXES_DIR,
                                                O_DIRECTORY | O_RDONLY | O_CLOEXEC, 0, 0);
  if (dfd < 0)
    {
      if (errno == ENOENT)
        return 0;
      return ohbox_error_sys (err, OHBOX_ERR_STORE, "open `%s/" SANDBOXES_DIR "`", ohbox_store_root (s));
    }
  cleanup_dir DIR *d = fdopendir (dfd);
  if (d == NULL)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "opendir `%s/" SANDBOXES_DIR "`", ohbox_store_root (s));
  dfd = -1;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (de->d_name[0] == '.')
        continue;
      cleanup_free char *path = xasprintf ("%s/layers", de->d_name);
      cleanup_free char *text = NULL;
      size_t len;
      ohbox_error_t e = NULL;
      if (ohbox_read_file_at (dirfd (d), path, LAYERS_FILE_MAX, &text, &len, &e) < 0)
        {
          /* A sandbox dir being created has no list yet: nothing to keep. */
          bool missing = e->errno_value == ENOENT;
          ohbox_error_release (&e);
          if (missing)
            continue;
          return ohbox_error (err, OHBOX_ERR_STORE, 0, "read `%s/" SANDBOXES_DIR "/%s`", ohbox_store_root (s), path);
        }
      char *save = NULL;
      for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
        {
          int r = fn (line, data);
          if (r < 0)
            return r;
        }
    }
  return 0;
}
