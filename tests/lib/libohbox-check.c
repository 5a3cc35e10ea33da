/* libohbox-check.c: drives the public API of an installed libohbox
 * (tests/integration/libohbox.sh builds it with pkg-config):
 *
 *   libohbox-check STORE IMAGE RUNTIME-IMAGE
 *
 * IMAGE and RUNTIME-IMAGE are in STORE already. Prints "ok: WHAT" per
 * check, "obs: JSON" for the observation of an action, and ends with
 * "all ok" and status 0, or "FAIL: WHAT" and status 1. */
#include <ohbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ERRP (may be NULL): read after the call that set it. */
static void
check (bool ok, const char *what, ohbox_err **errp)
{
  ohbox_err *err = errp ? *errp : NULL;
  if (!ok)
    {
      printf ("FAIL: %s%s%s (code %d)\n", what, err ? ": " : "", err ? ohbox_err_message (err) : "",
              ohbox_err_code (err));
      exit (1);
    }
  printf ("ok: %s\n", what);
  fflush (stdout);
}

/* The call failed with CODE and a message (ERRP: read after the call,
 * whatever the order the arguments are evaluated in); *ERRP is reset. */
static void
check_error (int r, ohbox_err **errp, int code, const char *what)
{
  ohbox_err *err = *errp;
  bool ok = r == -1 && err && ohbox_err_code (err) == code && ohbox_err_message (err)[0] != '\0';
  if (ok)
    printf ("   (%s: %s)\n", what, ohbox_err_message (err));
  check (ok, what, ok ? NULL : errp);
  ohbox_err_free (err);
  *errp = NULL;
}

int
main (int argc, char **argv)
{
  if (argc != 4)
    {
      fprintf (stderr, "usage: libohbox-check STORE IMAGE RUNTIME-IMAGE\n");
      return 2;
    }
  ohbox_err *err = NULL;
  ohbox_ctx *ctx = NULL;

  /* Options without a size are refused; so are unknown (non-zero) fields. */
  ohbox_ctx_opts bad = { 0 };
  check_error (ohbox_ctx_new (&bad, &ctx, &err), &err, OHBOX_E_USAGE, "options without size refused");
  struct
  {
    ohbox_ctx_opts o;
    int future;
  } newer = { .o = { .size = sizeof newer, .store_root = argv[1] }, .future = 1 };
  check_error (ohbox_ctx_new (&newer.o, &ctx, &err), &err, OHBOX_E_UNSUPPORTED, "unknown option refused");
  newer.future = 0;
  check (ohbox_ctx_new (&newer.o, &ctx, &err) == 0, "larger options with zeroes accepted", &err);
  ohbox_ctx_free (ctx);

  ohbox_ctx_opts co = OHBOX_OPTS_INIT (ohbox_ctx_opts);
  co.store_root = argv[1];
  check (ohbox_ctx_new (&co, &ctx, &err) == 0, "context", &err);

  ohbox_run_opts ro = OHBOX_OPTS_INIT (ohbox_run_opts);
  check_error (ohbox_run (ctx, &ro, NULL, NULL, &err), &err, OHBOX_E_USAGE, "run without an image refused");
  ro.image = "no/such/image:here";
  ro.network = OHBOX_NETMODE_NONE;
  int code = 0;
  check_error (ohbox_run (ctx, &ro, NULL, &code, &err), &err, OHBOX_E_NOT_FOUND, "run of a missing image");
  check (code == 125, "exit code 125 for a failed run", NULL);
  static const char *const t[] = { "true", NULL };
  ohbox_exec_opts eo = OHBOX_OPTS_INIT (ohbox_exec_opts);
  eo.argv = t;
  ohbox_exec_result *res = NULL;
  check_error (ohbox_exec (ctx, "nosuchsandbox", &eo, &res, &err), &err, OHBOX_E_NOT_FOUND, "exec in no sandbox");

  /* Foreground: the command's exit code, removed afterwards. */
  static const char *const five[] = { "sh", "-c", "exit 5", NULL };
  ro.image = argv[2];
  ro.argv = five;
  ro.remove = true;
  check (ohbox_run (ctx, &ro, NULL, &code, &err) == 0 && code == 5, "foreground run: exit code 5", &err);

  /* The runtime image the CLI built is reused: the same name. */
  ohbox_build_opts bo = OHBOX_OPTS_INIT (ohbox_build_opts);
  bo.no_pull = true;
  char *built = NULL;
  check (ohbox_build_image (ctx, argv[2], &bo, &built, &err) == 0, "build", &err);
  size_t lb = strlen (built), lr = strlen (argv[3]);
  printf ("built: %s\n", built);
  check (lb >= lr && strcmp (built + lb - lr, argv[3]) == 0, "build reuses the CLI's runtime image", NULL);
  ohbox_free (built);

  /* The runtime image: its executor, with our key. */
  ohbox_run_opts rr = OHBOX_OPTS_INIT (ohbox_run_opts);
  rr.image = argv[3];
  rr.detach = true;
  rr.api_key = "libohbox-check-key";
  rr.memory = 512 * 1024 * 1024;
  rr.pids_limit = 321;
  char *id = NULL;
  check (ohbox_run (ctx, &rr, &id, &code, &err) == 0 && id && code == 0, "runtime sandbox started", &err);
  printf ("id: %s\n", id);

  ohbox_listing *l = NULL;
  check (ohbox_list (ctx, false, &l, &err) == 0, "list", &err);
  bool found = false;
  for (size_t i = 0; i < ohbox_listing_count (l); i++)
    if (strcmp (ohbox_listing_id (l, i), id) == 0)
      found = strcmp (ohbox_listing_status (l, i), "running") == 0 && ohbox_listing_exit_code (l, i) == -1;
  check (found, "listed as running", NULL);
  check (ohbox_listing_json (l)[0] == '[', "listing as JSON", NULL);
  ohbox_listing_free (l);

  char *obs = NULL;
  ohbox_action_opts ao = OHBOX_OPTS_INIT (ohbox_action_opts);
  check (ohbox_action (ctx, id,
                       "{\"action\": \"run\", \"args\": {\"command\": \"echo from-action; (exit 4)\"}, "
                       "\"timeout\": 30}",
                       &ao, &obs, &err)
           == 0,
         "action", &err);
  printf ("obs: %s\n", obs);
  ohbox_free (obs);
  check_error (ohbox_action (ctx, id, "{not json", NULL, &obs, &err), &err, OHBOX_E_USAGE, "bad action JSON refused");

  /* Exec with capture: bounded, the rest dropped; stderr apart. */
  static const char *const big[] = { "sh", "-c", "yes | head -c 100000; echo to-stderr >&2; exit 3", NULL };
  eo.argv = big;
  eo.capture = true;
  eo.capture_max = 1000;
  check (ohbox_exec (ctx, id, &eo, &res, &err) == 0, "exec with capture", &err);
  size_t len_out, len_err;
  const char *out = ohbox_exec_result_stdout (res, &len_out);
  const char *errs = ohbox_exec_result_stderr (res, &len_err);
  check (ohbox_exec_result_exit_code (res) == 3, "exec exit code 3", NULL);
  check (len_out == 1000 && strncmp (out, "y\ny\n", 4) == 0 && ohbox_exec_result_truncated (res),
         "stdout cut at capture_max", NULL);
  check (strcmp (errs, "to-stderr\n") == 0, "stderr captured apart", NULL);
  ohbox_exec_result_free (res);

  /* The limits of ohbox_run_opts reach the sandbox's cgroup (v1, else v2). */
  static const char *const limits[] = {
    "sh", "-c",
    "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; "
    "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max",
    NULL
  };
  eo.argv = limits;
  check (ohbox_exec (ctx, id, &eo, &res, &err) == 0, "exec reading the limits", &err);
  out = ohbox_exec_result_stdout (res, &len_out);
  printf ("limits: %s", out);
  check (strcmp (out, "536870912\n321\n") == 0, "memory and pids_limit applied", NULL);
  ohbox_exec_result_free (res);

  check (ohbox_stop (ctx, id, 2, &err) == 0, "stop", &err);
  int status = -1;
  check (ohbox_wait (ctx, id, &status, &err) == 0, "wait", &err);
  printf ("exit status after stop: %d\n", status);
  check (ohbox_remove (ctx, id, false, &err) == 0, "remove", &err);
  check (ohbox_list (ctx, true, &l, &err) == 0 && ohbox_listing_count (l) == 0, "nothing left", &err);
  ohbox_listing_free (l);
  check_error (ohbox_stop (ctx, id, 1, &err), &err, OHBOX_E_NOT_FOUND, "stop of a removed sandbox");
  ohbox_free (id);
  ohbox_ctx_free (ctx);
  printf ("all ok\n");
  return 0;
}
