/* upstream.c: HTTP/1.1 to a sandbox's server (upstream.h).
 *
 * Why not libcurl, which ohbox uses for registries: on this path, one
 * request per agent action, libcurl's per-request work (a transfer's state
 * machine, its URL parsed again, a connection-cache lookup) cost 30-55 us
 * of CPU and ~40 us of round trip over what the proxy needs: one kept
 * connection to one server that ohbox started. What is hard about HTTP is
 * reading answers the sandbox's side writes, and that is left to
 * http-parser; what is written here is the request, from parts that are
 * checked for line breaks first.
 *
 * The sandbox's side is untrusted: its answer can be malformed, endless or
 * slow. http-parser bounds the headers (80 KiB) and frames the body; at
 * most one read (16 KiB) of body is held here before the client takes it,
 * and 1xx answers have none (at most 8 of them); a malformed answer is an
 * error, and its connection is closed; a wait for the sandbox ends at a
 * deadline, or when the client it is for hangs up (upstream_watch). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "serve/dl_http_parser.h"
#include "serve/upstream.h"

#define CONNECT_TIMEOUT_S 10
#define READ_SIZE (16 * 1024)
#define MAX_HEADERS 256
#define MAX_INTERIM 8 /* 1xx answers before the answer */
/* A kept connection idle this long is not used again: its server may be
 * closing it as the request goes out, and a POST is then lost rather than
 * sent twice (upstream_read_head). Below the idle limits of the servers
 * behind: ohbox's executor (60 s, conn_guard.c), uvicorn's keep-alive (5 s)
 * of an image's own server such as OpenHands' agent server. */
#define KEEP_IDLE_UNIX_S 50.0
#define KEEP_IDLE_TCP_S 4.0

struct upstream
{
  int fd;            /* -1: no connection */
  char *target;      /* what FD is connected to */
  char *owner;       /* for whom (upstream_request.owner) */
  bool used;         /* FD carried a whole answer before: its server may have closed it since */
  double idle_since; /* (monotonic) when it did */
  bool reused;       /* the request under way went out on a used connection */
  bool closed_early; /* the last read found the connection ended before any byte of the answer */
  int cut_send;      /* errno: the server stopped reading the request, maybe having answered it */
  int watch_fd;      /* >= 0: waits end when this connection (the client's) is hung up */
  http_parser parser;
  struct upstream_answer *answer; /* what the parser fills */
  char *rbuf;
};

struct upstream *
upstream_new (void)
{
  struct upstream *up = xcalloc (1, sizeof *up);
  up->fd = -1;
  up->watch_fd = -1;
  return up;
}

static void
close_conn (struct upstream *up)
{
  if (up->fd >= 0)
    close (up->fd);
  up->fd = -1;
  up->used = false;
}

void
upstream_free (struct upstream *up)
{
  if (up == NULL)
    return;
  close_conn (up);
  free (up->target);
  free (up->owner);
  free (up->rbuf);
  free (up);
}

/* ---- reading answers (http-parser's callbacks fill up->answer) ---- */

static struct upstream_answer *
answer_of (http_parser *p)
{
  return ((struct upstream *) p->data)->answer;
}

static void
drop_headers (struct upstream_answer *a)
{
  for (size_t i = 0; i < a->n_headers * 2; i++)
    free (a->headers[i]);
  free (a->headers);
  a->headers = NULL;
  a->n_headers = 0;
}

static int
on_message_begin (http_parser *p)
{
  /* Bytes after the whole answer: nothing was asked for them. */
  return answer_of (p)->done ? -1 : 0;
}

static void
append_to (char **s, const char *at, size_t len)
{
  size_t old = strlen (*s);
  *s = xrealloc (*s, old + len + 1);
  memcpy (*s + old, at, len);
  (*s)[old + len] = '\0';
}

/* A field's name or value can come in pieces (split between two reads). */
static int
on_header_field (http_parser *p, const char *at, size_t len)
{
  struct upstream_answer *a = answer_of (p);
  if (a->head_done)
    return 0; /* a trailer after chunks: not forwarded */
  if (a->n_headers == 0 || a->in_value)
    {
      if (a->n_headers == MAX_HEADERS)
        {
          a->refusal = "more than 256 headers";
          return -1;
        }
      a->headers = xrealloc (a->headers, (a->n_headers + 1) * 2 * sizeof (char *));
      a->headers[a->n_headers * 2] = xstrndup (at, len);
      a->headers[a->n_headers * 2 + 1] = xstrdup ("");
      a->n_headers++;
      a->in_value = false;
      return 0;
    }
  append_to (&a->headers[a->n_headers * 2 - 2], at, len);
  return 0;
}

static int
on_header_value (http_parser *p, const char *at, size_t len)
{
  struct upstream_answer *a = answer_of (p);
  if (a->head_done)
    return 0;
  if (a->n_headers == 0)
    return -1;
  a->in_value = true;
  append_to (&a->headers[a->n_headers * 2 - 1], at, len);
  return 0;
}

static int64_t
content_length_of (const struct upstream_answer *a)
{
  /* http-parser refused a Content-Length that is not a number, or two that
   * differ, or one beside chunks. */
  for (size_t i = 0; i < a->n_headers; i++)
    if (strcasecmp (a->headers[i * 2], "Content-Length") == 0)
      return strtoll (a->headers[i * 2 + 1], NULL, 10);
  return -1;
}

static int
on_headers_complete (http_parser *p)
{
  struct upstream_answer *a = answer_of (p);
  a->in_value = false;
  if (p->upgrade || p->status_code == 101)
    {
      a->refusal = "a switch of protocols, which nothing asked for";
      return -1;
    }
  if (p->status_code < 100 || p->status_code > 599)
    {
      a->refusal = "a status outside 100-599";
      return -1;
    }
  if (p->status_code < 200)
    {
      /* A 1xx: its headers are dropped at its end, and it has no body
       * whatever it says (http-parser would read one a Content-Length
       * announces); the bytes of one it sent are then taken for the
       * answer's start, and refused. */
      if (++a->n_interim > MAX_INTERIM)
        {
          a->refusal = "more than 8 interim (1xx) answers";
          return -1;
        }
      a->interim = true;
      return 1;
    }
  a->status = p->status_code;
  a->content_length = (p->flags & F_CHUNKED) ? -1 : content_length_of (a);
  a->head_done = true;
  return a->no_body ? 1 : 0; /* 1: the answer to a HEAD has no body */
}

static int
on_body (http_parser *p, const char *at, size_t len)
{
  struct upstream_answer *a = answer_of (p);
  if (!a->head_done)
    {
      a->refusal = "a body in an interim (1xx) answer";
      return -1;
    }
  ohbox_buf_append (&a->body, at, len);
  return 0;
}

static int
on_message_complete (http_parser *p)
{
  struct upstream_answer *a = answer_of (p);
  if (a->interim)
    {
      drop_headers (a);
      a->interim = false;
      return 0;
    }
  a->done = true;
  a->keep = http_should_keep_alive (p);
  return 0;
}

static const http_parser_settings settings = { .on_message_begin = on_message_begin,
                                               .on_header_field = on_header_field,
                                               .on_header_value = on_header_value,
                                               .on_headers_complete = on_headers_complete,
                                               .on_body = on_body,
                                               .on_message_complete = on_message_complete };

void
upstream_watch (struct upstream *up, int client_fd)
{
  up->watch_fd = client_fd;
}

/* Until UP's connection is ready for EVENTS; -1 with errno ETIMEDOUT past
 * DEADLINE (0: none), or ECANCELED when the watched client hung up: a
 * request nobody waits for any more holds no thread or connection of the
 * server, whatever the sandbox's side does. */
static int
wait_for (struct upstream *up, short events, double deadline)
{
  for (;;)
    {
      int timeout = -1;
      if (deadline > 0)
        {
          double left = deadline - ohbox_monotonic ();
          if (left <= 0)
            {
              errno = ETIMEDOUT;
              return -1;
            }
          timeout = (int) (left * 1000) + 1;
        }
      struct pollfd pfd[2] = { { .fd = up->fd, .events = events }, { .fd = up->watch_fd, .events = POLLRDHUP } };
      int n = poll (pfd, up->watch_fd >= 0 ? 2 : 1, timeout);
      if (n < 0 && errno != EINTR)
        return -1;
      if (n > 0 && up->watch_fd >= 0 && pfd[1].revents) /* (POLLRDHUP, POLLHUP, POLLERR, POLLNVAL) */
        {
          errno = ECANCELED;
          return -1;
        }
      if (n > 0 && pfd[0].revents)
        return 0;
    }
}

static int
wait_error (ohbox_error_t *err)
{
  if (errno == ETIMEDOUT)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the sandbox's server did not answer in time");
  if (errno == ECANCELED)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the client went away before the sandbox's server answered");
  return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "poll");
}

/* Reads once from UP's connection and parses it into UP's answer; -1 when
 * the connection failed or ended before the answer's end, or the answer is
 * malformed. */
static int
fill (struct upstream *up, double deadline, ohbox_error_t *err)
{
  struct upstream_answer *a = up->answer;
  if (up->rbuf == NULL)
    up->rbuf = xmalloc (READ_SIZE);
  ssize_t n;
  do
    {
      if (wait_for (up, POLLIN, deadline) < 0)
        return wait_error (err);
      n = recv (up->fd, up->rbuf, READ_SIZE, MSG_DONTWAIT);
    }
  while (n < 0 && (errno == EINTR || errno == EAGAIN));
  up->closed_early = a->got == 0 && (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)));
  if (n < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "read from the sandbox's server");
  a->got += (uint64_t) n;
  /* n == 0 tells the parser the connection ended: that ends an answer
   * framed by the connection's end, and is an error within any other. */
  size_t parsed = http_parser_execute (&up->parser, &settings, up->rbuf, (size_t) n);
  enum http_errno he = HTTP_PARSER_ERRNO (&up->parser);
  if (a->done)
    {
      if (he != HPE_OK || parsed != (size_t) n || n == 0)
        a->keep = false;
      return 0;
    }
  if (n == 0)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0,
                        a->got ? "the sandbox's server closed the connection in the middle of its answer"
                               : "the sandbox's server closed the connection without answering");
  if (he != HPE_OK)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the sandbox's server sent a malformed answer: %s",
                        a->refusal ? a->refusal : http_errno_description (he));
  return 0;
}

/* ---- sending requests ---- */

static int
connect_to (int fd, const struct sockaddr *sa, socklen_t len)
{
  /* A blocking connect bounded by SO_SNDTIMEO (the backlog of a busy
   * server's socket, a SYN nobody answers), which is then lifted: a large
   * upload is not bounded in time, as with a direct client. */
  struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_S };
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int r = connect (fd, sa, len);
  int e = errno;
  tv.tv_sec = 0;
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  errno = e;
  return r;
}

/* "HOST:PORT" of "http://HOST:PORT[/...]" (HOST may be "[v6]"). */
static char *
authority_of (const char *target)
{
  const char *s = target + strlen ("http://");
  return xstrndup (s, strcspn (s, "/"));
}

static int
open_tcp (const char *target, ohbox_error_t *err)
{
  cleanup_free char *auth = authority_of (target);
  char *colon = strrchr (auth, ':');
  if (colon == NULL || colon[1] == '\0')
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "`%s` names no port", target);
  *colon = '\0';
  char *host = auth;
  size_t hl = strlen (host);
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']')
    {
      host[hl - 1] = '\0';
      host++;
    }
  struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
  struct addrinfo *ai = NULL;
  int g = getaddrinfo (host, colon + 1, &hints, &ai);
  if (g != 0)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "`%s`: %s", target, gai_strerror (g));
  int fd = socket (ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0)
    {
      int one = 1;
      setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (connect_to (fd, ai->ai_addr, ai->ai_addrlen) < 0)
        {
          int e = errno;
          close (fd);
          fd = -1;
          errno = e;
        }
    }
  freeaddrinfo (ai);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "connect to %s", target + strlen ("http://"));
  return fd;
}

static int
open_unix (const char *target, ohbox_error_t *err)
{
  const char *path = target + strlen ("unix:");
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path)
    return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the socket path `%s` is too long for a socket address", path);
  strcpy (sa.sun_path, path);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect_to (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      errno = e;
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "connect to the sandbox's socket");
    }
  return fd;
}

/* Whether UP's connection can carry a request to TARGET for OWNER: open to
 * it for the same owner (an address a stopped sandbox had may be another's
 * now), idle (readable now means its server closed it, or wrote what nobody
 * asked for), and not for too long (KEEP_IDLE_*). */
static bool
usable (struct upstream *up, const char *target, const char *owner)
{
  if (up->fd < 0 || up->target == NULL || strcmp (up->target, target) != 0
      || strcmp (up->owner ? up->owner : "", owner ? owner : "") != 0)
    return false;
  double limit = strncmp (target, "unix:", 5) == 0 ? KEEP_IDLE_UNIX_S : KEEP_IDLE_TCP_S;
  if (up->used && ohbox_monotonic () - up->idle_since > limit)
    return false;
  struct pollfd pfd = { .fd = up->fd, .events = POLLIN | POLLRDHUP };
  return poll (&pfd, 1, 0) == 0;
}

static bool
has_line_break (const char *s)
{
  return strpbrk (s, "\r\n") != NULL;
}

static void
add (struct ohbox_buf *b, const char *s)
{
  ohbox_buf_append (b, s, strlen (s));
}

/* The request's head: request line, Host, the caller's headers,
 * Content-Length. */
static int
build_head (const char *target, const struct upstream_request *rq, struct ohbox_buf *b, ohbox_error_t *err)
{
  if (rq->method[0] == '\0' || rq->method[strspn (rq->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")] != '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the method `%.32s` is not forwarded", rq->method);
  for (const unsigned char *c = (const unsigned char *) rq->path; *c; c++)
    if (*c <= ' ' || *c == 0x7f)
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the request's path holds a space or a control character");
  if (rq->path[0] != '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the request's path does not start with /");
  add (b, rq->method);
  add (b, " ");
  add (b, rq->path);
  add (b, " HTTP/1.1\r\nHost: ");
  if (strncmp (target, "http://", 7) == 0)
    {
      cleanup_free char *auth = authority_of (target);
      add (b, auth);
    }
  else
    add (b, "localhost");
  add (b, "\r\n");
  for (size_t i = 0; i < rq->n_headers; i++)
    {
      if (has_line_break (rq->headers[i]))
        {
          ohbox_buf_free (b);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "a request header holds a line break");
        }
      add (b, rq->headers[i]);
      add (b, "\r\n");
    }
  if (rq->send_length)
    {
      char cl[48];
      snprintf (cl, sizeof cl, "Content-Length: %llu\r\n", (unsigned long long) rq->body_len);
      add (b, cl);
    }
  add (b, "\r\n");
  return 0;
}

/* The connection is non-blocking (upstream_send): a full socket buffer is
 * waited for, and the wait ends with the client (upstream_watch). */
static int
send_iov (struct upstream *up, struct iovec *iov, int n)
{
  while (n > 0)
    {
      struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t) n };
      ssize_t w = sendmsg (up->fd, &mh, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && errno == EAGAIN)
        {
          if (wait_for (up, POLLOUT, 0) < 0)
            return -1;
          continue;
        }
      if (w < 0)
        return -1;
      while (n > 0 && (size_t) w >= iov->iov_len)
        {
          w -= (ssize_t) iov->iov_len;
          iov++;
          n--;
        }
      if (n > 0)
        {
          iov->iov_base = (char *) iov->iov_base + w;
          iov->iov_len -= (size_t) w;
        }
    }
  return 0;
}

/* (sendfile has no MSG_NOSIGNAL: ohbox serve ignores SIGPIPE.) */
static int
write_request (struct upstream *up, const struct ohbox_buf *head, const struct upstream_request *rq)
{
  bool in_memory = rq->body_fd < 0 && rq->body_len > 0;
  struct iovec iov[2] = { { head->data, head->len }, { (void *) rq->body, in_memory ? rq->body_len : 0 } };
  if (send_iov (up, iov, in_memory ? 2 : 1) < 0)
    return -1;
  off_t off = 0;
  while (rq->body_fd >= 0 && (uint64_t) off < rq->body_len)
    {
      uint64_t left = rq->body_len - (uint64_t) off;
      ssize_t w = sendfile (up->fd, rq->body_fd, &off, left > (1u << 30) ? (1u << 30) : (size_t) left);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && errno == EAGAIN)
        {
          if (wait_for (up, POLLOUT, 0) < 0)
            return -1;
          continue;
        }
      if (w <= 0)
        {
          if (w == 0)
            errno = EIO; /* the file is shorter than it was */
          return -1;
        }
    }
  return 0;
}

int
upstream_send (struct upstream *up, const char *target, const struct upstream_request *rq, ohbox_error_t *err)
{
  struct ohbox_buf head = { 0 };
  if (build_head (target, rq, &head, err) < 0)
    return -1;
  int ret = 0;
  for (int attempt = 0;; attempt++)
    {
      bool fresh = !usable (up, target, rq->owner);
      if (fresh)
        {
          close_conn (up);
          int fd = strncmp (target, "unix:", 5) == 0 ? open_unix (target, err) : open_tcp (target, err);
          if (fd < 0)
            {
              ret = -1;
              break;
            }
          fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
          up->fd = fd;
          free (up->target);
          up->target = xstrdup (target);
          free (up->owner);
          up->owner = rq->owner ? xstrdup (rq->owner) : NULL;
        }
      up->reused = !fresh;
      up->cut_send = 0;
      http_parser_init (&up->parser, HTTP_RESPONSE);
      up->parser.data = up;
      if (write_request (up, &head, rq) == 0)
        break;
      int e = errno;
      bool closed = e == EPIPE || e == ECONNRESET;
      /* A kept connection its server closed meanwhile: once more on a new
       * one (the server read nothing of this request). */
      if (!fresh && attempt == 0 && closed)
        {
          close_conn (up);
          continue;
        }
      /* A server that answers before reading the whole request (a refused
       * upload) and closes: its answer is read, as a client of its own
       * would (upstream_read_head reports E when there is none). */
      if (closed)
        {
          up->cut_send = e;
          break;
        }
      close_conn (up);
      ret = e == ECANCELED ? ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the client went away during the request")
                           : ohbox_error (err, OHBOX_ERR_SANDBOX, e, "send the request to the sandbox's server");
      break;
    }
  ohbox_buf_free (&head);
  return ret;
}

static void
answer_reset (struct upstream_answer *a)
{
  drop_headers (a);
  ohbox_buf_free (&a->body);
  bool no_body = a->no_body;
  memset (a, 0, sizeof *a);
  a->no_body = no_body;
}

static bool
idempotent (const char *method)
{
  static const char *const safe[] = { "GET", "HEAD", "OPTIONS", "PUT", "DELETE" };
  for (size_t i = 0; i < sizeof safe / sizeof safe[0]; i++)
    if (strcmp (method, safe[i]) == 0)
      return true;
  return false;
}

int
upstream_read_head (struct upstream *up, const char *target, const struct upstream_request *rq,
                    struct upstream_answer *a, double deadline, ohbox_error_t *err)
{
  a->no_body = strcmp (rq->method, "HEAD") == 0;
  for (int attempt = 0;; attempt++)
    {
      up->answer = a;
      ohbox_error_t e = NULL;
      int r = 0;
      while (r == 0 && !a->head_done)
        r = fill (up, deadline, &e);
      if (r == 0)
        return 0;
      close_conn (up);
      up->answer = NULL;
      if (up->cut_send)
        {
          ohbox_error_release (&e);
          return ohbox_error (err, OHBOX_ERR_SANDBOX, up->cut_send, "send the request to the sandbox's server");
        }
      /* A kept connection its server closed as the request went out:
       * likely nothing of it was read there; once more on a new
       * connection, unless the server may have acted on it (a POST: an
       * action run twice is worse than a 502). */
      if (attempt == 0 && up->reused && up->closed_early && idempotent (rq->method))
        {
          ohbox_error_release (&e);
          answer_reset (a);
          if (upstream_send (up, target, rq, err) < 0)
            return -1;
          continue;
        }
      *err = e;
      return -1;
    }
}

ssize_t
upstream_read_body (struct upstream *up, struct upstream_answer *a, char *buf, size_t max, double deadline,
                    ohbox_error_t *err)
{
  while (a->body_off == a->body.len && !a->done)
    {
      a->body.len = a->body_off = 0; /* drained: the next read fills it from its start */
      if (up->answer != a || up->fd < 0)
        return ohbox_error (err, OHBOX_ERR_SANDBOX, 0, "the connection to the sandbox's server is gone");
      if (fill (up, deadline, err) < 0)
        {
          close_conn (up);
          up->answer = NULL;
          return -1;
        }
    }
  size_t n = a->body.len - a->body_off;
  if (n > max)
    n = max;
  if (n > 0)
    memcpy (buf, a->body.data + a->body_off, n);
  a->body_off += n;
  return (ssize_t) n;
}

void
upstream_answer_end (struct upstream *up, struct upstream_answer *a)
{
  if (up && up->answer == a)
    {
      if (a->done && a->keep && !up->cut_send)
        {
          up->used = true;
          up->idle_since = ohbox_monotonic ();
        }
      else
        close_conn (up); /* an answer not read to its end leaves its connection unusable */
      up->answer = NULL;
    }
  drop_headers (a);
  ohbox_buf_free (&a->body);
}
