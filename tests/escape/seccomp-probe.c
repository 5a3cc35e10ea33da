/* seccomp-probe.c: run inside a sandbox, tries system calls and prints one
 * line per probe, "NAME RESULT", RESULT being "ok" or the errno's name
 * (EPERM, ENOSYS, ...). It judges nothing: tests/integration/seccomp.sh
 * holds what each result must be under each profile.
 *
 * Built static at test time (gcc -static) so that it runs in any image.
 * Every probe is harmless if the call were allowed: arguments are invalid
 * (a bad magic, a bad pointer, a path that does not exist, a timespec the
 * kernel refuses before its capability check), and calls that would change
 * the prober itself (unshare, setns) run in a child that exits at once.
 *
 * Usage: seccomp-probe [HOST_PID] [NAME...]
 *   HOST_PID: a process outside the sandbox for the ptrace and
 *   process_vm_readv probes (0: skip them); NAMEs: only those probes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static long host_pid;

static const char *
errname (int e)
{
  /* A table of macro calls clang-format would reflow differently each run. */
  // clang-format off
  switch (e)
    {
#define E(x)                                                                                                   \
  case x:                                                                                                      \
    return #x;
      E (EPERM) E (ENOENT) E (ESRCH) E (EINTR) E (EIO) E (EBADF) E (ECHILD) E (EAGAIN) E (ENOMEM) E (EACCES)
      E (EFAULT) E (EBUSY) E (EEXIST) E (EXDEV) E (ENODEV) E (ENOTDIR) E (EISDIR) E (EINVAL) E (ENFILE)
      E (EMFILE) E (ENOTTY) E (ENOSPC) E (ESPIPE) E (EROFS) E (ERANGE) E (ENOSYS) E (ENOKEY)
      E (EAFNOSUPPORT) E (EOPNOTSUPP) E (EPROTONOSUPPORT) E (ENOEXEC) E (EDOM) E (ENAMETOOLONG)
#undef E
    default:
      return NULL;
    }
  // clang-format on
}

static void
report (const char *name, long rc, int e)
{
  if (rc >= 0)
    printf ("%s ok\n", name);
  else if (errname (e))
    printf ("%s %s\n", name, errname (e));
  else
    printf ("%s errno%d\n", name, e);
}

/* Runs FN in a forked child (for calls that would change the prober) and
 * reports its result, passed back through the exit status. */
static long
in_child (long (*fn) (void), int *e)
{
  pid_t pid = fork ();
  if (pid < 0)
    {
      *e = errno;
      return -1;
    }
  if (pid == 0)
    {
      long rc = fn ();
      _exit (rc >= 0 ? 0 : (errno & 0xff));
    }
  int status;
  if (waitpid (pid, &status, 0) < 0 || !WIFEXITED (status))
    {
      *e = EINTR;
      return -1;
    }
  *e = WEXITSTATUS (status);
  return *e == 0 ? 0 : -1;
}

static long
do_unshare_user (void)
{
  return unshare (CLONE_NEWUSER);
}
static long
do_unshare_ns (void)
{
  return unshare (CLONE_NEWNS | CLONE_NEWNET);
}
static long
do_setns (void)
{
  int fd = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  return syscall (SYS_setns, fd, CLONE_NEWNET);
}
static long
do_clone_newns (void)
{
  /* Raw clone with a namespace flag: the child (if any) exits at once. */
  long rc = syscall (SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
  if (rc == 0)
    _exit (0);
  if (rc > 0)
    waitpid ((pid_t) rc, NULL, 0);
  return rc;
}

static void *
thread_fn (void *arg)
{
  return arg;
}

static long
do_thread (void)
{
  pthread_t t;
  int rc = pthread_create (&t, NULL, thread_fn, (void *) 42);
  if (rc != 0)
    {
      errno = rc;
      return -1;
    }
  void *ret;
  pthread_join (t, &ret);
  if (ret != (void *) 42)
    {
      errno = EIO;
      return -1;
    }
  return 0;
}

static long
do_fork (void)
{
  pid_t pid = fork ();
  if (pid < 0)
    return -1;
  if (pid == 0)
    _exit (7);
  int status;
  if (waitpid (pid, &status, 0) < 0)
    return -1;
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 7)
    {
      errno = EIO;
      return -1;
    }
  return 0;
}

static long
do_socket (int domain, int type)
{
  int fd = socket (domain, type | SOCK_CLOEXEC, 0);
  if (fd >= 0)
    close (fd);
  return fd;
}

static long
do_mmap_exec (void)
{
  void *p = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  long rc = mprotect (p, 4096, PROT_READ | PROT_EXEC);
  munmap (p, 4096);
  return rc;
}

static long
do_memfd (void)
{
  long fd = syscall (SYS_memfd_create, "probe", 0);
  if (fd >= 0)
    close ((int) fd);
  return fd;
}

static long
do_getrandom (void)
{
  char buf[16];
  return syscall (SYS_getrandom, buf, sizeof buf, 0);
}

static long
do_io_uring (void)
{
  char params[120]; /* struct io_uring_params */
  memset (params, 0, sizeof params);
  long fd = syscall (425 /* io_uring_setup */, 1, params);
  if (fd >= 0)
    close ((int) fd);
  return fd;
}

static long
do_clone3 (void)
{
  /* A zero-sized argument: EINVAL from the kernel, ENOSYS from the profile. */
  return syscall (435 /* clone3 */, NULL, 0);
}

static long
do_userfaultfd (void)
{
  long fd = syscall (SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
  if (fd >= 0)
    close ((int) fd);
  return fd;
}

/* PTRACE_SEIZE does not stop the tracee; if it succeeds (the attack
 * worked), stop it, wait for the stop and detach, so it runs on. */
static long
seize (pid_t pid)
{
  long rc = ptrace (PTRACE_SEIZE, pid, NULL, NULL);
  if (rc == 0)
    {
      int status;
      if (ptrace (PTRACE_INTERRUPT, pid, NULL, NULL) == 0)
        waitpid (pid, &status, __WALL);
      ptrace (PTRACE_DETACH, pid, NULL, NULL);
    }
  return rc;
}

static long
do_ptrace_host (void)
{
  return seize ((pid_t) host_pid);
}

static long
do_ptrace_init (void)
{
  return seize (1);
}

static long
vm_read (pid_t pid)
{
  char buf[8];
  static char there[8];
  struct iovec local = { buf, sizeof buf }, remote = { there, sizeof there };
  return syscall (SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
}

static long
do_vm_read_host (void)
{
  return vm_read ((pid_t) host_pid);
}

static long
do_vm_read_init (void)
{
  return vm_read (1);
}

static long
do_personality_query (void)
{
  return syscall (SYS_personality, 0xffffffffUL);
}

static long
do_keyctl (void)
{
  return syscall (SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
}

/* Calls that would not be harmful even if allowed (see the top). */
#define BAD ((void *) 1)
static const struct timespec bad_ts = { 0, -1 };
static const struct
{
  long tv_sec, tv_usec;
} bad_tv = { 0, -1 };

static long
probe_raw (const char *name)
{
#define RAW(n, ...)                                                                                                    \
  if (strcmp (name, n) == 0)                                                                                           \
    return syscall (__VA_ARGS__);
  RAW ("mount", SYS_mount, "none", "/nonexistent-probe", "tmpfs", 0, NULL)
  RAW ("umount2", SYS_umount2, "/nonexistent-probe", 0)
  RAW ("pivot_root", SYS_pivot_root, "/nonexistent-probe", "/nonexistent-probe")
  RAW ("add_key", SYS_add_key, "user", "ohbox-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING)
  RAW ("request_key", SYS_request_key, "user", "ohbox-probe-none", NULL, 0)
  RAW ("bpf", SYS_bpf, 0 /* BPF_MAP_CREATE */, BAD, 0)
  RAW ("perf_event_open", SYS_perf_event_open, BAD, 0, -1, -1, 0)
  RAW ("open_by_handle_at", SYS_open_by_handle_at, -1, BAD, 0)
  RAW ("name_to_handle_at", SYS_name_to_handle_at, -1, "/nonexistent-probe", BAD, BAD, 0)
  RAW ("kexec_load", SYS_kexec_load, 0, 0, NULL, 0xdead0000UL)
  RAW ("kexec_file_load", SYS_kexec_file_load, -1, -1, 0, NULL, 0xdead0000UL)
  RAW ("init_module", SYS_init_module, BAD, 0, "")
  RAW ("finit_module", SYS_finit_module, -1, "", 0)
  RAW ("delete_module", SYS_delete_module, "ohbox_probe_none", O_NONBLOCK)
  RAW ("clock_settime", SYS_clock_settime, CLOCK_REALTIME, &bad_ts)
  RAW ("settimeofday", SYS_settimeofday, &bad_tv, NULL)
  RAW ("clock_adjtime", SYS_clock_adjtime, CLOCK_REALTIME, BAD)
  RAW ("swapon", SYS_swapon, "/nonexistent-probe", 0)
  RAW ("swapoff", SYS_swapoff, "/nonexistent-probe")
  RAW ("reboot", SYS_reboot, 0x1234, 0x5678, 0, NULL)
  RAW ("acct", SYS_acct, "/nonexistent-probe/acct")
  RAW ("quotactl", SYS_quotactl, 0, NULL, 0, NULL)
  RAW ("lookup_dcookie", SYS_lookup_dcookie, 0, NULL, 0)
  RAW ("personality_unsafe", SYS_personality, 0x0400000UL /* READ_IMPLIES_EXEC */)
  RAW ("personality_no_aslr", SYS_personality, 0x0040000UL /* ADDR_NO_RANDOMIZE */)
  RAW ("syslog", SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0)
  RAW ("iopl", SYS_iopl, 4)
  RAW ("ioperm", SYS_ioperm, 0, 0, 0)
  RAW ("fsopen", 430 /* fsopen */, "ohbox-probe-nofs", 0)
  RAW ("open_tree", 428 /* open_tree */, -1, "/nonexistent-probe", 0)
  RAW ("move_mount", 429 /* move_mount */, -1, "", -1, "", 0)
  RAW ("uselib", SYS_uselib, "/nonexistent-probe")
  RAW ("mbind", SYS_mbind, NULL, 0, 0, NULL, 0, 0)
  RAW ("kcmp", SYS_kcmp, 1, 1, 0, 0, 0)
#undef RAW
  errno = ENOENT;
  return -2;
}

static const struct
{
  const char *name;
  long (*fn) (void);
  int child; /* run in a forked child */
  int needs_host;
} probes[] = {
  { "unshare_user", do_unshare_user, 1, 0 },
  { "unshare_ns", do_unshare_ns, 1, 0 },
  { "setns", do_setns, 1, 0 },
  { "clone_newns", do_clone_newns, 1, 0 },
  { "keyctl", do_keyctl, 0, 0 },
  { "userfaultfd", do_userfaultfd, 0, 0 },
  { "ptrace_host", do_ptrace_host, 0, 1 },
  { "process_vm_readv_host", do_vm_read_host, 0, 1 },
  { "ptrace_init", do_ptrace_init, 0, 0 },
  { "process_vm_readv_init", do_vm_read_init, 0, 0 },
  { "io_uring_setup", do_io_uring, 0, 0 },
  { "clone3", do_clone3, 0, 0 },
  { "thread", do_thread, 0, 0 },
  { "fork", do_fork, 0, 0 },
  { "mmap_mprotect_exec", do_mmap_exec, 0, 0 },
  { "memfd_create", do_memfd, 0, 0 },
  { "getrandom", do_getrandom, 0, 0 },
  { "personality_query", do_personality_query, 0, 0 },
};

/* The probes of probe_raw, in order. */
static const char *const raw_names[] = { "mount",
                                         "umount2",
                                         "pivot_root",
                                         "add_key",
                                         "request_key",
                                         "bpf",
                                         "perf_event_open",
                                         "open_by_handle_at",
                                         "name_to_handle_at",
                                         "kexec_load",
                                         "kexec_file_load",
                                         "init_module",
                                         "finit_module",
                                         "delete_module",
                                         "clock_settime",
                                         "settimeofday",
                                         "clock_adjtime",
                                         "swapon",
                                         "swapoff",
                                         "reboot",
                                         "acct",
                                         "quotactl",
                                         "lookup_dcookie",
                                         "personality_unsafe",
                                         "personality_no_aslr",
                                         "syslog",
                                         "iopl",
                                         "ioperm",
                                         "fsopen",
                                         "open_tree",
                                         "move_mount",
                                         "uselib",
                                         "mbind",
                                         "kcmp" };

static int
wanted (int argc, char **argv, const char *name)
{
  if (argc <= 2)
    return 1;
  for (int i = 2; i < argc; i++)
    if (strcmp (argv[i], name) == 0)
      return 1;
  return 0;
}

int
main (int argc, char **argv)
{
  host_pid = argc > 1 ? strtol (argv[1], NULL, 10) : 0;
  setvbuf (stdout, NULL, _IOLBF, 0);
  for (size_t i = 0; i < sizeof raw_names / sizeof raw_names[0]; i++)
    if (wanted (argc, argv, raw_names[i]))
      {
        errno = 0;
        long rc = probe_raw (raw_names[i]);
        report (raw_names[i], rc, errno);
      }
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
    {
      if (!wanted (argc, argv, probes[i].name) || (probes[i].needs_host && host_pid <= 0))
        continue;
      int e = 0;
      errno = 0;
      long rc = probes[i].child ? in_child (probes[i].fn, &e) : probes[i].fn ();
      report (probes[i].name, rc, probes[i].child ? e : errno);
    }
  static const struct
  {
    const char *name;
    int domain, type;
  } socks[] = { { "socket_inet", AF_INET, SOCK_STREAM },
                { "socket_inet_udp", AF_INET, SOCK_DGRAM },
                { "socket_unix", AF_UNIX, SOCK_STREAM },
                { "socket_vsock", AF_VSOCK, SOCK_STREAM } };
  for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
    if (wanted (argc, argv, socks[i].name))
      {
        errno = 0;
        long rc = do_socket (socks[i].domain, socks[i].type);
        report (socks[i].name, rc, errno);
      }
  return 0;
}
