/* store_layers.c: unpacked layers, keyed by DiffID, in the form overlayfs
 * reads as a lower directory (see layer.h). A layer is unpacked into
 * tmp/layer-<hex>-XXXXXX, checked against its DiffID, synced and renamed to
 * layers/sha256/<hex>: it exists complete or not at all. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "utils.h"

bool
ohbox_store_has_layer (struct ohbox_store *s, const char *diff_id)
{
  if (!ohbox_digest_is_valid (diff_id))
    return false;
  char rel[128];
  snprintf (rel, sizeof rel, "layers/sha256/%s", ohbox_digest_hex (diff_id));
  struct stat st;
  return fstatat (s->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR (st.st_mode);
}

char *
ohbox_store_layer_path (struct ohbox_store *s, const char *diff_id)
{
  return xasprintf ("%s/layers/sha256/%s", s->root, ohbox_digest_hex (diff_id));
}

static int
unpack_into_tmp (struct ohbox_store *s, const char *blob_digest, const char *diff_id, const char *tmpname,
                 const struct ohbox_layer_options *opts, struct ohbox_layer_stats *stats, ohbox_error_t *err)
{
  cleanup_close int blob_fd = -1;
  if (ohbox_store_open_blob (s, blob_digest, &blob_fd, err) < 0)
    return -1;
  cleanup_close int dfd = openat (s->dirfd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_errno (err, "open `%s/%s`", s->root, tmpname);
  /* The layer root's mode, unless the archive has an entry for "./". */
  if (fchmod (dfd, 0755) < 0)
    return ohbox_error_errno (err, "chmod `%s/%s`", s->root, tmpname);
  struct ohbox_layer_options o = *opts;
  o.privileged = s->privileged;
  char got[OHBOX_DIGEST_LEN + 1];
  if (ohbox_layer_unpack (blob_fd, dfd, &o, got, stats, err) < 0)
    return ohbox_error_prefix (err, "unpack layer %s", blob_digest);
  if (strcmp (got, diff_id) != 0)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                        "layer %s: its uncompressed content hashes to %s, but the image config says %s", blob_digest,
                        got, diff_id);
  /* One syncfs for the whole tree instead of an fsync per file: the layer
   * becomes visible (rename below) only once its data is on disk. */
  if (syncfs (dfd) < 0)
    return ohbox_error_errno (err, "sync layer `%s/%s`", s->root, tmpname);
  return 0;
}

int
ohbox_store_unpack_layer (struct ohbox_store *s, const char *blob_digest, const char *diff_id,
                          const struct ohbox_layer_options *opts, struct ohbox_layer_stats *stats,
                          ohbox_error_t *err)
{
  if (ohbox_digest_validate (blob_digest, err) < 0 || ohbox_digest_validate (diff_id, err) < 0)
    return -1;
  if (ohbox_store_has_layer (s, diff_id))
    return 0;
  const char *hex = ohbox_digest_hex (diff_id);
  char lockname[128];
  snprintf (lockname, sizeof lockname, "locks/layer-%s", hex);
  cleanup_close int lock_fd = ohbox_lock_file (s->dirfd, lockname, true, false, err);
  if (lock_fd < 0)
    return -1;
  if (ohbox_store_has_layer (s, diff_id))
    return 0;

  cleanup_free char *tmpl = xasprintf ("%s/tmp/layer-%.16s-XXXXXX", s->root, hex);
  if (mkdtemp (tmpl) == NULL)
    return ohbox_error_errno (err, "create a temporary directory in `%s/tmp`", s->root);
  const char *tmpname = tmpl + strlen (s->root) + 1;

  if (unpack_into_tmp (s, blob_digest, diff_id, tmpname, opts, stats, err) < 0)
    goto fail;
  char rel[128];
  snprintf (rel, sizeof rel, "layers/sha256/%s", hex);
  if (renameat (s->dirfd, tmpname, s->dirfd, rel) < 0)
    {
      ohbox_error_errno (err, "rename `%s` to `%s` in `%s`", tmpname, rel, s->root);
      goto fail;
    }
  if (ohbox_fsync_dir (s->dirfd, "layers/sha256") < 0)
    return ohbox_error_errno (err, "fsync `%s/layers/sha256`", s->root);
  return 0;

fail:
  {
    cleanup_error ohbox_error_t ignored = NULL;
    ohbox_rm_rf_at (s->dirfd, tmpname, &ignored);
  }
  return -1;
}
