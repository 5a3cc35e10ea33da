/* sandbox_internal.h: what sandbox.c, state.c and monitor.c share. */
#ifndef OHBOX_SANDBOX_INTERNAL_H
#define OHBOX_SANDBOX_INTERNAL_H

#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "sandbox/relay.h"
#include "sandbox/sandbox.h"
#include "sandbox/state.h"

struct ohbox_runtime
{
  struct ohbox_store *store;
  char *root;
  int dirfd;
  bool cg_detected;
  struct ohbox_cgroup_host cg;
};

/* The cgroup host, detected once per runtime. */
int ohbox_runtime_cgroup_host (struct ohbox_runtime *rt, const struct ohbox_cgroup_host **ret, ohbox_error_t *err);

/* ---- state.c ---- */
/* Held shared by each creation from its mkdir of STATE/.new-<id> to the
 * rename to STATE/<id>, exclusively by whoever removes a .new-<id>. */
#define OHBOX_STATE_CREATE_LOCK "create.lock"
/* Creates STATE/<new id> with monitor.lock held: *RET_DIRFD, *RET_LOCKFD. */
int ohbox_state_create (struct ohbox_runtime *rt, char id[OHBOX_ID_LEN + 1], int *ret_dirfd, int *ret_lockfd,
                        ohbox_error_t *err);
/* STATE/<id> is renamed to this prefix + <id> before it is removed. */
#define OHBOX_STATE_REMOVING ".rm-"
/* Whether STATE/NAME (a .new-<id>) was left by a creator that died. */
bool ohbox_state_half_created_stale (struct ohbox_runtime *rt, const char *name);
int ohbox_state_open (struct ohbox_runtime *rt, const char *id, int *ret_dirfd, ohbox_error_t *err);
/* Registers NAME for ID (OHBOX_ERR_USAGE when another sandbox has it). */
int ohbox_state_claim_name (struct ohbox_runtime *rt, const char *name, const char *id, ohbox_error_t *err);
/* A JSON object to or from STATE/<id>/FILE: for the records other modules
 * keep there (network.json, exec.json, executor.json); config.json and
 * state.json are the state module's (state.h). */
int ohbox_state_write_json (int dirfd, const char *file, json_t *j, ohbox_error_t *err);
/* A unix socket listening on NAME in the state directory DIRFD, mode
 * 0600 (SOCK_FLAGS: socket(2)'s type flags beside SOCK_STREAM), or -1. */
int ohbox_state_listen (int dirfd, const char *name, int sock_flags, int backlog, ohbox_error_t *err);
int ohbox_state_read_json (int dirfd, const char *file, json_t **ret, ohbox_error_t *err);
/* True while the monitor holds monitor.lock. */
bool ohbox_state_monitor_alive (int dirfd);
/* Blocks until the monitor released monitor.lock (it ended). *RET_CODE (may
 * be NULL) gets the exit code it wrote into the lock file, or -1: read
 * through the open lock file, so it works even after --rm removed it. */
int ohbox_state_wait_monitor (int dirfd, int *ret_code, ohbox_error_t *err);
/* Reconciles a sandbox whose monitor died; *RET_REMOVED when --rm removed it. */
int ohbox_state_reconcile (struct ohbox_runtime *rt, const char *id, int dirfd, bool *ret_removed, ohbox_error_t *err);
/* Removes everything of sandbox ID: cgroup, writable layer, name, state.
 * Waits for a teardown in progress (OHBOX_STATE_TEARDOWN_LOCK) first. */
int ohbox_state_remove (struct ohbox_runtime *rt, const char *id, ohbox_error_t *err);
/* The teardown (monitor.c): what is left to undo once a sandbox's exit is
 * recorded, its network (nft elements, leases, veth, pasta) and with --rm
 * the whole sandbox, is done by a process nobody waits for, which holds
 * this lock (exclusive) in the state directory while it works. A sandbox
 * whose monitor is gone, exited, with its network still active (or --rm)
 * and this lock free lost its teardown: reconcile and `ohbox check` finish
 * it. */
#define OHBOX_STATE_TEARDOWN_LOCK "teardown.lock"
/* Whether a teardown holds the lock of state directory DIRFD now. */
bool ohbox_state_teardown_busy (int dirfd);
/* The teardown's work, with its lock held by the caller: releases the
 * network; REMOVE: and everything else (ohbox_state_remove). */
int ohbox_state_teardown_locked (struct ohbox_runtime *rt, const char *id, int dirfd, bool remove, ohbox_error_t *err);
/* Forgets --name NAME of sandbox ID (when it still names ID). */
void ohbox_state_release_name (struct ohbox_runtime *rt, const char *id, const char *name);
/* The init's pidfd, checked against the start time recorded in state.json
 * (a recycled pid is never signalled); -1 with *RET_EXITED when it is gone. */
int ohbox_state_pidfd (int dirfd, bool *ret_exited, ohbox_error_t *err);
/* "starttime" of /proc/PID/stat (field 22), 0 when unreadable. */
unsigned long long ohbox_proc_starttime (pid_t pid);

/* ---- monitor.c ---- */
struct ohbox_monitor
{
  struct ohbox_runtime *rt;
  char *id;
  int dirfd;
  int lockfd; /* monitor.lock, closed by ohbox_monitor_run (before the teardown when it can) */
  pid_t pid;
  int pidfd;
  int log_fd;     /* read end of the command's stdout/stderr pipe, or -1 (foreground) */
  int tty_master; /* -t: the terminal master (also log_fd: output goes to stdout), or -1 */
  bool forward_signals;
  bool rm;
  struct ohbox_cgroup *cgroup;
  double started;            /* ohbox_monotonic () when the command started */
  double timeout;            /* seconds, 0: none (ohbox_run_options.timeout) */
  int line_fd[2];            /* on_output: read ends of the stdout and stderr pipes, or -1 */
  struct ohbox_relay *relay; /* foreground: the caller's terminals relayed (relay.h), or NULL */
  bool detached;             /* -d: output goes to the log, stdio is /dev/null */
  int attach_fd;             /* -d -t: the listening attach.sock (ohbox attach), or -1 */
  struct ohbox_network *net; /* its host ports, let go of by the teardown (may be NULL) */
  /* The caller's events (ohbox_run_options), foreground only. */
  void (*on_output) (int stream, const char *line, size_t len, void *data);
  void (*on_exited) (const struct ohbox_run_exit *exit, void *data);
  void *event_data;
  /* The devices' poststop hooks run once the sandbox is gone (a failure
   * is kept in state.json as "hook_warning"); NULL: none. */
  const struct ohbox_device_edits *devices;
};
/* Runs until the sandbox's init exited: logs, signals, exit status, cleanup
 * (--rm included). Returns the exit code (or -1 with ERR). */
int ohbox_monitor_run (struct ohbox_monitor *m, ohbox_error_t *err);
/* -d -t: listens on STATE/<id>/attach.sock (0600) for `ohbox attach`. */
int ohbox_monitor_attach_listen (int state_dirfd, ohbox_error_t *err);

/* exec.c: the sandbox ID (named WHAT by the user) is running, or a usage
 * error saying it is paused or what it is and NEEDS ("exec needs a running
 * sandbox"). */
int ohbox_sandbox_check_running (struct ohbox_runtime *rt, const char *id, const char *what, const char *needs,
                                 ohbox_error_t *err);

/* The attach protocol (attach.c, monitor.c): the monitor answers a
 * connection with one byte, ATTACH_OK with the terminal's master fd
 * (SCM_RIGHTS), or ATTACH_BUSY when another client is attached; the client
 * keeps the connection open for as long as it uses the terminal. */
#define OHBOX_ATTACH_SOCK "attach.sock"
#define OHBOX_ATTACH_OK 'O'
#define OHBOX_ATTACH_BUSY 'B'
#define OHBOX_ATTACH_DENIED 'D'

#endif
