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

/* In a user namespace other than the initial one, whose map is the
 * identity over all ids (user_namespaces(7)): podman's rootless one, say,
 * where euid 0 has no privilege over the host. */
static bool
in_user_namespace (void)
{
  cleanup_file FILE *f = fopen ("/proc/self/uid_map", "re");
  unsigned long inside, outside, count;
  if (f == NULL || fscanf (f, "%lu %lu %lu", &inside, &outside, &count) != 3)
    return false;
  return !(inside == 0 && outside == 0 && count == 4294967295UL);
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
        /* Where systemd is PID 1 it has /run/systemd/system (sd_booted). */
        if (access ("/run/systemd/system", F_OK) < 0)
          return fail ("--systemd-cgroup: systemd does not run on this host (no /run/systemd/system): "
                       "use the cgroupfs manager");
        return fail ("--systemd-cgroup: systemd cgroups are not supported by ohbox-runc yet: use the cgroupfs "
                     "manager");
      case 'R':
        if (strcmp (optarg, "true") != 0 && strcmp (optarg, "false") != 0 && strcmp (optarg, "auto") != 0)
          return fail ("--rootless: `%s`: auto, true or false", optarg);
        rootless_opt = optarg;
        break;
      case 'v':
        printf ("ohbox-runc version %s\nspec: %s\n", PACKAGE_VERSION, OCI_RUNTIME_SPEC_VERSION);
        return 0;
      case 'h':
        printf ("usage: ohbox-runc [--root DIR] [--log FILE] [--log-format text|json] [--debug] "
                "[--rootless auto|true|false] COMMAND ...\n"
                "commands: create, start, run, state, kill, delete, exec, list, ps, spec, features, pause, resume, "
                "update, events\n");
        return 0;
      default:
        return fail ("usage: ohbox-runc [--root DIR] [--log FILE] [--log-format text|json] COMMAND ...");
      }
  rootless = strcmp (rootless_opt, "auto") == 0 ? geteuid () != 0 || in_user_namespace ()
                                                : strcmp (rootless_opt, "true") == 0;
  /* Rootless containers: under the user's runtime directory (as runc's
   * $XDG_RUNTIME_DIR/runc), /run being the host root's. */
  cleanup_free char *user_root = NULL;
  if (!root_given && rootless && getenv ("XDG_RUNTIME_DIR") && getenv ("XDG_RUNTIME_DIR")[0] == '/')
    root_dir = user_root = xasprintf ("%s/ohbox-runc", getenv ("XDG_RUNTIME_DIR"));
  if (optind >= argc)
    return fail ("no command given (create, start, run, state, kill, delete, exec, list, ps, spec, features)");
  const char *cmd = argv[optind];
  argc -= optind;
  argv += optind;
  if (strcmp (cmd, "create") == 0 || strcmp (cmd, "run") == 0)
    return cmd_create_or_run (argc, argv, strcmp (cmd, "run") == 0);
  if (strcmp (cmd, "start") == 0)
    return cmd_start (argc, argv);
  if (strcmp (cmd, "state") == 0)
    return cmd_state (argc, argv);
  if (strcmp (cmd, "kill") == 0)
    return cmd_kill (argc, argv);
  if (strcmp (cmd, "delete") == 0)
    return cmd_delete (argc, argv);
  if (strcmp (cmd, "exec") == 0)
    return cmd_exec (argc, argv);
  if (strcmp (cmd, "list") == 0)
    return cmd_list (argc, argv);
  if (strcmp (cmd, "ps") == 0)
    return cmd_ps (argc, argv);
  if (strcmp (cmd, "spec") == 0)
    return cmd_spec (argc, argv);
  if (strcmp (cmd, "features") == 0)
    return cmd_features (argc, argv);
  if (strcmp (cmd, "checkpoint") == 0 || strcmp (cmd, "restore") == 0)
    return fail ("`%s`: checkpoint and restore are not supported by ohbox-runc", cmd);
  if (strcmp (cmd, "pause") == 0)
    return cmd_pause (argc, argv);
  if (strcmp (cmd, "resume") == 0)
    return cmd_resume (argc, argv);
  if (strcmp (cmd, "update") == 0)
    return cmd_update (argc, argv);
  if (strcmp (cmd, "events") == 0)
    return cmd_events (argc, argv);
  return fail ("`%s`: not supported by ohbox-runc", cmd);
}
