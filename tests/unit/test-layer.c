/* test-layer.c: unit tests for layer.c. Every archive is built here with
 * libarchive's writer (hostile names included: the writer stores whatever
 * pathname it is given); attack tests put a sentinel outside the layer
 * directory and check that it is untouched and that the unpack fails with
 * OHBOX_ERR_INTEGRITY naming the entry. Tests that need root (ownership,
 * device nodes) skip otherwise; "unprivileged" cases run in a child that
 * dropped to uid/gid 65534 when we are root. */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <locale.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "image/layer.h"
#include "unit.h"
#include "common/utils.h"

#define NOBODY 65534
#define MTIME 1600000000

/* ---- building archives ---- */

struct ent
{
  const char *path;
  mode_t type; /* AE_IFREG when 0 */
  mode_t perm;
  const char *data; /* regular files: content (strlen) unless len is set */
  size_t len;
  const char *symlink;
  const char *hardlink;
  unsigned major, minor;
  int64_t uid, gid;
  time_t mtime; /* MTIME when 0 */
  long mtime_ns;
  time_t atime;
  const char *xattr; /* one xattr: name and value */
  const char *xattr_value;
};

#define FILE_(p, m, d) (&(struct ent){ .path = (p), .perm = (m), .data = (d) })
#define DIR_(p, m) (&(struct ent){ .path = (p), .type = AE_IFDIR, .perm = (m) })
#define LINK_(p, t) (&(struct ent){ .path = (p), .type = AE_IFLNK, .perm = 0777, .symlink = (t) })
#define HARD_(p, t) (&(struct ent){ .path = (p), .perm = 0644, .hardlink = (t) })

static la_ssize_t
buf_write (struct archive *a, void *data, const void *buf, size_t len)
{
  (void) a;
  ohbox_buf_append (data, buf, len);
  return (la_ssize_t) len;
}

static struct archive *
tar_begin (struct ohbox_buf *out, int format)
{
  struct archive *a = archive_write_new ();
  archive_write_set_format (a, format ? format : ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
  archive_write_add_filter_none (a);
  if (archive_write_open (a, out, NULL, buf_write, NULL) != ARCHIVE_OK)
    abort ();
  return a;
}

static void
tar_add (struct archive *a, const struct ent *e)
{
  struct archive_entry *ae = archive_entry_new ();
  size_t len = e->data ? (e->len ? e->len : strlen (e->data)) : e->len;
  archive_entry_set_pathname (ae, e->path);
  archive_entry_set_filetype (ae, e->type ? e->type : AE_IFREG);
  archive_entry_set_perm (ae, e->perm);
  archive_entry_set_uid (ae, e->uid);
  archive_entry_set_gid (ae, e->gid);
  archive_entry_set_mtime (ae, e->mtime ? e->mtime : MTIME, e->mtime_ns);
  if (e->atime)
    archive_entry_set_atime (ae, e->atime, 0);
  if (e->symlink)
    archive_entry_set_symlink (ae, e->symlink);
  if (e->hardlink)
    archive_entry_set_hardlink (ae, e->hardlink);
  if (e->major || e->minor)
    archive_entry_set_rdev (ae, makedev (e->major, e->minor));
  if (e->xattr)
    archive_entry_xattr_add_entry (ae, e->xattr, e->xattr_value, strlen (e->xattr_value));
  if ((e->type == 0 || e->type == AE_IFREG) && e->hardlink == NULL)
    archive_entry_set_size (ae, (la_int64_t) len);
  if (archive_write_header (a, ae) != ARCHIVE_OK)
    {
      fprintf (stderr, "archive_write_header `%s`: %s\n", e->path, archive_error_string (a));
      abort ();
    }
  const char *p = e->data;
  static const char zeros[65536];
  for (size_t done = 0; done < len;)
    {
      size_t n = len - done < sizeof zeros ? len - done : sizeof zeros;
      if (archive_write_data (a, p ? p + done : zeros, n) < 0)
        abort ();
      done += n;
    }
  archive_entry_free (ae);
}

static void
tar_end (struct archive *a)
{
  if (archive_write_close (a) != ARCHIVE_OK)
    abort ();
  archive_write_free (a);
}

/* A whole uncompressed tar from a NULL-terminated list of entries. */
static struct ohbox_buf
make_tar (int format, const struct ent *const *ents)
{
  struct ohbox_buf out = { 0 };
  struct archive *a = tar_begin (&out, format);
  for (; *ents; ents++)
    tar_add (a, *ents);
  tar_end (a);
  return out;
}
#define TAR(...) make_tar (0, (const struct ent *const[]){ __VA_ARGS__, NULL })

/* Compresses DATA with libarchive's gzip or zstd writer ("raw" format). */
static struct ohbox_buf
compress (const struct ohbox_buf *data, const char *filter)
{
  struct ohbox_buf out = { 0 };
  struct archive *a = archive_write_new ();
  archive_write_set_format_raw (a);
  if (strcmp (filter, "gzip") == 0)
    archive_write_add_filter_gzip (a);
  else
    archive_write_add_filter_zstd (a);
  /* No zero padding after the compressed stream, as real blobs. */
  archive_write_set_bytes_in_last_block (a, 1);
  if (archive_write_open (a, &out, NULL, buf_write, NULL) != ARCHIVE_OK)
    abort ();
  struct archive_entry *ae = archive_entry_new ();
  archive_entry_set_pathname (ae, "layer");
  archive_entry_set_filetype (ae, AE_IFREG);
  archive_entry_set_size (ae, (la_int64_t) data->len);
  if (archive_write_header (a, ae) != ARCHIVE_OK || archive_write_data (a, data->data, data->len) < 0)
    abort ();
  archive_entry_free (ae);
  tar_end (a);
  return out;
}

static void
sha256_hex (const void *data, size_t len, char out[OHBOX_DIGEST_LEN + 1])
{
  unsigned char md[32];
  unsigned int mdlen = 0;
  EVP_Digest (data, len, md, &mdlen, EVP_sha256 (), NULL);
  strcpy (out, "sha256:");
  for (unsigned i = 0; i < 32; i++)
    sprintf (out + 7 + 2 * i, "%02x", md[i]);
}

/* ---- the test directory: T/layer (unpacked into) and T/outside/sentinel ---- */

/* Sized so that every snprintf below fits. */
static char base_dir[1024];
static char t_dir[1200], t_layer[1300], t_outside[1300], t_sentinel[1400];
static int layer_fd = -1;

static void
setup (void)
{
  static int n;
  snprintf (t_dir, sizeof t_dir, "%s/%d-%s", base_dir, ++n, unit_current);
  snprintf (t_layer, sizeof t_layer, "%s/layer", t_dir);
  snprintf (t_outside, sizeof t_outside, "%s/outside", t_dir);
  snprintf (t_sentinel, sizeof t_sentinel, "%s/sentinel", t_outside);
  if (mkdir (t_dir, 0755) < 0 || mkdir (t_layer, 0755) < 0 || mkdir (t_outside, 0755) < 0)
    abort ();
  int fd = open (t_sentinel, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 || write (fd, "sentinel", 8) != 8)
    abort ();
  fchmod (fd, 0644);
  close (fd);
  if (layer_fd >= 0)
    close (layer_fd);
  layer_fd = open (t_layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (layer_fd < 0)
    abort ();
}

struct result
{
  int rc;
  int kind;
  char msg[1024];
  char diffid[OHBOX_DIGEST_LEN + 1];
  struct ohbox_layer_stats st;
};

static void
unpack_fd (int blob_fd, int dest_fd, bool privileged, uint64_t max, struct result *r)
{
  struct ohbox_layer_options opts = { .privileged = privileged, .max_uncompressed = max };
  ohbox_error_t err = NULL;
  memset (r, 0, sizeof *r);
  r->rc = ohbox_layer_unpack (blob_fd, dest_fd, &opts, r->diffid, &r->st, &err);
  if (err)
    {
      r->kind = err->kind;
      snprintf (r->msg, sizeof r->msg, "%s", err->msg);
      ohbox_error_release (&err);
    }
  else if (r->rc < 0)
    snprintf (r->msg, sizeof r->msg, "(failed without an error)");
}

static int
blob_fd (const struct ohbox_buf *blob)
{
  int fd = memfd_create ("blob", MFD_CLOEXEC);
  if (fd < 0 || ohbox_write_all (fd, blob->data, blob->len) < 0 || lseek (fd, 0, SEEK_SET) < 0)
    abort ();
  return fd;
}

static void
drop_fsetid (void)
{
  struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
  struct __user_cap_data_struct d[2];
  if (syscall (SYS_capget, &h, d) < 0)
    _exit (4);
  d[CAP_FSETID / 32].effective &= ~(1u << (CAP_FSETID % 32));
  if (syscall (SYS_capset, &h, d) < 0)
    _exit (4);
}

enum how
{
  AS_IS,     /* in this process */
  AS_NOBODY, /* in a child as uid/gid 65534 */
  NO_FSETID, /* in a child without CAP_FSETID (chown then clears setuid bits) */
};

static void
unpack_how (const struct ohbox_buf *blob, bool privileged, uint64_t max, enum how how, struct result *r)
{
  int fd = blob_fd (blob);
  if (how == AS_IS)
    {
      unpack_fd (fd, layer_fd, privileged, max, r);
      close (fd);
      return;
    }
  if (how == AS_NOBODY && chown (t_layer, NOBODY, NOBODY) < 0)
    abort ();
  struct result *shared = mmap (NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    abort ();
  pid_t pid = fork ();
  if (pid == 0)
    {
      if (how == NO_FSETID)
        drop_fsetid ();
      else if (setgroups (0, NULL) < 0 || setresgid (NOBODY, NOBODY, NOBODY) < 0
               || setresuid (NOBODY, NOBODY, NOBODY) < 0)
        _exit (3);
      unpack_fd (fd, layer_fd, privileged, max, shared);
      _exit (0);
    }
  int status = 0;
  waitpid (pid, &status, 0);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    {
      memset (r, 0, sizeof *r);
      r->rc = -2;
      snprintf (r->msg, sizeof r->msg, "child died (status 0x%x)", status);
    }
  else
    *r = *shared;
  munmap (shared, sizeof *shared);
  close (fd);
}

/* Unpacks BLOB into t_layer; unprivileged as root means as uid 65534. */
static void
unpack (const struct ohbox_buf *blob, bool privileged, uint64_t max, struct result *r)
{
  unpack_how (blob, privileged, max, privileged || geteuid () != 0 ? AS_IS : AS_NOBODY, r);
}

static bool
is_root (void)
{
  return geteuid () == 0;
}

static int
lstat_layer (const char *path, struct stat *st)
{
  return fstatat (layer_fd, path, st, AT_SYMLINK_NOFOLLOW);
}

static bool
has_content (const char *path, const char *expected)
{
  char *data = NULL;
  size_t len = 0;
  ohbox_error_t err = NULL;
  struct stat st;
  if (lstat_layer (path, &st) < 0 || !S_ISREG (st.st_mode))
    return false;
  if (ohbox_read_file_at (layer_fd, path, 1 << 20, &data, &len, &err) < 0)
    {
      ohbox_error_release (&err);
      return false;
    }
  bool ok = len == strlen (expected) && memcmp (data, expected, len) == 0;
  free (data);
  return ok;
}

static mode_t
perm_of (const char *path)
{
  struct stat st;
  if (lstat_layer (path, &st) < 0)
    return (mode_t) -1;
  return st.st_mode & 07777;
}

static bool
is_whiteout (const char *path)
{
  struct stat st;
  return lstat_layer (path, &st) == 0 && S_ISCHR (st.st_mode) && st.st_rdev == makedev (0, 0);
}

static bool
link_is (const char *path, const char *target)
{
  char buf[PATH_MAX];
  ssize_t n = readlinkat (layer_fd, path, buf, sizeof buf - 1);
  if (n < 0)
    return false;
  buf[n] = '\0';
  return strcmp (buf, target) == 0;
}

static bool
xattr_is (const char *path, const char *name, const char *value)
{
  char proc[PATH_MAX + 64], buf[256];
  snprintf (proc, sizeof proc, "%s/%s", t_layer, path);
  ssize_t n = lgetxattr (proc, name, buf, sizeof buf - 1);
  if (value == NULL)
    return n < 0 && errno == ENODATA;
  if (n < 0)
    return false;
  buf[n] = '\0';
  return strcmp (buf, value) == 0;
}

/* ---- the state outside the layer, for the attack tests ---- */

struct snapshot
{
  char listing[4096];
  struct stat sentinel;
  char content[64];
};

static void
list_dir (const char *dir, struct ohbox_buf *out)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;
  /* Sorted enough for equality: the same directory read twice in a row gives the same order. */
  while (d && (de = readdir (d)) != NULL)
    {
      ohbox_buf_append (out, de->d_name, strlen (de->d_name));
      ohbox_buf_append (out, "\n", 1);
    }
}

static void
take_snapshot (struct snapshot *s)
{
  struct ohbox_buf b = { 0 };
  memset (s, 0, sizeof *s);
  list_dir (t_dir, &b);
  list_dir (t_outside, &b);
  list_dir (base_dir, &b);
  snprintf (s->listing, sizeof s->listing, "%s", b.data ? b.data : "");
  ohbox_buf_free (&b);
  lstat (t_sentinel, &s->sentinel);
  int fd = open (t_sentinel, O_RDONLY);
  if (fd >= 0)
    {
      if (read (fd, s->content, sizeof s->content - 1) < 0)
        s->content[0] = '\0';
      close (fd);
    }
}

static const char *
snapshot_diff (const struct snapshot *a, const struct snapshot *b)
{
  if (strcmp (a->listing, b->listing) != 0)
    return "files appeared or vanished outside the layer";
  if (a->sentinel.st_mode != b->sentinel.st_mode)
    return "sentinel mode changed";
  if (a->sentinel.st_uid != b->sentinel.st_uid || a->sentinel.st_gid != b->sentinel.st_gid)
    return "sentinel owner changed";
  if (a->sentinel.st_nlink != b->sentinel.st_nlink)
    return "sentinel link count changed";
  if (a->sentinel.st_size != b->sentinel.st_size || strcmp (a->content, b->content) != 0)
    return "sentinel content changed";
  if (a->sentinel.st_mtim.tv_sec != b->sentinel.st_mtim.tv_sec
      || a->sentinel.st_mtim.tv_nsec != b->sentinel.st_mtim.tv_nsec)
    return "sentinel mtime changed";
  return NULL;
}

/* Runs one hostile archive in a fresh directory, privileged and (in another
 * fresh directory) unprivileged: both must fail with OHBOX_ERR_INTEGRITY
 * whose message contains NEEDLE, and leave everything outside untouched. */
#define ATTACK(needle, ...)                                                                                            \
  do                                                                                                                   \
    {                                                                                                                  \
      for (int _priv = 1; _priv >= 0; _priv--)                                                                         \
        {                                                                                                              \
          struct snapshot _before, _after;                                                                             \
          struct result _r;                                                                                            \
          if (_priv && !is_root ())                                                                                    \
            continue;                                                                                                  \
          setup ();                                                                                                    \
          struct ohbox_buf _tar = TAR (__VA_ARGS__);                                                                   \
          take_snapshot (&_before);                                                                                    \
          unpack (&_tar, _priv, 0, &_r);                                                                               \
          ohbox_buf_free (&_tar);                                                                                      \
          take_snapshot (&_after);                                                                                     \
          const char *_d = snapshot_diff (&_before, &_after);                                                          \
          CHECK (_d == NULL, "%s (%s)", _d, _priv ? "privileged" : "unprivileged");                                    \
          CHECK (_r.rc < 0 && _r.kind == OHBOX_ERR_INTEGRITY, "rc %d kind %d: %s", _r.rc, _r.kind, _r.msg);            \
          CHECK (strstr (_r.msg, needle) != NULL, "message `%s` does not name `%s`", _r.msg, needle);                  \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

/* ---- functional tests ---- */

static void
check_regular_files (bool privileged)
{
  setup ();
  struct ohbox_buf tar = TAR (DIR_ ("./", 0755), DIR_ ("./bin/", 0755), FILE_ ("./bin/tool", 04755, "#!tool"),
                              FILE_ ("bin/sgid", 02711, "sgid"), FILE_ ("etc/passwd", 0644, "root:x:0:0"),
                              FILE_ ("empty", 0600, ""), DIR_ ("locked", 0000), FILE_ ("locked/secret", 0400, "s3cret"),
                              DIR_ ("ro/", 0555), FILE_ ("ro/file", 0444, "r"), DIR_ ("sticky/", 01777),
                              FILE_ ("sticky/late", 0640, "late"));
  struct result r;
  unpack (&tar, privileged, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  CHECK (r.st.entries == 12, "entries %llu", (unsigned long long) r.st.entries);
  CHECK (has_content ("bin/tool", "#!tool") && perm_of ("bin/tool") == 04755, "bin/tool mode 0%o",
         perm_of ("bin/tool"));
  CHECK (has_content ("bin/sgid", "sgid") && perm_of ("bin/sgid") == 02711, "bin/sgid mode 0%o", perm_of ("bin/sgid"));
  CHECK (has_content ("etc/passwd", "root:x:0:0") && perm_of ("etc/passwd") == 0644);
  CHECK (perm_of ("etc") == 0755, "implicit etc/ 0%o", perm_of ("etc"));
  CHECK (has_content ("empty", "") && perm_of ("empty") == 0600);
  CHECK (perm_of ("locked") == 0000, "locked 0%o", perm_of ("locked"));
  /* Only root can look inside a 0000 directory. */
  if (is_root ())
    CHECK (perm_of ("locked/secret") == 0400 && has_content ("locked/secret", "s3cret"));
  CHECK (perm_of ("ro") == 0555 && perm_of ("ro/file") == 0444 && has_content ("ro/file", "r"));
  CHECK (perm_of ("sticky") == 01777 && has_content ("sticky/late", "late"));
  CHECK (perm_of (".") == 0755);
  struct stat st;
  CHECK (fstat (layer_fd, &st) == 0 && st.st_mtim.tv_sec == MTIME, "root mtime %ld", (long) st.st_mtim.tv_sec);
}

static void
test_regular_files (void)
{
  if (!is_root ())
    return unit_skip ("privileged unpack needs root");
  check_regular_files (true);
}

static void
test_regular_files_unprivileged (void)
{
  check_regular_files (false);
  struct stat st;
  if (is_root ())
    CHECK (lstat_layer ("bin/tool", &st) == 0 && st.st_uid == NOBODY, "owner %u", (unsigned) st.st_uid);
}

static void
test_symlinks (void)
{
  char long_target[160];
  memset (long_target, 'x', sizeof long_target - 1);
  memcpy (long_target, "../", 3);
  long_target[sizeof long_target - 1] = '\0';
  setup ();
  struct ohbox_buf tar = TAR (
    LINK_ ("abs", "/etc/passwd"), LINK_ ("rel", "../dangling/y"), LINK_ ("dir/long", long_target),
    LINK_ ("self", "self"),
    (&(struct ent){ .path = "timed", .type = AE_IFLNK, .perm = 0777, .symlink = "t", .mtime = 1234567890 }));
  struct result r;
  unpack (&tar, is_root (), 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  CHECK (link_is ("abs", "/etc/passwd") && link_is ("rel", "../dangling/y") && link_is ("self", "self"));
  CHECK (link_is ("dir/long", long_target));
  struct stat st;
  CHECK (lstat_layer ("timed", &st) == 0 && S_ISLNK (st.st_mode) && st.st_mtim.tv_sec == 1234567890);
}

static void
test_hardlinks (void)
{
  setup ();
  struct ohbox_buf tar = TAR (FILE_ ("a", 0640, "data"), HARD_ ("sub/b", "a"), HARD_ ("c", "./a"), LINK_ ("s", "a"),
                              HARD_ ("s2", "s"), HARD_ ("a", "a"));
  struct result r;
  unpack (&tar, is_root (), 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat a, b, c, s, s2;
  CHECK (lstat_layer ("a", &a) == 0 && lstat_layer ("sub/b", &b) == 0 && lstat_layer ("c", &c) == 0);
  CHECK (a.st_ino == b.st_ino && a.st_ino == c.st_ino && a.st_nlink == 3, "nlink %lu", (unsigned long) a.st_nlink);
  CHECK (has_content ("sub/b", "data") && perm_of ("c") == 0640);
  /* A hardlink to a symlink links the symlink itself. */
  CHECK (lstat_layer ("s", &s) == 0 && lstat_layer ("s2", &s2) == 0 && S_ISLNK (s2.st_mode) && s.st_ino == s2.st_ino);
}

static void
test_hardlink_errors (void)
{
  struct result r;
  setup ();
  struct ohbox_buf tar = TAR (HARD_ ("x", "missing"));
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY && strstr (r.msg, "does not exist"), "%s", r.msg);
  setup ();
  tar = TAR (DIR_ ("d", 0755), HARD_ ("x", "d"));
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY && strstr (r.msg, "is a directory"), "%s", r.msg);
}

static void
check_whiteouts (bool privileged)
{
  setup ();
  struct ohbox_buf tar = TAR (DIR_ ("dir/", 0755), FILE_ ("dir/keep", 0644, "k"), FILE_ ("dir/.wh.gone", 0644, ""),
                              FILE_ (".wh.top", 0644, ""), FILE_ ("x", 0644, "x"), FILE_ (".wh.x", 0644, ""),
                              DIR_ ("d2/", 0755), FILE_ ("d2/f", 0644, "f"), FILE_ ("./.wh.d2", 0644, ""),
                              FILE_ (".wh..wh.plnk", 0644, ""), FILE_ ("dir/.wh..wh..opq", 0644, ""),
                              FILE_ ("new/sub/.wh.y", 0644, ""), FILE_ (".wh.back", 0644, ""), DIR_ ("back", 0755),
                              FILE_ ("back/f", 0644, "f"));
  struct result r;
  unpack (&tar, privileged, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  CHECK (is_whiteout ("dir/gone") && is_whiteout ("top") && is_whiteout ("x") && is_whiteout ("d2"));
  CHECK (is_whiteout ("new/sub/y") && perm_of ("new/sub") == 0755);
  CHECK (has_content ("dir/keep", "k"));
  struct stat st;
  CHECK (lstat_layer (".wh.top", &st) < 0 && lstat_layer ("dir/.wh..wh..opq", &st) < 0);
  CHECK (lstat_layer (".wh..wh.plnk", &st) < 0 && lstat_layer ("plnk", &st) < 0);
  CHECK (r.st.whiteouts == 7, "whiteouts %llu", (unsigned long long) r.st.whiteouts);
  const char *opaque = privileged ? "trusted.overlay.opaque" : "user.overlay.opaque";
  CHECK (xattr_is ("dir", opaque, "y"), "%s not set", opaque);
  /* Deleted then recreated in the same layer: an opaque directory. */
  CHECK (has_content ("back/f", "f") && xattr_is ("back", opaque, "y"));
  CHECK (xattr_is ("new", opaque, NULL) && xattr_is (".", opaque, NULL));
}

static void
test_whiteouts (void)
{
  if (!is_root ())
    return unit_skip ("privileged unpack needs root");
  check_whiteouts (true);
}

static void
test_whiteouts_unprivileged (void)
{
  check_whiteouts (false);
}

static void
test_xattrs (void)
{
  for (int priv = 1; priv >= 0; priv--)
    {
      if (priv && !is_root ())
        continue;
      setup ();
      struct ohbox_buf tar = TAR (
        (&(struct ent){ .path = "f", .perm = 0400, .data = "f", .xattr = "user.test", .xattr_value = "hello" }),
        (&(struct ent){ .path = "d", .type = AE_IFDIR, .perm = 0500, .xattr = "user.dir", .xattr_value = "1" }),
        (&(struct ent){ .path = "t", .perm = 0644, .data = "t", .xattr = "trusted.test", .xattr_value = "abc" }));
      struct result r;
      unpack (&tar, priv, 0, &r);
      ohbox_buf_free (&tar);
      CHECK (r.rc == 0, "%s", r.msg);
      CHECK (xattr_is ("f", "user.test", "hello") && xattr_is ("d", "user.dir", "1"));
      CHECK (perm_of ("f") == 0400 && perm_of ("d") == 0500);
      CHECK (xattr_is ("t", "trusted.test", priv ? "abc" : NULL), "trusted.test %s",
             priv ? "missing" : "set unprivileged");
    }
}

static void
test_reserved_xattrs (void)
{
  ATTACK ("trusted.overlay.opaque",
          (&(struct ent){
            .path = "d", .type = AE_IFDIR, .perm = 0755, .xattr = "trusted.overlay.opaque", .xattr_value = "y" }));
  ATTACK ("user.overlay.redirect",
          (&(struct ent){
            .path = "f", .perm = 0644, .data = "", .xattr = "user.overlay.redirect", .xattr_value = "/etc" }));
}

static void
test_devices (void)
{
  if (!is_root ())
    return unit_skip ("device nodes need root");
  setup ();
  struct ohbox_buf tar = TAR (
    (&(struct ent){ .path = "dev/null", .type = AE_IFCHR, .perm = 0666, .major = 1, .minor = 3 }),
    (&(struct ent){ .path = "dev/loop0", .type = AE_IFBLK, .perm = 0660, .major = 7, .minor = 0, .gid = 6 }),
    (&(struct ent){ .path = "fifo", .type = AE_IFIFO, .perm = 0620, .mtime = 1000000000 }));
  struct result r;
  unpack (&tar, true, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("dev/null", &st) == 0 && S_ISCHR (st.st_mode) && st.st_rdev == makedev (1, 3));
  CHECK ((st.st_mode & 07777) == 0666);
  CHECK (lstat_layer ("dev/loop0", &st) == 0 && S_ISBLK (st.st_mode) && st.st_rdev == makedev (7, 0));
  CHECK ((st.st_mode & 07777) == 0660 && st.st_gid == 6);
  CHECK (lstat_layer ("fifo", &st) == 0 && S_ISFIFO (st.st_mode) && (st.st_mode & 07777) == 0620);
  CHECK (st.st_mtim.tv_sec == 1000000000);
  CHECK (r.st.skipped_devices == 0);
}

static void
test_devices_unprivileged (void)
{
  setup ();
  struct ohbox_buf tar = TAR (
    (&(struct ent){ .path = "dev/null", .type = AE_IFCHR, .perm = 0666, .major = 1, .minor = 3 }),
    (&(struct ent){ .path = "dev/loop0", .type = AE_IFBLK, .perm = 0660, .major = 7, .minor = 0 }),
    (&(struct ent){ .path = "fifo", .type = AE_IFIFO, .perm = 0600 }),
    (&(struct ent){ .path = "wh", .type = AE_IFCHR, .perm = 0600 })); /* 0:0, a whiteout */
  struct result r;
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("dev/null", &st) < 0 && lstat_layer ("dev/loop0", &st) < 0);
  CHECK (lstat_layer ("fifo", &st) == 0 && S_ISFIFO (st.st_mode));
  CHECK (is_whiteout ("wh"));
  CHECK (r.st.skipped_devices == 2, "skipped %llu", (unsigned long long) r.st.skipped_devices);
}

static void
test_mtimes (void)
{
  setup ();
  /* Full pax: sub-second times and atime are written. */
  struct ohbox_buf tar = make_tar (
    ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE,
    (const struct ent *const[]){
      (&(struct ent){ .path = "d", .type = AE_IFDIR, .perm = 0755, .mtime = 1000000000 }),
      (&(struct ent){
        .path = "d/f", .perm = 0644, .data = "x", .mtime = 1234567890, .mtime_ns = 500000000, .atime = 1111111111 }),
      (&(struct ent){ .path = "d/sub", .type = AE_IFDIR, .perm = 0700, .mtime = 1200000000 }),
      FILE_ ("d/sub/late", 0644, "late"), FILE_ ("d/late", 0644, "late"), NULL });
  struct result r;
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("d/f", &st) == 0 && st.st_mtim.tv_sec == 1234567890 && st.st_mtim.tv_nsec == 500000000,
         "mtime %ld.%09ld", (long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  CHECK (st.st_atim.tv_sec == 1111111111, "atime %ld", (long) st.st_atim.tv_sec);
  /* Entries written into d after it must not change its mtime. */
  CHECK (lstat_layer ("d", &st) == 0 && st.st_mtim.tv_sec == 1000000000, "d mtime %ld", (long) st.st_mtim.tv_sec);
  CHECK (lstat_layer ("d/sub", &st) == 0 && st.st_mtim.tv_sec == 1200000000 && (st.st_mode & 07777) == 0700);
}

static void
check_ownership (enum how how)
{
  setup ();
  struct ohbox_buf tar = TAR (
    (&(struct ent){ .path = "d", .type = AE_IFDIR, .perm = 0750, .uid = 1234, .gid = 5678 }),
    (&(struct ent){ .path = "d/suid", .perm = 04755, .data = "x", .uid = 1234, .gid = 5678 }),
    (&(struct ent){ .path = "d/sgid", .perm = 02755, .data = "x", .uid = 1234, .gid = 5678 }),
    (&(struct ent){ .path = "l", .type = AE_IFLNK, .perm = 0777, .symlink = "d/suid", .uid = 1234, .gid = 42 }),
    (&(struct ent){ .path = "p", .type = AE_IFIFO, .perm = 0600, .uid = 99, .gid = 98 }));
  struct result r;
  unpack_how (&tar, true, 0, how, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("d", &st) == 0 && st.st_uid == 1234 && st.st_gid == 5678 && (st.st_mode & 07777) == 0750);
  CHECK (lstat_layer ("d/suid", &st) == 0 && st.st_uid == 1234 && st.st_gid == 5678);
  CHECK ((st.st_mode & 07777) == 04755, "setuid lost: 0%o", st.st_mode & 07777);
  /* Without CAP_FSETID, chmod itself drops setgid for a group the caller is not in (kernel rule). */
  if (how == AS_IS)
    CHECK (lstat_layer ("d/sgid", &st) == 0 && (st.st_mode & 07777) == 02755, "setgid lost: 0%o", st.st_mode & 07777);
  CHECK (lstat_layer ("l", &st) == 0 && S_ISLNK (st.st_mode) && st.st_uid == 1234 && st.st_gid == 42);
  CHECK (lstat_layer ("p", &st) == 0 && st.st_uid == 99 && st.st_gid == 98);
  /* The symlink's owner went on the link, not on its target. */
  CHECK (lstat_layer ("d/suid", &st) == 0 && st.st_gid == 5678);
}

static void
test_ownership (void)
{
  if (!is_root ())
    return unit_skip ("chown needs root");
  check_ownership (AS_IS);
}

/* Without CAP_FSETID, chown clears setuid/setgid: they survive only if the
 * mode is set after the owner. */
static void
test_ownership_without_fsetid (void)
{
  if (!is_root ())
    return unit_skip ("chown needs root");
  check_ownership (NO_FSETID);
}

static void
check_long_names (int format)
{
  char comp[101], path[600], dir[500], target[300];
  memset (comp, 'c', 100);
  comp[100] = '\0';
  snprintf (dir, sizeof dir, "long/%s/%s/%s/%s", comp, comp, comp, comp);
  snprintf (path, sizeof path, "%s/file-with-a-long-name", dir);
  snprintf (target, sizeof target, "../../%s/%s/target", comp, comp);
  setup ();
  struct ohbox_buf tar = make_tar (format,
                                   (const struct ent *const[]){ DIR_ (dir, 0755), FILE_ (path, 0644, "deep"),
                                                                LINK_ ("sym", target), HARD_ ("hard", path), NULL });
  struct result r;
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  CHECK (strlen (path) > 255);
  CHECK (has_content (path, "deep") && has_content ("hard", "deep"));
  CHECK (link_is ("sym", target));
}

static void
test_long_names_pax (void)
{
  check_long_names (ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
}

static void
test_long_names_gnu (void)
{
  check_long_names (ARCHIVE_FORMAT_TAR_GNUTAR);
}

static void
test_utf8_names (void)
{
  /* Written as image builders do (a pax `path` record in UTF-8), unpacked
   * in the C locale the library runs in. */
  if (setlocale (LC_CTYPE, "C.UTF-8") == NULL)
    return unit_skip ("no C.UTF-8 locale to write the archive");
  setup ();
  struct ohbox_buf tar = TAR (FILE_ ("caf\xc3\xa9/na\xc3\xafve.txt", 0644, "utf8"), LINK_ ("lien", "caf\xc3\xa9"));
  setlocale (LC_CTYPE, "C");
  CHECK (memmem (tar.data, tar.len, "path=caf\xc3\xa9/na\xc3\xafve.txt\n", 19) != NULL, "no pax path record");
  struct result r;
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  CHECK (has_content ("caf\xc3\xa9/na\xc3\xafve.txt", "utf8") && link_is ("lien", "caf\xc3\xa9"));
}

static void
test_diffid (void)
{
  /* Bytes after the end-of-archive marker (3 MiB, more than one read) are part of the DiffID. */
  struct ohbox_buf raw = TAR (DIR_ ("etc", 0755), FILE_ ("etc/hostname", 0644, "ohbox\n"), LINK_ ("l", "etc"));
  static char trailer[3 * 1024 * 1024 + 17];
  ohbox_buf_append (&raw, trailer, sizeof trailer);
  char expected[OHBOX_DIGEST_LEN + 1];
  sha256_hex (raw.data, raw.len, expected);
  struct ohbox_buf blobs[3] = { raw, compress (&raw, "gzip"), compress (&raw, "zstd") };
  CHECK (blobs[1].len < raw.len / 10 && blobs[2].len < raw.len / 10);
  for (int i = 0; i < 3; i++)
    {
      struct result r;
      setup ();
      /* An O_PATH fd is fine as the destination. */
      int dest = open (t_layer, O_PATH | O_DIRECTORY | O_CLOEXEC);
      int fd = blob_fd (&blobs[i]);
      unpack_fd (fd, dest, false, 0, &r);
      close (fd);
      close (dest);
      CHECK (r.rc == 0, "blob %d: %s", i, r.msg);
      CHECK_STR (r.diffid, expected);
      CHECK (r.st.uncompressed_size == raw.len, "blob %d: size %llu", i, (unsigned long long) r.st.uncompressed_size);
      CHECK (has_content ("etc/hostname", "ohbox\n"));
    }
  for (int i = 0; i < 3; i++)
    ohbox_buf_free (&blobs[i]);
}

static void
test_size_limit (void)
{
  /* Many files under the limit, together over it: only the stream count catches it. */
  struct ohbox_buf many = { 0 };
  struct archive *a = tar_begin (&many, 0);
  for (int i = 0; i < 20; i++)
    {
      char name[32];
      snprintf (name, sizeof name, "part%02d", i);
      tar_add (a, &(struct ent){ .path = name, .perm = 0644, .len = 512 * 1024 });
    }
  tar_end (a);
  struct ohbox_buf many_gz = compress (&many, "gzip");
  ohbox_buf_free (&many);
  struct result r;
  setup ();
  unpack (&many_gz, false, 1024 * 1024, &r);
  ohbox_buf_free (&many_gz);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "rc %d: %s", r.rc, r.msg);
  CHECK (strcmp (r.msg, "layer exceeds the uncompressed size limit of 1048576 bytes") == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("part02", &st) < 0, "wrote past the limit");

  static const struct ent zeros = { .path = "zeros", .perm = 0644, .len = 10 * 1000 * 1000 };
  struct ohbox_buf raw = TAR (&zeros);
  const char *filters[] = { "gzip", "zstd", NULL };
  for (int i = 0; filters[i]; i++)
    {
      struct ohbox_buf blob = compress (&raw, filters[i]);
      CHECK (blob.len < 100 * 1000, "%s: %zu bytes", filters[i], blob.len);
      setup ();
      unpack (&blob, false, 1024 * 1024, &r);
      CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "%s: rc %d: %s", filters[i], r.rc, r.msg);
      CHECK (strstr (r.msg, "uncompressed size limit of 1048576 bytes"), "%s", r.msg);
      /* It stopped at the limit: less than the limit was written. */
      CHECK (lstat_layer ("zeros", &st) < 0 || st.st_size <= 1024 * 1024, "wrote %lld", (long long) st.st_size);
      setup ();
      unpack (&blob, false, 64 * 1024 * 1024, &r);
      CHECK (r.rc == 0, "%s", r.msg);
      CHECK (lstat_layer ("zeros", &st) == 0 && st.st_size == 10 * 1000 * 1000);
      ohbox_buf_free (&blob);
    }
  ohbox_buf_free (&raw);
}

/* The layers of one image share a budget: bytes together, and the free
 * space of the filesystem written. */
static void
unpack_budget (const struct ohbox_buf *blob, struct ohbox_unpack_budget *b, struct result *r)
{
  struct ohbox_layer_options opts = { .budget = b };
  int fd = blob_fd (blob);
  ohbox_error_t err = NULL;
  memset (r, 0, sizeof *r);
  r->rc = ohbox_layer_unpack (fd, layer_fd, &opts, r->diffid, &r->st, &err);
  close (fd);
  if (err)
    {
      r->kind = err->kind;
      snprintf (r->msg, sizeof r->msg, "%s", err->msg);
      ohbox_error_release (&err);
    }
}

static void
test_budget (void)
{
  static const struct ent part = { .path = "part", .perm = 0644, .len = 1500 * 1000 };
  struct ohbox_buf raw = TAR (&part);
  struct ohbox_buf blob = compress (&raw, "zstd");
  ohbox_buf_free (&raw);
  struct result r;
  struct stat st;
  setup ();
  struct ohbox_unpack_budget b = {
    .max = 2 * 1000 * 1000, .fs_fd = layer_fd, .fs_name = "the test's", .check_every = 64 * 1024
  };
  /* Each layer within it, the second over it together with the first. */
  unpack_budget (&blob, &b, &r);
  CHECK (r.rc == 0, "%s", r.msg);
  setup ();
  b.fs_fd = layer_fd;
  unpack_budget (&blob, &b, &r);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "rc %d: %s", r.rc, r.msg);
  CHECK (strstr (r.msg, "the image's layers exceed the unpacked size limit of 2.0 MB (2000000 bytes) together"), "%s",
         r.msg);
  CHECK (lstat_layer ("part", &st) < 0 || st.st_size < 1500 * 1000, "the part was written whole");
  /* A filesystem with less free than the margin: nothing is written. */
  setup ();
  struct ohbox_unpack_budget full = {
    .fs_fd = layer_fd, .fs_name = "the test's", .min_free = UINT64_MAX / 4, .check_every = 64 * 1024
  };
  unpack_budget (&blob, &full, &r);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_STORE, "rc %d: %s", r.rc, r.msg);
  CHECK (strstr (r.msg, "unpacking would leave the store `the test's` less than") != NULL, "%s", r.msg);
  CHECK (strstr (r.msg, "No space left on device") != NULL, "%s", r.msg);
  CHECK (lstat_layer ("part", &st) < 0, "wrote with no room");
  ohbox_buf_free (&blob);
}

static void
test_corrupt_streams (void)
{
  static const struct ent big = { .path = "big", .perm = 0644, .len = 300000 };
  struct ohbox_buf raw = TAR (FILE_ ("a", 0644, "a"), &big, FILE_ ("z", 0644, "z"));
  struct ohbox_buf blobs[3] = { raw, compress (&raw, "gzip"), compress (&raw, "zstd") };
  for (int i = 0; i < 3; i++)
    {
      struct result r;
      struct ohbox_buf cut = blobs[i];
      cut.len = i == 0 ? 512 * 3 + 1000 : cut.len / 2; /* in the middle of `big` */
      setup ();
      unpack (&cut, false, 0, &r);
      CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "truncated blob %d: rc %d kind %d: %s", i, r.rc, r.kind, r.msg);
    }
  const char *garbage[] = { "", "this is not a layer at all, just some text that is longer than nothing",
                            "\x1f\x8b\x08\x00garbage after a gzip magic" };
  for (int i = 0; i < 3; i++)
    {
      struct ohbox_buf b = { (char *) garbage[i], strlen (garbage[i]), 0 };
      struct result r;
      setup ();
      unpack (&b, false, 0, &r);
      CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "garbage %d: rc %d kind %d: %s", i, r.rc, r.kind, r.msg);
    }
  for (int i = 0; i < 3; i++)
    ohbox_buf_free (&blobs[i]);
}

static void
test_overwrite (void)
{
  setup ();
  struct ohbox_buf tar = TAR (FILE_ ("a", 0644, "old"), DIR_ ("a/", 0755), FILE_ ("a/x", 0644, "x"), /* file -> dir */
                              DIR_ ("b/", 0755), FILE_ ("b/y", 0644, "y"), FILE_ ("b", 0600, "new"), /* dir -> file */
                              FILE_ ("c", 0644, "c"), LINK_ ("c", "target"),    /* file -> symlink */
                              FILE_ ("d", 0644, "v1"), FILE_ ("d", 0600, "v2"), /* file -> file */
                              (&(struct ent){
                                .path = "e", .type = AE_IFDIR, .perm = 0700, .mtime = 1000000000 }), /* dir twice */
                              (&(struct ent){ .path = "e/", .type = AE_IFDIR, .perm = 0750, .mtime = 1100000000 }),
                              LINK_ ("f", "somewhere"), DIR_ ("f/", 0711),
                              FILE_ ("f/in", 0644, "in"), /* symlink -> dir */
                              FILE_ ("g/x", 0644, "x"), FILE_ ("g", 0644, "g"), DIR_ ("g", 0755),
                              FILE_ ("g/y", 0644, "y"), /* dir -> file -> dir */
                              DIR_ ("a/", 0700));       /* dir kept */
  struct result r;
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("a", &st) == 0 && S_ISDIR (st.st_mode) && has_content ("a/x", "x") && perm_of ("a") == 0700);
  CHECK (has_content ("b", "new") && perm_of ("b") == 0600);
  CHECK (link_is ("c", "target"));
  CHECK (has_content ("d", "v2") && perm_of ("d") == 0600);
  CHECK (lstat_layer ("e", &st) == 0 && (st.st_mode & 07777) == 0750 && st.st_mtim.tv_sec == 1100000000);
  CHECK (lstat_layer ("f", &st) == 0 && S_ISDIR (st.st_mode) && perm_of ("f") == 0711 && has_content ("f/in", "in"));
  CHECK (has_content ("g/y", "y") && lstat_layer ("g/x", &st) < 0);

  /* A parent replaced by a file, or by a symlink, is not used any more. */
  setup ();
  tar = TAR (FILE_ ("h/x", 0644, "x"), FILE_ ("h", 0644, "h"), FILE_ ("h/y", 0644, "y"));
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY && strstr (r.msg, "`h/y`: parent `h` is not a directory"), "%s",
         r.msg);
  setup ();
  tar = TAR (FILE_ ("i/j/x", 0644, "x"), LINK_ ("i", "elsewhere"), FILE_ ("i/j/y", 0644, "y"));
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY && strstr (r.msg, "`i/j/y`: parent `i/j` passes through a symlink"),
         "%s", r.msg);
}

/* Children listed before their directories: the parents' metadata still
 * wins, and a read-only parent does not block anything (unprivileged). */
static void
test_directory_metadata_order (void)
{
  setup ();
  struct ohbox_buf tar = TAR (FILE_ ("a/b/f", 0644, "f"),
                              (&(struct ent){ .path = "a/b", .type = AE_IFDIR, .perm = 0500, .mtime = 1200000000 }),
                              (&(struct ent){ .path = "a", .type = AE_IFDIR, .perm = 0500, .mtime = 1100000000 }),
                              FILE_ ("a/b/g", 0644, "g"), FILE_ ("a/h", 0644, "h"));
  struct result r;
  unpack (&tar, false, 0, &r);
  ohbox_buf_free (&tar);
  CHECK (r.rc == 0, "%s", r.msg);
  struct stat st;
  CHECK (lstat_layer ("a", &st) == 0 && (st.st_mode & 07777) == 0500 && st.st_mtim.tv_sec == 1100000000);
  CHECK (lstat_layer ("a/b", &st) == 0 && (st.st_mode & 07777) == 0500 && st.st_mtim.tv_sec == 1200000000);
  CHECK (has_content ("a/b/g", "g") && has_content ("a/h", "h"));
}

/* A GNU sparse file (pax 1.0): holes come as gaps in the block offsets. */
static void
test_sparse (void)
{
  const size_t size = 5 * 1024 * 1024, hole_end = 4 * 1024 * 1024;
  char *content = xcalloc (1, size);
  memset (content, 'A', 4096);
  memset (content + hole_end, 'B', 4096);
  struct ohbox_buf raw = { 0 };
  struct archive *a = tar_begin (&raw, ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE);
  struct archive_entry *ae = archive_entry_new ();
  archive_entry_set_pathname (ae, "sparse");
  archive_entry_set_filetype (ae, AE_IFREG);
  archive_entry_set_perm (ae, 0644);
  archive_entry_set_size (ae, (la_int64_t) size);
  archive_entry_sparse_add_entry (ae, 0, 4096);
  archive_entry_sparse_add_entry (ae, (la_int64_t) hole_end, 4096);
  if (archive_write_header (a, ae) != ARCHIVE_OK || archive_write_data (a, content, size) < 0)
    abort ();
  archive_entry_free (ae);
  tar_end (a);
  /* The writer stored only the data: the tar is much smaller than the file. */
  bool stored_sparse = raw.len < 1024 * 1024;
  setup ();
  struct result r;
  unpack (&raw, false, 0, &r);
  ohbox_buf_free (&raw);
  char *data = NULL;
  size_t len = 0;
  ohbox_error_t err = NULL;
  int rc = r.rc == 0 ? ohbox_read_file_at (layer_fd, "sparse", size, &data, &len, &err) : -1;
  bool same = rc == 0 && len == size && memcmp (data, content, size) == 0;
  free (data);
  free (content);
  ohbox_error_release (&err);
  CHECK (stored_sparse, "libarchive wrote the holes");
  CHECK (r.rc == 0, "%s", r.msg);
  CHECK (same, "content differs (%zu bytes)", len);
}

struct progress_log
{
  int calls;
  uint64_t last;
  bool monotonic;
};

static void
progress_cb (void *userdata, uint64_t n)
{
  struct progress_log *p = userdata;
  if (n < p->last)
    p->monotonic = false;
  p->last = n;
  p->calls++;
}

static void
test_progress (void)
{
  /* 3 MB of incompressible data: several progress calls. */
  static char noise[3 * 1000 * 1000];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof noise; i++)
    noise[i] = (char) ((x = x * 1103515245 + 12345) >> 24);
  struct ohbox_buf raw = TAR ((&(struct ent){ .path = "noise", .perm = 0644, .data = noise, .len = sizeof noise }));
  struct ohbox_buf blob = compress (&raw, "gzip");
  setup ();
  int fd = blob_fd (&blob);
  struct progress_log log = { .monotonic = true };
  struct ohbox_layer_options opts = { .progress = progress_cb, .userdata = &log };
  char diffid[OHBOX_DIGEST_LEN + 1];
  ohbox_error_t err = NULL;
  int rc = ohbox_layer_unpack (fd, layer_fd, &opts, diffid, NULL, &err);
  close (fd);
  CHECK (rc == 0, "%s", err ? err->msg : "");
  CHECK (log.calls >= 3 && log.monotonic, "%d calls", log.calls);
  CHECK (log.last == blob.len, "last %llu, blob %zu", (unsigned long long) log.last, blob.len);
  ohbox_buf_free (&raw);
  ohbox_buf_free (&blob);
}

/* ---- streaming: unpacking a blob while it is still being written ---- */

/* A blob appended to a file piece by piece by a thread, as a download
 * writes it, and the wait_more callback the unpack reads it with. */
struct feeder
{
  const struct ohbox_buf *blob;
  size_t stop_at; /* write this much, then end */
  bool fail;      /* end as a failed download instead of a complete one */
  bool hold;      /* at STOP_AT, wait for RELEASE before ending */
  char path[1400];
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  size_t written;
  bool ended, release;
  unsigned waits;       /* wait_more calls */
  bool waited_partial;  /* one came while the blob was incomplete */
  bool offset_past_end; /* one claimed more bytes read than the file has */
};

static void *
feeder_run (void *arg)
{
  struct feeder *f = arg;
  int fd = open (f->path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0)
    abort ();
  for (size_t done = 0; done < f->stop_at;)
    {
      size_t n = f->stop_at - done < 32768 ? f->stop_at - done : 32768;
      if (ohbox_write_all (fd, f->blob->data + done, n) < 0)
        abort ();
      done += n;
      pthread_mutex_lock (&f->lock);
      f->written = done;
      pthread_cond_broadcast (&f->cond);
      /* After the first piece, until the unpack has asked for more (10 s
       * at most): on a loaded machine it could otherwise be scheduled only
       * once the whole blob is written, and streaming would go untested. */
      if (done == n)
        {
          struct timespec until;
          clock_gettime (CLOCK_REALTIME, &until);
          until.tv_sec += 10;
          while (f->waits == 0)
            if (pthread_cond_timedwait (&f->cond, &f->lock, &until) != 0)
              break;
        }
      pthread_mutex_unlock (&f->lock);
      usleep (300); /* slower than the unpack: it has to wait */
    }
  close (fd);
  /* Held for 10 s at most: an unpack that waits for the end fails the test
   * instead of hanging it. */
  struct timespec until;
  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock (&f->lock);
  while (f->hold && !f->release)
    if (pthread_cond_timedwait (&f->cond, &f->lock, &until) != 0)
      break;
  f->ended = true;
  pthread_cond_broadcast (&f->cond);
  pthread_mutex_unlock (&f->lock);
  return NULL;
}

/* Returns early (after 20 ms without news), as the contract allows. */
static int
feeder_wait (void *userdata, uint64_t offset, ohbox_error_t *err)
{
  struct feeder *f = userdata;
  struct timespec until;
  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_nsec += 20 * 1000 * 1000;
  if (until.tv_nsec >= 1000000000)
    until.tv_sec++, until.tv_nsec -= 1000000000;
  int r = 1;
  pthread_mutex_lock (&f->lock);
  f->waits++;
  pthread_cond_broadcast (&f->cond);
  if (!f->ended)
    f->waited_partial = true;
  struct stat st;
  if (stat (f->path, &st) < 0 || offset > (uint64_t) st.st_size)
    f->offset_past_end = true;
  while (!f->ended && f->written <= offset)
    if (pthread_cond_timedwait (&f->cond, &f->lock, &until) != 0)
      break;
  if (f->ended)
    r = f->fail ? ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "test: the download failed") : 0;
  pthread_mutex_unlock (&f->lock);
  return r;
}

static void
feeder_start (struct feeder *f, const struct ohbox_buf *blob)
{
  f->blob = blob;
  if (f->stop_at == 0)
    f->stop_at = blob->len;
  snprintf (f->path, sizeof f->path, "%s/blob", t_dir);
  int fd = open (f->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    abort ();
  close (fd);
  pthread_mutex_init (&f->lock, NULL);
  pthread_cond_init (&f->cond, NULL);
  if (pthread_create (&f->thread, NULL, feeder_run, f) != 0)
    abort ();
}

static void
feeder_finish (struct feeder *f)
{
  pthread_mutex_lock (&f->lock);
  f->release = true;
  pthread_cond_broadcast (&f->cond);
  pthread_mutex_unlock (&f->lock);
  pthread_join (f->thread, NULL);
  pthread_mutex_destroy (&f->lock);
  pthread_cond_destroy (&f->cond);
}

/* Unpacks into t_layer (as we are) from F's file while F writes it. */
static void
unpack_streaming (struct feeder *f, struct result *r)
{
  int fd = open (f->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    abort ();
  struct ohbox_layer_options opts = { .privileged = is_root (), .wait_more = feeder_wait, .userdata = f };
  ohbox_error_t err = NULL;
  memset (r, 0, sizeof *r);
  r->rc = ohbox_layer_unpack (fd, layer_fd, &opts, r->diffid, &r->st, &err);
  if (err)
    {
      r->kind = err->kind;
      snprintf (r->msg, sizeof r->msg, "%s", err->msg);
      ohbox_error_release (&err);
    }
  close (fd);
}

/* 3 MB that gzip and zstd cannot shrink: a blob of many pieces. */
static const char *
noise (void)
{
  static char buf[3 * 1000 * 1000];
  uint32_t x = 4242;
  for (size_t i = 0; i < sizeof buf; i++)
    buf[i] = (char) ((x = x * 1103515245 + 12345) >> 24);
  return buf;
}
#define NOISE_ (&(struct ent){ .path = "etc/noise", .perm = 0644, .data = noise (), .len = 3 * 1000 * 1000 })

static void
test_stream_growing_blob (void)
{
  /* The same layer as a finished blob and as one still being written:
   * same DiffID, same tree, for each compression. */
  struct ohbox_buf raw = TAR (DIR_ ("etc", 0755), FILE_ ("etc/hostname", 0644, "ohbox\n"), NOISE_,
                              LINK_ ("etc/link", "hostname"), FILE_ ("z", 0600, "last"));
  char expected[OHBOX_DIGEST_LEN + 1];
  sha256_hex (raw.data, raw.len, expected);
  struct ohbox_buf blobs[3] = { raw, compress (&raw, "gzip"), compress (&raw, "zstd") };
  for (int i = 0; i < 3; i++)
    {
      setup ();
      struct feeder f = { 0 };
      struct result r;
      feeder_start (&f, &blobs[i]);
      unpack_streaming (&f, &r);
      feeder_finish (&f);
      CHECK (r.rc == 0, "blob %d: %s", i, r.msg);
      CHECK_STR (r.diffid, expected);
      CHECK (r.st.uncompressed_size == raw.len);
      CHECK (f.waited_partial, "blob %d: the unpack never waited for the writer", i);
      CHECK (!f.offset_past_end, "blob %d: wait_more was told more bytes than the file has", i);
      CHECK (has_content ("etc/hostname", "ohbox\n") && has_content ("z", "last"));
      struct stat st;
      CHECK (lstat_layer ("etc/noise", &st) == 0 && st.st_size == 3 * 1000 * 1000);
    }
  for (int i = 0; i < 3; i++)
    ohbox_buf_free (&blobs[i]);
}

static void
test_stream_download_fails (void)
{
  struct ohbox_buf raw = TAR (FILE_ ("a", 0644, "a"), NOISE_);
  struct ohbox_buf blob = compress (&raw, "gzip");
  const bool fail[2] = { true, false };
  for (int i = 0; i < 2; i++)
    {
      /* Half of it, then the download fails (the unpack fails with its
       * error), or says it is complete (the stream is truncated). */
      setup ();
      struct feeder f = { .stop_at = blob.len / 2, .fail = fail[i] };
      struct result r;
      feeder_start (&f, &blob);
      unpack_streaming (&f, &r);
      feeder_finish (&f);
      CHECK (r.rc < 0, "case %d: unpacked half a blob", i);
      if (fail[i])
        CHECK (r.kind == OHBOX_ERR_REGISTRY && strstr (r.msg, "test: the download failed"), "%s", r.msg);
      else
        CHECK (r.kind == OHBOX_ERR_INTEGRITY, "kind %d: %s", r.kind, r.msg);
    }
  ohbox_buf_free (&raw);
  ohbox_buf_free (&blob);
}

static void
test_stream_entry_error_while_waiting (void)
{
  /* A hostile first entry, and a download that stalls after the first
   * part: the unpack fails on the entry (its error, not the stream's) and
   * returns without waiting for the rest of the blob. */
  struct ohbox_buf raw = TAR (FILE_ ("../outside/evil", 0644, "evil"), NOISE_);
  struct ohbox_buf blob = compress (&raw, "gzip");
  setup ();
  /* More than one block of the ring (512 KiB), less than two: the tar
   * reader gets the first, the decompression thread is left waiting for
   * the download in the middle of the second. */
  struct feeder f = { .stop_at = 700 * 1000, .hold = true };
  struct snapshot before, after;
  struct result r;
  feeder_start (&f, &blob);
  take_snapshot (&before);
  double t0 = ohbox_monotonic ();
  unpack_streaming (&f, &r);
  double elapsed = ohbox_monotonic () - t0;
  pthread_mutex_lock (&f.lock);
  bool ended = f.ended;
  pthread_mutex_unlock (&f.lock);
  feeder_finish (&f);
  take_snapshot (&after);
  CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "rc %d kind %d: %s", r.rc, r.kind, r.msg);
  CHECK (strstr (r.msg, "`../outside/evil`: path leaves the layer") != NULL, "%s", r.msg);
  CHECK (!ended && elapsed < 5, "returned after %.1f s, download ended: %d", elapsed, ended);
  const char *d = snapshot_diff (&before, &after);
  CHECK (d == NULL, "%s", d);
  ohbox_buf_free (&raw);
  ohbox_buf_free (&blob);
}

/* ---- attacks ----
 * The traversal shapes (../ and absolute names, symlinks then entries
 * through them, hardlinks out, entries naming the root, whiteout names,
 * links replaced by later entries) run through the real CLI in
 * tests/integration/escape.sh (layer_*: pushed to a registry and pulled).
 * Bombs stay here: they need no registry and check the exact limit. */

/* Gzip bombs, written straight through the gzip writer (never held
 * uncompressed): one huge entry, and many entries each under the limit. */
static struct ohbox_buf
gzip_bomb (int n_files, size_t file_size)
{
  struct ohbox_buf out = { 0 };
  struct archive *a = archive_write_new ();
  archive_write_set_format (a, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
  archive_write_add_filter_gzip (a);
  archive_write_set_bytes_in_last_block (a, 1);
  if (archive_write_open (a, &out, NULL, buf_write, NULL) != ARCHIVE_OK)
    abort ();
  for (int i = 0; i < n_files; i++)
    {
      char name[32];
      snprintf (name, sizeof name, "bomb%03d", i);
      tar_add (a, &(struct ent){ .path = name, .perm = 0644, .len = file_size });
    }
  tar_end (a);
  return out;
}

static void
test_attack_bomb (void)
{
  const struct
  {
    int n;
    size_t size;
  } bombs[] = { { 1, 256 * 1024 * 1024 }, { 100, 1024 * 1024 } };
  for (int i = 0; i < 2; i++)
    {
      struct snapshot before, after;
      struct ohbox_buf blob = gzip_bomb (bombs[i].n, bombs[i].size);
      CHECK (blob.len < 1024 * 1024, "bomb %d: %zu bytes compressed", i, blob.len);
      setup ();
      take_snapshot (&before);
      struct result r;
      unpack (&blob, false, 16 * 1024 * 1024, &r);
      take_snapshot (&after);
      ohbox_buf_free (&blob);
      CHECK (r.rc < 0 && r.kind == OHBOX_ERR_INTEGRITY, "bomb %d: rc %d: %s", i, r.rc, r.msg);
      CHECK (strstr (r.msg, "uncompressed size limit of 16777216 bytes"), "bomb %d: %s", i, r.msg);
      const char *d = snapshot_diff (&before, &after);
      CHECK (d == NULL, "%s", d);
      /* Stopped at the limit: at most 16 MiB were written. */
      struct stat st;
      uint64_t written = 0;
      for (int f = 0; f < bombs[i].n; f++)
        {
          char name[32];
          snprintf (name, sizeof name, "bomb%03d", f);
          if (lstat_layer (name, &st) == 0)
            written += (uint64_t) st.st_size;
        }
      CHECK (written <= 16 * 1024 * 1024, "bomb %d: %llu bytes written", i, (unsigned long long) written);
    }
}

static int
make_removable (const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void) ftw;
  if (type == FTW_D || type == FTW_DNR)
    chmod (path, (st->st_mode & 07777) | 0700);
  return 0;
}

UNIT_MAIN_BEGIN ("test-layer")
{
  const char *work = getenv ("OHBOX_TEST_WORK");
  snprintf (base_dir, sizeof base_dir, "%s/test-layer-XXXXXX", work && *work ? work : "/tmp");
  if (unit_mkdtemp (base_dir) < 0)
    return 1;
  /* uid 65534 must reach the test directories to unpack unprivileged. */
  chmod (base_dir, 0755);
  RUN_TEST (test_regular_files);
  RUN_TEST (test_regular_files_unprivileged);
  RUN_TEST (test_symlinks);
  RUN_TEST (test_hardlinks);
  RUN_TEST (test_hardlink_errors);
  RUN_TEST (test_whiteouts);
  RUN_TEST (test_whiteouts_unprivileged);
  RUN_TEST (test_xattrs);
  RUN_TEST (test_reserved_xattrs);
  RUN_TEST (test_devices);
  RUN_TEST (test_devices_unprivileged);
  RUN_TEST (test_mtimes);
  RUN_TEST (test_ownership);
  RUN_TEST (test_ownership_without_fsetid);
  RUN_TEST (test_long_names_pax);
  RUN_TEST (test_long_names_gnu);
  RUN_TEST (test_utf8_names);
  RUN_TEST (test_diffid);
  RUN_TEST (test_size_limit);
  RUN_TEST (test_budget);
  RUN_TEST (test_corrupt_streams);
  RUN_TEST (test_overwrite);
  RUN_TEST (test_directory_metadata_order);
  RUN_TEST (test_sparse);
  RUN_TEST (test_progress);
  RUN_TEST (test_stream_growing_blob);
  RUN_TEST (test_stream_download_fails);
  RUN_TEST (test_stream_entry_error_while_waiting);
  RUN_TEST (test_attack_bomb);
  if (layer_fd >= 0)
    close (layer_fd);
  ohbox_error_t err = NULL;
  /* Not root: make the 0000 and read-only directories removable first. */
  if (!is_root ())
    nftw (base_dir, make_removable, 64, FTW_PHYS);
  if (getenv ("OHBOX_TEST_KEEP") == NULL && ohbox_rm_rf_at (AT_FDCWD, base_dir, &err) < 0)
    {
      printf ("# cleanup: %s\n", err->msg);
      ohbox_error_release (&err);
    }
}
UNIT_MAIN_END
