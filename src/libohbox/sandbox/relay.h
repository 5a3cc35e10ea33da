/* relay.h: the caller's terminal is never the command's.
 *
 * Without -t, `ohbox run` and `ohbox exec` give the command the caller's
 * stdin, stdout and stderr. Where one of them is a terminal, the command
 * would hold the caller's terminal: change its settings (`stty -echo`
 * left the operator's shell without echo), push input into it (TIOCSTI),
 * take it as controlling terminal. Such a stream gets a pipe instead, and
 * the caller's process (the monitor, or `ohbox exec`) relays between the
 * pipe and the terminal, byte for byte: output until EOF, stdin until the
 * terminal's EOF (then the command sees EOF) or until the command closed
 * its end. Streams that are not terminals (files, pipes, sockets, /dev/null)
 * are passed unchanged, at no cost, as Docker's and podman's monitors relay
 * everything and runc passes everything through.
 *
 * The relay allocates nothing per event: it copies through the caller's
 * buffer, and keeps stdin bytes the pipe could not take yet in a fixed
 * buffer of its own (a full pipe never blocks the caller's loop). */
#ifndef OHBOX_RELAY_H
#define OHBOX_RELAY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define OHBOX_RELAY_IN_BUF 4096

struct ohbox_relay
{
  int from[3];   /* stdin: the caller's fd; stdout, stderr: the pipe's read end; -1: not relayed */
  int to[3];     /* stdin: the pipe's write end (non-blocking); stdout, stderr: the caller's fd */
  bool owned[3]; /* the caller's fd of that stream is a duplicate of ours to close (> 2) */
  char in_buf[OHBOX_RELAY_IN_BUF];
  size_t in_len, in_off; /* stdin bytes read, not yet written */
  int idx[3];            /* ohbox_relay_poll: the pollfd of each stream, or -1 */
};

/* Nothing relayed (what ohbox_relay_close may be called on). */
void ohbox_relay_init (struct ohbox_relay *r);
/* FDS are the command's stdin, stdout and stderr as planned (the caller's
 * own, or /dev/null, or pipes of the caller's making). Each that is a
 * terminal is replaced in FDS by a pipe's end for the command (O_CLOEXEC,
 * the caller closes it once the command has it), its other end kept in R;
 * the fd replaced goes to R too (closed by R when above 2). R is
 * initialised in any case (ohbox_relay_close releases it). */
int ohbox_relay_setup (struct ohbox_relay *r, int fds[3], ohbox_error_t *err);
/* Whether any stream is relayed. */
bool ohbox_relay_active (const struct ohbox_relay *r);
/* Adds R's pollfds at P + *N (room for 3 needed), advancing *N. */
void ohbox_relay_poll (struct ohbox_relay *r, struct pollfd *p, int *n);
/* Moves what poll found ready, through BUF of SIZE bytes. */
void ohbox_relay_handle (struct ohbox_relay *r, const struct pollfd *p, char *buf, size_t size);
/* The command ended: copies the output still coming, until EOF or until
 * nothing came for QUIET_MS (writers that outlive the command: `ohbox
 * exec` of one that left a process behind), then closes everything. */
void ohbox_relay_finish (struct ohbox_relay *r, char *buf, size_t size, int quiet_ms);
void ohbox_relay_close (struct ohbox_relay *r);

#endif
