/* registries_conf.h: the subset of containers-registries.conf(5) (v2 TOML
 * format) ohbox honours:
 *   unqualified-search-registries = ["a", "b"]
 *   [[registry]] prefix, location, insecure, blocked, mirror-by-digest-only,
 *   [[registry.mirror]] location, insecure, pull-from-mirror,
 *   [aliases] "short" = "registry/repository".
 * credential-helpers, additional-layer-store-auth-helper and short-name-mode
 * are accepted and ignored. The old v1 format ([registries.search],
 * [registries.insecure], [registries.block], each `registries = [...]`) is
 * read too (not mixed with v2 in one file).
 * Files: /etc/containers/registries.conf, then
 * $XDG_CONFIG_HOME/containers/registries.conf (~/.config/...) which
 * replaces it when present, then the drop-ins *.conf of registries.conf.d/
 * (containers-registries.conf.d(5)): those next to /etc when the user file
 * is absent, then the user's, in name order; or only
 * $CONTAINERS_REGISTRIES_CONF when set.
 * There is no TOML library in Debian for C, so registries_conf.c carries a
 * small parser for the TOML subset these files use (strings, booleans,
 * arrays of strings, tables and arrays of tables, comments); anything else is
 * refused with the file, line and what was not understood. */
#ifndef OHBOX_REGISTRIES_CONF_H
#define OHBOX_REGISTRIES_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

struct ohbox_registry_endpoint
{
  char *location; /* "mirror.example:5000/library" (host[:port][/path]) */
  bool insecure;  /* plain HTTP allowed and TLS not verified */
  /* Mirrors only: pull-from-mirror = "digest-only" / "tag-only". */
  bool digest_only;
  bool tag_only;
};

struct ohbox_registry_entry
{
  char *prefix;   /* matched against "registry/repository" (longest wins) */
  char *location; /* replaces the prefix; defaults to prefix; NULL or "" only
                   * for a "*.example.com" prefix, whose names are kept */
  bool insecure;
  bool blocked;
  bool mirror_by_digest_only; /* mirrors are used only for pulls by digest */
  struct ohbox_registry_endpoint *mirrors;
  size_t n_mirrors;
};

struct ohbox_registry_alias
{
  char *name;  /* "fedora" */
  char *value; /* "registry.fedoraproject.org/fedora" */
};

struct ohbox_registries_conf
{
  char **unqualified_search; /* NULL-terminated, may be empty */
  struct ohbox_registry_entry *entries;
  size_t n_entries;
  struct ohbox_registry_alias *aliases;
  size_t n_aliases;
};

/* Loads from PATH or, when NULL, from the default locations (missing files are
 * fine and give an empty configuration; a PATH or $CONTAINERS_REGISTRIES_CONF
 * that does not exist is an error). Syntax and validation errors are
 * OHBOX_ERR_USAGE and start with "FILE:LINE: ". */
int ohbox_registries_conf_load (const char *path, struct ohbox_registries_conf **out, ohbox_error_t *err);
/* The default-location logic with explicit directories (SYSTEM_DIR is
 * "/etc/containers", USER_DIR "~/.config/containers" or NULL). */
int ohbox_registries_conf_load_dirs (const char *system_dir, const char *user_dir, struct ohbox_registries_conf **out,
                                     ohbox_error_t *err);
/* Parses one file's TEXT; FILENAME is for messages. */
int ohbox_registries_conf_parse (const char *text, const char *filename, struct ohbox_registries_conf **out,
                                 ohbox_error_t *err);
void ohbox_registries_conf_free (struct ohbox_registries_conf *c);

/* The entry whose prefix matches NAME ("registry/repository") best, or NULL.
 * A prefix matches at a component boundary ("a.io/x" matches "a.io/x/y",
 * not "a.io/xy"); "*.example.com" wildcard prefixes match subdomains. */
const struct ohbox_registry_entry *ohbox_registries_conf_find (const struct ohbox_registries_conf *c, const char *name);

/* Where to try to pull NAME ("registry/repository") from, in order: the
 * mirrors of the matching entry, then its location (prefix rewritten).
 * Each result is "host[:port]/repository" with an insecure flag. Fails with
 * OHBOX_ERR_USAGE when the matching entry is blocked. */
int ohbox_registries_conf_pull_sources (const struct ohbox_registries_conf *c, const char *name,
                                        struct ohbox_registry_endpoint **out, size_t *n_out, ohbox_error_t *err);
/* Same, for a pull by digest when BY_DIGEST (mirror-by-digest-only and
 * pull-from-mirror choose the mirrors by it). ohbox_registries_conf_pull_sources
 * is this with BY_DIGEST false. Without a matching entry the one source is
 * NAME itself, secure. */
int ohbox_registries_conf_pull_sources_ex (const struct ohbox_registries_conf *c, const char *name, bool by_digest,
                                           struct ohbox_registry_endpoint **out, size_t *n_out, ohbox_error_t *err);
/* The value of the [aliases] entry for SHORT_NAME ("fedora"), or NULL. */
const char *ohbox_registries_conf_alias (const struct ohbox_registries_conf *c, const char *short_name);
void ohbox_registry_endpoints_free (struct ohbox_registry_endpoint *e, size_t n);

#endif
