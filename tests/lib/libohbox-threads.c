/* libohbox-threads.c: ohbox_run() from a program whose other threads are
 * busy in libc. Two threads run sandboxes in the foreground at the same
 * time while a third takes every malloc arena's lock over and over
 * (malloc_trim walks them all) and writes to stdio. A sandbox's first
 * process made by a raw clone in this process would inherit a lock held
 * at that instant and could wait on it forever: that shows as the alarm
 * below ending the program (exit 142).
 *
 *   libohbox-threads STORE IMAGE RUNS-PER-THREAD
 *
 * Prints "ok: N runs" and exits 0 when every run ended with status 0. */
#include <malloc.h>
#include <ohbox.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_bool stop;

static void *
busy (void *arg)
{
  FILE *null = fopen ("/dev/null", "w");
  (void) arg;
  while (!atomic_load (&stop))
    {
      void *p = malloc (4096 + (size_t) (rand () % 4096));
      free (p);
      malloc_trim (0);
      if (null)
        fprintf (null, "busy\n");
    }
  if (null)
    fclose (null);
  return NULL;
}

struct runner
{
  ohbox_ctx *ctx;
  const char *image;
  int runs, done;
  char failure[512];
};

static void *
run_many (void *arg)
{
  struct runner *r = arg;
  static const char *const cmd[] = { "true", NULL };
  for (int i = 0; i < r->runs; i++)
    {
      ohbox_run_opts ro = OHBOX_OPTS_INIT (ohbox_run_opts);
      ro.image = r->image;
      ro.argv = cmd;
      ro.remove = true;
      ro.network = OHBOX_NETMODE_NONE;
      ohbox_err *err = NULL;
      int code = -1;
      if (ohbox_run (r->ctx, &ro, NULL, &code, &err) != 0 || code != 0)
        {
          snprintf (r->failure, sizeof r->failure, "run %d: %s (exit code %d)", i, err ? ohbox_err_message (err) : "-",
                    code);
          ohbox_err_free (err);
          return NULL;
        }
      r->done++;
    }
  return NULL;
}

int
main (int argc, char **argv)
{
  if (argc != 4)
    {
      fprintf (stderr, "usage: libohbox-threads STORE IMAGE RUNS-PER-THREAD\n");
      return 2;
    }
  /* A hang ends the program (SIGALRM's default action). */
  alarm (240);
  ohbox_ctx_opts co = OHBOX_OPTS_INIT (ohbox_ctx_opts);
  co.store_root = argv[1];
  ohbox_ctx *ctx = NULL;
  ohbox_err *err = NULL;
  if (ohbox_ctx_new (&co, &ctx, &err) != 0)
    {
      fprintf (stderr, "FAIL: context: %s\n", ohbox_err_message (err));
      return 1;
    }
  pthread_t b, t[2];
  struct runner r[2];
  pthread_create (&b, NULL, busy, NULL);
  for (int i = 0; i < 2; i++)
    {
      memset (&r[i], 0, sizeof r[i]);
      r[i].ctx = ctx;
      r[i].image = argv[2];
      r[i].runs = atoi (argv[3]);
      pthread_create (&t[i], NULL, run_many, &r[i]);
    }
  int failed = 0, total = 0;
  for (int i = 0; i < 2; i++)
    {
      pthread_join (t[i], NULL);
      total += r[i].done;
      if (r[i].failure[0])
        {
          fprintf (stderr, "FAIL: thread %d: %s\n", i, r[i].failure);
          failed = 1;
        }
    }
  atomic_store (&stop, true);
  pthread_join (b, NULL);
  ohbox_ctx_free (ctx);
  if (failed)
    return 1;
  printf ("ok: %d runs\n", total);
  return 0;
}
