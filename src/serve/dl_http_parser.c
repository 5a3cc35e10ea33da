/* dl_http_parser.c: loads http-parser when `ohbox serve` starts
 * (dl_http_parser.h). */
#include "config.h"

#include "serve/dl_http_parser.h"

OHBOX_DL_DEFINE (http_parser, OHBOX_DL_HTTP_PARSER_SYMBOLS, OHBOX_HTTP_PARSER_SONAME, "ohbox serve",
                 "libhttp-parser2.9")
