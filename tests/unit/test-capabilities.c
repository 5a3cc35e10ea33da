/* test-capabilities.c: capability names, Docker's --cap-add/--cap-drop
 * rules, and the sets a real child process ends up with (read back from
 * /proc/self/status after execve) for root and non-root users. The tests
 * that apply capabilities need root and skip otherwise. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "security/capabilities.h"
#include "unit.h"
#include "common/utils.h"

/* Docker's default set as `capsh --decode` prints it for a container, and
 * ohbox's: the same without CAP_NET_RAW (13), which forges frames on the
 * bridge (issue 14). */
#define DOCKER_DEFAULT_MASK UINT64_C (0xa80425fb)
#define CAP_NUM_NET_RAW 13
#define OHBOX_DEFAULT_MASK (DOCKER_DEFAULT_MASK & ~OHBOX_CAP_BIT (CAP_NUM_NET_RAW))

#define CAP_NUM_CHOWN 0
#define CAP_NUM_KILL 5
#define CAP_NUM_NET_BIND_SERVICE 10
#define CAP_NUM_NET_ADMIN 12
#define CAP_NUM_SYS_ADMIN 21

static void
test_lookup (void)
{
  cleanup_error ohbox_error_t err = NULL;
  int cap = -1;

  CHECK (ohbox_cap_lookup ("chown") == CAP_NUM_CHOWN);
  CHECK (ohbox_cap_lookup ("CAP_CHOWN") == CAP_NUM_CHOWN);
  CHECK (ohbox_cap_lookup ("Cap_Chown") == CAP_NUM_CHOWN);
  CHECK (ohbox_cap_lookup ("NET_ADMIN") == CAP_NUM_NET_ADMIN);
  CHECK (ohbox_cap_lookup ("cap_sys_admin") == CAP_NUM_SYS_ADMIN);
  CHECK (ohbox_cap_lookup ("ALL") == -1);
  CHECK (ohbox_cap_lookup ("12") == -1, "numbers are not names");
  CHECK (ohbox_cap_lookup ("cap_12") == -1);
  CHECK (ohbox_cap_lookup ("sys_admin ") == -1, "trailing blank");
  CHECK (ohbox_cap_lookup ("") == -1);
  CHECK (ohbox_cap_lookup ("CAP_") == -1);
  CHECK (ohbox_cap_lookup ("NOT_A_CAP") == -1);

  CHECK (ohbox_cap_parse ("kill", &cap, &err) == 0 && cap == CAP_NUM_KILL);
  CHECK (ohbox_cap_parse ("CAP_NOPE", &cap, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_USAGE);
  CHECK (strstr (err->msg, "unknown capability `CAP_NOPE`") != NULL, "%s", err->msg);
  CHECK (strstr (err->msg, "capabilities(7)") != NULL, "%s", err->msg);
}

static void
test_default_set (void)
{
  static const char *const names[] = { "CHOWN",   "DAC_OVERRIDE", "FSETID",      "FOWNER",          "MKNOD",
                                       "NET_RAW", "SETGID",       "SETUID",      "SETFCAP",         "SETPCAP",
                                       "KILL",    "SYS_CHROOT",   "AUDIT_WRITE", "NET_BIND_SERVICE" };
  uint64_t expected = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    {
      int c = ohbox_cap_lookup (names[i]);
      CHECK (c >= 0, "%s", names[i]);
      expected |= OHBOX_CAP_BIT (c);
    }
  CHECK (expected == DOCKER_DEFAULT_MASK, "%llx", (unsigned long long) expected);
  CHECK (ohbox_caps_default () == OHBOX_DEFAULT_MASK, "%llx", (unsigned long long) ohbox_caps_default ());
  CHECK ((ohbox_caps_default () & OHBOX_CAP_BIT (CAP_NUM_NET_RAW)) == 0, "no CAP_NET_RAW by default");
  /* Every kernel this runs on has at least CAP_AUDIT_READ (37). */
  CHECK ((ohbox_caps_all () & OHBOX_CAP_BIT (37)) != 0);
  CHECK ((ohbox_caps_all () & DOCKER_DEFAULT_MASK) == DOCKER_DEFAULT_MASK);
}

static void
test_format (void)
{
  cleanup_free char *s = ohbox_caps_format (OHBOX_CAP_BIT (CAP_NUM_CHOWN) | OHBOX_CAP_BIT (CAP_NUM_SYS_ADMIN));
  CHECK_STR (s, "CAP_CHOWN,CAP_SYS_ADMIN");
  cleanup_free char *none = ohbox_caps_format (0);
  CHECK_STR (none, "");
}

static void
test_tweak (void)
{
  const uint64_t def = ohbox_caps_default ();
  uint64_t caps = 0, added = 0;

  {
    cleanup_error ohbox_error_t err = NULL;
    CHECK (ohbox_caps_tweak (def, NULL, 0, NULL, 0, &caps, &added, &err) == 0);
    CHECK (caps == def && added == 0);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *drop[] = { "chown" };
    CHECK (ohbox_caps_tweak (def, NULL, 0, drop, 1, &caps, &added, &err) == 0);
    CHECK (caps == (def & ~OHBOX_CAP_BIT (CAP_NUM_CHOWN)) && added == 0);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *add[] = { "CAP_SYS_ADMIN" };
    CHECK (ohbox_caps_tweak (def, add, 1, NULL, 0, &caps, &added, &err) == 0);
    CHECK (caps == (def | OHBOX_CAP_BIT (CAP_NUM_SYS_ADMIN)));
    CHECK (added == OHBOX_CAP_BIT (CAP_NUM_SYS_ADMIN));
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *add[] = { "chown" }, *drop[] = { "all" };
    CHECK (ohbox_caps_tweak (def, add, 1, drop, 1, &caps, &added, &err) == 0);
    CHECK (caps == OHBOX_CAP_BIT (CAP_NUM_CHOWN) && added == caps);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *add[] = { "ALL" }, *drop[] = { "KILL" };
    CHECK (ohbox_caps_tweak (def, add, 1, drop, 1, &caps, &added, &err) == 0);
    CHECK (caps == (ohbox_caps_all () & ~OHBOX_CAP_BIT (CAP_NUM_KILL)));
    CHECK (added == caps);
  }
  {
    /* --cap-add NET_RAW gives back what Docker's default has. */
    cleanup_error ohbox_error_t err = NULL;
    const char *add[] = { "NET_RAW" };
    CHECK (ohbox_caps_tweak (def, add, 1, NULL, 0, &caps, &added, &err) == 0);
    CHECK (caps == DOCKER_DEFAULT_MASK && added == OHBOX_CAP_BIT (CAP_NUM_NET_RAW));
  }
  {
    /* An added name wins over the same name dropped (Docker's order). */
    cleanup_error ohbox_error_t err = NULL;
    const char *add[] = { "net_admin" }, *drop[] = { "NET_ADMIN", "kill" };
    CHECK (ohbox_caps_tweak (def, add, 1, drop, 2, &caps, &added, &err) == 0);
    CHECK (caps == ((def | OHBOX_CAP_BIT (CAP_NUM_NET_ADMIN)) & ~OHBOX_CAP_BIT (CAP_NUM_KILL)));
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *add[] = { "chown", "bogus" };
    CHECK (ohbox_caps_tweak (def, add, 2, NULL, 0, &caps, &added, &err) < 0);
    CHECK (err->kind == OHBOX_ERR_USAGE);
    CHECK (strstr (err->msg, "--cap-add: unknown capability `bogus`") != NULL, "%s", err->msg);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *drop[] = { "CAP_WHATEVER" };
    CHECK (ohbox_caps_tweak (def, NULL, 0, drop, 1, &caps, &added, &err) < 0);
    CHECK (strstr (err->msg, "--cap-drop: unknown capability `CAP_WHATEVER`") != NULL, "%s", err->msg);
  }
}

static void
test_sets_for_user (void)
{
  struct ohbox_caps_sets s;
  const uint64_t caps = ohbox_caps_default () | OHBOX_CAP_BIT (CAP_NUM_NET_ADMIN);
  const uint64_t added = OHBOX_CAP_BIT (CAP_NUM_NET_ADMIN) | OHBOX_CAP_BIT (CAP_NUM_SYS_ADMIN);

  ohbox_caps_sets_for_user (caps, added, true, &s);
  CHECK (s.bounding == caps && s.effective == caps && s.permitted == caps);
  CHECK (s.inheritable == 0 && s.ambient == 0);

  ohbox_caps_sets_for_user (caps, added, false, &s);
  CHECK (s.bounding == caps);
  /* SYS_ADMIN is not in CAPS: never more than the bounding set. */
  CHECK (s.effective == OHBOX_CAP_BIT (CAP_NUM_NET_ADMIN));
  CHECK (s.permitted == s.effective && s.inheritable == s.effective && s.ambient == s.effective);
}

static void
test_plan_invalid (void)
{
  struct ohbox_caps_plan *plan = NULL;
  const uint64_t chown = OHBOX_CAP_BIT (CAP_NUM_CHOWN), kill = OHBOX_CAP_BIT (CAP_NUM_KILL);
  {
    cleanup_error ohbox_error_t err = NULL;
    struct ohbox_caps_sets s = { .bounding = chown | kill, .effective = chown | kill, .permitted = chown };
    CHECK (ohbox_caps_plan_new (&s, NULL, 0, &plan, &err) < 0);
    CHECK (strstr (err->msg, "the effective set has CAP_KILL, which the permitted set does not have") != NULL, "%s",
           err->msg);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    struct ohbox_caps_sets s = { .bounding = chown, .effective = chown, .permitted = chown, .ambient = chown };
    CHECK (ohbox_caps_plan_new (&s, NULL, 0, &plan, &err) < 0);
    CHECK (strstr (err->msg, "ambient set has CAP_CHOWN") != NULL, "%s", err->msg);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    struct ohbox_caps_sets s = { .bounding = chown, .inheritable = kill };
    CHECK (ohbox_caps_plan_new (&s, NULL, 0, &plan, &err) < 0);
    CHECK (strstr (err->msg, "inheritable set has CAP_KILL, which the bounding set") != NULL, "%s", err->msg);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    struct ohbox_caps_sets s = { .bounding = chown };
    struct ohbox_caps_user u = { .uid = 1, .gid = 1, .n_groups = OHBOX_CAPS_MAX_GROUPS + 1, .set_groups = true };
    CHECK (ohbox_caps_plan_new (&s, &u, 0, &plan, &err) < 0);
    CHECK (strstr (err->msg, "supplementary groups, more than the limit") != NULL, "%s", err->msg);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    struct ohbox_caps_sets s = { .bounding = UINT64_MAX };
    if (ohbox_caps_all () == UINT64_MAX)
      return;
    CHECK (ohbox_caps_plan_new (&s, NULL, 0, &plan, &err) < 0);
    CHECK (strstr (err->msg, "which the running kernel does not have") != NULL, "%s", err->msg);
  }
}

/* What a child reports: /proc/self/status fields after ohbox_caps_apply
 * and execve of cat. */
struct status
{
  uint64_t inh, prm, eff, bnd, amb;
  int nnp;
  unsigned uid, gid;
  char groups[128];
};

static int
parse_status (const char *text, struct status *st)
{
  int found = 0;
  memset (st, 0, sizeof *st);
  st->nnp = -1;
  for (const char *line = text; line && *line; line = strchr (line, '\n'), line = line ? line + 1 : NULL)
    {
      unsigned long long v;
      if (sscanf (line, "CapInh: %llx", &v) == 1)
        st->inh = v, found++;
      else if (sscanf (line, "CapPrm: %llx", &v) == 1)
        st->prm = v, found++;
      else if (sscanf (line, "CapEff: %llx", &v) == 1)
        st->eff = v, found++;
      else if (sscanf (line, "CapBnd: %llx", &v) == 1)
        st->bnd = v, found++;
      else if (sscanf (line, "CapAmb: %llx", &v) == 1)
        st->amb = v, found++;
      else if (sscanf (line, "NoNewPrivs: %d", &st->nnp) == 1)
        found++;
      else if (sscanf (line, "Uid: %u", &st->uid) == 1)
        found++;
      else if (sscanf (line, "Gid: %u", &st->gid) == 1)
        found++;
      else if (strncmp (line, "Groups:", 7) == 0)
        {
          const char *p = line + 7, *end = strchr (p, '\n');
          while (*p == ' ' || *p == '\t')
            p++;
          size_t n = end ? (size_t) (end - p) : strlen (p);
          while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
          snprintf (st->groups, sizeof st->groups, "%.*s", (int) n, p);
        }
    }
  return found == 8 ? 0 : -1;
}

/* Forks; the child applies PLAN (reporting a failed step on stdout) and
 * execs `cat /proc/self/status` into a pipe; fills *ST from it. */
static int
status_after_exec (const struct ohbox_caps_plan *plan, struct status *st, char *why, size_t why_len)
{
  int p[2];
  pid_t pid = unit_fork_piped (p, why, why_len);
  if (pid < 0)
    return -1;
  if (pid == 0)
    {
      const char *step = "?";
      dup2 (p[1], 1);
      close (p[1]);
      if (ohbox_caps_apply (plan, &step) < 0)
        {
          dprintf (1, "APPLY FAILED: %s: %s\n", step, strerror (errno));
          _exit (3);
        }
      execl ("/bin/cat", "cat", "/proc/self/status", (char *) NULL);
      dprintf (1, "EXEC FAILED: %s\n", strerror (errno));
      _exit (4);
    }
  cleanup_free char *out = NULL;
  cleanup_error ohbox_error_t err = NULL;
  int rc = ohbox_read_fd (p[0], "pipe", 1 << 20, &out, NULL, &err);
  close (p[0]);
  int wstatus;
  waitpid (pid, &wstatus, 0);
  if (rc < 0)
    return snprintf (why, why_len, "%s", err->msg), -1;
  if (!WIFEXITED (wstatus) || WEXITSTATUS (wstatus) != 0)
    return snprintf (why, why_len, "child status %#x: %.200s", wstatus, out), -1;
  if (parse_status (out, st) < 0)
    return snprintf (why, why_len, "cannot parse: %.300s", out), -1;
  return 0;
}

/* The status of a child after applying SETS for USER (NULL: root) with
 * FLAGS; -1 with WHY filled when the plan or the child failed. */
static int
run_with_sets (const struct ohbox_caps_sets *sets, const struct ohbox_caps_user *user, unsigned flags,
               struct status *st, char *why, size_t why_len)
{
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_caps_plan *plan = NULL;
  if (ohbox_caps_plan_new (sets, user, flags, &plan, &err) < 0)
    return snprintf (why, why_len, "plan: %s", err->msg), -1;
  int rc = status_after_exec (plan, st, why, why_len);
  ohbox_caps_plan_free (plan);
  return rc;
}

/* run_with_sets for root with Docker's default capabilities. */
static int
run_root_default (unsigned flags, struct status *st, char *why, size_t why_len)
{
  struct ohbox_caps_sets sets;
  ohbox_caps_sets_for_user (ohbox_caps_default (), 0, true, &sets);
  return run_with_sets (&sets, NULL, flags, st, why, why_len);
}

static bool
need_root (void)
{
  if (geteuid () == 0)
    return true;
  unit_skip ("needs root to change capabilities and ids");
  return false;
}

/* Root with the default capabilities applied with FLAGS: exactly the
 * default set, no_new_privs as FLAGS ask. */
static void
check_root_default (unsigned flags)
{
  struct status st;
  char why[512];
  CHECK (run_root_default (flags, &st, why, sizeof why) == 0, "%s", why);
  CHECK (st.uid == 0);
  CHECK (st.bnd == OHBOX_DEFAULT_MASK, "CapBnd %llx", (unsigned long long) st.bnd);
  CHECK (st.eff == OHBOX_DEFAULT_MASK, "CapEff %llx", (unsigned long long) st.eff);
  CHECK (st.prm == OHBOX_DEFAULT_MASK, "CapPrm %llx", (unsigned long long) st.prm);
  CHECK (st.inh == 0 && st.amb == 0, "CapInh %llx CapAmb %llx", (unsigned long long) st.inh,
         (unsigned long long) st.amb);
  CHECK (st.nnp == ((flags & OHBOX_CAPS_NO_NEW_PRIVS) ? 1 : 0), "NoNewPrivs %d", st.nnp);
}

static void
test_apply_root_default (void)
{
  if (need_root ())
    check_root_default (OHBOX_CAPS_NO_NEW_PRIVS);
}

static void
test_apply_without_no_new_privs (void)
{
  if (need_root ())
    check_root_default (0);
}

/* Forks; the child applies PLAN and exits with what ACTION (ARG) returns:
 * 0 or an errno (200: the plan failed). -1 when the child did not exit. */
static int
errno_after (const struct ohbox_caps_plan *plan, int (*action) (const void *arg), const void *arg)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      if (ohbox_caps_apply (plan, NULL) < 0)
        _exit (200);
      _exit (action (arg));
    }
  int wstatus;
  if (pid < 0 || waitpid (pid, &wstatus, 0) < 0 || !WIFEXITED (wstatus))
    return -1;
  return WEXITSTATUS (wstatus);
}

/* chown PATH to 1234:1234: 0 or its errno. */
static int
chown_errno (const void *path)
{
  return chown (path, 1234, 1234) == 0 ? 0 : errno;
}

static void
test_cap_drop_chown (void)
{
  if (!need_root ())
    return;
  char path[] = "/tmp/ohbox-test-caps-XXXXXX";
  int fd = mkstemp (path);
  CHECK (fd >= 0);
  close (fd);

  struct ohbox_caps_sets sets;
  struct ohbox_caps_plan *with = NULL, *without = NULL;
  uint64_t caps = 0;
  const char *drop[] = { "CHOWN" };
  cleanup_error ohbox_error_t err = NULL;
  int rc_with = -1, rc_without = -1;

  if (ohbox_caps_tweak (ohbox_caps_default (), NULL, 0, drop, 1, &caps, NULL, &err) == 0)
    {
      ohbox_caps_sets_for_user (caps, 0, true, &sets);
      if (ohbox_caps_plan_new (&sets, NULL, OHBOX_CAPS_NO_NEW_PRIVS, &without, &err) == 0)
        rc_without = errno_after (without, chown_errno, path);
      ohbox_caps_sets_for_user (ohbox_caps_default (), 0, true, &sets);
      if (ohbox_caps_plan_new (&sets, NULL, OHBOX_CAPS_NO_NEW_PRIVS, &with, &err) == 0)
        rc_with = errno_after (with, chown_errno, path);
    }
  ohbox_caps_plan_free (with);
  ohbox_caps_plan_free (without);
  unlink (path);
  CHECK (err == NULL, "%s", err->msg);
  CHECK (rc_without == EPERM, "chown without CAP_CHOWN gave %d", rc_without);
  CHECK (rc_with == 0, "chown with CAP_CHOWN gave %d", rc_with);
}

static void
test_non_root_drop_all (void)
{
  if (!need_root ())
    return;
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_caps_sets sets;
  struct ohbox_caps_user user = { .uid = 1000, .gid = 1000, .set_groups = true };
  struct status st;
  uint64_t caps = 1, added = 1;
  const char *drop[] = { "ALL" };
  char why[512];

  CHECK (ohbox_caps_tweak (ohbox_caps_default (), NULL, 0, drop, 1, &caps, &added, &err) == 0);
  CHECK (caps == 0 && added == 0);
  ohbox_caps_sets_for_user (caps, added, false, &sets);
  CHECK (run_with_sets (&sets, &user, OHBOX_CAPS_NO_NEW_PRIVS, &st, why, sizeof why) == 0, "%s", why);
  CHECK (st.uid == 1000 && st.gid == 1000, "uid %u gid %u", st.uid, st.gid);
  CHECK_STR (st.groups, "");
  CHECK (st.inh == 0 && st.prm == 0 && st.eff == 0 && st.bnd == 0 && st.amb == 0,
         "Inh %llx Prm %llx Eff %llx Bnd %llx Amb %llx", (unsigned long long) st.inh, (unsigned long long) st.prm,
         (unsigned long long) st.eff, (unsigned long long) st.bnd, (unsigned long long) st.amb);
  CHECK (st.nnp == 1);
}

static void
test_non_root_default (void)
{
  if (!need_root ())
    return;
  struct ohbox_caps_sets sets;
  const gid_t groups[] = { 2000, 2001 };
  struct ohbox_caps_user user = { .uid = 1000, .gid = 1001, .groups = groups, .n_groups = 2, .set_groups = true };
  struct status st;
  char why[512];

  ohbox_caps_sets_for_user (ohbox_caps_default (), 0, false, &sets);
  CHECK (run_with_sets (&sets, &user, OHBOX_CAPS_NO_NEW_PRIVS, &st, why, sizeof why) == 0, "%s", why);
  CHECK (st.uid == 1000 && st.gid == 1001, "uid %u gid %u", st.uid, st.gid);
  CHECK_STR (st.groups, "2000 2001");
  /* Like Docker: the bounding set, nothing usable. */
  CHECK (st.bnd == OHBOX_DEFAULT_MASK, "CapBnd %llx", (unsigned long long) st.bnd);
  CHECK (st.eff == 0 && st.prm == 0 && st.inh == 0 && st.amb == 0, "Eff %llx Prm %llx", (unsigned long long) st.eff,
         (unsigned long long) st.prm);
}

/* Binds 127.0.0.1:*PORT: 0 or its errno. */
static int
bind_errno (const void *port)
{
  int s = socket (AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons (*(const int *) port) };
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  int one = 1;
  setsockopt (s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  return s >= 0 && bind (s, (struct sockaddr *) &a, sizeof a) == 0 ? 0 : errno;
}

static void
test_non_root_cap_add (void)
{
  if (!need_root ())
    return;
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_caps_sets sets;
  struct ohbox_caps_plan *plan = NULL, *plain = NULL;
  struct ohbox_caps_user user = { .uid = 1000, .gid = 1000, .set_groups = true };
  struct status st;
  uint64_t caps = 0, added = 0;
  const char *add[] = { "net_bind_service" };
  const uint64_t nbs = OHBOX_CAP_BIT (CAP_NUM_NET_BIND_SERVICE);
  char why[512];

  CHECK (ohbox_caps_tweak (ohbox_caps_default (), add, 1, NULL, 0, &caps, &added, &err) == 0);
  ohbox_caps_sets_for_user (caps, added, false, &sets);
  CHECK (ohbox_caps_plan_new (&sets, &user, OHBOX_CAPS_NO_NEW_PRIVS, &plan, &err) == 0, "%s", err->msg);
  /* A privileged port: below net.ipv4.ip_unprivileged_port_start. */
  int port = 1024;
  cleanup_free char *start = NULL;
  cleanup_error ohbox_error_t read_err = NULL;
  if (ohbox_read_file_at (AT_FDCWD, "/proc/sys/net/ipv4/ip_unprivileged_port_start", 64, &start, NULL, &read_err) == 0)
    port = atoi (start) - 1;
  int rc = status_after_exec (plan, &st, why, sizeof why);
  int bind_rc = port > 0 ? errno_after (plan, bind_errno, &port) : 0;
  ohbox_caps_plan_free (plan);
  CHECK (rc == 0, "%s", why);
  CHECK (st.uid == 1000);
  /* Only the explicitly added capability survives execve, via ambient. */
  CHECK (st.eff == nbs && st.prm == nbs && st.amb == nbs && st.inh == nbs, "Eff %llx Prm %llx Amb %llx Inh %llx",
         (unsigned long long) st.eff, (unsigned long long) st.prm, (unsigned long long) st.amb,
         (unsigned long long) st.inh);
  CHECK (st.bnd == OHBOX_DEFAULT_MASK);
  CHECK (bind_rc == 0, "bind to port %d with CAP_NET_BIND_SERVICE gave %d", port, bind_rc);
  if (port <= 0)
    {
      unit_skip ("every port is unprivileged here (net.ipv4.ip_unprivileged_port_start is 0)");
      return;
    }

  /* The same user without it cannot bind a privileged port. */
  ohbox_caps_sets_for_user (ohbox_caps_default (), 0, false, &sets);
  CHECK (ohbox_caps_plan_new (&sets, &user, OHBOX_CAPS_NO_NEW_PRIVS, &plain, &err) == 0, "%s", err->msg);
  bind_rc = errno_after (plain, bind_errno, &port);
  ohbox_caps_plan_free (plain);
  CHECK (bind_rc == EACCES, "bind to port %d without the capability gave %d", port, bind_rc);
}

UNIT_MAIN_BEGIN ("test-capabilities")
RUN_TEST (test_lookup);
RUN_TEST (test_default_set);
RUN_TEST (test_format);
RUN_TEST (test_tweak);
RUN_TEST (test_sets_for_user);
RUN_TEST (test_plan_invalid);
RUN_TEST (test_apply_root_default);
RUN_TEST (test_apply_without_no_new_privs);
RUN_TEST (test_cap_drop_chown);
RUN_TEST (test_non_root_drop_all);
RUN_TEST (test_non_root_default);
RUN_TEST (test_non_root_cap_add);
UNIT_MAIN_END
