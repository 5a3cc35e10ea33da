/* metrics.c: GET /metrics, the Prometheus text format (version 0.0.4).
 * Counters count since this server started (Prometheus handles resets);
 * gauges are read from the registry when asked. */
#include "config.h"

#include <string.h>

#include "serve/serve_internal.h"

/* Upper bounds of the /start latency histogram, seconds. */
static const double bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
_Static_assert(sizeof bounds / sizeof bounds[0]
                 == sizeof ((struct metrics *) 0)->start_bucket / sizeof ((struct metrics *) 0)->start_bucket[0],
               "one counter per bound");

void
metrics_init (struct metrics *m)
{
  memset (m, 0, sizeof *m);
  pthread_mutex_init (&m->lock, NULL);
}

void
metrics_count (struct metrics *m, uint64_t *counter)
{
  pthread_mutex_lock (&m->lock);
  (*counter)++;
  pthread_mutex_unlock (&m->lock);
}

void
metrics_start (struct metrics *m, bool pool, bool ok, double seconds)
{
  pthread_mutex_lock (&m->lock);
  if (!ok)
    m->start_errors++;
  else
    {
      if (pool)
        m->starts_pool++;
      else
        m->starts_cold++;
      for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
        if (seconds <= bounds[i])
          m->start_bucket[i]++;
      m->start_sum += seconds;
      m->start_count++;
    }
  pthread_mutex_unlock (&m->lock);
}

static void add (struct ohbox_buf *b, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
add (struct ohbox_buf *b, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *s = xvasprintf (fmt, ap);
  va_end (ap);
  ohbox_buf_append (b, s, strlen (s));
}

char *
metrics_text (struct serve *srv)
{
  struct ohbox_buf b = { 0 };
  unsigned by_state[4] = { 0 }, members = 0, inflight = 0;
  pthread_mutex_lock (&srv->reg.lock);
  for (unsigned k = 0; k < REG_BUCKETS; k++)
    for (struct sbx *s = srv->reg.buckets[k]; s; s = s->next)
      {
        if (s->session_id == NULL)
          {
            members++;
            continue;
          }
        by_state[s->state]++;
        inflight += s->inflight;
      }
  unsigned starting = srv->reg.starting;
  pthread_mutex_unlock (&srv->reg.lock);
  add (&b,
       "# HELP ohbox_serve_sandboxes Sandboxes given to sessions, by status.\n"
       "# TYPE ohbox_serve_sandboxes gauge\n"
       "ohbox_serve_sandboxes{status=\"starting\"} %u\n"
       "ohbox_serve_sandboxes{status=\"running\"} %u\n"
       "ohbox_serve_sandboxes{status=\"paused\"} %u\n"
       "ohbox_serve_sandboxes{status=\"failed\"} %u\n",
       by_state[SBX_STARTING] + starting, by_state[SBX_READY], by_state[SBX_PAUSED], by_state[SBX_FAILED]);
  add (&b,
       "# HELP ohbox_serve_pool_sandboxes Sandboxes of warm pools not given to a session yet.\n"
       "# TYPE ohbox_serve_pool_sandboxes gauge\n"
       "ohbox_serve_pool_sandboxes %u\n",
       members);
  add (&b,
       "# HELP ohbox_serve_proxied_inflight Requests to sandbox URLs in progress.\n"
       "# TYPE ohbox_serve_proxied_inflight gauge\n"
       "ohbox_serve_proxied_inflight %u\n",
       inflight);
  pthread_mutex_lock (&srv->metrics.lock);
  struct metrics m = srv->metrics;
  pthread_mutex_unlock (&srv->metrics.lock);
  add (&b,
       "# HELP ohbox_serve_starts_total Sandboxes started for sessions, by source.\n"
       "# TYPE ohbox_serve_starts_total counter\n"
       "ohbox_serve_starts_total{source=\"cold\"} %llu\n"
       "ohbox_serve_starts_total{source=\"pool\"} %llu\n"
       "# HELP ohbox_serve_start_errors_total /start requests that failed after validation.\n"
       "# TYPE ohbox_serve_start_errors_total counter\n"
       "ohbox_serve_start_errors_total %llu\n"
       "# HELP ohbox_serve_stops_total /stop requests accepted.\n"
       "# TYPE ohbox_serve_stops_total counter\n"
       "ohbox_serve_stops_total %llu\n"
       "# HELP ohbox_serve_requests_total HTTP requests answered.\n"
       "# TYPE ohbox_serve_requests_total counter\n"
       "ohbox_serve_requests_total %llu\n"
       "# HELP ohbox_serve_proxied_total Requests forwarded to sandboxes.\n"
       "# TYPE ohbox_serve_proxied_total counter\n"
       "ohbox_serve_proxied_total %llu\n",
       (unsigned long long) m.starts_cold, (unsigned long long) m.starts_pool, (unsigned long long) m.start_errors,
       (unsigned long long) m.stops, (unsigned long long) m.requests, (unsigned long long) m.proxied);
  add (&b, "# HELP ohbox_serve_start_seconds Time from /start to its answer (the sandbox's server answering).\n"
           "# TYPE ohbox_serve_start_seconds histogram\n");
  for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
    add (&b, "ohbox_serve_start_seconds_bucket{le=\"%g\"} %llu\n", bounds[i], (unsigned long long) m.start_bucket[i]);
  add (&b,
       "ohbox_serve_start_seconds_bucket{le=\"+Inf\"} %llu\n"
       "ohbox_serve_start_seconds_sum %.6f\n"
       "ohbox_serve_start_seconds_count %llu\n",
       (unsigned long long) m.start_count, m.start_sum, (unsigned long long) m.start_count);
  pools_text_metrics (srv, &b);
  builds_text_metrics (srv, &b);
  ohbox_buf_append (&b, "", 1);
  return b.data;
}
