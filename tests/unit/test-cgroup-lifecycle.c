/* test-cgroup-lifecycle.c: the life of a sandbox's cgroup for real, as
 * root, on whatever this host is (v1/hybrid here, pure v2 in the qemu
 * guest): attach, enter from the child, clone3 CLONE_INTO_CGROUP, kill_all
 * (cgroup.kill and the freeze + pidfd loop) against processes that keep
 * forking, destroy with nested cgroups, reconcile after a crash, ids,
 * create/destroy cycles leaving nothing behind, and rootless detection with
 * and without a delegated subtree. */
#include "config.h"

#include "cgroup-test.h"

static void
fn_enter (int rep, void *arg)
{
  cleanup_error ohbox_error_t err = NULL;
  char c = ohbox_cgroup_enter (arg, &err) == 0 ? 'e' : 'f';
  kid_report (rep, &c, 1);
}

static void
test_attach_and_enter (void)
{
  REAL ();
  cleanup_cg struct ohbox_cgroup *cg = make ("attach", NULL);
  CHECK (cg);
  cleanup_kid struct kid a = { -1, -1, -1 }, e = { -1, -1, -1 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (kid_start_in (&a, cg, fn_pause, NULL, &err) == 0, "%s", err->msg);
  char c;
  CHECK (kid_read (&a, &c, 1) && c == 'r');
  CHECK (in_all (&host, "attach", a.pid));
  /* The child moves itself ("0" in cgroup.procs). */
  kid_start (&e, fn_enter, cg);
  CHECK (!in_all (&host, "attach", e.pid));
  kid_go (&e);
  CHECK (kid_read (&e, &c, 1) && c == 'e');
  CHECK (in_all (&host, "attach", e.pid));
  bool empty = true;
  CHECK (ohbox_cgroup_is_empty (cg, &empty, &err) == 0 && !empty);
  CHECK (ohbox_cgroup_destroy (cg, &err) == 0, "%s", err->msg);
  CHECK (WIFSIGNALED (kid_wait (&a)) && WIFSIGNALED (kid_wait (&e)));
  CHECK (gone_everywhere (&host, "attach"));
}

/* clone3 (CLONE_INTO_CGROUP) puts the child in the v2 cgroup from its first
 * instruction; v1 hierarchies still need attach_after_clone. */
static void
test_clone_into_cgroup (void)
{
  REAL ();
  cleanup_cg struct ohbox_cgroup *cg = make ("clone3", NULL);
  CHECK (cg);
  int fd = ohbox_cgroup_clone_fd (cg);
  if (fd < 0)
    {
      unit_skip ("no cgroup v2 hierarchy on this host");
      return;
    }
  struct clone_args args = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t) fd };
  fflush (stdout);
  pid_t pid = (pid_t) syscall (SYS_clone3, &args, sizeof args);
  if (pid == 0)
    {
      syscall (SYS_alarm, 60);
      for (;;)
        syscall (SYS_pause);
    }
  if (pid < 0 && (errno == ENOSYS || errno == E2BIG))
    {
      unit_skip ("clone3 with CLONE_INTO_CGROUP not supported: %s", strerror (errno));
      return;
    }
  CHECK (pid > 0, "clone3: %s", strerror (errno));
  cleanup_kid struct kid k = { pid, -1, -1 };
  CHECK (listed (ohbox_cgroup_path (cg, 0), pid));
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_attach_after_clone (cg, pid, &err) == 0, "%s", err->msg);
  CHECK (in_all (&host, "clone3", pid));
}

/* Grandchildren that keep forking short-lived processes: kill_all must win
 * the race. */
static void
fork_for_a_minute (void)
{
  setsid ();
  double end = ohbox_monotonic () + 60;
  while (ohbox_monotonic () < end)
    {
      pid_t q = fork ();
      if (q == 0)
        _exit (0);
      if (q > 0)
        waitpid (q, NULL, 0);
    }
}

static void
fn_tree_report (int rep, void *arg)
{
  (void) arg;
  struct fork_report r = { 0 };
  fork_children (&r, 5, fork_for_a_minute);
  send_fork_report (rep, &r);
}

static void
kill_all_on (const struct ohbox_cgroup_host *h, const char *id)
{
  struct ohbox_cgroup *raw = NULL;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_create (h, id, NULL, &raw, &err) == 0, "%s", err->msg);
  cleanup_cg struct ohbox_cgroup *cg = raw;
  cleanup_kid struct kid k = { -1, -1, -1 };
  CHECK (kid_start_in (&k, cg, fn_tree_report, NULL, &err) == 0, "%s", err->msg);
  struct fork_report r;
  CHECK (kid_read (&k, &r, sizeof r) && r.forked == 5);
  usleep (20000);
  double t0 = ohbox_monotonic ();
  CHECK (ohbox_cgroup_kill_all (cg, 5000, &err) == 0, "%s", err->msg);
  printf ("# kill_all took %.1f ms\n", (ohbox_monotonic () - t0) * 1000);
  bool empty = false;
  CHECK (ohbox_cgroup_is_empty (cg, &empty, &err) == 0 && empty);
  CHECK (WIFSIGNALED (kid_wait (&k)));
  CHECK (all_gone (r.pids, r.forked));
  CHECK (ohbox_cgroup_destroy (cg, &err) == 0, "%s", err->msg);
  CHECK (gone_everywhere (h, id));
}

static void
test_kill_all (void)
{
  REAL ();
  kill_all_on (&host, "killall");
}

/* Without a v2 hierarchy (v1 hosts, kernels before cgroup.kill): freeze,
 * SIGKILL through pidfds, thaw, until empty. */
static void
test_kill_all_procs_loop (void)
{
  REAL ();
  struct ohbox_cgroup_host h = host; /* shallow: never released */
  h.n_hier = 0;
  for (size_t i = 0; i < host.n_hier; i++)
    if (host.hier[i].version == 1)
      h.hier[h.n_hier++] = host.hier[i];
  if (h.n_hier == 0)
    {
      unit_skip ("no cgroup v1 hierarchy here: cgroup.kill does the work");
      return;
    }
  kill_all_on (&h, "killloop");
}

static void
test_destroy_nested (void)
{
  REAL ();
  cleanup_cg struct ohbox_cgroup *cg = make ("nested", NULL);
  CHECK (cg);
  for (size_t i = 0; i < host.n_hier; i++)
    {
      cleanup_free char *inner = xasprintf ("%s/nested/inner/deeper", host.hier[i].parent);
      cleanup_error ohbox_error_t err = NULL;
      CHECK (ohbox_mkdir_p (AT_FDCWD, inner, 0755, &err) == 0);
    }
  cleanup_kid struct kid k = { -1, -1, -1 };
  kid_start (&k, fn_pause, NULL);
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_attach (cg, k.pid, &err) == 0, "%s", err->msg);
  /* Like a sandbox managing its own (delegated) subtree. */
  const char *d = ohbox_cgroup_path (cg, 0) ? ohbox_cgroup_path (cg, 0) : mem_dir (cg);
  cleanup_free char *inner = xasprintf ("%s/inner", d);
  char pid[16];
  snprintf (pid, sizeof pid, "%d", (int) k.pid);
  CHECK (wr (inner, "cgroup.procs", pid) == 0);
  CHECK (ohbox_cgroup_destroy (cg, &err) == 0, "%s", err->msg);
  CHECK (WIFSIGNALED (kid_wait (&k)));
  CHECK (gone_everywhere (&host, "nested"));
}

static bool
alive_fn (const char *id, void *data)
{
  (void) data;
  return strcmp (id, "rc-alive") == 0;
}

static void
test_reconcile (void)
{
  REAL ();
  struct ohbox_cgroup *a = make ("rc-alive", NULL), *d = make ("rc-dead", NULL);
  CHECK (a && d);
  cleanup_kid struct kid k = { -1, -1, -1 };
  kid_start (&k, fn_pause, NULL);
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_attach (d, k.pid, &err) == 0, "%s", err->msg);
  /* The runtime "crashes": the handles go, the cgroups stay. */
  ohbox_cgroup_free (a);
  ohbox_cgroup_free (d);
  cleanup_free char *other = xasprintf ("%s/.not-a-sandbox", host.hier[0].parent);
  CHECK (mkdir (other, 0755) == 0);
  unsigned removed = 0;
  int r = ohbox_cgroup_reconcile (&host, alive_fn, NULL, &removed, &err);
  bool other_kept = exists (other);
  rmdir (other);
  CHECK (r == 0, "%s", err->msg);
  CHECK (removed == 1 && other_kept);
  CHECK (gone_everywhere (&host, "rc-dead") && !gone_everywhere (&host, "rc-alive"));
  CHECK (WIFSIGNALED (kid_wait (&k)));
  cleanup_cg struct ohbox_cgroup *again = NULL;
  CHECK (ohbox_cgroup_open (&host, "rc-alive", &again, &err) == 0, "%s", err->msg);
  CHECK (ohbox_cgroup_destroy (again, &err) == 0, "%s", err->msg);
  CHECK (gone_everywhere (&host, "rc-alive"));
  struct ohbox_cgroup *none = NULL;
  CHECK (ohbox_cgroup_open (&host, "rc-dead", &none, &err) < 0 && err->kind == OHBOX_ERR_NOT_FOUND);
}

static void
test_ids_and_duplicates (void)
{
  REAL ();
  cleanup_cg struct ohbox_cgroup *cg = make ("dup", NULL);
  CHECK (cg);
  struct ohbox_cgroup *second = NULL;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_create (&host, "dup", NULL, &second, &err) < 0);
  CHECK (strstr (err->msg, "exists"), "%s", err->msg);
  CHECK (!gone_everywhere (&host, "dup"));
  char longid[200];
  memset (longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  const char *bad[] = { "", "../x", ".h", "a/b", "-x", "a b", longid };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      ohbox_error_release (&err);
      CHECK (ohbox_cgroup_create (&host, bad[i], NULL, &second, &err) < 0, "`%s` accepted", bad[i]);
      CHECK (err->kind == OHBOX_ERR_USAGE);
    }
}

static void
test_create_destroy_loop (void)
{
  NEED (OHBOX_CGROUP_MEMORY | OHBOX_CGROUP_PIDS);
  size_t before[OHBOX_CGROUP_MAX_HIER];
  for (size_t i = 0; i < host.n_hier; i++)
    before[i] = count_subdirs (host.hier[i].parent);
  struct ohbox_cgroup_limits l = { .memory = 64 << 20, .pids = 100 };
  double t0 = ohbox_monotonic ();
  for (int n = 0; n < 50; n++)
    {
      struct ohbox_cgroup *cg = NULL;
      cleanup_error ohbox_error_t err = NULL;
      CHECK (ohbox_cgroup_create (&host, "loop", &l, &cg, &err) == 0, "%s", err->msg);
      int r = ohbox_cgroup_destroy (cg, &err);
      ohbox_cgroup_free (cg);
      CHECK (r == 0, "%s", err->msg);
    }
  printf ("# create+destroy with limits: %.2f ms each over %zu hierarchies\n", (ohbox_monotonic () - t0) * 1000 / 50,
          host.n_hier);
  for (size_t i = 0; i < host.n_hier; i++)
    CHECK (count_subdirs (host.hier[i].parent) == before[i], "%s", host.hier[i].parent);
}

static void
fn_rootless (int rep, void *arg)
{
  (void) arg;
  struct ohbox_cgroup_host h;
  cleanup_error ohbox_error_t err = NULL;
  char c = 'x';
  if (setgroups (0, NULL) == 0 && setresgid (65534, 65534, 65534) == 0 && setresuid (65534, 65534, 65534) == 0
      && ohbox_cgroup_detect (NULL, &h, &err) == 0)
    c = h.disabled && h.rootless && h.warning && strstr (h.warning, "rootless") ? 'd' : 'e';
  if (write (rep, &c, 1) != 1)
    _exit (4);
}

/* Rootless without a delegated subtree (every host here): no cgroups, one
 * warning, no error. */
static void
test_rootless_without_delegation (void)
{
  REAL ();
  cleanup_kid struct kid k = { -1, -1, -1 };
  kid_start (&k, fn_rootless, NULL);
  kid_go (&k);
  char c = 0;
  CHECK (kid_read (&k, &c, 1));
  CHECK (c == 'd', "uid 65534 got `%c` (d: disabled with a warning, e: not disabled, x: error)", c);
}

static int
chown_cgroup (const char *dir, uid_t uid)
{
  static const char *const files[] = { "", "/cgroup.procs", "/cgroup.subtree_control", "/cgroup.threads" };
  for (size_t i = 0; i < 4; i++)
    {
      cleanup_free char *p = xasprintf ("%s%s", dir, files[i]);
      if (chown (p, uid, uid) < 0)
        return -1;
    }
  return 0;
}

static void
fn_delegated (int rep, void *arg)
{
  const char *want_base = arg;
  char msg[512] = "ok";
  struct ohbox_cgroup_host h;
  struct ohbox_cgroup *cg = NULL;
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_cgroup_limits l = { .memory = 32 << 20, .pids = 8 };
  if (setgroups (0, NULL) < 0 || setresgid (1000, 1000, 1000) < 0 || setresuid (1000, 1000, 1000) < 0)
    snprintf (msg, sizeof msg, "setresuid: %s", strerror (errno));
  else if (ohbox_cgroup_detect (NULL, &h, &err) < 0)
    snprintf (msg, sizeof msg, "detect: %s", err->msg);
  else if (h.disabled || h.n_hier != 1 || strcmp (h.hier[0].base, want_base) != 0)
    snprintf (msg, sizeof msg, "detect: disabled %d, base %s, warning %s", h.disabled, h.n_hier ? h.hier[0].base : "-",
              h.warning ? h.warning : "-");
  else if (ohbox_cgroup_create (&h, "deleg", &l, &cg, &err) < 0)
    snprintf (msg, sizeof msg, "create: %s", err->msg);
  else
    {
      cleanup_free char *max = rd (mem_dir (cg), "memory.max");
      pid_t p = fork ();
      if (p == 0)
        {
          alarm (60);
          for (;;)
            pause ();
        }
      if (ohbox_cgroup_attach (cg, p, &err) < 0)
        snprintf (msg, sizeof msg, "attach: %s", err->msg);
      else if (max == NULL || strcmp (max, "33554432") != 0)
        snprintf (msg, sizeof msg, "memory.max is %s", max ? max : "missing");
      else if (!listed (ohbox_cgroup_path (cg, 0), p))
        snprintf (msg, sizeof msg, "the process is not in the cgroup");
      if (ohbox_cgroup_destroy (cg, &err) < 0 && strcmp (msg, "ok") == 0)
        snprintf (msg, sizeof msg, "destroy: %s", err->msg);
      waitpid (p, NULL, 0);
    }
  if (write (rep, msg, sizeof msg) != sizeof msg)
    _exit (4);
}

/* Rootless with a delegated subtree, as systemd's Delegate=yes makes it: a
 * cgroup owned by uid 1000 holding a leaf with the process.  Needs a pure
 * v2 host (the qemu guest). */
static void
test_rootless_delegated (void)
{
  REAL ();
  if (host.mode != OHBOX_CGROUP_MODE_V2)
    {
      unit_skip ("needs a pure cgroup v2 host: tests/integration/cgroup2-guest.sh runs it in a qemu guest");
      return;
    }
  cleanup_free char *deleg = xasprintf ("%s/ohbox-test-deleg-%d", host.hier[0].base, (int) getpid ());
  cleanup_free char *leaf = xasprintf ("%s/leaf", deleg);
  cleanup_error ohbox_error_t err = NULL;
  CHECK (wr (host.hier[0].base, "cgroup.subtree_control", "+memory +pids") == 0);
  CHECK (mkdir (deleg, 0755) == 0 && mkdir (leaf, 0755) == 0);
  CHECK (chown_cgroup (deleg, 1000) == 0 && chown_cgroup (leaf, 1000) == 0);
  cleanup_kid struct kid k = { -1, -1, -1 };
  kid_start (&k, fn_delegated, deleg);
  char pid[16];
  snprintf (pid, sizeof pid, "%d", (int) k.pid);
  int r = wr (leaf, "cgroup.procs", pid);
  kid_go (&k);
  char msg[512] = "no report";
  bool got = r == 0 && kid_read (&k, msg, sizeof msg);
  kid_wait (&k);
  cleanup_free char *ohbox_dir = xasprintf ("%s/ohbox", deleg);
  rmdir (ohbox_dir);
  rmdir (leaf);
  rmdir (deleg);
  CHECK (r == 0);
  CHECK (got && strcmp (msg, "ok") == 0, "%s", msg);
  CHECK (!exists (deleg));
}

/* Device rules: the kid opens what they allow and nothing else (v1: the
 * devices lists; v2: the BPF filter; a hybrid host has both). */
static void
fn_open_devices (int rep, void *arg)
{
  (void) arg;
  static const struct
  {
    const char *path;
    int flags;
  } tries[] = {
    { "/dev/null", O_RDWR }, { "/dev/zero", O_RDONLY }, { "/dev/zero", O_WRONLY }, { "/dev/full", O_RDONLY }
  };
  char out[8] = "";
  for (size_t i = 0; i < 4; i++)
    {
      int fd = open (tries[i].path, tries[i].flags | O_CLOEXEC | O_NONBLOCK);
      out[i] = fd >= 0 ? 'y' : errno == EPERM ? 'n' : '?';
      if (fd >= 0)
        close (fd);
    }
  kid_report (rep, out, 4);
}

static void
check_device_rules (const struct ohbox_device_rule *rules, size_t n)
{
  cleanup_cg struct ohbox_cgroup *cg = make ("devices", NULL);
  CHECK (cg);
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_set_devices (cg, rules, n, &err) == 0, "%s", err->msg);
  cleanup_kid struct kid k = { -1, -1, -1 };
  CHECK (kid_start_in (&k, cg, fn_open_devices, NULL, &err) == 0, "%s", err->msg);
  char got[5] = "";
  CHECK (kid_read (&k, got, 4));
  /* null read-write, zero read but not write, full not at all. */
  CHECK_STR (got, "yynn");
  const char *v1 = ohbox_cgroup_path (cg, OHBOX_CGROUP_DEVICES);
  if (v1 != NULL)
    {
      cleanup_free char *list = rd (v1, "devices.list");
      CHECK (list && strstr (list, "c 1:5 r") && !strstr (list, "c 1:5 rw") && strstr (list, "c *:* m")
               && !strstr (list, "a *:*"),
             "%s", list ? list : "(none)");
    }
  CHECK (ohbox_cgroup_destroy (cg, &err) == 0, "%s", err->msg);
  kid_wait (&k);
}

static void
test_device_rules (void)
{
  REAL ();
  /* Not the default list: one that lets zero be read only (given all, then
   * its write taken back) and full not at all. */
  const struct ohbox_device_rule rules[] = {
    { 'c', -1, -1, "m", false }, { 'c', 1, 3, "rwm", false }, { 'c', 1, 5, "rwm", false }, { 'c', 1, 5, "w", true }
  };
  check_device_rules (rules, sizeof rules / sizeof rules[0]);
}

/* The same after a rule that denies everything, as runc's default spec's
 * linux.resources.devices starts: the v2 program once had instructions
 * after it that could never run, which the verifier refused. */
static void
test_device_rules_deny_all_first (void)
{
  REAL ();
  const struct ohbox_device_rule rules[] = { { 'a', -1, -1, "rwm", true },
                                             { 'c', -1, -1, "m", false },
                                             { 'c', 1, 3, "rwm", false },
                                             { 'c', 1, 5, "rwm", false },
                                             { 'c', 1, 5, "w", true } };
  check_device_rules (rules, sizeof rules / sizeof rules[0]);
}

/* ohbox_cgroup_adopt (ohbox-runc --systemd-cgroup): a directory a manager
 * made (here the first hierarchy's: systemd's scope) is used, not
 * refused; the missing ones are made; a failure takes back only what the
 * call made. */
static void
test_adopt (void)
{
  REAL ();
  cleanup_cg struct ohbox_cgroup *cg = make ("adopt", NULL);
  CHECK (cg);
  cleanup_free char *first = dir_of (&host, 0, "adopt");
  for (size_t i = 1; i < host.n_hier; i++)
    {
      cleanup_free char *d = dir_of (&host, i, "adopt");
      CHECK (rmdir (d) == 0, "rmdir %s: %s", d, strerror (errno));
    }
  /* A throttle on a device that is no block device (/dev/null's): the
   * kernel refuses it once the directories are there. */
  struct ohbox_cgroup_limits bad = { .n_blkio = 1 };
  bad.blkio[0].kind = OHBOX_BLKIO_READ_BPS;
  bad.blkio[0].major = 1;
  bad.blkio[0].minor = 3;
  bad.blkio[0].value = 1048576;
  struct ohbox_cgroup *again = NULL;
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_cgroup_adopt (&host, "adopt", &bad, &again, &err) < 0);
  CHECK (exists (first));
  for (size_t i = 1; i < host.n_hier; i++)
    {
      cleanup_free char *d = dir_of (&host, i, "adopt");
      CHECK (!exists (d), "%s left", d);
    }
  ohbox_error_release (&err);
  struct ohbox_cgroup_limits l = { .pids = 7 };
  CHECK (ohbox_cgroup_adopt (&host, "adopt", &l, &again, &err) == 0, "%s", err->msg);
  cleanup_free char *max = rd (ohbox_cgroup_path (again, OHBOX_CGROUP_PIDS), "pids.max");
  CHECK (max && atoi (max) == 7, "pids.max %s", max ? max : "(none)");
  CHECK (ohbox_cgroup_destroy (again, &err) == 0, "%s", err->msg);
  ohbox_cgroup_free (again);
  CHECK (gone_everywhere (&host, "adopt"));
}

UNIT_MAIN_BEGIN ("test-cgroup-lifecycle")
{
  /* Line-buffered even under the test runner: children fork. */
  setvbuf (stdout, NULL, _IOLBF, 0);
  setup_real ();
  RUN_TEST (test_attach_and_enter);
  RUN_TEST (test_clone_into_cgroup);
  RUN_TEST (test_kill_all);
  RUN_TEST (test_kill_all_procs_loop);
  RUN_TEST (test_destroy_nested);
  RUN_TEST (test_reconcile);
  RUN_TEST (test_ids_and_duplicates);
  RUN_TEST (test_create_destroy_loop);
  RUN_TEST (test_rootless_without_delegation);
  RUN_TEST (test_rootless_delegated);
  RUN_TEST (test_device_rules);
  RUN_TEST (test_device_rules_deny_all_first);
  RUN_TEST (test_adopt);
  RUN_TEST (test_nothing_left);
  ohbox_cgroup_host_release (&host);
}
UNIT_MAIN_END
