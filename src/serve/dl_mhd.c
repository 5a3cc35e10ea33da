/* dl_mhd.c: loads libmicrohttpd when `ohbox serve` starts (dl_mhd.h). */
#include "config.h"

#include "serve/dl_mhd.h"

OHBOX_DL_DEFINE (mhd, OHBOX_DL_MHD_SYMBOLS, OHBOX_MHD_SONAME, "ohbox serve", "libmicrohttpd12")
