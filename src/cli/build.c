/* build.c: `ohbox build`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char build_help[] =
  "Usage: ohbox build [OPTIONS] BASE-IMAGE\n\n"
  "Build (or reuse) the runtime image for BASE-IMAGE: the base plus the executor with its\n"
  "libraries (and a static bash when the base has none), tagged in the runtime repository\n"
  "with the versioned, lock and source tags. Prints the path taken: reuse, from-lock,\n"
  "from-versioned or from-scratch.\n\n"
  "Options:\n"
  "  --runtime-repo REPO      repository of the tags (default " OHBOX_BUILD_DEFAULT_REPO "); with a\n"
  "                           registry host, lock and versioned snapshots are pulled from it\n"
  "  --force-rebuild          build from scratch\n"
  "  --no-pull                never contact a registry\n"
  "  --executor FILE          the ohbox-executor binary (default: installed, or $OHBOX_EXECUTOR)\n"
  "  --executor-src DIR       the executor source tree (default: installed, or $OHBOX_EXECUTOR_SRCDIR)\n"
  "  --bash FILE              static bash layered into bases without one (default /bin/bash-static)\n"
  "  --creds USER:PASS        credentials for the registries\n"
  "  --authfile FILE          auth.json with credentials\n"
  "  --cert-dir DIR           CA certificates (*.crt) and client certificates\n"
  "  --tls-verify=BOOL        verify TLS and require HTTPS (default true)\n"
  "  --max-image-size BYTES   limit on a pulled image's layers, uncompressed (default 64 GiB)\n"
  "  --pull-timeout DURATION  give up a pull whose registry part takes longer (default 30m; 0: never)\n"
  "  -q, --quiet              print only the image name\n"
  "  --format json            print the result as JSON\n"
  "  -h, --help               this help\n";

static void
print_notice (void *ud, const char *msg)
{
  (void) ud;
  cli_note ("%s", msg);
}

int
cli_build (int argc, char **argv)
{
  enum
  {
    OPT_REPO = 256,
    OPT_FORCE,
    OPT_NO_PULL,
    OPT_EXECUTOR,
    OPT_EXECUTOR_SRC,
    OPT_BASH,
  };
  static const struct option opts[] = {
    { "runtime-repo", required_argument, NULL, OPT_REPO },
    { "force-rebuild", no_argument, NULL, OPT_FORCE },
    { "no-pull", no_argument, NULL, OPT_NO_PULL },
    { "executor", required_argument, NULL, OPT_EXECUTOR },
    { "executor-src", required_argument, NULL, OPT_EXECUTOR_SRC },
    { "bash", required_argument, NULL, OPT_BASH },
    { "max-image-size", required_argument, NULL, CLI_OPT_MAX_IMAGE },
    { "pull-timeout", required_argument, NULL, CLI_OPT_PULL_TIMEOUT },
    CLI_CREDS_OPTION,
    CLI_REGISTRY_OPTIONS,
    CLI_FORMAT_OPTION,
    CLI_QUIET_OPTION,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct ohbox_build_options bo = { 0 };
  struct ohbox_pull_options po = { 0 };
  struct cli_registry_args ra = { .ro = &po.registry };
  struct cli_common_args co = { .registry = &ra, .pull = &po };
  ohbox_error_t err = NULL;
  int c, rc;
  while ((c = cli_next_option (argc, argv, "qh", opts, build_help, &co, &rc)) >= 0)
    {
      switch (c)
        {
        case OPT_REPO:
          bo.runtime_repo = optarg;
          break;
        case OPT_FORCE:
          bo.force_rebuild = true;
          break;
        case OPT_NO_PULL:
          bo.no_pull = true;
          break;
        case OPT_EXECUTOR:
          bo.executor = optarg;
          break;
        case OPT_EXECUTOR_SRC:
          bo.executor_src = optarg;
          break;
        case OPT_BASH:
          bo.bash = optarg;
          break;
        }
    }
  if (c == CLI_OPT_RETURN)
    return rc;
  if (optind + 1 != argc)
    return cli_usage_error ("expected exactly one BASE-IMAGE");
  const char *base = argv[optind];

  struct ohbox_registries_conf *conf = NULL;
  rc = cli_pull_prepare (&ra, &po, &conf);
  if (rc != 0)
    return rc;
  bo.pull = &po;
  bo.notice = print_notice;

  struct ohbox_store *store = NULL;
  rc = cli_open_store (&store);
  if (rc == 0)
    {
      struct ohbox_build_result res;
      if (ohbox_build (store, base, &bo, &res, &err) < 0)
        rc = cli_fail (&err);
      else if (co.format == CLI_FORMAT_JSON)
        {
          json_t *j = ohbox_build_result_json (&res);
          cli_print_json (j);
          json_decref (j);
        }
      else
        {
          cleanup_free char *shown = NULL;
          cleanup_reference struct ohbox_reference *ref = NULL;
          cleanup_error ohbox_error_t ignored = NULL;
          if (ohbox_reference_parse (res.image, &ref, &ignored) == 0)
            shown = ohbox_reference_familiar (ref);
          if (co.quiet)
            printf ("%s\n", shown ? shown : res.image);
          else
            printf ("%s %s %s (%.3f s)\n", ohbox_build_path_name (res.path), shown ? shown : res.image, res.id,
                    res.seconds);
        }
      ohbox_build_result_clear (&res);
      ohbox_store_close (store);
    }
  cli_registry_release (&ra, conf);
  return rc;
}
