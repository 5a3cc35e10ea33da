/* prune.c: `ohbox prune`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int
cli_prune (int argc, char **argv)
{
  static const struct option opts[] = {
    CLI_FORMAT_OPTION,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  static const char help[] = "Usage: ohbox prune [--format json]\n\n"
                             "Remove images no name references, blobs and layers no image uses, partial\n"
                             "downloads, half-unpacked layers and what an interrupted build left. Waits for\n"
                             "other ohbox processes using the store.\n";
  struct cli_common_args co = { 0 };
  int rc;
  /* (no options of its own: every one is a common one) */
  struct ohbox_store *store = cli_options_open_store (argc, argv, "h", opts, help, &co, &rc);
  if (store == NULL)
    return rc;
  ohbox_error_t err = NULL;
  struct ohbox_gc_stats st;
  if (ohbox_store_gc (store, true, &st, &err) < 0)
    rc = cli_fail (&err);
  else if (co.format == CLI_FORMAT_JSON)
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
