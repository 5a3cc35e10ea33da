/* main.c: the ohbox command line: global options, then one subcommand. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct cli_global cli_global;

struct command
{
  const char *name;
  cli_command_fn fn;
  const char *summary;
};

static const struct command commands[] = {
  { "pull", cli_pull, "Pull an image from a registry into the store" },
  { "images", cli_images, "List images in the store" },
  { "inspect", cli_inspect, "Show an image's record, manifest and config as JSON" },
  { "rmi", cli_rmi, "Remove image names, and images no name references" },
  { "prune", cli_prune, "Remove what no name references, and half-written data" },
  { "check", cli_check, "Check the store and the sandboxes' state; --repair fixes them" },
  { "load", cli_load, "Import an OCI image layout (oci:DIR[:TAG])" },
  { "save", cli_save, "Export an image as an OCI image layout (oci:DIR[:TAG])" },
  { "login", cli_login, "Store credentials for a registry in auth.json" },
  { "logout", cli_logout, "Remove stored credentials for a registry" },
  { "run", cli_run, "Run a command in a new sandbox from an image" },
  { "exec", cli_exec, "Run a command in a running sandbox" },
  { "action", cli_action, "Send an action to a runtime sandbox's executor" },
  { "ps", cli_ps, "List sandboxes" },
  { "stop", cli_stop, "Stop sandboxes (stop signal, then SIGKILL)" },
  { "kill", cli_kill, "Send a signal to sandboxes" },
  { "rm", cli_rm, "Remove sandboxes" },
  { "pause", cli_pause, "Freeze every process of sandboxes" },
  { "unpause", cli_unpause, "Thaw paused sandboxes" },
  { "wait", cli_wait, "Wait for sandboxes to exit and print their exit codes" },
  { "logs", cli_logs, "Print the output of a detached sandbox" },
  { "port", cli_port, "List the published ports of a sandbox" },
  { "network", cli_network, "Create, list, inspect and remove named networks" },
  { "stats", cli_stats, "Print memory, CPU and process usage of sandboxes" },
  { "build", cli_build, "Build (or reuse) the runtime image for a base image" },
  { "push", cli_push, "Push an image to a registry" },
  { "attach", cli_attach, "Attach to the terminal of a sandbox started with -d -t" },
  { "ci", cli_ci, "Run CI jobs in sandboxes (GitLab Runner custom executor)" },
  { "serve", cli_serve, "Serve OpenHands' remote runtime API (sandboxes on demand)" },
  { NULL, NULL, NULL },
};

static void
usage (FILE *out)
{
  fprintf (out, "Usage: ohbox [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n\n"
                "A daemonless sandbox runtime for AI agents.\n\n"
                "Commands:\n");
  for (const struct command *c = commands; c->name; c++)
    fprintf (out, "  %-10s %s\n", c->name, c->summary);
  fprintf (out, "\nGlobal options:\n"
                "  --root DIR              store directory (default /var/lib/ohbox as root,\n"
                "                          $XDG_DATA_HOME/ohbox otherwise)\n"
                "  --registries-conf FILE  registries.conf to use instead of the default ones\n"
                "  -h, --help              this help\n"
                "  -v, --version           print the version\n\n"
                "Run 'ohbox COMMAND --help' for a command's options; 'man ohbox' for exit codes.\n");
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "root", required_argument, NULL, 'r' },
    { "registries-conf", required_argument, NULL, 'C' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'v' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  /* '+' stops at the first non-option: the subcommand parses the rest. */
  while ((c = getopt_long (argc, argv, "+hv", opts, NULL)) != -1)
    {
      switch (c)
        {
        case 'r':
          cli_global.root = optarg;
          break;
        case 'C':
          cli_global.registries_conf = optarg;
          break;
        case 'h':
          usage (stdout);
          return 0;
        case 'v':
          printf ("ohbox version %s\n", PACKAGE_VERSION);
          return 0;
        default:
          usage (stderr);
          return 2;
        }
    }
  if (optind >= argc)
    {
      usage (stderr);
      return 2;
    }
  const char *name = argv[optind];
  for (const struct command *cmd = commands; cmd->name; cmd++)
    if (strcmp (cmd->name, name) == 0)
      {
        /* Subcommands see argv[0] = their name and parse with getopt from 1;
         * optind = 0 makes getopt reinitialise its state. */
        int sub_argc = argc - optind;
        char **sub_argv = argv + optind;
        optind = 0;
        cli_global.command = cmd->name;
        int rc = cmd->fn (sub_argc, sub_argv);
        cli_report_pending ();
        return rc;
      }
  fprintf (stderr, "ohbox: unknown command `%s`; run 'ohbox --help' for the list\n", name);
  return 2;
}
