/* exec.c: `ohbox exec`: another process in a running sandbox; see exec.h.
 *
 *   caller (ohbox exec)          helper (fork)                command (clone CLONE_PARENT)
 *   state, exec.json, seccomp,   non-dumpable, cgroup enter,
 *   pty, signalfd                setns(init pidfd, NEW*)  ->  setsid, stdio, ctty, user
 *   <- "P" pid or "E" error      _exit                        lookup in the sandbox's /,
 *   pidfd_open(pid), proxy /                                  caps, chdir, seccomp, execve
 *   wait; its errors before execve come over a CLOEXEC pipe (EOF: it ran). */
#include "config.h"
#include "sandbox/exec_internal.h"
#include "security/capabilities.h"
#include "sandbox/linux.h"
#include "sandbox/relay.h"
#include "sandbox/sandbox_internal.h"
#include "security/seccomp.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>

int
ohbox_exec_record (int state_dirfd, const struct ohbox_exec_record *rec, ohbox_error_t *err)
{
  json_t *env = json_array ();
  for (size_t i = 0; rec->env && rec->env[i]; i++)
    json_array_append_new (env, json_string (rec->env[i]));
  cleanup_free char *profile = NULL;
  if (rec->seccomp_profile && strcmp (rec->seccomp_profile, "unconfined") != 0)
    {
      /* exec may run from another directory: keep the path it was read from. */
      profile = realpath (rec->seccomp_profile, NULL);
      if (profile == NULL)
        {
          json_decref (env);
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "seccomp profile `%s`", rec->seccomp_profile);
        }
    }
  else if (rec->seccomp_profile)
    profile = xstrdup (rec->seccomp_profile);
  json_t *j = json_pack ("{s:o, s:s, s:s?, s:I, s:I, s:b, s:s?}", "env", env, "cwd", rec->cwd, "user", rec->user,
                         "caps", (json_int_t) rec->caps, "caps_added", (json_int_t) rec->caps_added, "no_new_privs",
                         rec->no_new_privs, "seccomp", profile);
  if (rec->n_additional_gids > 0)
    {
      json_t *gids = json_array ();
      for (size_t i = 0; i < rec->n_additional_gids; i++)
        json_array_append_new (gids, json_integer (rec->additional_gids[i]));
      json_object_set_new (j, "additional_gids", gids);
    }
  int r = ohbox_state_write_json (state_dirfd, "exec.json", j, err);
  json_decref (j);
  return r;
}

int
ohbox_exec_parse_detach_keys (const char *spec, char *buf, size_t max, ohbox_error_t *err)
{
  size_t n = 0;
  cleanup_free char *s = xstrdup (spec);
  char *save = NULL;
  for (char *k = strtok_r (s, ",", &save); k; k = strtok_r (NULL, ",", &save))
    {
      int c = -1;
      if (strlen (k) == 1)
        c = (unsigned char) k[0];
      else if (strncmp (k, "ctrl-", 5) == 0 && strlen (k) == 6)
        {
          char x = k[5];
          if (x >= 'a' && x <= 'z')
            c = x - 'a' + 1;
          else if (x >= 'A' && x <= 'Z')
            c = x - 'A' + 1;
          else if (x == '@')
            c = 0;
          else if (x >= '[' && x <= '_')
            c = x - '@';
        }
      if (c < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "invalid detach key `%s` in `%s`: use ctrl-A..ctrl-Z, ctrl-@, ctrl-[, ctrl-\\, ctrl-], "
                            "ctrl-^, ctrl-_ or a single character, separated by commas",
                            k, spec);
      if (n >= max)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many detach keys in `%s` (at most %zu)", spec, max);
      buf[n++] = (char) c;
    }
  return (int) n;
}

/* ---- what the sandbox's command got ---- */

static void
exec_plan_release (struct exec_plan *p)
{
  ohbox_strv_free (p->env);
  free (p->additional_gids);
  free (p->cwd);
  free (p->user);
  free (p->seccomp_profile);
}

/* The caller's options over what the process gets; N: P->env's length. */
static int
plan_add_options (const struct ohbox_exec_options *o, struct exec_plan *p, size_t n, bool set_term, ohbox_error_t *err)
{
  if (p->cwd[0] != '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "working directory `%s` is not an absolute path", p->cwd);
  if (o->tty && set_term)
    ohbox_strv_env_set (&p->env, &n, "TERM=xterm");
  for (size_t i = 0; o->env && o->env[i]; i++)
    {
      if (n >= OHBOX_SANDBOX_MAX_ENV)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many environment variables (at most %d)",
                            OHBOX_SANDBOX_MAX_ENV);
      if (strchr (o->env[i], '=') == NULL || o->env[i][0] == '=')
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid environment variable `%s`: use KEY=VALUE", o->env[i]);
      ohbox_strv_env_set (&p->env, &n, o->env[i]);
    }
  if (p->env == NULL)
    p->env = xcalloc (1, sizeof (char *));
  return 0;
}

/* The devices' groups (absent in the exec.json of a sandbox without them,
 * or of one started before exec knew them). */
static int
load_additional_gids (json_t *gids, struct exec_plan *p, ohbox_error_t *err)
{
  if (gids == NULL)
    return 0;
  if (!json_is_array (gids) || json_array_size (gids) > OHBOX_EXEC_MAX_GROUPS)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "exec.json: `additional_gids` is not an array of at most %d ids",
                        OHBOX_EXEC_MAX_GROUPS);
  p->additional_gids = xcalloc (json_array_size (gids) + 1, sizeof (uint32_t));
  size_t i;
  json_t *x;
  json_array_foreach (gids, i, x)
  {
    json_int_t g = json_integer_value (x);
    if (!json_is_integer (x) || g < 0 || g >= (json_int_t) UINT32_MAX)
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "exec.json: `additional_gids[%zu]` is not a group id", i);
    p->additional_gids[p->n_additional_gids++] = (uint32_t) g;
  }
  return 0;
}

static int
load_plan (int dfd, const struct ohbox_exec_options *o, struct exec_plan *p, ohbox_error_t *err)
{
  json_t *j = NULL;
  size_t n = 0;
  if (ohbox_state_read_json (dfd, "exec.json", &j, err) < 0)
    return ohbox_error_hint (err, "the sandbox was started by an ohbox without exec; start it again");
  json_t *env = json_object_get (j, "env"), *x;
  size_t i;
  int r = 0;
  if (!json_is_array (env) || json_array_size (env) > OHBOX_SANDBOX_MAX_ENV)
    r = ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "exec.json: `env` is not an array of at most %d strings",
                     OHBOX_SANDBOX_MAX_ENV);
  else
    json_array_foreach (env, i, x) if (json_is_string (x)) ohbox_strv_env_set (&p->env, &n, json_string_value (x));
  const char *cwd = json_string_value (json_object_get (j, "cwd"));
  const char *user = json_string_value (json_object_get (j, "user"));
  const char *sc = json_string_value (json_object_get (j, "seccomp"));
  p->cwd = xstrdup (o->workdir ? o->workdir : cwd ? cwd : "/");
  if (o->user)
    p->user = xstrdup (o->user);
  else if (user)
    p->user = xstrdup (user);
  p->caps = (uint64_t) json_integer_value (json_object_get (j, "caps"));
  p->caps_added = (uint64_t) json_integer_value (json_object_get (j, "caps_added"));
  p->no_new_privs = json_is_true (json_object_get (j, "no_new_privs"));
  p->unconfined = sc && strcmp (sc, "unconfined") == 0;
  p->seccomp_profile = sc && !p->unconfined ? xstrdup (sc) : NULL;
  if (r == 0)
    r = load_additional_gids (json_object_get (j, "additional_gids"), p, err);
  json_decref (j);
  if (r < 0)
    return -1;
  return plan_add_options (o, p, n, true, err);
}

/* ---- namespaces ---- */

/* The user namespace first: the others are checked against it. */
const struct exec_ns exec_namespaces[N_NS] = {
  { "user", CLONE_NEWUSER }, { "mnt", CLONE_NEWNS },  { "pid", CLONE_NEWPID },       { "uts", CLONE_NEWUTS },
  { "ipc", CLONE_NEWIPC },   { "net", CLONE_NEWNET }, { "cgroup", CLONE_NEWCGROUP },
};

/* A child of PARENT: the sandbox's command (dumpable once it ran execve,
 * unlike the init, whose /proc/PID/ns an unprivileged caller cannot see). */
static pid_t
find_child (pid_t parent)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/task/%d/children", (int) parent, (int) parent);
  char buf[64];
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read (fd, buf, sizeof buf - 1);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return (pid_t) atoi (buf);
}

/* Which of the sandbox's namespaces differ from ours (setns into one's own
 * user namespace is EINVAL; into the host's network namespace, from inside
 * the sandbox's user namespace, EPERM), and with FDS (may be NULL) open
 * fds of them for the fallback without pidfd. *RET_REF: the process whose
 * namespaces those are (INIT, or its child when an unprivileged caller may
 * not look at the non-dumpable init). */
static int
ns_plan (pid_t init, pid_t *ret_ref, int *ret_flags, int fds[N_NS], ohbox_error_t *err)
{
  pid_t ref = init;
  char path[64];
  struct stat st;
  snprintf (path, sizeof path, "/proc/%d/ns/user", (int) init);
  if (stat (path, &st) < 0)
    {
      ref = find_child (init);
      snprintf (path, sizeof path, "/proc/%d/ns/user", (int) ref);
      if (ref <= 0 || stat (path, &st) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "look at the namespaces of the sandbox's init (pid %d)",
                                (int) init);
    }
  int flags = 0;
  for (size_t i = 0; i < N_NS; i++)
    {
      struct stat mine, theirs;
      char self[64];
      snprintf (path, sizeof path, "/proc/%d/ns/%s", (int) ref, exec_namespaces[i].name);
      snprintf (self, sizeof self, "/proc/self/ns/%s", exec_namespaces[i].name);
      if (stat (path, &theirs) < 0)
        {
          if (errno == ENOENT)
            continue; /* the kernel has no such namespace */
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "stat `%s`", path);
        }
      if (stat (self, &mine) == 0 && mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev)
        continue;
      flags |= exec_namespaces[i].flag;
      if (fds)
        {
          fds[i] = open (path, O_RDONLY | O_CLOEXEC);
          if (fds[i] < 0)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", path);
        }
    }
  *ret_flags = flags;
  *ret_ref = ref;
  return 0;
}

/* Rootless, setns through the init's pidfd is refused (EPERM): the init
 * made itself non-dumpable before its execve, so its mm still belongs to
 * the host's user namespace, where we have no CAP_SYS_PTRACE. Its child,
 * the sandbox's command, ran execve inside the sandbox's user namespace,
 * which the caller owns: we join through it. A pidfd of REF, checked to be
 * INIT's child after it was opened (so the pid was not reused meanwhile). */
static int
ref_pidfd_open (pid_t init, pid_t ref, ohbox_error_t *err)
{
  int fd = (int) syscall (SYS_pidfd_open, ref, 0);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pidfd_open the sandbox's command (pid %d)", (int) ref);
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/status", (int) ref);
  cleanup_free char *text = NULL;
  size_t len;
  ohbox_error_t e = NULL;
  const char *pp = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, 64 * 1024, &text, &len, &e) == 0)
    pp = strstr (text, "\nPPid:\t");
  ohbox_error_release (&e);
  if (pp == NULL || atoi (pp + 7) != (int) init)
    {
      close (fd);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the sandbox's command (pid %d) exited while exec joined it",
                          (int) ref);
    }
  return fd;
}

/* ---- the caller ---- */

int
ohbox_sandbox_check_running (struct ohbox_runtime *rt, const char *id, const char *what, const char *needs,
                             ohbox_error_t *err)
{
  cleanup_sandbox_info struct ohbox_sandbox_info info = { 0 };
  if (ohbox_sandbox_inspect_info (rt, id, &info, err) < 0)
    return -1;
  int r = 0;
  if (info.status == OHBOX_STATUS_PAUSED)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%s` is paused: run `ohbox unpause %s` first", what, what);
  else if (info.status != OHBOX_STATUS_RUNNING)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%s` is not running (%s): %s", what,
                     ohbox_status_name (info.status), needs);
  return r;
}

/* Reads FD to EOF into BUF (at most MAX - 1 bytes kept, NUL-terminated). */
static size_t
read_report (int fd, char *buf, size_t max)
{
  size_t len = 0;
  for (;;)
    {
      char tmp[512];
      ssize_t n = read (fd, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      size_t k = (size_t) n < max - 1 - len ? (size_t) n : max - 1 - len;
      memcpy (buf + len, tmp, k);
      len += k;
    }
  buf[len] = '\0';
  return len;
}

/* The helper's report: one message (with the terminal's master as
 * SCM_RIGHTS with -t), then EOF. */
static size_t
read_helper_report (int sock, char *buf, size_t max, int *ret_fd)
{
  ssize_t n = ohbox_recv_with_fd (sock, buf, max - 1, ret_fd);
  if (n <= 0)
    {
      buf[0] = '\0';
      return 0;
    }
  return (size_t) n + read_report (sock, buf + n, max - (size_t) n);
}

/* "E<code> <kind> <message>" from a child into ERR and *RET_CODE. */
static int
report_error (const char *msg, int *ret_code, ohbox_error_t *err)
{
  int code = OHBOX_EXIT_RUNTIME, kind = OHBOX_ERR_GENERIC, off = 0;
  if (msg[0] != 'E' || sscanf (msg + 1, "%d %d %n", &code, &kind, &off) < 2 || off == 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the exec helper died before the command ran");
  *ret_code = code;
  return ohbox_error (err, kind, 0, "%s", msg + 1 + off);
}

static int
status_to_code (int status)
{
  if (WIFSIGNALED (status))
    return 128 + WTERMSIG (status);
  return WEXITSTATUS (status);
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

#define RELAY_BUF 16384

/* Without a terminal: wait for the command, forwarding signals and
 * relaying the caller's terminals (relay.h). */
static void
wait_forwarding (int pidfd, int sigfd, struct ohbox_relay *relay)
{
  cleanup_free char *buf = ohbox_relay_active (relay) ? xmalloc (RELAY_BUF) : NULL;
  for (;;)
    {
      struct pollfd p[5] = { { .fd = pidfd, .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
      int n = 2;
      ohbox_relay_poll (relay, p, &n);
      if (poll (p, n, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          break;
        }
      if (buf)
        ohbox_relay_handle (relay, p, buf, RELAY_BUF);
      if (p[0].revents)
        break;
      struct signalfd_siginfo si;
      if (p[1].revents && read (sigfd, &si, sizeof si) == (ssize_t) sizeof si && si.ssi_signo != SIGWINCH)
        syscall (SYS_pidfd_send_signal, pidfd, (int) si.ssi_signo, NULL, 0);
    }
  /* What it wrote last; processes it left behind that still hold its
   * output are not waited for. */
  if (buf)
    ohbox_relay_finish (relay, buf, RELAY_BUF, 100);
}

/* -t, detached: a holder keeps the terminal open until the command ends
 * (closing the master would hang it up). */
static void
hold_terminal (int master, int pidfd)
{
  pid_t pid = fork ();
  if (pid != 0)
    {
      if (pid > 0)
        waitpid (pid, NULL, 0);
      return;
    }
  setsid ();
  if (fork () != 0)
    _exit (0);
  /* Only the master (as fd 0) and the pidfd (as fd 1) stay open. */
  int m = fcntl (master, F_DUPFD_CLOEXEC, 3), pf = fcntl (pidfd, F_DUPFD_CLOEXEC, 3);
  if (m < 0 || pf < 0 || dup2 (m, 0) < 0 || dup2 (pf, 1) < 0)
    _exit (1);
  close_range (2, ~0U, 0);
  struct pollfd p = { .fd = 1, .events = POLLIN };
  while (poll (&p, 1, -1) < 0 && errno == EINTR)
    ;
  _exit (0);
}

/* The helper starts in the sandbox's v2 cgroup when there is one
 * (CLONE_INTO_CGROUP): a move through cgroup.procs would wait for an RCU
 * grace period (~10 ms); the v1 hierarchies it joins itself through
 * `tasks`, which does not.  Plain fork where clone3 cannot do that, and in
 * a process that has started threads (a program embedding libohbox, or
 * ohbox_exec's own capture thread): a raw clone3 skips what glibc's fork
 * does for the child (its locks, its thread state), and the child could
 * wait forever on a lock another thread held at that instant. */
static pid_t
fork_helper (const struct ohbox_cgroup *cg, bool *in_v2)
{
  *in_v2 = false;
  int cgfd = cg && __libc_single_threaded ? ohbox_cgroup_clone_fd (cg) : -1;
  if (cgfd >= 0)
    {
      struct clone_args args;
      memset (&args, 0, sizeof args);
      args.flags = CLONE_INTO_CGROUP;
      args.exit_signal = SIGCHLD;
      args.cgroup = (uint64_t) cgfd;
      pid_t pid = (pid_t) syscall (SYS_clone3, &args, sizeof args);
      if (pid >= 0)
        {
          *in_v2 = true;
          return pid;
        }
      if (errno != ENOSYS && errno != E2BIG && errno != EINVAL)
        return -1;
    }
  return fork ();
}

/* What one `ohbox exec` holds, released in one place (exec_run_release). */
struct exec_run
{
  struct exec_plan plan;
  struct ohbox_seccomp_filter *seccomp;
  struct ohbox_cgroup *cg;
  int ns_fds[N_NS];
  int ns_flags;
  int stdio[3];
  struct ohbox_relay relay;
  int master, sigfd, cmd_pidfd, ref_pidfd;
  int hp[2]; /* helper -> caller */
  int cp[2]; /* command -> caller */
  pid_t cmd;
  sigset_t block, old;
  bool blocked;
};

static void
exec_run_init (struct exec_run *x)
{
  memset (x, 0, sizeof *x);
  for (size_t i = 0; i < N_NS; i++)
    x->ns_fds[i] = -1;
  x->stdio[0] = x->stdio[1] = x->stdio[2] = -1;
  ohbox_relay_init (&x->relay);
  x->master = x->sigfd = x->cmd_pidfd = x->ref_pidfd = -1;
  x->hp[0] = x->hp[1] = x->cp[0] = x->cp[1] = -1;
  x->cmd = -1;
}

static void
exec_run_release (struct exec_run *x)
{
  if (x->cmd > 0)
    {
      kill (x->cmd, SIGKILL);
      waitpid (x->cmd, NULL, 0);
    }
  int fds[] = { x->cmd_pidfd, x->ref_pidfd, x->sigfd };
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (fds[i] >= 0)
      close (fds[i]);
  if (x->blocked)
    {
      /* Signals that came in after the command ended were forwarded to
       * nobody: drop them rather than act on them when unblocking. */
      struct timespec zero = { 0, 0 };
      while (sigtimedwait (&x->block, NULL, &zero) > 0)
        ;
      sigprocmask (SIG_SETMASK, &x->old, NULL);
    }
  for (int i = 0; i < 2; i++)
    {
      if (x->hp[i] >= 0)
        close (x->hp[i]);
      if (x->cp[i] >= 0)
        close (x->cp[i]);
    }
  for (int i = 0; i < 3; i++)
    if (x->stdio[i] > 2)
      close (x->stdio[i]);
  ohbox_relay_close (&x->relay);
  if (x->master >= 0)
    close (x->master);
  for (size_t i = 0; i < N_NS; i++)
    if (x->ns_fds[i] >= 0)
      close (x->ns_fds[i]);
  ohbox_cgroup_free (x->cg);
  ohbox_seccomp_filter_free (x->seccomp);
  exec_plan_release (&x->plan);
}

/* The sandbox WHAT names, running: its state directory and its init. */
static int
exec_find_init (struct ohbox_runtime *rt, const char *what, char **ret_id, int *ret_dfd, int *ret_init_pidfd,
                pid_t *ret_init, ohbox_error_t *err)
{
  if (ohbox_sandbox_resolve (rt, what, ret_id, err) < 0
      || ohbox_sandbox_check_running (rt, *ret_id, what, "exec needs a running sandbox; start one with `ohbox run -d`",
                                      err)
           < 0)
    return -1;
  if (ohbox_state_open (rt, *ret_id, ret_dfd, err) < 0)
    return -1;
  bool exited = false;
  *ret_init_pidfd = ohbox_state_pidfd (*ret_dfd, &exited, err);
  if (*ret_init_pidfd < 0)
    {
      if (*err == NULL)
        ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%s` is not running (exited): exec needs a running sandbox",
                     what);
      return -1;
    }
  struct ohbox_sandbox_record rec;
  if (ohbox_state_load_record (*ret_dfd, &rec, err) < 0)
    return -1;
  *ret_init = rec.pid;
  ohbox_sandbox_record_clear (&rec);
  return 0;
}

/* What the command gets: the plan, the namespaces to join, the seccomp
 * filter and the cgroup of the sandbox. */
static int
exec_prepare (struct ohbox_runtime *rt, const char *id, int dfd, const struct ohbox_exec_options *o, struct exec_run *x,
              ohbox_error_t *err)
{
  if (load_plan (dfd, o, &x->plan, err) < 0)
    return -1;
  /* The filter the sandbox started with (ohbox_exec_record); compiled
   * again only for a sandbox an older ohbox started. */
  if (!x->plan.unconfined && ohbox_seccomp_filter_load (dfd, OHBOX_EXEC_SECCOMP_FILE, &x->seccomp) < 0)
    {
      cleanup_free char *cache = xasprintf ("%s/seccomp-cache", rt->root);
      struct ohbox_seccomp_options so = { .caps = x->plan.caps, .cache_dir = cache };
      if (ohbox_seccomp_compile_file (x->plan.seccomp_profile, &so, &x->seccomp, err) < 0)
        return -1;
    }
  const struct ohbox_cgroup_host *cgh;
  if (ohbox_runtime_cgroup_host (rt, &cgh, err) < 0)
    return -1;
  if (ohbox_cgroup_open (cgh, id, &x->cg, err) < 0)
    {
      /* A sandbox without a cgroup (none could be made on this host). */
      if ((*err)->kind != OHBOX_ERR_NOT_FOUND)
        return -1;
      ohbox_error_release (err);
      x->cg = NULL;
    }
  return 0;
}

/* The namespaces of INIT to join (those of its command where they differ). */
static int
exec_plan_ns (pid_t init, struct exec_run *x, ohbox_error_t *err)
{
  pid_t ref = init;
  if (ns_plan (init, &ref, &x->ns_flags, x->ns_fds, err) < 0)
    return -1;
  if (ref != init && (x->ref_pidfd = ref_pidfd_open (init, ref, err)) < 0)
    return -1;
  return 0;
}

/* The command's stdio without -t (with -t the helper makes a terminal). */
static int
exec_stdio (const struct ohbox_exec_options *o, struct exec_run *x, ohbox_error_t *err)
{
  if (o->tty)
    return 0;
  if (o->stdio)
    {
      /* Duplicates above 2 (closed below), /dev/null for -1. */
      for (int i = 0; i < 3; i++)
        {
          x->stdio[i] = o->stdio[i] >= 0 ? fcntl (o->stdio[i], F_DUPFD_CLOEXEC, 3)
                                         : open ("/dev/null", (i ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
          if (x->stdio[i] < 0)
            return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "the command's fd %d", i);
        }
    }
  else
    {
      x->stdio[0] = o->interactive ? 0 : open ("/dev/null", O_RDONLY | O_CLOEXEC);
      if (x->stdio[0] < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open /dev/null");
      x->stdio[1] = 1;
      x->stdio[2] = 2;
    }
  /* Without -t the caller's terminal is never the command's (detached,
   * nobody relays: what the caller hands in goes through as it is). */
  return o->detach ? 0 : ohbox_relay_setup (&x->relay, x->stdio, err);
}

/* The reports' channels, and the signals to forward blocked from before
 * the fork: a signal meanwhile is forwarded, not lost. */
static int
exec_channels (struct exec_run *x, ohbox_error_t *err)
{
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->hp) < 0 || pipe2 (x->cp, O_CLOEXEC) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
  sigemptyset (&x->block);
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset (&x->block, forwarded[i]);
  sigaddset (&x->block, SIGWINCH);
  sigprocmask (SIG_BLOCK, &x->block, &x->old);
  x->blocked = true;
  x->sigfd = signalfd (-1, &x->block, SFD_CLOEXEC);
  if (x->sigfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "signalfd");
  return 0;
}

/* Forks the helper (exec_child.c), which joins the sandbox and clones the
 * command; on return x->cmd runs the command (x->cmd_pidfd, x->master). */
static int
exec_spawn (const struct ohbox_exec_options *o, int init_pidfd, struct exec_run *x, int *ret_exit_code,
            ohbox_error_t *err)
{
  struct child_ctx c = {
    .o = o,
    .plan = &x->plan,
    .seccomp = x->seccomp,
    .cgroup = x->cg,
    .pidfd = x->ref_pidfd >= 0 ? x->ref_pidfd : init_pidfd,
    .ns_flags = x->ns_flags,
    .ns_fds = x->ns_fds,
    .stdio = { x->stdio[0], x->stdio[1], x->stdio[2] },
    .tty = o->tty,
    .sigmask = x->old,
    .helper_fd = x->hp[1],
    .cmd_fd = x->cp[1],
  };
  c.has_ws = o->tty && (o->has_console_size || ioctl (1, TIOCGWINSZ, &c.ws) == 0 || ioctl (0, TIOCGWINSZ, &c.ws) == 0);
  if (o->tty && o->has_console_size)
    {
      c.ws.ws_row = o->console_rows;
      c.ws.ws_col = o->console_cols;
    }
  pid_t helper = fork_helper (x->cg, &c.in_v2_cgroup);
  if (helper < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fork");
  if (helper == 0)
    ohbox_exec_helper_main (&c);
  close (steal_fd (&x->hp[1]));
  close (steal_fd (&x->cp[1]));
  char msg[EXEC_MSG_MAX];
  read_helper_report (x->hp[0], msg, sizeof msg, &x->master);
  waitpid (helper, NULL, 0);
  if (msg[0] != 'P' || (o->tty && x->master < 0))
    return report_error (msg, ret_exit_code, err);
  x->cmd = (pid_t) atoi (msg + 1);
  /* Our child (CLONE_PARENT), not reaped yet: its pid cannot be reused. */
  x->cmd_pidfd = (int) syscall (SYS_pidfd_open, x->cmd, 0);
  if (read_report (x->cp[0], msg, sizeof msg) > 0)
    {
      waitpid (x->cmd, NULL, 0);
      x->cmd = -1;
      return report_error (msg, ret_exit_code, err);
    }
  if (x->cmd_pidfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pidfd_open the command's process");
  return 0;
}

/* Relays the terminal or forwards signals until the command exits (its
 * status in *RET_EXIT_CODE) or the user detaches (-1); with O->detach
 * returns once it runs (-1). */
static int
exec_wait (const struct ohbox_exec_options *o, struct exec_run *x, const char *detach, int n_detach, int *ret_exit_code,
           ohbox_error_t *err)
{
  if (o->started && o->started (x->cmd, o->hand_master ? x->master : -1, o->started_data, err) < 0)
    return -1;
  if (o->detach)
    {
      if (x->master >= 0 && !o->hand_master)
        hold_terminal (x->master, x->cmd_pidfd);
      *ret_exit_code = -1;
      x->cmd = -1; /* reaped by whoever inherits it */
      return 0;
    }
  /* Only the command (and its children) may hold the terminal now: the
   * master sees EOF once they are gone. */
  for (int i = 0; i < 3; i++)
    if (x->stdio[i] > 2)
      close (x->stdio[i]);
  x->stdio[0] = x->stdio[1] = x->stdio[2] = -1;
  if (x->master >= 0 && !o->hand_master)
    {
      if (ohbox_terminal_proxy (x->master, x->cmd_pidfd, x->sigfd, o->interactive, detach, (size_t) n_detach) == 1)
        {
          hold_terminal (x->master, x->cmd_pidfd);
          *ret_exit_code = -1;
          x->cmd = -1; /* reaped by whoever inherits it */
          return 0;
        }
    }
  else
    wait_forwarding (x->cmd_pidfd, x->sigfd, &x->relay);
  int status = 0;
  while (waitpid (x->cmd, &status, 0) < 0 && errno == EINTR)
    ;
  x->cmd = -1;
  *ret_exit_code = status_to_code (status);
  return 0;
}

/* What both entry points check before anything else. */
static int
check_options (const struct ohbox_exec_options *o, ohbox_error_t *err)
{
  size_t argc = ohbox_strv_len (o->argv);
  if (argc == 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "no command: give one after the sandbox's name or id");
  if (argc > OHBOX_SANDBOX_MAX_ARGS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many arguments (at most %d)", OHBOX_SANDBOX_MAX_ARGS);
  if (o->preserve_fds < 0 || o->preserve_fds > 1024)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "preserve-fds: %d is not between 0 and 1024", o->preserve_fds);
  return 0;
}

/* The command of O in the namespaces of INIT with X's plan, filter and
 * cgroup: stdio, spawn, wait (or return at once when detached). */
static int
exec_start (pid_t init, int init_pidfd, const struct ohbox_exec_options *o, struct exec_run *x, int *ret_exit_code,
            ohbox_error_t *err)
{
  char detach[OHBOX_EXEC_MAX_DETACH_KEYS];
  int n_detach = 0;
  if (o->tty && o->detach_keys && *o->detach_keys && !o->detach
      && (n_detach = ohbox_exec_parse_detach_keys (o->detach_keys, detach, sizeof detach, err)) < 0)
    return -1;
  if (exec_plan_ns (init, x, err) < 0 || exec_stdio (o, x, err) < 0 || exec_channels (x, err) < 0
      || exec_spawn (o, init_pidfd, x, ret_exit_code, err) < 0)
    return -1;
  return exec_wait (o, x, detach, n_detach, ret_exit_code, err);
}

int
ohbox_sandbox_exec (struct ohbox_runtime *rt, const char *what, const struct ohbox_exec_options *o, int *ret_exit_code,
                    ohbox_error_t *err)
{
  *ret_exit_code = OHBOX_EXIT_RUNTIME;
  if (check_options (o, err) < 0)
    return -1;
  cleanup_free char *id = NULL;
  cleanup_close int dfd = -1;
  cleanup_close int init_pidfd = -1;
  pid_t init;
  if (exec_find_init (rt, what, &id, &dfd, &init_pidfd, &init, err) < 0)
    return -1;
  struct exec_run x;
  exec_run_init (&x);
  int r = -1;
  if (exec_prepare (rt, id, dfd, o, &x, err) == 0)
    r = exec_start (init, init_pidfd, o, &x, ret_exit_code, err);
  exec_run_release (&x);
  return r;
}

int
ohbox_exec_join (const struct ohbox_exec_target *t, const struct ohbox_exec_options *o, int *ret_exit_code,
                 ohbox_error_t *err)
{
  *ret_exit_code = OHBOX_EXIT_RUNTIME;
  if (check_options (o, err) < 0)
    return -1;
  struct exec_run x;
  exec_run_init (&x);
  x.plan = (struct exec_plan){ .cwd = xstrdup (o->workdir ? o->workdir
                                               : t->cwd   ? t->cwd
                                                          : "/"),
                               .user = xstrdup (o->user ? o->user : t->user),
                               .no_new_privs = t->no_new_privs,
                               .caps_sets = t->caps_sets,
                               .n_additional_gids = t->n_additional_gids };
  x.plan.additional_gids = xcalloc (t->n_additional_gids + 1, sizeof (uint32_t));
  if (t->n_additional_gids > 0)
    memcpy (x.plan.additional_gids, t->additional_gids, t->n_additional_gids * sizeof (uint32_t));
  size_t n = 0;
  for (size_t i = 0; t->env && t->env[i]; i++)
    ohbox_strv_env_set (&x.plan.env, &n, t->env[i]);
  /* The target's filter and cgroup are the caller's: borrowed. */
  x.seccomp = (struct ohbox_seccomp_filter *) t->seccomp;
  x.cg = (struct ohbox_cgroup *) t->cgroup;
  int r = -1;
  if (plan_add_options (o, &x.plan, n, false, err) == 0)
    r = exec_start (t->init, t->init_pidfd, o, &x, ret_exit_code, err);
  x.seccomp = NULL;
  x.cg = NULL;
  exec_run_release (&x);
  return r;
}
