/* images.c: `ohbox images`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char images_help[] = "Usage: ohbox images [OPTIONS]\n\n"
                                  "List the images in the store, one row per name.\n\n"
                                  "Options:\n"
                                  "  --format table|json  output format (default table)\n"
                                  "  -q, --quiet          print only image ids\n"
                                  "  --digests            add a DIGEST column\n"
                                  "  -h, --help           this help\n";

/* "3 days ago" from an RFC 3339 time; "" when unknown. */
static void
format_age (const char *created, char *buf, size_t size)
{
  struct tm tm = { 0 };
  if (created == NULL || strptime (created, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
    {
      snprintf (buf, size, "-");
      return;
    }
  double secs = difftime (time (NULL), timegm (&tm));
  static const struct
  {
    double secs;
    const char *unit;
  } units[] = { { 365 * 86400.0, "year" }, { 30 * 86400.0, "month" }, { 7 * 86400.0, "week" },
                { 86400.0, "day" },        { 3600.0, "hour" },        { 60.0, "minute" } };
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (secs >= units[i].secs)
      {
        long n = (long) (secs / units[i].secs);
        snprintf (buf, size, "%ld %s%s ago", n, units[i].unit, n == 1 ? "" : "s");
        return;
      }
  snprintf (buf, size, "less than a minute ago");
}

static void
print_row (const char *repo, const char *tag, const char *id, const char *digest, const char *created, json_int_t size,
           bool digests)
{
  char age[64], sz[32];
  format_age (created, age, sizeof age);
  if (digests)
    printf ("%-40s %-16s %-71s %-14.12s %-20s %s\n", repo, tag, digest, id + 7, age,
            ohbox_format_size ((uint64_t) size, sz));
  else
    printf ("%-40s %-16s %-14.12s %-20s %s\n", repo, tag, id + 7, age, ohbox_format_size ((uint64_t) size, sz));
}

int
cli_images (int argc, char **argv)
{
  int digests = 0;
  const struct option opts[] = {
    CLI_FORMAT_OPTION,    CLI_QUIET_OPTION, { "digests", no_argument, &digests, 1 }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  struct cli_common_args co = { 0 };
  int rc;
  struct ohbox_store *store = cli_options_open_store (argc, argv, "qh", opts, images_help, &co, &rc);
  if (store == NULL)
    return rc;
  ohbox_error_t err = NULL;
  json_t *list = NULL;
  if (ohbox_store_list_images (store, &list, &err) < 0)
    {
      ohbox_store_close (store);
      return cli_fail (&err);
    }
  size_t i;
  json_t *rec;
  if (co.format == CLI_FORMAT_JSON)
    cli_print_json (list);
  else if (co.quiet)
    json_array_foreach (list, i, rec) printf ("%s\n", json_string_value (json_object_get (rec, "id")));
  else
    {
      if (digests)
        printf ("%-40s %-16s %-71s %-14s %-20s %s\n", "REPOSITORY", "TAG", "DIGEST", "IMAGE ID", "CREATED", "SIZE");
      else
        printf ("%-40s %-16s %-14s %-20s %s\n", "REPOSITORY", "TAG", "IMAGE ID", "CREATED", "SIZE");
      json_array_foreach (list, i, rec)
      {
        const char *id = json_string_value (json_object_get (rec, "id"));
        const char *created = json_string_value (json_object_get (rec, "created"));
        json_int_t size = json_integer_value (json_object_get (rec, "size"));
        /* The digest a registry knows the image by: its index's, if pulled through one. */
        const char *repo_digest = json_string_value (json_object_get (rec, "index_digest"));
        const char *short_digest = repo_digest ? repo_digest : id;
        json_t *names = json_object_get (rec, "names");
        if (json_array_size (names) == 0)
          print_row ("<none>", "<none>", id, short_digest, created, size, digests);
        size_t k;
        json_t *n;
        json_array_foreach (names, k, n)
        {
          ohbox_error_t perr = NULL;
          struct ohbox_reference *ref = NULL;
          if (ohbox_reference_parse (json_string_value (n), &ref, &perr) < 0)
            {
              ohbox_error_release (&perr);
              print_row (json_string_value (n), "<none>", id, short_digest, created, size, digests);
              continue;
            }
          char *name = ohbox_reference_name (ref);
          print_row (name, ref->tag && !ref->digest ? ref->tag : "<none>", id, short_digest, created, size, digests);
          free (name);
          ohbox_reference_free (ref);
        }
      }
    }
  json_decref (list);
  ohbox_store_close (store);
  return 0;
}
