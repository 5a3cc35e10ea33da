/* cmdsplit.h: top-level command splitting of a `run` command (what the
 * Python server does with bashlex to refuse several commands at once), and
 * its escaping of the command before typing it. */
#ifndef OHBOX_EXECUTOR_CMDSPLIT_H
#define OHBOX_EXECUTOR_CMDSPLIT_H

#include <stddef.h>

/* Fills *OUT with a NULL-terminated array of the top-level commands (each
 * right-stripped) and returns their number; input it cannot parse comes back
 * as one piece.  Free with split_free. */
size_t split_bash_commands (const char *cmd, char ***out);
void split_free (char **pieces);
/* The command with a backslash doubled in front of ; & | > < outside
 * quoted words and heredocs (the Python server's escape_bash_special_chars:
 * its `command` in observations is this form).  Caller frees. */
char *escape_bash_special_chars (const char *cmd);
/* How many prompts bash shows when CMD is typed with an Enter: one per
 * top-level line it reads (a command with a trailing comment line is two);
 * 1 for text that is not understood. */
size_t bash_prompt_count (const char *cmd);

#endif
