/* nft.c: ohbox's own nftables table (see nft.h). */
#include "config.h"
#include "network/nft.h"
#include "common/utils.h"

#include "common/dl_nft.h"
#include "network/netlink.h"
#include <linux/netfilter.h>
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
  if (nft_exec (cmds, false, NULL, err) < 0)
    return ohbox_error_prefix (err, "create table `inet " OHBOX_NFT_TABLE "`");
  return 0;
}

/* One element of a map as nft's JSON gives it ("elem": [KEY, VALUE], each
 * {"concat": [...]}): KEY in nft's syntax ("127.0.0.1 . tcp . 8080") and the
 * value's address. */
static json_t *
element_json (const char *map, json_t *elem)
{
  json_t *key = json_object_get (json_array_get (elem, 0), "concat");
  json_t *val = json_object_get (json_array_get (elem, 1), "concat");
  const char *addr = json_string_value (json_array_get (val, 0));
  if (!json_is_array (key) || addr == NULL)
    return NULL;
  struct ohbox_buf b = { 0 };
  size_t i;
  json_t *part;
  json_array_foreach (key, i, part)
  {
    char num[24];
    const char *text = json_string_value (part);
    if (text == NULL && json_is_integer (part))
      {
        snprintf (num, sizeof num, "%lld", (long long) json_integer_value (part));
        text = num;
      }
    if (text == NULL)
      {
        ohbox_buf_free (&b);
        return NULL;
      }
    if (i > 0)
      ohbox_buf_append (&b, " . ", 3);
    ohbox_buf_append (&b, text, strlen (text));
  }
  ohbox_buf_append (&b, "", 1);
  json_t *j = json_pack ("{s:s, s:s, s:s}", "map", map, "key", b.data, "addr", addr);
  ohbox_buf_free (&b);
  return j;
}

int
ohbox_nft_port_elements (json_t **ret, ohbox_error_t *err)
{
  *ret = NULL;
  bool exists = false;
  if (ohbox_nl_nft_chain_exists (NFPROTO_INET, OHBOX_NFT_TABLE, "published", &exists, err) < 0)
    return -1;
  json_t *out = NULL;
  if (exists && nft_exec ("list table inet " OHBOX_NFT_TABLE "\n", false, &out, err) < 0)
    return ohbox_error_prefix (err, "list the published ports");
  *ret = json_array ();
  size_t i, k;
  json_t *o, *elem;
  json_array_foreach (json_object_get (out, "nftables"), i, o)
  {
    json_t *map = json_object_get (o, "map");
    const char *name = json_string_value (json_object_get (map, "name"));
    if (name == NULL)
      continue;
    json_array_foreach (json_object_get (map, "elem"), k, elem)
    {
      json_t *e = element_json (name, elem);
      if (e)
        json_array_append_new (*ret, e);
    }
  }
  json_decref (out);
  return 0;
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
    cleanup_free char *line = xasprintf ("delete element inet " OHBOX_NFT_TABLE " %s { %s }\n",
                                         json_string_value (json_object_get (e, "map")),
                                         json_string_value (json_object_get (e, "key")));
    ohbox_buf_append (&b, line, strlen (line));
  }
  ohbox_buf_append (&b, "", 1);
  int r = nft_exec (b.data, false, NULL, err);
  if (r < 0)
    {
      /* One was gone already (a transaction is all or nothing): the others
       * one by one, then an error only for those still there. */
      for (char *line = strtok (b.data, "\n"); line; line = strtok (NULL, "\n"))
        nft_exec (line, true, NULL, NULL);
      json_t *now = NULL;
      if (ohbox_nft_port_elements (&now, NULL) == 0)
        {
          size_t k;
          json_t *n;
          r = 0;
          json_array_foreach (now, k, n)
          {
            json_array_foreach (elems, i, e)
            {
              if (json_equal (n, e))
                r = -1;
            }
          }
        }
      json_decref (now);
      if (r == 0)
        ohbox_error_release (err);
    }
  ohbox_buf_free (&b);
  return r < 0 ? ohbox_error_prefix (err, "delete published ports") : 0;
}
