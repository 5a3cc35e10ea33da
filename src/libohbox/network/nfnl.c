/* nfnl.c: nf_tables messages over libmnl for a sandbox's start and release
 * (see nfnl.h). */
#include "config.h"
#include "network/nfnl.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <net/if.h>
#include <string.h>
#include <time.h>

/* Answers to a batch: one acknowledgement per message, small. */
#define NFNL_RECV_SIZE 32768

struct nfnl
{
  struct mnl_socket *sock;
  unsigned int portid;
  unsigned int seq;
};

static int
nfnl_open (struct nfnl *nl, ohbox_error_t *err)
{
  nl->sock = mnl_socket_open2 (NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (nl->sock == NULL)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "open a netfilter netlink socket");
  if (mnl_socket_bind (nl->sock, 0, MNL_SOCKET_AUTOPID) < 0)
    {
      int e = errno;
      mnl_socket_close (nl->sock);
      nl->sock = NULL;
      errno = e;
      return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "bind a netfilter netlink socket");
    }
  nl->portid = mnl_socket_get_portid (nl->sock);
  nl->seq = (unsigned int) time (NULL);
  return 0;
}

static void
nfnl_close (struct nfnl *nl)
{
  if (nl->sock)
    mnl_socket_close (nl->sock);
  nl->sock = NULL;
}

static struct nlmsghdr *
put_msg (void *buf, uint16_t type, uint16_t flags, uint8_t family, uint16_t res_id, unsigned int seq)
{
  struct nlmsghdr *nlh = mnl_nlmsg_put_header (buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = (uint16_t) (NLM_F_REQUEST | flags);
  nlh->nlmsg_seq = seq;
  struct nfgenmsg *g = mnl_nlmsg_put_extra_header (nlh, sizeof *g);
  g->nfgen_family = family;
  g->version = NFNETLINK_V0;
  g->res_id = htons (res_id);
  return nlh;
}

/* Appends field DATA (LEN bytes) to K, padded to the 4-byte registers a
 * concatenation's fields occupy. */
static void
key_put (struct ohbox_nfnl_key *k, const void *data, uint32_t len)
{
  uint32_t padded = (len + 3) & ~3u;
  if (k->len + padded > sizeof k->data)
    abort (); /* our own keys, a few fields: never */
  memcpy (k->data + k->len, data, len);
  memset (k->data + k->len + len, 0, padded - len);
  k->len += padded;
}

void
ohbox_nfnl_key_ifname (struct ohbox_nfnl_key *k, const char *name)
{
  char buf[IFNAMSIZ] = { 0 };
  strncpy (buf, name, IFNAMSIZ - 1);
  key_put (k, buf, IFNAMSIZ);
}

void
ohbox_nfnl_key_mac (struct ohbox_nfnl_key *k, const uint8_t mac[6])
{
  key_put (k, mac, 6);
}

void
ohbox_nfnl_key_ipv4 (struct ohbox_nfnl_key *k, struct in_addr a)
{
  key_put (k, &a.s_addr, 4);
}

void
ohbox_nfnl_key_proto (struct ohbox_nfnl_key *k, uint8_t proto)
{
  key_put (k, &proto, 1);
}

void
ohbox_nfnl_key_port (struct ohbox_nfnl_key *k, uint16_t port)
{
  uint16_t be = htons (port);
  key_put (k, &be, 2);
}

static void
put_key (struct nlmsghdr *nlh, uint16_t type, const struct ohbox_nfnl_key *k)
{
  struct nlattr *nest = mnl_attr_nest_start (nlh, type);
  mnl_attr_put (nlh, NFTA_DATA_VALUE, k->len, k->data);
  mnl_attr_nest_end (nlh, nest);
}

/* Sends the batch in BUF (LEN bytes) and reads the answers: the kernel
 * runs a batch within sendmsg(2), so every acknowledgement is queued when
 * it returns. 0, or -errno of the first message refused (the transaction
 * then changed nothing). */
static int
batch_talk (struct nfnl *nl, const void *buf, size_t len)
{
  if (mnl_socket_sendto (nl->sock, buf, len) < 0)
    return -errno;
  cleanup_free char *rbuf = xmalloc (NFNL_RECV_SIZE);
  int first = 0;
  for (;;)
    {
      ssize_t n = recv (mnl_socket_get_fd (nl->sock), rbuf, NFNL_RECV_SIZE, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return first;
      if (n < 0)
        return -errno;
      int left = (int) n;
      for (const struct nlmsghdr *h = (const struct nlmsghdr *) rbuf; mnl_nlmsg_ok (h, left);
           h = mnl_nlmsg_next (h, &left))
        if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_len >= NLMSG_LENGTH (sizeof (struct nlmsgerr)))
          {
            const struct nlmsgerr *e = mnl_nlmsg_get_payload (h);
            if (e->error < 0 && first == 0)
              first = e->error;
          }
    }
}

/* One transaction: N elements of TABLE added or deleted. */
static int
elements_batch (struct nfnl *nl, const char *table, bool add, const struct ohbox_nfnl_elem *e, size_t n)
{
  /* ~150 bytes an element; the batch's own two headers. */
  size_t size = 256 + n * (256 + 3 * OHBOX_NFNL_KEY_MAX);
  cleanup_free char *buf = xmalloc (size);
  struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start (buf, size);
  put_msg (mnl_nlmsg_batch_current (b), NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, ++nl->seq);
  mnl_nlmsg_batch_next (b);
  uint16_t type = (NFNL_SUBSYS_NFTABLES << 8) | (add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM);
  for (size_t i = 0; i < n; i++)
    {
      struct nlmsghdr *nlh = put_msg (mnl_nlmsg_batch_current (b), type,
                                      (uint16_t) (NLM_F_ACK | (add ? NLM_F_CREATE : 0)), e[i].family, 0, ++nl->seq);
      mnl_attr_put_strz (nlh, NFTA_SET_ELEM_LIST_TABLE, table);
      mnl_attr_put_strz (nlh, NFTA_SET_ELEM_LIST_SET, e[i].set);
      struct nlattr *list = mnl_attr_nest_start (nlh, NFTA_SET_ELEM_LIST_ELEMENTS);
      struct nlattr *one = mnl_attr_nest_start (nlh, 1 /* NFTA_LIST_ELEM */);
      put_key (nlh, NFTA_SET_ELEM_KEY, &e[i].key);
      if (e[i].end.len > 0)
        put_key (nlh, NFTA_SET_ELEM_KEY_END, &e[i].end);
      if (e[i].data.len > 0 && add)
        put_key (nlh, NFTA_SET_ELEM_DATA, &e[i].data);
      mnl_attr_nest_end (nlh, one);
      mnl_attr_nest_end (nlh, list);
      mnl_nlmsg_batch_next (b);
    }
  put_msg (mnl_nlmsg_batch_current (b), NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, ++nl->seq);
  mnl_nlmsg_batch_next (b);
  int r = batch_talk (nl, mnl_nlmsg_batch_head (b), mnl_nlmsg_batch_size (b));
  mnl_nlmsg_batch_stop (b);
  return r;
}

int
ohbox_nfnl_elements (const char *table, bool add, const struct ohbox_nfnl_elem *e, size_t n, ohbox_error_t *err)
{
  if (n == 0)
    return 0;
  struct nfnl nl = { 0 };
  if (nfnl_open (&nl, err) < 0)
    return -1;
  int r = elements_batch (&nl, table, add, e, n);
  /* Some were gone (a release repeated after it was killed, or a GC got
   * there first): the transaction changed nothing, so each one alone. */
  if (r == -ENOENT && !add)
    {
      r = 0;
      for (size_t i = 0; i < n && r == 0; i++)
        {
          int one = elements_batch (&nl, table, false, &e[i], 1);
          if (one < 0 && one != -ENOENT)
            r = one;
        }
    }
  nfnl_close (&nl);
  if (r < 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, -r, "netlink: %s elements of nftables table `%s`",
                        add ? "add" : "delete", table);
  return 0;
}

struct chains_seen
{
  const char *table;
  const char *const *chains;
  uint64_t seen; /* bit I: CHAINS[I] */
};

static int
chain_cb (const struct nlmsghdr *nlh, void *data)
{
  struct chains_seen *c = data;
  const char *table = NULL, *name = NULL;
  const struct nlattr *a;
  mnl_attr_for_each (a, nlh, sizeof (struct nfgenmsg))
  {
    uint16_t t = mnl_attr_get_type (a);
    if (t == NFTA_CHAIN_TABLE && mnl_attr_validate (a, MNL_TYPE_NUL_STRING) == 0)
      table = mnl_attr_get_str (a);
    else if (t == NFTA_CHAIN_NAME && mnl_attr_validate (a, MNL_TYPE_NUL_STRING) == 0)
      name = mnl_attr_get_str (a);
  }
  if (table && name && strcmp (table, c->table) == 0)
    for (size_t i = 0; c->chains[i] && i < 64; i++)
      if (strcmp (c->chains[i], name) == 0)
        c->seen |= UINT64_C (1) << i;
  return MNL_CB_OK;
}

int
ohbox_nfnl_chains_present (uint8_t family, const char *table, const char *const *chains, bool *ret, ohbox_error_t *err)
{
  /* One dump of the table's chains: what `nft list table` would tell about
   * them, without libnftables and its ruleset cache (nfnl.h). */
  struct nfnl nl = { 0 };
  if (nfnl_open (&nl, err) < 0)
    return -1;
  char buf[512];
  struct nlmsghdr *nlh = put_msg (buf, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETCHAIN, NLM_F_DUMP | NLM_F_ACK, family,
                                  0, ++nl.seq);
  /* (kernels filter the dump by table; the callback checks it anyway) */
  mnl_attr_put_strz (nlh, NFTA_CHAIN_TABLE, table);
  struct chains_seen c = { .table = table, .chains = chains };
  int r = 0;
  if (mnl_socket_sendto (nl.sock, nlh, nlh->nlmsg_len) < 0)
    r = -errno;
  cleanup_free char *rbuf = xmalloc (NFNL_RECV_SIZE);
  while (r == 0)
    {
      ssize_t n = mnl_socket_recvfrom (nl.sock, rbuf, NFNL_RECV_SIZE);
      if (n < 0)
        {
          r = -errno;
          break;
        }
      int cb = mnl_cb_run (rbuf, (size_t) n, nl.seq, nl.portid, chain_cb, &c);
      if (cb < 0)
        r = -errno;
      else if (cb == MNL_CB_STOP)
        break;
    }
  nfnl_close (&nl);
  if (r < 0 && r != -ENOENT)
    return ohbox_error (err, OHBOX_ERR_GENERIC, -r, "netlink: list the chains of nftables table `%s`", table);
  size_t n_chains = 0;
  while (chains[n_chains])
    n_chains++;
  *ret = r == 0 && n_chains <= 64 && c.seen == (n_chains == 64 ? UINT64_MAX : (UINT64_C (1) << n_chains) - 1);
  return 0;
}
