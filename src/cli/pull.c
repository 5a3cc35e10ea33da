/* pull.c: `ohbox pull`. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "progress.h"

static const char pull_help[] =
  "Usage: ohbox pull [OPTIONS] IMAGE\n\n"
  "Pull an image from a registry into the store.\n\n"
  "Options:\n"
  "  --platform OS/ARCH[/VARIANT]  platform to pull from an index (default: the host's)\n"
  "  --creds USER:PASS             credentials for the registry\n"
  "  --authfile FILE               auth.json with credentials\n"
  "  --cert-dir DIR                CA certificates (*.crt) and client certificates (*.cert, *.key)\n"
  "  --tls-verify=BOOL             verify TLS and require HTTPS (default true)\n"
  "  --parallel N                  blob downloads at once (default 6)\n"
  "  --max-layer-size BYTES        limit on a layer's uncompressed size (default 64 GiB)\n"
  "  --max-image-size BYTES        limit on the layers' uncompressed size together (default 64 GiB)\n"
  "  --timeout DURATION            give up when the registry part takes longer (default 30m; 0: never)\n"
  "  -q, --quiet                   print only the image id\n"
  "  --format json                 print the result as JSON\n"
  "  -h, --help                    this help\n";

static int pull_image (const char *image, struct ohbox_pull_options *po, enum cli_format format, bool quiet,
                       struct ohbox_pull_result *ret);

int
cli_pull (int argc, char **argv)
{
  enum
  {
    OPT_PLATFORM = 256,
    OPT_PARALLEL,
  };
  static const struct option opts[] = {
    { "platform", required_argument, NULL, OPT_PLATFORM },
    CLI_CREDS_OPTION,
    CLI_REGISTRY_OPTIONS,
    { "parallel", required_argument, NULL, OPT_PARALLEL },
    { "max-layer-size", required_argument, NULL, CLI_OPT_MAX_LAYER },
    { "max-image-size", required_argument, NULL, CLI_OPT_MAX_IMAGE },
    { "timeout", required_argument, NULL, CLI_OPT_TIMEOUT },
    CLI_FORMAT_OPTION,
    CLI_QUIET_OPTION,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct ohbox_pull_options po = { 0 };
  struct cli_registry_args ra = { .ro = &po.registry };
  struct cli_common_args co = { .registry = &ra, .pull = &po };
  int c, rc;
  while ((c = cli_next_option (argc, argv, "qh", opts, pull_help, &co, &rc)) >= 0)
    {
      switch (c)
        {
        case OPT_PLATFORM:
          po.platform = optarg;
          break;
        case OPT_PARALLEL:
          {
            char *end = NULL;
            long n = strtol (optarg, &end, 10);
            if (*end || n < 1 || n > 64)
              return cli_usage_error ("--parallel takes a number from 1 to 64, not `%s`", optarg);
            po.registry.max_parallel = (unsigned) n;
            break;
          }
        }
    }
  if (c == CLI_OPT_RETURN)
    return rc;
  if (optind + 1 != argc)
    return cli_usage_error ("expected exactly one IMAGE");
  const char *image = argv[optind];

  struct ohbox_registries_conf *conf = NULL;
  rc = cli_pull_prepare (&ra, &po, &conf);
  if (rc != 0)
    return rc;
  rc = cli_pull_image (image, &po, co.format, co.quiet, NULL);
  cli_registry_release (&ra, conf);
  return rc;
}

int
cli_pull_image (const char *image, struct ohbox_pull_options *po, enum cli_format format, bool quiet,
                struct ohbox_pull_result *ret)
{
  /* Reported at once and as `ohbox pull`, whichever command pulls. */
  const char *caller = cli_global.command;
  cli_global.command = "pull";
  int rc = pull_image (image, po, format, quiet, ret);
  cli_report_pending ();
  cli_global.command = caller;
  return rc;
}

static int
pull_image (const char *image, struct ohbox_pull_options *po, enum cli_format format, bool quiet,
            struct ohbox_pull_result *ret)
{
  ohbox_error_t err = NULL;
  struct ohbox_store *store = NULL;
  int rc = cli_open_store (&store);
  if (rc != 0)
    return rc;
  struct progress *prog = progress_new (stdout, quiet || format == CLI_FORMAT_JSON);
  po->events = progress_pull_events (prog);
  struct ohbox_pull_result res = { 0 };
  struct ohbox_reference *ref = NULL;
  if (ohbox_reference_parse (image, &ref, &err) == 0)
    {
      cleanup_free char *norm = ohbox_reference_string (ref);
      progress_start (prog, norm);
      ohbox_reference_free (ref);
    }
  ohbox_error_release (&err);
  if (ohbox_pull (store, image, po, &res, &err) < 0)
    rc = cli_fail (&err);
  else
    {
      progress_finish (prog);
      if (format == CLI_FORMAT_JSON)
        {
          json_t *j = json_pack ("{s:s, s:s, s:s, s:s?, s:s, s:I, s:I, s:I, s:I, s:b}", "image", res.name, "id", res.id,
                                 "digest", res.id, "index_digest", res.index_digest, "platform", res.platform, "layers",
                                 (json_int_t) res.layers, "blobs_downloaded", (json_int_t) res.blobs_downloaded,
                                 "blobs_reused", (json_int_t) res.blobs_reused, "bytes_downloaded",
                                 (json_int_t) res.bytes_downloaded, "used_credentials", res.used_credentials);
          cli_print_json (j);
          json_decref (j);
        }
      else if (quiet)
        printf ("%s\n", res.id);
      else
        printf ("pulled %s %s %s\n", res.name, res.id, res.platform);
    }
  po->events = NULL;
  if (ret && rc == 0)
    *ret = res;
  else
    ohbox_pull_result_clear (&res);
  progress_free (prog);
  ohbox_store_close (store);
  return rc;
}
