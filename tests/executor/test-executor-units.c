/* Unit tests of the executor's pure pieces: top-level command splitting,
 * terminal rendering, unified diffs, truncation and Python number texts.
 * Built by executor/local.mk (check_PROGRAMS), run by
 * tests/integration/executor-units.sh. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cmdsplit.h"
#include "editor.h"
#include "obs.h"
#include "terminal.h"
#include "unit.h"
#include "utils.h"

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
    "# comment\necho after comment",
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
}

static void
test_terminal_renders_like_a_screen (void)
{
  struct term *t = term_new (24, 80, 100, NULL, NULL);
  const char out[] = "10%\r50%\r100%\r\n\033[1;31mred\033[0m text   \r\nabc\bX\r\n";
  term_feed (t, out, sizeof (out) - 1);
  cleanup_free char *pane = term_render (t, NULL);
  CHECK_STR (pane, "100%\nred text\nabX");
  term_free (t);
}

static void
test_terminal_joins_wrapped_lines_and_keeps_history (void)
{
  struct term *t = term_new (4, 10, 100, NULL, NULL);
  const char out[] = "0123456789abcdef\r\nl2\r\nl3\r\nl4\r\nl5\r\n";
  term_feed (t, out, sizeof (out) - 1);
  cleanup_free char *pane = term_render (t, NULL);
  CHECK_STR (pane, "0123456789abcdef\nl2\nl3\nl4\nl5");
  term_reset_to (t, "\nprompt\n");
  cleanup_free char *after = term_render (t, NULL);
  CHECK_STR (after, "\nprompt");
  term_free (t);
}

static void
test_terminal_history_limit (void)
{
  struct term *t = term_new (2, 20, 3, NULL, NULL);
  for (int i = 0; i < 10; i++)
    {
      char line[16];
      int n = snprintf (line, sizeof (line), "line%d\r\n", i);
      term_feed (t, line, (size_t) n);
    }
  cleanup_free char *pane = term_render (t, NULL);
  /* 3 lines of history + the 2-row screen (the last row is empty). */
  CHECK_STR (pane, "line6\nline7\nline8\nline9");
  term_free (t);
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
RUN_TEST (test_terminal_renders_like_a_screen);
RUN_TEST (test_terminal_joins_wrapped_lines_and_keeps_history);
RUN_TEST (test_terminal_history_limit);
RUN_TEST (test_unified_diff_matches_difflib);
RUN_TEST (test_truncate_middle_counts_characters);
RUN_TEST (test_python_number_texts);
RUN_TEST (test_lossy_json_strings);
UNIT_MAIN_END
