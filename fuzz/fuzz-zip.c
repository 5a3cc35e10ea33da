/* fuzz-zip.c: zip uploads of the executor (POST /upload_file with a zip,
 * executor/archive.c: upload_begin, upload_data, upload_finish), unpacked
 * for real into a fresh directory.  Checks that nothing lands outside the
 * destination (escape-check.h) and that the temporary upload file is gone
 * (budgets: executor.max_unpacked, max_zip_entries).
 *
 * The multipart body around the upload is parsed by libmicrohttpd's post
 * processor inside server.c (a static callback of the running server), so it
 * is not fuzzed here. */
#include "config.h"

#include <jansson.h>

#include "escape-check.h"
#include "executor.h"
#include "server.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);

static const char *root;
static struct executor ex;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  root = fuzz_tempdir ("zip");
  ex.max_upload = 4 * 1024 * 1024;
  ex.max_unpacked = 16 * 1024 * 1024;
  ex.max_zip_entries = 4096;
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cleanup_free char *dest = escape_prepare (root);
  struct upload *u = NULL;
  int status = 0;
  cleanup_free char *detail = NULL;

  FUZZ_CHECK (upload_begin (&ex, dest, "fuzz.zip", true, &u, &status, &detail) == 0, "upload_begin: %d %s", status,
              detail);
  /* In two parts, as libmicrohttpd hands the body over in pieces. */
  size_t half = size / 2;
  if (upload_data (u, (const char *) data, half, &status, &detail) < 0
      || upload_data (u, (const char *) data + half, size - half, &status, &detail) < 0)
    {
      upload_abort (u);
      escape_check_and_reset (root);
      return 0;
    }
  json_t *reply = upload_finish (u, true, &status, &detail);
  if (reply == NULL)
    FUZZ_CHECK (status >= 400 && detail != NULL, "failure without a status and detail");
  json_decref (reply);

  /* The temporary upload file is removed in every case. */
  cleanup_dir DIR *d = opendir (dest);
  FUZZ_CHECK (d != NULL, "open %s", dest);
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    FUZZ_CHECK (strncmp (de->d_name, ".ohbox-upload-", 14) != 0, "upload file `%s` left behind", de->d_name);
  escape_check_and_reset (root);
  return 0;
}
