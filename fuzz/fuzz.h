/* fuzz.h: helpers shared by the libFuzzer targets (fuzz/fuzz-*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput and feeds the bytes to one
 * parser.  A target must never leak, must release every error it gets, and
 * checks what the parser promises (e.g. a layer never writes outside its
 * directory) with FUZZ_CHECK, which aborts so that libFuzzer records the
 * input as a crash. */
#ifndef OHBOX_FUZZ_H
#define OHBOX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>

#include "common/error.h"

#include "common/utils.h"

#define FUZZ_CHECK(cond, ...)                                                                                          \
  do                                                                                                                   \
    {                                                                                                                  \
      if (!(cond))                                                                                                     \
        {                                                                                                              \
          fprintf (stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                             \
          fprintf (stderr, __VA_ARGS__);                                                                               \
          fputc ('\n', stderr);                                                                                        \
          abort ();                                                                                                    \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

/* The input as a NUL-terminated string (parsers of text take C strings; an
 * embedded NUL simply ends the text early).  Caller frees. */
static inline char *
fuzz_cstring (const uint8_t *data, size_t size)
{
  char *s = xmalloc (size + 1);
  memcpy (s, data, size);
  s[size] = '\0';
  return s;
}

/* Points every variable the credential and configuration lookups read at a
 * directory that does not exist, so that no target ever reads the host's
 * files (auth.json, registries.conf) and results do not depend on them. */
static inline void
fuzz_isolate_environment (void)
{
  const char *none = "/nonexistent/ohbox-fuzz";
  setenv ("HOME", none, 1);
  setenv ("XDG_RUNTIME_DIR", none, 1);
  setenv ("XDG_CONFIG_HOME", none, 1);
  setenv ("DOCKER_CONFIG", none, 1);
  unsetenv ("REGISTRY_AUTH_FILE");
  unsetenv ("CONTAINERS_REGISTRIES_CONF");
}

/* A fresh directory under $TMPDIR (or /tmp) for the whole run, removed at
 * exit (libFuzzer exits through exit() when a run ends normally). */
static char *fuzz_tempdir_path;

static inline void
fuzz_tempdir_remove (void)
{
  cleanup_error ohbox_error_t err = NULL;
  if (fuzz_tempdir_path)
    ohbox_rm_rf_at (AT_FDCWD, fuzz_tempdir_path, &err);
}

static inline const char *
fuzz_tempdir (const char *name)
{
  if (fuzz_tempdir_path)
    return fuzz_tempdir_path;
  const char *tmp = getenv ("TMPDIR");
  fuzz_tempdir_path = xasprintf ("%s/ohbox-fuzz-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
  if (mkdtemp (fuzz_tempdir_path) == NULL)
    {
      perror ("mkdtemp");
      abort ();
    }
  atexit (fuzz_tempdir_remove);
  return fuzz_tempdir_path;
}

#endif
