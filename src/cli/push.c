/* push.c: `ohbox push`. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char push_help[] =
  "Usage: ohbox push [OPTIONS] IMAGE [DESTINATION]\n\n"
  "Push an image of the store to a registry (DESTINATION: REGISTRY/REPO:TAG; default: IMAGE's\n"
  "own name). Blobs the registry has are not sent again.\n\n"
  "Options:\n"
  "  --creds USER:PASS   credentials for the registry\n"
  "  --authfile FILE     auth.json with credentials\n"
  "  --cert-dir DIR      CA certificates (*.crt) and client certificates (*.cert, *.key)\n"
  "  --tls-verify=BOOL   verify TLS and require HTTPS (default true)\n"
  "  -q, --quiet         print only the manifest digest\n"
  "  --format json       print the result as JSON\n"
  "  -h, --help          this help\n";

int
cli_push (int argc, char **argv)
{
  static const struct option opts[] = {
    CLI_CREDS_OPTION,     CLI_REGISTRY_OPTIONS, CLI_FORMAT_OPTION, CLI_QUIET_OPTION, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct ohbox_push_options po = { 0 };
  struct cli_registry_args ra = { .ro = &po.registry };
  struct cli_common_args co = { .registry = &ra };
  ohbox_error_t err = NULL;
  int c, rc;
  /* (no options of its own: every one is a common one) */
  while ((c = cli_next_option (argc, argv, "qh", opts, push_help, &co, &rc)) >= 0)
    ;
  if (c == CLI_OPT_RETURN)
    return rc;
  if (optind + 1 != argc && optind + 2 != argc)
    return cli_usage_error ("expected IMAGE [DESTINATION]");
  const char *image = argv[optind];
  const char *dest = optind + 2 == argc ? argv[optind + 1] : NULL;

  rc = cli_registry_prepare (&ra, false, NULL);
  if (rc != 0)
    return rc;
  struct ohbox_store *store = NULL;
  rc = cli_open_store (&store);
  if (rc == 0)
    {
      struct ohbox_push_result res;
      if (ohbox_push (store, image, dest, &po, &res, &err) < 0)
        rc = cli_fail (&err);
      else if (co.format == CLI_FORMAT_JSON)
        {
          json_t *j = json_pack ("{s:s, s:s, s:I, s:I, s:I}", "destination", res.dest, "digest", res.digest,
                                 "blobs_sent", (json_int_t) res.blobs_sent, "blobs_skipped",
                                 (json_int_t) res.blobs_skipped, "bytes_sent", (json_int_t) res.bytes_sent);
          cli_print_json (j);
          json_decref (j);
        }
      else if (co.quiet)
        printf ("%s\n", res.digest);
      else
        printf ("pushed %s %s (%zu blobs sent, %zu already there)\n", res.dest, res.digest, res.blobs_sent,
                res.blobs_skipped);
      ohbox_push_result_clear (&res);
      ohbox_store_close (store);
    }
  cli_registry_release (&ra, NULL);
  return rc;
}
