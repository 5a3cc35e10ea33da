/* monitor.c: the per-sandbox monitor loop (see sandbox.h): waits on the
 * init's pidfd, copies a detached sandbox's output into a bounded log,
 * forwards signals in the foreground, proxies a terminal, then records the
 * exit status and cleans up; kills the sandbox at its --timeout; relays
 * the caller's terminals without -t (relay.h). It
 * allocates nothing per event: its memory is what the fork left it plus one
 * 16 KiB buffer (and, for on_output in the foreground, two line buffers). */
#include "config.h"
#include "sandbox/sandbox_internal.h"
#include "network/network.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
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

/* on_output: the command's lines, split in a fixed buffer per stream (the
 * monitor allocates nothing per event). */
struct line_splitter
{
  char *buf[2];
  size_t len[2];
};

static void
lines_emit (struct ohbox_monitor *m, struct line_splitter *ls, int i, const char *data, size_t n)
{
  for (size_t k = 0; k < n; k++)
    {
      if (data[k] == '\n' || ls->len[i] == OHBOX_RUN_LINE_MAX)
        {
          m->on_output (i + 1, ls->buf[i], ls->len[i], m->event_data);
          ls->len[i] = 0;
          if (data[k] == '\n')
            continue;
        }
      ls->buf[i][ls->len[i]++] = data[k];
    }
}

/* Reads what stream I has; at EOF flushes a last unterminated line and
 * closes it. */
static void
lines_pump (struct ohbox_monitor *m, struct line_splitter *ls, int i, char *buf)
{
  ssize_t n = read (m->line_fd[i], buf, LOG_BUF);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (n > 0)
    {
      lines_emit (m, ls, i, buf, (size_t) n);
      return;
    }
  if (ls->len[i] > 0)
    m->on_output (i + 1, ls->buf[i], ls->len[i], m->event_data);
  ls->len[i] = 0;
  close (m->line_fd[i]);
  m->line_fd[i] = -1;
}

/* --timeout: SIGTERM to the command at the deadline, SIGKILL to the init
 * (and so the whole PID namespace) after the grace period. Returns the
 * poll timeout in ms until the next step (-1: none). */
static int
timeout_step (struct ohbox_monitor *m, bool *timed_out, bool *killed)
{
  if (m->timeout <= 0 || *killed)
    return -1;
  double now = ohbox_monotonic ();
  double deadline = m->started + m->timeout + (*timed_out ? OHBOX_RUN_TIMEOUT_GRACE : 0);
  if (now < deadline)
    {
      double ms = (deadline - now) * 1000.0 + 1;
      return ms > 1e9 ? 1000000000 : (int) ms;
    }
  if (!*timed_out)
    {
      *timed_out = true;
      syscall (SYS_pidfd_send_signal, m->pidfd, SIGTERM, NULL, 0);
      return (int) (OHBOX_RUN_TIMEOUT_GRACE * 1000) + 1;
    }
  *killed = true;
  syscall (SYS_pidfd_send_signal, m->pidfd, SIGKILL, NULL, 0);
  return -1;
}

int
ohbox_monitor_attach_listen (int state_dirfd, ohbox_error_t *err)
{
  return ohbox_state_listen (state_dirfd, OHBOX_ATTACH_SOCK, SOCK_NONBLOCK, 4, err);
}

/* A connection to attach.sock: the terminal's master goes to a client of
 * our own uid (or root), one at a time. Nothing is allocated. */
static void
attach_accept (struct ohbox_monitor *m, int *client)
{
  int fd = accept4 (m->attach_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  struct ucred cred;
  socklen_t len = sizeof cred;
  char answer = OHBOX_ATTACH_OK;
  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || (cred.uid != 0 && cred.uid != geteuid ()))
    answer = OHBOX_ATTACH_DENIED;
  else if (*client >= 0)
    answer = OHBOX_ATTACH_BUSY;
  /* The terminal's master goes only with a yes. */
  if (ohbox_send_with_fd (fd, &answer, 1, answer == OHBOX_ATTACH_OK ? m->tty_master : -1) == 1
      && answer == OHBOX_ATTACH_OK)
    {
      *client = fd;
      return;
    }
  close (fd);
}

/* The teardown's work (sandbox_internal.h), TLOCK held. */
static int
teardown_work (struct ohbox_monitor *m, ohbox_error_t *err)
{
  ohbox_network_unreserve (m->net);
  int r = ohbox_state_teardown_locked (m->rt, m->id, m->dirfd, m->rm, err);
  ohbox_trace ("monitor: torn down");
  return r;
}

/* What is left once the exit is recorded (a stopped sandbox holds no
 * address or port: nothing restarts it; --rm: nothing at all) is undone
 * after the monitor let go of monitor.lock, so that `ohbox stop`, `wait`
 * and `run --rm` return without waiting for it: releasing a veth and nft
 * elements waits for the kernel (tens of ms on hosts with many CPUs). The
 * detached monitor does it itself; the foreground one (`ohbox run`'s own
 * process, or a library caller's) hands it to a grandchild nobody waits
 * for and returns, unless there is no network to release. Whoever does it holds TLOCK (taken by the caller) until
 * it is done: killed half-way, the lock is free and the next command that
 * looks at the sandbox finishes it (ohbox_state_reconcile). The name of a
 * --rm sandbox goes at once: it may be taken again right away. */
static int
teardown (struct ohbox_monitor *m, int tlock, ohbox_error_t *err)
{
  if (m->rm)
    {
      struct ohbox_sandbox_config cfg;
      ohbox_error_t e = NULL;
      if (ohbox_state_load_config (m->dirfd, &cfg, &e) == 0)
        {
          if (cfg.name)
            ohbox_state_release_name (m->rt, m->id, cfg.name);
          ohbox_sandbox_config_clear (&cfg);
        }
      ohbox_error_release (&e);
    }
  if (tlock < 0)
    return teardown_work (m, err); /* no lock to hand over: as before, inline */
  /* Without a network to release, the teardown is a few file removals:
   * done here, it costs less than the two forks that would hand it over
   * (and no process is left to compete with the caller's next command). */
  if (m->detached || !ohbox_network_release_waits (m->net))
    {
      close (m->lockfd);
      m->lockfd = -1;
      int r = teardown_work (m, err);
      close (tlock);
      return r;
    }
  pid_t pid = fork ();
  if (pid < 0)
    {
      int r = teardown_work (m, err);
      close (tlock);
      return r;
    }
  if (pid == 0)
    {
      /* The child lets go of monitor.lock (the parent's copy goes when it
       * returns) and of the caller's stdio (a caller reading our output to
       * its end must not wait for the teardown). */
      close (m->lockfd);
      if (fork () != 0)
        _exit (0);
      setsid ();
      int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
      for (int i = 0; i < 3 && null >= 0; i++)
        dup2 (null, i);
      ohbox_error_t e = NULL;
      teardown_work (m, &e);
      _exit (e ? 1 : 0);
    }
  while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
  close (tlock);
  return 0;
}

/* What the monitor's loop holds while the sandbox runs. */
struct monitor_loop
{
  char *buf;
  struct line_splitter ls;
  struct log_writer lw;
  int sigfd;
  bool timed_out, killed;
  bool tty, stdin_open;
  struct log_writer *to_log; /* -d: the log */
  int to_out;                /* foreground -t: our stdout */
  /* ohbox attach: while a client has the terminal, its output is the
   * client's to read (the log misses it). */
  int client;
};

/* Where each fd of the loop is in the poll set (-1: not in it). */
struct monitor_slots
{
  int log, sig, in, line[2], listen, client;
};

static void
monitor_loop_init (struct ohbox_monitor *m, struct monitor_loop *l)
{
  memset (l, 0, sizeof *l);
  l->buf = xmalloc (LOG_BUF);
  l->lw = (struct log_writer){ .dirfd = m->dirfd, .fd = -1 };
  l->sigfd = l->client = -1;
  if (m->on_output)
    for (int i = 0; i < 2; i++)
      if (m->line_fd[i] >= 0)
        {
          l->ls.buf[i] = xmalloc (OHBOX_RUN_LINE_MAX);
          fcntl (m->line_fd[i], F_SETFL, O_NONBLOCK);
        }
  if (m->log_fd >= 0)
    {
      log_open (&l->lw);
      fcntl (m->log_fd, F_SETFL, O_NONBLOCK);
    }
  if (m->forward_signals)
    {
      sigset_t set;
      sigemptyset (&set);
      for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaddset (&set, forwarded[i]);
      sigprocmask (SIG_BLOCK, &set, NULL);
      l->sigfd = signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    }
  l->tty = m->tty_master >= 0;
  l->stdin_open = l->tty && !m->detached;
  l->to_log = m->detached ? &l->lw : NULL;
  l->to_out = l->tty && !m->detached ? 1 : -1;
}

static void
poll_add (struct pollfd *p, int *n, int *slot, int fd)
{
  *slot = *n;
  p[(*n)++] = (struct pollfd){ .fd = fd, .events = POLLIN };
}

/* The poll set of one round: the init's pidfd first, then what is open. */
static int
monitor_poll_set (struct ohbox_monitor *m, struct monitor_loop *l, struct pollfd *p, struct monitor_slots *s)
{
  int n = 0, first;
  *s = (struct monitor_slots){ -1, -1, -1, { -1, -1 }, -1, -1 };
  poll_add (p, &n, &first, m->pidfd);
  if (m->attach_fd >= 0)
    poll_add (p, &n, &s->listen, m->attach_fd);
  if (l->client >= 0)
    poll_add (p, &n, &s->client, l->client);
  for (int i = 0; i < 2; i++)
    if (m->on_output && m->line_fd[i] >= 0)
      poll_add (p, &n, &s->line[i], m->line_fd[i]);
  if (m->log_fd >= 0 && l->client < 0)
    poll_add (p, &n, &s->log, m->log_fd);
  if (l->sigfd >= 0)
    poll_add (p, &n, &s->sig, l->sigfd);
  if (l->stdin_open)
    poll_add (p, &n, &s->in, 0);
  if (m->relay)
    ohbox_relay_poll (m->relay, p, &n);
  return n;
}

/* Handles what one round of poll found ready. */
static void
monitor_poll_handle (struct ohbox_monitor *m, struct monitor_loop *l, struct pollfd *p, const struct monitor_slots *s)
{
  for (int i = 0; i < 2; i++)
    if (s->line[i] >= 0 && p[s->line[i]].revents)
      lines_pump (m, &l->ls, i, l->buf);
  if (m->relay)
    ohbox_relay_handle (m->relay, p, l->buf, LOG_BUF);
  /* A client that went away first: one that detaches and attaches
   * again at once must not find itself busy. */
  if (s->client >= 0 && p[s->client].revents)
    {
      /* The client says nothing: readable means it went away. */
      ssize_t r = read (l->client, l->buf, LOG_BUF);
      if (r <= 0 && !(r < 0 && (errno == EINTR || errno == EAGAIN)))
        {
          close (l->client);
          l->client = -1;
        }
    }
  if (s->listen >= 0 && p[s->listen].revents)
    attach_accept (m, &l->client);
  if (s->log >= 0 && p[s->log].revents && !pump (m->log_fd, l->to_log, l->to_out, l->buf))
    {
      if (!l->tty)
        close (m->log_fd);
      m->log_fd = -1;
    }
  if (s->in >= 0 && p[s->in].revents && !pump (0, NULL, m->tty_master, l->buf))
    l->stdin_open = false;
  if (s->sig >= 0 && p[s->sig].revents)
    {
      struct signalfd_siginfo si;
      while (read (l->sigfd, &si, sizeof si) == (ssize_t) sizeof si)
        syscall (SYS_pidfd_send_signal, m->pidfd, (int) si.ssi_signo, NULL, 0);
    }
}

/* Whatever the command wrote before it ended: every writer is gone with
 * the PID namespace, so EOF comes. */
static void
monitor_drain (struct ohbox_monitor *m, struct monitor_loop *l)
{
  if (l->client >= 0)
    close (l->client);
  if (m->log_fd >= 0)
    while (pump (m->log_fd, l->to_log, l->to_out, l->buf))
      {
        struct pollfd q = { .fd = m->log_fd, .events = POLLIN };
        if (poll (&q, 1, 0) <= 0)
          break;
      }
  if (m->relay)
    ohbox_relay_finish (m->relay, l->buf, LOG_BUF, 1000);
  for (int i = 0; i < 2; i++)
    while (m->on_output && m->line_fd[i] >= 0)
      {
        struct pollfd q = { .fd = m->line_fd[i], .events = POLLIN };
        if (poll (&q, 1, 1000) <= 0)
          {
            close (m->line_fd[i]);
            m->line_fd[i] = -1;
            break;
          }
        lines_pump (m, &l->ls, i, l->buf);
      }
  free (l->ls.buf[0]);
  free (l->ls.buf[1]);
  free (l->buf);
  if (l->lw.fd >= 0)
    close (l->lw.fd);
  if (l->sigfd >= 0)
    close (l->sigfd);
}

/* The init's exit status as a shell shows it, and the signal behind it. */
static int
monitor_exit_code (struct ohbox_monitor *m, bool timed_out, int *ret_signo)
{
  siginfo_t si;
  memset (&si, 0, sizeof si);
  int code = 255;
  while (waitid (P_PIDFD, (id_t) m->pidfd, &si, WEXITED) < 0)
    if (errno != EINTR)
      break;
  *ret_signo = 0;
  if (si.si_code == CLD_EXITED)
    {
      code = si.si_status;
      /* The init reports a command killed by signal N as 128+N (init.c), as
       * shells do: a command that exits 128+N itself looks the same. */
      if (code > 128 && code <= 128 + 64)
        *ret_signo = code - 128;
    }
  else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
    {
      *ret_signo = si.si_status;
      code = 128 + si.si_status;
    }
  return timed_out ? OHBOX_EXIT_TIMEOUT : code;
}

/* The devices' poststop hooks, then the exit in state.json and, for `ohbox
 * wait` (which holds the lock file open: readable even after --rm removed
 * the directory), in monitor.lock. */
static int
monitor_record_exit (struct ohbox_monitor *m, int code, bool timed_out, ohbox_error_t *err)
{
  cleanup_error ohbox_error_t hook_err = NULL;
  if (m->devices && m->devices->n_hooks > 0)
    {
      /* OCI: a poststop hook that fails is a warning, and the rest goes on. */
      cleanup_free char *dir = xasprintf ("%s/%s", m->rt->root, m->id);
      json_t *st = json_pack ("{s:s, s:s, s:s, s:s, s:{}}", "ociVersion", "1.0.2", "id", m->id, "status", "stopped",
                              "bundle", dir, "annotations");
      cleanup_free char *state = json_dumps (st, JSON_COMPACT);
      json_decref (st);
      ohbox_device_hooks_run (m->devices, OHBOX_HOOK_POSTSTOP, state, &hook_err);
    }
  int r = ohbox_state_record_exit (m->dirfd, code, timed_out, hook_err ? hook_err->msg : NULL, err);
  int lfd = openat (m->dirfd, "monitor.lock", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (lfd >= 0)
    {
      char num[16];
      int len = snprintf (num, sizeof num, "%d\n", code);
      if (pwrite (lfd, num, (size_t) len, 0) < 0)
        r = r; /* best effort: wait then reads state.json */
      close (lfd);
    }
  return r;
}

int
ohbox_monitor_run (struct ohbox_monitor *m, ohbox_error_t *err)
{
  struct monitor_loop l;
  monitor_loop_init (m, &l);
  for (;;)
    {
      struct pollfd p[12];
      struct monitor_slots s;
      int n = monitor_poll_set (m, &l, p, &s);
      int wait_ms = timeout_step (m, &l.timed_out, &l.killed);
      int pr = poll (p, n, wait_ms);
      if (pr < 0 && errno == EINTR)
        continue;
      if (pr < 0)
        break;
      if (pr == 0)
        continue; /* a --timeout step is due */
      monitor_poll_handle (m, &l, p, &s);
      if (p[0].revents)
        break;
    }
  monitor_drain (m, &l);
  int signo;
  int code = monitor_exit_code (m, l.timed_out, &signo);
  ohbox_trace ("monitor: exited");
  double duration = ohbox_monotonic () - m->started;
  int ret = code;
  /* The init is gone, so is its PID namespace; the cgroup may still hold
   * processes that escaped it (none should): destroy kills and removes. */
  if (m->cgroup && ohbox_cgroup_destroy (m->cgroup, err) < 0)
    ret = -1;
  ohbox_trace ("monitor: cgroups removed");
  /* Taken before monitor.lock is let go: no one who sees the exit recorded
   * can think the teardown was lost (reconcile). */
  ohbox_error_t e = NULL;
  int tlock = ohbox_lock_file (m->dirfd, OHBOX_STATE_TEARDOWN_LOCK, true, false, &e);
  ohbox_error_release (&e);
  if (monitor_record_exit (m, code, l.timed_out, ret < 0 ? NULL : err) < 0)
    ret = -1;
  if (m->on_exited)
    {
      struct ohbox_run_exit ex = {
        .id = m->id, .exit_code = code, .signal = signo, .timed_out = l.timed_out, .duration = duration
      };
      m->on_exited (&ex, m->event_data);
    }
  ohbox_trace ("monitor: state updated");
  if (teardown (m, tlock, ret < 0 ? NULL : err) < 0)
    ret = -1;
  if (m->lockfd >= 0)
    close (m->lockfd);
  m->lockfd = -1;
  return ret < 0 ? -1 : code;
}
