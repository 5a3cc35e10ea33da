/* rootless_net.c: networking for sandboxes of ordinary users, through
 * slirp4netns (pasta: rootless_pasta.c) (user-mode TCP/IP: no privilege needed). ohbox starts one per
 * sandbox once the sandbox's namespaces exist, and it lives exactly as long
 * as the monitor: its --exit-fd is a pipe whose write end only the monitor
 * holds, so slirp4netns exits when the monitor does, however it ends.
 * Published ports are slirp4netns host forwards (its API socket), bound in
 * the user's network namespace by slirp4netns itself. */
#include "config.h"
#include "network/network.h"
#include "common/utils.h"
#include "common/strv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define SLIRP_BIN "slirp4netns"
#define SLIRP_READY_TIMEOUT_MS 5000

bool
ohbox_net_tool_available (const char *name)
{
  cleanup_free char *found = ohbox_path_find (getenv ("PATH"), "/usr/local/bin:/usr/bin:/bin", name);
  return found != NULL;
}

bool
ohbox_slirp_available (void)
{
  return ohbox_net_tool_available (SLIRP_BIN);
}

void
ohbox_net_helper_child_stdio (int logfd)
{
  int null = open ("/dev/null", O_RDONLY);
  if (null >= 0)
    dup2 (null, 0);
  dup2 (logfd, 1);
  dup2 (logfd, 2);
  setpgid (0, 0);
  signal (SIGPIPE, SIG_DFL);
}

void
ohbox_net_helper_init (struct ohbox_net_helper *h)
{
  h->pid = 0;
  h->pidfd = h->ready_fd = h->exit_fd = -1;
}

void
ohbox_net_helper_ready (struct ohbox_net_helper *h)
{
  if (h->ready_fd >= 0)
    close (h->ready_fd);
  if (h->pidfd >= 0)
    close (h->pidfd);
  h->ready_fd = h->pidfd = -1;
}

int
ohbox_net_helper_kill (struct ohbox_net_helper *h)
{
  int status = 0;
  if (h->pid > 0)
    {
      kill (h->pid, SIGKILL);
      while (waitpid (h->pid, &status, 0) < 0 && errno == EINTR)
        ;
    }
  ohbox_net_helper_ready (h);
  if (h->exit_fd >= 0)
    close (h->exit_fd);
  ohbox_net_helper_init (h);
  return status;
}

int
ohbox_slirp_spawn (int userns, int netns, int log_dirfd, struct ohbox_net_helper *h, ohbox_error_t *err)
{
  int ready[2] = { -1, -1 }, ex[2] = { -1, -1 };
  /* Through the state dir's fd: a socket path is limited to 108 bytes,
   * state directories are not. */
  cleanup_free char *api = xasprintf ("--api-socket=/proc/self/fd/%d/slirp.sock", log_dirfd);
  cleanup_close int logfd = openat (log_dirfd, "slirp4netns.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "create `slirp4netns.log`");
  if (pipe2 (ready, O_CLOEXEC) < 0 || pipe2 (ex, O_CLOEXEC) < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_NETWORK, "pipe");
      goto fail;
    }
  char netpath[32], userpath[48], readyfd[16], exitfd[16];
  snprintf (netpath, sizeof netpath, "/proc/self/fd/%d", netns);
  snprintf (userpath, sizeof userpath, "--userns-path=/proc/self/fd/%d", userns);
  snprintf (readyfd, sizeof readyfd, "--ready-fd=%d", ready[1]);
  snprintf (exitfd, sizeof exitfd, "--exit-fd=%d", ex[0]);
  pid_t child = fork ();
  if (child < 0)
    {
      ohbox_error_sys (err, OHBOX_ERR_NETWORK, "fork " SLIRP_BIN);
      goto fail;
    }
  if (child == 0)
    {
      /* Only these two fds (and stdio) cross the exec. */
      fcntl (ready[1], F_SETFD, 0);
      fcntl (ex[0], F_SETFD, 0);
      fcntl (userns, F_SETFD, 0);
      fcntl (log_dirfd, F_SETFD, 0);
      fcntl (netns, F_SETFD, 0);
      ohbox_net_helper_child_stdio (logfd);
      /* 10.0.2.2 would otherwise be the host's 127.0.0.1: loopback-only
       * services of the user must not be reachable from the sandbox. */
      execlp (SLIRP_BIN, SLIRP_BIN, "--configure", "--mtu=65520", "--disable-host-loopback", api, readyfd, exitfd,
              "--netns-type=path", userpath, netpath, "tap0", (char *) NULL);
      _exit (127);
    }
  close (ready[1]);
  close (ex[0]);
  h->pid = child;
  h->pidfd = -1;
  h->ready_fd = ready[0];
  h->exit_fd = ex[1];
  return 0;
fail:
  for (int i = 0; i < 2; i++)
    {
      if (ready[i] >= 0)
        close (ready[i]);
      if (ex[i] >= 0)
        close (ex[i]);
    }
  return -1;
}

int
ohbox_slirp_wait (struct ohbox_net_helper *h, ohbox_error_t *err)
{
  struct pollfd p = { .fd = h->ready_fd, .events = POLLIN };
  char c = 0;
  int r;
  do
    r = poll (&p, 1, SLIRP_READY_TIMEOUT_MS);
  while (r < 0 && errno == EINTR);
  if (r > 0 && read (h->ready_fd, &c, 1) == 1 && c == '1')
    {
      ohbox_net_helper_ready (h);
      return 0;
    }
  int status = ohbox_net_helper_kill (h);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 127)
    ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, SLIRP_BIN " cannot be run");
  else
    ohbox_error (err, OHBOX_ERR_GENERIC, 0,
                 SLIRP_BIN " did not set up the network%s (see `slirp4netns.log` in the "
                           "sandbox's state directory)",
                 r == 0 ? " in time" : "");
  ohbox_error_hint (err, "install the slirp4netns package, or use --network none");
  return -1;
}

#define SLIRP_API_MAX 4096

int
ohbox_slirp_hostfwd (int dirfd, const struct ohbox_port_mapping *m, ohbox_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/slirp.sock", dirfd);
  cleanup_close int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "connect to " SLIRP_BIN "'s API socket");
  char hip[INET_ADDRSTRLEN];
  inet_ntop (AF_INET, &m->host_ip, hip, sizeof hip);
  json_t *req = json_pack ("{s:s, s:{s:s, s:s, s:i, s:i}}", "execute", "add_hostfwd", "arguments", "proto",
                           m->proto == IPPROTO_UDP ? "udp" : "tcp", "host_addr", hip, "host_port", (int) m->host_port,
                           "guest_port", (int) m->ctr_port);
  cleanup_free char *text = json_dumps (req, JSON_COMPACT);
  json_decref (req);
  if (ohbox_write_all (fd, text, strlen (text)) < 0 || shutdown (fd, SHUT_WR) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "write to " SLIRP_BIN "'s API socket");
  cleanup_free char *answer = NULL;
  size_t len;
  if (ohbox_read_fd (fd, SLIRP_BIN "'s answer", SLIRP_API_MAX, &answer, &len, err) < 0)
    return -1;
  json_t *j = json_loads (answer, 0, NULL);
  json_t *e = json_object_get (j, "error");
  int r = 0;
  if (j == NULL || e || json_object_get (j, "return") == NULL)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "publish host port `%s:%u/%s`: %s", hip, (unsigned) m->host_port,
                     m->proto == IPPROTO_UDP ? "udp" : "tcp",
                     json_string_value (json_object_get (e, "desc")) ?: "bad answer from " SLIRP_BIN);
  json_decref (j);
  return r;
}
