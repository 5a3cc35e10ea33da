/* dl_curl.c: loads libcurl on first use (dl.h, dl_curl.h). */
#include "config.h"

#include <pthread.h>

#include "common/dl_curl.h"

OHBOX_DL_DEFINE (curl, OHBOX_DL_CURL_SYMBOLS, OHBOX_CURL_SONAME, "pulling, pushing and logging in to registries",
                 "libcurl4")

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_result;

static void
init (void)
{
  init_result = curl_global_init (CURL_GLOBAL_DEFAULT);
}

int
ohbox_curl_ready (enum ohbox_error_kind kind, ohbox_error_t *err)
{
  if (ohbox_dl_curl_load (err) < 0)
    return -1;
  pthread_once (&init_once, init);
  if (init_result != CURLE_OK)
    return ohbox_error (err, kind, 0, "initialise libcurl: %s", curl_easy_strerror (init_result));
  return 0;
}
