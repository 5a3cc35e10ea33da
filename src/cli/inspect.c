/* inspect.c: `ohbox inspect`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int
cli_inspect (int argc, char **argv)
{
  static const struct option opts[] = {
    { "format", required_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  enum cli_format format = CLI_FORMAT_JSON;
  while ((c = getopt_long (argc, argv, "h", opts, NULL)) != -1)
    switch (c)
      {
      case 'f':
        if (cli_parse_format (optarg, &format) < 0 || format != CLI_FORMAT_JSON)
          return cli_usage_error ("--format takes json, not `%s`", optarg);
        break;
      case 'h':
        printf ("Usage: ohbox inspect [--format json] IMAGE...\n\n"
                "Print the image's record, manifest and config facts as a JSON array.\n"
                "IMAGE is a name, an id, or a unique id prefix of at least 4 hex digits.\n");
        return 0;
      default:
        return cli_usage_error ("invalid option");
      }
  if (optind >= argc)
    return cli_usage_error ("expected an IMAGE");
  struct ohbox_store *store = NULL;
  int rc = cli_open_store (&store);
  if (rc)
    return rc;
  json_t *out = json_array ();
  for (int i = optind; i < argc && rc == 0; i++)
    {
      ohbox_error_t err = NULL;
      struct ohbox_image *img = NULL;
      if (ohbox_image_load (store, argv[i], &img, &err) < 0)
        {
          rc = cli_fail (&err);
          break;
        }
      json_array_append_new (out, ohbox_image_inspect_json (store, img));
      ohbox_image_free (img);
    }
  /* One image: the object itself, as most callers want; several: an array. */
  if (rc == 0)
    cli_print_json (json_array_size (out) == 1 ? json_array_get (out, 0) : out);
  json_decref (out);
  ohbox_store_close (store);
  return rc;
}
