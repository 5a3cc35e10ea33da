/* fuzz-seccomp.c: seccomp profiles in Docker's JSON format
 * (ohbox_seccomp_compile_json): parsing, include/exclude evaluation and
 * compilation with libseccomp.  The filter is compiled, never loaded.  The
 * first byte picks the capability set (none, Docker's default set, all) so
 * that includes/excludes take both branches. */
#include "config.h"

#include "fuzz.h"
#include "security/seccomp.h"

/* Docker's default bounding set: CHOWN DAC_OVERRIDE FOWNER FSETID KILL
 * SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD
 * AUDIT_WRITE SETFCAP. */
#define DOCKER_CAPS                                                                                                    \
  ((1ULL << 0) | (1ULL << 1) | (1ULL << 3) | (1ULL << 4) | (1ULL << 5) | (1ULL << 6) | (1ULL << 7) | (1ULL << 8)       \
   | (1ULL << 10) | (1ULL << 13) | (1ULL << 18) | (1ULL << 27) | (1ULL << 29) | (1ULL << 31))

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  static const uint64_t caps[] = { 0, DOCKER_CAPS, ~0ULL };
  static const char *const kernels[] = { "6.1.0", "4.4.0-generic", "junk" };
  struct ohbox_seccomp_options opts = { 0 };
  opts.caps = caps[data[0] % 3];
  opts.kernel_release = kernels[(data[0] / 3) % 3];

  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_seccomp_filter *f = NULL;
  if (ohbox_seccomp_compile_json ((const char *) data + 1, size - 1, "fuzz.json", &opts, &f, &err) < 0)
    {
      FUZZ_CHECK (err != NULL && err->msg != NULL && f == NULL, "failure without an error");
      FUZZ_CHECK (err->kind == OHBOX_ERR_USAGE || err->kind == OHBOX_ERR_UNSUPPORTED, "kind %d: %s", err->kind,
                  err->msg);
      return 0;
    }
  /* A classic BPF program holds at most BPF_MAXINSNS (4096) instructions. */
  size_t n = ohbox_seccomp_filter_size (f);
  FUZZ_CHECK (n > 0 && n <= 4096, "%zu instructions", n);
  ohbox_seccomp_filter_free (f);
  return 0;
}
