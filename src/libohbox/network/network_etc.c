/* network_etc.c: the sandbox's generated /etc/hosts, /etc/hostname and
 * /etc/resolv.conf (see network.h): written in its state directory, then
 * bound over the image's (root) or copied into its upper dir (rootless). */
#include "config.h"
#include "network/network.h"
#include "network/network_internal.h"
#include "sandbox/linux.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One of the sandbox's /etc files in its state directory: they live as
 * long as the sandbox and are rewritten at every start, so no fsync (three
 * of them cost milliseconds per start on a disk-backed state root);
 * readable by every user of the sandbox. */
static int
write_etc_file (int dirfd, const char *name, const char *text, ohbox_error_t *err)
{
  if (ohbox_write_file_nosync (dirfd, name, text, strlen (text), err) < 0)
    return -1;
  if (fchmodat (dirfd, name, 0644, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "chmod `%s`", name);
  return 0;
}

static bool
is_loopback_ns (const char *line)
{
  const char *p = line + strlen ("nameserver");
  while (*p == ' ' || *p == '\t')
    p++;
  return strncmp (p, "127.", 4) == 0 || strncmp (p, "::1", 3) == 0;
}

/* resolv.conf for the sandbox: --dns, else the host's without loopback
 * servers (unreachable from the sandbox; systemd-resolved's upstream list
 * when that is the host's), else public resolvers. */
static char *
make_resolv (const struct ohbox_run_options *o, bool keep_loopback, ohbox_error_t *err)
{
  struct ohbox_buf b = { 0 };
  if (o->dns && o->dns[0])
    {
      for (size_t i = 0; o->dns[i]; i++)
        {
          unsigned char tmp[16];
          if (i >= OHBOX_NET_MAX_DNS)
            {
              ohbox_buf_free (&b);
              ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many --dns (at most %d)", OHBOX_NET_MAX_DNS);
              return NULL;
            }
          if (inet_pton (AF_INET, o->dns[i], tmp) != 1 && inet_pton (AF_INET6, o->dns[i], tmp) != 1)
            {
              ohbox_buf_free (&b);
              ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid --dns `%s`: an IP address", o->dns[i]);
              return NULL;
            }
          cleanup_free char *l = xasprintf ("nameserver %s\n", o->dns[i]);
          ohbox_buf_append (&b, l, strlen (l));
        }
      return b.data;
    }
  const char *files[] = { "/etc/resolv.conf", "/run/systemd/resolve/resolv.conf" };
  for (size_t f = 0; f < 2; f++)
    {
      cleanup_free char *text = NULL;
      size_t len;
      if (ohbox_read_file_at (AT_FDCWD, files[f], RESOLV_MAX, &text, &len, NULL) < 0)
        continue;
      int servers = 0;
      for (char *line = strtok (text, "\n"); line; line = strtok (NULL, "\n"))
        {
          bool ns = strncmp (line, "nameserver", 10) == 0;
          if (ns && !keep_loopback && is_loopback_ns (line))
            continue;
          servers += ns;
          ohbox_buf_append (&b, line, strlen (line));
          ohbox_buf_append (&b, "\n", 1);
        }
      if (servers > 0)
        return b.data;
      ohbox_buf_free (&b);
      memset (&b, 0, sizeof b);
    }
  const char *dflt = "nameserver 8.8.8.8\nnameserver 8.8.4.4\n";
  ohbox_buf_append (&b, dflt, strlen (dflt));
  return b.data;
}

/* --add-host NAME:IP (the IP may be v6, so the name ends at the first
 * colon): one more line of /etc/hosts each, checked, as Docker's. */
static int
add_hosts (char **hosts, char **add, ohbox_error_t *err)
{
  size_t n = 0;
  for (size_t i = 0; add && add[i]; i++, n++)
    {
      if (n >= OHBOX_SANDBOX_MAX_ADD_HOSTS)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many --add-host (at most %d)", OHBOX_SANDBOX_MAX_ADD_HOSTS);
      const char *colon = strchr (add[i], ':');
      size_t len = colon ? (size_t) (colon - add[i]) : 0;
      bool name_ok = len > 0 && len <= 253 && add[i][0] != '-';
      for (size_t k = 0; name_ok && k < len; k++)
        {
          char c = add[i][k];
          name_ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-'
                    || c == '_';
        }
      unsigned char buf[sizeof (struct in6_addr)];
      if (!name_ok || (inet_pton (AF_INET, colon + 1, buf) != 1 && inet_pton (AF_INET6, colon + 1, buf) != 1))
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid --add-host `%s`: use NAME:IP", add[i]);
      char *more = xasprintf ("%s%s\t%.*s\n", *hosts, colon + 1, (int) len, add[i]);
      free (*hosts);
      *hosts = more;
    }
  return 0;
}

/* The IPv4 servers of resolv.conf TEXT into N->port.dns: the sandbox
 * reaches them on port 53 whatever its --egress (egress.h). */
static void
resolvers_of (struct ohbox_network *n, const char *text)
{
  cleanup_free char *copy = xstrdup (text);
  char *save = NULL;
  n->port.n_dns = 0;
  for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char addr[INET6_ADDRSTRLEN + 1];
      if (n->port.n_dns < OHBOX_NET_MAX_DNS && sscanf (line, "nameserver %46s", addr) == 1
          && inet_pton (AF_INET, addr, &n->port.dns[n->port.n_dns]) == 1)
        n->port.n_dns++;
    }
}

int
ohbox_network_plan_resolv (struct ohbox_network *n, const struct ohbox_run_options *o, ohbox_error_t *err)
{
  bool dns = o->dns && o->dns[0];
  if (n->mode == OHBOX_NETWORK_BRIDGE && geteuid () != 0 && !dns)
    n->resolv = xstrdup ("nameserver 10.0.2.3\n"); /* slirp4netns or pasta forwards it to the host's resolver */
  else
    n->resolv = make_resolv (o, n->mode == OHBOX_NETWORK_HOST, err);
  if (n->resolv == NULL)
    return -1;
  resolvers_of (n, n->resolv);
  return 0;
}

int
ohbox_network_write_etc (struct ohbox_network *n, int dirfd, const struct ohbox_run_options *o, const char *hostname,
                         ohbox_error_t *err)
{
  cleanup_free char *hosts = NULL;
  if (n->mode == OHBOX_NETWORK_HOST)
    {
      size_t len;
      if (ohbox_read_file_at (AT_FDCWD, "/etc/hosts", RESOLV_MAX, &hosts, &len, NULL) < 0)
        hosts = NULL;
    }
  if (hosts == NULL)
    {
      char ip[INET_ADDRSTRLEN] = "", gw[INET_ADDRSTRLEN] = "";
      cleanup_free char *self = NULL, *host = NULL;
      if (n->mode == OHBOX_NETWORK_BRIDGE)
        {
          inet_ntop (AF_INET, &n->ip, ip, sizeof ip);
          inet_ntop (AF_INET, &n->gw, gw, sizeof gw);
          self = xasprintf ("%s\t%s%s%s\n", ip, hostname, o->name ? " " : "", o->name ? o->name : "");
          host = xasprintf ("%s\thost.ohbox.internal\n", gw);
        }
      else
        /* No address of its own: the name still resolves, to loopback (as
         * Debian's 127.0.1.1), so that sudo and friends do not complain
         * `unable to resolve host`. */
        self = xasprintf ("127.0.1.1\t%s%s%s\n", hostname, o->name ? " " : "", o->name ? o->name : "");
      hosts = xasprintf ("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s%s", self ? self : "",
                         host ? host : "");
    }
  if (add_hosts (&hosts, o->add_hosts, err) < 0)
    return -1;
  cleanup_free char *hn = xasprintf ("%s\n", hostname);
  if (write_etc_file (dirfd, "hosts", hosts, err) < 0 || write_etc_file (dirfd, "hostname", hn, err) < 0
      || write_etc_file (dirfd, "resolv.conf", n->resolv, err) < 0)
    return ohbox_error_prefix (err, "write the sandbox's /etc files");
  return 0;
}

void
ohbox_network_mounts (struct ohbox_network *n, struct ohbox_mount_spec **mounts, size_t *n_mounts)
{
  static const char *const files[] = { "hosts", "hostname", "resolv.conf" };
  /* Rootless, bind sources cannot be cloned before the sandbox's user
   * namespace exists (mounts.c): the image's own files stay. */
  if (n == NULL || n->etc_dir == NULL || geteuid () != 0)
    return;
  struct ohbox_mount_spec *m = xcalloc (*n_mounts + 4, sizeof *m);
  for (size_t i = 0; i < 3; i++)
    {
      m[i].source = xasprintf ("%s/%s", n->etc_dir, files[i]);
      m[i].target = xasprintf ("/etc/%s", files[i]);
      m[i].fd = -1;
    }
  /* Ours first: a user's -v on the same path is mounted over them. */
  if (*n_mounts)
    memcpy (m + 3, *mounts, *n_mounts * sizeof *m);
  free (*mounts);
  *mounts = m;
  *n_mounts += 3;
}

int
ohbox_network_etc_into_upper (struct ohbox_network *n, const char *upper, ohbox_error_t *err)
{
  static const char *const files[] = { "hosts", "hostname", "resolv.conf" };
  if (n == NULL || n->etc_dir == NULL || geteuid () == 0 || upper == NULL)
    return 0;
  /* The upper dir is this sandbox's, new and the user's own: no one else
   * put anything there; still, nothing is followed. */
  cleanup_close int ufd = open (upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (ufd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "open `%s`", upper);
  if (mkdirat (ufd, "etc", 0755) < 0 && errno != EEXIST)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "create `%s/etc`", upper);
  cleanup_close int efd = openat (ufd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (efd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "open `%s/etc`", upper);
  for (size_t i = 0; i < 3; i++)
    {
      cleanup_free char *src = xasprintf ("%s/%s", n->etc_dir, files[i]);
      cleanup_free char *data = NULL;
      size_t len;
      if (ohbox_read_file_at (AT_FDCWD, src, RESOLV_MAX, &data, &len, err) < 0
          || write_etc_file (efd, files[i], data, err) < 0)
        return ohbox_error_prefix (err, "the sandbox's /etc/%s", files[i]);
    }
  return 0;
}
