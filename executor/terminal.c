/* terminal.c: see terminal.h.
 *
 * libvterm's state layer (VTermState) parses the byte stream and keeps the
 * terminal state (cursor, modes, scroll region, character sets, pending
 * wrap); the cells live here.  libvterm's own screen layer (VTermScreen)
 * is not used: it keeps a 36-byte cell with colours and attributes for
 * every position of the 1000-column screen (0.9 MiB for 24 rows, all of it
 * touched by the first clear), scrolls by moving whole rows of cells and
 * extracts text by visiting every column.  Here a cell is one code point,
 * a row holds only the columns written so far, scrolling rotates row
 * pointers, and colours are dropped at once (capture-pane without -e shows
 * none either).  So the cost of a command follows the text it prints, not
 * the screen width.
 *
 * The alternate screen (DECSET 1047/1049, used by full-screen programs) is
 * kept apart from the main screen as tmux does: while it is shown the pane
 * is history + alternate screen and nothing scrolls into history; leaving
 * it brings the main screen back. */
#include "config.h"
#include "terminal.h"

#include <stdbool.h>
#include <string.h>
#include <vterm.h>

#include "common/utils.h"

/* The right half of a double-width character. */
#define WIDE_CONT 0xffffffffu
/* Combining characters kept per cell besides the base character. */
#define COMB_MAX (VTERM_MAX_CHARS_PER_CELL - 1)

struct row
{
  uint32_t *cells;            /* CAP entries; 0 is blank; cells at LEN and beyond are 0 */
  uint32_t (*comb)[COMB_MAX]; /* combining characters, allocated with the first one */
  int len, cap;
};

struct hline
{
  char *text;
  size_t len;
  /* The last column was used: the next line is taken as the continuation of
   * this one (libvterm 0.1.4 reports no wrap flag, and with 1000 columns a
   * real line that ends exactly at the margin is rare). */
  bool full;
};

struct term
{
  VTerm *vt;
  VTermState *state;
  int rows, cols;
  struct row *screen; /* the rows shown */
  struct row *main;   /* the main screen while the alternate one is shown, else NULL */
  struct hline *hist; /* ring buffer of HIST_CAP lines */
  size_t hist_cap, hist_start, hist_len;
  uint64_t generation;
  term_write_back_fn write_back;
  void *user;
};

static size_t
put_utf8 (char *out, uint32_t c)
{
  if (c < 0x80)
    {
      out[0] = (char) c;
      return 1;
    }
  if (c < 0x800)
    {
      out[0] = (char) (0xc0 | (c >> 6));
      out[1] = (char) (0x80 | (c & 0x3f));
      return 2;
    }
  if (c < 0x10000)
    {
      out[0] = (char) (0xe0 | (c >> 12));
      out[1] = (char) (0x80 | ((c >> 6) & 0x3f));
      out[2] = (char) (0x80 | (c & 0x3f));
      return 3;
    }
  if (c > 0x10ffff)
    c = 0xfffd;
  out[0] = (char) (0xf0 | (c >> 18));
  out[1] = (char) (0x80 | ((c >> 12) & 0x3f));
  out[2] = (char) (0x80 | ((c >> 6) & 0x3f));
  out[3] = (char) (0x80 | (c & 0x3f));
  return 4;
}

/* ---- rows ------------------------------------------------------------------ */

static void
row_free (struct row *r)
{
  free (r->cells);
  free (r->comb);
  memset (r, 0, sizeof (*r));
}

static void
rows_free (struct row *rows, int n)
{
  if (rows == NULL)
    return;
  for (int i = 0; i < n; i++)
    row_free (&rows[i]);
  free (rows);
}

/* Makes room for N cells (N <= cols); new cells are blank. */
static void
row_reserve (struct row *r, int n)
{
  if (n <= r->cap)
    return;
  int cap = r->cap ? r->cap * 2 : 64;
  if (cap < n)
    cap = n;
  r->cells = xrealloc (r->cells, (size_t) cap * sizeof (uint32_t));
  memset (r->cells + r->cap, 0, (size_t) (cap - r->cap) * sizeof (uint32_t));
  if (r->comb)
    {
      r->comb = xrealloc (r->comb, (size_t) cap * sizeof (*r->comb));
      memset (r->comb + r->cap, 0, (size_t) (cap - r->cap) * sizeof (*r->comb));
    }
  r->cap = cap;
}

static void
row_trim (struct row *r)
{
  while (r->len > 0 && r->cells[r->len - 1] == 0)
    r->len--;
}

/* Blanks columns [FROM, TO). */
static void
row_clear (struct row *r, int from, int to)
{
  if (to > r->len)
    to = r->len;
  if (from >= to)
    return;
  memset (r->cells + from, 0, (size_t) (to - from) * sizeof (uint32_t));
  if (r->comb)
    memset (r->comb + from, 0, (size_t) (to - from) * sizeof (*r->comb));
  if (to == r->len)
    {
      r->len = from;
      row_trim (r);
    }
}

/* Room for N more bytes (and the NUL) in B. */
static void
buf_reserve (struct ohbox_buf *b, size_t n)
{
  if (b->len + n + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n + 1)
    cap *= 2;
  b->data = xrealloc (b->data, cap);
  b->cap = cap;
}

/* Appends the row as UTF-8 without trailing blanks; returns the bytes
 * appended.  *FULL: the last column is used. */
static size_t
row_append (struct ohbox_buf *b, const struct row *r, int cols, bool *full)
{
  buf_reserve (b, (size_t) r->len * VTERM_MAX_CHARS_PER_CELL * 4);
  size_t start = b->len, n = b->len;
  char *out = b->data;
  for (int c = 0; c < r->len; c++)
    {
      uint32_t ch = r->cells[c];
      if (ch == WIDE_CONT)
        continue;
      if (ch == 0)
        {
          out[n++] = ' ';
          continue;
        }
      n += put_utf8 (out + n, ch);
      if (r->comb)
        for (int i = 0; i < COMB_MAX && r->comb[c][i]; i++)
          n += put_utf8 (out + n, r->comb[c][i]);
    }
  /* Right-strip spaces (tmux pads lines; the Python server strips them). */
  while (n > start && out[n - 1] == ' ')
    n--;
  out[n] = '\0';
  b->len = n;
  *full = r->len == cols && cols > 0 && r->cells[cols - 1] != 0;
  return n - start;
}

/* ---- history ---------------------------------------------------------------- */

static void
hist_clear (struct term *t)
{
  for (size_t i = 0; i < t->hist_len; i++)
    free (t->hist[(t->hist_start + i) % t->hist_cap].text);
  t->hist_start = 0;
  t->hist_len = 0;
}

static void
hist_push (struct term *t, const struct row *r)
{
  if (t->hist_cap == 0)
    return;
  struct hline line;
  struct ohbox_buf b = { 0 };
  line.len = row_append (&b, r, t->cols, &line.full);
  /* Exactly sized: 10000 lines of history stay small. */
  line.text = line.len ? xrealloc (b.data, line.len + 1) : (free (b.data), NULL);
  if (t->hist_len == t->hist_cap)
    {
      /* History limit reached: the oldest line goes, as in tmux. */
      free (t->hist[t->hist_start].text);
      t->hist[t->hist_start] = line;
      t->hist_start = (t->hist_start + 1) % t->hist_cap;
    }
  else
    {
      t->hist[(t->hist_start + t->hist_len) % t->hist_cap] = line;
      t->hist_len++;
    }
}

/* ---- libvterm state callbacks -------------------------------------------------- */

static int
cb_putglyph (VTermGlyphInfo *info, VTermPos pos, void *user)
{
  struct term *t = user;
  if (pos.row < 0 || pos.row >= t->rows || pos.col < 0 || pos.col >= t->cols)
    return 1;
  struct row *r = &t->screen[pos.row];
  int width = info->width > 0 ? info->width : 1;
  int end = pos.col + width > t->cols ? t->cols : pos.col + width;
  row_reserve (r, end);
  r->cells[pos.col] = info->chars[0] ? info->chars[0] : ' ';
  if (info->chars[0] && info->chars[1] && r->comb == NULL)
    r->comb = xcalloc ((size_t) r->cap, sizeof (*r->comb));
  if (r->comb)
    {
      memset (r->comb[pos.col], 0, sizeof (r->comb[pos.col]));
      for (int i = 0; i < COMB_MAX && info->chars[0] && info->chars[i + 1]; i++)
        r->comb[pos.col][i] = info->chars[i + 1];
    }
  for (int c = pos.col + 1; c < end; c++)
    {
      r->cells[c] = WIDE_CONT;
      if (r->comb)
        memset (r->comb[c], 0, sizeof (r->comb[c]));
    }
  if (end > r->len)
    r->len = end;
  t->generation++;
  return 1;
}

static int
cb_erase (VTermRect rect, int selective OHBOX_UNUSED, void *user)
{
  struct term *t = user;
  for (int row = rect.start_row; row < rect.end_row && row < t->rows; row++)
    if (row >= 0)
      row_clear (&t->screen[row], rect.start_col, rect.end_col);
  t->generation++;
  return 1;
}

/* Copies cells between rectangles of the same size (overlapping allowed). */
static int
cb_moverect (VTermRect dest, VTermRect src, void *user)
{
  struct term *t = user;
  int nrows = dest.end_row - dest.start_row, ncols = dest.end_col - dest.start_col;
  if (nrows <= 0 || ncols <= 0)
    return 1;
  uint32_t *tmp = xmalloc ((size_t) ncols * sizeof (uint32_t));
  uint32_t (*tcomb)[COMB_MAX] = NULL;
  bool down = dest.start_row > src.start_row;
  for (int i = 0; i < nrows; i++)
    {
      int k = down ? nrows - 1 - i : i;
      struct row *s = &t->screen[src.start_row + k], *d = &t->screen[dest.start_row + k];
      bool any = false, any_comb = false;
      for (int c = 0; c < ncols; c++)
        {
          int sc = src.start_col + c;
          tmp[c] = sc < s->len ? s->cells[sc] : 0;
          any |= tmp[c] != 0;
          if (s->comb && sc < s->len && s->comb[sc][0])
            {
              if (tcomb == NULL)
                tcomb = xcalloc ((size_t) ncols, sizeof (*tcomb));
              memcpy (tcomb[c], s->comb[sc], sizeof (tcomb[c]));
              any_comb = true;
            }
          else if (tcomb)
            memset (tcomb[c], 0, sizeof (tcomb[c]));
        }
      row_clear (d, dest.start_col, dest.end_col);
      if (!any)
        continue;
      row_reserve (d, dest.end_col);
      memcpy (d->cells + dest.start_col, tmp, (size_t) ncols * sizeof (uint32_t));
      if (any_comb && d->comb == NULL)
        d->comb = xcalloc ((size_t) d->cap, sizeof (*d->comb));
      if (any_comb)
        memcpy (d->comb + dest.start_col, tcomb, (size_t) ncols * sizeof (*tcomb));
      if (dest.end_col > d->len)
        d->len = dest.end_col;
      row_trim (d);
    }
  free (tmp);
  free (tcomb);
  t->generation++;
  return 1;
}

/* Full-width scrolls (line feeds at the bottom, IL/DL, SU/SD) rotate rows;
 * lines leaving the top of the main screen go to the history.  Partial
 * scrolls (ICH/DCH, left/right margins) fall back to moverect + erase. */
static int
cb_scrollrect (VTermRect rect, int downward, int rightward, void *user)
{
  struct term *t = user;
  if (rightward != 0 || rect.start_col != 0 || rect.end_col != t->cols || downward == 0)
    return 0;
  int height = rect.end_row - rect.start_row;
  int n = downward > 0 ? downward : -downward;
  if (height <= 0)
    return 1;
  if (n > height)
    n = height;
  struct row *base = t->screen + rect.start_row;
  struct row *moved = xmalloc ((size_t) n * sizeof (struct row));
  if (downward > 0)
    {
      if (rect.start_row == 0 && t->main == NULL)
        for (int i = 0; i < n; i++)
          hist_push (t, &base[i]);
      memcpy (moved, base, (size_t) n * sizeof (struct row));
      memmove (base, base + n, (size_t) (height - n) * sizeof (struct row));
      memcpy (base + height - n, moved, (size_t) n * sizeof (struct row));
      for (int i = height - n; i < height; i++)
        row_clear (&base[i], 0, t->cols);
    }
  else
    {
      memcpy (moved, base + height - n, (size_t) n * sizeof (struct row));
      memmove (base + n, base, (size_t) (height - n) * sizeof (struct row));
      memcpy (base, moved, (size_t) n * sizeof (struct row));
      for (int i = 0; i < n; i++)
        row_clear (&base[i], 0, t->cols);
    }
  free (moved);
  t->generation++;
  return 1;
}

static int
cb_settermprop (VTermProp prop, VTermValue *val, void *user)
{
  struct term *t = user;
  if (prop != VTERM_PROP_ALTSCREEN)
    return 1;
  if (val->boolean && t->main == NULL)
    {
      t->main = t->screen;
      t->screen = xcalloc ((size_t) t->rows, sizeof (struct row));
    }
  else if (!val->boolean && t->main != NULL)
    {
      rows_free (t->screen, t->rows);
      t->screen = t->main;
      t->main = NULL;
    }
  t->generation++;
  return 1;
}

static void
cb_output (const char *s, size_t len, void *user)
{
  struct term *t = user;
  if (t->write_back)
    t->write_back (s, len, t->user);
}

static const VTermStateCallbacks state_callbacks = {
  .putglyph = cb_putglyph,
  .scrollrect = cb_scrollrect,
  .moverect = cb_moverect,
  .erase = cb_erase,
  .settermprop = cb_settermprop,
};

/* ---- the interface -------------------------------------------------------------- */

struct term *
term_new (int rows, int cols, size_t history_limit, term_write_back_fn write_back, void *user)
{
  struct term *t = xcalloc (1, sizeof (*t));
  t->rows = rows;
  t->cols = cols;
  t->hist_cap = history_limit;
  t->hist = xcalloc (history_limit ? history_limit : 1, sizeof (struct hline));
  t->write_back = write_back;
  t->user = user;
  t->screen = xcalloc ((size_t) rows, sizeof (struct row));
  t->vt = vterm_new (rows, cols);
  if (t->vt == NULL)
    abort ();
  vterm_set_utf8 (t->vt, 1);
  vterm_output_set_callback (t->vt, cb_output, t);
  t->state = vterm_obtain_state (t->vt);
  vterm_state_set_callbacks (t->state, &state_callbacks, t);
  vterm_state_reset (t->state, 1);
  return t;
}

void
term_free (struct term *t)
{
  if (t == NULL)
    return;
  hist_clear (t);
  free (t->hist);
  rows_free (t->screen, t->rows);
  rows_free (t->main, t->rows);
  vterm_free (t->vt);
  free (t);
}

void
term_feed (struct term *t, const char *data, size_t len)
{
  vterm_input_write (t->vt, data, len);
}

uint64_t
term_generation (struct term *t)
{
  return t->generation;
}

char *
term_render (struct term *t, size_t *len)
{
  struct ohbox_buf b = { 0 };
  bool prev_full = false, first = true;
  size_t last_nonempty_end = 0; /* length of b up to the last non-empty line */

  for (size_t i = 0; i < t->hist_len; i++)
    {
      struct hline *l = &t->hist[(t->hist_start + i) % t->hist_cap];
      if (!first && !prev_full)
        ohbox_buf_append (&b, "\n", 1);
      ohbox_buf_append (&b, l->text, l->len);
      if (l->len)
        last_nonempty_end = b.len;
      prev_full = l->full;
      first = false;
    }
  for (int row = 0; row < t->rows; row++)
    {
      bool full;
      if (!first && !prev_full)
        ohbox_buf_append (&b, "\n", 1);
      size_t n = row_append (&b, &t->screen[row], t->cols, &full);
      if (n)
        last_nonempty_end = b.len;
      prev_full = full;
      first = false;
    }
  /* Trailing empty lines carry nothing (every use strips them). */
  if (b.data == NULL)
    ohbox_buf_append (&b, "", 0);
  b.len = last_nonempty_end;
  b.data[b.len] = '\0';
  if (len)
    *len = b.len;
  return b.data;
}

char *
term_screen_row (struct term *t, int row)
{
  struct ohbox_buf b = { 0 };
  bool full;
  ohbox_buf_append (&b, "", 0);
  if (row >= 0 && row < t->rows)
    row_append (&b, &t->screen[row], t->cols, &full);
  return b.data;
}

void
term_reset_to (struct term *t, const char *text)
{
  static const char clear[] = "\033[H\033[2J";
  hist_clear (t);
  vterm_input_write (t->vt, clear, sizeof (clear) - 1);
  struct ohbox_buf b = { 0 };
  for (const char *p = text; *p; p++)
    {
      if (*p == '\n')
        ohbox_buf_append (&b, "\r\n", 2);
      else
        ohbox_buf_append (&b, p, 1);
    }
  if (b.len)
    vterm_input_write (t->vt, b.data, b.len);
  free (b.data);
  /* Drop what the redraw itself may have scrolled out. */
  hist_clear (t);
  t->generation++;
}
