/* libohbox-plan.c: one run request through the public API of libohbox, for
 * tests/integration/policy.sh to compare with `ohbox run`:
 *
 *   libohbox-plan STORE [--network MODE|NAME] [--egress SPEC]
 *                 [--executor-port N] [--api-key K] [--storage-size SIZE]
 *                 [--device D]... [--cdi-spec-dir DIR]... [--gpus GPUS]
 *                 [-e K=V]... [--run [--rm]] IMAGE [ARG...]
 *
 * Without --run: prints ohbox_run_plan()'s JSON (what `ohbox run --dry-run
 * --format json` prints for the same request). With --run: ohbox_run()
 * detached, prints "id: ID" and each warning as "warning: MESSAGE". MODE:
 * default, none, host or bridge; any other word names a network made with
 * `ohbox network create` (network_name). Exit status 0, or 1 with "error CODE:
 * MESSAGE" on stderr. */
#include <ohbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
on_warning (const char *message, void *data)
{
  (void) data;
  printf ("warning: %s\n", message);
}

static int
fail (ohbox_err *err)
{
  fprintf (stderr, "error %d: %s\n", ohbox_err_code (err), ohbox_err_message (err));
  ohbox_err_free (err);
  return 1;
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: libohbox-plan STORE [OPTIONS] IMAGE [ARG...]\n");
      return 2;
    }
  ohbox_run_opts ro = OHBOX_OPTS_INIT (ohbox_run_opts);
  const char *env[64] = { NULL }, *devices[16] = { NULL }, *cdi_dirs[16] = { NULL };
  size_t n_env = 0, n_devices = 0, n_cdi_dirs = 0;
  int run = 0, i = 2;
  for (; i < argc && argv[i][0] == '-'; i++)
    {
      const char *next = i + 1 < argc ? argv[i + 1] : NULL;
      if (strcmp (argv[i], "--run") == 0)
        run = 1;
      else if (strcmp (argv[i], "--rm") == 0)
        ro.remove = true;
      else if (strcmp (argv[i], "--network") == 0 && next)
        {
          static const char *const names[] = { "default", "none", "host", "bridge" };
          int found = 0;
          for (int m = 0; m < 4; m++)
            if (strcmp (next, names[m]) == 0)
              {
                ro.network = (enum ohbox_net_mode) m;
                found = 1;
              }
          if (!found)
            ro.network_name = next;
          i++;
        }
      else if (strcmp (argv[i], "--egress") == 0 && next)
        ro.egress = argv[++i];
      else if (strcmp (argv[i], "--executor-port") == 0 && next)
        ro.executor_port = atoi (argv[++i]);
      else if (strcmp (argv[i], "--api-key") == 0 && next)
        ro.api_key = argv[++i];
      else if (strcmp (argv[i], "--storage-size") == 0 && next)
        {
          /* As ohbox run reads it: bytes, or k, m, g (powers of 1024). */
          char *end;
          unsigned long long v = strtoull (argv[++i], &end, 10);
          int shift = *end == 'k' ? 10 : *end == 'm' ? 20 : *end == 'g' ? 30 : 0;
          if (end == argv[i] || (shift && end[1]) || (!shift && *end))
            return fprintf (stderr, "bad size %s\n", argv[i]), 2;
          ro.storage_size = (int64_t) (v << shift);
        }
      else if (strcmp (argv[i], "--device") == 0 && next && n_devices + 1 < 16)
        devices[n_devices++] = argv[++i];
      else if (strcmp (argv[i], "--cdi-spec-dir") == 0 && next && n_cdi_dirs + 1 < 16)
        cdi_dirs[n_cdi_dirs++] = argv[++i];
      else if (strcmp (argv[i], "--gpus") == 0 && next)
        ro.gpus = argv[++i];
      else if (strcmp (argv[i], "-e") == 0 && next && n_env + 1 < sizeof env / sizeof env[0])
        env[n_env++] = argv[++i];
      else
        return fprintf (stderr, "unknown option %s\n", argv[i]), 2;
    }
  if (i >= argc)
    return fprintf (stderr, "no image\n"), 2;
  ro.image = argv[i];
  ro.argv = (const char *const *) argv + i + 1;
  ro.env = n_env ? env : NULL;
  ro.devices = n_devices ? devices : NULL;
  ro.cdi_spec_dirs = n_cdi_dirs ? cdi_dirs : NULL;
  ro.warn = on_warning;

  ohbox_err *err = NULL;
  ohbox_ctx *ctx = NULL;
  ohbox_ctx_opts co = OHBOX_OPTS_INIT (ohbox_ctx_opts);
  co.store_root = argv[1];
  if (ohbox_ctx_new (&co, &ctx, &err) < 0)
    return fail (err);
  int rc = 0;
  if (run)
    {
      char *id = NULL;
      int code = -1;
      ro.detach = true;
      if (ohbox_run (ctx, &ro, &id, &code, &err) < 0)
        rc = fail (err);
      else
        printf ("id: %s\n", id);
      ohbox_free (id);
    }
  else
    {
      char *json = NULL;
      if (ohbox_run_plan (ctx, &ro, &json, &err) < 0)
        rc = fail (err);
      else
        printf ("%s\n", json);
      ohbox_free (json);
    }
  ohbox_ctx_free (ctx);
  return rc;
}
