/* state.c: the state directories of ohbox-runc's containers (runc.h). */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"
#include "oci/runtime_spec.h"
#include "sandbox/bundle.h"

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

bool
valid_id (const char *id)
{
  if (id == NULL || id[0] == '\0' || id[0] == '.' || strlen (id) > 1024)
    return false;
  return strspn (id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+") == strlen (id);
}

unsigned long long
start_time (pid_t pid)
{
  char path[64], buf[1024];
  snprintf (path, sizeof path, "/proc/%d/stat", pid);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read (fd, buf, sizeof buf - 1) : -1;
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *p = strrchr (buf, ')');
  unsigned long long t = 0;
  /* After the comm: state is field 3 (a zombie has ended), starttime field 22. */
  if (p == NULL || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X')
    return 0;
  if (sscanf (p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &t) != 1)
    return 0;
  return t;
}

void
container_close (struct container *c)
{
  if (c->dirfd >= 0)
    close (c->dirfd);
  json_decref (c->state);
  free (c->dir);
}

int
container_open (const char *id, struct container *c, int flags)
{
  memset (c, 0, sizeof *c);
  c->dirfd = -1;
  if (!valid_id (id))
    return fail ("invalid container id `%s`", id ? id : "");
  c->dir = xasprintf ("%s/%s", root_dir, id);
  c->dirfd = open (c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c->dirfd < 0)
    return fail ("container `%s` does not exist", id);
  if (flock (c->dirfd, LOCK_EX) < 0)
    return fail ("lock `%s`: %s", c->dir, strerror (errno));
  if (faccessat (c->dirfd, "state.json", F_OK, 0) < 0 && errno == ENOENT)
    {
      /* Unlocked without a state: its create was killed midway (create
       * holds the lock until the state is written). Its cgroup goes
       * (whatever its init started there with it). */
      cleanup_error ohbox_error_t err = NULL;
      if (runc_cgroup_remove (c->dirfd, &err) < 0)
        return fail ("container `%s`: remove what a killed create left: %s", id, err->msg);
      remove_container (c->dir);
      c->stale = true;
      c->status = "stopped";
      return (flags & OPEN_STALE_OK) ? 0 : fail ("container `%s` does not exist", id);
    }
  json_error_t je;
  cleanup_free char *path = xasprintf ("%s/state.json", c->dir);
  c->state = json_load_file (path, 0, &je);
  json_int_t pid = 0, st = 0;
  if (c->state == NULL || json_unpack (c->state, "{s:I, s:I}", "pid", &pid, "starttime", &st) < 0)
    return fail ("container `%s`: its state is unreadable (%s)", id, je.text);
  c->pid = (pid_t) pid;
  if (pid <= 0 || start_time (c->pid) != (unsigned long long) st)
    c->status = "stopped";
  else
    c->status = faccessat (c->dirfd, "exec.fifo", F_OK, 0) == 0        ? "created"
                : faccessat (c->dirfd, RUNC_PAUSED_FILE, F_OK, 0) == 0 ? "paused"
                                                                       : "running";
  return 0;
}

void
remove_container (const char *dir)
{
  cleanup_free char *state = xasprintf ("%s/state.json", dir);
  cleanup_free char *fifo = xasprintf ("%s/exec.fifo", dir);
  cleanup_free char *config = xasprintf ("%s/" RUNC_CONFIG_COPY, dir);
  cleanup_free char *seccomp = xasprintf ("%s/" RUNC_SECCOMP_FILE, dir);
  cleanup_free char *cgroup = xasprintf ("%s/" RUNC_CGROUP_FILE, dir);
  cleanup_free char *paused = xasprintf ("%s/" RUNC_PAUSED_FILE, dir);
  unlink (cgroup);
  unlink (paused);
  unlink (state);
  unlink (fifo);
  unlink (config);
  unlink (seccomp);
  rmdir (dir);
}

int
container_signal (const struct container *c, int sig)
{
  cleanup_close int pidfd = (int) syscall (SYS_pidfd_open, c->pid, 0);
  json_int_t st = 0;
  json_unpack (c->state, "{s:I}", "starttime", &st);
  /* The pidfd names a process for good: checked once open, no reuse. */
  if (pidfd < 0 || start_time (c->pid) != (unsigned long long) st)
    {
      errno = ESRCH;
      return -1;
    }
  return (int) syscall (SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static int
cmp_pid (const void *a, const void *b)
{
  pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
  return (x > y) - (x < y);
}

int
container_pids (const struct container *c, pid_t **ret, size_t *n)
{
  char path[64];
  struct stat want;
  *ret = NULL;
  *n = 0;
  snprintf (path, sizeof path, "/proc/%d/ns/pid", (int) c->pid);
  if (stat (path, &want) < 0)
    return -1;
  cleanup_dir DIR *d = opendir ("/proc");
  if (d == NULL)
    return -1;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    {
      char *end;
      long pid = strtol (e->d_name, &end, 10);
      struct stat st;
      if (*end || pid <= 0)
        continue;
      snprintf (path, sizeof path, "/proc/%ld/ns/pid", pid);
      /* A process that ended meanwhile is not one. */
      if (stat (path, &st) < 0 || st.st_ino != want.st_ino || st.st_dev != want.st_dev || start_time ((pid_t) pid) == 0)
        continue;
      *ret = xrealloc (*ret, (*n + 1) * sizeof **ret);
      (*ret)[(*n)++] = (pid_t) pid;
    }
  qsort (*ret, *n, sizeof **ret, cmp_pid);
  return 0;
}

char *
hook_state (const json_t *state, const char *status, pid_t pid)
{
  json_t *j = json_pack ("{s:s, s:O, s:s, s:i, s:O, s:O}", "ociVersion", OCI_RUNTIME_SPEC_VERSION, "id",
                         json_object_get (state, "id"), "status", status, "pid", (int) pid, "bundle",
                         json_object_get (state, "bundle"), "annotations", json_object_get (state, "annotations"));
  char *text = j ? json_dumps (j, JSON_COMPACT) : NULL;
  json_decref (j);
  return text ? text : xstrdup ("{}");
}

int
container_hooks (const struct container *c, enum ohbox_hook_stage stage, const char *status, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  struct oci_runtime_spec *config = NULL;
  if (ohbox_read_file_at (c->dirfd, RUNC_CONFIG_COPY, OCI_RUNTIME_MAX_CONFIG, &text, &len, err) < 0
      || oci_runtime_spec_parse (text, len, &config, err) < 0)
    return -1;
  struct ohbox_device_edits hooks = { 0 };
  ohbox_bundle_hooks (config, &hooks);
  oci_runtime_spec_free (config);
  cleanup_free char *state = hook_state (c->state, status, c->pid);
  int r = hooks.n_hooks ? ohbox_device_hooks_run (&hooks, stage, state, err) : 0;
  ohbox_device_edits_free (&hooks);
  return r;
}
