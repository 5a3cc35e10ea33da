/* ci_gitlab.c: `ohbox ci gitlab config|prepare|run|cleanup`, a driver for
 * GitLab Runner's custom executor (man/ohbox-ci.1, contrib/gitlab-runner/).
 *
 * The runner calls one stage per process, with the job's variables as
 * CUSTOM_ENV_*: config names the job's sandbox and makes its key (handed to
 * the later stages through job_env, see ci_gitlab_job.c), prepare pulls the
 * image with the job's own credentials and starts one detached sandbox per
 * job (and one per service, in the job's network namespace), run feeds each
 * script the runner generated to a shell inside it, cleanup removes them
 * all. run and cleanup touch only sandboxes the job's prepare recorded as
 * its own.
 *
 * Exit codes are the runner's contract: 0, $BUILD_FAILURE_EXIT_CODE when
 * the job's script failed, $SYSTEM_FAILURE_EXIT_CODE when ohbox or the
 * system did (image not found, registry down, sandbox gone). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ci_gitlab.h"
#include "cli.h"

/* The job sandbox's command: it only has to stay alive until cleanup; the
 * scripts run beside it through exec. */
static const char keepalive[] = "while :; do sleep 3600; done";
/* What the runner's docker executor does too: bash when the image has it
 * (the scripts are generated for bash), else sh. */
static const char *const shells[] = { "bash", "sh" };

static const char ci_help[] =
  "Usage: ohbox ci gitlab config\n"
  "       ohbox ci gitlab prepare [OPTIONS]\n"
  "       ohbox ci gitlab run SCRIPT_PATH STAGE_NAME\n"
  "       ohbox ci gitlab cleanup\n\n"
  "A GitLab Runner custom executor driver: the runner calls each stage with the\n"
  "job's variables as CUSTOM_ENV_* (see contrib/gitlab-runner/ and ohbox-ci(1)).\n\n"
  "  config    name the job's sandbox (from $JOB_RESPONSE_FILE), print the executor\n"
  "            configuration JSON (builds_dir, cache_dir, job_env, ...)\n"
  "  prepare   pull $CUSTOM_ENV_CI_JOB_IMAGE, start the job's sandbox and services\n"
  "  run       run the runner's SCRIPT_PATH in the job's sandbox (bash, else sh)\n"
  "  cleanup   remove the job's sandboxes (missing ones are fine)\n\n"
  "Options of prepare:\n"
  "      --pull POLICY            always, if-not-present or never (default: if-not-present,\n"
  "                               always for images that needed credentials)\n"
  "      --host-credentials       also use this host's registry credentials (auth.json)\n"
  "                               for every job, not only the job's own\n"
  "      --pull-timeout DURATION  give up a pull after this long (default 30m; 0: never)\n"
  "      --max-image-size BYTES   limit on an image's unpacked layers (default 64 GiB)\n"
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

/* The error (main prints it into the job's log) and the system failure code. */
static int
ci_fail (ohbox_error_t *err)
{
  return cli_fail_code (err, system_failure ());
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

/* Removes sandbox NAME if it exists (running or not) and is the job's. */
static int
remove_owned (struct ci_ctx *c, const struct ci_job *job, const char *name, bool *ret_removed, ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  cleanup_error ohbox_error_t e = NULL;
  if (ret_removed)
    *ret_removed = false;
  if (ohbox_sandbox_resolve (c->rt, name, &id, &e) < 0)
    {
      if (e->kind == OHBOX_ERR_NOT_FOUND)
        return 0;
      ohbox_error_move (err, &e);
      return ohbox_error_prefix (err, "find sandbox `%s`", name);
    }
  if (ci_own_check (c, job, id, name, err) < 0)
    return -1;
  if (ohbox_sandbox_remove (c->rt, id, true, err) < 0)
    return ohbox_error_prefix (err, "remove sandbox `%s`", name);
  ci_own_forget (c, id);
  if (ret_removed)
    *ret_removed = true;
  return 0;
}

/* Every sandbox of the job: its services first (they live in its network
 * namespace), then the job's own. One that is not the job's is left alone
 * (and reported, after the others are gone). */
static int
remove_job (struct ci_ctx *c, const struct ci_job *job, size_t *ret_n, ohbox_error_t *err)
{
  char name[CI_NAME_MAX];
  size_t n = 0;
  int ret = 0;
  for (size_t i = 0; i <= CI_MAX_SERVICES; i++)
    {
      bool removed;
      cleanup_error ohbox_error_t e = NULL;
      if (i < CI_MAX_SERVICES)
        ci_service_sandbox_name (name, job->name, i);
      else
        snprintf (name, sizeof name, "%s", job->name);
      if (remove_owned (c, job, name, &removed, &e) < 0 && ret == 0)
        {
          ohbox_error_move (err, &e);
          ret = -1;
        }
      n += removed;
    }
  if (ret_n)
    *ret_n = n;
  return ret;
}

/* ---- config ---- */

static int
ci_config (void)
{
  cleanup_error ohbox_error_t err = NULL;
  json_t *response = NULL;
  struct ci_job job;
  if (ci_job_response (&response, &err) < 0 || ci_job_new (response, &job, &err) < 0)
    {
      json_decref (response);
      return ci_fail (&err);
    }
  json_decref (response);
  /* job_env reaches the later stages as plain variables; the job's own
   * only ever arrive as CUSTOM_ENV_*, so it cannot replace these. */
  json_t *j = json_pack ("{s:s, s:s, s:b, s:{s:s, s:s}, s:s, s:s, s:{s:s, s:s}}", "builds_dir", CI_BUILDS_DIR,
                         "cache_dir", CI_CACHE_DIR, "builds_dir_is_shared", 0, "driver", "name", CI_DRIVER_NAME,
                         "version", PACKAGE_VERSION, "shell", "bash", "hostname", job.name, "job_env", CI_ENV_SANDBOX,
                         job.name, CI_ENV_KEY, job.key);
  explicit_bzero (job.key, sizeof job.key);
  json_dumpf (j, stdout, JSON_COMPACT);
  fputc ('\n', stdout);
  json_decref (j);
  return fflush (stdout) == 0 ? 0 : system_failure ();
}

/* ---- prepare ---- */

static const char *const policy_names[] = {
  [CI_PULL_DEFAULT] = "the default",
  [CI_PULL_ALWAYS] = "always",
  [CI_PULL_IF_NOT_PRESENT] = "if-not-present",
  [CI_PULL_NEVER] = "never",
};

/* The store's image named IMAGE (never an id or id prefix: a job names
 * images as references), and whether its pull needed credentials. 1 when
 * found, 0 when not, -1 on error. */
static int
find_image (const char *image, char id[OHBOX_DIGEST_LEN + 1], bool *needs_credentials, ohbox_error_t *err)
{
  struct ohbox_store *store = NULL;
  if (ohbox_store_open (cli_store_root (), &store, err) < 0)
    return -1;
  cleanup_free char *found = NULL;
  cleanup_error ohbox_error_t e = NULL;
  int r = ohbox_store_resolve_name (store, image, &found, &e);
  if (r == 0)
    {
      snprintf (id, OHBOX_DIGEST_LEN + 1, "%s", found);
      *needs_credentials = ohbox_store_needs_credentials (store, found);
    }
  ohbox_store_close (store);
  if (r == 0)
    return 1;
  if (e->kind == OHBOX_ERR_NOT_FOUND)
    return 0;
  ohbox_error_move (err, &e);
  return -1;
}

/* Makes IMAGE present as the pull policy says. By default an image in the
 * store is used as it is, unless its pull needed credentials: then this
 * job's own must get it from the registry again (a manifest request when
 * the layers are there), or a job without them would run a private image
 * another job pulled. */
int
ci_ensure_image (struct prepare_opts *po, const char *image, char id[OHBOX_DIGEST_LEN + 1], ohbox_error_t *err)
{
  if (po->pull != CI_PULL_ALWAYS)
    {
      bool needs_credentials = false;
      int found = find_image (image, id, &needs_credentials, err);
      if (found < 0)
        return -1;
      if (found && (po->pull != CI_PULL_DEFAULT || !needs_credentials))
        {
          printf ("Using %s from the store (%.19s), pull policy %s\n", image, id, policy_names[po->pull]);
          return 0;
        }
      if (!found && po->pull == CI_PULL_NEVER)
        return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0,
                            "image `%s` is not in the store and the pull policy is `never`: pull it on this host "
                            "first",
                            image);
      if (found)
        printf ("%s needed registry credentials when it was pulled: asking the registry with this job's\n", image);
    }
  struct ohbox_pull_result res = { 0 };
  fflush (stdout);
  int rc = cli_pull_image (image, &po->po, CLI_FORMAT_TABLE, false, &res);
  fflush (stdout);
  if (rc != 0)
    return ohbox_error (err, rc, 0, "pull `%s` failed (see above)", image);
  snprintf (id, OHBOX_DIGEST_LEN + 1, "%s", res.id);
  ohbox_pull_result_clear (&res);
  return 0;
}

void
ci_warn (const char *fmt, ...)
{
  /* Warnings are the job's, whichever stage: "ohbox ci gitlab: warning: ...". */
  const char *stage = cli_global.command;
  cli_global.command = "ci gitlab";
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = NULL;
  if (vasprintf (&msg, fmt, ap) < 0)
    msg = NULL;
  va_end (ap);
  cli_warn ("%s", msg ? msg : fmt);
  cli_global.command = stage;
}

static void
quiet_warning (const char *msg, void *data)
{
  (void) data;
  ci_warn ("%s", msg);
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
ci_start_detached (struct ci_ctx *c, struct ohbox_run_request *q, const char *shown_image, const struct ci_job *job,
                   double expires, ohbox_error_t *err)
{
  cleanup_free char *id = NULL;
  if (start_planned (c, q, &id, err) < 0)
    return ohbox_error_prefix (err, "start sandbox `%s` from `%s`", q->name, shown_image);
  if (ci_own_record (c, job, id, expires, err) < 0)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      ohbox_sandbox_remove (c->rt, id, true, &ignored);
      return -1;
    }
  printf ("Started sandbox %s (%.12s) from %s\n", q->name, id, shown_image);
  fflush (stdout);
  return 0;
}

enum
{
  OPT_PULL = 256,
  OPT_TLS_VERIFY,
  OPT_CERT_DIR,
  OPT_HOST_CREDS,
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
    { "host-credentials", no_argument, NULL, OPT_HOST_CREDS },
    { "pull-timeout", required_argument, NULL, CLI_OPT_PULL_TIMEOUT },
    { "max-image-size", required_argument, NULL, CLI_OPT_MAX_IMAGE },
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
          if (strcmp (optarg, "always") == 0)
            po->pull = CI_PULL_ALWAYS;
          else if (strcmp (optarg, "if-not-present") == 0 || strcmp (optarg, "missing") == 0)
            po->pull = CI_PULL_IF_NOT_PRESENT;
          else if (strcmp (optarg, "never") == 0)
            po->pull = CI_PULL_NEVER;
          else
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown --pull `%s`: use always, if-not-present or never",
                                optarg);
          break;
        case OPT_TLS_VERIFY:
          {
            bool verify;
            if (cli_parse_bool (optarg, &verify) < 0)
              return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--tls-verify takes true or false, not `%s`", optarg);
            po->po.registry.insecure = !verify;
            po->po.tls_verify_explicit = true;
            break;
          }
        case OPT_CERT_DIR:
          po->po.registry.cert_dir = optarg;
          break;
        case OPT_HOST_CREDS:
          po->host_credentials = true;
          break;
        case CLI_OPT_PULL_TIMEOUT:
        case CLI_OPT_MAX_IMAGE:
          if (cli_pull_limit_option (c, optarg, &po->po, err) < 0)
            return -1;
          break;
        case OPT_NETWORK:
          if (strcmp (optarg, "none") && strcmp (optarg, "host") && strcmp (optarg, "bridge"))
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown --network `%s`: use bridge, none or host", optarg);
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

/* The registry side of prepare: registries.conf, the job's own
 * credentials (and the host's only when the runner's configuration says
 * --host-credentials), released by prepare_release. */
static int
prepare_registry (struct prepare_opts *po, json_t *response, struct ohbox_registries_conf **conf, ohbox_error_t *err)
{
  char *auth_json = NULL;
  if (ci_job_auth_json (response, &auth_json, err) < 0)
    return -1;
  po->po.registry.auth_json = auth_json;
  po->po.registry.auth_json_name = "the job's registry credentials";
  po->po.registry.no_default_authfiles = !po->host_credentials;
  if (ohbox_registries_conf_load (cli_global.registries_conf, conf, err) < 0)
    return -1;
  po->po.conf = *conf;
  return 0;
}

static void
prepare_release (struct prepare_opts *po, struct ohbox_registries_conf *conf)
{
  char *auth_json = (char *) po->po.registry.auth_json;
  if (auth_json)
    explicit_bzero (auth_json, strlen (auth_json));
  free (auth_json);
  po->po.registry.auth_json = NULL;
  ohbox_registries_conf_free (conf);
}

/* Starts the job's sandbox from IMAGE and its services. */
static int
start_job (struct prepare_opts *po, const struct ci_job *job, json_t *response, const char *image, ohbox_error_t *err)
{
  char id[OHBOX_DIGEST_LEN + 1];
  if (ci_ensure_image (po, image, id, err) < 0)
    return -1;
  json_t *services = NULL;
  struct hostnames hosts = { .n = 0 };
  if (ci_load_services (response, &services, &hosts, err) < 0)
    return -1;
  double expires = ci_job_expiry (response);
  char *keep[] = { (char *) "/bin/sh", (char *) "-c", (char *) keepalive, NULL };
  /* From the id the pull or the store gave: the name could be made to
   * point elsewhere meanwhile. */
  /* The network as `ohbox run` decides it (run_policy.h). */
  struct ohbox_run_request o = { .image = id,
                                 .name = job->name,
                                 .entrypoint = keep,
                                 .limits = po->limits,
                                 .add_hosts = hosts.v,
                                 .network = po->network };
  struct ci_ctx c;
  int r = ci_open (&c, err);
  if (r == 0)
    r = ci_start_detached (&c, &o, image, job, expires, err);
  ci_close (&c);
  if (r == 0 && services)
    r = ci_start_services (po, job, expires, services, err);
  json_decref (services);
  ci_hostnames_clear (&hosts);
  return r;
}

static int
ci_prepare (int argc, char **argv)
{
  cleanup_error ohbox_error_t err = NULL;
  struct prepare_opts po = { .pull = CI_PULL_DEFAULT };
  struct ci_job job;
  int r = parse_prepare (argc, argv, &po, &err);
  if (r == 1)
    return 0;
  if (r < 0 || ci_job_from_env (&job, &err) < 0)
    return ci_fail (&err);
  const char *image = getenv ("CUSTOM_ENV_CI_JOB_IMAGE");
  if (image == NULL || *image == '\0')
    {
      ohbox_error (&err, OHBOX_ERR_USAGE, 0,
                   "the job names no image (`CUSTOM_ENV_CI_JOB_IMAGE` is empty): set `image:` in .gitlab-ci.yml");
      return ci_fail (&err);
    }
  /* Leftovers: of this job (a prepare that ran before, the runner retrying
   * it), and of jobs whose runner died before their cleanup. */
  {
    struct ci_ctx c;
    if (ci_open (&c, &err) < 0)
      return ci_fail (&err);
    ci_own_collect (&c);
    r = remove_job (&c, &job, NULL, &err);
    ci_close (&c);
    if (r < 0)
      return ci_fail (&err);
  }
  json_t *response = NULL;
  struct ohbox_registries_conf *conf = NULL;
  if (ci_job_response (&response, &err) < 0 || prepare_registry (&po, response, &conf, &err) < 0)
    {
      prepare_release (&po, conf);
      json_decref (response);
      return ci_fail (&err);
    }
  printf ("Using ohbox %s, sandbox %s, image %s\n", PACKAGE_VERSION, job.name, image);
  r = start_job (&po, &job, response, image, &err);
  prepare_release (&po, conf);
  json_decref (response);
  if (r < 0)
    {
      /* Nothing of a job that could not start stays behind, whether or not
       * the runner calls cleanup. */
      struct ci_ctx c;
      cleanup_error ohbox_error_t e = NULL;
      if (ci_open (&c, &e) == 0)
        remove_job (&c, &job, NULL, &e);
      ci_close (&c);
      return ci_fail (&err);
    }
  return 0;
}

/* ---- run ---- */

static bool
sandbox_running (const char *id)
{
  struct ci_ctx c;
  cleanup_error ohbox_error_t e = NULL;
  cleanup_sandbox_info struct ohbox_sandbox_info info = { 0 };
  bool running = false;
  if (ci_open (&c, &e) == 0 && ohbox_sandbox_inspect_info (c.rt, id, &info, &e) == 0)
    running = info.status == OHBOX_STATUS_RUNNING || info.status == OHBOX_STATUS_PAUSED;
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
    cli_note ("write `%s`: %s", file, strerror (errno));
}

/* The id of the job's sandbox, once it is known to be the job's. */
static int
owned_sandbox (struct ci_ctx *c, const struct ci_job *job, char **ret_id, ohbox_error_t *err)
{
  if (ohbox_sandbox_resolve (c->rt, job->name, ret_id, err) < 0)
    return ohbox_error_prefix (err, "the job's sandbox");
  return ci_own_check (c, job, *ret_id, job->name, err);
}

static int
ci_run (int argc, char **argv)
{
  cleanup_error ohbox_error_t err = NULL;
  if (argc != 3)
    {
      ohbox_error (&err, OHBOX_ERR_USAGE, 0, "expected SCRIPT_PATH STAGE_NAME, as the runner passes them");
      return ci_fail (&err);
    }
  const char *script = argv[1], *stage = argv[2];
  struct ci_job job;
  if (ci_job_from_env (&job, &err) < 0)
    return ci_fail (&err);
  /* The script reaches the shell on its stdin: nothing is copied into the
   * sandbox, and the runner's file stays where the runner cleans it up. */
  int fd = open (script, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      ohbox_error_errno (&err, "open the `%s` script `%s`", stage, script);
      return ci_fail (&err);
    }
  if (dup2 (fd, 0) < 0)
    {
      close (fd);
      ohbox_error_errno (&err, "redirect stdin");
      return ci_fail (&err);
    }
  close (fd);
  struct ci_ctx c;
  cleanup_free char *id = NULL;
  if (ci_open (&c, &err) < 0)
    return ci_fail (&err);
  /* By id from here on: the name is checked once, and exec cannot be sent
   * to another sandbox given that name meanwhile. */
  if (owned_sandbox (&c, &job, &id, &err) < 0)
    {
      ci_close (&c);
      return ci_fail (&err);
    }
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
      r = ohbox_sandbox_exec (c.rt, id, &o, &code, &err);
      /* Only "not found" tries the next shell: nothing of the script ran. */
      if (!(r < 0 && code == 127))
        break;
    }
  ci_close (&c);
  if (r < 0 && code == 127)
    {
      ohbox_error_prefix (&err, "the image has neither bash nor sh");
      write_build_exit_code (127);
      return cli_fail_code (&err, build_failure ());
    }
  if (r < 0)
    return ci_fail (&err);
  if (code == 0)
    return 0;
  /* A script that died because its sandbox went away is the system's failure. */
  if (!sandbox_running (id))
    {
      return cli_error (system_failure (), "sandbox `%s` is gone (the `%s` script ended with %d)", job.name, stage,
                        code);
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
  if (argc != 1)
    {
      ohbox_error (&err, OHBOX_ERR_USAGE, 0, "cleanup takes no arguments");
      return ci_fail (&err);
    }
  struct ci_job job;
  if (ci_job_from_env (&job, &err) < 0)
    return ci_fail (&err);
  struct ci_ctx c;
  if (ci_open (&c, &err) < 0)
    return ci_fail (&err);
  size_t n = 0;
  int r = remove_job (&c, &job, &n, &err);
  ci_close (&c);
  printf ("Removed %zu sandbox%s of %s\n", n, n == 1 ? "" : "es", job.name);
  if (r < 0)
    return ci_fail (&err);
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
    return cli_usage_error_code (system_failure (), "expected `gitlab config|prepare|run|cleanup`");
  const char *stage = argv[2];
  int sub_argc = argc - 2;
  char **sub_argv = argv + 2;
  if (strcmp (stage, "-h") == 0 || strcmp (stage, "--help") == 0)
    {
      fputs (ci_help, stdout);
      return 0;
    }
  /* Errors are reported as "ohbox ci gitlab STAGE: ..." */
  static char name[32];
  snprintf (name, sizeof name, "ci gitlab %.16s", stage);
  cli_global.command = name;
  if (strcmp (stage, "config") == 0)
    return ci_config ();
  if (strcmp (stage, "prepare") == 0)
    return ci_prepare (sub_argc, sub_argv);
  if (strcmp (stage, "run") == 0)
    return ci_run (sub_argc, sub_argv);
  if (strcmp (stage, "cleanup") == 0)
    return ci_cleanup (sub_argc, sub_argv);
  cli_global.command = "ci gitlab";
  return cli_error (system_failure (), "unknown stage `%s`: use config, prepare, run or cleanup", stage);
}
