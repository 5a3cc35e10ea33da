/* run_policy.c: the decisions of run_policy.h (the plan from a request,
 * and what is picked at the start); run_plan.c prints and releases plans,
 * host_probe.c probes the host. */
#include "config.h"
#include "policy/run_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "build/runtime_image.h"
#include "common/strv.h"
#include "sandbox/snapshot.h"
#include "common/utils.h"
#include "network/egress.h"
#include "network/network.h"
#include "security/capabilities.h"

#include <linux/capability.h>

static size_t
vlen (char **v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

/* A copy of V with room for EXTRA more entries (NULL-terminated). */
static char **
vcopy (char **v, size_t extra)
{
  size_t n = vlen (v);
  char **c = xcalloc (n + extra + 1, sizeof (char *));
  for (size_t i = 0; i < n; i++)
    c[i] = xstrdup (v[i]);
  return c;
}

static void
vpush (char **v, char *s)
{
  v[vlen (v)] = s;
}

static void plan_warn (struct ohbox_run_plan *p, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
plan_warn (struct ohbox_run_plan *p, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = xvasprintf (fmt, ap);
  va_end (ap);
  p->warnings = xrealloc (p->warnings, (p->n_warnings + 2) * sizeof (char *));
  p->warnings[p->n_warnings++] = s;
  p->warnings[p->n_warnings] = NULL;
}

/* ---- network ---- */

/* The user-mode network of a rootless bridge: slirp4netns first (ready ~2
 * ms after it starts and ~3 MiB, pasta ~20 ms and ~21 MiB, Debian 12,
 * measured: README; agents start many sandboxes that mostly carry small
 * HTTP requests), pasta when it is the one installed. */
static enum ohbox_net_backend
rootless_backend (const struct ohbox_host_abilities *h)
{
  return h->slirp4netns ? OHBOX_NET_BACKEND_SLIRP4NETNS : h->pasta ? OHBOX_NET_BACKEND_PASTA : OHBOX_NET_BACKEND_NONE;
}

static int
explicit_network (struct ohbox_run_plan *p, const char *net, const struct ohbox_host_abilities *h, ohbox_error_t *err)
{
  p->network_explicit = true;
  if (strcmp (net, "none") == 0)
    p->network = OHBOX_NETWORK_NONE;
  else if (strcmp (net, "host") == 0)
    p->network = OHBOX_NETWORK_HOST;
  else if (strncmp (net, "container:", 10) == 0)
    {
      if (net[10] == '\0')
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--network container: needs a sandbox (container:NAME)");
      p->network = OHBOX_NETWORK_CONTAINER;
      p->network_container = net + 10;
    }
  else if (strcmp (net, "bridge") == 0)
    {
      p->network = OHBOX_NETWORK_BRIDGE;
      p->backend = p->rootless ? rootless_backend (h) : OHBOX_NET_BACKEND_VETH;
      if (p->backend == OHBOX_NET_BACKEND_NONE)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "rootless networking needs pasta or slirp4netns: install one (Debian packages passt, "
                            "slirp4netns), or use --network none");
    }
  else if (strcmp (net, "pasta") == 0 || strcmp (net, "slirp4netns") == 0)
    {
      bool pasta = net[0] == 'p';
      if (!p->rootless)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "--network %s is for rootless sandboxes: as root use --network bridge", net);
      if (pasta && !h->pasta)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "--network pasta: pasta is not installed (Debian package passt); or use --network "
                            "slirp4netns or none");
      if (!pasta && !h->slirp4netns)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "--network slirp4netns: slirp4netns is not installed (Debian package slirp4netns); "
                            "or use --network pasta or none");
      p->network = OHBOX_NETWORK_BRIDGE;
      p->backend = pasta ? OHBOX_NET_BACKEND_PASTA : OHBOX_NET_BACKEND_SLIRP4NETNS;
    }
  else if (ohbox_network_name_check (net, NULL) == 0)
    {
      /* A named network: its own bridge, root only. */
      if (p->rootless)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "--network %s: named networks need root (a rootless sandbox's network is the "
                            "user-mode network: pasta or slirp4netns)",
                            net);
      p->network = OHBOX_NETWORK_BRIDGE;
      p->backend = OHBOX_NET_BACKEND_VETH;
      p->network_name = net;
    }
  else
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "unknown --network `%.80s`: use bridge, none, host, container:NAME, the name of a network "
                        "(`ohbox network create`), or rootless pasta or slirp4netns",
                        net);
  return 0;
}

/* Where a root bridge sandbox may connect: the request's --egress, else
 * public; refused where no filter of ours sees the traffic. */
static int
plan_egress (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  const char *spec = p->req->egress;
  bool given = spec && *spec;
  bool filtered = p->network == OHBOX_NETWORK_BRIDGE && p->backend == OHBOX_NET_BACKEND_VETH;
  if (given && p->rootless)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "--egress needs root (a rootless sandbox's traffic leaves through the user's own sockets)");
  if (given && !filtered)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--egress needs --network bridge or a named network");
  if (!filtered)
    return 0;
  struct ohbox_egress e;
  if (ohbox_egress_parse (spec, &e, err) < 0)
    return -1;
  cleanup_free char *weaker = ohbox_egress_warning (&e);
  if (weaker)
    plan_warn (p, "%s", weaker);
  p->egress = ohbox_egress_format (&e);
  return 0;
}

/* Not given: the bridge; rootless, the user-mode network when one is
 * installed, else loopback only. */
static void
default_network (struct ohbox_run_plan *p, const struct ohbox_host_abilities *h)
{
  p->network = OHBOX_NETWORK_BRIDGE;
  p->backend = p->rootless ? rootless_backend (h) : OHBOX_NET_BACKEND_VETH;
  if (p->backend != OHBOX_NET_BACKEND_NONE)
    return;
  p->network = OHBOX_NETWORK_NONE;
  plan_warn (p, "no user-mode network helper is installed (Debian packages slirp4netns, passt): the sandbox has "
                "loopback only (--network none)");
}

/* The request's -p, checked now (a dry run shows what a run refuses). */
static int
check_publish (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  size_t n = vlen (p->req->publish);
  if (n == 0)
    return 0;
  if (p->network != OHBOX_NETWORK_BRIDGE)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "-p needs --network bridge%s",
                        p->network_explicit ? "" : " (rootless: slirp4netns or pasta installed)");
  if (n > OHBOX_NET_MAX_PORTS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many -p (at most %d)", OHBOX_NET_MAX_PORTS);
  for (size_t i = 0; i < n; i++)
    {
      struct ohbox_publish pub;
      if (ohbox_publish_parse (p->req->publish[i], &pub, err) < 0)
        return -1;
    }
  return 0;
}

/* ---- the executor of a runtime sandbox ---- */

/* The request's -p that publishes the executor's PORT/tcp, if any. */
static bool
user_publishes (const struct ohbox_run_request *req, int port, struct ohbox_publish *ret)
{
  for (size_t i = 0; req->publish && req->publish[i]; i++)
    {
      cleanup_error ohbox_error_t ignored = NULL;
      struct ohbox_publish pub;
      if (ohbox_publish_parse (req->publish[i], &pub, &ignored) == 0 && pub.proto == IPPROTO_TCP && pub.ctr_lo <= port
          && port <= pub.ctr_hi)
        {
          *ret = pub;
          return true;
        }
    }
  return false;
}

/* Bridge (veth, slirp4netns, pasta): published on the host's 127.0.0.1. */
static void
executor_on_bridge (struct ohbox_run_plan *p)
{
  struct ohbox_plan_executor *x = &p->executor;
  struct ohbox_publish pub;
  x->listen_address = "0.0.0.0";
  x->reachable = true;
  if (user_publishes (p->req, x->port, &pub))
    {
      /* As the caller published it; a fixed single host port is known now. */
      if (pub.host_lo != 0 && pub.ctr_lo == pub.ctr_hi && pub.host_lo == pub.host_hi)
        x->host_port = pub.host_lo;
      else if (pub.host_lo != 0 && pub.host_hi - pub.host_lo == pub.ctr_hi - pub.ctr_lo)
        x->host_port = pub.host_lo + (x->port - pub.ctr_lo);
      char ip[INET_ADDRSTRLEN] = OHBOX_EXECUTOR_HOST_ADDRESS;
      if (pub.host_ip.s_addr == htonl (INADDR_ANY))
        plan_warn (p,
                   "the executor's port %d is published on every address of the host (-p): anyone who reaches "
                   "the host can try its session key; publish it on 127.0.0.1 (or leave it to ohbox)",
                   x->port);
      else
        inet_ntop (AF_INET, &pub.host_ip, ip, sizeof ip);
      x->host_address = xstrdup (ip);
      return;
    }
  x->published = true;
  x->host_address = xstrdup (OHBOX_EXECUTOR_HOST_ADDRESS);
  /* A service port is never the host's: many sandboxes share it. */
  x->host_port = p->req->service_port ? 0 : p->req->executor_port;
  if (x->host_port)
    vpush (p->publish, xasprintf ("%s:%d:%d/tcp", OHBOX_EXECUTOR_HOST_ADDRESS, x->host_port, x->port));
  else
    vpush (p->publish, xasprintf ("%s::%d/tcp", OHBOX_EXECUTOR_HOST_ADDRESS, x->port));
}

static int
executor_network (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  struct ohbox_plan_executor *x = &p->executor;
  switch (p->network)
    {
    case OHBOX_NETWORK_BRIDGE:
      executor_on_bridge (p);
      return 0;
    case OHBOX_NETWORK_HOST:
      if (p->rootless)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "--network host is refused for a runtime sandbox of a rootless user: agent code in it "
                            "would reach the host's abstract unix sockets (D-Bus, X11, ...), whose peers see it as "
                            "you (your uid); use the default network (slirp4netns or pasta)");
      /* The executor binds the host's loopback only, on --executor-port or
       * a free port chosen at the start (realize). */
      x->listen_address = OHBOX_EXECUTOR_HOST_ADDRESS;
      x->host_address = xstrdup (OHBOX_EXECUTOR_HOST_ADDRESS);
      x->reachable = true;
      x->port = x->host_port = p->req->service_port ? p->req->service_port : p->req->executor_port;
      plan_warn (p, "--network host: the runtime sandbox shares the host's network: agent code in it reaches "
                    "every service on the host's loopback and its abstract unix sockets, and can bind host ports; "
                    "its executor listens on 127.0.0.1 only");
      return 0;
    case OHBOX_NETWORK_NONE:
      if (!p->network_explicit)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "a runtime sandbox needs a network on which the host reaches its executor: install "
                            "slirp4netns or passt (pasta), or ask for --network none (the host then reaches the "
                            "executor through its unix socket only: `ohbox action`)");
      x->listen_address = OHBOX_EXECUTOR_HOST_ADDRESS;
      plan_warn (p,
                 "--network none: the executor listens on 127.0.0.1:%d of the sandbox's network namespace; the "
                 "host reaches it through its unix socket only (`ohbox action`)",
                 x->port);
      return 0;
    case OHBOX_NETWORK_CONTAINER:
      x->listen_address = "0.0.0.0";
      plan_warn (p,
                 "--network container:%s: the executor listens on port %d in that sandbox's network namespace "
                 "and is not published on the host",
                 p->network_container, x->port);
      return 0;
    }
  return 0;
}

/* The key the caller chose: the request's, else the last SESSION_API_KEY
 * of the environment (the one the sandbox would see). */
static int
executor_key (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  struct ohbox_plan_executor *x = &p->executor;
  const char *key = NULL;
  for (size_t i = 0; p->req->env && p->req->env[i]; i++)
    if (strncmp (p->req->env[i], "SESSION_API_KEY=", 16) == 0)
      {
        key = p->req->env[i] + 16;
        x->key_source = "environment";
      }
  if (p->req->api_key)
    {
      key = p->req->api_key;
      x->key_source = "request";
    }
  if (key == NULL)
    {
      x->key_source = "generated";
      return 0;
    }
  /* The executor takes an empty key for none: every request would pass. */
  if (*key == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "the session API key is empty: the executor would accept any request; give a key or leave "
                        "SESSION_API_KEY out for a new one");
  x->api_key = xstrdup (key);
  return 0;
}

/* The executor's argv and URL once its port is known. */
static void
executor_finish (struct ohbox_plan_executor *x)
{
  if (x->port > 0)
    {
      if (!x->own_command)
        {
          x->argv = ohbox_runtime_executor_argv (x->port, x->listen_address, x->openhands_args);
          size_t n = vlen (x->argv);
          if (x->standby)
            ohbox_strv_push (&x->argv, &n, xstrdup ("--standby"));
          /* Our executor also takes the run's unix socket (sandbox.h). */
          x->socket = true;
          ohbox_strv_push (&x->argv, &n, xstrdup ("--listen-fd"));
          ohbox_strv_push (&x->argv, &n, xasprintf ("%d", OHBOX_EXECUTOR_LISTEN_FD));
        }
      if (x->reachable && x->host_port > 0)
        x->url = xasprintf ("http://%s:%d", x->host_address, x->host_port);
    }
}

/* service_port with a command of the request's or the image's own: served
 * like an executor, started as given. */
static int
plan_own_service (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  struct ohbox_plan_executor *x = &p->executor;
  x->enabled = true;
  x->own_command = true;
  x->port = p->req->service_port;
  if (executor_key (p, err) < 0 || executor_network (p, err) < 0)
    return -1;
  executor_finish (x);
  return 0;
}

static int
plan_executor (struct ohbox_run_plan *p, bool labelled, ohbox_error_t *err)
{
  const struct ohbox_run_request *req = p->req;
  bool default_command = vlen (req->command) == 0 && req->entrypoint == NULL;
  if (req->executor_port < 0 || req->executor_port > 65535)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "executor port %d is not a port number", req->executor_port);
  if (req->service_port < 0 || req->service_port > 65535)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "service port %d is not a port number", req->service_port);
  if (req->service_port && req->executor_port)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "a service port and an executor port: give one");
  /* The image's entry script for OpenHands' command starts the executor
   * with the command's arguments: started without the script (a shell's
   * start less, ~3 ms here), as its own command it is the same process. */
  struct ohbox_plan_executor *x = &p->executor;
  if (p->runtime_image && req->service_port && !req->no_executor)
    x->openhands_args = ohbox_runtime_openhands_server_args (req->entrypoint, req->command, req->service_port);
  bool runs_executor = p->runtime_image && (default_command || x->openhands_args) && !req->no_executor;
  if (req->executor_standby && !(req->service_port && runs_executor && default_command))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "a standby executor needs a runtime image run without a command, on a service port");
  if (labelled && default_command)
    plan_warn (p,
               "image `%s` carries the label org.ohbox.runtime=1, but `ohbox build` did not make it in this store: "
               "it runs as an ordinary image (its own entrypoint and command; no executor started, no session "
               "key); `ohbox build` its base to make a runtime image",
               req->image);
  if (req->service_port && !runs_executor)
    return plan_own_service (p, err);
  if (!runs_executor)
    {
      if (req->executor_port || req->api_key)
        plan_warn (p, "%s is ignored: `%s` is %s", req->executor_port ? "the executor port" : "the session API key",
                   req->image, p->runtime_image ? "run with a command" : "not a runtime image (ohbox build)");
      return 0;
    }
  x->enabled = true;
  x->port = req->executor_port ? req->executor_port : OHBOX_EXECUTOR_DEFAULT_PORT;
  x->standby = req->executor_standby;
  if (req->service_port)
    x->port = req->service_port;
  if (executor_key (p, err) < 0 || executor_network (p, err) < 0)
    return -1;
  executor_finish (x);
  return 0;
}

/* ---- the rest ---- */

/* --storage-size: a filesystem of its own on a loop device (snapshot.h),
 * which only root may attach. */
static int
plan_storage_size (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  const struct ohbox_run_request *req = p->req;
  if (req->storage_size == 0)
    return 0;
  if (req->storage_size < OHBOX_SNAPSHOT_MIN_SIZE)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--storage-size %llu is too small: at least %d MiB",
                        (unsigned long long) req->storage_size, OHBOX_SNAPSHOT_MIN_SIZE >> 20);
  if (p->rootless)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "--storage-size needs root: the writable layer is bounded "
                        "by a filesystem of its own on a loop device, which only root may attach");
  if (req->read_only)
    plan_warn (p, "--storage-size is ignored with --read-only: the root filesystem has no writable layer");
  return 0;
}

/* --device and --gpus: their nodes, mounts and environment. */
static int
plan_devices (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  const struct ohbox_run_request *req = p->req;
  if (ohbox_devices_resolve ((const char *const *) req->devices, (const char *const *) req->cdi_spec_dirs, req->gpus,
                             &p->devices, err)
      < 0)
    return -1;
  if (p->devices.n_names > 0 && p->rootless)
    plan_warn (p, "rootless: the devices' nodes keep the host's owner and mode inside, and no device cgroup "
                  "limits them (the sandbox still reaches no other node)");
  return 0;
}

/* KEY=VALUE, keys unique and printable: they are looked up by key. */
static int
check_labels (char **labels, ohbox_error_t *err)
{
  size_t n = vlen (labels), total = 0;
  if (n > OHBOX_SANDBOX_MAX_LABELS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many labels (at most %d)", OHBOX_SANDBOX_MAX_LABELS);
  for (size_t i = 0; i < n; i++)
    {
      const char *eq = strchr (labels[i], '=');
      total += strlen (labels[i]);
      if (eq == NULL || eq == labels[i])
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "label `%s`: use KEY=VALUE", labels[i]);
      for (const char *c = labels[i]; c < eq; c++)
        if (*c <= ' ' || *c >= 0x7f)
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "label `%s`: the key must be printable ASCII", labels[i]);
      for (size_t k = 0; k < i; k++)
        if (strncmp (labels[k], labels[i], (size_t) (eq - labels[i]) + 1) == 0)
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "label `%.*s` is given twice", (int) (eq - labels[i]),
                              labels[i]);
    }
  if (total > OHBOX_SANDBOX_MAX_LABEL_BYTES)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the labels are too long (at most %d bytes)",
                        OHBOX_SANDBOX_MAX_LABEL_BYTES);
  return 0;
}

static int
plan_checks (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  const struct ohbox_run_request *req = p->req;
  if (req->image == NULL || *req->image == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "no image given");
  if (req->userns_host && p->rootless)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "--userns host needs root");
  if (req->timeout < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the timeout must not be negative");
  if (ohbox_cgroup_limits_validate (&req->limits, err) < 0 || plan_storage_size (p, err) < 0
      || plan_devices (p, err) < 0)
    return -1;
  if (check_labels (req->labels, err) < 0)
    return -1;
  if (ohbox_cgroup_limits_any (&req->limits) && !p->host->cgroup_limits)
    plan_warn (p, "%s",
               p->host->cgroup_warning ? p->host->cgroup_warning
                                       : "this host's cgroups cannot carry the limits: they are not applied");
  /* A bad name is the run's error (the same call, with its message). */
  uint64_t caps = 0, added = 0;
  if (ohbox_caps_tweak (ohbox_caps_default (), (const char *const *) req->cap_add, vlen (req->cap_add),
                        (const char *const *) req->cap_drop, vlen (req->cap_drop), &caps, &added, NULL)
        == 0
      && (caps & OHBOX_CAP_BIT (CAP_NET_RAW)))
    plan_warn (p, "CAP_NET_RAW: the sandbox can open raw sockets (ohbox's bridge still drops forged addresses)");
  return 0;
}

/* plan->opts for ohbox_sandbox_run. */
static void
fill_options (struct ohbox_run_plan *p)
{
  const struct ohbox_run_request *req = p->req;
  struct ohbox_run_options *o = &p->opts;
  o->image = req->image;
  o->image_id = p->image_id;
  bool executor = p->executor.enabled && !p->executor.own_command;
  o->command = executor ? p->executor.argv : req->command;
  o->entrypoint = executor ? NULL : req->entrypoint;
  o->env = p->env;
  o->name = req->name;
  o->detach = req->detach;
  o->rm = req->rm;
  o->interactive = req->interactive;
  o->tty = req->tty;
  o->read_only = req->read_only;
  o->volumes = req->volumes;
  o->tmpfs = req->tmpfs;
  o->workdir = req->workdir;
  o->user = req->user;
  o->hostname = req->hostname;
  o->network = p->network;
  o->network_container = p->network_container;
  o->network_name = p->network_name;
  o->egress = p->egress;
  o->rootless_net = p->backend == OHBOX_NET_BACKEND_PASTA         ? OHBOX_ROOTLESS_NET_PASTA
                    : p->backend == OHBOX_NET_BACKEND_SLIRP4NETNS ? OHBOX_ROOTLESS_NET_SLIRP
                                                                  : OHBOX_ROOTLESS_NET_AUTO;
  o->publish = p->publish;
  o->dns = req->dns;
  o->add_hosts = req->add_hosts;
  o->limits = req->limits;
  o->storage_size = req->read_only ? 0 : req->storage_size;
  o->devices = p->devices.n_names > 0 ? &p->devices : NULL;
  o->cap_add = req->cap_add;
  o->cap_drop = req->cap_drop;
  o->seccomp_profile = req->seccomp_profile;
  o->stop_signal = req->stop_signal;
  o->no_new_privs = req->no_new_privs;
  o->userns_host = req->userns_host;
  o->timeout = req->timeout;
  o->labels = req->labels;
  o->executor_key = p->executor.enabled ? p->executor.api_key : NULL;
  o->executor_url = p->executor.enabled ? p->executor.url : NULL;
  o->executor_socket = p->executor.enabled && p->executor.socket;
  /* On the bridge the URL is that of the port as published (chosen at the
   * start when free); elsewhere the plan's. */
  o->executor_port = p->executor.enabled && p->network == OHBOX_NETWORK_BRIDGE ? p->executor.port : 0;
}

/* What the request alone decides (a usage error is found before the
 * store is looked at): the checks, the network, -p. */
static int
plan_request (struct ohbox_run_plan *p, const struct ohbox_run_request *req, const struct ohbox_host_abilities *host,
              ohbox_error_t *err)
{
  memset (p, 0, sizeof *p);
  p->req = req;
  p->host = host;
  p->euid = host->euid;
  p->rootless = host->euid != 0;
  /* Room for the executor's port and its key. */
  p->publish = vcopy (req->publish, 1);
  p->env = vcopy (req->env, 1);
  if (plan_checks (p, err) < 0)
    return -1;
  if (req->network)
    {
      if (explicit_network (p, req->network, host, err) < 0)
        return -1;
    }
  else
    default_network (p, host);
  if (plan_egress (p, err) < 0)
    return -1;
  return check_publish (p, err);
}

/* What follows from the image: the executor of a runtime image. */
static int
plan_image (struct ohbox_run_plan *p, const char *image_id, bool runtime, bool labelled, ohbox_error_t *err)
{
  p->image_id = image_id ? xstrdup (image_id) : NULL;
  p->runtime_image = runtime;
  if (plan_executor (p, labelled, err) < 0)
    return -1;
  fill_options (p);
  return 0;
}

int
ohbox_run_plan_resolve (const struct ohbox_run_request *req, const char *image_id, bool runtime, bool labelled,
                        const struct ohbox_host_abilities *host, struct ohbox_run_plan *p, ohbox_error_t *err)
{
  if (plan_request (p, req, host, err) < 0 || plan_image (p, image_id, runtime, labelled, err) < 0)
    {
      ohbox_run_plan_clear (p);
      return -1;
    }
  return 0;
}

int
ohbox_run_plan_make (struct ohbox_store *s, const struct ohbox_run_request *req,
                     const struct ohbox_host_abilities *host, struct ohbox_run_plan *p, ohbox_error_t *err)
{
  if (plan_request (p, req, host, err) < 0)
    {
      ohbox_run_plan_clear (p);
      return -1;
    }
  /* The label is looked at only to warn that it is ignored. */
  bool default_command = vlen (req->command) == 0 && req->entrypoint == NULL;
  struct ohbox_runtime_image_facts f;
  int r = ohbox_runtime_image_facts (s, req->image, default_command, &f, err);
  if (r == 0)
    {
      r = plan_image (p, f.id, f.runtime, f.labelled, err);
      ohbox_runtime_image_facts_clear (&f);
    }
  if (r < 0)
    ohbox_run_plan_clear (p);
  return r;
}

int
ohbox_run_plan_realize (struct ohbox_run_plan *p, ohbox_error_t *err)
{
  struct ohbox_plan_executor *x = &p->executor;
  if (!x->enabled || p->realized)
    return 0;
  if (x->api_key == NULL && ohbox_runtime_session_key (&x->api_key, err) < 0)
    return -1;
  if (x->port == 0)
    {
      /* The host's network without --executor-port: a port free now. */
      if (ohbox_runtime_free_port (x->listen_address, &x->port, err) < 0)
        return -1;
      x->host_port = x->port;
      executor_finish (x);
    }
  /* The sandbox's environment carries the key the executor checks (the
   * caller's own entry when it gave one there). */
  if (strcmp (x->key_source, "environment") != 0)
    vpush (p->env, xasprintf ("SESSION_API_KEY=%s", x->api_key));
  p->realized = true;
  fill_options (p);
  return 0;
}
