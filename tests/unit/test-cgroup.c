/* test-cgroup.c: cgroup limits for real, as root, on whatever this host is
 * (cgroup v1 controllers on this project's hybrid machines; pure v2 in the
 * qemu guest of tests/integration/cgroup2-guest.sh): the limits land in the
 * files, a process allocating past the memory limit is OOM-killed, a fork
 * past the pids limit fails with EAGAIN, the CPU quota throttles, a frozen
 * process does not run, stats add up, and a limit whose controller is
 * missing is an error.  Lifecycle (attach, kill, destroy, reconcile,
 * rootless) is in test-cgroup-lifecycle.c. */
#include "config.h"

#include <inttypes.h>

#include "cgroup-test.h"

/* The mode detected on this machine, against what /proc/self/mountinfo
 * says read here independently. */
static void
test_detect_real (void)
{
  cleanup_free char *mi = NULL;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_read_file_at (AT_FDCWD, "/proc/self/mountinfo", 1 << 24, &mi, NULL, &err) == 0);
  bool v1 = false, v2 = false;
  for (char *l = mi; l && *l; l = strchr (l, '\n') ? strchr (l, '\n') + 1 : NULL)
    {
      char *dash = strstr (l, " - ");
      if (dash && strncmp (dash, " - cgroup2 ", 11) == 0)
        v2 = true;
      else if (dash && strncmp (dash, " - cgroup ", 10) == 0)
        {
          char *eol = strchr (dash, '\n');
          cleanup_free char *opts = eol ? xstrndup (dash, (size_t) (eol - dash)) : xstrdup (dash);
          v1 |= strstr (opts, ",memory") || strstr (opts, ",pids") || strstr (opts, ",cpu");
        }
    }
  enum ohbox_cgroup_mode want = v1 && v2 ? OHBOX_CGROUP_MODE_HYBRID
                                : v1     ? OHBOX_CGROUP_MODE_V1
                                : v2     ? OHBOX_CGROUP_MODE_V2
                                         : OHBOX_CGROUP_MODE_NONE;
  struct ohbox_cgroup_host h;
  CHECK (ohbox_cgroup_detect (NULL, &h, &err) == 0, "%s", err->msg);
  printf ("# this host: cgroup %s, %zu hierarchies\n", ohbox_cgroup_mode_name (h.mode), h.n_hier);
  bool ok = h.mode == want;
  ohbox_cgroup_host_release (&h);
  CHECK (ok, "detected %s, mountinfo says %s", ohbox_cgroup_mode_name (h.mode), ohbox_cgroup_mode_name (want));
}

static void
test_create_limits (void)
{
  NEED (OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_CPU | OHBOX_CGROUP_PIDS);
  struct ohbox_cgroup_limits l = {
    .memory = 64 << 20, .memory_swap = 64 << 20, .cpu_quota = 50000, .cpu_shares = 512, .pids = 50
  };
  cleanup_cg struct ohbox_cgroup *cg = make_mem ("limits", &l);
  CHECK (cg);
  for (size_t i = 0; i < host.n_hier; i++)
    {
      cleanup_free char *d = dir_of (&host, i, "limits");
      CHECK (exists (d), "%s", d);
    }
  const char *m = mem_dir (cg), *c = ohbox_cgroup_path (cg, OHBOX_CGROUP_CPU);
  const char *p = ohbox_cgroup_path (cg, OHBOX_CGROUP_PIDS);
  cleanup_free char *v1 = NULL, *v2 = NULL, *v3 = NULL, *v4 = NULL, *v5 = NULL;
  if (is_v2 (cg, OHBOX_CGROUP_MEMORY))
    {
      CHECK_STR (v1 = rd (m, "memory.max"), "67108864");
      if (l.memory_swap)
        CHECK_STR (v2 = rd (m, "memory.swap.max"), "0");
    }
  else
    {
      CHECK_STR (v1 = rd (m, "memory.limit_in_bytes"), "67108864");
      if (l.memory_swap)
        CHECK_STR (v2 = rd (m, "memory.memsw.limit_in_bytes"), "67108864");
    }
  if (is_v2 (cg, OHBOX_CGROUP_CPU))
    {
      CHECK_STR (v3 = rd (c, "cpu.max"), "50000 100000");
      CHECK_STR (v4 = rd (c, "cpu.weight"), "20");
      /* The controllers were enabled down the tree for this cgroup. */
      cleanup_free char *parent = xstrndup (c, (size_t) (strrchr (c, '/') - c));
      cleanup_free char *sc = rd (parent, "cgroup.subtree_control");
      CHECK (sc && strstr (sc, "memory") && strstr (sc, "pids") && strstr (sc, "cpu"), "%s", sc);
    }
  else
    {
      CHECK_STR (v3 = rd (c, "cpu.cfs_quota_us"), "50000");
      CHECK_STR (v4 = rd (c, "cpu.cfs_period_us"), "100000");
      free (v4);
      CHECK_STR (v4 = rd (c, "cpu.shares"), "512");
    }
  CHECK_STR (v5 = rd (p, "pids.max"), "50");
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_destroy (cg, &err) == 0, "%s", err->msg);
  CHECK (gone_everywhere (&host, "limits"));
}

/* --memory-swap is memory plus swap (Docker): unset, the sandbox gets as
 * much swap as memory (twice the memory in v1's memory+swap file, the memory
 * again in v2's swap-only file), -1 leaves swap unlimited, a value is the
 * total.  Skipped without swap accounting (no file to read). */
static void
test_memory_swap (void)
{
  NEED (OHBOX_CGROUP_MEMORY);
  static const struct
  {
    int64_t swap;
    const char *v1, *v2; /* memory.memsw.limit_in_bytes, memory.swap.max */
  } cases[] = {
    { 0, "67108864", "33554432" },        /* Docker's default: twice the memory */
    { 48 << 20, "50331648", "16777216" }, /* the total asked for */
    { -1, NULL, "max" },                  /* unlimited (v1: the counter's maximum) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      struct ohbox_cgroup_limits l = { .memory = 32 << 20, .memory_swap = cases[i].swap };
      cleanup_free char *id = xasprintf ("swap%zu", i);
      cleanup_cg struct ohbox_cgroup *cg = make (id, &l);
      /* The first case needs no swap accounting: it must always work. */
      CHECK (cg);
      const char *m = mem_dir (cg);
      bool v2 = is_v2 (cg, OHBOX_CGROUP_MEMORY);
      const char *file = v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes";
      if (!exists_in (m, file))
        {
          unit_skip ("no swap accounting on this host (no %s)", file);
          return;
        }
      cleanup_free char *v = rd (m, file);
      printf ("# --memory 32m --memory-swap %" PRId64 ": %s %s\n", cases[i].swap, file, v ? v : "(unreadable)");
      if (v2 || cases[i].v1)
        CHECK_STR (v, v2 ? cases[i].v2 : cases[i].v1);
      else
        CHECK (v && strtoull (v, NULL, 10) >= UINT64_C (1) << 62, "memsw %s, not unlimited", v);
    }
}

static void
fn_alloc (int rep, void *arg)
{
  (void) arg;
  /* 128 MiB, touched page by page: far past a 32 MiB limit. */
  for (int i = 0; i < 128; i++)
    {
      volatile char *p = malloc (1 << 20);
      if (p == NULL)
        _exit (5);
      for (size_t j = 0; j < (1 << 20); j += 4096)
        p[j] = 1;
    }
  if (write (rep, "s", 1) != 1)
    _exit (4);
}

static void
test_oom_kill (void)
{
  NEED (OHBOX_CGROUP_MEMORY);
  struct ohbox_cgroup_limits l = { .memory = 32 << 20, .memory_swap = 32 << 20 };
  cleanup_cg struct ohbox_cgroup *cg = make_mem ("oom", &l);
  CHECK (cg);
  cleanup_kid struct kid k = { -1, -1, -1 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (kid_start_in (&k, cg, fn_alloc, NULL, &err) == 0, "%s", err->msg);
  int status = kid_wait (&k);
  CHECK (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL, "status 0x%x: the allocation survived", status);
  const char *m = mem_dir (cg);
  if (is_v2 (cg, OHBOX_CGROUP_MEMORY))
    CHECK (rd_key (m, "memory.events", "oom_kill") >= 1);
  else
    {
      CHECK (rd_key (m, "memory.oom_control", "oom_kill") >= 1);
      /* The peak reached the limit.  (memory.failcnt is not a reliable
       * witness: kernel 6.18 leaves it at 0 through an OOM kill.) */
      cleanup_free char *peak = rd (m, "memory.max_usage_in_bytes"), *f = rd (m, "memory.failcnt");
      printf ("# v1 peak %s, failcnt %s\n", peak, f);
      CHECK (peak && strtoull (peak, NULL, 10) >= (32 << 20) - (1 << 20), "peak %s", peak);
    }
  struct ohbox_cgroup_stats st;
  CHECK (ohbox_cgroup_stats (cg, &st, &err) == 0, "%s", err->msg);
  CHECK (st.oom_kills >= 1 && st.memory_max == 32 << 20);
  if (is_v2 (cg, OHBOX_CGROUP_MEMORY))
    CHECK (st.memory_max_events >= 1);
}

static void
wait_to_be_killed (void)
{
  alarm (60);
  for (;;)
    pause ();
}

static void
fn_forks (int rep, void *arg)
{
  (void) arg;
  struct fork_report r = { 0 };
  fork_children (&r, 64, wait_to_be_killed);
  send_fork_report (rep, &r);
}

static void
test_pids_limit (void)
{
  NEED (OHBOX_CGROUP_PIDS);
  struct ohbox_cgroup_limits l = { .pids = 4 };
  cleanup_cg struct ohbox_cgroup *cg = make ("pids", &l);
  CHECK (cg);
  cleanup_kid struct kid k = { -1, -1, -1 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (kid_start_in (&k, cg, fn_forks, NULL, &err) == 0, "%s", err->msg);
  struct fork_report r;
  CHECK (kid_read (&k, &r, sizeof r));
  CHECK (r.forked == 3 && r.err == EAGAIN, "forked %d, then %s", r.forked, strerror (r.err));
  const char *p = ohbox_cgroup_path (cg, OHBOX_CGROUP_PIDS);
  CHECK (rd_key (p, "pids.events", "max") >= 1);
  struct ohbox_cgroup_stats st;
  CHECK (ohbox_cgroup_stats (cg, &st, &err) == 0, "%s", err->msg);
  CHECK (st.pids_current == 4 && st.pids_max == 4 && st.pids_max_events >= 1, "current %llu",
         (unsigned long long) st.pids_current);
  /* destroy kills the grandchildren too, though they are not ours. */
  CHECK (ohbox_cgroup_destroy (cg, &err) == 0, "%s", err->msg);
  CHECK (WIFSIGNALED (kid_wait (&k)));
  CHECK (all_gone (r.pids, r.forked));
  CHECK (gone_everywhere (&host, "pids"));
}

static void
fn_spin (int rep, void *arg)
{
  (void) rep;
  (void) arg;
  double end = ohbox_monotonic () + 0.6;
  volatile unsigned long n = 0;
  while (ohbox_monotonic () < end)
    n++;
}

static void
test_cpu_quota (void)
{
  NEED (OHBOX_CGROUP_CPU);
  struct ohbox_cgroup_limits l = { 0 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_limits_set_option (&l, "cpus", "0.1", &err) == 0);
  cleanup_cg struct ohbox_cgroup *cg = make ("cpu", &l);
  CHECK (cg);
  const char *c = ohbox_cgroup_path (cg, OHBOX_CGROUP_CPU);
  cleanup_free char *v = rd (c, is_v2 (cg, OHBOX_CGROUP_CPU) ? "cpu.max" : "cpu.cfs_quota_us");
  CHECK_STR (v, is_v2 (cg, OHBOX_CGROUP_CPU) ? "10000 100000" : "10000");
  cleanup_kid struct kid k = { -1, -1, -1 };
  kid_start (&k, fn_spin, NULL);
  CHECK (ohbox_cgroup_attach (cg, k.pid, &err) == 0, "%s", err->msg);
  double t0 = ohbox_monotonic ();
  kid_go (&k);
  int status = kid_wait (&k);
  double wall = ohbox_monotonic () - t0;
  CHECK (WIFEXITED (status));
  struct ohbox_cgroup_stats st;
  CHECK (ohbox_cgroup_stats (cg, &st, &err) == 0, "%s", err->msg);
  printf ("# 0.1 CPU: %llu us of CPU in %.0f ms, throttled %llu times\n", (unsigned long long) st.cpu_usage_usec,
          wall * 1000, (unsigned long long) st.cpu_nr_throttled);
  /* Spinning freely would use ~all of the wall time. */
  CHECK (st.cpu_nr_throttled >= 1);
  CHECK (st.cpu_usage_usec > 0 && st.cpu_usage_usec < (uint64_t) (wall * 1e6 * 0.4));
}

static void
fn_count (int rep, void *arg)
{
  volatile uint64_t *counter = arg;
  if (write (rep, "r", 1) != 1)
    _exit (4);
  for (;;)
    (*counter)++;
}

static void
test_freeze_thaw (void)
{
  NEED (OHBOX_CGROUP_FREEZER);
  cleanup_cg struct ohbox_cgroup *cg = make ("freeze", NULL);
  CHECK (cg);
  volatile uint64_t *counter = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK (counter != MAP_FAILED);
  cleanup_kid struct kid k = { -1, -1, -1 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (kid_start_in (&k, cg, fn_count, (void *) counter, &err) == 0, "%s", err->msg);
  char c;
  CHECK (kid_read (&k, &c, 1));
  usleep (50000);
  CHECK (ohbox_cgroup_freeze (cg, true, &err) == 0, "%s", err->msg);
  const char *f = ohbox_cgroup_path (cg, OHBOX_CGROUP_FREEZER);
  if (is_v2 (cg, OHBOX_CGROUP_FREEZER))
    CHECK (rd_key (f, "cgroup.events", "frozen") == 1);
  else
    {
      cleanup_free char *s = rd (f, "freezer.state");
      CHECK_STR (s, "FROZEN");
    }
  uint64_t c1 = *counter;
  usleep (200000);
  uint64_t c2 = *counter;
  CHECK (c1 > 0 && c2 == c1, "counter moved from %llu to %llu while frozen", (unsigned long long) c1,
         (unsigned long long) c2);
  CHECK (ohbox_cgroup_freeze (cg, false, &err) == 0, "%s", err->msg);
  usleep (100000);
  CHECK (*counter > c2, "counter stuck after thaw");
  munmap ((void *) counter, 4096);
}

static void
fn_mem (int rep, void *arg)
{
  (void) arg;
  /* volatile: the compiler must not drop an allocation nobody reads. */
  volatile char *p = malloc (16 << 20);
  for (size_t i = 0; i < (16 << 20); i += 4096)
    p[i] = 1;
  double end = ohbox_monotonic () + 0.1;
  while (ohbox_monotonic () < end)
    ;
  fn_pause (rep, (void *) p);
}

static void
test_stats (void)
{
  NEED (OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS);
  struct ohbox_cgroup_limits l = { .memory = 64 << 20 };
  cleanup_cg struct ohbox_cgroup *cg = make ("stats", &l);
  CHECK (cg);
  cleanup_kid struct kid k = { -1, -1, -1 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (kid_start_in (&k, cg, fn_mem, NULL, &err) == 0, "%s", err->msg);
  char c;
  CHECK (kid_read (&k, &c, 1));
  struct ohbox_cgroup_stats st;
  CHECK (ohbox_cgroup_stats (cg, &st, &err) == 0, "%s", err->msg);
  printf ("# memory %llu of %llu, cpu %llu us, pids %llu\n", (unsigned long long) st.memory_current,
          (unsigned long long) st.memory_max, (unsigned long long) st.cpu_usage_usec,
          (unsigned long long) st.pids_current);
  CHECK ((st.valid & (OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS | OHBOX_CGROUP_CPU))
         == (OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS | OHBOX_CGROUP_CPU));
  CHECK (st.memory_current >= 16 << 20 && st.memory_current <= 64 << 20);
  CHECK (st.memory_max == 64 << 20 && st.oom_kills == 0);
  CHECK (st.pids_current == 1 && st.pids_max == UINT64_MAX);
  CHECK (st.cpu_usage_usec >= 20000, "%llu", (unsigned long long) st.cpu_usage_usec);
}

static void
test_missing_controller (void)
{
  REAL ();
  struct ohbox_cgroup_host h = host; /* shallow: never released */
  for (size_t i = 0; i < h.n_hier; i++)
    h.hier[i].controllers &= ~OHBOX_CGROUP_MEMORY;
  h.controllers &= ~OHBOX_CGROUP_MEMORY;
  struct ohbox_cgroup_limits l = { .memory = 32 << 20 };
  struct ohbox_cgroup *cg = NULL;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_create (&h, "nomem", &l, &cg, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_UNSUPPORTED, "%s", err->msg);
  CHECK (strstr (err->msg, "`memory`") && strstr (err->msg, "--memory"), "%s", err->msg);
  CHECK (gone_everywhere (&host, "nomem"));
}

UNIT_MAIN_BEGIN ("test-cgroup")
{
  /* Line-buffered even under the test runner: children fork. */
  setvbuf (stdout, NULL, _IOLBF, 0);
  setup_real ();
  RUN_TEST (test_detect_real);
  RUN_TEST (test_create_limits);
  RUN_TEST (test_memory_swap);
  RUN_TEST (test_oom_kill);
  RUN_TEST (test_pids_limit);
  RUN_TEST (test_cpu_quota);
  RUN_TEST (test_freeze_thaw);
  RUN_TEST (test_stats);
  RUN_TEST (test_missing_controller);
  RUN_TEST (test_nothing_left);
  ohbox_cgroup_host_release (&host);
}
UNIT_MAIN_END
