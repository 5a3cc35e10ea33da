/* dl_archive.c: loads libarchive on first use (dl.h, dl_archive.h). */
#include "config.h"

#include "dl_archive.h"

union ohbox_dl_archive_table ohbox_dl_archive;

static const char *const symbols[] = { OHBOX_DL_ARCHIVE_SYMBOLS (OHBOX_DL_NAME) };
_Static_assert (sizeof (symbols) / sizeof (symbols[0]) == sizeof (ohbox_dl_archive.slots) / sizeof (void *),
                "one name per slot");
_Static_assert (sizeof (ohbox_dl_archive) == sizeof (ohbox_dl_archive.slots), "the table is an array of pointers");

/* The soname in the binary's `.ohbox.dlopen` section (NUL-separated): tools
 * that pack a program with its libraries (executor/closure.sh, the cgroup v2
 * guest's payload) read it, since ldd cannot see a dlopen. */
static const char dlopen_soname[] __attribute__ ((section (".ohbox.dlopen"), used)) = OHBOX_ARCHIVE_SONAME;

static void load (void);

static struct ohbox_dl_library library = {
  .soname = OHBOX_ARCHIVE_SONAME,
  .needed_for = "reading and writing image layers",
  .package = "libarchive13",
  .symbols = symbols,
  .n_symbols = sizeof (symbols) / sizeof (symbols[0]),
  .slots = ohbox_dl_archive.slots,
  .once = PTHREAD_ONCE_INIT,
  .init = load,
};

static void
load (void)
{
  ohbox_dl_open_many (&library);
}

int
ohbox_dl_archive_load (ohbox_error_t *err)
{
  return ohbox_dl_load (&library, err);
}
