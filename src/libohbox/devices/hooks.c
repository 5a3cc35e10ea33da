/* hooks.c: running the hooks devices bring (devices.h).
 *
 * A hook is a program of the host (an absolute path from a CDI spec, which
 * only the host's administrator or the caller wrote), run as the caller,
 * in the caller's namespaces, with the OCI state of the sandbox on its
 * stdin, its stdout discarded, its stderr kept for the error message, and
 * killed at its timeout.  Nothing of the sandbox runs it and nothing from
 * the sandbox reaches it but the state. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/utils.h"
#include "devices/devices.h"

#define HOOK_STDERR_MAX 2048

static const char *const stage_names[] = {
  [OHBOX_HOOK_PRESTART] = "prestart",
  [OHBOX_HOOK_CREATE_RUNTIME] = "createRuntime",
  [OHBOX_HOOK_CREATE_CONTAINER] = "createContainer",
  [OHBOX_HOOK_START_CONTAINER] = "startContainer",
  [OHBOX_HOOK_POSTSTART] = "poststart",
  [OHBOX_HOOK_POSTSTOP] = "poststop",
};

const char *
ohbox_hook_stage_name (enum ohbox_hook_stage stage)
{
  return stage_names[stage];
}

/* Waits for PID (its pidfd PIDFD) at most TIMEOUT seconds (0: no limit),
 * reading its stderr from ERRFD meanwhile into BUF. */
static int
wait_hook (pid_t pid, int pidfd, int errfd, int timeout, char *buf, size_t size, bool *timed_out)
{
  size_t len = 0;
  double deadline = timeout > 0 ? ohbox_monotonic () + timeout : 0;
  bool err_open = true;
  for (;;)
    {
      struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = err_open ? errfd : -1, .events = POLLIN } };
      int wait_ms = -1;
      if (deadline > 0)
        {
          double left = deadline - ohbox_monotonic ();
          wait_ms = left > 0 ? (int) (left * 1000) + 1 : 0;
        }
      int r = poll (p, 2, wait_ms);
      if (r < 0 && errno != EINTR)
        break;
      if (r == 0)
        {
          *timed_out = true;
          syscall (SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
          break;
        }
      if (err_open && (p[1].revents & (POLLIN | POLLHUP)))
        {
          char tmp[512];
          ssize_t n = read (errfd, tmp, sizeof tmp);
          if (n <= 0)
            err_open = false;
          for (ssize_t i = 0; i < n && len + 1 < size; i++)
            buf[len++] = tmp[i];
        }
      if (p[0].revents & POLLIN)
        break;
    }
  buf[len] = '\0';
  int status = 0;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  return status;
}

static int
run_hook (const struct ohbox_device_hook *h, const char *state, ohbox_error_t *err)
{
  /* stdin a socket, so that a hook that exits without reading its state
   * costs an EPIPE (MSG_NOSIGNAL), not this process's SIGPIPE. */
  int in[2], errp[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "hook `%s`: socketpair", h->path);
  if (pipe2 (errp, O_CLOEXEC) < 0)
    {
      close (in[0]);
      close (in[1]);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "hook `%s`: pipe", h->path);
    }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, in[0], 0);
  posix_spawn_file_actions_addopen (&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2 (&fa, errp[1], 2);
  pid_t pid;
  int rc = posix_spawn (&pid, h->path, &fa, NULL, h->args, h->env);
  posix_spawn_file_actions_destroy (&fa);
  close (in[0]);
  close (errp[1]);
  if (rc != 0)
    {
      close (in[1]);
      close (errp[0]);
      return ohbox_error (err, OHBOX_ERR_GENERIC, rc, "run hook `%s`", h->path);
    }
  /* The state is small (well under a socket's buffer): sent at once. */
  for (size_t off = 0, len = strlen (state); off < len;)
    {
      ssize_t w = send (in[1], state + off, len - off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break;
      off += (size_t) w;
    }
  close (in[1]);
  int pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
  char buf[HOOK_STDERR_MAX];
  bool timed_out = false;
  int status = pidfd >= 0 ? wait_hook (pid, pidfd, errp[0], h->timeout, buf, sizeof buf, &timed_out) : -1;
  if (pidfd < 0)
    {
      buf[0] = '\0';
      while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    }
  else
    close (pidfd);
  close (errp[0]);
  buf[strcspn (buf, "\n")] = '\0';
  if (timed_out)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "%s hook `%s` did not finish within %d s", stage_names[h->stage],
                        h->path, h->timeout);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "%s hook `%s` failed (%s %d)%s%s", stage_names[h->stage], h->path,
                        WIFSIGNALED (status) ? "signal" : "exit status",
                        WIFSIGNALED (status) ? WTERMSIG (status) : WEXITSTATUS (status), buf[0] ? ": " : "", buf);
  return 0;
}

int
ohbox_device_hooks_run (const struct ohbox_device_edits *e, enum ohbox_hook_stage stage, const char *state,
                        ohbox_error_t *err)
{
  for (size_t i = 0; e != NULL && i < e->n_hooks; i++)
    if (e->hooks[i].stage == stage && run_hook (&e->hooks[i], state, err) < 0)
      return -1;
  return 0;
}
