/* state.c: the state directories of ohbox-runc's containers (runc.h). */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"

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
container_open (const char *id, struct container *c)
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
    c->status = faccessat (c->dirfd, "exec.fifo", F_OK, 0) == 0 ? "created" : "running";
  return 0;
}

void
remove_container (const char *dir)
{
  cleanup_free char *state = xasprintf ("%s/state.json", dir);
  cleanup_free char *fifo = xasprintf ("%s/exec.fifo", dir);
  cleanup_free char *config = xasprintf ("%s/" RUNC_CONFIG_COPY, dir);
  cleanup_free char *seccomp = xasprintf ("%s/" RUNC_SECCOMP_FILE, dir);
  unlink (state);
  unlink (fifo);
  unlink (config);
  unlink (seccomp);
  rmdir (dir);
}
