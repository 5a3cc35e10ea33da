/* netspoof: a static program run inside a sandbox to forge frames on its
 * network, as agent code holding CAP_NET_RAW could (issue 14). It builds
 * whole Ethernet frames and sends them on IFACE through an AF_PACKET
 * socket; it judges nothing: the test scripts look at what arrived.
 *
 *   netspoof raw
 *       prints "packet ok|ERRNO" and "icmp-raw ok|ERRNO": whether raw
 *       sockets open (CAP_NET_RAW), and "icmp-dgram ok|ERRNO" (ping
 *       sockets: net.ipv4.ping_group_range)
 *   netspoof ping ADDR
 *       one ICMP echo through an ICMP datagram socket, as iputils' ping
 *       does without CAP_NET_RAW (busybox 1.35's ping has no such
 *       fallback); prints "reply from ADDR" or fails after 2 s
 *   netspoof send ADDR PORT TEXT
 *       one UDP datagram TEXT through an ordinary socket (busybox's nc has
 *       no UDP)
 *   netspoof listen PORT
 *       prints the text of each UDP datagram to PORT, until killed
 *   netspoof arp IFACE CLAIMED-IP DST-MAC COUNT
 *       ARP replies saying CLAIMED-IP is at IFACE's MAC, to DST-MAC (the
 *       host's bridge, or ff:ff:ff:ff:ff:ff), COUNT times 100 ms apart
 *   netspoof udp IFACE SRC-MAC|own SRC-IP DST-MAC DST-IP PORT PAYLOAD
 *       one UDP datagram with these addresses (any source)
 *   netspoof ra IFACE PREFIX COUNT
 *       ICMPv6 router advertisements to all nodes (ff02::1) from IFACE's
 *       link-local address: a default router (lifetime 1800 s) with the
 *       on-link, autonomous /64 PREFIX (a host that accepts them gets a
 *       route and an address)
 *
 * Exit status: 0 when everything was sent, 1 on an error (printed). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/if_ether.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int
fail (const char *what)
{
  fprintf (stderr, "netspoof: %s: %s\n", what, strerror (errno));
  return 1;
}

static int
parse_mac (const char *s, uint8_t mac[6])
{
  unsigned v[6];
  if (sscanf (s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
    return -1;
  for (int i = 0; i < 6; i++)
    mac[i] = (uint8_t) v[i];
  return 0;
}

static void
try_socket (const char *name, int domain, int type, int proto)
{
  int fd = socket (domain, type, proto);
  printf ("%s %s\n", name, fd >= 0 ? "ok" : strerrorname_np (errno));
  if (fd >= 0)
    close (fd);
}

/* The sending end: an AF_PACKET socket bound to IFACE, and IFACE's MAC. */
struct link
{
  int fd;
  struct sockaddr_ll to;
  uint8_t mac[6];
};

static int
link_open (const char *iface, struct link *l)
{
  l->fd = socket (AF_PACKET, SOCK_RAW, htons (ETH_P_ALL));
  if (l->fd < 0)
    return fail ("socket(AF_PACKET)");
  struct ifreq ifr = { 0 };
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "%s", iface);
  if (ioctl (l->fd, SIOCGIFHWADDR, &ifr) < 0)
    return fail (iface);
  memcpy (l->mac, ifr.ifr_hwaddr.sa_data, 6);
  memset (&l->to, 0, sizeof l->to);
  l->to.sll_family = AF_PACKET;
  l->to.sll_ifindex = (int) if_nametoindex (iface);
  l->to.sll_halen = 6;
  return l->to.sll_ifindex > 0 ? 0 : fail (iface);
}

static int
link_send (struct link *l, const void *frame, size_t len)
{
  if (sendto (l->fd, frame, len, 0, (struct sockaddr *) &l->to, sizeof l->to) != (ssize_t) len)
    return fail ("sendto");
  return 0;
}

/* FRAME to DEST COUNT times, 100 ms apart. */
static int
link_send_repeated (struct link *l, const uint8_t *dest, const void *frame, size_t len, int count)
{
  memcpy (l->to.sll_addr, dest, 6);
  for (int i = count; i > 0; i--)
    {
      if (link_send (l, frame, len))
        return 1;
      struct timespec ts = { 0, 100 * 1000 * 1000 };
      nanosleep (&ts, NULL);
    }
  return 0;
}

static uint16_t
csum_add (uint32_t sum, const void *data, size_t len)
{
  const uint8_t *p = data;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += (uint32_t) (p[i] << 8 | p[i + 1]);
  if (len & 1)
    sum += (uint32_t) (p[len - 1] << 8);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t) sum;
}

static int
cmd_arp (char **argv)
{
  struct link l;
  struct
  {
    struct ether_header eth;
    struct ether_arp arp;
  } __attribute__ ((packed)) f = { 0 };
  struct in_addr claimed;
  if (inet_pton (AF_INET, argv[1], &claimed) != 1 || parse_mac (argv[2], f.eth.ether_dhost) < 0)
    return fprintf (stderr, "netspoof: bad address\n"), 1;
  if (link_open (argv[0], &l))
    return 1;
  memcpy (f.eth.ether_shost, l.mac, 6);
  f.eth.ether_type = htons (ETHERTYPE_ARP);
  f.arp.arp_hrd = htons (ARPHRD_ETHER);
  f.arp.arp_pro = htons (ETHERTYPE_IP);
  f.arp.arp_hln = 6;
  f.arp.arp_pln = 4;
  f.arp.arp_op = htons (ARPOP_REPLY);
  memcpy (f.arp.arp_sha, l.mac, 6);
  memcpy (f.arp.arp_spa, &claimed, 4);
  /* (as a gratuitous reply: the target is the claimed address too) */
  memcpy (f.arp.arp_tha, f.eth.ether_dhost, 6);
  memcpy (f.arp.arp_tpa, &claimed, 4);
  return link_send_repeated (&l, f.eth.ether_dhost, &f, sizeof f, atoi (argv[3]));
}

static int
cmd_udp (char **argv)
{
  struct link l;
  const char *payload = argv[6];
  size_t plen = strlen (payload);
  struct
  {
    struct ether_header eth;
    struct iphdr ip;
    struct udphdr udp;
    char data[1024];
  } __attribute__ ((packed)) f = { 0 };
  if (plen > sizeof f.data)
    return fprintf (stderr, "netspoof: payload too long\n"), 1;
  if (link_open (argv[0], &l))
    return 1;
  struct in_addr src, dst;
  if ((strcmp (argv[1], "own") != 0 && parse_mac (argv[1], f.eth.ether_shost) < 0)
      || inet_pton (AF_INET, argv[2], &src) != 1 || parse_mac (argv[3], f.eth.ether_dhost) < 0
      || inet_pton (AF_INET, argv[4], &dst) != 1)
    return fprintf (stderr, "netspoof: bad address\n"), 1;
  if (strcmp (argv[1], "own") == 0)
    memcpy (f.eth.ether_shost, l.mac, 6);
  f.eth.ether_type = htons (ETHERTYPE_IP);
  f.ip.version = 4;
  f.ip.ihl = 5;
  f.ip.ttl = 64;
  f.ip.protocol = IPPROTO_UDP;
  f.ip.saddr = src.s_addr;
  f.ip.daddr = dst.s_addr;
  f.ip.tot_len = htons ((uint16_t) (sizeof f.ip + sizeof f.udp + plen));
  f.ip.check = htons ((uint16_t) ~csum_add (0, &f.ip, sizeof f.ip));
  f.udp.source = htons (40000);
  f.udp.dest = htons ((uint16_t) atoi (argv[5]));
  f.udp.len = htons ((uint16_t) (sizeof f.udp + plen));
  memcpy (f.data, payload, plen); /* UDP checksum 0: none (IPv4) */
  memcpy (l.to.sll_addr, f.eth.ether_dhost, 6);
  return link_send (&l, &f, sizeof f.eth + sizeof f.ip + sizeof f.udp + plen);
}

static int
cmd_ra (char **argv)
{
  struct link l;
  struct
  {
    struct ether_header eth;
    struct ip6_hdr ip6;
    struct nd_router_advert ra;
    struct nd_opt_prefix_info pi;
    struct
    {
      uint8_t type, len, mac[6];
    } sll;
  } __attribute__ ((packed)) f = { 0 };
  if (link_open (argv[0], &l))
    return 1;
  if (inet_pton (AF_INET6, argv[1], &f.pi.nd_opt_pi_prefix) != 1)
    return fprintf (stderr, "netspoof: bad prefix\n"), 1;
  static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
  memcpy (f.eth.ether_dhost, all_nodes_mac, 6);
  memcpy (f.eth.ether_shost, l.mac, 6);
  f.eth.ether_type = htons (ETHERTYPE_IPV6);
  f.ip6.ip6_flow = htonl (6u << 28);
  f.ip6.ip6_plen = htons (sizeof f.ra + sizeof f.pi + sizeof f.sll);
  f.ip6.ip6_nxt = IPPROTO_ICMPV6;
  f.ip6.ip6_hlim = 255;
  /* fe80:: with the EUI-64 of the MAC; to ff02::1 */
  uint8_t *s = f.ip6.ip6_src.s6_addr;
  s[0] = 0xfe, s[1] = 0x80;
  s[8] = l.mac[0] ^ 2, s[9] = l.mac[1], s[10] = l.mac[2], s[11] = 0xff, s[12] = 0xfe;
  s[13] = l.mac[3], s[14] = l.mac[4], s[15] = l.mac[5];
  f.ip6.ip6_dst.s6_addr[0] = 0xff, f.ip6.ip6_dst.s6_addr[1] = 0x02, f.ip6.ip6_dst.s6_addr[15] = 1;
  f.ra.nd_ra_type = ND_ROUTER_ADVERT;
  f.ra.nd_ra_curhoplimit = 64;
  f.ra.nd_ra_router_lifetime = htons (1800);
  f.pi.nd_opt_pi_type = ND_OPT_PREFIX_INFORMATION;
  f.pi.nd_opt_pi_len = 4;
  f.pi.nd_opt_pi_prefix_len = 64;
  f.pi.nd_opt_pi_flags_reserved = ND_OPT_PI_FLAG_ONLINK | ND_OPT_PI_FLAG_AUTO;
  f.pi.nd_opt_pi_valid_time = htonl (86400);
  f.pi.nd_opt_pi_preferred_time = htonl (14400);
  f.sll.type = ND_OPT_SOURCE_LINKADDR;
  f.sll.len = 1;
  memcpy (f.sll.mac, l.mac, 6);
  /* ICMPv6 checksum over the pseudo-header and the message */
  uint32_t sum = 0;
  sum = csum_add (sum, &f.ip6.ip6_src, 32);
  sum = csum_add (sum, (uint8_t[]){ 0, 0, 0, (uint8_t) ntohs (f.ip6.ip6_plen), 0, 0, 0, IPPROTO_ICMPV6 }, 8);
  sum = csum_add (sum, &f.ra, ntohs (f.ip6.ip6_plen));
  f.ra.nd_ra_cksum = htons ((uint16_t) ~sum);
  return link_send_repeated (&l, f.eth.ether_dhost, &f, sizeof f, atoi (argv[2]));
}

static int
cmd_ping (const char *addr)
{
  struct sockaddr_in to = { .sin_family = AF_INET };
  if (inet_pton (AF_INET, addr, &to.sin_addr) != 1)
    return fprintf (stderr, "netspoof: bad address\n"), 1;
  int fd = socket (AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
  if (fd < 0)
    return fail ("socket(ICMP datagram)");
  /* (the kernel sets the id and the checksum of a datagram socket's echo) */
  struct icmphdr echo = { .type = ICMP_ECHO };
  echo.un.echo.sequence = htons (1);
  if (sendto (fd, &echo, sizeof echo, 0, (struct sockaddr *) &to, sizeof to) < 0)
    return fail ("sendto");
  struct pollfd p = { .fd = fd, .events = POLLIN };
  struct icmphdr reply;
  if (poll (&p, 1, 2000) != 1 || recv (fd, &reply, sizeof reply, 0) < (ssize_t) sizeof reply
      || reply.type != ICMP_ECHOREPLY)
    return fprintf (stderr, "netspoof: no echo reply from %s\n", addr), 1;
  printf ("reply from %s\n", addr);
  return 0;
}

static int
cmd_send (const char *addr, const char *port, const char *text)
{
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) atoi (port)) };
  if (inet_pton (AF_INET, addr, &to.sin_addr) != 1)
    return fprintf (stderr, "netspoof: bad address\n"), 1;
  int fd = socket (AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || sendto (fd, text, strlen (text), 0, (struct sockaddr *) &to, sizeof to) < 0)
    return fail ("send");
  return 0;
}

static int
cmd_listen (const char *port)
{
  struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) atoi (port)) };
  int fd = socket (AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || bind (fd, (struct sockaddr *) &at, sizeof at) < 0)
    return fail ("listen");
  char buf[2048];
  for (;;)
    {
      ssize_t n = recv (fd, buf, sizeof buf - 1, 0);
      if (n < 0)
        return fail ("recv");
      buf[n] = '\0';
      printf ("%s\n", buf);
    }
}

int
main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  if (argc == 2 && strcmp (argv[1], "raw") == 0)
    {
      try_socket ("packet", AF_PACKET, SOCK_RAW, htons (ETH_P_ALL));
      try_socket ("icmp-raw", AF_INET, SOCK_RAW, IPPROTO_ICMP);
      try_socket ("icmp-dgram", AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
      return 0;
    }
  if (argc == 3 && strcmp (argv[1], "ping") == 0)
    return cmd_ping (argv[2]);
  if (argc == 5 && strcmp (argv[1], "send") == 0)
    return cmd_send (argv[2], argv[3], argv[4]);
  if (argc == 3 && strcmp (argv[1], "listen") == 0)
    return cmd_listen (argv[2]);
  if (argc == 6 && strcmp (argv[1], "arp") == 0)
    return cmd_arp (argv + 2);
  if (argc == 9 && strcmp (argv[1], "udp") == 0)
    return cmd_udp (argv + 2);
  if (argc == 5 && strcmp (argv[1], "ra") == 0)
    return cmd_ra (argv + 2);
  fprintf (stderr, "usage: netspoof raw | ping ADDR | send ADDR PORT TEXT | listen PORT | arp IFACE IP DST-MAC COUNT | "
                   "udp IFACE SRC-MAC|own SRC-IP DST-MAC DST-IP "
                   "PORT PAYLOAD | ra IFACE PREFIX COUNT\n");
  return 2;
}
