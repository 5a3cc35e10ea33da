/* pool.c: warm pools (`--pool IMAGE=N`).
 *
 * A pool keeps N sandboxes of a runtime image started with their executor
 * on standby (executor/adopt.c): the sandbox is up, its executor listens
 * and answers /alive, but it has no session: no user, no working
 * directory, no bash, and a pool key that only this server knows (it is in
 * the sandbox's executor record, as every sandbox's key is). A /start of
 * that image whose command is OpenHands' action execution server (or none)
 * takes a member: the server makes a new session key, sends the member's
 * executor the session (key, the server's arguments, environment, working
 * directory: POST /ohbox/adopt with the pool key), records the key and the
 * session in the sandbox's state while the executor works, and answers
 * once the executor took it; the filler starts a
 * replacement in the background once the takes pause (REFILL_QUIET after
 * the last one, REFILL_MAX after the first): a sandbox start is tens of
 * milliseconds of CPU, and started at once it would compete with the first
 * actions of the session that was just given out on a small machine; a
 * burst of takes is refilled in one round. Nobody but the server ever knew the pool
 * key, and the session key did not exist before the /start that took the
 * member.
 *
 * Members are the server's sandboxes labelled org.ohbox.serve.pool=IMAGE
 * without a session: a server started again finds them in the state, and
 * checks each is still on standby with its recorded key before it gives it
 * out, and that each given to a session has it (probe_members): an
 * adoption the server was killed in the middle of leaves one that is not
 * what its record says, which is stopped. */
#include "config.h"

#include <string.h>

#include "build/runtime_image.h"
#include "registry/reference.h"
#include "serve/serve_internal.h"
#include "store/store.h"

struct pool
{
  char *image; /* normalised name */
  unsigned size;
  /* USER:UID:DIR the last session taken from this pool asked for (V0's
   * default to begin with): new members start that session ahead
   * (OHBOX_EXECUTOR_STANDBY_SESSION, executor/adopt.c), which saves the
   * adoption a login shell's start. */
  char *expect;
  /* What IMAGE resolved to at the last take, with the store's names' stamp
   * taken before: a take that finds the same stamp needs no store. */
  char *image_id;
  struct ohbox_store_names_stamp image_id_stamp;
};

#define REFILL_QUIET 0.1 /* seconds */
#define REFILL_MAX 1.0

struct pools
{
  struct pool p[SERVE_MAX_POOLS];
  unsigned n;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool wake;
  double first_take, last_take; /* not refilled yet (serve_now; 0: none) */
  pthread_t filler;
  bool filler_started;
  uint64_t taken, started, failed;
};

static char *
normalise (const char *image)
{
  struct ohbox_reference *ref = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_reference_parse (image, &ref, &e) < 0)
    {
      ohbox_error_release (&e);
      return xstrdup (image);
    }
  char *s = ohbox_reference_string (ref);
  ohbox_reference_free (ref);
  return s;
}

/* The image id NAME resolves to now (NULL: not in the store). */
static char *
resolve (struct serve *srv, const char *name)
{
  struct ohbox_store *store;
  ohbox_error_t e = NULL;
  char *id = NULL;
  if (ohbox_store_open (srv->cfg->store_root, &store, &e) == 0)
    {
      if (ohbox_store_resolve (store, name, &id, &e) < 0)
        id = NULL;
      ohbox_store_close (store);
    }
  ohbox_error_release (&e);
  return id;
}

/* The same for pool P's image, from what the last take found while no
 * name changed (a take is on the path of a session's first request: the
 * store's locks and files cost it ~0.2 ms). */
static char *
resolve_pool_image (struct serve *srv, struct pool *p)
{
  struct pools *ps = srv->pools;
  struct ohbox_store_names_stamp now;
  bool stamped = ohbox_store_names_stamp (srv->cfg->store_root, &now);
  char *id = NULL;
  pthread_mutex_lock (&ps->lock);
  if (stamped && p->image_id && ohbox_store_names_stamp_equal (&now, &p->image_id_stamp))
    id = xstrdup (p->image_id);
  pthread_mutex_unlock (&ps->lock);
  if (id)
    return id;
  id = resolve (srv, p->image);
  if (id && stamped)
    {
      pthread_mutex_lock (&ps->lock);
      free (p->image_id);
      p->image_id = xstrdup (id);
      p->image_id_stamp = now;
      pthread_mutex_unlock (&ps->lock);
    }
  return id;
}

struct sbx *
pools_take (struct serve *srv, const char *image, const char *session)
{
  struct pools *ps = srv->pools;
  if (ps == NULL || ps->n == 0)
    return NULL;
  cleanup_free char *name = normalise (image);
  struct pool *pool = NULL;
  for (unsigned i = 0; i < ps->n && pool == NULL; i++)
    if (strcmp (ps->p[i].image, name) == 0)
      pool = &ps->p[i];
  if (pool == NULL)
    return NULL;
  /* A member of what the name means now: a tag moved by a build since the
   * member started is not what the client asked for. */
  cleanup_free char *id = resolve_pool_image (srv, pool);
  if (id == NULL)
    return NULL;
  struct sbx *copy = NULL;
  pthread_mutex_lock (&srv->reg.lock);
  for (unsigned b = 0; b < REG_BUCKETS && copy == NULL; b++)
    for (struct sbx *s = srv->reg.buckets[b]; s && copy == NULL; s = s->next)
      if (s->pool && s->session_id == NULL && s->state == SBX_READY && !s->probe && s->upstream
          && strcmp (s->pool, name) == 0 && strcmp (s->image_id ?: "", id) == 0)
        {
          s->session_id = xstrdup (session);
          copy = xcalloc (1, sizeof *copy);
          memcpy (copy->id, s->id, sizeof copy->id);
          copy->upstream = xstrdup (s->upstream);
          copy->key = xstrdup (s->key);
        }
  pthread_mutex_unlock (&srv->reg.lock);
  if (copy)
    {
      pthread_mutex_lock (&ps->lock);
      ps->taken++;
      ps->last_take = serve_now ();
      if (ps->first_take == 0)
        ps->first_take = ps->last_take;
      pthread_mutex_unlock (&ps->lock);
    }
  return copy;
}

/* What the executor would take from these arguments (its defaults for
 * what they leave out; executor/main.c). */
static char *
expected_session (json_t *args)
{
  if (args == NULL || json_is_null (args))
    return xstrdup ("root:0:/workspace"); /* a runtime image's own command (runtime_image.h) */
  const char *user = "openhands", *uid = "1000", *dir = "/workspace";
  for (size_t i = 0; i + 1 < json_array_size (args); i++)
    {
      const char *a = json_string_value (json_array_get (args, i)),
                 *v = json_string_value (json_array_get (args, i + 1));
      if (strcmp (a, "--username") == 0)
        user = v;
      else if (strcmp (a, "--user-id") == 0)
        uid = v;
      else if (strcmp (a, "--working-dir") == 0)
        dir = v;
    }
  if (strchr (user, ':') || strspn (uid, "0123456789") != strlen (uid) || !*uid || dir[0] != '/')
    return NULL;
  return xasprintf ("%s:%s:%s", user, uid, dir);
}

void
pools_learn (struct serve *srv, const char *image, json_t *server_args)
{
  struct pools *ps = srv->pools;
  cleanup_free char *name = normalise (image);
  char *e = expected_session (server_args);
  if (e == NULL)
    return;
  pthread_mutex_lock (&ps->lock);
  for (unsigned i = 0; i < ps->n; i++)
    if (strcmp (ps->p[i].image, name) == 0)
      {
        free (ps->p[i].expect);
        ps->p[i].expect = e;
        e = NULL;
      }
  pthread_mutex_unlock (&ps->lock);
  free (e);
}

void
pools_wake (struct serve *srv)
{
  struct pools *ps = srv->pools;
  if (ps == NULL)
    return;
  pthread_mutex_lock (&ps->lock);
  ps->wake = true;
  pthread_cond_signal (&ps->cond);
  pthread_mutex_unlock (&ps->lock);
}

/* Members of pool P: ready ones, and all not given yet. */
static void
count_members (struct serve *srv, const char *image, unsigned *ready, unsigned *all)
{
  *ready = *all = 0;
  for (unsigned b = 0; b < REG_BUCKETS; b++)
    for (struct sbx *s = srv->reg.buckets[b]; s; s = s->next)
      if (s->pool && s->session_id == NULL && strcmp (s->pool, image) == 0 && s->state != SBX_FAILED)
        {
          (*all)++;
          if (s->state == SBX_READY && !s->probe)
            (*ready)++;
        }
}

/* Members found at startup, asked for an empty adoption with the recorded
 * key: one on standby answers 400 (refused for its body, after the key
 * passed); one given to a session, 409 once it has the session (with a
 * key that works: its adoption finished). Any other answer: stopped. */
static void
probe_members (struct serve *srv)
{
  for (;;)
    {
      char id[65] = "";
      bool given = false;
      cleanup_free char *upstream = NULL, *key = NULL;
      pthread_mutex_lock (&srv->reg.lock);
      for (unsigned b = 0; b < REG_BUCKETS && !id[0]; b++)
        for (struct sbx *s = srv->reg.buckets[b]; s && !id[0]; s = s->next)
          if (s->probe)
            {
              memcpy (id, s->id, sizeof id);
              upstream = s->upstream ? xstrdup (s->upstream) : NULL;
              key = s->key ? xstrdup (s->key) : NULL;
              given = s->session_id != NULL;
              s->probe = false;
            }
      pthread_mutex_unlock (&srv->reg.lock);
      if (!id[0])
        return;
      long status = 0;
      ohbox_error_t e = NULL;
      json_t *empty = json_object ();
      int r = upstream && key ? proxy_post_json (NULL, id, upstream, "/ohbox/adopt", key, empty, &status, NULL, &e)
                              : -1;
      json_decref (empty);
      ohbox_error_release (&e);
      if (r == 0 && status == (given ? 409 : 400))
        {
          pthread_mutex_lock (&srv->reg.lock);
          struct sbx *s = reg_find (&srv->reg, id);
          if (s && s->state == SBX_STARTING)
            s->state = SBX_READY;
          pthread_mutex_unlock (&srv->reg.lock);
        }
      else
        serve_drop_sandbox (srv, id);
    }
}

static bool
member_running (void *data)
{
  (void) data;
  return true;
}

/* Starts one member of IMAGE and waits until its executor answers. */
static int
start_member (struct serve *srv, struct pool *p)
{
  const char *image = p->image;
  pthread_mutex_lock (&srv->pools->lock);
  cleanup_free char *expect = xasprintf ("OHBOX_EXECUTOR_STANDBY_SESSION=%s", p->expect);
  pthread_mutex_unlock (&srv->pools->lock);
  const struct serve_config *c = srv->cfg;
  cleanup_free char *key = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_runtime_session_key (&key, &e) < 0)
    {
      ohbox_error_release (&e);
      return -1;
    }
  json_t *limits = json_object ();
  if (c->base_cpus > 0)
    json_object_set_new (limits, "cpus", json_sprintf ("%.3f", c->base_cpus));
  if (c->base_memory > 0)
    json_object_set_new (limits, "memory", json_sprintf ("%lld", (long long) c->base_memory));
  if (c->base_pids > 0)
    json_object_set_new (limits, "pids-limit", json_sprintf ("%lld", (long long) c->base_pids));
  json_t *publish = json_array ();
  for (unsigned i = 0; i < c->n_work_ports; i++)
    json_array_append_new (publish, json_sprintf ("127.0.0.1::%d/tcp", c->work_ports[i]));
  json_t *rq = json_pack ("{s:s, s:[s, s+], s:o, s:i, s:b, s:s, s:o, s:b, s:[s]}", "image", image, "labels",
                          SERVE_LABEL "=1", SERVE_LABEL_POOL "=", image, "limits", limits, "service_port",
                          c->sandbox_port, "standby", 1, "api_key", key, "publish", publish, "pull", c->pull_missing,
                          "env", expect);
  json_t *job = json_pack ("{s:s, s:o}", "type", "start", "request", rq);
  int fd = -1;
  json_t *res = NULL;
  int r = starter_job (srv->starter, job, &fd, &e);
  json_decref (job);
  if (r == 0)
    r = starter_result (fd, NULL, NULL, &res, &e);
  if (r < 0)
    {
      serve_log (srv, json_pack ("{s:s, s:s, s:s}", "event", "pool-start-failed", "image", image, "error", e->msg));
      ohbox_error_release (&e);
      return -1;
    }
  struct sbx *s = xcalloc (1, sizeof *s);
  snprintf (s->id, sizeof s->id, "%s", json_string_value (json_object_get (res, "id")) ?: "");
  s->pool = xstrdup (image);
  s->image = xstrdup (image);
  s->image_id = xstrdup (json_string_value (json_object_get (res, "image_id")) ?: "");
  s->upstream = serve_upstream (srv, s->id, json_string_value (json_object_get (res, "url")),
                                json_is_true (json_object_get (res, "socket")));
  s->key = xstrdup (key);
  s->created = ohbox_now_rfc3339 ();
  s->state = SBX_STARTING;
  s->last_activity = serve_now ();
  bool runtime = json_is_true (json_object_get (res, "runtime_image"));
  json_decref (res);
  char id[65];
  memcpy (id, s->id, sizeof id);
  cleanup_free char *upstream = s->upstream ? xstrdup (s->upstream) : NULL;
  pthread_mutex_lock (&srv->reg.lock);
  reg_insert (&srv->reg, s);
  pthread_mutex_unlock (&srv->reg.lock);
  if (!runtime || upstream == NULL
      || proxy_wait_ready (upstream, true, serve_now () + c->start_timeout, member_running, NULL, &e) < 0)
    {
      serve_log (srv, json_pack ("{s:s, s:s, s:s}", "event", "pool-start-failed", "image", image, "error",
                                 e ? e->msg : "not a runtime image (ohbox build)"));
      ohbox_error_release (&e);
      serve_drop_sandbox (srv, id);
      return -1;
    }
  reg_read_work_hosts (srv, id);
  pthread_mutex_lock (&srv->reg.lock);
  s = reg_find (&srv->reg, id);
  if (s && s->state == SBX_STARTING)
    s->state = SBX_READY;
  pthread_mutex_unlock (&srv->reg.lock);
  serve_log (srv, json_pack ("{s:s, s:s, s:s}", "event", "pool-member-ready", "runtime_id", id, "image", image));
  return 0;
}

/* Waits on the filler's condition for up to SECONDS (ps->lock held). */
static void
filler_wait (struct pools *ps, double seconds)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  long long ns = ts.tv_nsec + (long long) (seconds * 1e9);
  ts.tv_sec += ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  pthread_cond_timedwait (&ps->cond, &ps->lock, &ts);
}

/* Until the takes pause (see the top of the file), or the server quits. */
static void
wait_takes_pause (struct serve *srv)
{
  struct pools *ps = srv->pools;
  pthread_mutex_lock (&ps->lock);
  while (ps->first_take != 0 && !srv->quitting)
    {
      double now = serve_now ();
      double until = ps->last_take + REFILL_QUIET;
      if (until > ps->first_take + REFILL_MAX)
        until = ps->first_take + REFILL_MAX;
      if (now >= until)
        break;
      filler_wait (ps, until - now);
    }
  ps->first_take = ps->last_take = 0;
  pthread_mutex_unlock (&ps->lock);
}

/* One round: every pool up to its size, while --max-sandboxes allows. */
static void
fill_round (struct serve *srv)
{
  struct pools *ps = srv->pools;
  probe_members (srv);
  for (bool more = true; more && !srv->quitting;)
    {
      more = false;
      for (unsigned i = 0; i < ps->n && !srv->quitting; i++)
        {
          unsigned ready, all;
          pthread_mutex_lock (&srv->reg.lock);
          count_members (srv, ps->p[i].image, &ready, &all);
          bool room = srv->cfg->max_sandboxes == 0 || reg_active (&srv->reg) < srv->cfg->max_sandboxes;
          pthread_mutex_unlock (&srv->reg.lock);
          if (all >= ps->p[i].size || !room)
            continue;
          wait_takes_pause (srv);
          int r = start_member (srv, &ps->p[i]);
          pthread_mutex_lock (&ps->lock);
          if (r == 0)
            ps->started++;
          else
            ps->failed++;
          pthread_mutex_unlock (&ps->lock);
          /* A pool that cannot start waits for the next round (1 s). */
          more = more || r == 0;
        }
    }
}

static void *
filler_main (void *arg)
{
  struct serve *srv = arg;
  struct pools *ps = srv->pools;
  while (!srv->quitting)
    {
      fill_round (srv);
      pthread_mutex_lock (&ps->lock);
      if (!ps->wake && !srv->quitting)
        filler_wait (ps, 1);
      ps->wake = false;
      pthread_mutex_unlock (&ps->lock);
    }
  return NULL;
}

int
pools_init (struct serve *srv, ohbox_error_t *err)
{
  struct pools *ps = xcalloc (1, sizeof *ps);
  pthread_mutex_init (&ps->lock, NULL);
  pthread_cond_init (&ps->cond, NULL);
  for (unsigned i = 0; i < srv->cfg->n_pools; i++)
    {
      ps->p[ps->n].image = normalise (srv->cfg->pools[i].image);
      ps->p[ps->n].size = srv->cfg->pools[i].size;
      ps->p[ps->n].expect = xstrdup ("openhands:1000:/workspace");
      ps->n++;
    }
  srv->pools = ps;
  if (ps->n == 0)
    {
      /* No filler: what an earlier server's pools left is probed now. */
      probe_members (srv);
      return 0;
    }
  if (pthread_create (&ps->filler, NULL, filler_main, srv) != 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "start the pool filler thread");
  ps->filler_started = true;
  return 0;
}

void
pools_free (struct serve *srv, bool stop_members)
{
  struct pools *ps = srv->pools;
  if (ps == NULL)
    return;
  if (ps->filler_started)
    {
      pools_wake (srv);
      pthread_join (ps->filler, NULL);
    }
  /* A server stopped on purpose stops the members no session has: they
   * are nobody's. (Killed, it leaves them to the next server.) */
  if (stop_members)
    {
      pthread_mutex_lock (&srv->reg.lock);
      for (unsigned b = 0; b < REG_BUCKETS; b++)
        for (struct sbx *s = srv->reg.buckets[b]; s; s = s->next)
          if (s->pool && s->session_id == NULL)
            serve_stop_async (srv, s->id);
      pthread_mutex_unlock (&srv->reg.lock);
    }
  for (unsigned i = 0; i < ps->n; i++)
    {
      free (ps->p[i].image);
      free (ps->p[i].expect);
      free (ps->p[i].image_id);
    }
  pthread_mutex_destroy (&ps->lock);
  pthread_cond_destroy (&ps->cond);
  free (ps);
  srv->pools = NULL;
}

void
pools_text_metrics (struct serve *srv, struct ohbox_buf *b)
{
  struct pools *ps = srv->pools;
  if (ps == NULL || ps->n == 0)
    return;
  unsigned ready[SERVE_MAX_POOLS], all[SERVE_MAX_POOLS];
  pthread_mutex_lock (&srv->reg.lock);
  for (unsigned i = 0; i < ps->n; i++)
    count_members (srv, ps->p[i].image, &ready[i], &all[i]);
  pthread_mutex_unlock (&srv->reg.lock);
  static const char *const families[3][2] = {
    { "ohbox_serve_pool_ready", "Sandboxes of a warm pool ready to be taken." },
    { "ohbox_serve_pool_members", "Sandboxes of a warm pool not taken yet, ready or starting." },
    { "ohbox_serve_pool_target", "The size of a warm pool (--pool IMAGE=N)." },
  };
  for (int f = 0; f < 3; f++)
    {
      cleanup_free char *head = xasprintf ("# HELP %s %s\n# TYPE %s gauge\n", families[f][0], families[f][1],
                                           families[f][0]);
      ohbox_buf_append (b, head, strlen (head));
      for (unsigned i = 0; i < ps->n; i++)
        {
          unsigned v = f == 0 ? ready[i] : f == 1 ? all[i] : ps->p[i].size;
          cleanup_free char *l = xasprintf ("%s{image=\"%s\"} %u\n", families[f][0], ps->p[i].image, v);
          ohbox_buf_append (b, l, strlen (l));
        }
    }
  pthread_mutex_lock (&ps->lock);
  cleanup_free char *t = xasprintf ("# HELP ohbox_serve_pool_taken_total Sandboxes given to sessions from pools.\n"
                                    "# TYPE ohbox_serve_pool_taken_total counter\n"
                                    "ohbox_serve_pool_taken_total %llu\n"
                                    "# HELP ohbox_serve_pool_starts_total Pool members started, by result.\n"
                                    "# TYPE ohbox_serve_pool_starts_total counter\n"
                                    "ohbox_serve_pool_starts_total{result=\"ok\"} %llu\n"
                                    "ohbox_serve_pool_starts_total{result=\"failed\"} %llu\n",
                                    (unsigned long long) ps->taken, (unsigned long long) ps->started,
                                    (unsigned long long) ps->failed);
  pthread_mutex_unlock (&ps->lock);
  ohbox_buf_append (b, t, strlen (t));
}
