/* exec_internal.h: what exec.c (the caller's side) and exec_child.c (the
 * helper and the command's process) share; see exec.h. */
#ifndef OHBOX_EXEC_INTERNAL_H
#define OHBOX_EXEC_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "cgroup/cgroup.h"
#include "sandbox/exec.h"
#include "security/seccomp.h"
#include "common/utils.h"
#include "common/strv.h"

#define EXEC_MSG_MAX 1024

/* What the sandbox's command got (exec.json), with the caller's options over it. */
struct exec_plan
{
  char **env;
  char *cwd;
  char *user;
  uint64_t caps;
  uint64_t caps_added;
  bool no_new_privs;
  char *seccomp_profile; /* NULL: the default */
  bool unconfined;
  /* An OCI process (ohbox_exec_join): its capability sets, exactly. */
  const struct ohbox_caps_sets *caps_sets;
  /* An OCI process: its additionalGids, exactly; else the devices' groups,
   * as the init gave them (added to the user's). Owned. */
  uint32_t *additional_gids;
  size_t n_additional_gids;
};
/* At most as many groups as the kernel takes (NGROUPS_MAX). */
#define OHBOX_EXEC_MAX_GROUPS 65536

struct exec_ns
{
  const char *name;
  int flag;
};
#define N_NS 7
extern const struct exec_ns exec_namespaces[N_NS];

struct child_ctx
{
  const struct ohbox_exec_options *o;
  struct exec_plan *plan;
  const struct ohbox_seccomp_filter *seccomp;
  const struct ohbox_cgroup *cgroup;
  bool in_v2_cgroup; /* the helper was cloned into the v2 cgroup (CLONE_INTO_CGROUP) */
  int pidfd;         /* the init's */
  int ns_flags;
  int *ns_fds; /* fallback when setns(pidfd) is not supported */
  int stdio[3];
  bool tty; /* the helper makes the terminal, in the sandbox's devpts */
  bool has_ws;
  struct winsize ws; /* the caller's window size */
  sigset_t sigmask;  /* the caller's, for the command */
  int helper_fd;     /* helper -> caller */
  int cmd_fd;        /* command -> caller, CLOEXEC: EOF once execve succeeded */
};

/* In the forked helper: cgroup, namespaces, the command's process; never returns. */
__attribute__ ((noreturn)) void ohbox_exec_helper_main (struct child_ctx *c);

#endif
