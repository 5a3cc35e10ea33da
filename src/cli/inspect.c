/* inspect.c: `ohbox inspect`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* The sandbox WHAT (name, id or id prefix) as `ps --format json` shows
 * it; -1 when there is none. */
static int
inspect_sandbox (struct ohbox_store *store, const char *what, json_t **ret)
{
  ohbox_error_t err = NULL;
  struct ohbox_runtime *rt = NULL;
  char *id = NULL;
  int r = -1;
  if (ohbox_runtime_open (store, NULL, &rt, &err) == 0 && ohbox_sandbox_resolve (rt, what, &id, &err) == 0
      && ohbox_sandbox_inspect (rt, id, ret, &err) == 0)
    r = 0;
  ohbox_error_release (&err);
  free (id);
  if (rt)
    ohbox_runtime_close (rt);
  return r;
}

int
cli_inspect (int argc, char **argv)
{
  static const struct option opts[] = {
    { "format", required_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  static const char help[] = "Usage: ohbox inspect [--format json] IMAGE|SANDBOX...\n\n"
                             "Print the image's record, manifest and config facts as a JSON array.\n"
                             "IMAGE is a name, an id, or a unique id prefix of at least 4 hex digits.\n"
                             "What names no image may name a sandbox: its state as `ohbox ps --format\n"
                             "json` shows it (with its devices, labels and annotations).\n";
  int c, rc;
  enum cli_format format = CLI_FORMAT_JSON;
  /* (--format is its own: it takes json only) */
  while ((c = cli_next_option (argc, argv, "h", opts, help, NULL, &rc)) >= 0)
    if (c == 'f' && (cli_parse_format (optarg, &format) < 0 || format != CLI_FORMAT_JSON))
      return cli_usage_error ("--format takes json, not `%s`", optarg);
  if (c == CLI_OPT_RETURN)
    return rc;
  if (optind >= argc)
    return cli_usage_error ("expected an IMAGE");
  struct ohbox_store *store = NULL;
  rc = cli_open_store (&store);
  if (rc)
    return rc;
  json_t *out = json_array ();
  for (int i = optind; i < argc && rc == 0; i++)
    {
      ohbox_error_t err = NULL;
      struct ohbox_image *img = NULL;
      json_t *sandbox = NULL;
      if (ohbox_image_load (store, argv[i], &img, &err) == 0)
        {
          json_array_append_new (out, ohbox_image_inspect_json (store, img));
          ohbox_image_free (img);
          continue;
        }
      /* Not an image: a sandbox, as `docker inspect` takes both. */
      if (err->kind == OHBOX_ERR_NOT_FOUND && inspect_sandbox (store, argv[i], &sandbox) == 0)
        {
          ohbox_error_release (&err);
          json_array_append_new (out, sandbox);
          continue;
        }
      rc = cli_fail (&err);
    }
  /* One image: the object itself, as most callers want; several: an array. */
  if (rc == 0)
    cli_print_json (json_array_size (out) == 1 ? json_array_get (out, 0) : out);
  json_decref (out);
  ohbox_store_close (store);
  return rc;
}
