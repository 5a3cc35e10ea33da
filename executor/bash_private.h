/* bash_private.h: the inside of a bash session, shared by bash_session.c
 * (the OpenHands run logic) and bash_pty.c (the pseudo-terminal, the
 * reader thread, spawning bash, typing keys).  Not a public interface. */
#ifndef OHBOX_EXECUTOR_BASH_PRIVATE_H
#define OHBOX_EXECUTOR_BASH_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "bash_session.h"
#include "terminal.h"

/* tmux gives the Python server a 1000-column pane; the width decides how
 * programs lay out their output (ls columns, wrapping), so keep it.  The
 * height only decides what is history and what is screen: 24 rows keep the
 * libvterm cell buffer under 1 MiB. */
#define TERM_COLS 1000
#define TERM_ROWS 24
#define HISTORY_LIMIT 10000
#define STARTUP_TIMEOUT 30.0

enum bash_status
{
  ST_NONE,
  ST_COMPLETED,
  ST_NO_CHANGE_TIMEOUT,
  ST_HARD_TIMEOUT,
};

struct bash_session
{
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t reader;
  bool reader_started;
  int master;
  char slave_name[128];
  int wake[2];
  pid_t pid;
  bool dead;
  struct term *term;
  char *cwd;
  double no_change_timeout;
  enum bash_status prev_status;
  char *prev_output;
};

/* Writes all of DATA to FD (non-blocking) before DEADLINE; -1 with errno. */
int bash_write_all_until (int fd, const char *data, size_t len, double deadline);
/* Types TEXT into the terminal as tmux send-keys does (key names, C-x),
 * followed by Enter when ENTER. */
int bash_send_keys (struct bash_session *s, const char *text, bool enter, double deadline);
/* libvterm's answers (cursor reports) go back to the program. */
void bash_term_answer (const char *data, size_t len, void *user);
/* The reader thread: every byte of output into the terminal, as it arrives. */
void *bash_reader_main (void *arg);
/* Bytes typed into the terminal that bash (or the program in front) has
 * not read yet. */
int bash_pending_input (struct bash_session *s);
/* Forks bash on a new pseudo-terminal (s->master, s->pid); SETUP_FD >= 0
 * is bash's fd SETUP_FD_IN_BASH. */
#define SETUP_FD_IN_BASH 3
int bash_spawn (struct bash_session *s, const struct bash_opts *o, int setup_fd, ohbox_error_t *err);

#endif
