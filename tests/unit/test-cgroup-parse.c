/* test-cgroup-parse.c: the cgroup code that needs no cgroup: limits from
 * CLI options (--memory, --cpus, --pids-limit...) and host detection from
 * made-up mountinfo and /proc/self/cgroup texts (pure v2, hybrid, v1,
 * rootless with and without a delegated subtree). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "unit.h"
#include "common/utils.h"

static char tmpdir[] = "/tmp/test-cgroup-parse.XXXXXX";

/* ------------------------------------------------------------ parsing */

static void
test_parse_size (void)
{
  static const struct
  {
    const char *s;
    int64_t v;
  } ok[] = { { "0", 0 },
             { "100", 100 },
             { "100b", 100 },
             { "1k", 1024 },
             { "1KB", 1024 },
             { "512m", 536870912 },
             { "512M", 536870912 },
             { "1g", 1073741824 },
             { "1.5g", 1610612736 },
             { "0.5k", 512 },
             { "2t", 2199023255552 },
             { "1gib", 1073741824 } };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      int64_t v = -5;
      CHECK (ohbox_cgroup_parse_size (ok[i].s, &v, &err) == 0, "%s: %s", ok[i].s, err ? err->msg : "");
      CHECK (v == ok[i].v, "%s -> %lld", ok[i].s, (long long) v);
    }
  static const char *const bad[] = { "",
                                     "m",
                                     "-1",
                                     "12x",
                                     "1.5",
                                     "1.5b",
                                     "1..5m",
                                     ".5m",
                                     "1 m",
                                     "m1",
                                     "99999999999999999999",
                                     "9223372036854775807k",
                                     "8589934592g",
                                     "1.0000000001g" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      int64_t v;
      CHECK (ohbox_cgroup_parse_size (bad[i], &v, &err) < 0, "`%s` accepted: %lld", bad[i], (long long) v);
      CHECK (err->kind == OHBOX_ERR_USAGE);
      CHECK (strstr (err->msg, bad[i]) != NULL, "%s", err->msg);
    }
}

static void
test_parse_cpus (void)
{
  cleanup_error ohbox_error_t err = NULL;
  int64_t q;
  CHECK (ohbox_cgroup_parse_cpus ("1.5", 0, &q, &err) == 0 && q == 150000);
  CHECK (ohbox_cgroup_parse_cpus ("0.01", 100000, &q, &err) == 0 && q == 1000);
  CHECK (ohbox_cgroup_parse_cpus ("2", 50000, &q, &err) == 0 && q == 100000);
  CHECK (ohbox_cgroup_parse_cpus ("0.333333333", 100000, &q, &err) == 0 && q == 33333);
  CHECK (ohbox_cgroup_parse_cpus ("4096", 1000000, &q, &err) == 0 && q == 4096000000LL);
  static const char *const bad[] = { "0.001", "0", "4097", "4096.5", "abc", "1.0000000001", "-1", "1,5", "" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      ohbox_error_release (&err);
      CHECK (ohbox_cgroup_parse_cpus (bad[i], 0, &q, &err) < 0, "`%s` accepted", bad[i]);
      CHECK (err->kind == OHBOX_ERR_USAGE);
    }
}

static void
test_limits_options (void)
{
  struct ohbox_cgroup_limits l = { 0 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (!ohbox_cgroup_limits_any (&l));
  CHECK (ohbox_cgroup_limits_set_option (&l, "memory", "512m", &err) == 0 && l.memory == 512 << 20);
  CHECK (ohbox_cgroup_limits_set_option (&l, "memory-swap", "1g", &err) == 0 && l.memory_swap == 1 << 30);
  CHECK (ohbox_cgroup_limits_set_option (&l, "cpus", "1.5", &err) == 0 && l.cpu_quota == 150000);
  /* A period given after --cpus rescales the quota: 1.5 CPUs stay 1.5. */
  CHECK (ohbox_cgroup_limits_set_option (&l, "cpu-period", "50000", &err) == 0);
  CHECK (l.cpu_period == 50000 && l.cpu_quota == 75000, "%lld", (long long) l.cpu_quota);
  CHECK (ohbox_cgroup_limits_set_option (&l, "cpu-shares", "512", &err) == 0 && l.cpu_shares == 512);
  CHECK (ohbox_cgroup_limits_set_option (&l, "pids-limit", "100", &err) == 0 && l.pids == 100);
  CHECK (ohbox_cgroup_limits_any (&l));
  CHECK (ohbox_cgroup_limits_validate (&l, &err) == 0, "%s", err ? err->msg : "");
  CHECK (ohbox_cgroup_limits_set_option (&l, "pids-limit", "-1", &err) == 0 && l.pids == 0);
  CHECK (ohbox_cgroup_limits_set_option (&l, "memory-swap", "-1", &err) == 0 && l.memory_swap == -1);

  struct
  {
    const char *opt, *val, *want;
  } bad[] = { { "memory", "1m", "minimum" },
              { "memory", "lots", "--memory" },
              { "memory-swap", "0", "-1" },
              { "cpus", "0", "--cpus" },
              { "cpu-period", "999", "--cpu-period" },
              { "cpu-shares", "1", "--cpu-shares" },
              { "cpu-weight", "10001", "--cpu-weight" },
              { "pids-limit", "-2", "--pids-limit" },
              { "pids-limit", "5000000", "--pids-limit" },
              { "blkio-weight", "10", "unknown" } };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      ohbox_error_release (&err);
      CHECK (ohbox_cgroup_limits_set_option (&l, bad[i].opt, bad[i].val, &err) < 0, "%s=%s", bad[i].opt, bad[i].val);
      CHECK (err->kind == OHBOX_ERR_USAGE && strstr (err->msg, bad[i].want), "%s", err->msg);
    }

  struct ohbox_cgroup_limits v[] = {
    { .memory_swap = 1 << 30 },                      /* swap without memory */
    { .memory = 1 << 30, .memory_swap = 512 << 20 }, /* swap below memory */
    { .cpu_shares = 512, .cpu_weight = 100 },        /* both */
    { .cpu_quota = 500 },                            /* below the kernel's minimum */
    { .cpu_period = 2000000 },
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    {
      ohbox_error_release (&err);
      CHECK (ohbox_cgroup_limits_validate (&v[i], &err) < 0, "case %zu", i);
      CHECK (err->kind == OHBOX_ERR_USAGE);
    }
}

static void
test_weight_conversion (void)
{
  CHECK (ohbox_cgroup_shares_to_weight (0) == 0);
  CHECK (ohbox_cgroup_shares_to_weight (2) == 1);
  CHECK (ohbox_cgroup_shares_to_weight (1024) == 39);
  CHECK (ohbox_cgroup_shares_to_weight (262144) == 10000);
  CHECK (ohbox_cgroup_weight_to_shares (1) == 2);
  CHECK (ohbox_cgroup_weight_to_shares (10000) == 262144);
  CHECK (ohbox_cgroup_weight_to_shares (100) == 2597, "%llu", (unsigned long long) ohbox_cgroup_weight_to_shares (100));
  uint64_t prev = 0;
  for (uint64_t s = 2; s <= 262144; s += 97)
    {
      uint64_t w = ohbox_cgroup_shares_to_weight (s);
      CHECK (w >= prev && w >= 1 && w <= 10000, "shares %llu", (unsigned long long) s);
      prev = w;
    }
}

/* ------------------------------------------------------------ detection */

static int
detect_fake (const char *mountinfo, const char *self, const char *parent, int rootless, struct ohbox_cgroup_host *h,
             ohbox_error_t *err)
{
  struct ohbox_cgroup_detect_opts o = {
    .parent = parent, .mountinfo = mountinfo, .self_cgroup = self, .rootless = rootless
  };
  return ohbox_cgroup_detect (&o, h, err);
}

/* TMPDIR/NAME, made a cgroup2 mount point's look-alike with CONTROLLERS. */
static char *
fake_cgroup2 (const char *name, const char *controllers)
{
  char *dir = xasprintf ("%s/%s", tmpdir, name);
  mkdir (dir, 0755);
  unit_put_file (dir, "cgroup.controllers", controllers);
  return dir;
}

static void
test_detect_v2 (void)
{
  cleanup_free char *mnt = fake_cgroup2 ("c g", "cpuset cpu io memory hugetlb pids rdma misc\n");
  cleanup_free char *mi = xasprintf ("22 1 0:21 / /proc rw - proc proc rw\n"
                                     "30 23 0:26 / %s/c\\040g rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
                                     "31 23 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n",
                                     tmpdir);
  struct ohbox_cgroup_host h;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (detect_fake (mi, "0::/init.scope\n", NULL, 0, &h, &err) == 0, "%s", err->msg);
  bool ok = h.mode == OHBOX_CGROUP_MODE_V2 && h.n_hier == 1 && h.hier[0].version == 2 && !h.disabled;
  unsigned want = OHBOX_CGROUP_CPU | OHBOX_CGROUP_IO | OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS | OHBOX_CGROUP_FREEZER
                  | OHBOX_CGROUP_CPUACCT | OHBOX_CGROUP_HUGETLB;
  ok = ok && h.hier[0].controllers == want && h.controllers == want;
  cleanup_free char *parent = xasprintf ("%s/ohbox", mnt);
  ok = ok && strcmp (h.hier[0].parent, parent) == 0 && strcmp (h.hier[0].base, mnt) == 0;
  ohbox_cgroup_host_release (&h);
  CHECK (ok);
  /* A relative parent goes below the process's own cgroup. */
  CHECK (detect_fake (mi, "0::/a/b\n", "sub/x", 0, &h, &err) == 0, "%s", err->msg);
  cleanup_free char *rel = xasprintf ("%s/a/b/sub/x", mnt);
  ok = strcmp (h.hier[0].parent, rel) == 0;
  ohbox_cgroup_host_release (&h);
  CHECK (ok);
  static const char *const bad[] = { "../x", "/a/../b", "a//b", "/", "a/" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      ohbox_error_release (&err);
      CHECK (detect_fake (mi, "0::/\n", bad[i], 0, &h, &err) < 0, "parent `%s` accepted", bad[i]);
      CHECK (err->kind == OHBOX_ERR_USAGE);
    }
}

static void
test_detect_hybrid_v1 (void)
{
  cleanup_free char *uni = fake_cgroup2 ("unified", "hugetlb\n");
  cleanup_free char *mi = xasprintf ("32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
                                     "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                                     "36 31 0:33 / /sys/fs/cgroup/perf_event rw - cgroup cgroup rw,perf_event\n"
                                     "37 31 0:34 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
                                     "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
                                     "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
                                     "41 31 0:38 / %s rw - cgroup2 cgroup2 rw\n"
                                     "90 80 0:32 /x /mnt/memory-again rw - cgroup cgroup rw,memory\n",
                                     uni);
  const char *self = "9:name=systemd:/user.slice\n4:memory:/process_api/abc\n3:cpu,cpuacct:/\n"
                     "2:pids:/p\n1:freezer:/\n0::/\n";
  struct ohbox_cgroup_host h;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (detect_fake (mi, self, "t", 0, &h, &err) == 0, "%s", err->msg);
  bool ok = h.mode == OHBOX_CGROUP_MODE_HYBRID && h.n_hier == 6;
  static const char *const names[] = { "cpu,cpuacct", "memory", "freezer", "pids", "name=systemd", "unified" };
  static const char *const parents[] = {
    "/sys/fs/cgroup/cpu,cpuacct/t", "/sys/fs/cgroup/memory/process_api/abc/t", "/sys/fs/cgroup/freezer/t",
    "/sys/fs/cgroup/pids/p/t",      "/sys/fs/cgroup/systemd/user.slice/t",     NULL
  };
  for (size_t i = 0; ok && i < 6; i++)
    {
      ok = strcmp (h.hier[i].name, names[i]) == 0 && h.hier[i].version == (i == 5 ? 2 : 1);
      if (ok && parents[i])
        ok = strcmp (h.hier[i].parent, parents[i]) == 0;
      if (!ok)
        printf ("# hierarchy %zu: %s %s\n", i, h.hier[i].name, h.hier[i].parent);
    }
  /* v1 serves everything but hugetlb, which v1 has not here: the cgroup2
   * mount's (enabled for the sandboxes that ask for it). */
  ok = ok && h.hier[5].controllers == OHBOX_CGROUP_HUGETLB
       && h.hier[0].controllers == (OHBOX_CGROUP_CPU | OHBOX_CGROUP_CPUACCT);
  ok = ok
       && h.controllers
            == (OHBOX_CGROUP_CPU | OHBOX_CGROUP_CPUACCT | OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_FREEZER | OHBOX_CGROUP_PIDS
                | OHBOX_CGROUP_HUGETLB);
  /* A sandbox's directories and the names /sys/fs/cgroup shows them
   * under inside it (mounts.c): the host's mount points' names. */
  cleanup_free char *sbdir = xasprintf ("%s/t/abc", uni);
  ok = ok && mkdir (h.hier[5].parent, 0755) == 0 && mkdir (sbdir, 0755) == 0;
  struct ohbox_cgroup *opened = NULL;
  ok = ok && ohbox_cgroup_open (&h, "abc", &opened, &err) == 0;
  static const char *const views[] = { "cpu,cpuacct", "memory", "freezer", "pids", "systemd", "unified" };
  for (size_t i = 0; ok && i < 7; i++)
    {
      int version = 0;
      const char *name = NULL;
      const char *dir = ohbox_cgroup_dir_at (opened, i, &version, &name);
      if (i == 6)
        ok = dir == NULL;
      else
        {
          cleanup_free char *want = i == 5 ? xstrdup (sbdir) : xasprintf ("%s/abc", parents[i]);
          ok = dir && strcmp (dir, want) == 0 && strcmp (name, views[i]) == 0 && version == (i == 5 ? 2 : 1);
        }
      if (!ok)
        printf ("# directory %zu: %s as %s\n", i, dir ? dir : "(none)", dir ? name : "");
    }
  ohbox_cgroup_free (opened);
  rmdir (sbdir);
  rmdir (h.hier[5].parent);
  ohbox_cgroup_host_release (&h);
  CHECK (ok);

  /* The same without the cgroup2 mount: v1. */
  char *cut = strstr (mi, "41 31");
  memmove (cut, strstr (cut, "\n") + 1, strlen (strstr (cut, "\n") + 1) + 1);
  CHECK (detect_fake (mi, self, NULL, 0, &h, &err) == 0, "%s", err->msg);
  ok = h.mode == OHBOX_CGROUP_MODE_V1 && h.n_hier == 5 && strcmp (h.hier[1].parent, "/sys/fs/cgroup/memory/ohbox") == 0;
  ohbox_cgroup_host_release (&h);
  CHECK (ok);

  /* Rootless on v1: no limits, one warning, every operation a no-op. */
  CHECK (detect_fake (mi, self, NULL, 1, &h, &err) == 0, "%s", err->msg);
  ok = h.disabled && h.n_hier == 0 && h.warning && strstr (h.warning, "rootless") && strstr (h.warning, "--memory");
  struct ohbox_cgroup_limits l = { .memory = 64 << 20 };
  struct ohbox_cgroup *cg = NULL;
  ok = ok && ohbox_cgroup_create (&h, "abc", &l, &cg, &err) == 0;
  ok = ok && ohbox_cgroup_attach (cg, getpid (), &err) == 0 && ohbox_cgroup_freeze (cg, true, &err) == 0
       && ohbox_cgroup_kill_all (cg, 100, &err) == 0 && ohbox_cgroup_clone_fd (cg) == -1
       && ohbox_cgroup_destroy (cg, &err) == 0;
  ohbox_cgroup_free (cg);
  ohbox_cgroup_host_release (&h);
  CHECK (ok, "%s", err ? err->msg : "");
}

static void
test_detect_rootless_v2 (void)
{
  /* A made-up systemd tree: user@1000.service (and below) delegated to
   * this uid, user-1000.slice not. */
  cleanup_free char *mnt = xasprintf ("%s/v2r", tmpdir);
  cleanup_free char *slice = xasprintf ("%s/user.slice/user-1000.slice", mnt);
  cleanup_free char *svc = xasprintf ("%s/user@1000.service", slice);
  cleanup_free char *scope = xasprintf ("%s/app.slice/x.scope", svc);
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_mkdir_p (AT_FDCWD, scope, 0755, &err) == 0);
  const char *dirs[] = { mnt, slice, svc, scope };
  for (size_t i = 0; i < 4; i++)
    {
      unit_put_file (dirs[i], "cgroup.procs", i == 3 ? "4242\n" : "");
      unit_put_file (dirs[i], "cgroup.subtree_control", "");
      unit_put_file (dirs[i], "cgroup.controllers", "cpu memory pids\n");
    }
  cleanup_free char *app = xasprintf ("%s/app.slice", svc);
  unit_put_file (app, "cgroup.procs", "");
  unit_put_file (app, "cgroup.subtree_control", "");
  uid_t other = geteuid () == 0 ? 4242 : 0;
  if (geteuid () == 0 && (chown (slice, other, other) < 0 || chown (mnt, other, other) < 0))
    CHECK (0, "chown");
  if (geteuid () != 0)
    {
      unit_skip ("needs root to make a cgroup tree owned by another user");
      return;
    }
  cleanup_free char *mi = xasprintf ("30 23 0:26 / %s rw - cgroup2 cgroup2 rw,nsdelegate\n", mnt);
  struct ohbox_cgroup_host h;
  CHECK (detect_fake (mi, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n", NULL, 1, &h, &err)
           == 0,
         "%s", err->msg);
  cleanup_free char *parent = xasprintf ("%s/ohbox", svc);
  bool ok = !h.disabled && h.rootless && h.n_hier == 1 && strcmp (h.hier[0].base, svc) == 0
            && strcmp (h.hier[0].parent, parent) == 0 && (h.controllers & OHBOX_CGROUP_MEMORY)
            && !(h.controllers & OHBOX_CGROUP_IO);
  if (!ok)
    printf ("# base %s parent %s\n", h.hier[0].base, h.hier[0].parent);
  ohbox_cgroup_host_release (&h);
  CHECK (ok);

  /* The delegated cgroup holds processes: nothing can be enabled below. */
  unit_put_file (svc, "cgroup.procs", "77\n");
  CHECK (detect_fake (mi, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n", NULL, 1, &h, &err)
         == 0);
  ok = h.disabled && h.warning && strstr (h.warning, "holds processes");
  ohbox_cgroup_host_release (&h);
  CHECK (ok);

  /* A session scope owned by root: no delegation at all. */
  CHECK (detect_fake (mi, "0::/user.slice/user-1000.slice\n", NULL, 1, &h, &err) == 0);
  ok = h.disabled && h.warning && strstr (h.warning, "not delegated") && strstr (h.warning, "Delegate=yes");
  ohbox_cgroup_host_release (&h);
  CHECK (ok);
}

UNIT_MAIN_BEGIN ("test-cgroup-parse")
{
  if (unit_mkdtemp (tmpdir) < 0)
    return 1;
  RUN_TEST (test_parse_size);
  RUN_TEST (test_parse_cpus);
  RUN_TEST (test_limits_options);
  RUN_TEST (test_weight_conversion);
  RUN_TEST (test_detect_v2);
  RUN_TEST (test_detect_hybrid_v1);
  RUN_TEST (test_detect_rootless_v2);
  ohbox_rm_rf_at (AT_FDCWD, tmpdir, NULL);
}
UNIT_MAIN_END
