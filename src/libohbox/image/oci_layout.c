/* oci_layout.c: see oci_layout.h. */
#include "config.h"
#include "image/oci_layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "oci/image_spec.h"
#include "common/utils.h"

#define INDEX_MAX_SIZE (4 * 1024 * 1024)
#define REF_NAME_ANNOTATION "org.opencontainers.image.ref.name"

int
ohbox_oci_layout_parse_ref (const char *s, char **dir, char **tag, ohbox_error_t *err)
{
  if (strncmp (s, "oci:", 4) != 0 || s[4] == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is not an OCI layout reference; write oci:DIR[:TAG]", s);
  const char *p = s + 4;
  const char *colon = strrchr (p, ':');
  /* A colon inside the last path component separates the tag. */
  if (colon && strchr (colon, '/') == NULL && colon != p)
    {
      *dir = xstrndup (p, (size_t) (colon - p));
      *tag = colon[1] ? xstrdup (colon + 1) : NULL;
    }
  else
    {
      *dir = xstrdup (p);
      *tag = NULL;
    }
  return 0;
}

/* ---------------------------------------------------------------- files */

/* Opens DIRFD/NAME for reading: resolved beneath DIRFD without following
 * any symlink, and a regular file (O_NONBLOCK: a FIFO planted there is
 * opened without waiting for a writer, then refused). */
static int
open_layout_file (int dirfd, const char *dir, const char *name, ohbox_error_t *err)
{
  int fd = ohbox_openat_beneath (dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, 0);
  if (fd < 0)
    {
      if (errno == ELOOP || errno == EXDEV)
        return ohbox_error (err, OHBOX_ERR_USAGE, errno,
                            "OCI layout `%s`: `%s` is or passes through a symbolic "
                            "link, which is never followed",
                            dir, name);
      return ohbox_error_errno (err, "OCI layout `%s`: open `%s`", dir, name);
    }
  struct stat st;
  if (fstat (fd, &st) < 0)
    {
      ohbox_error_errno (err, "OCI layout `%s`: stat `%s`", dir, name);
      close (fd);
      return -1;
    }
  if (!S_ISREG (st.st_mode))
    {
      close (fd);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "OCI layout `%s`: `%s` is not a regular file", dir, name);
    }
  return fd;
}

static int
read_layout_index (int layoutfd, const char *dir, json_t **out, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  cleanup_close int fd = open_layout_file (layoutfd, dir, "index.json", err);
  if (fd < 0 || ohbox_read_fd (fd, "index.json", INDEX_MAX_SIZE, &text, &len, err) < 0)
    return ohbox_error_prefix (err, "OCI layout `%s`", dir);
  json_error_t jerr;
  json_t *idx = json_loadb (text, len, 0, &jerr);
  if (!json_is_object (idx) || !json_is_array (json_object_get (idx, "manifests")))
    {
      /* Where, not what: the text is not echoed back. */
      json_decref (idx);
      if (idx == NULL)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "OCI layout `%s`: index.json is not valid JSON (line %d, "
                            "column %d)",
                            dir, jerr.line, jerr.column);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "OCI layout `%s`: index.json is not an image index", dir);
    }
  *out = idx;
  return 0;
}

/* ---------------------------------------------------------------- save */

/* The layout's directories, opened for writing, and whether the store's
 * blobs may be hard-linked into them. */
struct layout_out
{
  int dirfd;   /* DIR */
  int blobsfd; /* DIR/blobs/sha256 */
  bool link;   /* hard links: only into directories of our own that nobody else may write */
};

/* A directory we write into (WHAT names it): ours or root's (a directory
 * of another user may be changed under us: a link planted, a file
 * swapped). *OURS stays true only when it is ours alone (no group or
 * other write). */
static int
check_dest_dir (int fd, const char *what, bool *ours, ohbox_error_t *err)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    return ohbox_error_errno (err, "stat `%s`", what);
  if (!S_ISDIR (st.st_mode))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is not a directory", what);
  if (st.st_uid != geteuid () && st.st_uid != 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "`%s` belongs to uid %u: refusing to write into another "
                        "user's directory (they could plant links in it); save to a directory of your own",
                        what, (unsigned) st.st_uid);
  *ours = *ours && st.st_uid == geteuid () && (st.st_mode & 022) == 0;
  return 0;
}

/* DIRFD/NAME (WHAT in messages), created when missing, opened beneath
 * DIRFD without following a symlink, and checked as above. */
static int
open_dest_subdir (int dirfd, const char *name, const char *what, bool *ours, ohbox_error_t *err)
{
  if (mkdirat (dirfd, name, 0755) < 0 && errno != EEXIST)
    return ohbox_error_errno (err, "create `%s`", what);
  int fd = ohbox_openat_beneath (dirfd, name, O_RDONLY | O_DIRECTORY, 0, 0);
  if (fd < 0 && (errno == ELOOP || errno == EXDEV))
    return ohbox_error (err, OHBOX_ERR_USAGE, errno, "`%s` is a symbolic link: refusing to follow it", what);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s`", what);
  if (check_dest_dir (fd, what, ours, err) < 0)
    {
      close (fd);
      return -1;
    }
  return fd;
}

static int
open_layout_out (const char *dir, struct layout_out *o, ohbox_error_t *err)
{
  o->link = true;
  if (ohbox_mkdir_p (AT_FDCWD, dir, 0755, err) < 0)
    return -1;
  o->dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (o->dirfd < 0)
    return ohbox_error_errno (err, "open `%s`", dir);
  if (check_dest_dir (o->dirfd, dir, &o->link, err) < 0)
    return -1;
  cleanup_free char *blobs_what = xasprintf ("%s/blobs", dir);
  cleanup_free char *sha_what = xasprintf ("%s/blobs/sha256", dir);
  cleanup_close int blobs = open_dest_subdir (o->dirfd, "blobs", blobs_what, &o->link, err);
  if (blobs < 0)
    return -1;
  o->blobsfd = open_dest_subdir (blobs, "sha256", sha_what, &o->link, err);
  return o->blobsfd < 0 ? -1 : 0;
}

static void
close_layout_out (struct layout_out *o)
{
  if (o->dirfd >= 0)
    close (o->dirfd);
  if (o->blobsfd >= 0)
    close (o->blobsfd);
}

/* Copies store blob DIGEST of SIZE bytes to blobs/sha256/<hex> unless a
 * regular file of that size is there. */
static int
copy_blob_out (struct ohbox_store *s, const struct layout_out *o, const char *digest, int64_t size, ohbox_error_t *err)
{
  const char *hex = ohbox_digest_hex (digest);
  struct stat st;
  if (fstatat (o->blobsfd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode) && st.st_size == size)
    return 0;
  cleanup_free char *src = ohbox_store_blob_path (s, digest);
  /* A hard link costs nothing when the layout is on the store's
   * filesystem; it shares the store's file, so only where nobody else
   * can reach it to chown or hand it on. */
  if (o->link && linkat (AT_FDCWD, src, o->blobsfd, hex, 0) == 0)
    return 0;
  cleanup_close int in = -1;
  if (ohbox_store_open_blob (s, digest, &in, err) < 0)
    return -1;
  char tmp[160];
  snprintf (tmp, sizeof tmp, ".tmp-%.16s-%d-%lx", hex, (int) getpid (), (unsigned long) random ());
  cleanup_close int out = openat (o->blobsfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (out < 0)
    return ohbox_error_errno (err, "create `blobs/sha256/%s`", tmp);
  for (;;)
    {
      ssize_t n = copy_file_range (in, NULL, out, NULL, 1 << 30, 0);
      if (n < 0)
        {
          ohbox_error_errno (err, "copy blob %s", digest);
          unlinkat (o->blobsfd, tmp, 0);
          return -1;
        }
      if (n == 0)
        break;
    }
  if (fsync (out) < 0 || renameat (o->blobsfd, tmp, o->blobsfd, hex) < 0)
    {
      ohbox_error_errno (err, "write blob %s", digest);
      unlinkat (o->blobsfd, tmp, 0);
      return -1;
    }
  return 0;
}

int
ohbox_oci_layout_save (struct ohbox_store *s, const char *what, const char *dir, const char *tag, ohbox_error_t *err)
{
  struct ohbox_image *img = NULL;
  if (ohbox_image_load (s, what, &img, err) < 0)
    return -1;
  struct layout_out lo = { .dirfd = -1, .blobsfd = -1 };
  int ret = -1;
  json_t *index = NULL;
  cleanup_free char *text = NULL;
  if (open_layout_out (dir, &lo, err) < 0)
    goto out;
  static const char layout_file[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
  if (ohbox_write_file_atomic (lo.dirfd, "oci-layout", layout_file, strlen (layout_file), 0644, err) < 0)
    goto out;
  const struct oci_manifest *man = img->manifest;
  if (copy_blob_out (s, &lo, man->config.digest, man->config.size, err) < 0)
    goto out;
  for (size_t i = 0; i < man->n_layers; i++)
    if (copy_blob_out (s, &lo, man->layers[i].digest, man->layers[i].size, err) < 0)
      goto out;
  if (copy_blob_out (s, &lo, img->id, (int64_t) img->manifest_len, err) < 0)
    goto out;

  if (faccessat (lo.dirfd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
    {
      if (read_layout_index (lo.dirfd, dir, &index, err) < 0)
        goto out;
    }
  else
    index = json_pack ("{s:i, s:s, s:[]}", "schemaVersion", 2, "mediaType", OCI_MEDIA_INDEX, "manifests");
  json_t *manifests = json_object_get (index, "manifests");
  if (tag)
    {
      /* One entry per tag: replace the previous image of that tag. */
      size_t i;
      json_t *e;
      for (i = json_array_size (manifests); i-- > 0;)
        {
          e = json_array_get (manifests, i);
          const char *t = json_string_value (json_object_get (json_object_get (e, "annotations"), REF_NAME_ANNOTATION));
          if (t && strcmp (t, tag) == 0)
            json_array_remove (manifests, i);
        }
    }
  json_t *desc = json_pack ("{s:s, s:s, s:I}", "mediaType", img->manifest->media_type, "digest", img->id, "size",
                            (json_int_t) img->manifest_len);
  if (tag)
    json_object_set_new (desc, "annotations", json_pack ("{s:s}", REF_NAME_ANNOTATION, tag));
  struct oci_platform *p = &img->config->platform;
  json_t *plat = json_pack ("{s:s, s:s}", "os", p->os, "architecture", p->architecture);
  if (p->variant)
    json_object_set_new (plat, "variant", json_string (p->variant));
  json_object_set_new (desc, "platform", plat);
  json_array_append_new (manifests, desc);
  text = json_dumps (index, JSON_COMPACT);
  if (ohbox_write_file_atomic (lo.dirfd, "index.json", text, strlen (text), 0644, err) < 0)
    goto out;
  ret = 0;
out:
  close_layout_out (&lo);
  if (ret < 0)
    ohbox_error_prefix (err, "save to `%s`", dir);
  json_decref (index);
  ohbox_image_free (img);
  return ret;
}

/* ---------------------------------------------------------------- load */

/* Opens LAYOUTFD/blobs/sha256/<hex> without following any symlink. */
static int
open_layout_blob (int layoutfd, const char *dir, const char *digest, ohbox_error_t *err)
{
  if (ohbox_digest_validate (digest, err) < 0)
    return -1;
  char rel[128];
  snprintf (rel, sizeof rel, "blobs/sha256/%s", ohbox_digest_hex (digest));
  return open_layout_file (layoutfd, dir, rel, err);
}

static int
read_layout_blob (int layoutfd, const char *dir, const char *digest, size_t max, char **out, size_t *len,
                  ohbox_error_t *err)
{
  cleanup_close int fd = open_layout_blob (layoutfd, dir, digest, err);
  if (fd < 0)
    return -1;
  cleanup_free char *buf = NULL;
  if (ohbox_read_fd (fd, digest, max, &buf, len, err) < 0)
    return ohbox_error_prefix (err, "OCI layout `%s`", dir);
  char got[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer (buf, *len, got);
  if (strcmp (got, digest) != 0)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "OCI layout `%s`: blob %s is damaged (content hashes to %s)", dir,
                        digest, got);
  *out = steal_pointer (&buf);
  return 0;
}

/* Streams a layout blob into the store, verified by the blob writer. */
static int
import_blob (struct ohbox_store *s, int layoutfd, const char *dir, const char *digest, int64_t size, ohbox_error_t *err)
{
  if (ohbox_store_has_blob (s, digest))
    return 0;
  cleanup_close int fd = open_layout_blob (layoutfd, dir, digest, err);
  if (fd < 0)
    return -1;
  struct ohbox_blob_writer *w = NULL;
  if (ohbox_store_blob_begin (s, digest, size, true, &w, err) < 0)
    return -1;
  if (w == NULL)
    return 0;
  /* On the heap, not in TLS: a 1 MiB __thread buffer is zeroed by the
   * loader in every ohbox process and thread (and every sandbox monitor)
   * at start, whether it ever imports a layout or not. */
  const size_t bufsize = 1 << 20;
  cleanup_free char *buf = xmalloc (bufsize);
  if (ohbox_blob_writer_reset (w, err) < 0)
    goto fail;
  for (;;)
    {
      ssize_t n = read (fd, buf, bufsize);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          ohbox_error_errno (err, "read blob %s from `%s`", digest, dir);
          goto fail;
        }
      if (n == 0)
        break;
      if (ohbox_blob_writer_write (w, buf, (size_t) n, err) < 0)
        goto fail;
    }
  return ohbox_blob_writer_commit (w, err);
fail:
  ohbox_blob_writer_abort (w, false);
  return -1;
}

/* The index.json entry to load: the one tagged TAG, or the only one. */
static int
select_entry (json_t *index, const char *dir, const char *tag, json_t **out, ohbox_error_t *err)
{
  json_t *manifests = json_object_get (index, "manifests");
  size_t i;
  json_t *e;
  if (tag == NULL)
    {
      if (json_array_size (manifests) == 1)
        {
          *out = json_array_get (manifests, 0);
          return 0;
        }
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "OCI layout `%s` holds %zu images; name one with oci:%s:TAG", dir,
                          json_array_size (manifests), dir);
    }
  json_array_foreach (manifests, i, e)
  {
    const char *t = json_string_value (json_object_get (json_object_get (e, "annotations"), REF_NAME_ANNOTATION));
    if (t && strcmp (t, tag) == 0)
      {
        *out = e;
        return 0;
      }
  }
  return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "OCI layout `%s` has no image tagged `%s`", dir, tag);
}

int
ohbox_oci_layout_load (struct ohbox_store *s, const char *dir, const char *tag, const char *name, const char *platform,
                       char **id_out, ohbox_error_t *err)
{
  cleanup_close int layoutfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (layoutfd < 0)
    return ohbox_error_errno (err, "open OCI layout `%s`", dir);
  json_t *index = NULL;
  if (read_layout_index (layoutfd, dir, &index, err) < 0)
    return -1;
  int ret = -1;
  json_t *entry = NULL;
  cleanup_free char *body = NULL;
  cleanup_free char *cfg_raw = NULL;
  cleanup_free char *index_digest = NULL;
  size_t len = 0, cfg_len = 0;
  struct oci_index *sub = NULL;
  struct oci_manifest *man = NULL;
  struct oci_image_config *cfg = NULL;
  struct oci_platform want = { 0 };
  char digest[OHBOX_DIGEST_LEN + 1];

  if (select_entry (index, dir, tag, &entry, err) < 0)
    goto out;
  const char *d = json_string_value (json_object_get (entry, "digest"));
  if (read_layout_blob (layoutfd, dir, d, OCI_MAX_MANIFEST_SIZE, &body, &len, err) < 0)
    goto out;
  snprintf (digest, sizeof digest, "%s", d);
  enum oci_document_kind kind;
  if (oci_document_kind (json_string_value (json_object_get (entry, "mediaType")), body, len, &kind, err) < 0)
    goto out;
  if (kind == OCI_DOC_INDEX)
    {
      if (platform ? oci_platform_parse (platform, &want, err) < 0 : (oci_platform_host (&want), 0))
        goto out;
      if (oci_index_parse (body, len, &sub, err) < 0)
        goto out;
      int pos = oci_index_select_platform (sub, &want, err);
      if (pos < 0)
        goto out;
      if (import_blob (s, layoutfd, dir, digest, (int64_t) len, err) < 0)
        goto out;
      index_digest = xstrdup (digest);
      snprintf (digest, sizeof digest, "%s", sub->manifests[pos].digest);
      free (body);
      body = NULL;
      if (read_layout_blob (layoutfd, dir, digest, OCI_MAX_MANIFEST_SIZE, &body, &len, err) < 0)
        goto out;
    }
  if (oci_manifest_parse (body, len, &man, err) < 0)
    goto out;
  if (read_layout_blob (layoutfd, dir, man->config.digest, OCI_MAX_CONFIG_SIZE, &cfg_raw, &cfg_len, err) < 0
      || oci_image_config_parse (cfg_raw, cfg_len, &cfg, err) < 0)
    goto out;
  if (cfg->n_diff_ids != man->n_layers)
    {
      ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "config %s lists %zu diff ids for %zu layers", man->config.digest,
                   cfg->n_diff_ids, man->n_layers);
      goto out;
    }
  if (ohbox_store_put_blob (s, man->config.digest, cfg_raw, cfg_len, NULL, err) < 0)
    goto out;
  for (size_t i = 0; i < man->n_layers; i++)
    {
      enum oci_layer_compression comp;
      if (oci_layer_compression (man->layers[i].media_type, &comp, err) < 0)
        goto out;
      if (import_blob (s, layoutfd, dir, man->layers[i].digest, man->layers[i].size, err) < 0)
        goto out;
      struct ohbox_layer_options lo = { .max_uncompressed = OHBOX_LAYER_DEFAULT_MAX_SIZE };
      struct ohbox_layer_stats st;
      if (ohbox_store_unpack_layer (s, man->layers[i].digest, cfg->diff_ids[i], &lo, &st, err) < 0)
        goto out;
    }
  if (ohbox_image_commit (s, name, digest, body, len, man, cfg, index_digest, err) < 0)
    goto out;
  *id_out = xstrdup (digest);
  ret = 0;
out:
  if (ret < 0)
    ohbox_error_prefix (err, "load `%s`", dir);
  oci_platform_clear (&want);
  oci_index_free (sub);
  oci_manifest_free (man);
  oci_image_config_free (cfg);
  json_decref (index);
  return ret;
}
