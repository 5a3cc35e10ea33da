/* systemd.c: --systemd-cgroup, the container's cgroup as a transient scope
 * unit of systemd's (as runc's and crun's systemd managers make it), over
 * systemd's D-Bus API with sd-bus (libsystemd).
 *
 * linux.cgroupsPath is "slice:prefix:name": the unit "prefix-name.scope"
 * in "slice" (empty: system.slice); an empty cgroupsPath is
 * "system.slice:ohbox-runc:ID". The scope is started with Delegate=yes:
 * its cgroup is then ours to write (cgroup.c applies linux.resources there
 * with the cgroupfs code, as crun does), and systemd also gets the limits
 * it knows as unit properties (MemoryMax, TasksMax, ...): systemd rewrites
 * a unit's cgroup attributes from its properties (on daemon-reload, for
 * one), and must not put back "max" over the container's limits.
 *
 * A scope needs a process to start with (systemd refuses one without
 * PIDs) and the container's init must be born in the scope's cgroup
 * (CLONE_INTO_CGROUP, its cgroup namespace rooted there): a holder process
 * is forked, put in the scope by StartTransientUnit, and killed once the
 * init is in (runc_systemd_release_holder). */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SLICE "system.slice"
#define DEFAULT_PREFIX "ohbox-runc"

/* Characters of a unit's name: systemd's (unit_name_is_valid) but `:` and
 * `\\` (its escapes), which the cgroup code takes in no name. */
static bool
unit_chars_ok (const char *s, size_t n)
{
  static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
  for (size_t i = 0; i < n; i++)
    if (strchr (ok, s[i]) == NULL || s[i] == '\0')
      return false;
  return true;
}

/* A slice's name as systemd takes it: "a-b.slice" is a.slice's child; no
 * empty part ("-a", "a--b", "a-"). */
static bool
slice_ok (const char *s)
{
  size_t n = strlen (s);
  if (n <= 6 || strcmp (s + n - 6, ".slice") != 0 || !unit_chars_ok (s, n))
    return false;
  return s[0] != '-' && strstr (s, "--") == NULL && s[n - 7] != '-';
}

/* The slice's directory: "a-b.slice" is /a.slice/a-b.slice (systemd's
 * slice_build_subslice), "system.slice" /system.slice. */
static char *
slice_dir (const char *slice)
{
  char *dir = xstrdup ("");
  size_t n = strlen (slice) - strlen (".slice");
  for (size_t i = 0; i <= n; i++)
    if (i == n || slice[i] == '-')
      {
        char *more = xasprintf ("%s/%.*s.slice", dir, (int) i, slice);
        free (dir);
        dir = more;
      }
  return dir;
}

int
runc_systemd_path (const char *cgroups_path, const char *id, char **parent, char **unit, ohbox_error_t *err)
{
  cleanup_free char *deflt = xasprintf (DEFAULT_SLICE ":" DEFAULT_PREFIX ":%s", id);
  const char *p = cgroups_path && *cgroups_path ? cgroups_path : deflt;
  const char *c1 = strchr (p, ':'), *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
  if (c2 == NULL || strchr (c2 + 1, ':') != NULL || c2[1] == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "config.json: linux.cgroupsPath: `%s` is not slice:prefix:name (--systemd-cgroup)", p);
  cleanup_free char *slice = c1 == p ? xstrdup (DEFAULT_SLICE) : xstrndup (p, (size_t) (c1 - p));
  if (!slice_ok (slice))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "config.json: linux.cgroupsPath: `%s`: `%s` is not a systemd slice (NAME.slice, `-` between "
                        "the names of its parents)",
                        p, slice);
  cleanup_free char *name = c2 == c1 + 1 ? xstrdup (c2 + 1)
                                         : xasprintf ("%.*s-%s", (int) (c2 - c1 - 1), c1 + 1, c2 + 1);
  size_t n = strlen (name);
  /* runc makes a slice of "slice:prefix:name.slice": ohbox-runc scopes only. */
  if (n > 6 && strcmp (name + n - 6, ".slice") == 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "config.json: linux.cgroupsPath: `%s`: a slice as the container's unit is not supported "
                        "(a scope is made: give a name without .slice)",
                        p);
  if (!unit_chars_ok (name, n) || !isalnum ((unsigned char) name[0]) || n + strlen (".scope") > 128)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "config.json: linux.cgroupsPath: `%s`: `%s.scope` is not a scope's name ohbox-runc makes "
                        "(a letter or digit, then letters, digits, `_.-`; at most 128 characters)",
                        p, name);
  *unit = xasprintf ("%s.scope", name);
  *parent = slice_dir (slice);
  return 0;
}

/* The cgroup PID is in, as systemd placed it: the cgroup v2 line of
 * /proc/PID/cgroup, else (cgroup v1) systemd's named hierarchy's. */
static int
cgroup_of (pid_t pid, char **ret, ohbox_error_t *err)
{
  cleanup_free char *path = xasprintf ("/proc/%d/cgroup", (int) pid);
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (AT_FDCWD, path, 64 * 1024, &text, &len, err) < 0)
    return -1;
  const char *v2 = NULL, *named = NULL;
  char *save = NULL;
  for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    if (strncmp (line, "0::", 3) == 0)
      v2 = line + 3;
    else if (strstr (line, ":name=systemd:"))
      named = strstr (line, ":name=systemd:") + strlen (":name=systemd:");
  if (v2 == NULL && named == NULL)
    return ohbox_error (err, OHBOX_ERR_CGROUP, 0, "%s: neither a cgroup v2 nor a name=systemd line", path);
  *ret = xstrdup (v2 ? v2 : named);
  return 0;
}

void
runc_systemd_release_holder (pid_t *holder)
{
  if (*holder <= 0)
    return;
  kill (*holder, SIGKILL);
  /* Reaped by its parent (create's process); the monitor, a sibling,
   * only kills it (ECHILD). */
  while (waitpid (*holder, NULL, 0) < 0 && errno == EINTR)
    ;
  *holder = 0;
}

#ifdef HAVE_SYSTEMD
#include <systemd/sd-bus.h>

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
/* How long a start or stop job may take (a qemu guest's systemd is slow). */
#define JOB_TIMEOUT_USEC (60ULL * 1000000)

static void
bus_unrefp (sd_bus **b)
{
  sd_bus_flush_close_unref (*b);
}
static void
message_unrefp (sd_bus_message **m)
{
  sd_bus_message_unref (*m);
}
#define cleanup_bus __attribute__ ((cleanup (bus_unrefp)))
#define cleanup_message __attribute__ ((cleanup (message_unrefp)))

static int
bus_fail (ohbox_error_t *err, int r, const sd_bus_error *e, const char *what)
{
  return ohbox_error (err, OHBOX_ERR_CGROUP, -r, "systemd: %s: %s", what,
                      e && sd_bus_error_is_set (e) ? e->message : strerror (-r));
}

/* systemd's manager: over the system bus, or (no dbus-daemon: a minimal
 * host, a guest booted for tests) over systemd's own private socket,
 * which root may use and which needs no bus daemon (systemctl does the
 * same). */
static int
bus_open (sd_bus **ret, ohbox_error_t *err)
{
  sd_bus *b = NULL;
  int r = sd_bus_open_system (&b);
  if (r >= 0)
    {
      *ret = b;
      return 0;
    }
  if ((r = sd_bus_new (&b)) < 0 || (r = sd_bus_set_address (b, "unix:path=/run/systemd/private")) < 0
      || (r = sd_bus_start (b)) < 0)
    {
      sd_bus_unref (b);
      return bus_fail (err, r, NULL, "connect to the system bus or /run/systemd/private");
    }
  *ret = b;
  return 0;
}

struct job_wait
{
  const char *path; /* the job's object path */
  char *result;     /* JobRemoved's: "done", "failed", ... */
};

static int
on_job_removed (sd_bus_message *m, void *data, sd_bus_error *e)
{
  struct job_wait *w = data;
  uint32_t id;
  const char *path, *unit, *result;
  if (sd_bus_message_read (m, "uoss", &id, &path, &unit, &result) >= 0 && w->path && strcmp (path, w->path) == 0)
    w->result = xstrdup (result);
  return 0;
}

/* Listens for JobRemoved (before the call that makes a job: its signal
 * may come with the reply). */
static int
job_listen (sd_bus *b, struct job_wait *w, sd_bus_slot **slot, ohbox_error_t *err)
{
  sd_bus_error e = SD_BUS_ERROR_NULL;
  int r = sd_bus_match_signal (b, slot, NULL, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed, w);
  /* The manager sends its signals to bus clients that subscribed. */
  if (r >= 0)
    r = sd_bus_call_method (b, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", &e, NULL, "");
  int rc = r < 0 ? bus_fail (err, r, &e, "subscribe to its jobs") : 0;
  sd_bus_error_free (&e);
  return rc;
}

/* Waits for the job REPLY names to end; an error unless it is "done". */
static int
job_wait (sd_bus *b, sd_bus_message *reply, struct job_wait *w, const char *what, ohbox_error_t *err)
{
  int r = sd_bus_message_read (reply, "o", &w->path);
  if (r < 0)
    return bus_fail (err, r, NULL, what);
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  uint64_t deadline = (uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000 + JOB_TIMEOUT_USEC;
  while (w->result == NULL)
    {
      r = sd_bus_process (b, NULL);
      if (r > 0)
        continue;
      clock_gettime (CLOCK_MONOTONIC, &now);
      uint64_t t = (uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000;
      if (r == 0 && t >= deadline)
        return ohbox_error (err, OHBOX_ERR_CGROUP, ETIMEDOUT, "systemd: %s: its job %s did not end within %llu s", what,
                            w->path, JOB_TIMEOUT_USEC / 1000000);
      if (r < 0 || (r = sd_bus_wait (b, deadline - t)) < 0)
        return bus_fail (err, r, NULL, what);
    }
  if (strcmp (w->result, "done") != 0)
    return ohbox_error (err, OHBOX_ERR_CGROUP, 0, "systemd: %s: its job ended `%s` (journalctl shows why)", what,
                        w->result);
  return 0;
}

/* Calls M (a method of the manager that makes a job: StartTransientUnit,
 * StopUnit) and waits until its job is done. GONE_OK: systemd having no
 * such unit is no error (stopping what is gone already). */
static int
call_job (sd_bus *b, sd_bus_message *m, const char *what, bool gone_ok, ohbox_error_t *err)
{
  cleanup_message sd_bus_message *reply = NULL;
  sd_bus_error e = SD_BUS_ERROR_NULL;
  struct job_wait w = { 0 };
  sd_bus_slot *slot = NULL;
  int r, rc;
  if (job_listen (b, &w, &slot, err) < 0)
    rc = -1;
  else if ((r = sd_bus_call (b, m, JOB_TIMEOUT_USEC, &e, &reply)) >= 0)
    rc = job_wait (b, reply, &w, what, err);
  else
    rc = gone_ok && sd_bus_error_has_name (&e, "org.freedesktop.systemd1.NoSuchUnit") ? 0 : bus_fail (err, r, &e, what);
  sd_bus_slot_unref (slot);
  sd_bus_error_free (&e);
  free (w.result);
  return rc;
}

/* The properties of L systemd knows, for the unit it makes (or updates):
 * limits it would otherwise reset to its defaults over the cgroup files.
 * The rest (hugetlb, io, unified, swap on v1) is written to the files
 * only (cgroup.c). */
static int
append_limits (sd_bus_message *m, const struct ohbox_cgroup_limits *l, bool v2)
{
  int r = 0;
  if (l->memory)
    r = sd_bus_message_append (m, "(sv)", "MemoryMax", "t", l->memory < 0 ? UINT64_MAX : (uint64_t) l->memory);
  /* OCI's swap is memory + swap; v2's MemorySwapMax swap alone. */
  if (r >= 0 && v2 && l->memory_swap && (l->memory_swap < 0 || l->memory > 0))
    r = sd_bus_message_append (m, "(sv)", "MemorySwapMax", "t",
                               l->memory_swap < 0 ? UINT64_MAX : (uint64_t) (l->memory_swap - l->memory));
  if (r >= 0 && l->pids)
    r = sd_bus_message_append (m, "(sv)", "TasksMax", "t", l->pids < 0 ? UINT64_MAX : (uint64_t) l->pids);
  if (r >= 0 && (l->cpu_weight || l->cpu_shares))
    r = sd_bus_message_append (m, "(sv)", "CPUWeight", "t",
                               l->cpu_weight ? l->cpu_weight : ohbox_cgroup_shares_to_weight (l->cpu_shares));
  uint64_t period = l->cpu_period ? l->cpu_period : 100000;
  if (r >= 0 && l->cpu_period)
    r = sd_bus_message_append (m, "(sv)", "CPUQuotaPeriodUSec", "t", period);
  /* systemd's quota is per second of time. */
  if (r >= 0 && l->cpu_quota)
    r = sd_bus_message_append (m, "(sv)", "CPUQuotaPerSecUSec", "t",
                               l->cpu_quota < 0 ? UINT64_MAX : (uint64_t) l->cpu_quota * 1000000 / period);
  return r;
}

/* Forks the process that starts the scope: it waits to be killed (or
 * for create's process to die). */
static int
fork_holder (pid_t *ret, ohbox_error_t *err)
{
  pid_t parent = getpid ();
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    return ohbox_error_errno (err, "fork");
  if (pid == 0)
    {
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      if (getppid () != parent)
        _exit (0);
      for (;;)
        pause ();
    }
  *ret = pid;
  return 0;
}

static int
start_scope (sd_bus *b, const char *slice, const char *unit, const char *id, pid_t holder,
             const struct ohbox_cgroup_limits *l, bool v2, ohbox_error_t *err)
{
  cleanup_message sd_bus_message *m = NULL;
  cleanup_free char *desc = xasprintf ("ohbox-runc container %s", id);
  cleanup_free char *what = xasprintf ("start the scope %s", unit);
  int r = sd_bus_message_new_method_call (b, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
  if (r >= 0)
    r = sd_bus_message_append (m, "ss", unit, "fail");
  if (r >= 0)
    r = sd_bus_message_open_container (m, 'a', "(sv)");
  /* No ordering against shutdown or sysinit (as runc's): the engine
   * stops containers. A failed scope is collected as a stopped one. */
  if (r >= 0)
    r = sd_bus_message_append (m, "(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", desc, "Slice", "s", slice, "Delegate",
                               "b", 1, "DefaultDependencies", "b", 0, "CollectMode", "s", "inactive-or-failed", "PIDs",
                               "au", 1, (uint32_t) holder);
  if (r >= 0)
    r = append_limits (m, l, v2);
  if (r >= 0)
    r = sd_bus_message_close_container (m);
  if (r >= 0)
    r = sd_bus_message_append (m, "a(sa(sv))", 0);
  return r < 0 ? bus_fail (err, r, NULL, what) : call_job (b, m, what, false, err);
}

int
runc_systemd_start (const char *parent, const char *unit, const char *id, const struct ohbox_cgroup_limits *l, bool v2,
                    pid_t *holder, char **cgroup, ohbox_error_t *err)
{
  cleanup_bus sd_bus *b = NULL;
  const char *slice = strrchr (parent, '/') + 1;
  if (bus_open (&b, err) < 0 || fork_holder (holder, err) < 0)
    return -1;
  if (start_scope (b, slice, unit, id, *holder, l, v2, err) < 0 || cgroup_of (*holder, cgroup, err) < 0)
    {
      runc_systemd_release_holder (holder);
      return -1;
    }
  return 0;
}

int
runc_systemd_stop (const char *unit, ohbox_error_t *err)
{
  cleanup_bus sd_bus *b = NULL;
  cleanup_message sd_bus_message *m = NULL;
  cleanup_free char *what = xasprintf ("stop the scope %s", unit);
  if (bus_open (&b, err) < 0)
    return -1;
  int r = sd_bus_message_new_method_call (b, &m, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit");
  if (r >= 0)
    r = sd_bus_message_append (m, "ss", unit, "replace");
  /* Gone already is fine: systemd stops a scope whose processes are all
   * gone, and collects it. */
  return r < 0 ? bus_fail (err, r, NULL, what) : call_job (b, m, what, true, err);
}

int
runc_systemd_update (const char *unit, const struct ohbox_cgroup_limits *l, bool v2, ohbox_error_t *err)
{
  cleanup_bus sd_bus *b = NULL;
  cleanup_message sd_bus_message *m = NULL;
  sd_bus_error e = SD_BUS_ERROR_NULL;
  cleanup_free char *what = xasprintf ("set the limits of %s", unit);
  if (bus_open (&b, err) < 0)
    return -1;
  int r = sd_bus_message_new_method_call (b, &m, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
  /* runtime: for this boot, as the unit itself is. */
  if (r >= 0)
    r = sd_bus_message_append (m, "sb", unit, 1);
  if (r >= 0)
    r = sd_bus_message_open_container (m, 'a', "(sv)");
  if (r >= 0)
    r = append_limits (m, l, v2);
  if (r >= 0)
    r = sd_bus_message_close_container (m);
  if (r >= 0)
    r = sd_bus_call (b, m, JOB_TIMEOUT_USEC, &e, NULL);
  int rc = r < 0 ? bus_fail (err, r, &e, what) : 0;
  sd_bus_error_free (&e);
  return rc;
}

#else /* !HAVE_SYSTEMD */

static int
no_sd_bus (ohbox_error_t *err)
{
  return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "%s", RUNC_NO_SD_BUS);
}

int
runc_systemd_start (const char *parent, const char *unit, const char *id, const struct ohbox_cgroup_limits *l, bool v2,
                    pid_t *holder, char **cgroup, ohbox_error_t *err)
{
  return no_sd_bus (err);
}

int
runc_systemd_stop (const char *unit, ohbox_error_t *err)
{
  return no_sd_bus (err);
}

int
runc_systemd_update (const char *unit, const struct ohbox_cgroup_limits *l, bool v2, ohbox_error_t *err)
{
  return no_sd_bus (err);
}
#endif
