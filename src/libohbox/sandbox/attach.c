/* attach.c: `ohbox attach` (exec.h): the client side of the monitor's
 * attach.sock (sandbox_internal.h). The monitor passes the terminal's
 * master fd; from there on it is the same proxy as `ohbox exec -t`. */
#include "config.h"
#include "sandbox/exec.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Connects to the monitor and receives the master; -1 with ERR otherwise. */
static int
receive_master (int dfd, const char *what, int *ret_conn, ohbox_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dfd, OHBOX_ATTACH_SOCK);
  cleanup_close int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "create a socket");
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, errno, "connect to the monitor of sandbox `%s`", what);
  char answer = 0;
  int master = -1;
  ssize_t n = ohbox_recv_with_fd (fd, &answer, 1, &master);
  if (n == 1 && answer == OHBOX_ATTACH_OK && master >= 0)
    {
      *ret_conn = steal_fd (&fd);
      return master;
    }
  if (master >= 0)
    close (master);
  if (n == 1 && answer == OHBOX_ATTACH_BUSY)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "sandbox `%s` already has a client attached: one at a time (use `ohbox exec -it %s sh` for "
                        "another shell)",
                        what, what);
  if (n == 1 && answer == OHBOX_ATTACH_DENIED)
    return ohbox_error (err, OHBOX_ERR_AUTH, 0, "the monitor of sandbox `%s` refused us: attach as its owner or root",
                        what);
  return ohbox_error (err, OHBOX_ERR_GENERIC, n < 0 ? errno : 0, "no terminal from the monitor of sandbox `%s`", what);
}

int
ohbox_sandbox_attach (struct ohbox_runtime *rt, const char *what, const char *detach_keys, int *ret_exit_code,
                      ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  *ret_exit_code = -1;
  if (ohbox_sandbox_resolve (rt, what, &id, err) < 0
      || ohbox_sandbox_check_running (rt, id, what, "attach needs a running sandbox", err) < 0)
    return -1;
  char detach[OHBOX_EXEC_MAX_DETACH_KEYS];
  int n_detach = 0;
  if (detach_keys && *detach_keys)
    {
      n_detach = ohbox_exec_parse_detach_keys (detach_keys, detach, sizeof detach, err);
      if (n_detach < 0)
        return -1;
    }
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  struct ohbox_sandbox_config cfg;
  if (ohbox_state_load_config (dfd, &cfg, err) < 0)
    return -1;
  bool tty = cfg.tty;
  ohbox_sandbox_config_clear (&cfg);
  if (!tty)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "sandbox `%s` has no terminal: attach needs one started with `ohbox run -d -t`; use `ohbox "
                        "logs -f %s` for its output or `ohbox exec -it %s sh` for a shell",
                        what, what, what);
  bool exited = false;
  cleanup_close int pidfd = ohbox_state_pidfd (dfd, &exited, err);
  if (pidfd < 0)
    {
      if (*err == NULL)
        ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%s` is not running (exited): attach needs a running sandbox",
                     what);
      return -1;
    }
  cleanup_close int conn = -1;
  cleanup_close int master = receive_master (dfd, what, &conn, err);
  if (master < 0)
    return -1;
  /* Only the window size is ours to follow: signals to `ohbox attach` end
   * it (ohbox kill signals the sandbox). */
  sigset_t block, old;
  sigemptyset (&block);
  sigaddset (&block, SIGWINCH);
  sigprocmask (SIG_BLOCK, &block, &old);
  int sigfd = signalfd (-1, &block, SFD_CLOEXEC);
  if (sigfd < 0)
    {
      sigprocmask (SIG_SETMASK, &old, NULL);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "signalfd");
    }
  int detached = ohbox_terminal_proxy (master, pidfd, sigfd, true, detach, (size_t) n_detach);
  close (sigfd);
  sigprocmask (SIG_SETMASK, &old, NULL);
  if (detached == 1)
    return 0;
  /* The command ended: its status, once the monitor recorded it. */
  close (steal_fd (&master));
  close (steal_fd (&conn));
  int code = -1;
  if (ohbox_state_wait_monitor (dfd, &code, err) < 0)
    return -1;
  *ret_exit_code = code < 0 ? 255 : code;
  return 0;
}
