/* pull.h: `ohbox pull` as a library call: resolve a reference (registries.conf
 * short-name search, mirrors, blocked registries), fetch and verify the
 * manifest (selecting a platform from an index), the config and the layers
 * (parallel downloads), unpack layers while others still download, then
 * record the image and name it, all within a deadline (--timeout) and an
 * unpacked-size budget (--max-image-size), with the store's free space
 * checked before the downloads and while unpacking. Events are reported
 * through callbacks, serialised (never two at once), so a CLI can draw
 * progress. */
#ifndef OHBOX_PULL_H
#define OHBOX_PULL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "registry/registries_conf.h"
#include "registry/registry.h"
#include "store/store.h"

enum ohbox_layer_state
{
  OHBOX_LAYER_PRESENT,    /* blob and unpacked layer were already in the store */
  OHBOX_LAYER_WAITING,    /* queued for download */
  OHBOX_LAYER_DOWNLOADED, /* blob complete and verified */
  OHBOX_LAYER_UNPACKING,
  OHBOX_LAYER_DONE, /* unpacked and verified against its DiffID */
};

struct ohbox_pull_events
{
  /* The manifest was found: NAME (normalised, as stored), its digest, platform, layers. */
  void (*resolved) (void *ud, const char *name, const char *digest, const char *platform, size_t n_layers,
                    uint64_t total_size);
  /* A source (mirror, search registry) failed and the next one is tried. */
  void (*notice) (void *ud, const char *message);
  void (*layer_state) (void *ud, size_t idx, const char *digest, uint64_t size, enum ohbox_layer_state state);
  void (*layer_progress) (void *ud, size_t idx, uint64_t done, uint64_t total);
  void *userdata;
};

struct ohbox_pull_options
{
  const char *platform;                     /* "os/arch[/variant]"; NULL: the host's */
  struct ohbox_registry_options registry;   /* credentials, TLS, parallelism */
  bool tls_verify_explicit;                 /* registry.insecure came from the user, not the conf */
  const struct ohbox_registries_conf *conf; /* may be NULL */
  uint64_t max_layer_size;                  /* 0: OHBOX_LAYER_DEFAULT_MAX_SIZE */
  /* The layers this pull unpacks, together (uncompressed); 0:
   * OHBOX_PULL_DEFAULT_MAX_IMAGE_SIZE. Over it: OHBOX_ERR_INTEGRITY. */
  uint64_t max_image_size;
  /* The registry part of the pull (every request of every source, blob
   * downloads included) ends within this many seconds; 0:
   * OHBOX_PULL_DEFAULT_TIMEOUT_S, < 0: none. Past it: OHBOX_ERR_REGISTRY. */
  double timeout_s;
  const struct ohbox_pull_events *events; /* may be NULL */
};

#define OHBOX_PULL_DEFAULT_MAX_IMAGE_SIZE OHBOX_LAYER_DEFAULT_MAX_SIZE
#define OHBOX_PULL_DEFAULT_TIMEOUT_S (30 * 60.0)

struct ohbox_pull_result
{
  char *name;         /* normalised reference stored in refs ("reg/repo:tag" or "reg/repo@digest") */
  char *id;           /* image id = manifest digest */
  char *index_digest; /* NULL unless the reference resolved to an index */
  char *platform;
  size_t layers;
  size_t blobs_downloaded;
  size_t blobs_reused;
  uint64_t bytes_downloaded;
  /* The registry wanted credentials and got them: the image is marked as
   * one that needs them (ohbox_store_needs_credentials). */
  bool used_credentials;
};

int ohbox_pull (struct ohbox_store *store, const char *image, const struct ohbox_pull_options *opts,
                struct ohbox_pull_result *result, ohbox_error_t *err);
void ohbox_pull_result_clear (struct ohbox_pull_result *r);

#endif
