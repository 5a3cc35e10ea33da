/* monitor.c: the per-sandbox monitor loop (see sandbox.h): waits on the
 * init's pidfd, copies a detached sandbox's output into a bounded log,
 * forwards signals in the foreground, proxies a terminal, then records the
 * exit status and cleans up. It allocates nothing per event: its memory is
 * what the fork left it plus one 16 KiB buffer. */
#include "config.h"
#include "sandbox_internal.h"
#include "network.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define LOG_BUF 16384

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

struct log_writer
{
  int dirfd;
  int fd;
  off_t size;
};

static void
log_open (struct log_writer *lw)
{
  lw->fd = openat (lw->dirfd, "log", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  struct stat st;
  lw->size = (lw->fd >= 0 && fstat (lw->fd, &st) == 0) ? st.st_size : 0;
}

/* Appends, keeping at most two files of OHBOX_SANDBOX_LOG_MAX: a sandbox
 * that prints forever cannot fill the state directory (/run is memory). */
static void
log_write (struct log_writer *lw, const char *data, size_t len)
{
  if (lw->fd < 0)
    return;
  if (lw->size + (off_t) len > OHBOX_SANDBOX_LOG_MAX)
    {
      close (lw->fd);
      renameat (lw->dirfd, "log", lw->dirfd, "log.1");
      log_open (lw);
      if (lw->fd < 0)
        return;
    }
  if (ohbox_write_all (lw->fd, data, len) == 0)
    lw->size += (off_t) len;
}

/* Returns false at EOF or error. */
static bool
pump (int from, struct log_writer *lw, int to_fd, char *buf)
{
  ssize_t n = read (from, buf, LOG_BUF);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return true;
  if (n <= 0)
    return false;
  if (lw)
    log_write (lw, buf, (size_t) n);
  if (to_fd >= 0)
    ohbox_write_all (to_fd, buf, (size_t) n);
  return true;
}

int
ohbox_monitor_run (struct ohbox_monitor *m, ohbox_error_t *err)
{
  char *buf = xmalloc (LOG_BUF);
  struct log_writer lw = { .dirfd = m->dirfd, .fd = -1 };
  int sigfd = -1;
  if (m->log_fd >= 0)
    {
      log_open (&lw);
      fcntl (m->log_fd, F_SETFL, O_NONBLOCK);
    }
  if (m->forward_signals)
    {
      sigset_t set;
      sigemptyset (&set);
      for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaddset (&set, forwarded[i]);
      sigprocmask (SIG_BLOCK, &set, NULL);
      sigfd = signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    }
  bool tty = m->tty_master >= 0;
  bool stdin_open = tty;
  for (;;)
    {
      struct pollfd p[4];
      int n = 0;
      p[n++] = (struct pollfd){ .fd = m->pidfd, .events = POLLIN };
      int log_i = -1, sig_i = -1, in_i = -1;
      if (m->log_fd >= 0)
        {
          log_i = n;
          p[n++] = (struct pollfd){ .fd = m->log_fd, .events = POLLIN };
        }
      if (sigfd >= 0)
        {
          sig_i = n;
          p[n++] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
        }
      if (stdin_open)
        {
          in_i = n;
          p[n++] = (struct pollfd){ .fd = 0, .events = POLLIN };
        }
      if (poll (p, n, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          break;
        }
      if (log_i >= 0 && p[log_i].revents)
        {
          if (!pump (m->log_fd, m->tty_master >= 0 ? NULL : &lw, tty ? 1 : -1, buf))
            {
              if (!tty)
                close (m->log_fd);
              m->log_fd = -1;
            }
        }
      if (in_i >= 0 && p[in_i].revents)
        {
          if (!pump (0, NULL, m->tty_master, buf))
            stdin_open = false;
        }
      if (sig_i >= 0 && p[sig_i].revents)
        {
          struct signalfd_siginfo si;
          while (read (sigfd, &si, sizeof si) == (ssize_t) sizeof si)
            syscall (SYS_pidfd_send_signal, m->pidfd, (int) si.ssi_signo, NULL, 0);
        }
      if (p[0].revents)
        break;
    }
  /* Whatever the command wrote before it ended. */
  if (m->log_fd >= 0)
    while (pump (m->log_fd, tty ? NULL : &lw, tty ? 1 : -1, buf))
      {
        struct pollfd q = { .fd = m->log_fd, .events = POLLIN };
        if (poll (&q, 1, 0) <= 0)
          break;
      }
  free (buf);
  siginfo_t si;
  memset (&si, 0, sizeof si);
  int code = 255;
  while (waitid (P_PIDFD, (id_t) m->pidfd, &si, WEXITED) < 0)
    if (errno != EINTR)
      break;
  if (si.si_code == CLD_EXITED)
    code = si.si_status;
  else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
    code = 128 + si.si_status;
  if (lw.fd >= 0)
    close (lw.fd);
  if (sigfd >= 0)
    close (sigfd);
  int ret = code;
  /* The init is gone, so is its PID namespace; the cgroup may still hold
   * processes that escaped it (none should): destroy kills and removes. */
  if (m->cgroup && ohbox_cgroup_destroy (m->cgroup, err) < 0)
    ret = -1;
  {
    /* A stopped sandbox holds no address or port (nothing restarts it). */
    cleanup_free char *dir = xasprintf ("%s/%s", m->rt->root, m->id);
    if (ohbox_network_release (dir, m->dirfd, ret < 0 ? NULL : err) < 0)
      ret = -1;
  }
  cleanup_free char *now = ohbox_now_rfc3339 ();
  json_t *f = json_pack ("{s:s, s:i, s:s, s:b}", "status", "exited", "exit_code", code, "finished_at", now,
                         "paused", 0);
  if (ohbox_state_update (m->dirfd, f, ret < 0 ? NULL : err) < 0)
    ret = -1;
  json_decref (f);
  /* For `ohbox wait`, which holds the lock file open: readable even after
   * --rm removed the directory. */
  {
    int lfd = openat (m->dirfd, "monitor.lock", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (lfd >= 0)
      {
        char num[16];
        int len = snprintf (num, sizeof num, "%d\n", code);
        if (pwrite (lfd, num, (size_t) len, 0) < 0)
          ret = ret; /* best effort: wait then reads state.json */
        close (lfd);
      }
  }
  if (m->rm && ret >= 0 && ohbox_state_remove (m->rt, m->id, err) < 0)
    ret = -1;
  return ret < 0 ? -1 : code;
}
