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

int
ohbox_sandbox_resolve (struct ohbox_runtime *rt, const char *what, char **ret_id, ohbox_error_t *err)
{
  struct stat st;
  if (ohbox_state_id_is_valid (what) && fstatat (rt->dirfd, what, &st, AT_SYMLINK_NOFOLLOW) == 0)
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
        if (ohbox_state_id_is_valid (de->d_name) && strncmp (de->d_name, what, len) == 0)
          {
            if (found)
              {
                free (found);
                return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` names several sandboxes: give more of the id", what);
              }
            found = xstrdup (de->d_name);
          }
    }
  if (found == NULL)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%s`; see `ohbox ps -a`", what);
  *ret_id = found;
  return 0;
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
ohbox_sandbox_inspect_info (struct ohbox_runtime *rt, const char *id, struct ohbox_sandbox_info *ret,
                            ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  bool removed;
  if (ohbox_state_reconcile (rt, id, dfd, &removed, err) < 0)
    return -1;
  if (removed)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%.12s`", id);
  ohbox_state_describe (dfd, id, ret);
  return 0;
}

int
ohbox_sandbox_inspect (struct ohbox_runtime *rt, const char *id, json_t **ret, ohbox_error_t *err)
{
  cleanup_sandbox_info struct ohbox_sandbox_info info = { 0 };
  if (ohbox_sandbox_inspect_info (rt, id, &info, err) < 0)
    return -1;
  *ret = ohbox_sandbox_info_to_json (&info);
  return 0;
}

int
ohbox_sandbox_list_info (struct ohbox_runtime *rt, bool all, struct ohbox_sandbox_info **ret, size_t *ret_n,
                         ohbox_error_t *err)
{
  cleanup_close int fd = openat (rt->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s`", rt->root);
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "opendir `%s`", rt->root);
  fd = -1;
  struct ohbox_sandbox_info *v = NULL;
  size_t n = 0, cap = 0;
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
      if (!ohbox_state_id_is_valid (de->d_name))
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
          ohbox_sandbox_infos_free (v, n);
          return -1;
        }
      if (removed)
        continue;
      struct ohbox_sandbox_info info;
      ohbox_state_describe (sfd, de->d_name, &info);
      if (!all && info.status == OHBOX_STATUS_EXITED)
        ohbox_sandbox_info_clear (&info);
      else
        {
          if (n == cap)
            v = xrealloc (v, (cap = cap ? 2 * cap : 8) * sizeof *v);
          v[n++] = info;
        }
    }
  *ret = v;
  *ret_n = n;
  return 0;
}

void
ohbox_sandbox_infos_free (struct ohbox_sandbox_info *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    ohbox_sandbox_info_clear (&v[i]);
  free (v);
}

int
ohbox_sandbox_list (struct ohbox_runtime *rt, bool all, json_t **ret, ohbox_error_t *err)
{
  struct ohbox_sandbox_info *v;
  size_t n;
  if (ohbox_sandbox_list_info (rt, all, &v, &n, err) < 0)
    return -1;
  json_t *arr = json_array ();
  for (size_t i = 0; i < n; i++)
    json_array_append_new (arr, ohbox_sandbox_info_to_json (&v[i]));
  ohbox_sandbox_infos_free (v, n);
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
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "signal sandbox `%.12s`", id);
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
  ohbox_error_t e = NULL;
  bool paused = false;
  struct ohbox_sandbox_record rec;
  if (ohbox_state_load_record (dfd, &rec, &e) == 0)
    {
      paused = rec.paused;
      ohbox_sandbox_record_clear (&rec);
    }
  ohbox_error_release (&e);
  /* config.json's stop_signal was checked by run (sandbox.c, stop_signal). */
  int sig = SIGTERM;
  struct ohbox_sandbox_config cfg;
  if (ohbox_state_load_config (dfd, &cfg, &e) == 0)
    {
      if (cfg.stop_signal > 0 && cfg.stop_signal < NSIG)
        sig = cfg.stop_signal;
      ohbox_sandbox_config_clear (&cfg);
    }
  ohbox_error_release (&e);
  struct ohbox_cgroup *cg = NULL;
  if (with_cgroup (rt, id, &cg, &e) < 0)
    ohbox_error_release (&e);
  /* A frozen command cannot handle its stop signal: thaw it first. */
  if (paused && cg)
    {
      ohbox_cgroup_freeze (cg, false, &e);
      ohbox_error_release (&e);
    }
  /* A stop signal the kernel refuses leaves nothing to wait for: go
   * straight to killing everything. */
  int r = 0;
  if (syscall (SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0 || errno == ESRCH)
    {
      struct pollfd p = { .fd = pidfd, .events = POLLIN };
      do
        r = poll (&p, 1, timeout < 0 ? 0 : timeout * 1000);
      while (r < 0 && errno == EINTR);
    }
  if (r == 0)
    {
      int refused = syscall (SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH ? errno : 0;
      if (cg)
        {
          ohbox_cgroup_kill_all (cg, 5000, &e);
          ohbox_error_release (&e);
        }
      /* Neither killed it: waiting for its exit would never end. */
      struct pollfd p = { .fd = pidfd, .events = POLLIN };
      if (refused && poll (&p, 1, 2000) == 1)
        refused = 0;
      if (refused)
        {
          if (cg)
            ohbox_cgroup_free (cg);
          errno = refused;
          return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "stop sandbox `%.12s`: SIGKILL", id);
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
  return ohbox_state_record_paused (dfd, pause, err);
}

int
ohbox_sandbox_annotate (struct ohbox_runtime *rt, const char *id, json_t *set, ohbox_error_t *err)
{
  if (!json_is_object (set))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "annotations must be an object");
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  return ohbox_state_record_annotations (dfd, set, OHBOX_SANDBOX_MAX_ANNOTATION_BYTES, err);
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
  ohbox_error_t e = NULL;
  int code = 255;
  struct ohbox_sandbox_record rec;
  if (ohbox_state_load_record (dfd, &rec, &e) == 0)
    {
      if (ohbox_sandbox_record_exited (&rec))
        code = rec.exit_code;
      ohbox_sandbox_record_clear (&rec);
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
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "read the log");
      if (n == 0)
        return 0;
      if (ohbox_write_all (out, buf, (size_t) n) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "write the log");
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
