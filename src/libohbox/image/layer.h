/* layer.h: unpacking one image layer (a tar stream, uncompressed, gzip or
 * zstd) into a directory that overlayfs can use as a lower layer.
 *
 * The on-disk form is the one overlayfs reads natively, so the sandbox code
 * composes layers without any conversion:
 *   - a whiteout `.wh.NAME` becomes a character device 0:0 named NAME;
 *   - an opaque marker `.wh..wh..opq` becomes the xattr overlay.opaque="y" on
 *     its directory (trusted.overlay.opaque when privileged, user.overlay.opaque
 *     for an unprivileged store, which the sandbox mounts with `userxattr`).
 *
 * Safety: every entry is created relative to the layer directory's fd with
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) for its parent, O_NOFOLLOW/
 * AT_SYMLINK_NOFOLLOW for the entry itself, and metadata is applied through
 * the entry's own fd, so nothing is ever created, linked, chmod'ed or chown'ed
 * outside the layer directory, whatever the archive contains. Entries that
 * try (absolute or `..` paths, a parent that is a symlink, a hardlink leaving
 * the layer, replacing the layer root) fail the unpack with
 * OHBOX_ERR_INTEGRITY naming the entry. So do a corrupt or truncated stream,
 * a stream that is not tar/gzip/zstd, a stream over max_uncompressed, and
 * overlay.* xattrs carried by the archive (a layer could forge whiteouts).
 * A stream over the image's budget fails too (OHBOX_ERR_INTEGRITY), and
 * one that would leave the store's filesystem with less than the budget's
 * free margin stops early (OHBOX_ERR_STORE, "No space left on device").
 *
 * Later entries replace earlier ones at the same path (a directory is kept
 * when the new entry is a directory too); directory modes and times are
 * applied after the last entry. Nothing is fsync'ed: the caller syncs the
 * layer once. No global state (no cwd, umask or locale changes): several
 * layers may be unpacked at once from different threads. */
#ifndef OHBOX_LAYER_H
#define OHBOX_LAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/digest.h"
#include "common/error.h"

#define OHBOX_LAYER_DEFAULT_MAX_SIZE (64ULL * 1024 * 1024 * 1024) /* uncompressed bytes */

/* What the layers of one image may take together, shared by the threads
 * unpacking them (each adds the uncompressed bytes as its tar reader takes
 * them, just before their entries are written): at most MAX bytes (0: no
 * bound), and never so much that the filesystem of FS_FD would have less
 * than MIN_FREE bytes available, looked at every CHECK_EVERY bytes. Fill it
 * with ohbox_store_budget_init (store.h). */
struct ohbox_unpack_budget
{
  uint64_t max;
  int fs_fd;
  const char *fs_name; /* the store's root, for messages */
  uint64_t min_free;
  uint64_t check_every;
  _Atomic uint64_t used;
  _Atomic uint64_t next_check;
};

/* Accounts N more uncompressed bytes: -1 with OHBOX_ERR_INTEGRITY over
 * MAX, OHBOX_ERR_STORE (ENOSPC) when the free space is below MIN_FREE. */
int ohbox_unpack_budget_take (struct ohbox_unpack_budget *b, uint64_t n, ohbox_error_t *err);

struct ohbox_layer_options
{
  /* Root on the host: chown entries to the archive's uid/gid, create device
   * nodes, write trusted.* xattrs. Otherwise files stay owned by the caller,
   * device nodes are skipped (counted in stats), user.* xattrs only. */
  bool privileged;
  /* Bound on the uncompressed stream (gzip/zstd bombs); 0 means the default. */
  uint64_t max_uncompressed;
  /* Called about every MiB, and once at the end on success, with the
   * compressed bytes read from BLOB_FD so far (may be NULL). All but the
   * last call come from the unpack's decompression thread. */
  void (*progress) (void *userdata, uint64_t compressed_read);
  /* Unpacking while the blob downloads (may be NULL): BLOB_FD is then a
   * file still being appended to. When a read reaches its end, wait_more
   * (OFFSET: the bytes read so far) blocks until more may have been written
   * and returns 1 (returning early is harmless: the read is retried), or
   * until the writer is done: 0 when the file is complete and verified
   * (what is left of it is read, then its end is the end), -1 with *ERR
   * when it never will be (the unpack fails with that error). Called from
   * the decompression thread. */
  int (*wait_more) (void *userdata, uint64_t offset, ohbox_error_t *err);
  void *userdata; /* for progress and wait_more */
  /* Shared with the other layers of the image (may be NULL). */
  struct ohbox_unpack_budget *budget;
};

struct ohbox_layer_stats
{
  uint64_t uncompressed_size; /* the tar stream, trailing bytes included */
  uint64_t entries;           /* tar entries, whiteouts included */
  uint64_t whiteouts;         /* `.wh.NAME` and `.wh..wh..opq` markers */
  uint64_t skipped_devices;   /* device nodes when unprivileged, and sockets */
};

/* Unpacks the layer read from BLOB_FD into DEST_DIRFD (an empty directory)
 * and computes its DiffID (sha256 of the uncompressed tar stream, including
 * the bytes after the end-of-archive marker). Compression is detected from the
 * stream (gzip or zstd, or none). DEST_DIRFD may be an O_PATH fd. STATS may be
 * NULL. On failure the caller removes DEST_DIRFD's contents.
 * Decompression runs on a thread of its own, hashing, tar parsing and file
 * creation on the caller's (a ring of 2 MiB between them); both have ended
 * when this returns. */
int ohbox_layer_unpack (int blob_fd, int dest_dirfd, const struct ohbox_layer_options *opts,
                        char diffid_out[OHBOX_DIGEST_LEN + 1], struct ohbox_layer_stats *stats, ohbox_error_t *err);

#endif
