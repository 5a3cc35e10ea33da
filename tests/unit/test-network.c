/* test-network.c: -p parsing and host port leases (network_ports.c). */
#include "config.h"
#include "network/network.h"
#include "common/utils.h"
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

static bool
parse_ok (const char *spec, struct ohbox_publish *p)
{
  ohbox_error_t err = NULL;
  int r = ohbox_publish_parse (spec, p, &err);
  ohbox_error_release (&err);
  return r == 0;
}

static void
test_parse (void)
{
  struct ohbox_publish p;
  CHECK (parse_ok ("80", &p));
  CHECK (p.host_lo == 0 && p.ctr_lo == 80 && p.ctr_hi == 80 && p.proto == IPPROTO_TCP
         && p.host_ip.s_addr == INADDR_ANY);
  CHECK (parse_ok ("8080:80/udp", &p));
  CHECK (p.host_lo == 8080 && p.host_hi == 8080 && p.ctr_lo == 80 && p.proto == IPPROTO_UDP);
  CHECK (parse_ok ("127.0.0.1:8080:80", &p));
  CHECK (p.host_ip.s_addr == htonl (INADDR_LOOPBACK) && p.host_lo == 8080);
  CHECK (parse_ok ("127.0.0.1::80", &p));
  CHECK (p.host_ip.s_addr == htonl (INADDR_LOOPBACK) && p.host_lo == 0 && p.ctr_lo == 80);
  CHECK (parse_ok ("30000-30009:30000-30009", &p));
  CHECK (p.host_lo == 30000 && p.host_hi == 30009 && p.ctr_lo == 30000 && p.ctr_hi == 30009);
  /* a pool: a host range for one container port */
  CHECK (parse_ok ("30000-39999:8000", &p));
  CHECK (p.host_lo == 30000 && p.host_hi == 39999 && p.ctr_lo == 8000 && p.ctr_hi == 8000);
  CHECK (parse_ok ("9000-9002", &p));
  CHECK (p.host_lo == 0 && p.ctr_lo == 9000 && p.ctr_hi == 9002);
  static const char *const bad[] = { "",    "0",   "65536",     "80/sctp",     "a:80", "1.2.3:80:80", "1-3:1-2",
                                     "5-3", "80:", ":80:80:80", "[::1]:80:80", "80-",  "1:2:3:4",     "1-2000" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK (!parse_ok (bad[i], &p), "`%s` accepted", bad[i]);
}

/* A scratch NETROOT with ip/ and port/, and an owner directory. */
static int
scratch (char *dir, char *owner)
{
  strcpy (dir, "/tmp/ohbox-test-net.XXXXXX");
  if (mkdtemp (dir) == NULL)
    return -1;
  snprintf (owner, PATH_MAX, "%s/owner", dir);
  cleanup_free char *port = xasprintf ("%s/port", dir);
  if (mkdir (owner, 0700) < 0 || mkdir (port, 0700) < 0)
    return -1;
  return open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static uint16_t
free_port (void)
{
  int fd = socket (AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET };
  socklen_t len = sizeof sa;
  bind (fd, (struct sockaddr *) &sa, sizeof sa);
  getsockname (fd, (struct sockaddr *) &sa, &len);
  close (fd);
  return ntohs (sa.sin_port);
}

static void
test_allocate (void)
{
  char dir[64], owner[PATH_MAX], other[PATH_MAX];
  cleanup_close int fd = scratch (dir, owner);
  CHECK (fd >= 0);
  snprintf (other, sizeof other, "%s/other", dir);
  CHECK (mkdir (other, 0700) == 0);
  uint16_t port = free_port ();
  struct ohbox_publish req = { .host_lo = port, .host_hi = port, .ctr_lo = 80, .ctr_hi = 80, .proto = IPPROTO_TCP };
  struct ohbox_port_mapping *maps = NULL;
  int *fds = NULL;
  size_t n = 0;
  ohbox_error_t err = NULL;
  CHECK (ohbox_ports_allocate (fd, owner, &req, 1, &maps, &n, &fds, &err) == 0, "%s", err ? err->msg : "");
  CHECK (n == 1 && maps[0].host_port == port && maps[0].ctr_port == 80);
  char name[32] = "port/";
  ohbox_port_lease_name (IPPROTO_TCP, port, name + 5);
  CHECK (ohbox_lease_held (fd, name) == 1);
  /* another owner is refused while the lease is held, with the port named */
  struct ohbox_port_mapping *m2 = NULL;
  int *f2 = NULL;
  size_t n2 = 0;
  CHECK (ohbox_ports_allocate (fd, other, &req, 1, &m2, &n2, &f2, &err) < 0);
  CHECK (err && strstr (err->msg, "Address already in use") && err->kind == OHBOX_ERR_USAGE, "%s", err ? err->msg : "");
  ohbox_error_release (&err);
  /* release by the wrong owner does nothing; by the owner, frees it */
  CHECK (!ohbox_ports_release_one (fd, other, IPPROTO_TCP, port));
  CHECK (ohbox_ports_release_one (fd, owner, IPPROTO_TCP, port));
  CHECK (ohbox_lease_held (fd, name) == 0);
  /* still bound by the first allocation's socket: the host "uses" it */
  CHECK (ohbox_ports_allocate (fd, other, &req, 1, &m2, &n2, &f2, &err) < 0);
  ohbox_error_release (&err);
  close (fds[0]);
  free (fds);
  free (maps);
  CHECK (ohbox_ports_allocate (fd, other, &req, 1, &m2, &n2, &f2, &err) == 0, "%s", err ? err->msg : "");
  /* a stale lease (owner gone) is reclaimed */
  CHECK (rmdir (other) == 0);
  CHECK (ohbox_lease_held (fd, name) == 0);
  CHECK (faccessat (fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
  close (f2[0]);
  free (f2);
  free (m2);
  ohbox_rm_rf_at (AT_FDCWD, dir, NULL);
}

static void
test_pool (void)
{
  char dir[64], owner[PATH_MAX];
  cleanup_close int fd = scratch (dir, owner);
  CHECK (fd >= 0);
  uint16_t a = free_port ();
  /* a two-port pool: two containers ports get both, distinct; a third fails */
  struct ohbox_publish req[3];
  for (int i = 0; i < 3; i++)
    req[i] = (struct ohbox_publish){ .host_lo = a,
                                     .host_hi = (uint16_t) (a + 1),
                                     .ctr_lo = (uint16_t) (80 + i),
                                     .ctr_hi = (uint16_t) (80 + i),
                                     .proto = IPPROTO_UDP };
  struct ohbox_port_mapping *maps = NULL;
  int *fds = NULL;
  size_t n = 0;
  ohbox_error_t err = NULL;
  int r = ohbox_ports_allocate (fd, owner, req, 2, &maps, &n, &fds, &err);
  if (r < 0 && err && err->errno_value == EADDRINUSE)
    {
      /* a+1 happened to be in use on this host */
      ohbox_error_release (&err);
      unit_skip ("port %u is in use on this host", a + 1);
      ohbox_rm_rf_at (AT_FDCWD, dir, NULL);
      return;
    }
  CHECK (r == 0 && n == 2, "%s", err ? err->msg : "");
  CHECK (maps[0].host_port != maps[1].host_port);
  CHECK (maps[0].host_port >= a && maps[0].host_port <= a + 1 && maps[1].host_port >= a && maps[1].host_port <= a + 1);
  for (size_t i = 0; i < n; i++)
    close (fds[i]);
  free (fds);
  free (maps);
  /* leases remain: the same owner's next allocation from the pool fails */
  CHECK (ohbox_ports_allocate (fd, owner, &req[2], 1, &maps, &n, &fds, &err) < 0);
  CHECK (err && strstr (err->msg, "no free host port"), "%s", err ? err->msg : "");
  ohbox_error_release (&err);
  ohbox_rm_rf_at (AT_FDCWD, dir, NULL);
}

UNIT_MAIN_BEGIN ("test-network")
RUN_TEST (test_parse);
RUN_TEST (test_allocate);
RUN_TEST (test_pool);
UNIT_MAIN_END
