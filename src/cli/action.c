/* action.c: `ohbox action SANDBOX JSON|run CMD|read PATH|write PATH
 * CONTENT|edit PATH OLD NEW`: the client of the action protocol (action.h),
 * for sandboxes started from a runtime image without a command. */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The documented exit codes (man/ohbox-action.1). */
#define ACTION_EXIT_ERROR_OBS 1 /* the executor answered with an error observation */
#define ACTION_EXIT_TIMEOUT 124 /* a run action's command did not finish in time */
#define ACTION_EXIT_RUNTIME 125 /* ohbox failed: no such sandbox, no executor, HTTP error */

static const char action_help[] =
  "Usage: ohbox action [OPTIONS] SANDBOX JSON\n"
  "       ohbox action [OPTIONS] SANDBOX run COMMAND\n"
  "       ohbox action [OPTIONS] SANDBOX read PATH\n"
  "       ohbox action [OPTIONS] SANDBOX write PATH CONTENT\n"
  "       ohbox action [OPTIONS] SANDBOX edit PATH OLD NEW\n\n"
  "Send an action to the executor of SANDBOX (a runtime image run without a\n"
  "command) with its session API key, and print the observation. JSON is an\n"
  "action object ({\"action\": \"run\", \"args\": {...}}) or \"-\" to read it from stdin.\n\n"
  "Options:\n"
  "      --format table|json      the observation as text (default) or its JSON\n"
  "      --timeout SECONDS        the action's timeout (sets \"timeout\"; run: blocking)\n"
  "      --connect-timeout SECONDS  wait this long for the executor to listen (default 10)\n"
  "  -h, --help                   show this help\n\n"
  "Exit status: for a run action the command's exit code (124 when it did not\n"
  "finish in time); else 0, or 1 for an error observation; 125 when ohbox failed\n"
  "(no such sandbox, not running or paused, no executor, HTTP error).\n";

enum
{
  OPT_FORMAT = 256,
  OPT_TIMEOUT,
  OPT_CONNECT_TIMEOUT,
};

static int
action_fail (ohbox_error_t *err)
{
  return cli_fail_code (err, ACTION_EXIT_RUNTIME);
}

static int
parse_seconds (const char *s, double *out)
{
  char *end = NULL;
  double v = strtod (s, &end);
  if (end == s || *end || !(v > 0 && v <= 86400))
    return -1;
  *out = v;
  return 0;
}

/* The action from the arguments after SANDBOX. */
static int
make_action (int n, char **args, double timeout, json_t **ret, ohbox_error_t *err)
{
  if (n >= 2 || (args[0][0] != '{' && strcmp (args[0], "-") != 0))
    return ohbox_action_shortcut (args[0], args + 1, timeout, ret, err);
  cleanup_free char *text = NULL;
  size_t len;
  if (strcmp (args[0], "-") == 0)
    {
      if (ohbox_read_fd (0, "the action on stdin", OHBOX_ACTION_MAX_REQUEST, &text, &len, err) < 0)
        return -1;
    }
  else
    {
      text = xstrdup (args[0]);
      len = strlen (text);
    }
  json_error_t je;
  json_t *a = json_loadb (text, len, JSON_REJECT_DUPLICATES, &je);
  if (!json_is_object (a))
    {
      json_decref (a);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the action is not a JSON object: %s", je.text);
    }
  if (timeout > 0)
    {
      /* Into the action object, whichever form was given. */
      json_t *inner = json_object_get (a, "action");
      json_object_set_new (json_is_object (inner) ? inner : a, "timeout", json_real (timeout));
    }
  *ret = a;
  return 0;
}

int
cli_action (int argc, char **argv)
{
  static const struct option opts[] = {
    { "format", required_argument, NULL, OPT_FORMAT },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  enum cli_format fmt = CLI_FORMAT_TABLE;
  struct ohbox_action_options ao = { 0 };
  double timeout = 0;
  int c;
  /* '+': a command's own options (run 'ls -la') are not ours. */
  while ((c = getopt_long (argc, argv, "+h", opts, NULL)) != -1)
    switch (c)
      {
      case OPT_FORMAT:
        if (cli_format_option (optarg, &fmt) < 0)
          return ACTION_EXIT_RUNTIME;
        break;
      case OPT_TIMEOUT:
        if (parse_seconds (optarg, &timeout) < 0)
          return cli_usage_error_code (ACTION_EXIT_RUNTIME, "--timeout takes seconds (0 < s <= 86400), not `%s`",
                                       optarg);
        break;
      case OPT_CONNECT_TIMEOUT:
        if (parse_seconds (optarg, &ao.connect_timeout) < 0)
          return cli_usage_error_code (ACTION_EXIT_RUNTIME,
                                       "--connect-timeout takes seconds (0 < s <= 86400), not `%s`", optarg);
        break;
      case 'h':
        fputs (action_help, stdout);
        return 0;
      default:
        return cli_usage_error_code (ACTION_EXIT_RUNTIME, "invalid option");
      }
  if (argc - optind < 2)
    return cli_usage_error_code (ACTION_EXIT_RUNTIME, "expected SANDBOX and an action");
  const char *what = argv[optind];
  cleanup_error ohbox_error_t err = NULL;
  json_t *action = NULL;
  if (make_action (argc - optind - 1, argv + optind + 1, timeout, &action, &err) < 0)
    return action_fail (&err);
  const char *type = json_string_value (json_object_get (action, "action"));
  if (type == NULL)
    type = json_string_value (json_object_get (json_object_get (action, "action"), "action"));
  bool is_run = type && strcmp (type, "run") == 0;

  struct cli_session s;
  struct ohbox_executor_info x = { 0 };
  json_t *obs = NULL;
  int rc = ACTION_EXIT_RUNTIME;
  if (cli_session_open (&s, &err) < 0 || ohbox_sandbox_executor (s.rt, what, &x, &err) < 0)
    goto out_err;
  ao.unix_socket = x.socket;
  if (ohbox_action_execute (x.url, x.api_key, action, &ao, &obs, &err) < 0)
    {
      ohbox_error_prefix (&err, "sandbox `%s`", what);
      goto out_err;
    }
  if (fmt == CLI_FORMAT_JSON)
    cli_print_json (obs);
  else
    {
      cleanup_free char *text = ohbox_observation_text (obs);
      fputs (text, stdout);
    }
  fflush (stdout);
  const char *obs_type = json_string_value (json_object_get (obs, "observation"));
  if (is_run && obs_type && strcmp (obs_type, "run") == 0)
    {
      int code = ohbox_observation_exit_code (obs);
      rc = code < 0 ? ACTION_EXIT_TIMEOUT : code & 0xff;
    }
  else
    rc = obs_type && strcmp (obs_type, "error") == 0 ? ACTION_EXIT_ERROR_OBS : 0;
  goto out;
out_err:
  rc = action_fail (&err);
out:
  json_decref (obs);
  json_decref (action);
  ohbox_executor_info_clear (&x);
  cli_session_close (&s);
  return rc;
}
