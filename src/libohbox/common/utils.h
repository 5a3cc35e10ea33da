/* utils.h: cleanup helpers, allocation that aborts on OOM, and the safe file
 * primitives used across libohbox (atomic writes, bounded reads, recursive
 * removal without following symlinks, openat2 in-root resolution, locks). */
#ifndef OHBOX_UTILS_H
#define OHBOX_UTILS_H

#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/error.h"

#define OHBOX_UNUSED __attribute__ ((unused))

static inline void
cleanup_free_fn (void *p)
{
  free (*(void **) p);
}
#define cleanup_free __attribute__ ((cleanup (cleanup_free_fn)))

static inline void
cleanup_close_fn (int *fd)
{
  if (*fd >= 0)
    close (*fd);
}
#define cleanup_close __attribute__ ((cleanup (cleanup_close_fn)))

static inline void
cleanup_file_fn (FILE **f)
{
  if (*f)
    fclose (*f);
}
#define cleanup_file __attribute__ ((cleanup (cleanup_file_fn)))

static inline void
cleanup_dir_fn (DIR **d)
{
  if (*d)
    closedir (*d);
}
#define cleanup_dir __attribute__ ((cleanup (cleanup_dir_fn)))

/* Hands ownership out of a cleanup variable. */
#define steal_pointer(pp)                                                                                              \
  ({                                                                                                                   \
    __typeof__ (*(pp)) _p = *(pp);                                                                                     \
    *(pp) = NULL;                                                                                                      \
    _p;                                                                                                                \
  })
#define steal_fd(pfd)                                                                                                  \
  ({                                                                                                                   \
    int _fd = *(pfd);                                                                                                  \
    *(pfd) = -1;                                                                                                       \
    _fd;                                                                                                               \
  })

void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t m);
void *xrealloc (void *p, size_t n);
char *xstrdup (const char *s);
char *xstrndup (const char *s, size_t n);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
char *xvasprintf (const char *fmt, va_list ap) __attribute__ ((format (printf, 1, 0)));

/* A growable byte buffer, NUL-terminated for convenience. */
struct ohbox_buf
{
  char *data;
  size_t len;
  size_t cap;
};
void ohbox_buf_append (struct ohbox_buf *b, const void *data, size_t len);
void ohbox_buf_free (struct ohbox_buf *b);

/* Writes data to DIRFD/NAME atomically: a temporary file in the same
 * directory, fsync, rename over NAME, fsync of the directory. */
int ohbox_write_file_atomic (int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                             ohbox_error_t *err);
/* Replaces DIRFD/NAME by rename(2) of a temporary file, without fsync: for
 * state under /run, which describes live processes and is worthless after a
 * crash, where an fsync would cost milliseconds on every sandbox start. */
int ohbox_write_file_nosync (int dirfd, const char *name, const void *data, size_t len, ohbox_error_t *err);
/* The same with MODE instead of 0600 (files bind-mounted into a sandbox). */
int ohbox_write_file_nosync_mode (int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                                  ohbox_error_t *err);
/* Reads DIRFD/PATH (AT_FDCWD allowed) fully; fails with OHBOX_ERR_INTEGRITY if
 * larger than MAX bytes. *out is NUL-terminated. */
int ohbox_read_file_at (int dirfd, const char *path, size_t max, char **out, size_t *len, ohbox_error_t *err);
/* Reads FD to its end, bounded like ohbox_read_file_at; WHAT names it in errors. */
int ohbox_read_fd (int fd, const char *what, size_t max, char **out, size_t *len, ohbox_error_t *err);
/* Writes all of LEN bytes, retrying on EINTR and short writes. */
int ohbox_write_all (int fd, const void *data, size_t len);
/* A signal as users and image configs write it: 15, TERM, SIGTERM (any
 * case). -1 when it names no signal. */
int ohbox_signal_parse (const char *s, int *out);
/* One message of LEN bytes on the unix socket FD, with PASS_FD (when >= 0)
 * as SCM_RIGHTS. Returns what sendmsg returns (EINTR retried). */
ssize_t ohbox_send_with_fd (int fd, const void *data, size_t len, int pass_fd);
/* One message of at most MAX bytes from FD; *PASSED gets the fd sent with it
 * (close-on-exec) or -1. Returns what recvmsg returns (EINTR retried). */
ssize_t ohbox_recv_with_fd (int fd, void *buf, size_t max, int *passed);
/* mkdir -p relative to DIRFD (AT_FDCWD allowed); existing directories are fine. */
int ohbox_mkdir_p (int dirfd, const char *path, mode_t mode, ohbox_error_t *err);
/* Opens the directory PATH that holds the caller's private state (sandbox
 * state, network leases), creating what is missing with mode 0700, so that
 * no other local user can have put it there or redirect it: every
 * directory on the way from "/" is opened without following a symlink
 * (the path's links are resolved once, by realpath, where it exists) and
 * must belong to root or the caller, and be writable by nobody else unless
 * sticky (as /tmp); PATH itself must belong to the caller and be writable
 * by nobody else. Returns an O_DIRECTORY fd; OHBOX_ERR_STORE naming the
 * directory and what is wrong with it otherwise. */
int ohbox_private_dir_open (const char *path, ohbox_error_t *err);
/* Removes DIRFD/NAME recursively; never follows symlinks; missing is fine. */
int ohbox_rm_rf_at (int dirfd, const char *name, ohbox_error_t *err);
int ohbox_fsync_dir (int dirfd, const char *path);

/* openat2(2) with RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS (plus EXTRA_RESOLVE):
 * PATH is resolved with ROOTFD as "/", symlinks included, never escaping it. */
int ohbox_openat_in_root (int rootfd, const char *path, int flags, mode_t mode, uint64_t extra_resolve);
/* openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS (plus EXTRA). */
int ohbox_openat_beneath (int dirfd, const char *path, int flags, mode_t mode, uint64_t extra_resolve);

/* flock(2)-based lock on DIRFD/NAME (created if missing). Blocks unless
 * NONBLOCK, in which case it returns -2 without error when already held.
 * Returns the fd holding the lock. */
int ohbox_lock_file (int dirfd, const char *name, bool exclusive, bool nonblock, ohbox_error_t *err);

/* Current time as RFC 3339 UTC ("2026-11-22T10:00:00Z"). */
char *ohbox_now_rfc3339 (void);
/* Human-readable byte size ("1.5 MB"). BUF must hold 32 bytes. */
const char *ohbox_format_size (uint64_t bytes, char *buf);
/* Monotonic clock in seconds. */
double ohbox_monotonic (void);
/* Undoes in place the octal escapes of /proc/PID/mountinfo's fields (\040
 * for a space, \011, \012, \134). */
void ohbox_mountinfo_unescape (char *s);
/* GIVEN equals the secret EXPECTED (a key, a token), compared in time that
 * depends only on EXPECTED's length; false when GIVEN is NULL. */
bool ohbox_secret_equal (const char *expected, const char *given);
/* With OHBOX_TRACE_START set in the environment: "ohbox-trace MS PID WHAT"
 * on stderr, MS since the first trace of the process tree (the children of
 * a start inherit its origin). For bench/start-phases.sh; otherwise one
 * getenv per process. */
void ohbox_trace (const char *what);

/* Runs the program PATH with ARGV and ENVP (NULL: this process's
 * environment), stdin /dev/null, no descriptor of ours but its stdout and
 * stderr, both into SAID: at most SIZE - 1 bytes of what it wrote, lines
 * joined by ";" (the rest is read and dropped: it never blocks on a full
 * pipe). *STATUS gets its wait status. -1 with ERR (kind KIND) only when it
 * could not be started or waited for. */
int ohbox_run_helper (const char *path, char *const argv[], char *const envp[], char *said, size_t size, int *status,
                      int kind, ohbox_error_t *err);

#endif
