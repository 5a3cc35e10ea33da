/* conn_guard.c: see conn_guard.h. */
#include "config.h"
#include "conn_guard.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/utils.h"

#define WATCHDOG_STACK (64u * 1024)

enum conn_state
{
  CONN_WAITING,
  CONN_UNTRUSTED,
  CONN_TRUSTED,
};

struct guarded
{
  struct guarded *prev, *next;
  int fd;
  unsigned char addr[16]; /* IPv4 as ::ffff:a.b.c.d, IPv6 cut to its /64 */
  enum conn_state state;
  double since; /* monotonic: when it entered waiting or untrusted */
  bool closing; /* shut down by the guard, libmicrohttpd has yet to notice */
};

struct conn_guard
{
  unsigned int max_conns, per_address, idle_timeout;
  double header_timeout;

  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool sleeping_forever; /* the watchdog waits with no deadline: wake it for a new one */
  bool stop;
  pthread_t watchdog;
  /* Oldest first: a connection moves to the tail when it starts waiting. */
  struct guarded *head, *tail;
  unsigned int live, closing;
};

/* ---- configuration ------------------------------------------------------------ */

static int
env_number (const char *name, double def, double min, double max, double *out, ohbox_error_t *err)
{
  const char *v = getenv (name);
  if (v == NULL || *v == '\0')
    {
      *out = def;
      return 0;
    }
  char *end;
  errno = 0;
  double d = strtod (v, &end);
  if (errno || end == v || *end != '\0' || !isfinite (d) || d < min || d > max)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s=`%s`: expected a number from %g to %g", name, v, min, max);
  *out = d;
  return 0;
}

static int
env_count (const char *name, unsigned int def, unsigned int min, unsigned int max, unsigned int *out,
           ohbox_error_t *err)
{
  double d;
  if (env_number (name, def, min, max, &d, err) < 0)
    return -1;
  if (d != (double) (unsigned long) d)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s=`%s`: expected a whole number", name, getenv (name));
  *out = (unsigned int) d;
  return 0;
}

/* ---- the table (called with the lock held) ------------------------------------------- */

static void
unlink_conn (struct conn_guard *g, struct guarded *c)
{
  if (c->prev)
    c->prev->next = c->next;
  else
    g->head = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    g->tail = c->prev;
  c->prev = c->next = NULL;
}

static void
append_conn (struct conn_guard *g, struct guarded *c)
{
  c->prev = g->tail;
  c->next = NULL;
  if (g->tail)
    g->tail->next = c;
  else
    g->head = c;
  g->tail = c;
}

static void
address_key (const struct sockaddr *sa, unsigned char key[16])
{
  static const unsigned char v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
  memset (key, 0, 16);
  if (sa == NULL)
    return;
  if (sa->sa_family == AF_INET)
    {
      memcpy (key, v4mapped, 12);
      memcpy (key + 12, &((const struct sockaddr_in *) sa)->sin_addr, 4);
    }
  else if (sa->sa_family == AF_INET6)
    {
      const unsigned char *a = ((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr;
      if (memcmp (a, v4mapped, 12) == 0)
        memcpy (key, a, 16);
      else
        memcpy (key, a, 8);
    }
}

static bool
evictable (const struct guarded *c)
{
  return !c->closing && c->state != CONN_TRUSTED;
}

/* Closes C's socket: libmicrohttpd sees the end of the stream on its next
 * turn and closes the connection (conn_guard_notify then forgets it). */
static void
close_conn (struct conn_guard *g, struct guarded *c)
{
  shutdown (c->fd, SHUT_RDWR);
  c->closing = true;
  g->live--;
  g->closing++;
}

static unsigned int
count_address (const struct conn_guard *g, const unsigned char key[16])
{
  unsigned int n = 0;
  for (const struct guarded *c = g->head; c; c = c->next)
    if (!c->closing && memcmp (c->addr, key, 16) == 0)
      n++;
  return n;
}

/* The oldest evictable connection from KEY (any address when NULL). */
static struct guarded *
oldest_evictable (const struct conn_guard *g, const unsigned char *key)
{
  for (struct guarded *c = g->head; c; c = c->next)
    if (evictable (c) && (key == NULL || memcmp (c->addr, key, 16) == 0))
      return c;
  return NULL;
}

/* At the global limit: the address holding the most live connections
 * gives one up (O(n^2) over at most max_conns entries, only when full). */
static struct guarded *
victim_for_global_limit (const struct conn_guard *g)
{
  struct guarded *best = NULL;
  unsigned int best_n = 0;
  for (struct guarded *c = g->head; c; c = c->next)
    {
      if (!evictable (c))
        continue;
      unsigned int n = count_address (g, c->addr);
      if (n > best_n)
        {
          best = oldest_evictable (g, c->addr);
          best_n = n;
          if (n >= g->per_address)
            break; /* none holds more */
        }
    }
  return best;
}

/* ---- libmicrohttpd callbacks ----------------------------------------------------- */

enum MHD_Result
conn_guard_accept (void *cls, const struct sockaddr *addr, socklen_t addrlen OHBOX_UNUSED)
{
  struct conn_guard *g = cls;
  unsigned char key[16];
  address_key (addr, key);
  enum MHD_Result ok = MHD_YES;
  pthread_mutex_lock (&g->lock);
  if (g->closing >= g->max_conns)
    ok = MHD_NO; /* libmicrohttpd has yet to close many: its table must not fill */
  else if (count_address (g, key) >= g->per_address)
    {
      struct guarded *v = oldest_evictable (g, key);
      if (v)
        close_conn (g, v);
      else
        ok = MHD_NO;
    }
  else if (g->live >= g->max_conns)
    {
      struct guarded *v = victim_for_global_limit (g);
      if (v)
        close_conn (g, v);
      else
        ok = MHD_NO;
    }
  pthread_mutex_unlock (&g->lock);
  return ok;
}

void
conn_guard_notify (void *cls, struct MHD_Connection *conn, void **socket_context,
                   enum MHD_ConnectionNotificationCode code)
{
  struct conn_guard *g = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    {
      struct guarded *c = xcalloc (1, sizeof (*c));
      const union MHD_ConnectionInfo *fd = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_CONNECTION_FD);
      const union MHD_ConnectionInfo *ad = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
      c->fd = fd ? fd->connect_fd : -1;
      address_key (ad ? ad->client_addr : NULL, c->addr);
      c->state = CONN_WAITING;
      pthread_mutex_lock (&g->lock);
      c->since = ohbox_monotonic ();
      append_conn (g, c);
      g->live++;
      if (g->sleeping_forever)
        pthread_cond_signal (&g->wake);
      pthread_mutex_unlock (&g->lock);
      *socket_context = c;
      return;
    }
  struct guarded *c = *socket_context;
  if (c == NULL)
    return;
  /* Called before libmicrohttpd closes the descriptor: once unlinked here,
   * the watchdog cannot shut it down any more. */
  pthread_mutex_lock (&g->lock);
  unlink_conn (g, c);
  if (c->closing)
    g->closing--;
  else
    g->live--;
  pthread_mutex_unlock (&g->lock);
  free (c);
  *socket_context = NULL;
}

static struct guarded *
guarded_of (struct MHD_Connection *conn)
{
  const union MHD_ConnectionInfo *i = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

void
conn_guard_request_begins (struct conn_guard *g, struct MHD_Connection *conn, bool trusted)
{
  struct guarded *c = guarded_of (conn);
  if (c == NULL)
    return;
  pthread_mutex_lock (&g->lock);
  /* An untrusted request keeps the clock it started waiting with. */
  c->state = trusted ? CONN_TRUSTED : CONN_UNTRUSTED;
  pthread_mutex_unlock (&g->lock);
}

void
conn_guard_request_ends (struct conn_guard *g, struct MHD_Connection *conn)
{
  struct guarded *c = guarded_of (conn);
  if (c == NULL)
    return;
  pthread_mutex_lock (&g->lock);
  c->state = CONN_WAITING;
  c->since = ohbox_monotonic ();
  unlink_conn (g, c);
  append_conn (g, c);
  if (g->sleeping_forever)
    pthread_cond_signal (&g->wake);
  pthread_mutex_unlock (&g->lock);
}

/* ---- the watchdog ----------------------------------------------------------------- */

static void *
watchdog (void *arg)
{
  struct conn_guard *g = arg;
  pthread_mutex_lock (&g->lock);
  while (!g->stop)
    {
      double now = ohbox_monotonic (), next = INFINITY;
      for (struct guarded *c = g->head; c; c = c->next)
        {
          if (!evictable (c))
            continue;
          double deadline = c->since + g->header_timeout;
          if (deadline <= now)
            close_conn (g, c);
          else if (deadline < next)
            next = deadline;
        }
      g->sleeping_forever = isinf (next);
      if (g->sleeping_forever)
        pthread_cond_wait (&g->wake, &g->lock);
      else
        {
          struct timespec ts;
          ts.tv_sec = (time_t) next;
          ts.tv_nsec = (long) ((next - (double) ts.tv_sec) * 1e9);
          pthread_cond_timedwait (&g->wake, &g->lock, &ts);
        }
      g->sleeping_forever = false;
    }
  pthread_mutex_unlock (&g->lock);
  return NULL;
}

int
conn_guard_new (struct conn_guard **out, ohbox_error_t *err)
{
  unsigned int max_conns, per_address, idle;
  double header;
  if (env_count ("OHBOX_EXECUTOR_CONNECTIONS", 256, 8, 4096, &max_conns, err) < 0
      || env_count ("OHBOX_EXECUTOR_CONNECTIONS_PER_ADDRESS", max_conns < 64 ? max_conns : 64, 1, max_conns,
                    &per_address, err)
           < 0
      || env_number ("OHBOX_EXECUTOR_HEADER_TIMEOUT", 10, 0.1, 3600, &header, err) < 0
      || env_count ("OHBOX_EXECUTOR_IDLE_TIMEOUT", 60, 1, 86400, &idle, err) < 0)
    return -1;
  struct conn_guard *g = xcalloc (1, sizeof (*g));
  g->max_conns = max_conns;
  g->per_address = per_address;
  g->header_timeout = header;
  g->idle_timeout = idle;
  pthread_mutex_init (&g->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&g->wake, &ca);
  pthread_condattr_destroy (&ca);
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  pthread_attr_setstacksize (&attr, WATCHDOG_STACK);
  int e = pthread_create (&g->watchdog, &attr, watchdog, g);
  pthread_attr_destroy (&attr);
  if (e != 0)
    {
      pthread_cond_destroy (&g->wake);
      pthread_mutex_destroy (&g->lock);
      free (g);
      return ohbox_error (err, OHBOX_ERR_GENERIC, e, "start the connection watchdog thread");
    }
  *out = g;
  return 0;
}

void
conn_guard_free (struct conn_guard *g)
{
  if (g == NULL)
    return;
  pthread_mutex_lock (&g->lock);
  g->stop = true;
  pthread_cond_signal (&g->wake);
  pthread_mutex_unlock (&g->lock);
  pthread_join (g->watchdog, NULL);
  /* MHD_stop_daemon reported every connection closed: the table is empty. */
  pthread_cond_destroy (&g->wake);
  pthread_mutex_destroy (&g->lock);
  free (g);
}

unsigned int
conn_guard_mhd_limit (const struct conn_guard *g)
{
  /* Live ones plus as many being closed (conn_guard_accept refuses beyond). */
  return 2 * g->max_conns + 1;
}

unsigned int
conn_guard_idle_timeout (const struct conn_guard *g)
{
  return g->idle_timeout;
}
