/* dl_curl.c: loads libcurl on first use (dl.h, dl_curl.h). */
#include "config.h"

#include "common/dl_curl.h"

OHBOX_DL_DEFINE (curl, OHBOX_DL_CURL_SYMBOLS, OHBOX_CURL_SONAME, "pulling, pushing and logging in to registries",
                 "libcurl4")
