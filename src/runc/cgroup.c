/* cgroup.c: the container's cgroup (linux.cgroupsPath, linux.resources)
 * through the library's cgroup code, as `ohbox run`'s: made by create (the
 * init starts in it), joined by exec, frozen by pause, destroyed by
 * delete. Its place is in the state directory's cgroup.json ({"parent",
 * "name"}), written before the cgroup is made: a create killed midway
 * leaves nothing the next delete or list does not find. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"
#include "oci/runtime_spec.h"
#include "sandbox/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
runc_cgroup_release (struct runc_cgroup *rc)
{
  if (rc->cg)
    ohbox_cgroup_free (rc->cg);
  if (rc->detected)
    ohbox_cgroup_host_release (&rc->host);
  runc_systemd_release_holder (&rc->holder);
  free (rc->parent);
  free (rc->name);
  free (rc->unit);
  memset (rc, 0, sizeof *rc);
}

static int
detect (struct runc_cgroup *rc, ohbox_error_t *err)
{
  /* Root of the host gets its cgroups (and the device cgroup) even when it
   * asked for --rootless true: nothing it can do needs them skipped. */
  struct ohbox_cgroup_detect_opts o = { .parent = rc->parent, .rootless = rootless && !host_root };
  if (ohbox_cgroup_detect (&o, &rc->host, err) < 0)
    return -1;
  rc->detected = true;
  return 0;
}

/* The first of linux.resources' limits L carries, by the config's name. */
static const char *
first_limit (const struct ohbox_cgroup_limits *l)
{
  if (l->memory)
    return "linux.resources.memory.limit";
  if (l->memory_swap)
    return "linux.resources.memory.swap";
  if (l->cpu_quota || l->cpu_period)
    return "linux.resources.cpu.quota";
  if (l->cpu_shares || l->cpu_weight)
    return "linux.resources.cpu.shares";
  if (l->pids)
    return "linux.resources.pids.limit";
  if (l->n_hugetlb)
    return "linux.resources.hugepageLimits";
  if (l->blkio_weight || l->n_blkio)
    return "linux.resources.blockIO";
  return "linux.resources.unified";
}

/* Rootless where the cgroup is not delegated (no cgroup v2 subtree of the
 * user's): a limit asked for is refused by name, never dropped; a bare
 * cgroupsPath is skipped (no cgroup at all, as runc's rootless). */
static int
check_rootless_limits (const struct runc_cgroup *rc, const struct ohbox_bundle *b, ohbox_error_t *err)
{
  if (!rc->host.disabled)
    return 0;
  if (ohbox_cgroup_limits_any (&b->limits))
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "config.json: %s: cannot be applied rootless: %s",
                        first_limit (&b->limits), rc->host.warning ? rc->host.warning : "no delegated cgroup");
  debug ("rootless: no cgroup for the container (%s)", rc->host.warning ? rc->host.warning : "not delegated");
  return 0;
}

/* cgroup.json: where RC's cgroup is, and its scope (--systemd-cgroup). */
static int
write_cgroup_file (int dirfd, const struct runc_cgroup *rc, ohbox_error_t *err)
{
  json_t *j = json_pack ("{s:s, s:s}", "parent", rc->parent, "name", rc->name);
  if (rc->unit)
    json_object_set_new (j, "unit", json_string (rc->unit));
  cleanup_free char *text = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  return ohbox_write_file_atomic (dirfd, RUNC_CGROUP_FILE, text, strlen (text), 0600, err);
}

/* --systemd-cgroup: starts the scope (its limits as systemd's properties
 * too) and takes its cgroup for the container's, as systemd made it
 * (delegated to us: the cgroupfs code writes the limits there and makes
 * the directories of the v1 controllers systemd does not manage).
 * cgroup.json names the scope once it is ours: a scope of the same name
 * (another --root's container) is not one a failed create may stop; a
 * create killed before cgroup.json leaves a scope whose only process,
 * the holder, dies with it (systemd then stops and collects it). */
static int
start_scope (struct ohbox_bundle *b, const char *id, int dirfd, struct runc_cgroup *rc, ohbox_error_t *err)
{
  cleanup_free char *made = NULL;
  if (runc_systemd_start (rc->parent, rc->unit, id, &b->limits, rc->host.mode == OHBOX_CGROUP_MODE_V2, &rc->holder,
                          &made, err)
      < 0)
    return -1;
  cleanup_free char *expected = xasprintf ("%s/%s", rc->parent, rc->name);
  if (strcmp (made, expected) != 0)
    {
      /* Elsewhere than the slice's own path (a cgroup namespace's view):
       * where systemd put it is where it is. */
      char *slash = strrchr (made, '/');
      if (slash == NULL || strcmp (slash + 1, rc->unit) != 0)
        return ohbox_error (err, OHBOX_ERR_CGROUP, 0, "systemd put the scope %s in the cgroup `%s`", rc->unit, made);
      free (rc->parent);
      rc->parent = xstrndup (made, (size_t) (slash - made));
      ohbox_cgroup_host_release (&rc->host);
      rc->detected = false;
      if (detect (rc, err) < 0)
        return -1;
    }
  if (write_cgroup_file (dirfd, rc, err) < 0)
    return -1;
  return ohbox_cgroup_adopt (&rc->host, rc->name, &b->limits, &rc->cg, err);
}

int
runc_cgroup_create (struct ohbox_bundle *b, const char *id, int dirfd, struct runc_cgroup *rc, ohbox_error_t *err)
{
  memset (rc, 0, sizeof *rc);
  const char *path = b->config->linux_config->cgroups_path;
  if (systemd_cgroup ? runc_systemd_path (path, id, &rc->parent, &rc->unit, err)
                     : ohbox_bundle_cgroup_path (path, id, &rc->parent, &rc->name, err))
    return -1;
  if (rc->unit)
    rc->name = xstrdup (rc->unit);
  if (detect (rc, err) < 0 || check_rootless_limits (rc, b, err) < 0)
    return -1;
  /* cgroupfs: cgroup.json before the cgroup (whatever a killed create
   * made, the next command finds); a scope: once it is ours (start_scope). */
  int r = rc->unit ? start_scope (b, id, dirfd, rc, err) : write_cgroup_file (dirfd, rc, err);
  if (r == 0 && !rc->unit)
    r = ohbox_cgroup_create (&rc->host, rc->name, &b->limits, &rc->cg, err);
  /* The devices the container may open: its /dev's and linux.devices
   * (as `ohbox run`, wherever the host's privileges allow it: the device
   * lists and programs need them; root's `--rootless true` keeps it). */
  if (r < 0 || (host_root && ohbox_cgroup_set_devices (rc->cg, b->rules, b->n_rules, err) < 0))
    return -1;
  b->spec.cgroup = rc->cg;
  return 0;
}

/* Reads the container's cgroup.json into RC (its place, its unit). */
static int
read_cgroup_file (int dirfd, struct runc_cgroup *rc, ohbox_error_t *err)
{
  memset (rc, 0, sizeof *rc);
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (dirfd, RUNC_CGROUP_FILE, 64 * 1024, &text, &len, err) < 0)
    return -1;
  json_t *j = json_loadb (text, len, 0, NULL);
  const char *parent = NULL, *name = NULL, *unit = NULL;
  if (j == NULL || json_unpack (j, "{s:s, s:s, s?s}", "parent", &parent, "name", &name, "unit", &unit) < 0)
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "the container's " RUNC_CGROUP_FILE " is unreadable");
    }
  rc->parent = xstrdup (parent);
  rc->name = xstrdup (name);
  rc->unit = unit ? xstrdup (unit) : NULL;
  json_decref (j);
  return 0;
}

int
runc_cgroup_open (int dirfd, struct runc_cgroup *rc, ohbox_error_t *err)
{
  if (read_cgroup_file (dirfd, rc, err) < 0 || detect (rc, err) < 0)
    return -1;
  return ohbox_cgroup_open (&rc->host, rc->name, &rc->cg, err);
}

int
runc_cgroup_remove (int dirfd, ohbox_error_t *err)
{
  struct runc_cgroup rc;
  int r = runc_cgroup_open (dirfd, &rc, err);
  if (r < 0 && (*err)->kind == OHBOX_ERR_NOT_FOUND)
    {
      /* None (never made, or removed already). */
      ohbox_error_release (err);
      r = 0;
    }
  else if (r == 0)
    r = ohbox_cgroup_destroy (rc.cg, err);
  /* Its processes killed: the scope goes (systemd may have stopped it
   * already, once it was empty). */
  if (r == 0 && rc.unit)
    r = runc_systemd_stop (rc.unit, err);
  runc_cgroup_release (&rc);
  return r;
}

/* pause and resume: the cgroup freezer (v1 freezer.state, v2
 * cgroup.freeze); a paused container has RUNC_PAUSED_FILE in its state. */
int
cmd_freeze (int argc, char **argv)
{
  bool pause = strcmp (argv[0], "pause") == 0;
  const char *cmd = pause ? "pause" : "resume";
  if (argc != 2)
    return fail_usage ();
  struct container c;
  int rc = container_open (argv[1], &c, 0);
  if (rc == 0 && strcmp (c.status, pause ? "running" : "paused") != 0)
    rc = fail ("%s: container `%s` is %s, not %s", cmd, argv[1], c.status, pause ? "running" : "paused");
  cleanup_error ohbox_error_t err = NULL;
  struct runc_cgroup cgroup = { 0 };
  if (rc == 0
      && (runc_cgroup_open (c.dirfd, &cgroup, &err) < 0 || ohbox_cgroup_freeze (cgroup.cg, pause, &err) < 0
          || (pause ? ohbox_write_file_atomic (c.dirfd, RUNC_PAUSED_FILE, "", 0, 0600, &err)
              : unlinkat (c.dirfd, RUNC_PAUSED_FILE, 0) < 0 && errno != ENOENT
                ? ohbox_error_sys (&err, OHBOX_ERR_GENERIC, "remove `%s`", RUNC_PAUSED_FILE)
                : 0)
               < 0))
    rc = fail ("%s `%s`: %s", cmd, argv[1], err->msg);
  runc_cgroup_release (&cgroup);
  container_close (&c);
  return rc;
}

int
runc_cgroup_thaw (int dirfd, ohbox_error_t *err)
{
  if (faccessat (dirfd, RUNC_PAUSED_FILE, F_OK, 0) < 0)
    return 0;
  struct runc_cgroup cgroup;
  int r = runc_cgroup_open (dirfd, &cgroup, err);
  if (r == 0)
    r = ohbox_cgroup_freeze (cgroup.cg, false, err);
  runc_cgroup_release (&cgroup);
  if (r == 0)
    unlinkat (dirfd, RUNC_PAUSED_FILE, 0);
  return r;
}

/* The limits of --resources FILE|- (an OCI linux.resources object) into
 * L, which borrows from R (unified's strings) until R is cleared. */
static int
resources_limits (const char *file, struct oci_resources *r, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (AT_FDCWD, strcmp (file, "-") == 0 ? "/dev/stdin" : file, OCI_RUNTIME_MAX_CONFIG, &text, &len,
                          err)
      < 0)
    return -1;
  int rc = oci_runtime_resources_parse (text, len, file, r, err);
  if (rc == 0)
    rc = ohbox_bundle_limits (r, l, err);
  if (rc == 0 && r->n_devices)
    rc = ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "%s: devices: updating device rules is not supported", file);
  return rc;
}

/* The single-value flags over L; -1 lifts the limit of --memory,
 * --memory-swap, --cpu-quota and --pids-limit (as runc's). */
static int
flag_limit (int ch, const char *value, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  static const char *const names[] = { ['m'] = "memory",     ['s'] = "memory-swap", ['c'] = "cpu-shares",
                                       ['P'] = "cpu-period", ['p'] = "pids-limit",  ['q'] = "cpu-quota" };
  int64_t *unlimited = ch == 'm' ? &l->memory : ch == 'q' ? &l->cpu_quota : ch == 'p' ? &l->pids : NULL;
  if (unlimited && strcmp (value, "-1") == 0)
    {
      *unlimited = -1;
      return 0;
    }
  if (ch == 'q' || ch == 'p')
    {
      char *end;
      errno = 0;
      long long n = strtoll (value, &end, 10);
      if (*value == '\0' || *end || errno || n <= 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--%s: `%s` is not a positive number (or -1 for unlimited)",
                            names[ch], value);
      if (ch == 'q')
        {
          l->cpu_quota = n;
          return 0;
        }
    }
  return ohbox_cgroup_limits_set_option (l, names[ch], value, err);
}

int
cmd_update (int argc, char **argv)
{
  static const struct option opts[] = {
    { "resources", required_argument, NULL, 'r' },
    { "memory", required_argument, NULL, 'm' },
    { "memory-swap", required_argument, NULL, 's' },
    { "cpu-shares", required_argument, NULL, 'c' },
    { "cpu-quota", required_argument, NULL, 'q' },
    { "cpu-period", required_argument, NULL, 'P' },
    { "pids-limit", required_argument, NULL, 'p' },
    { "memory-reservation", required_argument, NULL, 'X' },
    { "kernel-memory", required_argument, NULL, 'X' },
    { "kernel-memory-tcp", required_argument, NULL, 'X' },
    { "cpuset-cpus", required_argument, NULL, 'X' },
    { "cpuset-mems", required_argument, NULL, 'X' },
    { "cpu-rt-period", required_argument, NULL, 'X' },
    { "cpu-rt-runtime", required_argument, NULL, 'X' },
    { "blkio-weight", required_argument, NULL, 'X' },
    { "l3-cache-schema", required_argument, NULL, 'X' },
    { "mem-bw-schema", required_argument, NULL, 'X' },
    { "cpu-idle", required_argument, NULL, 'X' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_cgroup_limits l = { 0 }, flags = { 0 };
  const char *resources = NULL;
  int ch, idx = 0;
  while ((ch = runc_next_option (argc, argv, "r:", opts, 1, 1, &idx)) >= 0)
    if (ch == 'r')
      resources = optarg;
    else if (ch == 'X')
      return fail ("update --%s: not supported by ohbox-runc", opts[idx].name);
    else if (flag_limit (ch, optarg, &flags, &err) < 0)
      return fail_err (&err);
  if (ch == RUNC_OPT_FAILED)
    return 1;
  struct oci_resources r;
  memset (&r, 0, sizeof r);
  if (resources && resources_limits (resources, &r, &l, &err) < 0)
    {
      oci_resources_clear (&r);
      return fail_err (&err);
    }
  /* The flags go over the file's values. */
  l.memory = flags.memory ? flags.memory : l.memory;
  l.memory_swap = flags.memory_swap ? flags.memory_swap : l.memory_swap;
  l.cpu_shares = flags.cpu_shares ? flags.cpu_shares : l.cpu_shares;
  l.cpu_quota = flags.cpu_quota ? flags.cpu_quota : l.cpu_quota;
  l.cpu_period = flags.cpu_period ? flags.cpu_period : l.cpu_period;
  l.pids = flags.pids ? flags.pids : l.pids;
  struct container c;
  if (!ohbox_cgroup_limits_any (&l))
    {
      oci_resources_clear (&r);
      return fail ("update: nothing to update: give --resources or a limit");
    }
  int rc = container_open (argv[optind], &c, 0);
  if (rc == 0 && strcmp (c.status, "stopped") == 0)
    rc = fail ("update: container `%s` is stopped", argv[optind]);
  struct runc_cgroup cgroup = { 0 };
  if (rc == 0
      && (runc_cgroup_open (c.dirfd, &cgroup, &err) < 0
          || (cgroup.unit && runc_systemd_update (cgroup.unit, &l, cgroup.host.mode == OHBOX_CGROUP_MODE_V2, &err) < 0)
          || ohbox_cgroup_update (&cgroup.host, cgroup.cg, &l, &err) < 0))
    rc = fail ("update `%s`: %s", argv[optind], err->msg);
  runc_cgroup_release (&cgroup);
  container_close (&c);
  oci_resources_clear (&r);
  return rc;
}

/* One stats event, as runc's events prints it (its types' names). */
static json_t *
stats_event (const char *id, const struct ohbox_cgroup_stats *s)
{
  json_t *data = json_object ();
  if (s->valid & OHBOX_CGROUP_CPU)
    json_object_set_new (data, "cpu",
                         json_pack ("{s:{s:I, s:I, s:I}, s:{s:I}}", "usage", "total",
                                    (json_int_t) (s->cpu_usage_usec * 1000), "user",
                                    (json_int_t) (s->cpu_user_usec * 1000), "kernel",
                                    (json_int_t) (s->cpu_system_usec * 1000), "throttling", "throttledPeriods",
                                    (json_int_t) s->cpu_nr_throttled));
  if (s->valid & OHBOX_CGROUP_MEMORY)
    json_object_set_new (data, "memory",
                         json_pack ("{s:{s:I, s:I, s:I}, s:{s:I}, s:I}", "usage", "usage",
                                    (json_int_t) s->memory_current, "limit",
                                    (json_int_t) (s->memory_max == UINT64_MAX ? 0 : s->memory_max), "failcnt",
                                    (json_int_t) s->memory_max_events, "swap", "limit",
                                    (json_int_t) (s->memory_swap_max == UINT64_MAX ? 0 : s->memory_swap_max),
                                    "oomKills", (json_int_t) s->oom_kills));
  if (s->valid & OHBOX_CGROUP_PIDS)
    json_object_set_new (data, "pids",
                         json_pack ("{s:I, s:I}", "current", (json_int_t) s->pids_current, "limit",
                                    (json_int_t) (s->pids_max == UINT64_MAX ? 0 : s->pids_max)));
  return json_pack ("{s:s, s:s, s:o}", "type", "stats", "id", id, "data", data);
}

/* "5s", "500ms", "1m" or seconds ("2.5") into *RET seconds. */
static int
parse_interval (const char *s, double *ret)
{
  char *end;
  double v = strtod (s, &end);
  double unit = strcmp (end, "ms") == 0                    ? 0.001
                : strcmp (end, "m") == 0                   ? 60
                : (*end == '\0' || strcmp (end, "s") == 0) ? 1
                                                           : 0;
  if (end == s || unit == 0 || !(v > 0) || v * unit > 86400)
    return -1;
  *ret = v * unit;
  return 0;
}

/* events: the container's stats as JSON lines, once (--stats) or every
 * --interval seconds (default 5) until it stops. */
int
cmd_events (int argc, char **argv)
{
  static const struct option opts[] = { { "stats", no_argument, NULL, 's' },
                                        { "interval", required_argument, NULL, 'i' },
                                        { NULL, 0, NULL, 0 } };
  bool once = false;
  double interval = 5;
  int ch;
  while ((ch = runc_next_option (argc, argv, "", opts, 1, 1, NULL)) >= 0)
    if (ch == 's')
      once = true;
    else if (parse_interval (optarg, &interval) < 0)
      return fail_usage ();
  if (ch == RUNC_OPT_FAILED)
    return 1;
  const char *id = argv[optind];
  for (;;)
    {
      struct container c;
      int rc = container_open (id, &c, 0);
      cleanup_error ohbox_error_t err = NULL;
      struct runc_cgroup cgroup = { 0 };
      struct ohbox_cgroup_stats st;
      bool stopped = rc == 0 && strcmp (c.status, "stopped") == 0;
      if (rc == 0 && stopped && once)
        rc = fail ("events: container `%s` is stopped", id);
      if (rc == 0 && !stopped
          && (runc_cgroup_open (c.dirfd, &cgroup, &err) < 0 || ohbox_cgroup_stats (cgroup.cg, &st, &err) < 0))
        rc = fail ("events `%s`: %s", id, err->msg);
      runc_cgroup_release (&cgroup);
      container_close (&c);
      if (rc != 0 || stopped)
        return rc;
      json_t *ev = stats_event (id, &st);
      char *text = json_dumps (ev, JSON_COMPACT);
      json_decref (ev);
      printf ("%s\n", text ? text : "{}");
      free (text);
      if (once || fflush (stdout) != 0)
        return 0;
      struct timespec ts = { (time_t) interval, (long) ((interval - (time_t) interval) * 1e9) };
      nanosleep (&ts, NULL);
    }
}
