/* network_internal.h: what the files of network/ share. */
#ifndef OHBOX_NETWORK_INTERNAL_H
#define OHBOX_NETWORK_INTERNAL_H

#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/types.h>

#include "network/egress.h"
#include "network/network.h"
#include "network/nfnl.h"
#include "sandbox/sandbox.h"

#define RESOLV_MAX (64 * 1024)

/* A bridge network: the default one (ohbox0) or a named one
 * (network_named.c). */
struct ohbox_netdef
{
  char name[OHBOX_NETWORK_NAME_MAX + 1]; /* "": the default network */
  char bridge[IFNAMSIZ];
  struct in_addr net, gw;
  int prefix;
  bool isolated; /* sandboxes do not reach each other: the default network */
};

/* What a sandbox holds on its bridge, recorded in network.json before any
 * of it exists: its nft elements and neighbour entry follow from it. */
struct ohbox_port
{
  char veth[IFNAMSIZ];
  uint8_t mac[6];
  struct in_addr ip;
  bool open;                             /* on a named network: its frames may go to the members */
  uint8_t gw_mac[6];                     /* its bridge's (ohbox_bridge_mac): where they go else */
  struct in_addr dns[OHBOX_NET_MAX_DNS]; /* IPv4 resolvers of its resolv.conf */
  size_t n_dns;
  struct ohbox_egress egress;
};

/* The most elements a sandbox has: ports, uplink or open, dns, egress or
 * noegress. */
#define OHBOX_PORT_MAX_ELEMS (3 + OHBOX_NET_MAX_DNS + OHBOX_EGRESS_MAX_CIDRS)

struct ohbox_network
{
  enum ohbox_network_mode mode;
  char *state_dir; /* owner of the leases */
  char *etc_dir;   /* where hosts, hostname, resolv.conf are (NULL: none) */
  char *resolv;    /* resolv.conf's text, once planned */
  struct ohbox_netdef def;
  struct ohbox_port port;
  struct in_addr ip, gw;
  int prefix;
  int *port_fds;
  size_t n_ports;
  int join_fd;
  /* rootless: slirp4netns or pasta publishes these once it runs */
  bool slirp, pasta;
  int slirp_exit_fd;
  pid_t pasta_pid;
  struct ohbox_net_helper helper; /* spawned, not yet waited for */
  int dirfd;
  struct ohbox_port_mapping *maps;
  size_t n_maps;
};

/* network_etc.c: resolv.conf for the sandbox (--dns, else the host's):
 * N->resolv, and its IPv4 servers in N->port.dns. */
int ohbox_network_plan_resolv (struct ohbox_network *n, const struct ohbox_run_options *o, ohbox_error_t *err);
/* hosts, hostname and resolv.conf for the sandbox, in its state directory DIRFD. */
int ohbox_network_write_etc (struct ohbox_network *n, int dirfd, const struct ohbox_run_options *o,
                             const char *hostname, ohbox_error_t *err);

/* network.c */
/* The network state directory, locked (the lock's fd in *RET_LOCK): every
 * lease, network and element is taken or given back under it. */
int ohbox_netroot_open_locked (int *ret_lock, ohbox_error_t *err);
/* Whether an address lease names ADDR (held or stale); whose (a state
 * directory, in OWNER of OWNER_SIZE bytes) when it does. */
bool ohbox_ip_leased (int netfd, struct in_addr addr, char *owner, size_t owner_size);
/* The default network: ohbox0 with $OHBOX_NETWORK_SUBNET or the default. */
int ohbox_netdef_default (struct ohbox_netdef *d, ohbox_error_t *err);

/* network_bridge.c: bridges and the sandboxes' elements. */
/* D's bridge with its gateway address, up, its sysctls; both nft tables
 * (made or updated with every network's elements when incomplete); D's
 * own elements when the bridge or its address was missing. Under the
 * network lock. */
int ohbox_bridge_ensure (const struct ohbox_netdef *d, ohbox_error_t *err);
/* The MAC of the bridge with gateway address GW (set on it, and in the
 * filters): locally administered, never a sandbox's. */
void ohbox_bridge_mac (struct in_addr gw, uint8_t mac[6]);
/* Deletes D's bridge and its elements (a named network's removal). */
int ohbox_bridge_remove (const struct ohbox_netdef *d, ohbox_error_t *err);
/* Whether D's bridge exists. */
bool ohbox_bridge_exists (const struct ohbox_netdef *d);
/* The MAC of the sandbox with address IP: locally administered, from the
 * address (two sandboxes never share one; the same address, the same MAC). */
void ohbox_port_mac (struct in_addr ip, uint8_t mac[6]);
/* P's elements (at most OHBOX_PORT_MAX_ELEMS) into OUT; their number. */
size_t ohbox_port_elements (const struct ohbox_port *p, struct ohbox_nfnl_elem *out);
/* network.json's fields for P, and P from them (false: none recorded). */
void ohbox_port_to_json (const struct ohbox_port *p, json_t *j);
bool ohbox_port_from_json (json_t *j, struct ohbox_port *p);
/* Adds P's elements and the neighbour entry on BRIDGE; deletes them. */
int ohbox_port_attach (const struct ohbox_port *p, const char *bridge, ohbox_error_t *err);
int ohbox_port_detach (const struct ohbox_port *p, const char *bridge, ohbox_error_t *err);
/* Deletes every element (maps' and sets') and neighbour entry (on the
 * bridges of NETS) of sandbox address ADDR: a stale lease's, under the
 * network lock. */
void ohbox_port_purge (const char *addr);

/* network_named.c */
/* Named network NAME's definition into D (NOT_FOUND when there is none). */
int ohbox_netdef_load (const char *name, struct ohbox_netdef *d, ohbox_error_t *err);
/* Every network: the default one first, then the named ones (*RET malloc'd). */
int ohbox_netdefs_all (struct ohbox_netdef **ret, size_t *ret_n, ohbox_error_t *err);

#endif
