/* network_ports.c: -p parsing and host port allocation (see network.h). */
#include "config.h"
#include "network/network.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

static int
parse_range (const char *s, uint16_t *lo, uint16_t *hi)
{
  char *end;
  errno = 0;
  unsigned long a = strtoul (s, &end, 10), b;
  if (end == s || errno || a < 1 || a > 65535)
    return -1;
  if (*end == '-')
    {
      const char *t = end + 1;
      b = strtoul (t, &end, 10);
      if (end == t || errno || b < a || b > 65535)
        return -1;
    }
  else
    b = a;
  if (*end != '\0')
    return -1;
  *lo = (uint16_t) a;
  *hi = (uint16_t) b;
  return 0;
}

int
ohbox_publish_parse (const char *spec, struct ohbox_publish *ret, ohbox_error_t *err)
{
  memset (ret, 0, sizeof *ret);
  ret->proto = IPPROTO_TCP;
  if (strlen (spec) > 64)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%.64s...`: too long", spec);
  cleanup_free char *s = xstrdup (spec);
  char *slash = strchr (s, '/');
  if (slash)
    {
      *slash++ = '\0';
      if (strcmp (slash, "udp") == 0)
        ret->proto = IPPROTO_UDP;
      else if (strcmp (slash, "tcp") != 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%s`: the protocol is tcp or udp", spec);
    }
  if (s[0] == '[')
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "-p `%s`: IPv6 host addresses are not supported", spec);
  char *parts[3] = { NULL, NULL, NULL };
  size_t n = 0;
  for (char *p = s, *c; n < 3; p = c + 1)
    {
      parts[n++] = p;
      c = strchr (p, ':');
      if (c == NULL)
        break;
      *c = '\0';
      if (n == 3)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%s`: use [IP:][HOSTPORT:]CTRPORT[/tcp|/udp]", spec);
    }
  const char *ip = n == 3 ? parts[0] : NULL;
  const char *host = n >= 2 ? parts[n - 2] : NULL;
  const char *ctr = parts[n - 1];
  if (ip && inet_pton (AF_INET, ip, &ret->host_ip) != 1)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%s`: `%s` is not an IPv4 address", spec, ip);
  if (parse_range (ctr, &ret->ctr_lo, &ret->ctr_hi) < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%s`: bad container port `%s` (1-65535 or A-B)", spec,
                        ctr);
  if (host && *host && parse_range (host, &ret->host_lo, &ret->host_hi) < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%s`: bad host port `%s` (1-65535 or A-B)", spec, host);
  unsigned nctr = ret->ctr_hi - ret->ctr_lo + 1u, nhost = ret->host_hi - ret->host_lo + 1u;
  if (nctr > OHBOX_NET_MAX_PORTS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid -p `%s`: at most %d ports per sandbox", spec,
                        OHBOX_NET_MAX_PORTS);
  if (ret->host_lo && nctr != 1 && nhost != nctr)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "invalid -p `%s`: the host range must be as long as the container range (or give one "
                        "container port to pick a host port from the range)",
                        spec);
  return 0;
}

void
ohbox_port_lease_name (int proto, uint16_t port, char buf[16])
{
  snprintf (buf, 16, "%s-%u", proto == IPPROTO_UDP ? "udp" : "tcp", (unsigned) port);
}

int
ohbox_lease_held (int dirfd, const char *name)
{
  char target[PATH_MAX];
  ssize_t n = readlinkat (dirfd, name, target, sizeof target - 1);
  if (n < 0)
    return 0;
  target[n] = '\0';
  if (access (target, F_OK) == 0)
    return 1;
  /* The owner is gone: the lease is stale (we hold the network lock). */
  unlinkat (dirfd, name, 0);
  return 0;
}

bool
ohbox_ports_lease_owned (int netdirfd, const char *owner, int proto, uint16_t port)
{
  char name[32], target[PATH_MAX];
  ohbox_port_lease_name (proto, port, name + 5);
  memcpy (name, "port/", 5);
  ssize_t n = readlinkat (netdirfd, name, target, sizeof target - 1);
  if (n < 0)
    return false;
  target[n] = '\0';
  return strcmp (target, owner) == 0;
}

bool
ohbox_ports_release_one (int netdirfd, const char *owner, int proto, uint16_t port)
{
  if (!ohbox_ports_lease_owned (netdirfd, owner, proto, port))
    return false;
  char name[32];
  ohbox_port_lease_name (proto, port, name + 5);
  memcpy (name, "port/", 5);
  return unlinkat (netdirfd, name, 0) == 0;
}

/* A socket bound to IP:PORT, or -1 (errno) when the host uses it. */
static int
reserve (struct in_addr ip, uint16_t port, int proto)
{
  int fd = socket (AF_INET, (proto == IPPROTO_UDP ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons (port), .sin_addr = ip };
  if (bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    {
      int e = errno;
      close (fd);
      errno = e;
      return -1;
    }
  return fd;
}

static void
ephemeral_range (uint16_t *lo, uint16_t *hi)
{
  *lo = 32768;
  *hi = 60999;
  char *text = NULL;
  size_t len;
  unsigned a, b;
  if (ohbox_read_file_at (AT_FDCWD, "/proc/sys/net/ipv4/ip_local_port_range", 64, &text, &len, NULL) == 0
      && sscanf (text, "%u %u", &a, &b) == 2 && a >= 1024 && a <= b && b <= 65535)
    {
      *lo = (uint16_t) a;
      *hi = (uint16_t) b;
    }
  free (text);
}

struct alloc
{
  int netdirfd;
  const char *owner;
  struct ohbox_port_mapping *maps;
  int *fds;
  size_t n;
};

static bool
taken_here (struct alloc *a, int proto, uint16_t port)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->maps[i].proto == proto && a->maps[i].host_port == port)
      return true;
  return false;
}

/* Leases PORT for this sandbox: 0, or -1 with errno (EADDRINUSE: in use by
 * ohbox or by the host). */
static int
try_port (struct alloc *a, struct in_addr ip, int proto, uint16_t port, uint16_t ctr)
{
  char name[32];
  memcpy (name, "port/", 5);
  ohbox_port_lease_name (proto, port, name + 5);
  if (taken_here (a, proto, port) || ohbox_lease_held (a->netdirfd, name))
    {
      errno = EADDRINUSE;
      return -1;
    }
  int fd = reserve (ip, port, proto);
  if (fd < 0)
    return -1;
  if (symlinkat (a->owner, a->netdirfd, name) < 0)
    {
      int e = errno;
      close (fd);
      errno = e;
      return -1;
    }
  a->maps[a->n] = (struct ohbox_port_mapping){ .host_ip = ip, .host_port = port, .ctr_port = ctr, .proto = proto };
  a->fds[a->n] = fd;
  a->n++;
  return 0;
}

/* One free port of [LO, HI], searched from a random point (concurrent
 * sandboxes rarely probe the same ports). */
static int
pick_port (struct alloc *a, struct in_addr ip, int proto, uint16_t lo, uint16_t hi, uint16_t ctr)
{
  unsigned span = hi - lo + 1u, start = 0;
  if (getrandom (&start, sizeof start, GRND_NONBLOCK) < 0)
    start = (unsigned) getpid ();
  for (unsigned i = 0; i < span; i++)
    {
      uint16_t port = (uint16_t) (lo + (start + i) % span);
      if (try_port (a, ip, proto, port, ctr) == 0)
        return 0;
      if (errno != EADDRINUSE && errno != EACCES)
        return -1;
    }
  errno = EADDRINUSE;
  return -1;
}

int
ohbox_ports_allocate (int netdirfd, const char *owner, const struct ohbox_publish *reqs, size_t n,
                      struct ohbox_port_mapping **ret, size_t *ret_n, int **ret_fds, ohbox_error_t *err)
{
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += reqs[i].ctr_hi - reqs[i].ctr_lo + 1u;
  if (total > OHBOX_NET_MAX_PORTS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many published ports (at most %d)", OHBOX_NET_MAX_PORTS);
  struct alloc a = { .netdirfd = netdirfd,
                     .owner = owner,
                     .maps = xcalloc (total + 1, sizeof (*a.maps)),
                     .fds = xcalloc (total + 1, sizeof (int)) };
  uint16_t elo, ehi;
  ephemeral_range (&elo, &ehi);
  for (size_t i = 0; i < n; i++)
    {
      const struct ohbox_publish *r = &reqs[i];
      char ip[INET_ADDRSTRLEN];
      inet_ntop (AF_INET, &r->host_ip, ip, sizeof ip);
      const char *proto = r->proto == IPPROTO_UDP ? "udp" : "tcp";
      for (unsigned c = r->ctr_lo; c <= r->ctr_hi; c++)
        {
          int rc;
          uint16_t fixed = 0;
          if (r->host_lo == 0)
            rc = pick_port (&a, r->host_ip, r->proto, elo, ehi, (uint16_t) c);
          else if (r->ctr_lo == r->ctr_hi && r->host_lo != r->host_hi)
            rc = pick_port (&a, r->host_ip, r->proto, r->host_lo, r->host_hi, (uint16_t) c);
          else
            {
              fixed = (uint16_t) (r->host_lo + (c - r->ctr_lo));
              rc = try_port (&a, r->host_ip, r->proto, fixed, (uint16_t) c);
            }
          if (rc == 0)
            continue;
          int e = errno;
          if (fixed)
            ohbox_error (err, OHBOX_ERR_USAGE, e, "publish host port `%s:%u/%s`", ip, (unsigned) fixed, proto);
          else
            ohbox_error (err, OHBOX_ERR_USAGE, e, "publish container port %u/%s: no free host port in %u-%u", c, proto,
                         r->host_lo ? r->host_lo : elo, r->host_lo ? r->host_hi : ehi);
          if (e == EADDRINUSE)
            ohbox_error_hint (err, "stop what uses it, or choose another host port (or let ohbox choose: -p %u)", c);
          else if (e == EADDRNOTAVAIL)
            ohbox_error_hint (err, "`%s` is not an address of this host", ip);
          for (size_t k = 0; k < a.n; k++)
            {
              ohbox_ports_release_one (netdirfd, owner, a.maps[k].proto, a.maps[k].host_port);
              close (a.fds[k]);
            }
          free (a.maps);
          free (a.fds);
          return -1;
        }
    }
  *ret = a.maps;
  *ret_n = a.n;
  *ret_fds = a.fds;
  return 0;
}
