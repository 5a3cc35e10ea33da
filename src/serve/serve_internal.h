/* serve_internal.h: what the files of src/serve share (serve.h lists them). */
#ifndef OHBOX_SERVE_INTERNAL_H
#define OHBOX_SERVE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/utils.h"
#include "serve/serve.h"

struct ohbox_store;
struct ohbox_runtime;
struct MHD_Daemon;
struct MHD_Connection;

/* ---- the sandboxes (registry.c) ---- */

enum sbx_state
{
  SBX_STARTING, /* created, its server not answering yet (pool: not ready) */
  SBX_READY,    /* running, its server answers */
  SBX_PAUSED,   /* frozen */
  SBX_FAILED,   /* its processes are gone without a /stop */
};

enum sbx_paused_by
{
  PAUSED_BY_NONE,
  PAUSED_BY_API,  /* /pause: its URL answers 503 until /resume */
  PAUSED_BY_IDLE, /* --pause-idle: resumed by the next request to its URL */
};

/* One of the server's sandboxes, as its state says (a cache: registry.c). */
struct sbx
{
  char id[65];
  char *session_id;   /* NULL: a pool member not given to a session yet */
  char *image;        /* as the request named it */
  char *image_id;     /* what it resolved to */
  char *pool;         /* the pool's image (a pool member, given or not), or NULL */
  char *upstream;     /* serve_upstream's: "unix:PATH" or "http://127.0.0.1:PORT"; NULL: unreachable */
  char *key;          /* its session key */
  json_t *work_hosts; /* {"http://127.0.0.1:PORT": port inside} */
  char *created;      /* RFC 3339 */
  enum sbx_state state;
  enum sbx_paused_by paused_by;
  int exit_code;        /* SBX_FAILED */
  double last_activity; /* monotonic: the last request to its URL began or ended */
  unsigned inflight;    /* requests to its URL in progress */
  bool probe;           /* a pool member found at startup: still on standby with its key? */
  struct sbx *next;
};

#define REG_BUCKETS 256

struct registry
{
  pthread_mutex_t lock;
  struct sbx *buckets[REG_BUCKETS];
  unsigned count;
  unsigned starting; /* cold starts in progress, not in the table yet */
  char **pending;    /* their sessions */
  size_t n_pending;
};

/* ---- the server ---- */

struct metrics
{
  pthread_mutex_t lock;
  uint64_t starts_cold, starts_pool, start_errors, stops;
  uint64_t requests, proxied;
  /* /start latency, seconds (cumulative buckets). */
  uint64_t start_bucket[12];
  double start_sum;
  uint64_t start_count;
};

struct pools;
struct builds;
struct starter;

struct serve
{
  struct serve_config *cfg;
  char *base_url; /* sandbox URLs are BASE_URL/<runtime id> */
  struct MHD_Daemon *daemon;
  struct registry reg;
  struct metrics metrics;
  struct starter *starter;
  struct pools *pools;
  struct builds *builds;
  int lock_fd; /* STATE/serve.lock: one server per state directory */
  /* Held across a pause or resume (freeze and state): an idle pause and the
   * request that resumes it cannot cross. */
  pthread_mutex_t transition;
  volatile bool quitting;
  pthread_t maint;
  bool maint_started;
  /* Removals (/stop) waiting for the remover thread. */
  pthread_mutex_t stop_lock;
  pthread_cond_t stop_cond;
  char **stop_queue;
  size_t n_stop, cap_stop;
  pthread_t remover;
  bool remover_started;
  bool remover_quit; /* set (under stop_lock) once nothing queues stops any more */
  char *tmp_dir;     /* $TMPDIR or /var/tmp: request bodies that spill, build contexts */
  int state_fd;      /* the sandboxes' state root (O_PATH), for paths to their executors' sockets */
};

/* Where sandbox ID's server is reached: its executor's unix socket when it
 * has one (SOCKET), else URL (NULL: unreachable). */
char *serve_upstream (struct serve *srv, const char *id, const char *url, bool socket);

/* Opens the store and the state directory (each request its own: the
 * store's shared lock is held only while it works). */
int serve_open (struct serve *srv, struct ohbox_store **store, struct ohbox_runtime **rt, ohbox_error_t *err);
void serve_close (struct ohbox_store *store, struct ohbox_runtime *rt);

/* registry.c */
void reg_init (struct registry *r);
void reg_clear (struct registry *r);
/* Loads the server's sandboxes from their state (startup), queueing the
 * removals a killed server left and putting pool members back in pools. */
int reg_load (struct serve *srv, ohbox_error_t *err);
/* With reg.lock held. */
struct sbx *reg_find (struct registry *r, const char *id);
struct sbx *reg_find_session (struct registry *r, const char *session_id);
void reg_insert (struct registry *r, struct sbx *s);
void reg_unlink (struct registry *r, struct sbx *s);
void sbx_free (struct sbx *s);
/* Counts what --max-sandboxes limits: running, paused and starting. */
unsigned reg_active (struct registry *r);
/* The API's object for S (lock held): runtime_id, session_id, status,
 * pod_status, url, session_api_key, work_hosts, image, created_at. */
json_t *reg_describe (struct serve *srv, const struct sbx *s);
/* Brings the cache in line with the sandboxes' state (the maintenance
 * thread, every second): gone ones dropped, dead ones failed, paused and
 * unpaused ones as their state says. */
void reg_refresh (struct serve *srv);
/* Sessions whose start is in progress (lock held): claim; false when
 * another start has it. */
bool reg_claim_session (struct registry *r, const char *session_id);
void reg_release_session (struct registry *r, const char *session_id);
/* A sandbox of the state: its entry, built from the library (NULL when it
 * is not the server's, gone or being stopped). */
struct sbx *reg_read (struct serve *srv, struct ohbox_runtime *rt, json_t *info);
bool serve_valid_runtime_id (const char *s);
/* Its work hosts (published --work-ports) from the sandbox's network. */
void reg_read_work_hosts (struct serve *srv, const char *id);

/* starter.c */
/* Forks the starter (no thread or socket of the server exists yet). */
int starter_spawn (struct serve *srv, ohbox_error_t *err);
void starter_stop (struct starter *st);
/* Sends JOB to the starter, which forks a worker for it; *RET_FD gets the
 * socket the worker answers on (JSON lines until EOF). */
int starter_job (struct starter *st, json_t *job, int *ret_fd, ohbox_error_t *err);
/* The last JSON object of a worker's answer on FD (closed); LINE_CB gets
 * the others. */
int starter_result (int fd, void (*line_cb) (json_t *line, void *data), void *data, json_t **ret, ohbox_error_t *err);

/* api.c */
struct upstream; /* upstream.h: a client connection's connection to a sandbox */
struct reply
{
  unsigned status;
  json_t *json; /* or */
  char *text;   /* with content_type */
  const char *content_type;
  /* Work that waits until the answer is out (http.c): a log line, and
   * waking the pools' filler (which would otherwise run first on a busy
   * machine, and take the registry's lock the answer needs). */
  json_t *log_after;
  bool wake_pools_after;
};
/* Dispatches an API request (the body parsed as JSON when it has one); UP:
 * the client connection's connection to a sandbox (proxy.c). */
void api_dispatch (struct serve *srv, struct upstream **up, const char *method, const char *url, json_t *body,
                   struct reply *out);
/* {"detail": MSG[, "field": FIELD]} with STATUS. */
void reply_error (struct reply *out, unsigned status, const char *field, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));
/* Starting (api.c): the request's sandbox, cold or from a pool; answers
 * OUT. */
void serve_stop_async (struct serve *srv, const char *id);
/* Forgets sandbox ID (a failed start, a dead or failed pool member) and
 * queues its removal. */
void serve_drop_sandbox (struct serve *srv, const char *id);
void *serve_remover_main (void *arg);

/* serve.c: BASE of sandbox URLs (cfg's listen port known). */
char *serve_base_url (const struct serve_config *c);

/* http.c */
int http_start (struct serve *srv, ohbox_error_t *err);
void http_stop (struct serve *srv);
/* One JSON log line. */
void serve_log (struct serve *srv, json_t *line);
/* GIVEN (a request's X-API-Key or session key) is EXPECTED, in constant
 * time in the length of EXPECTED; false when either is missing or EXPECTED
 * is empty. */
bool serve_key_matches (const char *expected, const char *given);

/* proxy.c */
struct proxy_xfer;
/* A request to BASE/<ID>/REST: checks the keys and the sandbox's state.
 * Returns NULL and sets *STATUS / *DETAIL when it is refused. */
struct proxy_xfer *proxy_begin (struct serve *srv, struct MHD_Connection *mc, const char *id, const char *raw_rest,
                                const char *method, unsigned *status, char **detail);
/* The request body, piece by piece; false: too large (413). */
bool proxy_body (struct proxy_xfer *px, const char *data, size_t len);
/* Sends the request upstream and queues the answer on MC. UP: the client
 * connection's connection to a sandbox (made if *UP is NULL), kept for what
 * comes next on it; NULL: one for this request alone. */
int proxy_finish (struct proxy_xfer *px, struct MHD_Connection *mc, struct upstream **up, unsigned *status);
void proxy_free (struct proxy_xfer *px);
/* Waits until the server of the sandbox at UPSTREAM answers (an executor:
 * 200 from /alive; any other server: any HTTP answer) or DEADLINE
 * (monotonic) passes; ALIVE_FN (may be NULL) says whether to keep trying. */
int proxy_wait_ready (const char *upstream, bool executor, double deadline, bool (*alive_fn) (void *), void *data,
                      ohbox_error_t *err);
/* POSTs JSON BODY to UPSTREAM/PATH, the server of sandbox ID, with KEY as
 * X-Session-API-Key; *STATUS and *REPLY (may be NULL) get the answer. UP as
 * for proxy_finish. */
int proxy_post_json (struct upstream **up, const char *id, const char *upstream, const char *path, const char *key,
                     json_t *body, long *status, json_t **reply, ohbox_error_t *err);
/* The same in two steps: proxy_post_begin returns once the request is on
 * the socket, so that the caller works while the sandbox answers;
 * proxy_post_end waits for the answer and frees PP. */
struct proxy_post;
int proxy_post_begin (struct upstream **up, const char *id, const char *upstream, const char *path, const char *key,
                      json_t *body, struct proxy_post **pp, ohbox_error_t *err);
int proxy_post_end (struct proxy_post *pp, long *status, json_t **reply, ohbox_error_t *err);

/* pool.c */
int pools_init (struct serve *srv, ohbox_error_t *err);
void pools_free (struct serve *srv, bool stop_members);
/* Takes a ready member of IMAGE's pool for SESSION (marked so in the
 * table) and returns a copy of it (id, upstream, pool key); NULL: none. */
struct sbx *pools_take (struct serve *srv, const char *image, const char *session);
/* The session SERVER_ARGS (the executor's arguments, NULL: none) asked
 * for: the next members of IMAGE's pool start it ahead. */
void pools_learn (struct serve *srv, const char *image, json_t *server_args);
/* Wakes the filler (a member was taken or lost). */
void pools_wake (struct serve *srv);
void pools_text_metrics (struct serve *srv, struct ohbox_buf *b);

/* builds.c */
int builds_init (struct serve *srv, ohbox_error_t *err);
void builds_free (struct serve *srv);
struct build_upload;
/* /build: the multipart body as it arrives. */
struct build_upload *build_upload_new (struct serve *srv, struct MHD_Connection *mc, unsigned *status, char **detail);
bool build_upload_data (struct build_upload *bu, const char *data, size_t len);
void build_upload_finish (struct build_upload *bu, struct reply *out);
void build_upload_free (struct build_upload *bu);
void builds_status (struct serve *srv, const char *build_id, struct reply *out);
void builds_text_metrics (struct serve *srv, struct ohbox_buf *b);

/* metrics.c */
void metrics_init (struct metrics *m);
void metrics_start (struct metrics *m, bool pool, bool ok, double seconds);
void metrics_count (struct metrics *m, uint64_t *counter);
char *metrics_text (struct serve *srv);

/* validate.c: request fields, each error naming the field (400). */
bool valid_image_name (const char *s, char **why);
bool valid_session_id (const char *s);

double serve_now (void);

#endif
