/* archive.c: POST /upload_file and GET /download_files, zips with minizip
 * (Debian's libminizip1: zlib's minizip, ~50 kB, needs only zlib).
 *
 * Uploads stream to a temporary file in the destination (never held in
 * memory) up to executor.max_upload bytes.  A zip's temporary file has no
 * name (O_TMPFILE, else unlinked at once): the sandbox's own processes can
 * neither read it nor swap it for another, and the unpack reads it through
 * the one descriptor it was written to.  The unpack (unpack_zip) is:
 *
 *   1. the central directory, once: every entry is checked before anything
 *      is written -- its name (relative, no `..`, no backslash, no NUL),
 *      its kind, compression (stored or deflated), no encryption; no entry
 *      beneath a file or symlink entry of the same zip; no two files of one
 *      name; the entry count (executor.max_zip_entries), the sum of the
 *      declared sizes (executor.max_unpacked: entries sharing one entry's
 *      data count once each) and the free space of the destination;
 *   2. the data, entry by entry in zip order: directories created, files
 *      written to temporary names in their directories, each checked
 *      against its declared size and CRC;
 *   3. the temporary files renamed to their names.
 * Any failure before step 3 leaves the destination as it was (temporary
 * files removed, directories it created removed); errors name the entry.
 * Every directory is opened beneath the destination one component at a
 * time with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a symlink in
 * the destination (the agent can plant one) is never followed.  Symlink
 * and device entries are not unpacked (the Python server's zipfile writes a
 * symlink's target as a file); an entry beneath one is refused.
 *
 * Downloads: a thread writes the zip into a pipe that libmicrohttpd
 * streams to the client.  minizip patches each entry's local header once
 * the entry is written (it seeks back): the entry being written is held in
 * an unnamed temporary file (the spool) and sent when it is complete, so
 * the pipe only ever sees finished bytes and no more than one entry waits
 * on disk. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <unzip.h>
#include <zip.h>

#include "executor.h"
#include "obs.h"
#include "server.h"
#include "common/utils.h"

/* Bytes of entry names one zip may hold in memory while it is checked. */
#define MAX_NAME_BYTES (32u << 20)
#define COPY_BUF 65536
#define TMP_PREFIX ".ohbox-unzip-"

static int
fail (int *status, char **detail, int code, char *msg)
{
  *status = code;
  *detail = msg;
  return -1;
}

/* NAME for an error message: control bytes (and, when NAME is not UTF-8,
 * bytes above 0x7f) as \xNN, at most about 300 bytes. */
static char *
shown (const char *name)
{
  size_t len = strlen (name);
  bool utf8 = utf8_valid (name, len);
  struct ohbox_buf b = { 0 };
  for (size_t i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) name[i];
      if (b.len > 300 && (c & 0xc0) != 0x80)
        {
          ohbox_buf_append (&b, "...", 3);
          break;
        }
      if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
        {
          char esc[5];
          snprintf (esc, sizeof esc, "\\x%02x", c);
          ohbox_buf_append (&b, esc, 4);
        }
      else
        ohbox_buf_append (&b, name + i, 1);
    }
  ohbox_buf_append (&b, "", 1);
  return b.data;
}

/* ---- upload ---------------------------------------------------------------------- */

struct upload
{
  struct executor *ex;
  char *dest;
  char *name;
  char *tmp; /* a plain file's temporary name in DEST; NULL for a zip (unnamed) */
  int fd;
  bool zip;
  uint64_t size, max;
};

static bool
upload_is_zip (const char *name, bool recursive)
{
  size_t nl = strlen (name);
  return recursive || (nl >= 4 && strcasecmp (name + nl - 4, ".zip") == 0);
}

/* A file in DIR that no path names: O_TMPFILE, else a new name unlinked at
 * once (filesystems without O_TMPFILE). */
static int
open_unnamed (const char *dir)
{
  int fd = open (dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
    return fd;
  cleanup_free char *tmp = xasprintf ("%s/.ohbox-upload-XXXXXX", dir);
  fd = mkostemp (tmp, O_CLOEXEC);
  if (fd >= 0)
    unlink (tmp);
  return fd;
}

int
upload_begin (struct executor *ex, const char *dest, const char *name, bool recursive, struct upload **out, int *status,
              char **detail)
{
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_mkdir_p (AT_FDCWD, dest, 0755, &err) < 0)
    return fail (status, detail, 500, xasprintf ("create the destination `%s`: %s", dest, err->msg));
  /* Only the base name of the part's file name counts. */
  const char *base = strrchr (name, '/');
  base = base ? base + 1 : name;
  if (*base == '\0' || strcmp (base, ".") == 0 || strcmp (base, "..") == 0)
    return fail (status, detail, 400, xasprintf ("invalid upload file name `%s`", name));
  struct upload *u = xcalloc (1, sizeof (*u));
  u->ex = ex;
  u->dest = xstrdup (dest);
  u->name = xstrdup (base);
  u->max = ex->max_upload;
  u->zip = upload_is_zip (name, recursive);
  if (u->zip)
    u->fd = open_unnamed (dest);
  else
    {
      u->tmp = xasprintf ("%s/.ohbox-upload-XXXXXX", dest);
      u->fd = mkostemp (u->tmp, O_CLOEXEC);
    }
  if (u->fd < 0)
    {
      int e = errno;
      free (u->tmp);
      u->tmp = NULL;
      upload_abort (u);
      return fail (status, detail, 500, xasprintf ("create a file in `%s`: %s", dest, strerror (e)));
    }
  *out = u;
  return 0;
}

int
upload_data (struct upload *u, const char *data, size_t len, int *status, char **detail)
{
  if (u->size + len > u->max)
    return fail (status, detail, 413,
                 xasprintf ("upload too large (limit %llu bytes, OHBOX_EXECUTOR_MAX_UPLOAD)",
                            (unsigned long long) u->max));
  if (ohbox_write_all (u->fd, data, len) < 0)
    return fail (status, detail, errno == ENOSPC || errno == EDQUOT ? 507 : 500,
                 xasprintf ("write the upload into `%s`: %s", u->dest, strerror (errno)));
  u->size += len;
  return 0;
}

void
upload_abort (struct upload *u)
{
  if (u == NULL)
    return;
  if (u->fd >= 0)
    close (u->fd);
  if (u->tmp)
    unlink (u->tmp);
  free (u->tmp);
  free (u->dest);
  free (u->name);
  free (u);
}

/* ---- a zip on a descriptor, as minizip's callbacks see it ------------------------- */

/* An upload's zip read back (END is its size), or a download's zip spooled:
 * the bytes from BASE (a zip offset) to END are in FD, not yet sent to OUT. */
struct zip_fd
{
  int fd;
  uint64_t pos, end;
  int err;
  int out;       /* a download's pipe to the client */
  uint64_t base; /* a download's bytes sent */
};

static voidpf ZCALLBACK
zfd_open (voidpf opaque, const void *filename OHBOX_UNUSED, int mode OHBOX_UNUSED)
{
  return opaque;
}

static ZPOS64_T ZCALLBACK
zfd_tell (voidpf opaque OHBOX_UNUSED, voidpf stream)
{
  return ((struct zip_fd *) stream)->pos;
}

static int ZCALLBACK
zfd_error (voidpf opaque OHBOX_UNUSED, voidpf stream)
{
  return ((struct zip_fd *) stream)->err;
}

/* Where a seek to ORIGIN counts its offset from. */
static uint64_t
zfd_seek_base (const struct zip_fd *s, int origin)
{
  return origin == ZLIB_FILEFUNC_SEEK_SET ? 0 : origin == ZLIB_FILEFUNC_SEEK_CUR ? s->pos : s->end;
}

/* minizip's callbacks for S: those above, and those of its direction. */
static zlib_filefunc64_def
zfd_functions (struct zip_fd *s, read_file_func read_fn, write_file_func write_fn, seek64_file_func seek_fn,
               close_file_func close_fn)
{
  return (zlib_filefunc64_def){ .zopen64_file = zfd_open,
                                .zread_file = read_fn,
                                .zwrite_file = write_fn,
                                .ztell64_file = zfd_tell,
                                .zseek64_file = seek_fn,
                                .zclose_file = close_fn,
                                .zerror_file = zfd_error,
                                .opaque = s };
}

/* ---- reading the zip through the upload's descriptor ------------------------------ */

static uLong ZCALLBACK
src_read (voidpf opaque OHBOX_UNUSED, voidpf stream, void *buf, uLong size)
{
  struct zip_fd *s = stream;
  uLong done = 0;
  while (done < size)
    {
      ssize_t n = pread (s->fd, (char *) buf + done, size - done, (off_t) s->pos);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          s->err = n < 0 ? errno : 0;
          break;
        }
      done += (uLong) n;
      s->pos += (uint64_t) n;
    }
  return done;
}

static long ZCALLBACK
src_seek (voidpf opaque OHBOX_UNUSED, voidpf stream, ZPOS64_T offset, int origin)
{
  struct zip_fd *s = stream;
  uint64_t from = zfd_seek_base (s, origin);
  if (offset > s->end || from + offset > s->end)
    return -1;
  s->pos = from + offset;
  return 0;
}

static int ZCALLBACK
src_close (voidpf opaque OHBOX_UNUSED, voidpf stream OHBOX_UNUSED)
{
  return 0; /* the upload owns the descriptor */
}

/* ---- checking the entries (the central directory) --------------------------------- */

enum entry_kind
{
  ENTRY_FILE,
  ENTRY_DIR,
  ENTRY_SKIPPED, /* a symlink or a device: not unpacked */
};

struct entry
{
  char *name; /* as in the zip */
  char *path; /* NAME cleaned: no empty or `.` components, no trailing / */
  enum entry_kind kind;
  mode_t mode; /* a file's permissions */
  uint64_t size;
  unz64_file_pos pos;
  char *tmp; /* a staged file's temporary name in its directory */
  bool done; /* renamed into place */
};

struct unpack
{
  struct upload *u;
  unzFile zf;
  int destfd;
  struct entry *e;
  size_t n;
  char **created; /* directories this unpack made, in order */
  size_t n_created;
  /* The directory the last entry went to, kept open. */
  char *parent_path;
  int parent_fd;
  int status;
  char *detail;
};

static int
refuse (struct unpack *p, int status, char *msg)
{
  free (p->detail);
  p->status = status;
  p->detail = msg;
  return -1;
}

static int
refuse_entry (struct unpack *p, int status, const char *name, const char *why)
{
  cleanup_free char *s = shown (name);
  return refuse (p, status, xasprintf ("zip entry `%s` %s; nothing was unpacked", s, why));
}

/* Why NAME may not be unpacked, or NULL; *PATH gets the cleaned path. */
static const char *
check_name (const char *name, char **path)
{
  *path = NULL;
  if (*name == '\0')
    return "has an empty name";
  if (name[0] == '/')
    return "is an absolute path: it would be written outside the destination";
  if (strchr (name, '\\'))
    return "has a backslash (a Windows path separator): it would be read differently by other tools";
  struct ohbox_buf b = { 0 };
  for (const char *c = name; *c;)
    {
      size_t l = strcspn (c, "/");
      if (l == 2 && c[0] == '.' && c[1] == '.')
        {
          ohbox_buf_free (&b);
          return "has a `..` component: it would be written outside the destination";
        }
      if (l > NAME_MAX)
        {
          ohbox_buf_free (&b);
          return "has a path component longer than 255 bytes";
        }
      if (l && !(l == 1 && c[0] == '.'))
        {
          if (b.len)
            ohbox_buf_append (&b, "/", 1);
          ohbox_buf_append (&b, c, l);
        }
      c += l;
      c += *c == '/';
    }
  ohbox_buf_append (&b, "", 1);
  *path = b.data;
  return NULL;
}

/* The kind of the current entry and, for a file, its permissions. */
static enum entry_kind
entry_kind (const unz_file_info64 *fi, const char *name, mode_t *perm)
{
  unsigned host = (unsigned) (fi->version >> 8);
  /* Unix (3) and OS X (19) keep st_mode in the high 16 bits. */
  mode_t mode = host == 3 || host == 19 ? (mode_t) (fi->external_fa >> 16) : 0;
  size_t nl = strlen (name);
  *perm = mode & 0777 ? mode & 0777 : 0644;
  /* Writers may set permission bits without a file type (Python's
   * ZipFile.writestr does): no type is a file, as the DOS attributes say. */
  mode_t type = mode & S_IFMT;
  if ((nl && name[nl - 1] == '/') || S_ISDIR (mode) || (type == 0 && (fi->external_fa & 0x10)))
    return ENTRY_DIR;
  if (type != 0 && !S_ISREG (mode))
    return ENTRY_SKIPPED;
  return ENTRY_FILE;
}

static int
read_entry (struct unpack *p, uint64_t *total, uint64_t *name_bytes)
{
  struct executor *ex = p->u->ex;
  unz_file_info64 fi;
  char name[PATH_MAX + 1];
  if (unzGetCurrentFileInfo64 (p->zf, &fi, name, sizeof name, NULL, 0, NULL, 0) != UNZ_OK)
    return refuse (p, 400, xasprintf ("Uploaded file is not a valid zip file (entry %zu is damaged)", p->n + 1));
  if (fi.size_filename >= sizeof name)
    return refuse (p, 400,
                   xasprintf ("zip entry %zu has a name longer than %d bytes; nothing was unpacked", p->n + 1,
                              PATH_MAX));
  name[fi.size_filename] = '\0';
  if (strlen (name) != fi.size_filename)
    return refuse_entry (p, 400, name, "has a NUL byte in its name");
  *name_bytes += fi.size_filename;
  if (*name_bytes > MAX_NAME_BYTES)
    return refuse (p, 413, xasprintf ("zip entry names take more than %u bytes", MAX_NAME_BYTES));

  struct entry *e = &p->e[p->n];
  memset (e, 0, sizeof *e);
  e->name = xstrdup (name);
  p->n++;
  const char *why = check_name (name, &e->path);
  if (why)
    return refuse_entry (p, 400, name, why);
  e->kind = entry_kind (&fi, name, &e->mode);
  if (e->kind == ENTRY_DIR)
    return unzGetFilePos64 (p->zf, &e->pos) == UNZ_OK ? 0 : refuse_entry (p, 400, name, "cannot be located");
  if (*e->path == '\0')
    return refuse_entry (p, 400, name, "names no file");
  if (e->kind == ENTRY_SKIPPED)
    return 0;
  if (fi.flag & 1)
    return refuse_entry (p, 400, name, "is encrypted (not supported)");
  if (fi.compression_method != 0 && fi.compression_method != Z_DEFLATED)
    {
      cleanup_free char *why_m = xasprintf (
        "uses compression method %lu: only stored (0) and deflated (8) entries are supported", fi.compression_method);
      return refuse_entry (p, 400, name, why_m);
    }
  e->size = fi.uncompressed_size;
  if (e->size > ex->max_unpacked - *total)
    {
      cleanup_free char *why_b = xasprintf ("makes the zip unpack to more than %llu bytes "
                                            "(OHBOX_EXECUTOR_MAX_UNPACKED)",
                                            (unsigned long long) ex->max_unpacked);
      return refuse_entry (p, 413, name, why_b);
    }
  *total += e->size;
  return unzGetFilePos64 (p->zf, &e->pos) == UNZ_OK ? 0 : refuse_entry (p, 400, name, "cannot be located");
}

static int
cmp_path (const void *a, const void *b)
{
  const struct entry *x = *(struct entry *const *) a, *y = *(struct entry *const *) b;
  int c = strcmp (x->path, y->path);
  return c ? c : (int) x->kind - (int) y->kind;
}

static const char *
kind_word (enum entry_kind k)
{
  return k == ENTRY_FILE ? "a file" : k == ENTRY_DIR ? "a directory" : "a symbolic link or device";
}

/* No entry lies beneath a file or symlink entry of the zip, no path is both
 * a directory and something else, no two files share a path. */
static int
check_tree (struct unpack *p)
{
  cleanup_free struct entry **by_path = xcalloc (p->n ? p->n : 1, sizeof *by_path);
  size_t m = 0;
  for (size_t i = 0; i < p->n; i++)
    if (*p->e[i].path)
      by_path[m++] = &p->e[i];
  qsort (by_path, m, sizeof *by_path, cmp_path);
  for (size_t i = 1; i < m; i++)
    {
      struct entry *a = by_path[i - 1], *b = by_path[i];
      if (strcmp (a->path, b->path) == 0 && (a->kind != ENTRY_DIR || b->kind != ENTRY_DIR))
        {
          cleanup_free char *why = a->kind == b->kind ? xasprintf ("appears twice in the zip")
                                                      : xasprintf ("is %s, and the zip also makes it %s",
                                                                   kind_word (b->kind), kind_word (a->kind));
          return refuse_entry (p, 400, b->name, why);
        }
    }
  for (size_t i = 0; i < m; i++)
    {
      struct entry key = { 0 }, *k = &key;
      cleanup_free char *prefix = xstrdup (by_path[i]->path);
      for (char *slash = strrchr (prefix, '/'); slash; slash = strrchr (prefix, '/'))
        {
          *slash = '\0';
          key.path = prefix;
          key.kind = ENTRY_FILE;
          /* A file or skipped entry of that path sorts after a directory. */
          struct entry **hit = bsearch (&k, by_path, m, sizeof *by_path, cmp_path);
          key.kind = ENTRY_SKIPPED;
          if (hit == NULL)
            hit = bsearch (&k, by_path, m, sizeof *by_path, cmp_path);
          if (hit)
            {
              cleanup_free char *other = shown ((*hit)->name);
              cleanup_free char *why = xasprintf ("lies beneath `%s`, which the zip makes %s", other,
                                                  kind_word ((*hit)->kind));
              return refuse_entry (p, 400, by_path[i]->name, why);
            }
        }
    }
  return 0;
}

static int
check_entries (struct unpack *p)
{
  struct executor *ex = p->u->ex;
  unz_global_info64 gi;
  if (unzGetGlobalInfo64 (p->zf, &gi) != UNZ_OK)
    return refuse (p, 400, xstrdup ("Uploaded file is not a valid zip file"));
  if (gi.number_entry > ex->max_zip_entries)
    return refuse (p, 413,
                   xasprintf ("zip has %llu entries, more than %u (OHBOX_EXECUTOR_MAX_ZIP_ENTRIES); "
                              "nothing was unpacked",
                              (unsigned long long) gi.number_entry, ex->max_zip_entries));
  p->e = xcalloc (gi.number_entry ? gi.number_entry : 1, sizeof *p->e);
  uint64_t total = 0, name_bytes = 0;
  int r;
  for (r = unzGoToFirstFile (p->zf); r == UNZ_OK; r = unzGoToNextFile (p->zf))
    {
      /* The count read from the end of the zip bounds the walk (unzip.c
       * stops there); this holds if it ever did not. */
      if (p->n == gi.number_entry)
        return refuse (p, 400, xstrdup ("Uploaded file is not a valid zip file (more entries than it says)"));
      if (read_entry (p, &total, &name_bytes) < 0)
        return -1;
    }
  if (r != UNZ_END_OF_LIST_OF_FILE || p->n != gi.number_entry)
    return refuse (p, 400,
                   xasprintf ("Uploaded file is not a valid zip file (its central directory ends after "
                              "%zu of %llu entries)",
                              p->n, (unsigned long long) gi.number_entry));
  if (check_tree (p) < 0)
    return -1;
  struct statvfs vfs;
  if (fstatvfs (p->destfd, &vfs) == 0 && total > (uint64_t) vfs.f_bavail * vfs.f_frsize)
    return refuse (p, 507,
                   xasprintf ("zip unpacks to %llu bytes, the destination `%s` has %llu bytes free; "
                              "nothing was unpacked",
                              (unsigned long long) total, p->u->dest,
                              (unsigned long long) vfs.f_bavail * vfs.f_frsize));
  return 0;
}

/* ---- writing beneath the destination ---------------------------------------------- */

/* The error for an openat2/mkdirat of COMPONENT (a prefix of ENTRY's path). */
static int
dir_error (struct unpack *p, const struct entry *e, const char *component)
{
  int err = errno;
  cleanup_free char *c = shown (component);
  cleanup_free char *why = err == ELOOP     ? xasprintf ("passes through `%s`, a symbolic link in the destination", c)
                           : err == ENOTDIR ? xasprintf ("passes through `%s`, which is not a directory in the "
                                                         "destination",
                                                         c)
                           : err == EXDEV   ? xasprintf ("leaves the destination at `%s`", c)
                                            : xasprintf ("cannot make the directory `%s`: %s", c, strerror (err));
  return refuse_entry (p,
                       err == ENOSPC || err == EDQUOT                   ? 507
                       : err == ELOOP || err == ENOTDIR || err == EXDEV ? 400
                                                                        : 500,
                       e->name, why);
}

/* Opens (creating what is missing) the directory DIR, a cleaned path
 * beneath the destination ("" for the destination itself), one component
 * at a time, none of them a symlink.  Returns a descriptor the caller must
 * not close (the last one is kept for the next entry). */
static int
open_dir (struct unpack *p, const struct entry *e, const char *dir, bool create)
{
  if (p->parent_path && strcmp (p->parent_path, dir) == 0)
    return p->parent_fd;
  if (p->parent_fd >= 0 && p->parent_fd != p->destfd)
    close (p->parent_fd);
  free (p->parent_path);
  p->parent_path = NULL;
  p->parent_fd = -1;
  int cur = p->destfd;
  cleanup_free char *walked = xstrdup (dir);
  for (char *c = walked; *c;)
    {
      char *end = strchrnul (c, '/');
      char saved = *end;
      *end = '\0';
      if (create && mkdirat (cur, c, 0755) == 0)
        {
          p->created = xrealloc (p->created, (p->n_created + 1) * sizeof *p->created);
          p->created[p->n_created++] = xstrdup (walked);
        }
      else if (create && errno != EEXIST)
        {
          if (cur != p->destfd)
            close (cur);
          return dir_error (p, e, walked);
        }
      int next = ohbox_openat_beneath (cur, c, O_RDONLY | O_DIRECTORY, 0, 0);
      int oerr = errno;
      if (cur != p->destfd)
        close (cur);
      if (next < 0)
        {
          errno = oerr;
          return dir_error (p, e, walked);
        }
      cur = next;
      *end = saved;
      c = *end ? end + 1 : end;
    }
  p->parent_path = xstrdup (dir);
  p->parent_fd = cur;
  return cur;
}

/* ENTRY's directory (a copy of its path cut at the last /) and leaf name. */
static char *
split_path (const struct entry *e, const char **leaf)
{
  char *dir = xstrdup (e->path);
  char *slash = strrchr (dir, '/');
  *leaf = slash ? e->path + (slash - dir) + 1 : e->path;
  if (slash)
    *slash = '\0';
  else
    *dir = '\0';
  return dir;
}

/* A new file named TMP_PREFIX + random letters in DIRFD. */
static int
create_temp (int dirfd, mode_t mode, char **name)
{
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int attempt = 0; attempt < 100; attempt++)
    {
      unsigned char rnd[12];
      if (getrandom (rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
        return -1;
      char buf[sizeof TMP_PREFIX + sizeof rnd];
      memcpy (buf, TMP_PREFIX, sizeof TMP_PREFIX - 1);
      for (size_t i = 0; i < sizeof rnd; i++)
        buf[sizeof TMP_PREFIX - 1 + i] = letters[rnd[i] % (sizeof letters - 1)];
      buf[sizeof buf - 1] = '\0';
      int fd = openat (dirfd, buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
      if (fd >= 0)
        {
          *name = xstrdup (buf);
          return fd;
        }
      if (errno != EEXIST)
        return -1;
    }
  errno = EEXIST;
  return -1;
}

static const char *
unz_strerror (int r)
{
  switch (r)
    {
    case UNZ_ERRNO:
      return "cannot read the upload";
    case UNZ_BADZIPFILE:
      return "its local header does not match the central directory";
    case UNZ_CRCERROR:
      return "its data does not match its CRC (the zip is corrupt)";
    case Z_DATA_ERROR:
      return "its compressed data is corrupt";
    case Z_MEM_ERROR:
      return "out of memory";
    default:
      return "the zip is damaged";
    }
}

/* Copies the current entry's data into FD; checks its size and CRC. */
static int
copy_entry (struct unpack *p, struct entry *e, int fd)
{
  char buf[COPY_BUF];
  uint64_t written = 0;
  int r = unzGoToFilePos64 (p->zf, &e->pos);
  if (r == UNZ_OK)
    r = unzOpenCurrentFile (p->zf);
  if (r != UNZ_OK)
    return refuse_entry (p, 400, e->name, unz_strerror (r));
  while ((r = unzReadCurrentFile (p->zf, buf, sizeof buf)) > 0)
    {
      /* unzip.c stops at the declared size: this is the budget's guard. */
      written += (uint64_t) r;
      if (written > e->size)
        break;
      if (ohbox_write_all (fd, buf, (size_t) r) < 0)
        {
          int err = errno;
          unzCloseCurrentFile (p->zf);
          cleanup_free char *why = xasprintf ("cannot be written: %s", strerror (err));
          return refuse_entry (p, err == ENOSPC || err == EDQUOT ? 507 : 500, e->name, why);
        }
    }
  int closed = unzCloseCurrentFile (p->zf);
  if (r < 0)
    return refuse_entry (p, 400, e->name, unz_strerror (r));
  if (written != e->size)
    {
      cleanup_free char *why = xasprintf ("holds %llu bytes, its header says %llu (the zip is corrupt)",
                                          (unsigned long long) written, (unsigned long long) e->size);
      return refuse_entry (p, 400, e->name, why);
    }
  if (closed != UNZ_OK)
    return refuse_entry (p, 400, e->name, unz_strerror (closed));
  return 0;
}

/* Step 2 for one file: its data into a temporary file next to its name. */
static int
stage_file (struct unpack *p, struct entry *e)
{
  const char *leaf;
  cleanup_free char *dir = split_path (e, &leaf);
  int dirfd = open_dir (p, e, dir, true);
  if (dirfd < 0)
    return -1;
  struct stat st;
  if (fstatat (dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR (st.st_mode))
    return refuse_entry (p, 400, e->name, "is a directory in the destination");
  cleanup_close int fd = create_temp (dirfd, 0600, &e->tmp);
  if (fd < 0)
    {
      int err = errno;
      cleanup_free char *why = xasprintf ("cannot be created: %s", strerror (err));
      return refuse_entry (p, err == ENOSPC || err == EDQUOT ? 507 : 500, e->name, why);
    }
  if (copy_entry (p, e, fd) < 0)
    return -1;
  if (fchmod (fd, e->mode) < 0)
    return refuse_entry (p, 500, e->name, "cannot get its permissions");
  return 0;
}

/* Step 3: every staged file takes its name. */
static int
commit (struct unpack *p)
{
  for (size_t i = 0; i < p->n; i++)
    {
      struct entry *e = &p->e[i];
      if (e->tmp == NULL)
        continue;
      const char *leaf;
      cleanup_free char *dir = split_path (e, &leaf);
      int dirfd = open_dir (p, e, dir, false);
      if (dirfd < 0)
        return -1;
      if (renameat (dirfd, e->tmp, dirfd, leaf) < 0)
        {
          cleanup_free char *why = xasprintf ("cannot take its name: %s", strerror (errno));
          return refuse_entry (p, 500, e->name, why);
        }
      e->done = true;
    }
  return 0;
}

/* After a failure: the staged files and the directories made go. */
static void
roll_back (struct unpack *p)
{
  for (size_t i = 0; i < p->n; i++)
    {
      struct entry *e = &p->e[i];
      if (e->tmp == NULL || e->done)
        continue;
      const char *leaf;
      cleanup_free char *dir = split_path (e, &leaf);
      cleanup_close int dirfd = *dir ? ohbox_openat_beneath (p->destfd, dir, O_RDONLY | O_DIRECTORY, 0, 0)
                                     : dup (p->destfd);
      if (dirfd >= 0)
        unlinkat (dirfd, e->tmp, 0);
    }
  /* Newest first: children before their parents; a directory that is not
   * empty (a file committed, or put there meanwhile) stays. */
  for (size_t i = p->n_created; i-- > 0;)
    {
      const char *slash = strrchr (p->created[i], '/');
      cleanup_free char *dir = slash ? xstrndup (p->created[i], (size_t) (slash - p->created[i])) : xstrdup ("");
      cleanup_close int dirfd = *dir ? ohbox_openat_beneath (p->destfd, dir, O_RDONLY | O_DIRECTORY, 0, 0)
                                     : dup (p->destfd);
      if (dirfd >= 0)
        unlinkat (dirfd, slash ? slash + 1 : p->created[i], AT_REMOVEDIR);
    }
}

static void
unpack_release (struct unpack *p)
{
  if (p->parent_fd >= 0 && p->parent_fd != p->destfd)
    close (p->parent_fd);
  free (p->parent_path);
  for (size_t i = 0; i < p->n; i++)
    {
      free (p->e[i].name);
      free (p->e[i].path);
      free (p->e[i].tmp);
    }
  free (p->e);
  for (size_t i = 0; i < p->n_created; i++)
    free (p->created[i]);
  free (p->created);
  if (p->zf)
    unzClose (p->zf);
  if (p->destfd >= 0)
    close (p->destfd);
}

/* Unpacks the upload's zip into its destination; 0 or an HTTP status with
 * *DETAIL. */
static int
unpack_zip (struct upload *u, char **detail)
{
  struct stat st;
  if (fstat (u->fd, &st) < 0)
    {
      *detail = xasprintf ("stat the upload: %s", strerror (errno));
      return 500;
    }
  struct zip_fd src = { .fd = u->fd, .end = (uint64_t) st.st_size };
  zlib_filefunc64_def io = zfd_functions (&src, src_read, NULL, src_seek, src_close);
  struct unpack p = { .u = u, .parent_fd = -1 };
  p.destfd = open (u->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (p.destfd < 0)
    {
      *detail = xasprintf ("open `%s`: %s", u->dest, strerror (errno));
      return 500;
    }
  p.zf = unzOpen2_64 ("upload", &io);
  if (p.zf == NULL)
    refuse (&p, 400, xstrdup ("Uploaded file is not a valid zip file"));
  else if (check_entries (&p) == 0)
    {
      for (size_t i = 0; i < p.n && p.status == 0; i++)
        {
          struct entry *e = &p.e[i];
          if (e->kind == ENTRY_DIR)
            open_dir (&p, e, e->path, true);
          else if (e->kind == ENTRY_FILE)
            stage_file (&p, e);
        }
      if (p.status == 0)
        commit (&p);
      if (p.status)
        roll_back (&p);
    }
  int status = p.status;
  *detail = steal_pointer (&p.detail);
  unpack_release (&p);
  return status;
}

json_t *
upload_finish (struct upload *u, bool recursive, int *status, char **detail)
{
  json_t *reply = NULL;
  if (u->zip)
    {
      int st = unpack_zip (u, detail);
      if (st)
        *status = st;
      else
        reply = json_pack ("{s:s, s:s, s:b}", "filename", u->name, "destination", u->dest, "recursive", recursive);
    }
  else
    {
      close (u->fd);
      u->fd = -1;
      cleanup_free char *final = xasprintf ("%s/%s", u->dest, u->name);
      if (rename (u->tmp, final) < 0)
        {
          *status = 500;
          *detail = xasprintf ("write `%s`: %s", final, strerror (errno));
        }
      else
        {
          chmod (final, 0644);
          free (u->tmp);
          u->tmp = NULL;
          reply = json_pack ("{s:s, s:s, s:b}", "filename", u->name, "destination", u->dest, "recursive", recursive);
        }
    }
  upload_abort (u);
  return reply;
}

/* ---- download --------------------------------------------------------------- */

struct download
{
  char *root;
  struct zip_fd sp;
};

static uLong ZCALLBACK
spool_read (voidpf opaque OHBOX_UNUSED, voidpf stream OHBOX_UNUSED, void *buf OHBOX_UNUSED, uLong size OHBOX_UNUSED)
{
  return 0; /* minizip never reads back what it writes */
}

static uLong ZCALLBACK
spool_write (voidpf opaque OHBOX_UNUSED, voidpf stream, const void *buf, uLong size)
{
  struct zip_fd *s = stream;
  if (s->err)
    return 0;
  for (uLong done = 0; done < size;)
    {
      ssize_t n = pwrite (s->fd, (const char *) buf + done, size - done, (off_t) (s->pos - s->base));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          s->err = n < 0 ? errno : EIO;
          return done;
        }
      done += (uLong) n;
      s->pos += (uint64_t) n;
    }
  if (s->pos > s->end)
    s->end = s->pos;
  return size;
}

/* Only within what is not sent yet (minizip goes back to the local header
 * of the entry it is closing). */
static long ZCALLBACK
spool_seek (voidpf opaque OHBOX_UNUSED, voidpf stream, ZPOS64_T offset, int origin)
{
  struct zip_fd *s = stream;
  uint64_t to = zfd_seek_base (s, origin) + offset;
  if (to < s->base || to > s->end)
    {
      s->err = ESPIPE;
      return -1;
    }
  s->pos = to;
  return 0;
}

/* Sends what is spooled: every entry so far is complete. */
static int
spool_flush (struct zip_fd *s)
{
  char buf[COPY_BUF];
  uint64_t len = s->end - s->base;
  for (uint64_t off = 0; off < len && s->err == 0;)
    {
      ssize_t n = pread (s->fd, buf, len - off < sizeof buf ? (size_t) (len - off) : sizeof buf, (off_t) off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0 || ohbox_write_all (s->out, buf, (size_t) n) < 0)
        s->err = n == 0 ? EIO : errno;
      off += n > 0 ? (uint64_t) n : 0;
    }
  if (s->err == 0 && ftruncate (s->fd, 0) < 0)
    s->err = errno;
  s->base = s->pos = s->end;
  return s->err ? -1 : 0;
}

static int ZCALLBACK
spool_close (voidpf opaque OHBOX_UNUSED, voidpf stream)
{
  return spool_flush (stream);
}

/* An unnamed file for the spool: on disk where possible (an entry can be
 * as large as the biggest file), in memory otherwise. */
static int
spool_file (void)
{
  const char *tmpdir = getenv ("TMPDIR");
  const char *dirs[] = { tmpdir && *tmpdir ? tmpdir : NULL, "/tmp", "/var/tmp" };
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
    if (dirs[i])
      {
        int fd = open (dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
          return fd;
      }
  return memfd_create ("ohbox-download", MFD_CLOEXEC);
}

static void
add_file (zipFile zf, struct zip_fd *sp, int dirfd, const char *name, const char *rel, const struct stat *st)
{
  cleanup_close int fd = openat (dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return;
  struct tm tm;
  localtime_r (&st->st_mtime, &tm);
  zip_fileinfo zi = { 0 };
  zi.tmz_date.tm_sec = (uInt) tm.tm_sec;
  zi.tmz_date.tm_min = (uInt) tm.tm_min;
  zi.tmz_date.tm_hour = (uInt) tm.tm_hour;
  zi.tmz_date.tm_mday = (uInt) tm.tm_mday;
  zi.tmz_date.tm_mon = (uInt) tm.tm_mon;
  /* DOS dates run from 1980 to 2107. */
  zi.tmz_date.tm_year = tm.tm_year < 80 ? 1980 : tm.tm_year > 207 ? 2107 : (uInt) tm.tm_year + 1900;
  if (tm.tm_year < 80 || tm.tm_year > 207)
    zi.tmz_date.tm_mon = 0, zi.tmz_date.tm_mday = 1, zi.tmz_date.tm_hour = zi.tmz_date.tm_min = zi.tmz_date.tm_sec = 0;
  zi.external_fa = (uLong) (S_IFREG | (st->st_mode & 0777)) << 16;
  /* zip64 from 2 GiB: the file may grow while it is read (up to st_size
   * bytes are taken). */
  int zip64 = st->st_size >= (off_t) (1ULL << 31);
  /* Made by Unix (3), version 2.0 (4.5 with zip64): unzip tools keep the modes. */
  uLong made_by = (3u << 8) | (zip64 ? 45u : 20u);
  if (zipOpenNewFileInZip4_64 (zf, rel, &zi, NULL, 0, NULL, 0, NULL, Z_DEFLATED, Z_DEFAULT_COMPRESSION, 0, -MAX_WBITS,
                               DEF_MEM_LEVEL, Z_DEFAULT_STRATEGY, NULL, 0, made_by, 0, zip64)
      != ZIP_OK)
    return;
  char buf[COPY_BUF];
  off_t left = st->st_size;
  ssize_t n;
  while (left > 0 && (n = read (fd, buf, sizeof buf)) > 0)
    {
      if (n > left)
        n = (ssize_t) left;
      if (zipWriteInFileInZip (zf, buf, (unsigned) n) != ZIP_OK)
        break;
      left -= n;
    }
  if (zipCloseFileInZip (zf) == ZIP_OK)
    spool_flush (sp);
  else if (sp->err == 0)
    sp->err = EIO; /* the zip cannot go on */
}

static void
add_tree (zipFile zf, struct zip_fd *sp, const char *root, const char *rel, int depth)
{
  if (depth > 64 || sp->err)
    return;
  cleanup_free char *dir = *rel ? xasprintf ("%s/%s", root, rel) : xstrdup (root);
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir (d)) != NULL && sp->err == 0)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      cleanup_free char *r = *rel ? xasprintf ("%s/%s", rel, de->d_name) : xstrdup (de->d_name);
      struct stat st;
      /* os.walk does not follow directory symlinks; files are read through links. */
      if (fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      if (S_ISDIR (st.st_mode))
        {
          add_tree (zf, sp, root, r, depth + 1);
          continue;
        }
      if (S_ISLNK (st.st_mode) && fstatat (dirfd (d), de->d_name, &st, 0) < 0)
        continue;
      if (S_ISREG (st.st_mode))
        add_file (zf, sp, dirfd (d), de->d_name, r, &st);
    }
}

void
download_stream (struct download *dl)
{
  zlib_filefunc64_def io = zfd_functions (&dl->sp, spool_read, spool_write, spool_seek, spool_close);
  zipFile zf = zipOpen2_64 ("download", APPEND_STATUS_CREATE, NULL, &io);
  if (zf)
    {
      add_tree (zf, &dl->sp, dl->root, "", 0);
      /* The central directory and the end records; the spool's close sends them. */
      zipClose (zf, NULL);
    }
  download_free (dl);
}

void
download_free (struct download *dl)
{
  if (dl == NULL)
    return;
  close (dl->sp.out);
  close (dl->sp.fd);
  free (dl->root);
  free (dl);
}

int
download_start (const char *path, struct download **out, int *status, char **detail)
{
  if (path[0] != '/')
    return fail (status, detail, 400, xstrdup ("Path must be absolute"));
  struct stat st;
  if (stat (path, &st) < 0)
    return fail (status, detail, 404, xstrdup ("File not found"));
  int spool = spool_file ();
  if (spool < 0)
    return fail (status, detail, 500, xasprintf ("create the download's spool file: %s", strerror (errno)));
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    {
      int e = errno;
      close (spool);
      return fail (status, detail, 500, xasprintf ("pipe: %s", strerror (e)));
    }
  struct download *dl = xcalloc (1, sizeof (*dl));
  dl->sp.out = p[1];
  dl->sp.fd = spool;
  /* A file path walks nothing: an empty zip, as in the Python server. */
  dl->root = S_ISDIR (st.st_mode) ? xstrdup (path) : xstrdup ("/nonexistent/.ohbox-empty");
  *out = dl;
  return p[0];
}
