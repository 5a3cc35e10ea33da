/* api_internal.h: what api.c and api_exec.c share (not installed). */
#ifndef OHBOX_API_INTERNAL_H
#define OHBOX_API_INTERNAL_H

#include <stdbool.h>

#include "common/error.h"
#include "api/ohbox.h"
#include "registry/registries_conf.h"
#include "sandbox/sandbox.h"
#include "store/store.h"
#include "common/utils.h"

/* Immutable once made (ohbox.h: several threads may share it). */
struct ohbox_ctx
{
  char *store_root;
  char *state_root; /* NULL: the default for the store */
  char *authfile;
  bool tls_insecure;
  struct ohbox_registries_conf *conf;
};

/* Hands E (set) to the caller as *ERR (when ERR is not NULL); returns -1. */
int api_fail (ohbox_err **err, ohbox_error_t *e);
/* Copies the caller's options struct SRC (NULL: zeroes) into DST, honouring
 * its `size` (see ohbox.h). */
int api_copy_opts (void *dst, size_t dst_size, const void *src, const char *what, ohbox_error_t *err);
/* Opens the store and (RT not NULL) the state root for one call. */
int api_open (ohbox_ctx *ctx, struct ohbox_store **store, struct ohbox_runtime **rt, ohbox_error_t *err);
void api_close (struct ohbox_store *store, struct ohbox_runtime *rt);

#endif
