/* check.c: `ohbox check`: the consistency check of the store and of the
 * sandboxes' state (libohbox check.h), with --repair. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "cli.h"

/* Findings are left (none repaired, or some could not be): man/ohbox-check.1. */
#define CHECK_EXIT_FINDINGS 6

static void
print_table (json_t *r, bool repair)
{
  size_t i;
  json_t *f;
  json_array_foreach (json_object_get (r, "findings"), i, f)
  {
    const char *state;
    if (json_is_true (json_object_get (f, "repaired")))
      state = "repaired";
    else if (json_object_get (f, "repair_error"))
      state = "repair failed";
    else if (json_is_true (json_object_get (f, "repairable")))
      state = repair ? "not repaired" : "repairable";
    else
      state = "not repairable";
    printf ("%-22s %s\n  %s (%s)\n", json_string_value (json_object_get (f, "kind")),
            json_string_value (json_object_get (f, "where")), json_string_value (json_object_get (f, "what")), state);
    const char *e = json_string_value (json_object_get (f, "repair_error"));
    if (e)
      printf ("  error: %s\n", e);
    const char *hint = json_string_value (json_object_get (f, "hint"));
    if (hint && !json_is_true (json_object_get (f, "repaired")))
      printf ("  hint: %s\n", hint);
  }
  json_t *ck = json_object_get (r, "checked");
  printf ("checked %lld blobs, %lld layers, %lld images, %lld names, %lld sandboxes: ",
          (long long) json_integer_value (json_object_get (ck, "blobs")),
          (long long) json_integer_value (json_object_get (ck, "layers")),
          (long long) json_integer_value (json_object_get (ck, "images")),
          (long long) json_integer_value (json_object_get (ck, "names")),
          (long long) json_integer_value (json_object_get (ck, "sandboxes")));
  long long found = json_integer_value (json_object_get (r, "found"));
  long long left = json_integer_value (json_object_get (r, "remaining"));
  if (found == 0)
    printf ("consistent\n");
  else if (repair)
    printf ("%lld findings, %lld repaired, %lld remaining\n", found, found - left, left);
  else
    printf ("%lld findings (run `ohbox check --repair` to fix the repairable ones)\n", found);
}

int
cli_check (int argc, char **argv)
{
  int repair = 0;
  const struct option opts[] = {
    { "repair", no_argument, &repair, 1 },
    CLI_FORMAT_OPTION,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  static const char help[] = "Usage: ohbox check [--repair] [--format json]\n\n"
                             "Check the store (blobs against their digests, partial downloads, half-unpacked\n"
                             "layers, unreferenced blobs and layers, names and image records, stale locks,\n"
                             "half-made build files) and the sandboxes' state (dead monitors, leftover\n"
                             "cgroups, veths, leases and mounts). --repair fixes what can be fixed.\n"
                             "Waits for other ohbox processes using the store.\n\n"
                             "Exit status: 0 consistent (or everything repaired), 6 findings remain,\n"
                             "other codes as ohbox(1) when the check itself failed.\n";
  struct cli_common_args co = { 0 };
  int rc;
  struct ohbox_store *store = cli_options_open_store (argc, argv, "h", opts, help, &co, &rc);
  if (store == NULL)
    return rc;
  ohbox_error_t err = NULL;
  struct ohbox_runtime *rt = NULL;
  json_t *r = NULL;
  if (ohbox_runtime_open (store, NULL, &rt, &err) < 0 || ohbox_check (store, rt, repair, &r, &err) < 0)
    rc = cli_fail (&err);
  else
    {
      if (co.format == CLI_FORMAT_JSON)
        cli_print_json (r);
      else
        print_table (r, repair);
      rc = json_integer_value (json_object_get (r, "remaining")) > 0 ? CHECK_EXIT_FINDINGS : 0;
    }
  json_decref (r);
  ohbox_runtime_close (rt);
  ohbox_store_close (store);
  return rc;
}
