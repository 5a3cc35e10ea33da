/* cmdsplit.c: splits a `run` command into its top-level commands, and
 * escapes it the way the Python server does before typing it.
 *
 * The Python server parses the command with bashlex and refuses to run more
 * than one top-level command at once ("a; b", "a && b", loops and heredocs
 * are one command; two lines "a" and "b" are two).  This is a small scanner
 * that knows just enough shell syntax for that decision: quotes, escapes,
 * $( ) ` ` ${ } substitutions, comments, heredocs, compound commands
 * (if/fi, case/esac, for|while|until/done, { }, ( )) and lines ending in
 * |, && or ||.  Like the Python server when bashlex fails, anything it does
 * not understand (unbalanced input) is sent as one command unchanged, and
 * so are the constructs bashlex does not implement ([[ ]], (( )), time,
 * select, coproc, arithmetic for).  The pieces are cut as split_bash_commands
 * cuts them: text between two commands (comments) belongs to the first,
 * text before the first command (a leading comment line) is a piece of its
 * own.
 *
 * escape_bash_special_chars doubles a backslash in front of ; & | > < the
 * way the Python server's function of that name does (its tmux would eat
 * one in front of a trailing ";"): everywhere except in words that are
 * entirely quoted or substituted, in heredocs and after the last word. */
#include "config.h"
#include "cmdsplit.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/utils.h"

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
  bool bad;         /* not understood */
  bool unsupported; /* valid, but bashlex does not implement it */
  bool after_redir; /* the next word is a redirection target */
  bool after_for;   /* the last word was `for` at command position */
  /* What escape_bash_special_chars needs: the words (outside heredocs)
   * and the heredoc regions, in order. */
  struct span *spans;
  size_t n_spans, cap_spans;
  size_t hd_region; /* start of the heredoc region being read, or SIZE_MAX */
  /* Lines bash reads as top-level input, each answered with a prompt. */
  size_t line_ends;
  bool pending_line; /* text after the last of them */
};

enum span_kind
{
  SPAN_WORD,      /* escaped */
  SPAN_PRESERVED, /* a word entirely quoted or substituted: kept */
  SPAN_HEREDOC,   /* from "<<" to the end of the last body: kept */
};

struct span
{
  size_t start, end;
  enum span_kind kind;
};

static void
add_span (struct scan *sc, size_t start, size_t end, enum span_kind kind)
{
  if (sc->n_spans == sc->cap_spans)
    {
      sc->cap_spans = sc->cap_spans ? sc->cap_spans * 2 : 16;
      sc->spans = xrealloc (sc->spans, sc->cap_spans * sizeof (struct span));
    }
  sc->spans[sc->n_spans++] = (struct span){ start, end, kind };
}

/* Only the blanks scan_command skips end a word: \v and \f are word
 * characters, as in bash (with isspace here, a command holding one never
 * advanced and grew its spans until memory ran out: fuzz/fuzz-cmdsplit). */
static bool
is_word_char (char c)
{
  return c && c != ' ' && c != '\t' && c != '\n' && c != '\r' && strchr (";&|()<>", c) == NULL;
}

/* Steps over the closing quote at s->i; false when the input ended first. */
static bool
skip_closing (struct scan *sc)
{
  if (sc->i >= sc->len)
    return false;
  sc->i++;
  return true;
}

/* True at `$(` or `${`. */
static bool
at_substitution (const struct scan *sc)
{
  return sc->s[sc->i] == '$' && (sc->s[sc->i + 1] == '(' || sc->s[sc->i + 1] == '{');
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
  return skip_closing (sc);
}

static bool
skip_backquote (struct scan *sc)
{
  sc->i++;
  while (sc->i < sc->len && sc->s[sc->i] != '`')
    sc->i += sc->s[sc->i] == '\\' ? 2 : 1;
  return skip_closing (sc);
}

static bool
skip_double (struct scan *sc)
{
  sc->i++;
  while (sc->i < sc->len && sc->s[sc->i] != '"')
    {
      if (sc->s[sc->i] == '\\')
        sc->i += 2;
      else if (at_substitution (sc))
        {
          if (!skip_dollar (sc))
            return false;
        }
      else if (sc->s[sc->i] == '`')
        {
          if (!skip_backquote (sc))
            return false;
        }
      else
        sc->i++;
    }
  return skip_closing (sc);
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
      else if (at_substitution (sc))
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

/* Any of the above, by the character at s->i. */
static bool
skip_region (struct scan *sc)
{
  switch (sc->s[sc->i])
    {
    case '\'':
      return skip_single (sc);
    case '"':
      return skip_double (sc);
    case '`':
      return skip_backquote (sc);
    default:
      return skip_dollar (sc);
    }
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
  /* bashlex raises NotImplementedError on these: the Python server then
   * sends the whole text unchanged, as for a parse error. */
  if (word_is (w, n, "[[") || word_is (w, n, "time") || word_is (w, n, "select") || word_is (w, n, "coproc"))
    sc->unsupported = true;
  sc->after_for = word_is (w, n, "for");
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
  if (sc->hd_region != SIZE_MAX)
    {
      /* The delimiter line's newline stays outside (nothing to escape). */
      size_t end = sc->i > sc->hd_region && sc->s[sc->i - 1] == '\n' ? sc->i - 1 : sc->i;
      add_span (sc, sc->hd_region, end, SPAN_HEREDOC);
      sc->hd_region = SIZE_MAX;
    }
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

static bool
is_preserved_word (const char *w, size_t n)
{
  /* The Python server's test, on the raw word text. */
  return n >= 2
         && ((w[0] == '"' && w[n - 1] == '"') || (w[0] == '\'' && w[n - 1] == '\'')
             || (w[0] == '$' && w[1] == '(' && w[n - 1] == ')') || (w[0] == '`' && w[n - 1] == '`'));
}

/* Scans CMD: fills SC (spans) and the start offsets of the top-level
 * commands.  Returns false when the text is not understood (the caller
 * then treats it as one command, unescaped). */
static bool
scan_command (const char *cmd, struct scan *sc, size_t **starts, size_t *nstarts)
{
  memset (sc, 0, sizeof (*sc));
  sc->s = cmd;
  sc->len = strlen (cmd);
  sc->cmd_pos = true;
  sc->hd_region = SIZE_MAX;
  size_t cap = 0;
  *starts = NULL;
  *nstarts = 0;
  /* has_cmd: the current top-level command holds a word (comment-only and
   * blank lines are not commands). */
  bool has_cmd = false;

  while (sc->i < sc->len && !sc->bad)
    {
      char c = sc->s[sc->i];
      if (c == '\n')
        {
          sc->i++;
          if (sc->n_hd)
            skip_heredoc_bodies (sc);
          if (sc->depth == 0 && sc->last_op != '|')
            {
              sc->line_ends++;
              sc->pending_line = false;
            }
          if (sc->depth == 0 && sc->last_op != '|' && has_cmd)
            has_cmd = false;
          if (sc->last_op != '|')
            sc->cmd_pos = true;
          continue;
        }
      if (c == ' ' || c == '\t' || c == '\r')
        {
          sc->i++;
          continue;
        }
      sc->pending_line = true;
      if (c == '#')
        {
          /* A comment belongs to the command before it, if any. */
          while (sc->i < sc->len && sc->s[sc->i] != '\n')
            sc->i++;
          continue;
        }
      if (!has_cmd)
        {
          if (*nstarts == cap)
            {
              cap = cap ? cap * 2 : 8;
              *starts = xrealloc (*starts, cap * sizeof (size_t));
            }
          (*starts)[(*nstarts)++] = sc->i;
          has_cmd = true;
        }
      if (c == '\\' && sc->s[sc->i + 1] == '\n')
        {
          sc->i += 2;
          continue;
        }
      if (c == ';' || c == '&' || c == '|')
        {
          bool dbl = sc->s[sc->i + 1] == c;
          if (c == ';' && dbl)
            sc->i += 2; /* ;; ends a case item */
          else
            sc->i += dbl ? 2 : 1;
          if (c == '|' || (c == '&' && dbl))
            sc->last_op = '|';
          else
            sc->last_op = ';';
          if (c == '&' && sc->s[sc->i] == '>')
            continue;
          sc->cmd_pos = true;
          continue;
        }
      if (c == '(' || c == ')')
        {
          /* (( )) and for (( )) are not implemented by bashlex. */
          if (c == '(' && sc->s[sc->i + 1] == '(' && (sc->cmd_pos || sc->after_for))
            sc->unsupported = true;
          sc->i++;
          if (sc->case_depth == 0)
            sc->depth += c == '(' ? 1 : -1;
          if (sc->depth < 0)
            sc->bad = true;
          sc->cmd_pos = true;
          sc->last_op = ';';
          continue;
        }
      if (c == '<' || c == '>')
        {
          if (c == '<' && sc->s[sc->i + 1] == '<' && sc->s[sc->i + 2] != '<')
            {
              bool strip = sc->s[sc->i + 2] == '-';
              if (sc->hd_region == SIZE_MAX)
                sc->hd_region = sc->i;
              sc->i += strip ? 3 : 2;
              heredoc_word (sc, strip);
            }
          else
            {
              while (sc->i < sc->len && (sc->s[sc->i] == '<' || sc->s[sc->i] == '>' || sc->s[sc->i] == '&'))
                sc->i++;
              sc->after_redir = true;
            }
          sc->last_op = 'w';
          continue;
        }
      /* A word: quotes and substitutions are part of it. */
      size_t wstart = sc->i;
      bool plain = true;
      while (sc->i < sc->len && is_word_char (sc->s[sc->i]) && !sc->bad)
        {
          char d = sc->s[sc->i];
          if (d == '\\')
            {
              plain = false;
              sc->i += sc->i + 1 < sc->len ? 2 : 1;
            }
          else if (d == '\'' || d == '"' || d == '`' || at_substitution (sc))
            {
              plain = false;
              if (!skip_region (sc))
                sc->bad = true;
            }
          else
            sc->i++;
        }
      if (sc->i > sc->len)
        sc->i = sc->len;
      if (sc->hd_region == SIZE_MAX)
        {
          /* A redirection target is not a word node for bashlex: the
           * Python server escapes it with the text around it. */
          bool keep = !sc->after_redir && is_preserved_word (sc->s + wstart, sc->i - wstart);
          add_span (sc, wstart, sc->i, keep ? SPAN_PRESERVED : SPAN_WORD);
        }
      sc->after_redir = false;
      bool was_for = sc->after_for;
      if (plain)
        keyword (sc, sc->s + wstart, sc->i - wstart);
      else
        sc->cmd_pos = false;
      if (was_for)
        sc->after_for = false;
      sc->last_op = 'w';
    }
  return !(sc->bad || sc->depth != 0 || sc->n_hd);
}

size_t
bash_prompt_count (const char *cmd)
{
  struct scan sc;
  cleanup_free size_t *starts = NULL;
  size_t nstarts = 0;
  bool ok = scan_command (cmd, &sc, &starts, &nstarts);
  free (sc.spans);
  if (!ok)
    return 1;
  /* The Enter after the text ends its last line, unless that line was
   * already ended (a heredoc's end marker is the last line). */
  return sc.line_ends + (sc.pending_line || sc.line_ends == 0 ? 1 : 0);
}

size_t
split_bash_commands (const char *cmd, char ***out)
{
  struct scan sc;
  cleanup_free size_t *starts = NULL;
  size_t nstarts = 0, n = 0;
  *out = NULL;
  bool ok = scan_command (cmd, &sc, &starts, &nstarts) && !sc.unsupported;
  free (sc.spans);
  if (!ok || nstarts == 0)
    {
      /* Text that is not understood (or only comments): sent as it is. */
      add_piece (out, &n, cmd, strlen (cmd));
      return n;
    }
  /* Text before the first command that is not blank (a comment line) is a
   * piece of its own; text after a command up to the next one (comments)
   * belongs to it. */
  size_t i = 0;
  while (i < starts[0] && isspace ((unsigned char) cmd[i]))
    i++;
  if (i < starts[0])
    add_piece (out, &n, cmd, starts[0]);
  for (size_t k = 0; k < nstarts; k++)
    {
      size_t end = k + 1 < nstarts ? starts[k + 1] : strlen (cmd);
      add_piece (out, &n, cmd + starts[k], end - starts[k]);
    }
  return n;
}

/* re.sub(r'\\([;&|><])', r'\\\\\1', text) */
static void
escape_region (struct ohbox_buf *b, const char *s, size_t len)
{
  size_t from = 0;
  for (size_t i = 0; i + 1 < len; i++)
    if (s[i] == '\\' && strchr (";&|><", s[i + 1]) != NULL)
      {
        ohbox_buf_append (b, s + from, i - from);
        ohbox_buf_append (b, "\\\\", 2);
        ohbox_buf_append (b, s + i + 1, 1);
        i++;
        from = i + 1;
      }
  ohbox_buf_append (b, s + from, len - from);
}

char *
escape_bash_special_chars (const char *cmd)
{
  struct scan sc;
  cleanup_free size_t *starts = NULL;
  size_t nstarts = 0;
  if (!scan_command (cmd, &sc, &starts, &nstarts) || sc.unsupported)
    {
      free (sc.spans);
      return xstrdup (cmd);
    }
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  size_t last = 0;
  for (size_t k = 0; k < sc.n_spans; k++)
    {
      const struct span *sp = &sc.spans[k];
      if (sp->start < last)
        continue;
      if (sp->kind == SPAN_HEREDOC)
        ohbox_buf_append (&b, cmd + last, sp->end - last);
      else
        {
          escape_region (&b, cmd + last, sp->start - last);
          if (sp->kind == SPAN_PRESERVED)
            ohbox_buf_append (&b, cmd + sp->start, sp->end - sp->start);
          else
            escape_region (&b, cmd + sp->start, sp->end - sp->start);
        }
      last = sp->end;
    }
  /* After the last word: as it is. */
  ohbox_buf_append (&b, cmd + last, strlen (cmd) - last);
  free (sc.spans);
  return b.data;
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
