/* proxy.c: each sandbox's URL, BASE/<runtime id>/..., forwarded with
 * libcurl to its server: ohbox's executor through the unix socket the run
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
 * compared in constant time; X-API-Key is then dropped, and the session
 * key put in when only the API key came (its holder can read every session
 * key from /list anyway).
 *
 * libmicrohttpd gives each connection a thread; each keeps a libcurl multi
 * handle whose connection cache keeps the connection to the sandbox open
 * between requests (a keep-alive client costs no new connection on either
 * side). The request body is kept in memory up to 1 MiB, beyond that in an
 * unlinked file (uploads of up to 2 GiB). The answer is streamed: the
 * status and headers are sent once libcurl has them, the body as it comes
 * (a zip download of a whole workspace is never held in memory); an
 * answer complete by then goes out in one buffer. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/dl_curl.h"
#include "sandbox/sandbox.h"
#include "serve/dl_mhd.h"
#include "serve/serve_internal.h"

#define BODY_IN_MEMORY (1024 * 1024)
#define BODY_MAX (2ULL * 1024 * 1024 * 1024 + 64 * 1024 * 1024) /* the executor's upload limit, and the form */
#define OUT_HIGH_WATER (1024 * 1024)                            /* buffered answer bytes before curl pauses */

struct proxy_conn
{
  CURLM *multi;
  CURL *easy;
};

struct proxy_xfer
{
  struct serve *srv;
  char id[65];
  char *upstream, *path; /* the sandbox's server, and what follows the runtime's id in the URL */
  char *method;
  struct curl_slist *headers;
  /* the request body */
  struct ohbox_buf body;
  int spool_fd;
  uint64_t body_len, read_off;
  bool has_body;
  /* the answer */
  CURLM *multi;
  CURL *easy;
  bool added;
  long status;
  char **rh; /* "Name", "value" pairs */
  size_t n_rh;
  bool headers_done, done, paused;
  CURLcode result;
  struct ohbox_buf out;
  size_t out_off;
  int64_t content_length;
};

void
proxy_conn_free (struct proxy_conn *pc)
{
  if (pc == NULL)
    return;
  if (pc->easy)
    curl_easy_cleanup (pc->easy);
  if (pc->multi)
    curl_multi_cleanup (pc->multi);
  free (pc);
}

/* Hop-by-hop headers (RFC 9110 7.6.1) and what libcurl or libmicrohttpd
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
  if (request)
    return strcasecmp (name, "Host") == 0 || strcasecmp (name, "Expect") == 0 || strcasecmp (name, "X-API-Key") == 0;
  return strcasecmp (name, "Date") == 0;
}

static enum MHD_Result
add_header (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
  (void) kind;
  struct proxy_xfer *px = cls;
  if (key == NULL || not_forwarded (key, true))
    return MHD_YES;
  cleanup_free char *h = xasprintf ("%s: %s", key, value ? value : "");
  px->headers = curl_slist_append (px->headers, h);
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
  cleanup_free char *inject = !by_session ? xasprintf ("X-Session-API-Key: %s", s->key) : NULL;
  pthread_mutex_unlock (&srv->reg.lock);
  if (resume)
    resume_idle (srv, px->id);
  px->method = xstrdup (method);
  px->spool_fd = -1;
  px->content_length = -1;
  MHD_get_connection_values (mc, MHD_HEADER_KIND, add_header, px);
  if (inject)
    px->headers = curl_slist_append (px->headers, inject);
  /* No "Expect: 100-continue" round trip. */
  px->headers = curl_slist_append (px->headers, "Expect:");
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

static size_t
read_body (char *buf, size_t size, size_t n, void *data)
{
  struct proxy_xfer *px = data;
  size_t want = size * n;
  ssize_t r = pread (px->spool_fd, buf, want, (off_t) px->read_off);
  if (r < 0)
    return CURL_READFUNC_ABORT;
  px->read_off += (uint64_t) r;
  return (size_t) r;
}

static size_t
on_header (char *buf, size_t size, size_t n, void *data)
{
  struct proxy_xfer *px = data;
  size_t len = size * n;
  if (len >= 5 && strncmp (buf, "HTTP/", 5) == 0)
    {
      /* A new status line (after a 100 Continue): its headers only. */
      for (size_t i = 0; i < px->n_rh * 2; i++)
        free (px->rh[i]);
      px->n_rh = 0;
      return len;
    }
  if (len <= 2)
    {
      long code = 0;
      curl_easy_getinfo (px->easy, CURLINFO_RESPONSE_CODE, &code);
      if (code >= 200)
        {
          px->status = code;
          px->headers_done = true;
        }
      return len;
    }
  const char *colon = memchr (buf, ':', len);
  if (colon == NULL)
    return len;
  size_t nl = (size_t) (colon - buf), vs = nl + 1;
  while (vs < len && (buf[vs] == ' ' || buf[vs] == '\t'))
    vs++;
  size_t ve = len;
  while (ve > vs && (buf[ve - 1] == '\r' || buf[ve - 1] == '\n' || buf[ve - 1] == ' '))
    ve--;
  char *name = xstrndup (buf, nl);
  if (strcasecmp (name, "Content-Length") == 0)
    px->content_length = strtoll (buf + vs, NULL, 10);
  if (not_forwarded (name, false))
    {
      free (name);
      return len;
    }
  px->rh = xrealloc (px->rh, (px->n_rh + 1) * 2 * sizeof (char *));
  px->rh[px->n_rh * 2] = name;
  px->rh[px->n_rh * 2 + 1] = xstrndup (buf + vs, ve - vs);
  px->n_rh++;
  return len;
}

static size_t
on_data (char *buf, size_t size, size_t n, void *data)
{
  struct proxy_xfer *px = data;
  size_t len = size * n;
  if (px->out.len - px->out_off > OUT_HIGH_WATER && px->headers_done)
    {
      /* The client reads slower than the sandbox writes. */
      px->paused = true;
      return CURL_WRITEFUNC_PAUSE;
    }
  if (px->out_off > 0 && px->out_off == px->out.len)
    {
      px->out.len = 0;
      px->out_off = 0;
    }
  ohbox_buf_append (&px->out, buf, len);
  return len;
}

/* One round of MULTI's transfers: true once EASY's ended, with *RESULT. */
static bool
multi_round (CURLM *multi, CURL *easy, CURLcode *result)
{
  int running = 0;
  CURLMcode mc = curl_multi_perform (multi, &running);
  bool done = false;
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read (multi, &left)))
    if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy)
      {
        done = true;
        *result = msg->data.result;
      }
  if (mc != CURLM_OK && !done)
    {
      done = true;
      *result = CURLE_FAILED_INIT;
    }
  return done;
}

/* Drives the transfer until COND holds or it ended. */
static void
pump (struct proxy_xfer *px, bool (*cond) (struct proxy_xfer *))
{
  while (!px->done && !cond (px))
    {
      px->done = multi_round (px->multi, px->easy, &px->result);
      if (px->done || cond (px))
        break;
      curl_multi_poll (px->multi, NULL, 0, 1000, NULL);
    }
}

static bool
have_headers (struct proxy_xfer *px)
{
  return px->headers_done;
}

static bool
have_data (struct proxy_xfer *px)
{
  return px->out.len > px->out_off;
}

static ssize_t
read_answer (void *cls, uint64_t pos, char *buf, size_t max)
{
  (void) pos;
  struct proxy_xfer *px = cls;
  if (!have_data (px) && !px->done)
    {
      if (px->paused)
        {
          px->paused = false;
          curl_easy_pause (px->easy, CURLPAUSE_CONT);
        }
      pump (px, have_data);
    }
  size_t avail = px->out.len - px->out_off;
  if (avail > 0)
    {
      size_t n = avail < max ? avail : max;
      memcpy (buf, px->out.data + px->out_off, n);
      px->out_off += n;
      return (ssize_t) n;
    }
  return px->result == CURLE_OK ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
free_answer (void *cls)
{
  proxy_free (cls);
}

/* PATH of UPSTREAM (serve_upstream's): through the executor's unix socket
 * (no TCP, no NAT; serve.c), or to its published port. */
static void
set_target (CURL *c, const char *upstream, const char *path)
{
  bool unix_socket = strncmp (upstream, "unix:", 5) == 0;
  curl_easy_setopt (c, CURLOPT_UNIX_SOCKET_PATH, unix_socket ? upstream + 5 : NULL);
  cleanup_free char *url = xasprintf ("%s%s", unix_socket ? "http://localhost" : upstream, path);
  curl_easy_setopt (c, CURLOPT_URL, url);
}

static int
configure (struct proxy_xfer *px)
{
  CURL *c = px->easy;
  curl_easy_reset (c);
  set_target (c, px->upstream, px->path);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, px->headers);
  curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt (c, CURLOPT_HEADERDATA, px);
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, px);
  /* Only where the registry said: no redirect is followed, no proxy of the
   * environment is used for 127.0.0.1. */
  curl_easy_setopt (c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt (c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http");
  bool head = strcmp (px->method, "HEAD") == 0;
  if (head)
    curl_easy_setopt (c, CURLOPT_NOBODY, 1L);
  if (px->has_body || strcmp (px->method, "POST") == 0 || strcmp (px->method, "PUT") == 0
      || strcmp (px->method, "PATCH") == 0)
    {
      curl_easy_setopt (c, CURLOPT_POST, 1L);
      curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) px->body_len);
      if (px->spool_fd >= 0)
        {
          curl_easy_setopt (c, CURLOPT_READFUNCTION, read_body);
          curl_easy_setopt (c, CURLOPT_READDATA, px);
        }
      else
        curl_easy_setopt (c, CURLOPT_POSTFIELDS, px->body.data ? px->body.data : "");
    }
  if (!head && strcmp (px->method, "GET") != 0 && strcmp (px->method, "POST") != 0)
    curl_easy_setopt (c, CURLOPT_CUSTOMREQUEST, px->method);
  return 0;
}

static struct MHD_Response *
error_response (unsigned *status, unsigned code, const char *detail)
{
  json_t *j = json_pack ("{s:s}", "detail", detail);
  char *s = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  struct MHD_Response *r = MHD_create_response_from_buffer (strlen (s), s, MHD_RESPMEM_MUST_FREE);
  if (r)
    MHD_add_response_header (r, "Content-Type", "application/json");
  *status = code;
  return r;
}

/* The handles of a client connection (made at its first use); NULL when
 * libcurl cannot make them. */
static struct proxy_conn *
conn_handles (struct proxy_conn **pcp)
{
  struct proxy_conn *pc = *pcp;
  if (pc == NULL)
    {
      pc = xcalloc (1, sizeof *pc);
      pc->multi = curl_multi_init ();
      pc->easy = curl_easy_init ();
      *pcp = pc;
    }
  return pc->multi && pc->easy ? pc : NULL;
}

int
proxy_finish (struct proxy_xfer *px, struct MHD_Connection *mc, struct proxy_conn **pcp, unsigned *status)
{
  struct proxy_conn *pc = conn_handles (pcp);
  if (pc == NULL)
    {
      struct MHD_Response *r = error_response (status, 500, "cannot set up the proxy (libcurl)");
      int q = MHD_queue_response (mc, *status, r);
      MHD_destroy_response (r);
      proxy_free (px);
      return q;
    }
  px->multi = pc->multi;
  px->easy = pc->easy;
  configure (px);
  curl_multi_add_handle (px->multi, px->easy);
  px->added = true;
  pump (px, have_headers);
  struct MHD_Response *r;
  if (!px->headers_done)
    {
      /* No answer: the sandbox's server is gone, or died under the request. */
      reg_refresh (px->srv);
      cleanup_free char *d = xasprintf ("the runtime's server did not answer: %s", curl_easy_strerror (px->result));
      r = error_response (status, 502, d);
      int q = MHD_queue_response (mc, *status, r);
      MHD_destroy_response (r);
      proxy_free (px);
      return q;
    }
  *status = (unsigned) px->status;
  bool streamed = !px->done;
  if (streamed)
    r = MHD_create_response_from_callback (px->content_length >= 0 ? (uint64_t) px->content_length : MHD_SIZE_UNKNOWN,
                                           64 * 1024, read_answer, px, free_answer);
  else
    {
      size_t n = px->out.len - px->out_off;
      char *copy = xmalloc (n + 1);
      if (n > 0) /* (a HEAD's or an empty answer has no buffer at all) */
        memcpy (copy, px->out.data + px->out_off, n);
      r = MHD_create_response_from_buffer (n, copy, MHD_RESPMEM_MUST_FREE);
    }
  if (r == NULL)
    {
      proxy_free (px);
      return MHD_NO;
    }
  for (size_t i = 0; i < px->n_rh; i++)
    MHD_add_response_header (r, px->rh[i * 2], px->rh[i * 2 + 1]);
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
  if (px->added)
    curl_multi_remove_handle (px->multi, px->easy);
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
  curl_slist_free_all (px->headers);
  free (px->upstream);
  free (px->path);
  free (px->method);
  ohbox_buf_free (&px->body);
  if (px->spool_fd >= 0)
    close (px->spool_fd);
  for (size_t i = 0; i < px->n_rh * 2; i++)
    free (px->rh[i]);
  free (px->rh);
  ohbox_buf_free (&px->out);
  free (px);
}

/* ---- the server's own requests to sandboxes ---- */

static size_t
collect (char *buf, size_t size, size_t n, void *data)
{
  struct ohbox_buf *b = data;
  if (b->len + size * n > 1024 * 1024)
    return 0;
  ohbox_buf_append (b, buf, size * n);
  return size * n;
}

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
static unsigned ready_waiters; /* proxy_wait_ready calls under way */

int
proxy_wait_ready (const char *upstream, bool executor, double deadline, bool (*alive_fn) (void *), void *data,
                  ohbox_error_t *err)
{
  CURL *c = curl_easy_init ();
  if (c == NULL)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "curl_easy_init");
  struct ohbox_buf body = { 0 };
  set_target (c, upstream, "/alive");
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, &body);
  double wait = 1;
  __atomic_add_fetch (&ready_waiters, 1, __ATOMIC_RELAXED);
  CURLcode last = CURLE_OK;
  long code = 0;
  int ret = -1;
  for (;;)
    {
      body.len = 0;
      last = curl_easy_perform (c);
      code = 0;
      if (last == CURLE_OK)
        curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &code);
      if (last == CURLE_OK && (executor ? code == 200 : code > 0))
        {
          ret = 0;
          break;
        }
      if (alive_fn && !alive_fn (data))
        {
          ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "the sandbox exited");
          break;
        }
      if (serve_now () >= deadline)
        {
          if (last != CURLE_OK)
            ohbox_error (err, OHBOX_ERR_GENERIC, 0, "%s", curl_easy_strerror (last));
          else
            ohbox_error (err, OHBOX_ERR_GENERIC, 0, "GET /alive answered %ld", code);
          break;
        }
      sleep_ms (wait);
      double cap = READY_POLL_MAX_MS * __atomic_load_n (&ready_waiters, __ATOMIC_RELAXED);
      wait = wait * 1.5 > cap ? cap : wait * 1.5;
    }
  __atomic_sub_fetch (&ready_waiters, 1, __ATOMIC_RELAXED);
  ohbox_buf_free (&body);
  curl_easy_cleanup (c);
  return ret;
}

struct proxy_post
{
  struct proxy_conn *pc, *own; /* OWN: handles of this request alone */
  CURL *easy;
  char *path, *text;
  struct curl_slist *headers;
  struct ohbox_buf out;
  bool done;
  CURLcode result;
};

/* One round of PP's transfer on its multi handle (whose connection cache
 * keeps the connection open for what comes next on a client connection),
 * waiting for the sockets first with WAIT: true once it ended. */
static bool
post_step (struct proxy_post *pp, bool wait)
{
  if (wait)
    curl_multi_poll (pp->pc->multi, NULL, 0, 1000, NULL);
  pp->done = multi_round (pp->pc->multi, pp->easy, &pp->result);
  return pp->done;
}

/* Whether the whole request is on the socket (libcurl counts the body as
 * uploaded once it wrote it). */
static bool
post_sent (struct proxy_post *pp)
{
  curl_off_t up = 0;
  return curl_easy_getinfo (pp->easy, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK && up >= (curl_off_t) strlen (pp->text);
}

static void
post_free (struct proxy_post *pp)
{
  if (pp->easy && pp->pc)
    curl_multi_remove_handle (pp->pc->multi, pp->easy);
  proxy_conn_free (pp->own);
  curl_slist_free_all (pp->headers);
  ohbox_buf_free (&pp->out);
  free (pp->path);
  free (pp->text);
  free (pp);
}

int
proxy_post_begin (struct proxy_conn **pcp, const char *upstream, const char *path, const char *key, json_t *body,
                  struct proxy_post **ret, ohbox_error_t *err)
{
  *ret = NULL;
  struct proxy_post *pp = xcalloc (1, sizeof *pp);
  pp->pc = conn_handles (pcp ? pcp : &pp->own);
  if (pp->pc == NULL)
    {
      post_free (pp);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "curl_multi_init");
    }
  pp->easy = pp->pc->easy;
  curl_easy_reset (pp->easy);
  pp->path = xstrdup (path);
  pp->text = json_dumps (body, JSON_COMPACT) ?: xstrdup ("{}");
  cleanup_free char *hkey = xasprintf ("X-Session-API-Key: %s", key);
  pp->headers = curl_slist_append (NULL, "Content-Type: application/json");
  pp->headers = curl_slist_append (pp->headers, hkey);
  pp->headers = curl_slist_append (pp->headers, "Expect:");
  set_target (pp->easy, upstream, path);
  curl_easy_setopt (pp->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (pp->easy, CURLOPT_NOPROXY, "*");
  curl_easy_setopt (pp->easy, CURLOPT_TIMEOUT_MS, 120000L);
  curl_easy_setopt (pp->easy, CURLOPT_HTTPHEADER, pp->headers);
  curl_easy_setopt (pp->easy, CURLOPT_POSTFIELDS, pp->text);
  curl_easy_setopt (pp->easy, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt (pp->easy, CURLOPT_WRITEDATA, &pp->out);
  if (curl_multi_add_handle (pp->pc->multi, pp->easy) != CURLM_OK)
    {
      pp->easy = NULL;
      post_free (pp);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "POST %s: curl_multi_add_handle", path);
    }
  for (bool wait = false; !post_step (pp, wait) && !post_sent (pp); wait = true)
    ;
  *ret = pp;
  return 0;
}

int
proxy_post_end (struct proxy_post *pp, long *status, json_t **reply, ohbox_error_t *err)
{
  if (reply)
    *reply = NULL;
  *status = 0;
  while (!pp->done)
    post_step (pp, true);
  int ret = 0;
  if (pp->result != CURLE_OK)
    ret = ohbox_error (err, OHBOX_ERR_GENERIC, 0, "POST %s: %s", pp->path, curl_easy_strerror (pp->result));
  else
    {
      curl_easy_getinfo (pp->easy, CURLINFO_RESPONSE_CODE, status);
      if (reply)
        *reply = json_loadb (pp->out.data ? pp->out.data : "", pp->out.len, 0, NULL);
    }
  post_free (pp);
  return ret;
}

int
proxy_post_json (struct proxy_conn **pcp, const char *upstream, const char *path, const char *key, json_t *body,
                 long *status, json_t **reply, ohbox_error_t *err)
{
  struct proxy_post *pp;
  *status = 0;
  if (reply)
    *reply = NULL;
  if (proxy_post_begin (pcp, upstream, path, key, body, &pp, err) < 0)
    return -1;
  return proxy_post_end (pp, status, reply, err);
}
