/* dl_archive.c: loads libarchive on first use (dl.h, dl_archive.h). */
#include "config.h"

#include "common/dl_archive.h"

OHBOX_DL_DEFINE (archive, OHBOX_DL_ARCHIVE_SYMBOLS, OHBOX_ARCHIVE_SONAME, "reading and writing image layers",
                 "libarchive13")
