/* network.c: `ohbox network create|ls|rm|inspect`: named networks (a
 * bridge of their own; sandboxes join one with `ohbox run --network NAME`
 * and reach each other inside it; libohbox network.h). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char network_help[] = "Usage: ohbox network COMMAND [OPTIONS]\n\n"
                                   "Named networks: each a bridge of its own, root only. Sandboxes started with\n"
                                   "`ohbox run --network NAME` reach each other inside it (with the same address\n"
                                   "checks as on the default network); nothing outside reaches them but through\n"
                                   "published ports, and they reach no other network's sandboxes.\n\n"
                                   "Commands:\n"
                                   "  create [--subnet A.B.C.D/N] NAME   make a network (default: a free /24 of\n"
                                   "                                     10.214.0.0/16)\n"
                                   "  ls [-q]                            list networks (the default one: bridge)\n"
                                   "  inspect NAME...                    show networks as JSON\n"
                                   "  rm NAME...                         remove networks no sandbox uses\n\n"
                                   "Options:\n"
                                   "      --format table|json   output format of create and ls (default: table)\n"
                                   "  -h, --help                this help\n";

enum
{
  OPT_SUBNET = 1,
  OPT_FORMAT,
};

/* The options of a network command (SUBNET, QUIET: NULL where it has none):
 * the exit code to return now (after --help, or a usage error), else -1. */
static int
parse (int argc, char **argv, const char **subnet, bool *quiet, enum cli_format *fmt)
{
  static const struct option opts[] = {
    { "subnet", required_argument, NULL, OPT_SUBNET },
    { "format", required_argument, NULL, OPT_FORMAT },
    { "quiet", no_argument, NULL, 'q' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c, rc;
  optind = 0; /* (getopt's state from main: reinitialised) */
  while ((c = cli_next_option (argc, argv, "qh", opts, network_help, NULL, &rc)) >= 0)
    switch (c)
      {
      case OPT_SUBNET:
        if (subnet == NULL)
          return cli_usage_error ("--subnet is an option of `create`");
        *subnet = optarg;
        break;
      case OPT_FORMAT:
        if (cli_format_option (optarg, fmt) < 0)
          return OHBOX_ERR_USAGE;
        break;
      case 'q':
        if (quiet == NULL)
          return cli_usage_error ("-q is an option of `ls`");
        *quiet = true;
        break;
      }
  return c == CLI_OPT_RETURN ? rc : -1;
}

static void
print_table (json_t *nets, bool quiet)
{
  size_t i;
  json_t *n;
  if (!quiet)
    printf ("%-24s %-18s %-15s %-16s %s\n", "NAME", "SUBNET", "GATEWAY", "BRIDGE", "SANDBOXES");
  json_array_foreach (nets, i, n)
  {
    const char *name = json_string_value (json_object_get (n, "name"));
    if (quiet)
      {
        printf ("%s\n", name);
        continue;
      }
    const char *bridge = json_string_value (json_object_get (n, "bridge"));
    bool present = json_is_true (json_object_get (n, "bridge_present"));
    cleanup_free char *br = xasprintf ("%s%s", bridge, present ? "" : " (missing)");
    printf ("%-24s %-18s %-15s %-16s %zu\n", name, json_string_value (json_object_get (n, "subnet")),
            json_string_value (json_object_get (n, "gateway")), br, json_array_size (json_object_get (n, "sandboxes")));
  }
}

static int
network_create (int argc, char **argv)
{
  const char *subnet = NULL;
  enum cli_format fmt = CLI_FORMAT_TABLE;
  int r = parse (argc, argv, &subnet, NULL, &fmt);
  if (r >= 0)
    return r;
  if (argc - optind != 1)
    return cli_usage_error ("give one network name");
  cleanup_error ohbox_error_t err = NULL;
  json_t *def = NULL;
  if (ohbox_network_create (argv[optind], subnet, &def, &err) < 0)
    return cli_fail (&err);
  if (fmt == CLI_FORMAT_JSON)
    cli_print_json (def);
  else
    printf ("%s\n", json_string_value (json_object_get (def, "name")));
  json_decref (def);
  return 0;
}

static int
network_ls (int argc, char **argv)
{
  bool quiet = false;
  enum cli_format fmt = CLI_FORMAT_TABLE;
  int r = parse (argc, argv, NULL, &quiet, &fmt);
  if (r >= 0)
    return r;
  if (argc - optind != 0)
    return cli_usage_error ("takes no arguments");
  cleanup_error ohbox_error_t err = NULL;
  json_t *nets = NULL;
  if (ohbox_network_list (&nets, &err) < 0)
    return cli_fail (&err);
  if (fmt == CLI_FORMAT_JSON)
    cli_print_json (nets);
  else
    print_table (nets, quiet);
  json_decref (nets);
  return 0;
}

static int
network_inspect (int argc, char **argv)
{
  enum cli_format fmt = CLI_FORMAT_JSON;
  int r = parse (argc, argv, NULL, NULL, &fmt);
  if (r >= 0)
    return r;
  if (argc - optind < 1)
    return cli_usage_error ("give a network name");
  json_t *all = json_array ();
  int rc = 0;
  for (int i = optind; i < argc; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      json_t *one = NULL;
      if (ohbox_network_inspect (argv[i], &one, &err) < 0)
        rc = cli_fail (&err);
      else
        json_array_append_new (all, one);
    }
  cli_print_json (all);
  json_decref (all);
  return rc;
}

static int
network_rm (int argc, char **argv)
{
  enum cli_format fmt = CLI_FORMAT_TABLE;
  int r = parse (argc, argv, NULL, NULL, &fmt);
  if (r >= 0)
    return r;
  if (argc - optind < 1)
    return cli_usage_error ("give a network name");
  int rc = 0;
  for (int i = optind; i < argc; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      if (ohbox_network_remove (argv[i], &err) < 0)
        rc = cli_fail (&err);
      else
        printf ("%s\n", argv[i]);
    }
  return rc;
}

int
cli_network (int argc, char **argv)
{
  if (argc < 2 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "--help") == 0)
    {
      if (argc < 2)
        return cli_usage_error ("give a command: create, ls, inspect or rm");
      fputs (network_help, stdout);
      return 0;
    }
  static const struct
  {
    const char *name, *alias;
    const char *command; /* what errors are reported as: "ohbox network ls: ..." */
    cli_command_fn fn;
  } subs[] = {
    { "create", NULL, "network create", network_create },
    { "ls", "list", "network ls", network_ls },
    { "inspect", NULL, "network inspect", network_inspect },
    { "rm", "remove", "network rm", network_rm },
  };
  const char *sub = argv[1];
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
    if (strcmp (sub, subs[i].name) == 0 || (subs[i].alias && strcmp (sub, subs[i].alias) == 0))
      {
        cli_global.command = subs[i].command;
        return subs[i].fn (argc - 1, argv + 1);
      }
  return cli_usage_error ("unknown command `%s`: use create, ls, inspect or rm", sub);
}
