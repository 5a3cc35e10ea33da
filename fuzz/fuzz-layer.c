/* fuzz-layer.c: image layers (ohbox_layer_unpack): tar, gzip and zstd
 * streams unpacked for real into a fresh directory, unprivileged (no chown,
 * no device nodes, user.* xattrs).  Beyond memory safety the target checks
 * layer.h's promise that nothing is ever created outside the layer
 * directory (escape-check.h), and that a successful unpack reports a
 * well-formed DiffID. */
#include "config.h"

#include <sys/mman.h>
#include <unistd.h>

#include "escape-check.h"
#include "image/layer.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);

static const char *root;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  root = fuzz_tempdir ("layer");
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cleanup_close int blob = memfd_create ("fuzz-layer", MFD_CLOEXEC);
  FUZZ_CHECK (blob >= 0, "memfd_create");
  FUZZ_CHECK (ohbox_write_all (blob, data, size) == 0, "write the blob");
  FUZZ_CHECK (lseek (blob, 0, SEEK_SET) == 0, "lseek");

  cleanup_free char *dest = escape_prepare (root);
  cleanup_close int destfd = open (dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FUZZ_CHECK (destfd >= 0, "open %s", dest);

  /* Small bound: a bomb must stop at it, not fill the disk. */
  struct ohbox_layer_options opts = { 0 };
  opts.max_uncompressed = 16 * 1024 * 1024;
  char diffid[OHBOX_DIGEST_LEN + 1];
  struct ohbox_layer_stats stats;
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_layer_unpack (blob, destfd, &opts, diffid, &stats, &err) == 0)
    {
      FUZZ_CHECK (strncmp (diffid, "sha256:", 7) == 0 && strlen (diffid) == OHBOX_DIGEST_LEN, "DiffID `%s`", diffid);
      FUZZ_CHECK (stats.uncompressed_size <= opts.max_uncompressed, "%llu bytes over the bound",
                  (unsigned long long) stats.uncompressed_size);
    }
  else
    FUZZ_CHECK (err != NULL && err->msg != NULL, "failure without an error");
  escape_check_and_reset (root);
  return 0;
}
