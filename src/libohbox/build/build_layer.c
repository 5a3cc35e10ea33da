/* build_layer.c: reproducible tar layers for runtime images (see build.h).
 *
 * The tar is written with libarchive (pax restricted: plain ustar headers
 * unless a name needs more), entries sorted by path, every time 0, owner
 * 0:0 with no user or group names: the same entries always give the same
 * bytes, hence the same digest, and identical layers of two runtime images
 * are one blob and one unpacked directory in the store. The layer is kept
 * uncompressed (its blob digest is its DiffID): it is built and unpacked in
 * milliseconds, and the bulk of it (shared libraries) would not shrink much
 * for the time gzip would take. */
#include "config.h"
#include "build/build.h"

#include "common/dl_archive.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "common/utils.h"

/* Bound on one file put in a layer and on the whole tar (ohbox's own
 * inputs, but a wrong --bash could point at anything). */
#define LAYER_MAX_FILE (512ULL * 1024 * 1024)
#define LAYER_MAX_TAR (1024ULL * 1024 * 1024)

static struct ohbox_build_entry *
add (struct ohbox_build_layer *spec, const char *path, char type, unsigned mode)
{
  spec->e = xrealloc (spec->e, (spec->n + 1) * sizeof *spec->e);
  struct ohbox_build_entry *e = &spec->e[spec->n++];
  memset (e, 0, sizeof *e);
  e->path = xstrdup (path);
  e->type = type;
  e->mode = mode;
  return e;
}

void
ohbox_build_layer_dir (struct ohbox_build_layer *spec, const char *path, unsigned mode)
{
  add (spec, path, 'd', mode);
}

void
ohbox_build_layer_file (struct ohbox_build_layer *spec, const char *path, unsigned mode, const char *src)
{
  add (spec, path, 'f', mode)->src = xstrdup (src);
}

void
ohbox_build_layer_data (struct ohbox_build_layer *spec, const char *path, unsigned mode, const char *data, size_t len)
{
  struct ohbox_build_entry *e = add (spec, path, 'f', mode);
  e->data = xmalloc (len + 1);
  memcpy (e->data, data, len);
  e->data[len] = '\0';
  e->data_len = len;
}

void
ohbox_build_layer_symlink (struct ohbox_build_layer *spec, const char *path, const char *target)
{
  add (spec, path, 'l', 0777)->target = xstrdup (target);
}

void
ohbox_build_layer_clear (struct ohbox_build_layer *spec)
{
  for (size_t i = 0; i < spec->n; i++)
    {
      free (spec->e[i].path);
      free (spec->e[i].src);
      free (spec->e[i].data);
      free (spec->e[i].target);
    }
  free (spec->e);
  spec->e = NULL;
  spec->n = 0;
}

static int
cmp_entry (const void *a, const void *b)
{
  return strcmp (((const struct ohbox_build_entry *) a)->path, ((const struct ohbox_build_entry *) b)->path);
}

struct tar_sink
{
  struct ohbox_buf buf;
  bool too_big;
};

static la_ssize_t
sink_write (struct archive *a, void *ud, const void *data, size_t len)
{
  struct tar_sink *t = ud;
  if (t->buf.len + len > LAYER_MAX_TAR)
    {
      t->too_big = true;
      archive_set_error (a, EFBIG, "layer over %llu bytes", (unsigned long long) LAYER_MAX_TAR);
      return -1;
    }
  ohbox_buf_append (&t->buf, data, len);
  return (la_ssize_t) len;
}

static int
write_entry (struct archive *a, const struct ohbox_build_entry *e, ohbox_error_t *err)
{
  cleanup_free char *data = NULL;
  size_t len = 0;
  if (e->type == 'f' && e->src)
    {
      if (ohbox_read_file_at (AT_FDCWD, e->src, LAYER_MAX_FILE, &data, &len, err) < 0)
        return ohbox_error_prefix (err, "layer entry `%s`", e->path);
    }
  else if (e->type == 'f')
    len = e->data_len;
  struct archive_entry *ae = archive_entry_new ();
  archive_entry_set_pathname (ae, e->path);
  archive_entry_set_uid (ae, 0);
  archive_entry_set_gid (ae, 0);
  archive_entry_set_mtime (ae, 0, 0);
  archive_entry_set_perm (ae, e->mode & 07777);
  switch (e->type)
    {
    case 'd':
      archive_entry_set_filetype (ae, AE_IFDIR);
      break;
    case 'l':
      archive_entry_set_filetype (ae, AE_IFLNK);
      archive_entry_set_symlink (ae, e->target);
      break;
    default:
      archive_entry_set_filetype (ae, AE_IFREG);
      archive_entry_set_size (ae, (la_int64_t) len);
      break;
    }
  int r = archive_write_header (a, ae);
  archive_entry_free (ae);
  if (r != ARCHIVE_OK)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "write the tar header of `%s`: %s", e->path,
                        archive_error_string (a));
  if (e->type == 'f' && len > 0)
    {
      const char *p = data ? data : e->data;
      if (archive_write_data (a, p, len) != (la_ssize_t) len)
        return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "write `%s` into the layer: %s", e->path,
                            archive_error_string (a));
    }
  return 0;
}

static int
write_tar (struct ohbox_build_layer *spec, struct tar_sink *sink, ohbox_error_t *err)
{
  qsort (spec->e, spec->n, sizeof *spec->e, cmp_entry);
  for (size_t i = 1; i < spec->n; i++)
    if (strcmp (spec->e[i - 1].path, spec->e[i].path) == 0)
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "layer entry `%s` is given twice", spec->e[i].path);
  if (ohbox_dl_archive_load (err) < 0)
    return -1;
  struct archive *a = archive_write_new ();
  int ret = -1;
  if (archive_write_set_format_pax_restricted (a) != ARCHIVE_OK
      || archive_write_open2 (a, sink, NULL, sink_write, NULL, NULL) != ARCHIVE_OK)
    {
      ohbox_error (err, OHBOX_ERR_GENERIC, 0, "start a tar layer: %s", archive_error_string (a));
      goto out;
    }
  for (size_t i = 0; i < spec->n; i++)
    if (write_entry (a, &spec->e[i], err) < 0)
      goto out;
  if (archive_write_close (a) != ARCHIVE_OK)
    {
      ohbox_error (err, OHBOX_ERR_GENERIC, 0, "end a tar layer: %s", archive_error_string (a));
      goto out;
    }
  ret = 0;
out:
  archive_write_free (a);
  return ret;
}

int
ohbox_build_layer_commit (struct ohbox_store *s, struct ohbox_build_layer *spec, char digest_out[OHBOX_DIGEST_LEN + 1],
                          int64_t *size_out, ohbox_error_t *err)
{
  struct tar_sink sink = { { 0 }, false };
  if (write_tar (spec, &sink, err) < 0)
    {
      ohbox_buf_free (&sink.buf);
      return -1;
    }
  int r = ohbox_store_put_blob (s, NULL, sink.buf.data, sink.buf.len, digest_out, err);
  *size_out = (int64_t) sink.buf.len;
  ohbox_buf_free (&sink.buf);
  if (r < 0)
    return ohbox_error_prefix (err, "store a runtime image layer");
  struct ohbox_layer_options lo = { .privileged = ohbox_store_privileged (s) };
  if (ohbox_store_unpack_layer (s, digest_out, digest_out, &lo, NULL, err) < 0)
    return ohbox_error_prefix (err, "unpack the runtime image layer `%s`", digest_out);
  return 0;
}
