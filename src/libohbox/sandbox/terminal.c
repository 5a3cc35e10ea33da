/* terminal.c: the caller's side of a -t session (exec.h): raw mode, the
 * window size, and the copy between the caller's fds and the master. */
#include "config.h"
#include "sandbox/exec.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <termios.h>

void
ohbox_terminal_sync_size (int master)
{
  struct winsize ws;
  if (ioctl (1, TIOCGWINSZ, &ws) == 0 || ioctl (0, TIOCGWINSZ, &ws) == 0)
    ioctl (master, TIOCSWINSZ, &ws);
}

/* Everything the master has now (the command exited: no more will come
 * from it, but what it wrote last is still buffered). */
static void
drain (int master)
{
  char buf[8192];
  int fl = fcntl (master, F_GETFL);
  fcntl (master, F_SETFL, fl | O_NONBLOCK);
  for (;;)
    {
      ssize_t n = read (master, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0 || ohbox_write_all (1, buf, (size_t) n) < 0)
        break;
    }
  fcntl (master, F_SETFL, fl);
}

/* Forwards BUF to MASTER except a complete DETACH sequence; *MATCHED is
 * how much of it the previous bytes ended with (held back, not sent yet).
 * Returns true when the sequence was typed. */
static bool
forward_input (int master, const char *buf, size_t len, const char *detach, size_t n_detach, size_t *matched)
{
  if (n_detach == 0)
    {
      ohbox_write_all (master, buf, len);
      return false;
    }
  char out[8192 + OHBOX_EXEC_MAX_DETACH_KEYS];
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    {
      if (buf[i] == detach[*matched])
        {
          if (++*matched == n_detach)
            {
              ohbox_write_all (master, out, k);
              return true;
            }
          continue;
        }
      /* Not the sequence after all: what was held back goes out first. */
      memcpy (out + k, detach, *matched);
      k += *matched;
      *matched = 0;
      if (buf[i] == detach[0])
        {
          *matched = 1;
          if (n_detach == 1)
            {
              ohbox_write_all (master, out, k);
              return true;
            }
          continue;
        }
      out[k++] = buf[i];
      if (k >= 8192)
        {
          ohbox_write_all (master, out, k);
          k = 0;
        }
    }
  ohbox_write_all (master, out, k);
  return false;
}

int
ohbox_terminal_proxy (int master, int pidfd, int sigfd, bool stdin_open, const char *detach, size_t n_detach)
{
  struct termios saved;
  bool in_tty = isatty (0);
  bool raw = stdin_open && in_tty && tcgetattr (0, &saved) == 0;
  if (raw)
    {
      struct termios t = saved;
      cfmakeraw (&t);
      tcsetattr (0, TCSANOW, &t);
    }
  ohbox_terminal_sync_size (master);
  size_t matched = 0;
  int ret = 0;
  /* stdin (not a terminal) ended: ^D once the command went quiet, so that
   * it is read as end of file by whoever reads then (a shell switching
   * to its line editor after its banner would lose an earlier one). */
  bool eof_pending = false;
  char buf[8192];
  for (;;)
    {
      struct pollfd p[4] = {
        { .fd = master, .events = POLLIN },
        { .fd = pidfd, .events = POLLIN },
        { .fd = sigfd, .events = POLLIN },
        { .fd = stdin_open ? 0 : -1, .events = POLLIN },
      };
      int ready = poll (p, 4, eof_pending ? 100 : -1);
      if (ready < 0)
        {
          if (errno == EINTR)
            continue;
          break;
        }
      if (ready == 0)
        {
          struct termios t;
          char eof = tcgetattr (master, &t) == 0 && (t.c_lflag & ICANON) && t.c_cc[VEOF] ? t.c_cc[VEOF] : '\x04';
          ohbox_write_all (master, &eof, 1);
          eof_pending = false;
          continue;
        }
      if (p[0].revents)
        {
          ssize_t n = read (master, buf, sizeof buf);
          if (n > 0)
            ohbox_write_all (1, buf, (size_t) n);
          else if (n < 0 && errno == EINTR)
            continue;
          else
            {
              /* EIO: every slave fd is closed; only the exit is left to see. */
              struct pollfd w = { .fd = pidfd, .events = POLLIN };
              while (poll (&w, 1, -1) < 0 && errno == EINTR)
                ;
              break;
            }
        }
      if (p[1].revents)
        {
          drain (master);
          break;
        }
      if (p[2].revents)
        {
          struct signalfd_siginfo si;
          if (read (sigfd, &si, sizeof si) == (ssize_t) sizeof si)
            {
              if (si.ssi_signo == SIGWINCH)
                ohbox_terminal_sync_size (master);
              else
                syscall (SYS_pidfd_send_signal, pidfd, (int) si.ssi_signo, NULL, 0);
            }
        }
      if (p[3].revents)
        {
          ssize_t n = read (0, buf, sizeof buf);
          if (n < 0 && errno == EINTR)
            continue;
          if (n > 0)
            {
              if (forward_input (master, buf, (size_t) n, detach, n_detach, &matched))
                {
                  ret = 1;
                  break;
                }
            }
          else
            {
              stdin_open = false;
              eof_pending = !in_tty;
            }
        }
    }
  if (raw)
    tcsetattr (0, TCSANOW, &saved);
  return ret;
}
