/* tests/unit/cgroup-test.h: what the real-cgroup test programs
 * (test-cgroup.c, test-cgroup-lifecycle.c) share: a host set up with a
 * parent of their own (removed at the end by test_nothing_left), child
 * processes that wait for "go" until the parent has put them in a cgroup,
 * and checks of cgroup files. */
#ifndef OHBOX_TEST_CGROUP_TEST_H
#define OHBOX_TEST_CGROUP_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "unit.h"
#include "common/utils.h"

static struct ohbox_cgroup_host host;
static const char *no_real; /* why the real-cgroup tests skip, or NULL */

#define REAL()                                                                                                         \
  do                                                                                                                   \
    {                                                                                                                  \
      if (no_real)                                                                                                     \
        {                                                                                                              \
          unit_skip ("%s", no_real);                                                                                   \
          return;                                                                                                      \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

/* ------------------------------------------------------------ helpers */

static inline char *
rd (const char *dir, const char *file)
{
  char *s = NULL;
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *path = xasprintf ("%s/%s", dir, file);
  if (ohbox_read_file_at (AT_FDCWD, path, 1 << 20, &s, NULL, &err) < 0)
    return NULL;
  size_t n = strlen (s);
  while (n && s[n - 1] == '\n')
    s[--n] = '\0';
  return s;
}

static inline uint64_t
rd_key (const char *dir, const char *file, const char *key)
{
  cleanup_free char *s = rd (dir, file);
  size_t k = strlen (key);
  for (char *l = s; l && *l; l = strchr (l, '\n') ? strchr (l, '\n') + 1 : NULL)
    if (strncmp (l, key, k) == 0 && l[k] == ' ')
      return strtoull (l + k + 1, NULL, 10);
  return UINT64_MAX;
}

static inline int
wr (const char *dir, const char *file, const char *value)
{
  cleanup_free char *path = xasprintf ("%s/%s", dir, file);
  cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write (fd, value, strlen (value)) != (ssize_t) strlen (value))
    {
      printf ("# write `%s` to %s: %s\n", value, path, strerror (errno));
      return -1;
    }
  return 0;
}

static inline bool
exists (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0;
}

static inline bool
exists_in (const char *dir, const char *file)
{
  cleanup_free char *p = xasprintf ("%s/%s", dir, file);
  return exists (p);
}

static inline bool
listed (const char *dir, pid_t pid)
{
  cleanup_free char *s = rd (dir, "cgroup.procs");
  for (char *p = s; p && *p;)
    {
      char *end;
      long v = strtol (p, &end, 10);
      if (end == p)
        break;
      if (v == pid)
        return true;
      p = end + (*end == '\n');
    }
  return false;
}

/* Directory of sandbox ID in hierarchy I of the host. */
static inline char *
dir_of (const struct ohbox_cgroup_host *h, size_t i, const char *id)
{
  return xasprintf ("%s/%s", h->hier[i].parent, id);
}

static inline bool
in_all (const struct ohbox_cgroup_host *h, const char *id, pid_t pid)
{
  for (size_t i = 0; i < h->n_hier; i++)
    {
      cleanup_free char *d = dir_of (h, i, id);
      if (!listed (d, pid))
        return false;
    }
  return true;
}

static inline bool
gone_everywhere (const struct ohbox_cgroup_host *h, const char *id)
{
  for (size_t i = 0; i < h->n_hier; i++)
    {
      cleanup_free char *d = dir_of (h, i, id);
      if (exists (d))
        return false;
    }
  return true;
}

static inline void
cg_cleanup (struct ohbox_cgroup **cg)
{
  if (*cg)
    {
      cleanup_error ohbox_error_t err = NULL;
      ohbox_cgroup_destroy (*cg, &err);
      ohbox_cgroup_free (*cg);
    }
}
#define cleanup_cg __attribute__ ((cleanup (cg_cleanup)))

/* A child process that waits for "go" before running FN, so the parent can
 * move it into a cgroup first; FN reports back through REP. */
struct kid
{
  pid_t pid;
  int go, rep;
};

static inline void
kid_cleanup (struct kid *k)
{
  if (k->pid > 0)
    {
      kill (k->pid, SIGKILL);
      waitpid (k->pid, NULL, 0);
    }
  if (k->go >= 0)
    close (k->go);
  if (k->rep >= 0)
    close (k->rep);
}
#define cleanup_kid __attribute__ ((cleanup (kid_cleanup)))

static inline void
kid_start (struct kid *k, void (*fn) (int rep, void *arg), void *arg)
{
  int go[2], rep[2];
  if (pipe2 (go, O_CLOEXEC) < 0 || pipe2 (rep, O_CLOEXEC) < 0)
    abort ();
  fflush (stdout);
  k->pid = fork ();
  if (k->pid == 0)
    {
      close (go[1]);
      close (rep[0]);
      /* Whatever goes wrong, no test process outlives the test by long. */
      alarm (120);
      char c;
      if (read (go[0], &c, 1) != 1)
        _exit (3);
      fn (rep[1], arg);
      _exit (0);
    }
  close (go[0]);
  close (rep[1]);
  k->go = go[1];
  k->rep = rep[0];
}

static inline void
kid_go (struct kid *k)
{
  if (write (k->go, "g", 1) != 1)
    abort ();
}

/* kid_start, the kid moved into CG, kid_go: FN runs in CG.  -1 with *ERR
 * set when the kid cannot be moved (it then stays waiting). */
static inline int
kid_start_in (struct kid *k, struct ohbox_cgroup *cg, void (*fn) (int rep, void *arg), void *arg, ohbox_error_t *err)
{
  kid_start (k, fn, arg);
  if (ohbox_cgroup_attach (cg, k->pid, err) < 0)
    return -1;
  kid_go (k);
  return 0;
}

/* Reads N bytes the kid reported; false on EOF. */
static inline bool
kid_read (struct kid *k, void *buf, size_t n)
{
  return read (k->rep, buf, n) == (ssize_t) n;
}

static inline int
kid_wait (struct kid *k)
{
  int status = -1;
  waitpid (k->pid, &status, 0);
  k->pid = -1;
  return status;
}

/* A kid's last step (kid_start's FN): the N bytes of BUF to the parent
 * through REP, then it waits to be killed. */
static inline __attribute__ ((noreturn)) void
kid_report (int rep, const void *buf, size_t n)
{
  if (write (rep, buf, n) != (ssize_t) n)
    _exit (4);
  for (;;)
    pause ();
}

static inline void
fn_pause (int rep, void *arg)
{
  (void) arg;
  kid_report (rep, "r", 1);
}

static inline struct ohbox_cgroup *
make (const char *id, const struct ohbox_cgroup_limits *l)
{
  struct ohbox_cgroup *cg = NULL;
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_cgroup_create (&host, id, l, &cg, &err) < 0)
    {
      printf ("# create `%s`: %s\n", id, err->msg);
      return NULL;
    }
  return cg;
}

static inline const char *
mem_dir (const struct ohbox_cgroup *cg)
{
  return ohbox_cgroup_path (cg, OHBOX_CGROUP_MEMORY);
}

static inline bool
is_v2 (const struct ohbox_cgroup *cg, unsigned ctrl)
{
  const char *p = ohbox_cgroup_path (cg, ctrl), *v2 = ohbox_cgroup_path (cg, 0);
  return p && v2 && strcmp (p, v2) == 0;
}

/* ------------------------------------------------------------ real cgroups */

/* Root runs sandbox cgroups below its own cgroup on v1 and hybrid hosts
 * (so a test stays inside whatever accounting its caller set up) and at
 * the root on v2 (where a cgroup holding processes, like the caller's own,
 * cannot have controllers enabled below it). */
static inline void
setup_real (void)
{
  if (geteuid () != 0)
    {
      no_real = "needs root: cgroup directories belong to root";
      return;
    }
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_cgroup_host probe;
  if (ohbox_cgroup_detect (NULL, &probe, &err) < 0)
    {
      no_real = xasprintf ("cannot detect cgroups: %s", err->msg);
      return;
    }
  enum ohbox_cgroup_mode mode = probe.mode;
  ohbox_cgroup_host_release (&probe);
  if (mode == OHBOX_CGROUP_MODE_NONE)
    {
      no_real = "no cgroup filesystem mounted";
      return;
    }
  const char *env = getenv ("OHBOX_TEST_CGROUP_PARENT");
  cleanup_free char *parent = env ? xstrdup (env)
                                  : xasprintf ("%sohbox-test-%d", mode == OHBOX_CGROUP_MODE_V2 ? "/" : "",
                                               (int) getpid ());
  struct ohbox_cgroup_detect_opts o = { .parent = parent, .rootless = -1 };
  if (ohbox_cgroup_detect (&o, &host, &err) < 0)
    {
      no_real = xasprintf ("cannot detect cgroups: %s", err->msg);
      return;
    }
  struct ohbox_cgroup *cg = NULL;
  if (ohbox_cgroup_create (&host, "probe", NULL, &cg, &err) < 0)
    {
      no_real = xasprintf ("cannot create cgroups here: %s", err->msg);
      return;
    }
  ohbox_cgroup_destroy (cg, &err);
  ohbox_cgroup_free (cg);
  printf ("# sandbox cgroups under %s (and %zu other hierarchies)\n", host.hier[0].parent, host.n_hier - 1);
}

/* Skips the test when the host lacks one of CONTROLLERS. */
#define NEED(wanted)                                                                                                   \
  do                                                                                                                   \
    {                                                                                                                  \
      REAL ();                                                                                                         \
      if ((host.controllers & (wanted)) != (wanted))                                                                   \
        {                                                                                                              \
          unit_skip ("this host lacks a controller (has 0x%x, needs 0x%x)", host.controllers, (wanted));               \
          return;                                                                                                      \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

/* Creates with swap limited too, or without when the host has no swap
 * accounting (said on a comment line). */
static inline struct ohbox_cgroup *
make_mem (const char *id, struct ohbox_cgroup_limits *l)
{
  struct ohbox_cgroup *cg = NULL;
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_cgroup_create (&host, id, l, &cg, &err) == 0)
    return cg;
  if (err->kind == OHBOX_ERR_UNSUPPORTED && strstr (err->msg, "swap accounting") && l->memory_swap > 0)
    {
      printf ("# %s; going on without a swap limit\n", err->msg);
      l->memory_swap = 0;
      return make (id, l);
    }
  printf ("# create `%s`: %s\n", id, err->msg);
  return NULL;
}

struct fork_report
{
  int forked, err;
  pid_t pids[64];
};

/* In a kid: N children (at most 64) that run CHILD, their pids in R, up to
 * the first fork that fails (its errno in R->err). */
static inline void
fork_children (struct fork_report *r, int n, void (*child) (void))
{
  for (int i = 0; i < n; i++)
    {
      pid_t p = fork ();
      if (p == 0)
        {
          child ();
          _exit (0);
        }
      if (p < 0)
        {
          r->err = errno;
          return;
        }
      r->pids[r->forked++] = p;
    }
}

/* kid_report of R: the kid waits to be killed with what it forked. */
static inline __attribute__ ((noreturn)) void
send_fork_report (int rep, const struct fork_report *r)
{
  kid_report (rep, r, sizeof *r);
}

/* A process is gone when /proc has no live task for it (a zombie waiting
 * for its new parent to reap it counts as gone). */
static inline bool
not_running (pid_t pid)
{
  cleanup_free char *path = xasprintf ("/proc/%d/stat", (int) pid);
  cleanup_free char *s = NULL;
  cleanup_error ohbox_error_t err = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, 4096, &s, NULL, &err) < 0)
    return true;
  char *close_paren = strrchr (s, ')');
  return close_paren && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

static inline bool
all_gone (const pid_t *pids, int n)
{
  double deadline = ohbox_monotonic () + 5;
  for (int i = 0; i < n; i++)
    while (!not_running (pids[i]))
      {
        if (ohbox_monotonic () > deadline)
          return false;
        usleep (1000);
      }
  return true;
}

static inline size_t
count_subdirs (const char *dir)
{
  cleanup_dir DIR *d = opendir (dir);
  size_t n = 0;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    n += de->d_type == DT_DIR && strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0;
  return n;
}

/* After a failed test: kills what is left under DIR (naively, with kill(2):
 * this is the test's safety net, not the code under test) and removes the
 * directories, so that a failure leaves no process or cgroup behind. */
static inline void
sweep (const char *dir, int depth)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;
  while (d && depth < 16 && (de = readdir (d)) != NULL)
    if (de->d_type == DT_DIR && strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      {
        cleanup_free char *sub = xasprintf ("%s/%s", dir, de->d_name);
        sweep (sub, depth + 1);
      }
  /* Frozen processes would not die. */
  if (exists_in (dir, "freezer.state"))
    wr (dir, "freezer.state", "THAWED");
  if (exists_in (dir, "cgroup.freeze"))
    wr (dir, "cgroup.freeze", "0");
  for (int round = 0; round < 200; round++)
    {
      cleanup_free char *procs = rd (dir, "cgroup.procs");
      if (procs == NULL || *procs == '\0')
        break;
      for (char *p = procs; *p;)
        {
          char *end;
          long pid = strtol (p, &end, 10);
          if (end == p)
            break;
          if (pid > 1 && pid != getpid ())
            kill ((pid_t) pid, SIGKILL);
          p = end + (*end == '\n');
        }
      usleep (10000);
    }
  if (depth > 0)
    rmdir (dir);
}

/* Last: every directory the tests made is gone, and the parents go too
 * (relative parents nest one level below the process's own cgroup). */
static inline void
test_nothing_left (void)
{
  REAL ();
  size_t left = 0;
  const char *where = NULL;
  for (size_t i = host.n_hier; i-- > 0;)
    {
      size_t n = count_subdirs (host.hier[i].parent);
      if (n)
        {
          left += n;
          where = host.hier[i].parent;
          sweep (host.hier[i].parent, 0);
        }
    }
  bool removed = true;
  for (size_t i = host.n_hier; i-- > 0;)
    removed &= rmdir (host.hier[i].parent) == 0 || errno == ENOENT;
  CHECK (left == 0, "%zu leftover cgroups, e.g. under %s", left, where);
  CHECK (removed, "a parent could not be removed: %s", strerror (errno));
}

#endif
