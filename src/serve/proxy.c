/* proxy.c: each sandbox's URL, BASE/<runtime id>/..., forwarded to its
 * server (upstream.c): ohbox's executor through the unix socket the run
 * made in the sandbox's state directory (serve_upstream), an image's own
 * server through the port the run policy published on the host's
 * 127.0.0.1.
 *
 * RUNTIME-API.md asks three things of a sandbox's URL: a frozen sandbox
 * must not take a request and never answer (detail 4), the server's
 * X-API-Key must not reach the sandbox (detail 10), and a stopped one
 * answers 404. So a request is looked up in the registry first (no file is
 * read on this path): unknown or stopped: 404; paused by /pause: 503 at
 * once (the V0 client then calls /resume); paused by --pause-idle: resumed
 * here, then forwarded (the client never paused it); a sandbox whose
 * command exited: 502. It is forwarded only with the sandbox's own session
 * key (X-Session-API-Key) or the server's API key (X-API-Key), both
 * compared in constant time; X-API-Key is then dropped, and the sandbox's
 * own session key forwarded in place of any the client sent (the API key's
 * holder can read every session key from /list anyway; another sandbox's
 * key sent beside it must not reach this one).
 *
 * libmicrohttpd gives each connection a thread; each keeps one connection
 * to the sandbox it last talked to (a keep-alive client costs no new
 * connection on either side). The request body is kept in memory up to
 * 1 MiB, beyond that in an unlinked file (uploads of up to 2 GiB). The
 * answer is streamed: the status and headers are sent once they came, the
 * body as the client takes it (a zip download of a whole workspace is
 * never held in memory); an answer complete by then goes out in one
 * buffer. A client that hangs up ends the wait for its answer: a sandbox
 * that never answers holds no thread or connection of the server. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "serve/dl_mhd.h"
#include "serve/serve_internal.h"
#include "serve/upstream.h"

#define BODY_IN_MEMORY (1024 * 1024)
#define BODY_MAX (2ULL * 1024 * 1024 * 1024 + 64 * 1024 * 1024) /* the executor's upload limit, and the form */

struct proxy_xfer
{
  struct serve *srv;
  char id[65];
  char *upstream, *path; /* the sandbox's server, and what follows the runtime's id in the URL */
  char *method;
  char **headers; /* "Name: value" lines to forward */
  size_t n_headers;
  /* the request body */
  struct ohbox_buf body;
  int spool_fd;
  uint64_t body_len;
  const char *connection; /* the request's Connection header (libmicrohttpd's) */
  bool has_body;
  /* the answer, on UP: the client connection's, or OWN_UP made for it */
  struct upstream *up, *own_up;
  struct upstream_answer answer;
};

/* Hop-by-hop headers (RFC 9110 7.6.1) and what upstream.c or libmicrohttpd
 * write themselves. */
static bool
not_forwarded (const char *name, bool request)
{
  static const char *const hop[] = {
    "Connection", "Keep-Alive",        "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "TE",
    "Trailer",    "Transfer-Encoding", "Upgrade",          "Content-Length"
  };
  for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
    if (strcasecmp (name, hop[i]) == 0)
      return true;
  /* The request's keys: the server's never reaches a sandbox, and the
   * session key forwarded is always the sandbox's own (proxy_begin), not
   * whatever else the client sent beside the API key. */
  if (request)
    return strcasecmp (name, "Host") == 0 || strcasecmp (name, "Expect") == 0 || strcasecmp (name, "X-API-Key") == 0
           || strcasecmp (name, "X-Session-API-Key") == 0;
  return strcasecmp (name, "Date") == 0;
}

/* Whether NAME is one of the tokens of LIST, a Connection header's value:
 * the headers it names are for one hop only too (RFC 9110 7.6.1). */
static bool
named_in (const char *list, const char *name)
{
  size_t n = strlen (name);
  for (const char *p = list; p && *p;)
    {
      p += strspn (p, " \t,");
      size_t len = strcspn (p, " \t,");
      if (len == n && strncasecmp (p, name, n) == 0)
        return true;
      p += len;
    }
  return false;
}

static void
push_header (struct proxy_xfer *px, char *line)
{
  px->headers = xrealloc (px->headers, (px->n_headers + 1) * sizeof (char *));
  px->headers[px->n_headers++] = line;
}

/* A header forwarded as it came must mean the same to the sandbox's
 * server as to libmicrohttpd, which accepts more (a space before the
 * colon, control characters): a name of RFC 9110's token characters, a
 * value without control characters but tabs. The first that is not, as
 * "name" in CLS. */
static enum MHD_Result
check_header (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
  (void) kind;
  static const char token[] = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  bool ok = key && *key && key[strspn (key, token)] == '\0';
  for (const unsigned char *c = (const unsigned char *) (value ? value : ""); ok && *c; c++)
    ok = (*c >= ' ' || *c == '\t') && *c != 0x7f;
  if (ok)
    return MHD_YES;
  *(char **) cls = xstrndup (key ? key : "", 64);
  return MHD_NO;
}

static enum MHD_Result
add_header (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
  (void) kind;
  struct proxy_xfer *px = cls;
  if (key && !not_forwarded (key, true) && !named_in (px->connection, key))
    push_header (px, xasprintf ("%s: %s", key, value ? value : ""));
  return MHD_YES;
}

/* Thaws a sandbox --pause-idle froze (its state set READY by the caller). */
static void
resume_idle (struct serve *srv, const char *id)
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  ohbox_error_t e = NULL;
  pthread_mutex_lock (&srv->transition);
  if (serve_open (srv, &store, &rt, &e) == 0)
    {
      json_t *note = json_pack ("{s:n}", SERVE_NOTE_PAUSED_BY);
      if (ohbox_sandbox_pause (rt, id, false, &e) == 0)
        ohbox_sandbox_annotate (rt, id, note, &e);
      json_decref (note);
      serve_close (store, rt);
    }
  pthread_mutex_unlock (&srv->transition);
  if (e)
    serve_log (srv, json_pack ("{s:s, s:s, s:s}", "event", "resume-failed", "runtime_id", id, "error", e->msg));
  ohbox_error_release (&e);
}

struct proxy_xfer *
proxy_begin (struct serve *srv, struct MHD_Connection *mc, const char *id, const char *raw_rest, const char *method,
             unsigned *status, char **detail)
{
  char *bad = NULL;
  MHD_get_connection_values (mc, MHD_HEADER_KIND, check_header, &bad);
  if (bad)
    {
      *status = 400;
      *detail = xasprintf ("the request header `%s` is not forwarded: a name of token characters and a value "
                           "without control characters, please",
                           bad);
      free (bad);
      return NULL;
    }
  const char *skey = MHD_lookup_connection_value (mc, MHD_HEADER_KIND, "X-Session-API-Key");
  const char *akey = MHD_lookup_connection_value (mc, MHD_HEADER_KIND, "X-API-Key");
  bool by_api_key = srv->cfg->api_key == NULL || serve_key_matches (srv->cfg->api_key, akey);
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, id);
  if (s == NULL || s->session_id == NULL)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      *status = 404;
      *detail = xasprintf ("no runtime `%.64s` (stopped, or never started here)", id);
      return NULL;
    }
  bool by_session = serve_key_matches (s->key, skey);
  if (!by_session && !by_api_key)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      *status = 401;
      *detail = xstrdup ("a request to a runtime needs its session key (X-Session-API-Key) or the server's API key "
                         "(X-API-Key)");
      return NULL;
    }
  bool resume = false;
  switch (s->state)
    {
    case SBX_FAILED:
      *status = 502;
      *detail = xasprintf ("runtime `%.12s` is not running: its command exited with status %d", id, s->exit_code);
      pthread_mutex_unlock (&srv->reg.lock);
      return NULL;
    case SBX_STARTING:
      *status = 503;
      *detail = xasprintf ("runtime `%.12s` is starting", id);
      pthread_mutex_unlock (&srv->reg.lock);
      return NULL;
    case SBX_PAUSED:
      if (s->paused_by == PAUSED_BY_API)
        {
          *status = 503;
          *detail = xasprintf ("runtime `%.12s` is paused: POST /resume first", id);
          pthread_mutex_unlock (&srv->reg.lock);
          return NULL;
        }
      /* Idle: this request resumes it; others that come meanwhile find it
       * ready and wait for its answer, which comes once it is thawed. */
      s->state = SBX_READY;
      s->paused_by = PAUSED_BY_NONE;
      resume = true;
      break;
    case SBX_READY:
      break;
    }
  if (s->upstream == NULL)
    {
      pthread_mutex_unlock (&srv->reg.lock);
      *status = 502;
      *detail = xstrdup ("the runtime's server is not reachable from the host");
      return NULL;
    }
  s->inflight++;
  s->last_activity = serve_now ();
  struct proxy_xfer *px = xcalloc (1, sizeof *px);
  px->srv = srv;
  memcpy (px->id, s->id, sizeof px->id);
  px->upstream = xstrdup (s->upstream);
  px->path = xstrdup (raw_rest && *raw_rest ? raw_rest : "/");
  char *inject = xasprintf ("X-Session-API-Key: %s", s->key);
  pthread_mutex_unlock (&srv->reg.lock);
  if (resume)
    resume_idle (srv, px->id);
  px->method = xstrdup (method);
  px->spool_fd = -1;
  px->connection = MHD_lookup_connection_value (mc, MHD_HEADER_KIND, "Connection");
  MHD_get_connection_values (mc, MHD_HEADER_KIND, add_header, px);
  px->connection = NULL;
  push_header (px, inject);
  metrics_count (&srv->metrics, &srv->metrics.proxied);
  return px;
}

static int
spool_open (struct serve *srv)
{
  int fd = open (srv->tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
    return fd;
  cleanup_free char *path = xasprintf ("%s/ohbox-serve-body.XXXXXX", srv->tmp_dir);
  fd = mkostemp (path, O_CLOEXEC);
  if (fd >= 0)
    unlink (path);
  return fd;
}

bool
proxy_body (struct proxy_xfer *px, const char *data, size_t len)
{
  px->has_body = true;
  if (px->body_len + len > BODY_MAX)
    return false;
  if (px->spool_fd < 0 && px->body.len + len > BODY_IN_MEMORY)
    {
      px->spool_fd = spool_open (px->srv);
      if (px->spool_fd < 0 || ohbox_write_all (px->spool_fd, px->body.data, px->body.len) < 0)
        return false;
      ohbox_buf_free (&px->body);
    }
  if (px->spool_fd >= 0)
    {
      if (ohbox_write_all (px->spool_fd, data, len) < 0)
        return false;
    }
  else
    ohbox_buf_append (&px->body, data, len);
  px->body_len += len;
  return true;
}

static ssize_t
read_answer (void *cls, uint64_t pos, char *buf, size_t max)
{
  (void) pos;
  struct proxy_xfer *px = cls;
  ohbox_error_t e = NULL;
  ssize_t n = upstream_read_body (px->up, &px->answer, buf, max, 0, &e);
  if (n < 0)
    {
      serve_log (px->srv, json_pack ("{s:s, s:s, s:s}", "event", "answer-cut", "runtime_id", px->id, "error", e->msg));
      ohbox_error_release (&e);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
  return n > 0 ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

static ssize_t
read_nothing (void *cls, uint64_t pos, char *buf, size_t max)
{
  (void) cls, (void) pos, (void) buf, (void) max;
  return MHD_CONTENT_READER_END_OF_STREAM;
}

static void
free_answer (void *cls)
{
  proxy_free (cls);
}

static struct MHD_Response *
error_response (unsigned *status, unsigned code, const char *detail)
{
  json_t *j = json_pack ("{s:s}", "detail", detail);
  char *s = j ? json_dumps (j, JSON_COMPACT) : NULL;
  json_decref (j);
  if (s == NULL)
    s = xstrdup ("{}");
  struct MHD_Response *r = MHD_create_response_from_buffer (strlen (s), s, MHD_RESPMEM_MUST_FREE);
  if (r)
    MHD_add_response_header (r, "Content-Type", "application/json");
  else
    free (s);
  *status = code;
  return r;
}

static struct upstream_request
request_of (const struct proxy_xfer *px)
{
  const char *m = px->method;
  return (struct upstream_request){
    .method = m,
    .path = px->path,
    .owner = px->id,
    .headers = px->headers,
    .n_headers = px->n_headers,
    .send_length = px->has_body || strcmp (m, "POST") == 0 || strcmp (m, "PUT") == 0 || strcmp (m, "PATCH") == 0,
    .body = px->body.data,
    .body_fd = px->spool_fd,
    .body_len = px->body_len,
  };
}

/* The answer's status and headers on MC, with its body in one buffer when
 * all of it came with them, else read as the client takes it. */
static struct MHD_Response *
answer_response (struct proxy_xfer *px, bool *streamed)
{
  struct upstream_answer *a = &px->answer;
  struct MHD_Response *r;
  *streamed = !a->done;
  if (*streamed)
    r = MHD_create_response_from_callback (a->content_length >= 0 ? (uint64_t) a->content_length : MHD_SIZE_UNKNOWN,
                                           64 * 1024, read_answer, px, free_answer);
  else if (a->no_body && a->content_length > 0)
    /* A HEAD's answer: its Content-Length is the size of what a GET would
     * get, which libmicrohttpd takes from the response's size (it sends no
     * body, and never calls the reader). */
    r = MHD_create_response_from_callback ((uint64_t) a->content_length, 1, read_nothing, NULL, NULL);
  else
    {
      size_t n = a->body.len - a->body_off;
      char *copy = xmalloc (n + 1);
      if (n > 0) /* (a HEAD's or an empty answer has no buffer at all) */
        memcpy (copy, a->body.data + a->body_off, n);
      r = MHD_create_response_from_buffer (n, copy, MHD_RESPMEM_MUST_FREE);
      if (r == NULL)
        free (copy);
    }
  const char *connection = NULL;
  for (size_t i = 0; i < a->n_headers; i++)
    if (strcasecmp (a->headers[i * 2], "Connection") == 0)
      connection = a->headers[i * 2 + 1];
  for (size_t i = 0; r && i < a->n_headers; i++)
    if (!not_forwarded (a->headers[i * 2], false) && !named_in (connection, a->headers[i * 2]))
      MHD_add_response_header (r, a->headers[i * 2], a->headers[i * 2 + 1]);
  return r;
}

int
proxy_finish (struct proxy_xfer *px, struct MHD_Connection *mc, struct upstream **upp, unsigned *status)
{
  if (upp && *upp == NULL)
    *upp = upstream_new ();
  px->up = upp ? *upp : (px->own_up = upstream_new ());
  /* A client that hangs up ends the wait for its sandbox's server. */
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info (mc, MHD_CONNECTION_INFO_CONNECTION_FD);
  upstream_watch (px->up, ci ? ci->connect_fd : -1);
  struct upstream_request rq = request_of (px);
  ohbox_error_t e = NULL;
  if (upstream_send (px->up, px->upstream, &rq, &e) < 0
      || upstream_read_head (px->up, px->upstream, &rq, &px->answer, 0, &e) < 0)
    {
      /* A request that cannot be written (a line break in a header), or no
       * answer: the sandbox's server is gone, or died under the request. */
      bool refused = e->kind == OHBOX_ERR_USAGE;
      if (!refused)
        reg_refresh (px->srv);
      cleanup_free char *d = refused ? xstrdup (e->msg) : xasprintf ("the runtime's server did not answer: %s", e->msg);
      ohbox_error_release (&e);
      struct MHD_Response *r = error_response (status, refused ? 400 : 502, d);
      int q = MHD_queue_response (mc, *status, r);
      MHD_destroy_response (r);
      proxy_free (px);
      return q;
    }
  *status = px->answer.status;
  bool streamed;
  struct MHD_Response *r = answer_response (px, &streamed);
  if (r == NULL)
    {
      proxy_free (px); /* (a response not made never calls free_answer) */
      return MHD_NO;
    }
  int q = MHD_queue_response (mc, *status, r);
  MHD_destroy_response (r); /* a streamed answer's transfer goes with it (free_answer) */
  if (!streamed)
    proxy_free (px);
  return q;
}

void
proxy_free (struct proxy_xfer *px)
{
  if (px == NULL)
    return;
  upstream_answer_end (px->up, &px->answer);
  if (px->up)
    upstream_watch (px->up, -1);
  upstream_free (px->own_up);
  struct serve *srv = px->srv;
  pthread_mutex_lock (&srv->reg.lock);
  struct sbx *s = reg_find (&srv->reg, px->id);
  if (s)
    {
      if (s->inflight)
        s->inflight--;
      s->last_activity = serve_now ();
    }
  pthread_mutex_unlock (&srv->reg.lock);
  for (size_t i = 0; i < px->n_headers; i++)
    free (px->headers[i]);
  free (px->headers);
  free (px->upstream);
  free (px->path);
  free (px->method);
  ohbox_buf_free (&px->body);
  if (px->spool_fd >= 0)
    close (px->spool_fd);
  free (px);
}

/* ---- the server's own requests to sandboxes ---- */

static void
sleep_ms (double ms)
{
  struct timespec ts = { (time_t) (ms / 1000), (long) ((ms - (double) (time_t) (ms / 1000) * 1000) * 1e6) };
  nanosleep (&ts, NULL);
}

/* The longest pause between two tries, per start waiting at once: the
 * time a start loses, on average half of it, against the tries' cost (a
 * refused connection or a 503: ~0.1 ms of CPU each). An executor answers
 * 15-40 ms after its sandbox runs: pauses growing to 50 ms made a lone
 * cold /start lose ~5 ms on average, while 2 ms for each of 20 starts at
 * once (10,000 tries a second) took the CPU their sandboxes needed: 20
 * cold starts at once 880-1060 -> 1070-1120 ms. */
#define READY_POLL_MAX_MS 2.0
#define READY_TRY_S 2.0        /* for one try's answer */
static unsigned ready_waiters; /* proxy_wait_ready calls under way */

int
proxy_wait_ready (const char *upstream, bool executor, double deadline, bool (*alive_fn) (void *), void *data,
                  ohbox_error_t *err)
{
  struct upstream *up = upstream_new ();
  const struct upstream_request rq = { .method = "GET", .path = "/alive", .body_fd = -1 };
  double wait = 1;
  __atomic_add_fetch (&ready_waiters, 1, __ATOMIC_RELAXED);
  ohbox_error_t last = NULL;
  int ret = -1;
  for (;;)
    {
      struct upstream_answer a = { 0 };
      ohbox_error_release (&last);
      int r = upstream_send (up, upstream, &rq, &last);
      if (r == 0)
        r = upstream_read_head (up, upstream, &rq, &a, serve_now () + READY_TRY_S, &last);
      unsigned code = r == 0 ? a.status : 0;
      upstream_answer_end (up, &a);
      if (r == 0 && (executor ? code == 200 : code > 0))
        {
          ret = 0;
          break;
        }
      if (r == 0)
        ohbox_error (&last, OHBOX_ERR_SANDBOX, 0, "GET /alive answered %u", code);
      if (alive_fn && !alive_fn (data))
        {
          ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "the sandbox exited");
          break;
        }
      if (serve_now () >= deadline)
        {
          *err = steal_pointer (&last);
          break;
        }
      sleep_ms (wait);
      double cap = READY_POLL_MAX_MS * __atomic_load_n (&ready_waiters, __ATOMIC_RELAXED);
      wait = wait * 1.5 > cap ? cap : wait * 1.5;
    }
  __atomic_sub_fetch (&ready_waiters, 1, __ATOMIC_RELAXED);
  ohbox_error_release (&last);
  upstream_free (up);
  return ret;
}

#define POST_TIMEOUT_S 120.0
#define POST_ANSWER_MAX (1024 * 1024)

struct proxy_post
{
  struct upstream *up, *own_up; /* OWN_UP: made for this request alone */
  char *id, *upstream, *path, *text;
  char *headers[2];
  struct upstream_request rq;
};

static void
post_free (struct proxy_post *pp)
{
  upstream_free (pp->own_up);
  free (pp->id);
  free (pp->upstream);
  free (pp->path);
  free (pp->text);
  free (pp->headers[0]);
  free (pp->headers[1]);
  free (pp);
}

int
proxy_post_begin (struct upstream **upp, const char *id, const char *upstream, const char *path, const char *key,
                  json_t *body, struct proxy_post **ret, ohbox_error_t *err)
{
  *ret = NULL;
  struct proxy_post *pp = xcalloc (1, sizeof *pp);
  if (upp && *upp == NULL)
    *upp = upstream_new ();
  pp->up = upp ? *upp : (pp->own_up = upstream_new ());
  pp->id = xstrdup (id);
  pp->upstream = xstrdup (upstream);
  pp->path = xstrdup (path);
  pp->text = json_dumps (body, JSON_COMPACT) ?: xstrdup ("{}");
  pp->headers[0] = xstrdup ("Content-Type: application/json");
  pp->headers[1] = xasprintf ("X-Session-API-Key: %s", key);
  pp->rq = (struct upstream_request){ .method = "POST",
                                      .path = pp->path,
                                      .owner = pp->id,
                                      .headers = pp->headers,
                                      .n_headers = 2,
                                      .send_length = true,
                                      .body = pp->text,
                                      .body_fd = -1,
                                      .body_len = strlen (pp->text) };
  if (upstream_send (pp->up, pp->upstream, &pp->rq, err) < 0)
    {
      ohbox_error_prefix (err, "POST %s", path);
      post_free (pp);
      return -1;
    }
  *ret = pp;
  return 0;
}

int
proxy_post_end (struct proxy_post *pp, long *status, json_t **reply, ohbox_error_t *err)
{
  if (reply)
    *reply = NULL;
  *status = 0;
  struct upstream_answer a = { 0 };
  struct ohbox_buf out = { 0 };
  double deadline = serve_now () + POST_TIMEOUT_S;
  int ret = upstream_read_head (pp->up, pp->upstream, &pp->rq, &a, deadline, err);
  char buf[16 * 1024];
  ssize_t n = 0;
  while (ret == 0 && (n = upstream_read_body (pp->up, &a, buf, sizeof buf, deadline, err)) > 0)
    if (out.len + (size_t) n > POST_ANSWER_MAX)
      ret = ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the answer is larger than %d bytes", POST_ANSWER_MAX);
    else
      ohbox_buf_append (&out, buf, (size_t) n);
  if (n < 0)
    ret = -1;
  if (ret == 0)
    {
      *status = (long) a.status;
      if (reply)
        *reply = json_loadb (out.data ? out.data : "", out.len, 0, NULL);
    }
  else
    ohbox_error_prefix (err, "POST %s", pp->path);
  upstream_answer_end (pp->up, &a);
  ohbox_buf_free (&out);
  post_free (pp);
  return ret;
}

int
proxy_post_json (struct upstream **upp, const char *id, const char *upstream, const char *path, const char *key,
                 json_t *body, long *status, json_t **reply, ohbox_error_t *err)
{
  struct proxy_post *pp;
  *status = 0;
  if (reply)
    *reply = NULL;
  if (proxy_post_begin (upp, id, upstream, path, key, body, &pp, err) < 0)
    return -1;
  return proxy_post_end (pp, status, reply, err);
}
