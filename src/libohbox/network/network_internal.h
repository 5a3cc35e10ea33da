/* network_internal.h: what network.c and network_etc.c share. */
#ifndef OHBOX_NETWORK_INTERNAL_H
#define OHBOX_NETWORK_INTERNAL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/types.h>

#include "network/network.h"
#include "sandbox/sandbox.h"

#define RESOLV_MAX (64 * 1024)

struct ohbox_network
{
  enum ohbox_network_mode mode;
  char *state_dir;    /* owner of the leases */
  char *etc_dir;      /* where hosts, hostname, resolv.conf are (NULL: none) */
  struct in_addr ip, gw;
  int prefix;
  char veth[16];
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

/* hosts, hostname and resolv.conf for the sandbox, in its state directory DIRFD. */
int ohbox_network_write_etc (struct ohbox_network *n, int dirfd, const struct ohbox_run_options *o,
                             const char *hostname, ohbox_error_t *err);

#endif
