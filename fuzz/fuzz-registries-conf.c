/* fuzz-registries-conf.c: registries.conf (ohbox_registries_conf_parse and
 * the TOML subset under it).  A configuration that parses is then queried
 * the way a pull does (find, pull sources by tag and by digest, aliases). */
#include "config.h"

#include "fuzz.h"
#include "registry/registries_conf.h"

static const char *const names[] = {
  "docker.io/library/busybox",
  "quay.io/ns/img",
  "localhost:5000/x",
  "sub.example.com/a/b",
  "registry.example:5000/library/alpine",
};

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cleanup_free char *text = fuzz_cstring (data, size);
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_registries_conf *c = NULL;

  if (ohbox_registries_conf_parse (text, "fuzz.conf", &c, &err) < 0)
    {
      FUZZ_CHECK (err != NULL && err->msg != NULL && c == NULL, "failure without an error");
      FUZZ_CHECK (err->kind == OHBOX_ERR_USAGE, "kind %d: %s", err->kind, err->msg);
      FUZZ_CHECK (strncmp (err->msg, "fuzz.conf:", 10) == 0, "message without the file: %s", err->msg);
      return 0;
    }
  FUZZ_CHECK (c->unqualified_search != NULL, "no search list");
  for (size_t i = 0; i < sizeof (names) / sizeof (names[0]); i++)
    {
      const struct ohbox_registry_entry *e = ohbox_registries_conf_find (c, names[i]);
      FUZZ_CHECK (e == NULL || e->prefix != NULL, "entry without a prefix");
      for (int by_digest = 0; by_digest < 2; by_digest++)
        {
          cleanup_error ohbox_error_t perr = NULL;
          struct ohbox_registry_endpoint *eps = NULL;
          size_t n = 0;
          if (ohbox_registries_conf_pull_sources_ex (c, names[i], by_digest, &eps, &n, &perr) == 0)
            {
              FUZZ_CHECK (n >= 1, "no pull source for %s", names[i]);
              for (size_t j = 0; j < n; j++)
                FUZZ_CHECK (eps[j].location != NULL, "source %zu without a location", j);
              ohbox_registry_endpoints_free (eps, n);
            }
          else
            FUZZ_CHECK (perr != NULL && perr->msg != NULL, "pull sources failed without an error");
        }
    }
  for (size_t i = 0; i < c->n_aliases; i++)
    FUZZ_CHECK (ohbox_registries_conf_alias (c, c->aliases[i].name) != NULL, "alias `%s` not found",
                c->aliases[i].name);
  ohbox_registries_conf_free (c);
  return 0;
}
