/* server.h: the HTTP side (libmicrohttpd): routes, authentication, body
 * limits.  One thread per connection, so /alive and /server_info answer
 * while an action holds the action lock. */
#ifndef OHBOX_EXECUTOR_SERVER_H
#define OHBOX_EXECUTOR_SERVER_H

#include "error.h"
#include "executor.h"

struct server;

int server_start (struct executor *ex, struct server **out, ohbox_error_t *err);
void server_stop (struct server *s);

/* Upload and download (archive.c). */
struct upload;
/* 0 when zip support (libarchive, loaded on first use) is available;
 * -1 with *DETAIL (the reason, caller frees) otherwise. */
int zip_support (char **detail);
/* Starts an upload into DEST (absolute); NAME is the part's file name;
 * RECURSIVE (or a .zip name): a zip to unpack there. */
int upload_begin (struct executor *ex, const char *dest, const char *name, bool recursive, struct upload **out,
                  int *status, char **detail);
int upload_data (struct upload *u, const char *data, size_t len, int *status, char **detail);
/* Finishes: writes the file or unpacks the zip. Returns the reply JSON or
 * NULL with STATUS/DETAIL. Frees U. */
json_t *upload_finish (struct upload *u, bool recursive, int *status, char **detail);
void upload_abort (struct upload *u);
/* Starts a zip of PATH streamed into the returned pipe fd (read end);
 * -1 with STATUS/DETAIL (503 without zip support). */
int download_start (const char *path, int *status, char **detail);

#endif
