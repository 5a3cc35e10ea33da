/* network.h: sandbox networking as root: the `ohbox0` bridge, one veth pair
 * per sandbox, address leases, published ports, and the generated
 * /etc/hosts, /etc/hostname and /etc/resolv.conf.
 *
 * Host-wide state lives under NETROOT (/run/ohbox/net, $OHBOX_NETROOT
 * overrides it), shared by every store and state root since the bridge,
 * its addresses and the host's ports are host-wide:
 *
 *   lock               flock held while leases change
 *   ip/ADDR            symlink to the owning sandbox's state directory
 *   port/PROTO-PORT    same, one per published host port (any host address)
 *   next               where the next address search starts (spreads reuse)
 *
 * A lease whose owner directory is gone is stale (its sandbox was removed
 * while ohbox was killed): the next allocation or removal reclaims it.
 * Each sandbox records what it holds in STATE/<id>/network.json before the
 * nft elements are added; release (monitor exit, rm, reconciliation) undoes
 * exactly that, and only for leases it still owns, so it is idempotent.
 *
 * Published ports work from 127.0.0.1 by DNAT in nft's output hook plus
 * route_localnet on the bridge and masquerading (no proxy process: nothing
 * to start, nothing in the data path). The monitor keeps each published
 * host port bound (not listening) for the sandbox's lifetime, so a host
 * program cannot take it meanwhile and a port already used on the host is
 * refused at start.
 *
 * Isolation (issue 14; rules and sets: nft.h): each sandbox's veth is an
 * isolated port of ohbox0 (no frame from one sandbox reaches another) with
 * anti-spoofing elements keyed by the veth (its MAC, derived from its
 * address, and its address; ARP too), and the host keeps a permanent
 * neighbour entry for every leased address. Sandboxes reach each other only
 * through published ports on the host's addresses, or inside a named
 * network (below). The host itself answers a sandbox only for established
 * connections, DNS to its resolvers and ping to its gateway; egress follows
 * --egress (egress.h). A sandbox's elements and neighbour entry follow from
 * network.json's fields, recorded before they exist, added at start and
 * deleted at release under the same discipline as published ports; `ohbox
 * check` finds orphans (ohbox_network_check).
 *
 * Named networks (`ohbox network create NAME`, `--network NAME`): a bridge
 * each ("ohbn" + 11 hex digits), a /24 of 10.214.0.0/16 that no network and
 * no route of the host uses (or --subnet), ports not isolated: members reach
 * each other (with the same anti-spoofing), nothing else does but through
 * published ports. Definitions are kept in ohbox_network_defs_dir() across
 * reboots; a bridge missing is made again by the next start (or `ohbox
 * check --repair`). Root only.
 *
 * Default subnet 10.213.0.0/16 (gateway 10.213.0.1 on ohbox0): outside
 * Docker's (172.17-31.x, 192.168.x), Podman's (10.88.x), Kubernetes'
 * (10.96.x, 10.244.x), libvirt's (192.168.122.x) and the low 10.0-10.10
 * ranges most VPNs and clouds use. $OHBOX_NETWORK_SUBNET (a /16 to /24,
 * A.B.C.D/N) changes it. */
#ifndef OHBOX_NETWORK_H
#define OHBOX_NETWORK_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

struct ohbox_runtime;
struct ohbox_run_options;
struct ohbox_mount_spec;

#define OHBOX_NET_BRIDGE "ohbox0"
#define OHBOX_NET_DEFAULT_SUBNET "10.213.0.0/16"
#define OHBOX_NET_MAX_PORTS 1024 /* published host ports per sandbox */
#define OHBOX_NET_MAX_DNS 8
#define OHBOX_NETWORK_NAME_MAX 64

/* One -p argument, parsed. HOST_LO == 0: automatic host ports. */
struct ohbox_publish
{
  struct in_addr host_ip; /* INADDR_ANY: every address */
  uint16_t host_lo, host_hi;
  uint16_t ctr_lo, ctr_hi;
  int proto; /* IPPROTO_TCP or IPPROTO_UDP */
};

/* One published port, as allocated. */
struct ohbox_port_mapping
{
  struct in_addr host_ip;
  uint16_t host_port;
  uint16_t ctr_port;
  int proto;
};

/* Parses -p [IP:][HOST[-HOST]:]CTR[-CTR][/tcp|/udp]. A host range with one
 * container port is a pool: one free port of it is chosen. */
int ohbox_publish_parse (const char *spec, struct ohbox_publish *ret, ohbox_error_t *err);

struct ohbox_network;

/* Before the sandbox starts: for bridge, the bridge and table (first use),
 * the address and port leases, nft elements, network.json; for every mode
 * but host and container:, the files for /etc. HOSTNAME is the sandbox's. */
int ohbox_network_prepare (struct ohbox_runtime *rt, const char *id, int dirfd, const struct ohbox_run_options *o,
                           const char *hostname, struct ohbox_network **ret, ohbox_error_t *err);
/* Prepends the /etc bind mounts to *MOUNTS (sources in the state dir). */
void ohbox_network_mounts (struct ohbox_network *n, struct ohbox_mount_spec **mounts, size_t *n_mounts);
/* Rootless, where ohbox_network_mounts cannot bind: the same files written
 * into the sandbox's overlay upper dir UPPER (its /etc). */
int ohbox_network_etc_into_upper (struct ohbox_network *n, const char *upper, ohbox_error_t *err);
/* The joined namespace for container:ID (an fd of its init's netns), or -1. */
int ohbox_network_join_fd (struct ohbox_network *n);
/* Right after clone (USERNS_FD and NETNS_FD: the init's namespaces, its
 * id maps not written yet): rootless, spawns slirp4netns or pasta, which
 * take a while to start. */
int ohbox_network_attach_early (struct ohbox_network *n, int userns_fd, int netns_fd, ohbox_error_t *err);
/* After clone, before the command runs: the veth pair into its network
 * namespace, address, loopback and route; rootless, waits for slirp4netns
 * (and adds its port forwards) or pasta (spawning it if attach_early did
 * not). */
int ohbox_network_attach (struct ohbox_network *n, pid_t pid, int userns_fd, int netns_fd, ohbox_error_t *err);
/* "http://ADDR:PORT" where the host reaches the sandbox's TCP port CTR_PORT
 * as published (ADDR 127.0.0.1 for a port published on every address), or
 * NULL when it is not published. */
char *ohbox_network_published_url (struct ohbox_network *n, uint16_t ctr_port);
/* Frees N (closes the reserved ports: call once the leases are released). */
/* Lets go of the host ports a bridge sandbox's monitor keeps bound (its
 * teardown: the leases and elements go next, and a sandbox started right
 * after may bind the same ports). */
void ohbox_network_unreserve (struct ohbox_network *n);
/* Whether releasing what N holds waits for the kernel or a helper (a
 * bridge's veth and nft elements, a rootless network's helper): true
 * unless N is known to hold none (NULL: not known). */
bool ohbox_network_release_waits (const struct ohbox_network *n);
void ohbox_network_free (struct ohbox_network *n);

/* Releases what sandbox ID holds (STATE_DIR: its state dir path, DIRFD
 * open on it): nft elements, port and address leases, the host veth.
 * Idempotent; nothing recorded is fine. */
int ohbox_network_release (const char *state_dir, int dirfd, ohbox_error_t *err);
/* Reclaims stale leases (owner directory gone). */
int ohbox_network_gc (ohbox_error_t *err);
/* Published ports' nft elements that point at an address no lease names
 * (left by a release that failed or a hand-made edit): RET an array as
 * ohbox_nft_port_elements gives. */
int ohbox_network_orphan_elements (json_t **ret, ohbox_error_t *err);
/* Deletes those of ELEMS that still are orphans (under the network lock). */
int ohbox_network_drop_orphan_elements (json_t *elems, ohbox_error_t *err);
/* The sandboxes' elements (anti-spoofing, DNS, --egress: nft.h) that no
 * live lease accounts for, as ohbox_nft_sandbox_elements gives them. */
int ohbox_network_orphan_sandbox_elements (json_t **ret, ohbox_error_t *err);
/* Permanent neighbour entries on ohbox's bridges for addresses no lease
 * names: [{"bridge","addr"}]. */
int ohbox_network_orphan_neighbours (json_t **ret, ohbox_error_t *err);
/* Deletes the neighbour entry E (as above) if it still is an orphan. */
int ohbox_network_drop_orphan_neighbour (json_t *e, ohbox_error_t *err);
/* Named networks whose bridge is missing: [{"name","bridge"}]; and the
 * repair: the bridge made again with its elements. */
int ohbox_network_missing_bridges (json_t **ret, ohbox_error_t *err);
int ohbox_network_repair_bridge (const char *name, ohbox_error_t *err);
/* Whether the nft tables hold this version's whole rules (*RET true too
 * when no bridge of ohbox exists: nothing needs them); and the repair:
 * made or brought up to date, keeping every element. */
int ohbox_network_tables_complete (bool *ret, ohbox_error_t *err);
int ohbox_network_repair_tables (ohbox_error_t *err);

/* network_named.c: named networks (above). */
/* Whether NAME can name a network: 1 to OHBOX_NETWORK_NAME_MAX letters,
 * digits, `_`, `.`, `-`, not a --network mode (bridge, none, host, ...). */
int ohbox_network_name_check (const char *name, ohbox_error_t *err);
/* Makes network NAME with SUBNET ("A.B.C.D/N", 16 <= N <= 28; NULL: a free
 * /24); *RET (may be NULL) gets its definition. */
int ohbox_network_create (const char *name, const char *subnet, json_t **ret, ohbox_error_t *err);
/* Removes network NAME: refused (usage) while a sandbox holds an address
 * of it; its bridge, elements and definition go. */
int ohbox_network_remove (const char *name, ohbox_error_t *err);
/* Every network, the default one ("bridge", ohbox0) first:
 * [{"name","subnet","gateway","bridge","default","bridge_present",
 *   "sandboxes": [{"id","ip"}], "id" and "created" (named ones)}]. */
int ohbox_network_list (json_t **ret, ohbox_error_t *err);
/* One network (NAME, or "bridge" for the default one), as above. */
int ohbox_network_inspect (const char *name, json_t **ret, ohbox_error_t *err);
/* Where named networks are defined: /var/lib/ohbox/networks, or
 * $OHBOX_NETROOT/networks when that is set (tests, private namespaces). */
const char *ohbox_network_defs_dir (void);

/* network.json of a sandbox ({"mode","ip","gateway","ports":[...],"active"}),
 * or NULL when it has none. */
json_t *ohbox_network_read (int dirfd);
/* The host-wide network state directory. */
const char *ohbox_network_root (void);

/* network_ports.c: allocation of host ports under the network lock. For
 * each of the N requests: leases in NETROOT/port and a socket bound to the
 * host port, kept by the caller for the sandbox's lifetime. */
int ohbox_ports_allocate (int netdirfd, const char *owner, const struct ohbox_publish *reqs, size_t n,
                          struct ohbox_port_mapping **ret, size_t *ret_n, int **ret_fds, ohbox_error_t *err);
/* Whether OWNER holds the port lease PROTO/PORT in NETDIRFD. */
bool ohbox_ports_lease_owned (int netdirfd, const char *owner, int proto, uint16_t port);
/* Unlinks the port lease PROTO/PORT in NETDIRFD when OWNER holds it; true then. */
bool ohbox_ports_release_one (int netdirfd, const char *owner, int proto, uint16_t port);
/* Lease names: "tcp-8080". */
void ohbox_port_lease_name (int proto, uint16_t port, char buf[16]);
/* Whether lease NAME in DIRFD is held by a live owner other than nobody:
 * 1 held, 0 free (missing or stale: stale is unlinked). */
int ohbox_lease_held (int dirfd, const char *name);

/* rootless_net.c: slirp4netns for sandboxes of ordinary users. */
/* Whether NAME is an executable in $PATH. */
bool ohbox_net_tool_available (const char *name);
bool ohbox_slirp_available (void);
/* A user-mode network helper (slirp4netns, pasta) spawned for a sandbox's
 * namespaces and not waited for yet: spawned as soon as they exist, waited
 * for before the sandbox's command may run (it takes 2-20 ms to start). */
struct ohbox_net_helper
{
  pid_t pid;    /* our child; 0: none */
  int pidfd;    /* readable when it exited (-1: not known) */
  int ready_fd; /* readable when it is ready */
  int exit_fd;  /* slirp4netns: closing it stops it */
};
void ohbox_net_helper_init (struct ohbox_net_helper *h);
/* In the helper's child before its exec: stdin from /dev/null, stdout and
 * stderr to LOGFD, a process group of its own (a ^C at the terminal is for
 * the sandbox) and SIGPIPE as a fresh program expects it. */
void ohbox_net_helper_child_stdio (int logfd);
/* After its readiness was read: closes what only the wait needed. */
void ohbox_net_helper_ready (struct ohbox_net_helper *h);
/* Kills (SIGKILL) and reaps a helper that is not ready; its wait status. */
int ohbox_net_helper_kill (struct ohbox_net_helper *h);
/* Spawns slirp4netns for the namespaces USERNS_FD and NETNS_FD (tap0,
 * 10.0.2.100, gateway 10.0.2.2, DNS 10.0.2.3), its API socket and log in
 * the state dir DIRFD; ohbox_slirp_wait waits until it configured them. */
int ohbox_slirp_spawn (int userns_fd, int netns_fd, int dirfd, struct ohbox_net_helper *h, ohbox_error_t *err);
int ohbox_slirp_wait (struct ohbox_net_helper *h, ohbox_error_t *err);
/* Publishes M through the running slirp4netns of the state dir DIRFD. */
int ohbox_slirp_hostfwd (int dirfd, const struct ohbox_port_mapping *m, ohbox_error_t *err);

/* rootless_pasta.c: pasta (Debian's passt) for sandboxes of ordinary users. */
bool ohbox_pasta_available (void);
/* Spawns pasta for the namespaces USERNS_FD and NETNS_FD with the same
 * addresses as slirp4netns (tap0, 10.0.2.100/24, gateway 10.0.2.2, DNS
 * 10.0.2.3) and the N_MAPS published ports bound by pasta itself; its log
 * pasta.log in STATE_DIR. ohbox_pasta_wait returns once the namespace is
 * configured and the ports are bound. H->pid: our child, dies with the
 * caller (parent-death signal) or by ohbox_pasta_stop. */
int ohbox_pasta_spawn (int userns_fd, int netns_fd, const char *state_dir, const struct ohbox_port_mapping *maps,
                       size_t n_maps, struct ohbox_net_helper *h, ohbox_error_t *err);
int ohbox_pasta_wait (struct ohbox_net_helper *h, const char *state_dir, ohbox_error_t *err);
/* Stops (SIGTERM) and reaps the pasta PID started by ohbox_pasta_spawn. */
void ohbox_pasta_stop (pid_t pid);
/* Stops the pasta PID of another process (reconciliation after the monitor
 * was killed) if it still is the one started at START (/proc starttime). */
void ohbox_pasta_kill_recorded (pid_t pid, unsigned long long start);

#endif
