/* utils.c: see utils.h. */
#include "config.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  if (p == NULL)
    abort ();
  return p;
}

void *
xcalloc (size_t n, size_t m)
{
  void *p = calloc (n ? n : 1, m ? m : 1);
  if (p == NULL)
    abort ();
  return p;
}

void *
xrealloc (void *p, size_t n)
{
  p = realloc (p, n ? n : 1);
  if (p == NULL)
    abort ();
  return p;
}

char *
xstrdup (const char *s)
{
  char *r = strdup (s ? s : "");
  if (r == NULL)
    abort ();
  return r;
}

char *
xstrndup (const char *s, size_t n)
{
  char *r = strndup (s, n);
  if (r == NULL)
    abort ();
  return r;
}

char *
xvasprintf (const char *fmt, va_list ap)
{
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    abort ();
  return s;
}

char *
xasprintf (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = xvasprintf (fmt, ap);
  va_end (ap);
  return s;
}

void
ohbox_buf_append (struct ohbox_buf *b, const void *data, size_t len)
{
  if (b->len + len + 1 > b->cap)
    {
      size_t cap = b->cap ? b->cap : 256;
      while (cap < b->len + len + 1)
        cap *= 2;
      b->data = xrealloc (b->data, cap);
      b->cap = cap;
    }
  if (len)
    memcpy (b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
}

void
ohbox_buf_free (struct ohbox_buf *b)
{
  free (b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int
ohbox_write_all (int fd, const void *data, size_t len)
{
  const char *p = data;
  while (len > 0)
    {
      ssize_t w = write (fd, p, len);
      if (w < 0)
        {
          if (errno == EINTR)
            continue;
          return -1;
        }
      p += w;
      len -= (size_t) w;
    }
  return 0;
}

int
ohbox_fsync_dir (int dirfd, const char *path)
{
  cleanup_close int fd = openat (dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  return fsync (fd);
}

int
ohbox_write_file_atomic (int dirfd, const char *name, const void *data, size_t len, mode_t mode, ohbox_error_t *err)
{
  cleanup_free char *tmp = NULL;
  const char *slash = strrchr (name, '/');
  cleanup_free char *dir = slash ? xstrndup (name, (size_t) (slash - name)) : xstrdup (".");
  const char *base = slash ? slash + 1 : name;
  tmp = xasprintf ("%.*s.tmp-%s-%d-%lx", slash ? (int) (slash - name + 1) : 0, name, base, (int) getpid (),
                   (unsigned long) random ());
  cleanup_close int fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return ohbox_error_errno (err, "create `%s`", tmp);
  if (ohbox_write_all (fd, data, len) < 0 || fsync (fd) < 0)
    {
      ohbox_error_errno (err, "write `%s`", tmp);
      unlinkat (dirfd, tmp, 0);
      return -1;
    }
  if (fchmod (fd, mode) < 0)
    {
      ohbox_error_errno (err, "chmod `%s`", tmp);
      unlinkat (dirfd, tmp, 0);
      return -1;
    }
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    {
      ohbox_error_errno (err, "rename `%s` to `%s`", tmp, name);
      unlinkat (dirfd, tmp, 0);
      return -1;
    }
  if (ohbox_fsync_dir (dirfd, dir) < 0)
    return ohbox_error_errno (err, "fsync directory `%s`", dir);
  return 0;
}

int
ohbox_write_file_nosync (int dirfd, const char *name, const void *data, size_t len, ohbox_error_t *err)
{
  return ohbox_write_file_nosync_mode (dirfd, name, data, len, 0600, err);
}

int
ohbox_write_file_nosync_mode (int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                              ohbox_error_t *err)
{
  char tmp[256];
  snprintf (tmp, sizeof tmp, ".%s.tmp-%d", name, (int) getpid ());
  int fd = openat (dirfd, tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return ohbox_error_errno (err, "create `%s`", tmp);
  /* fchmod: the mode whatever the umask. */
  if ((mode != 0600 && fchmod (fd, mode) < 0) || ohbox_write_all (fd, data, len) < 0)
    {
      int e = errno;
      close (fd);
      unlinkat (dirfd, tmp, 0);
      errno = e;
      return ohbox_error_errno (err, "write `%s`", name);
    }
  close (fd);
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    {
      int e = errno;
      unlinkat (dirfd, tmp, 0);
      errno = e;
      return ohbox_error_errno (err, "rename `%s`", name);
    }
  return 0;
}

int
ohbox_read_fd (int fd, const char *what, size_t max, char **out, size_t *len, ohbox_error_t *err)
{
  struct ohbox_buf b = { 0 };
  char chunk[65536];
  for (;;)
    {
      ssize_t r = read (fd, chunk, sizeof chunk);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          ohbox_buf_free (&b);
          return ohbox_error_errno (err, "read `%s`", what);
        }
      if (r == 0)
        break;
      if (b.len + (size_t) r > max)
        {
          ohbox_buf_free (&b);
          return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "read `%s`: larger than the limit of %zu bytes", what, max);
        }
      ohbox_buf_append (&b, chunk, (size_t) r);
    }
  if (b.data == NULL)
    ohbox_buf_append (&b, "", 0);
  *out = b.data;
  if (len)
    *len = b.len;
  return 0;
}

int
ohbox_read_file_at (int dirfd, const char *path, size_t max, char **out, size_t *len, ohbox_error_t *err)
{
  cleanup_close int fd = openat (dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s`", path);
  return ohbox_read_fd (fd, path, max, out, len, err);
}

int
ohbox_mkdir_p (int dirfd, const char *path, mode_t mode, ohbox_error_t *err)
{
  cleanup_free char *p = xstrdup (path);
  for (char *s = p + 1; *s; s++)
    {
      if (*s != '/')
        continue;
      *s = '\0';
      if (mkdirat (dirfd, p, mode) < 0 && errno != EEXIST)
        return ohbox_error_errno (err, "mkdir `%s`", p);
      *s = '/';
    }
  if (mkdirat (dirfd, p, mode) < 0 && errno != EEXIST)
    return ohbox_error_errno (err, "mkdir `%s`", p);
  return 0;
}

/* One directory on the way to a private one (ohbox_private_dir_open):
 * FINAL is PATH itself. */
static int
check_private_step (int fd, const char *path, size_t len, bool final, ohbox_error_t *err)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    return ohbox_error_errno (err, "stat `%.*s`", (int) len, path);
  uid_t me = geteuid ();
  const char *problem = NULL;
  if (final && st.st_uid != me)
    problem = "it belongs to another user";
  else if (st.st_uid != me && st.st_uid != 0)
    problem = "it belongs to another user, who could replace what is below it";
  else if ((st.st_mode & 022) && (final || !(st.st_mode & S_ISVTX)))
    problem = "others may write to it";
  if (problem == NULL)
    return 0;
  return ohbox_error (err, OHBOX_ERR_STORE, 0,
                      "refusing `%.*s` (uid %u, mode %04o) for private state: %s; "
                      "remove it, or set XDG_RUNTIME_DIR or OHBOX_RUNROOT to a directory of your own",
                      (int) len, path, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777), problem);
}

int
ohbox_private_dir_open (const char *path, ohbox_error_t *err)
{
  if (path[0] != '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "state directory `%s` is not an absolute path", path);
  /* The longest part of PATH that exists, with its links resolved now and
   * by the caller's choice; what follows is created below it. */
  cleanup_free char *full = xstrdup (path);
  size_t keep = strlen (full);
  while (keep > 1 && full[keep - 1] == '/')
    full[--keep] = '\0';
  char resolved[PATH_MAX];
  size_t cut = keep;
  for (;;)
    {
      char saved = full[cut];
      full[cut] = '\0';
      bool ok = realpath (full, resolved) != NULL;
      full[cut] = saved;
      if (ok)
        break; /* "/" always is */
      if (errno != ENOENT)
        return ohbox_error_errno (err, "resolve `%.*s`", (int) cut, full);
      while (cut > 1 && full[cut - 1] != '/')
        cut--;
      while (cut > 1 && full[cut - 1] == '/')
        cut--;
    }
  /* RESOLVED, then the missing rest (which starts with its '/', except
   * after "/" itself). */
  cleanup_free char *walk = xasprintf ("%s%s%s", resolved,
                                       strcmp (resolved, "/") && full[cut] && full[cut] != '/' ? "/" : "", full + cut);
  cleanup_close int fd = open ("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `/`");
  bool only_root = walk[1] == '\0';
  if (check_private_step (fd, "/", 1, only_root, err) < 0)
    return -1;
  for (char *p = walk + 1; *p;)
    {
      char *end = strchr (p, '/');
      size_t n = end ? (size_t) (end - p) : strlen (p);
      char name[NAME_MAX + 1];
      if (n == 0 || n > NAME_MAX)
        {
          p += n + (end != NULL);
          continue;
        }
      memcpy (name, p, n);
      name[n] = '\0';
      bool final = true;
      for (const char *q = p + n; *q; q++)
        if (*q != '/')
          final = false;
      size_t len = (size_t) (p - walk) + n;
      int next = openat (fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0 && errno == ENOENT)
        {
          if (mkdirat (fd, name, 0700) < 0 && errno != EEXIST)
            return ohbox_error_errno (err, "create `%.*s`", (int) len, walk);
          next = openat (fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
      if (next < 0 && (errno == ELOOP || errno == ENOTDIR))
        return ohbox_error (err, OHBOX_ERR_STORE, errno,
                            "refusing `%.*s` for private state: it was replaced "
                            "by a symbolic link or a file",
                            (int) len, walk);
      if (next < 0)
        return ohbox_error_errno (err, "open `%.*s`", (int) len, walk);
      close (fd);
      fd = next;
      if (check_private_step (fd, walk, len, final, err) < 0)
        return -1;
      p += n + (end != NULL);
    }
  return steal_fd (&fd);
}

/* Opens directory NAME for removal; a directory without read/search
 * permission for its owner (a layer may hold mode 0000 directories) is
 * made accessible first, which matters for an unprivileged store. */
static int
open_dir_for_removal (int dirfd, const char *name)
{
  int fd = openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && fchmodat (dirfd, name, 0700, 0) == 0)
    fd = openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd;
}

/* One directory on the way down of a removal. */
struct rm_level
{
  DIR *dir;   /* being listed; NULL while a deeper one is (below RM_KEEP_OPEN) */
  char *name; /* its name in its parent (NULL for the top) */
  dev_t dev;  /* to check that ".." leads back to it */
  ino_t ino;
};

/* The shallowest levels keep their listing open: a wide directory is read
 * once. Deeper ones are closed on the way down and reopened through ".."
 * on the way up, so a removal holds at most RM_KEEP_OPEN + 2 descriptors
 * however deep the tree (a sandbox can nest 30 000 directories in its
 * writable layer; one descriptor per level ran out at about 500). */
#define RM_KEEP_OPEN 16

static int
rm_level_open (int fd, const char *name, struct rm_level *l)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    {
      close (fd);
      return -1;
    }
  /* A directory without rwx for its owner cannot be emptied. */
  if ((st.st_mode & 0700) != 0700)
    fchmod (fd, (st.st_mode & 07777) | 0700);
  l->dir = fdopendir (fd);
  if (l->dir == NULL)
    {
      int e = errno;
      close (fd);
      errno = e;
      return -1;
    }
  l->name = name ? xstrdup (name) : NULL;
  l->dev = st.st_dev;
  l->ino = st.st_ino;
  return 0;
}

/* Back from level DEPTH (emptied) to its parent: reopens the parent when it
 * was closed, through "..", which must be the directory we came down from
 * (nothing renamed it meanwhile), then removes the emptied one. */
static int
rm_level_up (struct rm_level *stack, size_t depth, ohbox_error_t *err)
{
  struct rm_level *l = &stack[depth], *parent = &stack[depth - 1];
  if (parent->dir == NULL)
    {
      int up = openat (dirfd (l->dir), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct stat st;
      if (up < 0 || fstat (up, &st) < 0)
        {
          if (up >= 0)
            close (up);
          return ohbox_error_errno (err, "open the parent of `%s` (depth %zu)", l->name, depth);
        }
      if (st.st_dev != parent->dev || st.st_ino != parent->ino)
        {
          close (up);
          return ohbox_error (err, OHBOX_ERR_STORE, 0, "`%s` (depth %zu) was moved during its removal", l->name, depth);
        }
      parent->dir = fdopendir (up);
      if (parent->dir == NULL)
        {
          close (up);
          return ohbox_error_errno (err, "read the parent of `%s` (depth %zu)", l->name, depth);
        }
    }
  closedir (l->dir);
  l->dir = NULL;
  if (unlinkat (dirfd (parent->dir), l->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return ohbox_error_errno (err, "rmdir `%s` (depth %zu)", l->name, depth);
  free (l->name);
  l->name = NULL;
  return 0;
}

/* Empties the directory TOPFD (taken over) without recursion: an explicit
 * stack of levels, never following a symlink. Errors name the entry and
 * its depth, never the whole path (which may be megabytes long). */
static int
rm_rf_children (int topfd, ohbox_error_t *err)
{
  size_t cap = 64, depth = 0;
  struct rm_level *stack = xcalloc (cap, sizeof *stack);
  int ret = -1;
  if (rm_level_open (topfd, NULL, &stack[0]) < 0)
    {
      ohbox_error_errno (err, "open a directory for removal");
      free (stack);
      return -1;
    }
  for (;;)
    {
      struct rm_level *l = &stack[depth];
      int dfd = dirfd (l->dir);
      struct dirent *de;
      bool descended = false;
      while ((errno = 0, de = readdir (l->dir)) != NULL)
        {
          if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
            continue;
          if (unlinkat (dfd, de->d_name, 0) == 0 || errno == ENOENT)
            continue;
          if (errno != EISDIR && errno != EPERM)
            {
              ohbox_error_errno (err, "unlink `%s` (depth %zu)", de->d_name, depth + 1);
              goto out;
            }
          /* A directory: O_NOFOLLOW|O_DIRECTORY makes sure a symlink
           * swapped in meanwhile is never followed. */
          int child = open_dir_for_removal (dfd, de->d_name);
          if (child < 0 && errno == ENOENT)
            continue; /* removed meanwhile (by another remover of the same tree) */
          if (depth + 1 == cap)
            {
              stack = xrealloc (stack, 2 * cap * sizeof *stack);
              memset (stack + cap, 0, cap * sizeof *stack);
              cap *= 2;
              l = &stack[depth];
            }
          if (child < 0 || rm_level_open (child, de->d_name, &stack[depth + 1]) < 0)
            {
              ohbox_error_errno (err, "open `%s` (depth %zu)", de->d_name, depth + 1);
              goto out;
            }
          if (depth >= RM_KEEP_OPEN)
            {
              closedir (l->dir);
              l->dir = NULL;
            }
          depth++;
          descended = true;
          break;
        }
      if (descended)
        continue;
      if (errno != 0)
        {
          ohbox_error_errno (err, "read a directory (depth %zu)", depth);
          goto out;
        }
      if (depth == 0)
        break;
      if (rm_level_up (stack, depth, err) < 0)
        goto out;
      depth--;
    }
  ret = 0;
out:
  for (size_t i = 0; i < cap; i++)
    {
      if (stack[i].dir)
        closedir (stack[i].dir);
      free (stack[i].name);
    }
  free (stack);
  return ret;
}

int
ohbox_rm_rf_at (int dirfd, const char *name, ohbox_error_t *err)
{
  if (unlinkat (dirfd, name, 0) == 0 || errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return ohbox_error_errno (err, "remove `%s`", name);
  int fd = open_dir_for_removal (dirfd, name);
  if (fd < 0)
    {
      if (errno == ENOENT)
        return 0;
      return ohbox_error_errno (err, "open `%s`", name);
    }
  if (rm_rf_children (fd, err) < 0)
    return ohbox_error_prefix (err, "remove `%s`", name);
  if (unlinkat (dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return ohbox_error_errno (err, "rmdir `%s`", name);
  return 0;
}

static int
openat2_wrapper (int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
  struct open_how how = { .flags = (uint64_t) (flags | O_CLOEXEC), .resolve = resolve };
  if (flags & (O_CREAT | O_TMPFILE))
    how.mode = mode;
  int fd;
  do
    fd = (int) syscall (SYS_openat2, dirfd, path, &how, sizeof how);
  while (fd < 0 && errno == EAGAIN);
  return fd;
}

int
ohbox_openat_in_root (int rootfd, const char *path, int flags, mode_t mode, uint64_t extra_resolve)
{
  return openat2_wrapper (rootfd, path, flags, mode, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | extra_resolve);
}

int
ohbox_openat_beneath (int dirfd, const char *path, int flags, mode_t mode, uint64_t extra_resolve)
{
  return openat2_wrapper (dirfd, path, flags, mode,
                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | extra_resolve);
}

int
ohbox_lock_file (int dirfd, const char *name, bool exclusive, bool nonblock, ohbox_error_t *err)
{
  cleanup_close int fd = openat (dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return ohbox_error_errno (err, "open lock `%s`", name);
  int op = (exclusive ? LOCK_EX : LOCK_SH) | (nonblock ? LOCK_NB : 0);
  while (flock (fd, op) < 0)
    {
      if (errno == EINTR)
        continue;
      if (nonblock && errno == EWOULDBLOCK)
        return -2;
      return ohbox_error_errno (err, "lock `%s`", name);
    }
  return steal_fd (&fd);
}

char *
ohbox_now_rfc3339 (void)
{
  time_t t = time (NULL);
  struct tm tm;
  gmtime_r (&t, &tm);
  char buf[64];
  strftime (buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return xstrdup (buf);
}

const char *
ohbox_format_size (uint64_t bytes, char *buf)
{
  static const char *units[] = { "B", "kB", "MB", "GB", "TB" };
  double v = (double) bytes;
  int u = 0;
  while (v >= 1000.0 && u < 4)
    {
      v /= 1000.0;
      u++;
    }
  if (u == 0)
    snprintf (buf, 32, "%llu B", (unsigned long long) bytes);
  else
    snprintf (buf, 32, "%.1f %s", v, units[u]);
  return buf;
}

double
ohbox_monotonic (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

bool
ohbox_secret_equal (const char *expected, const char *given)
{
  if (given == NULL)
    return false;
  size_t el = strlen (expected), gl = strlen (given);
  unsigned char diff = el != gl;
  for (size_t i = 0; i < el; i++)
    diff |= (unsigned char) (expected[i] ^ (i < gl ? given[i] : 0));
  return diff == 0;
}

void
ohbox_mountinfo_unescape (char *s)
{
  char *w = s;
  for (char *r = s; *r; r++)
    {
      if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7')
        {
          *w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
          r += 3;
        }
      else
        *w++ = *r;
    }
  *w = '\0';
}

ssize_t
ohbox_send_with_fd (int fd, const void *data, size_t len, int pass_fd)
{
  struct iovec iov = { .iov_base = (void *) data, .iov_len = len };
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  memset (&u, 0, sizeof u);
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  if (pass_fd >= 0)
    {
      mh.msg_control = u.buf;
      mh.msg_controllen = sizeof u.buf;
      struct cmsghdr *c = CMSG_FIRSTHDR (&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN (sizeof (int));
      memcpy (CMSG_DATA (c), &pass_fd, sizeof (int));
    }
  ssize_t n;
  do
    n = sendmsg (fd, &mh, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

ssize_t
ohbox_recv_with_fd (int fd, void *buf, size_t max, int *passed)
{
  struct iovec iov = { .iov_base = buf, .iov_len = max };
  /* Room for one fd only: the kernel closes any further ones (MSG_CTRUNC),
   * so a peer cannot make us hold descriptors we do not expect. */
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
  ssize_t n;
  do
    n = recvmsg (fd, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  *passed = -1;
  if (n < 0)
    return n;
  struct cmsghdr *c = CMSG_FIRSTHDR (&mh);
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN (sizeof (int)))
    memcpy (passed, CMSG_DATA (c), sizeof (int));
  return n;
}

int
ohbox_signal_parse (const char *s, int *out)
{
  char *end;
  errno = 0;
  long v = strtol (s, &end, 10);
  if (*s && *end == '\0' && errno == 0 && v > 0 && v < NSIG)
    {
      *out = (int) v;
      return 0;
    }
  if (strncasecmp (s, "SIG", 3) == 0)
    s += 3;
  for (int i = 1; i < NSIG; i++)
    {
      const char *abbrev = sigabbrev_np (i);
      if (abbrev && strcasecmp (abbrev, s) == 0)
        {
          *out = i;
          return 0;
        }
    }
  return -1;
}

void
ohbox_trace (const char *what)
{
  static int enabled = -1;
  static double origin;
  if (enabled < 0)
    enabled = getenv ("OHBOX_TRACE_START") != NULL;
  if (!enabled)
    return;
  double now = ohbox_monotonic ();
  if (origin == 0)
    origin = now;
  dprintf (2, "ohbox-trace %.3f %d %s\n", (now - origin) * 1000, (int) getpid (), what);
}

/* What a helper wrote on FD until it closed it (see ohbox_run_helper). */
static void
read_helper_output (int fd, char *said, size_t size)
{
  size_t len = 0;
  char drop[512];
  for (;;)
    {
      bool room = len + 1 < size;
      ssize_t n = read (fd, room ? said + len : drop, room ? size - 1 - len : sizeof drop);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      if (room)
        len += (size_t) n;
    }
  while (len > 0 && (said[len - 1] == '\n' || said[len - 1] == ' '))
    len--;
  said[len] = '\0';
  /* one line, for an error message */
  for (char *nl = strchr (said, '\n'); nl; nl = strchr (nl, '\n'))
    *nl = ';';
}

int
ohbox_run_helper (const char *path, char *const argv[], char *const envp[], char *said, size_t size, int *status,
                  int kind, ohbox_error_t *err)
{
  int out[2];
  if (pipe2 (out, O_CLOEXEC) < 0)
    return ohbox_error_sys (err, kind, "pipe for `%s`", path);
  pid_t pid = fork ();
  if (pid < 0)
    {
      close (out[0]);
      close (out[1]);
      return ohbox_error_sys (err, kind, "fork `%s`", path);
    }
  if (pid == 0)
    {
      int null = open ("/dev/null", O_RDONLY);
      if (null < 0 || dup2 (null, 0) < 0 || dup2 (out[1], 1) < 0 || dup2 (out[1], 2) < 0)
        _exit (127);
      close_range (3, ~0U, 0);
      if (envp)
        execve (path, argv, envp);
      else
        execv (path, argv);
      _exit (127);
    }
  close (out[1]);
  read_helper_output (out[0], said, size);
  close (out[0]);
  while (waitpid (pid, status, 0) < 0)
    if (errno != EINTR)
      return ohbox_error_sys (err, kind, "wait for `%s`", path);
  return 0;
}
