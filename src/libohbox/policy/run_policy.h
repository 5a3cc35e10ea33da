/* run_policy.h: how a sandbox runs, decided in one place.
 *
 * Every front door (`ohbox run`, `ohbox ci gitlab`, ohbox_run() of
 * libohbox, and later the runtime API server and the OCI runtime command
 * line) fills a run REQUEST with what its caller asked for, as given, and
 * asks for the PLAN: the network mode and backend, the runtime-image
 * handling (the executor's command, port, listen address, where the host
 * reaches it, its session key), the process, the limits, the security
 * options, and the warnings to show. The front door prints the warnings,
 * runs the plan with ohbox_sandbox_run (plan.opts) and decides nothing
 * itself. `ohbox run --dry-run` and ohbox_run_plan() print the plan as JSON
 * (ohbox_run_plan_json) without starting anything.
 *
 * What the plan depends on besides the request: the store (is the image a
 * runtime image: build/runtime_image.h) and the host's abilities (the
 * caller's euid, the user-mode network helpers installed, the cgroup
 * mode), probed by ohbox_host_probe or set by hand in tests.
 *
 * The rules (ohbox-run(1) documents them for users):
 *
 *   network   given: as given (bridge, none, host, container:NAME; rootless
 *             also pasta or slirp4netns). Not given: bridge; rootless that
 *             is the user-mode network, slirp4netns when installed, else
 *             pasta, else none (loopback only) with a warning. The image
 *             never chooses it. A rootless bridge always names its backend
 *             in the plan.
 *   runtime   a runtime image (recorded by `ohbox build`) run without a
 *   sandbox   command and without --entrypoint starts its executor:
 *             PORT (--executor-port, else 8000) inside the sandbox, with a
 *             session key (the request's, else SESSION_API_KEY of its
 *             environment, else a new one) put into its environment.
 *             Where it listens and how the host reaches it:
 *               bridge (root veth, rootless slirp4netns or pasta): on
 *                 0.0.0.0 of the sandbox's own network namespace, published
 *                 on the host's 127.0.0.1 only, on --executor-port or a free
 *                 port chosen at start (unless the request publishes the
 *                 executor's port itself: then as it says, with a warning
 *                 when that is every host address);
 *               host (root only, asked for by name, with a warning): on
 *                 127.0.0.1 of the host, port --executor-port or a free one;
 *                 refused rootless: the host's abstract unix sockets would
 *                 be reachable, and their peers see the user's own uid;
 *               none, container:NAME: on 0.0.0.0 of that namespace, not
 *                 reachable from the host (a warning says so); a rootless
 *                 default that falls to none is refused for a runtime
 *                 sandbox instead, with what to install.
 *             Why 0.0.0.0 is safe in a private namespace: it holds only
 *             loopback (the sandbox's own processes) and the sandbox's one
 *             interface (veth on ohbox0, or the user-mode tap). Binding the
 *             interface's address instead would reach exactly the same
 *             peers (the host, and the bridge, which the bridge's own
 *             isolation governs), and would miss pasta, which delivers the
 *             host's loopback connections to the namespace's loopback.
 *   service   (ohbox serve) service_port: a runtime image run without a
 *   port      command gets its executor on that port, and so does one run
 *             with OpenHands' server command (runtime_image.h) for that
 *             port, with the command's arguments (what the image's entry
 *             script would start, without the script); any other command
 *             keeps its argv; either way the port is handled as the
 *             executor's above (published on the host's 127.0.0.1 at a free
 *             port on the bridge, a session key in SESSION_API_KEY), so the
 *             server reaches every sandbox's own server the same way.
 *   else      as given; the limits are checked together; a limit on a host
 *             whose cgroups cannot carry it (rootless without a delegated
 *             subtree) is a warning; --userns host needs root;
 *             --storage-size needs root and 16 MiB at least, and is
 *             ignored with a warning for a read-only rootfs.
 *   devices   --device (CDI names or host nodes) and --gpus are resolved
 *             here, against the CDI specs and the host's nodes, so that a
 *             dry run shows every node and mount; a name no spec defines,
 *             a malformed spec, a missing driver are the request's errors.
 *
 *   named     `--network NAME` (any other word: a network made with `ohbox
 *   network   network create`, network.h): root only (a rootless sandbox's
 *             network is the user's own sockets); a bridge network with
 *             its own bridge; that it exists is checked at the start, under
 *             the network lock.
 *   egress    where a root bridge sandbox (ohbox0 or a named network) may
 *             connect (egress.h): `public` unless the request says; a
 *             weaker setting (a blocked range, all) is a warning; refused
 *             for other networks and rootless (no filter of ours sees a
 *             user-mode network's traffic).
 *   NET_RAW   given back with --cap-add: a warning (the bridge still drops
 *             forged addresses; raw sockets reach whatever the network
 *             reaches). */
#ifndef OHBOX_RUN_POLICY_H
#define OHBOX_RUN_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/error.h"
#include "sandbox/sandbox.h"
#include "store/store.h"

/* ---- the host ---- */

struct ohbox_host_abilities
{
  uid_t euid;       /* 0: root sandboxes; else rootless ones (user namespace, user-mode network) */
  bool pasta;       /* pasta (Debian passt) in $PATH */
  bool slirp4netns; /* slirp4netns in $PATH */
  enum ohbox_cgroup_mode cgroup_mode;
  /* Limits can be enforced; false: rootless without a delegated cgroup v2
   * subtree (cgroup_warning says so). */
  bool cgroup_limits;
  char *cgroup_warning;
};

/* Fills H for the calling process. RT (may be NULL): its cgroup host, which
 * the run uses anyway (cached), else a detection of its own. */
int ohbox_host_probe (struct ohbox_runtime *rt, struct ohbox_host_abilities *h, ohbox_error_t *err);
void ohbox_host_abilities_clear (struct ohbox_host_abilities *h);

/* ---- the request ---- */

/* Defaults: a zeroed request asks for the image's command, the default
 * network, no limits, the default security options. Strings and vectors
 * (NULL-terminated or NULL) are borrowed: keep them while the plan lives. */
struct ohbox_run_request
{
  const char *image; /* required: reference, id or id prefix in the store */
  char **command;    /* NULL or empty: the image's Cmd (a runtime image: its executor) */
  char **entrypoint; /* NULL: the image's Entrypoint */
  char **env;        /* K=V over the image's */
  const char *name, *workdir, *user, *hostname;
  bool detach, rm, interactive, tty, read_only;
  char **volumes, **tmpfs;
  /* The network as the caller gave it (`--network` text): NULL: not given;
   * "bridge", "none", "host", "container:NAME", "pasta", "slirp4netns",
   * or the name of a network made with `ohbox network create`. */
  const char *network;
  /* `--egress` text (egress.h): NULL: not given (public on a root bridge). */
  const char *egress;
  char **publish; /* -p specs */
  char **dns, **add_hosts;
  struct ohbox_cgroup_limits limits;
  /* The writable layer's size in bytes (0: unbounded; root only, at least
   * OHBOX_SNAPSHOT_MIN_SIZE; ignored with READ_ONLY, which has none). */
  uint64_t storage_size;
  char **cap_add, **cap_drop;
  const char *seccomp_profile; /* NULL: the default profile; "unconfined": none */
  /* no_new_privs for the command (`--security-opt no-new-privileges`). Off
   * by default, as Docker: sudo and setuid binaries work as in a container;
   * what they can gain stays inside the user namespace, the bounding set
   * and the seccomp filter. */
  bool no_new_privs;
  bool userns_host;
  const char *stop_signal;
  double timeout;
  /* A runtime image's executor: its port (0: 8000 inside, a free one on
   * the host), its session key (NULL: SESSION_API_KEY of ENV, else new). */
  int executor_port;
  const char *api_key;
  /* Never start a runtime image's executor: the image's own command runs
   * (CI services, which are images like any other). */
  bool no_executor;
  /* A server front door's sandbox (`ohbox serve`): the TCP port its server
   * listens on inside. A runtime image run without a command: its
   * executor; otherwise the request's (or the image's) own command, which
   * ohbox does not start differently. Either way the port is published and
   * recorded with the session key as a runtime sandbox's executor is, on a
   * free port of the host (never SERVICE_PORT itself: many sandboxes use
   * the same one), and the key is in SESSION_API_KEY of the environment.
   * 0: none; not with executor_port. */
  int service_port;
  /* With service_port, a runtime image's executor starts on standby (warm
   * pools): it serves nothing but /alive and one POST /ohbox/adopt, which
   * gives it its session (key, user, environment, directories) and only
   * the key the plan made may send (executor/README.md). */
  bool executor_standby;
  /* KEY=VALUE labels recorded with the sandbox (config.json; `ohbox ps
   * --format json`), for whoever started it to find it again; nothing in
   * the run reads them. */
  char **labels;
  /* Devices: `--device` values (CDI names VENDOR/CLASS=NAME, or
   * HOSTPATH[:CTRPATH][:rwm]), the CDI spec folders (NULL: /etc/cdi and
   * /var/run/cdi), `--gpus` (NULL: none). */
  char **devices;
  char **cdi_spec_dirs;
  const char *gpus;
};

/* ---- the plan ---- */

/* How the sandbox's network is made. */
enum ohbox_net_backend
{
  OHBOX_NET_BACKEND_NONE = 0,    /* none, host, container: nothing is made */
  OHBOX_NET_BACKEND_VETH,        /* root bridge: a veth pair on ohbox0 */
  OHBOX_NET_BACKEND_SLIRP4NETNS, /* rootless bridge */
  OHBOX_NET_BACKEND_PASTA,       /* rootless bridge */
};

#define OHBOX_EXECUTOR_DEFAULT_PORT 8000
#define OHBOX_EXECUTOR_HOST_ADDRESS "127.0.0.1"

struct ohbox_plan_executor
{
  bool enabled; /* a runtime sandbox: the executor is the command */
  /* service_port of a command that is not ohbox's executor: published and
   * keyed like one, the command as the request gives it (argv NULL). */
  bool own_command;
  bool standby; /* executor_standby */
  int port;     /* its TCP port in the sandbox's network namespace */
  const char *listen_address;
  bool reachable;         /* from the host: published, or the host's network */
  bool published;         /* the plan publishes it (bridge) */
  char *host_address;     /* where the host reaches it (reachable) */
  int host_port;          /* 0: chosen at start (published from a free port) */
  const char *key_source; /* "request", "environment" or "generated" */
  char *api_key;          /* NULL until ohbox_run_plan_realize (generated keys) */
  char *url;              /* the host's URL when known before the start, else NULL */
  bool socket;            /* ohbox's executor: it also listens on the run's unix socket (sandbox.h) */
  char **argv;
  /* The request's command is OpenHands' server command (runtime_image.h):
   * the arguments the image's entry script would give the executor. */
  char **openhands_args;
};

struct ohbox_run_plan
{
  const struct ohbox_run_request *req;
  char *image_id;
  bool runtime_image; /* recorded by `ohbox build` in this store */
  bool rootless;
  uid_t euid;
  enum ohbox_network_mode network;
  enum ohbox_net_backend backend;
  const char *network_container;
  bool network_explicit;
  const char *network_name; /* a named network (bridge, root); NULL: ohbox0 or the user-mode network */
  char *egress;             /* canonical --egress of a root bridge ("public", ...); NULL: not filtered */
  char **publish;           /* the request's -p and the executor's */
  char **command;
  char **env;
  struct ohbox_plan_executor executor;
  const struct ohbox_host_abilities *host;
  char **warnings;
  size_t n_warnings;
  /* What the requested devices add (nothing when none is asked for). */
  struct ohbox_device_edits devices;
  bool realized;
  /* What ohbox_sandbox_run gets, pointing into the plan and the request;
   * complete after ohbox_run_plan_realize. Front doors may set its output
   * callbacks (warn, on_started, on_output, on_exited, event_data). */
  struct ohbox_run_options opts;
};

/* The plan for REQ with the image facts of store S and the host HOST (both
 * borrowed by the plan). Picks nothing random and binds nothing: a dry run
 * is this and ohbox_run_plan_json. Errors are the request's (usage, a
 * refused combination) or the image's (not found). */
int ohbox_run_plan_make (struct ohbox_store *s, const struct ohbox_run_request *req,
                         const struct ohbox_host_abilities *host, struct ohbox_run_plan *plan, ohbox_error_t *err);
/* The same from facts the caller has (tests): IMAGE_ID, and whether `ohbox
 * build` recorded it (RUNTIME) or only its label says so (LABELLED). */
int ohbox_run_plan_resolve (const struct ohbox_run_request *req, const char *image_id, bool runtime, bool labelled,
                            const struct ohbox_host_abilities *host, struct ohbox_run_plan *plan, ohbox_error_t *err);
/* Before the start: a generated session key, a free port for an executor
 * on the host's network. */
int ohbox_run_plan_realize (struct ohbox_run_plan *plan, ohbox_error_t *err);
/* The plan as JSON (no secret in it: the key is named by its source). */
json_t *ohbox_run_plan_json (const struct ohbox_run_plan *plan);
void ohbox_run_plan_clear (struct ohbox_run_plan *plan);

const char *ohbox_net_backend_name (enum ohbox_net_backend b);

#endif
