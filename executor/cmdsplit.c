/* cmdsplit.c: splits a `run` command into its top-level commands.
 *
 * The Python server parses the command with bashlex and refuses to run more
 * than one top-level command at once ("a; b", "a && b", loops and heredocs
 * are one command; two lines "a" and "b" are two).  This is a small scanner
 * that knows just enough shell syntax for that decision: quotes, escapes,
 * $( ) ` ` ${ } substitutions, comments, heredocs, compound commands
 * (if/fi, case/esac, for|while|until/done, { }, ( )) and lines ending in
 * |, && or ||.  Like the Python server when bashlex fails, anything it does
 * not understand (unbalanced input) is sent as one command unchanged. */
#include "config.h"
#include "cmdsplit.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "utils.h"

#define MAX_HEREDOCS 16

struct scan
{
  const char *s;
  size_t len, i;
  int depth;      /* open compound commands */
  int case_depth; /* open case statements: ')' in patterns is not a subshell */
  bool cmd_pos;   /* next word is at command position (may be a keyword) */
  char last_op;   /* last significant token: '|' for | && ||, 'w' word, 0 none */
  const char *hd_word[MAX_HEREDOCS];
  size_t hd_len[MAX_HEREDOCS];
  bool hd_strip[MAX_HEREDOCS];
  int n_hd;
  bool bad;
};

static bool
is_word_char (char c)
{
  return c && !isspace ((unsigned char) c) && strchr (";&|()<>", c) == NULL;
}

/* Skips a quoted or substituted region starting at s->i; returns false when
 * it does not end. */
static bool skip_dollar (struct scan *sc);

static bool
skip_single (struct scan *sc)
{
  sc->i++; /* opening quote */
  while (sc->i < sc->len && sc->s[sc->i] != '\'')
    sc->i++;
  if (sc->i >= sc->len)
    return false;
  sc->i++;
  return true;
}

static bool
skip_double (struct scan *sc)
{
  sc->i++;
  while (sc->i < sc->len && sc->s[sc->i] != '"')
    {
      if (sc->s[sc->i] == '\\')
        sc->i += 2;
      else if (sc->s[sc->i] == '$' && (sc->s[sc->i + 1] == '(' || sc->s[sc->i + 1] == '{'))
        {
          if (!skip_dollar (sc))
            return false;
        }
      else if (sc->s[sc->i] == '`')
        {
          sc->i++;
          while (sc->i < sc->len && sc->s[sc->i] != '`')
            sc->i += sc->s[sc->i] == '\\' ? 2 : 1;
          if (sc->i >= sc->len)
            return false;
          sc->i++;
        }
      else
        sc->i++;
    }
  if (sc->i >= sc->len)
    return false;
  sc->i++;
  return true;
}

static bool
skip_dollar (struct scan *sc)
{
  char open = sc->s[sc->i + 1];
  char close = open == '(' ? ')' : '}';
  int nest = 0;
  sc->i += 1;
  while (sc->i < sc->len)
    {
      char c = sc->s[sc->i];
      if (c == '\\')
        sc->i += 2;
      else if (c == '\'' && open == '(')
        {
          if (!skip_single (sc))
            return false;
        }
      else if (c == '"')
        {
          if (!skip_double (sc))
            return false;
        }
      else if (c == '$' && (sc->s[sc->i + 1] == '(' || sc->s[sc->i + 1] == '{'))
        {
          if (!skip_dollar (sc))
            return false;
        }
      else if (c == open)
        {
          nest++;
          sc->i++;
        }
      else if (c == close)
        {
          nest--;
          sc->i++;
          if (nest == 0)
            return true;
        }
      else
        sc->i++;
    }
  return false;
}

static bool
word_is (const char *w, size_t n, const char *kw)
{
  return strlen (kw) == n && memcmp (w, kw, n) == 0;
}

static void
keyword (struct scan *sc, const char *w, size_t n)
{
  bool at_cmd = sc->cmd_pos;
  sc->cmd_pos = false;
  if (word_is (w, n, "esac") && sc->case_depth > 0)
    {
      sc->case_depth--;
      sc->depth--;
      return;
    }
  if (!at_cmd)
    return;
  if (word_is (w, n, "if") || word_is (w, n, "for") || word_is (w, n, "while") || word_is (w, n, "until")
      || word_is (w, n, "select") || word_is (w, n, "{"))
    sc->depth++;
  else if (word_is (w, n, "case"))
    {
      sc->depth++;
      sc->case_depth++;
    }
  else if (word_is (w, n, "fi") || word_is (w, n, "done") || word_is (w, n, "}"))
    sc->depth--;
  if (word_is (w, n, "if") || word_is (w, n, "then") || word_is (w, n, "else") || word_is (w, n, "elif")
      || word_is (w, n, "do") || word_is (w, n, "while") || word_is (w, n, "until") || word_is (w, n, "{")
      || word_is (w, n, "}") || word_is (w, n, "!") || word_is (w, n, "time") || word_is (w, n, "fi")
      || word_is (w, n, "done"))
    sc->cmd_pos = true;
  if (sc->depth < 0)
    sc->bad = true;
}

/* Reads the heredoc delimiter after "<<" or "<<-". */
static void
heredoc_word (struct scan *sc, bool strip)
{
  while (sc->i < sc->len && (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t'))
    sc->i++;
  size_t start = sc->i;
  /* The delimiter may be quoted ('EOF', "EOF", \EOF): the quotes are not part of it. */
  char quote = sc->s[sc->i];
  if (quote == '\'' || quote == '"')
    {
      sc->i++;
      start = sc->i;
      while (sc->i < sc->len && sc->s[sc->i] != quote)
        sc->i++;
      if (sc->i >= sc->len || sc->n_hd >= MAX_HEREDOCS)
        {
          sc->bad = true;
          return;
        }
      sc->hd_word[sc->n_hd] = sc->s + start;
      sc->hd_len[sc->n_hd] = sc->i - start;
      sc->hd_strip[sc->n_hd++] = strip;
      sc->i++;
      return;
    }
  if (quote == '\\')
    start = ++sc->i;
  while (sc->i < sc->len && is_word_char (sc->s[sc->i]))
    sc->i++;
  if (sc->i == start || sc->n_hd >= MAX_HEREDOCS)
    {
      sc->bad = true;
      return;
    }
  sc->hd_word[sc->n_hd] = sc->s + start;
  sc->hd_len[sc->n_hd] = sc->i - start;
  sc->hd_strip[sc->n_hd++] = strip;
}

/* At a newline with pending heredocs: skips their bodies. */
static void
skip_heredoc_bodies (struct scan *sc)
{
  for (int h = 0; h < sc->n_hd; h++)
    {
      bool found = false;
      while (sc->i < sc->len)
        {
          const char *line = sc->s + sc->i;
          const char *nl = memchr (line, '\n', sc->len - sc->i);
          size_t ll = nl ? (size_t) (nl - line) : sc->len - sc->i;
          sc->i += ll + (nl ? 1 : 0);
          const char *l = line;
          size_t n = ll;
          if (sc->hd_strip[h])
            while (n && *l == '\t')
              l++, n--;
          if (n == sc->hd_len[h] && memcmp (l, sc->hd_word[h], n) == 0)
            {
              found = true;
              break;
            }
        }
      if (!found)
        sc->bad = true;
    }
  sc->n_hd = 0;
}

static void
add_piece (char ***out, size_t *n, const char *s, size_t len)
{
  while (len && isspace ((unsigned char) s[len - 1]))
    len--;
  *out = xrealloc (*out, (*n + 2) * sizeof (char *));
  (*out)[(*n)++] = xstrndup (s, len);
  (*out)[*n] = NULL;
}

size_t
split_bash_commands (const char *cmd, char ***out)
{
  struct scan sc = { .s = cmd, .len = strlen (cmd), .cmd_pos = true };
  size_t n = 0;
  *out = NULL;
  /* Start and end of the current top-level command; has_cmd: it holds a
   * word (comment-only and blank lines are not commands). */
  size_t seg_start = 0;
  bool has_cmd = false;
  size_t bounds[256][2];
  size_t nb = 0;

  while (sc.i < sc.len && !sc.bad)
    {
      char c = sc.s[sc.i];
      if (c == '\n')
        {
          sc.i++;
          if (sc.n_hd)
            skip_heredoc_bodies (&sc);
          if (sc.depth == 0 && sc.last_op != '|' && has_cmd)
            {
              if (nb == sizeof (bounds) / sizeof (bounds[0]))
                {
                  sc.bad = true;
                  break;
                }
              bounds[nb][0] = seg_start;
              bounds[nb][1] = sc.i;
              nb++;
              has_cmd = false;
              seg_start = sc.i;
            }
          else if (!has_cmd)
            seg_start = sc.i;
          if (sc.last_op != '|')
            sc.cmd_pos = true;
          continue;
        }
      if (c == ' ' || c == '\t' || c == '\r')
        {
          sc.i++;
          continue;
        }
      if (!has_cmd && c == '#')
        {
          /* A comment line before any command belongs to no command. */
          while (sc.i < sc.len && sc.s[sc.i] != '\n')
            sc.i++;
          continue;
        }
      if (c == '#')
        {
          while (sc.i < sc.len && sc.s[sc.i] != '\n')
            sc.i++;
          continue;
        }
      if (!has_cmd)
        {
          seg_start = sc.i;
          has_cmd = true;
        }
      if (c == '\\' && sc.s[sc.i + 1] == '\n')
        {
          sc.i += 2;
          continue;
        }
      if (c == ';' || c == '&' || c == '|')
        {
          bool dbl = sc.s[sc.i + 1] == c;
          if (c == ';' && dbl)
            sc.i += 2; /* ;; ends a case item */
          else
            sc.i += dbl ? 2 : 1;
          if (c == '|' || (c == '&' && dbl))
            sc.last_op = '|';
          else
            sc.last_op = ';';
          if (c == '&' && sc.s[sc.i] == '>')
            continue;
          sc.cmd_pos = true;
          continue;
        }
      if (c == '(' || c == ')')
        {
          sc.i++;
          if (sc.case_depth == 0)
            sc.depth += c == '(' ? 1 : -1;
          if (sc.depth < 0)
            sc.bad = true;
          sc.cmd_pos = true;
          sc.last_op = ';';
          continue;
        }
      if (c == '<' || c == '>')
        {
          if (c == '<' && sc.s[sc.i + 1] == '<' && sc.s[sc.i + 2] != '<')
            {
              bool strip = sc.s[sc.i + 2] == '-';
              sc.i += strip ? 3 : 2;
              heredoc_word (&sc, strip);
            }
          else
            {
              while (sc.i < sc.len && (sc.s[sc.i] == '<' || sc.s[sc.i] == '>' || sc.s[sc.i] == '&'))
                sc.i++;
            }
          sc.last_op = 'w';
          continue;
        }
      /* A word: quotes and substitutions are part of it. */
      size_t wstart = sc.i;
      bool plain = true;
      while (sc.i < sc.len && is_word_char (sc.s[sc.i]) && !sc.bad)
        {
          char d = sc.s[sc.i];
          if (d == '\\')
            {
              plain = false;
              sc.i += sc.i + 1 < sc.len ? 2 : 1;
            }
          else if (d == '\'')
            {
              plain = false;
              if (!skip_single (&sc))
                sc.bad = true;
            }
          else if (d == '"')
            {
              plain = false;
              if (!skip_double (&sc))
                sc.bad = true;
            }
          else if (d == '$' && (sc.s[sc.i + 1] == '(' || sc.s[sc.i + 1] == '{'))
            {
              plain = false;
              if (!skip_dollar (&sc))
                sc.bad = true;
            }
          else if (d == '`')
            {
              plain = false;
              sc.i++;
              while (sc.i < sc.len && sc.s[sc.i] != '`')
                sc.i += sc.s[sc.i] == '\\' ? 2 : 1;
              if (sc.i >= sc.len)
                sc.bad = true;
              else
                sc.i++;
            }
          else
            sc.i++;
        }
      if (plain)
        keyword (&sc, sc.s + wstart, sc.i - wstart);
      else
        sc.cmd_pos = false;
      sc.last_op = 'w';
    }

  if (sc.bad || sc.depth != 0 || sc.n_hd)
    nb = 0;
  else if (has_cmd)
    {
      bounds[nb][0] = seg_start;
      bounds[nb][1] = sc.len;
      nb++;
    }
  if (nb <= 1)
    {
      add_piece (out, &n, cmd, strlen (cmd));
      return n;
    }
  for (size_t k = 0; k < nb; k++)
    add_piece (out, &n, cmd + bounds[k][0], bounds[k][1] - bounds[k][0]);
  return n;
}

void
split_free (char **pieces)
{
  if (pieces == NULL)
    return;
  for (char **p = pieces; *p; p++)
    free (*p);
  free (pieces);
}
