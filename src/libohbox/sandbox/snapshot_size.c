/* snapshot_size.c: a writable layer of bounded size (`ohbox run
 * --storage-size`, snapshot.h).
 *
 * The upper and work directories go on an ext4 filesystem of their own:
 * a sparse file ROOT/sandboxes/<id>/upper.img of the size asked, made by
 * mkfs.ext4 (e2fsprogs, Priority: required) without a journal (the
 * writable layer does not outlive a crash of the host: see "volatile" in
 * snapshot.c), attached to a loop device that detaches itself once nothing
 * uses it (LO_FLAGS_AUTOCLEAR), and mounted as a detached mount (nothing
 * in the host's mount table). A sandbox that fills it gets ENOSPC; the
 * store's filesystem gives the file at most its size, whatever the
 * sandbox writes. The mount lives as long as the sandbox's overlay, the
 * file until the sandbox is removed.
 *
 * Why not a project quota: it needs the store's filesystem mounted with
 * prjquota (XFS pquota, ext4 prjquota), which most hosts' are not; a
 * loop-mounted file works on any filesystem that holds sparse files, for
 * 16 ms (1 GiB) to 46 ms (100 GiB) more per start, mostly mkfs (measured
 * on an ext4 store, README "Start"). A size-limited tmpfs would take the
 * host's memory instead of its disk. Root only: unprivileged users may
 * not attach loop devices. */
#include "config.h"
#include "sandbox/snapshot.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMAGE "upper.img"
#define MKFS_OUTPUT_MAX 2048

static const char *
find_mkfs (void)
{
  static const char *const paths[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/bin/mkfs.ext4" };
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
    if (access (paths[i], X_OK) == 0)
      return paths[i];
  return NULL;
}

/* mkfs.ext4 on PATH, its output kept for the error message. */
static int
make_filesystem (const char *path, ohbox_error_t *err)
{
  const char *mkfs = find_mkfs ();
  if (mkfs == NULL)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "--storage-size needs mkfs.ext4 (package e2fsprogs)");
  /* No journal, no blocks reserved for root, inode tables left to be
   * zeroed lazily (they are: the file is sparse), quiet. */
  char *const argv[] = {
    (char *) mkfs, "-q", "-F", "-O", "^has_journal", "-m", "0", "-E", "nodiscard,lazy_itable_init=1",
    (char *) path, NULL
  };
  char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
  char text[MKFS_OUTPUT_MAX];
  int status;
  if (ohbox_run_helper (mkfs, argv, envp, text, sizeof text, &status, OHBOX_ERR_SANDBOX, err) < 0)
    return -1;
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return ohbox_error (err, OHBOX_ERR_STORE, 0, "`%s` failed (status %d)%s%s", mkfs, status, text[0] ? ": " : "",
                        text);
  return 0;
}

/* A free loop device backed by IMAGE_FD, which detaches itself once its
 * last user is gone. Returns its fd; *RET_PATH gets its name. */
static int
attach_loop (int image_fd, char *ret_path, size_t size, ohbox_error_t *err)
{
  cleanup_close int ctl = open ("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open /dev/loop-control (--storage-size needs loop devices)");
  /* Another process may take the device between GET_FREE and CONFIGURE. */
  for (int tries = 0; tries < 64; tries++)
    {
      int n = ioctl (ctl, LOOP_CTL_GET_FREE);
      if (n < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "find a free loop device");
      snprintf (ret_path, size, "/dev/loop%d", n);
      int fd = open (ret_path, O_RDWR | O_CLOEXEC);
      if (fd < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", ret_path);
      struct loop_config cfg;
      memset (&cfg, 0, sizeof cfg);
      cfg.fd = (uint32_t) image_fd;
      cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
      if (ioctl (fd, LOOP_CONFIGURE, &cfg) == 0)
        return fd;
      int e = errno;
      close (fd);
      if (e != EBUSY)
        {
          errno = e;
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "attach `%s`", ret_path);
        }
    }
  return ohbox_error (err, OHBOX_ERR_STORE, 0, "no free loop device after 64 tries");
}

/* The filesystem on DEVICE as a detached mount (nosuid, nodev). */
static int
mount_device (const char *device, ohbox_error_t *err)
{
  cleanup_close int fs = fsopen ("ext4", FSOPEN_CLOEXEC);
  if (fs < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fsopen `ext4`");
  if (fsconfig (fs, FSCONFIG_SET_STRING, "source", device, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "ext4 source `%s`", device);
  /* The file is sparse: its inode tables read as zeros already, the
   * kernel need not write them. */
  if (fsconfig (fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL, 0) < 0 && errno != EINVAL)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "ext4 option `noinit_itable`");
  if (fsconfig (fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "mount `%s`", device);
  int mfd = fsmount (fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  if (mfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fsmount `%s`", device);
  return mfd;
}

int
ohbox_snapshot_bound_upper (struct ohbox_snapshot *snap, int dirfd, uint64_t size, uid_t uid, gid_t gid,
                            ohbox_error_t *err)
{
  if (size < OHBOX_SNAPSHOT_MIN_SIZE)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--storage-size %llu is too small: at least %d MiB",
                        (unsigned long long) size, OHBOX_SNAPSHOT_MIN_SIZE >> 20);
  if (geteuid () != 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "--storage-size needs root: the writable layer is bounded "
                        "by a filesystem of its own on a loop device, which only root may attach");
  cleanup_close int img = openat (dirfd, IMAGE, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (img < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "create `%s/" IMAGE "`", snap->dir);
  if (ftruncate (img, (off_t) size) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "size `%s/" IMAGE "`", snap->dir);
  cleanup_free char *path = xasprintf ("%s/" IMAGE, snap->dir);
  if (make_filesystem (path, err) < 0)
    return -1;
  char device[32];
  cleanup_close int loop = attach_loop (img, device, sizeof device, err);
  if (loop < 0)
    return -1;
  int mfd = mount_device (device, err);
  if (mfd < 0)
    return -1;
  /* The mount holds the device now: closing ours lets it detach itself
   * when the mount goes. */
  if (mkdirat (mfd, "upper", 0755) < 0 || mkdirat (mfd, "work", 0700) < 0
      || fchownat (mfd, "upper", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "prepare the writable layer on `%s`", device);
      close (mfd);
      return -1;
    }
  snap->upper_mnt_fd = mfd;
  free (snap->upper);
  free (snap->work);
  snap->upper = xasprintf ("/proc/self/fd/%d/upper", mfd);
  snap->work = xasprintf ("/proc/self/fd/%d/work", mfd);
  return 0;
}
