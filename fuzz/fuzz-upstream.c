/* fuzz-upstream.c: ohbox serve's reading of a sandbox's answer
 * (src/serve/upstream.c over http-parser): the input is what the sandbox's
 * server writes back, followed by the connection's end. Whatever it is,
 * reading ends (no hang, no crash, no leak); an answer read has a status
 * of 200-599, at most 256 headers, and a body no longer than the input;
 * the request that went out is the one asked for. */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "serve/dl_http_parser.h"
#include "serve/upstream.h"

static int listen_fd = -1;
static char target[128];

static void
setup (void)
{
  ohbox_error_t err = NULL;
  if (ohbox_dl_http_parser_load (&err) < 0)
    {
      fprintf (stderr, "fuzz-upstream: %s\n", err->msg);
      abort ();
    }
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  const char *tmp = getenv ("TMPDIR");
  snprintf (sa.sun_path, sizeof sa.sun_path, "%s/ohbox-fuzz-upstream-%d.sock", tmp && *tmp ? tmp : "/tmp",
            (int) getpid ());
  unlink (sa.sun_path);
  listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd < 0 || bind (listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (listen_fd, 4) < 0)
    abort ();
  snprintf (target, sizeof target, "unix:%s", sa.sun_path);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (listen_fd < 0)
    setup ();
  /* What fits the socket's buffer at once: the server side writes it all
   * before the client reads. */
  if (size > 100 * 1024)
    return 0;
  struct upstream *up = upstream_new ();
  const struct upstream_request rq = { .method = "GET", .path = "/alive", .body_fd = -1 };
  ohbox_error_t err = NULL;
  FUZZ_CHECK (upstream_send (up, target, &rq, &err) == 0, "%s", err ? err->msg : "");
  int c = accept (listen_fd, NULL, NULL);
  FUZZ_CHECK (c >= 0, "accept");
  char req[512];
  ssize_t r = recv (c, req, sizeof req - 1, 0);
  FUZZ_CHECK (r > 0 && strncmp (req, "GET /alive HTTP/1.1\r\nHost: localhost\r\n\r\n", (size_t) r) == 0, "the request");
  FUZZ_CHECK (size == 0 || send (c, data, size, MSG_NOSIGNAL) == (ssize_t) size, "send");
  close (c);

  struct upstream_answer a = { 0 };
  double deadline = ohbox_monotonic () + 5;
  if (upstream_read_head (up, target, &rq, &a, deadline, &err) == 0)
    {
      FUZZ_CHECK (a.status >= 200 && a.status <= 599, "status %u", a.status);
      FUZZ_CHECK (a.n_headers <= 256, "%zu headers", a.n_headers);
      char buf[4096];
      size_t total = 0;
      ssize_t n;
      while ((n = upstream_read_body (up, &a, buf, sizeof buf, deadline, &err)) > 0)
        total += (size_t) n;
      FUZZ_CHECK (total <= size, "a %zu-byte body from %zu bytes", total, size);
      FUZZ_CHECK (n == 0 || err != NULL, "an error without a message");
    }
  else
    FUZZ_CHECK (err != NULL, "a failure without a message");
  ohbox_error_release (&err);
  upstream_answer_end (up, &a);
  upstream_free (up);
  return 0;
}
