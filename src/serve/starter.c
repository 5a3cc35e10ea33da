/* starter.c: the process that starts sandboxes and runs builds.
 *
 * A sandbox's monitor is a fork of the process that starts it (sandbox.h)
 * and keeps every descriptor that process had: started from the server, a
 * monitor would hold the listening socket (a server started again after a
 * crash could not bind its port while any sandbox lives) and clients'
 * connections (which then never see the server go away). So the server
 * forks, before it opens any socket or starts any thread, a starter: a
 * single-threaded process with nothing but a control socket. For each job
 * the server sends it a socket of a new socketpair; the starter hands it to
 * a worker forked ahead (spare_fork), or forks one, which keeps only that
 * socket (as its stdout; stdin is /dev/null, stderr the server's log),
 * reads the job (JSON) from it, does the work through the library and
 * writes the answer (JSON lines) back. A monitor forked by the worker lets
 * go of the worker's stdio before it reports that the sandbox runs
 * (sandbox.c), so the server sees the end of the answer when the worker
 * exits.
 *
 * Jobs:
 *   {"type": "start", "request": {...}}   plan and start a sandbox
 *                                         (start_job: the run request)
 *   {"type": "build", ...}                builds.c's worker (build_job)
 * Answers: {"id", "url", "socket", "key", "warnings"} or {"error", "kind"}; builds
 * also send {"log": LINE} lines before their last object.
 *
 * The starter dies with the server (PR_SET_PDEATHSIG); workers do not: a
 * start or build the server's death interrupts finishes (or fails) on its
 * own, and what it made is found in the state by the next server. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/action.h"
#include "common/strv.h"
#include "image/pull.h"
#include "policy/run_policy.h"
#include "sandbox/sandbox.h"
#include "serve/serve_internal.h"
#include "store/store.h"

#define JOB_MAX (8 * 1024 * 1024)
#define ANSWER_MAX (64 * 1024 * 1024)

struct starter
{
  pid_t pid;
  int sock;
  pthread_mutex_t lock;
};

/* The worker's side: its answer on stdout, one JSON object per line. */
static void
answer (json_t *j)
{
  char *s = json_dumps (j, JSON_COMPACT | JSON_ENSURE_ASCII);
  json_decref (j);
  if (s == NULL)
    return;
  size_t n = strlen (s);
  s[n] = '\n';
  ohbox_write_all (1, s, n + 1);
  free (s);
}

static void
answer_error (ohbox_error_t e)
{
  answer (json_pack ("{s:s, s:i}", "error", e ? e->msg : "unknown error", "kind", e ? e->kind : OHBOX_ERR_GENERIC));
}

/* ---- start ---- */

/* A JSON array of strings as a NULL-terminated vector (NULL for null). */
static char **
strv_from (json_t *arr)
{
  if (!json_is_array (arr))
    return NULL;
  size_t n = json_array_size (arr);
  char **v = xcalloc (n + 1, sizeof (char *));
  for (size_t i = 0; i < n; i++)
    v[i] = xstrdup (json_string_value (json_array_get (arr, i)) ?: "");
  return v;
}

static int
set_limits (json_t *limits, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  memset (l, 0, sizeof *l);
  static const char *const opts[] = { "cpus", "memory", "pids-limit" };
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    {
      const char *v = json_string_value (json_object_get (limits, opts[i]));
      if (v && ohbox_cgroup_limits_set_option (l, opts[i], v, err) < 0)
        return -1;
    }
  return ohbox_cgroup_limits_validate (l, err);
}

/* The image in the store, pulled first when asked and missing. */
static int
ensure_image (struct serve *srv, struct ohbox_store *s, const char *image, bool pull, ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_store_resolve (s, image, &id, &e) == 0)
    return 0;
  if (e->kind != OHBOX_ERR_NOT_FOUND || !pull)
    {
      ohbox_error_move (err, &e);
      return -1;
    }
  ohbox_error_release (&e);
  struct ohbox_pull_result res = { 0 };
  int r = ohbox_pull (s, image, &srv->cfg->pull, &res, err);
  ohbox_pull_result_clear (&res);
  return r < 0 ? ohbox_error_prefix (err, "image `%s` is not in the store and its pull failed", image) : 0;
}

static void
collect_warning (const char *msg, void *data)
{
  json_array_append_new (data, json_string (msg));
}

/* The request as run_policy.h takes it, the plan, the start (detached). */
static int
start_job (struct serve *srv, const struct ohbox_host_abilities *host, json_t *rq, ohbox_error_t *err)
{
  struct ohbox_store *store = NULL;
  struct ohbox_runtime *rt = NULL;
  if (serve_open (srv, &store, &rt, err) < 0)
    return -1;
  char **command = strv_from (json_object_get (rq, "command"));
  char **env = strv_from (json_object_get (rq, "env"));
  char **labels = strv_from (json_object_get (rq, "labels"));
  struct ohbox_run_request q = {
    .image = json_string_value (json_object_get (rq, "image")),
    .command = command,
    .env = env,
    .labels = labels,
    .workdir = json_string_value (json_object_get (rq, "workdir")),
    .user = json_string_value (json_object_get (rq, "user")),
    .detach = true,
    .service_port = (int) json_integer_value (json_object_get (rq, "service_port")),
    .executor_standby = json_is_true (json_object_get (rq, "standby")),
    .api_key = json_string_value (json_object_get (rq, "api_key")),
    .publish = strv_from (json_object_get (rq, "publish")),
    .entrypoint = strv_from (json_object_get (rq, "entrypoint")),
    .devices = srv->cfg->devices,
    .cdi_spec_dirs = srv->cfg->cdi_spec_dirs,
    .gpus = srv->cfg->gpus,
    .egress = srv->cfg->egress,
  };
  struct ohbox_run_plan plan;
  json_t *warnings = json_array ();
  cleanup_free char *id = NULL;
  cleanup_free char *image_id = NULL;
  bool runtime = false;
  int r = set_limits (json_object_get (rq, "limits"), &q.limits, err);
  if (r == 0)
    r = ensure_image (srv, store, q.image, json_is_true (json_object_get (rq, "pull")), err);
  if (r == 0)
    r = ohbox_run_plan_make (store, &q, host, &plan, err);
  if (r == 0)
    {
      for (size_t i = 0; i < plan.n_warnings; i++)
        json_array_append_new (warnings, json_string (plan.warnings[i]));
      image_id = plan.image_id ? xstrdup (plan.image_id) : NULL;
      runtime = plan.runtime_image;
      r = ohbox_run_plan_realize (&plan, err);
      if (r == 0)
        {
          plan.opts.warn = collect_warning;
          plan.opts.warn_data = warnings;
          plan.opts.detach_caller_exits = true; /* (the worker's _exit) */
          r = ohbox_sandbox_run (rt, &plan.opts, &id, NULL, err);
        }
      ohbox_run_plan_clear (&plan);
    }
  struct ohbox_executor_info x = { 0 };
  if (r == 0 && ohbox_sandbox_executor_record (rt, id, &x, err) < 0)
    {
      /* Started, but unreachable: not a sandbox the server can use. */
      ohbox_error_t e = NULL;
      ohbox_sandbox_remove (rt, id, true, &e);
      ohbox_error_release (&e);
      r = -1;
    }
  if (r == 0)
    answer (json_pack ("{s:s, s:s?, s:b, s:s, s:o, s:s?, s:b}", "id", id, "url", x.url, "socket", x.socket != NULL,
                       "key", x.api_key, "warnings", json_incref (warnings), "image_id", image_id, "runtime_image",
                       runtime));
  ohbox_executor_info_clear (&x);
  json_decref (warnings);
  ohbox_strv_free (command);
  ohbox_strv_free (env);
  ohbox_strv_free (labels);
  ohbox_strv_free (q.publish);
  ohbox_strv_free (q.entrypoint);
  serve_close (store, rt);
  return r;
}

/* ---- the worker ---- */

int build_job (struct serve *srv, json_t *job, void (*log) (const char *line), ohbox_error_t *err);

static void
log_line (const char *line)
{
  answer (json_pack ("{s:s}", "log", line));
}

static _Noreturn void
worker_main (struct serve *srv, const struct ohbox_host_abilities *host, int sock)
{
  /* Only the job's socket (as stdout), /dev/null and the log stay. */
  int null = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || dup2 (null, 0) < 0 || dup2 (sock, 1) < 0)
    _exit (1);
  close_range (3, ~0U, 0);
  signal (SIGPIPE, SIG_DFL);
  cleanup_free char *text = NULL;
  size_t len;
  ohbox_error_t err = NULL;
  if (ohbox_read_fd (1, "the job", JOB_MAX, &text, &len, &err) < 0)
    {
      answer_error (err);
      _exit (1);
    }
  json_t *job = json_loadb (text, len, 0, NULL);
  const char *type = json_string_value (json_object_get (job, "type"));
  int r = -1;
  if (type && strcmp (type, "start") == 0)
    r = start_job (srv, host, json_object_get (job, "request"), &err);
  else if (type && strcmp (type, "build") == 0)
    r = build_job (srv, job, log_line, &err);
  else
    ohbox_error (&err, OHBOX_ERR_GENERIC, 0, "unknown job");
  if (r < 0)
    answer_error (err);
  _exit (r < 0 ? 1 : 0);
}

static void
reap (void)
{
  while (waitpid (-1, NULL, WNOHANG) > 0)
    ;
}

/* A worker forked ahead of its job: it waits on the returned socket for the
 * job's own (ohbox_send_with_fd), so that a start does not wait for a fork
 * (~2-3 ms on a VM whose page faults are slow). -1: none could be made. An
 * idle spare dies with the starter; a worker with a job does not. */
static int
spare_fork (struct serve *srv, const struct ohbox_host_abilities *host, int ctl)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return -1;
  pid_t starter = getpid ();
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (ctl);
      close (sv[0]);
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      if (getppid () != starter)
        _exit (0);
      char type;
      int sock = -1;
      if (ohbox_recv_with_fd (sv[1], &type, 1, &sock) <= 0 || sock < 0)
        _exit (0);
      prctl (PR_SET_PDEATHSIG, 0);
      worker_main (srv, host, sock);
    }
  close (sv[1]);
  if (pid < 0)
    {
      close (sv[0]);
      return -1;
    }
  return sv[0];
}

/* A worker for the job on SOCK: the spare when it takes it, else a fork. */
static void
start_worker (struct serve *srv, const struct ohbox_host_abilities *host, int ctl, int *spare, int sock)
{
  bool handed = *spare >= 0 && ohbox_send_with_fd (*spare, "j", 1, sock) == 1;
  if (*spare >= 0)
    close (*spare);
  *spare = -1;
  if (handed)
    return;
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (ctl);
      worker_main (srv, host, sock);
    }
  if (pid < 0)
    {
      ohbox_error_t err = NULL;
      ohbox_error_sys (&err, OHBOX_ERR_GENERIC, "fork a worker");
      int save = dup (1);
      if (save >= 0 && dup2 (sock, 1) >= 0)
        {
          answer_error (err);
          dup2 (save, 1);
        }
      if (save >= 0)
        close (save);
      ohbox_error_release (&err);
    }
}

static _Noreturn void
starter_main (struct serve *srv, int ctl)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () == 1)
    _exit (0);
  prctl (PR_SET_NAME, "ohbox-starter");
  /* Not the server's: a server started again must get it at once. */
  if (srv->lock_fd >= 0)
    close (srv->lock_fd);
  signal (SIGINT, SIG_IGN);
  signal (SIGTERM, SIG_DFL);
  signal (SIGPIPE, SIG_IGN);
  /* The host is probed once: every worker plans with what it found. */
  struct ohbox_host_abilities host = { 0 };
  struct ohbox_store *store = NULL;
  struct ohbox_runtime *rt = NULL;
  ohbox_error_t err = NULL;
  if (serve_open (srv, &store, &rt, &err) < 0 || ohbox_host_probe (rt, &host, &err) < 0)
    {
      fprintf (stderr, "ohbox serve: starter: %s\n", err->msg);
      _exit (1);
    }
  serve_close (store, rt);
  int spare = -1;
  for (;;)
    {
      reap ();
      struct pollfd p = { .fd = ctl, .events = POLLIN };
      /* A new spare when no job waits (in a burst, jobs are not held up
       * by forks of spares). */
      if (spare < 0 && poll (&p, 1, 0) == 0)
        spare = spare_fork (srv, &host, ctl);
      if (poll (&p, 1, 1000) <= 0)
        continue;
      char type;
      int sock = -1;
      ssize_t n = ohbox_recv_with_fd (ctl, &type, 1, &sock);
      if (n <= 0)
        _exit (0); /* the server is gone */
      if (sock < 0)
        continue;
      start_worker (srv, &host, ctl, &spare, sock);
      close (sock);
    }
}

int
starter_spawn (struct serve *srv, ohbox_error_t *err)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "socketpair");
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    {
      close (sv[0]);
      close (sv[1]);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "fork the starter");
    }
  if (pid == 0)
    {
      close (sv[0]);
      starter_main (srv, sv[1]);
    }
  close (sv[1]);
  struct starter *st = xcalloc (1, sizeof *st);
  st->pid = pid;
  st->sock = sv[0];
  pthread_mutex_init (&st->lock, NULL);
  srv->starter = st;
  return 0;
}

void
starter_stop (struct starter *st)
{
  if (st == NULL)
    return;
  close (st->sock);
  kill (st->pid, SIGTERM);
  while (waitpid (st->pid, NULL, 0) < 0 && errno == EINTR)
    ;
  pthread_mutex_destroy (&st->lock);
  free (st);
}

int
starter_job (struct starter *st, json_t *job, int *ret_fd, ohbox_error_t *err)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "socketpair");
  pthread_mutex_lock (&st->lock);
  ssize_t n = ohbox_send_with_fd (st->sock, "j", 1, sv[1]);
  pthread_mutex_unlock (&st->lock);
  close (sv[1]);
  if (n != 1)
    {
      close (sv[0]);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "hand the job to the starter");
    }
  cleanup_free char *text = json_dumps (job, JSON_COMPACT);
  if (text == NULL || ohbox_write_all (sv[0], text, strlen (text)) < 0 || shutdown (sv[0], SHUT_WR) < 0)
    {
      close (sv[0]);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "send the job to its worker");
    }
  *ret_fd = sv[0];
  return 0;
}

int
starter_result (int fd, void (*line_cb) (json_t *line, void *data), void *data, json_t **ret, ohbox_error_t *err)
{
  *ret = NULL;
  FILE *f = fdopen (fd, "r");
  if (f == NULL)
    {
      close (fd);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "read the worker's answer");
    }
  char *line = NULL;
  size_t cap = 0, total = 0;
  ssize_t n;
  json_t *last = NULL;
  while ((n = getline (&line, &cap, f)) > 0)
    {
      total += (size_t) n;
      if (total > ANSWER_MAX)
        break;
      json_t *j = json_loadb (line, (size_t) n, 0, NULL);
      if (!json_is_object (j))
        {
          json_decref (j);
          continue;
        }
      if (json_object_get (j, "log") && line_cb)
        {
          line_cb (j, data);
          json_decref (j);
          continue;
        }
      json_decref (last);
      last = j;
    }
  free (line);
  fclose (f);
  if (last == NULL)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the worker died without an answer");
  const char *e = json_string_value (json_object_get (last, "error"));
  if (e)
    {
      int kind = (int) json_integer_value (json_object_get (last, "kind"));
      ohbox_error (err, kind ? kind : OHBOX_ERR_GENERIC, 0, "%s", e);
      json_decref (last);
      return -1;
    }
  *ret = last;
  return 0;
}
