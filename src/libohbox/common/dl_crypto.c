/* dl_crypto.c: loads libcrypto (OpenSSL) on first use (dl.h, dl_crypto.h). */
#include "config.h"

#include "common/dl_crypto.h"

OHBOX_DL_DEFINE (crypto, OHBOX_DL_CRYPTO_SYMBOLS, OHBOX_CRYPTO_SONAME, "SHA-256 digests, base64 and certificates",
                 "libssl3")
