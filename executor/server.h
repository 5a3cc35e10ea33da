/* server.h: the HTTP side (libmicrohttpd): routes, authentication, body
 * limits.  One epoll thread serves every connection and answers the quick
 * requests (/alive, /server_info, ...) itself; requests that can block
 * (actions, file lists, upload unpacking, downloads) are suspended and run
 * by a fixed pool of workers (pool.h), so /alive answers while actions run
 * and no task is created per connection or request. */
#ifndef OHBOX_EXECUTOR_SERVER_H
#define OHBOX_EXECUTOR_SERVER_H

#include "common/error.h"
#include "executor.h"

struct server;

int server_start (struct executor *ex, struct server **out, ohbox_error_t *err);
void server_stop (struct server *s);

/* Upload and download (archive.c). */
struct upload;
/* Starts an upload into DEST (absolute); NAME is the part's file name;
 * RECURSIVE (or a .zip name): a zip to unpack there. */
int upload_begin (struct executor *ex, const char *dest, const char *name, bool recursive, struct upload **out,
                  int *status, char **detail);
int upload_data (struct upload *u, const char *data, size_t len, int *status, char **detail);
/* Finishes: writes the file or unpacks the zip. Returns the reply JSON or
 * NULL with STATUS/DETAIL. Frees U. */
json_t *upload_finish (struct upload *u, bool recursive, int *status, char **detail);
void upload_abort (struct upload *u);
/* Prepares a zip of PATH: returns the read end of a pipe and in *OUT what
 * download_stream() writes into it; -1 with STATUS/DETAIL. */
struct download;
int download_start (const char *path, struct download **out, int *status, char **detail);
/* Writes the zip into the pipe (blocks until the reader has it all or is
 * gone), then frees DL. */
void download_stream (struct download *dl);
void download_free (struct download *dl);

#endif
