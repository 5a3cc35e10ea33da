/* terminal.h: a virtual terminal (libvterm's parser and state machine, the
 * cells kept here) plus a scrollback history, so that the bash session's
 * output reads the way a terminal shows it: carriage returns collapse
 * progress bars, escape sequences vanish, long lines that wrapped are
 * joined again, full-screen programs use an alternate screen.  This
 * replaces what tmux `capture-pane -J -p -S -` gives the Python server.
 *
 * Not thread-safe: the bash session serialises access with its own lock. */
#ifndef OHBOX_EXECUTOR_TERMINAL_H
#define OHBOX_EXECUTOR_TERMINAL_H

#include <stddef.h>
#include <stdint.h>

struct term;

/* Answers the terminal sends back to the program (cursor position reports
 * and the like) are passed to WRITE_BACK. */
typedef void (*term_write_back_fn) (const char *data, size_t len, void *user);

struct term *term_new (int rows, int cols, size_t history_limit, term_write_back_fn write_back, void *user);
void term_free (struct term *t);
/* Feeds program output. */
void term_feed (struct term *t, const char *data, size_t len);
/* The whole pane, history first: each (joined) line right-stripped, lines
 * joined with '\n', trailing empty lines dropped.  Caller frees. */
char *term_render (struct term *t, size_t *len);
/* Forgets history and screen, then shows TEXT ('\n' separated) from the top
 * left, leaving the cursor after it: what "clear + redraw the prompt" leaves. */
void term_reset_to (struct term *t, const char *text);
/* The text of screen row ROW as term_render shows it (tests, diagnostics).
 * Caller frees. */
char *term_screen_row (struct term *t, int row);
/* Bumped whenever the screen or history changes. */
uint64_t term_generation (struct term *t);

#endif
