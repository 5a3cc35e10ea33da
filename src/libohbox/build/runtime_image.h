/* runtime_image.h: which images are runtime images, and the pieces of a
 * runtime sandbox's executor (its command, session key, port). What a run
 * does with them is decided by the run policy (policy/run_policy.h).
 *
 * A runtime image is an image `ohbox build` committed (or reused) in THIS
 * store: the build writes "runtime_image" into the image's record
 * (STORE/images/<id>.json, store.h). Nothing in the image decides it: the
 * config label org.ohbox.runtime=1 that the build also sets is image
 * content, and anyone who can get an image into the store (a pull, a load)
 * chooses its labels. An image is what it is recorded to be:
 *
 *   - A pulled or loaded image is never a runtime image by itself, label or
 *     not: it runs as an ordinary image (its own entrypoint and command, no
 *     executor started by ohbox, no session key, the default network).
 *   - Path 2 of the build (build.h: a lock snapshot pulled from the runtime
 *     repository's registry) uses the pulled snapshot only as the base of a
 *     new image: its base and dependency layers plus an executor layer this
 *     ohbox makes, and this build's config. That new image is committed and
 *     recorded here; the pulled snapshot under its own name stays ordinary.
 *     So a team can share snapshots through a registry without any pulled
 *     image choosing how a sandbox runs.
 *   - The record is keyed by the manifest digest, which covers the config
 *     and every layer: an image written again under the same id is the same
 *     bytes, so image.c keeps the record's "runtime_image" when a pull or a
 *     load writes the record of exactly the image the build made. Nothing
 *     else can carry it in.
 *   - Why not "whose executor layer is the one this ohbox makes": the
 *     layer's digest says nothing about the config (entrypoint, user, env,
 *     volumes of the image), which is what would run with the key.
 *   - Stores written by an ohbox before this rule have no record: `ohbox
 *     build BASE` again records its image (the reuse path rebuilds an image
 *     it finds unrecorded; same inputs, same digests).
 *
 * The network never follows from the image: a runtime sandbox gets the
 * network any sandbox gets (run_policy.h). */
#ifndef OHBOX_RUNTIME_IMAGE_H
#define OHBOX_RUNTIME_IMAGE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"
#include "store/store.h"

/* Records the image ID (in the store) as made by `ohbox build`. */
int ohbox_runtime_image_mark (struct ohbox_store *s, const char *id, ohbox_error_t *err);
/* Whether the image record RECORD carries the mark. */
bool ohbox_runtime_image_recorded (json_t *record);

/* What the store says about IMAGE (a name, id or id prefix). */
struct ohbox_runtime_image_facts
{
  char *id;      /* the image id IMAGE resolved to */
  bool runtime;  /* recorded by `ohbox build` in this store */
  bool labelled; /* not recorded, but its config carries org.ohbox.runtime=1 (only looked at with CHECK_LABEL) */
};
/* Resolves IMAGE (OHBOX_ERR_NOT_FOUND when the store has none) and reads its
 * record; CHECK_LABEL: for an unrecorded image, reads its config's labels
 * too (to warn that the label is ignored). */
int ohbox_runtime_image_facts (struct ohbox_store *s, const char *image, bool check_label,
                               struct ohbox_runtime_image_facts *ret, ohbox_error_t *err);
void ohbox_runtime_image_facts_clear (struct ohbox_runtime_image_facts *f);

/* A new session API key: 32 random hex characters. */
int ohbox_runtime_session_key (char **ret, ohbox_error_t *err);
/* The executor's command, which the image's entrypoint runs:
 * PORT --listen-address ADDRESS, then ARGS, or when ARGS is NULL
 * --working-dir /workspace --username root --user-id 0 (NULL-terminated,
 * freed with each string). */
char **ohbox_runtime_executor_argv (int port, const char *listen_address, char *const *args);
/* The command OpenHands starts its action execution server with
 * (DockerRuntime's), up to its port:
 *   /openhands/micromamba/bin/micromamba run -n openhands poetry run python -u
 *     -m openhands.runtime.action_execution_server PORT ARGS...
 * A runtime image's entry script at that path (build.c) starts the
 * executor with PORT ARGS... */
extern const char *const ohbox_openhands_server_prefix[];
#define OHBOX_OPENHANDS_SERVER_PREFIX_N 10
/* ARGS... (a copy, NULL-terminated) when ENTRYPOINT followed by COMMAND
 * (either may be NULL) is that command with PORT, else NULL. */
char **ohbox_runtime_openhands_server_args (char *const *entrypoint, char *const *command, int port);
/* A TCP port nobody listens on now on ADDRESS (an IPv4 literal): the
 * kernel's choice for an ephemeral bind. */
int ohbox_runtime_free_port (const char *address, int *port, ohbox_error_t *err);

#endif
