/* escape-check.h: for the extraction targets (fuzz-layer, fuzz-zip).
 * Archives are unpacked into ROOT/a/b/dest; afterwards ROOT must hold only
 * a, a only b and b only dest, whatever the archive tried ("../x",
 * "../../x", "../../../x" land in one of them).  dest itself is emptied
 * before the next input. */
#ifndef OHBOX_FUZZ_ESCAPE_CHECK_H
#define OHBOX_FUZZ_ESCAPE_CHECK_H

#include <dirent.h>
#include <sys/stat.h>

#include "fuzz.h"

static const char *const escape_levels[] = { "a", "a/b", "a/b/dest" };

/* Creates ROOT/a/b/dest (empty); returns its path (caller frees). */
static inline char *
escape_prepare (const char *root)
{
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *dest = xasprintf ("%s/%s", root, escape_levels[2]);
  if (ohbox_mkdir_p (AT_FDCWD, dest, 0755, &err) < 0)
    {
      fprintf (stderr, "%s\n", err->msg);
      abort ();
    }
  char *ret = dest;
  dest = NULL;
  return ret;
}

/* Aborts when DIR holds anything but ONLY. */
static inline void
escape_expect_only (const char *dir, const char *only)
{
  cleanup_dir DIR *d = opendir (dir);
  FUZZ_CHECK (d != NULL, "cannot open %s", dir);
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      FUZZ_CHECK (strcmp (de->d_name, only) == 0, "`%s` was created in %s, outside the destination", de->d_name, dir);
    }
}

/* Checks nothing landed outside ROOT/a/b/dest, then empties dest (its
 * entries may have any mode: rm -rf copes). */
static inline void
escape_check_and_reset (const char *root)
{
  cleanup_free char *a = xasprintf ("%s/a", root);
  cleanup_free char *b = xasprintf ("%s/a/b", root);
  escape_expect_only (root, "a");
  escape_expect_only (a, "b");
  escape_expect_only (b, "dest");
  struct stat st;
  cleanup_free char *dest = xasprintf ("%s/a/b/dest", root);
  FUZZ_CHECK (lstat (dest, &st) == 0 && S_ISDIR (st.st_mode), "the destination was replaced");
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_rm_rf_at (AT_FDCWD, dest, &err) < 0)
    {
      fprintf (stderr, "%s\n", err->msg);
      abort ();
    }
}

#endif
