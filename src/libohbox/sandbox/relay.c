/* relay.c: see relay.h. */
#include "config.h"
#include "sandbox/relay.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
ohbox_relay_init (struct ohbox_relay *r)
{
  memset (r, 0, sizeof *r);
  for (int i = 0; i < 3; i++)
    r->from[i] = r->to[i] = r->idx[i] = -1;
}

int
ohbox_relay_setup (struct ohbox_relay *r, int fds[3], ohbox_error_t *err)
{
  ohbox_relay_init (r);
  for (int i = 0; i < 3; i++)
    {
      if (fds[i] < 0 || !isatty (fds[i]))
        continue;
      int p[2];
      if (pipe2 (p, O_CLOEXEC) < 0)
        {
          ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe for the command's fd %d", i);
          ohbox_relay_close (r);
          return -1;
        }
      r->owned[i] = fds[i] > 2;
      if (i == 0)
        {
          /* Only our end is non-blocking: the command's is its own file. */
          fcntl (p[1], F_SETFL, O_NONBLOCK);
          r->from[0] = fds[0];
          r->to[0] = p[1];
          fds[0] = p[0];
        }
      else
        {
          r->from[i] = p[0];
          r->to[i] = fds[i];
          fds[i] = p[1];
        }
    }
  return 0;
}

bool
ohbox_relay_active (const struct ohbox_relay *r)
{
  for (int i = 0; i < 3; i++)
    if (r->from[i] >= 0 || r->to[i] >= 0)
      return true;
  return false;
}

/* Closes stream I: both of our ends (the caller's fd only when ours). */
static void
relay_stop (struct ohbox_relay *r, int i)
{
  int theirs = i == 0 ? r->from[0] : r->to[i];
  int ours = i == 0 ? r->to[0] : r->from[i];
  if (ours >= 0)
    close (ours);
  if (theirs >= 0 && r->owned[i])
    close (theirs);
  r->from[i] = r->to[i] = -1;
  if (i == 0)
    r->in_len = r->in_off = 0;
}

void
ohbox_relay_poll (struct ohbox_relay *r, struct pollfd *p, int *n)
{
  for (int i = 0; i < 3; i++)
    {
      r->idx[i] = -1;
      if (r->from[i] < 0)
        continue;
      r->idx[i] = *n;
      /* stdin: read the terminal only when what was read went out. */
      if (i == 0 && r->in_off < r->in_len)
        p[(*n)++] = (struct pollfd){ .fd = r->to[0], .events = POLLOUT };
      else
        p[(*n)++] = (struct pollfd){ .fd = r->from[i], .events = POLLIN };
    }
}

/* A write into the command's stdin pipe that the command may have closed:
 * EPIPE, not a SIGPIPE for the whole process (a library must not change
 * its caller's dispositions: the signal is blocked for this thread and a
 * pending one taken back). */
static ssize_t
write_no_sigpipe (int fd, const void *data, size_t len)
{
  sigset_t pipe_set, old;
  sigemptyset (&pipe_set);
  sigaddset (&pipe_set, SIGPIPE);
  pthread_sigmask (SIG_BLOCK, &pipe_set, &old);
  ssize_t n = write (fd, data, len);
  if (n < 0 && errno == EPIPE && !sigismember (&old, SIGPIPE))
    {
      int e = errno;
      struct timespec zero = { 0, 0 };
      sigtimedwait (&pipe_set, NULL, &zero);
      errno = e;
    }
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return n;
}

static void
relay_stdin (struct ohbox_relay *r, short revents)
{
  if (r->in_off == r->in_len)
    {
      ssize_t n = read (r->from[0], r->in_buf, sizeof r->in_buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
      if (n <= 0)
        {
          /* The terminal's EOF (^D) is the command's. */
          relay_stop (r, 0);
          return;
        }
      r->in_len = (size_t) n;
      r->in_off = 0;
    }
  else if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
    return;
  ssize_t w = write_no_sigpipe (r->to[0], r->in_buf + r->in_off, r->in_len - r->in_off);
  if (w < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (w < 0)
    {
      /* The command closed its stdin: what the terminal says is not its. */
      relay_stop (r, 0);
      return;
    }
  r->in_off += (size_t) w;
}

/* One read from stream I's pipe to the caller's fd; false at EOF. */
static bool
relay_output (struct ohbox_relay *r, int i, char *buf, size_t size)
{
  ssize_t n = read (r->from[i], buf, size);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return true;
  if (n <= 0)
    {
      relay_stop (r, i);
      return false;
    }
  /* A terminal that went away (EIO) does not stop the reading: the
   * command must not block on a full pipe. */
  ohbox_write_all (r->to[i], buf, (size_t) n);
  return true;
}

void
ohbox_relay_handle (struct ohbox_relay *r, const struct pollfd *p, char *buf, size_t size)
{
  for (int i = 0; i < 3; i++)
    {
      if (r->idx[i] < 0 || r->from[i] < 0 || p[r->idx[i]].revents == 0)
        continue;
      if (i == 0)
        relay_stdin (r, p[r->idx[i]].revents);
      else
        relay_output (r, i, buf, size);
    }
}

void
ohbox_relay_finish (struct ohbox_relay *r, char *buf, size_t size, int quiet_ms)
{
  relay_stop (r, 0);
  for (int i = 1; i < 3; i++)
    while (r->from[i] >= 0)
      {
        struct pollfd q = { .fd = r->from[i], .events = POLLIN };
        int pr = poll (&q, 1, quiet_ms);
        if (pr < 0 && errno == EINTR)
          continue;
        if (pr <= 0)
          {
            relay_stop (r, i);
            break;
          }
        relay_output (r, i, buf, size);
      }
}

void
ohbox_relay_close (struct ohbox_relay *r)
{
  for (int i = 0; i < 3; i++)
    relay_stop (r, i);
}
