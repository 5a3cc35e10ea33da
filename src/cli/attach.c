/* attach.c: `ohbox attach`: the terminal of a sandbox started with
 * `ohbox run -d -t` (exec.h). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* man/ohbox-attach.1: the command's status when it exits, 0 when detached,
 * 125 when ohbox failed. */
#define ATTACH_EXIT_RUNTIME 125

static const char attach_help[] = "Usage: ohbox attach [OPTIONS] SANDBOX\n\n"
                                  "Attach to the terminal of SANDBOX's command (a sandbox started with\n"
                                  "`ohbox run -d -t`): its output on stdout, stdin to it, in raw mode, with\n"
                                  "the window size followed. One client at a time.\n\n"
                                  "Options:\n"
                                  "      --detach-keys KEYS       keys that detach, leaving the command running\n"
                                  "                               (default ctrl-p,ctrl-q; \"\" for none)\n"
                                  "  -h, --help                   show this help\n\n"
                                  "Exit status: the command's when it exits while attached; 0 when detached;\n"
                                  "125 when ohbox failed (no terminal, not running, another client attached).\n";

enum
{
  OPT_DETACH_KEYS = 256,
};

int
cli_attach (int argc, char **argv)
{
  static const struct option opts[] = {
    { "detach-keys", required_argument, NULL, OPT_DETACH_KEYS },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *keys = "ctrl-p,ctrl-q";
  cleanup_error ohbox_error_t err = NULL;
  int c;
  while ((c = getopt_long (argc, argv, "h", opts, NULL)) != -1)
    {
      switch (c)
        {
        case OPT_DETACH_KEYS:
          keys = optarg;
          break;
        case 'h':
          fputs (attach_help, stdout);
          return 0;
        default:
          return cli_usage_hint (ATTACH_EXIT_RUNTIME);
        }
    }
  if (argc - optind != 1)
    return cli_usage_error_code (ATTACH_EXIT_RUNTIME, "expected SANDBOX");
  const char *what = argv[optind];
  struct cli_session s;
  int code = -1;
  int r = cli_session_open (&s, &err);
  fflush (stdout);
  if (r == 0)
    r = ohbox_sandbox_attach (s.rt, what, keys, &code, &err);
  cli_session_close (&s);
  if (r < 0)
    return cli_fail_code (&err, ATTACH_EXIT_RUNTIME);
  if (code < 0)
    {
      cli_note ("detached from `%s`; it goes on running", what);
      return 0;
    }
  return code;
}
