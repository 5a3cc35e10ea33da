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

/* ---------------------------------------------------------------- save */

/* Copies store blob DIGEST to LAYOUTFD/blobs/sha256/<hex> unless present. */
static int
copy_blob_out (struct ohbox_store *s, int layoutfd, const char *digest, ohbox_error_t *err)
{
  char rel[128];
  snprintf (rel, sizeof rel, "blobs/sha256/%s", ohbox_digest_hex (digest));
  struct stat st;
  if (fstatat (layoutfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode))
    return 0;
  cleanup_free char *src = ohbox_store_blob_path (s, digest);
  /* A hard link costs nothing when the layout is on the store's filesystem. */
  if (linkat (AT_FDCWD, src, layoutfd, rel, 0) == 0)
    return 0;
  cleanup_close int in = -1;
  if (ohbox_store_open_blob (s, digest, &in, err) < 0)
    return -1;
  char tmp[160];
  snprintf (tmp, sizeof tmp, "blobs/sha256/.tmp-%.16s-%d", ohbox_digest_hex (digest), (int) getpid ());
  cleanup_close int out = openat (layoutfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (out < 0)
    return ohbox_error_errno (err, "create `%s`", tmp);
  for (;;)
    {
      ssize_t n = copy_file_range (in, NULL, out, NULL, 1 << 30, 0);
      if (n < 0)
        {
          ohbox_error_errno (err, "copy blob %s", digest);
          unlinkat (layoutfd, tmp, 0);
          return -1;
        }
      if (n == 0)
        break;
    }
  if (fsync (out) < 0 || renameat (layoutfd, tmp, layoutfd, rel) < 0)
    {
      ohbox_error_errno (err, "write blob %s", digest);
      unlinkat (layoutfd, tmp, 0);
      return -1;
    }
  return 0;
}

static int
read_layout_index (int layoutfd, const char *dir, json_t **out, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (layoutfd, "index.json", INDEX_MAX_SIZE, &text, &len, err) < 0)
    return ohbox_error_prefix (err, "OCI layout `%s`", dir);
  json_error_t jerr;
  json_t *idx = json_loadb (text, len, 0, &jerr);
  if (!json_is_object (idx) || !json_is_array (json_object_get (idx, "manifests")))
    {
      json_decref (idx);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "OCI layout `%s`: index.json is not an image index%s%s", dir,
                          idx ? "" : ": ", idx ? "" : jerr.text);
    }
  *out = idx;
  return 0;
}

int
ohbox_oci_layout_save (struct ohbox_store *s, const char *what, const char *dir, const char *tag,
                       ohbox_error_t *err)
{
  struct ohbox_image *img = NULL;
  if (ohbox_image_load (s, what, &img, err) < 0)
    return -1;
  int ret = -1;
  json_t *index = NULL;
  cleanup_free char *text = NULL;
  cleanup_close int layoutfd = -1;
  if (ohbox_mkdir_p (AT_FDCWD, dir, 0755, err) < 0)
    goto out;
  layoutfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (layoutfd < 0)
    {
      ohbox_error_errno (err, "open `%s`", dir);
      goto out;
    }
  if (ohbox_mkdir_p (layoutfd, "blobs/sha256", 0755, err) < 0)
    goto out;
  static const char layout_file[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
  if (ohbox_write_file_atomic (layoutfd, "oci-layout", layout_file, strlen (layout_file), 0644, err) < 0)
    goto out;
  if (copy_blob_out (s, layoutfd, img->manifest->config.digest, err) < 0)
    goto out;
  for (size_t i = 0; i < img->manifest->n_layers; i++)
    if (copy_blob_out (s, layoutfd, img->manifest->layers[i].digest, err) < 0)
      goto out;
  if (copy_blob_out (s, layoutfd, img->id, err) < 0)
    goto out;

  if (faccessat (layoutfd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
    {
      if (read_layout_index (layoutfd, dir, &index, err) < 0)
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
  if (ohbox_write_file_atomic (layoutfd, "index.json", text, strlen (text), 0644, err) < 0)
    goto out;
  ret = 0;
out:
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
  int fd = ohbox_openat_beneath (layoutfd, rel, O_RDONLY, 0, 0);
  if (fd < 0)
    return ohbox_error_errno (err, "OCI layout `%s`: blob %s", dir, digest);
  return fd;
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
import_blob (struct ohbox_store *s, int layoutfd, const char *dir, const char *digest, int64_t size,
             ohbox_error_t *err)
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
ohbox_oci_layout_load (struct ohbox_store *s, const char *dir, const char *tag, const char *name,
                       const char *platform, char **id_out, ohbox_error_t *err)
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
