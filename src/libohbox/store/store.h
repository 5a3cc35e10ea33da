/* store.h: the content-addressed image store.
 *
 *   ROOT/blobs/sha256/<hex>        blobs (layers as pulled, manifests, configs, indexes)
 *   ROOT/ingest/<hex>.partial      blob being downloaded (never visible as a blob)
 *   ROOT/layers/sha256/<hex>/      unpacked layer keyed by DiffID (overlay lower dir)
 *   ROOT/images/<hex>.json         image record, keyed by its manifest digest
 *   ROOT/refs.json                 names (registry/repo:tag and @digest) -> image id
 *   ROOT/needs-auth/<hex>          the image's pull needed registry credentials
 *   ROOT/locks/                    per-blob, per-layer and metadata locks
 *   ROOT/tmp/                      half-unpacked layers, removed by GC
 *
 * Concurrency: every process holds ROOT/locks/store shared while it uses the
 * store; GC takes it exclusively, so it never removes what another process is
 * creating. Blob ingest and layer unpack take a per-digest exclusive lock and
 * re-check existence after getting it, so concurrent pulls download and
 * unpack each blob once. Blobs are written to ingest/, verified while
 * streaming, fsync'ed and renamed into place: a killed process leaves at most
 * a partial file in ingest/, which the next pull resumes or GC removes. */
#ifndef OHBOX_STORE_H
#define OHBOX_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/digest.h"
#include "common/error.h"
#include "image/layer.h"

struct ohbox_store;
struct ohbox_blob_writer;

/* /var/lib/ohbox for root, $XDG_DATA_HOME/ohbox (~/.local/share/ohbox) otherwise. */
char *ohbox_store_default_root (void);
int ohbox_store_open (const char *root, struct ohbox_store **out, ohbox_error_t *err);
void ohbox_store_close (struct ohbox_store *s);
/* Lets go of the shared store lock early: a long-lived process (a sandbox's
 * monitor) must not block GC forever. Layers a sandbox uses stay protected
 * by its layers file (snapshot.h); blob and layer writes need the lock. */
void ohbox_store_unlock (struct ohbox_store *s);
const char *ohbox_store_root (const struct ohbox_store *s);
int ohbox_store_dirfd (const struct ohbox_store *s);
bool ohbox_store_privileged (const struct ohbox_store *s);

/* ---- blobs ---- */
bool ohbox_store_has_blob (struct ohbox_store *s, const char *digest);
/* Absolute path of a blob (the digest must be valid). */
char *ohbox_store_blob_path (struct ohbox_store *s, const char *digest);
int ohbox_store_open_blob (struct ohbox_store *s, const char *digest, int *fd_out, ohbox_error_t *err);
/* Reads a small blob (bounded by MAX) and verifies its digest. */
int ohbox_store_read_blob (struct ohbox_store *s, const char *digest, size_t max, char **data, size_t *len,
                           ohbox_error_t *err);
/* The same without hashing it again: for starting sandboxes, which trust
 * what the store verified when the blob entered it (`ohbox check` verifies
 * it again). Hashing costs nothing with the kernel's sha256 but ~2.5 ms of
 * loading and initializing libcrypto where the kernel has no AF_ALG. */
int ohbox_store_read_blob_unverified (struct ohbox_store *s, const char *digest, size_t max, char **data, size_t *len,
                                      ohbox_error_t *err);
/* Stores DATA; when EXPECTED is not NULL it must match. OUT_DIGEST may be NULL. */
int ohbox_store_put_blob (struct ohbox_store *s, const char *expected, const void *data, size_t len,
                          char out_digest[OHBOX_DIGEST_LEN + 1], ohbox_error_t *err);

/* Starts ingesting DIGEST (EXPECTED_SIZE, or -1 when unknown).
 * Returns 0 with *w set, 0 with *w NULL when the blob is already present, or
 * (only with WAIT false) 1 when another process holds the blob's lock. */
int ohbox_store_blob_begin (struct ohbox_store *s, const char *digest, int64_t expected_size, bool wait,
                            struct ohbox_blob_writer **w, ohbox_error_t *err);
/* Bytes already there (a partial file kept from an interrupted download). */
int64_t ohbox_blob_writer_offset (const struct ohbox_blob_writer *w);
/* Appends; exceeding the expected size is an OHBOX_ERR_INTEGRITY error. */
int ohbox_blob_writer_write (struct ohbox_blob_writer *w, const void *data, size_t len, ohbox_error_t *err);
/* Drops what was written (the server did not honour a Range request). */
int ohbox_blob_writer_reset (struct ohbox_blob_writer *w, ohbox_error_t *err);
/* Verifies size and digest, fsyncs, renames into blobs/ and frees W. On a
 * mismatch the partial data is deleted and OHBOX_ERR_INTEGRITY names both digests. */
int ohbox_blob_writer_commit (struct ohbox_blob_writer *w, ohbox_error_t *err);
/* Frees W and releases its lock; KEEP_PARTIAL keeps the data for a resume. */
void ohbox_blob_writer_abort (struct ohbox_blob_writer *w, bool keep_partial);

/* ---- unpacked layers ---- */
bool ohbox_store_has_layer (struct ohbox_store *s, const char *diff_id);
/* ROOT/layers/sha256/<hex> */
char *ohbox_store_layer_path (struct ohbox_store *s, const char *diff_id);
/* Unpacks blob BLOB_DIGEST into the layer DIFF_ID unless already there. The
 * computed DiffID must equal DIFF_ID (else OHBOX_ERR_INTEGRITY, nothing kept).
 * Safe against concurrent callers (per-layer lock). */
int ohbox_store_unpack_layer (struct ohbox_store *s, const char *blob_digest, const char *diff_id,
                              const struct ohbox_layer_options *opts, struct ohbox_layer_stats *stats,
                              ohbox_error_t *err);

/* ---- images and names ---- */
/* An image record (JSON object):
 *   {"id": manifest digest, "manifest_media_type", "config_digest",
 *    "index_digest" (optional), "platform": "os/arch[/variant]",
 *    "layers": [{"digest","diff_id","size","media_type"}],
 *    "size": total compressed, "created": from the config, "stored_at",
 *    "runtime_image" (optional): {"built_by", "ohbox_version"} when `ohbox
 *    build` made it (build/runtime_image.h)}
 * Written after every blob and layer it names is present. */
#define OHBOX_RECORD_RUNTIME_IMAGE "runtime_image"
int ohbox_store_put_image (struct ohbox_store *s, json_t *record, ohbox_error_t *err);
int ohbox_store_get_image (struct ohbox_store *s, const char *id, json_t **out, ohbox_error_t *err);
/* Every image record, as a JSON array with "names" filled in. */
int ohbox_store_list_images (struct ohbox_store *s, json_t **out, ohbox_error_t *err);
/* NAME is a normalised reference string ("reg/repo:tag" or "reg/repo@sha256:..."). */
int ohbox_store_set_ref (struct ohbox_store *s, const char *name, const char *image_id, ohbox_error_t *err);
/* Removes NAME; returns 1 if it existed, 0 otherwise. */
int ohbox_store_remove_ref (struct ohbox_store *s, const char *name, ohbox_error_t *err);
/* Resolves what a user typed (a reference, an id or a unique id prefix of at
 * least 4 hex characters) to an image id. OHBOX_ERR_NOT_FOUND when nothing matches. */
int ohbox_store_resolve (struct ohbox_store *s, const char *what, char **image_id, ohbox_error_t *err);
/* The same for names only (what the user typed, or its normalised form,
 * or NAME@DIGEST): never an id or id prefix. */
int ohbox_store_resolve_name (struct ohbox_store *s, const char *what, char **image_id, ohbox_error_t *err);
/* What the names of the store under ROOT are now, from one stat and
 * without opening the store: every change of a name replaces the file that
 * holds them, so two equal stamps mean that no name changed in between. A
 * long-running caller keeps what a name resolved to with the stamp taken
 * before resolving it. False when the store has no names yet. */
struct ohbox_store_names_stamp
{
  uint64_t dev, ino, size;
  int64_t mtime_ns, ctime_ns;
};
bool ohbox_store_names_stamp (const char *root, struct ohbox_store_names_stamp *out);
bool ohbox_store_names_stamp_equal (const struct ohbox_store_names_stamp *a, const struct ohbox_store_names_stamp *b);
/* Images whose pull needed credentials (the registry wanted them and got
 * them): a CI job without them must not get such an image from the store
 * (ohbox-ci(1)). The mark stays until the image is removed. */
int ohbox_store_mark_needs_credentials (struct ohbox_store *s, const char *id, ohbox_error_t *err);
bool ohbox_store_needs_credentials (struct ohbox_store *s, const char *id);
/* All names pointing at ID, as a JSON array of strings. */
json_t *ohbox_store_names_of (struct ohbox_store *s, const char *id);
/* Removes an image record, its needs-credentials mark and every name pointing at it. */
int ohbox_store_remove_image (struct ohbox_store *s, const char *id, ohbox_error_t *err);

struct ohbox_gc_stats
{
  uint64_t images_removed;
  uint64_t blobs_removed;
  uint64_t layers_removed;
  uint64_t partials_removed;
  uint64_t bytes_freed;
};
/* Removes images no name references (when UNTAGGED_IMAGES), then blobs and
 * layers no image references, half-written files and stale temporaries.
 * Takes the store lock exclusively (waits for other ohbox processes). */
int ohbox_store_gc (struct ohbox_store *s, bool untagged_images, struct ohbox_gc_stats *stats, ohbox_error_t *err);

/* ---- space ----
 * A pull or an unpack leaves a margin free on the store's filesystem: 1% of
 * its size, at least 256 KiB, at most 64 MiB. */
/* NEED more bytes (WHAT: "the blobs to download") must fit with the margin:
 * else OHBOX_ERR_STORE (ENOSPC) naming the store, the free space and NEED. */
int ohbox_store_check_space (struct ohbox_store *s, uint64_t need, const char *what, ohbox_error_t *err);
/* Fills B for the layers of one image (layer.h): at most MAX uncompressed
 * bytes (0: no bound), and the store's free-space margin. */
void ohbox_store_budget_init (struct ohbox_store *s, uint64_t max, struct ohbox_unpack_budget *b);

#endif
