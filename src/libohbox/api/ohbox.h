/* ohbox.h: the public C API of libohbox, a daemonless sandbox runtime.
 *
 * Link with `pkg-config --cflags --libs libohbox`; the reference is
 * libohbox(3). Conventions:
 *
 *   - Every fallible function returns 0 on success and -1 on failure; its
 *     last argument ERR (may be NULL) then gets an error object the caller
 *     frees with ohbox_err_free(). Its code is one of enum ohbox_code, the
 *     same kinds as the exit codes of the ohbox CLI (ohbox(1)).
 *   - Strings the library returns are freed with ohbox_free().
 *   - Options are structs whose first member `size` the caller sets to
 *     sizeof the struct it was compiled with (OHBOX_OPTS_INIT does it): a
 *     newer library reads only that much, an older one refuses a larger
 *     struct whose extra bytes are not zero. NULL options: the defaults.
 *   - The library never prints and never exits. It installs no signal
 *     handler. ohbox_exec() blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT,
 *     SIGUSR1, SIGUSR2 and SIGWINCH in the calling thread while the command
 *     runs and forwards them to it; ohbox_run() in the foreground does the
 *     same for the sandbox; both restore the thread's signal mask.
 *   - Detached sandboxes are kept by a monitor process forked from the
 *     caller (fork(2) with a single thread running in the child). The
 *     caller's SIGCHLD disposition must not be SIG_IGN.
 *   - Threads: a context is immutable once made; several threads may use
 *     one at the same time (each call opens the store and the state
 *     directory, which are locked across processes and threads alike).
 *     With several threads, ohbox_run() creates the sandbox's first process
 *     through a forked helper (clone(2) right in a threaded process could
 *     leave the child waiting on another thread's lock), so the process's
 *     working directory and namespaces never change under other threads.
 *   - Sandboxes are what `ohbox run` makes, decided by the same run policy:
 *     as root fully isolated, as another user rootless (in a user
 *     namespace). */
#ifndef OHBOX_H
#define OHBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

#define OHBOX_OPTS_INIT(type)                                                                                          \
  {                                                                                                                    \
    .size = sizeof (type)                                                                                              \
  }

  /* The library's version, "MAJOR.MINOR.PATCH". */
  const char *ohbox_version (void);
  /* Frees a string (or other memory) the library returned. */
  void ohbox_free (void *p);

  /* ---- errors ---- */

  /* The kinds of error; the ohbox CLI exits with these codes. */
  enum ohbox_code
  {
    OHBOX_E_GENERIC = 1,     /* anything else */
    OHBOX_E_USAGE = 2,       /* bad arguments or input; a sandbox in the wrong state */
    OHBOX_E_NOT_FOUND = 3,   /* no such image, tag, blob or sandbox */
    OHBOX_E_AUTH = 4,        /* authentication refused (registry, session API key) */
    OHBOX_E_REGISTRY = 5,    /* network, TLS or HTTP error from a registry */
    OHBOX_E_INTEGRITY = 6,   /* digest or size mismatch, unsafe or corrupt data */
    OHBOX_E_STORE = 7,       /* local storage: I/O, disk full, permissions, locks */
    OHBOX_E_UNSUPPORTED = 8, /* valid input ohbox does not support */
    OHBOX_E_SANDBOX = 9,     /* the host refused or failed a sandbox step: namespaces, mounts, signals */
    OHBOX_E_NETWORK = 10,    /* a sandbox's network: bridge, veth, nftables, ports, pasta */
    OHBOX_E_CGROUP = 11,     /* cgroups: creating, limits, freezing, statistics */
    OHBOX_E_SECURITY = 12,   /* seccomp, capabilities, no_new_privs */
  };

  typedef struct ohbox_err ohbox_err;
  int ohbox_err_code (const ohbox_err *e);
  /* The errno that caused it, 0 when none. */
  int ohbox_err_errno (const ohbox_err *e);
  /* What failed, naming the object and the operation, and what to do. */
  const char *ohbox_err_message (const ohbox_err *e);
  void ohbox_err_free (ohbox_err *e);

  /* ---- context ---- */

  typedef struct ohbox_ctx ohbox_ctx;

  typedef struct ohbox_ctx_opts
  {
    size_t size;
    /* The image store; NULL: /var/lib/ohbox for root, else
     * $XDG_DATA_HOME/ohbox. */
    const char *store_root;
    /* Where sandboxes' state lives; NULL: /run/ohbox for root, else
     * $XDG_RUNTIME_DIR/ohbox, else ~/.local/state/ohbox/run (a store other
     * than the default gets its own subdirectory: see ohbox(1)). It must be
     * the caller's and writable by nobody else (ohbox-run(1) FILES). */
    const char *state_root;
    /* registries.conf; NULL: the system's (/etc/containers/registries.conf). */
    const char *registries_conf;
    /* auth.json with registry credentials; NULL: the default places. */
    const char *authfile;
    /* Plain HTTP / unverified TLS with every registry (--tls-verify=false);
     * false: registries.conf decides per registry. */
    bool tls_insecure;
  } ohbox_ctx_opts;

  int ohbox_ctx_new (const ohbox_ctx_opts *opts, ohbox_ctx **ret, ohbox_err **err);
  void ohbox_ctx_free (ohbox_ctx *ctx);

  /* ---- images ---- */

  typedef struct ohbox_pull_opts
  {
    size_t size;
    const char *platform; /* "os/arch[/variant]"; NULL: the host's */
    /* The layers' uncompressed size together; 0: 64 GiB (ohbox-pull(1),
     * --max-image-size). Over it: OHBOX_E_INTEGRITY. */
    uint64_t max_image_size;
    /* Seconds the registry part of the pull may take; 0: 30 minutes, < 0:
     * no limit (--timeout). Past it: OHBOX_E_REGISTRY. */
    double timeout;
  } ohbox_pull_opts;

  /* Pulls REF (a reference: short names are resolved as registries.conf
   * says) into the store; *RET_ID (may be NULL) gets the image id. */
  int ohbox_pull_image (ohbox_ctx *ctx, const char *ref, const ohbox_pull_opts *opts, char **ret_id, ohbox_err **err);

  typedef struct ohbox_build_opts
  {
    size_t size;
    const char *runtime_repo; /* NULL: "ohbox/runtime" */
    bool force_rebuild;
    bool no_pull; /* never contact a registry */
  } ohbox_build_opts;

  /* Builds (or reuses) the runtime image for BASE (ohbox-build(1)): the base
   * plus the action executor. *RET_IMAGE (may be NULL) gets its name, to run. */
  int ohbox_build_image (ohbox_ctx *ctx, const char *base, const ohbox_build_opts *opts, char **ret_image,
                         ohbox_err **err);

  /* ---- sandboxes ---- */

  enum ohbox_net_mode
  {
    OHBOX_NETMODE_DEFAULT = 0, /* as `ohbox run` without --network: bridge (rootless: slirp4netns, else pasta,
                                  else none); never chosen by the image, a runtime image's included */
    OHBOX_NETMODE_NONE,        /* loopback only */
    OHBOX_NETMODE_HOST,        /* the host's network (a runtime image's: root only, with a warning) */
    OHBOX_NETMODE_BRIDGE,      /* a veth on the ohbox0 bridge (rootless: slirp4netns, else pasta) */
  };

  typedef struct ohbox_run_opts
  {
    size_t size;
    const char *image;       /* reference, id or id prefix in the store (required) */
    const char *const *argv; /* NULL-terminated; NULL or empty: the image's command, and for a
                                runtime image its executor (see ohbox_action) */
    const char *const *env;  /* "K=V" over the image's (NULL-terminated or NULL) */
    const char *name;        /* NULL: none */
    const char *workdir;     /* NULL: the image's */
    const char *user;        /* "uid[:gid]" or "name[:group]"; NULL: the image's */
    /* true: return once the command runs (its output goes to the sandbox's
     * log); false: wait until it ended, its output on the caller's fds 1, 2. */
    bool detach;
    bool remove;        /* remove the sandbox when it ended (--rm) */
    int64_t memory;     /* bytes; 0: no limit */
    double cpus;        /* 0: no limit; 1.5: one and a half CPUs */
    int64_t pids_limit; /* 0: no limit */
    enum ohbox_net_mode network;
    /* A runtime image's executor (a runtime image is one ohbox_build_image or
     * `ohbox build` made in this store, never one that only says so): its
     * port, in the sandbox and on the host's 127.0.0.1 where it is published
     * (0: 8000 inside, a free port outside); its session API key (NULL: the
     * SESSION_API_KEY of ENV, else a new random one). */
    int executor_port;
    const char *api_key;
    /* Called with each warning about the run (a weaker setting, an ignored
     * option), before it starts; may be NULL. The library never prints. */
    void (*warn) (const char *message, void *data);
    void *warn_data;
    /* The writable layer holds at most this many bytes (at least 16 MiB);
     * writes past it fail with ENOSPC inside; 0: no limit. Root only (a
     * filesystem of its own on a loop device): ohbox-run(1) --storage-size. */
    int64_t storage_size;
    /* Devices, as ohbox-run(1) --device, --gpus and --cdi-spec-dir take them:
     * CDI names (VENDOR/CLASS=NAME, or =all) or HOSTPATH[:CTRPATH][:rwm]
     * (NULL-terminated or NULL); the CDI spec folders (NULL: /etc/cdi and
     * /var/run/cdi); GPUS "all", "N" or "device=ID[,ID]" (NULL: none). */
    const char *const *devices;
    const char *const *cdi_spec_dirs;
    const char *gpus;
    /* A network made with `ohbox network create` (root; NETWORK must be
     * DEFAULT or BRIDGE); NULL: ohbox0. */
    const char *network_name;
    /* Where a root bridge sandbox may connect, as `ohbox run --egress`:
     * "public" (NULL: the default: no private, shared, link-local or cloud
     * metadata addresses), "all", "none" (published ports only) or IPv4
     * ranges "A.B.C.D/N,..." besides the public ones. Weaker settings warn. */
    const char *egress;
    /* Set no_new_privs for the command (`--security-opt no-new-privileges`):
     * setuid programs (sudo) no longer gain anything. Default false, as Docker;
     * what they gain then stays inside the sandbox (ohbox-run(1), SETUID
     * PROGRAMS). */
    bool no_new_privileges;
  } ohbox_run_opts;

  /* Creates and starts a sandbox. *RET_ID (may be NULL) gets its id.
   * *RET_EXIT_CODE (may be NULL) gets 0 when detached, else the command's
   * exit status (128+N when killed by signal N); when the run failed it is
   * 125 (ohbox failed), 126 (not executable) or 127 (not found). */
  int ohbox_run (ohbox_ctx *ctx, const ohbox_run_opts *opts, char **ret_id, int *ret_exit_code, ohbox_err **err);
  /* What ohbox_run would do with OPTS, decided as `ohbox run` decides it,
   * without starting anything: *RET_JSON (may be NULL; free with ohbox_free)
   * gets the plan as the JSON object `ohbox run --dry-run` prints (network
   * mode and backend, the executor of a runtime image, process, limits,
   * security options, warnings; no secret). Fails as ohbox_run would before
   * the start (no image, a refused combination). */
  int ohbox_run_plan (ohbox_ctx *ctx, const ohbox_run_opts *opts, char **ret_json, ohbox_err **err);

  typedef struct ohbox_exec_opts
  {
    size_t size;
    const char *const *argv; /* NULL-terminated, not empty (required); argv[0] is looked up in PATH */
    const char *const *env;  /* "K=V" over the sandbox's environment (NULL-terminated or NULL) */
    const char *workdir;     /* NULL: the sandbox's */
    const char *user;        /* NULL: the sandbox's */
    /* true: the command's stdin, stdout and stderr are these fds (-1:
     * /dev/null); they are not closed. false: stdin /dev/null, and stdout
     * and stderr the caller's fds 1 and 2 (or captured). */
    bool use_fds;
    int stdin_fd, stdout_fd, stderr_fd;
    /* Collect stdout and stderr into the result (overrides stdout_fd and
     * stderr_fd), at most CAPTURE_MAX bytes each (0: 16 MiB); the rest is
     * read and dropped. */
    bool capture;
    size_t capture_max;
  } ohbox_exec_opts;

  typedef struct ohbox_exec_result ohbox_exec_result;
  /* Runs ARGV in the running sandbox ID (a name, id or unique id prefix),
   * joining all its namespaces, cgroup, capabilities and seccomp filter,
   * and waits for it. */
  int ohbox_exec (ohbox_ctx *ctx, const char *id, const ohbox_exec_opts *opts, ohbox_exec_result **ret,
                  ohbox_err **err);
  /* The command's exit status (128+N when killed by signal N). */
  int ohbox_exec_result_exit_code (const ohbox_exec_result *r);
  /* Captured output (NUL-terminated; *LEN may be NULL); "" without capture. */
  const char *ohbox_exec_result_stdout (const ohbox_exec_result *r, size_t *len);
  const char *ohbox_exec_result_stderr (const ohbox_exec_result *r, size_t *len);
  /* Whether output beyond capture_max was dropped. */
  bool ohbox_exec_result_truncated (const ohbox_exec_result *r);
  void ohbox_exec_result_free (ohbox_exec_result *r);

  /* SIGTERM (or the image's stop signal), then SIGKILL after TIMEOUT
   * seconds (< 0: 10); returns once the sandbox exited. */
  int ohbox_stop (ohbox_ctx *ctx, const char *id, int timeout, ohbox_err **err);
  /* Removes an exited sandbox; FORCE kills a running one first. */
  int ohbox_remove (ohbox_ctx *ctx, const char *id, bool force, ohbox_err **err);
  /* Waits until the sandbox exited; *RET_EXIT_CODE gets its exit code. */
  int ohbox_wait (ohbox_ctx *ctx, const char *id, int *ret_exit_code, ohbox_err **err);

  typedef struct ohbox_listing ohbox_listing;
  /* The sandboxes (ALL false: running and paused ones only). */
  int ohbox_list (ohbox_ctx *ctx, bool all, ohbox_listing **ret, ohbox_err **err);
  size_t ohbox_listing_count (const ohbox_listing *l);
  /* Fields of entry I (< count); NULL when it has none. */
  const char *ohbox_listing_id (const ohbox_listing *l, size_t i);
  const char *ohbox_listing_name (const ohbox_listing *l, size_t i);
  const char *ohbox_listing_image (const ohbox_listing *l, size_t i);
  /* "created", "running", "paused" or "exited". */
  const char *ohbox_listing_status (const ohbox_listing *l, size_t i);
  /* The exit code of an exited sandbox, else -1. */
  int ohbox_listing_exit_code (const ohbox_listing *l, size_t i);
  /* The whole list as the JSON array `ohbox ps --format json` prints. */
  const char *ohbox_listing_json (const ohbox_listing *l);
  void ohbox_listing_free (ohbox_listing *l);

  /* ---- the action protocol ---- */

  typedef struct ohbox_action_opts
  {
    size_t size;
    /* Seconds to wait for the executor to accept connections (it may still
     * be starting); 0: 10. */
    double connect_timeout;
    /* Seconds the request may take; 0: the action's "timeout" + 5, or 130. */
    double timeout;
  } ohbox_action_opts;

  /* Sends ACTION_JSON (an action object such as {"action": "run", "args":
   * {"command": "ls"}}, or the {"action": {...}} envelope) to the executor of
   * sandbox ID, a runtime image run without a command, with the session API
   * key it was started with (POST /execute_action). *RET_OBSERVATION gets the
   * observation JSON. The HTTP status of a refused action is in the error. */
  int ohbox_action (ohbox_ctx *ctx, const char *id, const char *action_json, const ohbox_action_opts *opts,
                    char **ret_observation, ohbox_err **err);

#ifdef __cplusplus
}
#endif

#endif
