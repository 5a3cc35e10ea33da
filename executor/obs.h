/* obs.h: observation JSON (server -> client) as the OpenHands client parses
 * it (observation_from_dict), and small JSON/text helpers shared by the
 * action handlers. */
#ifndef OHBOX_EXECUTOR_OBS_H
#define OHBOX_EXECUTOR_OBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* CmdOutputMetadata.  Strings may be NULL (JSON null). */
struct run_meta
{
  int exit_code;
  int pid;
  char *username;
  char *hostname;
  char *working_dir;
  char *py_interpreter_path;
  char *prefix;
  char *suffix;
};

/* A fresh metadata: exit_code -1, pid -1, everything else empty/null. */
void run_meta_init (struct run_meta *m);
void run_meta_release (struct run_meta *m);

/* The Python server truncates `run` content longer than this many
 * characters (code points) in the middle. */
#define OBS_MAX_CMD_OUTPUT 30000

/* A `run` observation; content is middle-truncated unless HIDDEN. */
json_t *obs_run (const char *content, const char *command, const struct run_meta *m, bool hidden);
/* An `error` observation: message == content. */
json_t *obs_error (const char *content);
json_t *obs_errorf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* Text helpers. */
/* A JSON string from bytes that may not be UTF-8 (invalid bytes -> U+FFFD). */
json_t *json_str_lossy (const char *s, size_t len);
/* Number of code points of a UTF-8 string. */
size_t utf8_count (const char *s, size_t len);
/* Byte offset of code point number N (clamped to LEN). */
size_t utf8_offset (const char *s, size_t len, size_t n);
/* Middle-truncates S (UTF-8) to MAX code points with the OpenHands marker;
 * returns a new string. */
char *truncate_middle (const char *s, size_t max);
/* Python repr() of a float (shortest round-trip form, "2.0" for 2). */
char *py_float_repr (double v);
/* Python str() of a JSON number: integers as such, reals via py_float_repr. */
char *py_number_str (json_t *num);
/* Base64 (standard alphabet, padded). */
char *base64_encode (const unsigned char *data, size_t len);
/* Lines of S: its newlines, one more when the last line has none. */
size_t count_lines (const char *s);
/* True when the bytes are valid UTF-8. */
bool utf8_valid (const char *s, size_t len);

#endif
