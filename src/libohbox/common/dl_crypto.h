/* dl_crypto.h: libcrypto (OpenSSL), loaded on first use (dl.h).
 *
 * Include this instead of <openssl/evp.h> and <openssl/pem.h>: the functions below keep their
 * names and go through the table ohbox_dl_crypto.  Every entry point that
 * uses them calls ohbox_dl_crypto_load () first.  A function not listed here
 * is not loaded: add it to OHBOX_DL_CRYPTO_SYMBOLS and to the names below. */
#ifndef OHBOX_DL_CRYPTO_H
#define OHBOX_DL_CRYPTO_H

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/dl.h"

#define OHBOX_DL_CRYPTO_SYMBOLS(X)                                                                                     \
  X (EVP_Digest)                                                                                                       \
  X (EVP_DigestFinal_ex)                                                                                               \
  X (EVP_DigestInit_ex)                                                                                                \
  X (EVP_DigestUpdate)                                                                                                 \
  X (EVP_MD_CTX_copy_ex)                                                                                               \
  X (EVP_MD_CTX_free)                                                                                                  \
  X (EVP_MD_CTX_new)                                                                                                   \
  X (EVP_sha256)                                                                                                       \
  X (EVP_DecodeBlock)                                                                                                  \
  X (EVP_EncodeBlock)                                                                                                  \
  X (BIO_free)                                                                                                         \
  X (BIO_new_mem_buf)                                                                                                  \
  X (PEM_read_bio_X509)                                                                                                \
  X (X509_free)

/* The table and loader of libcrypto (OpenSSL) (loaded once). */
OHBOX_DL_DECLARE (crypto, OHBOX_DL_CRYPTO_SYMBOLS);

#define EVP_Digest (ohbox_dl_crypto.EVP_Digest)
#define EVP_DigestFinal_ex (ohbox_dl_crypto.EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (ohbox_dl_crypto.EVP_DigestInit_ex)
#define EVP_DigestUpdate (ohbox_dl_crypto.EVP_DigestUpdate)
#define EVP_MD_CTX_copy_ex (ohbox_dl_crypto.EVP_MD_CTX_copy_ex)
#define EVP_MD_CTX_free (ohbox_dl_crypto.EVP_MD_CTX_free)
#define EVP_MD_CTX_new (ohbox_dl_crypto.EVP_MD_CTX_new)
#define EVP_sha256 (ohbox_dl_crypto.EVP_sha256)
#define EVP_DecodeBlock (ohbox_dl_crypto.EVP_DecodeBlock)
#define EVP_EncodeBlock (ohbox_dl_crypto.EVP_EncodeBlock)
#define BIO_free (ohbox_dl_crypto.BIO_free)
#define BIO_new_mem_buf (ohbox_dl_crypto.BIO_new_mem_buf)
#define PEM_read_bio_X509 (ohbox_dl_crypto.PEM_read_bio_X509)
#define X509_free (ohbox_dl_crypto.X509_free)

#endif
