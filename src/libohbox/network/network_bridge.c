/* network_bridge.c: the bridges (ohbox0 and the named networks'), and what
 * a sandbox holds on one besides its veth: its nft elements (anti-spoofing,
 * DNS, --egress; nft.h) and a permanent neighbour entry for its address. */
#include "config.h"
#include "network/netlink.h"
#include "network/network_internal.h"
#include "network/nfnl.h"
#include "network/nft.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes VALUE to the sysctl file PATH unless it holds it; a file that
 * does not exist is MISSING_OK (IPv6 disabled on the host). */
static int
write_sysctl (const char *path, const char *value, bool missing_ok, ohbox_error_t *err)
{
  char cur[16] = "";
  cleanup_close int fd = open (path, O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && missing_ok)
    return 0;
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "open `%s`", path);
  ssize_t n = read (fd, cur, sizeof cur - 1);
  if (n > 0 && strncmp (cur, value, strlen (value)) == 0
      && (cur[strlen (value)] == '\n' || cur[strlen (value)] == '\0'))
    return 0;
  if (pwrite (fd, value, strlen (value), 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "write `%s`", path);
  return 0;
}

/* Forwarding for egress and published ports; route_localnet so that
 * connections to 127.0.0.1 can be DNAT'ed onto the bridge (the guard chain
 * keeps sandboxes from 127.0.0.0/8); strict reverse-path filtering (a
 * second wall behind the bridge table's source checks); and no IPv6 while
 * the bridge carries none: a router advertisement from a sandbox neither
 * configures the host (accept_ra) nor reaches an address (CVE-2020-13401). */
static int
bridge_sysctls (const char *bridge, ohbox_error_t *err)
{
  static const struct
  {
    const char *dir, *knob, *value;
    bool v6;
  } knobs[] = {
    { "ipv4/conf", "route_localnet", "1", false },
    { "ipv4/conf", "rp_filter", "1", false },
    { "ipv6/conf", "accept_ra", "0", true },
    { "ipv6/conf", "disable_ipv6", "1", true },
  };
  if (write_sysctl ("/proc/sys/net/ipv4/ip_forward", "1", false, err) < 0)
    return -1;
  for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
    {
      char path[128];
      snprintf (path, sizeof path, "/proc/sys/net/%s/%s/%s", knobs[i].dir, bridge, knobs[i].knob);
      if (write_sysctl (path, knobs[i].value, knobs[i].v6, err) < 0)
        return -1;
    }
  return 0;
}

void
ohbox_bridge_mac (struct in_addr gw, uint8_t mac[6])
{
  /* 02: locally administered, unicast; 6e: never a sandbox's (6f); then
   * the gateway address: each bridge its own. */
  mac[0] = 0x02;
  mac[1] = 0x6e;
  memcpy (mac + 2, &gw.s_addr, 4);
}

/* D's elements in the networks' sets (nft.h). */
static size_t
netdef_elements (const struct ohbox_netdef *d, struct ohbox_nfnl_elem out[3])
{
  size_t n = 0;
  struct ohbox_cidr4 sub = { .net = d->net, .prefix = d->prefix };
  out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = "bridges" };
  ohbox_nfnl_key_ifname (&out[n++].key, d->bridge);
  out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = "subnets" };
  ohbox_nfnl_key_ipv4 (&out[n].key, d->net);
  ohbox_nfnl_key_ifname (&out[n].key, d->bridge);
  ohbox_nfnl_key_ipv4 (&out[n].end, ohbox_cidr4_last (&sub));
  ohbox_nfnl_key_ifname (&out[n++].end, d->bridge);
  if (!d->isolated)
    {
      out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = "peers" };
      ohbox_nfnl_key_ifname (&out[n].key, d->bridge);
      ohbox_nfnl_key_ifname (&out[n++].key, d->bridge);
    }
  return n;
}

/* The tables, made or updated from every network's definition. */
static int
tables_ensure (ohbox_error_t *err)
{
  struct ohbox_netdef *defs = NULL;
  size_t n = 0;
  if (ohbox_netdefs_all (&defs, &n, err) < 0)
    return -1;
  struct ohbox_nft_bridge *nets = xcalloc (n + 1, sizeof *nets);
  for (size_t i = 0; i < n; i++)
    nets[i] = (struct ohbox_nft_bridge){
      .name = defs[i].bridge, .subnet = defs[i].net, .prefix = defs[i].prefix, .peers = !defs[i].isolated
    };
  int r = ohbox_nft_ensure (nets, n, err);
  free (nets);
  free (defs);
  return r;
}

/* The bridge's own MAC, fixed: a bridge left to itself takes its ports'
 * lowest, which changes as sandboxes come and go (their cached gateway
 * MAC would go stale), and the filters name it (gwmac). */
static int
bridge_mac_ensure (struct ohbox_nl *nl, int idx, const struct ohbox_netdef *d, ohbox_error_t *err)
{
  uint8_t want[6], have[6];
  ohbox_bridge_mac (d->gw, want);
  if (ohbox_nl_link_mac (nl, idx, have, err) < 0)
    return -1;
  if (memcmp (want, have, 6) == 0)
    return 0;
  return ohbox_nl_link_set_mac (nl, idx, want, err);
}

int
ohbox_bridge_ensure (const struct ohbox_netdef *d, ohbox_error_t *err)
{
  struct ohbox_nl *nl = NULL;
  if (ohbox_nl_open (-1, &nl, err) < 0)
    return -1;
  bool created, has = false, complete = false;
  int idx = 0, r = -1;
  if (ohbox_nl_bridge_ensure (nl, d->bridge, &created, err) < 0 || ohbox_nl_link_index (nl, d->bridge, &idx, err) < 0)
    goto out;
  if (idx == 0)
    {
      ohbox_error (err, OHBOX_ERR_GENERIC, 0, "bridge `%s` vanished while being set up", d->bridge);
      goto out;
    }
  /* Its sysctls exist once it does; set before its address: IPv6 never
   * comes up on a new bridge. */
  if (bridge_sysctls (d->bridge, err) < 0 || bridge_mac_ensure (nl, idx, d, err) < 0
      || ohbox_nl_addr_has (nl, idx, d->gw, d->prefix, &has, err) < 0)
    goto out;
  if (!has && ohbox_nl_addr_add (nl, idx, d->gw, d->prefix, err) < 0)
    goto out;
  if (ohbox_nl_link_up (nl, idx, err) < 0)
    goto out;
  /* Two dumps over nfnetlink on every start; libnftables only when the
   * tables are missing or older (nfnl.h). */
  cleanup_error ohbox_error_t ignored = NULL;
  if ((ohbox_nft_complete (&complete, &ignored) < 0 || !complete) && tables_ensure (err) < 0)
    goto out;
  if (complete && (created || !has))
    {
      /* A bridge made again (removed by hand, a reboot with the tables
       * kept): its elements, which the tables' creation would have added. */
      struct ohbox_nfnl_elem e[3];
      if (ohbox_nfnl_elements (OHBOX_NFT_TABLE, true, e, netdef_elements (d, e), err) < 0)
        goto out;
    }
  r = 0;
out:
  ohbox_nl_close (nl);
  if (r < 0)
    ohbox_error_prefix (err, "set up bridge `%s`", d->bridge);
  return r;
}

int
ohbox_network_tables_complete (bool *ret, ohbox_error_t *err)
{
  struct ohbox_netdef *defs = NULL;
  size_t n = 0;
  *ret = true;
  if (ohbox_netdefs_all (&defs, &n, err) < 0)
    return -1;
  bool any = false;
  for (size_t i = 0; i < n; i++)
    any |= ohbox_bridge_exists (&defs[i]);
  free (defs);
  return any ? ohbox_nft_complete (ret, err) : 0;
}

int
ohbox_network_repair_tables (ohbox_error_t *err)
{
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0)
    return -1;
  return tables_ensure (err);
}

bool
ohbox_bridge_exists (const struct ohbox_netdef *d)
{
  /* (this network namespace's links: /sys may show another's) */
  return if_nametoindex (d->bridge) != 0;
}

int
ohbox_bridge_remove (const struct ohbox_netdef *d, ohbox_error_t *err)
{
  struct ohbox_nfnl_elem e[3];
  if (ohbox_nfnl_elements (OHBOX_NFT_TABLE, false, e, netdef_elements (d, e), err) < 0)
    return -1;
  struct ohbox_nl *nl = NULL;
  if (ohbox_nl_open (-1, &nl, err) < 0)
    return -1;
  /* Its neighbour entries and addresses go with it. */
  int r = ohbox_nl_link_del (nl, d->bridge, err);
  ohbox_nl_close (nl);
  return r;
}

void
ohbox_port_mac (struct in_addr ip, uint8_t mac[6])
{
  /* 02: locally administered, unicast; 6f: 'o'; then the address. */
  mac[0] = 0x02;
  mac[1] = 0x6f;
  memcpy (mac + 2, &ip.s_addr, 4);
}

size_t
ohbox_port_elements (const struct ohbox_port *p, struct ohbox_nfnl_elem *out)
{
  size_t n = 0;
  out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_BRIDGE, .set = "ports" };
  ohbox_nfnl_key_ifname (&out[n].key, p->veth);
  ohbox_nfnl_key_mac (&out[n].key, p->mac);
  ohbox_nfnl_key_ipv4 (&out[n++].key, p->ip);
  /* Where its frames may go: its named network's members, or the host. */
  out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_BRIDGE, .set = p->open ? "open" : "uplink" };
  ohbox_nfnl_key_ifname (&out[n].key, p->veth);
  ohbox_nfnl_key_ipv4 (&out[n].key, p->ip);
  if (!p->open)
    ohbox_nfnl_key_mac (&out[n].key, p->gw_mac);
  n++;
  for (size_t i = 0; i < p->n_dns; i++)
    {
      out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = "dns" };
      ohbox_nfnl_key_ipv4 (&out[n].key, p->ip);
      ohbox_nfnl_key_ipv4 (&out[n++].key, p->dns[i]);
    }
  const struct ohbox_egress *e = &p->egress;
  if (e->mode == OHBOX_EGRESS_NONE)
    {
      out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = "noegress" };
      ohbox_nfnl_key_ipv4 (&out[n++].key, p->ip);
    }
  struct ohbox_cidr4 everything = { 0 };
  const struct ohbox_cidr4 *ranges = e->mode == OHBOX_EGRESS_ALL ? &everything : e->cidrs;
  size_t n_ranges = e->mode == OHBOX_EGRESS_ALL ? 1 : e->mode == OHBOX_EGRESS_LIST ? e->n : 0;
  for (size_t i = 0; i < n_ranges; i++)
    {
      /* An interval of a concatenation: the sandbox's address exactly,
       * then the range. */
      out[n] = (struct ohbox_nfnl_elem){ .family = NFPROTO_INET, .set = "egress" };
      ohbox_nfnl_key_ipv4 (&out[n].key, p->ip);
      ohbox_nfnl_key_ipv4 (&out[n].key, ranges[i].net);
      ohbox_nfnl_key_ipv4 (&out[n].end, p->ip);
      ohbox_nfnl_key_ipv4 (&out[n++].end, ohbox_cidr4_last (&ranges[i]));
    }
  return n;
}

void
ohbox_port_to_json (const struct ohbox_port *p, json_t *j)
{
  char ip[INET_ADDRSTRLEN], mac[18];
  inet_ntop (AF_INET, &p->ip, ip, sizeof ip);
  snprintf (mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4],
            p->mac[5]);
  json_t *dns = json_array ();
  for (size_t i = 0; i < p->n_dns; i++)
    {
      char s[INET_ADDRSTRLEN];
      inet_ntop (AF_INET, &p->dns[i], s, sizeof s);
      json_array_append_new (dns, json_string (s));
    }
  cleanup_free char *egress = ohbox_egress_format (&p->egress);
  json_object_set_new (j, "ip", json_string (ip));
  json_object_set_new (j, "veth", json_string (p->veth));
  json_object_set_new (j, "mac", json_string (mac));
  json_object_set_new (j, "open", json_boolean (p->open));
  snprintf (mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", p->gw_mac[0], p->gw_mac[1], p->gw_mac[2], p->gw_mac[3],
            p->gw_mac[4], p->gw_mac[5]);
  json_object_set_new (j, "gateway_mac", json_string (mac));
  json_object_set_new (j, "dns_allowed", dns);
  json_object_set_new (j, "egress", json_string (egress));
}

static bool
mac_from_json (json_t *s, uint8_t mac[6])
{
  unsigned m[6];
  const char *text = json_string_value (s);
  if (text == NULL || sscanf (text, "%2x:%2x:%2x:%2x:%2x:%2x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
    return false;
  for (int i = 0; i < 6; i++)
    mac[i] = (uint8_t) m[i];
  return true;
}

bool
ohbox_port_from_json (json_t *j, struct ohbox_port *p)
{
  memset (p, 0, sizeof *p);
  const char *ip = json_string_value (json_object_get (j, "ip"));
  const char *veth = json_string_value (json_object_get (j, "veth"));
  if (ip == NULL || veth == NULL || strlen (veth) >= sizeof p->veth || inet_pton (AF_INET, ip, &p->ip) != 1
      || !mac_from_json (json_object_get (j, "mac"), p->mac)
      || !mac_from_json (json_object_get (j, "gateway_mac"), p->gw_mac))
    return false;
  strcpy (p->veth, veth);
  p->open = json_is_true (json_object_get (j, "open"));
  size_t i;
  json_t *s;
  json_array_foreach (json_object_get (j, "dns_allowed"), i, s)
  {
    if (p->n_dns < OHBOX_NET_MAX_DNS && inet_pton (AF_INET, json_string_value (s) ?: "", &p->dns[p->n_dns]) == 1)
      p->n_dns++;
  }
  /* Recorded by us from a parsed setting: parses again. */
  return ohbox_egress_parse (json_string_value (json_object_get (j, "egress")), &p->egress, NULL) == 0;
}

int
ohbox_port_attach (const struct ohbox_port *p, const char *bridge, ohbox_error_t *err)
{
  struct ohbox_nfnl_elem e[OHBOX_PORT_MAX_ELEMS];
  if (ohbox_nfnl_elements (OHBOX_NFT_TABLE, true, e, ohbox_port_elements (p, e), err) < 0)
    return ohbox_error_prefix (err, "add the sandbox's filters");
  /* The host's answers go to this MAC only: an ARP reply from another
   * sandbox (were it to pass the bridge) cannot take the address over. */
  struct ohbox_nl *nl = NULL;
  int idx = 0, r = -1;
  if (ohbox_nl_open (-1, &nl, err) == 0 && ohbox_nl_link_index (nl, bridge, &idx, err) == 0)
    r = ohbox_nl_neigh_set (nl, idx, p->ip, p->mac, err);
  ohbox_nl_close (nl);
  return r;
}

int
ohbox_port_detach (const struct ohbox_port *p, const char *bridge, ohbox_error_t *err)
{
  struct ohbox_nfnl_elem e[OHBOX_PORT_MAX_ELEMS];
  /* (elements, sets or tables gone already are fine: nfnl.h) */
  if (ohbox_nfnl_elements (OHBOX_NFT_TABLE, false, e, ohbox_port_elements (p, e), err) < 0)
    return ohbox_error_prefix (err, "delete the sandbox's filters");
  struct ohbox_nl *nl = NULL;
  int idx = 0, r = -1;
  if (ohbox_nl_open (-1, &nl, err) == 0 && ohbox_nl_link_index (nl, bridge, &idx, err) == 0)
    r = idx == 0 ? 0 : ohbox_nl_neigh_del (nl, idx, p->ip, err);
  ohbox_nl_close (nl);
  return r;
}

void
ohbox_port_purge (const char *addr)
{
  json_t *ports = NULL, *sets = NULL, *mine = json_array ();
  ohbox_nft_port_elements (&ports, NULL);
  ohbox_nft_sandbox_elements (&sets, NULL);
  json_t *lists[] = { ports, sets };
  for (size_t l = 0; l < 2; l++)
    {
      size_t i;
      json_t *e;
      json_array_foreach (lists[l], i, e)
      {
        if (strcmp (json_string_value (json_object_get (e, "addr")), addr) == 0)
          json_array_append (mine, e);
      }
    }
  ohbox_nft_delete_elements (mine, NULL);
  json_decref (mine);
  json_decref (ports);
  json_decref (sets);
  struct in_addr a;
  struct ohbox_netdef *defs = NULL;
  size_t n = 0;
  struct ohbox_nl *nl = NULL;
  if (inet_pton (AF_INET, addr, &a) == 1 && ohbox_netdefs_all (&defs, &n, NULL) == 0
      && ohbox_nl_open (-1, &nl, NULL) == 0)
    for (size_t i = 0; i < n; i++)
      {
        int idx = 0;
        struct ohbox_cidr4 sub = { .net = defs[i].net, .prefix = defs[i].prefix };
        if (ohbox_cidr4_contains (&sub, a) && ohbox_nl_link_index (nl, defs[i].bridge, &idx, NULL) == 0 && idx > 0)
          ohbox_nl_neigh_del (nl, idx, a, NULL);
      }
  ohbox_nl_close (nl);
  free (defs);
}
