/* lifecycle.c: create, run, start, kill and delete. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"

#include "sandbox/bundle.h"
#include "sandbox/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the monitor tells `create`: the init's pid, or why it failed. */
struct report
{
  int32_t pid;
  char text[2048];
};

struct monitor_ctx
{
  int report_fd;
  const char *fifo; /* NULL: start right away (run) */
  const char *dir;
  const char *id;
  const char *bundle;
  const struct ohbox_bundle *b;
  const char *pid_file;
  int stdio[3];               /* the container's: ours, or its terminal's slave */
  int master;                 /* process.terminal: the terminal's master, else -1 */
  const char *console_socket; /* where the master goes (NULL: run proxies it) */
  int lock_fd;                /* the container's directory, locked until its state is written */
  pid_t *holder;              /* --systemd-cgroup: the scope's first process, killed once the init is in */
};

static json_t *
annotations_json (const struct monitor_ctx *m)
{
  json_t *ann = json_object ();
  const struct oci_map *a = &m->b->config->annotations;
  for (size_t i = 0; i < a->n; i++)
    json_object_set_new (ann, a->keys[i], json_string (a->values[i]));
  return ann;
}

static int
write_state (const struct monitor_ctx *m, pid_t pid, ohbox_error_t *err)
{
  char when[64];
  time_t now = time (NULL);
  strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime (&now));
  json_t *ann = annotations_json (m);
  json_t *j = json_pack ("{s:s, s:s, s:I, s:I, s:s, s:o, s:s}", "ociVersion", OCI_RUNTIME_SPEC_VERSION, "id", m->id,
                         "pid", (json_int_t) pid, "starttime", (json_int_t) start_time (pid), "bundle", m->bundle,
                         "annotations", ann, "created", when);
  cleanup_free char *text = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  cleanup_close int dirfd = open (m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return ohbox_error_errno (err, "open `%s`", m->dir);
  /* What exec needs of the container: its process and the filter it got
   * (written before state.json, which says the container exists). */
  if (ohbox_write_file_atomic (dirfd, RUNC_CONFIG_COPY, m->b->config_text, m->b->config_len, 0600, err) < 0
      || (m->b->seccomp && ohbox_seccomp_filter_save (dirfd, RUNC_SECCOMP_FILE, m->b->seccomp, err) < 0)
      || ohbox_write_file_atomic (dirfd, "state.json", text, strlen (text), 0600, err) < 0)
    return -1;
  if (m->pid_file)
    {
      char buf[32];
      int n = snprintf (buf, sizeof buf, "%d", pid);
      if (ohbox_write_file_atomic (AT_FDCWD, m->pid_file, buf, (size_t) n, 0644, err) < 0)
        return -1;
    }
  return 0;
}

/* Points this process's stdin, stdout and stderr at /dev/null. */
static int
release_stdio (ohbox_error_t *err)
{
  cleanup_close int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0)
    return ohbox_error_errno (err, "open /dev/null");
  for (int fd = 0; fd < 3; fd++)
    if (dup2 (null, fd) < 0)
      return ohbox_error_errno (err, "dup2 /dev/null");
  return 0;
}

static int
run_hooks (const struct monitor_ctx *m, enum ohbox_hook_stage stage, pid_t pid, const char *status, ohbox_error_t *err)
{
  if (m->b->hooks.n_hooks == 0)
    return 0;
  json_t *st = json_pack ("{s:s, s:s, s:o}", "id", m->id, "bundle", m->bundle, "annotations", annotations_json (m));
  cleanup_free char *state = hook_state (st, status, pid);
  json_decref (st);
  return ohbox_device_hooks_run (&m->b->hooks, stage, state, err);
}

/* before_start of the container: the state is written, `create` learns the
 * pid, and (create) the container waits for `start`'s byte in the fifo,
 * or for its init to die (`kill` or `delete --force` before `start`). */
static int
wait_for_start (pid_t pid, void *data, ohbox_error_t *err)
{
  struct monitor_ctx *m = data;
  /* The init is in the scope: its holder is no longer needed there. */
  if (m->holder)
    runc_systemd_release_holder (m->holder);
  if (write_state (m, pid, err) < 0)
    return -1;
  /* The state is there: other commands may look (ours and `create`'s
   * copies of the fd share the lock: both go). */
  close (m->lock_fd);
  m->lock_fd = -1;
  /* The terminal goes to the engine before create returns, as runc's. */
  if (m->master >= 0 && m->console_socket)
    {
      int r = send_console (m->console_socket, m->master, err);
      close (m->master);
      m->master = -1;
      if (r < 0)
        return -1;
    }
  /* The hooks of create, from the host's namespaces, the container's
   * root at /proc/PID/root (as `ohbox run` runs its devices' hooks). */
  static const enum ohbox_hook_stage create_stages[] = { OHBOX_HOOK_PRESTART, OHBOX_HOOK_CREATE_RUNTIME,
                                                         OHBOX_HOOK_CREATE_CONTAINER };
  for (size_t i = 0; i < sizeof create_stages / sizeof create_stages[0]; i++)
    if (run_hooks (m, create_stages[i], pid, "created", err) < 0)
      return -1;
  if (m->fifo == NULL)
    return run_hooks (m, OHBOX_HOOK_START_CONTAINER, pid, "created", err);
  /* The container has its stdio: the monitor lets go of create's, which
   * the engine may read to the end before it takes create as done
   * (containerd's shim does with a terminal: the monitor's copies kept
   * `ctr run -t` waiting forever). Errors go through the report. */
  if (release_stdio (err) < 0)
    return -1;
  cleanup_close int fifo = open (m->fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  cleanup_close int pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
  if (fifo < 0 || pidfd < 0)
    return ohbox_error_errno (err, "open `%s`", m->fifo);
  struct report r = { .pid = pid };
  if (ohbox_write_all (m->report_fd, &r, sizeof r) < 0)
    return ohbox_error_errno (err, "report to create");
  struct pollfd p[2] = { { .fd = fifo, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
  for (;;)
    {
      if (poll (p, 2, -1) < 0 && errno != EINTR)
        return ohbox_error_errno (err, "poll");
      if (p[1].revents)
        return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the container's init died before start");
      char c;
      if (p[0].revents && read (fifo, &c, 1) == 1)
        return run_hooks (m, OHBOX_HOOK_START_CONTAINER, pid, "created", err);
    }
}

static int
status_of (int wstatus)
{
  return WIFEXITED (wstatus) ? WEXITSTATUS (wstatus) : 128 + WTERMSIG (wstatus);
}

/* The monitor (the forked child of `create`): starts the container and
 * exits once its process runs (or failed). Never returns. */
__attribute__ ((noreturn)) static void
monitor (struct ohbox_bundle *b, struct monitor_ctx *m)
{
  cleanup_error ohbox_error_t err = NULL;
  setsid ();
  struct ohbox_linux_proc proc;
  if (ohbox_bundle_start (b, m->id, m->stdio, wait_for_start, m, &proc, &err) < 0)
    {
      struct report r = { .pid = -1 };
      snprintf (r.text, sizeof r.text, "%s", err->msg);
      ohbox_write_all (m->report_fd, &r, sizeof r);
      _exit (1);
    }
  /* Started: poststart (a failure is a warning, as the spec says); the
   * init goes on without us, reaped by the engine's subreaper (conmon,
   * the shim) or PID 1, as runc's. */
  if (run_hooks (m, OHBOX_HOOK_POSTSTART, proc.pid, "running", &err) < 0)
    warn ("container `%s`: %s", m->id, err->msg);
  _exit (0);
}

/* Makes ROOT/ID with its fifo (create) for bundle B. */
static int
make_container (const char *id, struct monitor_ctx *m, char **ret_dir)
{
  if (!valid_id (id))
    return fail ("invalid container id `%s`", id ? id : "");
  /* With its parents, as runc: the shim's root (/run/containerd/runc/NS)
   * is made by the first runtime it runs. */
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_mkdir_p (AT_FDCWD, root_dir, 0700, &err) < 0)
    return fail ("create the state root `%s`: %s", root_dir, err->msg);
  /* Made under a name no id has, locked, then renamed into place: no
   * other command ever sees it unlocked without its state.json (which
   * they take for a create killed midway, and remove). */
  cleanup_free char *tmp = xasprintf ("%s/.new-XXXXXX", root_dir);
  if (mkdtemp (tmp) == NULL)
    return fail ("create a directory in `%s`: %s", root_dir, strerror (errno));
  m->lock_fd = open (tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (m->lock_fd < 0 || flock (m->lock_fd, LOCK_EX) < 0)
    {
      int rc = fail ("lock `%s`: %s", tmp, strerror (errno));
      rmdir (tmp);
      return rc;
    }
  char *dir = xasprintf ("%s/%s", root_dir, id);
  if (renameat2 (AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
    {
      int e = errno;
      int rc = e == EEXIST ? fail ("container `%s` already exists", id) : fail ("create `%s`: %s", dir, strerror (e));
      rmdir (tmp);
      free (dir);
      return rc;
    }
  m->dir = dir;
  m->id = id;
  *ret_dir = dir;
  return 0;
}

/* create: forks the monitor and waits until the container waits for
 * `start` (or failed). */
static int
create_monitor (struct ohbox_bundle *b, struct monitor_ctx *m, const char *fifo)
{
  int pv[2];
  if (pipe2 (pv, O_CLOEXEC) < 0)
    return fail ("pipe: %s", strerror (errno));
  m->fifo = fifo;
  m->report_fd = pv[1];
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    return fail ("fork: %s", strerror (errno));
  if (pid == 0)
    {
      close (pv[0]);
      monitor (b, m);
    }
  close (pv[1]);
  struct report r = { .pid = -1 };
  ssize_t n;
  do
    n = read (pv[0], &r, sizeof r);
  while (n < 0 && errno == EINTR);
  close (pv[0]);
  if (n == (ssize_t) sizeof r && r.pid > 0)
    return 0;
  while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
  r.text[sizeof r.text - 1] = '\0';
  return fail ("%s", n == (ssize_t) sizeof r ? r.text : "the container's monitor died during create");
}

/* process.terminal: a pseudo-terminal whose slave is the container's
 * stdio, its master for the engine (--console-socket) or, in `run`'s
 * foreground without one, proxied to ours. 0, or 1 once reported (fail). */
static int
open_terminal (const struct ohbox_bundle *b, bool run, struct monitor_ctx *m)
{
  const struct oci_process *p = b->config->process;
  if (!p->terminal)
    return m->console_socket ? fail ("--console-socket: the process has no terminal (process.terminal)") : 0;
  if (m->console_socket == NULL && !run)
    return fail ("process.terminal: create needs --console-socket (the terminal's master goes to the engine)");
  m->master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
  int slave = m->master < 0 || grantpt (m->master) < 0 || unlockpt (m->master) < 0
                ? -1
                : ioctl (m->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0)
    return fail ("allocate a pseudo-terminal: %s", strerror (errno));
  struct winsize ws = { .ws_row = (unsigned short) p->console_height, .ws_col = (unsigned short) p->console_width };
  if (p->has_console_size)
    ioctl (slave, TIOCSWINSZ, &ws);
  else
    ohbox_terminal_sync_size (m->master);
  m->stdio[0] = m->stdio[1] = m->stdio[2] = slave;
  return 0;
}

static void
close_terminal (struct monitor_ctx *m)
{
  if (m->master >= 0)
    close (m->master);
  if (m->stdio[0] > 2)
    close (m->stdio[0]);
  m->master = -1;
  m->stdio[0] = m->stdio[1] = m->stdio[2] = -1;
}

/* run: this process is the monitor; the container's status is ours. */
static int
run_foreground (struct ohbox_bundle *b, struct monitor_ctx *m)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_linux_proc proc;
  bool proxy = m->master >= 0 && m->console_socket == NULL;
  /* Proxied, the signals the terminal would send go to the container
   * (blocked from before it starts: none is lost meanwhile). */
  sigset_t block, old;
  sigemptyset (&block);
  static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
  for (size_t i = 0; proxy && i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset (&block, forwarded[i]);
  sigprocmask (SIG_BLOCK, &block, &old);
  cleanup_close int sigfd = proxy ? signalfd (-1, &block, SFD_CLOEXEC) : -1;
  int rc;
  if (proxy && sigfd < 0)
    rc = fail ("signalfd: %s", strerror (errno));
  else if (ohbox_bundle_start (b, m->id, m->stdio, wait_for_start, m, &proc, &err) < 0)
    rc = fail_err (&err);
  else
    {
      if (m->stdio[0] > 2)
        close (m->stdio[0]); /* the container's own now: the master sees its hangup */
      m->stdio[0] = m->stdio[1] = m->stdio[2] = -1;
      if (run_hooks (m, OHBOX_HOOK_POSTSTART, proc.pid, "running", &err) < 0)
        {
          warn ("container `%s`: %s", m->id, err->msg);
          ohbox_error_release (&err);
        }
      if (proxy)
        ohbox_terminal_proxy (m->master, proc.pidfd, sigfd, true, NULL, 0);
      int ws = 0;
      while (waitpid (proc.pid, &ws, 0) < 0 && errno == EINTR)
        ;
      close (proc.pidfd);
      rc = status_of (ws);
      if (run_hooks (m, OHBOX_HOOK_POSTSTOP, 0, "stopped", &err) < 0)
        warn ("container `%s`: %s", m->id, err->msg);
    }
  sigprocmask (SIG_SETMASK, &old, NULL);
  return rc;
}

/* Lets the created container ID (waiting on FIFO) start. */
static int
start_created (const char *id, const char *fifo)
{
  /* Non-blocking: ENXIO when its monitor no longer waits (gone). */
  cleanup_close int fd = open (fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 || write (fd, "0", 1) != 1)
    return fail ("start `%s`: the container does not wait for start (%s)", id, strerror (errno));
  unlink (fifo);
  return 0;
}

static int kill_and_wait (pid_t pid);

/* The init of the created container in DIR (its state's pid), if any, is killed. */
static void
kill_created (const char *dir)
{
  cleanup_free char *path = xasprintf ("%s/state.json", dir);
  json_t *st = json_load_file (path, 0, NULL);
  json_int_t pid = st ? json_integer_value (json_object_get (st, "pid")) : 0;
  json_decref (st);
  if (pid > 0)
    kill_and_wait ((pid_t) pid);
}

int
cmd_create_or_run (int argc, char **argv)
{
  bool run = strcmp (argv[0], "run") == 0;
  const char *bundle = ".", *pid_file = NULL, *console_socket = NULL;
  bool detach = false;
  int preserve_fds = 0;
  bool no_pivot = false;
  static const struct option opts[] = { { "bundle", required_argument, NULL, 'b' },
                                        { "pid-file", required_argument, NULL, 'p' },
                                        { "console-socket", required_argument, NULL, 'c' },
                                        { "preserve-fds", required_argument, NULL, 'f' },
                                        { "no-pivot", no_argument, NULL, 'P' },
                                        { "no-new-keyring", no_argument, NULL, 'k' },
                                        { "detach", no_argument, NULL, 'd' },
                                        { NULL, 0, NULL, 0 } };
  int c;
  while ((c = runc_next_option (argc, argv, "b:d", opts, 1, 1, NULL)) >= 0)
    switch (c)
      {
      case 'b':
        bundle = optarg;
        break;
      case 'p':
        pid_file = optarg;
        break;
      case 'd':
        detach = true;
        break;
      case 'k':
        break; /* ohbox makes no session keyring */
      case 'c':
        console_socket = optarg;
        break;
      case 'f':
        if (preserve_fds_parse (run ? "run" : "create", optarg, &preserve_fds) != 0)
          return 1;
        break;
      case 'P':
        no_pivot = true;
        break;
      }
  if (c == RUNC_OPT_FAILED)
    return 1;
  const char *id = argv[optind];
  /* run --detach is create then start (as runc's): it returns once the
   * container's process runs. */
  bool foreground = run && !detach;
  if (preserve_fds_check (run ? "run" : "create", preserve_fds) != 0)
    return 1;
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_bundle *b = NULL;
  if (!rootless && geteuid () != 0)
    return fail ("not root and --rootless false: run as root, or rootless (--rootless auto or true)");
  if (ohbox_bundle_load (bundle, &b, &err) < 0)
    return fail_err (&err);
  b->rootless = rootless;
  b->spec.preserve_fds = preserve_fds;
  b->spec.no_pivot = no_pivot;
  if (no_pivot)
    warn ("--no-pivot: the container's root is a chroot over the host's (moved there), weaker than pivot_root: "
          "a process of it with CAP_SYS_CHROOT can get out");
  cleanup_free char *pid_abs = pid_file && pid_file[0] != '/' ? realpath (".", NULL) : NULL;
  cleanup_free char *pid_path = pid_abs ? xasprintf ("%s/%s", pid_abs, pid_file) : NULL;
  struct monitor_ctx m = { .report_fd = -1,
                           .bundle = b->dir,
                           .b = b,
                           .pid_file = pid_path ? pid_path : pid_file,
                           .stdio = { 0, 1, 2 },
                           .master = -1,
                           .console_socket = console_socket,
                           .lock_fd = -1 };
  char *dir = NULL;
  if (open_terminal (b, foreground, &m) != 0 || make_container (id, &m, &dir) != 0)
    {
      if (m.lock_fd >= 0)
        close (m.lock_fd);
      close_terminal (&m);
      ohbox_bundle_free (b);
      return 1;
    }
  cleanup_free char *fifo = xasprintf ("%s/exec.fifo", dir);
  int rc;
  struct runc_cgroup cgroup = { 0 };
  m.holder = &cgroup.holder;
  if (runc_cgroup_create (b, id, m.lock_fd, &cgroup, &err) < 0)
    rc = fail_err (&err);
  else if (foreground)
    {
      /* In the foreground: this process is the monitor; the container's
       * status is ours; its state goes when it ends (as runc run). */
      rc = run_foreground (b, &m);
    }
  else if (mkfifo (fifo, 0600) < 0)
    rc = fail ("mkfifo `%s`: %s", fifo, strerror (errno));
  else
    {
      rc = create_monitor (b, &m, fifo);
      if (rc == 0 && run)
        rc = start_created (id, fifo);
    }
  runc_cgroup_release (&cgroup);
  /* A failed run --detach: its container goes, as a failed create's. */
  if (rc != 0 && run && detach)
    kill_created (dir);
  /* (The lock's fd went once the state was written: a new one.) */
  cleanup_close int dirfd = foreground || rc != 0 ? open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  /* (ERR may hold create's error, reported already) */
  cleanup_error ohbox_error_t rerr = NULL;
  if (dirfd >= 0 && runc_cgroup_remove (dirfd, &rerr) < 0)
    rc = fail_err (&rerr);
  if (foreground || rc != 0)
    remove_container (dir);
  close_terminal (&m);
  if (m.lock_fd >= 0)
    close (m.lock_fd);
  ohbox_bundle_free (b);
  free (dir);
  return rc;
}

int
cmd_start (int argc, char **argv)
{
  if (argc != 2)
    return fail_usage ();
  struct container c;
  int rc = container_open (argv[1], &c, 0);
  if (rc == 0 && strcmp (c.status, "created") != 0)
    rc = fail ("container `%s` is %s: only a created container can be started", argv[1], c.status);
  if (rc == 0)
    {
      cleanup_free char *fifo = xasprintf ("%s/exec.fifo", c.dir);
      rc = start_created (argv[1], fifo);
    }
  container_close (&c);
  return rc;
}

int
cmd_kill (int argc, char **argv)
{
  static const struct option opts[] = { { "all", no_argument, NULL, 'a' }, { NULL, 0, NULL, 0 } };
  int ch;
  bool all = false;
  while ((ch = runc_next_option (argc, argv, "a", opts, 1, 2, NULL)) == 'a')
    all = true;
  if (ch == RUNC_OPT_FAILED)
    return 1;
  int sig = SIGTERM;
  if (argc - optind == 2 && ohbox_signal_parse (argv[optind + 1], &sig) < 0)
    return fail ("kill: unknown signal `%s`", argv[optind + 1]);
  struct container c;
  int rc = container_open (argv[optind], &c, 0);
  if (rc == 0 && strcmp (c.status, "stopped") == 0)
    rc = fail ("container `%s` is not running", argv[optind]);
  cleanup_free pid_t *pids = NULL;
  size_t n = 0;
  if (rc == 0 && all && container_pids (&c, &pids, &n) < 0)
    rc = fail ("kill --all `%s`: list its processes: %s", argv[optind], strerror (errno));
  /* --all: every process of the container's pid namespace (its exec'd
   * ones too), the init last; one that ended meanwhile is no error. */
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (pids[i] != c.pid && kill (pids[i], sig) < 0 && errno != ESRCH)
      rc = fail ("kill `%s` (pid %d): %s", argv[optind], (int) pids[i], strerror (errno));
  if (rc == 0 && container_signal (&c, sig) < 0)
    rc = fail ("kill `%s`: %s", argv[optind], strerror (errno));
  container_close (&c);
  return rc;
}

/* Kills the container's init and waits until it is gone. */
static int
kill_and_wait (pid_t pid)
{
  cleanup_close int pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
  if (pidfd < 0)
    return errno == ESRCH ? 0 : -1;
  if (syscall (SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
    return -1;
  struct pollfd p = { .fd = pidfd, .events = POLLIN };
  while (poll (&p, 1, -1) < 0 && errno == EINTR)
    ;
  return 0;
}

int
cmd_delete (int argc, char **argv)
{
  bool force = false;
  static const struct option opts[] = { { "force", no_argument, NULL, 'f' }, { NULL, 0, NULL, 0 } };
  int ch;
  while ((ch = runc_next_option (argc, argv, "f", opts, 1, 1, NULL)) == 'f')
    force = true;
  if (ch == RUNC_OPT_FAILED)
    return 1;
  struct container c;
  int rc = container_open (argv[optind], &c, OPEN_STALE_OK);
  if (rc == 0 && c.stale)
    ; /* removed already */
  else if (rc == 0 && strcmp (c.status, "stopped") != 0)
    {
      cleanup_error ohbox_error_t terr = NULL;
      if (!force)
        rc = fail ("container `%s` is %s: stop it first or use --force", argv[optind], c.status);
      else if (runc_cgroup_thaw (c.dirfd, &terr) < 0)
        rc = fail ("delete `%s`: %s", argv[optind], terr->msg);
      else if (kill_and_wait (c.pid) < 0)
        rc = fail ("kill `%s`: %s", argv[optind], strerror (errno));
    }
  cleanup_error ohbox_error_t err = NULL;
  /* poststop: once it is stopped (a failure is a warning). */
  if (rc == 0 && !c.stale && container_hooks (&c, OHBOX_HOOK_POSTSTOP, "stopped", &err) < 0)
    {
      warn ("delete `%s`: %s", argv[optind], err->msg);
      ohbox_error_release (&err);
    }
  /* Whatever is left in its cgroup (processes of its own cgroups) goes with it. */
  if (rc == 0 && !c.stale && runc_cgroup_remove (c.dirfd, &err) < 0)
    rc = fail ("delete `%s`: %s", argv[optind], err->msg);
  if (rc == 0 && !c.stale)
    remove_container (c.dir);
  container_close (&c);
  return rc;
}
