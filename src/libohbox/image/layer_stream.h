/* layer_stream.h: the uncompressed tar stream of a layer blob, for layer.c
 * only (not part of the library's interface).
 *
 * A thread of its own reads the blob (waiting for more bytes through
 * opts->wait_more when it is still being downloaded), decompresses it
 * (gzip, zstd or none, detected), bounds it by MAX bytes and hashes it for
 * the DiffID, while the caller's thread parses the tar and creates files:
 * decompression and file creation, the two costs of an unpack, overlap. The
 * two threads share a fixed ring of a few large blocks, so the producer
 * never runs more than that far ahead (memory is bounded whatever the blob
 * holds). Every uncompressed byte is hashed exactly once, in stream order,
 * including the bytes after the tar's end-of-archive marker, which the
 * consumer drains with layer_stream_next () until it returns 0. */
#ifndef OHBOX_LAYER_STREAM_H
#define OHBOX_LAYER_STREAM_H

#include <stdint.h>
#include <sys/types.h>

#include "common/digest.h"
#include "common/error.h"
#include "image/layer.h"

struct layer_stream;

/* Starts the producer on BLOB_FD (borrowed: it must stay open until
 * layer_stream_free). OPTS (progress, wait_more) must outlive the stream. */
int layer_stream_start (int blob_fd, const struct ohbox_layer_options *opts, uint64_t max, struct layer_stream **out,
                        ohbox_error_t *err);

/* The next block of the uncompressed stream: its length (> 0) with *BUF
 * valid until the next call, 0 at the end, -1 when the producer failed
 * (layer_stream_take_error says why). Called from one thread only. */
ssize_t layer_stream_next (struct layer_stream *s, const void **buf);

/* Stops the producer (when it is still running) and waits for it. Then, if
 * the producer failed (I/O, corrupt or over-limit stream, failed download),
 * moves its error into *ERR and returns true; otherwise leaves *ERR alone. */
bool layer_stream_take_error (struct layer_stream *s, ohbox_error_t *err);

/* After layer_stream_next () returned 0: the DiffID ("sha256:HEX"), and
 * the uncompressed and compressed sizes. */
void layer_stream_result (struct layer_stream *s, char diffid[OHBOX_DIGEST_LEN + 1], uint64_t *uncompressed,
                          uint64_t *compressed);

/* Stops the producer if needed and frees everything. NULL is fine. */
void layer_stream_free (struct layer_stream *s);

#endif
