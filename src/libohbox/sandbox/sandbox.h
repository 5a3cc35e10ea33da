/* sandbox.h: sandboxes from images: run, and the lifecycle commands.
 *
 * No daemon. Each sandbox has a state directory STATE/<id>/ (STATE is
 * ohbox_runtime_base_dir (): /run/ohbox for root, $XDG_RUNTIME_DIR/ohbox
 * otherwise, else ~/.local/state/ohbox/run; a store other than the default
 * one gets STATE/stores/<hash of its path>/, so two stores never see each
 * other's sandboxes). STATE and every directory on the way to it belong to
 * the caller or root, writable by nobody else (ohbox_private_dir_open):
 * another local user cannot make or redirect it:
 *
 *   config.json   what was asked (image, command, name, --rm, store), written once
 *   state.json    status, init pid and its start time, exit code, times
 *   monitor.lock  held (flock) by the sandbox's monitor for as long as it lives
 *   lock          taken by commands that change the sandbox (rm, pause, ...)
 *   log, log.1    output of a detached sandbox (bounded, one rotation)
 *   rootfs/       where the rootfs is attached, in the sandbox's own mount ns
 *
 * STATE/names/<name> is a symlink to the id. The monitor is the process that
 * created the sandbox (the `ohbox run` process itself in the foreground, a
 * forked copy with -d): it is the parent of the sandbox's init, holds its
 * pidfd, forwards signals, keeps the logs, writes the exit status, removes
 * the cgroup, and with --rm everything. The init dies with it (PDEATHSIG).
 *
 * Reconciliation: a sandbox whose monitor.lock is free but whose state is
 * not "exited" lost its monitor (killed, or `ohbox run` killed mid-start):
 * any command that looks at it (ps, rm, wait, ...) kills what is left in its
 * cgroup, removes the cgroup and marks it exited (status 255), or removes it
 * entirely when it was started with --rm. Its mounts lived only in its own
 * mount namespace and are gone with its processes. */
#ifndef OHBOX_SANDBOX_H
#define OHBOX_SANDBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/error.h"
#include "devices/devices.h"
#include "sandbox/state.h"
#include "store/store.h"

/* The user-mode network of a rootless bridge sandbox: pasta when it is
 * installed, slirp4netns otherwise, or the one asked for. */
enum ohbox_rootless_net
{
  OHBOX_ROOTLESS_NET_AUTO = 0,
  OHBOX_ROOTLESS_NET_PASTA,
  OHBOX_ROOTLESS_NET_SLIRP,
};

enum ohbox_network_mode
{
  OHBOX_NETWORK_NONE = 0,  /* a new network namespace with only loopback (the default for now) */
  OHBOX_NETWORK_HOST,      /* the host's network namespace */
  OHBOX_NETWORK_BRIDGE,    /* a veth pair on the ohbox0 bridge (root; network.h) */
  OHBOX_NETWORK_CONTAINER, /* the network namespace of sandbox network_container */
};

/* How a sandbox's command ended (ohbox_run_options.on_exited). */
struct ohbox_run_exit
{
  const char *id;
  int exit_code;   /* its status, 128+N when killed by signal N, OHBOX_EXIT_TIMEOUT on timeout */
  int signal;      /* the signal that killed it, or 0 (from 128+N, as shells tell) */
  bool timed_out;  /* --timeout killed it */
  double duration; /* seconds from start to exit */
};

#define OHBOX_EXIT_TIMEOUT 124      /* as timeout(1) */
#define OHBOX_RUN_TIMEOUT_GRACE 5.0 /* seconds between SIGTERM and SIGKILL */
#define OHBOX_RUN_LINE_MAX 16384    /* on_output: longer lines come in pieces */

/* What a sandbox is made of, resolved: front doors get it from the run
 * policy (policy/run_policy.h), which decides everything below. */
struct ohbox_run_options
{
  const char *image;    /* reference, id or id prefix in the store */
  const char *image_id; /* the id the plan resolved IMAGE to: the run loads exactly it (NULL: IMAGE) */
  char **command;       /* NULL-terminated; NULL or empty: the image's Cmd */
  char **entrypoint;    /* NULL: the image's Entrypoint */
  char **env;           /* K=V entries, applied over the image's Env (NULL-terminated or NULL) */
  const char *name;     /* NULL: none */
  bool detach;
  /* Detached, from a process that exits right after (ohbox run -d, serve's
   * start worker): the monitor is its child, not a grandchild. One fork
   * less (~2 ms on a VM whose page faults are slow); the caller's exit
   * hands the monitor to init. Off: a long-lived caller never has to reap
   * it. */
  bool detach_caller_exits;
  bool rm;
  bool interactive; /* keep stdin (foreground) */
  bool tty;         /* a pseudo-terminal for the command (foreground) */
  bool read_only;
  char **volumes; /* "HOST:CTR[:ro|:rw]" (NULL-terminated or NULL) */
  char **tmpfs;   /* "PATH" (NULL-terminated or NULL) */
  const char *workdir;
  const char *user;
  const char *hostname;
  enum ohbox_network_mode network;
  const char *network_container; /* OHBOX_NETWORK_CONTAINER: name or id */
  const char *network_name;      /* OHBOX_NETWORK_BRIDGE as root: a named network (network.h); NULL: ohbox0 */
  const char *egress;            /* bridge as root: --egress (egress.h); NULL: public */
  /* Rootless OHBOX_NETWORK_BRIDGE: which user-mode network (network.h). */
  enum ohbox_rootless_net rootless_net;
  char **publish;   /* -p specs (NULL-terminated or NULL; network.h) */
  char **dns;       /* --dns addresses (NULL-terminated or NULL) */
  char **add_hosts; /* --add-host "NAME:IP" lines for /etc/hosts (NULL-terminated or NULL) */
  struct ohbox_cgroup_limits limits;
  /* The writable layer holds at most this many bytes (0: no limit): a
   * sandbox that fills it gets ENOSPC, the store's filesystem is not
   * filled (root only: snapshot.h). */
  uint64_t storage_size;
  /* Devices given to the sandbox (--device, --gpus, CDI), resolved by the
   * run policy; NULL: none.  Every sandbox may open only the nodes ohbox
   * puts in its /dev and these (cgroup device rules, root only). */
  const struct ohbox_device_edits *devices;
  char **cap_add; /* NULL-terminated or NULL */
  char **cap_drop;
  const char *seccomp_profile; /* NULL: the default profile; "unconfined": none */
  const char *stop_signal;     /* what `stop` sends first; NULL: the image's StopSignal, else SIGTERM */
  bool no_new_privs;           /* --security-opt no-new-privileges (off by default, as Docker) */
  bool userns_host;            /* --userns host */
  /* Called with warnings meant for the user (may be NULL). */
  void (*warn) (const char *msg, void *data);
  void *warn_data;
  /* A runtime sandbox's executor (run_policy.h): its session API key and
   * where the host reaches it, kept in STATE/<id>/executor.json for `ohbox
   * action` (action.h). EXECUTOR_PORT > 0: the URL is that of this TCP port
   * as published (host ports are chosen when the network is prepared),
   * else EXECUTOR_URL (NULL: not reachable from the host). EXECUTOR_KEY
   * NULL: no executor. */
  const char *executor_key;
  const char *executor_url;
  int executor_port;
  /* The executor also listens on a unix socket the run makes in the
   * sandbox's state directory (OHBOX_EXECUTOR_SOCKET, action.h) and gives
   * it as fd OHBOX_EXECUTOR_LISTEN_FD: the owner of the state reaches it
   * without the network (`ohbox serve`), nobody else can. */
  bool executor_socket;
  /* Foreground only (like on_started): called with the executor's URL (may
   * be NULL) and key once executor.json is written, before the command
   * starts. */
  void (*on_executor) (const char *url, const char *key, void *data);
  /* Kill the sandbox when it runs longer than this many seconds (0: never):
   * SIGTERM to its command, SIGKILL to all of it OHBOX_RUN_TIMEOUT_GRACE
   * seconds later; its exit status is then OHBOX_EXIT_TIMEOUT. */
  double timeout;
  /* Events for callers that report progress (ohbox run --format json); all
   * may be NULL. on_started: the command runs (foreground: called in this
   * process; detached: never, the id is returned). on_output: foreground
   * without a terminal only: the command's stdout (STREAM 1) and stderr (2)
   * then go through pipes and come here one line at a time (LINE without
   * its newline; a line longer than OHBOX_RUN_LINE_MAX comes in pieces).
   * on_exited: the command ended (foreground), before any --rm cleanup. */
  void (*on_started) (const char *id, pid_t pid, void *data);
  void (*on_output) (int stream, const char *line, size_t len, void *data);
  void (*on_exited) (const struct ohbox_run_exit *exit, void *data);
  void *event_data;
  /* "KEY=VALUE" (NULL-terminated or NULL): config.json's "labels", for
   * whoever started the sandbox to find it again (run_policy.h). */
  char **labels;
};

struct ohbox_runtime;

/* The fd the executor's unix socket has in the command
 * (ohbox_run_options.executor_socket). */
#define OHBOX_EXECUTOR_LISTEN_FD 3

/* Where the caller's runtime state lives: /run/ohbox for root, else
 * $XDG_RUNTIME_DIR/ohbox, else $XDG_STATE_HOME/ohbox/run (default
 * ~/.local/state/ohbox/run). Opened with ohbox_private_dir_open (utils.h). */
char *ohbox_runtime_base_dir (void);
/* The state root for sandboxes of the store at STORE_ROOT (see above);
 * $OHBOX_RUNROOT overrides it. */
char *ohbox_runtime_default_state_root (const char *store_root);
/* Opens (creating) the state root STATE_ROOT (NULL: the default one). */
int ohbox_runtime_open (struct ohbox_store *store, const char *state_root, struct ohbox_runtime **ret,
                        ohbox_error_t *err);
void ohbox_runtime_close (struct ohbox_runtime *rt);
/* The state root RT opened (STATE; each sandbox's state is STATE/<id>). */
const char *ohbox_runtime_state_root (const struct ohbox_runtime *rt);

/* Creates and starts a sandbox. Foreground: returns when it ended, with
 * *RET_EXIT_CODE its command's status (125 when ohbox failed, 126 when the
 * command could not be executed, 127 when not found; then an error is set
 * too). Detached: returns once the command runs, its monitor in the
 * background. *RET_ID (may be NULL) gets the id. */
int ohbox_sandbox_run (struct ohbox_runtime *rt, const struct ohbox_run_options *opts, char **ret_id,
                       int *ret_exit_code, ohbox_error_t *err);

/* The id of the sandbox WHAT names: a name, an id, or a unique id prefix. */
int ohbox_sandbox_resolve (struct ohbox_runtime *rt, const char *what, char **ret_id, ohbox_error_t *err);

/* Every sandbox (ALL false: running and paused only) as a JSON array of
 * {"id","name","image","image_id","command","created","status","pid",
 *  "exit_code","finished_at","timed_out"}; reconciles the dead ones first. */
int ohbox_sandbox_list (struct ohbox_runtime *rt, bool all, json_t **ret, ohbox_error_t *err);
/* One sandbox, same fields. Both also carry "labels" (given at the run,
 * never changed) and "annotations" (ohbox_sandbox_annotate), objects of
 * strings. */
int ohbox_sandbox_inspect (struct ohbox_runtime *rt, const char *id, json_t **ret, ohbox_error_t *err);
/* The same, typed (state.h): *RET (free with ohbox_sandbox_infos_free) of
 * *RET_N; one sandbox into *RET (clear with ohbox_sandbox_info_clear). */
int ohbox_sandbox_list_info (struct ohbox_runtime *rt, bool all, struct ohbox_sandbox_info **ret, size_t *ret_n,
                             ohbox_error_t *err);
void ohbox_sandbox_infos_free (struct ohbox_sandbox_info *v, size_t n);
int ohbox_sandbox_inspect_info (struct ohbox_runtime *rt, const char *id, struct ohbox_sandbox_info *ret,
                                ohbox_error_t *err);

/* Sets the string members of SET (an object; a null member removes that
 * key) into the sandbox's annotations in state.json, under its lock: what a
 * front door that manages sandboxes needs to find again after a restart
 * (`ohbox serve`: the session a pooled sandbox was given). A sandbox that
 * is gone is OHBOX_ERR_NOT_FOUND. */
int ohbox_sandbox_annotate (struct ohbox_runtime *rt, const char *id, json_t *set, ohbox_error_t *err);

/* The sandbox's network.json (mode, ip, gateway, ports, active), or an
 * empty object when it has none. */
int ohbox_sandbox_network (struct ohbox_runtime *rt, const char *id, json_t **ret, ohbox_error_t *err);

/* Sends SIG to the sandbox's command (through its init). */
int ohbox_sandbox_kill (struct ohbox_runtime *rt, const char *id, int sig, ohbox_error_t *err);
/* The sandbox's stop signal (--stop-signal, the image's StopSignal, else
 * SIGTERM), then SIGKILL to everything after
 * TIMEOUT seconds; returns when the sandbox is exited. */
int ohbox_sandbox_stop (struct ohbox_runtime *rt, const char *id, int timeout, ohbox_error_t *err);
/* Removes an exited sandbox (FORCE: kills a running one first). */
int ohbox_sandbox_remove (struct ohbox_runtime *rt, const char *id, bool force, ohbox_error_t *err);
int ohbox_sandbox_pause (struct ohbox_runtime *rt, const char *id, bool pause, ohbox_error_t *err);
/* Blocks until the sandbox exited; its exit code. */
int ohbox_sandbox_wait (struct ohbox_runtime *rt, const char *id, int *ret_exit_code, ohbox_error_t *err);
/* Copies the sandbox's log to OUT_FD; FOLLOW: until it exited. */
int ohbox_sandbox_logs (struct ohbox_runtime *rt, const char *id, bool follow, int out_fd, ohbox_error_t *err);
int ohbox_sandbox_stats (struct ohbox_runtime *rt, const char *id, struct ohbox_cgroup_stats *ret, ohbox_error_t *err);

/* Limits on what the CLI passes (every allocation an attacker controls). */
#define OHBOX_SANDBOX_MAX_ARGS 4096
#define OHBOX_SANDBOX_MAX_ENV 4096
#define OHBOX_SANDBOX_MAX_MOUNTS 256
#define OHBOX_SANDBOX_MAX_ADD_HOSTS 256
#define OHBOX_SANDBOX_MAX_LABELS 64
#define OHBOX_SANDBOX_MAX_LABEL_BYTES (16 * 1024)
#define OHBOX_SANDBOX_MAX_ANNOTATION_BYTES (16 * 1024)
#define OHBOX_SANDBOX_LOG_MAX (1024 * 1024) /* per log file; one rotation keeps two */

#endif
