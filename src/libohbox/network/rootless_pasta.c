/* rootless_pasta.c: networking for sandboxes of ordinary users through
 * pasta (Debian's passt package): user-mode TCP/IP like slirp4netns, but
 * published ports are plain sockets pasta binds on the host and splices to
 * the namespace (no user-mode TCP stack on the host side of loopback
 * traffic), and it configures the namespace itself.
 *
 * ohbox starts one per sandbox from the monitor, in the foreground (-f), so
 * it stays the monitor's child: the monitor stops it when the sandbox ends,
 * and a parent-death signal stops it if the monitor is killed. Readiness:
 * pasta writes its pid file (-P) once the namespace is configured and the
 * ports are bound; the pid file is a FIFO ohbox reads, so no polling. It is
 * spawned as soon as the sandbox's namespaces exist and waited for only
 * before the sandbox's command may run: pasta takes ~20 ms to start, and
 * meanwhile the id maps are written and the sandbox's mounts made. */
#include "config.h"
#include "network/network.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PASTA_BIN "pasta"
#define PASTA_READY_TIMEOUT_MS 5000
/* 2 per mapping (-t/-u and the spec) + the fixed options */
#define PASTA_FIXED_ARGS 40

bool
ohbox_pasta_available (void)
{
  return ohbox_net_tool_available (PASTA_BIN);
}

/* "-t" "[ADDR/]HOST:CTR" for M. */
static void
map_args (const struct ohbox_port_mapping *m, char **argv, size_t *n)
{
  argv[(*n)++] = xstrdup (m->proto == IPPROTO_UDP ? "-u" : "-t");
  if (m->host_ip.s_addr == htonl (INADDR_ANY))
    argv[(*n)++] = xasprintf ("%u:%u", (unsigned) m->host_port, (unsigned) m->ctr_port);
  else
    {
      char ip[INET_ADDRSTRLEN];
      inet_ntop (AF_INET, &m->host_ip, ip, sizeof ip);
      argv[(*n)++] = xasprintf ("%s/%u:%u", ip, (unsigned) m->host_port, (unsigned) m->ctr_port);
    }
}

static char **
build_argv (int userns, int netns, const char *state_dir, const struct ohbox_port_mapping *maps, size_t n_maps)
{
  char **argv = xcalloc (PASTA_FIXED_ARGS + 2 * n_maps, sizeof (char *));
  size_t n = 0;
  bool tcp = false, udp = false;
  static const char *const fixed[] = {
    PASTA_BIN,
    "--config-net",
    "-f",
    "-q",
    "-4",
    /* The same addresses as slirp4netns: /etc/hosts and the docs hold for both. */
    "-I",
    "tap0",
    "-a",
    "10.0.2.100",
    "-n",
    "24",
    "-g",
    "10.0.2.2",
    "--dns-forward",
    "10.0.2.3",
    /* Nothing from the sandbox to the host's loopback: no automatic
     * forwarding of the namespace's ports, and the gateway address is not
     * the host (what --disable-host-loopback is to slirp4netns). */
    "-T",
    "none",
    "-U",
    "none",
    "--no-map-gw",
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    argv[n++] = xstrdup (fixed[i]);
  for (size_t i = 0; i < n_maps; i++)
    {
      map_args (&maps[i], argv, &n);
      tcp |= maps[i].proto != IPPROTO_UDP;
      udp |= maps[i].proto == IPPROTO_UDP;
    }
  /* Explicit: otherwise pasta forwards UDP on the TCP ports too. */
  if (!tcp)
    {
      argv[n++] = xstrdup ("-t");
      argv[n++] = xstrdup ("none");
    }
  if (!udp)
    {
      argv[n++] = xstrdup ("-u");
      argv[n++] = xstrdup ("none");
    }
  argv[n++] = xstrdup ("-P");
  argv[n++] = xasprintf ("%s/pasta.ready", state_dir);
  argv[n++] = xstrdup ("--userns");
  argv[n++] = xasprintf ("/proc/self/fd/%d", userns);
  argv[n++] = xstrdup ("--netns");
  argv[n++] = xasprintf ("/proc/self/fd/%d", netns);
  argv[n] = NULL;
  return argv;
}

static void
free_argv (char **argv)
{
  for (size_t i = 0; argv && argv[i]; i++)
    free (argv[i]);
  free (argv);
}

int
ohbox_pasta_spawn (int userns, int netns, const char *state_dir, const struct ohbox_port_mapping *maps, size_t n_maps,
                   struct ohbox_net_helper *h, ohbox_error_t *err)
{
  cleanup_free char *fifo = xasprintf ("%s/pasta.ready", state_dir);
  cleanup_free char *log = xasprintf ("%s/pasta.log", state_dir);
  unlink (fifo);
  if (mkfifo (fifo, 0600) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "create `%s`", fifo);
  /* Read and write: no EOF and no POLLHUP before pasta opened it. */
  cleanup_close int rfd = open (fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (rfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "open `%s`", fifo);
  cleanup_close int logfd = open (log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (logfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "create `%s`", log);
  char **argv = build_argv (userns, netns, state_dir, maps, n_maps);
  pid_t parent = getpid ();
  pid_t child = fork ();
  if (child < 0)
    {
      free_argv (argv);
      return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "fork " PASTA_BIN);
    }
  if (child == 0)
    {
      /* Ends with the monitor, however the monitor ends. */
      prctl (PR_SET_PDEATHSIG, SIGTERM);
      if (getppid () != parent)
        _exit (1);
      fcntl (userns, F_SETFD, 0);
      fcntl (netns, F_SETFD, 0);
      ohbox_net_helper_child_stdio (logfd);
      execvp (PASTA_BIN, argv);
      _exit (127);
    }
  free_argv (argv);
  h->pid = child;
  h->pidfd = (int) syscall (SYS_pidfd_open, child, 0);
  h->ready_fd = steal_fd (&rfd);
  h->exit_fd = -1;
  return 0;
}

/* Why pasta gave up: the last line of its log TEXT (cut there) that is not
 * its complaint about a missing syslog, which it makes before every line
 * where /dev/log is absent (a sandbox's or a test's mount namespace).
 * NULL when there is none. */
static const char *
last_reason (char *text)
{
  const char *why = NULL;
  char *save = NULL;
  for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    if (*line && !(strncmp (line, "Failed to send ", 15) == 0 && strstr (line, "to syslog")))
      why = line;
  return why;
}

int
ohbox_pasta_wait (struct ohbox_net_helper *h, const char *state_dir, ohbox_error_t *err)
{
  cleanup_free char *fifo = xasprintf ("%s/pasta.ready", state_dir);
  cleanup_free char *log = xasprintf ("%s/pasta.log", state_dir);
  struct pollfd p[2] = { { .fd = h->ready_fd, .events = POLLIN }, { .fd = h->pidfd, .events = POLLIN } };
  char buf[32];
  ssize_t got = -1;
  int r;
  do
    r = poll (p, h->pidfd >= 0 ? 2 : 1, PASTA_READY_TIMEOUT_MS);
  while (r < 0 && errno == EINTR);
  if (r > 0 && (p[0].revents & POLLIN))
    got = read (h->ready_fd, buf, sizeof buf - 1);
  unlink (fifo);
  if (got > 0)
    {
      ohbox_net_helper_ready (h);
      return 0;
    }
  int status = ohbox_net_helper_kill (h);
  cleanup_free char *text = NULL;
  size_t len = 0;
  ohbox_error_t e = NULL;
  if (ohbox_read_file_at (AT_FDCWD, log, 4096, &text, &len, &e) < 0)
    ohbox_error_release (&e);
  const char *why = text ? last_reason (text) : NULL;
  if (WIFEXITED (status) && WEXITSTATUS (status) == 127)
    {
      ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, PASTA_BIN " cannot be run");
      ohbox_error_hint (err, "install the passt package, or use --network slirp4netns or none");
      return -1;
    }
  /* It ran and said why it gave up (often: no host route or address to
   * copy into the sandbox): installing it again would not help. */
  ohbox_error (err, OHBOX_ERR_GENERIC, 0, PASTA_BIN " did not set up the network%s%s%s (see `%s`)",
               r == 0 ? " in time" : "", why ? ": " : "", why ? why : "", log);
  ohbox_error_hint (err, "use --network slirp4netns or none");
  return -1;
}

void
ohbox_pasta_stop (pid_t pid)
{
  if (pid <= 0)
    return;
  kill (pid, SIGTERM);
  while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

void
ohbox_pasta_kill_recorded (pid_t pid, unsigned long long start)
{
  if (pid <= 0 || start == 0)
    return;
  /* Through a pidfd checked against the start time: a recycled pid is
   * never signalled. */
  int fd = (int) syscall (SYS_pidfd_open, pid, 0);
  if (fd < 0)
    return;
  if (ohbox_proc_starttime (pid) == start && syscall (SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0) == 0)
    {
      /* Until it is gone (a pidfd polls readable then, child or not): the
       * caller releases the port leases next, and pasta must not hold the
       * ports when another sandbox gets them. */
      struct pollfd p = { .fd = fd, .events = POLLIN };
      while (poll (&p, 1, 1000) < 0 && errno == EINTR)
        ;
    }
  close (fd);
}
