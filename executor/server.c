/* server.c: see server.h.  Status codes and bodies follow the FastAPI
 * server (ACTION-PROTOCOL.md section 1), except that failures the Python
 * server reports as 500 "400: ..." get their real status here (the client
 * treats every status >= 400 alike). */
#include "config.h"
#include "server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conn_guard.h"
#include "obs.h"
#include "pool.h"
#include "common/utils.h"

/* Body limits: an attacker-controlled size is never buffered unbounded.
 * `write` actions carry file contents, hence the larger action limit;
 * uploads stream to disk and are bounded by executor.max_upload. */
#define MAX_ACTION_BODY (64u << 20)
#define MAX_SMALL_BODY (1u << 20)
#define POST_BUFFER 65536
/* Stack of the epoll thread and of the workers (bash, editor and zip code
 * keep their buffers small or on the heap). */
#define THREAD_STACK (512u * 1024)

enum route
{
  R_NOT_FOUND,
  R_ALIVE,
  R_SERVER_INFO,
  R_EXECUTE_ACTION,
  R_LIST_FILES,
  R_UPLOAD_FILE,
  R_DOWNLOAD_FILES,
  R_VSCODE_TOKEN,
  R_UPDATE_MCP,
  R_ADOPT,
};

static const struct
{
  const char *path;
  const char *method;
  enum route route;
} routes[] = {
  { "/alive", "GET", R_ALIVE },
  { "/server_info", "GET", R_SERVER_INFO },
  { "/execute_action", "POST", R_EXECUTE_ACTION },
  { "/list_files", "POST", R_LIST_FILES },
  { "/upload_file", "POST", R_UPLOAD_FILE },
  { "/download_files", "GET", R_DOWNLOAD_FILES },
  { "/vscode/connection_token", "GET", R_VSCODE_TOKEN },
  { "/update_mcp_server", "POST", R_UPDATE_MCP },
  { "/ohbox/adopt", "POST", R_ADOPT },
};

struct server
{
  struct MHD_Daemon *daemon;
  struct MHD_Daemon *fd_daemon; /* --listen-fd's, or NULL */
  struct executor *ex;
  struct pool *pool;
  struct conn_guard *guard;
};

struct request
{
  struct executor *ex;
  struct MHD_Connection *conn;
  enum route route;
  /* Set by a worker before it resumes the connection: the reply the epoll
   * thread queues when the handler is called again. */
  bool in_worker;
  struct MHD_Response *resp;
  unsigned int resp_status;
  /* download_files: the query parameter, read in the epoll thread. */
  char *path;
  struct ohbox_buf body;
  size_t limit;
  bool too_big;
  bool answered;
  /* An error decided before the body arrived: answered once the body has
   * been read (and dropped), so the client never writes into a closed
   * connection. */
  unsigned int deferred_status;
  char *deferred_detail;
  /* upload_file */
  struct MHD_PostProcessor *pp;
  struct upload *up;
  char *dest;
  bool recursive;
  int up_status;
  char *up_detail;
};

/* Replies are built as (status, response) so that a worker can build one
 * for the epoll thread to queue. */
static struct MHD_Response *
json_response (json_t *j)
{
  char *s = json_dumps (j, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref (j);
  if (s == NULL)
    s = xstrdup ("{\"detail\":\"An unexpected error occurred. Please try again later.\"}");
  struct MHD_Response *r = MHD_create_response_from_buffer (strlen (s), s, MHD_RESPMEM_MUST_FREE);
  if (r == NULL)
    {
      free (s);
      return NULL;
    }
  MHD_add_response_header (r, "Content-Type", "application/json");
  return r;
}

static struct MHD_Response *
set_json (unsigned int *status, unsigned int code, json_t *j)
{
  *status = code;
  return json_response (j);
}

static struct MHD_Response *
set_detail (unsigned int *status, unsigned int code, const char *detail)
{
  return set_json (status, code, json_pack ("{s:s}", "detail", detail));
}

/* What a handler returned: its JSON (200), or, when NULL, the status ST and
 * the DETAIL it gave. */
static struct MHD_Response *
set_result (unsigned int *status, json_t *reply, int st, const char *detail)
{
  if (reply == NULL)
    return set_detail (status, (unsigned) st, detail);
  return set_json (status, 200, reply);
}

static enum MHD_Result
queue (struct MHD_Connection *c, unsigned int status, struct MHD_Response *r)
{
  if (r == NULL)
    return MHD_NO; /* out of memory in libmicrohttpd: the connection is closed */
  enum MHD_Result ret = MHD_queue_response (c, status, r);
  MHD_destroy_response (r);
  return ret;
}

static enum MHD_Result
reply_detail (struct MHD_Connection *c, unsigned int status, const char *detail)
{
  unsigned int st;
  struct MHD_Response *r = set_detail (&st, status, detail);
  return queue (c, st, r);
}

struct key_check
{
  const char *expected;
  unsigned given, matching;
};

static enum MHD_Result
key_header_iter (void *cls, enum MHD_ValueKind kind OHBOX_UNUSED, const char *name, const char *value)
{
  struct key_check *k = cls;
  if (strcasecmp (name, "X-Session-API-Key") == 0)
    {
      k->given++;
      k->matching += ohbox_secret_equal (k->expected, value);
    }
  return MHD_YES;
}

/* The request carries the key, and only the key: a request that gives the
 * header twice with different values is refused whichever copy comes first,
 * so no proxy in front can read one copy while we read the other. */
static bool
request_has_key (struct MHD_Connection *c, const char *expected)
{
  struct key_check k = { .expected = expected };
  MHD_get_connection_values (c, MHD_HEADER_KIND, key_header_iter, &k);
  return k.given > 0 && k.matching == k.given;
}

static bool
query_bool (const char *v)
{
  return v
         && (strcasecmp (v, "true") == 0 || strcmp (v, "1") == 0 || strcasecmp (v, "yes") == 0
             || strcasecmp (v, "on") == 0);
}

static enum MHD_Result
post_iter (void *cls, enum MHD_ValueKind kind OHBOX_UNUSED, const char *key, const char *filename,
           const char *content_type OHBOX_UNUSED, const char *transfer_encoding OHBOX_UNUSED, const char *data,
           uint64_t off OHBOX_UNUSED, size_t size)
{
  struct request *rq = cls;
  if (rq->up_status)
    return MHD_NO;
  if (strcmp (key, "file") != 0)
    return MHD_YES; /* other form fields are ignored, as FastAPI does */
  if (rq->up == NULL)
    {
      if (upload_begin (rq->ex, rq->dest, filename ? filename : "upload", rq->recursive, &rq->up, &rq->up_status,
                        &rq->up_detail)
          < 0)
        return MHD_NO;
    }
  if (size && upload_data (rq->up, data, size, &rq->up_status, &rq->up_detail) < 0)
    return MHD_NO;
  return MHD_YES;
}

static void
request_completed (void *cls, struct MHD_Connection *c, void **con_cls,
                   enum MHD_RequestTerminationCode toe OHBOX_UNUSED)
{
  struct server *srv = cls;
  struct request *rq = *con_cls;
  if (rq == NULL)
    return;
  conn_guard_request_ends (srv->guard, c);
  if (rq->pp)
    MHD_destroy_post_processor (rq->pp);
  if (rq->up)
    upload_abort (rq->up);
  if (rq->resp)
    MHD_destroy_response (rq->resp);
  free (rq->body.data);
  free (rq->path);
  free (rq->dest);
  free (rq->up_detail);
  free (rq->deferred_detail);
  free (rq);
  *con_cls = NULL;
}

static json_t *
parse_body (struct request *rq, json_error_t *jerr)
{
  return json_loadb (rq->body.data ? rq->body.data : "", rq->body.len, JSON_DECODE_ANY, jerr);
}

/* BODY (taken) through HANDLER, which returns its reply or NULL with a
 * status and a detail. */
static struct MHD_Response *
handle_body (struct executor *ex, json_t *body,
             json_t *(*handler) (struct executor *ex, json_t *body, int *status, char **detail), unsigned int *status)
{
  int st = 500;
  cleanup_free char *detail = NULL;
  json_t *reply = handler (ex, body, &st, &detail);
  json_decref (body);
  return set_result (status, reply, st, detail);
}

/* True for the requests that can block (a bash command, a file system
 * walk, unpacking a zip, zipping a tree, an adoption that starts a
 * session): run by a worker. */
static bool
route_blocks (enum route r)
{
  return r == R_EXECUTE_ACTION || r == R_LIST_FILES || r == R_UPLOAD_FILE || r == R_DOWNLOAD_FILES || r == R_ADOPT;
}

/* Builds the reply to RQ (its body fully read) into *STATUS and the
 * returned response (NULL: libmicrohttpd out of memory).  Runs in the epoll
 * thread for the quick routes and in a worker for the others; it does not
 * touch the connection.  A download also gets *DL, the zip the caller
 * streams once the response is queued. */
static struct MHD_Response *
respond (struct server *srv, struct request *rq, unsigned int *status, struct download **dl)
{
  struct executor *ex = srv->ex;
  switch (rq->route)
    {
    case R_ALIVE:
      return set_json (status, 200, json_pack ("{s:s}", "status", "ok"));

    case R_SERVER_INFO:
      return set_json (status, 200, executor_server_info (ex));

    case R_VSCODE_TOKEN:
      /* No VSCode server in ohbox sandboxes: the client then shows no URL. */
      return set_json (status, 200, json_pack ("{s:n}", "token"));

    case R_UPDATE_MCP:
      {
        json_error_t jerr;
        json_t *body = parse_body (rq, &jerr);
        if (!json_is_array (body))
          {
            json_decref (body);
            return set_detail (status, 400, "Invalid request: the body must be a JSON array of MCP server configs");
          }
        size_t n = json_array_size (body);
        json_decref (body);
        cleanup_free char *log = n ? xasprintf ("ohbox-executor has no MCP proxy: %zu stdio MCP server(s) were "
                                                "not started and /mcp/sse is not served",
                                                n)
                                   : xstrdup ("");
        return set_json (status, 200,
                         json_pack ("{s:s, s:s}", "detail", "MCP server updated successfully", "router_error_log",
                                    log));
      }

    case R_EXECUTE_ACTION:
      {
        json_error_t jerr;
        json_t *body = parse_body (rq, &jerr);
        if (body == NULL)
          {
            cleanup_free char *d = xasprintf ("Invalid request: the body is not JSON: %s", jerr.text);
            return set_detail (status, 400, d);
          }
        return handle_body (ex, body, executor_execute_action, status);
      }

    case R_ADOPT:
      {
        json_error_t jerr;
        return handle_body (ex, parse_body (rq, &jerr), executor_adopt, status);
      }

    case R_LIST_FILES:
      {
        json_error_t jerr;
        json_t *body = rq->body.len ? parse_body (rq, &jerr) : json_object ();
        json_t *list = executor_list_files (ex, body);
        json_decref (body);
        return set_json (status, 200, list);
      }

    case R_UPLOAD_FILE:
      {
        if (rq->up_status)
          return set_detail (status, (unsigned) rq->up_status, rq->up_detail ? rq->up_detail : "upload failed");
        if (rq->up == NULL)
          return set_detail (status, 400, "Invalid request: no multipart part named `file`");
        int st = 500;
        cleanup_free char *detail = NULL;
        struct upload *up = steal_pointer (&rq->up);
        json_t *r = upload_finish (up, rq->recursive, &st, &detail);
        return set_result (status, r, st, detail);
      }

    case R_DOWNLOAD_FILES:
      {
        int st = 500;
        cleanup_free char *detail = NULL;
        if (rq->path == NULL)
          return set_detail (status, 400, "Invalid request: the query parameter `path` is required");
        struct download *d = NULL;
        int fd = download_start (rq->path, &d, &st, &detail);
        if (fd < 0)
          return set_detail (status, (unsigned) st, detail);
        /* The epoll thread reads the pipe while the worker writes the zip
         * into it (download_stream): a read waits at most for the next
         * block of a regular file. */
        struct MHD_Response *r = MHD_create_response_from_pipe (fd);
        if (r == NULL)
          {
            close (fd);
            download_free (d);
            return set_detail (status, 500, "cannot create the response");
          }
        const char *base = strrchr (rq->path, '/');
        base = base && base[1] ? base + 1 : rq->path;
        cleanup_free char *disp = xasprintf ("attachment; filename=\"%s.zip\"", base);
        MHD_add_response_header (r, "Content-Type", "application/zip");
        MHD_add_response_header (r, "Content-Disposition", disp);
        *status = 200;
        *dl = d;
        return r;
      }

    case R_NOT_FOUND:
    default:
      return set_detail (status, 404, "Not Found");
    }
}

/* A worker: builds the reply and hands the connection back to the epoll
 * thread.  RQ belongs to the connection: once resumed, it may be freed
 * (request_completed) at any moment, so nothing touches it afterwards. */
static void
work (void *job, void *arg)
{
  struct server *srv = arg;
  struct request *rq = job;
  struct download *dl = NULL;
  unsigned int status = 500;
  struct MHD_Response *r = respond (srv, rq, &status, &dl);
  rq->resp = r;
  rq->resp_status = status;
  MHD_resume_connection (rq->conn);
  if (dl)
    download_stream (dl);
}

/* A job still queued when the server stops: answered 503. */
static void
cancel (void *job, void *arg OHBOX_UNUSED)
{
  struct request *rq = job;
  rq->resp = set_detail (&rq->resp_status, 503, "ohbox-executor is shutting down");
  MHD_resume_connection (rq->conn);
}

/* Called by pool_submit under the queue's lock: the connection is suspended
 * before any worker can take (and resume) it. */
static void
suspend (void *job)
{
  struct request *rq = job;
  rq->in_worker = true;
  MHD_suspend_connection (rq->conn);
}

/* An adoption that keeps the session started ahead (adopt.c) is a few
 * system calls: answered here, it spares a pooled sandbox's first request
 * two thread hand-offs. */
static bool
quick_adoption (struct server *srv, struct request *rq)
{
  json_error_t jerr;
  json_t *body = parse_body (rq, &jerr);
  bool quick = executor_adopt_is_quick (srv->ex, body);
  json_decref (body);
  return quick;
}

static enum MHD_Result
finish (struct server *srv, struct MHD_Connection *c, struct request *rq)
{
  if (route_blocks (rq->route) && !(rq->route == R_ADOPT && quick_adoption (srv, rq)))
    {
      if (pool_submit (srv->pool, rq, suspend) == 0)
        return MHD_YES;
      /* Full: refused now rather than holding the epoll thread. */
      return reply_detail (c, 503,
                           "ohbox-executor is busy: too many requests are waiting for a worker "
                           "(OHBOX_EXECUTOR_QUEUE); retry later");
    }
  unsigned int status = 500;
  struct download *dl = NULL;
  struct MHD_Response *r = respond (srv, rq, &status, &dl);
  return queue (c, status, r);
}

static enum MHD_Result
handler (void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version OHBOX_UNUSED,
         const char *upload_data, size_t *upload_data_size, void **con_cls)
{
  struct server *srv = cls;
  struct executor *ex = srv->ex;
  struct request *rq = *con_cls;

  if (rq == NULL)
    {
      rq = xcalloc (1, sizeof (*rq));
      rq->ex = ex;
      rq->conn = c;
      *con_cls = rq;
      rq->route = R_NOT_FOUND;
      bool path_known = false;
      for (size_t i = 0; i < sizeof (routes) / sizeof (routes[0]); i++)
        if (strcmp (url, routes[i].path) == 0)
          {
            path_known = true;
            if (strcmp (method, routes[i].method) == 0)
              rq->route = routes[i].route;
          }
      /* Only a request with the session key holds its connection for as
       * long as it needs (conn_guard.h). */
      const char *key = executor_api_key (ex);
      bool has_key = key == NULL || request_has_key (c, key);
      conn_guard_request_begins (srv->guard, c, has_key && rq->route != R_NOT_FOUND);
      if (rq->route == R_NOT_FOUND)
        {
          rq->deferred_status = path_known ? 405 : 404;
          rq->deferred_detail = xstrdup (path_known ? "Method Not Allowed" : "Not Found");
          return MHD_YES;
        }
      if (!has_key && rq->route != R_ALIVE && rq->route != R_SERVER_INFO)
        {
          rq->deferred_status = 403;
          rq->deferred_detail = xstrdup ("Invalid API Key");
          return MHD_YES;
        }
      /* adopt.c: on standby nothing else is served (and no session
       * exists to serve it with). */
      if (executor_on_standby (ex) && rq->route != R_ALIVE && rq->route != R_SERVER_INFO && rq->route != R_ADOPT)
        {
          rq->deferred_status = 503;
          rq->deferred_detail = xstrdup ("ohbox-executor is on standby: it has no session yet");
          return MHD_YES;
        }
      if (!executor_on_standby (ex) && rq->route == R_ADOPT)
        {
          rq->deferred_status = 409;
          rq->deferred_detail = xstrdup ("This executor already has its session");
          return MHD_YES;
        }
      rq->limit = rq->route == R_EXECUTE_ACTION ? MAX_ACTION_BODY : MAX_SMALL_BODY;
      if (rq->route == R_DOWNLOAD_FILES)
        {
          const char *path = MHD_lookup_connection_value (c, MHD_GET_ARGUMENT_KIND, "path");
          rq->path = path ? xstrdup (path) : NULL;
        }
      if (rq->route == R_UPLOAD_FILE)
        {
          const char *dest = MHD_lookup_connection_value (c, MHD_GET_ARGUMENT_KIND, "destination");
          rq->dest = xstrdup (dest ? dest : "/");
          rq->recursive = query_bool (MHD_lookup_connection_value (c, MHD_GET_ARGUMENT_KIND, "recursive"));
          if (rq->dest[0] != '/')
            {
              rq->deferred_status = 400;
              rq->deferred_detail = xstrdup ("Destination must be an absolute path");
              return MHD_YES;
            }
          rq->pp = MHD_create_post_processor (c, POST_BUFFER, post_iter, rq);
          if (rq->pp == NULL)
            {
              rq->deferred_status = 400;
              rq->deferred_detail = xstrdup ("Invalid request: upload_file expects multipart/form-data");
              return MHD_YES;
            }
        }
      return MHD_YES;
    }

  if (*upload_data_size)
    {
      if (rq->answered || rq->deferred_status)
        {
          *upload_data_size = 0;
          return MHD_YES;
        }
      if (rq->route == R_UPLOAD_FILE)
        {
          if (!rq->up_status && MHD_post_process (rq->pp, upload_data, *upload_data_size) != MHD_YES && !rq->up_status)
            {
              rq->up_status = 400;
              rq->up_detail = xstrdup ("Invalid request: malformed multipart body");
            }
        }
      else if (rq->body.len + *upload_data_size > rq->limit)
        rq->too_big = true;
      else if (!rq->too_big)
        ohbox_buf_append (&rq->body, upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }

  if (rq->answered)
    {
      if (!rq->in_worker)
        return MHD_YES;
      /* Called again once a worker resumed the connection: its reply. */
      struct MHD_Response *r = steal_pointer (&rq->resp);
      return queue (c, rq->resp_status, r);
    }
  rq->answered = true;
  if (rq->deferred_status)
    return reply_detail (c, rq->deferred_status, rq->deferred_detail);
  if (rq->too_big)
    {
      cleanup_free char *d = xasprintf ("Request body too large (limit %zu bytes)", rq->limit);
      return reply_detail (c, 413, d);
    }
  return finish (srv, c, rq);
}

/* ADDR:PORT as a socket address (IPv4 or IPv6 literal). */
static int
listen_sockaddr (const char *addr, int port, struct sockaddr_storage *out)
{
  memset (out, 0, sizeof *out);
  struct sockaddr_in *in4 = (struct sockaddr_in *) out;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) out;
  if (inet_pton (AF_INET, addr, &in4->sin_addr) == 1)
    {
      in4->sin_family = AF_INET;
      in4->sin_port = htons ((uint16_t) port);
      return 0;
    }
  if (inet_pton (AF_INET6, addr, &in6->sin6_addr) == 1)
    {
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons ((uint16_t) port);
      return 0;
    }
  return -1;
}

/* A daemon of S on PORT of ADDR (NULL: every address), or on the
 * listening socket LISTEN_FD (>= 0), behind S's connection guard. */
static struct MHD_Daemon *
start_daemon (struct server *s, unsigned int flags, int port, const struct sockaddr *addr, int listen_fd)
{
  return MHD_start_daemon (flags, (uint16_t) port, conn_guard_accept, s->guard, handler, s, MHD_OPTION_NOTIFY_COMPLETED,
                           request_completed, s, MHD_OPTION_NOTIFY_CONNECTION, conn_guard_notify, s->guard,
                           MHD_OPTION_CONNECTION_LIMIT, conn_guard_mhd_limit (s->guard), MHD_OPTION_CONNECTION_TIMEOUT,
                           conn_guard_idle_timeout (s->guard), MHD_OPTION_THREAD_STACK_SIZE, (size_t) THREAD_STACK,
                           MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_END);
}

/* --listen-fd: the same service on a socket made by whoever started us
 * (a unix socket of `ohbox run`), in a daemon of its own (one listening
 * socket each). */
static int
listen_on_fd (struct server *s, unsigned int flags, ohbox_error_t *err)
{
  int fd = s->ex->listen_fd, listening = 0;
  socklen_t len = sizeof listening;
  if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
    return ohbox_error (err, OHBOX_ERR_USAGE, errno, "--listen-fd %d is not a listening socket", fd);
  s->fd_daemon = start_daemon (s, flags, 0, NULL, fd);
  if (s->fd_daemon == NULL)
    return ohbox_error (err, OHBOX_ERR_GENERIC, errno, "serve --listen-fd %d", fd);
  return 0;
}

int
server_start (struct executor *ex, struct server **out, ohbox_error_t *err)
{
  struct server *s = xcalloc (1, sizeof (*s));
  s->ex = ex;
  if (conn_guard_new (&s->guard, err) < 0)
    {
      free (s);
      return -1;
    }
  if (pool_start (ex->workers, ex->queue_len, THREAD_STACK, work, cancel, s, &s->pool, err) < 0)
    {
      conn_guard_free (s->guard);
      free (s);
      return ohbox_error_prefix (err, "executor workers");
    }
  /* One epoll thread for every connection (no thread per connection: a new
   * task could fail under a fork bomb); suspend/resume hands the blocking
   * requests to the workers.  The guard decides which connections are
   * accepted and kept (conn_guard.h): libmicrohttpd's own limit is above
   * the guard's, and its inactivity timeout is the idle timeout. */
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
  /* --listen-address: that address only (ohbox run always gives one); else
   * every address, dual stack where the kernel has IPv6. */
  struct sockaddr_storage addr;
  bool one_address = ex->listen_address != NULL;
  if (one_address && listen_sockaddr (ex->listen_address, ex->port, &addr) < 0)
    {
      pool_stop (s->pool);
      conn_guard_free (s->guard);
      free (s);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--listen-address `%s` is not an IPv4 or IPv6 address",
                          ex->listen_address);
    }
  if (one_address && addr.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  for (int attempt = 0; attempt < 2 && s->daemon == NULL; attempt++)
    s->daemon = start_daemon (s, flags | (attempt == 0 && !one_address ? MHD_USE_DUAL_STACK : 0), ex->port,
                              one_address ? (const struct sockaddr *) &addr : NULL, -1);
  if (s->daemon == NULL)
    {
      int e = errno;
      pool_stop (s->pool);
      conn_guard_free (s->guard);
      free (s);
      errno = e;
      return ohbox_error (err, OHBOX_ERR_GENERIC, errno, "listen on port %d of %s", ex->port,
                          one_address ? ex->listen_address : "every address");
    }
  if (ex->listen_fd && listen_on_fd (s, flags & ~(unsigned) MHD_USE_IPv6, err) < 0)
    {
      server_stop (s);
      return -1;
    }
  *out = s;
  return 0;
}

void
server_stop (struct server *s)
{
  if (s == NULL)
    return;
  /* libmicrohttpd must not be stopped with suspended connections: the
   * queued requests are answered 503 and the running ones finish first. */
  pool_stop (s->pool);
  if (s->fd_daemon)
    MHD_stop_daemon (s->fd_daemon);
  MHD_stop_daemon (s->daemon);
  conn_guard_free (s->guard);
  free (s);
}
