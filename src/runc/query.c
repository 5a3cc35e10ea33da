/* query.c: state, list, ps, spec, features. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"
#include "oci/runtime_spec.h"
#include "security/capabilities.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --format table|json of list and ps: -1 for another value. */
static int
format_is_json (const char *arg, bool *json)
{
  if (strcmp (arg, "json") != 0 && strcmp (arg, "table") != 0)
    return -1;
  *json = strcmp (arg, "json") == 0;
  return 0;
}

/* The state `state` prints, and `list --format json` lists. */
static json_t *
state_json (const struct container *c)
{
  json_t *out = json_deep_copy (c->state);
  json_object_del (out, "starttime");
  json_object_set_new (out, "status", json_string (c->status));
  if (strcmp (c->status, "stopped") == 0)
    json_object_set_new (out, "pid", json_integer (0));
  return out;
}

int
cmd_state (int argc, char **argv)
{
  if (argc != 2)
    return fail_usage ();
  struct container c;
  int rc = container_open (argv[1], &c, 0);
  if (rc == 0)
    {
      json_t *out = state_json (&c);
      char *text = json_dumps (out, JSON_INDENT (2));
      printf ("%s\n", text);
      free (text);
      json_decref (out);
    }
  container_close (&c);
  return rc;
}

int
cmd_list (int argc, char **argv)
{
  bool json = false, quiet = false;
  static const struct option opts[] = { { "format", required_argument, NULL, 'f' },
                                        { "quiet", no_argument, NULL, 'q' },
                                        { NULL, 0, NULL, 0 } };
  int ch;
  while ((ch = runc_next_option (argc, argv, "f:q", opts, 0, 0, NULL)) >= 0)
    if (ch == 'q')
      quiet = true;
    else if (format_is_json (optarg, &json) < 0)
      return fail_usage ();
  if (ch == RUNC_OPT_FAILED)
    return 1;
  json_t *all = json_array ();
  cleanup_dir DIR *d = opendir (root_dir);
  if (d == NULL && errno != ENOENT)
    return fail ("list `%s`: %s", root_dir, strerror (errno));
  struct dirent *e;
  while (d && (e = readdir (d)) != NULL)
    {
      if (!valid_id (e->d_name))
        continue;
      struct container c;
      /* A directory a create killed midway left goes here. */
      if (container_open (e->d_name, &c, OPEN_STALE_OK) == 0 && !c.stale)
        json_array_append_new (all, state_json (&c));
      container_close (&c);
    }
  size_t i;
  json_t *s;
  if (json)
    {
      char *text = json_dumps (all, JSON_COMPACT);
      printf ("%s\n", text);
      free (text);
    }
  else if (!quiet)
    printf ("%-20s %-8s %-10s %-40s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED");
  json_array_foreach (all, i, s)
  {
    const char *id = json_string_value (json_object_get (s, "id"));
    if (quiet && !json)
      printf ("%s\n", id);
    else if (!json)
      printf ("%-20s %-8lld %-10s %-40s %s\n", id, (long long) json_integer_value (json_object_get (s, "pid")),
              json_string_value (json_object_get (s, "status")), json_string_value (json_object_get (s, "bundle")),
              json_string_value (json_object_get (s, "created")));
  }
  json_decref (all);
  return 0;
}

/* The column of PID in ps's HEADER (0-based), -1 when none. */
static int
pid_column (const char *header)
{
  char *copy = xstrdup (header), *save = NULL;
  int col = -1, i = 0;
  for (char *t = strtok_r (copy, " \t\n", &save); t && col < 0; t = strtok_r (NULL, " \t\n", &save), i++)
    if (strcmp (t, "PID") == 0)
      col = i;
  free (copy);
  return col;
}

static bool
line_has_pid (const char *line, int col, const pid_t *pids, size_t n)
{
  char *copy = xstrdup (line), *save = NULL, *t = strtok_r (copy, " \t\n", &save);
  for (int i = 0; t && i < col; i++)
    t = strtok_r (NULL, " \t\n", &save);
  long pid = t ? strtol (t, NULL, 10) : 0;
  free (copy);
  for (size_t i = 0; i < n; i++)
    if (pids[i] == pid)
      return true;
  return false;
}

static int
ps_table (const pid_t *pids, size_t n, char **ps_opts)
{
  int pv[2];
  if (pipe2 (pv, O_CLOEXEC) < 0)
    return fail ("pipe: %s", strerror (errno));
  fflush (NULL);
  pid_t child = fork ();
  if (child < 0)
    return fail ("fork: %s", strerror (errno));
  if (child == 0)
    {
      dup2 (pv[1], 1);
      size_t k = 0;
      while (ps_opts[k])
        k++;
      char **args = xcalloc (k + 3, sizeof *args);
      args[0] = (char *) "ps";
      for (size_t i = 0; i < k; i++)
        args[i + 1] = ps_opts[i];
      if (k == 0)
        args[1] = (char *) "-ef";
      execvp ("ps", args);
      fprintf (stderr, "ohbox-runc: ps: exec ps: %s\n", strerror (errno));
      _exit (127);
    }
  close (pv[1]);
  cleanup_file FILE *f = fdopen (pv[0], "r");
  cleanup_free char *line = NULL;
  size_t cap = 0;
  int col = -1;
  bool first = true;
  while (f && getline (&line, &cap, f) > 0)
    {
      if (first)
        {
          col = pid_column (line);
          fputs (line, stdout);
          first = false;
        }
      else if (col >= 0 && line_has_pid (line, col, pids, n))
        fputs (line, stdout);
    }
  int ws = 0;
  while (waitpid (child, &ws, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED (ws) || WEXITSTATUS (ws) != 0)
    return fail ("ps: ps(1) failed (exit status %d)", WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws));
  if (col < 0)
    return fail ("ps: ps(1)'s output has no PID column");
  return 0;
}

/* ps: the container's processes (those of its pid namespace), as pids
 * (--format json) or as ps(1) shows them (its options after the id;
 * default -ef), the lines of other processes left out. */
int
cmd_ps (int argc, char **argv)
{
  bool json = false;
  static const struct option opts[] = { { "format", required_argument, NULL, 'f' }, { NULL, 0, NULL, 0 } };
  int ch;
  /* (ps(1)'s options after the id only for its table: json is known by
   * the last call) */
  while ((ch = runc_next_option (argc, argv, "+f:", opts, 1, json ? 1 : -1, NULL)) == 'f')
    if (format_is_json (optarg, &json) < 0)
      return fail_usage ();
  if (ch == RUNC_OPT_FAILED)
    return 1;
  struct container c;
  int rc = container_open (argv[optind], &c, 0);
  cleanup_free pid_t *pids = NULL;
  size_t n = 0;
  if (rc == 0 && strcmp (c.status, "stopped") != 0 && container_pids (&c, &pids, &n) < 0)
    rc = fail ("ps `%s`: %s", argv[optind], strerror (errno));
  container_close (&c);
  if (rc != 0)
    return rc;
  if (json)
    {
      printf ("[");
      for (size_t i = 0; i < n; i++)
        printf ("%s%d", i ? "," : "", (int) pids[i]);
      printf ("]\n");
      return 0;
    }
  return ps_table (pids, n, argv + optind + 1);
}

/* spec: a default config.json in the current directory (or --bundle). */
int
cmd_spec (int argc, char **argv)
{
  const char *bundle = ".";
  bool want_rootless = false;
  static const struct option opts[] = { { "bundle", required_argument, NULL, 'b' },
                                        { "rootless", no_argument, NULL, 'r' },
                                        { NULL, 0, NULL, 0 } };
  int ch;
  while ((ch = runc_next_option (argc, argv, "b:", opts, 0, 0, NULL)) >= 0)
    if (ch == 'b')
      bundle = optarg;
    else
      want_rootless = true;
  if (ch == RUNC_OPT_FAILED)
    return 1;
  json_t *j = oci_runtime_spec_default (want_rootless, getuid (), getgid ());
  cleanup_free char *text = j ? json_dumps (j, JSON_INDENT (2)) : NULL;
  json_decref (j);
  cleanup_free char *path = xasprintf ("%s/config.json", bundle);
  cleanup_close int fd = text ? open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
  if (fd < 0)
    return fail ("spec: create `%s`: %s", path, text ? strerror (errno) : "out of memory");
  if (ohbox_write_all (fd, text, strlen (text)) < 0 || ohbox_write_all (fd, "\n", 1) < 0)
    return fail ("spec: write `%s`: %s", path, strerror (errno));
  return 0;
}

/* The capabilities ohbox knows (capability(7)'s, up to the kernel's last). */
static json_t *
capability_names (void)
{
  static const char *const all[] = { "CAP_CHOWN",
                                     "CAP_DAC_OVERRIDE",
                                     "CAP_DAC_READ_SEARCH",
                                     "CAP_FOWNER",
                                     "CAP_FSETID",
                                     "CAP_KILL",
                                     "CAP_SETGID",
                                     "CAP_SETUID",
                                     "CAP_SETPCAP",
                                     "CAP_LINUX_IMMUTABLE",
                                     "CAP_NET_BIND_SERVICE",
                                     "CAP_NET_BROADCAST",
                                     "CAP_NET_ADMIN",
                                     "CAP_NET_RAW",
                                     "CAP_IPC_LOCK",
                                     "CAP_IPC_OWNER",
                                     "CAP_SYS_MODULE",
                                     "CAP_SYS_RAWIO",
                                     "CAP_SYS_CHROOT",
                                     "CAP_SYS_PTRACE",
                                     "CAP_SYS_PACCT",
                                     "CAP_SYS_ADMIN",
                                     "CAP_SYS_BOOT",
                                     "CAP_SYS_NICE",
                                     "CAP_SYS_RESOURCE",
                                     "CAP_SYS_TIME",
                                     "CAP_SYS_TTY_CONFIG",
                                     "CAP_MKNOD",
                                     "CAP_LEASE",
                                     "CAP_AUDIT_WRITE",
                                     "CAP_AUDIT_CONTROL",
                                     "CAP_SETFCAP",
                                     "CAP_MAC_OVERRIDE",
                                     "CAP_MAC_ADMIN",
                                     "CAP_SYSLOG",
                                     "CAP_WAKE_ALARM",
                                     "CAP_BLOCK_SUSPEND",
                                     "CAP_AUDIT_READ",
                                     "CAP_PERFMON",
                                     "CAP_BPF",
                                     "CAP_CHECKPOINT_RESTORE",
                                     NULL };
  json_t *a = json_array ();
  for (size_t i = 0; all[i]; i++)
    if (ohbox_cap_lookup (all[i]) >= 0)
      json_array_append_new (a, json_string (all[i]));
  return a;
}

/* features: the runtime spec's features document, with exactly what
 * ohbox-runc honours (bundle.c): what is refused is not listed. */
/* --systemd-cgroup: where built with sd-bus (systemd.c). */
#ifdef HAVE_SYSTEMD
#define HAVE_SD_BUS 1
#else
#define HAVE_SD_BUS 0
#endif

int
cmd_features (int argc, char **argv)
{
  (void) argv;
  if (argc != 1)
    return fail_usage ();
  static const char *const hooks[] = {
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop", NULL
  };
  static const char *const mount_options[] = { "bind",  "rbind",  "ro",      "rw",       "nosuid",
                                               "nodev", "noexec", "private", "rprivate", NULL };
  static const char *const namespaces[] = { "cgroup", "ipc", "mount", "network", "pid", "user", "uts", NULL };
  json_t *seccomp = json_pack ("{s:b, s:o, s:o, s:o, s:o, s:o}", "enabled", 1, "actions",
                               oci_json_strings (oci_seccomp_action_names), "operators",
                               oci_json_strings (oci_seccomp_operator_names), "archs",
                               oci_json_strings (oci_seccomp_arch_names), "knownFlags",
                               oci_json_strings (oci_seccomp_flag_names), "supportedFlags",
                               oci_json_strings (oci_seccomp_flag_names));
  json_t *linux_features = json_pack (
    "{s:o, s:o, s:{s:b, s:b, s:b, s:b, s:b}, s:o, s:{s:b}, s:{s:b}, s:{s:b}, s:{s:{s:b}}}", "namespaces",
    oci_json_strings (namespaces), "capabilities", capability_names (), "cgroup", "v1", 1, "v2", 1, "systemd",
    HAVE_SD_BUS, "systemdUser", 0, "rdma", 0, "seccomp", seccomp, "apparmor", "enabled", 0, "selinux", "enabled", 0,
    "intelRdt", "enabled", 0, "mountExtensions", "idmap", "enabled", 0);
  json_t *j = json_pack ("{s:s, s:s, s:o, s:o, s:o, s:{}}", "ociVersionMin", OCI_RUNTIME_SPEC_VERSION_MIN,
                         "ociVersionMax", OCI_RUNTIME_SPEC_VERSION, "hooks", oci_json_strings (hooks), "mountOptions",
                         oci_json_strings (mount_options), "linux", linux_features, "annotations");
  char *text = j ? json_dumps (j, JSON_INDENT (2)) : NULL;
  json_decref (j);
  if (text == NULL)
    return fail ("features: out of memory");
  printf ("%s\n", text);
  free (text);
  return 0;
}
