/* http.c: the HTTP side of `ohbox serve` (libmicrohttpd).
 *
 * A thread per connection: a request may take as long as its work (a
 * /start waits for the sandbox's server, a proxied action for the action),
 * and a client that keeps its connection open keeps its thread and, for
 * sandbox URLs, its connection to the sandbox (proxy.c). Each request is
 *   /<64 hex>[/...]   a sandbox's URL: proxy.c (its own keys);
 *   anything else     the API (api.c, builds.c), which needs the server's
 *                     key in X-API-Key (compared in constant time) unless
 *                     the server listens on a unix socket without one.
 * Bodies are bounded before they are read (API: 2 MiB of JSON; /build: its
 * context, builds.c; sandbox URLs: 2 GiB, spooled to a file). Every
 * request ends with one JSON line in the log: time, method, path (never
 * the query: it may carry paths or names a client considers private),
 * status, duration, runtime id. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "serve/dl_http_parser.h"
#include "serve/dl_mhd.h"
#include "serve/serve_internal.h"
#include "serve/upstream.h"

#define API_BODY_MAX (2 * 1024 * 1024)

enum req_kind
{
  KIND_API,
  KIND_BUILD,
  KIND_PROXY,
};

struct conn_ctx
{
  struct upstream *up; /* to the sandbox it last talked to (proxy.c) */
};

struct req
{
  struct serve *srv;
  char *raw_uri;
  double t0;
  bool started;
  enum req_kind kind;
  char method[16];
  char *path;
  char rid[65];
  unsigned status;
  unsigned deferred_status;
  char *deferred_detail;
  struct ohbox_buf body;
  bool too_big;
  struct proxy_xfer *px;
  struct build_upload *bu;
  json_t *log_after; /* struct reply's */
  bool wake_pools_after;
};

void
serve_log (struct serve *srv, json_t *line)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r (&ts.tv_sec, &tm);
  char stamp[40];
  size_t n = strftime (stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf (stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);
  json_object_set_new (line, "ts", json_string (stamp));
  char *s = json_dumps (line, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION (9));
  json_decref (line);
  if (s == NULL)
    return;
  size_t len = strlen (s);
  s[len] = '\n';
  /* One write per line: lines of several threads never interleave. */
  ohbox_write_all (srv->cfg->log_fd, s, len + 1);
  free (s);
}

static enum MHD_Result
send_text (struct MHD_Connection *mc, unsigned status, char *text, const char *type)
{
  struct MHD_Response *r = MHD_create_response_from_buffer (strlen (text), text, MHD_RESPMEM_MUST_FREE);
  if (r == NULL)
    {
      free (text);
      return MHD_NO;
    }
  MHD_add_response_header (r, "Content-Type", type);
  enum MHD_Result q = MHD_queue_response (mc, status, r);
  MHD_destroy_response (r);
  return q;
}

static enum MHD_Result
send_reply (struct req *rq, struct MHD_Connection *mc, struct reply *out)
{
  rq->status = out->status ? out->status : 500;
  rq->log_after = steal_pointer (&out->log_after);
  rq->wake_pools_after = out->wake_pools_after;
  if (out->text)
    return send_text (mc, rq->status, steal_pointer (&out->text), out->content_type ?: "text/plain");
  char *s = out->json ? json_dumps (out->json, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
  json_decref (out->json);
  out->json = NULL;
  return send_text (mc, rq->status, s ? s : xstrdup ("{}"), "application/json");
}

static enum MHD_Result
send_detail (struct req *rq, struct MHD_Connection *mc, unsigned status, const char *detail)
{
  struct reply out = { .status = status, .json = json_pack ("{s:s}", "detail", detail) };
  return send_reply (rq, mc, &out);
}

static void *
uri_log (void *cls, const char *uri, struct MHD_Connection *mc)
{
  (void) mc;
  struct req *rq = xcalloc (1, sizeof *rq);
  rq->srv = cls;
  rq->raw_uri = xstrdup (uri ? uri : "/");
  rq->t0 = serve_now ();
  return rq;
}

static void
notify_connection (void *cls, struct MHD_Connection *mc, void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
  (void) cls;
  (void) mc;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED)
    *socket_context = xcalloc (1, sizeof (struct conn_ctx));
  else if (*socket_context)
    {
      struct conn_ctx *cc = *socket_context;
      upstream_free (cc->up);
      free (cc);
      *socket_context = NULL;
    }
}

static void
completed (void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe)
{
  (void) mc;
  struct serve *srv = cls;
  struct req *rq = *con_cls;
  if (rq == NULL)
    return;
  if (rq->wake_pools_after)
    pools_wake (srv);
  if (rq->log_after)
    serve_log (srv, steal_pointer (&rq->log_after));
  json_t *line = json_pack ("{s:s, s:s, s:i, s:f}", "method", rq->method[0] ? rq->method : "?", "path",
                            rq->path ? rq->path : "?", "status", (int) rq->status, "ms",
                            (double) (long long) ((serve_now () - rq->t0) * 1e6) / 1000.0);
  if (rq->rid[0])
    json_object_set_new (line, "runtime_id", json_string (rq->rid));
  if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
    json_object_set_new (line, "aborted", json_true ());
  serve_log (srv, line);
  metrics_count (&srv->metrics, &srv->metrics.requests);
  proxy_free (rq->px);
  build_upload_free (rq->bu);
  ohbox_buf_free (&rq->body);
  free (rq->deferred_detail);
  free (rq->path);
  free (rq->raw_uri);
  free (rq);
  *con_cls = NULL;
}

bool
serve_key_matches (const char *expected, const char *given)
{
  return expected && *expected && ohbox_secret_equal (expected, given);
}

/* "/<64 hex>" or "/<64 hex>/...": the id and what follows it (raw). */
static bool
sandbox_path (const char *path, char id[65])
{
  if (path[0] != '/')
    return false;
  for (int i = 0; i < 64; i++)
    {
      char c = path[1 + i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
        return false;
    }
  if (path[65] != '\0' && path[65] != '/' && path[65] != '?')
    return false;
  memcpy (id, path + 1, 64);
  id[64] = '\0';
  return true;
}

static void
defer (struct req *rq, unsigned status, char *detail)
{
  rq->deferred_status = status;
  free (rq->deferred_detail);
  rq->deferred_detail = detail;
}

static void
begin (struct serve *srv, struct req *rq, struct MHD_Connection *mc, const char *url, const char *method)
{
  rq->started = true;
  snprintf (rq->method, sizeof rq->method, "%s", method);
  char id[65];
  if (sandbox_path (rq->raw_uri, id) && sandbox_path (url, id))
    {
      rq->kind = KIND_PROXY;
      memcpy (rq->rid, id, sizeof id);
      const char *rest = rq->raw_uri + 65;
      const char *q = strchr (rest, '?');
      rq->path = q ? xstrndup (rq->raw_uri, (size_t) (q - rq->raw_uri)) : xstrdup (rq->raw_uri);
      unsigned status = 500;
      char *detail = NULL;
      rq->px = proxy_begin (srv, mc, id, rest, method, &status, &detail);
      if (rq->px == NULL)
        defer (rq, status, detail);
      return;
    }
  rq->path = xstrdup (url);
  if (srv->cfg->api_key
      && !serve_key_matches (srv->cfg->api_key, MHD_lookup_connection_value (mc, MHD_HEADER_KIND, "X-API-Key")))
    {
      defer (rq, 401, xstrdup ("missing or wrong API key (X-API-Key)"));
      return;
    }
  if (strcmp (url, "/build") == 0 && strcmp (method, "POST") == 0)
    {
      rq->kind = KIND_BUILD;
      unsigned status = 500;
      char *detail = NULL;
      rq->bu = build_upload_new (srv, mc, &status, &detail);
      if (rq->bu == NULL)
        defer (rq, status, detail);
      return;
    }
  rq->kind = KIND_API;
}

static enum MHD_Result
add_query (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
  (void) kind;
  if (key && value)
    json_object_set_new (cls, key, json_string (value));
  return MHD_YES;
}

static struct conn_ctx *
conn_context (struct MHD_Connection *mc)
{
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info (mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static enum MHD_Result
finish_api (struct serve *srv, struct req *rq, struct MHD_Connection *mc, const char *url)
{
  json_t *body = NULL;
  struct reply out = { 0 };
  if (rq->body.len > 0)
    {
      json_error_t je;
      body = json_loadb (rq->body.data, rq->body.len, JSON_DECODE_ANY, &je);
      if (body == NULL)
        {
          cleanup_free char *d = xasprintf ("the body is not JSON: %s", je.text);
          return send_detail (rq, mc, 400, d);
        }
    }
  else if (strcmp (rq->method, "GET") == 0 || strcmp (rq->method, "HEAD") == 0)
    {
      body = json_object ();
      MHD_get_connection_values (mc, MHD_GET_ARGUMENT_KIND, add_query, body);
    }
  else
    body = json_null ();
  struct conn_ctx *cc = conn_context (mc);
  api_dispatch (srv, cc ? &cc->up : NULL, rq->method, url, body, &out);
  json_decref (body);
  return send_reply (rq, mc, &out);
}

static enum MHD_Result
handler (void *cls, struct MHD_Connection *mc, const char *url, const char *method, const char *version,
         const char *upload_data, size_t *upload_data_size, void **con_cls)
{
  (void) version;
  struct serve *srv = cls;
  struct req *rq = *con_cls;
  if (rq == NULL)
    return MHD_NO; /* uri_log always makes one */
  if (!rq->started)
    {
      begin (srv, rq, mc, url, method);
      return MHD_YES;
    }
  if (*upload_data_size)
    {
      size_t n = *upload_data_size;
      *upload_data_size = 0;
      if (rq->deferred_status || rq->too_big)
        return MHD_YES; /* read and dropped: the error goes out at the end */
      if (rq->kind == KIND_PROXY)
        rq->too_big = !proxy_body (rq->px, upload_data, n);
      else if (rq->kind == KIND_BUILD)
        rq->too_big = !build_upload_data (rq->bu, upload_data, n);
      else if (rq->body.len + n > API_BODY_MAX)
        rq->too_big = true;
      else
        ohbox_buf_append (&rq->body, upload_data, n);
      return MHD_YES;
    }
  if (rq->deferred_status)
    return send_detail (rq, mc, rq->deferred_status, rq->deferred_detail);
  if (rq->too_big)
    return send_detail (rq, mc, 413,
                        rq->kind == KIND_BUILD ? "the build context is too large or malformed "
                                                 "(--max-build-context)"
                                               : "the request body is too large");
  if (rq->kind == KIND_PROXY)
    {
      struct conn_ctx *cc = conn_context (mc);
      struct proxy_xfer *px = steal_pointer (&rq->px);
      return proxy_finish (px, mc, cc ? &cc->up : NULL, &rq->status);
    }
  if (rq->kind == KIND_BUILD)
    {
      struct reply out = { 0 };
      build_upload_finish (rq->bu, &out);
      return send_reply (rq, mc, &out);
    }
  return finish_api (srv, rq, mc, url);
}

/* The listening socket: TCP on ADDR:PORT, or a unix socket (0600). */
static int
listen_socket (struct serve *srv, bool *v6, ohbox_error_t *err)
{
  const struct serve_config *c = srv->cfg;
  *v6 = false;
  if (c->socket_path)
    {
      struct sockaddr_un sa = { .sun_family = AF_UNIX };
      if (strlen (c->socket_path) >= sizeof sa.sun_path)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--socket `%s` is too long for a unix socket", c->socket_path);
      strcpy (sa.sun_path, c->socket_path);
      int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0)
        return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "socket");
      struct stat st;
      /* A socket left by a server that died (one per state directory: the
       * lock says none runs). */
      if (lstat (c->socket_path, &st) == 0 && S_ISSOCK (st.st_mode))
        unlink (c->socket_path);
      /* The umask makes it 0700 from its creation on (for the moment it
       * is set it can only narrow what another thread creates); 0600 then
       * says what it is: the owner's alone. */
      mode_t old = umask (0077);
      int r = bind (fd, (struct sockaddr *) &sa, sizeof sa);
      umask (old);
      if (r == 0)
        r = chmod (c->socket_path, 0600);
      if (r < 0 || listen (fd, 1024) < 0)
        {
          int e = errno;
          close (fd);
          errno = e;
          return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "listen on `%s`", c->socket_path);
        }
      return fd;
    }
  struct sockaddr_storage ss;
  memset (&ss, 0, sizeof ss);
  socklen_t len;
  struct sockaddr_in *in4 = (struct sockaddr_in *) &ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
  if (inet_pton (AF_INET, c->listen_addr, &in4->sin_addr) == 1)
    {
      in4->sin_family = AF_INET;
      in4->sin_port = htons ((uint16_t) c->listen_port);
      len = sizeof *in4;
    }
  else if (inet_pton (AF_INET6, c->listen_addr, &in6->sin6_addr) == 1)
    {
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons ((uint16_t) c->listen_port);
      len = sizeof *in6;
      *v6 = true;
    }
  else
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--listen `%s` is not an IPv4 or IPv6 address", c->listen_addr);
  int fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "socket");
  int one = 1;
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (*v6)
    setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind (fd, (struct sockaddr *) &ss, len) < 0 || listen (fd, 1024) < 0)
    {
      int e = errno;
      close (fd);
      errno = e;
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "listen on %s%s%s:%d", *v6 ? "[" : "", c->listen_addr,
                              *v6 ? "]" : "", c->listen_port);
    }
  if (c->listen_port == 0)
    {
      /* --listen ADDR:0: the port the kernel chose. */
      getsockname (fd, (struct sockaddr *) &ss, &len);
      srv->cfg->listen_port = ntohs (*v6 ? in6->sin6_port : in4->sin_port);
    }
  return fd;
}

static void
mhd_log (void *cls, const char *fmt, va_list ap)
{
  char *msg = NULL;
  if (vasprintf (&msg, fmt, ap) < 0)
    return;
  size_t n = strlen (msg);
  while (n && msg[n - 1] == '\n')
    msg[--n] = '\0';
  serve_log (cls, json_pack ("{s:s, s:s}", "event", "libmicrohttpd", "message", msg));
  free (msg);
}

int
http_start (struct serve *srv, ohbox_error_t *err)
{
  if (ohbox_dl_mhd_load (err) < 0 || ohbox_dl_http_parser_load (err) < 0)
    return -1;
  bool v6;
  int fd = listen_socket (srv, &v6, err);
  if (fd < 0)
    return -1;
  srv->base_url = serve_base_url (srv->cfg);
  /* poll(), not select(): select() refuses every connection whose socket
   * is numbered FD_SETSIZE (1024) or more, far below --connection-limit
   * once connections also hold their sockets to sandboxes. */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
  if (v6)
    flags |= MHD_USE_IPv6;
  srv->daemon = MHD_start_daemon (flags, 0, NULL, NULL, handler, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
                                  MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_URI_LOG_CALLBACK, uri_log, srv,
                                  MHD_OPTION_NOTIFY_COMPLETED, completed, srv, MHD_OPTION_NOTIFY_CONNECTION,
                                  notify_connection, srv, MHD_OPTION_CONNECTION_LIMIT, srv->cfg->connection_limit,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 600, MHD_OPTION_END);
  if (srv->daemon == NULL)
    {
      close (fd);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "libmicrohttpd did not start");
    }
  return 0;
}

void
http_stop (struct serve *srv)
{
  if (srv->daemon)
    MHD_stop_daemon (srv->daemon);
  srv->daemon = NULL;
  if (srv->cfg->socket_path)
    unlink (srv->cfg->socket_path);
}
