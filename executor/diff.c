/* diff.c: unified_diff (editor.h).  The server reports
 * difflib.unified_diff(old.split('\n'), new.split('\n'), path, path, n=0)
 * with every line right-stripped.  Common leading and trailing lines are
 * trimmed, then the middle is diffed by longest common subsequence (a
 * DP table bounded in size; beyond it the middle is one replacement). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "editor.h"
#include "common/utils.h"

#define MAX_DP_CELLS (4u << 20)

struct lines
{
  const char **s;
  size_t *len;
  size_t n;
};

static void
split (const char *text, struct lines *l)
{
  size_t cap = 16;
  l->s = xmalloc (cap * sizeof (char *));
  l->len = xmalloc (cap * sizeof (size_t));
  l->n = 0;
  const char *p = text;
  for (;;)
    {
      const char *nl = strchr (p, '\n');
      if (l->n == cap)
        {
          cap *= 2;
          l->s = xrealloc (l->s, cap * sizeof (char *));
          l->len = xrealloc (l->len, cap * sizeof (size_t));
        }
      l->s[l->n] = p;
      l->len[l->n] = nl ? (size_t) (nl - p) : strlen (p);
      l->n++;
      if (!nl)
        break;
      p = nl + 1;
    }
}

static bool
eq (const struct lines *a, size_t i, const struct lines *b, size_t j)
{
  return a->len[i] == b->len[j] && memcmp (a->s[i], b->s[j], a->len[i]) == 0;
}

static void
append_rstripped (struct ohbox_buf *o, char tag, const char *s, size_t n)
{
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\v' || s[n - 1] == '\f'))
    n--;
  if (o->len)
    ohbox_buf_append (o, "\n", 1);
  ohbox_buf_append (o, &tag, 1);
  ohbox_buf_append (o, s, n);
}

static void
range_str (char *buf, size_t start, size_t stop)
{
  size_t beginning = start + 1, length = stop - start;
  if (length == 1)
    sprintf (buf, "%zu", beginning);
  else
    sprintf (buf, "%zu,%zu", length ? beginning : beginning - 1, length);
}

static void
hunk (struct ohbox_buf *o, const struct lines *a, size_t i1, size_t i2, const struct lines *b, size_t j1, size_t j2)
{
  char ra[64], rb[64], head[160];
  range_str (ra, i1, i2);
  range_str (rb, j1, j2);
  snprintf (head, sizeof (head), "@@ -%s +%s @@", ra, rb);
  if (o->len)
    ohbox_buf_append (o, "\n", 1);
  ohbox_buf_append (o, head, strlen (head));
  for (size_t i = i1; i < i2; i++)
    append_rstripped (o, '-', a->s[i], a->len[i]);
  for (size_t j = j1; j < j2; j++)
    append_rstripped (o, '+', b->s[j], b->len[j]);
}

char *
unified_diff (const char *old_text, const char *new_text, const char *path)
{
  struct lines a, b;
  split (old_text, &a);
  split (new_text, &b);
  size_t pre = 0;
  while (pre < a.n && pre < b.n && eq (&a, pre, &b, pre))
    pre++;
  size_t suf = 0;
  while (suf < a.n - pre && suf < b.n - pre && eq (&a, a.n - 1 - suf, &b, b.n - 1 - suf))
    suf++;
  size_t n = a.n - pre - suf, m = b.n - pre - suf;
  struct ohbox_buf body = { 0 };
  if (n || m)
    {
      if (n && m && (uint64_t) (n + 1) * (m + 1) <= MAX_DP_CELLS)
        {
          /* LCS lengths of suffixes: dp[i][j] for a[pre+i..], b[pre+j..]. */
          uint32_t *dp = xcalloc ((n + 1) * (m + 1), sizeof (uint32_t));
#define DP(i, j) dp[(i) * (m + 1) + (j)]
          for (size_t i = n; i-- > 0;)
            for (size_t j = m; j-- > 0;)
              DP (i, j) = eq (&a, pre + i, &b, pre + j)
                            ? DP (i + 1, j + 1) + 1
                            : (DP (i + 1, j) >= DP (i, j + 1) ? DP (i + 1, j) : DP (i, j + 1));
          size_t i = 0, j = 0, hi = 0, hj = 0;
          bool open = false;
          while (i < n || j < m)
            {
              if (i < n && j < m && eq (&a, pre + i, &b, pre + j))
                {
                  if (open)
                    hunk (&body, &a, pre + hi, pre + i, &b, pre + hj, pre + j);
                  open = false;
                  i++, j++;
                  continue;
                }
              if (!open)
                {
                  open = true;
                  hi = i;
                  hj = j;
                }
              if (j < m && (i == n || DP (i, j + 1) >= DP (i + 1, j)))
                j++;
              else
                i++;
            }
          if (open)
            hunk (&body, &a, pre + hi, pre + n, &b, pre + hj, pre + m);
#undef DP
          free (dp);
        }
      else
        hunk (&body, &a, pre, pre + n, &b, pre, pre + m);
    }
  char *out;
  if (body.len == 0)
    out = xstrdup ("");
  else
    out = xasprintf ("--- %s\n+++ %s\n%s", path, path, body.data);
  free (body.data);
  free (a.s);
  free (a.len);
  free (b.s);
  free (b.len);
  return out;
}
