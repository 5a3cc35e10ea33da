/* oci/image_spec.h: OCI image-spec (and Docker schema2) types with their JSON
 * parsers and serialisers, shared by libohbox and the executor.
 *
 * Parsers validate what later code relies on: every digest with
 * ohbox_digest_validate(), sizes >= 0, media types known for their role,
 * schemaVersion 2. Docker schema1 is recognised and refused with
 * OHBOX_ERR_UNSUPPORTED ("schema1 manifests are not supported; ..."). */
#ifndef OHBOX_OCI_IMAGE_SPEC_H
#define OHBOX_OCI_IMAGE_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define OCI_MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MEDIA_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MEDIA_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_MEDIA_LAYER "application/vnd.oci.image.layer.v1.tar"
#define OCI_MEDIA_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define OCI_MEDIA_LAYER_ZSTD "application/vnd.oci.image.layer.v1.tar+zstd"
#define OCI_MEDIA_LAYER_NONDIST "application/vnd.oci.image.layer.nondistributable.v1.tar"
#define OCI_MEDIA_LAYER_NONDIST_GZIP "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
#define OCI_MEDIA_LAYER_NONDIST_ZSTD "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd"
#define DOCKER_MEDIA_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MEDIA_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define DOCKER_MEDIA_CONFIG "application/vnd.docker.container.image.v1+json"
#define DOCKER_MEDIA_LAYER "application/vnd.docker.image.rootfs.diff.tar"
#define DOCKER_MEDIA_LAYER_GZIP "application/vnd.docker.image.rootfs.diff.tar.gzip"
#define DOCKER_MEDIA_LAYER_FOREIGN "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
#define DOCKER_MEDIA_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+json"
#define DOCKER_MEDIA_SCHEMA1_SIGNED "application/vnd.docker.distribution.manifest.v1+prettyjws"

/* Accept header for manifest requests: all four formats. */
#define OCI_MANIFEST_ACCEPT OCI_MEDIA_INDEX ", " DOCKER_MEDIA_LIST ", " OCI_MEDIA_MANIFEST ", " DOCKER_MEDIA_MANIFEST

#define OCI_MAX_MANIFEST_SIZE (4 * 1024 * 1024)
#define OCI_MAX_CONFIG_SIZE (4 * 1024 * 1024)
/* Counts a parser accepts: layers of a manifest (and diff_ids of a config),
 * entries of an index. */
#define OCI_MAX_LAYERS 1000
#define OCI_MAX_INDEX_ENTRIES 1000

enum oci_layer_compression
{
  OCI_COMPRESSION_NONE,
  OCI_COMPRESSION_GZIP,
  OCI_COMPRESSION_ZSTD,
};

struct oci_platform
{
  char *os;
  char *architecture;
  char *variant; /* may be NULL */
};

struct oci_descriptor
{
  char *media_type;
  char *digest; /* validated */
  int64_t size;
  struct oci_platform *platform; /* index entries only, may be NULL */
  json_t *annotations;           /* borrowed reference kept alive by the owner, may be NULL */
};

struct oci_manifest
{
  char *media_type; /* OCI_MEDIA_MANIFEST or DOCKER_MEDIA_MANIFEST */
  struct oci_descriptor config;
  struct oci_descriptor *layers;
  size_t n_layers;
  json_t *json; /* the parsed document */
};

struct oci_index
{
  char *media_type; /* OCI_MEDIA_INDEX or DOCKER_MEDIA_LIST */
  struct oci_descriptor *manifests;
  size_t n_manifests;
  json_t *json;
};

struct oci_image_config
{
  struct oci_platform platform;
  char **diff_ids; /* validated */
  size_t n_diff_ids;
  char *created; /* may be NULL */
  /* "config" object of the image (Env, Cmd, Entrypoint, WorkingDir, User,
   * ExposedPorts, Labels, StopSignal), borrowed from json, may be NULL. */
  json_t *runtime_config;
  json_t *json;
};

enum oci_document_kind
{
  OCI_DOC_MANIFEST,
  OCI_DOC_INDEX,
};

/* Tells a manifest from an index by the Content-Type (may be NULL, generic
 * or carry parameters) and the document itself: its mediaType when it has
 * one (which must then agree with a manifest or index Content-Type), else
 * the Content-Type, else its shape ("manifests" array -> index, "layers" and
 * "config" -> manifest). Schema1 (by type or schemaVersion 1) and unknown
 * types -> OHBOX_ERR_UNSUPPORTED; malformed -> OHBOX_ERR_INTEGRITY. */
int oci_document_kind (const char *content_type, const char *body, size_t len, enum oci_document_kind *out,
                       ohbox_error_t *err);

/* The parsers fail with OHBOX_ERR_INTEGRITY for malformed documents (bad
 * JSON, duplicate keys, bad digest, negative size, too many entries, a
 * document both manifest and index) and OHBOX_ERR_UNSUPPORTED for valid ones
 * ohbox cannot use (schema1, other schemaVersion, an artifact's config or
 * layer media type). Layer media types are checked with
 * oci_layer_compression(); index entries keep any media type. */
int oci_manifest_parse (const char *body, size_t len, struct oci_manifest **out, ohbox_error_t *err);
void oci_manifest_free (struct oci_manifest *m);
int oci_index_parse (const char *body, size_t len, struct oci_index **out, ohbox_error_t *err);
void oci_index_free (struct oci_index *i);
int oci_image_config_parse (const char *body, size_t len, struct oci_image_config **out, ohbox_error_t *err);
void oci_image_config_free (struct oci_image_config *c);

/* Layer compression from a layer media type; unknown types -> OHBOX_ERR_UNSUPPORTED. */
int oci_layer_compression (const char *media_type, enum oci_layer_compression *out, ohbox_error_t *err);

/* Parses "os/arch[/variant]" (OHBOX_ERR_USAGE when malformed); fills a
 * platform (strings owned), lowercased, with aliases normalised
 * (x86_64 -> amd64, aarch64 -> arm64, armhf -> arm/v7, arm/7 -> arm/v7). */
int oci_platform_parse (const char *s, struct oci_platform *out, ohbox_error_t *err);
/* The host platform (linux/amd64, linux/arm64/v8, ...). */
void oci_platform_host (struct oci_platform *out);
void oci_platform_clear (struct oci_platform *p);
char *oci_platform_string (const struct oci_platform *p);
/* HAVE (may be NULL: no match) is WANT: same os and architecture, and same
 * variant once a missing one is read as the architecture's default
 * (arm64 -> v8, arm -> v7): linux/arm64 and linux/arm64/v8 are the same. */
bool oci_platform_matches (const struct oci_platform *have, const struct oci_platform *want);
/* Picks the first index entry (of a manifest or index media type) whose
 * platform matches WANT as oci_platform_matches() says; entries without a
 * platform never match. Returns its position or -1 with
 * OHBOX_ERR_UNSUPPORTED listing the platforms the index has: "no image for
 * platform linux/s390x in the index (it has: linux/amd64, linux/arm64/v8)". */
int oci_index_select_platform (const struct oci_index *idx, const struct oci_platform *want, ohbox_error_t *err);

#endif
