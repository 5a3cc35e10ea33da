/* exec.c: `ohbox exec`: run a command in a running sandbox (exec.h). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The documented exit codes (man/ohbox-exec.1): the command's status, or
 * 125 when ohbox failed, 126/127 when the command could not be executed. */
#define EXEC_EXIT_RUNTIME 125
#define EXEC_MAX_ENV 4096

static const char exec_help[] =
  "Usage: ohbox exec [OPTIONS] SANDBOX COMMAND [ARG...]\n\n"
  "Run COMMAND in the running SANDBOX (name, id or id prefix): in all of its\n"
  "namespaces and its cgroup, with its capabilities, seccomp profile,\n"
  "no_new_privs, root filesystem and environment.\n\n"
  "Options:\n"
  "  -i, --interactive            keep stdin open for the command\n"
  "  -t, --tty                    allocate a pseudo-terminal\n"
  "  -e, --env KEY=VALUE          set an environment variable (repeatable; KEY alone: from ours)\n"
  "  -w, --workdir DIR            working directory inside the sandbox\n"
  "  -u, --user USER[:GROUP]      user (name or uid) inside the sandbox\n"
  "      --detach-keys KEYS       with -it: keys that detach, leaving the command running\n"
  "                               (default ctrl-p,ctrl-q; \"\" for none)\n"
  "  -h, --help                   show this help\n\n"
  "Exit status: the command's; 125 when ohbox failed (e.g. the sandbox is not\n"
  "running), 126 when the command cannot be executed, 127 when it is not found.\n";

enum
{
  OPT_DETACH_KEYS = 256,
};

static const struct option opts[] = {
  { "interactive", no_argument, NULL, 'i' }, { "tty", no_argument, NULL, 't' },
  { "env", required_argument, NULL, 'e' },   { "workdir", required_argument, NULL, 'w' },
  { "user", required_argument, NULL, 'u' },  { "detach-keys", required_argument, NULL, OPT_DETACH_KEYS },
  { "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
};

static int
exec_fail (ohbox_error_t *err, int code)
{
  return cli_fail_code (err, code);
}

int
cli_exec (int argc, char **argv)
{
  struct ohbox_exec_options o = { .detach_keys = "ctrl-p,ctrl-q" };
  cleanup_error ohbox_error_t err = NULL;
  char **env = NULL;
  size_t n_env = 0;
  int rc = EXEC_EXIT_RUNTIME;
  int c;
  /* '+': options end at SANDBOX; what follows belongs to the command. */
  while ((c = getopt_long (argc, argv, "+ite:w:u:h", opts, NULL)) != -1)
    {
      switch (c)
        {
        case 'i':
          o.interactive = true;
          break;
        case 't':
          o.tty = true;
          break;
        case 'e':
          {
            if (n_env >= EXEC_MAX_ENV)
              {
                cli_error (EXEC_EXIT_RUNTIME, "too many -e options (at most %d)", EXEC_MAX_ENV);
                goto out;
              }
            char *kv = NULL;
            if (strchr (optarg, '=') == NULL)
              {
                const char *v = getenv (optarg);
                if (v == NULL)
                  break; /* as Docker: an unset variable is left out */
                kv = xasprintf ("%s=%s", optarg, v);
              }
            else
              kv = xstrdup (optarg);
            env = xrealloc (env, (n_env + 2) * sizeof (char *));
            env[n_env++] = kv;
            env[n_env] = NULL;
            break;
          }
        case 'w':
          o.workdir = optarg;
          break;
        case 'u':
          o.user = optarg;
          break;
        case OPT_DETACH_KEYS:
          o.detach_keys = optarg;
          break;
        case 'h':
          fputs (exec_help, stdout);
          rc = 0;
          goto out;
        default:
          cli_usage_hint (EXEC_EXIT_RUNTIME);
          goto out;
        }
    }
  if (argc - optind < 2)
    {
      cli_usage_error_code (EXEC_EXIT_RUNTIME, "expected SANDBOX and COMMAND");
      goto out;
    }
  o.argv = argv + optind + 1;
  o.env = env;
  struct cli_session s;
  if (cli_session_open (&s, &err) < 0)
    {
      rc = exec_fail (&err, EXEC_EXIT_RUNTIME);
      goto out;
    }
  int code = EXEC_EXIT_RUNTIME;
  fflush (stdout);
  int r = ohbox_sandbox_exec (s.rt, argv[optind], &o, &code, &err);
  cli_session_close (&s);
  if (r < 0)
    rc = exec_fail (&err, code > 0 ? code : EXEC_EXIT_RUNTIME);
  else if (code < 0)
    {
      cli_note ("detached; the command goes on running in `%s`", argv[optind]);
      rc = 0;
    }
  else
    rc = code;
out:
  for (size_t i = 0; i < n_env; i++)
    free (env[i]);
  free (env);
  return rc;
}
