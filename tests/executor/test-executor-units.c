/* Unit tests of the executor's pure pieces: top-level command splitting,
 * terminal rendering, unified diffs, truncation and Python number texts.
 * Built by executor/local.mk (check_PROGRAMS), run by
 * tests/integration/executor-units.sh. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "cmdsplit.h"
#include "editor.h"
#include "obs.h"
#include "terminal.h"
#include "unit.h"
#include "common/utils.h"

static size_t
count (const char *cmd)
{
  char **p = NULL;
  size_t n = split_bash_commands (cmd, &p);
  split_free (p);
  return n;
}

static void
test_split_single_commands (void)
{
  const char *single[] = {
    "echo hi",
    "echo a; echo b",
    "echo a && echo b || echo c",
    "for i in 1 2 3; do\n  echo $i\ndone",
    "if true; then\n  echo y\nelse\n  echo n\nfi",
    "cat <<EOF\nline one\necho not a command\nEOF",
    "cat <<'EOF' > f\n$x\nEOF",
    "echo a |\n  grep a",
    "echo \"multi\nline string\"",
    "echo 'single\nquoted'",
    "echo $(echo a\necho b)",
    "f() {\n  echo in f\n}",
    "case $x in\n  a) echo a ;;\n  *) echo other ;;\nesac",
    "echo a \\\n  b",
    "echo after comment\n# trailing comment",
    "# only a comment",
    "[[ -f x ]] && echo y\necho z",
    "time sleep 0\necho z",
    "((i++))\necho z",
    "for ((i = 0; i < 2; i++)); do echo $i; done\necho z",
    "",
    "find . -name '*.c' -exec grep -l x {} \\;",
  };
  for (size_t i = 0; i < sizeof (single) / sizeof (single[0]); i++)
    CHECK (count (single[i]) == 1, "for %s", single[i]);
}

static void
test_split_multiple_commands (void)
{
  char **p = NULL;
  size_t n = split_bash_commands ("echo one\necho two\n\nls -l  \n", &p);
  CHECK (n == 3, "got %zu", n);
  CHECK_STR (p[0], "echo one");
  CHECK_STR (p[1], "echo two");
  CHECK_STR (p[2], "ls -l");
  split_free (p);
  CHECK (count ("sleep 1 &\necho x") == 2);
  CHECK (count ("for i in 1; do echo $i; done\necho after") == 2);
  /* Unbalanced input is sent as one command, like a bashlex parse error. */
  CHECK (count ("echo 'unterminated\necho x") == 1);
  /* A comment line before the first command is a piece of its own (the
   * Python server refuses it as two commands). */
  n = split_bash_commands ("# comment\necho after comment", &p);
  CHECK (n == 2, "got %zu", n);
  CHECK_STR (p[0], "# comment");
  CHECK_STR (p[1], "echo after comment");
  split_free (p);
}

/* The cases of OpenHands' tests/unit/test_bash_parsing.py
 * (split_bash_commands). */
static void
test_split_like_openhands (void)
{
  static const struct
  {
    const char *in;
    const char *out[4];
  } cases[] = {
    { "\necho \"Hello\" # This is a comment\n# This is another comment\nls -l\n",
      { "echo \"Hello\" # This is a comment\n# This is another comment", "ls -l" } },
    { "\ncat <<EOF\nmultiline\ntext\nEOF\necho \"Done\"\n", { "cat <<EOF\nmultiline\ntext\nEOF", "echo \"Done\"" } },
    { "\nls -l\n\necho \"Hello\"\n\ncd /tmp\n", { "ls -l", "echo \"Hello\"", "cd /tmp" } },
    { "\necho \"This is a \\\"quoted\\\" string\"\necho 'This is a '''single-quoted''' string'\n"
      "echo \"Mixed 'quotes' in \\\"double quotes\\\"\"\n",
      { "echo \"This is a \\\"quoted\\\" string\"", "echo 'This is a '''single-quoted''' string'",
        "echo \"Mixed 'quotes' in \\\"double quotes\\\"\"" } },
    { "mkdir -p _modules && \\\nfor month in {01..04}; do\n    for day in {01..05}; do\n        touch "
      "\"_modules/2024-${month}-${day}-sample.md\"\n    done\ndone\necho x",
      { "mkdir -p _modules && \\\nfor month in {01..04}; do\n    for day in {01..05}; do\n        touch "
        "\"_modules/2024-${month}-${day}-sample.md\"\n    done\ndone",
        "echo x" } },
    { "echo \"Unclosed quote", { "echo \"Unclosed quote" } },
    { "echo 'Unclosed quote", { "echo 'Unclosed quote" } },
    { "cat <<EOF\nUnclosed heredoc", { "cat <<EOF\nUnclosed heredoc" } },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      char **p = NULL;
      size_t n = split_bash_commands (cases[i].in, &p);
      size_t want = 0;
      while (want < 4 && cases[i].out[want])
        want++;
      bool same = n == want;
      for (size_t k = 0; same && k < n; k++)
        same = strcmp (p[k], cases[i].out[k]) == 0;
      cleanup_free char *first = xstrdup (n ? p[0] : "");
      split_free (p);
      CHECK (same, "case %zu: %zu pieces, first `%s`", i, n, first);
    }
}

/* OpenHands' test_escape_bash_special_chars* cases (the escaped form is the
 * `command` of its observations). */
static void
test_escape_like_openhands (void)
{
  static const char *cases[][2] = {
    { "echo test \\; ls", "echo test \\\\; ls" },
    { "grep pattern \\| sort", "grep pattern \\\\| sort" },
    { "cmd1 \\&\\& cmd2", "cmd1 \\\\&\\\\& cmd2" },
    { "cat file \\> output.txt", "cat file \\\\> output.txt" },
    { "cat \\< input.txt", "cat \\\\< input.txt" },
    { "echo \"test \\; unchanged\"", "echo \"test \\; unchanged\"" },
    { "echo 'test \\| unchanged'", "echo 'test \\| unchanged'" },
    { "echo \"quoted \\;\" \\; \"more\" \\| grep", "echo \"quoted \\;\" \\\\; \"more\" \\\\| grep" },
    { "cmd1 \\;\\|\\& cmd2", "cmd1 \\\\;\\\\|\\\\& cmd2" },
    { "echo test\\ntest", "echo test\\ntest" },
    { "echo \"test\\ntest\"", "echo \"test\\ntest\"" },
    { "\\\\", "\\\\" },
    { "\\\"", "\\\"" },
    { "echo \"unclosed quote", "echo \"unclosed quote" },
    { "cat <<EOF\nunclosed heredoc", "cat <<EOF\nunclosed heredoc" },
    { "cat <<EOF\nline1 \\; not escaped\nline2 \\| not escaped\nEOF",
      "cat <<EOF\nline1 \\; not escaped\nline2 \\| not escaped\nEOF" },
    { "echo ${HOME:-default}", "echo ${HOME:-default}" },
    { "echo $HOME \\; ls", "echo $HOME \\\\; ls" },
    { "echo ${!prefix*} \\| sort", "echo ${!prefix*} \\\\| sort" },
    { "echo $(pwd) \\; ls", "echo $(pwd) \\\\; ls" },
    { "echo `pwd` \\| grep home", "echo `pwd` \\\\| grep home" },
    { "echo $(find . -name \"*.txt\" \\; ls)", "echo $(find . -name \"*.txt\" \\; ls)" },
    { "echo \"${HOME}/$(basename `pwd`) \\; next\"", "echo \"${HOME}/$(basename `pwd`) \\; next\"" },
    { "VAR=${HOME} \\; echo $(pwd)", "VAR=${HOME} \\\\; echo $(pwd)" },
    { "find . -name \"*.txt\" -exec grep \"${PATTERN:-default}\" {} \\;",
      "find . -name \"*.txt\" -exec grep \"${PATTERN:-default}\" {} \\\\;" },
    { "echo \"Current path: ${PWD}/$(basename `pwd`)\" \\| grep home",
      "echo \"Current path: ${PWD}/$(basename `pwd`)\" \\\\| grep home" },
    { "ls \\; pwd && echo test", "ls \\\\; pwd && echo test" },
    { "echo \"$(pwd)\" && cat file \\> out.txt", "echo \"$(pwd)\" && cat file \\\\> out.txt" },
    { "cmd1 \\; ls && cmd2 \\| grep && cmd3", "cmd1 \\\\; ls && cmd2 \\\\| grep && cmd3" },
    { "ls && pwd", "ls && pwd" },
    { "", "" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_free char *got = escape_bash_special_chars (cases[i][0]);
      CHECK (strcmp (got, cases[i][1]) == 0, "case %zu: `%s` gave `%s`, expected `%s`", i, cases[i][0], got,
             cases[i][1]);
    }
}

/* Feeds the terminal output S (no NUL in it) to T. */
static void
feed (struct term *t, const char *s)
{
  term_feed (t, s, strlen (s));
}

static void
term_freep (struct term **t)
{
  term_free (*t);
}
#define cleanup_term __attribute__ ((cleanup (term_freep)))

/* feed, then the pane as it renders. */
static char *
feed_and_render (struct term *t, const char *s)
{
  feed (t, s);
  return term_render (t, NULL);
}

static void
test_terminal_renders_like_a_screen (void)
{
  cleanup_term struct term *t = term_new (24, 80, 100, NULL, NULL);
  cleanup_free char *pane = feed_and_render (t, "10%\r50%\r100%\r\n\033[1;31mred\033[0m text   \r\nabc\bX\r\n");
  CHECK_STR (pane, "100%\nred text\nabX");
}

static void
test_terminal_joins_wrapped_lines_and_keeps_history (void)
{
  cleanup_term struct term *t = term_new (4, 10, 100, NULL, NULL);
  cleanup_free char *pane = feed_and_render (t, "0123456789abcdef\r\nl2\r\nl3\r\nl4\r\nl5\r\n");
  CHECK_STR (pane, "0123456789abcdef\nl2\nl3\nl4\nl5");
  term_reset_to (t, "\nprompt\n");
  cleanup_free char *after = term_render (t, NULL);
  CHECK_STR (after, "\nprompt");
}

static void
test_terminal_history_limit (void)
{
  cleanup_term struct term *t = term_new (2, 20, 3, NULL, NULL);
  for (int i = 0; i < 10; i++)
    {
      char line[16];
      int n = snprintf (line, sizeof (line), "line%d\r\n", i);
      term_feed (t, line, (size_t) n);
    }
  cleanup_free char *pane = term_render (t, NULL);
  /* 3 lines of history + the 2-row screen (the last row is empty). */
  CHECK_STR (pane, "line6\nline7\nline8\nline9");
}

/* Prompts bash shows for typed text: one per top-level line it reads. */
static void
test_bash_prompt_count (void)
{
  static const struct
  {
    const char *cmd;
    size_t prompts;
  } cases[] = {
    { "echo hi", 1 },
    { "echo x\n# done", 2 },
    { "echo x\n\n# done", 3 },
    { "cat <<EOF\nx\nEOF", 1 },
    { "cat <<EOF\nx\nEOF\n# c", 2 },
    { "for i in 1 2; do\n  echo $i\ndone", 1 },
    { "echo a |\n  cat", 1 },
    { "echo \"multi\nline\"", 1 },
    { "echo a \\\n  b", 1 },
    { "f() {\n  echo in f\n}", 1 },
    { "time sleep 0\necho z", 2 },
    { "echo 'unterminated\necho x", 1 },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    CHECK (bash_prompt_count (cases[i].cmd) == cases[i].prompts, "`%s`: %zu, expected %zu", cases[i].cmd,
           bash_prompt_count (cases[i].cmd), cases[i].prompts);
}

/* ---- the terminal against libvterm's own screen layer ---------------------------- */

/* A screen row from VTermScreen, rendered with the rules of terminal.c. */
static char *
reference_row (VTermScreen *screen, int row, int cols)
{
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  for (int c = 0; c < cols; c++)
    {
      VTermScreenCell cell;
      VTermPos pos = { .row = row, .col = c };
      vterm_screen_get_cell (screen, pos, &cell);
      if (cell.chars[0] == (uint32_t) -1)
        continue;
      if (cell.chars[0] == 0)
        {
          ohbox_buf_append (&b, " ", 1);
          continue;
        }
      for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i]; i++)
        {
          char u[4];
          uint32_t ch = cell.chars[i];
          size_t n;
          if (ch < 0x80)
            u[0] = (char) ch, n = 1;
          else if (ch < 0x800)
            u[0] = (char) (0xc0 | (ch >> 6)), u[1] = (char) (0x80 | (ch & 0x3f)), n = 2;
          else
            u[0] = (char) (0xe0 | (ch >> 12)), u[1] = (char) (0x80 | ((ch >> 6) & 0x3f)),
            u[2] = (char) (0x80 | (ch & 0x3f)), n = 3;
          ohbox_buf_append (&b, u, n);
        }
    }
  while (b.len && b.data[b.len - 1] == ' ')
    b.data[--b.len] = '\0';
  return b.data;
}

/* Random streams of text and control sequences (cursor moves, erases,
 * insert/delete of characters and lines, scroll regions, wide and
 * combining characters, autowrap, insert mode, the alternate screen) must
 * leave the same screen text in terminal.c as in libvterm's screen layer. */
static void
test_terminal_matches_libvterm_screen (void)
{
  static const char *fixed[] = {
    "abc",
    "hello world ",
    "\xe8\xa1\xa8",
    "e\xcc\x81",
    "\r",
    "\n",
    "\r\n",
    "\b",
    "\t",
    "\033[K",
    "\033[1K",
    "\033[2K",
    "\033[J",
    "\033[1J",
    "\033[2J",
    "\033M",
    "\033[?1049h",
    "\033[?1049l",
    "\033[4h",
    "\033[4l",
    "\033[?7l",
    "\033[?7h",
    "\033[r",
    "\033[1;31mred\033[0m",
    "0123456789abcdefghij",
    "\033[H",
    "\033D",
  };
  /* CSI n A..d: cursor moves, ICH, DCH, IL, DL, SU, SD, ECH, CHA, VPA. */
  static const char finals[] = "ABCD@PLMSTXGd";
  const int rows = 6, cols = 12;
  unsigned int seed = 12345;
  for (int round = 0; round < 300; round++)
    {
      VTerm *vt = vterm_new (rows, cols);
      vterm_set_utf8 (vt, 1);
      VTermScreen *screen = vterm_obtain_screen (vt);
      vterm_screen_enable_altscreen (screen, 1);
      vterm_screen_reset (screen, 1);
      struct term *t = term_new (rows, cols, 1000, NULL, NULL);
      struct ohbox_buf log = { 0 };
      for (int step = 0; step < 60; step++)
        {
          char piece[64];
          seed = seed * 1103515245u + 12345u;
          unsigned int r = (seed >> 8) % 100;
          if (r < 55)
            snprintf (piece, sizeof (piece), "%s", fixed[(seed >> 16) % (sizeof (fixed) / sizeof (fixed[0]))]);
          else if (r < 90)
            snprintf (piece, sizeof (piece), "\033[%d%c", (int) ((seed >> 4) % 5) + 1,
                      finals[(seed >> 16) % (sizeof (finals) - 1)]);
          else
            snprintf (piece, sizeof (piece), "\033[%d;%dr\033[%d;%dH", (int) ((seed >> 4) % 3) + 1,
                      (int) ((seed >> 6) % 3) + 4, (int) ((seed >> 9) % 6) + 1, (int) ((seed >> 12) % 12) + 1);
          vterm_input_write (vt, piece, strlen (piece));
          vterm_screen_flush_damage (screen);
          term_feed (t, piece, strlen (piece));
          ohbox_buf_append (&log, piece, strlen (piece));
        }
      for (int row = 0; row < rows; row++)
        {
          cleanup_free char *want = reference_row (screen, row, cols);
          cleanup_free char *got = term_screen_row (t, row);
          if (strcmp (want, got) != 0)
            {
              term_free (t);
              vterm_free (vt);
              cleanup_free char *stream = log.data;
              for (char *p = stream; *p; p++)
                if (*p == '\033')
                  *p = 'E';
              CHECK (0, "round %d row %d: `%s`, libvterm screen `%s`; stream %s", round, row, got, want, stream);
            }
        }
      free (log.data);
      term_free (t);
      vterm_free (vt);
    }
}

static void
test_terminal_alternate_screen (void)
{
  cleanup_term struct term *t = term_new (4, 20, 100, NULL, NULL);
  feed (t, "$ vim f\r\n");
  cleanup_free char *during = feed_and_render (t, "\033[?1049h\033[HEDITOR LINE 1\r\n~\r\n~\r\n~");
  CHECK_STR (during, "EDITOR LINE 1\n~\n~\n~");
  /* Scrolling the alternate screen adds nothing to the history. */
  cleanup_free char *scrolled = feed_and_render (t, "\r\n~");
  CHECK_STR (scrolled, "~\n~\n~\n~");
  cleanup_free char *after = feed_and_render (t, "\033[?1049l$ ");
  CHECK_STR (after, "$ vim f\n$");
}

static void
test_terminal_insert_delete_and_wide_characters (void)
{
  cleanup_term struct term *t = term_new (3, 10, 10, NULL, NULL);
  /* ICH shifts the rest of the line right, DCH pulls it left, ECH blanks. */
  feed (t, "abcdef\r\033[2C\033[2@XY\r\n123456\r\033[1C\033[2P\r\n\xe8\xa1\xa8x\033[3Dz");
  cleanup_free char *r0 = term_screen_row (t, 0);
  cleanup_free char *r1 = term_screen_row (t, 1);
  cleanup_free char *r2 = term_screen_row (t, 2);
  CHECK_STR (r0, "abXYcdef");
  CHECK_STR (r1, "1456");
  CHECK_STR (r2, "zx");
}

static void
test_unified_diff_matches_difflib (void)
{
  cleanup_free char *d1 = unified_diff ("a\nb\nc\nd\n", "a\nX\nc\nY\n", "p");
  CHECK_STR (d1, "--- p\n+++ p\n@@ -2 +2 @@\n-b\n+X\n@@ -4 +4 @@\n-d\n+Y");
  cleanup_free char *d2 = unified_diff ("x\ny\n", "x\nz\ny\n", "p");
  CHECK_STR (d2, "--- p\n+++ p\n@@ -1,0 +2 @@\n+z");
  cleanup_free char *d3 = unified_diff ("same\n", "same\n", "p");
  CHECK_STR (d3, "");
  cleanup_free char *d4 = unified_diff ("", "x = 1\ny = 2\n", "p");
  CHECK_STR (d4, "--- p\n+++ p\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2");
  cleanup_free char *d5 = unified_diff ("a  \nb\n", "a\nc\n", "p");
  CHECK_STR (d5, "--- p\n+++ p\n@@ -1,2 +1,2 @@\n-a\n-b\n+a\n+c");
}

static void
test_truncate_middle_counts_characters (void)
{
  cleanup_free char *s = xmalloc (40001);
  for (int i = 0; i < 40000; i++)
    s[i] = (char) ('a' + i % 26);
  s[40000] = '\0';
  cleanup_free char *t = truncate_middle (s, 30000);
  const char *marker = "\n[... Observation truncated due to length ...]\n";
  CHECK (strlen (t) == 30000 + strlen (marker));
  CHECK (strncmp (t, s, 15000) == 0);
  CHECK (strcmp (t + 15000 + strlen (marker), s + 25000) == 0);
  /* Multi-byte characters count once. */
  cleanup_free char *u = xstrdup ("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  cleanup_free char *ut = truncate_middle (u, 4);
  CHECK_STR (ut, u);
  cleanup_free char *ut2 = truncate_middle (u, 2);
  CHECK (strncmp (ut2, "\xc3\xa9\n[...", 7) == 0);
}

static void
test_python_number_texts (void)
{
  const struct
  {
    double v;
    const char *s;
  } cases[] = { { 2.0, "2.0" }, { 120.0, "120.0" }, { 0.5, "0.5" }, { 2.25, "2.25" }, { 0.1, "0.1" } };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_free char *r = py_float_repr (cases[i].v);
      CHECK_STR (r, cases[i].s);
    }
  json_t *i = json_integer (3);
  cleanup_free char *s = py_number_str (i);
  json_decref (i);
  CHECK_STR (s, "3");
}

static void
test_lossy_json_strings (void)
{
  json_t *j = json_str_lossy ("ok\xff", 3);
  CHECK (j != NULL);
  CHECK_STR (json_string_value (j), "ok\xef\xbf\xbd");
  json_decref (j);
  CHECK (utf8_valid ("\xe2\x82\xac", 3));
  CHECK (!utf8_valid ("\xe2\x82", 2));
  CHECK (!utf8_valid ("\xed\xa0\x80", 3)); /* a surrogate */
}

UNIT_MAIN_BEGIN ("test-executor-units")
RUN_TEST (test_split_single_commands);
RUN_TEST (test_split_multiple_commands);
RUN_TEST (test_split_like_openhands);
RUN_TEST (test_escape_like_openhands);
RUN_TEST (test_bash_prompt_count);
RUN_TEST (test_terminal_renders_like_a_screen);
RUN_TEST (test_terminal_joins_wrapped_lines_and_keeps_history);
RUN_TEST (test_terminal_history_limit);
RUN_TEST (test_terminal_matches_libvterm_screen);
RUN_TEST (test_terminal_alternate_screen);
RUN_TEST (test_terminal_insert_delete_and_wide_characters);
RUN_TEST (test_unified_diff_matches_difflib);
RUN_TEST (test_truncate_middle_counts_characters);
RUN_TEST (test_python_number_texts);
RUN_TEST (test_lossy_json_strings);
UNIT_MAIN_END
