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
    cli_note ("executor on port %d of the sandbox's network namespace (the host reaches it through its unix "
              "socket: ohbox action), session API key %s",
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
  plan.opts.detach_caller_exits = true; /* (main returns) */
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

/* What `ohbox run` was asked for, as given: the run policy decides the rest. */
struct run_args
{
  struct ohbox_run_request q;
  struct strv env, vols, tmpfs, pub, dns, hosts, add, drop, ep, devices, cdi_dirs;
  bool dry_run;
};

static void
run_args_clear (struct run_args *a)
{
  struct strv *all[] = { &a->env, &a->vols, &a->tmpfs, &a->pub,     &a->dns,     &a->hosts,
                         &a->add, &a->drop, &a->ep,    &a->devices, &a->cdi_dirs };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    strv_clear (all[i]);
}

/* -e KEY=VALUE, or -e KEY: the caller's value of KEY where it has one. */
static void
run_env_option (const char *arg, struct strv *env)
{
  if (strchr (arg, '=') != NULL)
    {
      strv_add (env, arg);
      return;
    }
  const char *v = getenv (arg);
  if (v)
    {
      cleanup_free char *kv = xasprintf ("%s=%s", arg, v);
      strv_add (env, kv);
    }
}

/* --security-opt, in Docker's spellings: KEY=VALUE and KEY:VALUE. */
static int
run_security_option (const char *arg, struct ohbox_run_request *q)
{
  if (strncmp (arg, "seccomp=", 8) == 0 || strncmp (arg, "seccomp:", 8) == 0)
    q->seccomp_profile = arg + 8;
  else if (strcmp (arg, "no-new-privileges") == 0 || strcmp (arg, "no-new-privileges=true") == 0
           || strcmp (arg, "no-new-privileges:true") == 0)
    q->no_new_privs = true;
  else if (strcmp (arg, "no-new-privileges=false") == 0 || strcmp (arg, "no-new-privileges:false") == 0)
    q->no_new_privs = false;
  else
    return cli_error (RUN_EXIT_RUNTIME, "unknown --security-opt `%s`; see 'ohbox run --help'", arg);
  return 0;
}

/* The options whose value is a number, a duration or a size; 0 or the exit code. */
static int
run_value_option (int c, const char *arg, struct ohbox_run_request *q)
{
  char *end = NULL;
  long port;
  int64_t size;
  cleanup_error ohbox_error_t err = NULL;
  switch (c)
    {
    case OPT_EXECUTOR_PORT:
      port = strtol (arg, &end, 10);
      if (*end || port < 1 || port > 65535)
        return cli_error (RUN_EXIT_RUNTIME, "--executor-port takes a port number, not `%s`", arg);
      q->executor_port = (int) port;
      return 0;
    case OPT_TIMEOUT:
      if (cli_parse_duration (arg, &q->timeout) < 0)
        return cli_error (RUN_EXIT_RUNTIME, "invalid --timeout `%s`: use e.g. 30, 30s, 10m, 1h, 500ms", arg);
      return 0;
    case OPT_STORAGE_SIZE:
      if (ohbox_cgroup_parse_size (arg, &size, &err) < 0 || size <= 0)
        return cli_error (RUN_EXIT_RUNTIME, "invalid --storage-size `%s`: use e.g. 512m, 10g", arg);
      q->storage_size = (uint64_t) size;
      return 0;
    case OPT_USERNS:
      if (strcmp (arg, "host") != 0)
        return cli_error (RUN_EXIT_RUNTIME, "--userns `%s` is not supported: only `host`", arg);
      q->userns_host = true;
      return 0;
    case OPT_SECURITY:
      return run_security_option (arg, q);
    default:
      return cli_usage_hint (RUN_EXIT_RUNTIME);
    }
}

/* The limits given as options (cgroup.h), by their option names. */
static const char *
run_limit_option (int c)
{
  switch (c)
    {
    case 'm':
      return "memory";
    case OPT_MEMORY_SWAP:
      return "memory-swap";
    case OPT_CPUS:
      return "cpus";
    case OPT_CPU_SHARES:
      return "cpu-shares";
    case OPT_PIDS:
      return "pids-limit";
    default:
      return NULL;
    }
}

/* The repeatable options, each into its vector; NULL for the others. */
static struct strv *
run_list_option (int c, struct run_args *a)
{
  switch (c)
    {
    case 'v':
      return &a->vols;
    case OPT_TMPFS:
      return &a->tmpfs;
    case 'p':
      return &a->pub;
    case OPT_DNS:
      return &a->dns;
    case OPT_ADD_HOST:
      return &a->hosts;
    case OPT_ENTRYPOINT:
      return &a->ep;
    case OPT_DEVICE:
      return &a->devices;
    case OPT_CDI_SPEC_DIR:
      return &a->cdi_dirs;
    case OPT_CAP_ADD:
      return &a->add;
    case OPT_CAP_DROP:
      return &a->drop;
    default:
      return NULL;
    }
}

/* The flags and the options that name something; 1 when C is not one of them. */
static int
run_plain_option (int c, const char *arg, struct ohbox_run_request *q)
{
  switch (c)
    {
    case 'd':
      q->detach = true;
      break;
    case OPT_RM:
      q->rm = true;
      break;
    case 'i':
      q->interactive = true;
      break;
    case 't':
      q->tty = true;
      break;
    case OPT_READ_ONLY:
      q->read_only = true;
      break;
    case OPT_NAME:
      q->name = arg;
      break;
    case 'w':
      q->workdir = arg;
      break;
    case 'u':
      q->user = arg;
      break;
    case OPT_HOSTNAME:
      q->hostname = arg;
      break;
    case OPT_NETWORK:
      q->network = arg;
      break;
    case OPT_EGRESS:
      q->egress = arg;
      break;
    case OPT_GPUS:
      q->gpus = arg;
      break;
    case OPT_STOP_SIGNAL:
      q->stop_signal = arg;
      break;
    default:
      return 1;
    }
  return 0;
}

/* One option of `ohbox run`: 0, or the exit code to stop with (--help: 0
 * through *DONE). */
static int
run_option (int c, const char *arg, struct run_args *a, bool *done)
{
  cleanup_error ohbox_error_t err = NULL;
  struct strv *list = run_list_option (c, a);
  const char *limit = run_limit_option (c);
  enum cli_format f;
  if (list)
    strv_add (list, arg);
  else if (limit)
    {
      if (ohbox_cgroup_limits_set_option (&a->q.limits, limit, arg, &err) < 0)
        return run_fail (&err, RUN_EXIT_RUNTIME);
    }
  else if (c == 'e')
    run_env_option (arg, &a->env);
  else if (c == OPT_ENV_FILE)
    {
      if (read_env_file (arg, &a->env, &err) < 0)
        return run_fail (&err, RUN_EXIT_RUNTIME);
    }
  else if (c == OPT_FORMAT)
    {
      if (cli_format_option (arg, &f) < 0)
        return RUN_EXIT_RUNTIME;
      json_events = f == CLI_FORMAT_JSON;
    }
  else if (c == OPT_DRY_RUN)
    a->dry_run = true;
  else if (c == 'h')
    {
      fputs (run_help, stdout);
      *done = true;
    }
  else if (run_plain_option (c, arg, &a->q) != 0)
    return run_value_option (c, arg, &a->q);
  return 0;
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
  struct run_args a;
  memset (&a, 0, sizeof a);
  int rc = 0, c;
  bool done = false;
  /* '+': options end at IMAGE; what follows belongs to the command. */
  while (rc == 0 && !done && (c = getopt_long (argc, argv, "+de:itv:w:u:m:p:h", opts, NULL)) != -1)
    rc = run_option (c, optarg, &a, &done);
  if (rc == 0 && !done && optind >= argc)
    rc = cli_usage_error_code (RUN_EXIT_RUNTIME, "expected IMAGE");
  else if (rc == 0 && !done)
    {
      struct ohbox_run_request *q = &a.q;
      q->image = argv[optind];
      q->command = argv + optind + 1;
      q->env = a.env.v;
      q->volumes = a.vols.v;
      q->publish = a.pub.v;
      q->dns = a.dns.v;
      q->add_hosts = a.hosts.v;
      q->tmpfs = a.tmpfs.v;
      q->cap_add = a.add.v;
      q->cap_drop = a.drop.v;
      q->entrypoint = a.ep.n ? a.ep.v : NULL;
      q->devices = a.devices.v;
      q->cdi_spec_dirs = a.cdi_dirs.v;
      rc = a.dry_run ? show_plan (q) : run_request (q);
    }
  run_args_clear (&a);
  return rc;
}
