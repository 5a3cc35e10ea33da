/* conn_guard.h: who may hold the executor's connections (issue 14 item 3).
 *
 * The executor is reachable by clients other than its own: without a
 * guard, 256 idle TCP connections filled libmicrohttpd's table, /alive and
 * every action then hung, and idle connections were kept for an hour.
 *
 * Every connection is in one of three states:
 *   waiting    no request in progress: just accepted, between keep-alive
 *              requests, or still sending its request headers;
 *   untrusted  a request whose headers are in but which carries no valid
 *              X-Session-API-Key (or goes to no route): /alive, errors;
 *   trusted    a request with the session key (or any request when the
 *              executor has no key): actions, uploads, downloads.
 * Waiting and untrusted connections must finish their request within the
 * header timeout of entering that state, or they are closed (a slowloris
 * that drips its headers gains nothing), and they are the ones given up
 * when a connection needs room: at the per-address limit the oldest of
 * them from the same address is closed for the newcomer, at the global
 * limit the oldest of the address that holds the most.  Only when every
 * connection concerned is busy with a trusted request is a newcomer
 * refused, and then at once (its socket is closed, no backlog fills up).
 * Trusted requests are never cut by the guard: a `run` action of many
 * minutes is server work, not an idle connection (libmicrohttpd's own
 * inactivity timeout, the idle timeout, covers a client that stops sending
 * its body or reading its reply; a suspended request is not subject to it).
 *
 * Addresses: an IPv4 address (also as ::ffff:a.b.c.d) counts on its own,
 * IPv6 addresses count per /64 (one host commonly holds a whole /64).
 *
 * Threads: the callbacks run in libmicrohttpd's epoll thread; a watchdog
 * thread, created at start, closes the connections whose time ran out.  A
 * connection is closed with shutdown(2) under the guard's lock, and
 * libmicrohttpd reports a connection closed (conn_guard_notify) before it
 * closes the descriptor, so the guard never touches a reused descriptor.
 *
 * Environment (read once by conn_guard_new):
 *   OHBOX_EXECUTOR_CONNECTIONS              global limit (default 256, 8-4096)
 *   OHBOX_EXECUTOR_CONNECTIONS_PER_ADDRESS  per address (default 64, 1-global)
 *   OHBOX_EXECUTOR_HEADER_TIMEOUT           seconds (default 10, 0.1-3600)
 *   OHBOX_EXECUTOR_IDLE_TIMEOUT             seconds (default 60, 1-86400) */
#ifndef OHBOX_EXECUTOR_CONN_GUARD_H
#define OHBOX_EXECUTOR_CONN_GUARD_H

#include <microhttpd.h>
#include <stdbool.h>

#include "common/error.h"

struct conn_guard;

/* Reads the limits from the environment (a bad value is an error naming
 * the variable) and starts the watchdog thread. */
int conn_guard_new (struct conn_guard **out, ohbox_error_t *err);
/* After MHD_stop_daemon: stops the watchdog. */
void conn_guard_free (struct conn_guard *g);

/* For MHD_OPTION_CONNECTION_LIMIT: above the guard's own limit, so that
 * libmicrohttpd never stops accepting (connections being closed still
 * count there for a moment). */
unsigned int conn_guard_mhd_limit (const struct conn_guard *g);
/* For MHD_OPTION_CONNECTION_TIMEOUT (seconds). */
unsigned int conn_guard_idle_timeout (const struct conn_guard *g);

/* MHD_OPTION_ACCEPT_POLICY_CALLBACK (cls: the guard). */
enum MHD_Result conn_guard_accept (void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* MHD_OPTION_NOTIFY_CONNECTION (cls: the guard). */
void conn_guard_notify (void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* A request's headers are in (the access handler's first call). */
void conn_guard_request_begins (struct conn_guard *g, struct MHD_Connection *c, bool trusted);
/* The request is over (MHD_OPTION_NOTIFY_COMPLETED): waiting again. */
void conn_guard_request_ends (struct conn_guard *g, struct MHD_Connection *c);

#endif
