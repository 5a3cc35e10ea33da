/* error.h: the error object every fallible libohbox function fills.
 *
 * Contract: a fallible function returns a negative int (or NULL) and fills
 * `*err` (the last argument) with a kind, the errno that caused it (0 when
 * none) and a message that names the object and the operation, e.g.
 * "open `/var/lib/ohbox/blobs`: Permission denied". Callers add context with
 * ohbox_error_prefix(). Library code never prints and never exits.
 *
 * The kind says where the failure came from, and the module that fails
 * chooses it: sandbox code OHBOX_ERR_SANDBOX, network code
 * OHBOX_ERR_NETWORK, cgroup code OHBOX_ERR_CGROUP, seccomp and capability
 * code OHBOX_ERR_SECURITY, registry code OHBOX_ERR_REGISTRY or AUTH, and
 * USAGE / NOT_FOUND / UNSUPPORTED wherever the caller's input is the cause.
 * A failed system call is reported with ohbox_error_sys (the module's kind
 * and errno). Only store code (store/, image/, build/ and the file helpers
 * of common/utils.c, whose failures are I/O on the store or on files the
 * caller named) lets errno decide the kind, with ohbox_error_errno: an
 * EACCES there is a store the user cannot write (exit 7), an EPERM from
 * kill(2) or mount(2) is not. tests/check-error-kinds.sh keeps it so. */
#ifndef OHBOX_ERROR_H
#define OHBOX_ERROR_H

#include <stdarg.h>

/* Kinds map 1:1 to the documented CLI exit codes (man/ohbox.1). */
enum ohbox_error_kind
{
  OHBOX_ERR_GENERIC = 1,     /* anything else */
  OHBOX_ERR_USAGE = 2,       /* bad arguments, bad input syntax */
  OHBOX_ERR_NOT_FOUND = 3,   /* image, tag, manifest or blob does not exist */
  OHBOX_ERR_AUTH = 4,        /* authentication or authorization refused */
  OHBOX_ERR_REGISTRY = 5,    /* network, TLS, HTTP error from a registry */
  OHBOX_ERR_INTEGRITY = 6,   /* digest/size mismatch, unsafe or corrupt layer */
  OHBOX_ERR_STORE = 7,       /* local storage: I/O, disk full, permissions, locks */
  OHBOX_ERR_UNSUPPORTED = 8, /* valid input ohbox does not support (schema1, platform) */
  OHBOX_ERR_SANDBOX = 9,     /* namespaces, mounts, processes, signals, a sandbox's state */
  OHBOX_ERR_NETWORK = 10,    /* a sandbox's network: bridge, veth, nftables, ports, pasta */
  OHBOX_ERR_CGROUP = 11,     /* cgroups: creating, limits, freezing, statistics */
  OHBOX_ERR_SECURITY = 12,   /* seccomp, capabilities, no_new_privs */
};

/* Messages longer than this are shortened in the middle (error.c). */
#define OHBOX_ERROR_MSG_MAX 4096

struct ohbox_error_s
{
  int kind;
  int errno_value;
  char *msg;
};
typedef struct ohbox_error_s *ohbox_error_t;

/* Fills *err (freeing nothing: *err must be NULL) and returns -1.
 * With errno_value != 0 ": strerror(errno_value)" is appended. */
int ohbox_error (ohbox_error_t *err, int kind, int errno_value, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));
/* A failed system call in a module: ohbox_error with errno_value = errno
 * and the module's KIND (OHBOX_ERR_NOT_FOUND when errno is ENOENT: what
 * was named does not exist, whoever looked); errno is preserved. */
int ohbox_error_sys (ohbox_error_t *err, int kind, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));
/* Store code only (see above): ohbox_error with errno_value = errno and the
 * kind from errno (ENOSPC/EDQUOT/EIO/EACCES/EPERM/EROFS/EMFILE/ENFILE/
 * EWOULDBLOCK -> STORE, ENOENT -> NOT_FOUND, else GENERIC). */
int ohbox_error_errno (ohbox_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* For a module that used a file helper of common/utils.c (whose kind errno
 * decided) on a file of its own, e.g. cgroup code reading a cgroup file:
 * the error of a failed system call gets the module's KIND (NOT_FOUND
 * stays); other errors are kept. Returns -1. */
int ohbox_error_rekind (ohbox_error_t *err, int kind);
int ohbox_error_v (ohbox_error_t *err, int kind, int errno_value, const char *fmt, va_list ap);
/* Prepends "PREFIX: " to the message of an existing error; returns -1. */
int ohbox_error_prefix (ohbox_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* Appends "; HINT" (e.g. what to do) to an existing error; returns -1. */
int ohbox_error_hint (ohbox_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
void ohbox_error_release (ohbox_error_t *err);
/* Moves *from into *to (which must be empty). */
void ohbox_error_move (ohbox_error_t *to, ohbox_error_t *from);

static inline void
cleanup_error_fn (ohbox_error_t *err)
{
  ohbox_error_release (err);
}
#define cleanup_error __attribute__ ((cleanup (cleanup_error_fn)))

#endif
