/* digest.c: digest validation and sha256: streaming with OpenSSL EVP
 * (libcrypto, loaded on first use: dl_crypto.h), one-shot by the kernel
 * (AF_ALG) where it can.  `ohbox run` and `exec` only hash small buffers
 * (a config blob, the seccomp cache key): with the kernel's sha256 they
 * never load libcrypto, whose initialisation costs ~1 ms and whose
 * relocated pages (~400 KiB) every sandbox's monitor and init would keep. */
#include "config.h"
#include "common/digest.h"

#include "common/dl_crypto.h"
#include <errno.h>
#include <linux/if_alg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/utils.h"

bool
ohbox_digest_is_valid (const char *digest)
{
  return digest != NULL && strncmp (digest, "sha256:", 7) == 0 && ohbox_digest_hex_is_valid (digest + 7);
}

bool
ohbox_digest_hex_is_valid (const char *hex)
{
  size_t i;
  for (i = 0; hex[i]; i++)
    {
      if (i >= 64)
        return false;
      char c = hex[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
        return false;
    }
  return i == 64;
}

int
ohbox_digest_validate (const char *digest, ohbox_error_t *err)
{
  if (ohbox_digest_is_valid (digest))
    return 0;
  if (digest == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "missing digest");
  /* Show at most 80 printable characters: the digest comes from outside. */
  char shown[81];
  size_t j = 0;
  for (size_t i = 0; digest[i] && j < sizeof shown - 1; i++)
    shown[j++] = (digest[i] >= 0x20 && digest[i] < 0x7f) ? digest[i] : '?';
  shown[j] = '\0';
  return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                      "invalid digest `%s%s`: expected `sha256:` and 64 lowercase hex characters", shown,
                      digest[j] ? "..." : "");
}

const char *
ohbox_digest_hex (const char *digest)
{
  return digest + 7;
}

struct ohbox_sha256
{
  EVP_MD_CTX *ctx;
};

void
ohbox_crypto_require (void)
{
  /* libcrypto is a dependency of the package (and of libcurl): without it
   * nothing is hashed, as without memory. */
  if (ohbox_dl_crypto_load (NULL) < 0)
    abort ();
}

struct ohbox_sha256 *
ohbox_sha256_new (void)
{
  ohbox_crypto_require ();
  struct ohbox_sha256 *h = xcalloc (1, sizeof *h);
  h->ctx = EVP_MD_CTX_new ();
  if (h->ctx == NULL || EVP_DigestInit_ex (h->ctx, EVP_sha256 (), NULL) != 1)
    abort ();
  return h;
}

void
ohbox_sha256_update (struct ohbox_sha256 *h, const void *data, size_t len)
{
  if (len && EVP_DigestUpdate (h->ctx, data, len) != 1)
    abort ();
}

static void
to_digest (const unsigned char *md, char out[OHBOX_DIGEST_LEN + 1])
{
  static const char hexchars[] = "0123456789abcdef";
  memcpy (out, "sha256:", 7);
  for (int i = 0; i < 32; i++)
    {
      out[7 + 2 * i] = hexchars[md[i] >> 4];
      out[8 + 2 * i] = hexchars[md[i] & 0xf];
    }
  out[OHBOX_DIGEST_LEN] = '\0';
}

void
ohbox_sha256_final (struct ohbox_sha256 *h, char out[OHBOX_DIGEST_LEN + 1])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_DigestFinal_ex (h->ctx, md, &mdlen) != 1 || mdlen != 32)
    abort ();
  to_digest (md, out);
}

struct ohbox_sha256 *
ohbox_sha256_dup (const struct ohbox_sha256 *h)
{
  struct ohbox_sha256 *c = xcalloc (1, sizeof *c);
  c->ctx = EVP_MD_CTX_new ();
  if (c->ctx == NULL || EVP_MD_CTX_copy_ex (c->ctx, h->ctx) != 1)
    abort ();
  return c;
}

void
ohbox_sha256_free (struct ohbox_sha256 *h)
{
  if (h == NULL)
    return;
  EVP_MD_CTX_free (h->ctx);
  free (h);
}

/* The kernel's sha256 (AF_ALG "hash"): 0, or -1 when the kernel lacks it
 * (CONFIG_CRYPTO_USER_API_HASH) or refuses the socket.  No fd is kept
 * between calls: a sandbox's init closes every fd it did not open. */
static int
kernel_sha256 (const void *data, size_t len, unsigned char md[32])
{
  struct sockaddr_alg sa = { .salg_family = AF_ALG, .salg_type = "hash", .salg_name = "sha256" };
  int s = socket (AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0)
    return -1;
  int op = -1, r = -1;
  if (bind (s, (struct sockaddr *) &sa, sizeof sa) == 0 && (op = accept4 (s, NULL, NULL, SOCK_CLOEXEC)) >= 0)
    {
      const char *p = data;
      size_t left = len;
      r = 0;
      while (left > 0 && r == 0)
        {
          size_t chunk = left > (1 << 20) ? (1 << 20) : left;
          /* MSG_MORE until the last piece; a short send is a failure (the
           * kernel takes all of it or errs). */
          ssize_t n = send (op, p, chunk, left > chunk ? MSG_MORE : 0);
          if (n < 0 && errno == EINTR)
            continue;
          if (n != (ssize_t) chunk)
            r = -1;
          p += chunk;
          left -= chunk;
        }
      /* With nothing sent, the read gives the digest of the empty input. */
      if (r == 0 && read (op, md, 32) != 32)
        r = -1;
      close (op);
    }
  close (s);
  return r;
}

void
ohbox_sha256_buffer (const void *data, size_t len, char out[OHBOX_DIGEST_LEN + 1])
{
  unsigned char md[32];
  unsigned int mdlen = 0;
  if (kernel_sha256 (data, len, md) < 0)
    {
      ohbox_crypto_require ();
      if (EVP_Digest (data, len, md, &mdlen, EVP_sha256 (), NULL) != 1 || mdlen != 32)
        abort ();
    }
  to_digest (md, out);
}

int
ohbox_sha256_fd (int fd, const char *what, char out[OHBOX_DIGEST_LEN + 1], int64_t *size, ohbox_error_t *err)
{
  struct ohbox_sha256 *h = ohbox_sha256_new ();
  /* 64 KiB kept off the stack (threads have small ones), one per thread. */
  static __thread char buf[1 << 16];
  int64_t total = 0;
  for (;;)
    {
      ssize_t r = read (fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        {
          ohbox_sha256_free (h);
          return ohbox_error_errno (err, "read `%s`", what);
        }
      if (r == 0)
        break;
      ohbox_sha256_update (h, buf, (size_t) r);
      total += r;
    }
  ohbox_sha256_final (h, out);
  ohbox_sha256_free (h);
  if (size)
    *size = total;
  return 0;
}
