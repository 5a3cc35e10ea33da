/* lifecycle.c: `ohbox ps`, `stop`, `kill`, `rm`, `pause`, `unpause`,
 * `wait`, `logs`, `stats`: small commands over existing sandboxes. */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

/* Lifecycle commands never write the store (cli_session_open). */
static int
session_open (struct cli_session *s)
{
  ohbox_error_t err = NULL;
  return cli_session_open (s, &err) < 0 ? cli_fail (&err) : 0;
}

/* What a command over SANDBOX... does to each (VALUE: what its options set). */
typedef int (*each_fn) (struct ohbox_runtime *rt, const char *id, int *value, ohbox_error_t *err);

/* A command over SANDBOX...: its help and options (-h/--help besides),
 * what they set and what it does to each sandbox. */
struct sandbox_command
{
  const char *help;
  const char *shortopts;
  struct option opts[3]; /* at most two, ended by { NULL } */
  /* An option into *VALUE (NULL: none): 0, -1 for a wrong value, -2 when
   * it reported it itself. */
  int (*on_opt) (int c, const char *arg, int *value);
  int initial;                /* VALUE before the options */
  void (*before) (int value); /* (stats: the table's header) */
  each_fn fn;
  bool one;   /* exactly one SANDBOX (logs) */
  bool print; /* prints each SANDBOX done */
};

/* Runs FN on every SANDBOX argument. */
static int
for_each_sandbox (int argc, char **argv, const struct sandbox_command *cmd, int *value)
{
  if (cmd->one && argc - optind != 1)
    return cli_usage_error ("expected one SANDBOX");
  if (cmd->before)
    cmd->before (*value);
  if (optind >= argc)
    return cli_usage_error ("expected at least one SANDBOX");
  struct cli_session s;
  int rc = session_open (&s);
  if (rc)
    return rc;
  for (int i = optind; i < argc; i++)
    {
      ohbox_error_t err = NULL;
      cleanup_free char *id = NULL;
      if (ohbox_sandbox_resolve (s.rt, argv[i], &id, &err) < 0 || cmd->fn (s.rt, id, value, &err) < 0)
        {
          /* One report per SANDBOX, as it happens. */
          int r = cli_report_now (&err);
          if (rc == 0)
            rc = r;
          continue;
        }
      if (cmd->print)
        printf ("%s\n", argv[i]);
    }
  cli_session_close (&s);
  return rc;
}

/* The command CMD: its options, then what it does to each SANDBOX. */
static int
sandbox_command (int argc, char **argv, const struct sandbox_command *cmd)
{
  struct option opts[4] = { { NULL, 0, NULL, 0 } };
  size_t n = 0;
  while (cmd->opts[n].name)
    n++;
  memcpy (opts, cmd->opts, n * sizeof opts[0]);
  opts[n] = (struct option){ "help", no_argument, NULL, 'h' };
  int value = cmd->initial;
  int c, rc;
  while ((c = cli_next_option (argc, argv, cmd->shortopts, opts, cmd->help, NULL, &rc)) >= 0)
    {
      int r = cmd->on_opt ? cmd->on_opt (c, optarg, &value) : -1;
      if (r == -1)
        cli_usage_error ("invalid option");
      if (r < 0)
        return OHBOX_ERR_USAGE;
    }
  if (c == CLI_OPT_RETURN)
    return rc;
  return for_each_sandbox (argc, argv, cmd, &value);
}

/* ---- ps ---- */

/* One line of the ps table. */
static void
print_ps_row (const struct ohbox_sandbox_info *info)
{
  char cmd[25] = "";
  size_t len = 0;
  for (size_t k = 0; info->config.command && info->config.command[k]; k++)
    {
      int n = snprintf (cmd + len, sizeof cmd - len, "%s%s", k ? " " : "", info->config.command[k]);
      if (n < 0 || (size_t) n >= sizeof cmd - len)
        break;
      len += (size_t) n;
    }
  char status[32];
  if (info->status == OHBOX_STATUS_EXITED)
    snprintf (status, sizeof status, "exited (%d)",
              ohbox_sandbox_record_exited (&info->record) ? info->record.exit_code : 0);
  else
    snprintf (status, sizeof status, "%s", ohbox_status_name (info->status));
  printf ("%-12.12s  %-24.24s  %-24s  %-20.20s  %-12s  %s\n", info->id, info->config.image ?: "", cmd,
          info->config.created ?: "", status, info->config.name ?: "");
}

int
cli_ps (int argc, char **argv)
{
  static const struct option opts[] = {
    { "all", no_argument, NULL, 'a' },  CLI_FORMAT_OPTION,    CLI_QUIET_OPTION,
    { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
  };
  static const char help[] = "Usage: ohbox ps [-a|--all] [-q|--quiet] [--format table|json]\n\n"
                             "List running sandboxes (with -a also exited ones).\n";
  struct cli_common_args co = { 0 };
  bool all = false;
  int c, rc;
  while ((c = cli_next_option (argc, argv, "aqh", opts, help, &co, &rc)) >= 0)
    if (c == 'a')
      all = true;
  if (c == CLI_OPT_RETURN)
    return rc;
  struct cli_session s;
  rc = session_open (&s);
  if (rc)
    return rc;
  ohbox_error_t err = NULL;
  struct ohbox_sandbox_info *list = NULL;
  size_t n = 0;
  if (ohbox_sandbox_list_info (s.rt, all, &list, &n, &err) < 0)
    {
      cli_session_close (&s);
      return cli_fail (&err);
    }
  if (co.format == CLI_FORMAT_JSON)
    {
      json_t *arr = json_array ();
      for (size_t i = 0; i < n; i++)
        json_array_append_new (arr, ohbox_sandbox_info_to_json (&list[i]));
      cli_print_json (arr);
      json_decref (arr);
    }
  else if (co.quiet)
    for (size_t i = 0; i < n; i++)
      printf ("%.12s\n", list[i].id);
  else
    {
      printf ("%-12s  %-24s  %-24s  %-20s  %-12s  %s\n", "SANDBOX ID", "IMAGE", "COMMAND", "CREATED", "STATUS", "NAME");
      for (size_t i = 0; i < n; i++)
        print_ps_row (&list[i]);
    }
  ohbox_sandbox_infos_free (list, n);
  cli_session_close (&s);
  return 0;
}

/* ---- stop, kill ---- */

static int
opt_int (int c, const char *arg, int *value)
{
  (void) c;
  char *end;
  long v = strtol (arg, &end, 10);
  if (*arg == '\0' || *end || v < 0 || v > 86400)
    return -1;
  *value = (int) v;
  return 0;
}

static int
do_stop (struct ohbox_runtime *rt, const char *id, int *timeout, ohbox_error_t *err)
{
  return ohbox_sandbox_stop (rt, id, *timeout, err);
}

static const struct sandbox_command stop_command = {
  .help = "Usage: ohbox stop [-t|--time SECONDS] SANDBOX...\n\n"
          "Stop sandboxes: the stop signal (run --stop-signal, the image's StopSignal,\n"
          "else SIGTERM) to the command, SIGKILL to everything left after SECONDS\n"
          "(default 10).\n",
  .shortopts = "t:h",
  .opts = { { "time", required_argument, NULL, 't' } },
  .on_opt = opt_int,
  .initial = 10,
  .fn = do_stop,
  .print = true,
};

int
cli_stop (int argc, char **argv)
{
  return sandbox_command (argc, argv, &stop_command);
}

static int
opt_signal (int c, const char *arg, int *sig)
{
  (void) c;
  return ohbox_signal_parse (arg, sig);
}

static int
do_kill (struct ohbox_runtime *rt, const char *id, int *sig, ohbox_error_t *err)
{
  return ohbox_sandbox_kill (rt, id, *sig, err);
}

static const struct sandbox_command kill_command = {
  .help = "Usage: ohbox kill [-s|--signal SIGNAL] SANDBOX...\n\n"
          "Send SIGNAL (name or number, default KILL) to the sandbox's command.\n",
  .shortopts = "s:h",
  .opts = { { "signal", required_argument, NULL, 's' } },
  .on_opt = opt_signal,
  .initial = SIGKILL,
  .fn = do_kill,
  .print = true,
};

int
cli_kill (int argc, char **argv)
{
  return sandbox_command (argc, argv, &kill_command);
}

/* ---- rm ---- */

static int
opt_flag (int c, const char *arg, int *flag)
{
  (void) c;
  (void) arg;
  *flag = true;
  return 0;
}

static int
do_rm (struct ohbox_runtime *rt, const char *id, int *force, ohbox_error_t *err)
{
  return ohbox_sandbox_remove (rt, id, *force, err);
}

static const struct sandbox_command rm_command = {
  .help = "Usage: ohbox rm [-f|--force] SANDBOX...\n\n"
          "Remove exited sandboxes (with -f, kill running ones first).\n",
  .shortopts = "fh",
  .opts = { { "force", no_argument, NULL, 'f' } },
  .on_opt = opt_flag,
  .fn = do_rm,
  .print = true,
};

int
cli_rm (int argc, char **argv)
{
  return sandbox_command (argc, argv, &rm_command);
}

/* ---- pause, unpause, wait ---- */

static int
do_pause (struct ohbox_runtime *rt, const char *id, int *pause, ohbox_error_t *err)
{
  return ohbox_sandbox_pause (rt, id, *pause, err);
}

static const struct sandbox_command pause_command = {
  .help = "Usage: ohbox pause SANDBOX...\n\nFreeze every process of the sandboxes.\n",
  .shortopts = "h",
  .initial = true,
  .fn = do_pause,
  .print = true,
};

int
cli_pause (int argc, char **argv)
{
  return sandbox_command (argc, argv, &pause_command);
}

static const struct sandbox_command unpause_command = {
  .help = "Usage: ohbox unpause SANDBOX...\n\nThaw paused sandboxes.\n",
  .shortopts = "h",
  .initial = false,
  .fn = do_pause,
  .print = true,
};

int
cli_unpause (int argc, char **argv)
{
  return sandbox_command (argc, argv, &unpause_command);
}

static int
do_wait (struct ohbox_runtime *rt, const char *id, int *code, ohbox_error_t *err)
{
  if (ohbox_sandbox_wait (rt, id, code, err) < 0)
    return -1;
  printf ("%d\n", *code);
  fflush (stdout);
  return 0;
}

static const struct sandbox_command wait_command = {
  .help = "Usage: ohbox wait SANDBOX...\n\n"
          "Block until the sandboxes exit; print each exit code.\n",
  .shortopts = "h",
  .fn = do_wait,
};

int
cli_wait (int argc, char **argv)
{
  return sandbox_command (argc, argv, &wait_command);
}

/* ---- logs ---- */

static int
do_logs (struct ohbox_runtime *rt, const char *id, int *follow, ohbox_error_t *err)
{
  fflush (stdout);
  return ohbox_sandbox_logs (rt, id, *follow, 1, err);
}

static const struct sandbox_command logs_command = {
  .help = "Usage: ohbox logs [-f|--follow] SANDBOX\n\n"
          "Print the output of a detached sandbox (stdout and stderr, merged);\n"
          "with -f, keep printing until it exits.\n",
  .shortopts = "fh",
  .opts = { { "follow", no_argument, NULL, 'f' } },
  .on_opt = opt_flag,
  .fn = do_logs,
  .one = true,
};

int
cli_logs (int argc, char **argv)
{
  return sandbox_command (argc, argv, &logs_command);
}

/* ---- stats ---- */

static void
fmt_bytes (uint64_t v, char *buf)
{
  if (v == UINT64_MAX)
    snprintf (buf, 32, "max");
  else
    ohbox_format_size (v, buf);
}

static int
do_stats (struct ohbox_runtime *rt, const char *id, int *format, ohbox_error_t *err)
{
  struct ohbox_cgroup_stats st;
  if (ohbox_sandbox_stats (rt, id, &st, err) < 0)
    return -1;
  if (*format == CLI_FORMAT_JSON)
    {
      json_t *j = json_pack ("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "id", id, "memory_current",
                             (json_int_t) st.memory_current, "memory_max",
                             (json_int_t) (st.memory_max == UINT64_MAX ? -1 : (json_int_t) st.memory_max), "oom_kills",
                             (json_int_t) st.oom_kills, "cpu_usage_usec", (json_int_t) st.cpu_usage_usec,
                             "pids_current", (json_int_t) st.pids_current, "pids_max",
                             (json_int_t) (st.pids_max == UINT64_MAX ? -1 : (json_int_t) st.pids_max),
                             "cpu_nr_throttled", (json_int_t) st.cpu_nr_throttled);
      cli_print_json (j);
      json_decref (j);
      return 0;
    }
  char mem[32], max[32], pmax[32];
  fmt_bytes (st.memory_current, mem);
  fmt_bytes (st.memory_max, max);
  if (st.pids_max == UINT64_MAX)
    snprintf (pmax, sizeof pmax, "max");
  else
    snprintf (pmax, sizeof pmax, "%llu", (unsigned long long) st.pids_max);
  printf ("%-12.12s  %10s / %-10s  %12.3fs  %6llu / %s\n", id, mem, max, st.cpu_usage_usec / 1e6,
          (unsigned long long) st.pids_current, pmax);
  return 0;
}

static int
opt_format (int c, const char *arg, int *format)
{
  if (c == 'n')
    return 0; /* one sample is all ohbox stats prints */
  enum cli_format f;
  if (cli_format_option (arg, &f) < 0)
    return -2;
  *format = f;
  return 0;
}

static void
stats_header (int format)
{
  if (format == CLI_FORMAT_TABLE)
    printf ("%-12s  %23s  %13s  %s\n", "SANDBOX ID", "MEMORY / LIMIT", "CPU", "PIDS");
}

static const struct sandbox_command stats_command = {
  .help = "Usage: ohbox stats [--format table|json] SANDBOX...\n\n"
          "Print memory, CPU and process counts of sandboxes, from their cgroups.\n",
  .shortopts = "h",
  .opts = { { "format", required_argument, NULL, 'f' }, { "no-stream", no_argument, NULL, 'n' } },
  .on_opt = opt_format,
  .initial = CLI_FORMAT_TABLE,
  .before = stats_header,
  .fn = do_stats,
};

int
cli_stats (int argc, char **argv)
{
  return sandbox_command (argc, argv, &stats_command);
}
