/* authfile.h: credentials in the auth.json format shared by podman, skopeo
 * and docker (containers-auth.json(5)):
 *   {"auths": {"HOST[:PORT][/repo]": {"auth": base64("user:pass")}}}
 * Lookup order (first file that has an entry wins):
 *   --authfile FILE (must exist), $REGISTRY_AUTH_FILE,
 *   $XDG_RUNTIME_DIR/containers/auth.json (else /run/containers/UID/auth.json),
 *   $XDG_CONFIG_HOME/containers/auth.json (else ~/.config/containers/auth.json),
 *   $DOCKER_CONFIG/config.json (else ~/.docker/config.json).
 * Missing default files are skipped; malformed ones are errors
 * (OHBOX_ERR_USAGE naming the file and line). Keys may carry a scheme
 * ("https://index.docker.io/v1/" is docker.io, as are index.docker.io and
 * registry-1.docker.io) and a repository path (the most specific match, at a
 * '/' boundary, wins). Credential helpers ("credHelpers", "credsStore") are
 * not run; an entry that only names one is reported as such
 * (OHBOX_ERR_UNSUPPORTED). */
#ifndef OHBOX_AUTHFILE_H
#define OHBOX_AUTHFILE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"

struct ohbox_credentials
{
  char *username;
  char *password;
};

/* Finds credentials for REGISTRY/REPOSITORY. AUTHFILE may be NULL. Sets
 * *out to NULL (and returns 0) when none are configured. */
int ohbox_authfile_lookup (const char *authfile, const char *registry, const char *repository,
                           struct ohbox_credentials **out, ohbox_error_t *err);

/* Where ohbox_authfile_lookup_in looks, in this order. */
struct ohbox_auth_sources
{
  const char *json;      /* an auth.json document in memory (NULL: none) */
  const char *json_name; /* what to call it in messages ("$DOCKER_AUTH_CONFIG") */
  const char *authfile;  /* --authfile (NULL: none) */
  bool no_defaults;      /* skip $REGISTRY_AUTH_FILE and the default files */
};
int ohbox_authfile_lookup_in (const struct ohbox_auth_sources *src, const char *registry, const char *repository,
                              struct ohbox_credentials **out, ohbox_error_t *err);
/* Parses "user:pass" (--creds); the password may contain ':'. */
int ohbox_credentials_parse (const char *s, struct ohbox_credentials **out, ohbox_error_t *err);
void ohbox_credentials_free (struct ohbox_credentials *c);

/* Adds "KEY": {"auth": base64(USERNAME:PASSWORD)} to the "auths" of DOC
 * (an auth.json document; "auths" made when missing) unless an entry for the
 * same registry or repository (in any spelling) is there already: the
 * first source of credentials wins. OHBOX_ERR_USAGE when they are unusable. */
int ohbox_auth_json_add (json_t *doc, const char *key, const char *username, const char *password, ohbox_error_t *err);

/* The file `ohbox login` writes: AUTHFILE, else $REGISTRY_AUTH_FILE, else
 * $XDG_RUNTIME_DIR/containers/auth.json (or /run/containers/<uid>/auth.json). */
char *ohbox_authfile_default_path (const char *authfile);
/* Adds or replaces the entry for REGISTRY (atomically, mode 0600, other
 * entries and keys kept; keys naming the same registry in another spelling
 * are replaced). The directory is created (0700) when missing. A malformed
 * file is an error and is left untouched. */
int ohbox_authfile_store (const char *path, const char *registry, const struct ohbox_credentials *c,
                          ohbox_error_t *err);
/* Removes the entry (in any spelling); returns 1 when removed, 0 when there
 * was none (a missing file included). */
int ohbox_authfile_remove (const char *path, const char *registry, ohbox_error_t *err);

#endif
