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

struct session
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
};

static int
session_open (struct session *s)
{
  ohbox_error_t err = NULL;
  memset (s, 0, sizeof *s);
  if (ohbox_store_open (cli_store_root (), &s->store, &err) < 0)
    return cli_fail (&err);
  /* Lifecycle commands never write the store: let GC run meanwhile. */
  ohbox_store_unlock (s->store);
  if (ohbox_runtime_open (s->store, NULL, &s->rt, &err) < 0)
    {
      ohbox_store_close (s->store);
      return cli_fail (&err);
    }
  return 0;
}

static void
session_close (struct session *s)
{
  ohbox_runtime_close (s->rt);
  ohbox_store_close (s->store);
}

/* Parses the options of a command taking SANDBOX... and a help text: the
 * exit code to return now (after --help, or a usage error), else -1. */
static int
simple_opts (int argc, char **argv, const char *help, const char *shortopts, const struct option *longopts,
             int (*on_opt) (int c, const char *arg, void *data), void *data)
{
  int c, rc;
  while ((c = cli_next_option (argc, argv, shortopts, longopts, help, NULL, &rc)) >= 0)
    {
      /* ON_OPT returns -1 for a wrong value, -2 when it reported it itself. */
      int r = on_opt ? on_opt (c, optarg, data) : -1;
      if (r == -1)
        cli_usage_error ("invalid option");
      if (r < 0)
        return OHBOX_ERR_USAGE;
    }
  return c == CLI_OPT_RETURN ? rc : -1;
}

/* Runs FN on every SANDBOX argument; prints what the caller names. */
typedef int (*each_fn) (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err);

static int
for_each_sandbox (int argc, char **argv, each_fn fn, void *data, bool print)
{
  if (optind >= argc)
    return cli_usage_error ("expected at least one SANDBOX");
  struct session s;
  int rc = session_open (&s);
  if (rc)
    return rc;
  for (int i = optind; i < argc; i++)
    {
      ohbox_error_t err = NULL;
      cleanup_free char *id = NULL;
      if (ohbox_sandbox_resolve (s.rt, argv[i], &id, &err) < 0 || fn (s.rt, id, data, &err) < 0)
        {
          /* One report per SANDBOX, as it happens. */
          int r = cli_report_now (&err);
          if (rc == 0)
            rc = r;
          continue;
        }
      if (print)
        printf ("%s\n", argv[i]);
    }
  session_close (&s);
  return rc;
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
  struct session s;
  rc = session_open (&s);
  if (rc)
    return rc;
  ohbox_error_t err = NULL;
  struct ohbox_sandbox_info *list = NULL;
  size_t n = 0;
  if (ohbox_sandbox_list_info (s.rt, all, &list, &n, &err) < 0)
    {
      session_close (&s);
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
  session_close (&s);
  return 0;
}

/* ---- stop, kill ---- */

static int
opt_int (int c, const char *arg, void *data)
{
  (void) c;
  char *end;
  long v = strtol (arg, &end, 10);
  if (*arg == '\0' || *end || v < 0 || v > 86400)
    return -1;
  *(int *) data = (int) v;
  return 0;
}

static int
do_stop (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_stop (rt, id, *(int *) data, err);
}

int
cli_stop (int argc, char **argv)
{
  static const struct option opts[] = {
    { "time", required_argument, NULL, 't' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int timeout = 10;
  int r = simple_opts (argc, argv,
                       "Usage: ohbox stop [-t|--time SECONDS] SANDBOX...\n\n"
                       "Stop sandboxes: the stop signal (run --stop-signal, the image's StopSignal,\n"
                       "else SIGTERM) to the command, SIGKILL to everything left after SECONDS\n"
                       "(default 10).\n",
                       "t:h", opts, opt_int, &timeout);
  if (r >= 0)
    return r;
  return for_each_sandbox (argc, argv, do_stop, &timeout, true);
}

static int
opt_signal (int c, const char *arg, void *data)
{
  (void) c;
  return ohbox_signal_parse (arg, (int *) data);
}

static int
do_kill (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_kill (rt, id, *(int *) data, err);
}

int
cli_kill (int argc, char **argv)
{
  static const struct option opts[] = {
    { "signal", required_argument, NULL, 's' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int sig = SIGKILL;
  int r = simple_opts (argc, argv,
                       "Usage: ohbox kill [-s|--signal SIGNAL] SANDBOX...\n\n"
                       "Send SIGNAL (name or number, default KILL) to the sandbox's command.\n",
                       "s:h", opts, opt_signal, &sig);
  if (r >= 0)
    return r;
  return for_each_sandbox (argc, argv, do_kill, &sig, true);
}

/* ---- rm ---- */

static int
opt_flag (int c, const char *arg, void *data)
{
  (void) c;
  (void) arg;
  *(bool *) data = true;
  return 0;
}

static int
do_rm (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_remove (rt, id, *(bool *) data, err);
}

int
cli_rm (int argc, char **argv)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  bool force = false;
  int r = simple_opts (argc, argv,
                       "Usage: ohbox rm [-f|--force] SANDBOX...\n\n"
                       "Remove exited sandboxes (with -f, kill running ones first).\n",
                       "fh", opts, opt_flag, &force);
  if (r >= 0)
    return r;
  return for_each_sandbox (argc, argv, do_rm, &force, true);
}

/* ---- pause, unpause ---- */

static int
do_pause (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_pause (rt, id, *(bool *) data, err);
}

static int
pause_cmd (int argc, char **argv, bool pause)
{
  static const struct option opts[] = {
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int r = simple_opts (argc, argv,
                       pause ? "Usage: ohbox pause SANDBOX...\n\nFreeze every process of the sandboxes.\n"
                             : "Usage: ohbox unpause SANDBOX...\n\nThaw paused sandboxes.\n",
                       "h", opts, NULL, NULL);
  if (r >= 0)
    return r;
  return for_each_sandbox (argc, argv, do_pause, &pause, true);
}

int
cli_pause (int argc, char **argv)
{
  return pause_cmd (argc, argv, true);
}

int
cli_unpause (int argc, char **argv)
{
  return pause_cmd (argc, argv, false);
}

/* ---- wait ---- */

static int
do_wait (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  int code;
  if (ohbox_sandbox_wait (rt, id, &code, err) < 0)
    return -1;
  printf ("%d\n", code);
  fflush (stdout);
  *(int *) data = code;
  return 0;
}

int
cli_wait (int argc, char **argv)
{
  static const struct option opts[] = {
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int r = simple_opts (argc, argv,
                       "Usage: ohbox wait SANDBOX...\n\n"
                       "Block until the sandboxes exit; print each exit code.\n",
                       "h", opts, NULL, NULL);
  if (r >= 0)
    return r;
  int code = 0;
  return for_each_sandbox (argc, argv, do_wait, &code, false);
}

/* ---- logs ---- */

static int
do_logs (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  fflush (stdout);
  return ohbox_sandbox_logs (rt, id, *(bool *) data, 1, err);
}

int
cli_logs (int argc, char **argv)
{
  static const struct option opts[] = {
    { "follow", no_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  bool follow = false;
  int r = simple_opts (argc, argv,
                       "Usage: ohbox logs [-f|--follow] SANDBOX\n\n"
                       "Print the output of a detached sandbox (stdout and stderr, merged);\n"
                       "with -f, keep printing until it exits.\n",
                       "fh", opts, opt_flag, &follow);
  if (r >= 0)
    return r;
  if (argc - optind != 1)
    return cli_usage_error ("expected one SANDBOX");
  return for_each_sandbox (argc, argv, do_logs, &follow, false);
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
do_stats (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  enum cli_format fmt = *(enum cli_format *) data;
  struct ohbox_cgroup_stats st;
  if (ohbox_sandbox_stats (rt, id, &st, err) < 0)
    return -1;
  if (fmt == CLI_FORMAT_JSON)
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
opt_format (int c, const char *arg, void *data)
{
  if (c == 'n')
    return 0; /* one sample is all ohbox stats prints */
  return cli_format_option (arg, (enum cli_format *) data) < 0 ? -2 : 0;
}

int
cli_stats (int argc, char **argv)
{
  static const struct option opts[] = {
    { "format", required_argument, NULL, 'f' },
    { "no-stream", no_argument, NULL, 'n' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  enum cli_format fmt = CLI_FORMAT_TABLE;
  int r = simple_opts (argc, argv,
                       "Usage: ohbox stats [--format table|json] SANDBOX...\n\n"
                       "Print memory, CPU and process counts of sandboxes, from their cgroups.\n",
                       "h", opts, opt_format, &fmt);
  if (r >= 0)
    return r;
  if (fmt == CLI_FORMAT_TABLE)
    printf ("%-12s  %23s  %13s  %s\n", "SANDBOX ID", "MEMORY / LIMIT", "CPU", "PIDS");
  return for_each_sandbox (argc, argv, do_stats, &fmt, false);
}
