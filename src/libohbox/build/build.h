/* build.h: `ohbox build`: runtime images as content-addressed snapshots.
 *
 * A runtime image is a base image plus two layers:
 *   dependency layer  /.ohbox/lib/ (the executor's exact shared-library
 *                     closure and the dynamic loader), /.ohbox/bash (a static
 *                     bash, only when the base has none), /.ohbox/lock.json
 *                     (the dependency lock), /workspace, and the
 *                     OpenHands-compatible entry
 *                     /openhands/micromamba/bin/micromamba;
 *   executor layer    /.ohbox/bin/ohbox-executor and /.ohbox/executor.json.
 * Layers are reproducible uncompressed tars (sorted, mtime 0, uid/gid 0):
 * the same inputs give the same digests, so two runtime images share what
 * they have in common on disk.
 *
 * Tags (the OpenHands scheme with ohbox's own inputs; formulas in
 * shared/protocol/ACTION-PROTOCOL.md section 5), under the runtime
 * repository (default ohbox/runtime):
 *   versioned  ohbox_v{VERSION}_{base name, / -> _s_, : -> _t_, lower-cased, last 96 chars}
 *   lock       ohbox_v{VERSION}_{trunc36 (sha256 (base name NUL base manifest digest NUL lock.json))}
 *   source     {lock}_{trunc36 (sha256 of the executor source tree and binary)}
 *
 * The four paths:
 *   reuse          the source tag exists locally: nothing is built;
 *   from lock      the lock tag exists locally or can be pulled from the
 *                  runtime repository's registry: its base and dependency
 *                  layers + a new executor layer;
 *   from versioned the versioned tag exists or can be pulled: its base
 *                  layers + new dependency and executor layers;
 *   from scratch   the base image + both layers; tagged with all three.
 * Every runtime image records in its config labels how many of its layers
 * are the base's (org.ohbox.runtime.base-layers), which is what lets paths
 * 2 and 3 drop the old ohbox layers instead of stacking new ones on them.
 *
 * Inputs, found at build time (first that exists):
 *   executor binary   opts->executor, $OHBOX_EXECUTOR, PKGLIBEXECDIR/ohbox-executor,
 *                     BUILDDIR/ohbox-executor
 *   executor sources  opts->executor_src, $OHBOX_EXECUTOR_SRCDIR, PKGDATADIR/executor-src,
 *                     SRCDIR/executor   (*.c, *.h, local.mk)
 *   closure.sh        $OHBOX_CLOSURE_SH, PKGDATADIR/closure.sh, SRCDIR/executor/closure.sh
 *   bash              opts->bash, else /bin/bash-static (Debian's bash-static); it must be
 *                     static: it runs in bases without any libc.
 * The executor's closure is made once per executor binary with closure.sh
 * into STORE/build/closures/ and the digests of every input are cached in
 * STORE/build/cache.json, keyed by the file's stat (and /etc/ld.so.cache's
 * for the closure: an upgraded library changes it): reuse costs a few stats
 * and store lookups. */
#ifndef OHBOX_BUILD_H
#define OHBOX_BUILD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "image/pull.h"
#include "store/store.h"

#define OHBOX_BUILD_DEFAULT_REPO "ohbox/runtime"
#define OHBOX_BUILD_TAG_PREFIX "ohbox_v" PACKAGE_VERSION "_"

/* Labels of a runtime image's config. */
#define OHBOX_RUNTIME_LABEL "org.ohbox.runtime"
#define OHBOX_RUNTIME_LABEL_BASE "org.ohbox.runtime.base"
#define OHBOX_RUNTIME_LABEL_BASE_DIGEST "org.ohbox.runtime.base-digest"
#define OHBOX_RUNTIME_LABEL_BASE_LAYERS "org.ohbox.runtime.base-layers"
#define OHBOX_RUNTIME_LABEL_LOCK "org.ohbox.runtime.lock-tag"
#define OHBOX_RUNTIME_LABEL_SOURCE "org.ohbox.runtime.source-tag"

/* Inside the image. */
#define OHBOX_RUNTIME_LOADER "/.ohbox/lib/ld-linux-x86-64.so.2"
#define OHBOX_RUNTIME_LIBDIR "/.ohbox/lib"
#define OHBOX_RUNTIME_EXECUTOR "/.ohbox/bin/ohbox-executor"
#define OHBOX_RUNTIME_BASH "/.ohbox/bash"
#define OHBOX_RUNTIME_DEFAULT_PORT 8000

/* ---- tags (build_tags.c) ---- */

/* OpenHands' truncate_hash: HEX (a hex string) read as one integer, written
 * in base 36 least significant digit first, at most 16 digits. OUT: 17 bytes.
 * -1 (OHBOX_ERR_USAGE) when HEX is empty or not hex. */
int ohbox_build_trunc36 (const char *hex, char out[17], ohbox_error_t *err);
/* PREFIX + BASE with '/' -> "_s_", ':' -> "_t_", '@' -> "_at_", lower-cased,
 * its last 96 characters. */
char *ohbox_build_versioned_tag (const char *prefix, const char *base);
/* PREFIX + trunc36 (HEX). */
int ohbox_build_hash_tag (const char *prefix, const char *hex, char **out, ohbox_error_t *err);
/* The hex sha256 of the executor source tree at DIR: every regular file
 * named *.c, *.h or local.mk directly in DIR, sorted by name, as
 * "NAME\0<sha256 hex of its bytes>\n". EXTRA (may be NULL) is appended
 * (the executor binary's digest). OUT: 65 bytes. */
int ohbox_build_source_digest (const char *dir, const char *extra, char out[65], ohbox_error_t *err);
/* The hex sha256 the lock tag is made of: BASE NUL BASE_DIGEST NUL LOCK. */
void ohbox_build_lock_digest (const char *base, const char *base_digest, const char *lock_json, char out[65]);

/* ---- the build (build.c) ---- */

enum ohbox_build_path
{
  OHBOX_BUILD_REUSE = 1,
  OHBOX_BUILD_FROM_LOCK = 2,
  OHBOX_BUILD_FROM_VERSIONED = 3,
  OHBOX_BUILD_FROM_SCRATCH = 4,
};
const char *ohbox_build_path_name (enum ohbox_build_path p);

struct ohbox_build_options
{
  const char *runtime_repo; /* NULL: OHBOX_BUILD_DEFAULT_REPO; a registry in it is tried for lock/versioned */
  bool force_rebuild;
  bool no_pull;         /* never contact a registry (base and runtime snapshots) */
  const char *executor; /* NULL: see above */
  const char *executor_src;
  const char *bash;
  const struct ohbox_pull_options *pull; /* for the base and the runtime registry (may be NULL) */
  void (*notice) (void *ud, const char *msg);
  void *userdata;
};

struct ohbox_build_result
{
  enum ohbox_build_path path;
  char *image; /* "<repo>:<source tag>", normalised */
  char *id;    /* manifest digest */
  char *base;  /* the base as used in tags */
  char *base_digest;
  char *versioned_tag, *lock_tag, *source_tag;
  char *from;     /* the snapshot built on (paths 2 and 3), else NULL */
  json_t *tagged; /* names set by this build */
  double seconds;
};
void ohbox_build_result_clear (struct ohbox_build_result *r);
json_t *ohbox_build_result_json (const struct ohbox_build_result *r);

/* Builds (or reuses) the runtime image for BASE. Names are set only once
 * the image, all its blobs and layers are stored: a build killed half-way
 * leaves untagged data that `ohbox prune` removes. */
int ohbox_build (struct ohbox_store *s, const char *base, const struct ohbox_build_options *opts,
                 struct ohbox_build_result *result, ohbox_error_t *err);

/* ---- inputs (build_inputs.c) ---- */

struct ohbox_build_inputs
{
  char *executor;        /* host path of the binary */
  char *executor_digest; /* hex sha256 */
  char *closure_dir;     /* STORE/build/closures/<...>: bin/ and lib/ made by closure.sh */
  json_t *closure_files; /* [{"path": "lib/NAME", "sha256": hex, "size"}] sorted */
  char *bash;            /* host path of the static bash */
  char *bash_digest;
  char *source_digest; /* hex, over the source tree and executor_digest */
};
/* Finds and digests the inputs (cached), making the closure when missing. */
int ohbox_build_inputs_load (struct ohbox_store *s, const struct ohbox_build_options *opts,
                             struct ohbox_build_inputs *in, ohbox_error_t *err);
void ohbox_build_inputs_clear (struct ohbox_build_inputs *in);
/* The dependency lock (canonical JSON, compact, sorted keys): the closure
 * files and the bash when WITH_BASH. */
char *ohbox_build_lock_json (const struct ohbox_build_inputs *in, bool with_bash);

/* ---- layers (build_layer.c) ---- */

struct ohbox_build_entry
{
  char *path; /* relative, no leading '/' */
  char type;  /* 'd', 'f' (from SRC or DATA), 'l' (symlink to TARGET) */
  unsigned mode;
  char *src;  /* host file for 'f', or NULL */
  char *data; /* contents for 'f' without SRC */
  size_t data_len;
  char *target;
};
struct ohbox_build_layer
{
  struct ohbox_build_entry *e;
  size_t n;
};
void ohbox_build_layer_dir (struct ohbox_build_layer *spec, const char *path, unsigned mode);
void ohbox_build_layer_file (struct ohbox_build_layer *spec, const char *path, unsigned mode, const char *src);
void ohbox_build_layer_data (struct ohbox_build_layer *spec, const char *path, unsigned mode, const char *data,
                             size_t len);
void ohbox_build_layer_symlink (struct ohbox_build_layer *spec, const char *path, const char *target);
void ohbox_build_layer_clear (struct ohbox_build_layer *spec);
/* Writes SPEC as a reproducible tar, stores it as a blob and unpacks it as
 * a layer. DIGEST_OUT = DiffID = blob digest (the layer is uncompressed). */
int ohbox_build_layer_commit (struct ohbox_store *s, struct ohbox_build_layer *spec,
                              char digest_out[OHBOX_DIGEST_LEN + 1], int64_t *size_out, ohbox_error_t *err);

#endif
