/* progress.h: how `ohbox pull` (and later build) shows its work: progress
 * bars redrawn in place when stdout is a terminal, one line per event
 * otherwise, nothing with --quiet or --format json. */
#ifndef OHBOX_CLI_PROGRESS_H
#define OHBOX_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

#include "api/frontend.h"

enum progress_mode
{
  PROGRESS_NONE,
  PROGRESS_LINES,
  PROGRESS_BARS,
};

struct progress;

/* MODE_AUTO picks BARS on a terminal and LINES otherwise unless QUIET. */
struct progress *progress_new (FILE *out, bool quiet);
void progress_free (struct progress *p);
/* The callbacks to hand to ohbox_pull. */
const struct ohbox_pull_events *progress_pull_events (struct progress *p);
/* The first line: "pulling NAME". */
void progress_start (struct progress *p, const char *name);
/* Final redraw (bars), before printing the result. */
void progress_finish (struct progress *p);

#endif
