/* bash_session.h: the persistent bash session behind `run` actions.
 *
 * bash runs on a pseudo-terminal the executor owns.  A reader thread feeds
 * every byte of output to a virtual terminal (terminal.h) as it arrives, so
 * background output never blocks bash and an action reacts to output the
 * moment it lands (no polling interval).  The prompt is the OpenHands PS1
 * JSON block; a command is complete when a new prompt block shows up, as in
 * the Python server (runtime/utils/bash.py), whose observable behaviour --
 * no-change and hard timeouts, "not executed" while a command runs,
 * is_input, special keys, prefixes and suffixes -- is reproduced here. */
#ifndef OHBOX_EXECUTOR_BASH_SESSION_H
#define OHBOX_EXECUTOR_BASH_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

struct bash_opts
{
  const char *bash_path; /* NULL: found in PATH, then /bin/bash */
  const char *work_dir;
  bool switch_user; /* become UID/GID with a clean login environment (`su USER -`) */
  const char *username;
  uid_t uid;
  gid_t gid;
  const char *home;
  double no_change_timeout; /* seconds; NO_CHANGE_TIMEOUT_SECONDS */
  int server_port;          /* exported as OPENHANDS_SANDBOX_PORT when > 0 */
};

struct bash_session;

struct run_request
{
  const char *command;
  bool is_input;
  bool blocking;
  bool hidden;
  double timeout;    /* hard timeout in seconds; <= 0: none */
  char *timeout_str; /* how Python prints it ("2.0"); NULL when none */
};

int bash_session_start (const struct bash_opts *opts, struct bash_session **out, ohbox_error_t *err);
void bash_session_free (struct bash_session *s);
/* Runs one `run` action; returns the observation (never NULL). */
json_t *bash_session_run (struct bash_session *s, const struct run_request *req);
/* The working directory of the last completed prompt. Caller frees. */
char *bash_session_cwd (struct bash_session *s);
/* True once bash has exited (the session must be replaced). */
bool bash_session_dead (struct bash_session *s);
pid_t bash_session_pid (struct bash_session *s);

#endif
