/* image.h: images as the store keeps them: building an image record from a
 * verified manifest and config, and loading an image (record, manifest,
 * config) back for inspect, save and the sandbox code. */
#ifndef OHBOX_IMAGE_H
#define OHBOX_IMAGE_H

#include <jansson.h>

#include "common/error.h"
#include "oci/image_spec.h"
#include "store/store.h"

/* The record for image ID (= manifest digest); see store.h for its fields. */
json_t *ohbox_image_record_new (const char *id, const struct oci_manifest *man, const struct oci_image_config *cfg,
                                const char *index_digest);

struct ohbox_image
{
  char *id;
  json_t *record;
  struct oci_manifest *manifest;
  struct oci_image_config *config;
  char *manifest_raw; /* the manifest bytes, as stored */
  size_t manifest_len;
};

/* Loads the image WHAT names (see ohbox_store_resolve) with its manifest and config, verified. */
int ohbox_image_load (struct ohbox_store *s, const char *what, struct ohbox_image **out, ohbox_error_t *err);
/* The same for starting a sandbox: the manifest and config are not hashed
 * again (ohbox_store_read_blob_unverified), only their sizes checked. */
int ohbox_image_load_for_run (struct ohbox_store *s, const char *what, struct ohbox_image **out, ohbox_error_t *err);
/* The same for the image id ID (already resolved: the run plan's). */
int ohbox_image_load_id_for_run (struct ohbox_store *s, const char *id, struct ohbox_image **out, ohbox_error_t *err);
void ohbox_image_free (struct ohbox_image *img);
/* The JSON `ohbox inspect` prints. */
json_t *ohbox_image_inspect_json (struct ohbox_store *s, const struct ohbox_image *img);

/* Stores a verified manifest (+config, whose blobs and layers are present)
 * as an image named NAME: writes the manifest blob, the record, then the name. */
int ohbox_image_commit (struct ohbox_store *s, const char *name, const char *manifest_digest, const char *manifest,
                        size_t manifest_len, const struct oci_manifest *man, const struct oci_image_config *cfg,
                        const char *index_digest, ohbox_error_t *err);

#endif
