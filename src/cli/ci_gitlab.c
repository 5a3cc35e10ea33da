/* ci_gitlab.c: `ohbox ci gitlab config|prepare|run|cleanup`, a driver for
 * GitLab Runner's custom executor (man/ohbox-ci.1, contrib/gitlab-runner/).
 *
 * The runner calls one stage per process, with the job's variables as
 * CUSTOM_ENV_*: prepare starts one detached sandbox per job (and one per
 * service, in the job's network namespace), run feeds each script the
 * runner generated to a shell inside it, cleanup removes them all. The
 * sandbox names derive from the runner, its concurrency slot and the job id,
 * so every stage finds them again and two jobs never clash.
 *
 * Exit codes are the runner's contract: 0, $BUILD_FAILURE_EXIT_CODE when
 * the job's script failed, $SYSTEM_FAILURE_EXIT_CODE when ohbox or the
 * system did (image not found, registry down, sandbox gone). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ci_gitlab.h"
#include "cli.h"
#include "sandbox/exec.h"
#include "image/image.h"
#include "policy/run_policy.h"
#include "sandbox/sandbox.h"
#include "store/store.h"
#include "common/utils.h"

/* The job sandbox's command: it only has to stay alive until cleanup; the
 * scripts run beside it through exec. */
static const char keepalive[] = "while :; do sleep 3600; done";
/* What the runner's docker executor does too: bash when the image has it
 * (the scripts are generated for bash), else sh. */
static const char *const shells[] = { "bash", "sh" };

static const char ci_help[]
    = "Usage: ohbox ci gitlab config\n"
      "       ohbox ci gitlab prepare [OPTIONS]\n"
      "       ohbox ci gitlab run SCRIPT_PATH STAGE_NAME\n"
      "       ohbox ci gitlab cleanup\n\n"
      "A GitLab Runner custom executor driver: the runner calls each stage with the\n"
      "job's variables as CUSTOM_ENV_* (see contrib/gitlab-runner/ and ohbox-ci(1)).\n\n"
      "  config    print the executor configuration JSON (builds_dir, cache_dir, ...)\n"
      "  prepare   pull $CUSTOM_ENV_CI_JOB_IMAGE, start the job's sandbox and services\n"
      "  run       run the runner's SCRIPT_PATH in the job's sandbox (bash, else sh)\n"
      "  cleanup   remove the job's sandboxes (missing ones are fine)\n\n"
      "Options of prepare:\n"
      "      --pull POLICY            missing (default), always or never\n"
      "      --tls-verify BOOL        verify registry certificates (default: registries.conf)\n"
      "      --cert-dir DIR           CA certificates for registries\n"
      "      --network MODE           the job sandbox's network (ohbox run --network)\n"
      "  -m, --memory SIZE            memory limit of each sandbox\n"
      "      --cpus N                 CPU limit of each sandbox\n"
      "      --pids-limit N           process limit of each sandbox\n"
      "  -h, --help                   this help\n\n"
      "Exit status: 0; $BUILD_FAILURE_EXIT_CODE when the job's script failed;\n"
      "$SYSTEM_FAILURE_EXIT_CODE when ohbox failed (unset: 1 and 2).\n";

static int
exit_code_from_env (const char *var, int dflt)
{
  const char *v = getenv (var);
  char *end = NULL;
  long n = v ? strtol (v, &end, 10) : -1;
  if (v == NULL || *v == '\0' || *end || n < 0 || n > 255)
    return dflt;
  return (int) n;
}

static int
build_failure (void)
{
  return exit_code_from_env ("BUILD_FAILURE_EXIT_CODE", 1);
}

static int
system_failure (void)
{
  return exit_code_from_env ("SYSTEM_FAILURE_EXIT_CODE", 2);
}

/* Prints the error (it goes to the job's log) and returns the system failure code. */
static int
ci_fail (const char *stage, ohbox_error_t *err)
{
  fprintf (stderr, "ohbox ci gitlab %s: %s\n", stage, (*err)->msg);
  ohbox_error_release (err);
  return system_failure ();
}

/* Appends VALUE to the name, keeping the characters sandbox names allow. */
static void
name_append (char *buf, size_t *len, const char *value)
{
  for (const char *p = value; *p && *len + 1 < CI_JOB_NAME_MAX; p++)
    {
      char c = *p;
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'
                || c == '-';
      buf[(*len)++] = ok ? c : '_';
    }
  buf[*len] = '\0';
}

/* gitlab-RUNNER-cSLOT-JOBID: the runner (its short token, else its id), the
 * concurrency slot it gave the job, and the job id. */
static int
job_sandbox_name (char *buf, ohbox_error_t *err)
{
  const char *job = getenv ("CUSTOM_ENV_CI_JOB_ID");
  if (job == NULL || *job == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "`CUSTOM_ENV_CI_JOB_ID` is not set: run this through GitLab Runner's custom executor");
  const char *runner = getenv ("CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN");
  if (runner == NULL || *runner == '\0')
    runner = getenv ("CUSTOM_ENV_CI_RUNNER_ID");
  const char *slot = getenv ("CUSTOM_ENV_CI_CONCURRENT_ID");
  size_t len = 0;
  buf[0] = '\0';
  name_append (buf, &len, "gitlab-");
  name_append (buf, &len, runner && *runner ? runner : "runner");
  name_append (buf, &len, "-c");
  name_append (buf, &len, slot && *slot ? slot : "0");
  name_append (buf, &len, "-");
  name_append (buf, &len, job);
  return 0;
}

void
ci_service_sandbox_name (char *buf, const char *job_name, size_t i)
{
  snprintf (buf, CI_NAME_MAX, "%.100s-svc%zu", job_name, i);
}

int
ci_open (struct ci_ctx *c, ohbox_error_t *err)
{
  memset (c, 0, sizeof *c);
  if (ohbox_store_open (cli_store_root (), &c->store, err) < 0)
    return -1;
  if (ohbox_runtime_open (c->store, NULL, &c->rt, err) < 0)
    {
      ohbox_store_close (c->store);
      c->store = NULL;
      return -1;
    }
  return 0;
}

void
ci_close (struct ci_ctx *c)
{
  if (c->rt)
    ohbox_runtime_close (c->rt);
  if (c->store)
    ohbox_store_close (c->store);
  memset (c, 0, sizeof *c);
}

/* Removes sandbox NAME if it exists (running or not). */
static int
remove_if_present (struct ohbox_runtime *rt, const char *name, bool *ret_removed, ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  cleanup_error ohbox_error_t e = NULL;
  if (ret_removed)
    *ret_removed = false;
  if (ohbox_sandbox_resolve (rt, name, &id, &e) < 0)
    {
      if (e->kind == OHBOX_ERR_NOT_FOUND)
        return 0;
      ohbox_error_move (err, &e);
      return ohbox_error_prefix (err, "find sandbox `%s`", name);
    }
  if (ohbox_sandbox_remove (rt, id, true, err) < 0)
    return ohbox_error_prefix (err, "remove sandbox `%s`", name);
  if (ret_removed)
    *ret_removed = true;
  return 0;
}

/* Every sandbox of the job: its services first (they live in its network
 * namespace), then the job's own. */
static int
remove_job (struct ohbox_runtime *rt, const char *job_name, size_t *ret_n, ohbox_error_t *err)
{
  char name[CI_NAME_MAX];
  size_t n = 0;
  for (size_t i = 0; i < CI_MAX_SERVICES; i++)
    {
      bool removed;
      ci_service_sandbox_name (name, job_name, i);
      if (remove_if_present (rt, name, &removed, err) < 0)
        return -1;
      n += removed;
    }
  bool removed;
  if (remove_if_present (rt, job_name, &removed, err) < 0)
    return -1;
  if (ret_n)
    *ret_n = n + removed;
  return 0;
}

/* ---- config ---- */

static int
ci_config (void)
{
  char name[CI_NAME_MAX];
  cleanup_error ohbox_error_t err = NULL;
  json_t *job_env = json_object ();
  /* Without a job id (the runner always gives one) the hostname is left out. */
  bool named = job_sandbox_name (name, &err) == 0;
  if (named)
    json_object_set_new (job_env, "OHBOX_CI_SANDBOX", json_string (name));
  json_t *j = json_pack ("{s:s, s:s, s:b, s:{s:s, s:s}, s:s, s:o}", "builds_dir", CI_BUILDS_DIR, "cache_dir",
                         CI_CACHE_DIR, "builds_dir_is_shared", 0, "driver", "name", CI_DRIVER_NAME, "version",
                         PACKAGE_VERSION, "shell", "bash", "job_env", job_env);
  if (named)
    json_object_set_new (j, "hostname", json_string (name));
  json_dumpf (j, stdout, JSON_COMPACT);
  fputc ('\n', stdout);
  json_decref (j);
  return fflush (stdout) == 0 ? 0 : system_failure ();
}

/* ---- prepare ---- */

/* Makes IMAGE present in the store as the policy says, through `ohbox pull`
 * itself (credentials, registries.conf, TLS options, progress in the log). */
int
ci_ensure_image (struct prepare_opts *po, const char *image, ohbox_error_t *err)
{
  if (strcmp (po->pull, "always") != 0)
    {
      struct ci_ctx c;
      if (ci_open (&c, err) < 0)
        return -1;
      struct ohbox_image *img = NULL;
      cleanup_error ohbox_error_t e = NULL;
      int r = ohbox_image_load (c.store, image, &img, &e);
      ohbox_image_free (img);
      ci_close (&c);
      if (r == 0)
        return 0;
      if (strcmp (po->pull, "never") == 0)
        {
          ohbox_error_move (err, &e);
          return ohbox_error_hint (err, "the pull policy is `never`: pull it on this host first");
        }
    }
  const char *argv[CI_MAX_PULL_ARGS + 4];
  int argc = 0;
  argv[argc++] = "pull";
  for (size_t i = 0; i < po->n_pull_args; i++)
    argv[argc++] = po->pull_args[i];
  argv[argc++] = image;
  argv[argc] = NULL;
  fflush (stdout);
  optind = 0;
  int rc = cli_pull (argc, (char **) argv);
  fflush (stdout);
  if (rc != 0)
    return ohbox_error (err, rc, 0, "pull `%s` failed (see above)", image);
  return 0;
}

static void
quiet_warning (const char *msg, void *data)
{
  (void) data;
  fprintf (stderr, "ohbox ci gitlab: warning: %s\n", msg);
}

/* The run policy's plan for Q (run_policy.h), started detached. */
static int
start_planned (struct ci_ctx *c, struct ohbox_run_request *q, char **id, ohbox_error_t *err)
{
  struct ohbox_host_abilities host;
  struct ohbox_run_plan plan;
  int code = 0;
  q->detach = true;
  if (ohbox_host_probe (c->rt, &host, err) < 0)
    return -1;
  int r = ohbox_run_plan_make (c->store, q, &host, &plan, err);
  if (r == 0)
    {
      for (size_t i = 0; i < plan.n_warnings; i++)
        quiet_warning (plan.warnings[i], NULL);
      plan.opts.warn = quiet_warning;
      r = ohbox_run_plan_realize (&plan, err);
      if (r == 0)
        r = ohbox_sandbox_run (c->rt, &plan.opts, id, &code, err);
      ohbox_run_plan_clear (&plan);
    }
  ohbox_host_abilities_clear (&host);
  return r;
}

int
ci_start_detached (struct ci_ctx *c, struct ohbox_run_request *q, ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  if (start_planned (c, q, &id, err) < 0)
    return ohbox_error_prefix (err, "start sandbox `%s` from `%s`", q->name, q->image);
  printf ("Started sandbox %s (%.12s) from %s\n", q->name, id, q->image);
  fflush (stdout);
  return 0;
}

enum
{
  OPT_PULL = 256,
  OPT_TLS_VERIFY,
  OPT_CERT_DIR,
  OPT_NETWORK,
  OPT_CPUS,
  OPT_PIDS,
};

static int
parse_prepare (int argc, char **argv, struct prepare_opts *po, ohbox_error_t *err)
{
  static const struct option opts[] = {
    { "pull", required_argument, NULL, OPT_PULL },
    { "tls-verify", required_argument, NULL, OPT_TLS_VERIFY },
    { "cert-dir", required_argument, NULL, OPT_CERT_DIR },
    { "network", required_argument, NULL, OPT_NETWORK },
    { "memory", required_argument, NULL, 'm' },
    { "cpus", required_argument, NULL, OPT_CPUS },
    { "pids-limit", required_argument, NULL, OPT_PIDS },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  optind = 0;
  while ((c = getopt_long (argc, argv, "m:h", opts, NULL)) != -1)
    {
      const char *limit = NULL;
      switch (c)
        {
        case OPT_PULL:
          if (strcmp (optarg, "missing") && strcmp (optarg, "always") && strcmp (optarg, "never"))
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown --pull `%s`: use missing, always or never",
                                optarg);
          po->pull = optarg;
          break;
        case OPT_TLS_VERIFY:
        case OPT_CERT_DIR:
          if (po->n_pull_args + 2 > CI_MAX_PULL_ARGS)
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many pull options");
          po->pull_args[po->n_pull_args++] = c == OPT_TLS_VERIFY ? "--tls-verify" : "--cert-dir";
          po->pull_args[po->n_pull_args++] = optarg;
          break;
        case OPT_NETWORK:
          if (strcmp (optarg, "none") && strcmp (optarg, "host") && strcmp (optarg, "bridge"))
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown --network `%s`: use bridge, none or host",
                                optarg);
          po->network = optarg;
          break;
        case 'm':
          limit = "memory";
          break;
        case OPT_CPUS:
          limit = "cpus";
          break;
        case OPT_PIDS:
          limit = "pids-limit";
          break;
        case 'h':
          fputs (ci_help, stdout);
          return 1;
        default:
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown option; run 'ohbox ci gitlab --help'");
        }
      if (limit && ohbox_cgroup_limits_set_option (&po->limits, limit, optarg, err) < 0)
        return -1;
    }
  if (optind < argc)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unexpected argument `%s`", argv[optind]);
  return ohbox_cgroup_limits_validate (&po->limits, err);
}

static int
ci_prepare (int argc, char **argv)
{
  cleanup_error ohbox_error_t err = NULL;
  struct prepare_opts po = { .pull = "missing" };
  char name[CI_NAME_MAX];
  int r = parse_prepare (argc, argv, &po, &err);
  if (r == 1)
    return 0;
  if (r < 0 || job_sandbox_name (name, &err) < 0)
    return ci_fail ("prepare", &err);
  const char *image = getenv ("CUSTOM_ENV_CI_JOB_IMAGE");
  if (image == NULL || *image == '\0')
    {
      ohbox_error (&err, OHBOX_ERR_USAGE, 0,
                   "the job names no image (`CUSTOM_ENV_CI_JOB_IMAGE` is empty): set `image:` in .gitlab-ci.yml");
      return ci_fail ("prepare", &err);
    }
  /* A sandbox of the same name is a leftover of this slot (a runner that
   * died before cleanup): the runner never gives one slot two jobs. */
  {
    struct ci_ctx c;
    if (ci_open (&c, &err) < 0)
      return ci_fail ("prepare", &err);
    r = remove_job (c.rt, name, NULL, &err);
    ci_close (&c);
    if (r < 0)
      return ci_fail ("prepare", &err);
  }
  printf ("Using ohbox %s, sandbox %s, image %s\n", PACKAGE_VERSION, name, image);
  if (ci_ensure_image (&po, image, &err) < 0)
    return ci_fail ("prepare", &err);
  json_t *services = NULL;
  struct hostnames hosts = { .n = 0 };
  if (ci_load_services (&services, &hosts, &err) < 0)
    return ci_fail ("prepare", &err);
  char *keep[] = { (char *) "/bin/sh", (char *) "-c", (char *) keepalive, NULL };
  /* The network as `ohbox run` decides it (run_policy.h). */
  struct ohbox_run_request o = { .image = image,
                                 .name = name,
                                 .entrypoint = keep,
                                 .limits = po.limits,
                                 .add_hosts = hosts.v,
                                 .network = po.network };
  struct ci_ctx c;
  if (ci_open (&c, &err) < 0)
    return ci_fail ("prepare", &err);
  r = ci_start_detached (&c, &o, &err);
  ci_close (&c);
  if (r == 0 && services)
    r = ci_start_services (&po, name, services, &err);
  json_decref (services);
  ci_hostnames_clear (&hosts);
  if (r < 0)
    {
      /* Nothing of a job that could not start stays behind, whether or not
       * the runner calls cleanup. */
      cleanup_error ohbox_error_t e = NULL;
      if (ci_open (&c, &e) == 0)
        remove_job (c.rt, name, NULL, &e);
      ci_close (&c);
      return ci_fail ("prepare", &err);
    }
  return 0;
}

/* ---- run ---- */

static bool
sandbox_running (const char *name)
{
  struct ci_ctx c;
  cleanup_error ohbox_error_t e = NULL;
  cleanup_free char *id = NULL;
  json_t *j = NULL;
  bool running = false;
  if (ci_open (&c, &e) == 0 && ohbox_sandbox_resolve (c.rt, name, &id, &e) == 0
      && ohbox_sandbox_inspect (c.rt, id, &j, &e) == 0)
    {
      const char *st = json_string_value (json_object_get (j, "status"));
      running = st && (strcmp (st, "running") == 0 || strcmp (st, "paused") == 0);
    }
  json_decref (j);
  ci_close (&c);
  return running;
}

/* Newer runners read the script's own exit code from $BUILD_EXIT_CODE_FILE
 * (allow_failure:exit_codes); older ones do not set it. */
static void
write_build_exit_code (int code)
{
  const char *file = getenv ("BUILD_EXIT_CODE_FILE");
  if (file == NULL || *file == '\0')
    return;
  char num[16];
  int len = snprintf (num, sizeof num, "%d\n", code);
  cleanup_close int fd = open (file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ohbox_write_all (fd, num, (size_t) len) < 0)
    fprintf (stderr, "ohbox ci gitlab run: write `%s`: %s\n", file, strerror (errno));
}

static int
ci_run (int argc, char **argv)
{
  cleanup_error ohbox_error_t err = NULL;
  char name[CI_NAME_MAX];
  if (argc != 3)
    {
      ohbox_error (&err, OHBOX_ERR_USAGE, 0, "expected SCRIPT_PATH STAGE_NAME, as the runner passes them");
      return ci_fail ("run", &err);
    }
  const char *script = argv[1], *stage = argv[2];
  if (job_sandbox_name (name, &err) < 0)
    return ci_fail ("run", &err);
  /* The script reaches the shell on its stdin: nothing is copied into the
   * sandbox, and the runner's file stays where the runner cleans it up. */
  int fd = open (script, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      ohbox_error_errno (&err, "open the `%s` script `%s`", stage, script);
      return ci_fail ("run", &err);
    }
  if (dup2 (fd, 0) < 0)
    {
      close (fd);
      ohbox_error_errno (&err, "redirect stdin");
      return ci_fail ("run", &err);
    }
  close (fd);
  struct ci_ctx c;
  if (ci_open (&c, &err) < 0)
    return ci_fail ("run", &err);
  ohbox_store_unlock (c.store);
  int code = -1;
  int r = -1;
  for (size_t i = 0; i < sizeof shells / sizeof shells[0]; i++)
    {
      char *shell_argv[] = { (char *) shells[i], NULL };
      struct ohbox_exec_options o = { .argv = shell_argv, .interactive = true };
      ohbox_error_release (&err);
      code = -1;
      lseek (0, 0, SEEK_SET);
      fflush (stdout);
      r = ohbox_sandbox_exec (c.rt, name, &o, &code, &err);
      /* Only "not found" tries the next shell: nothing of the script ran. */
      if (!(r < 0 && code == 127))
        break;
    }
  ci_close (&c);
  if (r < 0 && code == 127)
    {
      fprintf (stderr, "ohbox ci gitlab run: the image has neither bash nor sh: %s\n", err->msg);
      write_build_exit_code (127);
      return build_failure ();
    }
  if (r < 0)
    return ci_fail ("run", &err);
  if (code == 0)
    return 0;
  /* A script that died because its sandbox went away is the system's failure. */
  if (!sandbox_running (name))
    {
      fprintf (stderr, "ohbox ci gitlab run: sandbox `%s` is gone (the `%s` script ended with %d)\n", name, stage,
               code);
      return system_failure ();
    }
  write_build_exit_code (code);
  return build_failure ();
}

/* ---- cleanup ---- */

static int
ci_cleanup (int argc, char **argv)
{
  (void) argv;
  cleanup_error ohbox_error_t err = NULL;
  char name[CI_NAME_MAX];
  if (argc != 1)
    {
      ohbox_error (&err, OHBOX_ERR_USAGE, 0, "cleanup takes no arguments");
      return ci_fail ("cleanup", &err);
    }
  if (job_sandbox_name (name, &err) < 0)
    return ci_fail ("cleanup", &err);
  struct ci_ctx c;
  if (ci_open (&c, &err) < 0)
    return ci_fail ("cleanup", &err);
  size_t n = 0;
  int r = remove_job (c.rt, name, &n, &err);
  ci_close (&c);
  if (r < 0)
    return ci_fail ("cleanup", &err);
  printf ("Removed %zu sandbox%s of %s\n", n, n == 1 ? "" : "es", name);
  return 0;
}

int
cli_ci (int argc, char **argv)
{
  if (argc >= 2 && (strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "--help") == 0))
    {
      fputs (ci_help, stdout);
      return 0;
    }
  if (argc < 3 || strcmp (argv[1], "gitlab") != 0)
    {
      fprintf (stderr, "ohbox ci: expected `gitlab config|prepare|run|cleanup`\nRun 'ohbox ci --help' for usage.\n");
      return system_failure ();
    }
  const char *stage = argv[2];
  int sub_argc = argc - 2;
  char **sub_argv = argv + 2;
  if (strcmp (stage, "-h") == 0 || strcmp (stage, "--help") == 0)
    {
      fputs (ci_help, stdout);
      return 0;
    }
  if (strcmp (stage, "config") == 0)
    return ci_config ();
  if (strcmp (stage, "prepare") == 0)
    return ci_prepare (sub_argc, sub_argv);
  if (strcmp (stage, "run") == 0)
    return ci_run (sub_argc, sub_argv);
  if (strcmp (stage, "cleanup") == 0)
    return ci_cleanup (sub_argc, sub_argv);
  fprintf (stderr, "ohbox ci gitlab: unknown stage `%s`: use config, prepare, run or cleanup\n", stage);
  return system_failure ();
}
