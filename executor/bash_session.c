/* bash_session.c: see bash_session.h.  Texts and the order of the checks
 * follow openhands/runtime/utils/bash.py so that agents see the same
 * observations. */
#include "config.h"
#include "bash_session.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bash_private.h"
#include "cmdsplit.h"
#include "obs.h"
#include "common/utils.h"

#define PS1_BEGIN "###PS1JSON###"
#define PS1_END "###PS1END###"

#define TIMEOUT_MESSAGE_TEMPLATE                                                                                       \
  "You may wait longer to see additional output by sending empty command '', send other commands to interact "         \
  "with the current process, send keys (\"C-c\", \"C-z\", \"C-d\") to interrupt/kill the previous command "            \
  "before sending your new command, or use the timeout parameter in execute_bash for future commands."

#define CONTINUE_PREFIX "[Below is the output of the previous command.]\n"

/* Seconds without output after which a prompt ends a command even though
 * fewer prompts than typed lines showed (see run_locked): the Python
 * server's polling interval. */
#define PROMPT_QUIET 0.5

/* Seconds from a command's start in which its pane is rendered at every
 * change, unthrottled (run_poll_once). */
#define THROTTLE_GRACE 0.005

/* The prompt: PROMPT_COMMAND computes the values without forking (the
 * Python server's PS1 runs `$(pwd)` and `$(which python)`, two forks per
 * prompt), then PS1 renders exactly the block the Python server parses.
 * `which python` is a walk over $PATH split by IFS (empty entries mean
 * ".", as for which); a PATH with glob characters takes a slower walk that
 * expands nothing.  The function runs after every command: this form costs
 * bash ~20 us where a `while` loop over "${p%%:*}" cost ~70 us.
 * The function, PROMPT_COMMAND, PS1 and PS2 are exported as the Python
 * server exports its PROMPT_COMMAND and PS1: a nested interactive bash
 * (`bash`, `poetry shell`) shows the same prompt block, so the command that
 * started it completes and the agent goes on in the nested shell.
 * Bracketed paste is turned off: readline would wrap every command in two
 * mode switches, two more writes (and wake-ups) per command that show
 * nothing on the screen. */
#define PY_TEST "[[ -f ${d:-.}/python && -x ${d:-.}/python ]] && { __oh_py=${d:-.}/python; break; }; "
static const char setup_line[] =
  "__oh_prompt() { __oh_rc=$?; local d p IFS=:; __oh_py=; case $PATH in *[][*?]*) p=$PATH:; "
  "while [[ $p ]]; do d=${p%%%%:*}; p=${p#*:}; " PY_TEST "done;; *) for d in $PATH''; do " PY_TEST "done;; "
  "esac; PS1='\\n" PS1_BEGIN "\\n{\\n  \"pid\": \"$!\",\\n  \"exit_code\": \"$__oh_rc\",\\n  "
  "\"username\": \"\\u\",\\n  \"hostname\": \"\\h\",\\n  \"working_dir\": \"$PWD\",\\n  "
  "\"py_interpreter_path\": \"$__oh_py\"\\n}\\n" PS1_END "\\n'; }; export -f __oh_prompt; "
  "export PROMPT_COMMAND=__oh_prompt PS1 PS2=; "
  "bind 'set enable-bracketed-paste off' 2>/dev/null; alias git=\"git --no-pager\"; cd -- %s\r";

/* The setup reaches bash as a file it sources: typed, readline takes it a
 * byte at a time, two system calls and a redisplay each (~4 ms of a cold
 * start here; sourced, ~0.6 ms). The file (a memfd: a regular file, which
 * every bash sources, where a pipe is read by bash 4 and later only) is
 * bash's fd 3 and closed at once, so no command of the agent inherits it. */
static const char source_setup_line[] = ". /dev/fd/3; exec 3<&-\r";

/* A memfd holding TEXT, or -1 (typed then). */
static int
setup_file (const char *text)
{
  int fd = memfd_create ("ohbox-bash-setup", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = strlen (text);
  if (write (fd, text, n) != (ssize_t) n)
    {
      close (fd);
      return -1;
    }
  return fd;
}

static void
deadline_ts (double when, struct timespec *ts)
{
  ts->tv_sec = (time_t) when;
  ts->tv_nsec = (long) ((when - (double) ts->tv_sec) * 1e9);
  if (ts->tv_nsec >= 1000000000L)
    {
      ts->tv_sec++;
      ts->tv_nsec -= 1000000000L;
    }
}

static bool
is_space (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static char *
strip_dup (const char *s)
{
  while (is_space (*s))
    s++;
  size_t n = strlen (s);
  while (n && is_space (s[n - 1]))
    n--;
  return xstrndup (s, n);
}

/* Python's rstrip() for ASCII whitespace, in place. */
static void
rstrip_inplace (char *s)
{
  size_t n = strlen (s);
  while (n && is_space (s[n - 1]))
    n--;
  s[n] = '\0';
}

static bool
ends_with_ps1_end (const char *pane)
{
  size_t n = strlen (pane);
  while (n && is_space (pane[n - 1]))
    n--;
  size_t m = sizeof (PS1_END) - 1;
  return n >= m && memcmp (pane + n - m, PS1_END, m) == 0;
}

/* ---- prompt blocks ---------------------------------------------------- */

struct ps1_match
{
  size_t start, end; /* of "###PS1JSON###" .. end of "###PS1END###" */
  size_t inner_start, inner_end;
};

/* Finds the prompt blocks as CMD_OUTPUT_METADATA_PS1_REGEX with finditer
 * does ('^###PS1JSON###(.*?)###PS1END###', DOTALL|MULTILINE), keeping only
 * those whose inner text parses as JSON. */
static size_t
find_ps1 (const char *pane, struct ps1_match **out)
{
  size_t n = 0, cap = 0;
  struct ps1_match *m = NULL;
  const char *p = pane;
  const size_t bl = sizeof (PS1_BEGIN) - 1, el = sizeof (PS1_END) - 1;
  while ((p = strstr (p, PS1_BEGIN)) != NULL)
    {
      if (p != pane && p[-1] != '\n')
        {
          p += bl;
          continue;
        }
      const char *e = strstr (p + bl, PS1_END);
      if (e == NULL)
        break;
      json_t *j = json_loadb (p + bl, (size_t) (e - p - bl), JSON_DECODE_ANY, NULL);
      if (j != NULL)
        {
          json_decref (j);
          if (n == cap)
            {
              cap = cap ? cap * 2 : 4;
              m = xrealloc (m, cap * sizeof (*m));
            }
          m[n].start = (size_t) (p - pane);
          m[n].end = (size_t) (e - pane) + el;
          m[n].inner_start = m[n].start + bl;
          m[n].inner_end = (size_t) (e - pane);
          n++;
        }
      p = e + el;
    }
  *out = m;
  return n;
}

/* Python int(float(str(v))), -1 on failure. */
static int
ps1_int (json_t *v)
{
  if (json_is_integer (v))
    return (int) json_integer_value (v);
  if (json_is_real (v))
    return (int) json_real_value (v);
  if (!json_is_string (v))
    return -1;
  const char *s = json_string_value (v);
  char *end;
  errno = 0;
  double d = strtod (s, &end);
  while (is_space (*end))
    end++;
  if (end == s || *end || errno)
    return -1;
  return (int) d;
}

static char *
ps1_str (json_t *o, const char *key)
{
  json_t *v = json_object_get (o, key);
  if (json_is_string (v))
    return xstrdup (json_string_value (v));
  return NULL;
}

static void
meta_from_ps1 (const char *pane, const struct ps1_match *m, struct run_meta *meta)
{
  run_meta_init (meta);
  json_t *j = json_loadb (pane + m->inner_start, m->inner_end - m->inner_start, JSON_DECODE_ANY, NULL);
  if (j == NULL)
    return;
  if (json_is_object (j))
    {
      if (json_object_get (j, "pid"))
        meta->pid = ps1_int (json_object_get (j, "pid"));
      if (json_object_get (j, "exit_code"))
        meta->exit_code = ps1_int (json_object_get (j, "exit_code"));
      meta->username = ps1_str (j, "username");
      meta->hostname = ps1_str (j, "hostname");
      meta->working_dir = ps1_str (j, "working_dir");
      meta->py_interpreter_path = ps1_str (j, "py_interpreter_path");
    }
  json_decref (j);
}

static char *
slice (const char *s, size_t from, size_t to)
{
  size_t len = strlen (s);
  if (from > len)
    from = len;
  if (to > len)
    to = len;
  if (to < from)
    to = from;
  return xstrndup (s + from, to - from);
}

/* _combine_outputs_between_matches. */
static char *
combine_outputs (const char *pane, const struct ps1_match *m, size_t n, bool before_last)
{
  if (n == 1)
    return before_last ? slice (pane, 0, m[0].start) : slice (pane, m[0].end + 1, SIZE_MAX);
  if (n == 0)
    return xstrdup (pane);
  struct ohbox_buf b = { 0 };
  for (size_t i = 0; i + 1 < n; i++)
    {
      cleanup_free char *seg = slice (pane, m[i].end + 1, m[i + 1].start);
      ohbox_buf_append (&b, seg, strlen (seg));
      ohbox_buf_append (&b, "\n", 1);
    }
  cleanup_free char *tail = slice (pane, m[n - 1].end + 1, SIZE_MAX);
  ohbox_buf_append (&b, tail, strlen (tail));
  return b.data;
}

/* _get_command_output: drops what an earlier reply already showed, then
 * the echoed command. */
static char *
command_output (struct bash_session *s, const char *command, const char *raw, struct run_meta *meta,
                const char *continue_prefix)
{
  const char *out = raw;
  if (s->prev_output && *s->prev_output)
    {
      size_t pl = strlen (s->prev_output);
      if (strncmp (raw, s->prev_output, pl) == 0)
        out = raw + pl;
      free (meta->prefix);
      meta->prefix = xstrdup (continue_prefix);
    }
  char *new_prev = xstrdup (raw);
  /* lstrip, removeprefix(command.lstrip()), lstrip, rstrip. */
  while (is_space (*out))
    out++;
  const char *c = command;
  while (is_space (*c))
    c++;
  size_t cl = strlen (c);
  if (cl && strncmp (out, c, cl) == 0)
    out += cl;
  while (is_space (*out))
    out++;
  char *result = xstrdup (out);
  rstrip_inplace (result);
  free (s->prev_output);
  s->prev_output = new_prev;
  return result;
}

static bool
is_special_key (const char *command)
{
  return strncmp (command, "C-", 2) == 0 && strlen (command) == 3;
}

/* ---- the terminal side -------------------------------------------------- */

/* Waits (lock held) until the terminal changes or DEADLINE passes. */
static void
wait_change (struct bash_session *s, uint64_t seen, double deadline)
{
  struct timespec ts;
  deadline_ts (deadline, &ts);
  while (!s->dead && term_generation (s->term) == seen)
    if (pthread_cond_timedwait (&s->cond, &s->lock, &ts) == ETIMEDOUT)
      break;
}

/* After a completed command the Python server clears the pane (C-l, which
 * makes readline redraw the prompt, and clear-history): keep only the last
 * prompt block. */
static void
ready_for_next_command (struct bash_session *s, const char *pane, const struct ps1_match *last)
{
  cleanup_free char *block = slice (pane, last->start, last->end);
  cleanup_free char *text = xasprintf ("\n%s\n", block);
  term_reset_to (s->term, text);
}

/* ---- start ---------------------------------------------------------------- */

static char *
shell_quote (const char *s)
{
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "'", 1);
  for (; *s; s++)
    {
      if (*s == '\'')
        ohbox_buf_append (&b, "'\\''", 4);
      else
        ohbox_buf_append (&b, s, 1);
    }
  ohbox_buf_append (&b, "'", 1);
  return b.data;
}

int
bash_session_start (const struct bash_opts *o, struct bash_session **out, ohbox_error_t *err)
{
  struct bash_session *s = xcalloc (1, sizeof (*s));
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&s->cond, &ca);
  pthread_condattr_destroy (&ca);
  pthread_mutex_init (&s->lock, NULL);
  s->master = -1;
  s->wake[0] = s->wake[1] = -1;
  s->no_change_timeout = o->no_change_timeout > 0 ? o->no_change_timeout : 10;
  s->cwd = xstrdup (o->work_dir ? o->work_dir : "/");
  s->term = term_new (TERM_ROWS, TERM_COLS, HISTORY_LIMIT, bash_term_answer, s);
  if (pipe2 (s->wake, O_CLOEXEC) < 0)
    {
      bash_session_free (s);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "create a pipe");
    }
  cleanup_free char *q = shell_quote (s->cwd);
  cleanup_free char *line = xasprintf (setup_line, q);
  line[strlen (line) - 1] = '\n'; /* (as a file's last line) */
  cleanup_close int setup_fd = setup_file (line);
  line[strlen (line) - 1] = '\r';
  if (bash_spawn (s, o, setup_fd, err) < 0)
    {
      bash_session_free (s);
      return ohbox_error_prefix (err, "start bash in `%s`", s->cwd);
    }
  if (pthread_create (&s->reader, NULL, bash_reader_main, s) != 0)
    {
      bash_session_free (s);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "start the terminal reader thread");
    }
  s->reader_started = true;

  /* Install the prompt, then wait for the first prompt block. */
  double deadline = ohbox_monotonic () + STARTUP_TIMEOUT;
  pthread_mutex_lock (&s->lock);
  if (bash_send_keys (s, setup_fd >= 0 ? source_setup_line : line, false, deadline) < 0)
    {
      pthread_mutex_unlock (&s->lock);
      bash_session_free (s);
      return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "type the prompt setup into bash");
    }
  for (;;)
    {
      uint64_t gen = term_generation (s->term);
      cleanup_free char *pane = term_render (s->term, NULL);
      struct ps1_match *m = NULL;
      size_t n = find_ps1 (pane, &m);
      if (n > 0 && ends_with_ps1_end (pane))
        {
          ready_for_next_command (s, pane, &m[n - 1]);
          free (m);
          break;
        }
      free (m);
      if (s->dead || ohbox_monotonic () >= deadline)
        {
          bool dead = s->dead;
          pthread_mutex_unlock (&s->lock);
          bash_session_free (s);
          if (dead)
            return ohbox_error (err, OHBOX_ERR_GENERIC, 0,
                                "bash exited at start: is bash installed in the sandbox image (`%s`)?",
                                o->bash_path ? o->bash_path : "bash");
          return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "bash showed no prompt within %.0f s", STARTUP_TIMEOUT);
        }
      wait_change (s, gen, deadline);
    }
  s->prev_status = ST_NONE;
  pthread_mutex_unlock (&s->lock);
  *out = s;
  return 0;
}

void
bash_session_free (struct bash_session *s)
{
  if (s == NULL)
    return;
  if (s->pid > 0)
    {
      /* The whole session: bash, its jobs and their children. */
      kill (-s->pid, SIGHUP);
      kill (-s->pid, SIGKILL);
      kill (s->pid, SIGKILL);
    }
  if (s->reader_started)
    {
      if (write (s->wake[1], "x", 1) < 0)
        pthread_cancel (s->reader);
      pthread_join (s->reader, NULL);
    }
  if (s->pid > 0)
    waitpid (s->pid, NULL, 0);
  if (s->master >= 0)
    close (s->master);
  if (s->wake[0] >= 0)
    close (s->wake[0]);
  if (s->wake[1] >= 0)
    close (s->wake[1]);
  term_free (s->term);
  free (s->cwd);
  free (s->prev_output);
  pthread_mutex_destroy (&s->lock);
  pthread_cond_destroy (&s->cond);
  free (s);
}

char *
bash_session_cwd (struct bash_session *s)
{
  pthread_mutex_lock (&s->lock);
  char *r = xstrdup (s->cwd);
  pthread_mutex_unlock (&s->lock);
  return r;
}

bool
bash_session_dead (struct bash_session *s)
{
  pthread_mutex_lock (&s->lock);
  bool d = s->dead;
  pthread_mutex_unlock (&s->lock);
  return d;
}

pid_t
bash_session_pid (struct bash_session *s)
{
  return s->pid;
}

/* ---- run -------------------------------------------------------------------- */

static char *
fmt_seconds (double v)
{
  /* NO_CHANGE_TIMEOUT_SECONDS is an int in the Python server. */
  if (v == (double) (long long) v)
    return xasprintf ("%lld", (long long) v);
  return py_float_repr (v);
}

/* An action refused before anything is typed: nothing to retrieve or
 * interact with, or several commands at once. NULL when it may run. */
static json_t *
run_refused (struct bash_session *s, const struct run_request *req, const char *command, struct run_meta *meta)
{
  if (s->prev_status != ST_NO_CHANGE_TIMEOUT && s->prev_status != ST_HARD_TIMEOUT)
    {
      if (*command == '\0')
        return obs_run ("ERROR: No previous running command to retrieve logs from.", "", meta, req->hidden);
      if (req->is_input)
        return obs_run ("ERROR: No previous running command to interact with.", "", meta, req->hidden);
    }
  char **pieces = NULL;
  size_t npieces = split_bash_commands (command, &pieces);
  if (npieces <= 1)
    {
      split_free (pieces);
      return NULL;
    }
  struct ohbox_buf b = { 0 };
  const char *head = "ERROR: Cannot execute multiple commands at once.\nPlease run each command separately OR "
                     "chain them into a single command via && or ;\nProvided commands:";
  ohbox_buf_append (&b, head, strlen (head));
  for (size_t i = 0; i < npieces; i++)
    {
      cleanup_free char *item = xasprintf ("\n(%zu) %s", i + 1, pieces[i]);
      ohbox_buf_append (&b, item, strlen (item));
    }
  split_free (pieces);
  /* A hidden action must get a `run` observation: the client forces
   * extras.hidden onto whatever comes back, which only `run` accepts. */
  json_t *o = req->hidden ? obs_run (b.data, command, meta, true) : obs_error (b.data);
  free (b.data);
  return o;
}

/* A new command while the previous one still runs: not typed. */
static json_t *
run_previous_still_running (struct bash_session *s, const struct run_request *req, const char *command,
                            const char *pane, struct run_meta *meta)
{
  struct ps1_match *m = NULL;
  size_t count = find_ps1 (pane, &m);
  cleanup_free char *raw = combine_outputs (pane, m, count, false);
  free (m);
  meta->suffix = xasprintf ("\n[Your command \"%s\" is NOT executed. The previous command is still running - "
                            "You CANNOT send new commands until the previous command is completed. By setting "
                            "`is_input` to `true`, you can interact with the current process: " TIMEOUT_MESSAGE_TEMPLATE
                            "]",
                            command);
  cleanup_free char *out = command_output (s, command, raw, meta, CONTINUE_PREFIX);
  return obs_run (out, command, meta, req->hidden);
}

/* The prompt came back (the Python server's _handle_completed_command):
 * the output up to the last prompt block M[COUNT - 1], the exit code and
 * working directory from it. */
static json_t *
run_completed (struct bash_session *s, const struct run_request *req, const char *command, const char *pane,
               struct ps1_match *m, size_t count, struct run_meta *meta)
{
  bool special = is_special_key (command);
  meta_from_ps1 (pane, &m[count - 1], meta);
  bool before_last = count == 1;
  if (meta->working_dir && *meta->working_dir && strcmp (meta->working_dir, s->cwd) != 0)
    {
      free (s->cwd);
      s->cwd = xstrdup (meta->working_dir);
    }
  cleanup_free char *raw = combine_outputs (pane, m, count, before_last);
  if (before_last)
    {
      meta->prefix = xasprintf ("[Previous command outputs are truncated. Showing the last %zu lines of the "
                                "output below.]\n",
                                count_lines (raw));
    }
  if (special)
    meta->suffix = xasprintf ("\n[The command completed with exit code %d. CTRL+%c was sent.]", meta->exit_code,
                              toupper ((unsigned char) command[strlen (command) - 1]));
  else
    meta->suffix = xasprintf ("\n[The command completed with exit code %d.]", meta->exit_code);
  cleanup_free char *out = command_output (s, command, raw, meta, "");
  s->prev_status = ST_COMPLETED;
  free (s->prev_output);
  s->prev_output = NULL;
  ready_for_next_command (s, pane, &m[count - 1]);
  return obs_run (out, command, meta, req->hidden);
}

/* No new output for the no-change timeout, or the action's own timeout
 * (STATUS): the output so far; the command goes on running. */
static json_t *
run_timed_out (struct bash_session *s, const struct run_request *req, const char *command, const char *pane,
               struct ps1_match *m, size_t count, enum bash_status status, struct run_meta *meta)
{
  s->prev_status = status;
  cleanup_free char *raw = combine_outputs (pane, m, count, false);
  if (status == ST_NO_CHANGE_TIMEOUT)
    {
      cleanup_free char *secs = fmt_seconds (s->no_change_timeout);
      meta->suffix = xasprintf ("\n[The command has no new output after %s seconds. " TIMEOUT_MESSAGE_TEMPLATE "]",
                                secs);
    }
  else
    meta->suffix = xasprintf ("\n[The command timed out after %s seconds. " TIMEOUT_MESSAGE_TEMPLATE "]",
                              req->timeout_str ? req->timeout_str : "?");
  cleanup_free char *out = command_output (s, command, raw, meta, CONTINUE_PREFIX);
  return obs_run (out, command, meta, req->hidden);
}

/* What the polling of one command keeps from round to round. */
struct run_poll
{
  double start, last_change, throttle_until, t1;
  uint64_t gen;
  char *last_pane;
  const char *sent_pane; /* the pane right after typing (NULL: nothing typed) */
  size_t initial_count, prompts_expected;
  bool waiting_prompts;
};

/* One look at the pane: the observation when the command completed or
 * timed out, else NULL. */
static json_t *
run_poll_once (struct bash_session *s, const struct run_request *req, const char *command, struct run_poll *p,
               struct run_meta *meta)
{
  double t0 = ohbox_monotonic ();
  p->gen = term_generation (s->term);
  cleanup_free char *pane = term_render (s->term, NULL);
  cleanup_free struct ps1_match *m = NULL;
  size_t count = find_ps1 (pane, &m);
  double t1 = p->t1 = ohbox_monotonic ();
  /* A flood of output would make every render rebuild a large pane:
   * render at most once per four render times. Not in a command's first
   * THROTTLE_GRACE: most commands end in it, and the first renders, slow
   * on cold pages, would make their reply wait four times as long for
   * nothing (a flood renders unthrottled for that long only). */
  p->throttle_until = t1 - p->start < THROTTLE_GRACE ? 0 : t1 + 4 * (t1 - t0);
  if (strcmp (pane, p->last_pane) != 0)
    {
      free (p->last_pane);
      p->last_pane = xstrdup (pane);
      p->last_change = t1;
    }
  /* Typed text of several top-level lines (a command and a comment
   * line, text not understood and sent as one command) gets a prompt
   * per line: the reply waits for all of them, as the Python server,
   * polling every 0.5 s, sees them.  Until then, or while bash has not
   * read all the typed text, a prompt does not end the command; if a
   * program swallowed the remaining lines, PROMPT_QUIET without output
   * does. */
  bool prompt = count > p->initial_count
                || (ends_with_ps1_end (pane) && (p->sent_pane == NULL || strcmp (pane, p->sent_pane) != 0));
  size_t prompts_seen = count > p->initial_count ? count - p->initial_count : 1;
  p->waiting_prompts = prompt && prompts_seen < p->prompts_expected;
  if (prompt && (prompts_seen >= p->prompts_expected || t1 - p->last_change >= PROMPT_QUIET)
      && bash_pending_input (s) == 0)
    /* count == 0 cannot happen: the end marker implies a block. */
    return count > 0 ? run_completed (s, req, command, pane, m, count, meta) : NULL;
  if (!req->blocking && t1 - p->last_change >= s->no_change_timeout)
    return run_timed_out (s, req, command, pane, m, count, ST_NO_CHANGE_TIMEOUT, meta);
  if (req->timeout > 0 && t1 - p->start >= req->timeout)
    return run_timed_out (s, req, command, pane, m, count, ST_HARD_TIMEOUT, meta);
  return NULL;
}

/* Until the pane changes or the next deadline (no-change timeout, the
 * action's timeout, the quiet time of a prompt), throttled. */
static void
run_wait_change (struct bash_session *s, const struct run_request *req, const struct run_poll *p)
{
  double deadline = p->t1 + 3600;
  if (!req->blocking)
    deadline = p->last_change + s->no_change_timeout;
  if (req->timeout > 0 && p->start + req->timeout < deadline)
    deadline = p->start + req->timeout;
  if (p->waiting_prompts && p->last_change + PROMPT_QUIET < deadline)
    deadline = p->last_change + PROMPT_QUIET;
  wait_change (s, p->gen, deadline);
  double now = ohbox_monotonic ();
  if (now < p->throttle_until && term_generation (s->term) != p->gen)
    {
      pthread_mutex_unlock (&s->lock);
      struct timespec ts;
      double d = p->throttle_until - now;
      ts.tv_sec = (time_t) d;
      ts.tv_nsec = (long) ((d - (double) ts.tv_sec) * 1e9);
      nanosleep (&ts, NULL);
      pthread_mutex_lock (&s->lock);
    }
}

static json_t *
run_locked (struct bash_session *s, const struct run_request *req, const char *command)
{
  struct run_meta meta;
  run_meta_init (&meta);
  json_t *result = run_refused (s, req, command, &meta);
  if (result)
    return result;

  struct run_poll p = { .start = ohbox_monotonic (), .prompts_expected = 1 };
  p.last_change = p.start;
  p.gen = term_generation (s->term);
  p.last_pane = term_render (s->term, NULL);
  struct ps1_match *m = NULL;
  p.initial_count = find_ps1 (p.last_pane, &m);
  free (m);

  if ((s->prev_status == ST_NO_CHANGE_TIMEOUT || s->prev_status == ST_HARD_TIMEOUT) && !ends_with_ps1_end (p.last_pane)
      && !req->is_input && *command)
    result = run_previous_still_running (s, req, command, p.last_pane, &meta);

  /* The Python server types a new command in its escaped form (see
   * cmdsplit.h), which its tmux turns back into the command for the common
   * case, a trailing "\;".  Here there is no tmux: the command is typed as
   * it is, and from now on `command` is the escaped form, which the Python
   * server reports and strips from the start of the output (when escaping
   * changed it, the echoed command therefore stays in the output there
   * too). */
  cleanup_free char *escaped = NULL;
  if (result == NULL && *command)
    {
      bool special = is_special_key (command);
      if (!req->is_input && !special)
        p.prompts_expected = bash_prompt_count (command);
      double wdeadline = p.start + (req->timeout > 0 ? req->timeout : 30.0);
      if (bash_send_keys (s, command, !special, wdeadline) < 0)
        result = obs_errorf ("Failed to send the command to bash: %s", strerror (errno));
      else if (!req->is_input)
        command = escaped = escape_bash_special_chars (command);
    }

  /* Right after typing, the pane still ends with the old prompt: only a
   * pane that changed since can show completion that way. */
  cleanup_free char *sent_pane = *command ? xstrdup (p.last_pane) : NULL;
  p.sent_pane = sent_pane;
  while (result == NULL)
    {
      result = run_poll_once (s, req, command, &p, &meta);
      if (result == NULL && s->dead)
        {
          s->prev_status = ST_NONE;
          result = obs_error ("The bash session exited (was `exit` run?). A new session is started for the next "
                              "command.");
        }
      if (result == NULL)
        run_wait_change (s, req, &p);
    }
  free (p.last_pane);
  run_meta_release (&meta);
  return result;
}

json_t *
bash_session_run (struct bash_session *s, const struct run_request *req)
{
  cleanup_free char *command = strip_dup (req->command ? req->command : "");
  pthread_mutex_lock (&s->lock);
  json_t *o;
  if (s->dead)
    o = obs_error ("The bash session exited (was `exit` run?). A new session is started for the next command.");
  else
    o = run_locked (s, req, command);
  pthread_mutex_unlock (&s->lock);
  return o;
}
