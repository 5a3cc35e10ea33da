/* registry_push.h: `ohbox push`: an image of the store to a registry, with
 * the registry client's authentication (tokens asked with the push scope),
 * TLS settings and retries (registry.h).
 *
 * Blobs the registry has (HEAD) are not sent; the others are uploaded
 * monolithically (POST an upload session, PUT its Location with ?digest=
 * and the whole blob from the store file), the config then each layer;
 * the manifest last, with the stored bytes, so its digest is the image id
 * on both sides. */
#ifndef OHBOX_REGISTRY_PUSH_H
#define OHBOX_REGISTRY_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "registry/registry.h"
#include "store/store.h"

/* HEAD /v2/REPO/blobs/DIGEST: *EXISTS. */
int ohbox_registry_blob_exists (struct ohbox_registry *r, const char *repository, const char *digest, bool *exists,
                                ohbox_error_t *err);
/* Uploads the store's blob DIGEST (SIZE bytes) to REPOSITORY. */
int ohbox_registry_push_blob (struct ohbox_registry *r, struct ohbox_store *s, const char *repository,
                              const char *digest, uint64_t size, ohbox_error_t *err);
/* PUT /v2/REPO/manifests/REF with BODY typed MEDIA_TYPE. */
int ohbox_registry_put_manifest (struct ohbox_registry *r, const char *repository, const char *ref,
                                 const char *media_type, const char *body, size_t len, ohbox_error_t *err);

struct ohbox_push_options
{
  struct ohbox_registry_options registry;
  /* Called before each blob (may be NULL): its digest, size and whether it is sent. */
  void (*blob) (void *ud, const char *digest, uint64_t size, bool sent);
  void *userdata;
};

struct ohbox_push_result
{
  char *dest;   /* normalised reference pushed to */
  char *digest; /* manifest digest */
  size_t blobs_sent;
  size_t blobs_skipped;
  uint64_t bytes_sent;
};
void ohbox_push_result_clear (struct ohbox_push_result *r);

/* Pushes the image WHAT names (store.h ohbox_store_resolve) to DEST (a
 * reference with a tag; NULL: WHAT itself, which must then be a name). */
int ohbox_push (struct ohbox_store *s, const char *what, const char *dest, const struct ohbox_push_options *opts,
                struct ohbox_push_result *result, ohbox_error_t *err);

#endif
