/* rmi.c: `ohbox rmi`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Removes one name or image; prints what it removed. */
static int
remove_one (struct ohbox_store *store, const char *what, bool force, ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  if (ohbox_store_resolve (store, what, &id, err) < 0)
    return -1;
  /* A name: remove just that name, and the image once nothing names it. */
  struct ohbox_reference *ref = NULL;
  ohbox_error_t perr = NULL;
  int removed = 0;
  if (ohbox_reference_parse (what, &ref, &perr) == 0)
    {
      cleanup_free char *norm = ohbox_reference_string (ref);
      ohbox_reference_free (ref);
      removed = ohbox_store_remove_ref (store, norm, err);
      if (removed < 0)
        return -1;
      if (removed)
        printf ("untagged %s\n", norm);
    }
  ohbox_error_release (&perr);
  json_t *names = ohbox_store_names_of (store, id);
  size_t n_names = json_array_size (names);
  if (!removed && n_names > 1 && !force)
    {
      cleanup_free char *list = json_dumps (names, JSON_COMPACT);
      json_decref (names);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0,
                          "image %s has %zu names %s; remove them by name, or use --force to remove the image", id,
                          n_names, list);
    }
  json_decref (names);
  if (!removed || n_names == 0)
    {
      if (ohbox_store_remove_image (store, id, err) < 0)
        return -1;
      printf ("deleted %s\n", id);
    }
  return 0;
}

int
cli_rmi (int argc, char **argv)
{
  static const struct option opts[] = {
    { "force", no_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  static const char help[] =
    "Usage: ohbox rmi [-f|--force] IMAGE...\n\n"
    "Remove image names; an image is removed with its last name, or when given by id\n"
    "(with --force if it has several names). Blobs and layers no image uses are then removed.\n";
  bool force = false;
  int c, rc;
  while ((c = cli_next_option (argc, argv, "fh", opts, help, NULL, &rc)) >= 0)
    if (c == 'f')
      force = true;
  if (c == CLI_OPT_RETURN)
    return rc;
  if (optind >= argc)
    return cli_usage_error ("expected at least one IMAGE");
  struct ohbox_store *store = NULL;
  rc = cli_open_store (&store);
  if (rc)
    return rc;
  for (int i = optind; i < argc; i++)
    {
      ohbox_error_t err = NULL;
      if (remove_one (store, argv[i], force, &err) < 0 && rc == 0)
        rc = cli_fail (&err);
      ohbox_error_release (&err);
    }
  ohbox_error_t err = NULL;
  struct ohbox_gc_stats stats;
  if (ohbox_store_gc (store, false, &stats, &err) < 0 && rc == 0)
    rc = cli_fail (&err);
  ohbox_store_close (store);
  return rc;
}
