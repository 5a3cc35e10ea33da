/* load_save.c: `ohbox load` and `ohbox save` (OCI image layouts). */
#include "config.h"

#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The options of load (PLATFORM set) and save: the exit code to return now
 * (after --help, or a usage error), else -1. */
static int
simple_options (int argc, char **argv, const char *help, const char **platform)
{
  static const struct option opts[] = {
    { "platform", required_argument, NULL, 'p' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c, rc;
  while ((c = cli_next_option (argc, argv, "h", opts, help, NULL, &rc)) >= 0)
    {
      if (platform == NULL) /* (c is 'p') */
        return cli_usage_error ("invalid option --platform");
      *platform = optarg;
    }
  return c == CLI_OPT_RETURN ? rc : -1;
}

int
cli_load (int argc, char **argv)
{
  const char *platform = NULL;
  int r = simple_options (argc, argv,
                          "Usage: ohbox load [--platform OS/ARCH[/VARIANT]] oci:DIR[:TAG] [NAME]\n\n"
                          "Import an image from an OCI image layout, verifying every digest. The image is\n"
                          "named NAME, or localhost/<directory name>:<TAG or latest>.\n\n"
                          "Options:\n"
                          "  --platform OS/ARCH[/VARIANT]  platform to import from an index (default: the host's)\n",
                          &platform);
  if (r >= 0)
    return r;
  if (optind >= argc || argc - optind > 2)
    return cli_usage_error ("expected oci:DIR[:TAG] and an optional NAME");
  ohbox_error_t err = NULL;
  cleanup_free char *dir = NULL;
  cleanup_free char *tag = NULL;
  if (ohbox_oci_layout_parse_ref (argv[optind], &dir, &tag, &err) < 0)
    return cli_fail (&err);
  cleanup_free char *wanted = NULL;
  if (optind + 1 < argc)
    wanted = xstrdup (argv[optind + 1]);
  else
    {
      cleanup_free char *copy = xstrdup (dir);
      wanted = xasprintf ("localhost/%s:%s", basename (copy), tag ? tag : "latest");
    }
  struct ohbox_reference *ref = NULL;
  if (ohbox_reference_parse (wanted, &ref, &err) < 0)
    return cli_fail (&err);
  cleanup_free char *name = ohbox_reference_string (ref);
  ohbox_reference_free (ref);

  struct ohbox_store *store = NULL;
  int rc = cli_open_store (&store);
  if (rc)
    return rc;
  cleanup_free char *id = NULL;
  if (ohbox_oci_layout_load (store, dir, tag, name, platform, &id, &err) < 0)
    rc = cli_fail (&err);
  else
    printf ("loaded %s %s\n", name, id);
  ohbox_store_close (store);
  return rc;
}

/* The tag a saved image gets when the destination names none: the tag the
 * user wrote, else the image's first tag, else "latest". */
static char *
default_tag (struct ohbox_store *store, const char *what, const char *id)
{
  ohbox_error_t err = NULL;
  struct ohbox_reference *ref = NULL;
  char *tag = NULL;
  json_t *names = ohbox_store_names_of (store, id);
  size_t i;
  json_t *n;
  if (strchr (what, ':') && ohbox_reference_parse (what, &ref, &err) == 0 && ref->tag && !ref->digest)
    tag = xstrdup (ref->tag);
  ohbox_reference_free (ref);
  ohbox_error_release (&err);
  json_array_foreach (names, i, n)
  {
    if (tag)
      break;
    ref = NULL;
    if (ohbox_reference_parse (json_string_value (n), &ref, &err) == 0 && ref->tag && !ref->digest)
      tag = xstrdup (ref->tag);
    ohbox_reference_free (ref);
    ohbox_error_release (&err);
  }
  json_decref (names);
  return tag ? tag : xstrdup ("latest");
}

int
cli_save (int argc, char **argv)
{
  int r = simple_options (argc, argv,
                          "Usage: ohbox save IMAGE oci:DIR[:TAG]\n\n"
                          "Export an image as an OCI image layout (read by skopeo and podman as oci:DIR:TAG).\n"
                          "Other images already in DIR are kept; TAG defaults to the image's tag.\n",
                          NULL);
  if (r >= 0)
    return r;
  if (argc - optind != 2)
    return cli_usage_error ("expected IMAGE and oci:DIR[:TAG]");
  ohbox_error_t err = NULL;
  cleanup_free char *dir = NULL;
  cleanup_free char *tag = NULL;
  if (ohbox_oci_layout_parse_ref (argv[optind + 1], &dir, &tag, &err) < 0)
    return cli_fail (&err);
  struct ohbox_store *store = NULL;
  int rc = cli_open_store (&store);
  if (rc)
    return rc;
  cleanup_free char *id = NULL;
  if (ohbox_store_resolve (store, argv[optind], &id, &err) < 0)
    rc = cli_fail (&err);
  else
    {
      if (tag == NULL)
        tag = default_tag (store, argv[optind], id);
      if (ohbox_oci_layout_save (store, id, dir, tag, &err) < 0)
        rc = cli_fail (&err);
      else
        printf ("saved %s %s to oci:%s:%s\n", argv[optind], id, dir, tag);
    }
  ohbox_store_close (store);
  return rc;
}
