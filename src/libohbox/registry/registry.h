/* registry.h: a client of one registry endpoint (OCI distribution API over
 * libcurl): the /v2/ ping, authentication (Bearer token flow with a token
 * cache per scope, and Basic), TLS settings, bounded manifest and blob reads,
 * and parallel blob downloads straight into the store with resume (HTTP
 * Range), retries with backoff (429, 5xx, network errors) and verification.
 *
 * TLS is verified against the system CAs plus every *.crt in the registry's
 * certificate directory: --cert-dir, else the first that exists of
 * ~/.config/containers/certs.d/HOST[:PORT] (not for root),
 * /etc/containers/certs.d/HOST[:PORT] and /etc/docker/certs.d/HOST[:PORT].
 * A NAME.cert + NAME.key pair there is a client certificate (sent to the
 * registry only). An insecure endpoint tries HTTPS without verification and
 * falls back to plain HTTP; the ping decides the scheme once per object.
 *
 * Redirects are followed (at most 10, http/https only, never from https to
 * http unless insecure) and the Authorization header (token or Basic) is
 * sent only to the registry's own origin (scheme, host, port): a blob
 * redirected to a storage backend is fetched without it, and a 401 from
 * such a backend never starts the token flow.
 *
 * A registry elsewhere cannot send us to this host: connections to
 * loopback, link-local and unspecified addresses (by the address resolved,
 * or a literal in a redirect or token realm) are refused unless the
 * registry's own address (its ping) is loopback or link-local.
 *
 * Errors: 401 -> OHBOX_ERR_AUTH ("unauthorized: authentication required for
 * REGISTRY/REPO; use --creds or ohbox login", or "credentials for REGISTRY
 * were refused ..." when some were sent); 403 -> OHBOX_ERR_AUTH; 404 ->
 * OHBOX_ERR_NOT_FOUND; network, TLS (with the --cert-dir/--tls-verify hint)
 * and other HTTP errors -> OHBOX_ERR_REGISTRY; a digest, size or bound
 * violation -> OHBOX_ERR_INTEGRITY.
 *
 * One object is used by one thread at a time. */
#ifndef OHBOX_REGISTRY_H
#define OHBOX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry/authfile.h"
#include "common/digest.h"
#include "common/error.h"
#include "store/store.h"

struct ohbox_registry_options
{
  const char *authfile;                  /* --authfile, may be NULL */
  const struct ohbox_credentials *creds; /* --creds, overrides the auth files */
  const char *cert_dir;                  /* --cert-dir, may be NULL */
  bool insecure;                         /* --tls-verify=false or registries.conf insecure */
  unsigned max_parallel;                 /* blob downloads at once; 0 -> 6 */
  unsigned max_attempts;                 /* per request; 0 -> 5 */
  unsigned retry_delay_ms;               /* first backoff; doubles; 0 -> 250 */
  long connect_timeout_s;                /* 0 -> 30 */
  long low_speed_timeout_s;              /* abort a transfer slower than 1 kB/s for this long; 0 -> 60 */
  /* A request answered into memory (ping, token, manifest, config) that
   * takes longer fails; 0 -> 300, or $OHBOX_REQUEST_TIMEOUT (1..3600). */
  long request_timeout_s;
  /* Every request, blob downloads included, ends by this ohbox_monotonic ()
   * time (0: none); TIMEOUT_S is what it came from, for messages. */
  double deadline;
  double timeout_s;
  /* Credentials in the auth.json format, in memory (a CI job's own),
   * looked up after --creds and before the auth files. */
  const char *auth_json;
  const char *auth_json_name; /* what to call it in messages */
  /* Only --creds, AUTH_JSON and AUTHFILE: never the default auth files of
   * the user (a CI runner's host credentials). */
  bool no_default_authfiles;
  const char *user_agent; /* 0 -> "ohbox/VERSION" */
};

struct ohbox_registry;

/* HOST is "host[:port]" as written in references (docker.io is mapped to its
 * endpoint by the caller with ohbox_registry_endpoint_host()). No network I/O. */
int ohbox_registry_new (const char *host, const struct ohbox_registry_options *opts, struct ohbox_registry **out,
                        ohbox_error_t *err);
void ohbox_registry_free (struct ohbox_registry *r);

/* Did some request go with credentials (a Basic header, or a token the
 * token server gave for them)? An image pulled so needed them (pull.c). */
bool ohbox_registry_used_credentials (const struct ohbox_registry *r);

/* GET /v2/ (answers 200 or 401 are both "alive"; a 401 tells how to
 * authenticate). The other requests ping first when it was not done. */
int ohbox_registry_ping (struct ohbox_registry *r, ohbox_error_t *err);

/* For `ohbox login`: checks that the credentials of the options (--creds)
 * are accepted, authenticating as the registry asks: Basic -> GET /v2/ with
 * them; Bearer -> a token request for the service (no scope), then GET /v2/
 * with the token. A registry without authentication accepts anything.
 * OHBOX_ERR_AUTH when refused, OHBOX_ERR_USAGE without credentials. */
int ohbox_registry_check_credentials (struct ohbox_registry *r, ohbox_error_t *err);

/* GET /v2/REPO/manifests/REF (tag or digest) with the four manifest types in
 * Accept; at most OCI_MAX_MANIFEST_SIZE bytes. DIGEST_OUT receives the sha256
 * of the body; when REF is a digest it must match (else OHBOX_ERR_INTEGRITY).
 * 404 -> OHBOX_ERR_NOT_FOUND naming the image; 401/403 -> OHBOX_ERR_AUTH. */
int ohbox_registry_get_manifest (struct ohbox_registry *r, const char *repository, const char *ref, char **body,
                                 size_t *len, char **content_type, char digest_out[OHBOX_DIGEST_LEN + 1],
                                 ohbox_error_t *err);

/* GET a small blob (a config) into memory, at most MAX bytes, verified.
 * 404 -> OHBOX_ERR_NOT_FOUND naming the blob. */
int ohbox_registry_get_blob (struct ohbox_registry *r, const char *repository, const char *digest, size_t max,
                             char **body, size_t *len, ohbox_error_t *err);

struct ohbox_blob_fetch
{
  const char *digest; /* validated by the caller */
  int64_t size;       /* from the descriptor */
  /* Results, set by ohbox_registry_fetch_blobs: */
  bool downloaded; /* false when the store already had it */
  uint64_t bytes_transferred;
};

struct ohbox_fetch_callbacks
{
  /* Progress of blob IDX: DONE of TOTAL bytes (resumed bytes count as done). */
  void (*progress) (void *userdata, size_t idx, uint64_t done, uint64_t total);
  /* Blob IDX is complete and committed in the store (or was already there).
   * Called from the thread that called ohbox_registry_fetch_blobs. */
  void (*complete) (void *userdata, size_t idx);
  void *userdata;
};

/* Downloads every blob of FETCHES not yet in STORE, MAX_PARALLEL at a time
 * (libcurl multi), each into a store blob writer: resumed with Range where a
 * partial exists or a connection dropped, retried with backoff on 408, 429,
 * 5xx and network errors (Retry-After honoured up to 10 s), size and digest
 * verified. A blob another process is downloading is waited for, not
 * downloaded twice. Stops at the first blob that fails for good and returns
 * its error, which names the blob, the registry and the HTTP status or
 * network error; partial downloads are kept for the next attempt (except
 * data known to be bad). Callbacks run in the calling thread. */
int ohbox_registry_fetch_blobs (struct ohbox_registry *r, struct ohbox_store *store, const char *repository,
                                struct ohbox_blob_fetch *fetches, size_t n, const struct ohbox_fetch_callbacks *cb,
                                ohbox_error_t *err);

#endif
