/* example.c: embedding libohbox. Pulls IMAGE, runs a sandbox from it in
 * the background, runs a command in it with its output captured, then
 * stops and removes the sandbox.
 *
 *   make && sudo ./example [--root STORE] [--tls-verify=false] IMAGE [CMD...]
 *
 * CMD defaults to `uname -a`. Exit status: the command's, or 125 when
 * libohbox failed (the message is printed). */
#include <ohbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
fail (const char *what, ohbox_err *err)
{
  fprintf (stderr, "example: %s: %s (error code %d)\n", what, ohbox_err_message (err), ohbox_err_code (err));
  ohbox_err_free (err);
  return 125;
}

int
main (int argc, char **argv)
{
  ohbox_ctx_opts copts = OHBOX_OPTS_INIT (ohbox_ctx_opts);
  int i = 1;
  for (; i < argc && strncmp (argv[i], "--", 2) == 0; i++)
    if (strcmp (argv[i], "--root") == 0 && i + 1 < argc)
      copts.store_root = argv[++i];
    else if (strcmp (argv[i], "--tls-verify=false") == 0)
      copts.tls_insecure = true;
    else
      {
        fprintf (stderr, "usage: example [--root STORE] [--tls-verify=false] IMAGE [CMD...]\n");
        return 2;
      }
  if (i >= argc)
    {
      fprintf (stderr, "usage: example [--root STORE] [--tls-verify=false] IMAGE [CMD...]\n");
      return 2;
    }
  const char *image = argv[i];
  static const char *const default_cmd[] = { "uname", "-a", NULL };
  const char *const *cmd = i + 1 < argc ? (const char *const *) argv + i + 1 : default_cmd;

  ohbox_err *err = NULL;
  ohbox_ctx *ctx = NULL;
  if (ohbox_ctx_new (&copts, &ctx, &err) < 0)
    return fail ("open the store", err);
  printf ("libohbox %s\n", ohbox_version ());

  char *image_id = NULL;
  if (ohbox_pull_image (ctx, image, NULL, &image_id, &err) < 0)
    {
      ohbox_ctx_free (ctx);
      return fail ("pull", err);
    }
  printf ("pulled %s: %s\n", image, image_id);
  ohbox_free (image_id);

  /* A long-running command keeps the sandbox up for the exec. */
  static const char *const sleeper[] = { "sleep", "3600", NULL };
  ohbox_run_opts ropts = OHBOX_OPTS_INIT (ohbox_run_opts);
  ropts.image = image;
  ropts.argv = sleeper;
  ropts.detach = true;
  ropts.memory = 256 * 1024 * 1024;
  ropts.pids_limit = 64;
  ropts.network = OHBOX_NETMODE_NONE;
  char *id = NULL;
  if (ohbox_run (ctx, &ropts, &id, NULL, &err) < 0)
    {
      ohbox_ctx_free (ctx);
      return fail ("run", err);
    }
  printf ("sandbox %s\n", id);

  ohbox_exec_opts eopts = OHBOX_OPTS_INIT (ohbox_exec_opts);
  eopts.argv = cmd;
  eopts.capture = true;
  ohbox_exec_result *res = NULL;
  int rc;
  if (ohbox_exec (ctx, id, &eopts, &res, &err) < 0)
    rc = fail ("exec", err);
  else
    {
      size_t len;
      const char *out = ohbox_exec_result_stdout (res, &len);
      rc = ohbox_exec_result_exit_code (res);
      printf ("exec exit code %d, %zu bytes of output:\n", rc, len);
      fwrite (out, 1, len, stdout);
      fputs (ohbox_exec_result_stderr (res, NULL), stderr);
      ohbox_exec_result_free (res);
    }

  if (ohbox_stop (ctx, id, 1, &err) < 0)
    rc = fail ("stop", err);
  else if (ohbox_remove (ctx, id, false, &err) < 0)
    rc = fail ("remove", err);
  else
    printf ("stopped and removed %s\n", id);
  ohbox_free (id);
  ohbox_ctx_free (ctx);
  return rc;
}
