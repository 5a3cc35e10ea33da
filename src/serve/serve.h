/* serve.h: `ohbox serve`, a local server of OpenHands' remote runtime API
 * (shared/protocol/RUNTIME-API.md) over libohbox: a front door like `ohbox
 * run`, which fills run requests and runs the plans of the one run policy
 * (policy/run_policy.h) and decides nothing about how a sandbox runs.
 *
 * The pieces, one file each:
 *   http.c      libmicrohttpd (a thread per connection), routing, the API
 *               key, body limits, one JSON log line per request
 *   api.c       the endpoints of RUNTIME-API.md (start, stop, pause, ...)
 *   registry.c  the view over the sandboxes: which are the server's, their
 *               sessions, keys, URLs and states, kept in memory as a cache
 *               of what the sandboxes' own state says (rebuilt at startup,
 *               refreshed every second)
 *   starter.c   the process that starts sandboxes and runs builds: forked
 *               before any thread or socket exists, so that no sandbox
 *               monitor inherits the server's sockets
 *   proxy.c     each sandbox's URL: http://SERVER/<runtime id>/... to its
 *               executor's socket or the port its server listens on
 *   upstream.c  HTTP/1.1 to a sandbox's server over a kept connection
 *               (answers read with http-parser)
 *   pool.c      warm pools of runtime sandboxes on standby
 *   builds.c    /build: OpenHands' build context, `ohbox build` onto its FROM
 *   metrics.c   GET /metrics (Prometheus text)
 *
 * Nothing the server knows is its own: a sandbox's session id, session key,
 * pool and stop are recorded in the sandbox's state through the library
 * (labels, annotations, executor record), so a server killed with -9 and
 * started again finds every session, URL and key where it left them. */
#ifndef OHBOX_SERVE_H
#define OHBOX_SERVE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/error.h"
#include "image/pull.h"

/* Labels (immutable, config.json) and annotations (state.json) of the
 * server's sandboxes. */
#define SERVE_LABEL "org.ohbox.serve"                      /* "1": started by ohbox serve */
#define SERVE_LABEL_SESSION "org.ohbox.serve.session"      /* the session of a cold start */
#define SERVE_LABEL_POOL "org.ohbox.serve.pool"            /* the image of a warm pool's sandbox */
#define SERVE_NOTE_SESSION "org.ohbox.serve.session"       /* the session a pooled sandbox was given */
#define SERVE_NOTE_PAUSED_BY "org.ohbox.serve.paused-by"   /* "api" or "idle" */
#define SERVE_NOTE_STOPPING "org.ohbox.serve.stopping"     /* "1": /stop accepted, removal pending */
#define SERVE_NOTE_WORK_HOSTS "org.ohbox.serve.work-hosts" /* JSON {url: port} */

#define SERVE_DEFAULT_PORT 8000  /* OpenHands' default remote_runtime_api_url */
#define SERVE_SANDBOX_PORT 60000 /* where OpenHands' clients expect the sandbox's server */
#define SERVE_MAX_POOLS 16
#define SERVE_MAX_WORK_PORTS 8

struct serve_pool_spec
{
  char *image; /* as given */
  unsigned size;
};

struct serve_config
{
  const char *store_root;
  char *state_root; /* NULL: the default of the store */
  /* Where to listen: TCP (listen_addr:listen_port) or a unix socket. */
  char *listen_addr;
  int listen_port;
  char *socket_path;
  char *api_key;    /* NULL: no key (unix socket only) */
  char *public_url; /* base of sandbox URLs; NULL: http://LISTEN */
  char *registry_prefix;
  int sandbox_port;
  unsigned max_sandboxes; /* 0: no limit */
  double pause_idle;      /* seconds, 0: never */
  double start_timeout;   /* seconds the sandbox's server may take to answer */
  /* resource_factor 1: these; N: N times (0: no limit of that kind). */
  double base_cpus;
  int64_t base_memory;
  int64_t base_pids;
  int work_ports[SERVE_MAX_WORK_PORTS];
  unsigned n_work_ports;
  struct serve_pool_spec pools[SERVE_MAX_POOLS];
  unsigned n_pools;
  uint64_t max_build_context; /* bytes of the decoded tar.gz */
  bool pull_missing;          /* /start of an image not in the store pulls it */
  int log_fd;
  unsigned connection_limit;
  /* Devices every sandbox gets (ohbox-run(1) --device, --gpus,
   * --cdi-spec-dir), checked when the server starts; NULL: none. */
  char **devices;
  char **cdi_spec_dirs;
  const char *gpus;
  /* Where root's sandboxes may connect (ohbox-run(1) --egress); NULL: the
   * default (public). */
  const char *egress;
  /* Registry options for pulls and builds (ohbox pull's --tls-verify,
   * --cert-dir, --authfile, registries.conf). */
  struct ohbox_pull_options pull;
};

/* Runs the server until SIGTERM or SIGINT; returns an exit code. */
int serve_main (struct serve_config *cfg, ohbox_error_t *err);

#endif
