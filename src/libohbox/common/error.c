/* error.c: see error.h. */
#include "config.h"
#include "common/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
vformat (const char *fmt, va_list ap)
{
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    return NULL;
  return s;
}

/* Keeps a message readable whatever it names (a path may be megabytes
 * long, a chain of prefixes may repeat one per level): at most
 * OHBOX_ERROR_MSG_MAX bytes, its head and tail kept, cut on UTF-8
 * character boundaries. Takes over MSG. */
static char *
bound (char *msg)
{
  size_t len = strlen (msg);
  if (len <= OHBOX_ERROR_MSG_MAX)
    return msg;
  size_t keep = (OHBOX_ERROR_MSG_MAX - 64) / 2;
  size_t head = keep, tail = len - keep;
  while (head > 0 && ((unsigned char) msg[head] & 0xc0) == 0x80)
    head--;
  while (tail < len && ((unsigned char) msg[tail] & 0xc0) == 0x80)
    tail++;
  char *out = NULL;
  if (asprintf (&out, "%.*s [... %zu bytes ...] %s", (int) head, msg, tail - head, msg + tail) < 0)
    abort ();
  free (msg);
  return out;
}

int
ohbox_error_v (ohbox_error_t *err, int kind, int errno_value, const char *fmt, va_list ap)
{
  if (err == NULL)
    return -1;
  /* An error already set is kept: the first cause is the most useful one. */
  if (*err != NULL)
    return -1;
  struct ohbox_error_s *e = calloc (1, sizeof *e);
  if (e == NULL)
    abort ();
  e->kind = kind;
  e->errno_value = errno_value;
  char *base = vformat (fmt, ap);
  if (base == NULL)
    abort ();
  if (errno_value != 0)
    {
      char *full = NULL;
      if (asprintf (&full, "%s: %s", base, strerror (errno_value)) < 0)
        abort ();
      free (base);
      base = full;
    }
  e->msg = bound (base);
  *err = e;
  return -1;
}

int
ohbox_error (ohbox_error_t *err, int kind, int errno_value, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  ohbox_error_v (err, kind, errno_value, fmt, ap);
  va_end (ap);
  return -1;
}

static int
kind_from_errno (int e)
{
  switch (e)
    {
    case ENOSPC:
    case EDQUOT:
    case EIO:
    case EACCES:
    case EPERM:
    case EROFS:
    case EMFILE:
    case ENFILE:
    case EWOULDBLOCK:
      return OHBOX_ERR_STORE;
    case ENOENT:
      return OHBOX_ERR_NOT_FOUND;
    default:
      return OHBOX_ERR_GENERIC;
    }
}

int
ohbox_error_errno (ohbox_error_t *err, const char *fmt, ...)
{
  int saved = errno;
  va_list ap;
  va_start (ap, fmt);
  ohbox_error_v (err, kind_from_errno (saved), saved, fmt, ap);
  va_end (ap);
  errno = saved;
  return -1;
}

int
ohbox_error_sys (ohbox_error_t *err, int kind, const char *fmt, ...)
{
  int saved = errno;
  va_list ap;
  va_start (ap, fmt);
  ohbox_error_v (err, saved == ENOENT ? OHBOX_ERR_NOT_FOUND : kind, saved, fmt, ap);
  va_end (ap);
  errno = saved;
  return -1;
}

int
ohbox_error_rekind (ohbox_error_t *err, int kind)
{
  if (err && *err && (*err)->errno_value != 0 && (*err)->kind != OHBOX_ERR_NOT_FOUND)
    (*err)->kind = kind;
  return -1;
}

int
ohbox_error_prefix (ohbox_error_t *err, const char *fmt, ...)
{
  if (err == NULL || *err == NULL)
    return -1;
  va_list ap;
  va_start (ap, fmt);
  char *prefix = vformat (fmt, ap);
  va_end (ap);
  if (prefix == NULL)
    abort ();
  char *full = NULL;
  if (asprintf (&full, "%s: %s", prefix, (*err)->msg) < 0)
    abort ();
  free (prefix);
  free ((*err)->msg);
  (*err)->msg = bound (full);
  return -1;
}

int
ohbox_error_hint (ohbox_error_t *err, const char *fmt, ...)
{
  if (err == NULL || *err == NULL)
    return -1;
  va_list ap;
  va_start (ap, fmt);
  char *hint = vformat (fmt, ap);
  va_end (ap);
  if (hint == NULL)
    abort ();
  char *full = NULL;
  if (asprintf (&full, "%s; %s", (*err)->msg, hint) < 0)
    abort ();
  free (hint);
  free ((*err)->msg);
  (*err)->msg = bound (full);
  return -1;
}

void
ohbox_error_release (ohbox_error_t *err)
{
  if (err == NULL || *err == NULL)
    return;
  free ((*err)->msg);
  free (*err);
  *err = NULL;
}

void
ohbox_error_move (ohbox_error_t *to, ohbox_error_t *from)
{
  ohbox_error_release (to);
  *to = *from;
  *from = NULL;
}

#ifdef __SANITIZE_ADDRESS__
/* The sanitizer build (configure --enable-sanitizers) compiles UBSan's checks
 * as traps: ASan reports the SIGILL of one as its own errors, with the
 * stack (the check's source line on top) and exit status 1.  Compiled into
 * every program of that build, as their environment may be emptied (a
 * sandbox's executor). */
const char *__asan_default_options (void);
const char *
__asan_default_options (void)
{
  return "handle_sigill=1";
}
#endif
