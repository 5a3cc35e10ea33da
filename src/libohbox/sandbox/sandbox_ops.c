/* sandbox_ops.c: the lifecycle commands on existing sandboxes (ps, kill,
 * stop, rm, pause, wait, logs, stats); see sandbox.h. They talk to state
 * files, pidfds and cgroups: never to a server. */
#include "config.h"
#include "sandbox/sandbox_internal.h"
#include "network/network.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

static bool
is_id (const char *s)
{
  if (strlen (s) != OHBOX_ID_LEN)
    return false;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return false;
  return true;
}

int
ohbox_sandbox_resolve (struct ohbox_runtime *rt, const char *what, char **ret_id, ohbox_error_t *err)
{
  struct stat st;
  if (is_id (what) && fstatat (rt->dirfd, what, &st, AT_SYMLINK_NOFOLLOW) == 0)
    {
      *ret_id = xstrdup (what);
      return 0;
    }
  if (strchr (what, '/') == NULL && what[0] != '.')
    {
      cleanup_free char *link = xasprintf ("names/%s", what);
      char target[OHBOX_ID_LEN + 2];
      ssize_t n = readlinkat (rt->dirfd, link, target, sizeof target - 1);
      if (n == OHBOX_ID_LEN)
        {
          target[n] = '\0';
          if (fstatat (rt->dirfd, target, &st, AT_SYMLINK_NOFOLLOW) == 0)
            {
              *ret_id = xstrdup (target);
              return 0;
            }
        }
    }
  size_t len = strlen (what);
  char *found = NULL;
  if (len > 0 && len < OHBOX_ID_LEN)
    {
      cleanup_close int fd = openat (rt->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      cleanup_dir DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
      if (d)
        fd = -1;
      struct dirent *de;
      while (d && (de = readdir (d)) != NULL)
        if (is_id (de->d_name) && strncmp (de->d_name, what, len) == 0)
          {
            if (found)
              {
                free (found);
                return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` names several sandboxes: give more of the id",
                                    what);
              }
            found = xstrdup (de->d_name);
          }
    }
  if (found == NULL)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%s`; see `ohbox ps -a`", what);
  *ret_id = found;
  return 0;
}

/* config + state of one sandbox as the JSON ps prints. */
static json_t *
describe (int dirfd, const char *id)
{
  json_t *cfg = NULL, *st = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_state_read_json (dirfd, "config.json", &cfg, &e) < 0)
    {
      ohbox_error_release (&e);
      cfg = json_object ();
    }
  if (ohbox_state_read_json (dirfd, "state.json", &st, &e) < 0)
    {
      ohbox_error_release (&e);
      st = json_object ();
    }
  bool alive = ohbox_state_monitor_alive (dirfd);
  const char *status = alive ? (json_is_true (json_object_get (st, "paused")) ? "paused" : "running") : "exited";
  if (alive && json_object_get (st, "pid") == NULL)
    status = "created";
  json_t *j = json_object ();
  json_object_set_new (j, "id", json_string (id));
  static const char *const cfg_keys[] = { "name", "image", "image_id", "command", "created", "devices" };
  for (size_t i = 0; i < sizeof cfg_keys / sizeof cfg_keys[0]; i++)
    {
      json_t *v = json_object_get (cfg, cfg_keys[i]);
      json_object_set (j, cfg_keys[i], v ? v : json_null ());
    }
  json_object_set_new (j, "status", json_string (status));
  /* pid while it runs; exit code and end time once it exited. */
  static const char *const st_keys[] = { "pid", "started_at", "exit_code", "finished_at" };
  for (size_t i = 0; i < sizeof st_keys / sizeof st_keys[0]; i++)
    {
      json_t *v = json_object_get (st, st_keys[i]);
      bool wanted = i == 1 || (i == 0) == alive;
      json_object_set (j, st_keys[i], v && wanted ? v : json_null ());
    }
  /* --timeout killed it (state.json of older versions has no such field). */
  json_object_set_new (j, "timed_out", json_boolean (!alive && json_is_true (json_object_get (st, "timed_out"))));
  /* Address and published ports while they are held. */
  json_t *net = ohbox_network_read (dirfd);
  if (net && json_is_true (json_object_get (net, "active")))
    {
      json_object_set (j, "ip", json_object_get (net, "ip") ?: json_null ());
      json_object_set (j, "ports", json_object_get (net, "ports") ?: json_null ());
    }
  json_object_set_new (j, "network", json_string (net ? json_string_value (json_object_get (net, "mode")) ?: "bridge"
                                                      : "none"));
  json_t *labels = json_object_get (cfg, "labels"), *notes = json_object_get (st, "annotations");
  json_object_set_new (j, "labels", json_is_object (labels) ? json_incref (labels) : json_object ());
  json_object_set_new (j, "annotations", json_is_object (notes) ? json_incref (notes) : json_object ());
  json_decref (net);
  json_decref (cfg);
  json_decref (st);
  return j;
}

int
ohbox_sandbox_network (struct ohbox_runtime *rt, const char *id, json_t **ret, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  bool removed;
  if (ohbox_state_reconcile (rt, id, dfd, &removed, err) < 0)
    return -1;
  if (removed)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%.12s`", id);
  json_t *net = ohbox_network_read (dfd);
  *ret = net ? net : json_object ();
  return 0;
}

int
ohbox_sandbox_inspect (struct ohbox_runtime *rt, const char *id, json_t **ret, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  bool removed;
  if (ohbox_state_reconcile (rt, id, dfd, &removed, err) < 0)
    return -1;
  if (removed)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%.12s`", id);
  *ret = describe (dfd, id);
  return 0;
}

int
ohbox_sandbox_list (struct ohbox_runtime *rt, bool all, json_t **ret, ohbox_error_t *err)
{
  cleanup_close int fd = openat (rt->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s`", rt->root);
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    return ohbox_error_errno (err, "opendir `%s`", rt->root);
  fd = -1;
  json_t *arr = json_array ();
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (strncmp (de->d_name, ".new-", 5) == 0)
        {
          /* A half-created state dir whose creator died before the rename. */
          if (ohbox_state_half_created_stale (rt, de->d_name))
            {
              ohbox_error_t e = NULL;
              ohbox_rm_rf_at (rt->dirfd, de->d_name, &e);
              ohbox_error_release (&e);
            }
          continue;
        }
      if (strncmp (de->d_name, OHBOX_STATE_REMOVING, strlen (OHBOX_STATE_REMOVING)) == 0)
        {
          /* Being removed, or left by a remover that died: removing it
           * again is harmless (ohbox_rm_rf_at takes what is left). */
          ohbox_error_t e = NULL;
          ohbox_rm_rf_at (rt->dirfd, de->d_name, &e);
          ohbox_error_release (&e);
          continue;
        }
      if (!is_id (de->d_name))
        continue;
      cleanup_close int sfd = -1;
      ohbox_error_t e = NULL;
      if (ohbox_state_open (rt, de->d_name, &sfd, &e) < 0)
        {
          ohbox_error_release (&e);
          continue;
        }
      bool removed = false;
      if (ohbox_state_reconcile (rt, de->d_name, sfd, &removed, err) < 0)
        {
          json_decref (arr);
          return -1;
        }
      if (removed)
        continue;
      json_t *j = describe (sfd, de->d_name);
      if (!all && strcmp (json_string_value (json_object_get (j, "status")), "exited") == 0)
        json_decref (j);
      else
        json_array_append_new (arr, j);
    }
  *ret = arr;
  return 0;
}

int
ohbox_sandbox_kill (struct ohbox_runtime *rt, const char *id, int sig, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  bool exited;
  cleanup_close int pidfd = ohbox_state_pidfd (dfd, &exited, err);
  if (pidfd < 0)
    {
      if (exited)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%.12s` is not running", id);
      return -1;
    }
  /* The init forwards it to the command (SIGKILL and SIGSTOP it cannot). */
  if (syscall (SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
    return ohbox_error_errno (err, "signal sandbox `%.12s`", id);
  return 0;
}

static int
with_cgroup (struct ohbox_runtime *rt, const char *id, struct ohbox_cgroup **cg, ohbox_error_t *err)
{
  const struct ohbox_cgroup_host *host;
  if (ohbox_runtime_cgroup_host (rt, &host, err) < 0)
    return -1;
  return ohbox_cgroup_open (host, id, cg, err);
}

int
ohbox_sandbox_stop (struct ohbox_runtime *rt, const char *id, int timeout, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  bool exited;
  cleanup_close int pidfd = ohbox_state_pidfd (dfd, &exited, err);
  if (pidfd < 0)
    {
      if (!exited)
        return -1;
      ohbox_error_release (err);
      return ohbox_state_wait_monitor (dfd, NULL, err);
    }
  json_t *st = NULL;
  ohbox_error_t e = NULL;
  bool paused = false;
  if (ohbox_state_read_json (dfd, "state.json", &st, &e) == 0)
    paused = json_is_true (json_object_get (st, "paused"));
  ohbox_error_release (&e);
  json_decref (st);
  /* config.json's stop_signal was checked by run (sandbox.c, stop_signal). */
  int sig = SIGTERM;
  if (ohbox_state_read_json (dfd, "config.json", &st, &e) == 0)
    {
      json_int_t v = json_integer_value (json_object_get (st, "stop_signal"));
      if (v > 0 && v < NSIG)
        sig = (int) v;
    }
  ohbox_error_release (&e);
  json_decref (st);
  struct ohbox_cgroup *cg = NULL;
  if (with_cgroup (rt, id, &cg, &e) < 0)
    ohbox_error_release (&e);
  /* A frozen command cannot handle its stop signal: thaw it first. */
  if (paused && cg)
    {
      ohbox_cgroup_freeze (cg, false, &e);
      ohbox_error_release (&e);
    }
  syscall (SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
  struct pollfd p = { .fd = pidfd, .events = POLLIN };
  int r;
  do
    r = poll (&p, 1, timeout < 0 ? 0 : timeout * 1000);
  while (r < 0 && errno == EINTR);
  if (r == 0)
    {
      syscall (SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
      if (cg)
        {
          ohbox_cgroup_kill_all (cg, 5000, &e);
          ohbox_error_release (&e);
        }
    }
  if (cg)
    ohbox_cgroup_free (cg);
  /* Done when the monitor recorded the exit. */
  return ohbox_state_wait_monitor (dfd, NULL, err);
}

int
ohbox_sandbox_remove (struct ohbox_runtime *rt, const char *id, bool force, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  if (ohbox_state_monitor_alive (dfd))
    {
      if (!force)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%.12s` is running: stop it first, or use `ohbox rm -f`",
                            id);
      if (ohbox_sandbox_stop (rt, id, 0, err) < 0)
        return -1;
    }
  bool removed;
  if (ohbox_state_reconcile (rt, id, dfd, &removed, err) < 0)
    return -1;
  if (removed)
    return 0;
  struct stat st;
  if (fstatat (rt->dirfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return 0; /* removed by its monitor (--rm) */
  return ohbox_state_remove (rt, id, err);
}

int
ohbox_sandbox_pause (struct ohbox_runtime *rt, const char *id, bool pause, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  if (!ohbox_state_monitor_alive (dfd))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%.12s` is not running", id);
  struct ohbox_cgroup *cg = NULL;
  if (with_cgroup (rt, id, &cg, err) < 0)
    return -1;
  int r = ohbox_cgroup_freeze (cg, pause, err);
  ohbox_cgroup_free (cg);
  if (r < 0)
    return ohbox_error_prefix (err, "%s sandbox `%.12s`", pause ? "pause" : "unpause", id);
  json_t *f = json_pack ("{s:b}", "paused", pause);
  r = ohbox_state_update (dfd, f, err);
  json_decref (f);
  return r;
}

int
ohbox_sandbox_annotate (struct ohbox_runtime *rt, const char *id, json_t *set, ohbox_error_t *err)
{
  if (!json_is_object (set))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "annotations must be an object");
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  cleanup_close int lock = ohbox_lock_file (dfd, "lock", true, false, err);
  if (lock < 0)
    return -1;
  json_t *st = NULL;
  if (ohbox_state_read_json (dfd, "state.json", &st, err) < 0)
    return -1;
  json_t *notes = json_object_get (st, "annotations");
  if (!json_is_object (notes))
    {
      notes = json_object ();
      json_object_set_new (st, "annotations", notes);
    }
  const char *key;
  json_t *v;
  int r = 0;
  json_object_foreach (set, key, v)
  {
    if (json_is_null (v))
      json_object_del (notes, key);
    else if (json_is_string (v))
      json_object_set (notes, key, v);
    else
      r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "annotation `%s` is not a string", key);
  }
  cleanup_free char *text = r == 0 ? json_dumps (notes, JSON_COMPACT) : NULL;
  if (r == 0 && text && strlen (text) > OHBOX_SANDBOX_MAX_ANNOTATION_BYTES)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "the annotations are too long (at most %d bytes)",
                     OHBOX_SANDBOX_MAX_ANNOTATION_BYTES);
  /* Under "lock", as ohbox_state_update writes. */
  if (r == 0)
    r = ohbox_state_write_json (dfd, "state.json", st, err);
  json_decref (st);
  return r;
}

int
ohbox_sandbox_wait (struct ohbox_runtime *rt, const char *id, int *ret_exit_code, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  int lock_code;
  if (ohbox_state_wait_monitor (dfd, &lock_code, err) < 0)
    return -1;
  if (lock_code >= 0)
    {
      *ret_exit_code = lock_code;
      return 0;
    }
  bool removed;
  if (ohbox_state_reconcile (rt, id, dfd, &removed, err) < 0)
    return -1;
  json_t *st = NULL;
  ohbox_error_t e = NULL;
  int code = 255;
  if (ohbox_state_read_json (dfd, "state.json", &st, &e) == 0)
    {
      json_t *c = json_object_get (st, "exit_code");
      if (json_is_integer (c))
        code = (int) json_integer_value (c);
      json_decref (st);
    }
  ohbox_error_release (&e);
  *ret_exit_code = code;
  return 0;
}

static int
copy_fd (int in, int out, ohbox_error_t *err)
{
  char buf[16384];
  for (;;)
    {
      ssize_t n = read (in, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return ohbox_error_errno (err, "read the log");
      if (n == 0)
        return 0;
      if (ohbox_write_all (out, buf, (size_t) n) < 0)
        return ohbox_error_errno (err, "write the log");
    }
}

int
ohbox_sandbox_logs (struct ohbox_runtime *rt, const char *id, bool follow, int out_fd, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  cleanup_close int old = openat (dfd, "log.1", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (old >= 0 && copy_fd (old, out_fd, err) < 0)
    return -1;
  int fd = openat (dfd, "log", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat cur;
  for (;;)
    {
      if (fd >= 0 && copy_fd (fd, out_fd, err) < 0)
        {
          close (fd);
          return -1;
        }
      if (!follow)
        break;
      bool alive = ohbox_state_monitor_alive (dfd);
      /* Rotated: finish the old file (read above), then the new one. */
      struct stat now;
      if (fstatat (dfd, "log", &now, AT_SYMLINK_NOFOLLOW) == 0
          && (fd < 0 || (fstat (fd, &cur) == 0 && cur.st_ino != now.st_ino)))
        {
          if (fd >= 0)
            {
              copy_fd (fd, out_fd, err);
              close (fd);
            }
          fd = openat (dfd, "log", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
          continue;
        }
      if (!alive)
        {
          if (fd >= 0)
            copy_fd (fd, out_fd, err);
          break;
        }
      struct timespec ts = { 0, 50 * 1000 * 1000 };
      nanosleep (&ts, NULL);
    }
  if (fd >= 0)
    close (fd);
  return 0;
}

int
ohbox_sandbox_stats (struct ohbox_runtime *rt, const char *id, struct ohbox_cgroup_stats *ret, ohbox_error_t *err)
{
  struct ohbox_cgroup *cg = NULL;
  if (with_cgroup (rt, id, &cg, err) < 0)
    return ohbox_error_prefix (err, "stats of sandbox `%.12s`", id);
  int r = ohbox_cgroup_stats (cg, ret, err);
  ohbox_cgroup_free (cg);
  return r;
}
