/* store_internal.h: what the store's files (store.c, store_layers.c,
 * store_images.c, store_gc.c) share; not for other modules. */
#ifndef OHBOX_STORE_INTERNAL_H
#define OHBOX_STORE_INTERNAL_H

#include "store.h"

#define STORE_REFS_MAX_SIZE (64 * 1024 * 1024)
#define STORE_RECORD_MAX_SIZE (16 * 1024 * 1024)

struct ohbox_store
{
  char *root;
  int dirfd;
  int lock_fd; /* locks/store: shared while open, exclusive during GC */
  bool privileged;
};

/* refs.json as a JSON object name -> id; read under the refs lock. */
int store_refs_lock (struct ohbox_store *s, bool exclusive, ohbox_error_t *err);
int store_refs_read (struct ohbox_store *s, json_t **out, ohbox_error_t *err);
int store_refs_write (struct ohbox_store *s, json_t *refs, ohbox_error_t *err);

#endif
