/* layer.c: unpacking one image layer; see layer.h for the contract.
 *
 * Two threads: layer_stream.c decompresses the blob and bounds the
 * uncompressed stream on a thread of its own, and hands it over in blocks
 * (hashed for the DiffID as they are taken) to the tar reader here, which
 * creates the entries in the caller's thread. Inflating and creating files
 * are the two big costs of an unpack; this way they overlap.
 *
 * Entries are written by hand, never with archive_write_disk (which resolves
 * paths against the process-wide cwd and cannot make overlay whiteouts):
 * the parent directory of every entry is opened beneath the layer root with
 * RESOLVE_NO_SYMLINKS, the entry is created in it with O_EXCL/O_NOFOLLOW
 * semantics, and metadata goes through the entry's own fd or *at(...,
 * AT_SYMLINK_NOFOLLOW). Nothing the archive says can make us follow a
 * symlink, so nothing outside the layer is ever touched. */
#include "config.h"
#include "image/layer.h"

#include "common/dl_archive.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "image/layer_stream.h"
#include "common/utils.h"

/* Memory for deferred directory metadata (paths + records) is bounded: a tar
 * costs the attacker 512 bytes per directory, which is not a bound at a
 * 64 GiB size limit. 256 MiB is > 1M directories with long paths. */
#define MAX_DIR_RECORD_BYTES (256ULL * 1024 * 1024)
#define SHOWN_MAX 200

/* A directory whose mode and times are applied once every entry is written. */
struct dir_record
{
  size_t path_off; /* into unpack.dir_paths */
  size_t index;    /* archive order, to keep the last of duplicates */
  unsigned depth;
  mode_t mode;
  struct timespec times[2];
};

struct unpack
{
  struct layer_stream *s;
  struct archive *ar;
  int root_fd;
  bool privileged;
  uint64_t max;
  struct ohbox_layer_stats *stats;
  const char *name; /* the entry's name as written in the archive */
  char shown[SHOWN_MAX + 4];
  char path[PATH_MAX];   /* cleaned entry path */
  char target[PATH_MAX]; /* cleaned hardlink target */
  /* Consecutive entries usually share their parent: keep it open. */
  char parent[PATH_MAX];
  size_t parent_len;
  int parent_fd;
  struct dir_record *dirs;
  size_t n_dirs;
  size_t cap_dirs;
  struct ohbox_buf dir_paths;
  struct ohbox_unpack_budget *budget;
  ohbox_error_t budget_err; /* why the budget stopped the unpack */
};

int
ohbox_unpack_budget_take (struct ohbox_unpack_budget *b, uint64_t n, ohbox_error_t *err)
{
  uint64_t used = atomic_fetch_add (&b->used, n) + n;
  char a[32], m[32];
  if (b->max > 0 && used > b->max)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                        "the image's layers exceed the unpacked size limit of %s (%llu bytes) together",
                        ohbox_format_size (b->max, a), (unsigned long long) b->max);
  uint64_t next = atomic_load (&b->next_check);
  /* One thread looks at a time; the others go on until the next step. */
  if (used < next || !atomic_compare_exchange_strong (&b->next_check, &next, used + b->check_every))
    return 0;
  struct statvfs st;
  if (fstatvfs (b->fs_fd, &st) < 0)
    return ohbox_error_errno (err, "statvfs `%s`", b->fs_name);
  uint64_t avail = (uint64_t) st.f_bavail * st.f_frsize;
  /* What is written before the next look: these N bytes, and a step. */
  if (avail >= b->min_free && avail - b->min_free >= n + b->check_every)
    return 0;
  /* Stop before the disk is full: the sandboxes and everything else on
   * that filesystem still have the margin. */
  return ohbox_error (err, OHBOX_ERR_STORE, ENOSPC,
                      "unpacking would leave the store `%s` less than %s free (%s free now); stopped before its "
                      "disk is full",
                      b->fs_name, ohbox_format_size (b->min_free, m), ohbox_format_size (avail, a));
}

/* The tar reader's read callback: the blocks of the uncompressed stream. */
static la_ssize_t
tar_read (struct archive *a, void *data, const void **buf)
{
  struct unpack *u = data;
  ssize_t n = layer_stream_next (u->s, buf);
  if (n < 0)
    archive_set_error (a, EIO, "layer stream failed");
  /* Counted as the tar reader takes the bytes, just before the entries
   * they hold are written: the free-space checks see what is on disk. */
  if (n > 0 && u->budget && ohbox_unpack_budget_take (u->budget, (uint64_t) n, &u->budget_err) < 0)
    {
      archive_set_error (a, ENOSPC, "layer unpack stopped");
      return -1;
    }
  return n;
}

/* ---- names and paths ---- */

/* The entry name for messages: it comes from the archive, so control
 * characters are replaced and the length is bounded. */
static const char *
show (char *buf, const char *name)
{
  size_t j = 0;
  for (size_t i = 0; name[i] && j < SHOWN_MAX; i++)
    buf[j++] = ((unsigned char) name[i] < 0x20 || name[i] == 0x7f) ? '?' : name[i];
  if (strlen (name) > SHOWN_MAX)
    memcpy (buf + j, "...", 3), j += 3;
  buf[j] = '\0';
  return buf;
}

static const char *
shown (struct unpack *u)
{
  return show (u->shown, u->name);
}

/* Writes NAME without leading "./", empty or "." components and trailing
 * "/" into OUT ("" is the layer root). -1: absolute or with a ".."
 * component; -2: longer than PATH_MAX. */
static int
clean_path (const char *name, char out[PATH_MAX])
{
  size_t o = 0;
  if (name[0] == '/')
    return -1;
  for (const char *p = name; *p;)
    {
      const char *end = strchrnul (p, '/');
      size_t n = (size_t) (end - p);
      if (n == 2 && p[0] == '.' && p[1] == '.')
        return -1;
      if (n > 0 && !(n == 1 && p[0] == '.'))
        {
          if (o + n + 2 > PATH_MAX)
            return -2;
          if (o)
            out[o++] = '/';
          memcpy (out + o, p, n);
          o += n;
        }
      p = *end ? end + 1 : end;
    }
  out[o] = '\0';
  return 0;
}

static int
check_path (struct unpack *u, const char *name, char out[PATH_MAX], const char *what, ohbox_error_t *err)
{
  char buf[SHOWN_MAX + 4];
  int r = clean_path (name, out);
  if (r == 0)
    return 0;
  const char *why = r == -1 ? "leaves the layer" : "is too long";
  if (what == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: path %s", shown (u), why);
  return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: %s`%s` %s", shown (u), what, show (buf, name),
                      why);
}

/* Error for an openat2 beneath the layer that failed: the kinds that mean
 * "the archive tried to leave the layer" are integrity errors. */
static int
resolve_error (struct unpack *u, const char *what, const char *path, ohbox_error_t *err)
{
  char buf[SHOWN_MAX + 4];
  if (errno == ELOOP)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: %s`%s` passes through a symlink", shown (u),
                        what, show (buf, path));
  if (errno == EXDEV)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: %s`%s` leaves the layer", shown (u), what,
                        show (buf, path));
  if (errno == ENOTDIR)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: %s`%s` is not a directory", shown (u), what,
                        show (buf, path));
  return ohbox_error_errno (err, "layer entry `%s`: open %s`%s`", shown (u), what, show (buf, path));
}

/* Creates the missing directories of PARENT (a cleaned path) one component
 * at a time, each opened with O_NOFOLLOW|O_DIRECTORY from the previous one:
 * a symlink anywhere on the way is refused, never followed. */
static int
make_parents (struct unpack *u, char *parent, ohbox_error_t *err)
{
  int cur = u->root_fd;
  for (char *p = parent; *p;)
    {
      char *end = strchrnul (p, '/');
      char saved = *end;
      *end = '\0';
      int next = openat (cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0 && errno == ENOENT)
        {
          if (mkdirat (cur, p, 0755) == 0 || errno == EEXIST)
            next = openat (cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          /* 0755 whatever the process umask is (fchmod on our own new directory). */
          if (next >= 0 && fchmod (next, 0755) < 0)
            {
              close (next);
              next = -1;
              errno = EPERM;
            }
        }
      int saved_errno = errno;
      if (cur != u->root_fd)
        close (cur);
      if (next < 0)
        {
          /* PARENT is cut after the component that failed: the message names it. */
          errno = saved_errno;
          resolve_error (u, "parent ", parent, err);
          *end = saved;
          return -1;
        }
      *end = saved;
      cur = next;
      p = saved ? end + 1 : end;
    }
  return cur;
}

/* The parent directory of the current entry (borrowed fd: do not close).
 * PARENT is a cleaned path, "" for the root. */
static int
open_parent (struct unpack *u, char *parent, ohbox_error_t *err)
{
  size_t len = strlen (parent);
  if (len == 0)
    return u->root_fd;
  if (u->parent_fd >= 0 && len == u->parent_len && memcmp (parent, u->parent, len) == 0)
    return u->parent_fd;
  if (u->parent_fd >= 0)
    close (u->parent_fd);
  u->parent_fd = -1;
  int fd = ohbox_openat_beneath (u->root_fd, parent, O_RDONLY | O_DIRECTORY, 0, 0);
  if (fd < 0 && errno == ENOENT)
    fd = make_parents (u, parent, err);
  else if (fd < 0)
    return resolve_error (u, "parent ", parent, err);
  if (fd < 0)
    return -1;
  memcpy (u->parent, parent, len + 1);
  u->parent_len = len;
  u->parent_fd = fd;
  return fd;
}

/* Removes whatever is at PFD/NAME (a directory recursively, never following
 * a symlink) so the entry can take its place. The cached parent may be
 * inside what is removed: forget it (it stays open, PFD may be it, until the
 * next open_parent closes it). */
static int
remove_existing (struct unpack *u, int pfd, const char *name, ohbox_error_t *err)
{
  u->parent_len = SIZE_MAX;
  if (ohbox_rm_rf_at (pfd, name, err) < 0)
    return ohbox_error_prefix (err, "layer entry `%s`", shown (u));
  return 0;
}

/* ---- metadata ---- */

static void
entry_times (struct archive_entry *e, struct timespec ts[2])
{
  ts[0].tv_sec = archive_entry_atime (e);
  ts[0].tv_nsec = archive_entry_atime_is_set (e) ? archive_entry_atime_nsec (e) : UTIME_OMIT;
  ts[1].tv_sec = archive_entry_mtime (e);
  ts[1].tv_nsec = archive_entry_mtime_is_set (e) ? archive_entry_mtime_nsec (e) : UTIME_OMIT;
}

/* Ownership from the archive's numeric ids, only when privileged. FD >= 0:
 * through the fd; otherwise PFD/NAME without following a symlink. */
static int
apply_owner (struct unpack *u, struct archive_entry *e, int fd, int pfd, const char *name, ohbox_error_t *err)
{
  if (!u->privileged)
    return 0;
  la_int64_t uid = archive_entry_uid (e), gid = archive_entry_gid (e);
  if (uid < 0 || uid >= (la_int64_t) UINT32_MAX || gid < 0 || gid >= (la_int64_t) UINT32_MAX)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: invalid owner %lld:%lld", shown (u),
                        (long long) uid, (long long) gid);
  int r = fd >= 0 ? fchown (fd, (uid_t) uid, (gid_t) gid)
                  : fchownat (pfd, name, (uid_t) uid, (gid_t) gid, AT_SYMLINK_NOFOLLOW);
  if (r < 0)
    return ohbox_error_errno (err, "layer entry `%s`: chown", shown (u));
  return 0;
}

/* Extended attributes from the pax headers. overlay.* names are refused: they
 * would let a layer forge whiteouts, opaque dirs or redirects. Unprivileged,
 * only user.* is set. FD >= 0: through the fd; otherwise (symlinks,
 * devices, fifos, which cannot be opened safely) lsetxattr on
 * /proc/self/fd/PFD/NAME, which never follows NAME. */
static int
apply_xattrs (struct unpack *u, struct archive_entry *e, int fd, int pfd, const char *name, ohbox_error_t *err)
{
  const char *key;
  const void *value;
  size_t size;
  char buf[SHOWN_MAX + 4];
  char proc_path[PATH_MAX];
  if (archive_entry_xattr_reset (e) == 0)
    return 0;
  while (archive_entry_xattr_next (e, &key, &value, &size) == ARCHIVE_OK)
    {
      if (strncmp (key, "trusted.overlay.", 16) == 0 || strncmp (key, "user.overlay.", 13) == 0)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: xattr `%s` is reserved for overlayfs",
                            shown (u), show (buf, key));
      /* The kernel allows user.* only on regular files and directories (FD >= 0). */
      if (strncmp (key, "user.", 5) == 0 ? fd < 0 : !u->privileged)
        continue;
      int r;
      if (fd >= 0)
        r = fsetxattr (fd, key, value, size, 0);
      else
        {
          snprintf (proc_path, sizeof proc_path, "/proc/self/fd/%d/%s", pfd, name);
          r = lsetxattr (proc_path, key, value, size, 0);
        }
      if (r < 0)
        {
          /* The filesystem has no xattrs, or an LSM owns security.*: not the layer's fault. */
          if (errno == ENOTSUP || (errno == EPERM && strncmp (key, "security.", 9) == 0))
            continue;
          return ohbox_error_errno (err, "layer entry `%s`: set xattr `%s`", shown (u), show (buf, key));
        }
    }
  return 0;
}

static int
set_opaque (struct unpack *u, int dirfd, ohbox_error_t *err)
{
  const char *key = u->privileged ? "trusted.overlay.opaque" : "user.overlay.opaque";
  if (fsetxattr (dirfd, key, "y", 1, 0) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: set xattr `%s`", shown (u), key);
  return 0;
}

static int
record_dir (struct unpack *u, const char *path, struct archive_entry *e, ohbox_error_t *err)
{
  size_t len = strlen (path);
  if (u->dir_paths.len + len + 1 + (u->n_dirs + 1) * sizeof (struct dir_record) > MAX_DIR_RECORD_BYTES)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: too many directories in the layer", shown (u));
  if (u->n_dirs == u->cap_dirs)
    {
      u->cap_dirs = u->cap_dirs ? u->cap_dirs * 2 : 256;
      u->dirs = xrealloc (u->dirs, u->cap_dirs * sizeof *u->dirs);
    }
  struct dir_record *d = &u->dirs[u->n_dirs];
  d->path_off = u->dir_paths.len;
  d->index = u->n_dirs++;
  d->depth = 0;
  for (size_t i = 0; i < len; i++)
    d->depth += path[i] == '/';
  d->depth += len > 0;
  d->mode = archive_entry_perm (e) & 07777;
  entry_times (e, d->times);
  ohbox_buf_append (&u->dir_paths, path, len + 1);
  return 0;
}

/* Deepest first, so a read-only or 0000 directory never blocks reaching its
 * children and setting a child's times does not change the parent's mtime;
 * for a path listed twice only the last entry counts. */
static int
compare_dirs (const void *a, const void *b, void *arg)
{
  const struct dir_record *x = a, *y = b;
  const char *paths = arg;
  if (x->depth != y->depth)
    return x->depth > y->depth ? -1 : 1;
  int c = strcmp (paths + x->path_off, paths + y->path_off);
  if (c)
    return c;
  return x->index < y->index ? -1 : 1;
}

static int
apply_dir_records (struct unpack *u, ohbox_error_t *err)
{
  char buf[SHOWN_MAX + 4];
  if (u->n_dirs == 0)
    return 0;
  qsort_r (u->dirs, u->n_dirs, sizeof *u->dirs, compare_dirs, u->dir_paths.data);
  for (size_t i = 0; i < u->n_dirs; i++)
    {
      const struct dir_record *d = &u->dirs[i];
      const char *path = u->dir_paths.data + d->path_off;
      if (i + 1 < u->n_dirs && strcmp (path, u->dir_paths.data + u->dirs[i + 1].path_off) == 0)
        continue;
      cleanup_close int fd = -1;
      if (d->depth == 0)
        fd = dup (u->root_fd);
      else
        fd = ohbox_openat_beneath (u->root_fd, path, O_RDONLY | O_DIRECTORY, 0, 0);
      if (fd < 0)
        {
          /* Replaced later in the archive (file, symlink, whiteout). */
          if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
            continue;
          return ohbox_error_errno (err, "layer directory `%s`: open", show (buf, path));
        }
      if (fchmod (fd, d->mode) < 0)
        return ohbox_error_errno (err, "layer directory `%s`: chmod", show (buf, path));
      if (futimens (fd, d->times) < 0)
        return ohbox_error_errno (err, "layer directory `%s`: set times", show (buf, path));
    }
  return 0;
}

/* ---- entries ---- */

/* Error from the tar reader: the stream's own error first (I/O, corrupt
 * compressed stream, size limit, failed download), else libarchive's message. */
static int
archive_failure (struct unpack *u, const char *what, ohbox_error_t *err)
{
  struct archive *a = u->ar;
  if (u->budget_err)
    {
      ohbox_error_move (err, &u->budget_err);
      return -1;
    }
  if (layer_stream_take_error (u->s, err))
    return -1;
  const char *msg = archive_error_string (a);
  ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%s: %s", what, msg ? msg : "unknown error");
  /* EILSEQ is libarchive's ARCHIVE_ERRNO_FILE_FORMAT: not a tar, gzip or zstd stream. */
  if (archive_errno (a) == EILSEQ)
    ohbox_error_hint (err, "a layer must be a tar stream, uncompressed or compressed with gzip or zstd");
  return -1;
}

static int
write_regular (struct unpack *u, struct archive_entry *e, int pfd, const char *base, ohbox_error_t *err)
{
  la_int64_t size = archive_entry_size (e);
  if (size < 0 || (uint64_t) size > u->max)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                        "layer entry `%s`: size %lld exceeds the uncompressed size limit of %llu bytes", shown (u),
                        (long long) size, (unsigned long long) u->max);
  cleanup_close int fd = openat (pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST)
    {
      if (remove_existing (u, pfd, base, err) < 0)
        return -1;
      fd = openat (pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
  if (fd < 0)
    return ohbox_error_errno (err, "layer entry `%s`: create", shown (u));

  /* One pwrite loop per block; blocks of sparse files come with offsets. */
  la_int64_t end = 0;
  for (;;)
    {
      const void *buf;
      size_t len;
      la_int64_t off;
      int r = archive_read_data_block (u->ar, &buf, &len, &off);
      if (r == ARCHIVE_EOF)
        break;
      if (r < ARCHIVE_WARN)
        {
          char what[SHOWN_MAX + 32];
          snprintf (what, sizeof what, "layer entry `%s`: read", shown (u));
          return archive_failure (u, what, err);
        }
      if (off < 0 || (uint64_t) off + len > (uint64_t) size)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: data beyond its size", shown (u));
      const char *p = buf;
      while (len > 0)
        {
          ssize_t w = pwrite (fd, p, len, off);
          if (w < 0)
            {
              if (errno == EINTR)
                continue;
              return ohbox_error_errno (err, "layer entry `%s`: write", shown (u));
            }
          p += w;
          len -= (size_t) w;
          off += w;
        }
      if (off > end)
        end = off;
    }
  if (end < size && ftruncate (fd, size) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: truncate", shown (u));

  /* chown first (it clears setuid bits and file capabilities), xattrs before
   * the final mode (a 0400 file refuses user.* xattrs), times last. */
  struct timespec ts[2];
  entry_times (e, ts);
  if (apply_owner (u, e, fd, -1, NULL, err) < 0 || apply_xattrs (u, e, fd, -1, NULL, err) < 0)
    return -1;
  if (fchmod (fd, archive_entry_perm (e) & 07777) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: chmod", shown (u));
  if (futimens (fd, ts) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: set times", shown (u));
  return 0;
}

static int
write_directory (struct unpack *u, struct archive_entry *e, int pfd, const char *base, ohbox_error_t *err)
{
  /* 0700 until the end: the archive's mode is applied last. */
  bool opaque = false;
  if (mkdirat (pfd, base, 0700) < 0)
    {
      struct stat st;
      if (errno != EEXIST)
        return ohbox_error_errno (err, "layer entry `%s`: mkdir", shown (u));
      if (fstatat (pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return ohbox_error_errno (err, "layer entry `%s`: stat", shown (u));
      if (!S_ISDIR (st.st_mode))
        {
          /* A directory replacing a whiteout of this layer must still hide
           * the lower layers' directory: overlayfs says so with opaque. */
          opaque = S_ISCHR (st.st_mode) && st.st_rdev == makedev (0, 0);
          u->parent_len = SIZE_MAX;
          if (unlinkat (pfd, base, 0) < 0 || mkdirat (pfd, base, 0700) < 0)
            return ohbox_error_errno (err, "layer entry `%s`: replace with a directory", shown (u));
        }
    }
  if (apply_owner (u, e, -1, pfd, base, err) < 0)
    return -1;
  if (opaque || archive_entry_xattr_count (e) > 0)
    {
      cleanup_close int fd = openat (pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        return ohbox_error_errno (err, "layer entry `%s`: open", shown (u));
      if (apply_xattrs (u, e, fd, -1, NULL, err) < 0 || (opaque && set_opaque (u, fd, err) < 0))
        return -1;
    }
  return record_dir (u, u->path, e, err);
}

static int
write_symlink (struct unpack *u, struct archive_entry *e, int pfd, const char *base, ohbox_error_t *err)
{
  const char *target = archive_entry_symlink (e);
  if (target == NULL)
    target = archive_entry_symlink_utf8 (e);
  if (target == NULL || target[0] == '\0')
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: symlink without a target", shown (u));
  if (symlinkat (target, pfd, base) < 0)
    {
      if (errno != EEXIST)
        return ohbox_error_errno (err, "layer entry `%s`: symlink", shown (u));
      if (remove_existing (u, pfd, base, err) < 0)
        return -1;
      if (symlinkat (target, pfd, base) < 0)
        return ohbox_error_errno (err, "layer entry `%s`: symlink", shown (u));
    }
  /* Never chmod a symlink (that would follow it: CVE-2021-32760); its owner
   * and times are set on the link itself. */
  struct timespec ts[2];
  entry_times (e, ts);
  if (apply_owner (u, e, -1, pfd, base, err) < 0 || apply_xattrs (u, e, -1, pfd, base, err) < 0)
    return -1;
  if (utimensat (pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: set times", shown (u));
  return 0;
}

/* Devices (privileged only) and fifos: created with mknodat and never opened
 * (opening a device or a fifo has side effects or blocks). */
static int
write_node (struct unpack *u, struct archive_entry *e, int pfd, const char *base, mode_t type, ohbox_error_t *err)
{
  dev_t dev = type == S_IFIFO ? 0 : makedev (archive_entry_rdevmajor (e), archive_entry_rdevminor (e));
  if (mknodat (pfd, base, type | 0600, dev) < 0)
    {
      if (errno != EEXIST)
        return ohbox_error_errno (err, "layer entry `%s`: mknod", shown (u));
      if (remove_existing (u, pfd, base, err) < 0)
        return -1;
      if (mknodat (pfd, base, type | 0600, dev) < 0)
        return ohbox_error_errno (err, "layer entry `%s`: mknod", shown (u));
    }
  struct timespec ts[2];
  entry_times (e, ts);
  if (apply_owner (u, e, -1, pfd, base, err) < 0 || apply_xattrs (u, e, -1, pfd, base, err) < 0)
    return -1;
  /* glibc implements AT_SYMLINK_NOFOLLOW with an O_PATH fd: never follows. */
  if (fchmodat (pfd, base, archive_entry_perm (e) & 07777, AT_SYMLINK_NOFOLLOW) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: chmod", shown (u));
  if (utimensat (pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: set times", shown (u));
  return 0;
}

/* A hardlink: the target must already be in this layer, reached without any
 * symlink, and not be a directory. linkat without AT_SYMLINK_FOLLOW links
 * the target itself even when it is a symlink. */
static int
write_hardlink (struct unpack *u, const char *link, int pfd, const char *base, ohbox_error_t *err)
{
  char buf[SHOWN_MAX + 4];
  if (check_path (u, link, u->target, "hardlink target ", err) < 0)
    return -1;
  if (u->target[0] == '\0')
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: hardlink to the layer root", shown (u));
  char *slash = strrchr (u->target, '/');
  const char *tbase = slash ? slash + 1 : u->target;
  cleanup_close int tfd = -1;
  int tpfd = u->root_fd;
  struct stat tst;
  if (slash)
    {
      *slash = '\0';
      tfd = ohbox_openat_beneath (u->root_fd, u->target, O_PATH | O_DIRECTORY, 0, 0);
      *slash = '/';
      if (tfd < 0 && errno != ENOENT && errno != ENOTDIR)
        return resolve_error (u, "hardlink target ", link, err);
      tpfd = tfd;
    }
  if (tpfd < 0 || fstatat (tpfd, tbase, &tst, AT_SYMLINK_NOFOLLOW) < 0)
    {
      if (tpfd < 0 || errno == ENOENT)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                            "layer entry `%s`: hardlink target `%s` does not exist in the layer", shown (u),
                            show (buf, link));
      return ohbox_error_errno (err, "layer entry `%s`: stat hardlink target `%s`", shown (u), show (buf, link));
    }
  if (S_ISDIR (tst.st_mode))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: hardlink target `%s` is a directory", shown (u),
                        show (buf, link));
  if (linkat (tpfd, tbase, pfd, base, 0) == 0)
    return 0;
  if (errno != EEXIST)
    return ohbox_error_errno (err, "layer entry `%s`: link", shown (u));
  struct stat st;
  if (fstatat (pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == tst.st_dev && st.st_ino == tst.st_ino)
    return 0; /* already that inode (a link to itself) */
  if (remove_existing (u, pfd, base, err) < 0)
    return -1;
  if (linkat (tpfd, tbase, pfd, base, 0) < 0)
    return ohbox_error_errno (err, "layer entry `%s`: link", shown (u));
  return 0;
}

/* `.wh..wh..opq` marks PFD opaque; `.wh.NAME` replaces NAME with the 0:0
 * character device overlayfs reads as a whiteout; other `.wh..wh.*` names are
 * aufs bookkeeping and ignored. */
static int
write_whiteout (struct unpack *u, int pfd, const char *base, ohbox_error_t *err)
{
  if (strncmp (base, ".wh..wh.", 8) == 0)
    {
      if (strcmp (base + 8, ".opq") != 0)
        return 0;
      if (set_opaque (u, pfd, err) < 0)
        return -1;
      u->stats->whiteouts++;
      return 0;
    }
  const char *name = base + 4;
  if (name[0] == '\0' || strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: invalid whiteout name", shown (u));
  if (remove_existing (u, pfd, name, err) < 0)
    return -1;
  /* Since Linux 5.8 the 0:0 whiteout device needs no CAP_MKNOD. */
  if (mknodat (pfd, name, S_IFCHR, makedev (0, 0)) < 0)
    {
      ohbox_error_errno (err, "layer entry `%s`: create whiteout", shown (u));
      if (errno == EPERM)
        ohbox_error_hint (err, "unprivileged whiteouts need Linux >= 5.8");
      return -1;
    }
  u->stats->whiteouts++;
  return 0;
}

static int
unpack_entry (struct unpack *u, struct archive_entry *e, ohbox_error_t *err)
{
  u->name = archive_entry_pathname (e);
  if (u->name == NULL)
    u->name = archive_entry_pathname_utf8 (e);
  if (u->name == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry with an unreadable name");
  if (check_path (u, u->name, u->path, NULL, err) < 0)
    return -1;
  const char *link = archive_entry_hardlink (e);
  if (link == NULL)
    link = archive_entry_hardlink_utf8 (e);
  mode_t type = archive_entry_filetype (e);
  u->stats->entries++;

  /* The layer root: only a directory may name it, which then sets the
   * root's metadata. A symlink there would redirect everything after it
   * (umoci CVE-2021-29136). */
  if (u->path[0] == '\0')
    {
      if (link != NULL || type != AE_IFDIR)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: only a directory may name the layer root",
                            shown (u));
      if (apply_owner (u, e, u->root_fd, -1, NULL, err) < 0 || apply_xattrs (u, e, u->root_fd, -1, NULL, err) < 0)
        return -1;
      return record_dir (u, "", e, err);
    }

  char *slash = strrchr (u->path, '/');
  const char *base = slash ? slash + 1 : u->path;
  int pfd;
  if (slash)
    {
      *slash = '\0';
      pfd = open_parent (u, u->path, err);
      *slash = '/';
    }
  else
    pfd = u->root_fd;
  if (pfd < 0)
    return -1;

  if (strncmp (base, ".wh.", 4) == 0)
    return write_whiteout (u, pfd, base, err);
  if (link != NULL)
    return write_hardlink (u, link, pfd, base, err);
  switch (type)
    {
    case AE_IFREG:
      return write_regular (u, e, pfd, base, err);
    case AE_IFDIR:
      return write_directory (u, e, pfd, base, err);
    case AE_IFLNK:
      return write_symlink (u, e, pfd, base, err);
    case AE_IFIFO:
      return write_node (u, e, pfd, base, S_IFIFO, err);
    case AE_IFCHR:
    case AE_IFBLK:
      /* 0:0 is the whiteout device, which the kernel lets anyone create. */
      if (!u->privileged && !(type == AE_IFCHR && archive_entry_rdev (e) == 0))
        {
          u->stats->skipped_devices++;
          return 0;
        }
      return write_node (u, e, pfd, base, type == AE_IFCHR ? S_IFCHR : S_IFBLK, err);
    case AE_IFSOCK:
      /* A socket is only meaningful to the process that bound it. */
      u->stats->skipped_devices++;
      return 0;
    default:
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "layer entry `%s`: unsupported file type 0%o", shown (u),
                          (unsigned) type);
    }
}

/* ---- driver ---- */

static void
unpack_release (struct unpack *u)
{
  /* The producer first: it may be blocked on the ring. */
  layer_stream_free (u->s);
  if (u->ar)
    archive_read_free (u->ar);
  if (u->parent_fd >= 0)
    close (u->parent_fd);
  if (u->root_fd >= 0)
    close (u->root_fd);
  free (u->dirs);
  ohbox_buf_free (&u->dir_paths);
  ohbox_error_release (&u->budget_err);
}

static int
unpack_all (struct unpack *u, int blob_fd, int dest_dirfd, const struct ohbox_layer_options *opts, ohbox_error_t *err)
{
  struct archive_entry *e;
  /* Our own fd: the caller's may be O_PATH, and fchmod/fsetxattr need a real one. */
  u->root_fd = ohbox_openat_beneath (dest_dirfd, ".", O_RDONLY | O_DIRECTORY, 0, 0);
  if (u->root_fd < 0)
    return ohbox_error_errno (err, "open layer directory");
  if (layer_stream_start (blob_fd, opts, u->max, &u->s, err) < 0)
    return -1;

  u->ar = archive_read_new ();
  if (u->ar == NULL)
    abort ();
  if (archive_read_support_format_tar (u->ar) != ARCHIVE_OK)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "libarchive: %s", archive_error_string (u->ar));
  if (archive_read_open (u->ar, u, NULL, tar_read, NULL) != ARCHIVE_OK)
    return archive_failure (u, "layer tar stream", err);

  for (;;)
    {
      int r = archive_read_next_header (u->ar, &e);
      if (r == ARCHIVE_EOF)
        break;
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        return archive_failure (u, "layer tar stream", err);
      if (unpack_entry (u, e, err) < 0)
        return -1;
    }
  /* The DiffID covers the bytes after the end-of-archive marker too: the
   * stream is read to its end (the tar reader may have stopped short). */
  for (;;)
    {
      const void *buf;
      ssize_t n = layer_stream_next (u->s, &buf);
      if (n < 0)
        return archive_failure (u, "layer blob", err);
      if (n == 0)
        break;
    }
  return apply_dir_records (u, err);
}

int
ohbox_layer_unpack (int blob_fd, int dest_dirfd, const struct ohbox_layer_options *opts,
                    char diffid_out[OHBOX_DIGEST_LEN + 1], struct ohbox_layer_stats *stats, ohbox_error_t *err)
{
  static const struct ohbox_layer_options no_options;
  struct ohbox_layer_stats local_stats;
  if (opts == NULL)
    opts = &no_options;
  if (stats == NULL)
    stats = &local_stats;
  memset (stats, 0, sizeof *stats);

  struct unpack u = {
    .root_fd = -1,
    .parent_fd = -1,
    .privileged = opts->privileged,
    .max = opts->max_uncompressed ? opts->max_uncompressed : OHBOX_LAYER_DEFAULT_MAX_SIZE,
    .stats = stats,
    .budget = opts->budget,
  };
  int r = unpack_all (&u, blob_fd, dest_dirfd, opts, err);
  if (r == 0)
    {
      uint64_t compressed;
      layer_stream_result (u.s, diffid_out, &stats->uncompressed_size, &compressed);
      if (opts->progress)
        opts->progress (opts->userdata, compressed);
    }
  unpack_release (&u);
  return r;
}
