/* api.c: the endpoints of OpenHands' remote runtime API
 * (shared/protocol/RUNTIME-API.md). Every field a client sends is checked
 * here, and a refusal is a 4xx whose "detail" names the field; what the
 * sandbox is then made of is the run policy's business (starter.c fills
 * its request). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/action.h"
#include "build/runtime_image.h"
#include "sandbox/sandbox.h"
#include "serve/serve_internal.h"
#include "store/store.h"

#define START_MAX_ARGS 4096
#define START_MAX_ARGV_BYTES (256 * 1024)
#define START_MAX_ENV 4096
#define START_MAX_ENV_BYTES (1024 * 1024)
#define PATH_FIELD_MAX 4096
#define LOG_TAIL 2048

void
reply_error (struct reply *out, unsigned status, const char *field, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = xvasprintf (fmt, ap);
  va_end (ap);
  out->status = status;
  out->json = json_pack ("{s:s}", "detail", msg);
  if (field)
    json_object_set_new (out->json, "field", json_string (field));
}

static void
reply_json (struct reply *out, unsigned status, json_t *j)
{
  out->status = status;
  out->json = j;
}

/* The HTTP status for a library error of kind KIND in a request's work. */
static unsigned
status_of (int kind)
{
  switch (kind)
    {
    case OHBOX_ERR_USAGE:
    case OHBOX_ERR_NOT_FOUND:
    case OHBOX_ERR_UNSUPPORTED:
      return 400;
    case OHBOX_ERR_AUTH:
    case OHBOX_ERR_REGISTRY:
      return 502;
    default:
      return 500;
    }
}

int
serve_open (struct serve *srv, struct ohbox_store **store, struct ohbox_runtime **rt, ohbox_error_t *err)
{
  *store = NULL;
  *rt = NULL;
  if (ohbox_store_open (srv->cfg->store_root, store, err) < 0)
    return -1;
  if (ohbox_runtime_open (*store, srv->cfg->state_root, rt, err) < 0)
    {
      ohbox_store_close (*store);
      *store = NULL;
      return -1;
    }
  return 0;
}

void
serve_close (struct ohbox_store *store, struct ohbox_runtime *rt)
{
  ohbox_runtime_close (rt);
  ohbox_store_close (store);
}

/* ---- /start ---- */

struct start_req
{
  const char *image;
  json_t *command; /* array, or NULL for the image's own */
  const char *working_dir;
  json_t *environment; /* object or NULL */
  const char *session_id;
  int factor;
  long run_as_user, run_as_group; /* -1: not given */
  /* The command is OpenHands' action execution server (or none, on a
   * runtime image): a pool's executor can be given it. Its arguments after
   * the module name (the executor's own). */
  bool openhands_server;
  json_t *server_args;
};

/* OpenHands' V0 command (runtime_image.h): its python prefix, the module,
 * then the server's arguments (PORT --working-dir ... --username ...
 * --user-id ...), which *ARGS gets. */
static bool
is_openhands_server (struct serve *srv, json_t *cmd, json_t **args)
{
  if (json_array_size (cmd) <= OHBOX_OPENHANDS_SERVER_PREFIX_N)
    return false;
  for (size_t i = 0; i < OHBOX_OPENHANDS_SERVER_PREFIX_N; i++)
    if (strcmp (json_string_value (json_array_get (cmd, i)), ohbox_openhands_server_prefix[i]) != 0)
      return false;
  char port[16];
  snprintf (port, sizeof port, "%d", srv->cfg->sandbox_port);
  if (strcmp (json_string_value (json_array_get (cmd, OHBOX_OPENHANDS_SERVER_PREFIX_N)), port) != 0)
    return false;
  *args = json_array ();
  for (size_t i = OHBOX_OPENHANDS_SERVER_PREFIX_N; i < json_array_size (cmd); i++)
    json_array_append (*args, json_array_get (cmd, i));
  return true;
}

static bool
no_nul_string (json_t *v, size_t max)
{
  return json_is_string (v) && json_string_length (v) <= max
         && strlen (json_string_value (v)) == json_string_length (v);
}

/* An optional integer field in [LO, HI]; -1 when absent or null. */
static int
int_field (json_t *body, const char *name, long lo, long hi, long *ret, struct reply *out)
{
  json_t *v = json_object_get (body, name);
  *ret = -1;
  if (v == NULL || json_is_null (v))
    return 0;
  if (json_is_real (v) && json_real_value (v) == (double) (long) json_real_value (v))
    *ret = (long) json_real_value (v);
  else if (json_is_integer (v))
    *ret = (long) json_integer_value (v);
  else
    {
      reply_error (out, 400, name, "`%s` must be an integer", name);
      return -1;
    }
  if (*ret < lo || *ret > hi)
    {
      reply_error (out, 400, name, "`%s` must be between %ld and %ld", name, lo, hi);
      return -1;
    }
  return 0;
}

static int
parse_command (struct serve *srv, json_t *body, struct start_req *sr, struct reply *out)
{
  json_t *cmd = json_object_get (body, "command");
  if (cmd == NULL || json_is_null (cmd))
    {
      sr->openhands_server = true; /* a runtime image's own executor (checked by the start) */
      return 0;
    }
  if (!json_is_array (cmd) || json_array_size (cmd) == 0 || json_array_size (cmd) > START_MAX_ARGS)
    {
      reply_error (out, 400, "command", "`command` must be null or an array of 1 to %d strings", START_MAX_ARGS);
      return -1;
    }
  size_t total = 0, i;
  json_t *a;
  json_array_foreach (cmd, i, a)
  {
    if (!no_nul_string (a, START_MAX_ARGV_BYTES))
      {
        reply_error (out, 400, "command", "`command` must hold strings without NUL bytes");
        return -1;
      }
    total += json_string_length (a) + 1;
  }
  if (total > START_MAX_ARGV_BYTES)
    {
      reply_error (out, 400, "command", "`command` is too long (at most %d bytes)", START_MAX_ARGV_BYTES);
      return -1;
    }
  sr->command = cmd;
  sr->openhands_server = is_openhands_server (srv, cmd, &sr->server_args);
  return 0;
}

static int
parse_environment (json_t *body, struct start_req *sr, struct reply *out)
{
  json_t *env = json_object_get (body, "environment");
  if (env == NULL || json_is_null (env))
    return 0;
  if (!json_is_object (env) || json_object_size (env) > START_MAX_ENV)
    {
      reply_error (out, 400, "environment", "`environment` must be an object of at most %d strings", START_MAX_ENV);
      return -1;
    }
  size_t total = 0;
  const char *k;
  json_t *v;
  json_object_foreach (env, k, v)
  {
    if (*k == '\0' || strchr (k, '=') || !no_nul_string (v, START_MAX_ENV_BYTES))
      {
        reply_error (out, 400, "environment",
                     "environment variable `%.64s`: the name must be non-empty without "
                     "`=`, the value a string without NUL bytes",
                     k);
        return -1;
      }
    if (strcmp (k, "SESSION_API_KEY") == 0)
      {
        reply_error (out, 400, "environment",
                     "environment variable SESSION_API_KEY: the server makes each "
                     "sandbox's session key (session_api_key in the answer)");
        return -1;
      }
    total += strlen (k) + json_string_length (v) + 2;
  }
  if (total > START_MAX_ENV_BYTES)
    {
      reply_error (out, 400, "environment", "`environment` is too large (at most %d bytes)", START_MAX_ENV_BYTES);
      return -1;
    }
  sr->environment = env;
  return 0;
}

static int
parse_start (struct serve *srv, json_t *body, struct start_req *sr, struct reply *out)
{
  memset (sr, 0, sizeof *sr);
  if (!json_is_object (body))
    {
      reply_error (out, 400, NULL, "the body must be a JSON object");
      return -1;
    }
  json_t *image = json_object_get (body, "image");
  cleanup_free char *why = NULL;
  if (!json_is_string (image) || !valid_image_name (json_string_value (image), &why))
    {
      reply_error (out, 400, "image", "`image` %s", why ? why : "must be a string");
      return -1;
    }
  sr->image = json_string_value (image);
  json_t *sid = json_object_get (body, "session_id");
  if (!json_is_string (sid) || !valid_session_id (json_string_value (sid)))
    {
      reply_error (out, 400, "session_id", "`session_id` must be 1 to 128 characters of [A-Za-z0-9._-]");
      return -1;
    }
  sr->session_id = json_string_value (sid);
  json_t *wd = json_object_get (body, "working_dir");
  if (wd && !json_is_null (wd))
    {
      if (!no_nul_string (wd, PATH_FIELD_MAX) || json_string_value (wd)[0] != '/')
        {
          reply_error (out, 400, "working_dir", "`working_dir` must be an absolute path");
          return -1;
        }
      sr->working_dir = json_string_value (wd);
    }
  long factor, fs_group;
  json_t *rc = json_object_get (body, "runtime_class");
  if (rc && !json_is_null (rc) && !no_nul_string (rc, 64))
    {
      reply_error (out, 400, "runtime_class", "`runtime_class` must be a string");
      return -1;
    }
  if (int_field (body, "resource_factor", 1, 8, &factor, out) < 0
      || int_field (body, "run_as_user", 0, 65535, &sr->run_as_user, out) < 0
      || int_field (body, "run_as_group", 0, 65535, &sr->run_as_group, out) < 0
      || int_field (body, "fs_group", 0, 65535, &fs_group, out) < 0)
    return -1;
  sr->factor = factor < 0 ? 1 : (int) factor;
  if (parse_command (srv, body, sr, out) < 0 || parse_environment (body, sr, out) < 0)
    return -1;
  return 0;
}

static json_t *
env_array (json_t *env)
{
  json_t *a = json_array ();
  const char *k;
  json_t *v;
  json_object_foreach (env, k, v) json_array_append_new (a, json_sprintf ("%s=%s", k, json_string_value (v)));
  return a;
}

/* The run request (starter.c) of a cold start. */
static json_t *
run_request (struct serve *srv, const struct start_req *sr)
{
  const struct serve_config *c = srv->cfg;
  json_t *labels = json_pack ("[s, s+]", SERVE_LABEL "=1", SERVE_LABEL_SESSION "=", sr->session_id);
  json_t *limits = json_object ();
  if (c->base_cpus > 0)
    json_object_set_new (limits, "cpus", json_sprintf ("%.3f", c->base_cpus * sr->factor));
  if (c->base_memory > 0)
    json_object_set_new (limits, "memory", json_sprintf ("%lld", (long long) c->base_memory * sr->factor));
  if (c->base_pids > 0)
    json_object_set_new (limits, "pids-limit", json_sprintf ("%lld", (long long) c->base_pids * sr->factor));
  json_t *publish = json_array ();
  for (unsigned i = 0; i < c->n_work_ports; i++)
    json_array_append_new (publish, json_sprintf ("127.0.0.1::%d/tcp", c->work_ports[i]));
  json_t *rq = json_pack ("{s:s, s:o, s:o, s:o, s:i, s:o, s:b}", "image", sr->image, "labels", labels, "limits", limits,
                          "env", sr->environment ? env_array (sr->environment) : json_array (), "service_port",
                          c->sandbox_port, "publish", publish, "pull", c->pull_missing);
  if (sr->command)
    {
      /* Kubernetes' command: the image's entrypoint and cmd both replaced. */
      json_object_set_new (rq, "entrypoint", json_pack ("[O]", json_array_get (sr->command, 0)));
      json_t *rest = json_array ();
      for (size_t i = 1; i < json_array_size (sr->command); i++)
        json_array_append (rest, json_array_get (sr->command, i));
      json_object_set_new (rq, "command", rest);
    }
  if (sr->working_dir)
    json_object_set_new (rq, "workdir", json_string (sr->working_dir));
  if (sr->run_as_user >= 0)
    json_object_set_new (rq, "user",
                         sr->run_as_group >= 0 ? json_sprintf ("%ld:%ld", sr->run_as_user, sr->run_as_group)
                                               : json_sprintf ("%ld", sr->run_as_user));
  return rq;
}

/* The last bytes of sandbox ID's log, for an error that says why. */
static char *
log_tail (struct serve *srv, const char *id)
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  ohbox_error_t e = NULL;
  if (serve_open (srv, &store, &rt, &e) < 0)
    {
      ohbox_error_release (&e);
      return xstrdup ("");
    }
  int fd = memfd_create ("log", MFD_CLOEXEC);
  char *tail = NULL;
  if (fd >= 0 && ohbox_sandbox_logs (rt, id, false, fd, &e) == 0)
    {
      off_t end = lseek (fd, 0, SEEK_END);
      off_t from = end > LOG_TAIL ? end - LOG_TAIL : 0;
      tail = xcalloc (1, LOG_TAIL + 1);
      ssize_t n = pread (fd, tail, LOG_TAIL, from);
      tail[n > 0 ? n : 0] = '\0';
    }
  ohbox_error_release (&e);
  if (fd >= 0)
    close (fd);
  serve_close (store, rt);
  return tail ? tail : xstrdup ("");
}

struct alive_check
{
  struct serve *srv;
  const char *id;
  double next;
  int exit_code;
};

/* Whether the sandbox still runs (looked at every 100 ms at most). */
static bool
still_running (void *data)
{
  struct alive_check *a = data;
  double now = serve_now ();
  if (now < a->next)
    return true;
  a->next = now + 0.1;
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  ohbox_error_t e = NULL;
  json_t *info = NULL;
  bool alive = true;
  if (serve_open (a->srv, &store, &rt, &e) == 0)
    {
      if (ohbox_sandbox_inspect (rt, a->id, &info, &e) == 0
          && strcmp (json_string_value (json_object_get (info, "status")) ?: "", "exited") == 0)
        {
          alive = false;
          a->exit_code = (int) json_integer_value (json_object_get (info, "exit_code"));
        }
      else if (e && e->kind == OHBOX_ERR_NOT_FOUND)
        alive = false;
      serve_close (store, rt);
    }
  ohbox_error_release (&e);
  json_decref (info);
  return alive;
}

static void
record_start (struct serve *srv, bool pool, bool ok, double t0)
{
  metrics_start (&srv->metrics, pool, ok, serve_now () - t0);
}

/* One log line per sandbox given to a session, written once the answer
 * is out. */
static void
log_started (struct reply *out, json_t *desc, bool pool, double t0)
{
  json_decref (out->log_after);
  out->log_after = json_pack ("{s:s, s:O, s:O, s:s, s:f}", "event", "started", "runtime_id",
                              json_object_get (desc, "runtime_id"), "session_id", json_object_get (desc, "session_id"),
                              "source", pool ? "pool" : "cold", "seconds", serve_now () - t0);
}

static void
fail_start (struct serve *srv, const char *id, struct reply *out, unsigned status, const char *what, double t0)
{
  cleanup_free char *tail = log_tail (srv, id);
  reply_error (out, status, NULL, "%s%s%s", what, *tail ? "; the end of its log:\n" : "", tail);
  serve_drop_sandbox (srv, id);
  record_start (srv, false, false, t0);
}

static void
start_cold (struct serve *srv, const struct start_req *sr, struct reply *out, double t0)
{
  json_t *job = json_pack ("{s:s, s:o}", "type", "start", "request", run_request (srv, sr));
  json_t *res = NULL;
  ohbox_error_t e = NULL;
  int fd = -1;
  int r = starter_job (srv->starter, job, &fd, &e);
  json_decref (job);
  if (r == 0)
    r = starter_result (fd, NULL, NULL, &res, &e);
  if (r < 0)
    {
      reply_error (out, status_of (e->kind), e->kind == OHBOX_ERR_NOT_FOUND ? "image" : NULL, "cannot start `%s`: %s",
                   sr->image, e->msg);
      ohbox_error_release (&e);
      pthread_mutex_lock (&srv->reg.lock);
      srv->reg.starting--;
      pthread_mutex_unlock (&srv->reg.lock);
      record_start (srv, false, false, t0);
      return;
    }
  const char *id = json_string_value (json_object_get (res, "id"));
  struct sbx *s = xcalloc (1, sizeof *s);
  snprintf (s->id, sizeof s->id, "%s", id ?: "");
  s->session_id = xstrdup (sr->session_id);
  s->image = xstrdup (sr->image);
  s->image_id = xstrdup (json_string_value (json_object_get (res, "image_id")) ?: "");
  s->upstream = serve_upstream (srv, s->id, json_string_value (json_object_get (res, "url")),
                                json_is_true (json_object_get (res, "socket")));
  s->key = xstrdup (json_string_value (json_object_get (res, "key")) ?: "");
  s->created = ohbox_now_rfc3339 ();
  s->state = SBX_STARTING;
  s->last_activity = serve_now ();
  pthread_mutex_lock (&srv->reg.lock);
  srv->reg.starting--;
  reg_insert (&srv->reg, s);
  pthread_mutex_unlock (&srv->reg.lock);
  cleanup_free char *sid = xstrdup (s->id);
  cleanup_free char *upstream = s->upstream ? xstrdup (s->upstream) : NULL;
  json_decref (res);
  if (!serve_valid_runtime_id (sid) || upstream == NULL)
    {
      fail_start (srv, sid, out, 500, "the sandbox's server is not reachable from the host", t0);
      return;
    }
  /* Ready when its server answers: an executor's /alive (its session is up),
   * any other image's server by answering at all. */
  struct alive_check ac = { .srv = srv, .id = sid };
  bool executor = sr->openhands_server;
  if (proxy_wait_ready (upstream, executor, t0 + srv->cfg->start_timeout, still_running, &ac, &e) < 0)
    {
      cleanup_free char *what = e->kind == OHBOX_ERR_NOT_FOUND
                                  ? xasprintf (
                                    "the sandbox's command exited (status %d) before its server answered on port %d",
                                    ac.exit_code, srv->cfg->sandbox_port)
                                  : xasprintf ("the sandbox's server did not answer on port %d within %.0f s: %s",
                                               srv->cfg->sandbox_port, srv->cfg->start_timeout, e->msg);
      ohbox_error_release (&e);
      fail_start (srv, sid, out, 500, what, t0);
      return;
    }
  /* Its work hosts, from the ports the start published. */
  reg_read_work_hosts (srv, sid);
  pthread_mutex_lock (&srv->reg.lock);
  s = reg_find (&srv->reg, sid);
  if (s && s->state == SBX_STARTING)
    s->state = SBX_READY;
  json_t *desc = s ? reg_describe (srv, s) : NULL;
  pthread_mutex_unlock (&srv->reg.lock);
  if (desc == NULL)
    {
      reply_error (out, 500, NULL, "the sandbox went away while it started");
      record_start (srv, false, false, t0);
      return;
    }
  record_start (srv, false, true, t0);
  log_started (out, desc, false, t0);
  reply_json (out, 200, desc);
}

/* The session's key and id in member ID's state, for a server started
 * again. The store is opened for this rather than held since the take: an
 * executor slow to answer would hold off its garbage collection (which
 * waits for every open store) for the request's timeout. */
static int
record_session (struct serve *srv, const char *id, const char *key, const char *session_id, ohbox_error_t *err)
{
  struct ohbox_store *store = NULL;
  struct ohbox_runtime *rt = NULL;
  json_t *note = json_pack ("{s:s}", SERVE_NOTE_SESSION, session_id);
  int r = serve_open (srv, &store, &rt, err);
  if (r == 0)
    r = ohbox_sandbox_executor_rekey (rt, id, key, err);
  if (r == 0)
    r = ohbox_sandbox_annotate (rt, id, note, err);
  json_decref (note);
  if (rt)
    serve_close (store, rt);
  return r;
}

/* From a pool: the member's executor adopts the session (adopt.c), through
 * the client connection's connection UP: the session's first request, which
 * usually comes on that client connection, finds the connection to its
 * sandbox open. */
static bool
start_from_pool (struct serve *srv, const struct start_req *sr, struct upstream **up, struct reply *out, double t0)
{
  if (!sr->openhands_server || sr->run_as_user >= 0 || sr->run_as_group >= 0 || sr->factor != 1)
    return false;
  struct sbx *s = pools_take (srv, sr->image, sr->session_id);
  if (s == NULL)
    return false;
  /* pools_take gave a copy of what the member needs: its id, URL, pool key. */
  cleanup_free char *key = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_runtime_session_key (&key, &e) < 0)
    {
      ohbox_error_release (&e);
      serve_stop_async (srv, s->id);
      sbx_free (s);
      return false;
    }
  json_t *body = json_pack ("{s:s, s:O?, s:O?, s:s?}", "session_api_key", key, "argv", sr->server_args, "environment",
                            sr->environment, "working_dir", sr->working_dir);
  struct proxy_post *adoption = NULL;
  int r = proxy_post_begin (up, s->id, s->upstream, "/ohbox/adopt", s->key, body, &adoption, &e);
  json_decref (body);
  /* Recorded while the executor adopts: a server killed before the
   * adoption finished finds a session whose key does not work yet, and
   * stops its sandbox (pool.c, probe_members). */
  if (r == 0)
    r = record_session (srv, s->id, key, sr->session_id, &e);
  long status = 0;
  if (adoption)
    {
      ohbox_error_t e2 = NULL;
      int r2 = proxy_post_end (adoption, &status, NULL, r == 0 ? &e : &e2);
      ohbox_error_release (&e2);
      if (r2 == 0 && status != 200)
        r2 = -1; /* refused: the member is not what its record says */
      if (r == 0)
        r = r2;
    }
  if (r < 0)
    {
      ohbox_error_release (&e);
      /* This member is lost: stopped; the start goes on cold. */
      pthread_mutex_lock (&srv->reg.lock);
      struct sbx *m = reg_find (&srv->reg, s->id);
      if (m)
        {
          reg_unlink (&srv->reg, m);
          sbx_free (m);
        }
      pthread_mutex_unlock (&srv->reg.lock);
      serve_stop_async (srv, s->id);
      sbx_free (s);
      return false;
    }
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *m = reg_find (&srv->reg, s->id);
  json_t *desc = NULL;
  if (m)
    {
      free (m->key);
      m->key = xstrdup (key);
      free (m->image);
      m->image = xstrdup (sr->image);
      m->state = SBX_READY;
      m->last_activity = serve_now ();
      desc = reg_describe (srv, m);
    }
  pthread_mutex_unlock (&srv->reg.lock);
  sbx_free (s);
  pools_learn (srv, sr->image, sr->server_args);
  out->wake_pools_after = true;
  if (desc == NULL)
    return false;
  record_start (srv, true, true, t0);
  log_started (out, desc, true, t0);
  reply_json (out, 200, desc);
  return true;
}

/* A /start for a session that has a sandbox: a running or paused one is
 * the answer (a client that lost the first answer asks again), a failed
 * one is replaced (RUNTIME-API.md, detail 8). True when OUT is set. */
static bool
existing_session (struct serve *srv, const struct start_req *sr, struct reply *out)
{
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find_session (&srv->reg, sr->session_id);
  if (s == NULL)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      return false;
    }
  if (s->state == SBX_FAILED)
    {
      char id[65];
      memcpy (id, s->id, sizeof id);
      reg_unlink (&srv->reg, s);
      sbx_free (s);
      pthread_mutex_unlock (&srv->reg.lock);
      serve_stop_async (srv, id);
      return false;
    }
  reply_json (out, 200, reg_describe (srv, s));
  pthread_mutex_unlock (&srv->reg.lock);
  return true;
}

static void
api_start (struct serve *srv, json_t *body, struct upstream **up, struct reply *out)
{
  double t0 = serve_now ();
  struct start_req sr;
  if (parse_start (srv, body, &sr, out) < 0)
    return;
  pthread_mutex_lock (&srv->reg.lock);
  bool claimed = reg_claim_session (&srv->reg, sr.session_id);
  pthread_mutex_unlock (&srv->reg.lock);
  if (!claimed)
    {
      reply_error (out, 409, "session_id", "a start of session `%s` is in progress", sr.session_id);
      goto done;
    }
  if (existing_session (srv, &sr, out) || start_from_pool (srv, &sr, up, out, t0))
    goto release;
  pthread_mutex_lock (&srv->reg.lock);
  if (srv->cfg->max_sandboxes && reg_active (&srv->reg) >= srv->cfg->max_sandboxes)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      reply_error (out, 429, NULL, "%u sandboxes run already (--max-sandboxes): stop one first",
                   srv->cfg->max_sandboxes);
      goto release;
    }
  srv->reg.starting++;
  pthread_mutex_unlock (&srv->reg.lock);
  start_cold (srv, &sr, out, t0);
release:
  pthread_mutex_lock (&srv->reg.lock);
  reg_release_session (&srv->reg, sr.session_id);
  pthread_mutex_unlock (&srv->reg.lock);
done:
  json_decref (sr.server_args);
}

/* ---- lifecycle ---- */

/* The body's runtime_id: 0 with a valid one, 1 for null, -1 with OUT set. */
static int
body_runtime_id (json_t *body, const char **ret, struct reply *out)
{
  json_t *v = json_is_object (body) ? json_object_get (body, "runtime_id") : NULL;
  if (!json_is_object (body))
    {
      reply_error (out, 400, NULL, "the body must be a JSON object with `runtime_id`");
      return -1;
    }
  if (v == NULL || json_is_null (v))
    return 1;
  if (!json_is_string (v))
    {
      reply_error (out, 400, "runtime_id", "`runtime_id` must be a string");
      return -1;
    }
  *ret = json_string_value (v);
  return 0;
}

void
serve_drop_sandbox (struct serve *srv, const char *id)
{
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, id);
  if (s)
    {
      reg_unlink (&srv->reg, s);
      sbx_free (s);
    }
  pthread_mutex_unlock (&srv->reg.lock);
  serve_stop_async (srv, id);
}

void
serve_stop_async (struct serve *srv, const char *id)
{
  pthread_mutex_lock (&srv->stop_lock);
  if (srv->n_stop == srv->cap_stop)
    {
      srv->cap_stop = srv->cap_stop ? srv->cap_stop * 2 : 16;
      srv->stop_queue = xrealloc (srv->stop_queue, srv->cap_stop * sizeof (char *));
    }
  srv->stop_queue[srv->n_stop++] = xstrdup (id);
  pthread_cond_signal (&srv->stop_cond);
  pthread_mutex_unlock (&srv->stop_lock);
}

/* Removes what /stop gave up, one after the other, off the request's path:
 * the annotation says it is being stopped, so a server killed now finishes
 * it at its next start (reg_load). */
void *
serve_remover_main (void *arg)
{
  struct serve *srv = arg;
  for (;;)
    {
      pthread_mutex_lock (&srv->stop_lock);
      while (srv->n_stop == 0 && !srv->remover_quit)
        pthread_cond_wait (&srv->stop_cond, &srv->stop_lock);
      if (srv->n_stop == 0)
        {
          pthread_mutex_unlock (&srv->stop_lock);
          return NULL;
        }
      char *id = srv->stop_queue[--srv->n_stop];
      pthread_mutex_unlock (&srv->stop_lock);
      struct ohbox_store *store;
      struct ohbox_runtime *rt;
      ohbox_error_t e = NULL;
      if (serve_open (srv, &store, &rt, &e) == 0)
        {
          if (ohbox_sandbox_remove (rt, id, true, &e) < 0 && e->kind != OHBOX_ERR_NOT_FOUND)
            serve_log (srv, json_pack ("{s:s, s:s, s:s}", "event", "stop-failed", "runtime_id", id, "error", e->msg));
          else
            serve_log (srv, json_pack ("{s:s, s:s}", "event", "removed", "runtime_id", id));
          serve_close (store, rt);
        }
      else
        serve_log (srv, json_pack ("{s:s, s:s, s:s}", "event", "stop-failed", "runtime_id", id, "error", e->msg));
      ohbox_error_release (&e);
      free (id);
    }
}

static void
api_stop (struct serve *srv, json_t *body, struct reply *out)
{
  const char *id = NULL;
  int r = body_runtime_id (body, &id, out);
  if (r < 0)
    return;
  if (r == 1)
    {
      /* V0 after a failed start (RUNTIME-API.md, detail 3). */
      reply_json (out, 200, json_pack ("{s:s}", "detail", "no runtime_id: nothing to stop"));
      return;
    }
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, id);
  if (s == NULL || s->session_id == NULL || s->state == SBX_STARTING)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      reply_error (out, 404, "runtime_id", "no runtime `%.64s`", id);
      return;
    }
  reg_unlink (&srv->reg, s);
  pthread_mutex_unlock (&srv->reg.lock);
  /* Its URL answers 404 from now on; the removal is the remover's. */
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  ohbox_error_t e = NULL;
  json_t *note = json_pack ("{s:s}", SERVE_NOTE_STOPPING, "1");
  if (serve_open (srv, &store, &rt, &e) == 0)
    {
      ohbox_sandbox_annotate (rt, s->id, note, &e);
      serve_close (store, rt);
    }
  ohbox_error_release (&e);
  json_decref (note);
  serve_stop_async (srv, s->id);
  metrics_count (&srv->metrics, &srv->metrics.stops);
  reply_json (out, 200, json_pack ("{s:s, s:s}", "runtime_id", s->id, "status", "stopped"));
  sbx_free (s);
}

static void
api_pause_resume (struct serve *srv, json_t *body, bool pause, struct reply *out)
{
  const char *id = NULL;
  int r = body_runtime_id (body, &id, out);
  if (r < 0)
    return;
  if (r == 1)
    {
      reply_error (out, 400, "runtime_id", "`runtime_id` is required");
      return;
    }
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, id);
  if (s == NULL || s->session_id == NULL)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      reply_error (out, 404, "runtime_id", "no runtime `%.64s`", id);
      return;
    }
  if (s->state == SBX_FAILED || s->state == SBX_STARTING)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      reply_error (out, 409, "runtime_id", "runtime `%.64s` is %s", id,
                   s->state == SBX_FAILED ? "not running (its command exited)" : "still starting");
      return;
    }
  pthread_mutex_unlock (&srv->reg.lock);
  pthread_mutex_lock (&srv->transition);
  pthread_mutex_lock (&srv->reg.lock);
  s = reg_find (&srv->reg, id);
  if (s == NULL || s->session_id == NULL || s->state == SBX_FAILED || s->state == SBX_STARTING)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      pthread_mutex_unlock (&srv->transition);
      reply_error (out, 409, "runtime_id", "runtime `%.64s` changed meanwhile (stopped or failed)", id);
      return;
    }
  bool already = pause ? (s->state == SBX_PAUSED && s->paused_by == PAUSED_BY_API) : s->state == SBX_READY;
  char sid[65];
  memcpy (sid, s->id, sizeof sid);
  if (pause)
    {
      /* Its URL answers 503 from now on (RUNTIME-API.md, detail 4). */
      s->state = SBX_PAUSED;
      s->paused_by = PAUSED_BY_API;
    }
  pthread_mutex_unlock (&srv->reg.lock);
  if (!already)
    {
      struct ohbox_store *store;
      struct ohbox_runtime *rt;
      ohbox_error_t e = NULL;
      json_t *note = json_pack ("{s:o}", SERVE_NOTE_PAUSED_BY, pause ? json_string ("api") : json_null ());
      r = serve_open (srv, &store, &rt, &e);
      if (r == 0)
        {
          r = ohbox_sandbox_annotate (rt, sid, note, &e);
          /* Not paused twice (idle, then /pause): freezing is idempotent. */
          if (r == 0)
            r = ohbox_sandbox_pause (rt, sid, pause, &e);
          serve_close (store, rt);
        }
      json_decref (note);
      if (r < 0)
        {
          pthread_mutex_unlock (&srv->transition);
          reply_error (out, status_of (e->kind) == 400 ? 409 : 500, NULL, "%s runtime `%s`: %s",
                       pause ? "pause" : "resume", sid, e->msg);
          ohbox_error_release (&e);
          reg_refresh (srv);
          return;
        }
    }
  pthread_mutex_lock (&srv->reg.lock);
  s = reg_find (&srv->reg, sid);
  if (s && !pause)
    {
      s->state = SBX_READY;
      s->paused_by = PAUSED_BY_NONE;
      s->last_activity = serve_now ();
    }
  json_t *desc = s ? reg_describe (srv, s) : json_pack ("{s:s}", "runtime_id", sid);
  pthread_mutex_unlock (&srv->reg.lock);
  pthread_mutex_unlock (&srv->transition);
  reply_json (out, 200, desc);
}

/* ---- views ---- */

static void
api_sessions (struct serve *srv, const char *sid, struct reply *out)
{
  if (!valid_session_id (sid))
    {
      reply_error (out, 400, "session_id", "a session id is 1 to 128 characters of [A-Za-z0-9._-]");
      return;
    }
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find_session (&srv->reg, sid);
  json_t *desc = s ? reg_describe (srv, s) : NULL;
  pthread_mutex_unlock (&srv->reg.lock);
  if (desc == NULL)
    reply_error (out, 404, "session_id", "no runtime for session `%s`", sid);
  else
    reply_json (out, 200, desc);
}

static void
api_runtime (struct serve *srv, const char *id, struct reply *out)
{
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, id);
  json_t *desc = s && s->session_id ? reg_describe (srv, s) : NULL;
  pthread_mutex_unlock (&srv->reg.lock);
  if (desc == NULL)
    reply_error (out, 404, "runtime_id", "no runtime `%.64s`", id);
  else
    reply_json (out, 200, desc);
}

static void
api_list (struct serve *srv, struct reply *out)
{
  json_t *a = json_array ();
  pthread_mutex_lock (&srv->reg.lock);
  for (unsigned b = 0; b < REG_BUCKETS; b++)
    for (struct sbx *s = srv->reg.buckets[b]; s; s = s->next)
      if (s->session_id)
        json_array_append_new (a, reg_describe (srv, s));
  pthread_mutex_unlock (&srv->reg.lock);
  reply_json (out, 200, json_pack ("{s:o}", "runtimes", a));
}

static void
api_image_exists (struct serve *srv, struct MHD_Connection *mc, const char *image, struct reply *out)
{
  (void) mc;
  cleanup_free char *why = NULL;
  if (image == NULL || !valid_image_name (image, &why))
    {
      reply_error (out, 400, "image", "the query parameter `image` %s", why ? why : "is required");
      return;
    }
  struct ohbox_store *store;
  ohbox_error_t e = NULL;
  if (ohbox_store_open (srv->cfg->store_root, &store, &e) < 0)
    {
      reply_error (out, 500, NULL, "%s", e->msg);
      ohbox_error_release (&e);
      return;
    }
  cleanup_free char *id = NULL;
  json_t *rec = NULL;
  if (ohbox_store_resolve (store, image, &id, &e) < 0 || ohbox_store_get_image (store, id, &rec, &e) < 0)
    {
      bool missing = e->kind == OHBOX_ERR_NOT_FOUND;
      if (missing)
        reply_json (out, 200, json_pack ("{s:b, s:n}", "exists", 0, "image"));
      else
        reply_error (out, 500, NULL, "%s", e->msg);
      ohbox_error_release (&e);
      ohbox_store_close (store);
      return;
    }
  ohbox_store_close (store);
  /* Both required by the client when it exists (RUNTIME-API.md, detail 5). */
  json_t *size = json_object_get (rec, "size");
  const char *stored = json_string_value (json_object_get (rec, "stored_at"));
  const char *created = json_string_value (json_object_get (rec, "created"));
  json_t *img = json_pack ("{s:s, s:s, s:I, s:b}", "id", id, "upload_time",
                           stored    ? stored
                           : created ? created
                                     : "1970-01-01T00:00:00Z",
                           "image_size_bytes", (json_int_t) (json_is_integer (size) ? json_integer_value (size) : 0),
                           "runtime_image", ohbox_runtime_image_recorded (rec));
  json_decref (rec);
  reply_json (out, 200, json_pack ("{s:b, s:o}", "exists", 1, "image", img));
}

void
api_dispatch (struct serve *srv, struct upstream **up, const char *method, const char *url, json_t *body,
              struct reply *out)
{
  struct MHD_Connection *mc = NULL;
  bool get = strcmp (method, "GET") == 0 || strcmp (method, "HEAD") == 0;
  bool post = strcmp (method, "POST") == 0;
  const char *tail;
  if (strcmp (url, "/start") == 0 && post)
    api_start (srv, body, up, out);
  else if (strcmp (url, "/stop") == 0 && post)
    api_stop (srv, body, out);
  else if (strcmp (url, "/pause") == 0 && post)
    api_pause_resume (srv, body, true, out);
  else if (strcmp (url, "/resume") == 0 && post)
    api_pause_resume (srv, body, false, out);
  else if (strncmp (url, "/sessions/", 10) == 0 && get)
    api_sessions (srv, url + 10, out);
  else if (strncmp (url, "/runtime/", 9) == 0 && get)
    api_runtime (srv, url + 9, out);
  else if (strcmp (url, "/list") == 0 && get)
    api_list (srv, out);
  else if (strcmp (url, "/registry_prefix") == 0 && get)
    reply_json (out, 200, json_pack ("{s:s}", "registry_prefix", srv->cfg->registry_prefix));
  else if (strcmp (url, "/image_exists") == 0 && get)
    api_image_exists (srv, mc, json_string_value (json_object_get (body, "image")), out);
  else if (strcmp (url, "/build_status") == 0 && get)
    builds_status (srv, json_string_value (json_object_get (body, "build_id")), out);
  else if (strcmp (url, "/metrics") == 0 && get)
    {
      out->status = 200;
      out->text = metrics_text (srv);
      out->content_type = "text/plain; version=0.0.4; charset=utf-8";
    }
  else if ((tail = url)
           && (strcmp (tail, "/start") == 0 || strcmp (tail, "/stop") == 0 || strcmp (tail, "/pause") == 0
               || strcmp (tail, "/resume") == 0 || strcmp (tail, "/list") == 0 || strcmp (tail, "/registry_prefix") == 0
               || strcmp (tail, "/image_exists") == 0 || strcmp (tail, "/build_status") == 0
               || strcmp (tail, "/build") == 0 || strcmp (tail, "/metrics") == 0))
    reply_error (out, 405, NULL, "method %s is not allowed on %s", method, url);
  else
    reply_error (out, 404, NULL, "no such endpoint: %s %s", method, url);
}
