/* ohbox-runc: runc's command line over libohbox (sandbox/bundle.c), for
 * the engines that drive an OCI runtime (podman --runtime, containerd's
 * BinaryName, Docker's runtimes).
 *
 * State: ROOT/<id>/ (ROOT: --root, default /run/ohbox-runc), locked with
 * flock on the directory by every command that changes it:
 *   state.json  id, bundle, init pid and its start time, annotations, created
 *   exec.fifo   present while the container is created and not started: its
 *               monitor waits on it; `start` writes a byte into it
 * The monitor is a process of the container's own (forked by `create`, or
 * the `run` process): the parent of the container's init until `start`
 * (linux.c kills the init if it dies before); after `create`'s start the
 * init is reparented to the engine's subreaper, as runc's. */
#include "config.h"
#include "sandbox/bundle.h"
#include "common/utils.h"

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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *root_dir = "/run/ohbox-runc";
static const char *log_path;
static bool log_json;

/* An error as runc reports it: on stderr, and in --log (text or JSON lines,
 * which conmon and containerd read). */
__attribute__ ((format (printf, 1, 2))) static int
fail (const char *fmt, ...)
{
  char msg[4096];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  fprintf (stderr, "ohbox-runc: %s\n", msg);
  cleanup_file FILE *f = log_path ? fopen (log_path, "ae") : NULL;
  if (f)
    {
      char when[64];
      time_t now = time (NULL);
      strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime (&now));
      if (log_json)
        {
          json_t *j = json_pack ("{s:s, s:s, s:s}", "level", "error", "msg", msg, "time", when);
          char *line = j ? json_dumps (j, JSON_COMPACT) : NULL;
          if (line)
            fprintf (f, "%s\n", line);
          free (line);
          json_decref (j);
        }
      else
        {
          json_t *s = json_string (msg);
          char *quoted = s ? json_dumps (s, JSON_ENCODE_ANY) : NULL;
          fprintf (f, "time=\"%s\" level=error msg=%s\n", when, quoted ? quoted : "\"?\"");
          free (quoted);
          json_decref (s);
        }
    }
  return 1;
}

static int
fail_err (ohbox_error_t *err)
{
  return fail ("%s", (*err)->msg);
}

static bool
valid_id (const char *id)
{
  if (id == NULL || id[0] == '\0' || id[0] == '.' || strlen (id) > 1024)
    return false;
  return strspn (id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+") == strlen (id);
}

/* The start time of PID (field 22 of /proc/PID/stat), 0 when it is gone:
 * with the pid, it names the process (a pid is reused). */
static unsigned long long
start_time (pid_t pid)
{
  char path[64], buf[1024];
  snprintf (path, sizeof path, "/proc/%d/stat", pid);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read (fd, buf, sizeof buf - 1) : -1;
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *p = strrchr (buf, ')');
  unsigned long long t = 0;
  /* After the comm: state is field 3 (a zombie has ended), starttime field 22. */
  if (p == NULL || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X')
    return 0;
  if (sscanf (p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &t) != 1)
    return 0;
  return t;
}

struct container
{
  char *dir;
  int dirfd; /* locked */
  json_t *state;
  pid_t pid;
  const char *status; /* "created", "running", "stopped" */
};

static void
container_close (struct container *c)
{
  if (c->dirfd >= 0)
    close (c->dirfd);
  json_decref (c->state);
  free (c->dir);
}

/* Opens and locks the container ID and works out its status. */
static int
container_open (const char *id, struct container *c)
{
  memset (c, 0, sizeof *c);
  c->dirfd = -1;
  if (!valid_id (id))
    return fail ("invalid container id `%s`", id ? id : "");
  c->dir = xasprintf ("%s/%s", root_dir, id);
  c->dirfd = open (c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c->dirfd < 0)
    return fail ("container `%s` does not exist", id);
  if (flock (c->dirfd, LOCK_EX) < 0)
    return fail ("lock `%s`: %s", c->dir, strerror (errno));
  json_error_t je;
  cleanup_free char *path = xasprintf ("%s/state.json", c->dir);
  c->state = json_load_file (path, 0, &je);
  json_int_t pid = 0, st = 0;
  if (c->state == NULL || json_unpack (c->state, "{s:I, s:I}", "pid", &pid, "starttime", &st) < 0)
    return fail ("container `%s`: its state is unreadable (%s)", id, je.text);
  c->pid = (pid_t) pid;
  if (pid <= 0 || start_time (c->pid) != (unsigned long long) st)
    c->status = "stopped";
  else
    c->status = faccessat (c->dirfd, "exec.fifo", F_OK, 0) == 0 ? "created" : "running";
  return 0;
}

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
  const struct oci_map *annotations;
  const char *pid_file;
};

static int
write_state (const struct monitor_ctx *m, pid_t pid, ohbox_error_t *err)
{
  char when[64];
  time_t now = time (NULL);
  strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime (&now));
  json_t *ann = json_object ();
  for (size_t i = 0; i < m->annotations->n; i++)
    json_object_set_new (ann, m->annotations->keys[i], json_string (m->annotations->values[i]));
  json_t *j = json_pack ("{s:s, s:s, s:I, s:I, s:s, s:o, s:s}", "ociVersion", OCI_RUNTIME_SPEC_VERSION, "id", m->id,
                         "pid", (json_int_t) pid, "starttime", (json_int_t) start_time (pid), "bundle", m->bundle,
                         "annotations", ann, "created", when);
  cleanup_free char *text = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  cleanup_close int dirfd = open (m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0 || ohbox_write_file_atomic (dirfd, "state.json", text, strlen (text), 0600, err) < 0)
    return dirfd < 0 ? ohbox_error_errno (err, "open `%s`", m->dir) : -1;
  if (m->pid_file)
    {
      char buf[32];
      int n = snprintf (buf, sizeof buf, "%d", pid);
      if (ohbox_write_file_atomic (AT_FDCWD, m->pid_file, buf, (size_t) n, 0644, err) < 0)
        return -1;
    }
  return 0;
}

/* before_start of the container: the state is written, `create` learns the
 * pid, and (create) the container waits for `start`'s byte in the fifo,
 * or for its init to die (`kill` or `delete --force` before `start`). */
static int
wait_for_start (pid_t pid, void *data, ohbox_error_t *err)
{
  struct monitor_ctx *m = data;
  if (write_state (m, pid, err) < 0)
    return -1;
  if (m->fifo == NULL)
    return 0;
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
        return 0;
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
  static const int stdio[3] = { 0, 1, 2 };
  if (ohbox_bundle_start (b, m->id, stdio, wait_for_start, m, &proc, &err) < 0)
    {
      struct report r = { .pid = -1 };
      snprintf (r.text, sizeof r.text, "%s", err->msg);
      ohbox_write_all (m->report_fd, &r, sizeof r);
      _exit (1);
    }
  /* Started: the init goes on without us, reaped by the engine's
   * subreaper (conmon, the shim) or PID 1, as runc's. */
  _exit (0);
}

static void
remove_container (const char *dir)
{
  cleanup_free char *state = xasprintf ("%s/state.json", dir);
  cleanup_free char *fifo = xasprintf ("%s/exec.fifo", dir);
  unlink (state);
  unlink (fifo);
  rmdir (dir);
}

/* Makes ROOT/ID with its fifo (create) for bundle B. */
static int
make_container (const char *id, struct monitor_ctx *m, char **ret_dir)
{
  if (!valid_id (id))
    return fail ("invalid container id `%s`", id ? id : "");
  if (mkdir (root_dir, 0700) < 0 && errno != EEXIST)
    return fail ("create the state root `%s`: %s", root_dir, strerror (errno));
  char *dir = xasprintf ("%s/%s", root_dir, id);
  if (mkdir (dir, 0700) < 0)
    {
      int e = errno;
      int rc = e == EEXIST ? fail ("container `%s` already exists", id) : fail ("create `%s`: %s", dir, strerror (e));
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

static int
cmd_create_or_run (int argc, char **argv, bool run)
{
  const char *bundle = ".", *pid_file = NULL;
  bool detach = false;
  static const struct option opts[] = { { "bundle", required_argument, NULL, 'b' },
                                        { "pid-file", required_argument, NULL, 'p' },
                                        { "console-socket", required_argument, NULL, 'c' },
                                        { "preserve-fds", required_argument, NULL, 'f' },
                                        { "no-pivot", no_argument, NULL, 'P' },
                                        { "no-new-keyring", no_argument, NULL, 'k' },
                                        { "detach", no_argument, NULL, 'd' },
                                        { NULL, 0, NULL, 0 } };
  int c;
  optind = 1;
  while ((c = getopt_long (argc, argv, "b:d", opts, NULL)) != -1)
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
        return fail ("--console-socket: a terminal is not supported by ohbox-runc yet");
      case 'f':
        if (strcmp (optarg, "0") != 0)
          return fail ("--preserve-fds: passing fds is not supported by ohbox-runc yet");
        break;
      case 'P':
        return fail ("--no-pivot: not supported (ohbox always uses pivot_root)");
      default:
        return fail ("usage: %s --bundle DIR [--pid-file FILE] ID", run ? "run" : "create");
      }
  if (optind + 1 != argc)
    return fail ("usage: %s --bundle DIR [--pid-file FILE] ID", run ? "run" : "create");
  const char *id = argv[optind];
  if (run && detach)
    return fail ("run --detach: not supported by ohbox-runc yet (use create and start)");
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_bundle *b = NULL;
  if (ohbox_bundle_load (bundle, &b, &err) < 0)
    return fail_err (&err);
  cleanup_free char *pid_abs = pid_file && pid_file[0] != '/' ? realpath (".", NULL) : NULL;
  cleanup_free char *pid_path = pid_abs ? xasprintf ("%s/%s", pid_abs, pid_file) : NULL;
  struct monitor_ctx m = { .report_fd = -1,
                           .bundle = b->dir,
                           .annotations = &b->config->annotations,
                           .pid_file = pid_path ? pid_path : pid_file };
  char *dir = NULL;
  if (make_container (id, &m, &dir) < 0)
    {
      ohbox_bundle_free (b);
      return 1;
    }
  cleanup_free char *fifo = xasprintf ("%s/exec.fifo", dir);
  int rc;
  if (run)
    {
      /* In the foreground: this process is the monitor; the container's
       * status is ours; its state goes when it ends (as runc run). */
      struct ohbox_linux_proc proc;
      static const int stdio[3] = { 0, 1, 2 };
      if (ohbox_bundle_start (b, id, stdio, wait_for_start, &m, &proc, &err) < 0)
        rc = fail_err (&err);
      else
        {
          int ws = 0;
          while (waitpid (proc.pid, &ws, 0) < 0 && errno == EINTR)
            ;
          close (proc.pidfd);
          rc = status_of (ws);
        }
    }
  else if (mkfifo (fifo, 0600) < 0)
    rc = fail ("mkfifo `%s`: %s", fifo, strerror (errno));
  else
    rc = create_monitor (b, &m, fifo);
  if (run || rc != 0)
    remove_container (dir);
  ohbox_bundle_free (b);
  free (dir);
  return rc;
}

static int
cmd_start (int argc, char **argv)
{
  if (argc != 2)
    return fail ("usage: start ID");
  struct container c;
  int rc = container_open (argv[1], &c);
  if (rc == 0 && strcmp (c.status, "created") != 0)
    rc = fail ("container `%s` is %s: only a created container can be started", argv[1], c.status);
  if (rc == 0)
    {
      cleanup_free char *fifo = xasprintf ("%s/exec.fifo", c.dir);
      /* Non-blocking: ENXIO when its monitor no longer waits (gone). */
      cleanup_close int fd = open (fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0 || write (fd, "0", 1) != 1)
        rc = fail ("start `%s`: the container does not wait for start (%s)", argv[1], strerror (errno));
      else
        unlink (fifo);
    }
  container_close (&c);
  return rc;
}

static int
cmd_state (int argc, char **argv)
{
  if (argc != 2)
    return fail ("usage: state ID");
  struct container c;
  int rc = container_open (argv[1], &c);
  if (rc == 0)
    {
      json_t *out = json_deep_copy (c.state);
      json_object_del (out, "starttime");
      json_object_set_new (out, "status", json_string (c.status));
      if (strcmp (c.status, "stopped") == 0)
        json_object_set_new (out, "pid", json_integer (0));
      char *text = json_dumps (out, JSON_INDENT (2));
      printf ("%s\n", text);
      free (text);
      json_decref (out);
    }
  container_close (&c);
  return rc;
}

static int
cmd_kill (int argc, char **argv)
{
  optind = 1;
  static const struct option opts[] = { { "all", no_argument, NULL, 'a' }, { NULL, 0, NULL, 0 } };
  int ch;
  while ((ch = getopt_long (argc, argv, "a", opts, NULL)) != -1)
    if (ch == 'a')
      return fail ("kill --all: not supported by ohbox-runc yet");
    else
      return fail ("usage: kill ID [SIGNAL]");
  if (argc - optind < 1 || argc - optind > 2)
    return fail ("usage: kill ID [SIGNAL]");
  int sig = SIGTERM;
  if (argc - optind == 2 && ohbox_signal_parse (argv[optind + 1], &sig) < 0)
    return fail ("kill: unknown signal `%s`", argv[optind + 1]);
  struct container c;
  int rc = container_open (argv[optind], &c);
  if (rc == 0 && strcmp (c.status, "stopped") == 0)
    rc = fail ("container `%s` is not running", argv[optind]);
  if (rc == 0 && kill (c.pid, sig) < 0)
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

static int
cmd_delete (int argc, char **argv)
{
  bool force = false;
  optind = 1;
  static const struct option opts[] = { { "force", no_argument, NULL, 'f' }, { NULL, 0, NULL, 0 } };
  int ch;
  while ((ch = getopt_long (argc, argv, "f", opts, NULL)) != -1)
    if (ch == 'f')
      force = true;
    else
      return fail ("usage: delete [--force] ID");
  if (argc - optind != 1)
    return fail ("usage: delete [--force] ID");
  struct container c;
  int rc = container_open (argv[optind], &c);
  if (rc == 0 && strcmp (c.status, "stopped") != 0)
    {
      if (!force)
        rc = fail ("container `%s` is %s: stop it first or use --force", argv[optind], c.status);
      else if (kill_and_wait (c.pid) < 0)
        rc = fail ("kill `%s`: %s", argv[optind], strerror (errno));
    }
  if (rc == 0)
    remove_container (c.dir);
  container_close (&c);
  return rc;
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = { { "root", required_argument, NULL, 'r' },
                                        { "log", required_argument, NULL, 'l' },
                                        { "log-format", required_argument, NULL, 'F' },
                                        { "debug", no_argument, NULL, 'D' },
                                        { "systemd-cgroup", no_argument, NULL, 's' },
                                        { "rootless", required_argument, NULL, 'R' },
                                        { "help", no_argument, NULL, 'h' },
                                        { "version", no_argument, NULL, 'v' },
                                        { NULL, 0, NULL, 0 } };
  int c;
  /* Global options stop at the command ("+"): its own options follow it. */
  while ((c = getopt_long (argc, argv, "+hv", opts, NULL)) != -1)
    switch (c)
      {
      case 'r':
        root_dir = optarg;
        break;
      case 'l':
        log_path = optarg;
        break;
      case 'F':
        if (strcmp (optarg, "json") != 0 && strcmp (optarg, "text") != 0)
          return fail ("--log-format: `%s`: text or json", optarg);
        log_json = strcmp (optarg, "json") == 0;
        break;
      case 'D':
        break;
      case 's':
        return fail ("--systemd-cgroup: not supported by ohbox-runc yet");
      case 'R':
        if (strcmp (optarg, "false") != 0 && strcmp (optarg, "auto") != 0)
          return fail ("--rootless: rootless containers are not supported by ohbox-runc yet");
        break;
      case 'v':
        printf ("ohbox-runc version %s\nspec: %s\n", PACKAGE_VERSION, OCI_RUNTIME_SPEC_VERSION);
        return 0;
      case 'h':
        printf ("usage: ohbox-runc [--root DIR] [--log FILE] [--log-format text|json] COMMAND ...\n"
                "commands: create, start, run, state, kill, delete\n");
        return 0;
      default:
        return fail ("usage: ohbox-runc [--root DIR] [--log FILE] [--log-format text|json] COMMAND ...");
      }
  if (optind >= argc)
    return fail ("no command given (create, start, run, state, kill, delete)");
  const char *cmd = argv[optind];
  argc -= optind;
  argv += optind;
  if (strcmp (cmd, "create") == 0 || strcmp (cmd, "run") == 0)
    return cmd_create_or_run (argc, argv, strcmp (cmd, "run") == 0);
  if (strcmp (cmd, "start") == 0)
    return cmd_start (argc, argv);
  if (strcmp (cmd, "state") == 0)
    return cmd_state (argc, argv);
  if (strcmp (cmd, "kill") == 0)
    return cmd_kill (argc, argv);
  if (strcmp (cmd, "delete") == 0)
    return cmd_delete (argc, argv);
  return fail ("`%s`: not supported by ohbox-runc", cmd);
}
