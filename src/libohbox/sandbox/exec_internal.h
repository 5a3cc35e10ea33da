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

#define EXEC_MSG_MAX 1024

static inline size_t
exec_strv_len (char **v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

static inline void
exec_strv_free (char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free (v[i]);
  free (v);
}

static inline void
exec_env_set (char ***v, size_t *n, const char *kv)
{
  const char *eq = strchr (kv, '=');
  size_t klen = eq ? (size_t) (eq - kv) : strlen (kv);
  for (size_t i = 0; i < *n; i++)
    if (strncmp ((*v)[i], kv, klen) == 0 && (*v)[i][klen] == '=')
      {
        free ((*v)[i]);
        (*v)[i] = xstrdup (kv);
        return;
      }
  *v = xrealloc (*v, (*n + 2) * sizeof (char *));
  (*v)[(*n)++] = xstrdup (kv);
  (*v)[*n] = NULL;
}

static inline const char *
exec_env_get (char **env, const char *name)
{
  size_t n = strlen (name);
  for (char **e = env; e && *e; e++)
    if (strncmp (*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  return NULL;
}

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
  /* An OCI process (ohbox_exec_join): its sets and groups, exactly. */
  const struct ohbox_caps_sets *caps_sets;
  const uint32_t *additional_gids;
  size_t n_additional_gids;
};

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
