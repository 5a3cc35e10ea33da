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
/* Lines [from, to] (1-based, inclusive) with their newlines. */
char *editor_line_range (const char *s, long from, long to);
enum editor_encoding
{
  EDITOR_UTF8,
  EDITOR_LATIN1, /* any file that is not UTF-8 */
};
/* validate_file (size, binary) then the contents as UTF-8 with universal
 * newlines; the file's encoding in *ENC (may be NULL); NULL with *ERR set. */
char *editor_read_text (const char *path, enum editor_encoding *enc, char **err);

/* editor_text.c */
/* str(pathlib.Path(P)). */
char *editor_py_path (const char *p);
/* DATA (LEN bytes, taken over) as UTF-8 text read with universal newlines;
 * bytes that are not UTF-8 are read as Latin-1 and *ENC says so. */
char *editor_decode (char *data, size_t len, enum editor_encoding *enc);
/* TEXT in ENC; NULL and Python's UnicodeEncodeError text in *WHY when a
 * character has no place there. */
char *editor_encode (const char *text, enum editor_encoding enc, size_t *out_len, char **why);
/* Python repr() of a JSON value as json.loads gives it (NULL: None). */
char *editor_py_repr (json_t *v);
/* Python str() of the same: a string as it is, anything else as repr(). */
char *editor_py_str (json_t *v);
/* '\n'.join(S.splitlines()). */
char *editor_splitlines_join (const char *s);
/* `view` of a validated PATH. */
char *editor_do_view (const char *path, json_t *view_range);

#endif
