/* exec_child.c: `ohbox exec`'s helper and command's process (exec.h): the
 * helper enters the cgroup and the sandbox's namespaces, makes the terminal
 * in the sandbox's devpts, and clones the command's process as the caller's
 * child; that one sets up stdio, user, capabilities, seccomp and execs.
 * Both report failures as "E<code> <kind> <message>" and _exit. */
#include "config.h"
#include "sandbox/exec_internal.h"
#include "security/capabilities.h"
#include "sandbox/linux.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the child side: no return ---- */

__attribute__ ((noreturn)) static void
child_fail (int fd, int code, int kind, const char *fmt, ...)
{
  char msg[EXEC_MSG_MAX];
  int n = snprintf (msg, sizeof msg, "E%d %d ", code, kind);
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg + n, sizeof msg - n, fmt, ap);
  va_end (ap);
  ohbox_write_all (fd, msg, strlen (msg));
  _exit (code);
}

__attribute__ ((noreturn)) static void
child_fail_err (int fd, int code, ohbox_error_t *err)
{
  child_fail (fd, code, (*err)->kind, "%s", (*err)->msg);
}

static void
exec_in_path (const char *file, char **argv, char **env, int fd)
{
  int e = ohbox_exec_in_path (file, argv, env);
  if (strchr (file, '/'))
    child_fail (fd, e == ENOENT ? OHBOX_EXIT_NOTFOUND : OHBOX_EXIT_NOEXEC,
                e == ENOENT ? OHBOX_ERR_NOT_FOUND : OHBOX_ERR_GENERIC, "exec `%s`: %s", file, strerror (e));
  if (e == ENOENT)
    child_fail (fd, OHBOX_EXIT_NOTFOUND, OHBOX_ERR_NOT_FOUND, "exec `%s`: executable file not found in $PATH", file);
  child_fail (fd, OHBOX_EXIT_NOEXEC, OHBOX_ERR_GENERIC, "exec `%s`: %s", file, strerror (e));
}

/* The command's process: in every namespace of the sandbox already. */
__attribute__ ((noreturn)) static void
command_main (struct child_ctx *c)
{
  cleanup_error ohbox_error_t err = NULL;
  int fd = c->cmd_fd;
  close (c->helper_fd);
  /* The command starts as a command started by a shell would. */
  signal (SIGPIPE, SIG_DFL);
  sigprocmask (SIG_SETMASK, &c->sigmask, NULL);
  setsid ();
  int tmp[3];
  for (int i = 0; i < 3; i++)
    if ((tmp[i] = fcntl (c->stdio[i], F_DUPFD_CLOEXEC, 3)) < 0)
      child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "dup stdio: %s", strerror (errno));
  for (int i = 0; i < 3; i++)
    if (dup2 (tmp[i], i) < 0)
      child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "dup2 stdio: %s", strerror (errno));
  if (c->tty && ioctl (0, TIOCSCTTY, 0) < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "set the controlling terminal: %s", strerror (errno));
  /* "/" is the sandbox's rootfs: setns(CLONE_NEWNS) put us at its root. */
  cleanup_close int rootfd = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "open the sandbox's root: %s", strerror (errno));
  struct ohbox_user_ids ids;
  if (ohbox_user_lookup (rootfd, c->plan->user, &ids, &err) < 0)
    child_fail_err (fd, OHBOX_EXIT_RUNTIME, &err);
  if (c->plan->caps_sets)
    {
      /* An OCI process: its groups are additionalGids, exactly. */
      ids.n_groups = 0;
      ids.groups = xrealloc (ids.groups, (c->plan->n_additional_gids + 1) * sizeof *ids.groups);
      for (size_t i = 0; i < c->plan->n_additional_gids; i++)
        ids.groups[ids.n_groups++] = c->plan->additional_gids[i];
    }
  else
    ohbox_user_ids_add_groups (&ids, c->plan->additional_gids, c->plan->n_additional_gids);
  /* setgroups is denied in a single-id user namespace (rootless without
   * subordinate ids): as `ohbox run` does, leave the groups alone there. */
  char sg[16] = "";
  cleanup_close int sgfd = open ("/proc/self/setgroups", O_RDONLY | O_CLOEXEC);
  if (sgfd >= 0 && read (sgfd, sg, sizeof sg - 1) < 0)
    sg[0] = '\0';
  struct ohbox_caps_sets sets;
  if (c->plan->caps_sets)
    sets = *c->plan->caps_sets;
  else
    ohbox_caps_sets_for_user (c->plan->caps, c->plan->caps_added, ids.uid == 0, &sets);
  struct ohbox_caps_user cu = { .uid = ids.uid,
                                .gid = ids.gid,
                                .groups = ids.groups,
                                .n_groups = ids.n_groups,
                                .set_groups = strncmp (sg, "deny", 4) != 0 };
  struct ohbox_caps_plan *caps = NULL;
  if (ohbox_caps_plan_new (&sets, &cu, c->plan->no_new_privs ? OHBOX_CAPS_NO_NEW_PRIVS : 0, &caps, &err) < 0)
    child_fail_err (fd, OHBOX_EXIT_RUNTIME, &err);
  size_t n = ohbox_strv_len (c->plan->env);
  char **env = c->plan->env;
  if (ohbox_strv_env_get (env, "HOME") == NULL)
    ohbox_strv_env_set (&env, &n, xasprintf ("HOME=%s", ids.home ? ids.home : "/"));
  /* Nothing of ohbox stays open in the sandbox but FD until the execve,
   * and the fds the caller hands over (3 .. 3+N-1, open and without
   * CLOEXEC since before the exec began: ours are all above them). */
  int keep = 3 + c->o->preserve_fds;
  if (fd < keep)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "preserve-fds: fd %d was not open", fd);
  if (fd > keep)
    close_range ((unsigned) keep, (unsigned) fd - 1, 0);
  close_range ((unsigned) fd + 1, ~0U, 0);
  const char *step = NULL;
  /* Without no_new_privs the filter is loaded while we still hold every
   * capability of the sandbox's user namespace (setns gave us them; the
   * order: security/seccomp.h), as `ohbox run` does. */
  bool nnp = c->plan->no_new_privs;
  if (c->seccomp && !nnp && ohbox_seccomp_load (c->seccomp, &step) < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "load the seccomp filter (%s): %s", step, strerror (errno));
  if (ohbox_caps_apply (caps, &step) < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "set up capabilities (%s): %s", step, strerror (errno));
  if (chdir (c->plan->cwd) < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "chdir to working directory `%s`: %s", c->plan->cwd,
                strerror (errno));
  if (c->seccomp && nnp && ohbox_seccomp_load (c->seccomp, &step) < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "load the seccomp filter (%s): %s", step, strerror (errno));
  exec_in_path (c->o->argv[0], c->o->argv, env, fd);
  _exit (OHBOX_EXIT_RUNTIME);
}

/* The helper: cgroup, namespaces, then the command's process as a sibling. */
__attribute__ ((noreturn)) void
ohbox_exec_helper_main (struct child_ctx *c)
{
  cleanup_error ohbox_error_t err = NULL;
  int fd = c->helper_fd;
  /* Nothing in the sandbox may ptrace us before the execve (CVE-2016-9962);
   * the command's process inherits it, execve resets it. */
  prctl (PR_SET_DUMPABLE, 0);
  /* Nor read the host's command line from its /proc/PID/cmdline meanwhile. */
  ohbox_hide_host_args ("ohbox-exec");
  /* Into the cgroup while we still may open the host's cgroup files (we
   * are single-threaded: on v1 the move through `tasks` moves us whole). */
  struct ohbox_cgroup_join join;
  if (c->cgroup
      && (ohbox_cgroup_join_open (c->cgroup, &join, &err) < 0 || ohbox_cgroup_join (&join, c->in_v2_cgroup, &err) < 0))
    child_fail_err (fd, OHBOX_EXIT_RUNTIME, &err);
  if (c->ns_flags && setns (c->pidfd, c->ns_flags) < 0)
    {
      if (errno != EINVAL || c->ns_fds == NULL)
        child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "join the sandbox's namespaces: %s", strerror (errno));
      /* Before Linux 5.8: one namespace at a time, the user one first. */
      for (size_t i = 0; i < N_NS; i++)
        if (c->ns_fds[i] >= 0 && setns (c->ns_fds[i], exec_namespaces[i].flag) < 0)
          child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "join the sandbox's %s namespace: %s",
                      exec_namespaces[i].name, strerror (errno));
    }
  if (c->ns_flags & CLONE_NEWUSER)
    {
      /* Our host ids mean nothing in the sandbox's user namespace. */
      if (setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0)
        child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "become root in the sandbox's user namespace: %s",
                    strerror (errno));
    }
  int master = -1;
  if (c->tty)
    {
      /* From the sandbox's own devpts, so that the terminal has a name
       * there (tty(1), /proc/self/fd/0); TIOCGPTPEER opens the slave
       * without a path lookup. */
      master = open ("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
      int slave = master < 0 || unlockpt (master) < 0 ? -1 : ioctl (master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (slave < 0)
        child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC,
                    "allocate a pseudo-terminal in the sandbox (/dev/ptmx): %s", strerror (errno));
      if (c->has_ws)
        ioctl (slave, TIOCSWINSZ, &c->ws);
      c->stdio[0] = c->stdio[1] = c->stdio[2] = slave;
    }
  /* CLONE_PARENT: the caller is the parent (and gets SIGCHLD: our own exit
   * signal is inherited). A raw clone with no new stack behaves as fork. */
  pid_t pid = (pid_t) syscall (SYS_clone, CLONE_PARENT, NULL, NULL, NULL, 0);
  if (pid < 0)
    child_fail (fd, OHBOX_EXIT_RUNTIME, OHBOX_ERR_GENERIC, "clone the command's process: %s", strerror (errno));
  if (pid == 0)
    command_main (c);
  char msg[32];
  snprintf (msg, sizeof msg, "P%d", (int) pid);
  ohbox_send_with_fd (fd, msg, strlen (msg), master);
  _exit (0);
}
