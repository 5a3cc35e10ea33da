/* test-dl.c: libraries loaded on first use (dl.h): the loader's errors name
 * the soname or the symbol, a failed load leaves the table empty, and the
 * four real tables load with every symbol the code calls. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "common/dl.h"
#include "common/dl_archive.h"
#include "common/dl_crypto.h"
#include "common/dl_curl.h"
#include "common/dl_nft.h"
#include "unit.h"
#include "common/utils.h"

/* A two-slot table over libc: getpid and a name chosen per test. */
static union
{
  struct
  {
    pid_t (*getpid) (void);
    void *second;
  };
  void *slots[2];
} table;
static const char *names[2] = { "getpid", NULL };
static struct ohbox_dl_library lib;
static void
load_lib (void)
{
  ohbox_dl_open_many (&lib);
}

static void
reset (const char *soname, const char *second)
{
  free (lib.error);
  memset (&table, 0, sizeof table);
  names[1] = second;
  lib = (struct ohbox_dl_library){ .soname = soname,
                                   .needed_for = "the unit test",
                                   .package = "libtest0",
                                   .symbols = names,
                                   .n_symbols = 2,
                                   .slots = table.slots,
                                   .once = PTHREAD_ONCE_INIT,
                                   .init = load_lib };
}

/* Loading SONAME for getpid and SECOND fails with *ERR naming NAME1 and
 * NAME2, and fills no slot. */
static void
check_load_fails (const char *soname, const char *second, const char *name1, const char *name2, ohbox_error_t *err)
{
  reset (soname, second);
  CHECK (ohbox_dl_load (&lib, err) < 0);
  CHECK (strstr ((*err)->msg, name1) != NULL, "%s", (*err)->msg);
  CHECK (strstr ((*err)->msg, name2) != NULL, "%s", (*err)->msg);
  CHECK (table.getpid == NULL && table.second == NULL, "a failed load leaves no slot filled");
}

static void
test_missing_library (void)
{
  cleanup_error ohbox_error_t err = NULL;
  check_load_fails ("libohbox-no-such-library.so.0", "getppid", "`libohbox-no-such-library.so.0`",
                    "apt-get install libtest0", &err);
  /* Once: the second call gives the same answer without trying again. */
  cleanup_error ohbox_error_t err2 = NULL;
  CHECK (err != NULL && ohbox_dl_load (&lib, &err2) < 0 && strcmp (err->msg, err2->msg) == 0);
}

static void
test_missing_symbol (void)
{
  cleanup_error ohbox_error_t err = NULL;
  check_load_fails ("libc.so.6", "ohbox_no_such_symbol", "`ohbox_no_such_symbol`", "`libc.so.6`", &err);
}

static void
test_loads (void)
{
  cleanup_error ohbox_error_t err = NULL;
  reset ("libc.so.6", "getppid");
  CHECK (ohbox_dl_load (&lib, &err) == 0, "%s", err->msg);
  CHECK (table.getpid () == getpid ());
  CHECK (table.second != NULL);
}

/* The real tables: every symbol resolves in the installed libraries. */
static void
test_real_tables (void)
{
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_dl_curl_load (&err) == 0, "%s", err->msg);
  CHECK (ohbox_dl_archive_load (&err) == 0, "%s", err->msg);
  CHECK (ohbox_dl_nft_load (&err) == 0, "%s", err->msg);
  CHECK (ohbox_dl_crypto_load (&err) == 0, "%s", err->msg);
  for (size_t i = 0; i < sizeof ohbox_dl_crypto.slots / sizeof (void *); i++)
    CHECK (ohbox_dl_crypto.slots[i] != NULL, "crypto slot %zu", i);
  for (size_t i = 0; i < sizeof ohbox_dl_curl.slots / sizeof (void *); i++)
    CHECK (ohbox_dl_curl.slots[i] != NULL, "curl slot %zu", i);
  for (size_t i = 0; i < sizeof ohbox_dl_archive.slots / sizeof (void *); i++)
    CHECK (ohbox_dl_archive.slots[i] != NULL, "archive slot %zu", i);
  for (size_t i = 0; i < sizeof ohbox_dl_nft.slots / sizeof (void *); i++)
    CHECK (ohbox_dl_nft.slots[i] != NULL, "nft slot %zu", i);
  CHECK (strcmp (curl_easy_strerror (CURLE_OK), "No error") == 0);
  struct archive *a = archive_read_new ();
  CHECK (a != NULL);
  archive_read_free (a);
}

UNIT_MAIN_BEGIN ("test-dl")
RUN_TEST (test_missing_library);
RUN_TEST (test_missing_symbol);
RUN_TEST (test_loads);
RUN_TEST (test_real_tables);
UNIT_MAIN_END
