/* network.c: bridge networking for sandboxes, leases and release; see
 * network.h (the generated /etc files: network_etc.c). */
#include "config.h"
#include "network/network.h"
#include "network/network_internal.h"
#include "sandbox/linux.h"
#include "network/netlink.h"
#include "network/nft.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netfilter.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* Computed once per process (pthread_once: libohbox may be called from
 * several threads, ohbox.h). */
static char *rootless_root;
static pthread_once_t rootless_once = PTHREAD_ONCE_INIT;

static void
rootless_root_init (void)
{
  cleanup_free char *base = ohbox_runtime_base_dir ();
  rootless_root = xasprintf ("%s/net", base);
}

const char *
ohbox_network_root (void)
{
  const char *e = getenv ("OHBOX_NETROOT");
  if (e && *e)
    return e;
  if (geteuid () == 0)
    return "/run/ohbox/net";
  /* An ordinary user's leases are only the host ports slirp4netns binds. */
  pthread_once (&rootless_once, rootless_root_init);
  return rootless_root;
}

static int
open_netroot (ohbox_error_t *err)
{
  const char *root = ohbox_network_root ();
  int fd = ohbox_private_dir_open (root, err);
  if (fd < 0)
    return ohbox_error_prefix (err, "network state");
  if ((mkdirat (fd, "ip", 0700) < 0 && errno != EEXIST) || (mkdirat (fd, "port", 0700) < 0 && errno != EEXIST))
    {
      ohbox_error_sys (err, OHBOX_ERR_NETWORK, "create `%s/ip` and `%s/port`", root, root);
      close (fd);
      return -1;
    }
  return fd;
}

int
ohbox_netroot_open_locked (int *ret_lock, ohbox_error_t *err)
{
  int fd = open_netroot (err);
  if (fd < 0)
    return -1;
  *ret_lock = ohbox_lock_file (fd, "lock", true, false, err);
  if (*ret_lock < 0)
    {
      close (fd);
      return ohbox_error_prefix (err, "lock the network state");
    }
  return fd;
}

/* Whether a fixed host port of REQS is leased to a sandbox whose teardown
 * is at work (sandbox_internal.h: it exited, its network is being
 * released, and nobody waits for that): the lease goes in milliseconds. */
static bool
fixed_port_being_released (int netfd, const struct ohbox_publish *reqs, size_t n)
{
  for (size_t i = 0; i < n; i++)
    for (unsigned h = reqs[i].host_lo; reqs[i].host_lo && h <= reqs[i].host_hi; h++)
      {
        char name[32], owner[PATH_MAX];
        memcpy (name, "port/", 5);
        ohbox_port_lease_name (reqs[i].proto, (uint16_t) h, name + 5);
        ssize_t len = readlinkat (netfd, name, owner, sizeof owner - 1);
        if (len <= 0)
          continue;
        owner[len] = '\0';
        cleanup_close int dfd = open (owner, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0 && ohbox_state_teardown_busy (dfd))
          return true;
      }
  return false;
}

/* ohbox_ports_allocate, waiting (up to 10 s) for fixed ports that a
 * stopped sandbox's teardown still holds: `run --rm -p 8080:80` twice in a
 * row must not fail because the first returned before its teardown. The
 * network lock is let go while waiting (the teardown needs it). */
static int
allocate_ports (struct ohbox_network *n, int *netfd, int *lock, const struct ohbox_publish *reqs, size_t n_req,
                ohbox_error_t *err)
{
  for (int tries = 0;; tries++)
    {
      if (ohbox_ports_allocate (*netfd, n->state_dir, reqs, n_req, &n->maps, &n->n_maps, &n->port_fds, err) == 0)
        return 0;
      if ((*err)->errno_value != EADDRINUSE || tries >= 500 || !fixed_port_being_released (*netfd, reqs, n_req))
        return -1;
      ohbox_error_release (err);
      close (*lock);
      close (*netfd);
      *lock = *netfd = -1;
      struct timespec ts = { 0, 20 * 1000 * 1000 };
      nanosleep (&ts, NULL);
      *netfd = ohbox_netroot_open_locked (lock, err);
      if (*netfd < 0)
        return -1;
    }
}

int
ohbox_netdef_default (struct ohbox_netdef *d, ohbox_error_t *err)
{
  memset (d, 0, sizeof *d);
  const char *s = getenv ("OHBOX_NETWORK_SUBNET");
  if (s == NULL || *s == '\0')
    s = OHBOX_NET_DEFAULT_SUBNET;
  struct ohbox_cidr4 c;
  if (ohbox_cidr4_parse (s, true, &c) < 0 || !strchr (s, '/') || c.prefix < 16 || c.prefix > 24)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "subnet `%s`: use A.B.C.D/N with N from 16 to 24", s);
  snprintf (d->bridge, sizeof d->bridge, "%s", OHBOX_NET_BRIDGE);
  d->net = c.net;
  d->prefix = c.prefix;
  d->gw.s_addr = htonl (ntohl (c.net.s_addr) + 1);
  d->isolated = true;
  return 0;
}

/* Whether ip/ADDR in NETFD is held by a sandbox that exists. A stale one
 * (its owner's state is gone, e.g. removed by hand) is unlinked after every
 * element and neighbour entry of ADDR is deleted: left, they would send
 * host ports to, or lend their filters to, whichever sandbox gets ADDR
 * next. We hold the network lock. */
static bool
ip_lease_held (int netfd, const char *addr)
{
  char name[8 + INET_ADDRSTRLEN], target[PATH_MAX];
  snprintf (name, sizeof name, "ip/%s", addr);
  ssize_t n = readlinkat (netfd, name, target, sizeof target - 1);
  if (n < 0)
    return false;
  target[n] = '\0';
  if (access (target, F_OK) == 0)
    return true;
  ohbox_port_purge (addr);
  unlinkat (netfd, name, 0);
  return false;
}

/* An address of the subnet for OWNER, under the network lock. */
static int
lease_ip (int netfd, const char *owner, const struct ohbox_netdef *d, struct in_addr *ret, ohbox_error_t *err)
{
  struct in_addr net = d->net;
  int prefix = d->prefix;
  uint32_t size = 1u << (32 - prefix), first = 2, last = size - 2, start = first;
  char *hint = NULL, hint_name[IFNAMSIZ + 8];
  size_t len;
  /* Each network its own: the default one keeps its old file. */
  snprintf (hint_name, sizeof hint_name, d->name[0] ? "next.%s" : "next", d->bridge);
  if (ohbox_read_file_at (netfd, hint_name, 32, &hint, &len, NULL) == 0)
    {
      unsigned long v = strtoul (hint, NULL, 10);
      if (v >= first && v <= last)
        start = (uint32_t) v;
    }
  free (hint);
  uint32_t span = last - first + 1;
  for (uint32_t i = 0; i < span; i++)
    {
      uint32_t off = first + (start - first + i) % span;
      struct in_addr a = { .s_addr = htonl (ntohl (net.s_addr) + off) };
      char name[8 + INET_ADDRSTRLEN];
      memcpy (name, "ip/", 4);
      inet_ntop (AF_INET, &a, name + 3, INET_ADDRSTRLEN);
      if (ip_lease_held (netfd, name + 3))
        continue;
      if (symlinkat (owner, netfd, name) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "lease address `%s`", name + 3);
      char next[16];
      int n = snprintf (next, sizeof next, "%u", off + 1 > last ? first : off + 1);
      ohbox_write_file_atomic (netfd, hint_name, next, (size_t) n, 0600, NULL);
      *ret = a;
      return 0;
    }
  return ohbox_error (err, OHBOX_ERR_GENERIC, 0,
                      "no free address in the subnet of network `%s` (/%d): remove sandboxes",
                      d->name[0] ? d->name : "bridge", prefix);
}

static json_t *
ports_json (const struct ohbox_port_mapping *maps, size_t n)
{
  json_t *a = json_array ();
  for (size_t i = 0; i < n; i++)
    {
      char hip[INET_ADDRSTRLEN];
      inet_ntop (AF_INET, &maps[i].host_ip, hip, sizeof hip);
      json_array_append_new (a, json_pack ("{s:s, s:i, s:i, s:s}", "host_ip", hip, "host_port", (int) maps[i].host_port,
                                           "container_port", (int) maps[i].ctr_port, "protocol",
                                           maps[i].proto == IPPROTO_UDP ? "udp" : "tcp"));
    }
  return a;
}

static int
parse_publish (const struct ohbox_run_options *o, struct ohbox_publish **ret, size_t *ret_n, ohbox_error_t *err)
{
  size_t n_req = 0;
  while (o->publish && o->publish[n_req])
    n_req++;
  if (n_req > OHBOX_NET_MAX_PORTS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many -p (at most %d)", OHBOX_NET_MAX_PORTS);
  struct ohbox_publish *reqs = xcalloc (n_req + 1, sizeof *reqs);
  for (size_t i = 0; i < n_req; i++)
    if (ohbox_publish_parse (o->publish[i], &reqs[i], err) < 0)
      {
        free (reqs);
        return -1;
      }
  *ret = reqs;
  *ret_n = n_req;
  return 0;
}

/* Rootless: host ports leased (and held) until slirp4netns or pasta binds
 * them; which of the two the run policy chose (run_policy.h). */
static int
prepare_rootless (struct ohbox_network *n, int dirfd, const struct ohbox_run_options *o, ohbox_error_t *err)
{
  cleanup_free struct ohbox_publish *reqs = NULL;
  size_t n_req;
  if (parse_publish (o, &reqs, &n_req, err) < 0)
    return -1;
  /* The user-mode network is the user's own sockets: no filter of ours
   * applies to it. */
  if (o->network_name && *o->network_name)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "--network %s: named networks need root", o->network_name);
  if (o->egress && *o->egress)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "--egress needs root (a rootless sandbox's traffic leaves through the user's own sockets)");
  switch (o->rootless_net)
    {
    case OHBOX_ROOTLESS_NET_PASTA:
      if (!ohbox_pasta_available ())
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "--network pasta: pasta is not installed (Debian package passt); or use --network "
                            "slirp4netns or none");
      n->pasta = true;
      break;
    case OHBOX_ROOTLESS_NET_SLIRP:
      if (!ohbox_slirp_available ())
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "--network slirp4netns: slirp4netns is not installed (Debian package slirp4netns); "
                            "or use --network pasta or none");
      n->slirp = true;
      break;
    default:
      /* The run policy names the backend of every rootless bridge. */
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "no user-mode network was chosen for the rootless bridge");
    }
  n->dirfd = fcntl (dirfd, F_DUPFD_CLOEXEC, 3);
  inet_pton (AF_INET, "10.0.2.100", &n->ip);
  inet_pton (AF_INET, "10.0.2.2", &n->gw);
  n->prefix = 24;
  if (n->dirfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "dup");
  if (n_req > 0)
    {
      cleanup_close int lock = -1;
      cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
      if (netfd < 0)
        return -1;
      if (allocate_ports (n, &netfd, &lock, reqs, n_req, err) < 0)
        return -1;
      /* slirp4netns or pasta binds them itself (the lease keeps other
       * sandboxes of this user away); closed before the clone, which would
       * copy them. */
      for (size_t i = 0; i < n->n_maps; i++)
        close (n->port_fds[i]);
    }
  json_t *j = json_pack ("{s:s, s:s, s:s, s:i, s:o, s:b}", "mode", n->pasta ? "pasta" : "slirp4netns", "ip",
                         "10.0.2.100", "gateway", "10.0.2.2", "prefix", 24, "ports", ports_json (n->maps, n->n_maps),
                         "active", 1);
  int r = ohbox_state_write_json (dirfd, "network.json", j, err);
  json_decref (j);
  return r;
}

/* The network D the sandbox joins: a named one, else ohbox0. */
static int
bridge_netdef (const struct ohbox_run_options *o, struct ohbox_netdef *d, ohbox_error_t *err)
{
  if (o->network_name && *o->network_name)
    return ohbox_netdef_load (o->network_name, d, err);
  return ohbox_netdef_default (d, err);
}

static int
prepare_bridge (struct ohbox_network *n, const char *id, int dirfd, const struct ohbox_run_options *o,
                ohbox_error_t *err)
{
  cleanup_free struct ohbox_publish *reqs = NULL;
  size_t n_req;
  if (parse_publish (o, &reqs, &n_req, err) < 0 || ohbox_egress_parse (o->egress, &n->port.egress, err) < 0)
    return -1;
  snprintf (n->port.veth, sizeof n->port.veth, OHBOX_NFT_PORT_PREFIX "%.12s", id);
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0)
    return -1;
  /* Under the lock: a network removed meanwhile is not joined. */
  if (bridge_netdef (o, &n->def, err) < 0 || ohbox_bridge_ensure (&n->def, err) < 0)
    return -1;
  n->gw = n->def.gw;
  n->prefix = n->def.prefix;
  if (lease_ip (netfd, n->state_dir, &n->def, &n->ip, err) < 0)
    return -1;
  n->port.ip = n->ip;
  ohbox_port_mac (n->ip, n->port.mac);
  n->port.open = !n->def.isolated;
  ohbox_bridge_mac (n->def.gw, n->port.gw_mac);
  if (allocate_ports (n, &netfd, &lock, reqs, n_req, err) < 0)
    return -1;
  n->n_ports = n->n_maps;
  char gw[INET_ADDRSTRLEN];
  inet_ntop (AF_INET, &n->gw, gw, sizeof gw);
  /* Recorded before the nft elements and the neighbour entry exist:
   * release finds all it must undo. */
  json_t *j = json_pack ("{s:s, s:s, s:s, s:s, s:i, s:o, s:b}", "mode", "bridge", "network",
                         n->def.name[0] ? n->def.name : "bridge", "bridge", n->def.bridge, "gateway", gw, "prefix",
                         n->prefix, "ports", ports_json (n->maps, n->n_maps), "active", 1);
  ohbox_port_to_json (&n->port, j);
  int r = ohbox_state_write_json (dirfd, "network.json", j, err);
  json_decref (j);
  return r;
}

/* The map element of published port M, for sandbox address IP: in pub4
 * (host address . protocol . port) or, for every host address, in puball
 * (protocol . port); to the sandbox's address . port (nft.c's maps). */
static void
port_nfnl_element (const struct ohbox_port_mapping *m, struct in_addr ip, struct ohbox_nfnl_elem *e)
{
  bool any = m->host_ip.s_addr == INADDR_ANY;
  *e = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = any ? "puball" : "pub4" };
  if (!any)
    ohbox_nfnl_key_ipv4 (&e->key, m->host_ip);
  ohbox_nfnl_key_proto (&e->key, m->proto == IPPROTO_UDP ? IPPROTO_UDP : IPPROTO_TCP);
  ohbox_nfnl_key_port (&e->key, m->host_port);
  ohbox_nfnl_key_ipv4 (&e->data, ip);
  ohbox_nfnl_key_port (&e->data, m->ctr_port);
}

/* The DNAT elements of the published ports, in one nf_tables transaction
 * over nfnetlink (no libnftables on the start path). Only once the
 * sandbox's address answers on the bridge: earlier, a client's SYN would
 * be translated to an address without a neighbour yet and dropped (the
 * client then waits a full retransmission, ~1 s), where the reserved, not
 * listening host port refuses it at once. */
static int
publish_bridge (struct ohbox_network *n, ohbox_error_t *err)
{
  if (n->n_maps == 0)
    return 0;
  cleanup_free struct ohbox_nfnl_elem *elems = xcalloc (n->n_maps, sizeof *elems);
  for (size_t i = 0; i < n->n_maps; i++)
    port_nfnl_element (&n->maps[i], n->ip, &elems[i]);
  int r = ohbox_nfnl_elements (OHBOX_NFT_TABLE, true, elems, n->n_maps, err);
  if (r < 0)
    {
      /* An element left by a sandbox that is gone holds the same host port
       * ("File exists"): its port lease was stale or free, ours now. Drop
       * such elements (those of stale leases with them, in the GC) and
       * try once more. */
      ohbox_error_t e = NULL;
      json_t *orphans = NULL;
      if (ohbox_network_gc (&e) == 0 && ohbox_network_orphan_elements (&orphans, &e) == 0
          && ohbox_network_drop_orphan_elements (orphans, &e) == 0)
        {
          ohbox_error_release (err);
          r = ohbox_nfnl_elements (OHBOX_NFT_TABLE, true, elems, n->n_maps, err);
        }
      json_decref (orphans);
      ohbox_error_release (&e);
    }
  if (r < 0)
    return ohbox_error_prefix (err, "publish ports");
  return 0;
}

/* container:ID: a pidfd of the other sandbox's init (setns(2) takes it). */
static int
prepare_join (struct ohbox_network *n, struct ohbox_runtime *rt, const struct ohbox_run_options *o, ohbox_error_t *err)
{
  cleanup_free char *other = NULL;
  cleanup_close int odfd = -1;
  bool exited;
  if (o->network_container == NULL || *o->network_container == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--network container: needs a sandbox (container:NAME)");
  if (ohbox_sandbox_resolve (rt, o->network_container, &other, err) < 0 || ohbox_state_open (rt, other, &odfd, err) < 0)
    return ohbox_error_prefix (err, "--network container:%s", o->network_container);
  n->join_fd = ohbox_state_pidfd (odfd, &exited, err);
  if (n->join_fd < 0)
    {
      if (exited)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--network container:%s: the sandbox is not running",
                            o->network_container);
      return -1;
    }
  n->etc_dir = xasprintf ("%s/%s", rt->root, other);
  return 0;
}

int
ohbox_network_prepare (struct ohbox_runtime *rt, const char *id, int dirfd, const struct ohbox_run_options *o,
                       const char *hostname, struct ohbox_network **ret, ohbox_error_t *err)
{
  struct ohbox_network *n = xcalloc (1, sizeof *n);
  n->mode = o->network;
  n->join_fd = n->slirp_exit_fd = n->dirfd = -1;
  n->pasta_pid = -1;
  ohbox_net_helper_init (&n->helper);
  n->state_dir = xasprintf ("%s/%s", rt->root, id);
  int r = 0;
  if (o->publish && o->publish[0] && n->mode != OHBOX_NETWORK_BRIDGE)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "-p needs --network bridge");
  else if (o->egress && *o->egress && n->mode != OHBOX_NETWORK_BRIDGE)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "--egress needs --network bridge or a named network");
  else if (n->mode == OHBOX_NETWORK_CONTAINER)
    r = prepare_join (n, rt, o, err);
  else
    {
      /* resolv.conf first: its resolvers are in the bridge's records. */
      r = ohbox_network_plan_resolv (n, o, err);
      if (r == 0 && n->mode == OHBOX_NETWORK_BRIDGE)
        r = geteuid () == 0 ? prepare_bridge (n, id, dirfd, o, err) : prepare_rootless (n, dirfd, o, err);
      if (r == 0)
        r = ohbox_network_write_etc (n, dirfd, o, hostname, err);
      if (r == 0)
        n->etc_dir = xstrdup (n->state_dir);
    }
  if (r == 0 && n->mode != OHBOX_NETWORK_BRIDGE)
    {
      static const char *const names[] = { "none", "host", "bridge", "container" };
      json_t *j = json_pack ("{s:s, s:b}", "mode", names[n->mode], "active", 0);
      r = ohbox_state_write_json (dirfd, "network.json", j, err);
      json_decref (j);
    }
  if (r < 0)
    {
      ohbox_network_free (n);
      return -1;
    }
  *ret = n;
  return 0;
}

char *
ohbox_network_published_url (struct ohbox_network *n, uint16_t ctr_port)
{
  for (size_t i = 0; n && i < n->n_maps; i++)
    if (n->maps[i].proto == IPPROTO_TCP && n->maps[i].ctr_port == ctr_port)
      {
        char ip[INET_ADDRSTRLEN] = "127.0.0.1";
        if (n->maps[i].host_ip.s_addr != htonl (INADDR_ANY))
          inet_ntop (AF_INET, &n->maps[i].host_ip, ip, sizeof ip);
        return xasprintf ("http://%s:%u", ip, (unsigned) n->maps[i].host_port);
      }
  return NULL;
}

int
ohbox_network_join_fd (struct ohbox_network *n)
{
  return n ? n->join_fd : -1;
}

int
ohbox_network_attach_early (struct ohbox_network *n, int userns_fd, int netns_fd, ohbox_error_t *err)
{
  if (n == NULL || n->mode != OHBOX_NETWORK_BRIDGE)
    return 0;
  if (n->pasta)
    return ohbox_pasta_spawn (userns_fd, netns_fd, n->state_dir, n->maps, n->n_maps, &n->helper, err);
  if (n->slirp)
    return ohbox_slirp_spawn (userns_fd, netns_fd, n->dirfd, &n->helper, err);
  return 0;
}

/* No IPv6 on the host end of a sandbox's veth: a bridge port that would
 * otherwise send router solicitations and MLD reports into the sandbox. */
static void
veth_no_ipv6 (const char *veth)
{
  char path[96];
  snprintf (path, sizeof path, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", veth);
  cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd >= 0 && write (fd, "1", 1) < 0)
    return; /* (IPv6 off on the host: nothing to turn off) */
}

/* The sandbox's veth on its bridge, in this order: the host end created
 * down; hairpin mode; its anti-spoofing, DNS and egress elements and the
 * host's neighbour entry; up. Nothing it sends is forwarded before its
 * filters are in place. Then its own end: address, loopback, default route
 * and a permanent neighbour entry for the gateway (the bridge forwards a
 * sandbox's ARP requests to the host only); and the published ports. */
static int
attach_bridge (struct ohbox_network *n, int netns_fd, ohbox_error_t *err)
{
  struct ohbox_nl *host = NULL, *in = NULL;
  int r = -1, br = 0, port = 0, eth = 0;
  uint8_t gw_mac[6];
  ohbox_bridge_mac (n->gw, gw_mac);
  if (ohbox_nl_open (-1, &host, err) < 0)
    return -1;
  if (ohbox_nl_link_index (host, n->def.bridge, &br, err) < 0
      || ohbox_nl_veth_create (host, n->port.veth, br, "eth0", n->port.mac, netns_fd, err) < 0
      || ohbox_nl_link_index (host, n->port.veth, &port, err) < 0 || ohbox_nl_brport_hairpin (host, port, err) < 0)
    goto out;
  veth_no_ipv6 (n->port.veth);
  if (ohbox_port_attach (&n->port, n->def.bridge, err) < 0 || ohbox_nl_link_up (host, port, err) < 0)
    goto out;
  if (ohbox_nl_open (netns_fd, &in, err) < 0 || ohbox_nl_link_up (in, 1, err) < 0
      || ohbox_nl_link_index (in, "eth0", &eth, err) < 0 || ohbox_nl_addr_add (in, eth, n->ip, n->prefix, err) < 0
      || ohbox_nl_link_up (in, eth, err) < 0 || ohbox_nl_route_default (in, eth, n->gw, err) < 0
      || ohbox_nl_neigh_set (in, eth, n->gw, gw_mac, err) < 0)
    goto out;
  if (publish_bridge (n, err) < 0)
    goto out;
  r = 0;
out:
  ohbox_nl_close (host);
  ohbox_nl_close (in);
  if (r < 0)
    ohbox_error_prefix (err, "connect the sandbox to `%s`", n->def.bridge);
  return r;
}

int
ohbox_network_attach (struct ohbox_network *n, pid_t pid, int userns_fd, int netns_fd, ohbox_error_t *err)
{
  if (n == NULL || n->mode != OHBOX_NETWORK_BRIDGE)
    return 0;
  if ((n->pasta || n->slirp) && n->helper.pid == 0 && ohbox_network_attach_early (n, userns_fd, netns_fd, err) < 0)
    return -1;
  if (n->pasta)
    {
      if (ohbox_pasta_wait (&n->helper, n->state_dir, err) < 0)
        return -1;
      n->pasta_pid = n->helper.pid;
      ohbox_net_helper_init (&n->helper);
      /* For a release after the monitor was killed (its parent-death
       * signal should have ended pasta already; this is the backstop). */
      json_t *j = ohbox_network_read (n->dirfd);
      if (j)
        {
          json_object_set_new (j, "pasta_pid", json_integer (n->pasta_pid));
          json_object_set_new (j, "pasta_start", json_integer ((json_int_t) ohbox_proc_starttime (n->pasta_pid)));
          int r = ohbox_state_write_json (n->dirfd, "network.json", j, err);
          json_decref (j);
          if (r < 0)
            return -1;
        }
      return 0;
    }
  if (n->slirp)
    {
      if (ohbox_slirp_wait (&n->helper, err) < 0)
        return -1;
      /* From here on it ends when its exit fd closes (ohbox_network_free,
       * or the monitor's end), as it did before the split. */
      n->slirp_exit_fd = steal_fd (&n->helper.exit_fd);
      ohbox_net_helper_init (&n->helper);
      for (size_t i = 0; i < n->n_maps; i++)
        if (ohbox_slirp_hostfwd (n->dirfd, &n->maps[i], err) < 0)
          return -1;
      return 0;
    }
  (void) pid;
  return attach_bridge (n, netns_fd, err);
}

void
ohbox_network_unreserve (struct ohbox_network *n)
{
  if (n == NULL)
    return;
  for (size_t i = 0; i < n->n_ports; i++)
    close (n->port_fds[i]);
  n->n_ports = 0;
}

bool
ohbox_network_release_waits (const struct ohbox_network *n)
{
  return n == NULL || n->mode == OHBOX_NETWORK_BRIDGE || n->slirp || n->pasta;
}

void
ohbox_network_free (struct ohbox_network *n)
{
  if (n == NULL)
    return;
  for (size_t i = 0; i < n->n_ports; i++)
    close (n->port_fds[i]);
  free (n->port_fds);
  if (n->join_fd >= 0)
    close (n->join_fd);
  if (n->slirp_exit_fd >= 0)
    close (n->slirp_exit_fd);
  ohbox_pasta_stop (n->pasta_pid);
  /* Spawned for a start that failed before it was waited for. */
  ohbox_net_helper_kill (&n->helper);
  if (n->dirfd >= 0)
    close (n->dirfd);
  free (n->maps);
  free (n->state_dir);
  free (n->etc_dir);
  free (n->resolv);
  free (n);
}

json_t *
ohbox_network_read (int dirfd)
{
  json_t *j = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_state_read_json (dirfd, "network.json", &j, &e) < 0)
    {
      ohbox_error_release (&e);
      return NULL;
    }
  return j;
}

/* Unlinks every lease in NETFD/SUB held by OWNER (under the lock). */
static void
release_owned (int netfd, const char *sub, const char *owner)
{
  cleanup_close int fd = openat (netfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    return;
  fd = -1;
  struct dirent *de;
  char target[PATH_MAX];
  while ((de = readdir (d)))
    {
      ssize_t n = readlinkat (dirfd (d), de->d_name, target, sizeof target - 1);
      if (n <= 0)
        continue;
      target[n] = '\0';
      if (strcmp (target, owner) == 0)
        unlinkat (dirfd (d), de->d_name, 0);
    }
}

/* A published port as network.json records it ("ports"); false if P is not one. */
static bool
port_from_json (json_t *p, struct ohbox_port_mapping *m)
{
  memset (m, 0, sizeof *m);
  const char *hip = json_string_value (json_object_get (p, "host_ip"));
  if (hip == NULL || inet_pton (AF_INET, hip, &m->host_ip) != 1)
    return false;
  m->host_port = (uint16_t) json_integer_value (json_object_get (p, "host_port"));
  m->ctr_port = (uint16_t) json_integer_value (json_object_get (p, "container_port"));
  m->proto = strcmp (json_string_value (json_object_get (p, "protocol")) ?: "", "udp") == 0 ? IPPROTO_UDP : IPPROTO_TCP;
  return true;
}

int
ohbox_network_release (const char *state_dir, int dirfd, ohbox_error_t *err)
{
  json_t *j = ohbox_network_read (dirfd);
  if (j == NULL)
    {
      /* Killed between taking leases and recording them (the only leases
       * that can exist without network.json; no nft element yet). */
      struct stat st;
      if (stat (ohbox_network_root (), &st) < 0)
        return 0;
      cleanup_close int lock = -1;
      cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
      if (netfd < 0)
        return -1;
      release_owned (netfd, "ip", state_dir);
      release_owned (netfd, "port", state_dir);
      return 0;
    }
  if (!json_is_true (json_object_get (j, "active")))
    {
      json_decref (j);
      return 0;
    }
  /* Before the port leases go: pasta still binds the ports. */
  json_t *pp = json_object_get (j, "pasta_pid");
  if (pp)
    ohbox_pasta_kill_recorded ((pid_t) json_integer_value (pp),
                               (unsigned long long) json_integer_value (json_object_get (j, "pasta_start")));
  struct in_addr ip = { 0 };
  const char *ips = json_string_value (json_object_get (j, "ip"));
  const char *veth = json_string_value (json_object_get (j, "veth"));
  if (ips)
    inet_pton (AF_INET, ips, &ip);
  int r = 0;
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0)
    {
      json_decref (j);
      return -1;
    }
  /* Only what this sandbox still holds: a port or address released before
   * may belong to another sandbox now. The elements go before the leases:
   * killed in between, the next release still finds the leases and
   * deletes again; the other order left an element that nothing would
   * ever delete. */
  json_t *ports = json_object_get (j, "ports");
  cleanup_free struct ohbox_nfnl_elem *elems = xcalloc (json_array_size (ports) + 1, sizeof *elems);
  size_t i, n_elems = 0;
  json_t *p;
  json_array_foreach (ports, i, p)
  {
    struct ohbox_port_mapping m;
    if (veth && port_from_json (p, &m) && ohbox_ports_lease_owned (netfd, state_dir, m.proto, m.host_port))
      port_nfnl_element (&m, ip, &elems[n_elems++]);
  }
  /* (some may be gone already: deleted by a release killed before it
   * unlinked the leases, or the table flushed) */
  ohbox_error_t e_elems = NULL;
  ohbox_nfnl_elements (OHBOX_NFT_TABLE, false, elems, n_elems, &e_elems);
  ohbox_error_release (&e_elems);
  json_array_foreach (ports, i, p)
  {
    struct ohbox_port_mapping m;
    if (port_from_json (p, &m))
      ohbox_ports_release_one (netfd, state_dir, m.proto, m.host_port);
  }
  if (ips)
    {
      char name[8 + INET_ADDRSTRLEN], target[PATH_MAX];
      snprintf (name, sizeof name, "ip/%s", ips);
      ssize_t n = readlinkat (netfd, name, target, sizeof target - 1);
      bool ours = n > 0 && (target[n] = '\0', strcmp (target, state_dir) == 0);
      /* Its filters and neighbour entry, then the address. One that could
       * not be deleted keeps the address leased: no sandbox gets it (and
       * them) until the GC of the lease, stale once this sandbox is gone,
       * deletes them (`ohbox check` reports it meanwhile). (Sandboxes of
       * older versions recorded no MAC: they have neither.) */
      struct ohbox_port port;
      const char *bridge = json_string_value (json_object_get (j, "bridge")) ?: OHBOX_NET_BRIDGE;
      ohbox_error_t e = NULL;
      if (ours && (!ohbox_port_from_json (j, &port) || ohbox_port_detach (&port, bridge, &e) == 0))
        unlinkat (netfd, name, 0);
      ohbox_error_release (&e);
    }
  if (lock >= 0)
    close (steal_fd (&lock));
  /* The veth dies with the sandbox's namespace; deleting it now does not
   * wait for the kernel's asynchronous namespace cleanup. */
  if (veth && strncmp (veth, "ohb", 3) == 0)
    {
      struct ohbox_nl *nl = NULL;
      ohbox_error_t e = NULL;
      if (ohbox_nl_open (-1, &nl, &e) == 0)
        ohbox_nl_link_del (nl, veth, &e);
      ohbox_nl_close (nl);
      ohbox_error_release (&e);
    }
  json_object_set_new (j, "active", json_false ());
  r = ohbox_state_write_json (dirfd, "network.json", j, err);
  json_decref (j);
  return r;
}

/* Drops the stale leases in NETFD/SUB (ip: with their elements). */
static void
gc_dir (int netfd, const char *sub)
{
  cleanup_close int fd = openat (netfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    return;
  fd = -1;
  struct dirent *de;
  bool ip = strcmp (sub, "ip") == 0;
  while ((de = readdir (d)))
    if (de->d_name[0] != '.')
      {
        if (ip)
          ip_lease_held (netfd, de->d_name);
        else
          ohbox_lease_held (dirfd (d), de->d_name);
      }
}

int
ohbox_network_gc (ohbox_error_t *err)
{
  struct stat st;
  if (stat (ohbox_network_root (), &st) < 0)
    return 0;
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0)
    return -1;
  gc_dir (netfd, "ip");
  gc_dir (netfd, "port");
  return 0;
}

bool
ohbox_ip_leased (int netfd, struct in_addr addr, char *owner, size_t owner_size)
{
  char name[8 + INET_ADDRSTRLEN];
  memcpy (name, "ip/", 4);
  inet_ntop (AF_INET, &addr, name + 3, INET_ADDRSTRLEN);
  if (owner == NULL)
    {
      struct stat st;
      return fstatat (netfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    }
  ssize_t n = readlinkat (netfd, name, owner, owner_size - 1);
  if (n < 0)
    return false;
  owner[n] = '\0';
  return true;
}

static bool
addr_leased (int netfd, const char *addr, char *owner, size_t owner_size)
{
  struct in_addr a;
  return netfd >= 0 && addr && inet_pton (AF_INET, addr, &a) == 1 && ohbox_ip_leased (netfd, a, owner, owner_size);
}

/* The elements LIST gives that IS_ORPHAN picks, given the network state
 * directory NETFD (-1 when there is none: then no address is leased). */
static int
filter_orphans (int (*list) (json_t **, ohbox_error_t *), bool (*is_orphan) (int netfd, json_t *e), json_t **ret,
                ohbox_error_t *err)
{
  *ret = NULL;
  json_t *elems = NULL;
  if (list (&elems, err) < 0)
    return -1;
  cleanup_close int netfd = open (ohbox_network_root (), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  json_t *orphans = json_array ();
  size_t i;
  json_t *e;
  json_array_foreach (elems, i, e)
  {
    if (is_orphan (netfd, e))
      json_array_append (orphans, e);
  }
  json_decref (elems);
  *ret = orphans;
  return 0;
}

static bool
port_element_orphan (int netfd, json_t *e)
{
  return !addr_leased (netfd, json_string_value (json_object_get (e, "addr")), NULL, 0);
}

int
ohbox_network_orphan_elements (json_t **ret, ohbox_error_t *err)
{
  return filter_orphans (ohbox_nft_port_elements, port_element_orphan, ret, err);
}

/* Whether the bridge table's element E belongs to the sandbox that leases
 * its address (state directory OWNER): the veth its network.json records. */
static bool
port_element_current (json_t *e, const char *owner)
{
  const char *key = json_string_value (json_object_get (e, "key"));
  cleanup_close int dfd = open (owner, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  json_t *j = dfd >= 0 ? ohbox_network_read (dfd) : NULL;
  const char *veth = json_string_value (json_object_get (j, "veth"));
  bool current = veth && key && key[0] == '"' && strncmp (key + 1, veth, strlen (veth)) == 0
                 && key[1 + strlen (veth)] == '"';
  json_decref (j);
  return current;
}

/* No lease for its address; or, for the bridge's (keyed by the veth),
 * another veth than the lease's sandbox has (a stale lease's owner's state
 * is gone: its elements are the GC's, which `check` runs for the stale
 * lease). */
static bool
sandbox_element_orphan (int netfd, json_t *e)
{
  char owner[PATH_MAX];
  bool port = strcmp (json_string_value (json_object_get (e, "family")) ?: "", "bridge") == 0;
  return !addr_leased (netfd, json_string_value (json_object_get (e, "addr")), owner, sizeof owner)
         || (port && access (owner, F_OK) == 0 && !port_element_current (e, owner));
}

int
ohbox_network_orphan_sandbox_elements (json_t **ret, ohbox_error_t *err)
{
  return filter_orphans (ohbox_nft_sandbox_elements, sandbox_element_orphan, ret, err);
}

int
ohbox_network_drop_orphan_elements (json_t *elems, ohbox_error_t *err)
{
  /* Listed again under the lock, which every lease holds when taken: an
   * orphan deleted since ELEMS was listed may have let a live sandbox add
   * its own element with the same key (a delete names only the key), and
   * its address may have been leased again meanwhile; a sandbox adds its
   * elements only once it leases the address. */
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0)
    return -1;
  json_t *ports = NULL, *sets = NULL;
  if (ohbox_network_orphan_elements (&ports, err) < 0 || ohbox_network_orphan_sandbox_elements (&sets, err) < 0)
    {
      json_decref (ports);
      return -1;
    }
  json_t *drop = json_array ();
  size_t i, k;
  json_t *e, *o;
  json_array_foreach (elems, i, e)
  {
    json_array_foreach (ports, k, o)
    {
      if (json_equal (e, o))
        json_array_append (drop, e);
    }
    json_array_foreach (sets, k, o)
    {
      if (json_equal (e, o))
        json_array_append (drop, e);
    }
  }
  json_decref (ports);
  json_decref (sets);
  int r = ohbox_nft_delete_elements (drop, err);
  json_decref (drop);
  return r;
}

int
ohbox_network_orphan_neighbours (json_t **ret, ohbox_error_t *err)
{
  *ret = NULL;
  struct ohbox_netdef *defs = NULL;
  size_t n = 0;
  struct ohbox_nl *nl = NULL;
  if (ohbox_netdefs_all (&defs, &n, err) < 0)
    return -1;
  if (ohbox_nl_open (-1, &nl, err) < 0)
    {
      free (defs);
      return -1;
    }
  cleanup_close int netfd = open (ohbox_network_root (), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  json_t *orphans = json_array ();
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    {
      int idx = 0;
      struct in_addr *addrs = NULL;
      size_t n_addrs = 0;
      if (ohbox_nl_link_index (nl, defs[i].bridge, &idx, err) < 0
          || (idx > 0 && ohbox_nl_neigh_permanent (nl, idx, &addrs, &n_addrs, err) < 0))
        r = -1;
      for (size_t k = 0; k < n_addrs; k++)
        if (netfd < 0 || !ohbox_ip_leased (netfd, addrs[k], NULL, 0))
          {
            char a[INET_ADDRSTRLEN];
            inet_ntop (AF_INET, &addrs[k], a, sizeof a);
            json_array_append_new (orphans, json_pack ("{s:s, s:s}", "bridge", defs[i].bridge, "addr", a));
          }
      free (addrs);
    }
  ohbox_nl_close (nl);
  free (defs);
  if (r < 0)
    {
      json_decref (orphans);
      return -1;
    }
  *ret = orphans;
  return 0;
}

int
ohbox_network_drop_orphan_neighbour (json_t *e, ohbox_error_t *err)
{
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  struct in_addr a;
  const char *bridge = json_string_value (json_object_get (e, "bridge"));
  if (netfd < 0)
    return -1;
  if (bridge == NULL || inet_pton (AF_INET, json_string_value (json_object_get (e, "addr")) ?: "", &a) != 1
      || ohbox_ip_leased (netfd, a, NULL, 0))
    return 0; /* leased again meanwhile: its sandbox's now */
  struct ohbox_nl *nl = NULL;
  int idx = 0, r = -1;
  if (ohbox_nl_open (-1, &nl, err) == 0 && ohbox_nl_link_index (nl, bridge, &idx, err) == 0)
    r = idx == 0 ? 0 : ohbox_nl_neigh_del (nl, idx, a, err);
  ohbox_nl_close (nl);
  return r;
}

int
ohbox_network_missing_bridges (json_t **ret, ohbox_error_t *err)
{
  struct ohbox_netdef *defs = NULL;
  size_t n = 0;
  if (ohbox_netdefs_all (&defs, &n, err) < 0)
    return -1;
  json_t *missing = json_array ();
  for (size_t i = 1; i < n; i++) /* (the default one is made on first use) */
    if (!ohbox_bridge_exists (&defs[i]))
      json_array_append_new (missing, json_pack ("{s:s, s:s}", "name", defs[i].name, "bridge", defs[i].bridge));
  free (defs);
  *ret = missing;
  return 0;
}

int
ohbox_network_repair_bridge (const char *name, ohbox_error_t *err)
{
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  struct ohbox_netdef d;
  if (netfd < 0 || ohbox_netdef_load (name, &d, err) < 0)
    return -1;
  return ohbox_bridge_ensure (&d, err);
}
