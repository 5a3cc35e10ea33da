/* runc.h: what the files of ohbox-runc share: the global options, error
 * reporting (stderr and --log), the container state directories and the
 * commands, one group per file:
 *   main.c       global options, dispatch, logging
 *   state.c      ROOT/<id>/: ids, locking, status
 *   lifecycle.c  create, run, start, kill, delete
 *   query.c      state, list, ps, spec, features
 *   exec.c       exec
 *   console.c    --console-socket
 *   cgroup.c     the container's cgroup: pause, resume, update, events
 *   systemd.c    --systemd-cgroup: the cgroup as a systemd scope (sd-bus)
 *
 * State: ROOT/<id>/ (ROOT: --root, default /run/ohbox-runc), locked with
 * flock on the directory by every command that changes it:
 *   state.json  id, bundle, init pid and its start time, annotations, created
 *   exec.fifo   present while the container is created and not started: its
 *               monitor waits on it; `start` writes a byte into it
 *   config.json a copy of the bundle's, as the container was created from it
 *   seccomp.bpf the container's compiled seccomp filter (linux.seccomp)
 *   cgroup.json where its cgroup is (written before it is made), and its
 *               systemd scope's name under --systemd-cgroup
 *   paused      present while it is paused (its cgroup frozen)
 * (exec takes the last two: an exec'd process gets what the container got,
 * whatever happened to the bundle since)
 * The monitor is a process of the container's own (forked by `create`, or
 * the `run` process): the parent of the container's init until `start`
 * (linux.c kills the init if it dies before); after `create`'s start the
 * init is reparented to the engine's subreaper, as runc's. */
#ifndef OHBOX_RUNC_H
#define OHBOX_RUNC_H

#include "cgroup/cgroup.h"
#include "common/error.h"
#include "devices/devices.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* Global options (main.c). */
extern const char *root_dir;
extern const char *log_path;
extern bool log_json;
/* --rootless, decided as runc does (auto: not root, or in a user namespace):
 * no host privileges; cgroups only where delegated (cgroup.c). */
extern bool rootless;
/* --systemd-cgroup: containers get their cgroup as a systemd scope
 * (systemd.c); checked in main: systemd runs, the build has sd-bus. */
extern bool systemd_cgroup;
#define RUNC_NO_SD_BUS                                                                                                 \
  "--systemd-cgroup: this ohbox-runc was built without sd-bus (libsystemd-dev, found by configure): use the cgroupfs " \
  "manager (no --systemd-cgroup)"
/* Root of the initial user namespace (the host's privileges), whatever
 * --rootless says: the device cgroup is set whenever it can be. */
extern bool host_root;

/* An error as runc reports it: on stderr, and in --log (text or JSON lines,
 * which conmon and containerd read). Returns 1 (the exit status). */
__attribute__ ((format (printf, 1, 2))) int fail (const char *fmt, ...);
int fail_err (ohbox_error_t *err);
/* The same as a warning (the command goes on). */
__attribute__ ((format (printf, 1, 2))) void warn (const char *fmt, ...);
/* A line in --log with --debug only (not on stderr). */
__attribute__ ((format (printf, 1, 2))) void debug (const char *fmt, ...);

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
  const char *status; /* "created", "running", "paused", "stopped" */
  bool stale;         /* left by a create killed midway: removed by container_open */
};

/* Opens and locks the container ID and works out its status; on error
 * it has reported it (fail) and C is still to be closed. A directory a
 * create killed midway left is removed: with OPEN_STALE_OK that is no
 * error (C->stale), else "does not exist". */
#define OPEN_STALE_OK 1
int container_open (const char *id, struct container *c, int flags);
void container_close (struct container *c);
void remove_container (const char *dir);
/* The OCI state hooks get on stdin, from STATE (state.json's). */
char *hook_state (const json_t *state, const char *status, pid_t pid);
/* Runs the hooks of STAGE of the container's config (its state's copy). */
int container_hooks (const struct container *c, enum ohbox_hook_stage stage, const char *status, ohbox_error_t *err);
/* Sends SIG to C's init through a pidfd checked to still be it; -1 with errno. */
int container_signal (const struct container *c, int sig);
/* The pids of the processes in C's pid namespace (its init's), sorted;
 * -1 with errno. */
int container_pids (const struct container *c, pid_t **ret, size_t *n);

/* Commands: ARGV[0] is the command's name; main sets optind for their
 * getopt (which starts at ARGV[1]), and RUNC_USAGE to the command's usage
 * (the table in main.c, which --help prints). */
extern const char *runc_usage;
/* Reports the running command's usage (fail); returns 1. */
int fail_usage (void);
/* A command's option loop: the next option (getopt_long over ARGV; IDX
 * as its longindex, or NULL), -1 after the last when MIN to MAX arguments
 * follow them (MAX -1: no limit), else RUNC_OPT_FAILED: an option getopt
 * rejected or a wrong count, the usage reported (fail), the command
 * returns 1.
 *   while ((ch = runc_next_option (argc, argv, "f", opts, 1, 1, NULL)) == 'f')
 *     force = true;
 *   if (ch == RUNC_OPT_FAILED)
 *     return 1; */
#define RUNC_OPT_FAILED (-2)
struct option;
int runc_next_option (int argc, char **argv, const char *shortopts, const struct option *opts, int min, int max,
                      int *idx);
/* --preserve-fds N of CMD: ARG as N (0 to 1024), an error naming it otherwise. */
int preserve_fds_parse (const char *cmd, const char *arg, int *ret);
/* The fds 3 .. 3+N-1 handed over are open and reach the process (their
 * FD_CLOEXEC cleared); an error naming the first that is not open. */
int preserve_fds_check (const char *cmd, int n);

/* create and run (ARGV[0]) */
int cmd_create_or_run (int argc, char **argv);
int cmd_start (int argc, char **argv);
int cmd_kill (int argc, char **argv);
int cmd_delete (int argc, char **argv);
int cmd_state (int argc, char **argv);
int cmd_exec (int argc, char **argv);
int cmd_list (int argc, char **argv);
int cmd_ps (int argc, char **argv);
int cmd_spec (int argc, char **argv);
int cmd_features (int argc, char **argv);

/* cgroup.c: the container's cgroup. */
struct ohbox_bundle;
struct runc_cgroup
{
  char *parent, *name; /* as ohbox_bundle_cgroup_path (or runc_systemd_path) gives them */
  char *unit;          /* --systemd-cgroup: the scope's name, else NULL */
  pid_t holder;        /* the process the scope started with, until the init is in (systemd.c) */
  struct ohbox_cgroup_host host;
  bool detected;
  struct ohbox_cgroup *cg;
};
#define RUNC_CGROUP_FILE "cgroup.json"
/* Makes B's cgroup (with its limits) for the container ID whose state
 * directory is DIRFD (where cgroup.json says where it is): B's init
 * starts in it. */
int runc_cgroup_create (struct ohbox_bundle *b, const char *id, int dirfd, struct runc_cgroup *rc, ohbox_error_t *err);
/* The cgroup of the container whose state directory is DIRFD. */
int runc_cgroup_open (int dirfd, struct runc_cgroup *rc, ohbox_error_t *err);
/* Kills what is left in the cgroup of the container DIRFD and removes it
 * (none there: fine). */
int runc_cgroup_remove (int dirfd, ohbox_error_t *err);
void runc_cgroup_release (struct runc_cgroup *rc);
#define RUNC_PAUSED_FILE "paused"
/* Thaws the container DIRFD if it is paused (a frozen process does not
 * even die of SIGKILL). */
int runc_cgroup_thaw (int dirfd, ohbox_error_t *err);
/* pause and resume (ARGV[0]) */
int cmd_freeze (int argc, char **argv);
int cmd_update (int argc, char **argv);
int cmd_events (int argc, char **argv);

/* systemd.c: the scope of --systemd-cgroup. */
/* CGROUPS_PATH ("slice:prefix:name", NULL or "" for the default) into the
 * slice's cgroup directory (PARENT, "/a.slice/a-b.slice") and the scope's
 * name (UNIT); an error naming linux.cgroupsPath when it is not one. */
int runc_systemd_path (const char *cgroups_path, const char *id, char **parent, char **unit, ohbox_error_t *err);
/* Starts UNIT in PARENT's slice for the container ID with the limits of L
 * systemd knows (V2: a cgroup v2 memory controller), its first process a
 * holder (*HOLDER) whose cgroup, the scope's, goes in *CGROUP; waits until
 * systemd's job is done. */
int runc_systemd_start (const char *parent, const char *unit, const char *id, const struct ohbox_cgroup_limits *l,
                        bool v2, pid_t *holder, char **cgroup, ohbox_error_t *err);
/* Kills the holder (once the init is in the scope) and reaps it if it is
 * this process's child; *HOLDER becomes 0. */
void runc_systemd_release_holder (pid_t *holder);
/* Stops UNIT and waits; a unit systemd no longer has is no error. */
int runc_systemd_stop (const char *unit, ohbox_error_t *err);
/* Sets the limits of L systemd knows on UNIT (update). */
int runc_systemd_update (const char *unit, const struct ohbox_cgroup_limits *l, bool v2, ohbox_error_t *err);

/* console.c: sends the terminal's MASTER over the unix socket at PATH (as
 * runc does: one message with the fd as SCM_RIGHTS), for the engine. */
int send_console (const char *path, int master, ohbox_error_t *err);

#endif
