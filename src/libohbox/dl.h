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

#include "error.h"

/* One library: filled by ohbox_dl_load. */
struct ohbox_dl_library
{
  const char *soname;
  const char *needed_for;     /* "pulling and pushing images", for the message */
  const char *package;        /* the Debian package that ships it */
  const char *const *symbols; /* names of the table's slots, in order */
  size_t n_symbols;
  void **slots;               /* the table (a struct of function pointers) */
  pthread_once_t once;
  void (*init) (void);        /* calls ohbox_dl_open_many on this library */
  char *error;                /* why it cannot be used; NULL once loaded */
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

#endif
