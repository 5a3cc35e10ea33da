/* bash_pty.c: the terminal side of the bash session: spawning bash on a
 * pseudo-terminal (as another user when asked), the reader thread that
 * feeds libvterm, and typing keys.  See bash_private.h. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "bash_private.h"
#include "users.h"
#include "common/utils.h"
#include "common/strv.h"

extern char **environ;

int
bash_write_all_until (int fd, const char *data, size_t len, double deadline)
{
  while (len)
    {
      ssize_t w = write (fd, data, len);
      if (w > 0)
        {
          data += w;
          len -= (size_t) w;
          continue;
        }
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && errno != EAGAIN)
        return -1;
      double left = deadline - ohbox_monotonic ();
      if (left <= 0)
        {
          errno = ETIMEDOUT;
          return -1;
        }
      struct pollfd p = { .fd = fd, .events = POLLOUT };
      poll (&p, 1, (int) (left * 1000) + 1);
    }
  return 0;
}

void
bash_term_answer (const char *data, size_t len, void *user)
{
  struct bash_session *s = user;
  /* Terminal answers (cursor reports) are tiny; drop them if the input
   * queue is full rather than block the reader. */
  if (write (s->master, data, len) < 0)
    return;
}

void *
bash_reader_main (void *arg)
{
  struct bash_session *s = arg;
  char buf[65536];
  for (;;)
    {
      struct pollfd p[2] = { { .fd = s->master, .events = POLLIN }, { .fd = s->wake[0], .events = POLLIN } };
      if (poll (p, 2, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          break;
        }
      if (p[1].revents)
        break;
      ssize_t n = read (s->master, buf, sizeof (buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      pthread_mutex_lock (&s->lock);
      if (n <= 0)
        {
          /* EIO: every process holding the terminal is gone. */
          s->dead = true;
          pthread_cond_broadcast (&s->cond);
          pthread_mutex_unlock (&s->lock);
          break;
        }
      term_feed (s->term, buf, (size_t) n);
      pthread_cond_broadcast (&s->cond);
      pthread_mutex_unlock (&s->lock);
    }
  return NULL;
}

/* tmux send-keys in non-literal mode: a whole string that names a key is
 * sent as that key. */
static const struct
{
  const char *name;
  const char *seq;
} key_names[] = {
  { "Enter", "\r" },       { "Escape", "\033" },   { "Tab", "\t" },         { "BTab", "\033[Z" },
  { "Space", " " },        { "BSpace", "\177" },   { "Up", "\033[A" },      { "Down", "\033[B" },
  { "Right", "\033[C" },   { "Left", "\033[D" },   { "Home", "\033[1~" },   { "End", "\033[4~" },
  { "PageUp", "\033[5~" }, { "PgUp", "\033[5~" },  { "PPage", "\033[5~" },  { "PageDown", "\033[6~" },
  { "PgDn", "\033[6~" },   { "NPage", "\033[6~" }, { "Insert", "\033[2~" }, { "IC", "\033[2~" },
  { "Delete", "\033[3~" }, { "DC", "\033[3~" },    { "F1", "\033OP" },      { "F2", "\033OQ" },
  { "F3", "\033OR" },      { "F4", "\033OS" },     { "F5", "\033[15~" },    { "F6", "\033[17~" },
  { "F7", "\033[18~" },    { "F8", "\033[19~" },   { "F9", "\033[20~" },    { "F10", "\033[21~" },
  { "F11", "\033[23~" },   { "F12", "\033[24~" },
};

int
bash_send_keys (struct bash_session *s, const char *text, bool enter, double deadline)
{
  char key[3];
  const char *data = text;
  size_t len = strlen (text);
  if (len == 3 && (text[0] == 'C' || text[0] == 'M') && text[1] == '-')
    {
      unsigned char c = (unsigned char) text[2];
      if (text[0] == 'C')
        {
          if (c == '?')
            key[0] = 0x7f;
          else if (isalpha (c))
            key[0] = (char) (toupper (c) - 'A' + 1);
          else if (c == ' ' || c == '@' || c == '2')
            key[0] = 0;
          else
            key[0] = (char) (c & 0x1f);
          data = key;
          len = 1;
        }
      else
        {
          key[0] = '\033';
          key[1] = (char) c;
          data = key;
          len = 2;
        }
    }
  else
    for (size_t i = 0; i < sizeof (key_names) / sizeof (key_names[0]); i++)
      if (strcasecmp (text, key_names[i].name) == 0)
        {
          data = key_names[i].seq;
          len = strlen (data);
          break;
        }
  /* One write: bash wakes up once and finds the whole line. */
  cleanup_free char *line = xmalloc (len + 2);
  memcpy (line, data, len);
  if (enter)
    line[len++] = '\r';
  if (len && bash_write_all_until (s->master, line, len, deadline) < 0)
    return -1;
  return 0;
}

int
bash_pending_input (struct bash_session *s)
{
  /* The count lives on the terminal side: opened only for the question, so
   * that the master still sees EIO once bash and its jobs are gone. */
  int fd = open (s->slave_name, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return 0;
  int n = 0;
  if (ioctl (fd, FIONREAD, &n) < 0)
    n = 0;
  close (fd);
  return n;
}

static char *
find_bash (const char *given)
{
  if (given)
    return xstrdup (given);
  char *found = ohbox_path_find (getenv ("PATH"), "/usr/local/bin:/usr/bin:/bin", "bash");
  return found ? found : xstrdup ("/bin/bash");
}

static char **
build_env (const struct bash_opts *o, const char *bash)
{
  size_t n = 0, cap = 16;
  char **env = xmalloc (cap * sizeof (char *));
#define ADD(...)                                                                                                       \
  do                                                                                                                   \
    {                                                                                                                  \
      if (n + 2 > cap)                                                                                                 \
        env = xrealloc (env, (cap *= 2) * sizeof (char *));                                                            \
      env[n++] = xasprintf (__VA_ARGS__);                                                                              \
    }                                                                                                                  \
  while (0)
  if (o->switch_user)
    {
      /* `su USER -`: a clean login environment. */
      ADD ("HOME=%s", o->home ? o->home : "/");
      ADD ("SHELL=%s", bash);
      ADD ("USER=%s", o->username);
      ADD ("LOGNAME=%s", o->username);
      ADD ("PATH=%s", o->uid == 0 ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                                  : "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games");
    }
  else
    for (char **e = environ; *e; e++)
      {
        /* The session key authenticates the client; the agent has no use for it. */
        if (strncmp (*e, "SESSION_API_KEY=", 16) == 0 || strncmp (*e, "TERM=", 5) == 0)
          continue;
        ADD ("%s", *e);
      }
  ADD ("TERM=xterm-256color");
#undef ADD
  env[n] = NULL;
  return env;
}

int
bash_spawn (struct bash_session *s, const struct bash_opts *o, int setup_fd, ohbox_error_t *err)
{
  cleanup_free char *bash = find_bash (o->bash_path);
  s->master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s->master < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "open a pseudo-terminal (`/dev/ptmx`)");
  char *slave_name = s->slave_name;
  if (grantpt (s->master) < 0 || unlockpt (s->master) < 0
      || ptsname_r (s->master, slave_name, sizeof (s->slave_name)) != 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "set up the pseudo-terminal");
  struct winsize ws = { .ws_row = TERM_ROWS, .ws_col = TERM_COLS };
  ioctl (s->master, TIOCSWINSZ, &ws);

  /* Everything the child needs is prepared before fork(): the server is
   * multi-threaded, so the child may only make async-signal-safe calls. */
  char **env = build_env (o, bash);
  char *argv[] = { o->switch_user ? "-bash" : "bash", NULL };
  gid_t groups[256];
  int ngroups = o->switch_user ? users_groups (o->username, o->gid, groups, sizeof (groups) / sizeof (groups[0])) : 0;
  const char *dir = o->work_dir ? o->work_dir : "/";

  pid_t pid = fork ();
  if (pid < 0)
    {
      ohbox_strv_free (env);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "fork the bash session");
    }
  if (pid == 0)
    {
      users_child_new_session ();
      int slave = open (slave_name, O_RDWR);
      if (slave < 0)
        _exit (126);
      ioctl (slave, TIOCSCTTY, 0);
      dup2 (slave, 0);
      dup2 (slave, 1);
      dup2 (slave, 2);
      if (setup_fd >= 0 && dup2 (setup_fd, SETUP_FD_IN_BASH) < 0)
        _exit (126);
      if (users_child_become (setup_fd >= 0 ? SETUP_FD_IN_BASH + 1 : 3, o->switch_user, groups, ngroups, o->gid, o->uid,
                              dir)
          < 0)
        _exit (126);
      execve (bash, argv, env);
      _exit (127);
    }
  ohbox_strv_free (env);
  s->pid = pid;
  int fl = fcntl (s->master, F_GETFL);
  fcntl (s->master, F_SETFL, fl | O_NONBLOCK);
  return 0;
}
