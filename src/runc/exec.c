/* exec.c: `exec`: another process in a running container, through the
 * library's joiner (sandbox/exec.c: cgroup, namespaces, capabilities,
 * seccomp), as `ohbox exec` does. The process is the one --process FILE
 * describes, or the container's own (the copy of config.json its state
 * keeps) with the command line's arguments; the flags go over either. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"
#include "sandbox/bundle.h"
#include "sandbox/exec.h"
#include "security/capabilities.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct exec_args
{
  const char *process_file, *console_socket, *pid_file, *cwd, *user;
  char **env; /* NULL-terminated */
  size_t n_env;
  char **caps;
  size_t n_caps;
  int preserve_fds;
  bool detach, tty, no_new_privs;
  char **argv; /* after the id */
};

static void
strv_push (char ***v, size_t *n, const char *s)
{
  *v = xrealloc (*v, (*n + 2) * sizeof **v);
  (*v)[(*n)++] = (char *) s;
  (*v)[*n] = NULL;
}

/* Parses ARGV into A; returns the container's id or NULL (reported). */
static const char *
parse_args (int argc, char **argv, struct exec_args *a)
{
  static const struct option opts[] = {
    { "process", required_argument, NULL, 'p' },
    { "detach", no_argument, NULL, 'd' },
    { "tty", no_argument, NULL, 't' },
    { "console-socket", required_argument, NULL, 'c' },
    { "pid-file", required_argument, NULL, 'P' },
    { "cwd", required_argument, NULL, 'w' },
    { "env", required_argument, NULL, 'e' },
    { "user", required_argument, NULL, 'u' },
    { "cap", required_argument, NULL, 'C' },
    { "preserve-fds", required_argument, NULL, 'f' },
    { "no-new-privs", no_argument, NULL, 'n' },
    { "process-label", required_argument, NULL, 'L' },
    { "apparmor", required_argument, NULL, 'A' },
    { "additional-gids", required_argument, NULL, 'g' },
    { "ignore-paused", no_argument, NULL, 'i' },
    { "cgroup", required_argument, NULL, 'G' },
    { NULL, 0, NULL, 0 },
  };
  int ch;
  /* "+": the command's own options follow the id. */
  while ((ch = runc_next_option (argc, argv, "+p:dtu:e:", opts, 1, -1, NULL)) >= 0)
    switch (ch)
      {
      case 'p':
        a->process_file = optarg;
        break;
      case 'd':
        a->detach = true;
        break;
      case 't':
        a->tty = true;
        break;
      case 'c':
        a->console_socket = optarg;
        break;
      case 'P':
        a->pid_file = optarg;
        break;
      case 'w':
        a->cwd = optarg;
        break;
      case 'e':
        strv_push (&a->env, &a->n_env, optarg);
        break;
      case 'u':
        a->user = optarg;
        break;
      case 'C':
        strv_push (&a->caps, &a->n_caps, optarg);
        break;
      case 'f':
        if (preserve_fds_parse ("exec", optarg, &a->preserve_fds) != 0)
          return NULL;
        break;
      case 'n':
        a->no_new_privs = true;
        break;
      case 'L':
      case 'A':
        return fail ("exec --%s: LSM labels are not supported by ohbox-runc", ch == 'L' ? "process-label" : "apparmor"),
               NULL;
      case 'g':
        return fail ("exec --additional-gids: not supported by ohbox-runc (use --process with user.additionalGids)"),
               NULL;
      case 'i':
        return fail ("exec --ignore-paused: not supported (a paused container's process could not run)"), NULL;
      case 'G':
        return fail ("exec --cgroup: not supported (the process joins the container's cgroup)"), NULL;
      }
  if (ch == RUNC_OPT_FAILED)
    return NULL;
  a->argv = argv + optind + 1;
  if (a->process_file == NULL && a->argv[0] == NULL)
    return fail ("exec: no command: give one after the container's id, or --process FILE"), NULL;
  if (a->process_file && a->argv[0])
    return fail ("exec: a command after the id and --process both given: the process file has its args"), NULL;
  return argv[optind];
}

/* The process of --process FILE, or of the container's config (its state's
 * copy) with the command line's args. */
static int
load_process (const struct exec_args *a, int dirfd, struct oci_process **ret, struct oci_runtime_spec **ret_config,
              ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (dirfd, RUNC_CONFIG_COPY, OCI_RUNTIME_MAX_CONFIG, &text, &len, err) < 0
      || oci_runtime_spec_parse (text, len, ret_config, err) < 0)
    return -1;
  if (a->process_file)
    {
      cleanup_free char *ptext = NULL;
      size_t plen = 0;
      if (ohbox_read_file_at (AT_FDCWD, a->process_file, OCI_RUNTIME_MAX_CONFIG, &ptext, &plen, err) < 0)
        return -1;
      return oci_runtime_process_parse (ptext, plen, a->process_file, ret, err);
    }
  json_t *all = json_loadb (text, len, 0, NULL);
  json_t *p = json_deep_copy (json_object_get (all, "process"));
  json_decref (all);
  if (p == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "the container's config.json has no process");
  json_t *args = json_array ();
  for (char **s = a->argv; *s; s++)
    json_array_append_new (args, json_string (*s));
  json_object_set_new (p, "args", args);
  /* The container's terminal is its own: exec's is -t. */
  json_object_set_new (p, "terminal", json_boolean (a->tty));
  int r = oci_runtime_process_from_json (p, "the container's process", ret, err);
  json_decref (p);
  return r;
}

/* --cap: added to the bounding, effective and permitted sets, and to the
 * ambient one where the process has inheritable capabilities (as runc). */
static int
add_caps (const struct exec_args *a, struct ohbox_caps_sets *caps)
{
  for (size_t i = 0; i < a->n_caps; i++)
    {
      int cap = ohbox_cap_lookup (a->caps[i]);
      if (cap < 0)
        return fail ("exec --cap: unknown capability `%s`", a->caps[i]);
      uint64_t bit = (uint64_t) 1 << cap;
      caps->bounding |= bit;
      caps->effective |= bit;
      caps->permitted |= bit;
      if (caps->inheritable)
        caps->inheritable |= bit, caps->ambient |= bit;
    }
  return 0;
}

/* Once the process runs: its terminal to the engine, its pid to the file. */
static int
started (pid_t pid, int master, void *data, ohbox_error_t *err)
{
  const struct exec_args *a = data;
  if (master >= 0 && send_console (a->console_socket, master, err) < 0)
    return -1;
  char buf[32];
  int n = snprintf (buf, sizeof buf, "%d", (int) pid);
  return a->pid_file ? ohbox_write_file_atomic (AT_FDCWD, a->pid_file, buf, (size_t) n, 0644, err) : 0;
}

int
preserve_fds_parse (const char *cmd, const char *arg, int *ret)
{
  char *end;
  errno = 0;
  long n = strtol (arg, &end, 10);
  if (*arg == '\0' || *end || errno || n < 0 || n > 1024)
    return fail ("%s --preserve-fds: `%s` is not a number from 0 to 1024", cmd, arg);
  *ret = (int) n;
  return 0;
}

int
preserve_fds_check (const char *cmd, int n)
{
  for (int fd = 3; fd < 3 + n; fd++)
    {
      int flags = fcntl (fd, F_GETFD);
      if (flags < 0)
        return fail ("%s --preserve-fds %d: fd %d is not open", cmd, n, fd);
      if ((flags & FD_CLOEXEC) && fcntl (fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
        return fail ("%s --preserve-fds: fd %d: %s", cmd, fd, strerror (errno));
    }
  return 0;
}

/* Runs the process; returns ohbox-runc's exit status. */
static int
run_exec (const struct exec_args *a, pid_t init, struct oci_process *p, const struct ohbox_seccomp_filter *seccomp,
          const struct ohbox_cgroup *cgroup)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_caps_sets caps = { 0 };
  if (ohbox_bundle_process_check (p, &caps, &err) < 0)
    return fail_err (&err);
  if (add_caps (a, &caps) != 0 || preserve_fds_check ("exec", a->preserve_fds) != 0)
    return 1;
  if (a->tty)
    p->terminal = true;
  if (p->terminal && a->detach && a->console_socket == NULL)
    return fail ("exec -d with a terminal: --console-socket is needed (the terminal must go to someone)");
  if (a->console_socket && !p->terminal)
    return fail ("exec --console-socket: given without a terminal (-t, or process.terminal)");
  cleanup_close int pidfd = (int) syscall (SYS_pidfd_open, init, 0);
  if (pidfd < 0)
    return fail ("exec: the container's init (pid %d) is gone: %s", (int) init, strerror (errno));
  cleanup_free char *user = xasprintf ("%u:%u", p->user.uid, p->user.gid);
  struct ohbox_exec_target t = { .init = init,
                                 .init_pidfd = pidfd,
                                 .env = p->env,
                                 .cwd = p->cwd,
                                 .user = user,
                                 .caps_sets = &caps,
                                 .additional_gids = p->user.additional_gids,
                                 .n_additional_gids = p->user.n_additional_gids,
                                 .no_new_privs = p->no_new_privileges || a->no_new_privs,
                                 .seccomp = seccomp,
                                 .cgroup = cgroup };
  static const int stdio[3] = { 0, 1, 2 };
  struct ohbox_exec_options o = { .argv = p->args,
                                  .env = a->env,
                                  .workdir = a->cwd,
                                  .user = a->user,
                                  .interactive = true,
                                  .tty = p->terminal,
                                  .stdio = p->terminal ? NULL : stdio,
                                  .detach = a->detach,
                                  .hand_master = a->console_socket != NULL,
                                  .preserve_fds = a->preserve_fds,
                                  .has_console_size = p->has_console_size,
                                  .console_rows = (unsigned short) p->console_height,
                                  .console_cols = (unsigned short) p->console_width,
                                  .started = started,
                                  .started_data = (void *) a };
  int code = 0;
  if (ohbox_bundle_apply_inherited (p, &err) < 0 || ohbox_exec_join (&t, &o, &code, &err) < 0)
    {
      fail_err (&err);
      return code > 0 ? code : 1;
    }
  return code < 0 ? 0 : code;
}

int
cmd_exec (int argc, char **argv)
{
  struct exec_args a = { 0 };
  const char *id = parse_args (argc, argv, &a);
  cleanup_free char **env = a.env;
  cleanup_free char **caps = a.caps;
  if (id == NULL)
    return 1;
  struct container c;
  int rc = container_open (id, &c, 0);
  if (rc == 0 && strcmp (c.status, "running") != 0)
    rc = fail ("exec: container `%s` is %s: exec needs a running container", id, c.status);
  cleanup_error ohbox_error_t err = NULL;
  struct oci_process *p = NULL;
  struct oci_runtime_spec *config = NULL;
  struct ohbox_seccomp_filter *seccomp = NULL;
  if (rc == 0 && load_process (&a, c.dirfd, &p, &config, &err) < 0)
    rc = fail_err (&err);
  /* The filter the container got: never run without it. */
  if (rc == 0 && config->linux_config && config->linux_config->seccomp
      && ohbox_seccomp_filter_load (c.dirfd, RUNC_SECCOMP_FILE, &seccomp) < 0)
    rc = fail ("exec: container `%s`: its seccomp filter is missing from its state", id);
  struct runc_cgroup cgroup = { 0 };
  if (rc == 0 && runc_cgroup_open (c.dirfd, &cgroup, &err) < 0)
    rc = fail ("exec: container `%s`: its cgroup: %s", id, err->msg);
  pid_t init = c.pid;
  /* Not locked while the process runs: other commands go on meanwhile. */
  container_close (&c);
  if (rc == 0)
    rc = run_exec (&a, init, p, seccomp, cgroup.cg);
  runc_cgroup_release (&cgroup);
  ohbox_seccomp_filter_free (seccomp);
  oci_process_free (p);
  oci_runtime_spec_free (config);
  return rc;
}
