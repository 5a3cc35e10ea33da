/* fuzz-authfile.c: auth.json as containers-auth.json(5) and docker's
 * config.json write it (src/libohbox/registry/authfile.c).  The input is the file:
 * it is looked up for a few registries, then an entry is stored into it and
 * removed again, which must keep the promises of authfile.h (a stored entry
 * is found; a malformed file is left untouched). */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/authfile.h"
#include "fuzz.h"

static char *path;

int LLVMFuzzerInitialize (int *argc, char ***argv);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_isolate_environment ();
  path = xasprintf ("%s/auth.json", fuzz_tempdir ("authfile"));
  return 0;
}

static void
write_input (const uint8_t *data, size_t size)
{
  cleanup_close int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK (fd >= 0, "cannot create %s", path);
  FUZZ_CHECK (ohbox_write_all (fd, data, size) == 0, "cannot write %s", path);
}

static void
lookup (const char *registry, const char *repository)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_credentials *c = NULL;
  if (ohbox_authfile_lookup (path, registry, repository, &c, &err) < 0)
    FUZZ_CHECK (err != NULL && err->msg != NULL && c == NULL, "failure without an error");
  else if (c)
    FUZZ_CHECK (c->username != NULL && c->password != NULL, "incomplete credentials");
  ohbox_credentials_free (c);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  write_input (data, size);
  lookup ("docker.io", "library/busybox");
  lookup ("localhost:5000", "ns/img");
  lookup ("quay.io", "");

  /* Store, find, remove. */
  struct ohbox_credentials mine = { (char *) "fuzz-user", (char *) "pass:word" };
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_authfile_store (path, "registry.fuzz.example:5000", &mine, &err) < 0)
    {
      FUZZ_CHECK (err != NULL && err->msg != NULL, "store failed without an error");
      /* "A malformed file is an error and is left untouched." */
      cleanup_free char *after = NULL;
      size_t len = 0;
      cleanup_error ohbox_error_t rerr = NULL;
      FUZZ_CHECK (ohbox_read_file_at (AT_FDCWD, path, 64 << 20, &after, &len, &rerr) == 0, "file gone: %s",
                  rerr ? rerr->msg : "?");
      FUZZ_CHECK (len == size && memcmp (after, data, size) == 0, "store failed but changed the file");
      return 0;
    }
  struct ohbox_credentials *found = NULL;
  cleanup_error ohbox_error_t lerr = NULL;
  FUZZ_CHECK (ohbox_authfile_lookup (path, "registry.fuzz.example:5000", "", &found, &lerr) == 0,
              "stored file does not load: %s", lerr ? lerr->msg : "?");
  FUZZ_CHECK (found != NULL && strcmp (found->username, "fuzz-user") == 0 && strcmp (found->password, "pass:word") == 0,
              "stored credentials not found");
  ohbox_credentials_free (found);
  cleanup_error ohbox_error_t rmerr = NULL;
  FUZZ_CHECK (ohbox_authfile_remove (path, "registry.fuzz.example:5000", &rmerr) == 1, "remove: %s",
              rmerr ? rmerr->msg : "did not find the entry");
  return 0;
}
