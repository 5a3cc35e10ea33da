/* test-upstream.c: ohbox serve's HTTP/1.1 client to sandboxes' servers
 * (src/serve/upstream.c) against a scripted server: a kept connection
 * carries the next request; answers framed by length, chunks or the
 * connection's end; a 1xx before the answer; bodies in memory and from a
 * file; a kept connection the server closed is opened again (idle, and as
 * the request went out); and what the sandbox's side may send to hurt:
 * malformed status lines, endless or countless headers, bytes after the
 * answer, an answer cut short, no answer at all, 1xx answers with a body
 * or without end, trailers; a POST is not sent twice; a client that hangs
 * up ends the wait for an answer or for the server to read. */
#include "config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/utils.h"
#include "serve/dl_http_parser.h"
#include "serve/upstream.h"
#include "unit.h"

enum how
{
  KEEP,         /* answer, keep reading requests */
  CLOSE_AFTER,  /* answer, then close */
  CLOSE_SILENT, /* close without answering */
  HANG,         /* never answer; close once the client went */
  EARLY,        /* answer after the request's head, then close, its body unread */
  STALL,        /* read the request's head only, never answer; close once the client went */
};

struct step
{
  const char *answer;
  size_t len; /* 0: strlen (answer) */
  enum how how;
};

static struct
{
  int listen_fd;
  pthread_mutex_t lock;
  struct step steps[16];
  int n_steps, next;
  int accepts;
  struct ohbox_buf last; /* the last request, head and body */
} srv = { .listen_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static char sock_path[108];
static char target[160];

static bool
write_all (int fd, const char *p, size_t n)
{
  while (n > 0)
    {
      ssize_t w = send (fd, p, n, MSG_NOSIGNAL);
      if (w <= 0)
        return false;
      p += w;
      n -= (size_t) w;
    }
  return true;
}

/* One request from C into srv.last (its head only with HEAD_ONLY); false
 * at the connection's end. */
static bool
read_request (int c, bool head_only)
{
  struct ohbox_buf b = { 0 };
  char buf[4096];
  char *end = NULL;
  while (end == NULL)
    {
      ssize_t r = recv (c, buf, sizeof buf, 0);
      if (r <= 0)
        {
          ohbox_buf_free (&b);
          return false;
        }
      ohbox_buf_append (&b, buf, (size_t) r);
      end = strstr (b.data, "\r\n\r\n");
    }
  size_t head = (size_t) (end + 4 - b.data);
  const char *cl = strcasestr (b.data, "\r\nContent-Length: ");
  size_t want = cl && cl < end && !head_only ? strtoul (cl + 18, NULL, 10) : 0;
  while (b.len < head + want)
    {
      ssize_t r = recv (c, buf, sizeof buf, 0);
      if (r <= 0)
        break;
      ohbox_buf_append (&b, buf, (size_t) r);
    }
  pthread_mutex_lock (&srv.lock);
  ohbox_buf_free (&srv.last);
  srv.last = b;
  pthread_mutex_unlock (&srv.lock);
  return true;
}

/* One connection: requests answered by the script's next step. */
static void *
serve_connection (void *arg)
{
  int c = (int) (intptr_t) arg;
  for (;;)
    {
      pthread_mutex_lock (&srv.lock);
      bool early = srv.next < srv.n_steps && (srv.steps[srv.next].how == EARLY || srv.steps[srv.next].how == STALL);
      pthread_mutex_unlock (&srv.lock);
      if (!read_request (c, early))
        break;
      pthread_mutex_lock (&srv.lock);
      struct step st = srv.next < srv.n_steps ? srv.steps[srv.next++] : (struct step){ NULL, 0, CLOSE_SILENT };
      pthread_mutex_unlock (&srv.lock);
      if (st.how == CLOSE_SILENT)
        break;
      if (st.how == STALL)
        {
          struct pollfd p = { .fd = c, .events = POLLRDHUP };
          while (poll (&p, 1, -1) >= 0 && !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            ;
          break;
        }
      if (st.how == HANG)
        {
          char x;
          while (recv (c, &x, 1, 0) > 0)
            ;
          break;
        }
      /* A copy: a test done with the answer before all of it went out
       * (test_streamed reads part of one) frees its own. It is alive here:
       * the test waits for the answer it scripted. */
      size_t len = st.len ? st.len : strlen (st.answer);
      cleanup_free char *answer = xmalloc (len);
      memcpy (answer, st.answer, len);
      write_all (c, answer, len);
      if (st.how == CLOSE_AFTER || st.how == EARLY)
        break;
    }
  close (c);
  return NULL;
}

/* Each connection in a thread of its own: one a failed test left open
 * does not hold up the next test's. */
static void *
server_main (void *arg)
{
  (void) arg;
  for (;;)
    {
      int c = accept (srv.listen_fd, NULL, NULL);
      if (c < 0)
        return NULL;
      pthread_mutex_lock (&srv.lock);
      srv.accepts++;
      pthread_mutex_unlock (&srv.lock);
      pthread_t t;
      pthread_create (&t, NULL, serve_connection, (void *) (intptr_t) c);
      pthread_detach (t);
    }
}

/* The server's script from now on: the steps, in order (NULL-terminated
 * answers; HOW per step). */
static void
script (int n, const struct step *steps)
{
  pthread_mutex_lock (&srv.lock);
  if (n > 0)
    memcpy (srv.steps, steps, (size_t) n * sizeof *steps);
  srv.n_steps = n;
  srv.next = 0;
  srv.accepts = 0;
  pthread_mutex_unlock (&srv.lock);
}

static int
accepts (void)
{
  pthread_mutex_lock (&srv.lock);
  int n = srv.accepts;
  pthread_mutex_unlock (&srv.lock);
  return n;
}

static char *
last_request (void)
{
  pthread_mutex_lock (&srv.lock);
  char *s = xstrndup (srv.last.data ? srv.last.data : "", srv.last.len);
  pthread_mutex_unlock (&srv.lock);
  return s;
}

static const struct upstream_request get_alive = { .method = "GET", .path = "/alive", .body_fd = -1 };

/* One exchange of RQ: 0 with *A's head read, or -1 with *ERR. */
static int
exchange (struct upstream *up, const struct upstream_request *rq, struct upstream_answer *a, double timeout,
          ohbox_error_t *err)
{
  memset (a, 0, sizeof *a);
  if (upstream_send (up, target, rq, err) < 0)
    return -1;
  return upstream_read_head (up, target, rq, a, timeout > 0 ? ohbox_monotonic () + timeout : 0, err);
}

/* The whole body of A, NUL-terminated. */
static char *
body_of (struct upstream *up, struct upstream_answer *a, ohbox_error_t *err)
{
  struct ohbox_buf b = { 0 };
  char buf[4096];
  ssize_t n;
  double deadline = ohbox_monotonic () + 5; /* (a test that fails does not hang) */
  while ((n = upstream_read_body (up, a, buf, sizeof buf, deadline, err)) > 0)
    ohbox_buf_append (&b, buf, (size_t) n);
  if (n < 0)
    {
      ohbox_buf_free (&b);
      return NULL;
    }
  return b.data ? b.data : xstrdup ("");
}

/* One exchange of RQ on UP, answered with STATUS and BODY. */
static void
check_answer (struct upstream *up, const struct upstream_request *rq, unsigned status, const char *body)
{
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, rq, &a, 5, &err) == 0, "%s", err->msg);
  cleanup_free char *b = body_of (up, &a, &err);
  upstream_answer_end (up, &a);
  CHECK (a.status == status, "status %u, expected %u", a.status, status);
  CHECK (b && strcmp (b, body) == 0, "body `%s`, expected `%s`", b ? b : err->msg, body);
}

static const char *
header_of (const struct upstream_answer *a, const char *name)
{
  for (size_t i = 0; i < a->n_headers; i++)
    if (strcasecmp (a->headers[i * 2], name) == 0)
      return a->headers[i * 2 + 1];
  return NULL;
}

static void
test_keep_alive (void)
{
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Answer: b\r\n\r\nhi";
  script (2, (struct step[]){ { ok, 0, KEEP }, { ok, 0, KEEP } });
  struct upstream *up = upstream_new ();
  char *hdrs[] = { "X-Session-API-Key: k1", "Accept: */*" };
  struct upstream_request rq = {
    .method = "GET", .path = "/alive?x=1", .headers = hdrs, .n_headers = 2, .body_fd = -1
  };
  for (int i = 0; i < 2; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct upstream_answer a;
      CHECK (exchange (up, &rq, &a, 0, &err) == 0, "%s", err->msg);
      CHECK (a.status == 200 && a.content_length == 2);
      CHECK (header_of (&a, "X-Answer") && strcmp (header_of (&a, "X-Answer"), "b") == 0);
      cleanup_free char *body = body_of (up, &a, &err);
      CHECK (body && strcmp (body, "hi") == 0, "body %s", body ? body : err->msg);
      upstream_answer_end (up, &a);
    }
  CHECK (accepts () == 1, "one connection for both requests, not %d", accepts ());
  cleanup_free char *req = last_request ();
  CHECK (strncmp (req, "GET /alive?x=1 HTTP/1.1\r\nHost: localhost\r\nX-Session-API-Key: k1\r\nAccept: */*\r\n\r\n",
                  strlen (req))
           == 0,
         "%s", req);
  upstream_free (up);
}

/* A kept connection carries the requests of one sandbox: its address may
 * be another's once it stopped. */
static void
test_owner (void)
{
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  script (4, (struct step[]){ { ok, 0, KEEP }, { ok, 0, KEEP }, { ok, 0, KEEP }, { ok, 0, KEEP } });
  struct upstream *up = upstream_new ();
  const char *owners[] = { "a", "a", "b", "b" };
  for (int i = 0; i < 4; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct upstream_request rq = { .method = "GET", .path = "/alive", .owner = owners[i], .body_fd = -1 };
      struct upstream_answer a;
      CHECK (exchange (up, &rq, &a, 0, &err) == 0, "%s", err->msg);
      upstream_answer_end (up, &a);
    }
  CHECK (accepts () == 2, "one connection for each sandbox, not %d", accepts ());
  upstream_free (up);
}

static void
test_bodies (void)
{
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  script (3, (struct step[]){ { ok, 0, KEEP }, { ok, 0, KEEP }, { ok, 0, KEEP } });
  struct upstream *up = upstream_new ();
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  struct upstream_request rq = {
    .method = "POST", .path = "/execute_action", .send_length = true, .body = "{\"a\":1}", .body_len = 7, .body_fd = -1
  };
  CHECK (exchange (up, &rq, &a, 0, &err) == 0, "%s", err->msg);
  upstream_answer_end (up, &a);
  cleanup_free char *r1 = last_request ();
  CHECK (strstr (r1, "\r\nContent-Length: 7\r\n\r\n{\"a\":1}") != NULL, "%s", r1);
  /* From a file, from its start whatever its offset. */
  char tmpl[] = "/tmp/ohbox-test-upstream.XXXXXX";
  int fd = mkstemp (tmpl);
  unlink (tmpl);
  CHECK (fd >= 0 && write (fd, "0123456789", 10) == 10);
  rq = (struct upstream_request){ .method = "PUT", .path = "/f", .send_length = true, .body_fd = fd, .body_len = 10 };
  CHECK (exchange (up, &rq, &a, 0, &err) == 0, "%s", err->msg);
  upstream_answer_end (up, &a);
  close (fd);
  cleanup_free char *r2 = last_request ();
  CHECK (strstr (r2, "PUT /f HTTP/1.1\r\n") == r2 && strstr (r2, "Content-Length: 10\r\n\r\n0123456789") != NULL, "%s",
         r2);
  /* An empty POST says so. */
  rq = (struct upstream_request){ .method = "POST", .path = "/x", .send_length = true, .body_fd = -1 };
  CHECK (exchange (up, &rq, &a, 0, &err) == 0, "%s", err->msg);
  upstream_answer_end (up, &a);
  cleanup_free char *r3 = last_request ();
  CHECK (strstr (r3, "\r\nContent-Length: 0\r\n\r\n") != NULL, "%s", r3);
  CHECK (accepts () == 1);
  upstream_free (up);
}

/* Chunks, the connection's end, a 1xx first, a HEAD's answer. */
static void
test_framing (void)
{
  script (4,
          (struct step[]){
            { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 0, KEEP },
            { "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nz", 0,
              KEEP },
            { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 0, KEEP },
            { "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", 0, CLOSE_AFTER },
          });
  struct upstream *up = upstream_new ();
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, &get_alive, &a, 0, &err) == 0, "%s", err->msg);
  CHECK (a.content_length == -1 && header_of (&a, "Transfer-Encoding") != NULL);
  cleanup_free char *b1 = body_of (up, &a, &err);
  CHECK (b1 && strcmp (b1, "hello world") == 0, "chunks: %s", b1 ? b1 : err->msg);
  upstream_answer_end (up, &a);

  CHECK (exchange (up, &get_alive, &a, 0, &err) == 0, "%s", err->msg);
  CHECK (a.status == 201 && header_of (&a, "X-Interim") == NULL, "status %u after a 100", a.status);
  cleanup_free char *b2 = body_of (up, &a, &err);
  CHECK (b2 && strcmp (b2, "z") == 0);
  upstream_answer_end (up, &a);

  struct upstream_request head = { .method = "HEAD", .path = "/alive", .body_fd = -1 };
  CHECK (exchange (up, &head, &a, 0, &err) == 0, "%s", err->msg);
  CHECK (a.done && a.status == 200 && a.body.len == 0, "a HEAD's answer has no body");
  upstream_answer_end (up, &a);

  CHECK (exchange (up, &get_alive, &a, 0, &err) == 0, "%s", err->msg);
  cleanup_free char *b4 = body_of (up, &a, &err);
  CHECK (b4 && strcmp (b4, "until the end") == 0, "%s", b4 ? b4 : err->msg);
  upstream_answer_end (up, &a);
  CHECK (accepts () == 1, "the HEAD's answer kept the connection");
  upstream_free (up);
}

/* A large body is read as it is taken, never all held. */
static void
test_streamed (void)
{
  size_t n = 300000;
  cleanup_free char *ans = xmalloc (n + 64);
  int h = snprintf (ans, 64, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
  for (size_t i = 0; i < n; i++)
    ans[h + (int) i] = (char) ('a' + i % 26);
  script (1, (struct step[]){ { ans, (size_t) h + n, KEEP } });
  struct upstream *up = upstream_new ();
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, &get_alive, &a, 0, &err) == 0, "%s", err->msg);
  size_t total = 0, held = 0;
  bool same = true;
  char buf[1000];
  ssize_t r;
  while ((r = upstream_read_body (up, &a, buf, sizeof buf, 0, &err)) > 0)
    {
      for (ssize_t i = 0; i < r; i++)
        same &= buf[i] == (char) ('a' + (total + (size_t) i) % 26);
      total += (size_t) r;
      held = a.body.len > held ? a.body.len : held;
    }
  CHECK (r == 0 && total == n && same, "%zu of %zu bytes", total, n);
  CHECK (held <= 64 * 1024, "at most one read held: %zu bytes", held);
  upstream_answer_end (up, &a);
  upstream_free (up);
}

/* Kept connections the server closed: while idle, and as the request went
 * out (it read the request, then closed: as an idle timeout would). */
static void
test_reopened (void)
{
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  script (4, (struct step[]){ { ok, 0, CLOSE_AFTER }, { ok, 0, KEEP }, { NULL, 0, CLOSE_SILENT }, { ok, 0, KEEP } });
  struct upstream *up = upstream_new ();
  for (int i = 0; i < 3; i++)
    {
      check_answer (up, &get_alive, 200, "ok");
      usleep (20000); /* the server's close reaches this side */
    }
  CHECK (accepts () == 3, "three connections, not %d", accepts ());
  upstream_free (up);
}

static void
check_refused (const char *answer, size_t len, const char *expect)
{
  script (1, (struct step[]){ { answer, len, KEEP } });
  struct upstream *up = upstream_new ();
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, &get_alive, &a, 0, &err) < 0, "accepted: %.60s", answer);
  CHECK (err && strstr (err->msg, expect) != NULL, "%s", err ? err->msg : "no error");
  upstream_answer_end (up, &a);
  upstream_free (up);
}

/* What an untrusted server may send instead of an answer. */
static void
test_hostile_answers (void)
{
  check_refused ("HTTP/1.1 2x0 OK\r\n\r\n", 0, "malformed");
  check_refused ("SSH-2.0-OpenSSH\r\n\r\n", 0, "malformed");
  check_refused ("HTTP/1.1 600 Beyond\r\nContent-Length: 0\r\n\r\n", 0, "malformed answer");
  check_refused ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", 0, "malformed");
  check_refused ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "malformed");
  check_refused ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n", 0,
                 "malformed answer: a switch of protocols");
  /* Endless headers: refused at 80 KiB, not buffered. */
  size_t big = 200 * 1024;
  cleanup_free char *endless = xmalloc (big + 1);
  memcpy (endless, "HTTP/1.1 200 OK\r\nX-Long: ", 26);
  memset (endless + 26, 'a', big - 26);
  endless[big] = '\0';
  check_refused (endless, big, "malformed");
  /* Countless headers. */
  struct ohbox_buf many = { 0 };
  ohbox_buf_append (&many, "HTTP/1.1 200 OK\r\n", 17);
  for (int i = 0; i < 1000; i++)
    ohbox_buf_append (&many, "X: y\r\n", 6);
  ohbox_buf_append (&many, "Content-Length: 0\r\n\r\n", 21);
  check_refused (many.data, many.len, "malformed answer: more than 256 headers");
  ohbox_buf_free (&many);
  /* A 1xx has no body: one it announces is not read (nor held), its bytes
   * are not an answer. */
  check_refused ("HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                 0, "malformed");
  check_refused ("HTTP/1.1 102 Processing\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 0,
                 "malformed");
  /* Endless 1xx answers: eight, then refused. */
  struct ohbox_buf interim = { 0 };
  for (int i = 0; i < 9; i++)
    ohbox_buf_append (&interim, "HTTP/1.1 100 Continue\r\n\r\n", 25);
  ohbox_buf_append (&interim, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 38);
  check_refused (interim.data, interim.len, "more than 8 interim");
  script (1, (struct step[]){ { interim.data + 25, interim.len - 25, KEEP } });
  struct upstream *up = upstream_new ();
  check_answer (up, &get_alive, 200, "");
  upstream_free (up);
  ohbox_buf_free (&interim);
}

/* Trailers after chunks are not headers of the answer (nor glued to its
 * last one). */
static void
test_trailers (void)
{
  script (1, (struct step[]){ { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Last: v\r\n\r\n"
                                "2\r\nhi\r\n0\r\nX-Trailer: t\r\n\r\n",
                                0, KEEP } });
  struct upstream *up = upstream_new ();
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, &get_alive, &a, 5, &err) == 0, "%s", err->msg);
  cleanup_free char *b = body_of (up, &a, &err);
  CHECK (b && strcmp (b, "hi") == 0, "body `%s`", b ? b : err->msg);
  const char *last = header_of (&a, "X-Last");
  CHECK (last && strcmp (last, "v") == 0, "X-Last: `%s`", last ? last : "(none)");
  CHECK (header_of (&a, "X-Trailer") == NULL && a.n_headers == 2, "%zu headers", a.n_headers);
  upstream_answer_end (up, &a);
  upstream_free (up);
}

/* A POST whose kept connection its server closed after reading it is not
 * sent again: the server may have run it. (A GET is: test_reopened.) */
static void
test_post_not_resent (void)
{
  struct upstream_request post = {
    .method = "POST", .path = "/execute_action", .send_length = true, .body = "{}", .body_len = 2, .body_fd = -1
  };
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  script (3, (struct step[]){ { ok, 0, KEEP }, { NULL, 0, CLOSE_SILENT }, { ok, 0, KEEP } });
  struct upstream *up = upstream_new ();
  check_answer (up, &post, 200, "ok");
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, &post, &a, 5, &err) < 0 && strstr (err->msg, "without answering") != NULL, "%s",
         err ? err->msg : "answered");
  upstream_answer_end (up, &a);
  CHECK (accepts () == 1, "sent again on %d connections", accepts ());
  upstream_free (up);
}

struct hangup
{
  int fd;
  unsigned ms;
};

static void *
hang_up_later (void *arg)
{
  struct hangup *h = arg;
  usleep (h->ms * 1000);
  close (h->fd);
  return NULL;
}

/* The wait for a server that never answers, or never reads an upload,
 * ends when the client it is for hangs up (no deadline otherwise). */
static void
test_client_hangs_up (void)
{
  size_t n = 16 * 1024 * 1024;
  cleanup_free char *big = xmalloc (n);
  memset (big, 'u', n);
  struct upstream_request upload = {
    .method = "POST", .path = "/upload_file", .send_length = true, .body = big, .body_len = n, .body_fd = -1
  };
  const struct upstream_request *rqs[] = { &get_alive, &upload };
  for (int i = 0; i < 2; i++)
    {
      script (1, (struct step[]){ { NULL, 0, i == 0 ? HANG : STALL } });
      int sv[2];
      CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
      struct upstream *up = upstream_new ();
      upstream_watch (up, sv[0]);
      struct hangup h = { sv[1], 200 };
      pthread_t t;
      pthread_create (&t, NULL, hang_up_later, &h);
      cleanup_error ohbox_error_t err = NULL;
      struct upstream_answer a;
      double t0 = ohbox_monotonic ();
      memset (&a, 0, sizeof a);
      int r = upstream_send (up, target, rqs[i], &err);
      if (r == 0)
        r = upstream_read_head (up, target, rqs[i], &a, i == 0 ? ohbox_monotonic () + 10 : 0, &err);
      CHECK (r < 0 && strstr (err->msg, "client went away") != NULL, "%s", err ? err->msg : "answered");
      CHECK (ohbox_monotonic () - t0 < 5, "took %.1f s", ohbox_monotonic () - t0);
      pthread_join (t, NULL);
      upstream_answer_end (up, &a);
      upstream_free (up);
      close (sv[0]);
    }
}

/* An answer cut short, none at all, bytes after the answer. */
static void
test_cut_and_silent (void)
{
  script (2,
          (struct step[]){ { "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, CLOSE_AFTER }, { NULL, 0, HANG } });
  struct upstream *up = upstream_new ();
  cleanup_error ohbox_error_t err = NULL;
  struct upstream_answer a;
  CHECK (exchange (up, &get_alive, &a, 0, &err) == 0, "%s", err->msg);
  char *b = body_of (up, &a, &err);
  CHECK (b == NULL && err && strstr (err->msg, "in the middle of its answer") != NULL, "%s", err ? err->msg : b);
  free (b);
  upstream_answer_end (up, &a);
  ohbox_error_release (&err);
  double t0 = ohbox_monotonic ();
  CHECK (exchange (up, &get_alive, &a, 0.3, &err) < 0 && strstr (err->msg, "did not answer in time") != NULL);
  CHECK (ohbox_monotonic () - t0 < 2, "the deadline holds");
  upstream_answer_end (up, &a);
  ohbox_error_release (&err);

  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  script (2, (struct step[]){ { "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200 OK\r\n\r\n", 0, KEEP },
                              { ok, 0, KEEP } });
  check_answer (up, &get_alive, 200, "x");
  check_answer (up, &get_alive, 200, "");
  CHECK (accepts () == 2, "bytes after an answer: its connection is not used again");
  upstream_free (up);
}

/* A server that answers an upload before reading it, and closes: its
 * answer is what comes back, not the failed send. */
static void
test_answered_early (void)
{
  size_t n = 8 * 1024 * 1024;
  cleanup_free char *big = xmalloc (n);
  memset (big, 'u', n);
  script (1, (struct step[]){ { "HTTP/1.1 413 Too Large\r\nContent-Length: 4\r\n\r\nbig!", 0, EARLY } });
  struct upstream *up = upstream_new ();
  struct upstream_request rq = {
    .method = "POST", .path = "/upload_file", .send_length = true, .body = big, .body_len = n, .body_fd = -1
  };
  check_answer (up, &rq, 413, "big!");
  script (1, (struct step[]){ { "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, KEEP } });
  check_answer (up, &get_alive, 200, "");
  CHECK (accepts () == 1, "the cut connection is not used again");
  upstream_free (up);
}

/* What cannot be written refuses the request before anything goes out;
 * targets that cannot be reached say why. */
static void
test_refused_requests (void)
{
  script (0, NULL);
  struct upstream *up = upstream_new ();
  char *hdrs[] = { "X-Split: a\r\nX-Injected: 1" };
  struct upstream_request rq = { .method = "GET", .path = "/alive", .headers = hdrs, .n_headers = 1, .body_fd = -1 };
  cleanup_error ohbox_error_t e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL, e5 = NULL;
  CHECK (upstream_send (up, target, &rq, &e1) < 0 && e1->kind == OHBOX_ERR_USAGE && strstr (e1->msg, "line break"));
  struct upstream_request sp = { .method = "GET", .path = "/a b", .body_fd = -1 };
  CHECK (upstream_send (up, target, &sp, &e2) < 0 && e2->kind == OHBOX_ERR_USAGE);
  struct upstream_request bad_method = { .method = "GET /x", .path = "/", .body_fd = -1 };
  CHECK (upstream_send (up, target, &bad_method, &e3) < 0 && e3->kind == OHBOX_ERR_USAGE);
  CHECK (accepts () == 0, "nothing was sent");
  CHECK (upstream_send (up, "unix:/nonexistent/ohbox.sock", &get_alive, &e4) < 0
         && strstr (e4->msg, "connect") != NULL);
  char longp[200];
  memset (longp, 'x', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  cleanup_free char *t = xasprintf ("unix:/%s", longp);
  CHECK (upstream_send (up, t, &get_alive, &e5) < 0 && strstr (e5->msg, "too long") != NULL);
  upstream_free (up);
}

/* A published port: TCP, with the port in Host; a kept connection not
 * used after a long idle time. */
static void
test_tcp (void)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof sa;
  CHECK (bind (fd, (struct sockaddr *) &sa, sizeof sa) == 0 && listen (fd, 8) == 0
         && getsockname (fd, (struct sockaddr *) &sa, &len) == 0);
  int c = -1;
  struct upstream *up = upstream_new ();
  cleanup_free char *tcp = xasprintf ("http://127.0.0.1:%d", ntohs (sa.sin_port));
  cleanup_error ohbox_error_t err = NULL;
  CHECK (upstream_send (up, tcp, &get_alive, &err) == 0, "%s", err->msg);
  c = accept (fd, NULL, NULL);
  char buf[512] = "";
  ssize_t r = recv (c, buf, sizeof buf - 1, 0);
  cleanup_free char *host = xasprintf ("\r\nHost: 127.0.0.1:%d\r\n", ntohs (sa.sin_port));
  CHECK (r > 0 && strstr (buf, host) != NULL, "%s", buf);
  write_all (c, "HTTP/1.1 204 No Content\r\n\r\n", 27);
  struct upstream_answer a = { 0 };
  CHECK (upstream_read_head (up, tcp, &get_alive, &a, 0, &err) == 0 && a.status == 204 && a.done);
  upstream_answer_end (up, &a);
  /* Kept, but not past 4 s idle (an image's server may close it then): a
   * new connection. */
  sleep (5);
  CHECK (upstream_send (up, tcp, &get_alive, &err) == 0, "%s", err->msg);
  struct pollfd p = { .fd = fd, .events = POLLIN };
  CHECK (poll (&p, 1, 2000) == 1, "no new connection after 5 s idle");
  int c2 = accept (fd, NULL, NULL);
  CHECK (c2 >= 0 && recv (c2, buf, sizeof buf - 1, 0) > 0);
  upstream_free (up);
  close (c2);
  close (c);
  close (fd);
}

static void
start_server (void)
{
  snprintf (sock_path, sizeof sock_path, "/tmp/ohbox-test-upstream-%d.sock", (int) getpid ());
  snprintf (target, sizeof target, "unix:%s", sock_path);
  unlink (sock_path);
  srv.listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  strcpy (sa.sun_path, sock_path);
  if (bind (srv.listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (srv.listen_fd, 8) < 0)
    {
      perror ("test-upstream: listen");
      exit (1);
    }
  pthread_t t;
  pthread_create (&t, NULL, server_main, NULL);
  pthread_detach (t);
}

UNIT_MAIN_BEGIN ("test-upstream")
{
  ohbox_error_t err = NULL;
  if (ohbox_dl_http_parser_load (&err) < 0)
    {
      printf ("FAIL: test-upstream/load: %s\n", err->msg);
      return 1;
    }
  start_server ();
}
RUN_TEST (test_keep_alive);
RUN_TEST (test_owner);
RUN_TEST (test_bodies);
RUN_TEST (test_framing);
RUN_TEST (test_streamed);
RUN_TEST (test_reopened);
RUN_TEST (test_hostile_answers);
RUN_TEST (test_trailers);
RUN_TEST (test_post_not_resent);
RUN_TEST (test_client_hangs_up);
RUN_TEST (test_cut_and_silent);
RUN_TEST (test_answered_early);
RUN_TEST (test_refused_requests);
RUN_TEST (test_tcp);
unlink (sock_path);
UNIT_MAIN_END
