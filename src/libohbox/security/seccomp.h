/* seccomp.h: Docker/moby-format seccomp profiles compiled to a BPF program.
 *
 * Two halves, split around fork/clone:
 *  - in the parent, ohbox_seccomp_compile_file() reads a profile (bounded),
 *    evaluates its includes/excludes against the sandbox's final capability
 *    set, the host architecture and the kernel version, and compiles it with
 *    libseccomp into a finished BPF program held in memory;
 *  - in the child, ohbox_seccomp_load() only hands that program to the
 *    kernel: no allocation, no libseccomp, async-signal-safe.
 *
 * Profile format (docs.docker.com "Seccomp security profiles for Docker"):
 * defaultAction, defaultErrnoRet, archMap or architectures, flags, syscalls[]
 * with name/names, action, errnoRet, args[] {index, value, valueTwo, op},
 * includes/excludes {caps, arches, minKernel}. Unknown keys are ignored as
 * Docker does ("comment"); known keys are type-checked. Caps in
 * includes/excludes are matched against OPTS->caps like Docker matches the
 * bounding set; arches against the host in Docker's names ("amd64",
 * "arm64"). Syscall names this libseccomp does not know are skipped. When
 * the default action is SCMP_ACT_ERRNO, system calls numbered above every
 * call the profile names (newer than the profile and this libseccomp) fail
 * with ENOSYS instead, so that libc falls back to older calls as it does on
 * older kernels (runc does the same).
 *
 * The built-in default profile (PATH NULL) is $(pkgdatadir)/seccomp/default.json
 * when that file exists, otherwise the copy of seccomp-profiles/default.json
 * compiled into the library. It blocks io_uring: see that file.
 *
 * no_new_privs: loading a filter needs no_new_privs or CAP_SYS_ADMIN in the
 * loading task's user namespace. The capabilities module sets no_new_privs
 * (ohbox_caps_apply), when asked. The order in the child (as runc and crun):
 *   - no_new_privs off (the default, as Docker, so that sudo works):
 *     ohbox_seccomp_load() while the task still holds every capability of
 *     the sandbox's user namespace, then ohbox_caps_apply(), chdir,
 *     execve(). The filter therefore also covers the id and capability
 *     calls of ohbox_caps_apply (the default profile allows them);
 *   - no_new_privs on: ohbox_caps_apply(), chdir, ohbox_seccomp_load(),
 *     execve(): the filter needs no privilege then, and may deny even the
 *     calls of ohbox_caps_apply.
 * Either way the filter is in force from the execve on and, a filter being
 * permanent, in every process started after it (setuid ones included). */
#ifndef OHBOX_SECCOMP_H
#define OHBOX_SECCOMP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Bounds on what a profile may contain (attacker-controlled input). */
#define OHBOX_SECCOMP_MAX_PROFILE_SIZE (1024 * 1024)
#define OHBOX_SECCOMP_MAX_RULES 4096  /* entries in syscalls[] */
#define OHBOX_SECCOMP_MAX_NAMES 16384 /* syscall names over all entries */

struct ohbox_seccomp_options
{
  /* The sandbox's final capability set, bit N for capability N (the
     bounding set the process ends with; see ohbox_caps_sets). */
  uint64_t caps;
  /* Kernel release for minKernel, e.g. "6.1.0"; NULL: uname(2). */
  const char *kernel_release;
  /* Where to keep compiled programs (created 0700 if missing), or NULL.
   * Compiling the default profile for x86_64 + x86 + x32 takes ~15 ms of
   * libseccomp time; a cached program loads in well under 1 ms. Entries
   * are keyed by the sha256 of everything that changes the result (the
   * profile bytes, caps, kernel version, host arch, libseccomp and ohbox
   * versions), so stale ones are never used; the directory must be as
   * trusted as the runtime's state (e.g. /run/ohbox/seccomp-cache). A
   * broken cache is ignored, never an error. */
  const char *cache_dir;
};

/* A compiled filter; opaque. */
struct ohbox_seccomp_filter;

/* Reads and compiles the profile at PATH (NULL: the built-in default).
 * Errors name the file and the offending element ("syscalls[3].action"):
 * OHBOX_ERR_USAGE for an invalid profile, OHBOX_ERR_UNSUPPORTED for a valid
 * one ohbox cannot apply (SCMP_ACT_NOTIFY, unknown flags). */
int ohbox_seccomp_compile_file (const char *path, const struct ohbox_seccomp_options *opts,
                                struct ohbox_seccomp_filter **ret, ohbox_error_t *err);
/* Same from a JSON buffer; NAME names it in messages. */
int ohbox_seccomp_compile_json (const char *json, size_t len, const char *name,
                                const struct ohbox_seccomp_options *opts, struct ohbox_seccomp_filter **ret,
                                ohbox_error_t *err);
void ohbox_seccomp_filter_free (struct ohbox_seccomp_filter *f);
/* The compiled filter as a file DIRFD/NAME (no fsync: for the sandbox's
 * state dir under /run, where `ohbox exec` finds the filter its sandbox
 * started with without reading and hashing the profile again), and back:
 * load returns -1, without an error, when the file is missing or invalid. */
int ohbox_seccomp_filter_save (int dirfd, const char *name, const struct ohbox_seccomp_filter *f, ohbox_error_t *err);
int ohbox_seccomp_filter_load (int dirfd, const char *name, struct ohbox_seccomp_filter **ret);
/* Number of BPF instructions, for diagnostics. */
size_t ohbox_seccomp_filter_size (const struct ohbox_seccomp_filter *f);

/* In the child: installs F for the calling thread (and its future
 * children). No allocation, async-signal-safe. On failure returns -1 with
 * errno set and *RET_STEP naming the failed call (a static string). */
int ohbox_seccomp_load (const struct ohbox_seccomp_filter *f, const char **ret_step);

/* The compiled-in default profile (JSON text, NUL-terminated). */
const char *ohbox_seccomp_builtin_profile (size_t *ret_len);

#endif

/* seccomp.c also needs libseccomp's <seccomp.h>, which this header shadows
 * under -I src/libohbox: there it defines OHBOX_SECCOMP_WANT_LIBSECCOMP and
 * includes <seccomp.h>, which lands here and goes on to the next one. */
#if defined OHBOX_SECCOMP_WANT_LIBSECCOMP && !defined OHBOX_SECCOMP_HAVE_LIBSECCOMP
#define OHBOX_SECCOMP_HAVE_LIBSECCOMP 1
#include_next <seccomp.h>
#endif
