/* dl_nft.h: libnftables, loaded on first use (dl.h).
 *
 * Include this instead of <nftables/libnftables.h>: the functions below keep their
 * names and go through the table ohbox_dl_nft.  Every entry point that
 * uses them calls ohbox_dl_nft_load () first.  A function not listed here
 * is not loaded: add it to OHBOX_DL_NFT_SYMBOLS and to the names below. */
#ifndef OHBOX_DL_NFT_H
#define OHBOX_DL_NFT_H

#include <nftables/libnftables.h>

#include "common/dl.h"

#define OHBOX_DL_NFT_SYMBOLS(X)                                                                                        \
  X (nft_ctx_buffer_error)                                                                                             \
  X (nft_ctx_buffer_output)                                                                                            \
  X (nft_ctx_free)                                                                                                     \
  X (nft_ctx_get_error_buffer)                                                                                         \
  X (nft_ctx_get_output_buffer)                                                                                        \
  X (nft_ctx_new)                                                                                                      \
  X (nft_ctx_output_set_flags)                                                                                         \
  X (nft_run_cmd_from_buffer)

/* The table and loader of libnftables (loaded once). */
OHBOX_DL_DECLARE (nft, OHBOX_DL_NFT_SYMBOLS);

#define nft_ctx_buffer_error (ohbox_dl_nft.nft_ctx_buffer_error)
#define nft_ctx_buffer_output (ohbox_dl_nft.nft_ctx_buffer_output)
#define nft_ctx_free (ohbox_dl_nft.nft_ctx_free)
#define nft_ctx_get_error_buffer (ohbox_dl_nft.nft_ctx_get_error_buffer)
#define nft_ctx_get_output_buffer (ohbox_dl_nft.nft_ctx_get_output_buffer)
#define nft_ctx_new (ohbox_dl_nft.nft_ctx_new)
#define nft_ctx_output_set_flags (ohbox_dl_nft.nft_ctx_output_set_flags)
#define nft_run_cmd_from_buffer (ohbox_dl_nft.nft_run_cmd_from_buffer)

#endif
