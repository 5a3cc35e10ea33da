/* dl_archive.h: libarchive, loaded on first use (dl.h).
 *
 * Include this instead of <archive.h> and <archive_entry.h>: the functions below keep their
 * names and go through the table ohbox_dl_archive.  Every entry point that
 * uses them calls ohbox_dl_archive_load () first.  A function not listed here
 * is not loaded: add it to OHBOX_DL_ARCHIVE_SYMBOLS and to the names below. */
#ifndef OHBOX_DL_ARCHIVE_H
#define OHBOX_DL_ARCHIVE_H

#include <archive.h>
#include <archive_entry.h>

#include "common/dl.h"

#define OHBOX_DL_ARCHIVE_SYMBOLS(X)                                                                                    \
  X (archive_entry_atime)                                                                                              \
  X (archive_entry_atime_is_set)                                                                                       \
  X (archive_entry_atime_nsec)                                                                                         \
  X (archive_entry_filetype)                                                                                           \
  X (archive_entry_free)                                                                                               \
  X (archive_entry_gid)                                                                                                \
  X (archive_entry_hardlink)                                                                                           \
  X (archive_entry_hardlink_utf8)                                                                                      \
  X (archive_entry_mtime)                                                                                              \
  X (archive_entry_mtime_is_set)                                                                                       \
  X (archive_entry_mtime_nsec)                                                                                         \
  X (archive_entry_new)                                                                                                \
  X (archive_entry_pathname)                                                                                           \
  X (archive_entry_pathname_utf8)                                                                                      \
  X (archive_entry_perm)                                                                                               \
  X (archive_entry_rdev)                                                                                               \
  X (archive_entry_rdevmajor)                                                                                          \
  X (archive_entry_rdevminor)                                                                                          \
  X (archive_entry_set_filetype)                                                                                       \
  X (archive_entry_set_gid)                                                                                            \
  X (archive_entry_set_mtime)                                                                                          \
  X (archive_entry_set_pathname)                                                                                       \
  X (archive_entry_set_perm)                                                                                           \
  X (archive_entry_set_size)                                                                                           \
  X (archive_entry_set_symlink)                                                                                        \
  X (archive_entry_set_uid)                                                                                            \
  X (archive_entry_size)                                                                                               \
  X (archive_entry_symlink)                                                                                            \
  X (archive_entry_symlink_utf8)                                                                                       \
  X (archive_entry_uid)                                                                                                \
  X (archive_entry_xattr_count)                                                                                        \
  X (archive_entry_xattr_next)                                                                                         \
  X (archive_entry_xattr_reset)                                                                                        \
  X (archive_errno)                                                                                                    \
  X (archive_error_string)                                                                                             \
  X (archive_read_data_block)                                                                                          \
  X (archive_read_free)                                                                                                \
  X (archive_read_new)                                                                                                 \
  X (archive_read_next_header)                                                                                         \
  X (archive_read_open)                                                                                                \
  X (archive_read_support_filter_gzip)                                                                                 \
  X (archive_read_support_filter_zstd)                                                                                 \
  X (archive_read_support_format_raw)                                                                                  \
  X (archive_read_support_format_tar)                                                                                  \
  X (archive_set_error)                                                                                                \
  X (archive_write_close)                                                                                              \
  X (archive_write_data)                                                                                               \
  X (archive_write_free)                                                                                               \
  X (archive_write_header)                                                                                             \
  X (archive_write_new)                                                                                                \
  X (archive_write_open2)                                                                                              \
  X (archive_write_set_format_pax_restricted)

/* The table and loader of libarchive (loaded once). */
OHBOX_DL_DECLARE (archive, OHBOX_DL_ARCHIVE_SYMBOLS);

#define archive_entry_atime (ohbox_dl_archive.archive_entry_atime)
#define archive_entry_atime_is_set (ohbox_dl_archive.archive_entry_atime_is_set)
#define archive_entry_atime_nsec (ohbox_dl_archive.archive_entry_atime_nsec)
#define archive_entry_filetype (ohbox_dl_archive.archive_entry_filetype)
#define archive_entry_free (ohbox_dl_archive.archive_entry_free)
#define archive_entry_gid (ohbox_dl_archive.archive_entry_gid)
#define archive_entry_hardlink (ohbox_dl_archive.archive_entry_hardlink)
#define archive_entry_hardlink_utf8 (ohbox_dl_archive.archive_entry_hardlink_utf8)
#define archive_entry_mtime (ohbox_dl_archive.archive_entry_mtime)
#define archive_entry_mtime_is_set (ohbox_dl_archive.archive_entry_mtime_is_set)
#define archive_entry_mtime_nsec (ohbox_dl_archive.archive_entry_mtime_nsec)
#define archive_entry_new (ohbox_dl_archive.archive_entry_new)
#define archive_entry_pathname (ohbox_dl_archive.archive_entry_pathname)
#define archive_entry_pathname_utf8 (ohbox_dl_archive.archive_entry_pathname_utf8)
#define archive_entry_perm (ohbox_dl_archive.archive_entry_perm)
#define archive_entry_rdev (ohbox_dl_archive.archive_entry_rdev)
#define archive_entry_rdevmajor (ohbox_dl_archive.archive_entry_rdevmajor)
#define archive_entry_rdevminor (ohbox_dl_archive.archive_entry_rdevminor)
#define archive_entry_set_filetype (ohbox_dl_archive.archive_entry_set_filetype)
#define archive_entry_set_gid (ohbox_dl_archive.archive_entry_set_gid)
#define archive_entry_set_mtime (ohbox_dl_archive.archive_entry_set_mtime)
#define archive_entry_set_pathname (ohbox_dl_archive.archive_entry_set_pathname)
#define archive_entry_set_perm (ohbox_dl_archive.archive_entry_set_perm)
#define archive_entry_set_size (ohbox_dl_archive.archive_entry_set_size)
#define archive_entry_set_symlink (ohbox_dl_archive.archive_entry_set_symlink)
#define archive_entry_set_uid (ohbox_dl_archive.archive_entry_set_uid)
#define archive_entry_size (ohbox_dl_archive.archive_entry_size)
#define archive_entry_symlink (ohbox_dl_archive.archive_entry_symlink)
#define archive_entry_symlink_utf8 (ohbox_dl_archive.archive_entry_symlink_utf8)
#define archive_entry_uid (ohbox_dl_archive.archive_entry_uid)
#define archive_entry_xattr_count (ohbox_dl_archive.archive_entry_xattr_count)
#define archive_entry_xattr_next (ohbox_dl_archive.archive_entry_xattr_next)
#define archive_entry_xattr_reset (ohbox_dl_archive.archive_entry_xattr_reset)
#define archive_errno (ohbox_dl_archive.archive_errno)
#define archive_error_string (ohbox_dl_archive.archive_error_string)
#define archive_read_data_block (ohbox_dl_archive.archive_read_data_block)
#define archive_read_free (ohbox_dl_archive.archive_read_free)
#define archive_read_new (ohbox_dl_archive.archive_read_new)
#define archive_read_next_header (ohbox_dl_archive.archive_read_next_header)
#define archive_read_open (ohbox_dl_archive.archive_read_open)
#define archive_read_support_filter_gzip (ohbox_dl_archive.archive_read_support_filter_gzip)
#define archive_read_support_filter_zstd (ohbox_dl_archive.archive_read_support_filter_zstd)
#define archive_read_support_format_raw (ohbox_dl_archive.archive_read_support_format_raw)
#define archive_read_support_format_tar (ohbox_dl_archive.archive_read_support_format_tar)
#define archive_set_error (ohbox_dl_archive.archive_set_error)
#define archive_write_close (ohbox_dl_archive.archive_write_close)
#define archive_write_data (ohbox_dl_archive.archive_write_data)
#define archive_write_free (ohbox_dl_archive.archive_write_free)
#define archive_write_header (ohbox_dl_archive.archive_write_header)
#define archive_write_new (ohbox_dl_archive.archive_write_new)
#define archive_write_open2 (ohbox_dl_archive.archive_write_open2)
#define archive_write_set_format_pax_restricted (ohbox_dl_archive.archive_write_set_format_pax_restricted)

#endif
