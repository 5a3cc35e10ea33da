/* test-run-policy.c: the run policy (policy/run_policy.h) over made-up
 * hosts: root and rootless with pasta only, slirp4netns only, both and
 * neither; ordinary and runtime images; the network given or not, -p,
 * --executor-port, keys. tests/integration/policy.sh runs the same through
 * the CLI and libohbox on this host and compares the sandboxes. */
#include "config.h"
#include "policy/run_policy.h"
#include "common/utils.h"
#include "unit.h"

#include <string.h>

#define IMAGE_ID "sha256:1111111111111111111111111111111111111111111111111111111111111111"

static struct ohbox_host_abilities
host (uid_t euid, bool pasta, bool slirp)
{
  struct ohbox_host_abilities h = {
    .euid = euid, .pasta = pasta, .slirp4netns = slirp, .cgroup_limits = true, .cgroup_mode = OHBOX_CGROUP_MODE_V2
  };
  return h;
}

/* The plan for REQ: 0, or -1 with *KIND (may be NULL) the error's kind. */
static int
plan (const struct ohbox_run_request *req, bool runtime, const struct ohbox_host_abilities *h, struct ohbox_run_plan *p,
      int *kind)
{
  ohbox_error_t err = NULL;
  int r = ohbox_run_plan_resolve (req, IMAGE_ID, runtime, false, h, p, &err);
  if (kind)
    *kind = err ? err->kind : 0;
  ohbox_error_release (&err);
  return r;
}

static bool
has_warning (const struct ohbox_run_plan *p, const char *part)
{
  for (size_t i = 0; i < p->n_warnings; i++)
    if (strstr (p->warnings[i], part))
      return true;
  return false;
}

static size_t
count (char **v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

/* Whether ARGV holds "--listen-address ADDR". */
static bool
listens_on (char **argv, const char *addr)
{
  for (size_t i = 0; argv && argv[i] && argv[i + 1]; i++)
    if (strcmp (argv[i], "--listen-address") == 0)
      return strcmp (argv[i + 1], addr) == 0;
  return false;
}

static void
test_default_network (void)
{
  struct ohbox_run_request req = { .image = "img" };
  struct ohbox_run_plan p;
  struct ohbox_host_abilities root = host (0, false, false), both = host (1000, true, true),
                              pasta = host (1000, true, false), slirp = host (1000, false, true),
                              neither = host (1000, false, false);
  CHECK (plan (&req, false, &root, &p, NULL) == 0);
  CHECK (p.network == OHBOX_NETWORK_BRIDGE && p.backend == OHBOX_NET_BACKEND_VETH && !p.network_explicit);
  CHECK (p.n_warnings == 0);
  ohbox_run_plan_clear (&p);
  /* rootless: slirp4netns first, pasta when it is the only one */
  CHECK (plan (&req, false, &both, &p, NULL) == 0);
  CHECK (p.network == OHBOX_NETWORK_BRIDGE && p.backend == OHBOX_NET_BACKEND_SLIRP4NETNS);
  CHECK (p.opts.rootless_net == OHBOX_ROOTLESS_NET_SLIRP);
  ohbox_run_plan_clear (&p);
  CHECK (plan (&req, false, &pasta, &p, NULL) == 0);
  CHECK (p.network == OHBOX_NETWORK_BRIDGE && p.backend == OHBOX_NET_BACKEND_PASTA);
  CHECK (p.opts.rootless_net == OHBOX_ROOTLESS_NET_PASTA);
  ohbox_run_plan_clear (&p);
  CHECK (plan (&req, false, &slirp, &p, NULL) == 0);
  CHECK (p.backend == OHBOX_NET_BACKEND_SLIRP4NETNS);
  ohbox_run_plan_clear (&p);
  /* neither: loopback only, said so */
  CHECK (plan (&req, false, &neither, &p, NULL) == 0);
  CHECK (p.network == OHBOX_NETWORK_NONE && p.backend == OHBOX_NET_BACKEND_NONE);
  CHECK (has_warning (&p, "loopback only"));
  ohbox_run_plan_clear (&p);
}

static void
test_explicit_network (void)
{
  struct ohbox_run_plan p;
  struct ohbox_host_abilities root = host (0, true, true), pasta = host (1000, true, false),
                              neither = host (1000, false, false);
  int kind;
  struct ohbox_run_request req = { .image = "img", .network = "pasta" };
  CHECK (plan (&req, false, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE, "pasta is rootless only");
  CHECK (plan (&req, false, &pasta, &p, NULL) == 0 && p.backend == OHBOX_NET_BACKEND_PASTA && p.network_explicit);
  ohbox_run_plan_clear (&p);
  req.network = "slirp4netns";
  CHECK (plan (&req, false, &pasta, &p, &kind) < 0 && kind == OHBOX_ERR_UNSUPPORTED, "not installed");
  req.network = "bridge";
  CHECK (plan (&req, false, &neither, &p, &kind) < 0 && kind == OHBOX_ERR_UNSUPPORTED, "rootless bridge: no helper");
  req.network = "container:job";
  CHECK (plan (&req, false, &root, &p, NULL) == 0 && p.network == OHBOX_NETWORK_CONTAINER);
  CHECK_STR (p.opts.network_container, "job");
  ohbox_run_plan_clear (&p);
  req.network = "container:";
  CHECK (plan (&req, false, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  /* Any other valid name is a named network's (ohbox network create),
   * looked up when the sandbox starts; an invalid one is a usage error. */
  req.network = "bridgee";
  CHECK (plan (&req, false, &root, &p, NULL) == 0 && p.network_name && strcmp (p.network_name, "bridgee") == 0);
  ohbox_run_plan_clear (&p);
  req.network = "no/such";
  CHECK (plan (&req, false, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  /* -p only where ports are published */
  char *pub[] = { (char *) "8080:80", NULL };
  req.network = "none";
  req.publish = pub;
  CHECK (plan (&req, false, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  req.network = NULL;
  CHECK (plan (&req, false, &neither, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE, "default none: no -p");
  char *bad[] = { (char *) "80:", NULL };
  req.publish = bad;
  CHECK (plan (&req, false, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE, "a bad -p is refused by the plan");
  /* an ordinary image on the host's network, rootless too */
  req.publish = NULL;
  req.network = "host";
  CHECK (plan (&req, false, &pasta, &p, NULL) == 0 && p.network == OHBOX_NETWORK_HOST && p.n_warnings == 0);
  ohbox_run_plan_clear (&p);
}

/* A runtime image without a command, no options: the default network, the
 * executor on 0.0.0.0:8000 of its own namespace, published on the host's
 * 127.0.0.1 from a free port; never the host's network. */
static void
test_runtime_default (void)
{
  struct ohbox_run_request req = { .image = "rt" };
  struct ohbox_run_plan p;
  struct ohbox_host_abilities hosts[] = { host (0, false, false), host (1000, true, false), host (1000, false, true) };
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
    {
      CHECK (plan (&req, true, &hosts[i], &p, NULL) == 0);
      CHECK (p.network == OHBOX_NETWORK_BRIDGE && p.executor.enabled && p.executor.reachable);
      CHECK (p.executor.port == 8000 && p.executor.host_port == 0 && p.executor.url == NULL);
      CHECK_STR (p.executor.listen_address, "0.0.0.0");
      CHECK_STR (p.executor.host_address, "127.0.0.1");
      CHECK (count (p.publish) == 1);
      CHECK_STR (p.publish[0], "127.0.0.1::8000/tcp");
      CHECK (listens_on (p.opts.command, "0.0.0.0") && strcmp (p.opts.command[0], "8000") == 0);
      CHECK (p.opts.executor_port == 8000);
      CHECK (p.n_warnings == 0);
      ohbox_run_plan_clear (&p);
    }
  /* with a command, or another entrypoint, or as a CI service: no executor */
  char *cmd[] = { (char *) "sh", NULL };
  req.command = cmd;
  CHECK (plan (&req, true, &hosts[0], &p, NULL) == 0 && !p.executor.enabled && count (p.publish) == 0);
  CHECK (p.opts.command == cmd && p.opts.executor_key == NULL);
  ohbox_run_plan_clear (&p);
  req.command = NULL;
  req.entrypoint = cmd;
  CHECK (plan (&req, true, &hosts[0], &p, NULL) == 0 && !p.executor.enabled);
  ohbox_run_plan_clear (&p);
  req.entrypoint = NULL;
  req.no_executor = true;
  CHECK (plan (&req, true, &hosts[0], &p, NULL) == 0 && !p.executor.enabled);
  ohbox_run_plan_clear (&p);
}

static void
test_runtime_ports (void)
{
  struct ohbox_host_abilities root = host (0, false, false);
  struct ohbox_run_plan p;
  struct ohbox_run_request req = { .image = "rt", .executor_port = 9000 };
  CHECK (plan (&req, true, &root, &p, NULL) == 0);
  CHECK (p.executor.port == 9000 && p.executor.host_port == 9000);
  CHECK_STR (p.publish[0], "127.0.0.1:9000:9000/tcp");
  CHECK_STR (p.executor.url, "http://127.0.0.1:9000");
  ohbox_run_plan_clear (&p);
  /* the caller publishes the executor's port itself: as it says */
  char *mine[] = { (char *) "127.0.0.1:7000:8000", (char *) "53/udp", NULL };
  req.executor_port = 0;
  req.publish = mine;
  CHECK (plan (&req, true, &root, &p, NULL) == 0);
  CHECK (count (p.publish) == 2 && !p.executor.published && p.executor.host_port == 7000 && p.n_warnings == 0);
  CHECK_STR (p.executor.url, "http://127.0.0.1:7000");
  ohbox_run_plan_clear (&p);
  char *every[] = { (char *) "8000", NULL };
  req.publish = every;
  CHECK (plan (&req, true, &root, &p, NULL) == 0);
  CHECK (count (p.publish) == 1 && has_warning (&p, "every address of the host"));
  CHECK (p.executor.url == NULL && p.opts.executor_port == 8000, "the URL of the port as published, at start");
  ohbox_run_plan_clear (&p);
  /* another port of the sandbox published: the executor's is added */
  char *other[] = { (char *) "8080:80", NULL };
  req.publish = other;
  CHECK (plan (&req, true, &root, &p, NULL) == 0 && count (p.publish) == 2);
  CHECK_STR (p.publish[1], "127.0.0.1::8000/tcp");
  ohbox_run_plan_clear (&p);
  /* an --executor-port for an image that is not a runtime image: said so */
  req.publish = NULL;
  req.executor_port = 9000;
  CHECK (plan (&req, false, &root, &p, NULL) == 0 && !p.executor.enabled && has_warning (&p, "ignored"));
  ohbox_run_plan_clear (&p);
}

static void
test_runtime_host_network (void)
{
  struct ohbox_host_abilities root = host (0, true, true), user = host (1000, true, true);
  struct ohbox_run_plan p;
  int kind;
  struct ohbox_run_request req = { .image = "rt", .network = "host" };
  /* rootless: refused, naming the abstract sockets */
  CHECK (plan (&req, true, &user, &p, &kind) < 0 && kind == OHBOX_ERR_UNSUPPORTED);
  /* root: with a warning, the executor on 127.0.0.1 only */
  CHECK (plan (&req, true, &root, &p, NULL) == 0);
  CHECK (p.network == OHBOX_NETWORK_HOST && p.executor.enabled && has_warning (&p, "abstract unix sockets"));
  CHECK (count (p.publish) == 0 && p.executor.port == 0 && p.opts.executor_port == 0);
  ohbox_error_t err = NULL;
  CHECK (ohbox_run_plan_realize (&p, &err) == 0);
  CHECK (p.executor.port > 0 && p.executor.host_port == p.executor.port);
  CHECK (listens_on (p.opts.command, "127.0.0.1"));
  char url[64];
  snprintf (url, sizeof url, "http://127.0.0.1:%d", p.executor.port);
  CHECK_STR (p.opts.executor_url, url);
  ohbox_run_plan_clear (&p);
}

static void
test_runtime_unreachable (void)
{
  struct ohbox_host_abilities neither = host (1000, false, false);
  struct ohbox_run_plan p;
  int kind;
  struct ohbox_run_request req = { .image = "rt" };
  /* the default that falls to none is refused: nothing reaches the
   * executor over the network */
  CHECK (plan (&req, true, &neither, &p, &kind) < 0 && kind == OHBOX_ERR_UNSUPPORTED);
  req.network = "none";
  req.executor_port = 9001;
  CHECK (plan (&req, true, &neither, &p, NULL) == 0);
  CHECK (p.executor.enabled && !p.executor.reachable && has_warning (&p, "through its unix socket only"));
  CHECK (p.opts.executor_socket);
  CHECK (listens_on (p.opts.command, "127.0.0.1") && strcmp (p.opts.command[0], "9001") == 0);
  CHECK (p.opts.executor_url == NULL && p.opts.executor_port == 0);
  ohbox_run_plan_clear (&p);
}

static void
test_keys (void)
{
  struct ohbox_host_abilities root = host (0, false, false);
  struct ohbox_run_plan p;
  ohbox_error_t err = NULL;
  int kind;
  char *env[] = { (char *) "A=1", (char *) "SESSION_API_KEY=from-env", NULL };
  struct ohbox_run_request req = { .image = "rt", .env = env };
  CHECK (plan (&req, true, &root, &p, NULL) == 0 && ohbox_run_plan_realize (&p, &err) == 0);
  CHECK_STR (p.executor.key_source, "environment");
  CHECK_STR (p.opts.executor_key, "from-env");
  CHECK (count (p.opts.env) == 2, "the caller's entry is the one");
  ohbox_run_plan_clear (&p);
  req.api_key = "from-request";
  CHECK (plan (&req, true, &root, &p, NULL) == 0 && ohbox_run_plan_realize (&p, &err) == 0);
  CHECK_STR (p.opts.executor_key, "from-request");
  CHECK (count (p.opts.env) == 3);
  CHECK_STR (p.opts.env[2], "SESSION_API_KEY=from-request");
  /* no secret in the plan's JSON */
  json_t *j = ohbox_run_plan_json (&p);
  char *text = json_dumps (j, 0);
  CHECK (text && strstr (text, "from-request") == NULL && strstr (text, "from-env") == NULL);
  CHECK (strstr (text, "\"session_key\": \"request\""), "%s", text);
  free (text);
  json_decref (j);
  ohbox_run_plan_clear (&p);
  req.env = NULL;
  req.api_key = NULL;
  CHECK (plan (&req, true, &root, &p, NULL) == 0 && p.executor.api_key == NULL);
  CHECK (ohbox_run_plan_realize (&p, &err) == 0 && strlen (p.executor.api_key) == 32);
  CHECK (count (p.opts.env) == 1 && strncmp (p.opts.env[0], "SESSION_API_KEY=", 16) == 0);
  CHECK_STR (p.opts.executor_key, p.executor.api_key);
  ohbox_run_plan_clear (&p);
  /* an empty key would let every request through */
  char *empty[] = { (char *) "SESSION_API_KEY=", NULL };
  req.env = empty;
  CHECK (plan (&req, true, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  req.env = NULL;
  req.api_key = "";
  CHECK (plan (&req, true, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
}

/* The label alone: an ordinary image, said so. */
static void
test_label_only (void)
{
  struct ohbox_host_abilities root = host (0, false, false);
  struct ohbox_run_request req = { .image = "claims" };
  struct ohbox_run_plan p;
  ohbox_error_t err = NULL;
  CHECK (ohbox_run_plan_resolve (&req, IMAGE_ID, false, true, &root, &p, &err) == 0);
  CHECK (!p.executor.enabled && p.opts.executor_key == NULL && p.opts.command == NULL);
  CHECK (p.network == OHBOX_NETWORK_BRIDGE && count (p.publish) == 0);
  CHECK (has_warning (&p, "org.ohbox.runtime=1"));
  ohbox_run_plan_clear (&p);
}

static void
test_other_checks (void)
{
  struct ohbox_host_abilities user = host (1000, true, true);
  struct ohbox_run_plan p;
  int kind;
  struct ohbox_run_request req = { .image = "img", .userns_host = true };
  CHECK (plan (&req, false, &user, &p, &kind) < 0 && kind == OHBOX_ERR_UNSUPPORTED);
  req.userns_host = false;
  req.limits.memory = 1 << 20;
  req.limits.memory_swap = 1 << 10;
  CHECK (plan (&req, false, &user, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE, "swap below memory");
  req.limits.memory_swap = 0;
  user.cgroup_limits = false;
  user.cgroup_warning = (char *) "no delegated cgroup";
  CHECK (plan (&req, false, &user, &p, NULL) == 0 && has_warning (&p, "no delegated cgroup"));
  ohbox_run_plan_clear (&p);
  req.image = NULL;
  CHECK (plan (&req, false, &user, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
}

/* --storage-size: root only, 16 MiB at least, none for a read-only rootfs. */
static void
test_storage_size (void)
{
  struct ohbox_host_abilities root = host (0, false, false), user = host (1000, true, true);
  struct ohbox_run_plan p;
  int kind;
  struct ohbox_run_request req = { .image = "img", .network = "none", .storage_size = 32 << 20 };
  CHECK (plan (&req, false, &root, &p, NULL) == 0 && p.opts.storage_size == 32 << 20 && p.n_warnings == 0);
  ohbox_run_plan_clear (&p);
  CHECK (plan (&req, false, &user, &p, &kind) < 0 && kind == OHBOX_ERR_UNSUPPORTED, "rootless");
  req.storage_size = (16 << 20) - 1;
  CHECK (plan (&req, false, &root, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE, "below 16 MiB");
  req.storage_size = 1ull << 40;
  req.read_only = true;
  CHECK (plan (&req, false, &root, &p, NULL) == 0 && p.opts.storage_size == 0 && has_warning (&p, "--read-only"));
  ohbox_run_plan_clear (&p);
}

/* A server front door (ohbox serve): the service port of a runtime image's
 * executor or of the request's own command, always on a free host port;
 * a standby executor; labels. */
static void
test_service_port (void)
{
  struct ohbox_host_abilities hosts[] = { host (0, false, false), host (1000, false, true) };
  struct ohbox_run_plan p;
  int kind;
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
    {
      struct ohbox_run_request req = { .image = "rt", .service_port = 60000, .executor_standby = true };
      CHECK (plan (&req, true, &hosts[i], &p, NULL) == 0);
      CHECK (p.executor.enabled && !p.executor.own_command && p.executor.standby);
      CHECK (p.executor.port == 60000 && p.executor.host_port == 0);
      CHECK (count (p.publish) == 1);
      CHECK_STR (p.publish[0], "127.0.0.1::60000/tcp");
      CHECK (strcmp (p.opts.command[0], "60000") == 0);
      CHECK_STR (p.opts.command[count (p.opts.command) - 3], "--standby");
      CHECK (p.opts.executor_port == 60000);
      ohbox_run_plan_clear (&p);
      /* The request's own command (OpenHands' server argv; any image's). */
      char *ep[] = { (char *) "/openhands/micromamba/bin/micromamba", NULL };
      char *cmd[] = { (char *) "run", NULL };
      req = (struct ohbox_run_request){ .image = "rt", .service_port = 60000, .entrypoint = ep, .command = cmd };
      for (int runtime = 0; runtime < 2; runtime++)
        {
          CHECK (plan (&req, runtime, &hosts[i], &p, NULL) == 0);
          CHECK (p.executor.enabled && p.executor.own_command && p.executor.argv == NULL);
          CHECK (p.opts.command == cmd && p.opts.entrypoint == ep);
          CHECK_STR (p.publish[0], "127.0.0.1::60000/tcp");
          CHECK (p.opts.executor_port == 60000 && p.executor.key_source);
          ohbox_error_t err = NULL;
          CHECK (ohbox_run_plan_realize (&p, &err) == 0 && p.executor.api_key);
          bool keyed = false;
          for (size_t k = 0; p.env[k]; k++)
            keyed = keyed || strncmp (p.env[k], "SESSION_API_KEY=", 16) == 0;
          CHECK (keyed && p.opts.executor_key == p.executor.api_key);
          ohbox_run_plan_clear (&p);
        }
    }
  /* Standby needs the executor; a service port and an executor port: one. */
  char *cmd[] = { (char *) "sh", NULL };
  struct ohbox_run_request req = { .image = "rt", .service_port = 60000, .executor_standby = true, .command = cmd };
  CHECK (plan (&req, true, &hosts[0], &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  req = (struct ohbox_run_request){ .image = "rt", .executor_standby = true };
  CHECK (plan (&req, true, &hosts[0], &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  req = (struct ohbox_run_request){ .image = "rt", .service_port = 60000, .executor_port = 9000 };
  CHECK (plan (&req, true, &hosts[0], &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
  req = (struct ohbox_run_request){ .image = "rt", .service_port = 70000 };
  CHECK (plan (&req, true, &hosts[0], &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
}

/* OpenHands' server command for the service port, on a runtime image: the
 * executor with the command's arguments, without the image's entry script;
 * on any other image, for another port, or with a word changed: the
 * command as given. */
static void
test_openhands_command (void)
{
  struct ohbox_host_abilities h = host (0, false, false);
  struct ohbox_run_plan p;
  char *ep[] = { (char *) "/openhands/micromamba/bin/micromamba", NULL };
  char *cmd[] = { (char *) "run",
                  (char *) "-n",
                  (char *) "openhands",
                  (char *) "poetry",
                  (char *) "run",
                  (char *) "python",
                  (char *) "-u",
                  (char *) "-m",
                  (char *) "openhands.runtime.action_execution_server",
                  (char *) "60000",
                  (char *) "--working-dir",
                  (char *) "/workspace",
                  (char *) "--username",
                  (char *) "openhands",
                  NULL };
  struct ohbox_run_request req = { .image = "rt", .service_port = 60000, .entrypoint = ep, .command = cmd };
  CHECK (plan (&req, true, &h, &p, NULL) == 0);
  CHECK (p.executor.enabled && !p.executor.own_command && !p.executor.standby);
  CHECK (p.opts.entrypoint == NULL && p.opts.command == p.executor.argv);
  CHECK (count (p.opts.command) == 9);
  CHECK_STR (p.opts.command[0], "60000");
  CHECK_STR (p.opts.command[1], "--listen-address");
  CHECK_STR (p.opts.command[3], "--working-dir");
  CHECK_STR (p.opts.command[6], "openhands");
  /* ohbox's executor takes the run's unix socket too. */
  CHECK_STR (p.opts.command[7], "--listen-fd");
  CHECK_STR (p.opts.command[8], "3");
  CHECK (p.opts.executor_socket);
  CHECK_STR (p.publish[0], "127.0.0.1::60000/tcp");
  ohbox_run_plan_clear (&p);
  /* Not a runtime image of this store: its own micromamba runs, which
   * knows nothing of the socket. */
  CHECK (plan (&req, false, &h, &p, NULL) == 0);
  CHECK (p.executor.enabled && p.executor.own_command && p.opts.entrypoint == ep && p.opts.command == cmd);
  CHECK (!p.opts.executor_socket);
  ohbox_run_plan_clear (&p);
  /* Another port than the service port; a word changed. */
  cmd[9] = (char *) "60001";
  CHECK (plan (&req, true, &h, &p, NULL) == 0 && p.executor.own_command && p.opts.command == cmd);
  ohbox_run_plan_clear (&p);
  cmd[9] = (char *) "60000";
  cmd[5] = (char *) "python3";
  CHECK (plan (&req, true, &h, &p, NULL) == 0 && p.executor.own_command && p.opts.command == cmd);
  ohbox_run_plan_clear (&p);
  /* The whole command in COMMAND works too; a standby executor still
   * needs no command. */
  cmd[5] = (char *) "python";
  char *whole[16] = { ep[0] };
  for (size_t i = 0; cmd[i]; i++)
    whole[i + 1] = cmd[i];
  req = (struct ohbox_run_request){ .image = "rt", .service_port = 60000, .command = whole };
  CHECK (plan (&req, true, &h, &p, NULL) == 0 && !p.executor.own_command && count (p.opts.command) == 9);
  ohbox_run_plan_clear (&p);
  int kind;
  req.executor_standby = true;
  CHECK (plan (&req, true, &h, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE);
}

static void
test_labels (void)
{
  struct ohbox_host_abilities h = host (0, false, false);
  struct ohbox_run_plan p;
  int kind;
  char *ok[] = { (char *) "org.ohbox.serve=1", (char *) "x=", NULL };
  struct ohbox_run_request req = { .image = "img", .labels = ok };
  CHECK (plan (&req, false, &h, &p, NULL) == 0 && p.opts.labels == ok);
  ohbox_run_plan_clear (&p);
  char *bad[][3] = { { (char *) "novalue", NULL },
                     { (char *) "=v", NULL },
                     { (char *) "a b=c", NULL },
                     { (char *) "k=1", (char *) "k=2", NULL } };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      req.labels = bad[i];
      CHECK (plan (&req, false, &h, &p, &kind) < 0 && kind == OHBOX_ERR_USAGE, "label set %zu", i);
    }
}

UNIT_MAIN_BEGIN ("test-run-policy")
RUN_TEST (test_default_network);
RUN_TEST (test_explicit_network);
RUN_TEST (test_runtime_default);
RUN_TEST (test_runtime_ports);
RUN_TEST (test_runtime_host_network);
RUN_TEST (test_runtime_unreachable);
RUN_TEST (test_keys);
RUN_TEST (test_label_only);
RUN_TEST (test_other_checks);
RUN_TEST (test_storage_size);
RUN_TEST (test_service_port);
RUN_TEST (test_openhands_command);
RUN_TEST (test_labels);
UNIT_MAIN_END
