/* pull.c: see pull.h. The order of work:
 *   reference -> sources (registries.conf) -> manifest (index -> platform)
 *   -> config -> blobs (parallel) -> image record -> names.
 * A layer is queued for unpacking as soon as the first bytes of its blob
 * arrive: a worker unpacks it from the growing download (its "feed", see
 * feed_wait) and the layer is renamed into place only once the blob is
 * complete and verified and the DiffID matches (store_layers.c). A blob
 * already in the store is queued as it is. Nothing is named before every
 * blob and layer it needs is complete, so an interrupted pull leaves no
 * image that looks complete. */
#include "config.h"
#include "image/pull.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "oci/image_spec.h"
#include "registry/reference.h"
#include "common/utils.h"

/* Where a layer's blob is, for its unpack (under pull_ctx.q_lock). */
enum feed_state
{
  FEED_RUNNING,   /* being downloaded by this pull */
  FEED_COMMITTED, /* complete and verified in the store */
  FEED_FAILED,    /* the download ended without it */
};

struct layer_job
{
  const char *digest;
  const char *diff_id;
  int64_t size;
  bool queued;
  bool picked; /* a worker has taken it */
  enum feed_state feed;
  uint64_t written; /* bytes of the blob written so far */
  uint64_t seq;     /* bumped by every write */
  uint64_t wake_at; /* a waiting unpack wants WRITTEN >= this; 0: nobody waits */
};

struct pull_ctx
{
  struct ohbox_store *store;
  const struct ohbox_pull_options *opts;
  const struct ohbox_pull_events *ev;
  pthread_mutex_t ev_lock;

  /* Unpack queue, fed by the download loop, drained by worker threads;
   * the jobs' feeds are under the same lock. */
  pthread_mutex_t q_lock;
  pthread_cond_t q_cond;
  pthread_cond_t feed_cond;
  size_t *queue;
  size_t q_head, q_tail;
  bool q_closed;
  struct layer_job *jobs;
  size_t n_jobs;
  ohbox_error_t unpack_err;          /* first unpack failure */
  struct ohbox_unpack_budget budget; /* the layers this pull unpacks, together */
};

static void
emit_state (struct pull_ctx *c, size_t idx, enum ohbox_layer_state st)
{
  if (c->ev == NULL || c->ev->layer_state == NULL)
    return;
  pthread_mutex_lock (&c->ev_lock);
  c->ev->layer_state (c->ev->userdata, idx, c->jobs[idx].digest, (uint64_t) c->jobs[idx].size, st);
  pthread_mutex_unlock (&c->ev_lock);
}

static void
emit_notice (struct pull_ctx *c, const char *fmt, ...)
{
  if (c->ev == NULL || c->ev->notice == NULL)
    return;
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = xvasprintf (fmt, ap);
  va_end (ap);
  pthread_mutex_lock (&c->ev_lock);
  c->ev->notice (c->ev->userdata, msg);
  pthread_mutex_unlock (&c->ev_lock);
}

/* ------------------------------------------------------------ unpacking */

/* A waiting unpack is woken when this much more of its blob is written (or
 * the rest of it, or the download ends): reads worth making, not one
 * wake-up per network packet. */
#define FEED_CHUNK (256 * 1024)

static void
queue_layer_locked (struct pull_ctx *c, size_t idx)
{
  if (!c->jobs[idx].queued)
    {
      c->jobs[idx].queued = true;
      c->queue[c->q_tail++] = idx;
      pthread_cond_signal (&c->q_cond);
    }
}

static void
queue_layer (struct pull_ctx *c, size_t idx)
{
  pthread_mutex_lock (&c->q_lock);
  queue_layer_locked (c, idx);
  pthread_mutex_unlock (&c->q_lock);
}

/* The unpack of one job, reading its blob while it downloads. */
struct feed_reader
{
  struct pull_ctx *c;
  size_t idx;
  uint64_t seen; /* the job's seq when this reader was last told "more" */
};

/* ohbox_layer_options.wait_more for a job's blob (see layer.h): the unpack
 * has read OFFSET bytes of the download and found its end. */
static int
feed_wait (void *userdata, uint64_t offset, ohbox_error_t *err)
{
  struct feed_reader *fr = userdata;
  struct pull_ctx *c = fr->c;
  struct layer_job *j = &c->jobs[fr->idx];
  /* A chunk more, or the rest of the blob; beyond its size, only the end
   * of the download (OFFSET UINT64_MAX waits for that alone). */
  uint64_t want = offset > UINT64_MAX - FEED_CHUNK ? UINT64_MAX : offset + FEED_CHUNK;
  if (j->size > 0 && want > (uint64_t) j->size)
    want = offset < (uint64_t) j->size ? (uint64_t) j->size : UINT64_MAX;
  int r;
  pthread_mutex_lock (&c->q_lock);
  for (;;)
    {
      if (j->feed == FEED_COMMITTED)
        {
          r = 0;
          break;
        }
      if (j->feed == FEED_FAILED)
        {
          r = ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "blob %s: the download did not complete", j->digest);
          break;
        }
      /* A new write since the last "more": without it a reader whose file
       * was replaced (a download restarted from zero) would spin. */
      if (j->seq != fr->seen && j->written >= want)
        {
          fr->seen = j->seq;
          r = 1;
          break;
        }
      j->wake_at = want;
      pthread_cond_wait (&c->feed_cond, &c->q_lock);
    }
  j->wake_at = 0;
  pthread_mutex_unlock (&c->q_lock);
  return r;
}

/* DONE bytes of job IDX's blob are written (fewer than before when the
 * download started over): wake its unpack, or queue it on the first bytes. */
static void
feed_written (struct pull_ctx *c, size_t idx, uint64_t done)
{
  struct layer_job *j = &c->jobs[idx];
  pthread_mutex_lock (&c->q_lock);
  j->written = done;
  j->seq++;
  if (j->wake_at != 0 && done >= j->wake_at)
    pthread_cond_broadcast (&c->feed_cond);
  queue_layer_locked (c, idx);
  pthread_mutex_unlock (&c->q_lock);
}

/* Job IDX's blob is in the store. A worker unpacking it already (from the
 * download) now only unpacks: say so, in the order DOWNLOADED, UNPACKING,
 * DONE that a blob present from the start also follows. */
static void
feed_committed (struct pull_ctx *c, size_t idx)
{
  struct layer_job *j = &c->jobs[idx];
  pthread_mutex_lock (&c->q_lock);
  if (j->picked)
    emit_state (c, idx, OHBOX_LAYER_UNPACKING);
  j->feed = FEED_COMMITTED;
  pthread_cond_broadcast (&c->feed_cond);
  queue_layer_locked (c, idx);
  pthread_mutex_unlock (&c->q_lock);
}

static void *
unpack_worker (void *arg)
{
  struct pull_ctx *c = arg;
  for (;;)
    {
      pthread_mutex_lock (&c->q_lock);
      while (c->q_head == c->q_tail && !c->q_closed)
        pthread_cond_wait (&c->q_cond, &c->q_lock);
      if (c->q_head == c->q_tail || c->unpack_err != NULL)
        {
          pthread_mutex_unlock (&c->q_lock);
          return NULL;
        }
      size_t idx = c->queue[c->q_head++];
      struct layer_job *j = &c->jobs[idx];
      j->picked = true;
      bool downloading = j->feed == FEED_RUNNING;
      pthread_mutex_unlock (&c->q_lock);

      /* While it downloads, the layer is still "downloading" for the
       * events; feed_committed () announces the unpacking. */
      if (!downloading)
        emit_state (c, idx, OHBOX_LAYER_UNPACKING);
      struct feed_reader fr = { .c = c, .idx = idx };
      struct ohbox_layer_options lo = {
        .max_uncompressed = c->opts->max_layer_size ? c->opts->max_layer_size : OHBOX_LAYER_DEFAULT_MAX_SIZE,
        .wait_more = feed_wait,
        .userdata = &fr,
        .budget = &c->budget,
      };
      struct ohbox_layer_stats stats = { 0 };
      ohbox_error_t e = NULL;
      if (ohbox_store_unpack_layer (c->store, j->digest, j->diff_id, &lo, &stats, &e) < 0)
        {
          pthread_mutex_lock (&c->q_lock);
          if (c->unpack_err == NULL)
            c->unpack_err = e;
          else
            ohbox_error_release (&e);
          /* Stop the other workers early: the pull has failed. */
          c->q_closed = true;
          pthread_cond_broadcast (&c->q_cond);
          pthread_mutex_unlock (&c->q_lock);
          return NULL;
        }
      emit_state (c, idx, OHBOX_LAYER_DONE);
    }
}

/* ------------------------------------------------------------ callbacks */

/* The registry reports by position in the fetch list; MAP turns that into
 * the layer's position in the manifest. */
struct fetch_cb_ctx
{
  struct pull_ctx *c;
  const size_t *map;
  const struct ohbox_blob_fetch *fetches;
};

static void
on_fetch_progress (void *ud, size_t fetch_idx, uint64_t done, uint64_t total)
{
  struct fetch_cb_ctx *f = ud;
  struct pull_ctx *c = f->c;
  feed_written (c, f->map[fetch_idx], done);
  if (c->ev == NULL || c->ev->layer_progress == NULL)
    return;
  pthread_mutex_lock (&c->ev_lock);
  c->ev->layer_progress (c->ev->userdata, f->map[fetch_idx], done, total);
  pthread_mutex_unlock (&c->ev_lock);
}

static void
on_fetch_complete (void *ud, size_t fetch_idx)
{
  struct fetch_cb_ctx *f = ud;
  /* Another process may have downloaded it while this one waited. */
  emit_state (f->c, f->map[fetch_idx], f->fetches[fetch_idx].downloaded ? OHBOX_LAYER_DOWNLOADED : OHBOX_LAYER_PRESENT);
  feed_committed (f->c, f->map[fetch_idx]);
}

/* ------------------------------------------------------------ sources */

struct pull_source
{
  char *host;       /* endpoint "host[:port]" to contact */
  char *repository; /* repository on that endpoint */
  char *name;       /* normalised "registry/repository" as stored */
  bool insecure;
};

static void
sources_free (struct pull_source *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (s[i].host);
      free (s[i].repository);
      free (s[i].name);
    }
  free (s);
}

static void
add_source (struct pull_source **v, size_t *n, const char *location, const char *name, bool insecure)
{
  const char *slash = strchr (location, '/');
  *v = xrealloc (*v, (*n + 1) * sizeof **v);
  struct pull_source *s = &(*v)[(*n)++];
  cleanup_free char *host = slash ? xstrndup (location, (size_t) (slash - location)) : xstrdup (location);
  s->host = xstrdup (ohbox_registry_endpoint_host (host));
  s->repository = xstrdup (slash ? slash + 1 : "");
  s->name = xstrdup (name);
  s->insecure = insecure;
}

/* Registries to try for REF: the reference's own, or, for a short name
 * (no registry written) with unqualified-search-registries configured, each
 * of those in order; then for each, the mirrors and location that
 * registries.conf gives. */
static int
build_sources (const struct ohbox_reference *ref, const char *input, const struct ohbox_pull_options *o,
               struct pull_source **out, size_t *n_out, ohbox_error_t *err)
{
  const struct ohbox_registries_conf *conf = o->conf;
  struct pull_source *v = NULL;
  size_t n = 0;
  char **search = NULL;
  char *own[] = { ref->registry, NULL };
  if (!ref->registry_explicit && conf && conf->unqualified_search && conf->unqualified_search[0])
    search = conf->unqualified_search;
  else
    search = own;
  /* "busybox" becomes library/busybox on docker.io only. */
  bool short_single = !ref->registry_explicit && strchr (input, '/') == NULL;
  for (char **reg = search; *reg; reg++)
    {
      const char *repo = ref->repository;
      if (short_single && strcmp (*reg, "docker.io") != 0 && strncmp (repo, "library/", 8) == 0)
        repo += 8;
      cleanup_free char *name = xasprintf ("%s/%s", *reg, repo);
      struct ohbox_registry_endpoint *eps = NULL;
      size_t n_eps = 0;
      if (conf)
        {
          if (ohbox_registries_conf_pull_sources_ex (conf, name, ref->digest != NULL, &eps, &n_eps, err) < 0)
            {
              sources_free (v, n);
              return -1;
            }
        }
      for (size_t i = 0; i < n_eps; i++)
        add_source (&v, &n, eps[i].location, name, eps[i].insecure || o->registry.insecure);
      if (n_eps == 0)
        add_source (&v, &n, name, name, o->registry.insecure);
      ohbox_registry_endpoints_free (eps, n_eps);
    }
  *out = v;
  *n_out = n;
  return 0;
}

/* ------------------------------------------------------------ manifests */

struct fetched_manifest
{
  char *body;
  size_t len;
  char *content_type;
  char digest[OHBOX_DIGEST_LEN + 1];
};

static void
fetched_clear (struct fetched_manifest *m)
{
  free (m->body);
  free (m->content_type);
  memset (m, 0, sizeof *m);
}

static int
get_manifest (struct ohbox_registry *r, const char *repo, const char *ref, struct fetched_manifest *m,
              ohbox_error_t *err)
{
  fetched_clear (m);
  return ohbox_registry_get_manifest (r, repo, ref, &m->body, &m->len, &m->content_type, m->digest, err);
}

/* Finds the platform manifest; stores the index when there is one. */
static int
resolve_manifest (struct pull_ctx *c, struct ohbox_registry *r, const char *repo, struct fetched_manifest *m,
                  struct oci_platform *want, char **index_digest, ohbox_error_t *err)
{
  enum oci_document_kind kind;
  if (oci_document_kind (m->content_type, m->body, m->len, &kind, err) < 0)
    return -1;
  if (kind == OCI_DOC_MANIFEST)
    return 0;
  struct oci_index *idx = NULL;
  if (oci_index_parse (m->body, m->len, &idx, err) < 0)
    return ohbox_error_prefix (err, "image index %s", m->digest);
  int pos = oci_index_select_platform (idx, want, err);
  if (pos < 0)
    {
      oci_index_free (idx);
      return -1;
    }
  if (ohbox_store_put_blob (c->store, m->digest, m->body, m->len, NULL, err) < 0)
    {
      oci_index_free (idx);
      return -1;
    }
  *index_digest = xstrdup (m->digest);
  cleanup_free char *child = xstrdup (idx->manifests[pos].digest);
  oci_index_free (idx);
  if (get_manifest (r, repo, child, m, err) < 0)
    return -1;
  if (oci_document_kind (m->content_type, m->body, m->len, &kind, err) < 0)
    return -1;
  if (kind != OCI_DOC_MANIFEST)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "index entry %s is itself an index; nested indexes are not supported", child);
  return 0;
}

static int
load_config (struct pull_ctx *c, struct ohbox_registry *r, const char *repo, const struct oci_manifest *man,
             struct oci_image_config **cfg, ohbox_error_t *err)
{
  cleanup_free char *body = NULL;
  size_t len = 0;
  const char *digest = man->config.digest;
  if (man->config.size > OCI_MAX_CONFIG_SIZE)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "config %s: %lld bytes is over the limit of %d", digest,
                        (long long) man->config.size, OCI_MAX_CONFIG_SIZE);
  /* Under the blob's lock, like layers: concurrent pulls fetch it once. */
  struct ohbox_blob_writer *w = NULL;
  if (ohbox_store_blob_begin (c->store, digest, man->config.size, true, &w, err) < 0)
    return -1;
  if (w)
    {
      if (ohbox_registry_get_blob (r, repo, digest, OCI_MAX_CONFIG_SIZE, &body, &len, err) < 0
          || ohbox_blob_writer_reset (w, err) < 0 || ohbox_blob_writer_write (w, body, len, err) < 0)
        {
          ohbox_blob_writer_abort (w, false);
          return ohbox_error_prefix (err, "config");
        }
      if (ohbox_blob_writer_commit (w, err) < 0)
        return ohbox_error_prefix (err, "config");
    }
  else if (ohbox_store_read_blob (c->store, digest, OCI_MAX_CONFIG_SIZE, &body, &len, err) < 0)
    return -1;
  if (oci_image_config_parse (body, len, cfg, err) < 0)
    return ohbox_error_prefix (err, "config %s", digest);
  if ((*cfg)->n_diff_ids != man->n_layers)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                        "config %s lists %zu layer diff ids but the manifest has %zu layers", digest,
                        (*cfg)->n_diff_ids, man->n_layers);
  return 0;
}

/* Downloads and unpacks every layer; unpacking overlaps the downloads. */
static int
fetch_and_unpack (struct pull_ctx *c, struct ohbox_registry *r, const char *repo, const struct oci_manifest *man,
                  const struct oci_image_config *cfg, struct ohbox_pull_result *res, ohbox_error_t *err)
{
  size_t n = man->n_layers;
  c->jobs = xcalloc (n, sizeof *c->jobs);
  c->queue = xcalloc (n, sizeof *c->queue);
  c->n_jobs = n;
  struct ohbox_blob_fetch *fetches = xcalloc (n, sizeof *fetches);
  size_t *fetch_to_job = xcalloc (n, sizeof *fetch_to_job);
  size_t n_fetch = 0;
  for (size_t i = 0; i < n; i++)
    {
      c->jobs[i] = (struct layer_job){ .digest = man->layers[i].digest,
                                       .diff_id = cfg->diff_ids[i],
                                       .size = man->layers[i].size,
                                       .feed = FEED_COMMITTED };
      enum oci_layer_compression comp;
      if (oci_layer_compression (man->layers[i].media_type, &comp, err) < 0)
        goto fail_early;
    }

  /* Before any download: the blobs must fit, with the store's margin
   * (the unpacked layers are checked as they are written). */
  uint64_t to_download = 0;
  for (size_t i = 0; i < n; i++)
    if (!ohbox_store_has_blob (c->store, c->jobs[i].digest) && c->jobs[i].size > 0)
      to_download += (uint64_t) c->jobs[i].size;
  if (ohbox_store_check_space (c->store, to_download, "the image's blobs to download", err) < 0)
    goto fail_early;
  ohbox_store_budget_init (c->store,
                           c->opts->max_image_size ? c->opts->max_image_size : OHBOX_PULL_DEFAULT_MAX_IMAGE_SIZE,
                           &c->budget);

  unsigned n_workers = n < 2 ? 1 : 2;
  long cpus = sysconf (_SC_NPROCESSORS_ONLN);
  if (cpus > 2 && n > 2)
    n_workers = (unsigned) (cpus < (long) n ? cpus : (long) n);
  pthread_t workers[64];
  if (n_workers > 64)
    n_workers = 64;
  for (unsigned w = 0; w < n_workers; w++)
    if (pthread_create (&workers[w], NULL, unpack_worker, c) != 0)
      abort ();

  for (size_t i = 0; i < n; i++)
    {
      bool have_blob = ohbox_store_has_blob (c->store, c->jobs[i].digest);
      if (have_blob && ohbox_store_has_layer (c->store, c->jobs[i].diff_id))
        {
          emit_state (c, i, OHBOX_LAYER_PRESENT);
          res->blobs_reused++;
          continue;
        }
      if (have_blob)
        {
          res->blobs_reused++;
          queue_layer (c, i);
          continue;
        }
      emit_state (c, i, OHBOX_LAYER_WAITING);
      c->jobs[i].feed = FEED_RUNNING;
      fetches[n_fetch] = (struct ohbox_blob_fetch){ .digest = c->jobs[i].digest, .size = c->jobs[i].size };
      fetch_to_job[n_fetch++] = i;
    }

  int ret = 0;
  if (n_fetch > 0)
    {
      struct fetch_cb_ctx fctx = { .c = c, .map = fetch_to_job, .fetches = fetches };
      struct ohbox_fetch_callbacks cb = {
        .progress = on_fetch_progress,
        .complete = on_fetch_complete,
        .userdata = &fctx,
      };
      ret = ohbox_registry_fetch_blobs (r, c->store, repo, fetches, n_fetch, &cb, err);
      for (size_t f = 0; f < n_fetch; f++)
        if (fetches[f].downloaded)
          {
            res->blobs_downloaded++;
            res->bytes_downloaded += fetches[f].bytes_transferred;
          }
        else
          res->blobs_reused++;
    }

  /* Downloads that did not complete never will: unpacks waiting for them
   * give up (and their temporary layers are removed). */
  pthread_mutex_lock (&c->q_lock);
  for (size_t i = 0; i < n; i++)
    if (c->jobs[i].feed == FEED_RUNNING)
      c->jobs[i].feed = FEED_FAILED;
  pthread_cond_broadcast (&c->feed_cond);
  c->q_closed = true;
  pthread_cond_broadcast (&c->q_cond);
  pthread_mutex_unlock (&c->q_lock);
  for (unsigned w = 0; w < n_workers; w++)
    pthread_join (workers[w], NULL);
  free (fetches);
  free (fetch_to_job);
  if (ret < 0)
    return -1;
  if (c->unpack_err)
    {
      ohbox_error_move (err, &c->unpack_err);
      return -1;
    }
  for (size_t i = 0; i < n; i++)
    if (!ohbox_store_has_layer (c->store, c->jobs[i].diff_id))
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "layer %s was not unpacked", c->jobs[i].digest);
  return 0;

fail_early:
  free (fetches);
  free (fetch_to_job);
  return -1;
}

/* ------------------------------------------------------------ pull */

/* Pulls from one source. */
static int
pull_from (struct pull_ctx *c, struct ohbox_registry *r, const struct pull_source *src,
           const struct ohbox_reference *ref, struct oci_platform *want, bool platform_explicit,
           struct ohbox_pull_result *res, ohbox_error_t *err)
{
  const char *what = ref->digest ? ref->digest : ref->tag;
  struct fetched_manifest m = { 0 };
  cleanup_free char *index_digest = NULL;
  struct oci_manifest *man = NULL;
  struct oci_image_config *cfg = NULL;
  int ret = -1;

  if (get_manifest (r, src->repository, what, &m, err) < 0)
    goto out;
  if (resolve_manifest (c, r, src->repository, &m, want, &index_digest, err) < 0)
    {
      if ((*err)->kind == OHBOX_ERR_UNSUPPORTED || (*err)->kind == OHBOX_ERR_INTEGRITY)
        ohbox_error_prefix (err, "%s/%s:%s", src->host, src->repository, what);
      goto out;
    }
  if (oci_manifest_parse (m.body, m.len, &man, err) < 0)
    {
      ohbox_error_prefix (err, "manifest %s", m.digest);
      goto out;
    }
  if (load_config (c, r, src->repository, man, &cfg, err) < 0)
    goto out;
  if (platform_explicit && index_digest == NULL && !oci_platform_matches (&cfg->platform, want))
    {
      cleanup_free char *have = oci_platform_string (&cfg->platform);
      cleanup_free char *wanted = oci_platform_string (want);
      ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "%s is a single-platform image for %s, not %s", src->name, have,
                   wanted);
      goto out;
    }
  if (c->ev && c->ev->resolved)
    {
      cleanup_free char *plat = oci_platform_string (&cfg->platform);
      uint64_t total = 0;
      for (size_t i = 0; i < man->n_layers; i++)
        total += (uint64_t) man->layers[i].size;
      c->ev->resolved (c->ev->userdata, src->name, m.digest, plat, man->n_layers, total);
    }
  if (fetch_and_unpack (c, r, src->repository, man, cfg, res, err) < 0)
    goto out;
  if (ref->digest)
    res->name = xasprintf ("%s@%s", src->name, ref->digest);
  else
    res->name = xasprintf ("%s:%s", src->name, ref->tag);
  /* Marked before it is named: a CI job never finds it by name unmarked. */
  res->used_credentials = ohbox_registry_used_credentials (r);
  if (res->used_credentials && ohbox_store_mark_needs_credentials (c->store, m.digest, err) < 0)
    goto out;
  /* Everything the record names is in the store: now the manifest, the
   * record and the name. */
  if (ohbox_image_commit (c->store, res->name, m.digest, m.body, m.len, man, cfg, index_digest, err) < 0)
    goto out;
  res->id = xstrdup (m.digest);
  res->index_digest = steal_pointer (&index_digest);
  res->platform = oci_platform_string (&cfg->platform);
  res->layers = man->n_layers;
  ret = 0;
out:
  oci_manifest_free (man);
  oci_image_config_free (cfg);
  fetched_clear (&m);
  return ret;
}

/* Errors worth trying the next source for: the image is not there, or the
 * source is unreachable. Integrity and local errors stop the pull. */
static bool
try_next_source (const ohbox_error_t e)
{
  return e->kind == OHBOX_ERR_NOT_FOUND || e->kind == OHBOX_ERR_REGISTRY || e->kind == OHBOX_ERR_AUTH;
}

int
ohbox_pull (struct ohbox_store *store, const char *image, const struct ohbox_pull_options *opts,
            struct ohbox_pull_result *res, ohbox_error_t *err)
{
  memset (res, 0, sizeof *res);
  cleanup_reference struct ohbox_reference *ref = NULL;
  if (ohbox_reference_parse (image, &ref, err) < 0)
    return -1;
  struct oci_platform want = { 0 };
  if (opts->platform)
    {
      if (oci_platform_parse (opts->platform, &want, err) < 0)
        return -1;
    }
  else
    oci_platform_host (&want);

  struct pull_source *sources = NULL;
  size_t n_sources = 0;
  if (build_sources (ref, image, opts, &sources, &n_sources, err) < 0)
    {
      oci_platform_clear (&want);
      return -1;
    }

  int ret = -1;
  ohbox_error_t last = NULL;
  /* When every source fails, the error says what each one answered. */
  struct ohbox_buf tried = { 0 };
  /* One deadline for every request of every source. */
  double timeout = opts->timeout_s ? opts->timeout_s : OHBOX_PULL_DEFAULT_TIMEOUT_S;
  double deadline = timeout > 0 ? ohbox_monotonic () + timeout : 0;
  for (size_t i = 0; i < n_sources; i++)
    {
      struct pull_ctx c = {
        .store = store,
        .opts = opts,
        .ev = opts->events,
        .ev_lock = PTHREAD_MUTEX_INITIALIZER,
        .q_lock = PTHREAD_MUTEX_INITIALIZER,
        .q_cond = PTHREAD_COND_INITIALIZER,
        .feed_cond = PTHREAD_COND_INITIALIZER,
      };
      struct ohbox_registry_options ro = opts->registry;
      ro.insecure = sources[i].insecure;
      ro.deadline = deadline;
      ro.timeout_s = timeout;
      struct ohbox_registry *r = NULL;
      ohbox_error_t e = NULL;
      if (ohbox_registry_new (sources[i].host, &ro, &r, &e) == 0)
        {
          ret = pull_from (&c, r, &sources[i], ref, &want, opts->platform != NULL, res, &e);
          ohbox_registry_free (r);
        }
      free (c.jobs);
      free (c.queue);
      ohbox_error_release (&c.unpack_err);
      if (ret == 0)
        break;
      ohbox_pull_result_clear (res);
      if (!try_next_source (e) || (deadline > 0 && ohbox_monotonic () >= deadline))
        {
          ohbox_error_release (&last);
          last = e;
          break;
        }
      cleanup_free char *line = xasprintf ("%s%s/%s: %s", tried.len ? "; " : "", sources[i].host, sources[i].repository,
                                           e->msg);
      ohbox_buf_append (&tried, line, strlen (line));
      if (i + 1 == n_sources)
        {
          ohbox_error_release (&last);
          last = e;
          if (n_sources > 1)
            {
              int kind = last->kind;
              ohbox_error_release (&last);
              ohbox_error (&last, kind, 0, "%s: no source has it (%zu tried: %s)", image, n_sources, tried.data);
            }
          break;
        }
      emit_notice (&(struct pull_ctx){ .ev = opts->events, .ev_lock = PTHREAD_MUTEX_INITIALIZER },
                   "%s/%s: %s; trying the next source", sources[i].host, sources[i].repository, e->msg);
      ohbox_error_release (&last);
      last = e;
    }
  if (ret < 0)
    ohbox_error_move (err, &last);
  else
    ohbox_error_release (&last); /* a later source served it */
  ohbox_buf_free (&tried);
  sources_free (sources, n_sources);
  oci_platform_clear (&want);
  return ret;
}

void
ohbox_pull_result_clear (struct ohbox_pull_result *r)
{
  free (r->name);
  free (r->id);
  free (r->index_digest);
  free (r->platform);
  memset (r, 0, sizeof *r);
}
