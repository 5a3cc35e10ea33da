/* dl_curl.c: loads libcurl on first use (dl.h, dl_curl.h). */
#include "config.h"

#include "dl_curl.h"

union ohbox_dl_curl_table ohbox_dl_curl;

static const char *const symbols[] = { OHBOX_DL_CURL_SYMBOLS (OHBOX_DL_NAME) };
_Static_assert (sizeof (symbols) / sizeof (symbols[0]) == sizeof (ohbox_dl_curl.slots) / sizeof (void *),
                "one name per slot");
_Static_assert (sizeof (ohbox_dl_curl) == sizeof (ohbox_dl_curl.slots), "the table is an array of pointers");

/* The soname in the binary's `.ohbox.dlopen` section (NUL-separated): tools
 * that pack a program with its libraries (executor/closure.sh, the cgroup v2
 * guest's payload) read it, since ldd cannot see a dlopen. */
static const char dlopen_soname[] __attribute__ ((section (".ohbox.dlopen"), used)) = OHBOX_CURL_SONAME;

static void load (void);

static struct ohbox_dl_library library = {
  .soname = OHBOX_CURL_SONAME,
  .needed_for = "pulling, pushing and logging in to registries",
  .package = "libcurl4",
  .symbols = symbols,
  .n_symbols = sizeof (symbols) / sizeof (symbols[0]),
  .slots = ohbox_dl_curl.slots,
  .once = PTHREAD_ONCE_INIT,
  .init = load,
};

static void
load (void)
{
  ohbox_dl_open_many (&library);
}

int
ohbox_dl_curl_load (ohbox_error_t *err)
{
  return ohbox_dl_load (&library, err);
}
