/* sanitizer-probe: one fault of each kind the sanitizer build is there to
 * catch, chosen by the argument (tests/integration/sanitizers.sh checks
 * each is reported).  Linked with common/error.c, as every program of the
 * build is, for its ASan defaults.
 *
 *   sanitizer-probe overflow   signed integer overflow (UBSan, a trap)
 *   sanitizer-probe shift      shift past the width (UBSan, a trap)
 *   sanitizer-probe heap       read past a heap block (ASan)
 *   sanitizer-probe leak       a block never freed (LeakSanitizer)
 *   sanitizer-probe none       nothing wrong: exit 0 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1, in a way the compiler cannot fold (nor warn about what it indexes). */
static volatile int volatile_one = 1;

/* A block whose only pointer is gone when the function returns (a
 * volatile, so that the NULL reaches its stack slot). */
static void __attribute__ ((noinline)) leak_block (int one)
{
  char *volatile p = malloc (4096);
  memset (p, 'x', 4096);
  printf ("%c\n", p[one]);
  p = NULL; /* probe: leak */
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    {
      fprintf (stderr, "usage: sanitizer-probe overflow|shift|heap|leak|none\n");
      return 2;
    }
  const char *what = argv[1];
  int one = volatile_one;
  if (strcmp (what, "overflow") == 0)
    {
      int x = INT_MAX;
      x += one; /* probe: overflow */
      printf ("%d\n", x);
    }
  else if (strcmp (what, "shift") == 0)
    {
      int width = 31 + one;
      printf ("%d\n", one << width); /* probe: shift */
    }
  else if (strcmp (what, "heap") == 0)
    {
      /* Through a pointer whose block UBSan's object-size check cannot
       * see: ASan's own check reports it. */
      char *volatile p = malloc (16);
      memset (p, 'x', 16);
      volatile char c = p[15 + one]; /* probe: heap */
      printf ("%d\n", c);
      free (p);
    }
  else if (strcmp (what, "leak") == 0)
    leak_block (one);
  else if (strcmp (what, "none") != 0)
    {
      fprintf (stderr, "sanitizer-probe: unknown probe `%s`\n", what);
      return 2;
    }
  return 0;
}
