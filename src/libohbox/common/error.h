/* error.h: the error object every fallible libohbox function fills.
 *
 * Contract: a fallible function returns a negative int (or NULL) and fills
 * `*err` (the last argument) with a kind, the errno that caused it (0 when
 * none) and a message that names the object and the operation, e.g.
 * "open `/var/lib/ohbox/blobs`: Permission denied". Callers add context with
 * ohbox_error_prefix(). Library code never prints and never exits. */
#ifndef OHBOX_ERROR_H
#define OHBOX_ERROR_H

#include <stdarg.h>

/* Kinds map 1:1 to the documented CLI exit codes (man/ohbox.1). */
enum ohbox_error_kind
{
  OHBOX_ERR_GENERIC = 1,      /* anything else */
  OHBOX_ERR_USAGE = 2,        /* bad arguments, bad input syntax */
  OHBOX_ERR_NOT_FOUND = 3,    /* image, tag, manifest or blob does not exist */
  OHBOX_ERR_AUTH = 4,         /* authentication or authorization refused */
  OHBOX_ERR_REGISTRY = 5,     /* network, TLS, HTTP error from a registry */
  OHBOX_ERR_INTEGRITY = 6,    /* digest/size mismatch, unsafe or corrupt layer */
  OHBOX_ERR_STORE = 7,        /* local storage: I/O, disk full, permissions, locks */
  OHBOX_ERR_UNSUPPORTED = 8,  /* valid input ohbox does not support (schema1, platform) */
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
/* Same as ohbox_error with errno_value = errno and kind from errno
 * (ENOSPC/EDQUOT/EIO/EACCES/EPERM/EROFS -> STORE, ENOENT -> NOT_FOUND, else GENERIC). */
int ohbox_error_errno (ohbox_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
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
