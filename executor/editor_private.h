/* editor_private.h: helpers shared by editor.c (edits) and editor_view.c
 * (view of files and directories).  Not a public interface. */
#ifndef OHBOX_EXECUTOR_EDITOR_PRIVATE_H
#define OHBOX_EXECUTOR_EDITOR_PRIVATE_H

#include <jansson.h>
#include <stddef.h>

#include "editor.h"

#define MAX_FILE_SIZE (10u << 20)
#define MAX_RESPONSE_LEN_CHAR 16000

/* "ERROR:\n" + the formatted reason (what _execute_file_editor returns). */
char *editor_err_text (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* Cuts at MAX_RESPONSE_LEN_CHAR characters and appends NOTICE. */
char *editor_maybe_truncate (const char *s, const char *notice);
/* _make_output: "Here's the result of running `cat -n` on DESCR:" + numbered lines. */
char *editor_make_output (const char *content, const char *descr, long start_line);
size_t editor_count_lines (const char *s);
/* Lines [from, to] (1-based, inclusive) with their newlines. */
char *editor_line_range (const char *s, long from, long to);
/* validate_file (size, binary) then the contents; NULL with *ERR set. */
char *editor_read_text (const char *path, char **err);
/* `view` of a validated PATH. */
char *editor_do_view (const char *path, json_t *view_range);

#endif
