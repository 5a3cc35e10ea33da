/* tests/unit/unit.h: a minimal test harness for the unit test programs.
 * Each test prints one line the runner counts:
 *   PASS: PROGRAM/TEST
 *   FAIL: PROGRAM/TEST: file:line: what failed
 *   SKIP: PROGRAM/TEST: why
 * A program exits 1 when any test failed. */
#ifndef OHBOX_TEST_UNIT_H
#define OHBOX_TEST_UNIT_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const char *unit_program = "unit";
static const char *unit_current;
static int unit_failed_current;
static int unit_skipped_current;
static int unit_failures;

static inline void
unit_fail_at (const char *file, int line, const char *fmt, ...)
{
  if (unit_failed_current)
    return;
  unit_failed_current = 1;
  va_list ap;
  va_start (ap, fmt);
  printf ("FAIL: %s/%s: %s:%d: ", unit_program, unit_current, file, line);
  vprintf (fmt, ap);
  printf ("\n");
  va_end (ap);
  fflush (stdout);
}

static inline void
unit_skip (const char *fmt, ...)
{
  unit_skipped_current = 1;
  va_list ap;
  va_start (ap, fmt);
  printf ("SKIP: %s/%s: ", unit_program, unit_current);
  vprintf (fmt, ap);
  printf ("\n");
  va_end (ap);
  fflush (stdout);
}

/* pipe + fork for a child that reports back: the child (0) keeps only the
 * write end P[1], the parent (the child's pid) only the read end P[0];
 * -1 with WHY filled (and no descriptor left open) when either fails. */
static inline pid_t
unit_fork_piped (int p[2], char *why, size_t why_len)
{
  if (pipe (p) < 0)
    return snprintf (why, why_len, "pipe: %s", strerror (errno)), -1;
  pid_t pid = fork ();
  if (pid < 0)
    {
      snprintf (why, why_len, "fork: %s", strerror (errno));
      close (p[0]);
      close (p[1]);
      return -1;
    }
  close (pid == 0 ? p[0] : p[1]);
  return pid;
}

/* mkdtemp (TMPL) for the program's fixtures; -1 and a FAIL line naming the
 * program when it fails. */
static inline int
unit_mkdtemp (char *tmpl)
{
  if (mkdtemp (tmpl) != NULL)
    return 0;
  printf ("FAIL: %s: mkdtemp: %s\n", unit_program, strerror (errno));
  fflush (stdout);
  return -1;
}

/* Writes TEXT to DIR/NAME (a fixture: aborts when it cannot). */
static inline void
unit_put_file (const char *dir, const char *name, const char *text)
{
  char path[4096];
  if ((size_t) snprintf (path, sizeof path, "%s/%s", dir, name) >= sizeof path)
    abort ();
  FILE *f = fopen (path, "w");
  if (f == NULL || fputs (text, f) < 0 || fclose (f) != 0)
    abort ();
}

/* A document a parser must refuse: the kind of its error and a part of the
 * message (a row of a test's table of malformed input). */
struct unit_refusal
{
  const char *doc;
  int kind;
  const char *msg;
};

/* Records a failure and returns from the test function. */
#define CHECK(cond, ...)                                                                                               \
  do                                                                                                                   \
    {                                                                                                                  \
      if (!(cond))                                                                                                     \
        {                                                                                                              \
          unit_fail_at (__FILE__, __LINE__, "CHECK(" #cond ") " __VA_ARGS__);                                          \
          return;                                                                                                      \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

#define CHECK_STR(a, b)                                                                                                \
  do                                                                                                                   \
    {                                                                                                                  \
      const char *_a = (a), *_b = (b);                                                                                 \
      if (_a == NULL || _b == NULL ? _a != _b : strcmp (_a, _b) != 0)                                                  \
        {                                                                                                              \
          unit_fail_at (__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a, _a ? _a : "(null)",                   \
                        _b ? _b : "(null)");                                                                           \
          return;                                                                                                      \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

#define RUN_TEST(fn)                                                                                                   \
  do                                                                                                                   \
    {                                                                                                                  \
      unit_current = #fn;                                                                                              \
      unit_failed_current = 0;                                                                                         \
      unit_skipped_current = 0;                                                                                        \
      fn ();                                                                                                           \
      if (unit_failed_current)                                                                                         \
        unit_failures++;                                                                                               \
      else if (!unit_skipped_current)                                                                                  \
        printf ("PASS: %s/%s\n", unit_program, unit_current);                                                          \
      fflush (stdout);                                                                                                 \
    }                                                                                                                  \
  while (0)

#define UNIT_MAIN_BEGIN(name)                                                                                          \
  int main (int argc, char **argv)                                                                                     \
  {                                                                                                                    \
    (void) argc;                                                                                                       \
    (void) argv;                                                                                                       \
    unit_program = name;

#define UNIT_MAIN_END                                                                                                  \
  return unit_failures ? 1 : 0;                                                                                        \
  }

#endif
