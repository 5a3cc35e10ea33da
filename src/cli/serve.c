/* serve.c: `ohbox serve`: its options; the server is src/serve/. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "serve/serve.h" /* the server itself (src/serve), not a library module */

#define KEY_FILE_MAX 4096
#define KEY_MIN 16

static const char serve_help[] = "Usage: ohbox serve [OPTIONS]\n\n"
                                 "Serve OpenHands' remote runtime API: OpenHands (runtime = \"remote\", or its V1\n"
                                 "remote sandbox service) starts, pauses, resumes and stops its sandboxes here.\n\n"
                                 "Options:\n"
                                 "      --api-key-file FILE    the key clients send as X-API-Key (required, unless\n"
                                 "                             --socket); FILE must not be readable by others\n"
                                 "      --listen ADDR:PORT     where to listen (default 127.0.0.1:8000)\n"
                                 "      --socket PATH          listen on a unix socket (0600) instead\n"
                                 "      --url URL              the base of sandbox URLs (default http://LISTEN)\n"
                                 "      --pool IMAGE=N         keep N sandboxes of runtime image IMAGE ready\n"
                                 "                             (repeatable)\n"
                                 "      --max-sandboxes N      at most N sandboxes at once (429 beyond; 0: no limit)\n"
                                 "      --pause-idle DURATION  freeze sandboxes without requests for DURATION;\n"
                                 "                             the next request to one resumes it\n"
                                 "      --start-timeout DURATION  how long a sandbox's server may take to answer\n"
                                 "                             (default 120s)\n"
                                 "      --resources SPEC       limits at resource_factor 1, times the factor:\n"
                                 "                             cpus=N,memory=SIZE,pids=N or none\n"
                                 "                             (default cpus=1,memory=2g,pids=4096)\n"
                                 "      --work-ports LIST      ports inside published for each sandbox (work_hosts),\n"
                                 "                             e.g. 12000,12001 (default none)\n"
                                 "      --sandbox-port PORT    the port of each sandbox's server (default 60000)\n"
                                 "      --registry-prefix P    what /registry_prefix answers (default\n"
                                 "                             localhost/ohbox-serve)\n"
                                 "      --max-build-context SIZE  largest /build context, decoded (default 256m)\n"
                                 "      --no-pull              never pull: /start of an image not in the store fails\n"
                                 "      --log FILE             the JSON log lines (default: stderr)\n"
                                 "      --connection-limit N   at most N connections at once (default 1024)\n"
                                 "      --device DEVICE        a device every sandbox gets, as ohbox run --device\n"
                                 "                             (repeatable)\n"
                                 "      --gpus GPUS            GPUs every sandbox gets, as ohbox run --gpus\n"
                                 "      --cdi-spec-dir DIR     CDI specs from DIR (repeatable; default /etc/cdi and\n"
                                 "                             /var/run/cdi)\n"
                                 "      --egress POLICY        where sandboxes may connect, as ohbox run --egress\n"
                                 "                             (default public)\n"
                                 "      --tls-verify=false     registries over plain HTTP or unverified TLS\n"
                                 "      --cert-dir DIR         CA certificates for registries (certs.d layout)\n"
                                 "      --authfile FILE        registry credentials (auth.json)\n"
                                 "  -h, --help                 this help\n\n"
                                 "It runs until SIGTERM or SIGINT. See ohbox-serve(1) for the endpoints, the\n"
                                 "settings of OpenHands V0 and V1, and what survives a restart.\n";

static int
parse_listen (const char *s, char **addr, int *port)
{
  const char *colon = strrchr (s, ':');
  if (colon == NULL || colon == s)
    return -1;
  char *end;
  long p = strtol (colon + 1, &end, 10);
  if (*end || end == colon + 1 || p < 0 || p > 65535)
    return -1;
  const char *a = s;
  size_t n = (size_t) (colon - s);
  if (a[0] == '[' && n > 2 && a[n - 1] == ']')
    {
      a++;
      n -= 2;
    }
  free (*addr);
  *addr = xstrndup (a, n);
  *port = (int) p;
  return 0;
}

static int
read_key (const char *path, char **ret)
{
  ohbox_error_t err = NULL;
  struct stat st;
  if (stat (path, &st) < 0)
    return cli_usage_error ("--api-key-file `%s`: %s", path, strerror (errno));
  if (st.st_mode & S_IROTH)
    return cli_usage_error ("--api-key-file `%s` is readable by every user: chmod o-r it", path);
  char *text = NULL;
  size_t len;
  if (ohbox_read_file_at (AT_FDCWD, path, KEY_FILE_MAX, &text, &len, &err) < 0)
    return cli_fail (&err);
  /* The first line, blanks around it dropped. */
  char *s = text;
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
    s++;
  size_t n = strcspn (s, "\r\n");
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  bool printable = true;
  for (size_t i = 0; i < n; i++)
    printable = printable && s[i] > ' ' && s[i] < 0x7f;
  if (n < KEY_MIN || !printable)
    {
      free (text);
      return cli_usage_error ("--api-key-file `%s`: the key must be at least %d printable characters "
                              "without spaces (e.g. `openssl rand -hex 32`)",
                              path, KEY_MIN);
    }
  *ret = xstrndup (s, n);
  explicit_bzero (text, len);
  free (text);
  return 0;
}

static int
parse_pool (const char *s, struct serve_config *c)
{
  const char *eq = strrchr (s, '=');
  char *end;
  if (eq == NULL || eq == s)
    return -1;
  long n = strtol (eq + 1, &end, 10);
  if (*end || end == eq + 1 || n < 1 || n > 1000)
    return -1;
  if (c->n_pools == SERVE_MAX_POOLS)
    return -2;
  c->pools[c->n_pools].image = xstrndup (s, (size_t) (eq - s));
  c->pools[c->n_pools].size = (unsigned) n;
  c->n_pools++;
  return 0;
}

static int
parse_resources (const char *spec, struct serve_config *c)
{
  c->base_cpus = 0;
  c->base_memory = 0;
  c->base_pids = 0;
  if (strcmp (spec, "none") == 0)
    return 0;
  cleanup_free char *copy = xstrdup (spec);
  char *save = NULL;
  for (char *kv = strtok_r (copy, ",", &save); kv; kv = strtok_r (NULL, ",", &save))
    {
      char *eq = strchr (kv, '=');
      if (eq == NULL)
        return -1;
      *eq++ = '\0';
      char *end;
      ohbox_error_t err = NULL;
      if (strcmp (kv, "cpus") == 0)
        {
          c->base_cpus = strtod (eq, &end);
          if (*end || end == eq || !(c->base_cpus > 0) || c->base_cpus > 1024)
            return -1;
        }
      else if (strcmp (kv, "memory") == 0)
        {
          if (ohbox_cgroup_parse_size (eq, &c->base_memory, &err) < 0 || c->base_memory <= 0)
            {
              ohbox_error_release (&err);
              return -1;
            }
        }
      else if (strcmp (kv, "pids") == 0)
        {
          c->base_pids = strtoll (eq, &end, 10);
          if (*end || end == eq || c->base_pids <= 0)
            return -1;
        }
      else
        return -1;
    }
  return 0;
}

static int
parse_ports (const char *s, struct serve_config *c)
{
  cleanup_free char *copy = xstrdup (s);
  char *save = NULL;
  c->n_work_ports = 0;
  for (char *p = strtok_r (copy, ",", &save); p; p = strtok_r (NULL, ",", &save))
    {
      char *end;
      long v = strtol (p, &end, 10);
      if (*end || end == p || v < 1 || v > 65535 || c->n_work_ports == SERVE_MAX_WORK_PORTS)
        return -1;
      c->work_ports[c->n_work_ports++] = (int) v;
    }
  return 0;
}

enum
{
  OPT_KEY = 256,
  OPT_LISTEN,
  OPT_SOCKET,
  OPT_URL,
  OPT_POOL,
  OPT_MAX,
  OPT_IDLE,
  OPT_START_TIMEOUT,
  OPT_RESOURCES,
  OPT_WORK_PORTS,
  OPT_SANDBOX_PORT,
  OPT_PREFIX,
  OPT_MAX_CONTEXT,
  OPT_NO_PULL,
  OPT_LOG,
  OPT_CONN_LIMIT,
  OPT_DEVICE,
  OPT_GPUS,
  OPT_CDI_SPEC_DIR,
  OPT_EGRESS,
};

static void
config_release (struct serve_config *c)
{
  if (c->log_fd > 2)
    close (c->log_fd);
  for (unsigned i = 0; i < c->n_pools; i++)
    free (c->pools[i].image);
  free (c->listen_addr);
  free (c->socket_path);
  if (c->api_key)
    explicit_bzero (c->api_key, strlen (c->api_key));
  free (c->api_key);
  free (c->public_url);
  free (c->registry_prefix);
  for (size_t i = 0; c->devices && c->devices[i]; i++)
    free (c->devices[i]);
  free (c->devices);
  for (size_t i = 0; c->cdi_spec_dirs && c->cdi_spec_dirs[i]; i++)
    free (c->cdi_spec_dirs[i]);
  free (c->cdi_spec_dirs);
  free (c->state_root);
}

static int serve_cmd (int argc, char **argv, struct serve_config *c);

int
cli_serve (int argc, char **argv)
{
  struct serve_config c;
  memset (&c, 0, sizeof c);
  c.listen_addr = xstrdup ("127.0.0.1");
  c.registry_prefix = xstrdup ("localhost/ohbox-serve");
  c.log_fd = 2;
  int rc = serve_cmd (argc, argv, &c);
  config_release (&c);
  return rc;
}

static int
serve_cmd (int argc, char **argv, struct serve_config *cp)
{
  static const struct option opts[] = {
    { "api-key-file", required_argument, NULL, OPT_KEY },
    { "listen", required_argument, NULL, OPT_LISTEN },
    { "socket", required_argument, NULL, OPT_SOCKET },
    { "url", required_argument, NULL, OPT_URL },
    { "pool", required_argument, NULL, OPT_POOL },
    { "max-sandboxes", required_argument, NULL, OPT_MAX },
    { "pause-idle", required_argument, NULL, OPT_IDLE },
    { "start-timeout", required_argument, NULL, OPT_START_TIMEOUT },
    { "resources", required_argument, NULL, OPT_RESOURCES },
    { "work-ports", required_argument, NULL, OPT_WORK_PORTS },
    { "sandbox-port", required_argument, NULL, OPT_SANDBOX_PORT },
    { "registry-prefix", required_argument, NULL, OPT_PREFIX },
    { "max-build-context", required_argument, NULL, OPT_MAX_CONTEXT },
    { "no-pull", no_argument, NULL, OPT_NO_PULL },
    { "log", required_argument, NULL, OPT_LOG },
    { "connection-limit", required_argument, NULL, OPT_CONN_LIMIT },
    { "device", required_argument, NULL, OPT_DEVICE },
    { "gpus", required_argument, NULL, OPT_GPUS },
    { "cdi-spec-dir", required_argument, NULL, OPT_CDI_SPEC_DIR },
    { "egress", required_argument, NULL, OPT_EGRESS },
    CLI_REGISTRY_OPTIONS,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  cp->listen_port = SERVE_DEFAULT_PORT;
  cp->sandbox_port = SERVE_SANDBOX_PORT;
  cp->start_timeout = 120;
  cp->base_cpus = 1;
  cp->base_memory = 2LL << 30;
  cp->base_pids = 4096;
  cp->max_build_context = 256ULL << 20;
  cp->pull_missing = true;
  cp->connection_limit = 1024;
  struct cli_registry_args ra = { .ro = &cp->pull.registry };
  const char *key_file = NULL, *log_file = NULL;
  bool listen_given = false;
  size_t n_devices = 0, n_cdi_dirs = 0;
  int opt, rc = 0;
  char *end;
  while ((opt = getopt_long (argc, argv, "h", opts, NULL)) != -1)
    {
      switch (opt)
        {
        case OPT_KEY:
          key_file = optarg;
          break;
        case OPT_LISTEN:
          if (parse_listen (optarg, &cp->listen_addr, &cp->listen_port) < 0)
            return cli_usage_error ("--listen takes ADDR:PORT (e.g. 127.0.0.1:8000, [::1]:8000), not `%s`", optarg);
          listen_given = true;
          break;
        case OPT_SOCKET:
          cp->socket_path = xstrdup (optarg);
          break;
        case OPT_URL:
          if (strncmp (optarg, "http://", 7) != 0 && strncmp (optarg, "https://", 8) != 0)
            return cli_usage_error ("--url takes an http:// or https:// URL, not `%s`", optarg);
          cp->public_url = xstrdup (optarg);
          break;
        case OPT_POOL:
          {
            int r = parse_pool (optarg, cp);
            if (r == -2)
              return cli_usage_error ("at most %d --pool", SERVE_MAX_POOLS);
            if (r < 0)
              return cli_usage_error ("--pool takes IMAGE=N (1 to 1000), not `%s`", optarg);
            break;
          }
        case OPT_MAX:
          cp->max_sandboxes = (unsigned) strtoul (optarg, &end, 10);
          if (*end || end == optarg || strtol (optarg, NULL, 10) < 0)
            return cli_usage_error ("--max-sandboxes takes a number, not `%s`", optarg);
          break;
        case OPT_IDLE:
          if (cli_parse_duration (optarg, &cp->pause_idle) < 0)
            return cli_usage_error ("--pause-idle takes a duration (90, 90s, 10m, 1h), not `%s`", optarg);
          break;
        case OPT_START_TIMEOUT:
          if (cli_parse_duration (optarg, &cp->start_timeout) < 0)
            return cli_usage_error ("--start-timeout takes a duration (90, 90s, 10m), not `%s`", optarg);
          break;
        case OPT_RESOURCES:
          if (parse_resources (optarg, cp) < 0)
            return cli_usage_error ("--resources takes cpus=N,memory=SIZE,pids=N (any of them) or none, "
                                    "not `%s`",
                                    optarg);
          break;
        case OPT_WORK_PORTS:
          if (parse_ports (optarg, cp) < 0)
            return cli_usage_error ("--work-ports takes up to %d ports, comma-separated, not `%s`",
                                    SERVE_MAX_WORK_PORTS, optarg);
          break;
        case OPT_SANDBOX_PORT:
          cp->sandbox_port = (int) strtol (optarg, &end, 10);
          if (*end || end == optarg || cp->sandbox_port < 1 || cp->sandbox_port > 65535)
            return cli_usage_error ("--sandbox-port takes a port number, not `%s`", optarg);
          break;
        case OPT_PREFIX:
          free (cp->registry_prefix);
          cp->registry_prefix = xstrdup (optarg);
          break;
        case OPT_MAX_CONTEXT:
          {
            int64_t v;
            ohbox_error_t err = NULL;
            if (ohbox_cgroup_parse_size (optarg, &v, &err) < 0 || v <= 0)
              {
                ohbox_error_release (&err);
                return cli_usage_error ("--max-build-context takes a size (e.g. 256m), not `%s`", optarg);
              }
            cp->max_build_context = (uint64_t) v;
            break;
          }
        case OPT_NO_PULL:
          cp->pull_missing = false;
          break;
        case OPT_LOG:
          log_file = optarg;
          break;
        case OPT_CONN_LIMIT:
          cp->connection_limit = (unsigned) strtoul (optarg, &end, 10);
          if (*end || end == optarg || cp->connection_limit < 1)
            return cli_usage_error ("--connection-limit takes a positive number, not `%s`", optarg);
          break;
        case OPT_DEVICE:
          ohbox_strv_push (&cp->devices, &n_devices, xstrdup (optarg));
          break;
        case OPT_GPUS:
          cp->gpus = optarg;
          break;
        case OPT_CDI_SPEC_DIR:
          ohbox_strv_push (&cp->cdi_spec_dirs, &n_cdi_dirs, xstrdup (optarg));
          break;
        case OPT_EGRESS:
          cp->egress = optarg;
          break;
        case 'h':
          fputs (serve_help, stdout);
          return 0;
        default:
          {
            int r = cli_registry_option (opt, optarg, &ra);
            if (r != 1)
              return r == 0 ? cli_usage_error ("invalid option") : r;
          }
        }
    }
  if (optind != argc)
    return cli_usage_error ("unexpected argument `%s`", argv[optind]);
  if (cp->socket_path && listen_given)
    return cli_usage_error ("--socket and --listen: give one");
  if (key_file && (rc = read_key (key_file, &cp->api_key)) != 0)
    return rc;
  if (cp->api_key == NULL && cp->socket_path == NULL)
    return cli_usage_error ("an API key is required (--api-key-file FILE, e.g. made with `openssl rand "
                            "-hex 32`), or --socket PATH to serve only a unix socket without one");
  if (cp->socket_path == NULL && strcmp (cp->listen_addr, "127.0.0.1") != 0 && strcmp (cp->listen_addr, "::1") != 0)
    cli_warn ("listening on %s, not loopback: every host that reaches it can try the API key, and the traffic is "
              "plain HTTP (put a TLS proxy in front)",
              cp->listen_addr);
  /* The devices are resolved now, so that a wrong one stops the server
   * before it listens rather than every /start; each start resolves them
   * again (a driver's nodes may change). */
  {
    struct ohbox_device_edits check = { 0 };
    ohbox_error_t err = NULL;
    if (ohbox_devices_resolve ((const char *const *) cp->devices, (const char *const *) cp->cdi_spec_dirs, cp->gpus,
                               &check, &err)
        < 0)
      return cli_fail (&err);
    ohbox_device_edits_free (&check);
    struct ohbox_egress egress;
    if (ohbox_egress_parse (cp->egress, &egress, &err) < 0)
      return cli_fail (&err);
    cleanup_free char *weaker = ohbox_egress_warning (&egress);
    if (weaker)
      cli_warn ("--egress %s: %s", cp->egress, weaker);
  }
  if (log_file)
    {
      cp->log_fd = open (log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (cp->log_fd < 0)
        return cli_usage_error ("--log `%s`: %s", log_file, strerror (errno));
    }
  struct ohbox_registries_conf *conf = NULL;
  rc = cli_pull_prepare (&ra, &cp->pull, &conf);
  if (rc != 0)
    return rc;
  cp->store_root = cli_store_root ();
  /* The store exists (and is usable) before anything listens. */
  struct ohbox_store *store = NULL;
  rc = cli_open_store (&store);
  if (rc == 0)
    {
      ohbox_store_close (store);
      ohbox_error_t err = NULL;
      if (serve_main (cp, &err) < 0)
        rc = cli_fail (&err);
    }
  cli_registry_release (&ra, conf);
  return rc;
}
