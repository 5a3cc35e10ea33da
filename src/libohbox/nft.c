/* nft.c: ohbox's own nftables table (see nft.h). */
#include "config.h"
#include "nft.h"
#include "utils.h"

#include "dl_nft.h"
#include "netlink.h"
#include <linux/netfilter.h>
#include <string.h>

static int
nft_exec (const char *cmds, bool quiet, ohbox_error_t *err)
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
  int r = nft_run_cmd_from_buffer (ctx, cmds);
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
  return nft_exec (cmds, false, err);
}

int
ohbox_nft_ensure (const char *bridge, const char *subnet, ohbox_error_t *err)
{
  /* The chain created last: present means the whole table is. Asked over
   * netlink: libnftables is then only loaded when the table is made (and
   * for published ports). A failed lookup is answered by the creation's
   * own error, if any. */
  bool exists = false;
  cleanup_error ohbox_error_t ignored = NULL;
  if (ohbox_nl_nft_chain_exists (NFPROTO_INET, OHBOX_NFT_TABLE, "guard", &exists, &ignored) == 0 && exists)
    return 0;
  /* One transaction: the table appears whole or not at all. A partial
   * table (someone deleted a chain) is replaced, not patched: adding rules
   * again would duplicate the remaining ones. */
  cleanup_free char *cmds = xasprintf (
      "add table inet " OHBOX_NFT_TABLE "\n"
      "delete table inet " OHBOX_NFT_TABLE "\n"
      "add table inet " OHBOX_NFT_TABLE "\n"
      "add map inet " OHBOX_NFT_TABLE " pub4 { type ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service; }\n"
      "add map inet " OHBOX_NFT_TABLE " puball { type inet_proto . inet_service : ipv4_addr . inet_service; }\n"
      "add chain inet " OHBOX_NFT_TABLE " published\n"
      "add rule inet " OHBOX_NFT_TABLE " published dnat ip to ip daddr . meta l4proto . th dport map @pub4\n"
      "add rule inet " OHBOX_NFT_TABLE " published dnat ip to meta l4proto . th dport map @puball\n"
      "add chain inet " OHBOX_NFT_TABLE " prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
      "add rule inet " OHBOX_NFT_TABLE " prerouting fib daddr type local jump published\n"
      "add chain inet " OHBOX_NFT_TABLE " output { type nat hook output priority -100; policy accept; }\n"
      "add rule inet " OHBOX_NFT_TABLE " output fib daddr type local jump published\n"
      "add chain inet " OHBOX_NFT_TABLE " postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
      "add rule inet " OHBOX_NFT_TABLE " postrouting oifname \"%s\" ip saddr 127.0.0.0/8 masquerade\n"
      "add rule inet " OHBOX_NFT_TABLE " postrouting iifname \"%s\" oifname \"%s\" ct status dnat masquerade\n"
      "add rule inet " OHBOX_NFT_TABLE " postrouting ip saddr %s oifname != \"%s\" masquerade\n"
      /* route_localnet lets 127.0.0.0/8 be routed on the bridge: never
       * from a sandbox to the host's loopback services (CVE-2020-8558). */
      "add chain inet " OHBOX_NFT_TABLE " guard { type filter hook prerouting priority raw; policy accept; }\n"
      "add rule inet " OHBOX_NFT_TABLE " guard iifname \"%s\" ip daddr 127.0.0.0/8 drop\n",
      bridge, bridge, bridge, subnet, bridge, bridge);
  if (nft_exec (cmds, false, err) < 0)
    return ohbox_error_prefix (err, "create table `inet " OHBOX_NFT_TABLE "`");
  return 0;
}
