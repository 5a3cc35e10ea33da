/* prune.c: `ohbox prune`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int
cli_prune (int argc, char **argv)
{
  static const struct option opts[] = {
    { "format", required_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  enum cli_format format = CLI_FORMAT_TABLE;
  int c;
  while ((c = getopt_long (argc, argv, "h", opts, NULL)) != -1)
    switch (c)
      {
      case 'f':
        if (cli_format_option (optarg, &format) < 0)
          return OHBOX_ERR_USAGE;
        break;
      case 'h':
        printf ("Usage: ohbox prune [--format json]\n\n"
                "Remove images no name references, blobs and layers no image uses, partial\n"
                "downloads, half-unpacked layers and what an interrupted build left. Waits for\n"
                "other ohbox processes using the store.\n");
        return 0;
      default:
        return cli_usage_error ("invalid option");
      }
  if (optind != argc)
    return cli_usage_error ("unexpected argument `%s`", argv[optind]);
  struct ohbox_store *store = NULL;
  int rc = cli_open_store (&store);
  if (rc)
    return rc;
  ohbox_error_t err = NULL;
  struct ohbox_gc_stats st;
  if (ohbox_store_gc (store, true, &st, &err) < 0)
    rc = cli_fail (&err);
  else if (format == CLI_FORMAT_JSON)
    {
      json_t *j = json_pack ("{s:I, s:I, s:I, s:I, s:I}", "images", (json_int_t) st.images_removed, "blobs",
                             (json_int_t) st.blobs_removed, "layers", (json_int_t) st.layers_removed, "partials",
                             (json_int_t) st.partials_removed, "bytes", (json_int_t) st.bytes_freed);
      cli_print_json (j);
      json_decref (j);
    }
  else
    {
      char sz[32];
      printf ("removed %llu images, %llu blobs, %llu layers, %llu partial files; freed %s\n",
              (unsigned long long) st.images_removed, (unsigned long long) st.blobs_removed,
              (unsigned long long) st.layers_removed, (unsigned long long) st.partials_removed,
              ohbox_format_size (st.bytes_freed, sz));
    }
  ohbox_store_close (store);
  return rc;
}
