/* dl_nft.c: loads libnftables on first use (dl.h, dl_nft.h). */
#include "config.h"

#include "common/dl_nft.h"

OHBOX_DL_DEFINE (nft, OHBOX_DL_NFT_SYMBOLS, OHBOX_NFTABLES_SONAME, "sandbox networking (nftables)", "libnftables1")
