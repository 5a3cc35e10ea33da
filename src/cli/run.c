/* run.c: `ohbox run`. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Exit codes of `ohbox run` (ohbox-run(1)): the command's own, or these. */
#define RUN_EXIT_RUNTIME 125

#define ENV_FILE_MAX (1024 * 1024)

static const char run_help[] =
  "Usage: ohbox run [OPTIONS] IMAGE [COMMAND [ARG...]]\n\n"
  "Run COMMAND (default: the image's entrypoint and command) in a new sandbox.\n\n"
  "Options:\n"
  "  -d, --detach                 run in the background and print the sandbox ID\n"
  "      --rm                     remove the sandbox when it exits\n"
  "      --name NAME              name the sandbox\n"
  "  -e, --env KEY=VALUE          set an environment variable (repeatable)\n"
  "      --env-file FILE          read KEY=VALUE lines from FILE\n"
  "  -i, --interactive            keep stdin open\n"
  "  -t, --tty                    allocate a pseudo-terminal (with -d: for ohbox attach)\n"
  "      --read-only              mount the root filesystem read-only\n"
  "  -v, --volume HOST:CTR[:OPTS] bind mount a host path (repeatable); OPTS: ro, rw, idmap\n"
  "      --tmpfs PATH             mount a tmpfs on PATH (repeatable)\n"
  "  -w, --workdir DIR            working directory inside the sandbox\n"
  "  -u, --user USER[:GROUP]      user (name or uid) to run the command as\n"
  "      --hostname NAME          hostname of the sandbox (default: short ID)\n"
  "      --network MODE           bridge (default; as root a veth on ohbox0 with NAT,\n"
  "                               rootless slirp4netns, or pasta without it, else\n"
  "                               none), none (loopback only), host, container:NAME\n"
  "                               (share that sandbox's network), NAME (a network\n"
  "                               made with `ohbox network create`, root); rootless\n"
  "                               also pasta or slirp4netns to choose the user-mode\n"
  "                               network. The image never chooses it; a runtime\n"
  "                               image's executor is published on 127.0.0.1 only\n"
  "      --egress public|all|none|CIDR[,CIDR...]\n"
  "                               where a root bridge sandbox may connect: public\n"
  "                               (default: not private, shared, link-local or\n"
  "                               metadata addresses), public and these ranges, all\n"
  "                               (warned), none (published ports only)\n"
  "  -p, --publish [IP:][HOST:]CTR[/tcp|/udp]\n"
  "                               publish a port (ranges A-B; HOST a range with one\n"
  "                               CTR: pick a free host port of it; no HOST: any)\n"
  "      --dns IP                 nameserver for /etc/resolv.conf (repeatable)\n"
  "      --add-host NAME:IP       a line for /etc/hosts (repeatable)\n"
  "      --entrypoint CMD         override the image's entrypoint\n"
  "  -m, --memory SIZE            memory limit (e.g. 512m, 1g)\n"
  "      --memory-swap SIZE       memory + swap limit (-1: unlimited swap)\n"
  "      --cpus N                 CPU limit (e.g. 1.5)\n"
  "      --cpu-shares N           relative CPU weight (v1 units)\n"
  "      --pids-limit N           maximum number of processes\n"
  "      --storage-size SIZE      bound the writable layer (e.g. 2g; root; ENOSPC when full)\n"
  "      --device DEVICE          give a device (repeatable): a CDI name VENDOR/CLASS=NAME\n"
  "                               (or =all), or HOSTPATH[:CTRPATH][:rwm] for a host node\n"
  "      --gpus GPUS              NVIDIA GPUs: all, a number, or device=ID[,ID] (indices or\n"
  "                               UUIDs); a CDI spec of nvidia.com/gpu if the host has one\n"
  "      --cdi-spec-dir DIR       read CDI specs from DIR (repeatable; default /etc/cdi\n"
  "                               and /var/run/cdi)\n"
  "      --cap-add CAP            add a capability (repeatable, ALL)\n"
  "      --cap-drop CAP           drop a capability (repeatable, ALL)\n"
  "      --security-opt OPT       seccomp=FILE|unconfined, no-new-privileges[=true|false] (default false,\n"
  "                               as Docker: sudo works)\n"
  "      --stop-signal SIG        what `ohbox stop` sends first (default: the image's StopSignal, else TERM)\n"
  "      --userns host            share the host's user namespace (no id mapping)\n"
  "      --executor-port PORT     runtime image (ohbox build) run without a command: the\n"
  "                               executor's port, in the sandbox and on the host's\n"
  "                               127.0.0.1 (default: 8000 inside, a free one outside)\n"
  "      --timeout DURATION       kill the sandbox when it runs longer (e.g. 90, 90s,\n"
  "                               10m, 1h): SIGTERM, SIGKILL 5 s later; exit status 124\n"
  "      --format json            print JSON lines: created, started (id, pid), output\n"
  "                               (stream, line; not with -t or -d), exited (exit_code,\n"
  "                               signal, timed_out, duration), or error\n"
  "      --dry-run                print the plan (network, executor, process, limits,\n"
  "                               security, warnings) as JSON and start nothing\n"
  "                               (with --format json: on one line)\n"
  "  -h, --help                   this help\n\n"
  "Exit status: the command's, or 124 when --timeout killed it, 125 when ohbox\n"
  "failed, 126 when the command cannot be executed, 127 when it is not found.\n";

struct strv
{
  char **v;
  size_t n;
};

static void
strv_add (struct strv *s, const char *x)
{
  s->v = xrealloc (s->v, (s->n + 2) * sizeof (char *));
  s->v[s->n++] = xstrdup (x);
  s->v[s->n] = NULL;
}

static void
strv_clear (struct strv *s)
{
  for (size_t i = 0; i < s->n; i++)
    free (s->v[i]);
  free (s->v);
  s->v = NULL;
  s->n = 0;
}

static int
read_env_file (const char *path, struct strv *env, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len;
  if (ohbox_read_file_at (AT_FDCWD, path, ENV_FILE_MAX, &text, &len, err) < 0)
    return ohbox_error_prefix (err, "--env-file");
  char *save = NULL;
  for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      while (*line == ' ' || *line == '\t')
        line++;
      size_t l = strlen (line);
      if (l && line[l - 1] == '\r')
        line[--l] = '\0';
      if (*line == '\0' || *line == '#')
        continue;
      if (strchr (line, '=') == NULL)
        {
          /* Docker: a bare name takes the caller's value, if any. */
          const char *v = getenv (line);
          if (v)
            {
              cleanup_free char *kv = xasprintf ("%s=%s", line, v);
              strv_add (env, kv);
            }
          continue;
        }
      strv_add (env, line);
    }
  return 0;
}

static void
print_warning (const char *msg, void *data)
{
  (void) data;
  cli_warn ("%s", msg);
}

/* --format json: one JSON object per line on stdout, flushed at once so
 * that a CI reading the pipe sees each event when it happens. */
static bool json_events;

static void
emit (json_t *j)
{
  json_dumpf (j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION (6));
  fputc ('\n', stdout);
  fflush (stdout);
  json_decref (j);
}

static void
on_started (const char *id, pid_t pid, void *data)
{
  (void) data;
  emit (json_pack ("{s:s, s:s}", "event", "created", "id", id));
  emit (json_pack ("{s:s, s:s, s:i}", "event", "started", "id", id, "pid", (int) pid));
}

static void
on_output (int stream, const char *line, size_t len, void *data)
{
  (void) data;
  /* Bytes that are not UTF-8 must not lose the line: json_stringn refuses
   * them, so they become U+FFFD. */
  json_t *s = json_stringn (line, len);
  if (s == NULL)
    {
      cleanup_free char *fixed = xmalloc (len * 3 + 1);
      size_t k = 0;
      for (size_t i = 0; i < len; i++)
        {
          unsigned char ch = (unsigned char) line[i];
          if (ch < 0x80)
            fixed[k++] = (char) ch;
          else
            {
              memcpy (fixed + k, "\xef\xbf\xbd", 3);
              k += 3;
            }
        }
      s = json_stringn (fixed, k);
    }
  emit (json_pack ("{s:s, s:s, s:o}", "event", "output", "stream", stream == 2 ? "stderr" : "stdout", "line", s));
}

static void
on_exited (const struct ohbox_run_exit *ex, void *data)
{
  (void) data;
  json_t *sig = json_null ();
  if (ex->signal)
    {
      const char *abbrev = sigabbrev_np (ex->signal);
      json_decref (sig);
      sig = abbrev ? json_sprintf ("SIG%s", abbrev) : json_integer (ex->signal);
    }
  emit (json_pack ("{s:s, s:s, s:i, s:o, s:b, s:f}", "event", "exited", "id", ex->id, "exit_code", ex->exit_code,
                   "signal", sig, "timed_out", ex->timed_out, "duration", ex->duration));
}

static int
run_fail (ohbox_error_t *err, int code)
{
  if (json_events && *err)
    emit (json_pack ("{s:s, s:s, s:i}", "event", "error", "message", (*err)->msg, "exit_code", code));
  return cli_fail_code (err, code);
}

enum
{
  OPT_RM = 256,
  OPT_NAME,
  OPT_ENV_FILE,
  OPT_READ_ONLY,
  OPT_TMPFS,
  OPT_HOSTNAME,
  OPT_NETWORK,
  OPT_ENTRYPOINT,
  OPT_MEMORY_SWAP,
  OPT_CPUS,
  OPT_CPU_SHARES,
  OPT_PIDS,
  OPT_STORAGE_SIZE,
  OPT_CAP_ADD,
  OPT_CAP_DROP,
  OPT_SECURITY,
  OPT_STOP_SIGNAL,
  OPT_USERNS,
  OPT_DNS,
  OPT_EXECUTOR_PORT,
  OPT_TIMEOUT,
  OPT_FORMAT,
  OPT_ADD_HOST,
  OPT_DRY_RUN,
  OPT_EGRESS,
  OPT_DEVICE,
  OPT_GPUS,
  OPT_CDI_SPEC_DIR,
};

/* --dry-run: the plan as JSON; nothing is started (no state directory,
 * no lease, no key). */
static int
show_plan (const struct ohbox_run_request *q)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_store *store = NULL;
  struct ohbox_host_abilities host;
  struct ohbox_run_plan plan;
  if (ohbox_store_open (cli_store_root (), &store, &err) < 0)
    return run_fail (&err, RUN_EXIT_RUNTIME);
  int r = ohbox_host_probe (NULL, &host, &err);
  if (r == 0)
    {
      r = ohbox_run_plan_make (store, q, &host, &plan, &err);
      if (r == 0)
        {
          json_t *j = ohbox_run_plan_json (&plan);
          if (json_events)
            emit (j);
          else
            {
              cli_print_json (j);
              json_decref (j);
            }
          ohbox_run_plan_clear (&plan);
        }
      ohbox_host_abilities_clear (&host);
    }
  ohbox_store_close (store);
  return r < 0 ? run_fail (&err, RUN_EXIT_RUNTIME) : 0;
}

/* The executor of a runtime sandbox, for the user (and scripts: "executor
 * at URL, session API key KEY"). */
static void
print_executor (const char *url, const char *key, const struct ohbox_plan_executor *x)
{
  if (url)
    cli_note ("executor at %s, session API key %s", url, key);
  else
    cli_note ("executor on port %d of the sandbox's network namespace (not reachable from the host), "
              "session API key %s",
              x->port, key);
}

struct run_events
{
  const struct ohbox_plan_executor *executor;
};

static void
on_executor (const char *url, const char *key, void *data)
{
  struct run_events *ev = data;
  print_executor (url, key, ev->executor);
}

/* A real run: the plan, its warnings, the sandbox. */
static int
run_request (const struct ohbox_run_request *q)
{
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *id = NULL;
  struct ohbox_store *store = NULL;
  struct ohbox_runtime *rt = NULL;
  struct ohbox_host_abilities host;
  struct ohbox_run_plan plan;
  memset (&host, 0, sizeof host);
  memset (&plan, 0, sizeof plan);
  int rc = RUN_EXIT_RUNTIME, code = RUN_EXIT_RUNTIME;
  if (ohbox_store_open (cli_store_root (), &store, &err) < 0 || ohbox_runtime_open (store, NULL, &rt, &err) < 0
      || ohbox_host_probe (rt, &host, &err) < 0 || ohbox_run_plan_make (store, q, &host, &plan, &err) < 0)
    goto fail;
  for (size_t i = 0; i < plan.n_warnings; i++)
    print_warning (plan.warnings[i], NULL);
  if (ohbox_run_plan_realize (&plan, &err) < 0)
    goto fail;
  struct run_events ev = { .executor = &plan.executor };
  plan.opts.warn = print_warning;
  plan.opts.on_executor = on_executor;
  plan.opts.event_data = &ev;
  if (json_events)
    {
      plan.opts.on_started = on_started;
      plan.opts.on_exited = on_exited;
      /* With a terminal the output is the terminal's, raw. */
      if (!plan.opts.tty)
        plan.opts.on_output = on_output;
    }
  fflush (stdout);
  if (ohbox_sandbox_run (rt, &plan.opts, &id, &code, &err) < 0)
    goto fail;
  if (plan.executor.enabled && q->detach)
    {
      /* The monitor recorded it (a port published from a free one). */
      struct ohbox_executor_info info;
      cleanup_error ohbox_error_t e = NULL;
      if (ohbox_sandbox_executor (rt, id, &info, &e) == 0)
        print_executor (info.url, info.api_key, &plan.executor);
      else if (!plan.executor.reachable || plan.executor.url)
        print_executor (plan.executor.url, plan.executor.api_key, &plan.executor);
      ohbox_executor_info_clear (&info);
    }
  if (q->detach && json_events)
    emit (json_pack ("{s:s, s:s}", "event", "started", "id", id));
  else if (q->detach)
    printf ("%s\n", id);
  rc = code;
  goto out;
fail:
  rc = run_fail (&err, code ? code : RUN_EXIT_RUNTIME);
out:
  ohbox_run_plan_clear (&plan);
  ohbox_host_abilities_clear (&host);
  if (rt)
    ohbox_runtime_close (rt);
  if (store)
    ohbox_store_close (store);
  return rc;
}

int
cli_run (int argc, char **argv)
{
  static const struct option opts[] = {
    { "detach", no_argument, NULL, 'd' },
    { "rm", no_argument, NULL, OPT_RM },
    { "name", required_argument, NULL, OPT_NAME },
    { "env", required_argument, NULL, 'e' },
    { "env-file", required_argument, NULL, OPT_ENV_FILE },
    { "interactive", no_argument, NULL, 'i' },
    { "tty", no_argument, NULL, 't' },
    { "read-only", no_argument, NULL, OPT_READ_ONLY },
    { "volume", required_argument, NULL, 'v' },
    { "tmpfs", required_argument, NULL, OPT_TMPFS },
    { "workdir", required_argument, NULL, 'w' },
    { "user", required_argument, NULL, 'u' },
    { "hostname", required_argument, NULL, OPT_HOSTNAME },
    { "network", required_argument, NULL, OPT_NETWORK },
    { "net", required_argument, NULL, OPT_NETWORK },
    { "entrypoint", required_argument, NULL, OPT_ENTRYPOINT },
    { "memory", required_argument, NULL, 'm' },
    { "memory-swap", required_argument, NULL, OPT_MEMORY_SWAP },
    { "cpus", required_argument, NULL, OPT_CPUS },
    { "cpu-shares", required_argument, NULL, OPT_CPU_SHARES },
    { "pids-limit", required_argument, NULL, OPT_PIDS },
    { "storage-size", required_argument, NULL, OPT_STORAGE_SIZE },
    { "cap-add", required_argument, NULL, OPT_CAP_ADD },
    { "cap-drop", required_argument, NULL, OPT_CAP_DROP },
    { "security-opt", required_argument, NULL, OPT_SECURITY },
    { "stop-signal", required_argument, NULL, OPT_STOP_SIGNAL },
    { "userns", required_argument, NULL, OPT_USERNS },
    { "publish", required_argument, NULL, 'p' },
    { "dns", required_argument, NULL, OPT_DNS },
    { "executor-port", required_argument, NULL, OPT_EXECUTOR_PORT },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "add-host", required_argument, NULL, OPT_ADD_HOST },
    { "egress", required_argument, NULL, OPT_EGRESS },
    { "format", required_argument, NULL, OPT_FORMAT },
    { "dry-run", no_argument, NULL, OPT_DRY_RUN },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "gpus", required_argument, NULL, OPT_GPUS },
    { "cdi-spec-dir", required_argument, NULL, OPT_CDI_SPEC_DIR },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  /* What the user asked for, as given: the run policy decides the rest. */
  struct ohbox_run_request q;
  memset (&q, 0, sizeof q);
  struct strv pub = { 0 }, dns = { 0 }, hosts = { 0 };
  struct strv env = { 0 }, vols = { 0 }, tmpfs = { 0 }, add = { 0 }, drop = { 0 }, ep = { 0 };
  struct strv devices = { 0 }, cdi_dirs = { 0 };
  cleanup_error ohbox_error_t err = NULL;
  int rc = RUN_EXIT_RUNTIME;
  int c;
  bool dry_run = false;
  /* '+': options end at IMAGE; what follows belongs to the command. */
  while ((c = getopt_long (argc, argv, "+de:itv:w:u:m:p:h", opts, NULL)) != -1)
    {
      const char *limit = NULL;
      switch (c)
        {
        case 'd':
          q.detach = true;
          break;
        case OPT_RM:
          q.rm = true;
          break;
        case OPT_NAME:
          q.name = optarg;
          break;
        case 'e':
          if (strchr (optarg, '=') == NULL)
            {
              const char *v = getenv (optarg);
              if (v)
                {
                  cleanup_free char *kv = xasprintf ("%s=%s", optarg, v);
                  strv_add (&env, kv);
                }
            }
          else
            strv_add (&env, optarg);
          break;
        case OPT_ENV_FILE:
          if (read_env_file (optarg, &env, &err) < 0)
            goto out_err;
          break;
        case 'i':
          q.interactive = true;
          break;
        case 't':
          q.tty = true;
          break;
        case OPT_READ_ONLY:
          q.read_only = true;
          break;
        case 'v':
          strv_add (&vols, optarg);
          break;
        case OPT_TMPFS:
          strv_add (&tmpfs, optarg);
          break;
        case 'w':
          q.workdir = optarg;
          break;
        case 'u':
          q.user = optarg;
          break;
        case OPT_HOSTNAME:
          q.hostname = optarg;
          break;
        case OPT_NETWORK:
          q.network = optarg;
          break;
        case OPT_EGRESS:
          q.egress = optarg;
          break;
        case 'p':
          strv_add (&pub, optarg);
          break;
        case OPT_DNS:
          strv_add (&dns, optarg);
          break;
        case OPT_ADD_HOST:
          strv_add (&hosts, optarg);
          break;
        case OPT_EXECUTOR_PORT:
          {
            char *end = NULL;
            long port = strtol (optarg, &end, 10);
            if (*end || port < 1 || port > 65535)
              {
                cli_error (RUN_EXIT_RUNTIME, "--executor-port takes a port number, not `%s`", optarg);
                goto out;
              }
            q.executor_port = (int) port;
            break;
          }
        case OPT_ENTRYPOINT:
          strv_add (&ep, optarg);
          break;
        case OPT_TIMEOUT:
          if (cli_parse_duration (optarg, &q.timeout) < 0)
            {
              cli_error (RUN_EXIT_RUNTIME, "invalid --timeout `%s`: use e.g. 30, 30s, 10m, 1h, 500ms", optarg);
              goto out;
            }
          break;
        case OPT_FORMAT:
          {
            enum cli_format f;
            if (cli_format_option (optarg, &f) < 0)
              goto out;
            json_events = f == CLI_FORMAT_JSON;
            break;
          }
        case OPT_DRY_RUN:
          dry_run = true;
          break;
        case 'm':
          limit = "memory";
          break;
        case OPT_MEMORY_SWAP:
          limit = "memory-swap";
          break;
        case OPT_CPUS:
          limit = "cpus";
          break;
        case OPT_CPU_SHARES:
          limit = "cpu-shares";
          break;
        case OPT_PIDS:
          limit = "pids-limit";
          break;
        case OPT_STORAGE_SIZE:
          {
            int64_t v;
            if (ohbox_cgroup_parse_size (optarg, &v, &err) < 0 || v <= 0)
              {
                cli_error (RUN_EXIT_RUNTIME, "invalid --storage-size `%s`: use e.g. 512m, 10g", optarg);
                goto out;
              }
            q.storage_size = (uint64_t) v;
            break;
          }
        case OPT_DEVICE:
          strv_add (&devices, optarg);
          break;
        case OPT_GPUS:
          q.gpus = optarg;
          break;
        case OPT_CDI_SPEC_DIR:
          strv_add (&cdi_dirs, optarg);
          break;
        case OPT_CAP_ADD:
          strv_add (&add, optarg);
          break;
        case OPT_CAP_DROP:
          strv_add (&drop, optarg);
          break;
        case OPT_SECURITY:
          /* Docker's spellings: KEY=VALUE and KEY:VALUE. */
          if (strncmp (optarg, "seccomp=", 8) == 0 || strncmp (optarg, "seccomp:", 8) == 0)
            q.seccomp_profile = optarg + 8;
          else if (strcmp (optarg, "no-new-privileges") == 0 || strcmp (optarg, "no-new-privileges=true") == 0
                   || strcmp (optarg, "no-new-privileges:true") == 0)
            q.no_new_privs = true;
          else if (strcmp (optarg, "no-new-privileges=false") == 0 || strcmp (optarg, "no-new-privileges:false") == 0)
            q.no_new_privs = false;
          else
            {
              cli_error (RUN_EXIT_RUNTIME, "unknown --security-opt `%s`; see 'ohbox run --help'", optarg);
              goto out;
            }
          break;
        case OPT_STOP_SIGNAL:
          q.stop_signal = optarg;
          break;
        case OPT_USERNS:
          if (strcmp (optarg, "host") != 0)
            {
              cli_error (RUN_EXIT_RUNTIME, "--userns `%s` is not supported: only `host`", optarg);
              goto out;
            }
          q.userns_host = true;
          break;
        case 'h':
          fputs (run_help, stdout);
          rc = 0;
          goto out;
        default:
          cli_usage_hint (RUN_EXIT_RUNTIME);
          goto out;
        }
      if (limit && ohbox_cgroup_limits_set_option (&q.limits, limit, optarg, &err) < 0)
        goto out_err;
    }
  if (optind >= argc)
    {
      cli_usage_error_code (RUN_EXIT_RUNTIME, "expected IMAGE");
      goto out;
    }
  q.image = argv[optind];
  q.command = argv + optind + 1;
  q.env = env.v;
  q.volumes = vols.v;
  q.publish = pub.v;
  q.dns = dns.v;
  q.add_hosts = hosts.v;
  q.tmpfs = tmpfs.v;
  q.cap_add = add.v;
  q.cap_drop = drop.v;
  q.entrypoint = ep.n ? ep.v : NULL;
  q.devices = devices.v;
  q.cdi_spec_dirs = cdi_dirs.v;
  rc = dry_run ? show_plan (&q) : run_request (&q);
  goto out;
out_err:
  rc = run_fail (&err, RUN_EXIT_RUNTIME);
out:
  strv_clear (&env);
  strv_clear (&pub);
  strv_clear (&dns);
  strv_clear (&hosts);
  strv_clear (&vols);
  strv_clear (&tmpfs);
  strv_clear (&add);
  strv_clear (&drop);
  strv_clear (&ep);
  strv_clear (&devices);
  strv_clear (&cdi_dirs);
  return rc;
}
