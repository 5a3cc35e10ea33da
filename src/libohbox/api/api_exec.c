/* api_exec.c: ohbox_exec (with bounded output capture) and ohbox_action
 * of the public API (ohbox.h), over exec.h and action.h. */
#include "config.h"
#include "api/ohbox.h"
#include "api/api_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api/action.h"
#include "sandbox/exec.h"

#define CAPTURE_DEFAULT_MAX (16 * 1024 * 1024)

struct ohbox_exec_result
{
  int exit_code;
  struct ohbox_buf out[2]; /* stdout, stderr */
  bool truncated;
};

/* The reader of the captured stdout and stderr: a thread, so that the
 * command never blocks on a full pipe while exec waits for it. Keeps at
 * most MAX bytes of each and reads (and drops) the rest. */
struct capture
{
  int rfd[2]; /* read ends */
  int stop;   /* eventfd: the command ended, drain what is there and return */
  size_t max;
  struct ohbox_buf *buf;
  bool truncated;
};

static bool
capture_read (struct capture *c, int i)
{
  char chunk[65536];
  ssize_t n = read (c->rfd[i], chunk, sizeof chunk);
  if (n < 0 && errno == EINTR)
    return true;
  if (n <= 0)
    return false; /* EOF, or EAGAIN while draining */
  size_t room = c->buf[i].len < c->max ? c->max - c->buf[i].len : 0;
  size_t keep = (size_t) n < room ? (size_t) n : room;
  if (keep)
    ohbox_buf_append (&c->buf[i], chunk, keep);
  if (keep < (size_t) n)
    c->truncated = true;
  return true;
}

static void *
capture_main (void *data)
{
  struct capture *c = data;
  bool open_[2] = { true, true };
  while (open_[0] || open_[1])
    {
      struct pollfd p[3] = {
        { .fd = open_[0] ? c->rfd[0] : -1, .events = POLLIN },
        { .fd = open_[1] ? c->rfd[1] : -1, .events = POLLIN },
        { .fd = c->stop, .events = POLLIN },
      };
      if (poll (p, 3, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          break;
        }
      for (int i = 0; i < 2; i++)
        if (open_[i] && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
          open_[i] = capture_read (c, i);
      if (p[2].revents & POLLIN)
        {
          /* The command was reaped: all it wrote is in the pipes. A
           * process it left behind may hold them open: do not wait for
           * it, take what is there. */
          for (int i = 0; i < 2; i++)
            if (open_[i])
              {
                fcntl (c->rfd[i], F_SETFL, O_NONBLOCK);
                while (capture_read (c, i))
                  ;
              }
          break;
        }
    }
  return NULL;
}

static void
close_fds (int *fds, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (fds[i] >= 0)
      {
        close (fds[i]);
        fds[i] = -1;
      }
}

int
ohbox_exec (ohbox_ctx *ctx, const char *id, const ohbox_exec_opts *opts, ohbox_exec_result **ret, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  ohbox_exec_opts o;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_exec_opts", &e) < 0)
    return api_fail (err, &e);
  if (id == NULL || o.argv == NULL || o.argv[0] == NULL)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "ohbox_exec: a sandbox and a command are required"), api_fail (err, &e);
  /* The internal options are not const but are only read. */
  struct ohbox_exec_options xo = {
    .argv = (char **) o.argv,
    .env = (char **) o.env,
    .workdir = o.workdir,
    .user = o.user,
  };
  int stdio[3] = { -1, -1, -1 };
  if (o.use_fds)
    {
      stdio[0] = o.stdin_fd;
      stdio[1] = o.stdout_fd;
      stdio[2] = o.stderr_fd;
    }
  else
    {
      stdio[1] = 1;
      stdio[2] = 2;
    }
  ohbox_exec_result *res = xcalloc (1, sizeof *res);
  struct capture cap = { .rfd = { -1, -1 }, .stop = -1, .buf = res->out };
  int wfd[2] = { -1, -1 };
  pthread_t reader;
  bool reading = false;
  int r = -1;
  if (o.capture)
    {
      cap.max = o.capture_max ? o.capture_max : CAPTURE_DEFAULT_MAX;
      for (int i = 0; i < 2; i++)
        {
          int p[2];
          if (pipe2 (p, O_CLOEXEC) < 0)
            {
              ohbox_error_sys (&e, OHBOX_ERR_SANDBOX, "pipe for the output of the command");
              goto out;
            }
          cap.rfd[i] = p[0];
          wfd[i] = p[1];
        }
      cap.stop = eventfd (0, EFD_CLOEXEC);
      if (cap.stop < 0)
        {
          ohbox_error_sys (&e, OHBOX_ERR_SANDBOX, "eventfd");
          goto out;
        }
      int pr = pthread_create (&reader, NULL, capture_main, &cap);
      if (pr != 0)
        {
          ohbox_error (&e, OHBOX_ERR_GENERIC, pr, "start the output reader thread");
          goto out;
        }
      reading = true;
      stdio[1] = wfd[0];
      stdio[2] = wfd[1];
    }
  xo.stdio = stdio;

  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  if (api_open (ctx, &store, &rt, &e) < 0)
    goto out;
  int code = -1;
  r = ohbox_sandbox_exec (rt, id, &xo, &code, &e);
  api_close (store, rt);
  res->exit_code = code;

out:
  close_fds (wfd, 2);
  if (reading)
    {
      uint64_t one = 1;
      if (write (cap.stop, &one, sizeof one) < 0)
        {
          /* Cannot happen with a fresh eventfd; the reader then ends at EOF. */
        }
      pthread_join (reader, NULL);
      res->truncated = cap.truncated;
    }
  close_fds (cap.rfd, 2);
  close_fds (&cap.stop, 1);
  for (int i = 0; i < 2; i++)
    if (res->out[i].data == NULL)
      ohbox_buf_append (&res->out[i], "", 0);
  if (r < 0)
    {
      ohbox_exec_result_free (res);
      return api_fail (err, &e);
    }
  *ret = res;
  return 0;
}

int
ohbox_exec_result_exit_code (const ohbox_exec_result *r)
{
  return r ? r->exit_code : -1;
}

const char *
ohbox_exec_result_stdout (const ohbox_exec_result *r, size_t *len)
{
  if (len)
    *len = r ? r->out[0].len : 0;
  return r ? r->out[0].data : "";
}

const char *
ohbox_exec_result_stderr (const ohbox_exec_result *r, size_t *len)
{
  if (len)
    *len = r ? r->out[1].len : 0;
  return r ? r->out[1].data : "";
}

bool
ohbox_exec_result_truncated (const ohbox_exec_result *r)
{
  return r && r->truncated;
}

void
ohbox_exec_result_free (ohbox_exec_result *r)
{
  if (r == NULL)
    return;
  ohbox_buf_free (&r->out[0]);
  ohbox_buf_free (&r->out[1]);
  free (r);
}

/* ---- actions ---- */

int
ohbox_action (ohbox_ctx *ctx, const char *id, const char *action_json, const ohbox_action_opts *opts,
              char **ret_observation, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  ohbox_action_opts o;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_action_opts", &e) < 0)
    return api_fail (err, &e);
  if (id == NULL || action_json == NULL)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "ohbox_action: a sandbox and an action are required"),
           api_fail (err, &e);
  size_t len = strnlen (action_json, OHBOX_ACTION_MAX_REQUEST + 1);
  if (len > OHBOX_ACTION_MAX_REQUEST)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "the action is larger than %d bytes", OHBOX_ACTION_MAX_REQUEST),
           api_fail (err, &e);
  json_error_t je;
  json_t *action = json_loadb (action_json, len, JSON_REJECT_DUPLICATES, &je);
  if (action == NULL)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "the action is not JSON: %s (column %d)", je.text, je.column),
           api_fail (err, &e);

  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  struct ohbox_executor_info x = { 0 };
  json_t *obs = NULL;
  int r = api_open (ctx, &store, &rt, &e);
  if (r == 0)
    {
      r = ohbox_sandbox_executor (rt, id, &x, &e);
      api_close (store, rt);
    }
  if (r == 0)
    {
      struct ohbox_action_options ao = { .connect_timeout = o.connect_timeout,
                                         .timeout = o.timeout,
                                         .unix_socket = x.socket };
      r = ohbox_action_execute (x.url, x.api_key, action, &ao, &obs, &e);
      if (r < 0)
        ohbox_error_prefix (&e, "sandbox `%s`", id);
    }
  json_decref (action);
  ohbox_executor_info_clear (&x);
  if (r < 0)
    return api_fail (err, &e);
  char *text = json_dumps (obs, JSON_COMPACT);
  json_decref (obs);
  if (text == NULL)
    return ohbox_error (&e, OHBOX_ERR_GENERIC, 0, "serialise the observation"), api_fail (err, &e);
  *ret_observation = text;
  return 0;
}
