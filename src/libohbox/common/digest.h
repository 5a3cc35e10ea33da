/* digest.h: content digests. Only sha256 is accepted; a digest is valid only
 * as "sha256:" followed by exactly 64 lowercase hex characters. Every digest
 * that comes from outside (a manifest, a registry header, a user) is checked
 * with ohbox_digest_validate() before it is used in a path or a URL
 * (CVE-2024-3727 shape: "sha256:../../x" must never reach the filesystem). */
#ifndef OHBOX_DIGEST_H
#define OHBOX_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define OHBOX_DIGEST_LEN 71 /* "sha256:" + 64 */

/* 0 when valid; otherwise -1 with OHBOX_ERR_INTEGRITY naming the digest (escaped). */
int ohbox_digest_validate (const char *digest, ohbox_error_t *err);
bool ohbox_digest_is_valid (const char *digest);
/* Pointer to the 64 hex characters of a VALID digest. */
const char *ohbox_digest_hex (const char *digest);
/* Whether HEX is a sha256 digest's hex part: 64 lowercase hex characters. */
bool ohbox_digest_hex_is_valid (const char *hex);

/* Loads libcrypto (dl_crypto.h) or aborts: for the callers of its
 * functions that cannot fail (sha256, base64). */
void ohbox_crypto_require (void);

/* Streaming sha256 over OpenSSL EVP. */
struct ohbox_sha256;
struct ohbox_sha256 *ohbox_sha256_new (void);
void ohbox_sha256_update (struct ohbox_sha256 *h, const void *data, size_t len);
/* Writes "sha256:<hex>" (OHBOX_DIGEST_LEN + 1 bytes) into OUT; the context can be freed after. */
void ohbox_sha256_final (struct ohbox_sha256 *h, char out[OHBOX_DIGEST_LEN + 1]);
/* A copy of the running state (to read the digest so far without ending it). */
struct ohbox_sha256 *ohbox_sha256_dup (const struct ohbox_sha256 *h);
void ohbox_sha256_free (struct ohbox_sha256 *h);
/* One-shot digest of a buffer. */
void ohbox_sha256_buffer (const void *data, size_t len, char out[OHBOX_DIGEST_LEN + 1]);
/* Digest of what is left to read on FD (up to EOF) into OUT and, when SIZE is
 * not NULL, the number of bytes read; -1 naming WHAT when reading fails. */
int ohbox_sha256_fd (int fd, const char *what, char out[OHBOX_DIGEST_LEN + 1], int64_t *size, ohbox_error_t *err);

#endif
