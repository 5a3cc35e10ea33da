/* terminal.c: see terminal.h. */
#include "config.h"
#include "terminal.h"

#include <stdbool.h>
#include <string.h>
#include <vterm.h>

#include "utils.h"

struct hline
{
  char *text;
  size_t len;
  /* The last column was used: the next line is taken as the continuation of
   * this one (libvterm 0.1.4 keeps no wrap flag, and with 1000 columns a real
   * line that ends exactly at the margin is rare). */
  bool full;
};

struct term
{
  VTerm *vt;
  VTermScreen *screen;
  int rows, cols;
  struct hline *hist; /* ring buffer of HIST_CAP lines */
  size_t hist_cap, hist_start, hist_len;
  uint64_t generation;
  /* Rendered screen rows, recomputed only when libvterm reports damage. */
  char **row_text;
  size_t *row_len;
  bool *row_full;
  bool *row_dirty;
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

/* Converts one row of cells to UTF-8 without trailing blanks. */
static char *
cells_to_text (const VTermScreenCell *cells, int cols, size_t *len)
{
  char *out = xmalloc ((size_t) cols * VTERM_MAX_CHARS_PER_CELL * 4 + 1);
  size_t n = 0, last_nonblank = 0;
  for (int c = 0; c < cols; c++)
    {
      const VTermScreenCell *cell = &cells[c];
      if (cell->chars[0] == (uint32_t) -1)
        continue; /* right half of a wide character */
      if (cell->chars[0] == 0)
        {
          out[n++] = ' ';
          continue;
        }
      for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell->chars[i]; i++)
        n += put_utf8 (out + n, cell->chars[i]);
      if (cell->chars[0] != ' ')
        last_nonblank = n;
    }
  /* Right-strip spaces (tmux pads lines; the Python server strips them). */
  while (n > last_nonblank && out[n - 1] == ' ')
    n--;
  out[n] = '\0';
  *len = n;
  return out;
}

static void
hist_clear (struct term *t)
{
  for (size_t i = 0; i < t->hist_len; i++)
    free (t->hist[(t->hist_start + i) % t->hist_cap].text);
  t->hist_start = 0;
  t->hist_len = 0;
}

static void
mark_dirty (struct term *t, int start_row, int end_row)
{
  if (start_row < 0)
    start_row = 0;
  for (int r = start_row; r < end_row && r < t->rows; r++)
    t->row_dirty[r] = true;
  t->generation++;
}

static int
cb_damage (VTermRect rect, void *user)
{
  mark_dirty (user, rect.start_row, rect.end_row);
  return 1;
}

static int
cb_moverect (VTermRect dest, VTermRect src OHBOX_UNUSED, void *user)
{
  mark_dirty (user, dest.start_row, dest.end_row);
  return 0; /* let libvterm move the cells itself */
}

static int
cb_pushline (int cols, const VTermScreenCell *cells, void *user)
{
  struct term *t = user;
  struct hline line;
  line.text = cells_to_text (cells, cols, &line.len);
  line.full = cols > 0 && cells[cols - 1].chars[0] != 0;
  if (t->hist_cap == 0)
    {
      free (line.text);
      return 1;
    }
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

static const VTermScreenCallbacks screen_callbacks = {
  .damage = cb_damage,
  .moverect = cb_moverect,
  .sb_pushline = cb_pushline,
};

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
  t->row_text = xcalloc ((size_t) rows, sizeof (char *));
  t->row_len = xcalloc ((size_t) rows, sizeof (size_t));
  t->row_full = xcalloc ((size_t) rows, sizeof (bool));
  t->row_dirty = xcalloc ((size_t) rows, sizeof (bool));
  for (int r = 0; r < rows; r++)
    t->row_dirty[r] = true;
  t->vt = vterm_new (rows, cols);
  if (t->vt == NULL)
    abort ();
  vterm_set_utf8 (t->vt, 1);
  vterm_output_set_callback (t->vt, cb_output, t);
  t->screen = vterm_obtain_screen (t->vt);
  vterm_screen_set_callbacks (t->screen, &screen_callbacks, t);
  vterm_screen_reset (t->screen, 1);
  return t;
}

void
term_free (struct term *t)
{
  if (t == NULL)
    return;
  hist_clear (t);
  free (t->hist);
  for (int r = 0; r < t->rows; r++)
    free (t->row_text[r]);
  free (t->row_text);
  free (t->row_len);
  free (t->row_full);
  free (t->row_dirty);
  vterm_free (t->vt);
  free (t);
}

void
term_feed (struct term *t, const char *data, size_t len)
{
  vterm_input_write (t->vt, data, len);
  vterm_screen_flush_damage (t->screen);
}

uint64_t
term_generation (struct term *t)
{
  return t->generation;
}

static void
refresh_row (struct term *t, int row)
{
  size_t cap = (size_t) t->cols * VTERM_MAX_CHARS_PER_CELL * 4 + 1;
  char *buf = xmalloc (cap);
  VTermRect rect = { .start_row = row, .end_row = row + 1, .start_col = 0, .end_col = t->cols };
  size_t n = vterm_screen_get_text (t->screen, buf, cap - 1, rect);
  while (n > 0 && buf[n - 1] == ' ')
    n--;
  buf[n] = '\0';
  VTermScreenCell cell;
  VTermPos pos = { .row = row, .col = t->cols - 1 };
  free (t->row_text[row]);
  t->row_text[row] = buf;
  t->row_len[row] = n;
  t->row_full[row] = vterm_screen_get_cell (t->screen, pos, &cell) && cell.chars[0] != 0;
  t->row_dirty[row] = false;
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
      if (t->row_dirty[row])
        refresh_row (t, row);
      if (!first && !prev_full)
        ohbox_buf_append (&b, "\n", 1);
      ohbox_buf_append (&b, t->row_text[row], t->row_len[row]);
      if (t->row_len[row])
        last_nonempty_end = b.len;
      prev_full = t->row_full[row];
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
  vterm_screen_flush_damage (t->screen);
  /* Drop what the redraw itself may have scrolled out. */
  hist_clear (t);
  t->generation++;
}
