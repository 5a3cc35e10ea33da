/* dl_crypto.c: loads libcrypto (OpenSSL) on first use (dl.h, dl_crypto.h). */
#include "config.h"

#include "dl_crypto.h"

union ohbox_dl_crypto_table ohbox_dl_crypto;

static const char *const symbols[] = { OHBOX_DL_CRYPTO_SYMBOLS (OHBOX_DL_NAME) };
_Static_assert (sizeof (symbols) / sizeof (symbols[0]) == sizeof (ohbox_dl_crypto.slots) / sizeof (void *),
                "one name per slot");
_Static_assert (sizeof (ohbox_dl_crypto) == sizeof (ohbox_dl_crypto.slots), "the table is an array of pointers");

/* The soname in the binary's `.ohbox.dlopen` section (NUL-separated): tools
 * that pack a program with its libraries (executor/closure.sh, the cgroup v2
 * guest's payload) read it, since ldd cannot see a dlopen. */
static const char dlopen_soname[] __attribute__ ((section (".ohbox.dlopen"), used)) = OHBOX_CRYPTO_SONAME;

static void load (void);

static struct ohbox_dl_library library = {
  .soname = OHBOX_CRYPTO_SONAME,
  .needed_for = "SHA-256 digests, base64 and certificates",
  .package = "libssl3",
  .symbols = symbols,
  .n_symbols = sizeof (symbols) / sizeof (symbols[0]),
  .slots = ohbox_dl_crypto.slots,
  .once = PTHREAD_ONCE_INIT,
  .init = load,
};

static void
load (void)
{
  ohbox_dl_open_many (&library);
}

int
ohbox_dl_crypto_load (ohbox_error_t *err)
{
  return ohbox_dl_load (&library, err);
}
