/* runtime_image.h: what `ohbox run` does differently for a runtime image
 * (one made by `ohbox build`, see build.h): without a command it starts
 * the executor on a port of the host, with a fresh session API key. */
#ifndef OHBOX_RUNTIME_IMAGE_H
#define OHBOX_RUNTIME_IMAGE_H

#include <stdbool.h>

#include "common/error.h"
#include "store/store.h"

struct ohbox_runtime_exec
{
  int port;
  char *api_key; /* 32 random hex characters */
  /* The command (the image's entrypoint runs it):
   * PORT --working-dir /workspace --username root --user-id 0 */
  char **argv;
  char *env_key; /* "SESSION_API_KEY=..." */
  char *url;     /* "http://127.0.0.1:PORT" */
};

/* Is IMAGE (as `ohbox run` resolves it) a runtime image? 0 with *YES set;
 * -1 only when the image cannot be loaded. */
int ohbox_runtime_image_is (struct ohbox_store *s, const char *image, bool *yes, ohbox_error_t *err);

/* Prepares the executor's command: PORT (0: a free port of 127.0.0.1) and a
 * new session API key (API_KEY non-NULL: that one). */
int ohbox_runtime_exec_prepare (int port, const char *api_key, struct ohbox_runtime_exec *out, ohbox_error_t *err);
void ohbox_runtime_exec_clear (struct ohbox_runtime_exec *x);

/* What `ohbox run IMAGE` does without a command (and without an
 * entrypoint): when IMAGE is a runtime image, sets *YES and prepares its
 * executor into *OUT: PORT (0: a free one), the key of a SESSION_API_KEY=
 * entry of ENV (NULL-terminated or NULL) or a new one. The caller runs
 * OUT->argv, adds OUT->env_key to the environment when ENV had no key, and
 * passes OUT->url and OUT->api_key as the run's executor_url/executor_key.
 * An image that cannot be loaded is not an error here (*YES false): the
 * run reports it. */
int ohbox_runtime_image_prepare_run (struct ohbox_store *s, const char *image, char **env, int port, bool *yes,
                                     struct ohbox_runtime_exec *out, ohbox_error_t *err);

#endif
