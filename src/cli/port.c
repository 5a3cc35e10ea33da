/* port.c: `ohbox port SANDBOX [CTRPORT[/PROTO]]`: the published ports of a
 * running sandbox, as "80/tcp -> 0.0.0.0:8080" (or only the host side for
 * one container port, as `docker port` prints them). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char port_help[] = "Usage: ohbox port [OPTIONS] SANDBOX [CTRPORT[/tcp|/udp]]\n\n"
                                "List the published ports of a sandbox (while it runs).\n\n"
                                "      --format table|json   output format (default: table)\n"
                                "  -h, --help                this help\n";

int
cli_port (int argc, char **argv)
{
  static const struct option opts[] = {
    CLI_FORMAT_OPTION,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct cli_common_args co = { 0 };
  int c, rc;
  /* (no options of its own: every one is a common one) */
  while ((c = cli_next_option (argc, argv, "h", opts, port_help, &co, &rc)) >= 0)
    ;
  if (c == CLI_OPT_RETURN)
    return rc;
  if (argc - optind < 1 || argc - optind > 2)
    return cli_usage_error ("give a sandbox (and optionally a container port)");
  const char *filter = argc - optind == 2 ? argv[optind + 1] : NULL;
  long want_port = 0;
  const char *want_proto = NULL;
  if (filter)
    {
      char *end;
      want_port = strtol (filter, &end, 10);
      if (*end == '/')
        want_proto = end + 1;
      if (want_port < 1 || want_port > 65535 || (*end && *end != '/')
          || (want_proto && strcmp (want_proto, "tcp") && strcmp (want_proto, "udp")))
        return cli_usage_error ("invalid port `%s`: use PORT[/tcp|/udp]", filter);
    }
  cleanup_error ohbox_error_t err = NULL;
  struct cli_session s;
  cleanup_free char *id = NULL;
  json_t *net = NULL;
  if (cli_session_open (&s, &err) < 0)
    return cli_fail (&err);
  if (ohbox_sandbox_resolve (s.rt, argv[optind], &id, &err) < 0 || ohbox_sandbox_network (s.rt, id, &net, &err) < 0)
    {
      rc = cli_fail (&err);
      goto out;
    }
  bool active = json_is_true (json_object_get (net, "active"));
  json_t *ports = active ? json_object_get (net, "ports") : NULL;
  json_t *shown = json_array ();
  size_t i;
  json_t *p;
  json_array_foreach (ports, i, p)
  {
    const char *proto = json_string_value (json_object_get (p, "protocol"));
    long cport = (long) json_integer_value (json_object_get (p, "container_port"));
    if (filter && (cport != want_port || strcmp (proto, want_proto ? want_proto : "tcp") != 0))
      continue;
    json_array_append (shown, p);
  }
  if (co.format == CLI_FORMAT_JSON)
    cli_print_json (shown);
  else
    json_array_foreach (shown, i, p)
    {
      const char *hip = json_string_value (json_object_get (p, "host_ip"));
      long hport = (long) json_integer_value (json_object_get (p, "host_port"));
      if (filter)
        printf ("%s:%ld\n", hip, hport);
      else
        printf ("%ld/%s -> %s:%ld\n", (long) json_integer_value (json_object_get (p, "container_port")),
                json_string_value (json_object_get (p, "protocol")), hip, hport);
    }
  if (filter && json_array_size (shown) == 0)
    {
      rc = cli_error (OHBOX_ERR_NOT_FOUND, "no public port `%s` published for `%s`", filter, argv[optind]);
    }
  json_decref (shown);
out:
  json_decref (net);
  cli_session_close (&s);
  return rc;
}
