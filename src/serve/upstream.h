/* upstream.h: HTTP/1.1 from ohbox serve to one sandbox's server (its
 * executor's unix socket, or a port published on the host) over a
 * connection kept between the requests of one client connection.
 *
 * Requests are written here (a request line, the caller's headers, Host and
 * Content-Length); answers are read with http-parser, which the sandbox's
 * side cannot steer past its limits (80 KiB of headers, framing by
 * Content-Length, chunks or the connection's end). */
#ifndef OHBOX_SERVE_UPSTREAM_H
#define OHBOX_SERVE_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/utils.h"

struct upstream;

/* TARGET strings (serve_upstream): "unix:PATH" or "http://HOST:PORT". */

struct upstream_request
{
  const char *method;
  const char *path;     /* origin form: "/alive?x=1" */
  const char *owner;    /* the sandbox it is for (or NULL): a kept connection carries requests of one owner only */
  char *const *headers; /* "Name: value" lines, without Host and Content-Length */
  size_t n_headers;
  bool send_length; /* Content-Length goes out (a body, POST, PUT, PATCH) */
  const char *body; /* BODY_LEN bytes in memory, or */
  int body_fd;      /* >= 0: a file of BODY_LEN bytes, sent from its offset 0 */
  uint64_t body_len;
};

struct upstream_answer
{
  unsigned status;
  char **headers; /* name, value, name, value, ... */
  size_t n_headers;
  int64_t content_length; /* -1: not given */
  bool head_done, done;
  /* What follows is upstream.c's. */
  struct ohbox_buf body; /* body bytes read and not yet taken */
  size_t body_off;
  bool no_body, interim, keep, in_value;
  unsigned n_interim;  /* 1xx answers so far */
  const char *refusal; /* why a callback stopped the parser */
  uint64_t got;        /* bytes of this answer received */
};

struct upstream *upstream_new (void);
void upstream_free (struct upstream *up);

/* From now on (CLIENT_FD >= 0), until called with -1: a wait for the
 * sandbox's server on UP ends, as an error, when the client's connection
 * CLIENT_FD is hung up. */
void upstream_watch (struct upstream *up, int client_fd);

/* Sends RQ to TARGET: on UP's connection when it is open to TARGET for
 * RQ's owner and still usable, else on a new one (10 s to connect). */
int upstream_send (struct upstream *up, const char *target, const struct upstream_request *rq, ohbox_error_t *err);

/* Reads the status line and headers of the answer to RQ into A (zeroed by
 * the caller). A kept connection the server closed before answering is
 * opened again and RQ sent again, once, when RQ's method is idempotent
 * (RFC 9110 9.2.2: the server may have acted on it). DEADLINE: monotonic
 * seconds, or 0 for none. */
int upstream_read_head (struct upstream *up, const char *target, const struct upstream_request *rq,
                        struct upstream_answer *a, double deadline, ohbox_error_t *err);

/* Up to MAX bytes of A's body (decoded from chunks) into BUF; 0 at its
 * end, -1 on error. */
ssize_t upstream_read_body (struct upstream *up, struct upstream_answer *a, char *buf, size_t max, double deadline,
                            ohbox_error_t *err);

/* Done with A: frees it; UP's connection is kept only when A was read to
 * its end and the server keeps the connection. */
void upstream_answer_end (struct upstream *up, struct upstream_answer *a);

#endif
