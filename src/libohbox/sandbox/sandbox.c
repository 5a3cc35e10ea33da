/* sandbox.c: `ohbox run`: from an image and options to a running sandbox
 * (spec for linux.c, state, monitor); see sandbox.h. The lifecycle
 * commands are in sandbox_ops.c. */
#include "config.h"
#include "sandbox/sandbox_internal.h"
#include "api/action.h"
#include "security/capabilities.h"
#include "sandbox/exec.h"
#include "image/image.h"
#include "sandbox/linux.h"
#include "network/network.h"
#include "security/seccomp.h"
#include "sandbox/snapshot.h"
#include "common/utils.h"
#include "common/strv.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <termios.h>

#define DEFAULT_PATH "PATH=" OHBOX_DEFAULT_PATH

static void
warn (const struct ohbox_run_options *o, const char *fmt, ...)
{
  if (o->warn == NULL)
    return;
  va_list ap;
  va_start (ap, fmt);
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) >= 0)
    {
      o->warn (s, o->warn_data);
      free (s);
    }
  va_end (ap);
}

/* A JSON array of strings (or NULL) appended to a vector. */
static int
append_json_strings (char ***v, size_t *n, json_t *arr, size_t max, const char *what, ohbox_error_t *err)
{
  size_t i;
  json_t *x;
  if (arr == NULL || json_is_null (arr))
    return 0;
  if (!json_is_array (arr))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "image config: `%s` is not an array", what);
  json_array_foreach (arr, i, x)
  {
    if (!json_is_string (x))
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "image config: `%s` holds a non-string", what);
    if (*n >= max)
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many entries in `%s` (at most %zu)", what, max);
    ohbox_strv_push (v, n, xstrdup (json_string_value (x)));
  }
  return 0;
}

/* Entrypoint + command, as Docker combines them. */
static int
build_argv (const struct ohbox_run_options *o, json_t *rc, char ***ret, ohbox_error_t *err)
{
  char **v = NULL;
  size_t n = 0;
  int r = 0;
  if (o->entrypoint)
    for (size_t i = 0; o->entrypoint[i] && r == 0; i++)
      ohbox_strv_push (&v, &n, xstrdup (o->entrypoint[i]));
  else
    r = append_json_strings (&v, &n, json_object_get (rc, "Entrypoint"), OHBOX_SANDBOX_MAX_ARGS, "Entrypoint", err);
  if (r == 0 && ohbox_strv_len (o->command) > 0)
    {
      if (ohbox_strv_len (o->command) > OHBOX_SANDBOX_MAX_ARGS)
        r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many arguments (at most %d)", OHBOX_SANDBOX_MAX_ARGS);
      for (size_t i = 0; r == 0 && o->command[i]; i++)
        ohbox_strv_push (&v, &n, xstrdup (o->command[i]));
    }
  else if (r == 0 && o->entrypoint == NULL)
    r = append_json_strings (&v, &n, json_object_get (rc, "Cmd"), OHBOX_SANDBOX_MAX_ARGS, "Cmd", err);
  if (r == 0 && n == 0)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "no command: the image `%s` has none; give one after the image name",
                     o->image);
  if (r < 0)
    {
      ohbox_strv_free (v);
      return -1;
    }
  *ret = v;
  return 0;
}

static int
build_env (const struct ohbox_run_options *o, json_t *rc, const char *hostname, char ***ret, ohbox_error_t *err)
{
  char **img = NULL, **v = NULL;
  size_t ni = 0, n = 0;
  if (append_json_strings (&img, &ni, json_object_get (rc, "Env"), OHBOX_SANDBOX_MAX_ENV, "Env", err) < 0)
    return -1;
  ohbox_strv_env_set (&v, &n, DEFAULT_PATH);
  cleanup_free char *h = xasprintf ("HOSTNAME=%s", hostname);
  ohbox_strv_env_set (&v, &n, h);
  if (o->tty)
    ohbox_strv_env_set (&v, &n, "TERM=xterm");
  for (size_t i = 0; i < ni; i++)
    ohbox_strv_env_set (&v, &n, img[i]);
  ohbox_strv_free (img);
  /* Over the image's (a CUDA image's NVIDIA_VISIBLE_DEVICES=all), under the
   * caller's own -e. */
  for (size_t i = 0; o->devices && i < o->devices->n_env; i++)
    ohbox_strv_env_set (&v, &n, o->devices->env[i]);
  for (size_t i = 0; o->env && o->env[i]; i++)
    {
      if (n >= OHBOX_SANDBOX_MAX_ENV)
        {
          ohbox_strv_free (v);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many environment variables (at most %d)",
                              OHBOX_SANDBOX_MAX_ENV);
        }
      if (strchr (o->env[i], '=') == NULL || o->env[i][0] == '=')
        {
          ohbox_strv_free (v);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid environment variable `%s`: use KEY=VALUE", o->env[i]);
        }
      ohbox_strv_env_set (&v, &n, o->env[i]);
    }
  *ret = v;
  return 0;
}

/* The devices' nodes (binds that may be opened, idmapped where root's
 * sandbox has a user namespace) and their mounts (read-only unless the
 * spec says "rw"), after the volumes in M[*N]. */
static int
add_device_mounts (const struct ohbox_run_options *o, struct ohbox_mount_spec *m, size_t *n, ohbox_error_t *err)
{
  const struct ohbox_device_edits *dev = o->devices;
  for (size_t i = 0; dev && i < dev->n_nodes; i++, (*n)++)
    {
      const struct ohbox_device_node *d = &dev->nodes[i];
      /* host_uid/host_gid hold the sandbox's ids until set_device_owners
       * maps them. */
      m[*n] = (struct ohbox_mount_spec){ .source = xstrdup (d->host_path),
                                         .target = xstrdup (d->path),
                                         .device = true,
                                         .mknod = !o->userns_host && geteuid () == 0,
                                         .rdev = makedev (d->major, d->minor),
                                         .mode = (d->type == 'b' ? S_IFBLK : S_IFCHR) | (d->file_mode & 07777),
                                         .host_uid = d->uid,
                                         .host_gid = d->gid,
                                         .fd = -1 };
    }
  for (size_t i = 0; dev && i < dev->n_mounts; i++, (*n)++)
    {
      const struct ohbox_device_mount *dm = &dev->mounts[i];
      if (dm->type != NULL && strcmp (dm->type, "bind") != 0 && strcmp (dm->type, "none") != 0)
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "device mount `%s`: type `%s` (only bind mounts)",
                            dm->container_path, dm->type);
      bool rw = false;
      for (size_t k = 0; dm->options[k]; k++)
        rw = strcmp (dm->options[k], "rw") == 0 ? true : strcmp (dm->options[k], "ro") == 0 ? false : rw;
      m[*n] = (struct ohbox_mount_spec){
        .source = xstrdup (dm->host_path), .target = xstrdup (dm->container_path), .read_only = !rw, .fd = -1
      };
    }
  return 0;
}

static int
parse_mounts (const struct ohbox_run_options *o, struct ohbox_mount_spec **ret, size_t *ret_n, ohbox_error_t *err)
{
  const struct ohbox_device_edits *dev = o->devices;
  size_t n_dev = dev ? dev->n_nodes + dev->n_mounts : 0;
  size_t total = ohbox_strv_len (o->volumes) + ohbox_strv_len (o->tmpfs) + n_dev;
  if (total > OHBOX_SANDBOX_MAX_MOUNTS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "too many mounts (at most %d)", OHBOX_SANDBOX_MAX_MOUNTS);
  struct ohbox_mount_spec *m = xcalloc (total + 1, sizeof *m);
  size_t n = 0;
  for (size_t i = 0; o->volumes && o->volumes[i]; i++)
    {
      cleanup_free char *s = xstrdup (o->volumes[i]);
      char *ctr = strchr (s, ':');
      char *mode = ctr ? strchr (ctr + 1, ':') : NULL;
      if (ctr)
        *ctr++ = '\0';
      if (mode)
        *mode++ = '\0';
      bool read_only = false, idmap = false, bad = ctr == NULL || s[0] != '/' || ctr[0] != '/';
      for (char *save = NULL, *opt = mode ? strtok_r (mode, ",", &save) : NULL; opt && !bad;
           opt = strtok_r (NULL, ",", &save))
        {
          if (strcmp (opt, "ro") == 0 || strcmp (opt, "rw") == 0)
            read_only = strcmp (opt, "ro") == 0;
          else if (strcmp (opt, "idmap") == 0)
            idmap = true;
          else
            bad = true;
        }
      if (bad)
        {
          free (m);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                              "invalid volume `%s`: use /HOST/PATH:/SANDBOX/PATH[:ro|rw][,idmap]", o->volumes[i]);
        }
      /* An idmapped mount maps through the sandbox's user namespace, which
       * only root's sandboxes with one have (mount_setattr needs
       * CAP_SYS_ADMIN over the source's filesystem). */
      if (idmap && (o->userns_host || geteuid () != 0))
        {
          free (m);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "volume `%s`: idmap needs %s", o->volumes[i],
                              o->userns_host ? "a user namespace (not --userns host)"
                                             : "root (rootless sandboxes cannot idmap)");
        }
      char abs[PATH_MAX];
      if (realpath (s, abs) == NULL)
        {
          free (m);
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "volume source `%s`", s);
        }
      m[n].source = xstrdup (abs);
      m[n].fd = -1;
      m[n].target = xstrdup (ctr);
      m[n].read_only = read_only;
      m[n].idmap = idmap;
      n++;
    }
  for (size_t i = 0; o->tmpfs && o->tmpfs[i]; i++)
    {
      if (o->tmpfs[i][0] != '/')
        {
          free (m);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid --tmpfs `%s`: an absolute path", o->tmpfs[i]);
        }
      m[n].target = xstrdup (o->tmpfs[i]);
      m[n].tmpfs = true;
      m[n].fd = -1;
      n++;
    }
  if (add_device_mounts (o, m, &n, err) < 0)
    {
      free (m);
      return -1;
    }
  *ret = m;
  *ret_n = n;
  return 0;
}

/* The owners of the device nodes root makes: the sandbox's ids as the
 * host sees them (an id the sandbox does not map: its root). */
static void
set_device_owners (struct ohbox_mount_spec *m, size_t n, const struct ohbox_userns_plan *plan)
{
  for (size_t i = 0; i < n; i++)
    {
      if (!m[i].mknod)
        continue;
      uint32_t u = ohbox_idmap_to_host (&plan->uids, m[i].host_uid),
               g = ohbox_idmap_to_host (&plan->gids, m[i].host_gid);
      m[i].host_uid = u != (uint32_t) -1 ? u : ohbox_idmap_to_host (&plan->uids, 0);
      m[i].host_gid = g != (uint32_t) -1 ? g : ohbox_idmap_to_host (&plan->gids, 0);
    }
}

/* The OCI state a device's hook gets on its stdin. */
static char *
hook_state (const char *id, const char *status, pid_t pid, const char *bundle)
{
  json_t *j = json_pack ("{s:s, s:s, s:s, s:i, s:s, s:{}}", "ociVersion", "1.0.2", "id", id, "status", status, "pid",
                         (int) pid, "bundle", bundle, "annotations");
  char *text = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  return text;
}

struct start_hooks
{
  const struct ohbox_run_options *o;
  const char *id;
  const char *dir; /* the sandbox's state directory: the state's bundle */
};

/* The devices' hooks before the command runs (linux.h before_start): in
 * OCI's order, all three from the host's namespaces, the sandbox's root at
 * /proc/PID/root (ohbox-run(1) says how this differs from runc). */
static int
run_start_hooks (pid_t pid, void *data, ohbox_error_t *err)
{
  const struct start_hooks *h = data;
  static const enum ohbox_hook_stage stages[] = { OHBOX_HOOK_PRESTART, OHBOX_HOOK_CREATE_RUNTIME,
                                                  OHBOX_HOOK_CREATE_CONTAINER, OHBOX_HOOK_START_CONTAINER };
  cleanup_free char *state = hook_state (h->id, "created", pid, h->dir);
  for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
    if (ohbox_device_hooks_run (h->o->devices, stages[i], state, err) < 0)
      return -1;
  return 0;
}

/* Root's sandboxes may open the nodes ohbox puts in every /dev and the
 * devices given, nothing else (cgroup_devices.c).  Rootless ones cannot
 * have device rules (the v1 lists and v2 filters need the host's
 * CAP_SYS_ADMIN): there, the binds are the limit, as every other bind is
 * nodev and the user namespace cannot make nodes. */
static int
limit_devices (const struct ohbox_run_options *o, const struct ohbox_cgroup *cg, ohbox_error_t *err)
{
  if (geteuid () != 0)
    return 0;
  const struct ohbox_device_edits *dev = o->devices;
  size_t n = ohbox_n_default_device_rules + (dev ? dev->n_nodes : 0);
  cleanup_free struct ohbox_device_rule *rules = xcalloc (n, sizeof *rules);
  memcpy (rules, ohbox_default_device_rules, ohbox_n_default_device_rules * sizeof *rules);
  for (size_t i = 0; dev && i < dev->n_nodes; i++)
    {
      struct ohbox_device_rule *r = &rules[ohbox_n_default_device_rules + i];
      r->type = dev->nodes[i].type;
      r->major = dev->nodes[i].major;
      r->minor = dev->nodes[i].minor;
      memcpy (r->access, dev->nodes[i].access, sizeof r->access);
    }
  return ohbox_cgroup_set_devices (cg, rules, n, err);
}

/* What run_here() builds, released in one place. */
struct run_ctx
{
  struct ohbox_image *img;
  char **argv;
  char **env;
  struct ohbox_mount_spec *mounts;
  size_t n_mounts;
  struct ohbox_userns_plan userns_plan;
  struct ohbox_snapshot *snap;
  struct ohbox_cgroup *cgroup;
  struct ohbox_seccomp_filter *seccomp;
  struct ohbox_network *net;
  int rootdir_fd;
  int executor_sock; /* the executor's listening socket (executor_socket), or -1 */
  int stdio[3];
  int out_read;     /* the monitor's end of the output pipe or terminal */
  int line_read[2]; /* on_output: the monitor's ends of the stdout and stderr pipes */
  /* Decided by the phases, not owned (they point into img, o or hostname). */
  char hostname[13];
  const char *host;
  bool userns;    /* a user namespace (not --userns host) */
  bool rootless;  /* the caller is not root */
  uid_t root_uid; /* the host ids of the sandbox's root */
  gid_t root_gid;
  uint64_t caps, caps_added;
  const char *wd;
  const char *user;
};

static void
run_ctx_release (struct run_ctx *c)
{
  ohbox_network_free (c->net);
  ohbox_image_free (c->img);
  ohbox_strv_free (c->argv);
  ohbox_strv_free (c->env);
  for (size_t i = 0; i < c->n_mounts; i++)
    {
      free (c->mounts[i].source);
      if (c->mounts[i].fd >= 0)
        close (c->mounts[i].fd);
      free (c->mounts[i].target);
    }
  free (c->mounts);
  ohbox_userns_plan_release (&c->userns_plan);
  ohbox_snapshot_free (c->snap);
  ohbox_seccomp_filter_free (c->seccomp);
  if (c->rootdir_fd >= 0)
    close (c->rootdir_fd);
  if (c->executor_sock >= 0)
    close (c->executor_sock);
  for (int i = 0; i < 3; i++)
    if (c->stdio[i] > 2)
      close (c->stdio[i]);
  for (int i = 0; i < 2; i++)
    if (c->line_read[i] >= 0)
      close (c->line_read[i]);
  memset (c, 0, sizeof *c);
  c->rootdir_fd = c->out_read = c->executor_sock = -1;
  c->line_read[0] = c->line_read[1] = -1;
}

/* The command's stdio (C->stdio; its -t terminal in *TTY_MASTER), and
 * where the caller's own is a terminal without -t, the RELAY (relay.h). */
static int
setup_stdio (const struct ohbox_run_options *o, struct run_ctx *c, int *tty_master, struct ohbox_relay *relay,
             ohbox_error_t *err)
{
  *tty_master = -1;
  if (o->tty)
    {
      /* -d -t: the monitor keeps the master for `ohbox attach`. */
      int master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (master < 0 || grantpt (master) < 0 || unlockpt (master) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "allocate a pseudo-terminal");
      int slave = open (ptsname (master), O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (slave < 0)
        {
          close (master);
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open the pseudo-terminal");
        }
      struct winsize ws;
      if (ioctl (0, TIOCGWINSZ, &ws) == 0)
        ioctl (slave, TIOCSWINSZ, &ws);
      c->stdio[0] = slave;
      c->stdio[1] = fcntl (slave, F_DUPFD_CLOEXEC, 3);
      c->stdio[2] = fcntl (slave, F_DUPFD_CLOEXEC, 3);
      c->out_read = master;
      *tty_master = master;
      return 0;
    }
  if (!o->detach && o->on_output)
    {
      /* Line events: two pipes the monitor splits into lines. */
      int po[2], pe[2];
      if (pipe2 (po, O_CLOEXEC) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
      if (pipe2 (pe, O_CLOEXEC) < 0)
        {
          close (po[0]);
          close (po[1]);
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
        }
      c->stdio[0] = o->interactive ? 0 : open ("/dev/null", O_RDONLY | O_CLOEXEC);
      c->stdio[1] = po[1];
      c->stdio[2] = pe[1];
      c->line_read[0] = po[0];
      c->line_read[1] = pe[0];
      if (c->stdio[0] < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open /dev/null");
      return ohbox_relay_setup (relay, c->stdio, err);
    }
  if (!o->detach)
    {
      c->stdio[0] = o->interactive ? 0 : open ("/dev/null", O_RDONLY | O_CLOEXEC);
      c->stdio[1] = 1;
      c->stdio[2] = 2;
      if (c->stdio[0] < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open /dev/null");
      return ohbox_relay_setup (relay, c->stdio, err);
    }
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
  c->stdio[0] = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  c->stdio[1] = p[1];
  c->stdio[2] = fcntl (p[1], F_DUPFD_CLOEXEC, 3);
  c->out_read = p[0];
  return 0;
}

/* The signal `ohbox stop` sends first: checked now, so that a bad
 * --stop-signal or image StopSignal fails the run, not a later stop. */
static int
stop_signal (const struct ohbox_run_options *o, json_t *rc, int *sig, ohbox_error_t *err)
{
  const char *s = o->stop_signal;
  const char *from = "--stop-signal";
  if (s == NULL)
    {
      s = json_string_value (json_object_get (rc, "StopSignal"));
      from = "the image's StopSignal";
    }
  *sig = SIGTERM;
  if (s == NULL || *s == '\0')
    return 0;
  if (ohbox_signal_parse (s, sig) < 0)
    return ohbox_error (err, o->stop_signal ? OHBOX_ERR_USAGE : OHBOX_ERR_GENERIC, 0, "%s `%s` is not a signal", from,
                        s);
  return 0;
}

/* What `ps --format json` shows of a sandbox's devices: the names asked
 * for, and each node as "PATH (HOST_PATH c MAJOR:MINOR ACCESS)". */
static json_t *
devices_json (const struct ohbox_device_edits *d)
{
  json_t *names = json_array ();
  for (size_t i = 0; i < d->n_names; i++)
    json_array_append_new (names, json_string (d->names[i]));
  return json_pack ("{s:o, s:o}", "names", names, "nodes", ohbox_device_nodes_json (d));
}

static int
write_config (int dfd, const char *id, const struct ohbox_run_options *o, struct run_ctx *c, struct ohbox_store *s,
              ohbox_error_t *err)
{
  int sig;
  if (stop_signal (o, c->img->config->runtime_config, &sig, err) < 0)
    return -1;
  cleanup_free char *now = ohbox_now_rfc3339 ();
  json_t *labels = NULL;
  if (o->labels)
    {
      labels = json_object ();
      for (size_t i = 0; o->labels[i]; i++)
        {
          const char *eq = strchr (o->labels[i], '=');
          if (eq == NULL
              || json_object_setn_new (labels, o->labels[i], (size_t) (eq - o->labels[i]), json_string (eq + 1)) < 0)
            {
              json_decref (labels);
              return ohbox_error (err, OHBOX_ERR_USAGE, 0, "label `%s`: use KEY=VALUE in UTF-8", o->labels[i]);
            }
        }
    }
  struct ohbox_sandbox_config cfg = {
    .present = OHBOX_CONFIG_ID | OHBOX_CONFIG_NAME | OHBOX_CONFIG_IMAGE | OHBOX_CONFIG_IMAGE_ID | OHBOX_CONFIG_COMMAND
               | OHBOX_CONFIG_CREATED | OHBOX_CONFIG_RM | OHBOX_CONFIG_DETACHED | OHBOX_CONFIG_STORE
               | OHBOX_CONFIG_STOP_SIGNAL | OHBOX_CONFIG_TTY | (o->storage_size ? OHBOX_CONFIG_STORAGE_SIZE : 0)
               | (o->devices ? OHBOX_CONFIG_DEVICES : 0) | (labels ? OHBOX_CONFIG_LABELS : 0),
    .id = (char *) id,
    .name = (char *) o->name,
    .image = (char *) o->image,
    .image_id = (char *) c->img->id,
    .command = c->argv,
    .created = now,
    .rm = o->rm,
    .detached = o->detach,
    .store = (char *) ohbox_store_root (s),
    .stop_signal = sig,
    .tty = o->tty,
    .storage_size = o->storage_size,
    .devices = o->devices ? devices_json (o->devices) : NULL,
    .labels = labels,
  };
  int r = ohbox_state_write_config (dfd, &cfg, err);
  json_decref (cfg.devices);
  json_decref (labels);
  return r;
}

/* The executor's unix socket, STATE/<id>/executor.sock, listening before
 * the sandbox exists: a client's connection waits in the backlog until
 * the executor accepts it (no polling for the port to open), and is
 * refused once every copy of the socket is closed (the run failed, or the
 * executor exited). Safe to hand to untrusted code: the sandbox gets an
 * fd it can only accept on; the path is in a directory of the caller's,
 * mode 0700, that the sandbox never sees, so only the caller (and root)
 * can connect, and nothing in the sandbox can swap the path for another
 * socket. */
static int
executor_socket_open (int dfd, int *ret, ohbox_error_t *err)
{
  *ret = ohbox_state_listen (dfd, OHBOX_EXECUTOR_SOCKET, 0, SOMAXCONN, err);
  return *ret < 0 ? -1 : 0;
}

/* executor.json, once the network is prepared: a published executor port
 * has its host port then. */
static int
record_executor (int dfd, const struct ohbox_run_options *o, struct ohbox_network *net, bool foreground,
                 ohbox_error_t *err)
{
  if (o->executor_key == NULL)
    return 0;
  cleanup_free char *published = o->executor_port > 0 ? ohbox_network_published_url (net, (uint16_t) o->executor_port)
                                                      : NULL;
  const char *url = published ? published : o->executor_url;
  if (url == NULL && o->executor_port > 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the executor's port %d is not published", o->executor_port);
  if (ohbox_executor_record (dfd, url, o->executor_key, o->executor_socket, err) < 0)
    return -1;
  if (foreground && o->on_executor)
    o->on_executor (url, o->executor_key, o->event_data);
  return 0;
}

static int
attach_network_early (int userns_fd, int netns_fd, void *data, ohbox_error_t *err)
{
  return ohbox_network_attach_early (data, userns_fd, netns_fd, err);
}

static int
attach_network (pid_t pid, int userns_fd, int netns_fd, void *data, ohbox_error_t *err)
{
  return ohbox_network_attach (data, pid, userns_fd, netns_fd, err);
}

/* Phase 1: the image, the command, the recorded config, the name, the
 * mounts and the network plan. */
static int
run_prepare_config (struct ohbox_runtime *rt, const struct ohbox_run_options *o, const char *id, int dfd, int report_fd,
                    struct run_ctx *c, ohbox_error_t *err)
{
  if ((o->image_id ? ohbox_image_load_id_for_run (rt->store, o->image_id, &c->img, err)
                   : ohbox_image_load_for_run (rt->store, o->image, &c->img, err))
      < 0)
    return -1;
  ohbox_trace ("image");
  json_t *rc = c->img->config->runtime_config;
  snprintf (c->hostname, sizeof c->hostname, "%.12s", id);
  c->host = o->hostname ? o->hostname : c->hostname;
  if (build_argv (o, rc, &c->argv, err) < 0 || build_env (o, rc, c->host, &c->env, err) < 0)
    return -1;
  if (write_config (dfd, id, o, c, rt->store, err) < 0)
    return -1;
  if (o->name && ohbox_state_claim_name (rt, o->name, id, err) < 0)
    return -1;
  if (parse_mounts (o, &c->mounts, &c->n_mounts, err) < 0)
    return -1;
  if (o->executor_key && o->executor_socket && executor_socket_open (dfd, &c->executor_sock, err) < 0)
    return -1;
  if (ohbox_network_prepare (rt, id, dfd, o, c->host, &c->net, err) < 0
      || record_executor (dfd, o, c->net, report_fd < 0, err) < 0)
    return -1;
  ohbox_network_mounts (c->net, &c->mounts, &c->n_mounts);
  ohbox_trace ("config, network plan");
  return 0;
}

/* Phase 2: the user namespace's ids, and the bind sources cloned by them. */
static int
run_prepare_ids (struct ohbox_runtime *rt, const struct ohbox_run_options *o, const char *id, struct run_ctx *c,
                 ohbox_error_t *err)
{
  c->userns = !o->userns_host;
  c->rootless = geteuid () != 0;
  if (c->rootless && !c->userns)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "--userns host needs root");
  if (c->userns)
    {
      if (ohbox_userns_plan (NULL, NULL, &c->userns_plan, err) < 0)
        return -1;
      if (c->userns_plan.warning)
        warn (o, "%s", c->userns_plan.warning);
      /* Root: ids of its own (linux.h), given back by ohbox_state_remove. */
      cleanup_free char *owner = xasprintf ("%s/%s", rt->root, id);
      if (!c->rootless && ohbox_userns_lease (&c->userns_plan, owner, err) < 0)
        return -1;
      c->root_uid = ohbox_idmap_to_host (&c->userns_plan.uids, 0);
      c->root_gid = ohbox_idmap_to_host (&c->userns_plan.gids, 0);
      set_device_owners (c->mounts, c->n_mounts, &c->userns_plan);
    }
  /* Root clones the bind sources here, by the caller's credentials, after
   * the id lease (the device nodes it makes belong to the sandbox's ids).
   * Rootless, a source can only be cloned in the sandbox's own user and
   * mount namespaces (the child does it, linux.c). */
  if (!c->rootless && ohbox_mounts_prepare_binds (c->mounts, c->n_mounts, err) < 0)
    return -1;
  return 0;
}

/* Phase 3: the writable layer (with the network's /etc files) and the cgroup. */
static int
run_prepare_rootfs (struct ohbox_runtime *rt, const struct ohbox_run_options *o, const char *id, struct run_ctx *c,
                    ohbox_error_t *err)
{
  const struct oci_image_config *ic = c->img->config;
  cleanup_free char *state_dir = xasprintf ("%s/%s", rt->root, id);
  if (ohbox_snapshot_prepare (rt->store, id, state_dir, ic->diff_ids, ic->n_diff_ids,
                              c->rootless ? geteuid () : c->root_uid, c->rootless ? getegid () : c->root_gid,
                              o->read_only ? 0 : o->storage_size, &c->snap, err)
      < 0)
    return -1;
  if (ohbox_network_etc_into_upper (c->net, c->snap->upper, err) < 0)
    return -1;
  ohbox_trace ("writable layer");
  const struct ohbox_cgroup_host *cgh;
  if (ohbox_runtime_cgroup_host (rt, &cgh, err) < 0)
    return -1;
  if (ohbox_cgroup_create (cgh, id, &o->limits, &c->cgroup, err) < 0 || limit_devices (o, c->cgroup, err) < 0)
    return -1;
  ohbox_trace ("cgroups");
  return 0;
}

/* Phase 4: capabilities and the seccomp filter compiled for them. */
static int
run_prepare_security (struct ohbox_runtime *rt, const struct ohbox_run_options *o, struct run_ctx *c,
                      ohbox_error_t *err)
{
  size_t n_add = ohbox_strv_len (o->cap_add), n_drop = ohbox_strv_len (o->cap_drop);
  if (ohbox_caps_tweak (ohbox_caps_default (), (const char *const *) o->cap_add, n_add,
                        (const char *const *) o->cap_drop, n_drop, &c->caps, &c->caps_added, err)
      < 0)
    return -1;
  if (o->seccomp_profile == NULL || strcmp (o->seccomp_profile, "unconfined") != 0)
    {
      cleanup_free char *cache = xasprintf ("%s/seccomp-cache", rt->root);
      struct ohbox_seccomp_options so = { .caps = c->caps, .cache_dir = cache };
      if (ohbox_seccomp_compile_file (o->seccomp_profile, &so, &c->seccomp, err) < 0)
        return -1;
    }
  ohbox_trace ("seccomp filter");
  return 0;
}

/* Phase 5: the rootfs mount point, the working directory and user, and
 * what `ohbox exec` gives its processes too (exec.h). */
static int
run_record_exec (const struct ohbox_run_options *o, int dfd, struct run_ctx *c, ohbox_error_t *err)
{
  json_t *rc = c->img->config->runtime_config;
  c->rootdir_fd = openat (dfd, "rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (c->rootdir_fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open the rootfs mount point");
  c->wd = o->workdir ? o->workdir : json_string_value (json_object_get (rc, "WorkingDir"));
  if (c->wd == NULL || *c->wd == '\0')
    c->wd = "/";
  if (c->wd[0] != '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "working directory `%s` is not an absolute path", c->wd);
  c->user = o->user ? o->user : json_string_value (json_object_get (rc, "User"));
  if (c->user && *c->user == '\0')
    c->user = NULL;
  struct ohbox_exec_record xr = { .env = c->env,
                                  .cwd = c->wd,
                                  .user = c->user,
                                  .caps = c->caps,
                                  .caps_added = c->caps_added,
                                  .no_new_privs = o->no_new_privs,
                                  .seccomp_profile = o->seccomp_profile,
                                  .additional_gids = o->devices ? o->devices->additional_gids : NULL,
                                  .n_additional_gids = o->devices ? o->devices->n_additional_gids : 0 };
  if (ohbox_exec_record (dfd, &xr, err) < 0
      || (c->seccomp && ohbox_seccomp_filter_save (dfd, OHBOX_EXEC_SECCOMP_FILE, c->seccomp, err) < 0))
    return -1;
  return 0;
}

/* Phase 6: clone the sandbox (linux.c) and run the devices' poststart hooks. */
static int
run_start (struct ohbox_runtime *rt, const struct ohbox_run_options *o, const char *id, struct run_ctx *c,
           int tty_master, struct ohbox_linux_proc *proc, ohbox_error_t *err)
{
  cleanup_free char *sandbox_dir = xasprintf ("%s/%s", rt->root, id);
  struct start_hooks start_hooks = { .o = o, .id = id, .dir = sandbox_dir };
  struct ohbox_linux_spec spec = {
    .id = id,
    .argv = c->argv,
    .env = c->env,
    .cwd = c->wd,
    .user = c->user,
    .hostname = c->host,
    .stdio = { c->stdio[0], c->stdio[1], c->stdio[2] },
    .listen_fd = c->executor_sock,
    .tty = tty_master >= 0,
    .userns = c->userns,
    .userns_plan = &c->userns_plan,
    .rootless = c->rootless,
    .netns = o->network != OHBOX_NETWORK_HOST && o->network != OHBOX_NETWORK_CONTAINER,
    .join_netns = ohbox_network_join_fd (c->net) >= 0,
    .join_netns_fd = ohbox_network_join_fd (c->net),
    .after_clone = attach_network,
    .right_after_clone = attach_network_early,
    .after_clone_data = c->net,
    .before_start = o->devices && o->devices->n_hooks > 0 ? run_start_hooks : NULL,
    .before_start_data = &start_hooks,
    .snap = c->snap,
    .read_only = o->read_only,
    .mounts = c->mounts,
    .n_mounts = c->n_mounts,
    .rootdir_fd = c->rootdir_fd,
    .caps = c->caps,
    .caps_added = c->caps_added,
    .no_new_privs = o->no_new_privs,
    .seccomp = c->seccomp,
    .cgroup = c->cgroup,
    .additional_gids = o->devices ? o->devices->additional_gids : NULL,
    .n_additional_gids = o->devices ? o->devices->n_additional_gids : 0,
    .ldconfig_dirs = o->devices ? o->devices->ldconfig_dirs : NULL,
  };
  ohbox_trace ("stdio, exec record");
  if (ohbox_linux_start (&spec, proc, err) < 0)
    return -1;
  ohbox_trace ("parent: command running");
  if (o->devices && o->devices->n_hooks > 0)
    {
      /* OCI: a poststart hook that fails is a warning; the sandbox runs. */
      cleanup_free char *state = hook_state (id, "running", proc->pid, sandbox_dir);
      cleanup_error ohbox_error_t hook_err = NULL;
      if (ohbox_device_hooks_run (o->devices, OHBOX_HOOK_POSTSTART, state, &hook_err) < 0)
        warn (o, "%s", hook_err->msg);
    }
  return 0;
}

/* Detached: the monitor lets go of the caller's terminal and reports the id. */
static void
report_detached (int report_fd, const char *id)
{
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < 3 && null >= 0; i++)
    dup2 (null, i);
  if (null > 2)
    close (null);
  char msg[OHBOX_ID_LEN + 4];
  snprintf (msg, sizeof msg, "0 %s", id);
  ohbox_write_all (report_fd, msg, strlen (msg));
  close (report_fd);
  /* What setup allocated is not needed any more (< 1 MiB per monitor). */
  malloc_trim (0);
}

/* Phase 7: this process becomes the sandbox's monitor (monitor.c) until the
 * sandbox exits; M has taken over the context's cgroup, network and pipes. */
static int
run_monitor (struct ohbox_monitor *m, const struct ohbox_run_options *o, const char *id, int report_fd, int tty_master,
             struct ohbox_relay *relay, int *ret_exit_code, ohbox_error_t *err)
{
  int code = -1;
  if (report_fd >= 0 && tty_master >= 0)
    {
      /* Before the report: once `ohbox run -d -t` returned, attach works. */
      m->attach_fd = ohbox_monitor_attach_listen (m->dirfd, err);
      if (m->attach_fd < 0)
        {
          syscall (SYS_pidfd_send_signal, m->pidfd, SIGKILL, NULL, 0);
          ohbox_monitor_run (m, NULL);
          goto out;
        }
    }
  if (report_fd >= 0)
    report_detached (report_fd, id);
  if (report_fd < 0 && o->on_started)
    o->on_started (id, m->pid, o->event_data);
  struct termios saved;
  bool raw = tty_master >= 0 && isatty (0) && tcgetattr (0, &saved) == 0;
  if (raw)
    {
      struct termios t = saved;
      cfmakeraw (&t);
      tcsetattr (0, TCSANOW, &t);
    }
  code = ohbox_monitor_run (m, err);
  if (m->attach_fd >= 0)
    {
      close (m->attach_fd);
      unlinkat (m->dirfd, OHBOX_ATTACH_SOCK, 0);
    }
  if (raw)
    tcsetattr (0, TCSANOW, &saved);
  ohbox_relay_close (relay);
out:
  if (tty_master >= 0)
    close (tty_master);
  close (m->pidfd);
  ohbox_cgroup_free (m->cgroup);
  ohbox_network_free (m->net);
  if (code < 0)
    return -1;
  *ret_exit_code = code;
  return 0;
}

/* What went wrong before the sandbox ran: its cgroup, pipes and state go. */
static void
run_undo (struct ohbox_runtime *rt, const char *id, struct run_ctx *c, struct ohbox_relay *relay)
{
  if (c->cgroup)
    {
      ohbox_error_t e = NULL;
      ohbox_cgroup_destroy (c->cgroup, &e);
      ohbox_error_release (&e);
      ohbox_cgroup_free (c->cgroup);
      c->cgroup = NULL;
    }
  if (c->out_read >= 0)
    close (c->out_read);
  ohbox_relay_close (relay);
  run_ctx_release (c);
  ohbox_error_t e = NULL;
  ohbox_state_remove (rt, id, &e);
  ohbox_error_release (&e);
}

/* Creates, starts and monitors the sandbox in the calling process. With
 * REPORT_FD >= 0 (detached) the id or error goes there once it runs, and
 * stdio is pointed at /dev/null. */
static int
run_here (struct ohbox_runtime *rt, const struct ohbox_run_options *o, int report_fd, char **ret_id, int *ret_exit_code,
          ohbox_error_t *err)
{
  char id[OHBOX_ID_LEN + 1];
  cleanup_close int dfd = -1;
  cleanup_close int lockfd = -1;
  struct run_ctx c;
  memset (&c, 0, sizeof c);
  c.rootdir_fd = c.out_read = c.executor_sock = -1;
  c.line_read[0] = c.line_read[1] = -1;
  c.stdio[0] = c.stdio[1] = c.stdio[2] = -1;
  int tty_master = -1;
  struct ohbox_relay relay;
  ohbox_relay_init (&relay);
  struct ohbox_linux_proc proc = { 0 };
  /* Declared here: a goto fail must not enter the scope of a cleanup variable. */
  cleanup_free char *now = NULL;
  *ret_exit_code = OHBOX_EXIT_RUNTIME;

  ohbox_trace ("run: begin");
  if (ohbox_state_create (rt, id, &dfd, &lockfd, err) < 0)
    return -1;
  ohbox_trace ("state directory");
  if (run_prepare_config (rt, o, id, dfd, report_fd, &c, err) < 0 || run_prepare_ids (rt, o, id, &c, err) < 0
      || run_prepare_rootfs (rt, o, id, &c, err) < 0 || run_prepare_security (rt, o, &c, err) < 0
      || setup_stdio (o, &c, &tty_master, &relay, err) < 0 || run_record_exec (o, dfd, &c, err) < 0)
    goto fail;
  if (run_start (rt, o, id, &c, tty_master, &proc, err) < 0)
    {
      *ret_exit_code = proc.exit_code_hint;
      goto fail;
    }
  double started = ohbox_monotonic ();
  /* From here on the store is only read through the sandbox's own mounts;
   * its layers file keeps GC away from them (snapshot.h). */
  ohbox_store_unlock (rt->store);
  now = ohbox_now_rfc3339 ();
  ohbox_state_record_started (dfd, proc.pid, now, NULL);

  struct ohbox_monitor m = {
    .rt = rt,
    .id = id,
    .dirfd = dfd,
    .lockfd = steal_fd (&lockfd), /* the monitor lets go of it (monitor.c) */
    .pid = proc.pid,
    .pidfd = proc.pidfd,
    .log_fd = steal_fd (&c.out_read),
    .tty_master = tty_master,
    .forward_signals = report_fd < 0,
    .rm = o->rm,
    .cgroup = steal_pointer (&c.cgroup),
    .started = started,
    .timeout = o->timeout,
    .line_fd = { steal_fd (&c.line_read[0]), steal_fd (&c.line_read[1]) },
    .relay = ohbox_relay_active (&relay) ? &relay : NULL,
    .detached = report_fd >= 0,
    .attach_fd = -1,
    .on_output = report_fd < 0 ? o->on_output : NULL,
    .on_exited = report_fd < 0 ? o->on_exited : NULL,
    .event_data = o->event_data,
    .devices = o->devices,
    /* The reserved host ports stay bound for as long as the monitor runs. */
    .net = steal_pointer (&c.net),
  };
  run_ctx_release (&c);
  if (ret_id)
    *ret_id = xstrdup (id);
  return run_monitor (&m, o, id, report_fd, tty_master, &relay, ret_exit_code, err);

fail:
  run_undo (rt, id, &c, &relay);
  return -1;
}
/* -d: a forked monitor does the work and reports "0 ID" or "KIND MESSAGE". */
static int
run_detached (struct ohbox_runtime *rt, const struct ohbox_run_options *o, char **ret_id, int *ret_exit_code,
              ohbox_error_t *err)
{
  int p[2];
  *ret_exit_code = OHBOX_EXIT_RUNTIME;
  if (pipe2 (p, O_CLOEXEC) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "pipe");
  pid_t pid = fork ();
  if (pid < 0)
    {
      close (p[0]);
      close (p[1]);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "fork the monitor");
    }
  if (pid == 0)
    {
      close (p[0]);
      /* Its own session: the caller's terminal and signals are not its. */
      setsid ();
      signal (SIGHUP, SIG_IGN);
      signal (SIGPIPE, SIG_IGN);
      /* A grandchild: `ohbox run -d` returns and nobody has to reap us
       * (unless the caller exits anyway). */
      if (!o->detach_caller_exits)
        {
          pid_t again = fork ();
          if (again != 0)
            _exit (again < 0 ? 1 : 0);
        }
      ohbox_error_t e = NULL;
      int code;
      if (run_here (rt, o, p[1], NULL, &code, &e) < 0 && e)
        {
          char *msg = xasprintf ("%d %d %s", e->kind, code, e->msg);
          ohbox_write_all (p[1], msg, strlen (msg));
          _exit (1);
        }
      _exit (0);
    }
  close (p[1]);
  if (!o->detach_caller_exits)
    waitpid (pid, NULL, 0);
  cleanup_free char *text = NULL;
  size_t len;
  int r = ohbox_read_fd (p[0], "the monitor's report", 64 * 1024, &text, &len, err);
  close (p[0]);
  if (r < 0)
    return -1;
  if (len > 2 && text[0] == '0' && text[1] == ' ')
    {
      if (ret_id)
        *ret_id = xstrdup (text + 2);
      *ret_exit_code = 0;
      return 0;
    }
  int kind = OHBOX_ERR_GENERIC, code = OHBOX_EXIT_RUNTIME, off = 0;
  if (sscanf (text, "%d %d %n", &kind, &code, &off) < 2 || off == 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "the sandbox's monitor died during setup");
  *ret_exit_code = code;
  return ohbox_error (err, kind, 0, "%s", text + off);
}

int
ohbox_sandbox_run (struct ohbox_runtime *rt, const struct ohbox_run_options *opts, char **ret_id, int *ret_exit_code,
                   ohbox_error_t *err)
{
  int dummy;
  if (ret_exit_code == NULL)
    ret_exit_code = &dummy;
  if (opts->detach)
    return run_detached (rt, opts, ret_id, ret_exit_code, err);
  return run_here (rt, opts, -1, ret_id, ret_exit_code, err);
}
