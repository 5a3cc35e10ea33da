/* progress.c: see progress.h. Bars are redrawn at most 10 times a second by
 * moving the cursor up over the previous drawing (no curses needed). */
#include "config.h"
#include "progress.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct layer_view
{
  char short_digest[20];
  uint64_t size;
  uint64_t done;
  enum ohbox_layer_state state;
  bool seen;
};

struct progress
{
  FILE *out;
  enum progress_mode mode;
  struct ohbox_pull_events events;
  char *name;
  struct layer_view *layers;
  size_t n_layers;
  int drawn_lines;
  double started;
  double last_draw;
};

static const char *
state_word (enum ohbox_layer_state s)
{
  switch (s)
    {
    case OHBOX_LAYER_PRESENT:
      return "already present";
    case OHBOX_LAYER_WAITING:
      return "downloading";
    case OHBOX_LAYER_DOWNLOADED:
      return "downloaded";
    case OHBOX_LAYER_UNPACKING:
      return "unpacking";
    case OHBOX_LAYER_DONE:
      return "done";
    }
  return "";
}

static int
terminal_width (FILE *out)
{
  struct winsize ws;
  if (ioctl (fileno (out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
    return ws.ws_col > 500 ? 500 : ws.ws_col;
  return 80;
}

static void
draw (struct progress *p, bool force)
{
  double now = ohbox_monotonic ();
  if (!force && now - p->last_draw < 0.1)
    return;
  p->last_draw = now;
  if (p->drawn_lines > 0)
    fprintf (p->out, "\033[%dA", p->drawn_lines);
  /* Every line must fit in WIDTH - 1 columns: a line that wraps takes two
   * rows and the cursor-up of the next redraw would miss the top. The text
   * around a bar takes 61 columns; narrower terminals get no bar. */
  int width = terminal_width (p->out);
  int bar = width - 61;
  if (bar > 60)
    bar = 60;
  uint64_t total = 0, done = 0;
  char a[32], b[32], line[512];
  int lines = 0;
  for (size_t i = 0; i < p->n_layers; i++)
    {
      struct layer_view *l = &p->layers[i];
      if (!l->seen)
        continue; /* not reported yet: nothing to name it by */
      total += l->size;
      uint64_t d = l->state == OHBOX_LAYER_WAITING ? l->done : l->size;
      done += d;
      int n = snprintf (line, sizeof line, "%s ", l->short_digest);
      if (bar >= 5)
        {
          int filled = l->size ? (int) ((double) d / (double) l->size * bar) : bar;
          line[n++] = '[';
          for (int k = 0; k < bar; k++)
            line[n++] = k < filled ? '=' : (k == filled ? '>' : ' ');
          line[n++] = ']';
          line[n++] = ' ';
        }
      snprintf (line + n, sizeof line - (size_t) n, "%9s / %-9s %s", ohbox_format_size (d, a),
                ohbox_format_size (l->size, b), state_word (l->state));
      fprintf (p->out, "\033[2K%.*s\n", width - 1, line);
      lines++;
    }
  double elapsed = now - p->started;
  char rate[32];
  ohbox_format_size (elapsed > 0 ? (uint64_t) ((double) done / elapsed) : 0, rate);
  snprintf (line, sizeof line, "total %s / %s  %s/s", ohbox_format_size (done, a), ohbox_format_size (total, b), rate);
  fprintf (p->out, "\033[2K%.*s\n", width - 1, line);
  p->drawn_lines = lines + 1;
  fflush (p->out);
}

static void
on_resolved (void *ud, const char *name, const char *digest, const char *platform, size_t n_layers, uint64_t total_size)
{
  struct progress *p = ud;
  free (p->name);
  p->name = xstrdup (name);
  free (p->layers);
  p->layers = xcalloc (n_layers ? n_layers : 1, sizeof *p->layers);
  p->n_layers = n_layers;
  p->drawn_lines = 0;
  /* The first drawing waits for the first progress (or 0.1 s): by then every
   * layer has reported its initial state and the drawing has all its rows. */
  p->last_draw = ohbox_monotonic ();
  char sz[32];
  fprintf (p->out, "manifest %s from %s (%s, %zu layer%s, %s)\n", digest, name, platform, n_layers,
           n_layers == 1 ? "" : "s", ohbox_format_size (total_size, sz));
  fflush (p->out);
}

static void
on_notice (void *ud, const char *message)
{
  struct progress *p = ud;
  fprintf (p->mode == PROGRESS_BARS ? p->out : stderr, "%s\n", message);
  if (p->mode == PROGRESS_BARS)
    p->drawn_lines = 0;
}

static void
on_layer_state (void *ud, size_t idx, const char *digest, uint64_t size, enum ohbox_layer_state state)
{
  struct progress *p = ud;
  if (idx >= p->n_layers)
    return;
  struct layer_view *l = &p->layers[idx];
  snprintf (l->short_digest, sizeof l->short_digest, "sha256:%.12s", digest + 7);
  l->seen = true;
  l->size = size;
  l->state = state;
  if (p->mode == PROGRESS_BARS)
    {
      /* The initial states come in a burst: let the rate limit gather them. */
      draw (p, state != OHBOX_LAYER_WAITING && state != OHBOX_LAYER_PRESENT);
      return;
    }
  char sz[32];
  switch (state)
    {
    case OHBOX_LAYER_PRESENT:
      fprintf (p->out, "layer %s already present\n", l->short_digest);
      break;
    case OHBOX_LAYER_DOWNLOADED:
      fprintf (p->out, "layer %s downloaded (%s)\n", l->short_digest, ohbox_format_size (size, sz));
      break;
    case OHBOX_LAYER_DONE:
      fprintf (p->out, "layer %s unpacked\n", l->short_digest);
      break;
    default:
      break;
    }
  fflush (p->out);
}

static void
on_layer_progress (void *ud, size_t idx, uint64_t done, uint64_t total)
{
  struct progress *p = ud;
  if (idx >= p->n_layers || p->mode != PROGRESS_BARS)
    return;
  p->layers[idx].done = done;
  draw (p, false);
}

struct progress *
progress_new (FILE *out, bool quiet)
{
  struct progress *p = xcalloc (1, sizeof *p);
  p->out = out;
  p->mode = quiet ? PROGRESS_NONE : isatty (fileno (out)) ? PROGRESS_BARS : PROGRESS_LINES;
  p->started = ohbox_monotonic ();
  p->events = (struct ohbox_pull_events){
    .resolved = on_resolved,
    .notice = on_notice,
    .layer_state = on_layer_state,
    .layer_progress = on_layer_progress,
    .userdata = p,
  };
  return p;
}

const struct ohbox_pull_events *
progress_pull_events (struct progress *p)
{
  return p->mode == PROGRESS_NONE ? NULL : &p->events;
}

void
progress_start (struct progress *p, const char *name)
{
  if (p->mode == PROGRESS_NONE)
    return;
  fprintf (p->out, "pulling %s\n", name);
  fflush (p->out);
}

void
progress_finish (struct progress *p)
{
  if (p->mode == PROGRESS_BARS && p->n_layers)
    draw (p, true);
}

void
progress_free (struct progress *p)
{
  if (p == NULL)
    return;
  free (p->name);
  free (p->layers);
  free (p);
}
