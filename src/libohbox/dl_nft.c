/* dl_nft.c: loads libnftables on first use (dl.h, dl_nft.h). */
#include "config.h"

#include "dl_nft.h"

union ohbox_dl_nft_table ohbox_dl_nft;

static const char *const symbols[] = { OHBOX_DL_NFT_SYMBOLS (OHBOX_DL_NAME) };
_Static_assert (sizeof (symbols) / sizeof (symbols[0]) == sizeof (ohbox_dl_nft.slots) / sizeof (void *),
                "one name per slot");
_Static_assert (sizeof (ohbox_dl_nft) == sizeof (ohbox_dl_nft.slots), "the table is an array of pointers");

/* The soname in the binary's `.ohbox.dlopen` section (NUL-separated): tools
 * that pack a program with its libraries (executor/closure.sh, the cgroup v2
 * guest's payload) read it, since ldd cannot see a dlopen. */
static const char dlopen_soname[] __attribute__ ((section (".ohbox.dlopen"), used)) = OHBOX_NFTABLES_SONAME;

static void load (void);

static struct ohbox_dl_library library = {
  .soname = OHBOX_NFTABLES_SONAME,
  .needed_for = "sandbox networking (nftables)",
  .package = "libnftables1",
  .symbols = symbols,
  .n_symbols = sizeof (symbols) / sizeof (symbols[0]),
  .slots = ohbox_dl_nft.slots,
  .once = PTHREAD_ONCE_INIT,
  .init = load,
};

static void
load (void)
{
  ohbox_dl_open_many (&library);
}

int
ohbox_dl_nft_load (ohbox_error_t *err)
{
  return ohbox_dl_load (&library, err);
}
