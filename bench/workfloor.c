/* bench/workfloor.c: the kernel work of one `ohbox run --rm --network=none
 * IMAGE CMD` (as root), done by the shortest program that does it: no
 * state files, no locks, no error reports, no configuration, no library.
 * bench/start.sh times it beside ohbox to tell what a start costs the
 * kernel on this machine (so no runtime doing the same work can be faster)
 * from what ohbox adds to it.
 *
 * The work, in the order ohbox does it (linux.c, mounts.c, snapshot.c):
 *  - a writable layer (upper and work directories) on the store's
 *    filesystem, owned by the sandbox's root;
 *  - a cgroup in every hierarchy the host mounts (under ohbox's parent
 *    group, so an ohbox start must have made it), joined through `tasks`
 *    (v1) and CLONE_INTO_CGROUP (v2), removed at the end;
 *  - clone3 into new user, pid, mount, net, uts and ipc namespaces (the
 *    cgroup namespace after joining), id maps of 65536 ids;
 *  - an overlay of the image's layers, each idmapped, upper and work on
 *    disk, volatile;
 *  - inside: /proc, /dev (tmpfs, six device binds, devpts, shm, mqueue,
 *    symlinks), read-only /sys, /etc/hosts, hostname and resolv.conf bound
 *    from files written for the sandbox, the masked and read-only paths,
 *    the cgroup view (a tmpfs with each hierarchy's directory bound
 *    read-only), pivot_root, hostname, loopback up;
 *  - an init as PID 1 that forks the command; the command drops to
 *    loads the seccomp program ohbox compiled (read from a sandbox's
 *    seccomp.bpf), drops to Docker's default capabilities (no_new_privs
 *    off, as Docker and ohbox) and execs;
 *  - the parent waits, removes the cgroups and the writable layer.
 *
 *   workfloor SCRATCH SECCOMP_BPF LAYER_DIR... -- CMD [ARG...]
 *
 * SCRATCH: a directory on the filesystem of ohbox's store; LAYER_DIR: the
 * image's unpacked layers in ohbox's store, top first.  Exits with the
 * command's status; any failed step exits 125 naming the step. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ftw.h>
#include <unistd.h>

#define ROOT_ID 1879048192u /* ohbox's id range for root's sandboxes */
#define N_IDS 65536u

static pid_t parent_pid, init_pid;
static void cleanup (void);
static void write_file (const char *path, const char *text);

/* Exits 125 naming the failed step; the parent removes what it made. */
__attribute__ ((format (printf, 1, 2), noreturn)) static void
die (const char *fmt, ...)
{
  va_list ap;
  int e = errno;
  va_start (ap, fmt);
  fprintf (stderr, "workfloor: ");
  vfprintf (stderr, fmt, ap);
  fprintf (stderr, ": %s\n", strerror (e));
  va_end (ap);
  if (getpid () == parent_pid)
    cleanup ();
  _exit (125);
}

static int
in_root (int rootfd, const char *path, int flags)
{
  struct open_how how = { .flags = (uint64_t) (flags | O_CLOEXEC), .resolve = RESOLVE_IN_ROOT };
  return (int) syscall (SYS_openat2, rootfd, path, &how, sizeof how);
}

/* O_PATH fd of PATH in the rootfs, created (directory or empty file) when
 * missing, its parent existing. */
static int
target (int rootfd, const char *path, int dir)
{
  int fd = in_root (rootfd, path, O_PATH);
  if (fd >= 0 || errno != ENOENT)
    return fd;
  char parent[256];
  snprintf (parent, sizeof parent, "%s", path);
  char *name = strrchr (parent, '/');
  *name++ = '\0';
  int pfd = in_root (rootfd, *parent ? parent : "/", O_RDONLY | O_DIRECTORY);
  if (pfd < 0)
    die ("open the parent of %s", path);
  int r = dir ? mkdirat (pfd, name, 0755) : openat (pfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (r < 0)
    die ("create %s", path);
  if (!dir)
    close (r);
  close (pfd);
  return in_root (rootfd, path, O_PATH);
}

static void
mount_at (int rootfd, const char *path, const char *type, unsigned long flags, const char *data)
{
  int fd = target (rootfd, path, 1);
  char proc[64];
  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  if (fd < 0 || mount (type, proc, type, flags, data) < 0)
    die ("mount %s on %s", type, path);
  close (fd);
}

/* Attaches a clone of the host's SOURCE (a tree with RECURSIVE) on PATH. */
static void
bind_at (int rootfd, const char *source, const char *path, int dir, unsigned int recursive, uint64_t attr)
{
  int m = (int) syscall (SYS_open_tree, AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | recursive);
  if (m < 0)
    die ("open_tree %s", source);
  struct mount_attr a = { .attr_set = attr };
  if (attr && syscall (SYS_mount_setattr, m, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
    die ("mount_setattr %s", source);
  int fd = target (rootfd, path, dir);
  if (fd < 0 || syscall (SYS_move_mount, m, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    die ("bind %s on %s", source, path);
  close (fd);
  close (m);
}

/* Makes the mount at PATH read-only, as its own clone (OCI readonlyPaths). */
static void
read_only (int rootfd, const char *path)
{
  int fd = in_root (rootfd, path, O_PATH);
  if (fd < 0)
    return;
  int m = (int) syscall (SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
  struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };
  if (m < 0 || syscall (SYS_mount_setattr, m, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0
      || syscall (SYS_move_mount, m, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    die ("read-only %s", path);
  close (m);
  close (fd);
}

static void
mask (int rootfd, const char *path)
{
  struct stat st;
  int fd = in_root (rootfd, path, O_PATH);
  if (fd < 0)
    return;
  if (fstat (fd, &st) < 0)
    die ("stat %s", path);
  close (fd);
  if (S_ISDIR (st.st_mode))
    mount_at (rootfd, path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=555");
  else
    bind_at (rootfd, "/dev/null", path, 0, 0, 0);
}

static struct
{
  char path[320]; /* the sandbox's directory in the hierarchy */
  char name[256]; /* the hierarchy's directory under /sys/fs/cgroup */
  int v2;
  int tasks; /* v1: its `tasks`, opened by the host's root for the child */
} cgroups[16];
static int n_cgroups;
static char dir[512]; /* SCRATCH/ID: the writable layer and the /etc files */
static const char *const etc_files[] = { "hosts", "hostname", "resolv.conf" };
static int etc_fds[3]; /* their clones, made by the host's root for the child */

/* A v1 cpuset group takes no task before its cpus and mems are set:
 * copied from the parent, as ohbox does. */
static void
cpuset_from_parent (const char *mnt)
{
  static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
  for (int i = 0; i < 2; i++)
    {
      char p[400], v[256];
      snprintf (p, sizeof p, "%s/ohbox/%s", mnt, files[i]);
      int fd = open (p, O_RDONLY | O_CLOEXEC);
      ssize_t n = fd < 0 ? -1 : read (fd, v, sizeof v - 1);
      if (n <= 0)
        die ("read %s", p);
      close (fd);
      snprintf (p, sizeof p, "%.320s/%s", cgroups[n_cgroups - 1].path, files[i]);
      fd = open (p, O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write (fd, v, (size_t) n) != n)
        die ("write %s", p);
      close (fd);
    }
}

static void
cgroups_create (const char *id)
{
  FILE *f = fopen ("/proc/self/mountinfo", "re");
  char line[1024];
  while (f && fgets (line, sizeof line, f) && n_cgroups < 16)
    {
      char mnt[256], type[32];
      const char *sep = strstr (line, " - ");
      if (!sep || sscanf (line, "%*s %*s %*s %*s %255s", mnt) != 1 || sscanf (sep + 3, "%31s", type) != 1
          || strncmp (mnt, "/sys/fs/cgroup/", 15) != 0 || (strcmp (type, "cgroup") && strcmp (type, "cgroup2")))
        continue;
      snprintf (cgroups[n_cgroups].name, sizeof cgroups[0].name, "%s", mnt + 15);
      /* Under ohbox's own parent group (made by an ohbox start before),
       * at the depth of ohbox's sandboxes. */
      snprintf (cgroups[n_cgroups].path, sizeof cgroups[0].path, "%s/ohbox/%s", mnt, id);
      cgroups[n_cgroups].v2 = strcmp (type, "cgroup2") == 0;
      if (mkdir (cgroups[n_cgroups].path, 0755) < 0)
        die ("mkdir %s", cgroups[n_cgroups].path);
      n_cgroups++;
      if (strcmp (mnt + 15, "cpuset") == 0)
        cpuset_from_parent (mnt);
      char p[340];
      snprintf (p, sizeof p, "%.320s/tasks", cgroups[n_cgroups - 1].path);
      cgroups[n_cgroups - 1].tasks = cgroups[n_cgroups - 1].v2 ? -1 : open (p, O_WRONLY | O_CLOEXEC);
    }
  if (f)
    fclose (f);
}

static const char *const masked[] = { "/proc/acpi",       "/proc/asound",      "/proc/interrupts",
                                      "/proc/kcore",      "/proc/keys",        "/proc/latency_stats",
                                      "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                                      "/proc/scsi",       "/sys/firmware",     "/sys/devices/virtual/powercap" };
static const char *const readonly[] = { "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger" };
static const int default_caps[] = { CAP_CHOWN,      CAP_DAC_OVERRIDE, CAP_FSETID,     CAP_FOWNER,  CAP_MKNOD,
                                    CAP_SETGID,     CAP_SETUID,       CAP_SETFCAP,    CAP_SETPCAP, CAP_NET_BIND_SERVICE,
                                    CAP_SYS_CHROOT, CAP_KILL,         CAP_AUDIT_WRITE };

static struct sock_filter insns[BPF_MAXINSNS];
static struct sock_fprog filter = { .filter = insns };
static unsigned int filter_flags;

/* ohbox's serialized program (a sandbox's seccomp.bpf): a 16-byte header
 * (magic, flags, length, reserved), then the instructions. */
static void
filter_read (const char *path)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  uint32_t head[4];
  if (fd < 0 || read (fd, head, sizeof head) != sizeof head || head[2] > BPF_MAXINSNS
      || read (fd, insns, head[2] * sizeof *insns) != (ssize_t) (head[2] * sizeof *insns))
    die ("read %s", path);
  close (fd);
  filter.len = (unsigned short) head[2];
  filter_flags = head[1];
}

static void
command (char **argv)
{
  uint64_t keep = 0;
  for (size_t i = 0; i < sizeof default_caps / sizeof *default_caps; i++)
    keep |= 1ull << default_caps[i];
  /* No no_new_privs (Docker's default): the filter goes first, while
   * CAP_SYS_ADMIN of the user namespace is still ours. */
  if (syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, filter_flags, &filter) < 0)
    die ("seccomp");
  for (int c = 0; c <= CAP_LAST_CAP; c++)
    if (!(keep & (1ull << c)) && prctl (PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
      die ("drop capability %d", c);
  struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
  struct __user_cap_data_struct d[2] = { { (uint32_t) keep, (uint32_t) keep, 0 },
                                         { (uint32_t) (keep >> 32), (uint32_t) (keep >> 32), 0 } };
  if (syscall (SYS_capset, &h, d) < 0)
    die ("capabilities");
  execvp (argv[0], argv);
  die ("exec %s", argv[0]);
}

static void
sandbox (int sync, char **argv)
{
  int mfd;
  char c;
  struct msghdr mh = { 0 };
  char ctl[CMSG_SPACE (sizeof (int))];
  struct iovec iov = { &c, 1 };
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof ctl;
  if (recvmsg (sync, &mh, 0) != 1)
    _exit (125);
  memcpy (&mfd, CMSG_DATA (CMSG_FIRSTHDR (&mh)), sizeof mfd);
  if (setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0 || setgroups (0, NULL) < 0)
    die ("become root in the user namespace");
  for (int i = 0; i < n_cgroups; i++)
    if (!cgroups[i].v2 && write (cgroups[i].tasks, "0", 1) != 1)
      die ("join %s", cgroups[i].path);
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    die ("make / private");
  /* ping sockets for every mapped gid (ohbox's default set has no NET_RAW) */
  char range[32];
  snprintf (range, sizeof range, "0 %u", N_IDS - 1);
  write_file ("/proc/sys/net/ipv4/ping_group_range", range);
  if (syscall (SYS_move_mount, mfd, "", AT_FDCWD, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    die ("attach the rootfs");
  mount_at (mfd, "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  mount_at (mfd, "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k");
  static const char *const devices[] = { "null", "zero", "full", "random", "urandom", "tty" };
  for (size_t i = 0; i < 6; i++)
    {
      char host[32];
      snprintf (host, sizeof host, "/dev/%s", devices[i]);
      bind_at (mfd, host, host, 0, AT_RECURSIVE, 0);
    }
  mount_at (mfd, "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
  mount_at (mfd, "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k");
  mount_at (mfd, "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  static const char *const links[][2] = { { "pts/ptmx", "ptmx" },          { "/proc/self/fd", "fd" },
                                          { "/proc/self/fd/0", "stdin" },  { "/proc/self/fd/1", "stdout" },
                                          { "/proc/self/fd/2", "stderr" }, { "/proc/kcore", "core" } };
  int devfd = in_root (mfd, "/dev", O_RDONLY | O_DIRECTORY);
  for (size_t i = 0; i < 6; i++)
    if (symlinkat (links[i][0], devfd, links[i][1]) < 0)
      die ("symlink /dev/%s", links[i][1]);
  close (devfd);
  mount_at (mfd, "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  for (size_t i = 0; i < 3; i++)
    {
      char dst[64];
      snprintf (dst, sizeof dst, "/etc/%s", etc_files[i]);
      int fd = target (mfd, dst, 0);
      if (fd < 0
          || syscall (SYS_move_mount, etc_fds[i], "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        die ("bind %s", dst);
      close (fd);
    }
  for (size_t i = 0; i < sizeof masked / sizeof *masked; i++)
    mask (mfd, masked[i]);
  for (size_t i = 0; i < sizeof readonly / sizeof *readonly; i++)
    read_only (mfd, readonly[i]);
  if (unshare (CLONE_NEWCGROUP) < 0)
    die ("unshare the cgroup namespace");
  mount_at (mfd, "/sys/fs/cgroup", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k");
  for (int i = 0; i < n_cgroups; i++)
    {
      char dst[128];
      snprintf (dst, sizeof dst, "/sys/fs/cgroup/%s", cgroups[i].name);
      bind_at (mfd, cgroups[i].path, dst, 1, 0,
               MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    }
  int cgfd = in_root (mfd, "/sys/fs/cgroup", O_PATH);
  struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
  if (cgfd < 0 || syscall (SYS_mount_setattr, cgfd, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0)
    die ("read-only /sys/fs/cgroup");
  if (fchdir (mfd) < 0 || syscall (SYS_pivot_root, ".", ".") < 0 || umount2 (".", MNT_DETACH) < 0 || chdir ("/") < 0)
    die ("pivot_root");
  if (sethostname ("workfloor", 9) < 0)
    die ("sethostname");
  int s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr = { .ifr_name = "lo" };
  if (s < 0 || ioctl (s, SIOCGIFFLAGS, &ifr) < 0)
    die ("lo");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl (s, SIOCSIFFLAGS, &ifr) < 0)
    die ("bring up lo");
  close (s);
  /* The init: PID 1, forks the command and exits with its status. */
  pid_t child = fork ();
  if (child < 0)
    die ("fork the command");
  if (child == 0)
    command (argv);
  int st;
  while (waitpid (child, &st, 0) < 0)
    if (errno != EINTR)
      die ("wait");
  _exit (WIFEXITED (st) ? WEXITSTATUS (st) : 128 + WTERMSIG (st));
}

static int
remove_one (const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void) st;
  (void) ftw;
  if ((type == FTW_DP ? rmdir (path) : unlink (path)) < 0)
    fprintf (stderr, "workfloor: remove %s: %s\n", path, strerror (errno));
  return 0;
}

/* The cgroups (empty once the init is gone) and SCRATCH/ID, whatever the
 * overlay and the command left in it. */
static void
cleanup (void)
{
  if (init_pid > 0 && kill (init_pid, SIGKILL) == 0)
    waitpid (init_pid, NULL, 0);
  for (int i = 0; i < n_cgroups; i++)
    if (rmdir (cgroups[i].path) < 0)
      fprintf (stderr, "workfloor: rmdir %s: %s\n", cgroups[i].path, strerror (errno));
  if (*dir)
    nftw (dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
write_file (const char *path, const char *text)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write (fd, text, strlen (text)) != (ssize_t) strlen (text) || close (fd) < 0)
    die ("write %s", path);
}

int
main (int argc, char **argv)
{
  if (argc < 5)
    {
      fprintf (stderr, "usage: workfloor SCRATCH SECCOMP_BPF LAYER_DIR... (top first) -- CMD [ARG...]\n");
      return 125;
    }
  int n_layers = 0;
  while (3 + n_layers < argc && strcmp (argv[3 + n_layers], "--") != 0)
    n_layers++;
  if (3 + n_layers + 1 >= argc)
    {
      fprintf (stderr, "workfloor: no command after --\n");
      return 125;
    }
  char **layers = argv + 3, **cmd = argv + 3 + n_layers + 1;
  char id[32], upper[600], work[600];
  parent_pid = getpid ();
  snprintf (id, sizeof id, "workfloor-%d", getpid ());
  snprintf (dir, sizeof dir, "%s/%s", argv[1], id);
  snprintf (upper, sizeof upper, "%s/upper", dir);
  snprintf (work, sizeof work, "%s/work", dir);
  if (mkdir (dir, 0700) < 0)
    {
      *dir = '\0';
      die ("create the writable layer in %s", argv[1]);
    }
  if (mkdir (upper, 0755) < 0 || mkdir (work, 0700) < 0 || chown (upper, ROOT_ID, ROOT_ID) < 0 || chdir (dir) < 0
      || mkdir ("rootfs", 0700) < 0)
    die ("create the writable layer in %s", dir);
  write_file ("hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
  write_file ("hostname", "workfloor\n");
  write_file ("resolv.conf", "nameserver 192.0.2.1\n");
  for (int i = 0; i < 3; i++)
    if ((etc_fds[i] = (int) syscall (SYS_open_tree, AT_FDCWD, etc_files[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0)
      die ("open_tree %s", etc_files[i]);
  if (chdir ("rootfs") < 0)
    die ("chdir rootfs");
  filter_read (argv[2]);
  cgroups_create (id);
  int cgfd = -1;
  for (int i = 0; i < n_cgroups; i++)
    if (cgroups[i].v2)
      cgfd = open (cgroups[i].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    die ("socketpair");
  int pidfd = -1;
  struct clone_args ca = { .flags = CLONE_PIDFD | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
                                    | CLONE_NEWPID | CLONE_NEWNET | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
                           .pidfd = (uint64_t) (uintptr_t) &pidfd,
                           .exit_signal = SIGCHLD,
                           .cgroup = (uint64_t) (cgfd >= 0 ? cgfd : 0) };
  pid_t pid = (pid_t) syscall (SYS_clone3, &ca, sizeof ca);
  if (pid < 0)
    die ("clone3");
  if (pid == 0)
    {
      close (sv[0]);
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      sandbox (sv[1], cmd);
    }
  close (sv[1]);
  if (cgfd >= 0)
    close (cgfd);
  init_pid = pid;
  for (int i = 0; i < n_cgroups; i++)
    if (cgroups[i].tasks >= 0)
      close (cgroups[i].tasks);
  char path[64], map[64];
  snprintf (map, sizeof map, "0 %u %u\n", ROOT_ID, N_IDS);
  snprintf (path, sizeof path, "/proc/%d/uid_map", pid);
  write_file (path, map);
  snprintf (path, sizeof path, "/proc/%d/gid_map", pid);
  write_file (path, map);
  snprintf (path, sizeof path, "/proc/%d/ns/user", pid);
  int userns = open (path, O_RDONLY | O_CLOEXEC);
  int fsfd = (int) syscall (SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
  if (userns < 0 || fsfd < 0)
    die ("userns, fsopen");
  /* Top layer first, as lowerdirs are.  Each idmapped clone stays open
   * until the overlay is created: closed, its detached tree is gone. */
  int lfd[64];
  if (n_layers > 64)
    die ("more than 64 layers");
  for (int i = 0; i < n_layers; i++)
    {
      lfd[i] = (int) syscall (SYS_open_tree, AT_FDCWD, layers[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
      struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t) userns };
      if (lfd[i] < 0 || syscall (SYS_mount_setattr, lfd[i], "", AT_EMPTY_PATH, &a, sizeof a) < 0
          || syscall (SYS_fsconfig, fsfd, FSCONFIG_SET_FD, "lowerdir+", NULL, lfd[i]) < 0)
        die ("idmapped layer %s", layers[i]);
    }
  if (syscall (SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, "upperdir", upper, 0) < 0
      || syscall (SYS_fsconfig, fsfd, FSCONFIG_SET_STRING, "workdir", work, 0) < 0
      || syscall (SYS_fsconfig, fsfd, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0
      || syscall (SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    die ("overlay");
  int mfd = (int) syscall (SYS_fsmount, fsfd, FSMOUNT_CLOEXEC, 0);
  if (mfd < 0)
    die ("fsmount");
  close (fsfd);
  close (userns);
  for (int i = 0; i < n_layers; i++)
    close (lfd[i]);
  char c = 0;
  char ctl[CMSG_SPACE (sizeof (int))] = { 0 };
  struct iovec iov = { &c, 1 };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl };
  struct cmsghdr *cm = CMSG_FIRSTHDR (&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (cm), &mfd, sizeof mfd);
  if (sendmsg (sv[0], &mh, 0) != 1)
    die ("send the rootfs");
  close (mfd);
  siginfo_t si = { 0 };
  while (waitid (P_PIDFD, (id_t) pidfd, &si, WEXITED) < 0)
    if (errno != EINTR)
      die ("wait");
  init_pid = 0;
  cleanup ();
  return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}
