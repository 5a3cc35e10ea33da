/* oci_layout.h: OCI image layouts (image-spec image-layout.md) in and out of
 * the store: `ohbox save IMAGE oci:DIR[:TAG]` and `ohbox load oci:DIR[:TAG]`.
 * Blobs are copied with their digests checked on both sides; a saved layout
 * is read by skopeo and podman (`oci:DIR:TAG`). */
#ifndef OHBOX_OCI_LAYOUT_H
#define OHBOX_OCI_LAYOUT_H

#include "common/error.h"
#include "store/store.h"

/* Splits "oci:DIR[:TAG]" into DIR and TAG (NULL when absent). */
int ohbox_oci_layout_parse_ref (const char *s, char **dir, char **tag, ohbox_error_t *err);

/* Writes image WHAT into layout DIR (created if needed; other images in
 * an existing layout are kept; an entry with the same TAG is replaced). */
int ohbox_oci_layout_save (struct ohbox_store *s, const char *what, const char *dir, const char *tag,
                           ohbox_error_t *err);

/* Imports the image tagged TAG (or the only image) from layout DIR, selecting
 * PLATFORM (NULL: the host's) when the entry is an index, and names it NAME.
 * *ID_OUT receives the image id. */
int ohbox_oci_layout_load (struct ohbox_store *s, const char *dir, const char *tag, const char *name,
                           const char *platform, char **id_out, ohbox_error_t *err);

#endif
