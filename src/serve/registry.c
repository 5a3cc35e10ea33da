/* registry.c: the server's sandboxes, a cache of their own state.
 *
 * Which sandboxes are the server's, and everything about them, is in the
 * sandboxes' state (sandbox.h) as the library keeps it: the label
 * org.ohbox.serve=1, the session (a label for cold starts, an annotation
 * for a pool member given to a session), the pool, the executor record
 * (the URL of its server and its session key), the published ports (work
 * hosts), paused or not, alive or not, and the annotations the server sets
 * (who paused it, a /stop not finished). The table here is a copy for the
 * request paths that must not read files (the proxy): filled at startup
 * (reg_load), changed by the server's own actions, and compared with the
 * state every second (reg_refresh) so that what happened without the
 * server (a sandbox that died, `ohbox pause` by hand) shows within that. */
#include "config.h"

#include <string.h>
#include <time.h>

#include "api/action.h"
#include "sandbox/sandbox.h"
#include "serve/serve_internal.h"

double
serve_now (void)
{
  return ohbox_monotonic ();
}

bool
serve_valid_runtime_id (const char *s)
{
  if (s == NULL || strlen (s) != 64)
    return false;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return false;
  return true;
}

static unsigned
bucket_of (const char *id)
{
  unsigned h = 0;
  for (int i = 0; i < 4 && id[i]; i++)
    h = h * 16 + (unsigned) (id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
  return h % REG_BUCKETS;
}

void
reg_init (struct registry *r)
{
  memset (r, 0, sizeof *r);
  pthread_mutex_init (&r->lock, NULL);
}

void
sbx_free (struct sbx *s)
{
  if (s == NULL)
    return;
  free (s->session_id);
  free (s->image);
  free (s->image_id);
  free (s->pool);
  free (s->upstream);
  free (s->key);
  json_decref (s->work_hosts);
  free (s->created);
  free (s);
}

void
reg_clear (struct registry *r)
{
  for (unsigned b = 0; b < REG_BUCKETS; b++)
    while (r->buckets[b])
      {
        struct sbx *s = r->buckets[b];
        r->buckets[b] = s->next;
        sbx_free (s);
      }
  r->count = 0;
  for (size_t i = 0; i < r->n_pending; i++)
    free (r->pending[i]);
  free (r->pending);
  pthread_mutex_destroy (&r->lock);
}

struct sbx *
reg_find (struct registry *r, const char *id)
{
  if (!serve_valid_runtime_id (id))
    return NULL;
  for (struct sbx *s = r->buckets[bucket_of (id)]; s; s = s->next)
    if (strcmp (s->id, id) == 0)
      return s;
  return NULL;
}

struct sbx *
reg_find_session (struct registry *r, const char *session_id)
{
  for (unsigned b = 0; b < REG_BUCKETS; b++)
    for (struct sbx *s = r->buckets[b]; s; s = s->next)
      if (s->session_id && strcmp (s->session_id, session_id) == 0)
        return s;
  return NULL;
}

void
reg_insert (struct registry *r, struct sbx *s)
{
  unsigned b = bucket_of (s->id);
  s->next = r->buckets[b];
  r->buckets[b] = s;
  r->count++;
}

void
reg_unlink (struct registry *r, struct sbx *s)
{
  for (struct sbx **p = &r->buckets[bucket_of (s->id)]; *p; p = &(*p)->next)
    if (*p == s)
      {
        *p = s->next;
        s->next = NULL;
        r->count--;
        return;
      }
}

bool
reg_claim_session (struct registry *r, const char *session_id)
{
  for (size_t i = 0; i < r->n_pending; i++)
    if (strcmp (r->pending[i], session_id) == 0)
      return false;
  r->pending = xrealloc (r->pending, (r->n_pending + 1) * sizeof (char *));
  r->pending[r->n_pending++] = xstrdup (session_id);
  return true;
}

void
reg_release_session (struct registry *r, const char *session_id)
{
  for (size_t i = 0; i < r->n_pending; i++)
    if (strcmp (r->pending[i], session_id) == 0)
      {
        free (r->pending[i]);
        r->pending[i] = r->pending[--r->n_pending];
        return;
      }
}

unsigned
reg_active (struct registry *r)
{
  unsigned n = r->starting;
  for (unsigned b = 0; b < REG_BUCKETS; b++)
    for (struct sbx *s = r->buckets[b]; s; s = s->next)
      if (s->state != SBX_FAILED)
        n++;
  return n;
}

/* A sandbox's "status" and "pod_status" by its state. V0 knows running,
 * paused and stopped: a failed session is "stopped" and starts anew
 * (RUNTIME-API.md, detail 8); pod_status says what happened. */
static const char *const status_names[][2] = {
  [SBX_STARTING] = { "starting", "pending" },
  [SBX_READY] = { "running", "ready" },
  [SBX_PAUSED] = { "paused", "paused" },
  [SBX_FAILED] = { "stopped", "failed" },
};

json_t *
reg_describe (struct serve *srv, const struct sbx *s)
{
  cleanup_free char *url = xasprintf ("%s/%s", srv->base_url, s->id);
  json_t *j = json_pack ("{s:s, s:s?, s:s, s:s, s:s, s:s?, s:o, s:s?, s:s?, s:i, s:[]}", "runtime_id", s->id,
                         "session_id", s->session_id, "status", status_names[s->state][0], "pod_status",
                         status_names[s->state][1], "url", url, "session_api_key", s->key, "work_hosts",
                         s->work_hosts ? json_incref (s->work_hosts) : json_object (), "image", s->image, "created_at",
                         s->created, "restart_count", 0, "restart_reasons");
  if (s->state == SBX_FAILED)
    json_object_set_new (j, "exit_code", json_integer (s->exit_code));
  if (s->state == SBX_PAUSED)
    json_object_set_new (j, "paused_by", json_string (s->paused_by == PAUSED_BY_IDLE ? "idle" : "api"));
  return j;
}

static const char *
str_member (json_t *obj, const char *key)
{
  return json_string_value (json_object_get (obj, key));
}

/* {"http://127.0.0.1:H": C} of the published work ports. */
static json_t *
work_hosts_of (struct serve *srv, json_t *ports)
{
  json_t *w = json_object ();
  size_t i;
  json_t *p;
  json_array_foreach (ports, i, p)
  {
    int ctr = (int) json_integer_value (json_object_get (p, "container_port"));
    for (unsigned k = 0; k < srv->cfg->n_work_ports; k++)
      if (ctr == srv->cfg->work_ports[k] && strcmp (str_member (p, "protocol") ?: "tcp", "tcp") == 0)
        {
          cleanup_free char *u = xasprintf ("http://%s:%d", str_member (p, "host_ip") ?: "127.0.0.1",
                                            (int) json_integer_value (json_object_get (p, "host_port")));
          json_object_set_new (w, u, json_integer (ctr));
        }
  }
  return w;
}

struct sbx *
reg_read (struct serve *srv, struct ohbox_runtime *rt, json_t *info)
{
  json_t *labels = json_object_get (info, "labels"), *notes = json_object_get (info, "annotations");
  const char *id = str_member (info, "id");
  if (!serve_valid_runtime_id (id) || strcmp (str_member (labels, SERVE_LABEL) ?: "", "1") != 0)
    return NULL;
  if (str_member (notes, SERVE_NOTE_STOPPING))
    return NULL;
  struct sbx *s = xcalloc (1, sizeof *s);
  memcpy (s->id, id, 65);
  const char *session = str_member (notes, SERVE_NOTE_SESSION) ?: str_member (labels, SERVE_LABEL_SESSION);
  s->session_id = session ? xstrdup (session) : NULL;
  const char *pool = str_member (labels, SERVE_LABEL_POOL);
  s->pool = pool ? xstrdup (pool) : NULL;
  s->image = xstrdup (str_member (info, "image") ?: "");
  s->image_id = xstrdup (str_member (info, "image_id") ?: "");
  s->created = xstrdup (str_member (info, "created") ?: "");
  s->last_activity = serve_now ();
  const char *status = str_member (info, "status") ?: "exited";
  if (strcmp (status, "running") == 0 || strcmp (status, "created") == 0)
    s->state = SBX_READY;
  else if (strcmp (status, "paused") == 0)
    {
      s->state = SBX_PAUSED;
      const char *by = str_member (notes, SERVE_NOTE_PAUSED_BY);
      s->paused_by = by && strcmp (by, "idle") == 0 ? PAUSED_BY_IDLE : PAUSED_BY_API;
    }
  else
    {
      s->state = SBX_FAILED;
      json_t *code = json_object_get (info, "exit_code");
      s->exit_code = json_is_integer (code) ? (int) json_integer_value (code) : 255;
    }
  s->work_hosts = work_hosts_of (srv, json_object_get (info, "ports"));
  struct ohbox_executor_info x;
  ohbox_error_t e = NULL;
  if (ohbox_sandbox_executor_record (rt, id, &x, &e) == 0)
    {
      s->upstream = serve_upstream (srv, id, x.url, x.socket != NULL);
      s->key = steal_pointer (&x.api_key);
      ohbox_executor_info_clear (&x);
    }
  ohbox_error_release (&e);
  return s;
}

void
reg_read_work_hosts (struct serve *srv, const char *id)
{
  if (srv->cfg->n_work_ports == 0)
    return;
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  ohbox_error_t e = NULL;
  json_t *net = NULL;
  if (serve_open (srv, &store, &rt, &e) == 0)
    {
      if (ohbox_sandbox_network (rt, id, &net, &e) < 0)
        net = NULL;
      serve_close (store, rt);
    }
  ohbox_error_release (&e);
  if (net == NULL)
    return;
  json_t *w = work_hosts_of (srv, json_object_get (net, "ports"));
  json_decref (net);
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, id);
  if (s)
    {
      json_decref (s->work_hosts);
      s->work_hosts = w;
      w = NULL;
    }
  pthread_mutex_unlock (&srv->reg.lock);
  json_decref (w);
}

int
reg_load (struct serve *srv, ohbox_error_t *err)
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  if (serve_open (srv, &store, &rt, err) < 0)
    return -1;
  json_t *all = NULL;
  if (ohbox_sandbox_list (rt, true, &all, err) < 0)
    {
      serve_close (store, rt);
      return -1;
    }
  size_t i;
  json_t *info;
  json_array_foreach (all, i, info)
  {
    json_t *labels = json_object_get (info, "labels"), *notes = json_object_get (info, "annotations");
    const char *id = str_member (info, "id");
    if (strcmp (str_member (labels, SERVE_LABEL) ?: "", "1") != 0)
      continue;
    if (str_member (notes, SERVE_NOTE_STOPPING))
      {
        /* A /stop the last server accepted but did not finish. */
        serve_stop_async (srv, id);
        continue;
      }
    struct sbx *s = reg_read (srv, rt, info);
    if (s == NULL)
      continue;
    /* A pool member not given yet goes back to its pool once pool.c found
     * it still on standby with the key recorded; one given to a session
     * (recorded while its executor adopted it: api.c) stays the session's
     * if pool.c finds it adopted. A paused one was: only a session that got
     * its answer is paused. */
    if (s->pool && s->state == SBX_READY)
      {
        if (s->session_id == NULL)
          s->state = SBX_STARTING;
        s->probe = true;
      }
    pthread_mutex_lock (&srv->reg.lock);
    reg_insert (&srv->reg, s);
    pthread_mutex_unlock (&srv->reg.lock);
  }
  json_decref (all);
  serve_close (store, rt);
  return 0;
}

/* What the state says of S now (lock held): its status, and who paused it. */
static void
merge (struct sbx *s, json_t *info)
{
  const char *status = str_member (info, "status") ?: "exited";
  json_t *notes = json_object_get (info, "annotations");
  if (strcmp (status, "exited") == 0)
    {
      if (s->state != SBX_FAILED)
        {
          json_t *code = json_object_get (info, "exit_code");
          s->exit_code = json_is_integer (code) ? (int) json_integer_value (code) : 255;
          s->state = SBX_FAILED;
          json_decref (s->work_hosts);
          s->work_hosts = json_object ();
        }
      return;
    }
  if (s->state == SBX_STARTING)
    return; /* its start decides when it is ready */
  if (strcmp (status, "paused") == 0 && s->state == SBX_READY)
    {
      const char *by = str_member (notes, SERVE_NOTE_PAUSED_BY);
      s->state = SBX_PAUSED;
      s->paused_by = by && strcmp (by, "idle") == 0 ? PAUSED_BY_IDLE : PAUSED_BY_API;
    }
  else if (strcmp (status, "running") == 0 && s->state == SBX_PAUSED)
    {
      s->state = SBX_READY;
      s->paused_by = PAUSED_BY_NONE;
    }
}

void
reg_refresh (struct serve *srv)
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  ohbox_error_t e = NULL;
  if (serve_open (srv, &store, &rt, &e) < 0)
    {
      ohbox_error_release (&e);
      return;
    }
  json_t *all = NULL;
  int r = ohbox_sandbox_list (rt, true, &all, &e);
  serve_close (store, rt);
  if (r < 0)
    {
      ohbox_error_release (&e);
      return;
    }
  json_t *by_id = json_object ();
  size_t i;
  json_t *info;
  json_array_foreach (all, i, info)
  {
    const char *id = str_member (info, "id");
    if (id)
      json_object_set (by_id, id, info);
  }
  pthread_mutex_lock (&srv->reg.lock);
  for (unsigned b = 0; b < REG_BUCKETS; b++)
    for (struct sbx **p = &srv->reg.buckets[b]; *p;)
      {
        struct sbx *s = *p;
        json_t *now = json_object_get (by_id, s->id);
        if (now == NULL && s->state != SBX_STARTING)
          {
            /* Removed without the server (`ohbox rm`). */
            *p = s->next;
            srv->reg.count--;
            sbx_free (s);
            continue;
          }
        if (now)
          merge (s, now);
        p = &s->next;
      }
  pthread_mutex_unlock (&srv->reg.lock);
  json_decref (by_id);
  json_decref (all);
}
