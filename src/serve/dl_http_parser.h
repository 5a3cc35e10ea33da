/* dl_http_parser.h: Node's http-parser (Debian's libhttp-parser2.9), which
 * reads the answers of sandboxes' servers for the proxy (upstream.c),
 * loaded when `ohbox serve` starts (common/dl.h), like libmicrohttpd.
 *
 * Include this instead of <http_parser.h>; a function not listed here is
 * not loaded: add it to OHBOX_DL_HTTP_PARSER_SYMBOLS and to the names
 * below. */
#ifndef OHBOX_SERVE_DL_HTTP_PARSER_H
#define OHBOX_SERVE_DL_HTTP_PARSER_H

#include <http_parser.h>

#include "common/dl.h"

#define OHBOX_DL_HTTP_PARSER_SYMBOLS(X)                                                                                \
  X (http_errno_description)                                                                                           \
  X (http_parser_execute)                                                                                              \
  X (http_parser_init)                                                                                                 \
  X (http_should_keep_alive)

OHBOX_DL_DECLARE (http_parser, OHBOX_DL_HTTP_PARSER_SYMBOLS);

#define http_errno_description (ohbox_dl_http_parser.http_errno_description)
#define http_parser_execute (ohbox_dl_http_parser.http_parser_execute)
#define http_parser_init (ohbox_dl_http_parser.http_parser_init)
#define http_should_keep_alive (ohbox_dl_http_parser.http_should_keep_alive)

#endif
