/* store.c: the content-addressed image store (layout and locking in store.h).
 *
 * Blobs and layers become visible only by rename(2) of a complete, verified
 * and synced object, so a reader never sees half an object and a process
 * killed at any point leaves only files under ingest/ and tmp/, which the
 * next pull resumes (ingest/) or GC removes (both). Names (refs.json) and
 * image records are rewritten atomically under a lock. */
#include "config.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store/store_internal.h"
#include "common/utils.h"

struct ohbox_blob_writer
{
  struct ohbox_store *store;
  char digest[OHBOX_DIGEST_LEN + 1];
  char partial[128]; /* ingest/<hex>.partial */
  int64_t expected;
  int64_t offset;
  int fd;
  int lock_fd;
  struct ohbox_sha256 *hash;
};

char *
ohbox_store_default_root (void)
{
  if (geteuid () == 0)
    return xstrdup ("/var/lib/ohbox");
  const char *xdg = getenv ("XDG_DATA_HOME");
  if (xdg && xdg[0] == '/')
    return xasprintf ("%s/ohbox", xdg);
  const char *home = getenv ("HOME");
  return xasprintf ("%s/.local/share/ohbox", home && *home ? home : "/tmp");
}

static const char *const store_dirs[] = {
  "blobs", "blobs/sha256", "ingest", "layers", "layers/sha256", "images", "needs-auth", "locks", "tmp", NULL,
};

int
ohbox_store_open (const char *root, struct ohbox_store **out, ohbox_error_t *err)
{
  bool privileged = geteuid () == 0;
  /* The store holds layer trees with setuid binaries and device nodes:
   * only its owner may enter it. */
  if (ohbox_mkdir_p (AT_FDCWD, root, 0700, err) < 0)
    return ohbox_error_prefix (err, "create store `%s`", root);
  cleanup_close int dirfd = open (root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return ohbox_error_errno (err, "open store `%s`", root);
  for (const char *const *d = store_dirs; *d; d++)
    if (mkdirat (dirfd, *d, 0700) < 0 && errno != EEXIST)
      return ohbox_error_errno (err, "create `%s/%s`", root, *d);
  int lock_fd = ohbox_lock_file (dirfd, "locks/store", false, false, err);
  if (lock_fd < 0)
    return ohbox_error_prefix (err, "store `%s`", root);
  struct ohbox_store *s = xcalloc (1, sizeof *s);
  s->root = xstrdup (root);
  s->dirfd = steal_fd (&dirfd);
  s->lock_fd = lock_fd;
  s->privileged = privileged;
  *out = s;
  return 0;
}

void
ohbox_store_unlock (struct ohbox_store *s)
{
  if (s->lock_fd >= 0)
    close (s->lock_fd);
  s->lock_fd = -1;
}

void
ohbox_store_close (struct ohbox_store *s)
{
  if (s == NULL)
    return;
  if (s->lock_fd >= 0)
    close (s->lock_fd);
  close (s->dirfd);
  free (s->root);
  free (s);
}

const char *
ohbox_store_root (const struct ohbox_store *s)
{
  return s->root;
}

int
ohbox_store_dirfd (const struct ohbox_store *s)
{
  return s->dirfd;
}

bool
ohbox_store_privileged (const struct ohbox_store *s)
{
  return s->privileged;
}

/* ---------------------------------------------------------------- space */

#define MIN_FREE_FLOOR (256ULL * 1024)
#define MIN_FREE_CAP (64ULL * 1024 * 1024)

/* The margin of a filesystem of SIZE bytes (store.h). */
static uint64_t
min_free_of (uint64_t size)
{
  uint64_t m = size / 100;
  return m < MIN_FREE_FLOOR ? MIN_FREE_FLOOR : m > MIN_FREE_CAP ? MIN_FREE_CAP : m;
}

int
ohbox_store_check_space (struct ohbox_store *s, uint64_t need, const char *what, ohbox_error_t *err)
{
  struct statvfs st;
  if (fstatvfs (s->dirfd, &st) < 0)
    return ohbox_error_errno (err, "statvfs `%s`", s->root);
  uint64_t avail = (uint64_t) st.f_bavail * st.f_frsize;
  uint64_t margin = min_free_of ((uint64_t) st.f_blocks * st.f_frsize);
  if (avail >= margin && avail - margin >= need)
    return 0;
  char a[32], n[32], m[32];
  return ohbox_error (err, OHBOX_ERR_STORE, ENOSPC, "the store `%s` has %s free; %s take %s, and ohbox keeps %s free",
                      s->root, ohbox_format_size (avail, a), what, ohbox_format_size (need, n),
                      ohbox_format_size (margin, m));
}

void
ohbox_store_budget_init (struct ohbox_store *s, uint64_t max, struct ohbox_unpack_budget *b)
{
  memset (b, 0, sizeof *b);
  b->max = max;
  b->fs_fd = s->dirfd;
  b->fs_name = s->root;
  struct statvfs st;
  uint64_t size = fstatvfs (s->dirfd, &st) == 0 ? (uint64_t) st.f_blocks * st.f_frsize : 0;
  b->min_free = min_free_of (size);
  /* Often enough that the writes between two looks (a step, and the block
   * each unpacking thread is writing) stay within the margin. */
  b->check_every = b->min_free / 8;
  if (b->check_every < 64 * 1024)
    b->check_every = 64 * 1024;
  if (b->check_every > 4 * 1024 * 1024)
    b->check_every = 4 * 1024 * 1024;
}

/* ---------------------------------------------------------------- blobs */

static void
blob_rel_path (const char *digest, char buf[128])
{
  snprintf (buf, 128, "blobs/sha256/%s", ohbox_digest_hex (digest));
}

bool
ohbox_store_has_blob (struct ohbox_store *s, const char *digest)
{
  if (!ohbox_digest_is_valid (digest))
    return false;
  char rel[128];
  blob_rel_path (digest, rel);
  struct stat st;
  return fstatat (s->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode);
}

char *
ohbox_store_blob_path (struct ohbox_store *s, const char *digest)
{
  return xasprintf ("%s/blobs/sha256/%s", s->root, ohbox_digest_hex (digest));
}

int
ohbox_store_open_blob (struct ohbox_store *s, const char *digest, int *fd_out, ohbox_error_t *err)
{
  if (ohbox_digest_validate (digest, err) < 0)
    return -1;
  char rel[128];
  blob_rel_path (digest, rel);
  int fd = openat (s->dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    {
      if (errno == ENOENT)
        return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "blob %s is not in the store `%s`", digest, s->root);
      return ohbox_error_errno (err, "open blob %s", digest);
    }
  *fd_out = fd;
  return 0;
}

static int
read_blob (struct ohbox_store *s, const char *digest, size_t max, bool verify, char **data, size_t *len,
           ohbox_error_t *err)
{
  if (ohbox_digest_validate (digest, err) < 0)
    return -1;
  char rel[128];
  blob_rel_path (digest, rel);
  cleanup_free char *buf = NULL;
  size_t n = 0;
  if (ohbox_read_file_at (s->dirfd, rel, max, &buf, &n, err) < 0)
    {
      if ((*err)->kind == OHBOX_ERR_NOT_FOUND)
        {
          ohbox_error_release (err);
          return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "blob %s is not in the store `%s`", digest, s->root);
        }
      return ohbox_error_prefix (err, "blob %s", digest);
    }
  if (verify)
    {
      /* Small blobs (manifests, configs) are parsed right after: check them
       * again so that a damaged store is reported instead of trusted. */
      char got[OHBOX_DIGEST_LEN + 1];
      ohbox_sha256_buffer (buf, n, got);
      if (strcmp (got, digest) != 0)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                            "blob %s in the store is damaged (its content hashes to %s); run `ohbox rmi` on the "
                            "image and pull it again",
                            digest, got);
    }
  *data = steal_pointer (&buf);
  if (len)
    *len = n;
  return 0;
}

int
ohbox_store_read_blob (struct ohbox_store *s, const char *digest, size_t max, char **data, size_t *len,
                       ohbox_error_t *err)
{
  return read_blob (s, digest, max, true, data, len, err);
}

int
ohbox_store_read_blob_unverified (struct ohbox_store *s, const char *digest, size_t max, char **data, size_t *len,
                                  ohbox_error_t *err)
{
  return read_blob (s, digest, max, false, data, len, err);
}

int
ohbox_store_put_blob (struct ohbox_store *s, const char *expected, const void *data, size_t len,
                      char out_digest[OHBOX_DIGEST_LEN + 1], ohbox_error_t *err)
{
  char digest[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer (data, len, digest);
  if (expected)
    {
      if (ohbox_digest_validate (expected, err) < 0)
        return -1;
      if (strcmp (expected, digest) != 0)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "digest mismatch: expected %s, content has %s", expected,
                            digest);
    }
  if (out_digest)
    memcpy (out_digest, digest, sizeof digest);
  struct ohbox_blob_writer *w = NULL;
  if (ohbox_store_blob_begin (s, digest, (int64_t) len, true, &w, err) < 0)
    return -1;
  if (w == NULL)
    return 0; /* already present */
  if (ohbox_blob_writer_reset (w, err) < 0 || ohbox_blob_writer_write (w, data, len, err) < 0)
    {
      ohbox_blob_writer_abort (w, false);
      return -1;
    }
  return ohbox_blob_writer_commit (w, err);
}

static void
writer_free (struct ohbox_blob_writer *w)
{
  if (w->fd >= 0)
    close (w->fd);
  if (w->lock_fd >= 0)
    close (w->lock_fd);
  ohbox_sha256_free (w->hash);
  free (w);
}

/* Feeds the bytes of a partial file left by an interrupted download into
 * the hash, so the download resumes where it stopped. */
static int
writer_rehash_partial (struct ohbox_blob_writer *w, ohbox_error_t *err)
{
  struct stat st;
  if (fstat (w->fd, &st) < 0)
    return ohbox_error_errno (err, "stat `%s`", w->partial);
  if (w->expected >= 0 && st.st_size > w->expected)
    {
      /* Longer than the blob can be: useless. */
      if (ftruncate (w->fd, 0) < 0)
        return ohbox_error_errno (err, "truncate `%s`", w->partial);
      return 0;
    }
  /* Heap, not TLS (see import_blob in oci_layout.c). */
  const size_t bufsize = 1 << 16;
  cleanup_free char *buf = xmalloc (bufsize);
  int64_t done = 0;
  while (done < st.st_size)
    {
      ssize_t r = pread (w->fd, buf, bufsize, done);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          return ohbox_error_errno (err, "read `%s`", w->partial);
        }
      if (r == 0)
        break;
      ohbox_sha256_update (w->hash, buf, (size_t) r);
      done += r;
    }
  w->offset = done;
  if (lseek (w->fd, done, SEEK_SET) < 0)
    return ohbox_error_errno (err, "seek `%s`", w->partial);
  return 0;
}

int
ohbox_store_blob_begin (struct ohbox_store *s, const char *digest, int64_t expected_size, bool wait,
                        struct ohbox_blob_writer **w_out, ohbox_error_t *err)
{
  *w_out = NULL;
  if (ohbox_digest_validate (digest, err) < 0)
    return -1;
  if (ohbox_store_has_blob (s, digest))
    return 0;
  char lockname[128];
  snprintf (lockname, sizeof lockname, "locks/blob-%s", ohbox_digest_hex (digest));
  int lock_fd = ohbox_lock_file (s->dirfd, lockname, true, !wait, err);
  if (lock_fd == -2)
    return 1;
  if (lock_fd < 0)
    return -1;
  /* Another process may have completed it while we waited for the lock. */
  if (ohbox_store_has_blob (s, digest))
    {
      close (lock_fd);
      return 0;
    }
  struct ohbox_blob_writer *w = xcalloc (1, sizeof *w);
  w->store = s;
  memcpy (w->digest, digest, OHBOX_DIGEST_LEN + 1);
  snprintf (w->partial, sizeof w->partial, "ingest/%s.partial", ohbox_digest_hex (digest));
  w->expected = expected_size;
  w->lock_fd = lock_fd;
  w->hash = ohbox_sha256_new ();
  w->fd = openat (s->dirfd, w->partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (w->fd < 0)
    {
      ohbox_error_errno (err, "create `%s/%s`", s->root, w->partial);
      writer_free (w);
      return -1;
    }
  if (writer_rehash_partial (w, err) < 0)
    {
      writer_free (w);
      return -1;
    }
  *w_out = w;
  return 0;
}

int64_t
ohbox_blob_writer_offset (const struct ohbox_blob_writer *w)
{
  return w->offset;
}

int
ohbox_blob_writer_write (struct ohbox_blob_writer *w, const void *data, size_t len, ohbox_error_t *err)
{
  if (w->expected >= 0 && w->offset + (int64_t) len > w->expected)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                        "blob %s: the registry sent more than the %lld bytes its descriptor declares", w->digest,
                        (long long) w->expected);
  if (ohbox_write_all (w->fd, data, len) < 0)
    return ohbox_error_errno (err, "write `%s/%s`", w->store->root, w->partial);
  ohbox_sha256_update (w->hash, data, len);
  w->offset += (int64_t) len;
  return 0;
}

int
ohbox_blob_writer_reset (struct ohbox_blob_writer *w, ohbox_error_t *err)
{
  if (ftruncate (w->fd, 0) < 0 || lseek (w->fd, 0, SEEK_SET) < 0)
    return ohbox_error_errno (err, "truncate `%s/%s`", w->store->root, w->partial);
  ohbox_sha256_free (w->hash);
  w->hash = ohbox_sha256_new ();
  w->offset = 0;
  return 0;
}

int
ohbox_blob_writer_commit (struct ohbox_blob_writer *w, ohbox_error_t *err)
{
  struct ohbox_store *s = w->store;
  int ret = -1;
  char got[OHBOX_DIGEST_LEN + 1];
  char rel[128];
  if (w->expected >= 0 && w->offset != w->expected)
    {
      ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "blob %s: size mismatch: got %lld bytes, the descriptor says %lld",
                   w->digest, (long long) w->offset, (long long) w->expected);
      goto discard;
    }
  ohbox_sha256_final (w->hash, got);
  if (strcmp (got, w->digest) != 0)
    {
      ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "blob %s: digest mismatch: the data received hashes to %s", w->digest,
                   got);
      goto discard;
    }
  if (fsync (w->fd) < 0)
    {
      ohbox_error_errno (err, "fsync `%s/%s`", s->root, w->partial);
      goto out;
    }
  if (fchmod (w->fd, 0644) < 0)
    {
      ohbox_error_errno (err, "chmod `%s/%s`", s->root, w->partial);
      goto out;
    }
  blob_rel_path (w->digest, rel);
  if (renameat (s->dirfd, w->partial, s->dirfd, rel) < 0)
    {
      ohbox_error_errno (err, "rename `%s` to `%s` in `%s`", w->partial, rel, s->root);
      goto out;
    }
  if (ohbox_fsync_dir (s->dirfd, "blobs/sha256") < 0)
    {
      ohbox_error_errno (err, "fsync `%s/blobs/sha256`", s->root);
      goto out;
    }
  ret = 0;
  goto out;
discard:
  /* Bad data is never kept, not even for a resume. */
  unlinkat (s->dirfd, w->partial, 0);
out:
  writer_free (w);
  return ret;
}

void
ohbox_blob_writer_abort (struct ohbox_blob_writer *w, bool keep_partial)
{
  if (w == NULL)
    return;
  if (!keep_partial)
    unlinkat (w->store->dirfd, w->partial, 0);
  writer_free (w);
}
