/* runc.h: what the files of ohbox-runc share: the global options, error
 * reporting (stderr and --log), the container state directories and the
 * commands, one group per file:
 *   main.c       global options, dispatch, logging
 *   state.c      ROOT/<id>/: ids, locking, status
 *   lifecycle.c  create, run, start, kill, delete
 *   query.c      state
 *   exec.c       exec
 *   console.c    --console-socket
 *
 * State: ROOT/<id>/ (ROOT: --root, default /run/ohbox-runc), locked with
 * flock on the directory by every command that changes it:
 *   state.json  id, bundle, init pid and its start time, annotations, created
 *   exec.fifo   present while the container is created and not started: its
 *               monitor waits on it; `start` writes a byte into it
 *   config.json a copy of the bundle's, as the container was created from it
 *   seccomp.bpf the container's compiled seccomp filter (linux.seccomp)
 * (exec takes the last two: an exec'd process gets what the container got,
 * whatever happened to the bundle since)
 * The monitor is a process of the container's own (forked by `create`, or
 * the `run` process): the parent of the container's init until `start`
 * (linux.c kills the init if it dies before); after `create`'s start the
 * init is reparented to the engine's subreaper, as runc's. */
#ifndef OHBOX_RUNC_H
#define OHBOX_RUNC_H

#include "common/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* Global options (main.c). */
extern const char *root_dir;
extern const char *log_path;
extern bool log_json;

/* An error as runc reports it: on stderr, and in --log (text or JSON lines,
 * which conmon and containerd read). Returns 1 (the exit status). */
__attribute__ ((format (printf, 1, 2))) int fail (const char *fmt, ...);
int fail_err (ohbox_error_t *err);

#define RUNC_CONFIG_COPY "config.json"
#define RUNC_SECCOMP_FILE "seccomp.bpf"

/* state.c */
bool valid_id (const char *id);
/* The start time of PID (field 22 of /proc/PID/stat), 0 when it is gone:
 * with the pid, it names the process (a pid is reused). */
unsigned long long start_time (pid_t pid);

struct container
{
  char *dir;
  int dirfd; /* locked */
  json_t *state;
  pid_t pid;
  const char *status; /* "created", "running", "stopped" */
};

/* Opens and locks the container ID and works out its status; on error
 * it has reported it (fail) and C is still to be closed. */
int container_open (const char *id, struct container *c);
void container_close (struct container *c);
void remove_container (const char *dir);

/* Commands: ARGV[0] is the command's name. */
int cmd_create_or_run (int argc, char **argv, bool run);
int cmd_start (int argc, char **argv);
int cmd_kill (int argc, char **argv);
int cmd_delete (int argc, char **argv);
int cmd_state (int argc, char **argv);
int cmd_exec (int argc, char **argv);

/* console.c: sends the terminal's MASTER over the unix socket at PATH (as
 * runc does: one message with the fd as SCM_RIGHTS), for the engine. */
int send_console (const char *path, int master, ohbox_error_t *err);

#endif
