/* dl_curl.h: libcurl, loaded on first use (dl.h).
 *
 * Include this instead of <curl/curl.h>: the functions below keep their
 * names and go through the table ohbox_dl_curl.  Every entry point that
 * uses them calls ohbox_dl_curl_load () first.  A function not listed here
 * is not loaded: add it to OHBOX_DL_CURL_SYMBOLS and to the names below. */
#ifndef OHBOX_DL_CURL_H
#define OHBOX_DL_CURL_H

/* Calls go through pointers, which curl's compile-time option type checks
 * (macros around curl_easy_setopt and curl_easy_getinfo) cannot wrap. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "common/dl.h"

#define OHBOX_DL_CURL_SYMBOLS(X)                                                                                       \
  X (curl_easy_cleanup)                                                                                                \
  X (curl_easy_escape)                                                                                                 \
  X (curl_easy_getinfo)                                                                                                \
  X (curl_easy_init)                                                                                                   \
  X (curl_easy_pause)                                                                                                  \
  X (curl_easy_perform)                                                                                                \
  X (curl_easy_reset)                                                                                                  \
  X (curl_easy_setopt)                                                                                                 \
  X (curl_easy_strerror)                                                                                               \
  X (curl_free)                                                                                                        \
  X (curl_getdate)                                                                                                     \
  X (curl_global_init)                                                                                                 \
  X (curl_multi_add_handle)                                                                                            \
  X (curl_multi_cleanup)                                                                                               \
  X (curl_multi_info_read)                                                                                             \
  X (curl_multi_init)                                                                                                  \
  X (curl_multi_perform)                                                                                               \
  X (curl_multi_poll)                                                                                                  \
  X (curl_multi_remove_handle)                                                                                         \
  X (curl_multi_strerror)                                                                                              \
  X (curl_share_cleanup)                                                                                               \
  X (curl_share_init)                                                                                                  \
  X (curl_share_setopt)                                                                                                \
  X (curl_slist_append)                                                                                                \
  X (curl_slist_free_all)                                                                                              \
  X (curl_url)                                                                                                         \
  X (curl_url_cleanup)                                                                                                 \
  X (curl_url_get)                                                                                                     \
  X (curl_url_set)

/* The table and loader of libcurl (loaded once). */
OHBOX_DL_DECLARE (curl, OHBOX_DL_CURL_SYMBOLS);

/* libcurl loaded and initialised (curl_global_init, once per process: it
 * is not thread-safe before curl 7.84); a failure is an error of KIND. */
int ohbox_curl_ready (enum ohbox_error_kind kind, ohbox_error_t *err);

/* curl.h defines these as pass-through macros when its type checks are off. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#define curl_easy_cleanup (ohbox_dl_curl.curl_easy_cleanup)
#define curl_easy_escape (ohbox_dl_curl.curl_easy_escape)
#define curl_easy_getinfo (ohbox_dl_curl.curl_easy_getinfo)
#define curl_easy_init (ohbox_dl_curl.curl_easy_init)
#define curl_easy_pause (ohbox_dl_curl.curl_easy_pause)
#define curl_easy_perform (ohbox_dl_curl.curl_easy_perform)
#define curl_easy_reset (ohbox_dl_curl.curl_easy_reset)
#define curl_easy_setopt (ohbox_dl_curl.curl_easy_setopt)
#define curl_easy_strerror (ohbox_dl_curl.curl_easy_strerror)
#define curl_free (ohbox_dl_curl.curl_free)
#define curl_getdate (ohbox_dl_curl.curl_getdate)
#define curl_global_init (ohbox_dl_curl.curl_global_init)
#define curl_multi_add_handle (ohbox_dl_curl.curl_multi_add_handle)
#define curl_multi_cleanup (ohbox_dl_curl.curl_multi_cleanup)
#define curl_multi_info_read (ohbox_dl_curl.curl_multi_info_read)
#define curl_multi_init (ohbox_dl_curl.curl_multi_init)
#define curl_multi_perform (ohbox_dl_curl.curl_multi_perform)
#define curl_multi_poll (ohbox_dl_curl.curl_multi_poll)
#define curl_multi_remove_handle (ohbox_dl_curl.curl_multi_remove_handle)
#define curl_multi_strerror (ohbox_dl_curl.curl_multi_strerror)
#define curl_share_cleanup (ohbox_dl_curl.curl_share_cleanup)
#define curl_share_init (ohbox_dl_curl.curl_share_init)
#define curl_share_setopt (ohbox_dl_curl.curl_share_setopt)
#define curl_slist_append (ohbox_dl_curl.curl_slist_append)
#define curl_slist_free_all (ohbox_dl_curl.curl_slist_free_all)
#define curl_url (ohbox_dl_curl.curl_url)
#define curl_url_cleanup (ohbox_dl_curl.curl_url_cleanup)
#define curl_url_get (ohbox_dl_curl.curl_url_get)
#define curl_url_set (ohbox_dl_curl.curl_url_set)

#endif
