/* linux.c: starting a sandbox: clone3 into new namespaces, the handshake
 * with the child, and the child's steps up to the execve of the command.
 *
 *   parent (the monitor)                  child (becomes PID 1)
 *   opens the v1 cgroups' `tasks`
 *   clone3(NEWUSER|NEWNS|NEWPID|NEWUTS|   PDEATHSIG
 *     NEWIPC[|NEWNET]|PIDFD|INTO_CGROUP)
 *   right_after_clone <-- ns fds -------  its user and net namespaces; waits
 *     (spawns slirp4netns/pasta)
 *   uid/gid maps
 *   rootfs: overlay with idmapped layers
 *   (a detached mount) --GO + fd-------->  non-dumpable, root in the namespace,
 *   after_clone (veth, addresses;          "0" into the v1 `tasks`, attach
 *     or waits for slirp4netns/pasta)      rootfs, /proc /dev /sys, volumes,
 *                                          masks, user lookup, caps plan, own
 *                                          cgroupns, pivot_root, hostname
 *                                          init: fork command
 *                                          command: setsid, stdio, close fds,
 *                                          waits
 *   --GO------------------------------->  seccomp, caps, chdir, execve
 *                                          (no_new_privs: caps, chdir,
 *                                          seccomp, execve; seccomp.h)
 *   EOF on the socket <------------------  (the socket is O_CLOEXEC: its last
 *   = the command runs                     copy closes with a successful exec)
 *   or an error message  <---------------  any failure, with kind and text
 *
 * The child's setup runs while the parent attaches the network: only the
 * command's execve waits for it.
 *
 * The child never runs image code before pivot_root, and no fd of the
 * runtime survives the execve (close_range before the chdir into the
 * working directory, so a cwd of /proc/self/fd/N finds nothing: the
 * CVE-2024-21626 shape). */
#include "config.h"
#include "sandbox/linux.h"
#include "common/strv.h"
#include "security/capabilities.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

enum
{
  MSG_GO = 1,
  MSG_ERROR = 2,
  MSG_NS = 3,    /* child -> parent: its user, then its network namespace (after_clone) */
  MSG_READY = 4, /* command -> parent: set up, waiting for the last GO (before_start) */
};

struct sync_msg
{
  int32_t type;
  int32_t kind;
  int32_t errno_value;
  int32_t exit_code;
  char text[2048];
};

struct exec_ctx
{
  const struct ohbox_linux_spec *spec;
  struct ohbox_caps_plan *caps;
  struct ohbox_caps_plan *ldconfig_caps; /* root's, for the linker cache (NULL: none to rebuild) */
  char **env;
  int sync_fd;
};

static void
send_msg (int fd, int type, int kind, int errno_value, int exit_code, const char *text, int pass_fd)
{
  struct sync_msg m;
  memset (&m, 0, sizeof m);
  m.type = type;
  m.kind = kind;
  m.errno_value = errno_value;
  m.exit_code = exit_code;
  if (text)
    snprintf (m.text, sizeof m.text, "%s", text);
  ohbox_send_with_fd (fd, &m, sizeof m, pass_fd);
}

/* Returns the message size (0 on EOF, -1 on error); *FD gets a passed fd. */
static ssize_t
recv_msg (int fd, struct sync_msg *m, int *passed)
{
  int fd_in;
  ssize_t n = ohbox_recv_with_fd (fd, m, sizeof *m, &fd_in);
  if (passed)
    *passed = fd_in;
  else if (fd_in >= 0)
    close (fd_in);
  return n;
}

__attribute__ ((noreturn)) static void
child_fail (int sync_fd, ohbox_error_t *err)
{
  send_msg (sync_fd, MSG_ERROR, (*err)->kind, (*err)->errno_value, OHBOX_EXIT_RUNTIME, (*err)->msg, -1);
  _exit (OHBOX_EXIT_RUNTIME);
}

__attribute__ ((noreturn, format (printf, 4, 5))) static void
exec_fail (int sync_fd, int code, int e, const char *fmt, ...)
{
  char text[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (text, sizeof text, fmt, ap);
  va_end (ap);
  if (e)
    {
      size_t len = strlen (text);
      snprintf (text + len, sizeof text - len, ": %s", strerror (e));
    }
  int kind = code == OHBOX_EXIT_NOTFOUND ? OHBOX_ERR_NOT_FOUND : OHBOX_ERR_GENERIC;
  send_msg (sync_fd, MSG_ERROR, kind, e, code, text, -1);
  _exit (code);
}

/* Rebuilds the sandbox's linker cache with the device libraries' folders:
 * the image's own ldconfig, as the sandbox's root, with root's capability
 * set of the sandbox and its seccomp filter, after pivot_root (it sees only
 * the sandbox).  An image without ldconfig (busybox, musl) keeps its cache;
 * a failing one prints its complaint on the command's stderr; neither stops
 * the command. */
static void
rebuild_linker_cache (const struct exec_ctx *ctx)
{
  const struct ohbox_linux_spec *spec = ctx->spec;
  static const char *const candidates[] = { "/sbin/ldconfig", "/usr/sbin/ldconfig" };
  const char *ldconfig = NULL;
  for (size_t i = 0; i < 2 && ldconfig == NULL; i++)
    if (access (candidates[i], X_OK) == 0)
      ldconfig = candidates[i];
  if (ldconfig == NULL)
    return;
  pid_t pid = fork ();
  if (pid == 0)
    {
      const char *step = NULL;
      /* The same order as the command's (security/seccomp.h). */
      bool nnp = spec->no_new_privs;
      if ((spec->seccomp && !nnp && ohbox_seccomp_load (spec->seccomp, &step) < 0)
          || ohbox_caps_apply (ctx->ldconfig_caps, &step) < 0
          || (spec->seccomp && nnp && ohbox_seccomp_load (spec->seccomp, &step) < 0))
        _exit (OHBOX_EXIT_RUNTIME);
      size_t n = 0;
      while (spec->ldconfig_dirs[n])
        n++;
      char **argv = calloc (n + 2, sizeof (char *));
      if (argv == NULL)
        _exit (OHBOX_EXIT_RUNTIME);
      argv[0] = (char *) "ldconfig";
      memcpy (argv + 1, spec->ldconfig_dirs, n * sizeof (char *));
      char *const envp[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
      execve (ldconfig, argv, envp);
      _exit (OHBOX_EXIT_NOEXEC);
    }
  while (pid > 0 && waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* The command's process: after this, only the image's code runs. */
static void
exec_command (void *arg)
{
  struct exec_ctx *ctx = arg;
  const struct ohbox_linux_spec *spec = ctx->spec;
  int sync = ctx->sync_fd;
  setsid ();
  /* stdio first to high fds, so that dup2 order cannot clobber one. */
  int tmp[3];
  for (int i = 0; i < 3; i++)
    {
      tmp[i] = fcntl (spec->stdio[i], F_DUPFD_CLOEXEC, 3);
      if (tmp[i] < 0)
        exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "dup stdio");
    }
  for (int i = 0; i < 3; i++)
    if (dup2 (tmp[i], i) < 0)
      exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "dup2 stdio");
  if (spec->tty && ioctl (0, TIOCSCTTY, 0) < 0)
    exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "set the controlling terminal");
  /* Every other fd of the runtime goes, before any path is resolved (the
   * preserved ones were open before the runtime's: all below SYNC). */
  int keep = 3 + spec->preserve_fds;
  if (spec->listen_fd > 2)
    {
      /* The executor's socket (sandbox.c executor_socket_open), at KEEP:
       * SYNC moves out of its way first. */
      if (sync == keep && (sync = fcntl (sync, F_DUPFD_CLOEXEC, keep + 1)) < 0)
        exec_fail (ctx->sync_fd, OHBOX_EXIT_RUNTIME, errno, "move the sync fd");
      if (spec->listen_fd == keep ? fcntl (keep, F_SETFD, 0) < 0 : dup2 (spec->listen_fd, keep) < 0)
        exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "give the executor its socket");
      keep++;
    }
  if (sync < keep)
    exec_fail (sync, OHBOX_EXIT_RUNTIME, EBADF, "preserve-fds: fd %d of the runtime is among them", sync);
  if (sync > keep)
    close_range ((unsigned) keep, (unsigned) sync - 1, 0);
  close_range ((unsigned) sync + 1, ~0U, 0);
  if (ctx->ldconfig_caps)
    rebuild_linker_cache (ctx);
  /* The last GO: the parent's after_clone (the network) is done, which ran
   * meanwhile. Before the seccomp filter, which may not allow recvmsg. */
  struct sync_msg m;
  if (spec->before_start)
    send_msg (sync, MSG_READY, 0, 0, 0, NULL, -1);
  if (recv_msg (sync, &m, NULL) <= 0 || m.type != MSG_GO)
    _exit (OHBOX_EXIT_RUNTIME);
  const char *step = NULL;
  /* Without no_new_privs the filter is loaded while we still hold every
   * capability of our user namespace (the order: security/seccomp.h). */
  if (spec->seccomp && !spec->no_new_privs && ohbox_seccomp_load (spec->seccomp, &step) < 0)
    exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "load the seccomp filter (%s)", step);
  if (ohbox_caps_apply (ctx->caps, &step) < 0)
    exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "set up capabilities (%s)", step);
  if (chdir (spec->cwd) < 0)
    exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "chdir to working directory `%s`", spec->cwd);
  if (spec->seccomp && spec->no_new_privs && ohbox_seccomp_load (spec->seccomp, &step) < 0)
    exec_fail (sync, OHBOX_EXIT_RUNTIME, errno, "load the seccomp filter (%s)", step);
  ohbox_trace ("command: execve");
  const char *file = spec->argv[0];
  int e = ohbox_exec_in_path (file, spec->argv, ctx->env);
  if (strchr (file, '/'))
    exec_fail (sync, e == ENOENT ? OHBOX_EXIT_NOTFOUND : OHBOX_EXIT_NOEXEC, e, "exec `%s`", file);
  if (e == ENOENT)
    exec_fail (sync, OHBOX_EXIT_NOTFOUND, 0, "exec `%s`: executable file not found in $PATH", file);
  exec_fail (sync, OHBOX_EXIT_NOEXEC, e, "exec `%s`", file);
}

static char **
env_with_home (char **env, const char *home)
{
  size_t n = 0;
  while (env[n])
    n++;
  char **out = xcalloc (n + 2, sizeof (char *));
  memcpy (out, env, n * sizeof (char *));
  if (ohbox_strv_env_get (env, "HOME") == NULL)
    out[n++] = xasprintf ("HOME=%s", home);
  return out;
}

/* Brings up the loopback of the network namespace we made: a new one
 * starts with `lo` down, and docker's --network none (and every other mode
 * with a namespace of its own) has 127.0.0.1 working inside. Safe: the
 * namespace is ours alone (made by our clone, owned by our user namespace),
 * nothing outside it changes. */
static int
loopback_up (ohbox_error_t *err)
{
  cleanup_close int s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open a socket to bring up `lo`");
  struct ifreq ifr;
  memset (&ifr, 0, sizeof ifr);
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (ioctl (s, SIOCGIFFLAGS, &ifr) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "read the flags of `lo`");
  if (ifr.ifr_flags & IFF_UP)
    return 0;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl (s, SIOCSIFFLAGS, &ifr) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "bring up `lo`");
  return 0;
}

/* The gids of the user namespace we run in (/proc/self/gid_map): all of
 * them in the initial one; in another (rootless podman's) only those. */
static void
own_gids (struct ohbox_idmap *g)
{
  memset (g, 0, sizeof *g);
  cleanup_file FILE *f = fopen ("/proc/self/gid_map", "re");
  struct ohbox_idmap_range r;
  while (f && g->n < OHBOX_IDMAP_MAX
         && fscanf (f, "%" SCNu32 " %" SCNu32 " %" SCNu32, &r.inside, &r.outside, &r.count) == 3)
    g->r[g->n++] = r;
}

/* ICMP datagram ("ping") sockets for every group of the sandbox: CAP_NET_RAW
 * is not in the default set (capabilities.c), and ping falls back to these.
 * net.* sysctls belong to the opener's network namespace, so this changes
 * only the sandbox's new one (ours alone, owned by our user namespace).
 * Written through the host's /proc, before the pivot: the sandbox's own
 * /proc/sys is read-only. The kernel takes ids of the writer's user
 * namespace and refuses unmapped ones: the range spans the gids mapped
 * (ours, or those of the namespace we run in without one of our own);
 * 2147483647 is the sysctl's maximum. */
static int
ping_groups_open (const struct ohbox_linux_spec *spec, ohbox_error_t *err)
{
  struct ohbox_idmap own;
  if (!spec->userns)
    own_gids (&own);
  const struct ohbox_idmap *g = spec->userns ? &spec->userns_plan->gids : &own;
  uint32_t lo = UINT32_MAX, hi = 0;
  for (size_t i = 0; i < g->n; i++)
    {
      if (g->r[i].count == 0)
        continue;
      uint64_t last = (uint64_t) g->r[i].inside + g->r[i].count - 1;
      lo = g->r[i].inside < lo ? g->r[i].inside : lo;
      hi = last > hi ? (last > 2147483647 ? 2147483647 : (uint32_t) last) : hi;
    }
  if (lo > hi)
    return 0; /* no gid mapped: nobody to open one for */
  char text[32];
  int len = snprintf (text, sizeof text, "%u %u", lo, hi);
  cleanup_close int fd = open ("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write (fd, text, (size_t) len) != len)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX,
                            "set net.ipv4.ping_group_range to `%s` in the sandbox's network namespace", text);
  return 0;
}

/* A bundle's rootfs: the caller's directory, its ids as they are on disk (a
 * bundle with a user namespace comes with a rootfs owned by its mapped ids,
 * as for runc). Bound by the parent, or rootless by the child, which holds
 * CAP_SYS_ADMIN over its own mount namespace. */
static int
bind_rootfs (const char *dir, int *mfd, ohbox_error_t *err)
{
  *mfd = open_tree (AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (*mfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "bind the rootfs `%s`", dir);
  return 0;
}

/* The sandbox's sysctls, through the host's /proc before the sandbox's own
 * is mounted: /proc/sys/net and the IPC entries resolve to the namespaces
 * of the process that opens them, which are the sandbox's by now (only
 * namespaced names get here: bundle.c). */
static int
set_sysctls (const struct ohbox_linux_spec *spec, ohbox_error_t *err)
{
  for (size_t i = 0; i < spec->n_sysctl; i++)
    {
      cleanup_free char *path = xasprintf ("/proc/sys/%s", spec->sysctl_keys[i]);
      for (char *p = path + strlen ("/proc/sys/"); *p; p++)
        if (*p == '.')
          *p = '/';
      cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
      const char *v = spec->sysctl_values[i];
      if (fd < 0 || ohbox_write_all (fd, v, strlen (v)) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "set sysctl `%s` to `%s`", spec->sysctl_keys[i], v);
    }
  return 0;
}

__attribute__ ((noreturn)) static void
child_main (const struct ohbox_linux_spec *spec, int sync, struct ohbox_cgroup_join *join, bool into_cgroup)
{
  cleanup_error ohbox_error_t err = NULL;
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  bool hidden = ohbox_hide_host_args ("ohbox-init");
  struct sync_msg m;
  int mfd = -1;
  if (spec->after_clone)
    {
      /* Our namespaces for the parent's after_clone: its /proc/PID/ns/
       * is closed to an unprivileged parent (we are not dumpable by then).
       * Queued now, read by the parent after GO. */
      int ns = open ("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
      send_msg (sync, MSG_NS, 0, 0, 0, NULL, ns);
      if (ns >= 0)
        close (ns);
      ns = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
      send_msg (sync, MSG_NS, 0, 0, 0, NULL, ns);
      if (ns >= 0)
        close (ns);
    }
  if (recv_msg (sync, &m, &mfd) <= 0 || m.type != MSG_GO)
    _exit (OHBOX_EXIT_RUNTIME);
  /* Before anything of the sandbox can see us: /proc/1/exe is the host's
   * binary. Not earlier: an unprivileged parent writes our single-id
   * uid_map itself, which a non-dumpable process's /proc (owned by the
   * host's root then) refuses; until GO nothing of the sandbox runs, and
   * only the caller's own processes could look at us. */
  prctl (PR_SET_DUMPABLE, 0);
  if (spec->userns)
    {
      if (setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0)
        {
          ohbox_error_sys (&err, OHBOX_ERR_SANDBOX, "become root in the user namespace");
          child_fail (sync, &err);
        }
      if (!spec->userns_plan->single && setgroups (0, NULL) < 0)
        {
          ohbox_error_sys (&err, OHBOX_ERR_SANDBOX, "setgroups");
          child_fail (sync, &err);
        }
      /* Changing credentials cleared the parent-death signal: set it again
       * (the parent is alive: it just sent GO and waits for our answer). */
      prctl (PR_SET_PDEATHSIG, SIGKILL);
    }
  /* Into our cgroups (v1, and v2 when CLONE_INTO_CGROUP was refused)
   * through the files the parent opened: we are single-threaded and have
   * not forked, so the whole sandbox starts there; before the cgroup
   * namespace is unshared (below), so the cgroup becomes its root. */
  if (join->n > 0 && ohbox_cgroup_join (join, into_cgroup, &err) < 0)
    child_fail (sync, &err);
  if (set_sysctls (spec, &err) < 0)
    child_fail (sync, &err);
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    {
      ohbox_error_sys (&err, OHBOX_ERR_SANDBOX, "make mounts private");
      child_fail (sync, &err);
    }
  /* Rootless volumes: cloned here, where we hold CAP_SYS_ADMIN over our
   * (copied) mount namespace. Safe: the lookup of the source path and every
   * later access through the bind are checked against the user's own ids
   * (our uid 0 is the user's), so the sandbox gets no access the user did
   * not have. The specs are this child's copy of the parent's memory. */
  if (spec->rootless && ohbox_mounts_prepare_binds ((struct ohbox_mount_spec *) spec->mounts, spec->n_mounts, &err) < 0)
    child_fail (sync, &err);
  if (spec->netns && !spec->join_netns && ping_groups_open (spec, &err) < 0)
    child_fail (sync, &err);
  if (mfd < 0
      && (spec->rootfs_dir ? bind_rootfs (spec->rootfs_dir, &mfd, &err) < 0
                           : ohbox_snapshot_mount (spec->snap, -1, OHBOX_SNAPSHOT_USERXATTR, &mfd, NULL, &err) < 0))
    child_fail (sync, &err);
  /* Our cwd is the mount point: clone translated it into our new mount
   * namespace (an fd opened before would still name the host's). */
  if (move_mount (mfd, "", AT_FDCWD, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    {
      ohbox_error_sys (&err, OHBOX_ERR_SANDBOX, "attach the rootfs");
      child_fail (sync, &err);
    }
  if (ohbox_mounts_setup (spec, mfd, &err) < 0)
    child_fail (sync, &err);
  ohbox_trace ("child: mounts");
  struct ohbox_user_ids ids;
  if (ohbox_user_lookup (mfd, spec->user, &ids, &err) < 0)
    child_fail (sync, &err);
  if (spec->exact_groups)
    ids.n_groups = 0;
  ohbox_user_ids_add_groups (&ids, spec->additional_gids, spec->n_additional_gids);
  struct ohbox_caps_sets sets;
  if (spec->caps_sets)
    sets = *spec->caps_sets;
  else
    ohbox_caps_sets_for_user (spec->caps, spec->caps_added, ids.uid == 0, &sets);
  struct ohbox_caps_user cu = { .uid = ids.uid,
                                .gid = ids.gid,
                                .groups = ids.groups,
                                .n_groups = ids.n_groups,
                                .set_groups = !(spec->userns && spec->userns_plan->single) };
  struct exec_ctx ctx = { .spec = spec, .sync_fd = sync };
  unsigned caps_flags = spec->no_new_privs ? OHBOX_CAPS_NO_NEW_PRIVS : 0;
  if (ohbox_caps_plan_new (&sets, &cu, caps_flags, &ctx.caps, &err) < 0)
    child_fail (sync, &err);
  if (spec->ldconfig_dirs && spec->ldconfig_dirs[0])
    {
      struct ohbox_caps_sets root_sets;
      ohbox_caps_sets_for_user (spec->caps, spec->caps_added, true, &root_sets);
      struct ohbox_caps_user root = { .uid = 0, .gid = 0, .set_groups = cu.set_groups };
      if (ohbox_caps_plan_new (&root_sets, &root, caps_flags, &ctx.ldconfig_caps, &err) < 0)
        child_fail (sync, &err);
    }
  ctx.env = env_with_home (spec->env, ids.home);
  /* Our cgroup (joined above) becomes our cgroup namespace's root. */
  if ((spec->cgroup || spec->cgroupns) && unshare (CLONE_NEWCGROUP) < 0)
    {
      ohbox_error_sys (&err, OHBOX_ERR_SANDBOX, "unshare the cgroup namespace");
      child_fail (sync, &err);
    }
  if (ohbox_mounts_cgroup (spec, mfd, &err) < 0)
    child_fail (sync, &err);
  if (ohbox_mounts_pivot (spec, mfd, &err) < 0)
    child_fail (sync, &err);
  ohbox_trace ("child: pivot_root");
  if (spec->hostname && sethostname (spec->hostname, strlen (spec->hostname)) < 0)
    {
      ohbox_error_sys (&err, OHBOX_ERR_SANDBOX, "set hostname `%s`", spec->hostname);
      child_fail (sync, &err);
    }
  /* A new network namespace's loopback starts down: "loopback only"
   * (--network none) means one that works, as with Docker (ohbox ci: a job
   * and its services talk over 127.0.0.1). Done here, with the namespace's
   * own CAP_NET_ADMIN: rootless too. */
  if (spec->netns && !spec->join_netns && loopback_up (&err) < 0)
    child_fail (sync, &err);
  close (mfd);
  /* Set up: a parent that dies now closes the sync socket, on which the
   * command waits for its last GO, and the sandbox ends without running it. */
  if (spec->outlive_parent)
    prctl (PR_SET_PDEATHSIG, 0);
  ohbox_init_run (exec_command, &ctx, sync, !hidden);
}

static pid_t
do_clone3 (uint64_t flags, int *pidfd, int cgroup_fd)
{
  struct clone_args args;
  memset (&args, 0, sizeof args);
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = (uint64_t) (uintptr_t) pidfd;
  /* With CLONE_PARENT the kernel refuses one: the child inherits ours
   * (SIGCHLD: the helper is a fork). */
  args.exit_signal = (flags & CLONE_PARENT) ? 0 : SIGCHLD;
  if (cgroup_fd >= 0)
    {
      args.flags |= CLONE_INTO_CGROUP;
      args.cgroup = (uint64_t) cgroup_fd;
    }
  return (pid_t) syscall (SYS_clone3, &args, sizeof args);
}

/* Where a clone failed, for its error message. */
enum clone_step
{
  STEP_NETNS,
  STEP_CHDIR,
  STEP_CLONE,
};
static const char *const clone_step_text[] = { "enter the network namespace to share",
                                               "chdir to the rootfs mount point", "clone3 the sandbox's init" };

/* The clone itself, in a process with a single thread: with the rootfs
 * mount point as cwd (child_main) and, for --network container:, in the
 * network namespace to share (the child inherits it: it could not enter it
 * from its own user namespace); both changed back after. In the child
 * (pid 0) runs child_main on SYNC_CHILD and never returns. */
static pid_t
clone_here (const struct ohbox_linux_spec *spec, uint64_t flags, int cgfd, int sync_child,
            struct ohbox_cgroup_join *join, bool *into_cgroup, int *pidfd, enum clone_step *step)
{
  int own_netns = -1, e;
  *step = STEP_NETNS;
  if (spec->join_netns)
    {
      own_netns = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      if (own_netns < 0 || setns (spec->join_netns_fd, CLONE_NEWNET) < 0)
        {
          e = errno;
          if (own_netns >= 0)
            close (own_netns);
          errno = e;
          return -1;
        }
    }
  *step = STEP_CHDIR;
  int saved_cwd = open (".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (saved_cwd < 0 || fchdir (spec->rootdir_fd) < 0)
    {
      e = errno;
      if (saved_cwd >= 0)
        close (saved_cwd);
      if (own_netns >= 0 && setns (own_netns, CLONE_NEWNET) < 0)
        abort (); /* see below */
      if (own_netns >= 0)
        close (own_netns);
      errno = e;
      return -1;
    }
  *step = STEP_CLONE;
  pid_t pid = do_clone3 (flags, pidfd, cgfd);
  if (pid < 0 && *into_cgroup && (errno == E2BIG || errno == EINVAL || errno == ENOSYS))
    {
      *into_cgroup = false;
      pid = do_clone3 (flags, pidfd, -1);
    }
  if (pid == 0)
    child_main (spec, sync_child, join, *into_cgroup);
  e = errno;
  if (fchdir (saved_cwd) < 0)
    abort (); /* the caller's cwd is gone: nothing sane to do */
  if (own_netns >= 0 && setns (own_netns, CLONE_NEWNET) < 0)
    abort (); /* going on in the other sandbox's namespace: never */
  if (own_netns >= 0)
    close (own_netns);
  close (saved_cwd);
  errno = e;
  return pid;
}

/* What the helper of clone_from_helper reports: the init's pid (its pidfd
 * passed along), or -1 and the step that failed with its errno. */
struct helper_report
{
  pid_t pid;
  int errno_value;
  enum clone_step step;
};

/* The clone from a caller with several threads (an embedder of libohbox):
 * a raw clone3 copies the other threads' locks (malloc's, stdio's) in
 * whatever state they are, and the child, which runs libc before its
 * exec, could wait on one forever. So a fork (which takes and resets
 * libc's locks around the copy) makes a single-threaded helper that clones
 * with CLONE_PARENT: the init is the caller's child as with clone_here,
 * and neither the caller's cwd nor its network namespace ever changes. */
static pid_t
clone_from_helper (const struct ohbox_linux_spec *spec, uint64_t flags, int cgfd, int sv[2],
                   struct ohbox_cgroup_join *join, int *pidfd, enum clone_step *step)
{
  *step = STEP_CLONE;
  int hv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, hv) < 0)
    return -1;
  pid_t helper = fork ();
  if (helper < 0)
    {
      int e = errno;
      close (hv[0]);
      close (hv[1]);
      errno = e;
      return -1;
    }
  if (helper == 0)
    {
      close (hv[0]);
      close (sv[0]);
      bool into_cgroup = cgfd >= 0;
      int fd = -1;
      struct helper_report r = { 0 };
      r.pid = clone_here (spec, flags | CLONE_PARENT, cgfd, sv[1], join, &into_cgroup, &fd, &r.step);
      r.errno_value = r.pid < 0 ? errno : 0;
      _exit (ohbox_send_with_fd (hv[1], &r, sizeof r, fd) == (ssize_t) sizeof r ? 0 : 1);
    }
  close (hv[1]);
  struct helper_report r = { .pid = -1, .errno_value = EPIPE, .step = STEP_CLONE };
  int fd = -1;
  ssize_t n;
  do
    n = ohbox_recv_with_fd (hv[0], &r, sizeof r, &fd);
  while (n < 0 && errno == EINTR);
  close (hv[0]);
  while (waitpid (helper, NULL, 0) < 0 && errno == EINTR)
    ;
  if (n != (ssize_t) sizeof r || r.pid <= 0 || fd < 0)
    {
      if (fd >= 0)
        close (fd);
      /* The init, if any, is our child: without its pidfd, end it here. */
      if (n == (ssize_t) sizeof r && r.pid > 0)
        {
          kill (r.pid, SIGKILL);
          while (waitpid (r.pid, NULL, 0) < 0 && errno == EINTR)
            ;
        }
      *step = n == (ssize_t) sizeof r ? r.step : STEP_CLONE;
      errno = n == (ssize_t) sizeof r && r.errno_value ? r.errno_value : EPIPE;
      return -1;
    }
  *pidfd = fd;
  return r.pid;
}

int
ohbox_linux_start (const struct ohbox_linux_spec *spec, struct ohbox_linux_proc *ret, ohbox_error_t *err)
{
  int sv[2];
  memset (ret, 0, sizeof *ret);
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "socketpair");
  uint64_t flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;
  if (spec->userns)
    flags |= CLONE_NEWUSER;
  if (spec->netns && !spec->join_netns)
    flags |= CLONE_NEWNET;
  int cgfd = spec->cgroup ? ohbox_cgroup_clone_fd (spec->cgroup) : -1;
  int pidfd = -1;
  /* Opened as the host's user: the child writes through them from inside
   * its user namespace (ohbox_cgroup_join). */
  struct ohbox_cgroup_join join = { 0 };
  if (spec->cgroup && ohbox_cgroup_join_open (spec->cgroup, &join, err) < 0)
    {
      close (sv[0]);
      close (sv[1]);
      return -1;
    }
  bool into_cgroup = cgfd >= 0;
  enum clone_step step;
  pid_t pid = __libc_single_threaded ? clone_here (spec, flags, cgfd, sv[1], &join, &into_cgroup, &pidfd, &step)
                                     : clone_from_helper (spec, flags, cgfd, sv, &join, &pidfd, &step);
  ohbox_cgroup_join_close (&join);
  if (pid < 0)
    {
      int e = errno;
      close (sv[0]);
      close (sv[1]);
      errno = e;
      ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "%s", clone_step_text[step]);
      if (step == STEP_CLONE && (e == ENOSPC || e == EPERM || e == EUSERS))
        ohbox_error_hint (err, "check user.max_user_namespaces and kernel.unprivileged_userns_clone");
      return -1;
    }
  close (sv[1]);
  ohbox_trace ("parent: cloned");
  int sync = sv[0];
  int mfd = -1, userns_fd = -1, ns[2] = { -1, -1 }, r = 0;
  struct sync_msg m;
  ssize_t n;
  if (spec->after_clone)
    {
      /* The init sends them first thing, before it waits for GO. */
      for (int i = 0; i < 2 && r == 0; i++)
        if (recv_msg (sync, &m, &ns[i]) < (ssize_t) offsetof (struct sync_msg, text) || m.type != MSG_NS || ns[i] < 0)
          r = ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the sandbox's init did not pass its namespaces");
      if (r == 0 && spec->right_after_clone)
        r = spec->right_after_clone (ns[0], ns[1], spec->after_clone_data, err);
      if (r < 0)
        goto fail;
    }
  if (spec->userns && ohbox_userns_write_maps (pid, spec->userns_plan, err) < 0)
    goto fail;
  ohbox_trace ("parent: id maps");
  if (!spec->rootless)
    {
      if (spec->userns)
        {
          char path[64];
          snprintf (path, sizeof path, "/proc/%d/ns/user", pid);
          userns_fd = open (path, O_RDONLY | O_CLOEXEC);
          if (userns_fd < 0)
            {
              ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", path);
              goto fail;
            }
        }
      if (spec->rootfs_dir ? bind_rootfs (spec->rootfs_dir, &mfd, err) < 0
                           : ohbox_snapshot_mount (spec->snap, userns_fd, 0, &mfd, NULL, err) < 0)
        goto fail;
      if (userns_fd >= 0 && ohbox_mounts_idmap_binds (spec->mounts, spec->n_mounts, userns_fd, err) < 0)
        goto fail;
    }
  ohbox_trace ("parent: rootfs mounted");
  send_msg (sync, MSG_GO, 0, 0, 0, NULL, mfd);
  if (mfd >= 0)
    close (mfd);
  mfd = -1;
  if (spec->after_clone)
    {
      r = spec->after_clone (pid, ns[0], ns[1], spec->after_clone_data, err);
      for (int i = 0; i < 2; i++)
        {
          close (ns[i]);
          ns[i] = -1;
        }
      if (r < 0)
        {
          /* The init may have failed first (taking its namespaces with
           * it): then its own error is the one that says what went wrong. */
          struct pollfd pfd = { .fd = sync, .events = POLLIN };
          if (poll (&pfd, 1, 0) == 1 && (n = recv_msg (sync, &m, NULL)) >= (ssize_t) offsetof (struct sync_msg, text)
              && m.type == MSG_ERROR)
            {
              ohbox_error_release (err);
              goto child_error;
            }
          goto fail;
        }
    }
  ohbox_trace ("parent: network attached");
  if (spec->before_start)
    {
      /* The sandbox is set up (mounts, pivot_root, its command's process
       * waits): what must run before its command does, runs now. */
      n = recv_msg (sync, &m, NULL);
      if (n >= (ssize_t) offsetof (struct sync_msg, text) && m.type == MSG_ERROR)
        goto child_error;
      if (n <= 0 || m.type != MSG_READY)
        {
          ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the sandbox's init died during setup");
          goto fail;
        }
      if (spec->before_start (pid, spec->before_start_data, err) < 0)
        goto fail;
    }
  send_msg (sync, MSG_GO, 0, 0, 0, NULL, -1);
  n = recv_msg (sync, &m, NULL);
  if (n == 0)
    {
      /* EOF: the command's execve closed the last copy of the socket. */
      if (userns_fd >= 0)
        close (userns_fd);
      close (sync);
      ret->pid = pid;
      ret->pidfd = pidfd;
      return 0;
    }
  if (n < (ssize_t) offsetof (struct sync_msg, text) || m.type != MSG_ERROR)
    {
      ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the sandbox's init died during setup");
      goto fail;
    }
child_error:
  m.text[sizeof m.text - 1] = '\0';
  ret->exit_code_hint = m.exit_code;
  ohbox_error (err, m.kind > 0 ? m.kind : OHBOX_ERR_GENERIC, 0, "%s", m.text);
  if (m.exit_code != OHBOX_EXIT_NOEXEC && m.exit_code != OHBOX_EXIT_NOTFOUND)
    ret->exit_code_hint = OHBOX_EXIT_RUNTIME;
fail:
  if (mfd >= 0)
    close (mfd);
  if (userns_fd >= 0)
    close (userns_fd);
  for (int i = 0; i < 2; i++)
    if (ns[i] >= 0)
      close (ns[i]);
  close (sync);
  syscall (SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
  while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
  close (pidfd);
  if (ret->exit_code_hint == 0)
    ret->exit_code_hint = OHBOX_EXIT_RUNTIME;
  return -1;
}
