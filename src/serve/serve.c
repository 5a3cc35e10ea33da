/* serve.c: serve_main: the server's life, from the lock to the last thread
 * (serve.h has the map of the pieces). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/dl_curl.h"
#include "api/action.h"
#include "sandbox/sandbox.h"
#include "serve/serve_internal.h"

#define SERVE_LOCK "serve.lock"

/* --pause-idle: freezes the sessions' sandboxes nobody sent a request to
 * for that long (and none is in progress). A request to its URL resumes it
 * (proxy.c). */
static void
pause_idle (struct serve *srv)
{
  double idle = srv->cfg->pause_idle;
  if (idle <= 0)
    return;
  for (;;)
    {
      char id[65] = "";
      double now = serve_now ();
      pthread_mutex_lock (&srv->transition);
      pthread_mutex_lock (&srv->reg.lock);
      for (unsigned b = 0; b < REG_BUCKETS && !id[0]; b++)
        for (struct sbx *s = srv->reg.buckets[b]; s && !id[0]; s = s->next)
          if (s->session_id && s->state == SBX_READY && s->inflight == 0 && now - s->last_activity >= idle)
            {
              s->state = SBX_PAUSED;
              s->paused_by = PAUSED_BY_IDLE;
              memcpy (id, s->id, sizeof id);
            }
      pthread_mutex_unlock (&srv->reg.lock);
      if (!id[0])
        {
          pthread_mutex_unlock (&srv->transition);
          return;
        }
      struct ohbox_store *store;
      struct ohbox_runtime *rt;
      ohbox_error_t e = NULL;
      json_t *note = json_pack ("{s:s}", SERVE_NOTE_PAUSED_BY, "idle");
      int r = serve_open (srv, &store, &rt, &e);
      if (r == 0)
        {
          r = ohbox_sandbox_annotate (rt, id, note, &e);
          if (r == 0)
            r = ohbox_sandbox_pause (rt, id, true, &e);
          serve_close (store, rt);
        }
      json_decref (note);
      pthread_mutex_unlock (&srv->transition);
      if (r < 0)
        {
          serve_log (srv,
                     json_pack ("{s:s, s:s, s:s}", "event", "pause-idle-failed", "runtime_id", id, "error", e->msg));
          ohbox_error_release (&e);
          reg_refresh (srv);
          return;
        }
      serve_log (srv, json_pack ("{s:s, s:s}", "event", "paused-idle", "runtime_id", id));
    }
}

static void *
maint_main (void *arg)
{
  struct serve *srv = arg;
  while (!srv->quitting)
    {
      struct timespec ts = { 1, 0 };
      nanosleep (&ts, NULL);
      if (srv->quitting)
        break;
      reg_refresh (srv);
      pause_idle (srv);
    }
  return NULL;
}

/* A thread of the server running FN (*STARTED: joined at the end). */
static int
start_thread (struct serve *srv, pthread_t *t, bool *started, void *(*fn) (void *), const char *what,
              ohbox_error_t *err)
{
  if (pthread_create (t, NULL, fn, srv) != 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "start the %s thread", what);
  *started = true;
  return 0;
}

/* One server per state directory: two would each think the sandboxes
 * theirs. */
static int
take_lock (struct serve *srv, ohbox_error_t *err)
{
  cleanup_free char *root = srv->cfg->state_root ? xstrdup (srv->cfg->state_root)
                                                 : ohbox_runtime_default_state_root (srv->cfg->store_root);
  if (ohbox_mkdir_p (AT_FDCWD, root, 0700, err) < 0)
    return ohbox_error_prefix (err, "state directory");
  cleanup_close int dfd = open (root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "open `%s`", root);
  int fd = ohbox_lock_file (dfd, SERVE_LOCK, true, true, err);
  if (fd == -2)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "another `ohbox serve` runs on the sandboxes of `%s`: one server per store (--root)", root);
  if (fd < 0)
    return -1;
  srv->lock_fd = fd;
  return 0;
}

char *
serve_base_url (const struct serve_config *c)
{
  if (c->public_url)
    {
      size_t n = strlen (c->public_url);
      while (n && c->public_url[n - 1] == '/')
        n--;
      return xstrndup (c->public_url, n);
    }
  if (c->socket_path)
    return xstrdup ("http://localhost");
  const char *host = c->listen_addr;
  if (strcmp (host, "0.0.0.0") == 0)
    host = "127.0.0.1";
  else if (strcmp (host, "::") == 0)
    host = "::1";
  bool v6 = strchr (host, ':') != NULL;
  return xasprintf ("http://%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", c->listen_port);
}

/* Files the server holds besides its connections' sockets (the log, the
 * store's, the starter's, the builds'). */
#define FILES_BESIDES_CONNECTIONS 256

/* A connection holds a socket to its client and, once it forwards, one to
 * a sandbox: the server's own limit on open files is raised to its hard
 * limit (a shell's soft limit is often 1024), after the starter is spawned
 * so that sandboxes keep the caller's limits. A hard limit too low for
 * --connection-limit is said at startup rather than found by clients. */
static void
raise_file_limit (struct serve *srv)
{
  struct rlimit rl;
  if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
    return;
  if (rl.rlim_cur < rl.rlim_max)
    {
      rl.rlim_cur = rl.rlim_max;
      if (setrlimit (RLIMIT_NOFILE, &rl) < 0 && getrlimit (RLIMIT_NOFILE, &rl) < 0)
        return;
    }
  rlim_t want = 2 * (rlim_t) srv->cfg->connection_limit + FILES_BESIDES_CONNECTIONS;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
    return;
  unsigned long long room = rl.rlim_cur > FILES_BESIDES_CONNECTIONS ? (rl.rlim_cur - FILES_BESIDES_CONNECTIONS) / 2 : 0;
  cleanup_free char *msg = xasprintf ("the limit on open files (%llu) is below what --connection-limit %u needs "
                                      "(%llu): connections beyond ~%llu will be refused; raise the hard "
                                      "limit (ulimit -Hn, LimitNOFILE= of a systemd unit) or lower "
                                      "--connection-limit",
                                      (unsigned long long) rl.rlim_cur, srv->cfg->connection_limit,
                                      (unsigned long long) want, room);
  fprintf (stderr, "ohbox serve: warning: %s\n", msg);
  serve_log (srv, json_pack ("{s:s, s:s}", "event", "warning", "message", msg));
}

/* The state root, held for paths to the executors' sockets that fit a
 * socket address (107 bytes) wherever the state is. */
static int
open_state_root (struct serve *srv, ohbox_error_t *err)
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  if (serve_open (srv, &store, &rt, err) < 0)
    return -1;
  srv->state_fd = open (ohbox_runtime_state_root (rt), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int r = srv->state_fd < 0 ? ohbox_error_sys (err, OHBOX_ERR_GENERIC, "open %s", ohbox_runtime_state_root (rt)) : 0;
  serve_close (store, rt);
  return r;
}

char *
serve_upstream (struct serve *srv, const char *id, const char *url, bool socket)
{
  if (socket)
    return xasprintf ("unix:/proc/self/fd/%d/%s/%s", srv->state_fd, id, OHBOX_EXECUTOR_SOCKET);
  return url ? xstrdup (url) : NULL;
}

int
serve_main (struct serve_config *cfg, ohbox_error_t *err)
{
  struct serve srv;
  memset (&srv, 0, sizeof srv);
  srv.cfg = cfg;
  srv.lock_fd = srv.state_fd = -1;
  const char *tmp = getenv ("TMPDIR");
  srv.tmp_dir = xstrdup (tmp && *tmp == '/' ? tmp : "/var/tmp");
  reg_init (&srv.reg);
  metrics_init (&srv.metrics);
  pthread_mutex_init (&srv.stop_lock, NULL);
  pthread_cond_init (&srv.stop_cond, NULL);
  pthread_mutex_init (&srv.transition, NULL);
  int ret = -1;
  if (take_lock (&srv, err) < 0)
    goto out;
  /* Signals are taken by this thread (sigwait); every thread made from here
   * on inherits the mask. */
  sigset_t stop;
  sigemptyset (&stop);
  sigaddset (&stop, SIGINT);
  sigaddset (&stop, SIGTERM);
  sigaddset (&stop, SIGHUP);
  pthread_sigmask (SIG_BLOCK, &stop, NULL);
  signal (SIGPIPE, SIG_IGN);
  /* Before any socket or thread (starter.c). */
  if (starter_spawn (&srv, err) < 0)
    goto out;
  raise_file_limit (&srv);
  if (ohbox_curl_ready (OHBOX_ERR_GENERIC, err) < 0)
    goto out;
  if (open_state_root (&srv, err) < 0 || reg_load (&srv, err) < 0)
    goto out;
  if (start_thread (&srv, &srv.remover, &srv.remover_started, serve_remover_main, "remover", err) < 0
      || builds_init (&srv, err) < 0 || http_start (&srv, err) < 0 || pools_init (&srv, err) < 0
      || start_thread (&srv, &srv.maint, &srv.maint_started, maint_main, "maintenance", err) < 0)
    goto out;
  serve_log (&srv, json_pack ("{s:s, s:s, s:s, s:i, s:b}", "event", "listening", "address",
                              cfg->socket_path ? cfg->socket_path : cfg->listen_addr, "url", srv.base_url, "sandboxes",
                              (int) srv.reg.count, "api_key", cfg->api_key != NULL));
  int sig = 0;
  sigwait (&stop, &sig);
  serve_log (&srv, json_pack ("{s:s, s:i}", "event", "stopping", "signal", sig));
  ret = 0;
out:
  srv.quitting = true;
  http_stop (&srv);
  if (srv.maint_started)
    pthread_join (srv.maint, NULL);
  pools_free (&srv, ret == 0);
  builds_free (&srv);
  if (srv.remover_started)
    {
      /* What /stop accepted (and the pool members above) is finished
       * before the server exits. */
      pthread_mutex_lock (&srv.stop_lock);
      srv.remover_quit = true;
      pthread_cond_broadcast (&srv.stop_cond);
      pthread_mutex_unlock (&srv.stop_lock);
      pthread_join (srv.remover, NULL);
    }
  starter_stop (srv.starter);
  for (size_t i = 0; i < srv.n_stop; i++)
    free (srv.stop_queue[i]);
  free (srv.stop_queue);
  reg_clear (&srv.reg);
  free (srv.base_url);
  free (srv.tmp_dir);
  if (srv.lock_fd >= 0)
    close (srv.lock_fd);
  if (srv.state_fd >= 0)
    close (srv.state_fd);
  return ret;
}
