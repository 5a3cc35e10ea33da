/* seccomp_internal.h: shared by the two halves of the seccomp module:
 * seccomp.c turns a profile into a libseccomp context, seccomp_bpf.c turns
 * that into the final program (ENOSYS stub, export, cache) and loads it in
 * the child. */
#ifndef OHBOX_SECCOMP_INTERNAL_H
#define OHBOX_SECCOMP_INTERNAL_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/utils.h"
#include "common/error.h"
#include "security/seccomp.h"

struct ohbox_seccomp_filter
{
  struct sock_fprog prog;
  unsigned int flags; /* SECCOMP_FILTER_FLAG_* */
};

/* An architecture of the filter (a libseccomp token, which is its
 * AUDIT_ARCH_* value) and the highest system call number the profile
 * names on it; -1 leaves it out of the ENOSYS stub. */
struct ohbox_seccomp_arch
{
  uint32_t token;
  long max_nr;
};

/* Whether the ENOSYS stub can cover TOKEN (plain system call numbers). */
bool ohbox_seccomp_stub_covers (uint32_t token);

/* Exports CTX (a scmp_filter_ctx) into *RET, behind the ENOSYS stub for
 * ARCHES when WITH_STUB. NAME names the profile in errors. */
int ohbox_seccomp_export (void *ctx, const char *name, const struct ohbox_seccomp_arch *arches, size_t n_arches,
                          bool with_stub, unsigned int flags, struct ohbox_seccomp_filter **ret, ohbox_error_t *err);

/* The cache of compiled programs (see ohbox_seccomp_options.cache_dir):
 * an entry is found by BUCKET (a file name) and used only when it holds
 * exactly TEXT (what the program is compiled from). */
struct ohbox_seccomp_cache_key
{
  struct ohbox_buf text;
  char bucket[64];
};
void ohbox_seccomp_cache_key (const char *json, size_t len, uint32_t native, const int kernel[3], uint64_t caps,
                              struct ohbox_seccomp_cache_key *key);
void ohbox_seccomp_cache_key_free (struct ohbox_seccomp_cache_key *key);
#define cleanup_seccomp_cache_key __attribute__ ((cleanup (ohbox_seccomp_cache_key_free)))
/* 0 and *RET on a hit; -1 when missing, another key's or unusable (compile again). */
int ohbox_seccomp_cache_load (const char *dir, const struct ohbox_seccomp_cache_key *key,
                              struct ohbox_seccomp_filter **ret);
/* Best effort: failures only mean the next run compiles again. */
void ohbox_seccomp_cache_store (const char *dir, const struct ohbox_seccomp_cache_key *key,
                                const struct ohbox_seccomp_filter *f);

#endif
