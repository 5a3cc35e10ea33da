/* store_internal.h: what the store's files (store.c, store_layers.c,
 * store_images.c, store_gc.c) share; not for other modules. */
#ifndef OHBOX_STORE_INTERNAL_H
#define OHBOX_STORE_INTERNAL_H

#include "store/store.h"

/* The names: {"refs": {NAME: IMAGE ID}}, replaced whole at each change. */
#define STORE_REFS_FILE "refs.json"
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

/* What GC keeps and `ohbox check` calls referenced, as sets of digest hex
 * -> true: the blobs and unpacked layers image record REC names, and (for
 * ohbox_snapshot_layers_in_use, DATA a layers set) a sandbox's layer. */
void store_mark_image (json_t *rec, json_t *blobs, json_t *layers);
int store_mark_layer (const char *diff_id, void *layers);
/* flock OP (LOCK_EX for GC and check, LOCK_SH again after) on locks/store. */
int store_lock_op (struct ohbox_store *s, int op, ohbox_error_t *err);

#endif
