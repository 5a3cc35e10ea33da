/* registry_fetch.c: parallel, resumable, verified blob downloads straight into
 * the store (ohbox_registry_fetch_blobs, see registry.h).
 *
 * Each blob is an item that moves PENDING -> ACTIVE -> DONE. A pending item
 * first gets a store blob writer (ohbox_store_blob_begin without waiting: a
 * blob another process is downloading is polled, and waited for only when
 * nothing else is left, so two concurrent pulls download each blob once).
 * Transfers run on one libcurl multi handle, at most max_parallel at once.
 * A transient failure (network error, 408, 429, 5xx, a body cut short) keeps
 * the writer and its data; the next attempt asks for the rest with
 * "Range: bytes=OFFSET-" after a backoff (Retry-After honoured up to 10 s).
 * A server that answers a Range request with 200 gets its full body taken
 * after a writer reset; one that answers with the wrong range, or 416, is
 * asked for everything. The commit verifies size and digest; a mismatch on
 * data that was resumed is retried once from zero (the kept partial may
 * have been bad), otherwise it is final. */
#include "config.h"

#include <string.h>

#include "registry/registry_internal.h"

/* How often a blob held by another process is polled. */
#define BUSY_POLL_S 0.25
#define BLOB_BUFFER_SIZE (256L * 1024)

enum item_state
{
  ITEM_PENDING,
  ITEM_ACTIVE,
  ITEM_DONE,
};

struct fetch_ctx;

struct fetch_item
{
  size_t idx;
  struct ohbox_blob_fetch *f;
  struct fetch_ctx *ctx;
  enum item_state state;
  struct ohbox_blob_writer *w;
  double not_before;   /* no new attempt before this ohbox_monotonic () time */
  unsigned failures;   /* transient failures so far */
  bool busy;           /* another process holds the blob's lock */
  bool no_range;       /* the server mishandled Range: ask for the whole blob */
  bool range_mismatch; /* this attempt got a 206 for the wrong range */
  bool resumed;        /* some of the data came from a Range request */
  bool clean_restart_done;
  bool auth_retried;
  bool creds_sent;
  CURL *easy;
  struct reg_xfer x;
  bool x_live; /* X holds allocations */
};

struct fetch_ctx
{
  struct ohbox_registry *r;
  struct ohbox_store *store;
  const char *repository;
  const struct ohbox_fetch_callbacks *cb;
  CURLM *multi;
  struct fetch_item *items;
  size_t n;
  size_t active;
  struct fetch_item *failed; /* the item whose error ended the fetch */
};

static void
mark_done (struct fetch_ctx *ctx, struct fetch_item *it, bool downloaded)
{
  it->state = ITEM_DONE;
  it->f->downloaded = downloaded;
  if (ctx->cb && ctx->cb->complete)
    ctx->cb->complete (ctx->cb->userdata, it->idx);
}

static int
fatal (struct fetch_ctx *ctx, struct fetch_item *it, ohbox_error_t *err)
{
  ctx->failed = it;
  /* Name the blob and where it came from, once. */
  if (err && *err && strstr ((*err)->msg, it->f->digest) != NULL)
    return ohbox_error_prefix (err, "pull from %s/%s", ctx->r->display, ctx->repository);
  return ohbox_error_prefix (err, "blob %s from %s/%s", it->f->digest, ctx->r->display, ctx->repository);
}

/* ---- callbacks of one transfer ---- */

static int
blob_headers (struct reg_xfer *x)
{
  struct fetch_item *it = x->userdata;
  if (x->range_from > 0 && x->resp.status == 200)
    {
      /* The server ignored Range and sends the whole blob: start over. */
      if (ohbox_blob_writer_reset (it->w, &x->cb_err) < 0)
        return -1;
      return 0;
    }
  if (x->resp.status == 206)
    {
      long long start = -1;
      const char *cr = x->resp.content_range;
      /* The body must start where we asked (0 when we did not ask). */
      if (cr == NULL || sscanf (cr, "bytes %lld-", &start) != 1 || start != x->range_from)
        {
          it->range_mismatch = true;
          return -1;
        }
      if (x->range_from > 0)
        it->resumed = true;
    }
  return 0;
}

static int
blob_data (struct reg_xfer *x, const char *data, size_t len)
{
  struct fetch_item *it = x->userdata;
  if (ohbox_blob_writer_write (it->w, data, len, &x->cb_err) < 0)
    return -1;
  it->f->bytes_transferred += len;
  const struct ohbox_fetch_callbacks *cb = it->ctx->cb;
  if (cb && cb->progress)
    cb->progress (cb->userdata, it->idx, (uint64_t) ohbox_blob_writer_offset (it->w),
                  it->f->size > 0 ? (uint64_t) it->f->size : 0);
  return 0;
}

/* ---- steps ---- */

static int
commit (struct fetch_ctx *ctx, struct fetch_item *it, ohbox_error_t *err)
{
  struct ohbox_blob_writer *w = steal_pointer (&it->w);
  ohbox_error_t e = NULL;
  if (ohbox_blob_writer_commit (w, &e) == 0)
    {
      mark_done (ctx, it, true);
      return 0;
    }
  /* The store dropped the bad data. If part of it was resumed (a partial
   * from an earlier run, or a Range answer), fetch it once more from zero. */
  if (e->kind == OHBOX_ERR_INTEGRITY && it->resumed && !it->clean_restart_done)
    {
      ohbox_error_release (&e);
      it->clean_restart_done = true;
      it->resumed = false;
      it->no_range = true;
      it->state = ITEM_PENDING;
      it->not_before = 0;
      return 0;
    }
  ohbox_error_move (err, &e);
  return fatal (ctx, it, err);
}

/* Gets a writer for IT (WAIT: block while another process holds the blob). */
static int
acquire (struct fetch_ctx *ctx, struct fetch_item *it, bool wait, ohbox_error_t *err)
{
  struct ohbox_blob_writer *w = NULL;
  int rc = ohbox_store_blob_begin (ctx->store, it->f->digest, it->f->size, wait, &w, err);
  if (rc < 0)
    return fatal (ctx, it, err);
  if (rc == 1)
    {
      it->busy = true;
      it->not_before = ohbox_monotonic () + BUSY_POLL_S;
      return 0;
    }
  it->busy = false;
  if (w == NULL)
    {
      mark_done (ctx, it, false);
      return 0;
    }
  it->w = w;
  if (ohbox_blob_writer_offset (w) > 0)
    it->resumed = true;
  /* A partial that is already complete (killed between the last byte and
   * the rename) needs no request. */
  if (it->f->size >= 0 && ohbox_blob_writer_offset (w) == it->f->size)
    return commit (ctx, it, err);
  return 0;
}

static int
start_transfer (struct fetch_ctx *ctx, struct fetch_item *it, ohbox_error_t *err)
{
  struct ohbox_registry *r = ctx->r;
  char *authorization = NULL;
  bool sent = false;
  if (reg_auth_header (r, ctx->repository, &authorization, &sent, err) < 0)
    return fatal (ctx, it, err);
  if (it->easy == NULL && (it->easy = curl_easy_init ()) == NULL)
    abort ();
  if (it->x_live)
    reg_xfer_clear (&it->x);
  cleanup_free char *url = xasprintf ("%s/v2/%s/blobs/%s", r->base_url, ctx->repository, it->f->digest);
  reg_xfer_init (&it->x, r, it->easy, url);
  it->x_live = true;
  it->x.authorization = authorization;
  it->x.on_headers = blob_headers;
  it->x.on_data = blob_data;
  it->x.userdata = it;
  it->creds_sent = sent;
  it->range_mismatch = false;
  if (it->no_range && ohbox_blob_writer_offset (it->w) > 0 && ohbox_blob_writer_reset (it->w, err) < 0)
    return fatal (ctx, it, err);
  it->x.range_from = ohbox_blob_writer_offset (it->w);
  it->x.long_transfer = true;
  if (reg_xfer_prepare (&it->x, err) < 0)
    return fatal (ctx, it, err);
  /* Blobs are large: a bigger receive buffer than libcurl's 16 KiB
   * default takes a tenth of the recv calls on a fast link. */
  curl_easy_setopt (it->easy, CURLOPT_BUFFERSIZE, BLOB_BUFFER_SIZE);
  CURLMcode mc = curl_multi_add_handle (ctx->multi, it->easy);
  if (mc != CURLM_OK)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "libcurl: %s", curl_multi_strerror (mc));
  it->state = ITEM_ACTIVE;
  ctx->active++;
  return 0;
}

/* A transient failure: WHY (owned) says what happened. */
static int
transient (struct fetch_ctx *ctx, struct fetch_item *it, char *why, ohbox_error_t *err)
{
  cleanup_free char *reason = why;
  it->failures++;
  it->state = ITEM_PENDING;
  if (it->failures >= ctx->r->max_attempts)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "download of blob %s from %s/%s failed after %u attempts: %s",
                        it->f->digest, ctx->r->display, ctx->repository, it->failures, reason);
  unsigned ms = reg_backoff_ms (ctx->r, it->failures, it->x.resp.retry_after_s);
  if (reg_deadline_passed (ctx->r, ms))
    {
      cleanup_free char *what = xasprintf ("the download of blob %s failed (%s) with no time left to try again",
                                           it->f->digest, reason);
      return reg_deadline_error (ctx->r, what, err);
    }
  it->not_before = ohbox_monotonic () + ms / 1000.0;
  return 0;
}

static char *
failure_text (struct reg_xfer *x, CURLcode rc)
{
  if (rc != CURLE_OK)
    return xasprintf ("%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror (rc));
  cleanup_free char *detail = reg_error_detail (&x->resp);
  return xasprintf ("HTTP %ld%s", x->resp.status, detail);
}

/* One transfer of IT ended with RC. */
static int
transfer_done (struct fetch_ctx *ctx, struct fetch_item *it, CURLcode rc, ohbox_error_t *err)
{
  struct ohbox_registry *r = ctx->r;
  struct reg_xfer *x = &it->x;
  curl_multi_remove_handle (ctx->multi, it->easy);
  ctx->active--;
  it->state = ITEM_PENDING;

  if (it->range_mismatch)
    {
      it->no_range = true;
      return transient (ctx, it,
                        xasprintf ("the server answered a Range request with `%.100s`",
                                   x->resp.content_range ? x->resp.content_range : "no Content-Range"),
                        err);
    }
  enum reg_outcome outcome = reg_xfer_outcome (x, rc, true);
  if (outcome == REG_DONE)
    reg_xfer_note_origin (x);
  long status = x->resp.status;
  if (!(outcome == REG_DONE && status == 401))
    it->auth_retried = false;
  switch (outcome)
    {
    case REG_ABORTED:
      ohbox_error_move (err, &x->cb_err);
      return fatal (ctx, it, err);
    case REG_FAIL:
      reg_xfer_net_error (x, rc, err);
      return fatal (ctx, it, err);
    case REG_REDIRECT:
      if (reg_xfer_follow (x, err) < 0 || reg_xfer_prepare (x, err) < 0)
        return fatal (ctx, it, err);
      if (curl_multi_add_handle (ctx->multi, it->easy) != CURLM_OK)
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "libcurl: cannot add a transfer");
      it->state = ITEM_ACTIVE;
      ctx->active++;
      return 0;
    case REG_RETRY:
      return transient (ctx, it, failure_text (x, rc), err);
    case REG_DONE:
      break;
    }

  if (status >= 200 && status < 300)
    {
      int64_t off = ohbox_blob_writer_offset (it->w);
      if (it->f->size < 0 || off == it->f->size)
        return commit (ctx, it, err);
      /* The whole blob (200, its Content-Length all received) is shorter
       * than the manifest's descriptor says: no retry can fix that. */
      curl_off_t cl = -1;
      if (status == 200 && curl_easy_getinfo (it->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl >= 0
          && off == (int64_t) cl && off < it->f->size)
        {
          ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                       "blob %s: size mismatch: the registry's blob has %lld bytes, the manifest's descriptor says "
                       "%lld",
                       it->f->digest, (long long) off, (long long) it->f->size);
          return fatal (ctx, it, err);
        }
      return transient (ctx, it,
                        xasprintf ("the transfer ended after %lld of %lld bytes", (long long) off,
                                   (long long) it->f->size),
                        err);
    }
  if (status == 401 && !it->auth_retried && reg_xfer_at_origin (x))
    {
      it->auth_retried = true;
      int again = reg_auth_challenged (r, ctx->repository, x->resp.www_authenticate, it->creds_sent, err);
      if (again < 0)
        return fatal (ctx, it, err);
      if (again > 0)
        {
          it->not_before = 0;
          return 0;
        }
    }
  if (status == 404)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "blob unknown: %s not found in %s/%s", it->f->digest, r->display,
                        ctx->repository);
  if (status == 416)
    {
      it->no_range = true;
      return transient (ctx, it, failure_text (x, rc), err);
    }
  cleanup_free char *what = xasprintf ("blob %s of `%s/%s`", it->f->digest, r->display, ctx->repository);
  return reg_status_error (r, ctx->repository, what, &x->resp, it->creds_sent, err);
}

/* Milliseconds until the earliest pending item may start (capped at CAP). */
static long
next_wakeup_ms (struct fetch_ctx *ctx, long cap, bool include_busy)
{
  double now = ohbox_monotonic ();
  long best = cap;
  for (size_t i = 0; i < ctx->n; i++)
    {
      struct fetch_item *it = &ctx->items[i];
      if (it->state != ITEM_PENDING || (it->busy && !include_busy))
        continue;
      double d = (it->not_before - now) * 1000.0;
      long ms = d <= 0 ? 0 : (long) d + 1;
      if (ms < best)
        best = ms;
    }
  return best;
}

/* Starts every pending item whose time has come, within max_parallel. */
static int
start_ready (struct fetch_ctx *ctx, ohbox_error_t *err)
{
  for (size_t i = 0; i < ctx->n && ctx->active < ctx->r->max_parallel; i++)
    {
      struct fetch_item *it = &ctx->items[i];
      if (it->state != ITEM_PENDING || it->not_before > ohbox_monotonic ())
        continue;
      if (it->w == NULL && acquire (ctx, it, false, err) < 0)
        return -1;
      if (it->state == ITEM_PENDING && it->w != NULL && start_transfer (ctx, it, err) < 0)
        return -1;
    }
  return 0;
}

/* Nothing is running: wait for the next retry time or, when only blobs
 * held by other processes are left, for one of them. */
static int
idle_wait (struct fetch_ctx *ctx, ohbox_error_t *err)
{
  struct fetch_item *busy = NULL;
  bool other_pending = false;
  for (size_t i = 0; i < ctx->n; i++)
    {
      struct fetch_item *it = &ctx->items[i];
      if (it->state != ITEM_PENDING)
        continue;
      if (it->busy && busy == NULL)
        busy = it;
      else if (!it->busy)
        other_pending = true;
    }
  if (busy != NULL && !other_pending)
    return acquire (ctx, busy, true, err);
  long ms = next_wakeup_ms (ctx, 1000, true);
  if (ms > 0)
    reg_sleep_ms ((unsigned) ms);
  return 0;
}

static bool
all_done (struct fetch_ctx *ctx)
{
  for (size_t i = 0; i < ctx->n; i++)
    if (ctx->items[i].state != ITEM_DONE)
      return false;
  return true;
}

static int
run (struct fetch_ctx *ctx, ohbox_error_t *err)
{
  for (;;)
    {
      if (start_ready (ctx, err) < 0)
        return -1;
      if (all_done (ctx))
        return 0;
      /* Transfers end by themselves at the deadline (CURLOPT_TIMEOUT_MS);
       * this catches the waits between them. */
      if (ctx->active == 0 && reg_deadline_passed (ctx->r, 0))
        return reg_deadline_error (ctx->r, "blobs were still waiting to be downloaded", err);
      if (ctx->active == 0)
        {
          if (idle_wait (ctx, err) < 0)
            return -1;
          continue;
        }
      int running = 0;
      CURLMcode mc = curl_multi_perform (ctx->multi, &running);
      if (mc != CURLM_OK)
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "libcurl: %s", curl_multi_strerror (mc));
      CURLMsg *msg;
      int queued;
      while ((msg = curl_multi_info_read (ctx->multi, &queued)) != NULL)
        {
          if (msg->msg != CURLMSG_DONE)
            continue;
          struct reg_xfer *x = NULL;
          curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, (char **) &x);
          if (transfer_done (ctx, x->userdata, msg->data.result, err) < 0)
            return -1;
        }
      if (ctx->active > 0)
        {
          mc = curl_multi_poll (ctx->multi, NULL, 0, (int) next_wakeup_ms (ctx, 1000, true), NULL);
          if (mc != CURLM_OK)
            return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "libcurl: %s", curl_multi_strerror (mc));
        }
    }
}

int
ohbox_registry_fetch_blobs (struct ohbox_registry *r, struct ohbox_store *store, const char *repository,
                            struct ohbox_blob_fetch *fetches, size_t n, const struct ohbox_fetch_callbacks *cb,
                            ohbox_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    {
      if (ohbox_digest_validate (fetches[i].digest, err) < 0)
        return -1;
      fetches[i].downloaded = false;
      fetches[i].bytes_transferred = 0;
    }
  if (n == 0)
    return 0;
  if (reg_prepare_repository (r, repository, err) < 0)
    return -1;

  struct fetch_ctx ctx = { .r = r, .store = store, .repository = repository, .cb = cb, .n = n };
  ctx.items = xcalloc (n, sizeof *ctx.items);
  for (size_t i = 0; i < n; i++)
    {
      ctx.items[i].idx = i;
      ctx.items[i].f = &fetches[i];
      ctx.items[i].ctx = &ctx;
    }
  ctx.multi = curl_multi_init ();
  if (ctx.multi == NULL)
    abort ();

  int ret = run (&ctx, err);

  for (size_t i = 0; i < n; i++)
    {
      struct fetch_item *it = &ctx.items[i];
      if (it->state == ITEM_ACTIVE)
        curl_multi_remove_handle (ctx.multi, it->easy);
      /* Keep what was downloaded for the next pull, unless it is known bad. */
      if (it->w)
        ohbox_blob_writer_abort (it->w, !(it == ctx.failed && err && *err && (*err)->kind == OHBOX_ERR_INTEGRITY));
      if (it->x_live)
        reg_xfer_clear (&it->x);
      if (it->easy)
        curl_easy_cleanup (it->easy);
    }
  curl_multi_cleanup (ctx.multi);
  free (ctx.items);
  return ret;
}
