/* nft.c: ohbox's own nftables table (see nft.h). */
#include "config.h"
#include "network/nft.h"
#include "common/utils.h"

#include "common/dl_nft.h"
#include "network/egress.h"
#include "network/netlink.h"
#include "network/nfnl.h"
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs CMDS; with RET_JSON, their output in nft's JSON (NULL if none). */
static int
nft_exec (const char *cmds, bool quiet, json_t **ret_json, ohbox_error_t *err)
{
  /* Every nftables call goes through here. */
  if (ohbox_dl_nft_load (err) < 0)
    return -1;
  struct nft_ctx *ctx = nft_ctx_new (NFT_CTX_DEFAULT);
  if (ctx == NULL)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "nftables: cannot create a context");
  /* Output and errors are captured: library code never prints. */
  nft_ctx_buffer_output (ctx);
  nft_ctx_buffer_error (ctx);
  if (ret_json)
    nft_ctx_output_set_flags (ctx, NFT_CTX_OUTPUT_JSON);
  int r = nft_run_cmd_from_buffer (ctx, cmds);
  if (r == 0 && ret_json)
    {
      const char *out = nft_ctx_get_output_buffer (ctx);
      json_error_t je;
      *ret_json = out && *out ? json_loads (out, 0, &je) : NULL;
      if (out && *out && *ret_json == NULL)
        {
          ohbox_error (err, OHBOX_ERR_GENERIC, 0, "nftables: its JSON output does not parse: %s", je.text);
          r = -1; /* (the message below is not kept: the first error is) */
        }
    }
  if (r != 0 && !quiet)
    {
      const char *msg = nft_ctx_get_error_buffer (ctx);
      cleanup_free char *first = xstrdup (msg && *msg ? msg : "failed");
      /* nft's first line says what went wrong; the rest repeats the input. */
      char *nl = strchr (first, '\n');
      if (nl)
        *nl = '\0';
      ohbox_error (err, OHBOX_ERR_GENERIC, 0, "nftables: %s", first);
    }
  nft_ctx_free (ctx);
  return r != 0 ? -1 : 0;
}

int
ohbox_nft_run (const char *cmds, ohbox_error_t *err)
{
  return nft_exec (cmds, false, NULL, err);
}

/* The chains of each table, the marker last: present with the others, it
 * says the rules are this version's. A table without all of them (an older
 * ohbox's, or one someone changed) is made again. */
static const char *const inet_chains[] = { "published",    "prerouting", "output",         "postrouting",
                                           "guard",        "input",      "sandbox_in",     "forward",
                                           "from_sandbox", "to_sandbox", OHBOX_NFT_MARKER, NULL };
static const char *const bridge_chains[] = { "prerouting", "port_in", "port_ip", "port_arp", OHBOX_NFT_MARKER, NULL };

int
ohbox_nft_complete (bool *ret, ohbox_error_t *err)
{
  bool inet = false, bridge = false;
  if (ohbox_nfnl_chains_present (NFPROTO_INET, OHBOX_NFT_TABLE, inet_chains, &inet, err) < 0
      || (inet && ohbox_nfnl_chains_present (NFPROTO_BRIDGE, OHBOX_NFT_TABLE, bridge_chains, &bridge, err) < 0))
    return -1;
  *ret = inet && bridge;
  return 0;
}

/* Sets and chains, added whether they exist or not ("add" keeps an
 * existing one and its elements: the published ports and the sandboxes'
 * elements survive an upgrade of the rules). */
static void
append_objects (struct ohbox_buf *b)
{
  static const char text[] = "add table inet " OHBOX_NFT_TABLE "\n"
                             "add map inet " OHBOX_NFT_TABLE
                             " pub4 { type ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service; }\n"
                             "add map inet " OHBOX_NFT_TABLE
                             " puball { type inet_proto . inet_service : ipv4_addr . inet_service; }\n"
                             "add set inet " OHBOX_NFT_TABLE " bridges { type ifname; }\n"
                             "add set inet " OHBOX_NFT_TABLE " peers { type ifname . ifname; }\n"
                             "add set inet " OHBOX_NFT_TABLE " subnets { type ipv4_addr . ifname; flags interval; }\n"
                             "add set inet " OHBOX_NFT_TABLE " dns { type ipv4_addr . ipv4_addr; }\n"
                             "add set inet " OHBOX_NFT_TABLE " egress { type ipv4_addr . ipv4_addr; flags interval; }\n"
                             "add set inet " OHBOX_NFT_TABLE " noegress { type ipv4_addr; }\n"
                             "add set inet " OHBOX_NFT_TABLE " blocked4 { type ipv4_addr; flags interval; }\n"
                             "add chain inet " OHBOX_NFT_TABLE " published\n"
                             "add chain inet " OHBOX_NFT_TABLE
                             " prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
                             "add chain inet " OHBOX_NFT_TABLE
                             " output { type nat hook output priority -100; policy accept; }\n"
                             "add chain inet " OHBOX_NFT_TABLE
                             " postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
                             "add chain inet " OHBOX_NFT_TABLE
                             " guard { type filter hook prerouting priority raw; policy accept; }\n"
                             "add chain inet " OHBOX_NFT_TABLE
                             " input { type filter hook input priority filter; policy accept; }\n"
                             "add chain inet " OHBOX_NFT_TABLE " sandbox_in\n"
                             "add chain inet " OHBOX_NFT_TABLE
                             " forward { type filter hook forward priority filter; policy accept; }\n"
                             "add chain inet " OHBOX_NFT_TABLE " from_sandbox\n"
                             "add chain inet " OHBOX_NFT_TABLE " to_sandbox\n"
                             "add table bridge " OHBOX_NFT_TABLE "\n"
                             "add set bridge " OHBOX_NFT_TABLE " ports { type ifname . ether_addr . ipv4_addr; }\n"
                             "add set bridge " OHBOX_NFT_TABLE " uplink { type ifname . ipv4_addr . ether_addr; }\n"
                             "add set bridge " OHBOX_NFT_TABLE " open { type ifname . ipv4_addr; }\n"
                             /* Before br_netfilter's hook (0) and the bridge's learning: a forged
                              * frame neither reaches the IP hooks nor teaches the bridge a MAC. */
                             "add chain bridge " OHBOX_NFT_TABLE
                             " prerouting { type filter hook prerouting priority filter; policy accept; }\n"
                             "add chain bridge " OHBOX_NFT_TABLE " port_in\n"
                             "add chain bridge " OHBOX_NFT_TABLE " port_ip\n"
                             "add chain bridge " OHBOX_NFT_TABLE " port_arp\n";
  ohbox_buf_append (b, text, sizeof text - 1);
  /* (all but the marker, added with the rules) */
  for (size_t i = 0; inet_chains[i + 1]; i++)
    {
      cleanup_free char *l = xasprintf ("flush chain inet " OHBOX_NFT_TABLE " %s\n", inet_chains[i]);
      ohbox_buf_append (b, l, strlen (l));
    }
  for (size_t i = 0; bridge_chains[i + 1]; i++)
    {
      cleanup_free char *l = xasprintf ("flush chain bridge " OHBOX_NFT_TABLE " %s\n", bridge_chains[i]);
      ohbox_buf_append (b, l, strlen (l));
    }
  /* Made from the networks' definitions below. */
  static const char flush[] = "flush set inet " OHBOX_NFT_TABLE " bridges\n"
                              "flush set inet " OHBOX_NFT_TABLE " peers\n"
                              "flush set inet " OHBOX_NFT_TABLE " subnets\n"
                              "flush set inet " OHBOX_NFT_TABLE " blocked4\n";
  ohbox_buf_append (b, flush, sizeof flush - 1);
}

/* The rules. Sets name the bridges (ohbox0 and the named networks'), so
 * neither a sandbox nor a network adds a rule: only elements. */
static void
append_rules (struct ohbox_buf *b)
{
#define R(chain, rule) "add rule inet " OHBOX_NFT_TABLE " " chain " " rule "\n"
#define B(chain, rule) "add rule bridge " OHBOX_NFT_TABLE " " chain " " rule "\n"
  static const char text[] =
    /* Published ports: DNAT of local addresses through the maps, from
     * other hosts and sandboxes (prerouting) and the host's own
     * processes, 127.0.0.1 included (output). */
    R ("published", "dnat ip to ip daddr . meta l4proto . th dport map @pub4")
      R ("published", "dnat ip to meta l4proto . th dport map @puball")
        R ("prerouting", "fib daddr type local jump published") R ("output", "fib daddr type local jump published")
    /* 127.0.0.1 clients (routed to a bridge with route_localnet),
     * hairpins through the host, and egress. */
    R ("postrouting", "oifname @bridges ip saddr 127.0.0.0/8 masquerade")
      R ("postrouting", "iifname @bridges oifname @bridges ct status dnat masquerade")
    /* (the same when br_netfilter bridged it back: no input interface
     * then; the neighbour answers the host, not the sandbox directly) */
    R ("postrouting", "ip saddr . oifname @subnets ct status dnat masquerade")
      R ("postrouting", "iifname @bridges oifname != @bridges masquerade")
    /* route_localnet lets 127.0.0.0/8 be routed on the bridges: never
     * from a sandbox to the host's loopback services (CVE-2020-8558). */
    R ("guard", "iifname @bridges ip daddr 127.0.0.0/8 drop")
    /* What a sandbox may send to the host itself: answers, DNS to the
     * resolvers of its resolv.conf, and what its --egress allows (all:
     * the host too). Not a service listening on 0.0.0.0 or on any host
     * address (issue 14, item 8). */
    R ("input", "iifname @bridges jump sandbox_in") R ("sandbox_in", "ct state established,related accept")
      R ("sandbox_in", "meta l4proto { tcp, udp } th dport 53 ip saddr . ip daddr @dns accept")
        R ("sandbox_in", "ip saddr . ip daddr @egress accept") R ("sandbox_in", "drop")
          R ("forward", "iifname @bridges jump from_sandbox") R ("forward", "oifname @bridges jump to_sandbox")
    /* From a sandbox: published ports (DNAT'ed, also another sandbox's
     * through the host), its own named network's members (seen here
     * when br_netfilter passes bridged frames through these hooks);
     * never another bridge, nor a neighbour through the host; no IPv6;
     * then its --egress (egress.h). */
    R ("from_sandbox", "ct state established,related accept") R ("from_sandbox", "ct status dnat accept")
      R ("from_sandbox", "iifname . oifname @peers accept") R ("from_sandbox", "oifname @bridges drop")
        R ("from_sandbox", "meta nfproto ipv6 drop") R ("from_sandbox", "ip saddr @noegress drop")
          R ("from_sandbox", "meta l4proto { tcp, udp } th dport 53 ip saddr . ip daddr @dns accept")
            R ("from_sandbox", "ip saddr . ip daddr @egress accept") R ("from_sandbox", "ip daddr @blocked4 drop")
    /* To a sandbox from elsewhere: only through a published port (a host
     * routing the subnet to us reaches no executor directly). */
    R ("to_sandbox", "ct state established,related accept") R ("to_sandbox", "ct status dnat accept")
      R ("to_sandbox", "drop")
    /* Every frame a sandbox port sends. Its source: the sandbox's own
     * MAC, and its own address in IPv4 and ARP; nothing else (no IPv6 and
     * so no router advertisement, no VLAN tag, no other protocol). */
    B ("prerouting", "iifname \"" OHBOX_NFT_PORT_PREFIX "*\" jump port_in")
      B ("port_in", "icmpv6 type nd-router-advert drop")
        B ("port_in", "iifname . ether saddr . ip saddr @ports jump port_ip")
          B ("port_in", "arp htype 1 arp ptype ip arp hlen 6 arp plen 4 iifname . ether saddr . arp saddr ip @ports "
                        "iifname . arp saddr ether . arp saddr ip @ports jump port_arp") B ("port_in", "drop")
    /* Its destination: on a named network anyone (open); on ohbox0 the
     * host only (uplink: the bridge's own MAC; the sandbox has a
     * permanent neighbour entry for it and never asks by broadcast): no
     * frame goes from one sandbox to another. The kernel's port
     * isolation is not used for that: with br_netfilter a connection to
     * a neighbour's published port on the host's address is DNAT'ed and
     * then bridged from port to port, which isolated ports refuse
     * (README: Network isolation). */
    B ("port_ip", "iifname . ip saddr @open accept") B ("port_ip", "iifname . ip saddr . ether daddr @uplink accept")
      B ("port_ip", "drop") B ("port_arp", "iifname . arp saddr ip @open accept")
        B ("port_arp", "iifname . arp saddr ip . ether daddr @uplink accept") B ("port_arp", "drop");
#undef R
#undef B
  ohbox_buf_append (b, text, sizeof text - 1);
}

static void
append_network_elements (struct ohbox_buf *b, const struct ohbox_nft_bridge *nets, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      char net[INET_ADDRSTRLEN];
      inet_ntop (AF_INET, &nets[i].subnet, net, sizeof net);
      cleanup_free char *l = xasprintf ("add element inet " OHBOX_NFT_TABLE " bridges { \"%s\" }\n"
                                        "add element inet " OHBOX_NFT_TABLE " subnets { %s/%d . \"%s\" }\n",
                                        nets[i].name, net, nets[i].prefix, nets[i].name);
      ohbox_buf_append (b, l, strlen (l));
      if (!nets[i].peers)
        continue;
      cleanup_free char *p = xasprintf ("add element inet " OHBOX_NFT_TABLE " peers { \"%s\" . \"%s\" }\n",
                                        nets[i].name, nets[i].name);
      ohbox_buf_append (b, p, strlen (p));
    }
  static const char head[] = "add element inet " OHBOX_NFT_TABLE " blocked4 { ";
  ohbox_buf_append (b, head, sizeof head - 1);
  for (size_t i = 0; ohbox_egress_blocked[i]; i++)
    {
      if (i)
        ohbox_buf_append (b, ", ", 2);
      ohbox_buf_append (b, ohbox_egress_blocked[i], strlen (ohbox_egress_blocked[i]));
    }
  ohbox_buf_append (b, " }\n", 3);
}

int
ohbox_nft_ensure (const struct ohbox_nft_bridge *nets, size_t n, ohbox_error_t *err)
{
  /* One transaction: the tables change whole or not at all. Rules are
   * flushed and added again (never duplicated); sets keep their elements. */
  struct ohbox_buf b = { 0 };
  append_objects (&b);
  append_rules (&b);
  append_network_elements (&b, nets, n);
  static const char markers[] = "add chain inet " OHBOX_NFT_TABLE " " OHBOX_NFT_MARKER "\n"
                                "add chain bridge " OHBOX_NFT_TABLE " " OHBOX_NFT_MARKER "\n";
  ohbox_buf_append (&b, markers, sizeof markers - 1);
  int r = nft_exec (b.data, false, NULL, err);
  if (r < 0)
    {
      /* An object of the same name and another type (a table no ohbox
       * version made): both tables are made from nothing. Their elements
       * are lost; sandboxes running now lose their network (restart them). */
      static const char wipe[] = "add table inet " OHBOX_NFT_TABLE "\ndelete table inet " OHBOX_NFT_TABLE "\n"
                                 "add table bridge " OHBOX_NFT_TABLE "\ndelete table bridge " OHBOX_NFT_TABLE "\n";
      struct ohbox_buf again = { 0 };
      ohbox_buf_append (&again, wipe, sizeof wipe - 1);
      ohbox_buf_append (&again, b.data, b.len);
      ohbox_error_release (err);
      r = nft_exec (again.data, false, NULL, err);
      ohbox_buf_free (&again);
    }
  ohbox_buf_free (&b);
  if (r < 0)
    return ohbox_error_prefix (err, "create tables `inet " OHBOX_NFT_TABLE "` and `bridge " OHBOX_NFT_TABLE "`");
  return 0;
}

/* One field of an element as nft's JSON gives it, in nft's syntax: a
 * word (QUOTED: an interface name, which never holds '"'), a number, a
 * prefix or a range. */
static bool
append_field (struct ohbox_buf *b, json_t *part, bool quoted)
{
  char text[96];
  json_t *prefix = json_object_get (part, "prefix"), *range = json_object_get (part, "range");
  const char *s = json_string_value (part);
  if (s)
    snprintf (text, sizeof text, quoted ? "\"%s\"" : "%s", s);
  else if (json_is_integer (part))
    snprintf (text, sizeof text, "%lld", (long long) json_integer_value (part));
  else if (json_string_value (json_object_get (prefix, "addr")))
    snprintf (text, sizeof text, "%s/%lld", json_string_value (json_object_get (prefix, "addr")),
              (long long) json_integer_value (json_object_get (prefix, "len")));
  else if (json_string_value (json_array_get (range, 0)) && json_string_value (json_array_get (range, 1)))
    snprintf (text, sizeof text, "%s-%s", json_string_value (json_array_get (range, 0)),
              json_string_value (json_array_get (range, 1)));
  else
    return false;
  if (b->len > 0)
    ohbox_buf_append (b, " . ", 3);
  ohbox_buf_append (b, text, strlen (text));
  return true;
}

/* KEY (a concatenation, or one field) in nft's syntax, its first field
 * QUOTED; NULL when a field is of a kind ohbox never puts there. */
static char *
key_text (json_t *key, bool quoted)
{
  if (json_object_get (key, "elem")) /* an element with options: its value */
    key = json_object_get (json_object_get (key, "elem"), "val");
  json_t *parts = json_object_get (key, "concat");
  struct ohbox_buf b = { 0 };
  size_t i;
  json_t *part;
  bool ok = true;
  if (parts == NULL)
    ok = append_field (&b, key, quoted);
  json_array_foreach (parts, i, part) { ok = ok && append_field (&b, part, quoted && i == 0); }
  if (!ok || b.data == NULL)
    {
      ohbox_buf_free (&b);
      return NULL;
    }
  return b.data;
}

/* The first field of concatenation PARTS (or single value K) that is an
 * IPv4 address: the sandbox's in every set of ours (nft.h). */
static const char *
first_ipv4 (json_t *k)
{
  json_t *parts = json_object_get (k, "concat");
  size_t n = parts ? json_array_size (parts) : 1;
  for (size_t i = 0; i < n; i++)
    {
      const char *s = json_string_value (parts ? json_array_get (parts, i) : k);
      struct in_addr a;
      if (s && inet_pton (AF_INET, s, &a) == 1)
        return s;
    }
  return NULL;
}

/* An element of map or set NAME of FAMILY as {"family", KIND ("map" or
 * "set"): NAME, "key", "addr": the sandbox address it belongs to}: a map's
 * value's address; a set's first IPv4 field. NULL for anything else. */
static json_t *
element_json (const char *family, const char *kind, const char *name, json_t *elem)
{
  const char *addr = NULL;
  json_t *key = elem;
  if (strcmp (kind, "map") == 0)
    {
      key = json_array_get (elem, 0);
      addr = json_string_value (json_array_get (json_object_get (json_array_get (elem, 1), "concat"), 0));
    }
  else
    addr = first_ipv4 (json_object_get (elem, "elem") ? json_object_get (json_object_get (elem, "elem"), "val") : elem);
  /* (the bridge table's keys start with the port's name) */
  cleanup_free char *text = key_text (key, strcmp (family, "bridge") == 0);
  if (text == NULL || addr == NULL)
    return NULL;
  return json_pack ("{s:s, s:s, s:s, s:s}", "family", family, kind, name, "key", text, "addr", addr);
}

/* Appends to RET the elements of the maps (KIND "map") or of the sets
 * named in SETS of table FAMILY ohbox (none when it does not exist). */
static int
list_elements (const char *family, const char *kind, const char *const *sets, json_t *ret, ohbox_error_t *err)
{
  bool exists = false;
  bool inet = strcmp (family, "inet") == 0;
  if (ohbox_nl_nft_chain_exists (inet ? NFPROTO_INET : NFPROTO_BRIDGE, OHBOX_NFT_TABLE, inet ? "published" : "port_in",
                                 &exists, err)
      < 0)
    return -1;
  if (!exists)
    return 0;
  json_t *out = NULL;
  cleanup_free char *cmd = xasprintf ("list table %s " OHBOX_NFT_TABLE "\n", family);
  if (nft_exec (cmd, false, &out, err) < 0)
    return ohbox_error_prefix (err, "list table `%s " OHBOX_NFT_TABLE "`", family);
  size_t i, k;
  json_t *o, *elem;
  json_array_foreach (json_object_get (out, "nftables"), i, o)
  {
    json_t *obj = json_object_get (o, kind);
    const char *name = json_string_value (json_object_get (obj, "name"));
    bool wanted = name != NULL && sets == NULL;
    for (size_t s = 0; name && sets && sets[s]; s++)
      wanted |= strcmp (sets[s], name) == 0;
    if (!wanted)
      continue;
    json_array_foreach (json_object_get (obj, "elem"), k, elem)
    {
      json_t *e = element_json (family, kind, name, elem);
      if (e)
        json_array_append_new (ret, e);
    }
  }
  json_decref (out);
  return 0;
}

int
ohbox_nft_port_elements (json_t **ret, ohbox_error_t *err)
{
  *ret = json_array ();
  if (list_elements ("inet", "map", NULL, *ret, err) < 0)
    {
      json_decref (*ret);
      *ret = NULL;
      return ohbox_error_prefix (err, "list the published ports");
    }
  return 0;
}

int
ohbox_nft_sandbox_elements (json_t **ret, ohbox_error_t *err)
{
  static const char *const inet_sets[] = { "dns", "egress", "noegress", NULL };
  static const char *const bridge_sets[] = { "ports", "uplink", "open", NULL };
  *ret = json_array ();
  if (list_elements ("bridge", "set", bridge_sets, *ret, err) < 0
      || list_elements ("inet", "set", inet_sets, *ret, err) < 0)
    {
      json_decref (*ret);
      *ret = NULL;
      return ohbox_error_prefix (err, "list the sandboxes' elements");
    }
  return 0;
}

static const char *
element_set (json_t *e)
{
  return json_string_value (json_object_get (e, "map")) ?: json_string_value (json_object_get (e, "set"));
}

/* Whether an element of ELEMS is still there. */
static bool
any_left (json_t *elems)
{
  json_t *ports = NULL, *sets = NULL;
  bool left = true;
  if (ohbox_nft_port_elements (&ports, NULL) == 0 && ohbox_nft_sandbox_elements (&sets, NULL) == 0)
    {
      left = false;
      size_t i, k;
      json_t *e, *n;
      json_array_foreach (elems, i, e)
      {
        json_array_foreach (ports, k, n) left |= json_equal (n, e);
        json_array_foreach (sets, k, n) left |= json_equal (n, e);
      }
    }
  json_decref (ports);
  json_decref (sets);
  return left;
}

int
ohbox_nft_delete_elements (json_t *elems, ohbox_error_t *err)
{
  if (json_array_size (elems) == 0)
    return 0;
  struct ohbox_buf b = { 0 };
  size_t i;
  json_t *e;
  json_array_foreach (elems, i, e)
  {
    const char *family = json_string_value (json_object_get (e, "family")) ?: "inet";
    cleanup_free char *line = xasprintf ("delete element %s " OHBOX_NFT_TABLE " %s { %s }\n", family, element_set (e),
                                         json_string_value (json_object_get (e, "key")));
    ohbox_buf_append (&b, line, strlen (line));
  }
  int r = nft_exec (b.data, false, NULL, err);
  if (r < 0)
    {
      /* One was gone already (a transaction is all or nothing): the others
       * one by one, then an error only for those still there. */
      for (char *line = strtok (b.data, "\n"); line; line = strtok (NULL, "\n"))
        nft_exec (line, true, NULL, NULL);
      if (!any_left (elems))
        {
          r = 0;
          ohbox_error_release (err);
        }
    }
  ohbox_buf_free (&b);
  return r < 0 ? ohbox_error_prefix (err, "delete nftables elements") : 0;
}
