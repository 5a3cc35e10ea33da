/* fuzz-reference.c: image references (ohbox_reference_parse).
 * Besides "no crash, no leak": a parsed reference prints as a string that
 * parses again to the same string (normalisation is idempotent), and the
 * documented length bound holds. */
#include "config.h"

#include "fuzz.h"
#include "registry/reference.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cleanup_free char *s = fuzz_cstring (data, size);
  cleanup_error ohbox_error_t err = NULL;
  cleanup_reference struct ohbox_reference *r = NULL;

  if (ohbox_reference_parse (s, &r, &err) < 0)
    {
      FUZZ_CHECK (err != NULL && err->msg != NULL, "failure without an error");
      FUZZ_CHECK (err->kind == OHBOX_ERR_USAGE, "kind %d for `%s`", err->kind, s);
      return 0;
    }
  FUZZ_CHECK (r->registry != NULL && r->repository != NULL, "incomplete reference for `%s`", s);
  FUZZ_CHECK (r->tag != NULL || r->digest != NULL, "neither tag nor digest for `%s`", s);

  cleanup_free char *full = ohbox_reference_string (r);
  cleanup_free char *name = ohbox_reference_name (r);
  cleanup_free char *familiar = ohbox_reference_familiar (r);
  FUZZ_CHECK (strncmp (full, name, strlen (name)) == 0, "`%s` does not start with its name `%s`", full, name);
  FUZZ_CHECK (ohbox_registry_endpoint_host (r->registry) != NULL, "no endpoint for `%s`", r->registry);
  cleanup_reference struct ohbox_reference *copy = ohbox_reference_dup (r);
  cleanup_free char *copy_full = ohbox_reference_string (copy);
  FUZZ_CHECK (strcmp (full, copy_full) == 0, "dup differs: `%s` vs `%s`", full, copy_full);

  /* Round trip: the normalised form parses to itself. */
  cleanup_error ohbox_error_t err2 = NULL;
  cleanup_reference struct ohbox_reference *again = NULL;
  FUZZ_CHECK (ohbox_reference_parse (full, &again, &err2) == 0, "`%s` (from `%s`) does not parse: %s", full, s,
              err2 ? err2->msg : "?");
  cleanup_free char *again_full = ohbox_reference_string (again);
  FUZZ_CHECK (strcmp (full, again_full) == 0, "`%s` reparses as `%s`", full, again_full);

  /* The familiar form names the same image, except for Docker Hub names
   * whose first component looks like a host ("docker.io/a.b/c" is shown as
   * "a.b/c", which reads as registry a.b): Docker's FamiliarString has the
   * same ambiguity and ohbox prints what Docker prints. */
  size_t first = strcspn (r->repository, "/");
  if (strcmp (r->registry, "docker.io") == 0 && r->repository[first] == '/'
      && (memchr (r->repository, '.', first) || memchr (r->repository, ':', first)
          || (first == 9 && strncmp (r->repository, "localhost", 9) == 0)))
    return 0;
  cleanup_error ohbox_error_t err3 = NULL;
  cleanup_reference struct ohbox_reference *fam = NULL;
  FUZZ_CHECK (ohbox_reference_parse (familiar, &fam, &err3) == 0, "familiar `%s` (from `%s`) does not parse: %s",
              familiar, s, err3 ? err3->msg : "?");
  cleanup_free char *fam_full = ohbox_reference_string (fam);
  FUZZ_CHECK (strcmp (full, fam_full) == 0, "familiar `%s` reparses as `%s`, not `%s`", familiar, fam_full, full);
  return 0;
}
