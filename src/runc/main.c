/* main.c: ohbox-runc, runc's command line over libohbox (sandbox/bundle.c),
 * for the engines that drive an OCI runtime (podman --runtime, containerd's
 * BinaryName, Docker's runtimes): global options, dispatch, errors. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"
#include "oci/runtime_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *root_dir = "/run/ohbox-runc";
const char *log_path;
bool log_json;
bool rootless;
bool host_root;
bool systemd_cgroup;
static bool log_debug;

static void
report (const char *level, const char *msg)
{
  if (strcmp (level, "debug") != 0)
    fprintf (stderr, "ohbox-runc: %s%s\n", strcmp (level, "error") == 0 ? "" : "warning: ", msg);
  cleanup_file FILE *f = log_path ? fopen (log_path, "ae") : NULL;
  if (f)
    {
      char when[64];
      time_t now = time (NULL);
      strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime (&now));
      if (log_json)
        {
          json_t *j = json_pack ("{s:s, s:s, s:s}", "level", level, "msg", msg, "time", when);
          char *line = j ? json_dumps (j, JSON_COMPACT) : NULL;
          if (line)
            fprintf (f, "%s\n", line);
          free (line);
          json_decref (j);
        }
      else
        {
          json_t *s = json_string (msg);
          char *quoted = s ? json_dumps (s, JSON_ENCODE_ANY) : NULL;
          fprintf (f, "time=\"%s\" level=%s msg=%s\n", when, level, quoted ? quoted : "\"?\"");
          free (quoted);
          json_decref (s);
        }
    }
}

/* Whether --log can be appended to (made if missing); says why not on
 * stderr (and --log is then left alone). */
static bool
log_writable (void)
{
  int fd = open (log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd >= 0)
    {
      close (fd);
      return true;
    }
  fprintf (stderr, "ohbox-runc: --log `%s`: %s (errors are appended there: name a file in a directory you can write)\n",
           log_path, strerror (errno));
  log_path = NULL;
  return false;
}

int
fail (const char *fmt, ...)
{
  char msg[4096];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  report ("error", msg);
  return 1;
}

void
warn (const char *fmt, ...)
{
  char msg[4096];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  report ("warning", msg);
}

void
debug (const char *fmt, ...)
{
  if (!log_debug)
    return;
  char msg[4096];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  report ("debug", msg);
}

int
fail_err (ohbox_error_t *err)
{
  return fail ("%s", (*err)->msg);
}

/* In a user namespace other than the initial one (whose uid_map alone is
 * the identity over all ids, user_namespaces(7)): podman's rootless one,
 * say, where euid 0 has no privilege over the host. */
static bool
in_user_namespace (void)
{
  cleanup_file FILE *f = fopen ("/proc/self/uid_map", "re");
  unsigned long inside, outside, count;
  if (f == NULL || fscanf (f, "%lu %lu %lu", &inside, &outside, &count) != 3)
    return false;
  return !(inside == 0 && outside == 0 && count == 4294967295UL);
}

const char *runc_usage = "";

int
fail_usage (void)
{
  return fail ("usage: %s", runc_usage);
}

int
runc_next_option (int argc, char **argv, const char *shortopts, const struct option *opts, int min, int max, int *idx)
{
  int ch = getopt_long (argc, argv, shortopts, opts, idx);
  int n = argc - optind;
  /* ('?': getopt has said which option it rejected, and why) */
  if (ch == '?' || ch == ':' || (ch == -1 && (n < min || (max >= 0 && n > max))))
    {
      fail_usage ();
      return RUNC_OPT_FAILED;
    }
  return ch;
}

#define USAGE                                                                                                          \
  "usage: ohbox-runc [--root DIR] [--log FILE] [--log-format text|json] [--debug] [--rootless auto|true|false] "       \
  "[--systemd-cgroup] COMMAND ..."

#define CREATE_ARGS                                                                                                    \
  "[--bundle DIR] [--pid-file FILE] [--console-socket PATH] [--preserve-fds N] [--no-pivot] [--no-new-keyring] ID"

/* The commands, in the order --help lists them, with their usage (what a
 * wrong command line reports and COMMAND --help prints). */
static const struct
{
  const char *name;
  int (*fn) (int argc, char **argv);
  const char *usage;
} commands[] = {
  { "create", cmd_create_or_run, "create " CREATE_ARGS },
  { "start", cmd_start, "start ID" },
  { "run", cmd_create_or_run, "run [--detach] " CREATE_ARGS },
  { "state", cmd_state, "state ID" },
  { "kill", cmd_kill, "kill [--all] ID [SIGNAL]" },
  { "delete", cmd_delete, "delete [--force] ID" },
  { "exec", cmd_exec,
    "exec [--process FILE] [-d] [-t] [--console-socket PATH] [--pid-file FILE] [--cwd DIR] [--env K=V]... "
    "[--user UID[:GID]] [--cap CAP]... [--preserve-fds N] [--no-new-privs] ID [COMMAND [ARG...]]" },
  { "list", cmd_list, "list [--format table|json] [--quiet]" },
  { "ps", cmd_ps, "ps [--format table|json] ID [PS-OPTIONS...]" },
  { "spec", cmd_spec, "spec [--bundle DIR] [--rootless]" },
  { "features", cmd_features, "features" },
  { "pause", cmd_freeze, "pause ID" },
  { "resume", cmd_freeze, "resume ID" },
  { "update", cmd_update,
    "update [--resources FILE|-] [--memory N] [--memory-swap N] [--cpu-shares N] [--cpu-quota N] [--cpu-period N] "
    "[--pids-limit N] ID" },
  { "events", cmd_events, "events [--stats] [--interval DURATION] ID" },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* "create, start, ..., events": what --help and a missing command list. */
static char *
command_names (void)
{
  char *all = xstrdup (commands[0].name);
  for (size_t i = 1; i < N_COMMANDS; i++)
    {
      char *more = xasprintf ("%s, %s", all, commands[i].name);
      free (all);
      all = more;
    }
  return all;
}

/* --systemd-cgroup needs sd-bus, systemd as the init (where it runs it
 * has /run/systemd/system: sd_booted) and, as root, the system manager
 * (a rootless user's systemd --user is not supported). */
static int
check_systemd (void)
{
#ifndef HAVE_SYSTEMD
  return fail ("%s", RUNC_NO_SD_BUS);
#endif
  if (access ("/run/systemd/system", F_OK) < 0)
    return fail ("--systemd-cgroup: systemd does not run on this host (no /run/systemd/system): use the cgroupfs "
                 "manager (no --systemd-cgroup)");
  if (rootless)
    return fail ("--systemd-cgroup: rootless containers (a user's systemd --user) are not supported: use the "
                 "cgroupfs manager (no --systemd-cgroup)");
  return 0;
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = { { "root", required_argument, NULL, 'r' },
                                        { "log", required_argument, NULL, 'l' },
                                        { "log-format", required_argument, NULL, 'F' },
                                        { "debug", no_argument, NULL, 'D' },
                                        { "systemd-cgroup", no_argument, NULL, 's' },
                                        { "rootless", required_argument, NULL, 'R' },
                                        { "help", no_argument, NULL, 'h' },
                                        { "version", no_argument, NULL, 'v' },
                                        { NULL, 0, NULL, 0 } };
  int c;
  const char *rootless_opt = "auto";
  bool root_given = false;
  /* Global options stop at the command ("+"): its own options follow it. */
  while ((c = getopt_long (argc, argv, "+hv", opts, NULL)) != -1)
    switch (c)
      {
      case 'r':
        root_dir = optarg;
        root_given = true;
        break;
      case 'l':
        log_path = optarg;
        break;
      case 'F':
        if (strcmp (optarg, "json") != 0 && strcmp (optarg, "text") != 0)
          return fail ("--log-format: `%s`: text or json", optarg);
        log_json = strcmp (optarg, "json") == 0;
        break;
      case 'D':
        log_debug = true;
        break;
      case 's':
        systemd_cgroup = true;
        break;
      case 'R':
        if (strcmp (optarg, "true") != 0 && strcmp (optarg, "false") != 0 && strcmp (optarg, "auto") != 0)
          return fail ("--rootless: `%s`: auto, true or false", optarg);
        rootless_opt = optarg;
        break;
      case 'v':
        printf ("ohbox-runc version %s\nspec: %s\n", PACKAGE_VERSION, OCI_RUNTIME_SPEC_VERSION);
        return 0;
      case 'h':
        {
          cleanup_free char *names = command_names ();
          printf ("%s\ncommands: %s\n(COMMAND --help: its usage; see ohbox-runc(1))\n", USAGE, names);
          return 0;
        }
      default:
        return fail ("%s", USAGE);
      }
  /* An engine reads the runtime's errors from --log (containerd's shim,
   * conmon): one that cannot be written is an error at once, as runc's,
   * not a failure nobody hears of. */
  if (log_path && !log_writable ())
    return 1;
  host_root = geteuid () == 0 && !in_user_namespace ();
  rootless = strcmp (rootless_opt, "auto") == 0 ? !host_root : strcmp (rootless_opt, "true") == 0;
  if (systemd_cgroup && check_systemd () != 0)
    return 1;
  /* Rootless containers: under the user's runtime directory (as runc's
   * $XDG_RUNTIME_DIR/runc), /run being the host root's. */
  cleanup_free char *user_root = NULL;
  if (!root_given && rootless && getenv ("XDG_RUNTIME_DIR") && getenv ("XDG_RUNTIME_DIR")[0] == '/')
    root_dir = user_root = xasprintf ("%s/ohbox-runc", getenv ("XDG_RUNTIME_DIR"));
  if (optind >= argc)
    {
      cleanup_free char *names = command_names ();
      return fail ("no command given (%s)", names);
    }
  const char *cmd = argv[optind];
  argc -= optind;
  argv += optind;
  /* The command's getopt starts at its ARGV[1]: 1, not 0 (which would
   * start getopt anew), so that the order main's "+" chose holds and a
   * command's options end at its first argument, as runc's do. */
  optind = 1;
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp (cmd, commands[i].name) == 0)
      {
        runc_usage = commands[i].usage;
        /* (as an option: `exec ID sh --help` is the process's) */
        if (argc > 1 && (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0))
          {
            printf ("usage: ohbox-runc [GLOBAL OPTIONS] %s\nSee ohbox-runc(1).\n", runc_usage);
            return 0;
          }
        return commands[i].fn (argc, argv);
      }
  if (strcmp (cmd, "checkpoint") == 0 || strcmp (cmd, "restore") == 0)
    return fail ("`%s`: checkpoint and restore are not supported by ohbox-runc", cmd);
  return fail ("`%s`: not supported by ohbox-runc", cmd);
}
