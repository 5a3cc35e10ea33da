/* dl_mhd.h: libmicrohttpd for `ohbox serve`, loaded when the server starts
 * (common/dl.h): linked into the ohbox binary, its constructor would
 * initialise GnuTLS in every `ohbox run`, `ps` and sandbox monitor.
 *
 * Include this instead of <microhttpd.h>; a function not listed here is not
 * loaded: add it to OHBOX_DL_MHD_SYMBOLS and to the names below. */
#ifndef OHBOX_SERVE_DL_MHD_H
#define OHBOX_SERVE_DL_MHD_H

#include <microhttpd.h>

#include "common/dl.h"

#define OHBOX_DL_MHD_SYMBOLS(X)                                                                                        \
  X (MHD_add_response_header)                                                                                          \
  X (MHD_create_post_processor)                                                                                        \
  X (MHD_create_response_from_buffer)                                                                                  \
  X (MHD_create_response_from_callback)                                                                                \
  X (MHD_destroy_post_processor)                                                                                       \
  X (MHD_destroy_response)                                                                                             \
  X (MHD_get_connection_info)                                                                                          \
  X (MHD_get_connection_values)                                                                                        \
  X (MHD_lookup_connection_value)                                                                                      \
  X (MHD_post_process)                                                                                                 \
  X (MHD_queue_response)                                                                                               \
  X (MHD_start_daemon)                                                                                                 \
  X (MHD_stop_daemon)

#define OHBOX_DL_ONE(name) +1
union ohbox_dl_mhd_table
{
  struct
  {
    OHBOX_DL_MHD_SYMBOLS (OHBOX_DL_FIELD)
  };
  void *slots[0 OHBOX_DL_MHD_SYMBOLS (OHBOX_DL_ONE)];
};
#undef OHBOX_DL_ONE

extern union ohbox_dl_mhd_table ohbox_dl_mhd;

/* Loads libmicrohttpd once; -1 naming the missing soname or symbol. */
int ohbox_dl_mhd_load (ohbox_error_t *err);

#define MHD_add_response_header (ohbox_dl_mhd.MHD_add_response_header)
#define MHD_create_post_processor (ohbox_dl_mhd.MHD_create_post_processor)
#define MHD_create_response_from_buffer (ohbox_dl_mhd.MHD_create_response_from_buffer)
#define MHD_create_response_from_callback (ohbox_dl_mhd.MHD_create_response_from_callback)
#define MHD_destroy_post_processor (ohbox_dl_mhd.MHD_destroy_post_processor)
#define MHD_destroy_response (ohbox_dl_mhd.MHD_destroy_response)
#define MHD_get_connection_info (ohbox_dl_mhd.MHD_get_connection_info)
#define MHD_get_connection_values (ohbox_dl_mhd.MHD_get_connection_values)
#define MHD_lookup_connection_value (ohbox_dl_mhd.MHD_lookup_connection_value)
#define MHD_post_process (ohbox_dl_mhd.MHD_post_process)
#define MHD_queue_response (ohbox_dl_mhd.MHD_queue_response)
#define MHD_start_daemon (ohbox_dl_mhd.MHD_start_daemon)
#define MHD_stop_daemon (ohbox_dl_mhd.MHD_stop_daemon)

#endif
