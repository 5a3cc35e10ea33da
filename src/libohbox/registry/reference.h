/* reference.h: image references as users write them, parsed with the grammar
 * of distribution/reference and normalised as Docker does:
 *   busybox                    -> docker.io/library/busybox:latest
 *   library/busybox:1.36       -> docker.io/library/busybox:1.36
 *   docker.io/x/y@sha256:...   -> digest reference
 *   127.0.0.1:5000/ns/img:tag  -> registry 127.0.0.1:5000
 * A first component is a registry host when it contains '.' or ':' or is
 * "localhost". Names are lowercase; total length at most 255. */
#ifndef OHBOX_REFERENCE_H
#define OHBOX_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

struct ohbox_reference
{
  char *registry;         /* "docker.io", "127.0.0.1:5000"; never NULL after parse */
  char *repository;       /* "library/busybox", "ns/img" */
  char *tag;              /* NULL when only a digest was given and no tag */
  char *digest;           /* validated "sha256:..." or NULL */
  bool registry_explicit; /* the user wrote a registry host */
};

/* Parses S. Without tag and digest the tag is "latest". Errors are
 * OHBOX_ERR_USAGE: "invalid image reference `S`: <why>". */
int ohbox_reference_parse (const char *s, struct ohbox_reference **out, ohbox_error_t *err);
void ohbox_reference_free (struct ohbox_reference *r);
struct ohbox_reference *ohbox_reference_dup (const struct ohbox_reference *r);
/* "registry/repository" */
char *ohbox_reference_name (const struct ohbox_reference *r);
/* Full normalised string: name[:tag][@digest] */
char *ohbox_reference_string (const struct ohbox_reference *r);
/* Short form as Docker shows it: drops "docker.io/" and "library/". */
char *ohbox_reference_familiar (const struct ohbox_reference *r);
/* The host to contact for REGISTRY ("docker.io" -> "registry-1.docker.io"). */
const char *ohbox_registry_endpoint_host (const char *registry);

/* Grammar pieces, for other parsers of names (registries.conf locations).
 * host[:port], host a DNS-like name, an IPv4 address or "[ipv6]": */
bool ohbox_reference_valid_domain (const char *s, size_t len);
/* path-component ("/" path-component)*, lowercase: */
bool ohbox_reference_valid_path (const char *s, size_t len);

static inline void
cleanup_reference_fn (struct ohbox_reference **r)
{
  ohbox_reference_free (*r);
}
#define cleanup_reference __attribute__ ((cleanup (cleanup_reference_fn)))

#endif
