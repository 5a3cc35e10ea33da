/* dl.h: shared libraries loaded on first use (dlopen), not at exec time.
 *
 * libcurl, libarchive and libnftables together map ~45 shared libraries
 * (GnuTLS, Kerberos, LDAP, libssh2, libxml2, ICU, libstdc++, ...), and
 * libcrypto alone has 21,000 relocations.  Linked normally, every `ohbox
 * run`, `exec`, `ps` and every sandbox monitor pays for mapping and
 * relocating them although only pull, push, build, the network setup and
 * digests use them.  Each library gets a table of function pointers
 * (dl_curl.h, dl_archive.h, dl_nft.h, dl_crypto.h) filled once, under
 * pthread_once, by
 * ohbox_dl_open_many; the code that uses the library calls its
 * ohbox_dl_LIB_load () at its entry points and otherwise calls the
 * functions by their usual names (the headers map the names onto the
 * table).  The sonames come from configure (the -dev packages' link
 * names), so the loaded library is the one the headers describe. */
#ifndef OHBOX_DL_H
#define OHBOX_DL_H

#include <pthread.h>
#include <stddef.h>

#include "common/error.h"

/* One library: filled by ohbox_dl_load. */
struct ohbox_dl_library
{
  const char *soname;
  const char *needed_for;     /* "pulling and pushing images", for the message */
  const char *package;        /* the Debian package that ships it */
  const char *const *symbols; /* names of the table's slots, in order */
  size_t n_symbols;
  void **slots; /* the table (a struct of function pointers) */
  pthread_once_t once;
  void (*init) (void); /* calls ohbox_dl_open_many on this library */
  char *error;         /* why it cannot be used; NULL once loaded */
};

/* Opens LIB->soname and resolves every symbol into LIB->slots; on failure
 * leaves every slot NULL and LIB->error set.  Called from LIB->init only
 * (through pthread_once). */
void ohbox_dl_open_many (struct ohbox_dl_library *lib);

/* Loads LIB once (thread-safe); -1 with a message naming the soname when it
 * cannot be loaded or lacks a symbol. */
int ohbox_dl_load (struct ohbox_dl_library *lib, ohbox_error_t *err);

/* For the per-library headers: a struct field typed from the real
 * prototype, and the slot's name as a string. */
#define OHBOX_DL_FIELD(name) __typeof__ (name) *name;
#define OHBOX_DL_NAME(name) #name,

/* Declares, for the library's header, the table ohbox_dl_NAME of SYMBOLS (an
 * X-macro list): a struct of typed function pointers overlaid on the array of
 * slots ohbox_dl_open_many fills; and its loader ohbox_dl_NAME_load, which
 * returns -1 naming the missing soname or symbol. */
#define OHBOX_DL_ONE(name) +1
#define OHBOX_DL_DECLARE(NAME, SYMBOLS)                                                                                \
  union ohbox_dl_##NAME##_table                                                                                        \
  {                                                                                                                    \
    struct                                                                                                             \
    {                                                                                                                  \
      SYMBOLS (OHBOX_DL_FIELD)                                                                                         \
    };                                                                                                                 \
    void *slots[0 SYMBOLS (OHBOX_DL_ONE)];                                                                             \
  };                                                                                                                   \
  extern union ohbox_dl_##NAME##_table ohbox_dl_##NAME;                                                                \
  int ohbox_dl_##NAME##_load (ohbox_error_t *err)

/* Defines the table ohbox_dl_NAME of SYMBOLS (an X-macro list), the loader
 * ohbox_dl_NAME_load and the library's record; SONAME also goes into the
 * binary's `.ohbox.dlopen` section (NUL-separated), which tools that pack a
 * program with its libraries read since ldd cannot see a dlopen
 * (executor/closure.sh, the cgroup v2 guest's payload). NEEDED_FOR and
 * PACKAGE make the error when it cannot be loaded say why and what to
 * install. */
#define OHBOX_DL_DEFINE(NAME, SYMBOLS, SONAME, NEEDED_FOR, PACKAGE)                                                    \
  union ohbox_dl_##NAME##_table ohbox_dl_##NAME;                                                                       \
  static const char *const symbols[] = { SYMBOLS (OHBOX_DL_NAME) };                                                    \
  _Static_assert(sizeof (symbols) / sizeof (symbols[0]) == sizeof (ohbox_dl_##NAME.slots) / sizeof (void *),           \
                 "one name per slot");                                                                                 \
  _Static_assert(sizeof (ohbox_dl_##NAME) == sizeof (ohbox_dl_##NAME.slots), "the table is an array of pointers");     \
  static const char dlopen_soname[] __attribute__ ((section (".ohbox.dlopen"), used)) = SONAME;                        \
  static void load (void);                                                                                             \
  static struct ohbox_dl_library library = {                                                                           \
    .soname = SONAME,                                                                                                  \
    .needed_for = NEEDED_FOR,                                                                                          \
    .package = PACKAGE,                                                                                                \
    .symbols = symbols,                                                                                                \
    .n_symbols = sizeof (symbols) / sizeof (symbols[0]),                                                               \
    .slots = ohbox_dl_##NAME.slots,                                                                                    \
    .once = PTHREAD_ONCE_INIT,                                                                                         \
    .init = load,                                                                                                      \
  };                                                                                                                   \
  static void load (void) { ohbox_dl_open_many (&library); }                                                           \
  int ohbox_dl_##NAME##_load (ohbox_error_t *err) { return ohbox_dl_load (&library, err); }

#endif
