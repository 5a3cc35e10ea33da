/* store_layers.c: unpacked layers, keyed by DiffID, in the form overlayfs
 * reads as a lower directory (see layer.h). A layer is unpacked into
 * tmp/layer-<hex>-XXXXXX, checked against its DiffID, synced and renamed to
 * layers/sha256/<hex>: it exists complete or not at all.
 *
 * With opts->wait_more (a pull), a blob still downloading is unpacked from
 * its ingest file as it grows. The DiffID proves the content whatever bytes
 * were read; the rename also waits for the blob itself to be complete and
 * verified; a failure of such an unpack is retried once from the verified
 * blob, since the bytes it read may have been replaced since. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_internal.h"
#include "common/utils.h"

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

/* The blob's download in progress (store.c's ingest/<hex>.partial), to
 * unpack it while it grows. */
static int
open_ingest (struct ohbox_store *s, const char *blob_digest)
{
  char rel[128];
  snprintf (rel, sizeof rel, "ingest/%s.partial", ohbox_digest_hex (blob_digest));
  return openat (s->dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

/* Waits for the end of the blob's download: 0 once it is complete and
 * verified in the store, -1 when it failed. */
static int
wait_blob (const struct ohbox_layer_options *opts, ohbox_error_t *err)
{
  int r;
  while ((r = opts->wait_more (opts->userdata, UINT64_MAX, err)) > 0)
    ;
  return r;
}

/* Unpacks into TMPNAME and checks the DiffID. *STREAMED tells whether the
 * blob was read from its download in progress. */
static int
unpack_into_tmp (struct ohbox_store *s, const char *blob_digest, const char *diff_id, const char *tmpname,
                 const struct ohbox_layer_options *opts, struct ohbox_layer_stats *stats, bool *streamed,
                 ohbox_error_t *err)
{
  cleanup_close int blob_fd = -1;
  *streamed = false;
  if (opts->wait_more && !ohbox_store_has_blob (s, blob_digest))
    {
      blob_fd = open_ingest (s, blob_digest);
      *streamed = blob_fd >= 0;
      /* Not there: just committed (renamed), or the download is starting
       * over. Wait for the blob. */
      if (blob_fd < 0 && wait_blob (opts, err) < 0)
        return -1;
    }
  if (blob_fd < 0 && ohbox_store_open_blob (s, blob_digest, &blob_fd, err) < 0)
    return -1;
  cleanup_close int dfd = openat (s->dirfd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_errno (err, "open `%s/%s`", s->root, tmpname);
  /* The layer root's mode, unless the archive has an entry for "./". */
  if (fchmod (dfd, 0755) < 0)
    return ohbox_error_errno (err, "chmod `%s/%s`", s->root, tmpname);
  struct ohbox_layer_options o = *opts;
  o.privileged = s->privileged;
  if (!*streamed)
    o.wait_more = NULL;
  /* A layer unpacked alone (load, build) still keeps the store's margin free. */
  struct ohbox_unpack_budget alone;
  if (o.budget == NULL)
    {
      ohbox_store_budget_init (s, 0, &alone);
      o.budget = &alone;
    }
  char got[OHBOX_DIGEST_LEN + 1];
  if (ohbox_layer_unpack (blob_fd, dfd, &o, got, stats, err) < 0)
    return ohbox_error_prefix (err, "unpack layer %s into `%s/%s`", blob_digest, s->root, tmpname);
  if (strcmp (got, diff_id) != 0)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                        "layer %s: its uncompressed content hashes to %s, but the image config says %s", blob_digest,
                        got, diff_id);
  /* The content is right (its DiffID); the layer is not kept unless the
   * blob it came from is right too (digest and size verified by the
   * store's blob writer). The unpack usually saw the download end already. */
  if (*streamed && wait_blob (opts, err) < 0)
    return ohbox_error_prefix (err, "layer %s", blob_digest);
  /* One syncfs for the whole tree instead of an fsync per file: the layer
   * becomes visible (rename below) only once its data is on disk. */
  if (syncfs (dfd) < 0)
    return ohbox_error_errno (err, "sync layer `%s/%s`", s->root, tmpname);
  return 0;
}

/* One unpack into a fresh temporary directory, renamed into place on
 * success and removed on failure. */
static int
unpack_once (struct ohbox_store *s, const char *blob_digest, const char *diff_id,
             const struct ohbox_layer_options *opts, struct ohbox_layer_stats *stats, bool *streamed,
             ohbox_error_t *err)
{
  const char *hex = ohbox_digest_hex (diff_id);
  cleanup_free char *tmpl = xasprintf ("%s/tmp/layer-%.16s-XXXXXX", s->root, hex);
  *streamed = false;
  if (mkdtemp (tmpl) == NULL)
    return ohbox_error_errno (err, "create a temporary directory in `%s/tmp`", s->root);
  const char *tmpname = tmpl + strlen (s->root) + 1;

  if (unpack_into_tmp (s, blob_digest, diff_id, tmpname, opts, stats, streamed, err) < 0)
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

int
ohbox_store_unpack_layer (struct ohbox_store *s, const char *blob_digest, const char *diff_id,
                          const struct ohbox_layer_options *opts, struct ohbox_layer_stats *stats, ohbox_error_t *err)
{
  if (ohbox_digest_validate (blob_digest, err) < 0 || ohbox_digest_validate (diff_id, err) < 0)
    return -1;
  if (ohbox_store_has_layer (s, diff_id))
    return 0;
  char lockname[128];
  snprintf (lockname, sizeof lockname, "locks/layer-%s", ohbox_digest_hex (diff_id));
  cleanup_close int lock_fd = ohbox_lock_file (s->dirfd, lockname, true, false, err);
  if (lock_fd < 0)
    return -1;
  if (ohbox_store_has_layer (s, diff_id))
    return 0;

  bool streamed;
  if (unpack_once (s, blob_digest, diff_id, opts, stats, &streamed, err) == 0)
    return 0;
  /* Bytes read from a download in progress may have been replaced since (a
   * resumed download that had to start over from zero after a bad partial
   * or a server ignoring Range): whatever failed, unpack once more from the
   * complete, verified blob when there is one. */
  cleanup_error ohbox_error_t why = NULL;
  if (!streamed || wait_blob (opts, &why) < 0)
    return -1;
  ohbox_error_release (err);
  return unpack_once (s, blob_digest, diff_id, opts, stats, &streamed, err);
}
