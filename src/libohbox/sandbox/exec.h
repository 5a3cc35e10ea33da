/* exec.h: `ohbox exec`: another process in a running sandbox.
 *
 * The process joins every namespace of the sandbox's init (setns(2) with
 * the init's pidfd, which joins them all at once on Linux >= 5.8; the
 * /proc/PID/ns files one by one otherwise), enters its cgroup before that,
 * and gets what the sandbox's command got: its capability sets (for its
 * user), no_new_privs, the seccomp profile compiled for the same
 * capabilities, its environment, working directory and user. Nothing of
 * the host is visible: the mount namespace's root is the sandbox's rootfs
 * (pivot_root made it so), and its /proc is the sandbox's.
 *
 * What the command got is recorded by `ohbox run` in STATE/<id>/exec.json
 * (ohbox_exec_record), since a process's seccomp filter and the options it
 * came from cannot be read back from the kernel without ptrace.
 *
 * Process tree: the caller forks a helper that enters the cgroup and the
 * namespaces, and the helper clones the command's process with CLONE_PARENT
 * (a new pid namespace only applies to children): the caller is its parent,
 * waits for it and forwards signals to it through its pidfd. */
#ifndef OHBOX_EXEC_H
#define OHBOX_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "cgroup/cgroup.h"
#include "sandbox/sandbox.h"
#include "security/capabilities.h"
#include "security/seccomp.h"

struct ohbox_exec_options
{
  char **argv;         /* NULL-terminated, not empty; argv[0] looked up in PATH */
  char **env;          /* K=V over the sandbox's environment (NULL-terminated or NULL) */
  const char *workdir; /* NULL: the sandbox's */
  const char *user;    /* "uid[:gid]" or "name[:group]"; NULL: the sandbox's */
  bool interactive;    /* -i: the command reads the caller's stdin (else /dev/null) */
  bool tty;            /* -t: a pseudo-terminal, proxied to the caller's fds 0 and 1 */
  /* -t: the key sequence that detaches (the command keeps running); NULL
   * or empty: none. Parsed with ohbox_exec_parse_detach_keys. */
  const char *detach_keys;
  /* Without -t: the command's stdin, stdout and stderr (three fds, each
   * may be -1 for /dev/null); NULL: the caller's 0 (with -i, else
   * /dev/null), 1 and 2. They are not closed. */
  const int *stdio;
  /* ohbox-runc exec: */
  bool detach;           /* return once the command runs (*RET_EXIT_CODE -1); it is not waited for */
  bool hand_master;      /* -t: the terminal's master goes to STARTED (to dup or send), not proxied */
  int preserve_fds;      /* the caller's fds 3 .. 3+N-1 (open, not CLOEXEC) stay open in the command */
  bool has_console_size; /* -t: this size instead of the caller's terminal's */
  unsigned short console_rows, console_cols;
  /* Called once the command runs (its execve succeeded), with its pid and
   * with HAND_MASTER the terminal's master (else -1). */
  int (*started) (pid_t pid, int master, void *data, ohbox_error_t *err);
  void *started_data;
};

/* Runs OPTS->argv in the running sandbox WHAT (name, id or id prefix) and
 * waits for it. *RET_EXIT_CODE gets its status (128+N when killed by signal
 * N; -1 when detached), or 125/126/127 with ERR set when it could not be
 * started / executed / found. A sandbox that is paused or not running is an
 * OHBOX_ERR_USAGE error saying what to do. While it runs, SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 of the caller are forwarded to it
 * (blocked in the caller meanwhile, restored before returning). */
int ohbox_sandbox_exec (struct ohbox_runtime *rt, const char *what, const struct ohbox_exec_options *opts,
                        int *ret_exit_code, ohbox_error_t *err);

/* A process in a container that is not an ohbox sandbox: an OCI bundle's
 * (ohbox-runc exec), whose process is described in full by its caller. */
struct ohbox_exec_target
{
  pid_t init;                              /* the container's init, as the host sees it */
  int init_pidfd;                          /* a pidfd of INIT */
  char **env;                              /* the whole environment (NULL-terminated); OPTS->env over it */
  const char *cwd;                         /* absolute; OPTS->workdir over it */
  const char *user;                        /* "uid:gid" */
  const struct ohbox_caps_sets *caps_sets; /* exactly these */
  const uint32_t *additional_gids;         /* the groups, exactly (not /etc/group's) */
  size_t n_additional_gids;
  bool no_new_privs;
  const struct ohbox_seccomp_filter *seccomp; /* NULL: none */
  const struct ohbox_cgroup *cgroup;          /* NULL: none of its own */
};
/* As ohbox_sandbox_exec, in the container of T. */
int ohbox_exec_join (const struct ohbox_exec_target *t, const struct ohbox_exec_options *opts, int *ret_exit_code,
                     ohbox_error_t *err);

/* attach.c: `ohbox attach`: the terminal of the command of a sandbox
 * started with `ohbox run -d -t`, which its monitor hands over (the master
 * fd, through STATE/<id>/attach.sock, to one client at a time) and takes
 * back when the client goes. Proxied as exec -t does (raw mode, window
 * size, DETACH_KEYS as for ohbox_sandbox_exec; NULL or "": none). Returns
 * when the user detached (*RET_EXIT_CODE -1) or the command exited
 * (*RET_EXIT_CODE its status). A sandbox without a terminal, not running,
 * paused, or with another client attached is an OHBOX_ERR_USAGE error. */
int ohbox_sandbox_attach (struct ohbox_runtime *rt, const char *what, const char *detach_keys, int *ret_exit_code,
                          ohbox_error_t *err);

/* What `ohbox run` gave the sandbox's command, for exec (exec.json). */
struct ohbox_exec_record
{
  char **env;       /* NULL-terminated */
  const char *cwd;  /* absolute */
  const char *user; /* NULL: root */
  uint64_t caps;
  uint64_t caps_added;
  bool no_new_privs;
  const char *seccomp_profile; /* NULL: the default; "unconfined"; or a path (made absolute) */
  /* The groups the devices brought (CDI additionalGids), which the init
   * gave its command besides the user's own: exec's processes get them too. */
  const uint32_t *additional_gids;
  size_t n_additional_gids;
};
int ohbox_exec_record (int state_dirfd, const struct ohbox_exec_record *rec, ohbox_error_t *err);
/* The compiled seccomp filter of the command, next to exec.json
 * (ohbox_seccomp_filter_save). */
#define OHBOX_EXEC_SECCOMP_FILE "seccomp.bpf"

/* "ctrl-p,ctrl-q" (Docker's syntax: ctrl-a..ctrl-z, ctrl-@, ctrl-[, ctrl-\\,
 * ctrl-], ctrl-^, ctrl-_, or single characters) to bytes in BUF (at most
 * MAX); returns the length, or -1 with an OHBOX_ERR_USAGE error. */
int ohbox_exec_parse_detach_keys (const char *spec, char *buf, size_t max, ohbox_error_t *err);

/* ---- terminal.c: the caller's side of a -t session ---- */

/* Copies stdin (when STDIN_OPEN) to MASTER and MASTER to stdout until the
 * process behind PIDFD exited and its output is drained; puts a terminal
 * stdin in raw mode and restores it on every return; sets the window size
 * from stdout's (or stdin's) terminal at start and on SIGWINCH; forwards
 * the signals SIGFD (a signalfd) reports to PIDFD. An EOF on a stdin that
 * is not a terminal sends the terminal's EOF character (^D) once the
 * command printed nothing for 100 ms.
 * Returns 1 when the user typed DETACH (of length N_DETACH, 0: never),
 * else 0. */
int ohbox_terminal_proxy (int master, int pidfd, int sigfd, bool stdin_open, const char *detach, size_t n_detach);
/* Sets MASTER's window size from the caller's terminal, if any. */
void ohbox_terminal_sync_size (int master);

/* Bounds on what exec.json and the caller may hand in. */
#define OHBOX_EXEC_RECORD_MAX (4 * 1024 * 1024)
#define OHBOX_EXEC_MAX_DETACH_KEYS 16

#endif
