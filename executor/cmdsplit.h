/* cmdsplit.h: top-level command splitting of a `run` command (what the
 * Python server does with bashlex to refuse several commands at once). */
#ifndef OHBOX_EXECUTOR_CMDSPLIT_H
#define OHBOX_EXECUTOR_CMDSPLIT_H

#include <stddef.h>

/* Fills *OUT with a NULL-terminated array of the top-level commands (each
 * right-stripped) and returns their number; input it cannot parse comes back
 * as one piece.  Free with split_free. */
size_t split_bash_commands (const char *cmd, char ***out);
void split_free (char **pieces);

#endif
