/* layer_stream.c: the decompression side of a layer unpack, on a thread of
 * its own; see layer_stream.h for the contract.
 *
 * The producer thread runs a libarchive reader with the gzip and zstd
 * filters and the "raw" format over the blob: the uncompressed tar stream
 * comes out in blocks, which it counts against the size limit and copies
 * into the free slots of a ring. The consumer (layer.c's tar reader) takes
 * filled slots in order, hashes each for the DiffID and gives it back when
 * it asks for the next one. Everything the two threads share is under one
 * mutex; the rest belongs to one side (the producer's, to the consumer once
 * it has joined the producer). */
#include "config.h"
#include "image/layer_stream.h"

#include "common/dl_archive.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common/utils.h"

/* Big reads: fewer syscalls and full-speed inflate (benchmarked vs GNU tar). */
#define READ_BUFFER_SIZE (1024 * 1024)
#define PROGRESS_INTERVAL (1024 * 1024)
/* The ring: 4 slots of 512 KiB, 2 MiB in all whatever the layer. Sizes from
 * 128 KiB to 1 MiB and 2 or 4 slots measured the same on the Debian minbase
 * layer. */
#define SLOT_SIZE (512 * 1024)
#define N_SLOTS 4

struct slot
{
  char *data;
  size_t len;
};

struct layer_stream
{
  /* The producer's: the consumer reads them only after joining it. */
  int blob_fd;
  const struct ohbox_layer_options *opts;
  uint64_t max;
  struct archive *outer;
  char *inbuf;
  bool blob_final;     /* the blob will not grow any more */
  bool aborted;        /* stopped by the consumer: not an error of the stream */
  const char *pending; /* the unconsumed rest of libarchive's last block */
  size_t pending_len;
  uint64_t compressed;
  uint64_t last_progress;
  uint64_t uncompressed;
  ohbox_error_t err; /* why the producer failed */

  /* The consumer's. */
  size_t head;  /* the slot it takes next, or holds */
  bool holding; /* it holds slots[head] (returned by the last call) */
  struct ohbox_sha256 *hash;

  /* Shared, under LOCK. Filled slots are head .. head + count - 1 (mod N_SLOTS). */
  pthread_mutex_t lock;
  pthread_cond_t filled; /* a slot was filled, or the producer ended */
  pthread_cond_t freed;  /* a slot was given back, or the consumer cancelled */
  struct slot slots[N_SLOTS];
  size_t count;
  bool ended; /* the producer has finished (at the end of the stream, or failed) */
  bool failed;
  bool cancel;

  pthread_t thread;
  bool running; /* started and not joined yet */
};

/* ---- the producer ---- */

static bool
cancelled (struct layer_stream *s)
{
  pthread_mutex_lock (&s->lock);
  bool c = s->cancel;
  pthread_mutex_unlock (&s->lock);
  return c;
}

/* libarchive's read callback. A blob still being downloaded ends where the
 * download is for now: wait_more () says when there is more, or that it is
 * complete (then one last read gets what was written before it said so). */
static la_ssize_t
blob_read (struct archive *a, void *data, const void **buf)
{
  struct layer_stream *s = data;
  for (;;)
    {
      ssize_t n = read (s->blob_fd, s->inbuf, READ_BUFFER_SIZE);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int saved = errno;
          ohbox_error_errno (&s->err, "read layer blob");
          archive_set_error (a, saved, "read layer blob");
          return -1;
        }
      if (n > 0 || s->blob_final || s->opts->wait_more == NULL)
        {
          s->compressed += (uint64_t) n;
          if (s->opts->progress && s->compressed - s->last_progress >= PROGRESS_INTERVAL)
            {
              s->last_progress = s->compressed;
              s->opts->progress (s->opts->userdata, s->compressed);
            }
          *buf = s->inbuf;
          return n;
        }
      /* A consumer that gave up must not keep us waiting for a download;
       * its own error is the one reported. */
      if (cancelled (s))
        {
          s->aborted = true;
          archive_set_error (a, ECANCELED, "layer unpack cancelled");
          return -1;
        }
      int r = s->opts->wait_more (s->opts->userdata, s->compressed, &s->err);
      if (r < 0)
        {
          if (s->err == NULL)
            ohbox_error (&s->err, OHBOX_ERR_GENERIC, 0, "layer blob: the download failed");
          archive_set_error (a, EIO, "layer blob download failed");
          return -1;
        }
      if (r == 0)
        s->blob_final = true;
    }
}

/* Fills S->err from a failure of the outer reader, unless a callback
 * already said why (I/O error, failed download) or the consumer stopped us. */
static int
outer_failure (struct layer_stream *s, const char *what)
{
  if (s->err || s->aborted)
    return -1;
  const char *msg = archive_error_string (s->outer);
  ohbox_error (&s->err, OHBOX_ERR_INTEGRITY, 0, "%s: %s", what, msg ? msg : "read error");
  /* EILSEQ is libarchive's ARCHIVE_ERRNO_FILE_FORMAT: not a tar, gzip or zstd stream. */
  if (archive_errno (s->outer) == EILSEQ)
    ohbox_error_hint (&s->err, "a layer must be a tar stream, uncompressed or compressed with gzip or zstd");
  return -1;
}

/* Fills SL with the next bytes of the uncompressed stream (SL->len is 0 at
 * its end). Every byte passes here exactly once, so the count bounds
 * decompression bombs (and the consumer's hash is the DiffID). */
static int
fill_slot (struct layer_stream *s, struct slot *sl)
{
  sl->len = 0;
  while (sl->len < SLOT_SIZE)
    {
      if (s->pending_len == 0)
        {
          const void *block;
          size_t size = 0;
          la_int64_t offset;
          int r = archive_read_data_block (s->outer, &block, &size, &offset);
          if (r == ARCHIVE_EOF)
            break;
          if (r < ARCHIVE_WARN)
            return outer_failure (s, "layer stream is corrupt");
          s->uncompressed += size;
          if (s->uncompressed > s->max)
            return ohbox_error (&s->err, OHBOX_ERR_INTEGRITY, 0,
                                "layer exceeds the uncompressed size limit of %llu bytes", (unsigned long long) s->max);
          s->pending = block;
          s->pending_len = size;
        }
      size_t n = s->pending_len < SLOT_SIZE - sl->len ? s->pending_len : SLOT_SIZE - sl->len;
      memcpy (sl->data + sl->len, s->pending, n);
      sl->len += n;
      s->pending += n;
      s->pending_len -= n;
    }
  return 0;
}

static void *
produce (void *arg)
{
  struct layer_stream *s = arg;
  struct archive_entry *e;
  size_t tail = 0; /* the next slot to fill: head + count */
  int r = 0;
  if (archive_read_open (s->outer, s, NULL, blob_read, NULL) != ARCHIVE_OK
      || archive_read_next_header (s->outer, &e) != ARCHIVE_OK)
    r = outer_failure (s, "layer blob");
  while (r == 0)
    {
      pthread_mutex_lock (&s->lock);
      while (s->count == N_SLOTS && !s->cancel)
        pthread_cond_wait (&s->freed, &s->lock);
      bool stop = s->cancel;
      pthread_mutex_unlock (&s->lock);
      if (stop)
        break;
      /* slots[tail] is free: only this thread touches it until it is counted. */
      struct slot *sl = &s->slots[tail];
      r = fill_slot (s, sl);
      if (r < 0 || sl->len == 0)
        break;
      pthread_mutex_lock (&s->lock);
      s->count++;
      pthread_cond_signal (&s->filled);
      pthread_mutex_unlock (&s->lock);
      tail = (tail + 1) % N_SLOTS;
    }
  pthread_mutex_lock (&s->lock);
  s->ended = true;
  s->failed = r < 0;
  pthread_cond_signal (&s->filled);
  pthread_mutex_unlock (&s->lock);
  return NULL;
}

/* ---- the consumer ---- */

int
layer_stream_start (int blob_fd, const struct ohbox_layer_options *opts, uint64_t max, struct layer_stream **out,
                    ohbox_error_t *err)
{
  /* The entry point of every layer read (layer.c starts a stream first). */
  if (ohbox_dl_archive_load (err) < 0)
    return -1;
  struct layer_stream *s = xcalloc (1, sizeof *s);
  s->blob_fd = blob_fd;
  s->opts = opts;
  s->max = max;
  s->inbuf = xmalloc (READ_BUFFER_SIZE);
  s->hash = ohbox_sha256_new ();
  pthread_mutex_init (&s->lock, NULL);
  pthread_cond_init (&s->filled, NULL);
  pthread_cond_init (&s->freed, NULL);
  for (size_t i = 0; i < N_SLOTS; i++)
    s->slots[i].data = xmalloc (SLOT_SIZE);

  /* Only gzip and zstd (the OCI layer media types), and only built in:
   * ARCHIVE_WARN means libarchive would run an external program. */
  s->outer = archive_read_new ();
  if (s->outer == NULL)
    abort ();
  if (archive_read_support_filter_gzip (s->outer) != ARCHIVE_OK
      || archive_read_support_filter_zstd (s->outer) != ARCHIVE_OK
      || archive_read_support_format_raw (s->outer) != ARCHIVE_OK)
    {
      ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "libarchive without built-in gzip and zstd: %s",
                   archive_error_string (s->outer));
      layer_stream_free (s);
      return -1;
    }
  int r = pthread_create (&s->thread, NULL, produce, s);
  if (r != 0)
    {
      ohbox_error (err, OHBOX_ERR_GENERIC, r, "start the layer decompression thread");
      layer_stream_free (s);
      return -1;
    }
  s->running = true;
  *out = s;
  return 0;
}

ssize_t
layer_stream_next (struct layer_stream *s, const void **buf)
{
  pthread_mutex_lock (&s->lock);
  if (s->holding)
    {
      s->holding = false;
      s->head = (s->head + 1) % N_SLOTS;
      s->count--;
      pthread_cond_signal (&s->freed);
    }
  while (s->count == 0 && !s->ended)
    pthread_cond_wait (&s->filled, &s->lock);
  ssize_t n;
  if (s->count > 0)
    {
      s->holding = true;
      *buf = s->slots[s->head].data;
      n = (ssize_t) s->slots[s->head].len;
    }
  else
    n = s->failed ? -1 : 0;
  pthread_mutex_unlock (&s->lock);
  /* Hashed here rather than in the producer: inflating is the longer of
   * the two sides, and the block is about to be read anyway. */
  if (n > 0)
    ohbox_sha256_update (s->hash, *buf, (size_t) n);
  return n;
}

static void
stop (struct layer_stream *s)
{
  if (!s->running)
    return;
  pthread_mutex_lock (&s->lock);
  s->cancel = true;
  pthread_cond_signal (&s->freed);
  pthread_mutex_unlock (&s->lock);
  pthread_join (s->thread, NULL);
  s->running = false;
}

bool
layer_stream_take_error (struct layer_stream *s, ohbox_error_t *err)
{
  stop (s);
  if (s->err == NULL)
    return false;
  ohbox_error_move (err, &s->err);
  return true;
}

void
layer_stream_result (struct layer_stream *s, char diffid[OHBOX_DIGEST_LEN + 1], uint64_t *uncompressed,
                     uint64_t *compressed)
{
  stop (s);
  ohbox_sha256_final (s->hash, diffid);
  *uncompressed = s->uncompressed;
  *compressed = s->compressed;
}

void
layer_stream_free (struct layer_stream *s)
{
  if (s == NULL)
    return;
  stop (s);
  if (s->outer)
    archive_read_free (s->outer);
  for (size_t i = 0; i < N_SLOTS; i++)
    free (s->slots[i].data);
  free (s->inbuf);
  ohbox_sha256_free (s->hash);
  ohbox_error_release (&s->err);
  pthread_cond_destroy (&s->filled);
  pthread_cond_destroy (&s->freed);
  pthread_mutex_destroy (&s->lock);
  free (s);
}
