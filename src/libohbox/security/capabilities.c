/* capabilities.c: see capabilities.h. */
#include "config.h"
#include "security/capabilities.h"
#include "common/utils.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The 16-bit id calls keep the plain names on 32-bit x86 and arm; the
 * 32-bit ones are the *32 variants there. */
#ifdef SYS_setresuid32
#define OHBOX_SYS_SETRESUID SYS_setresuid32
#define OHBOX_SYS_SETRESGID SYS_setresgid32
#define OHBOX_SYS_SETGROUPS SYS_setgroups32
#else
#define OHBOX_SYS_SETRESUID SYS_setresuid
#define OHBOX_SYS_SETRESGID SYS_setresgid
#define OHBOX_SYS_SETGROUPS SYS_setgroups
#endif

struct ohbox_caps_plan
{
  struct ohbox_caps_sets sets;
  int last_cap;
  bool no_new_privs;
  bool change_ids;
  bool set_groups;
  uid_t uid;
  gid_t gid;
  size_t n_groups;
  gid_t *groups;
  cap_t proc; /* effective, permitted and inheritable, ready for capset(2) */
};

/* moby's oci/caps DefaultCapabilities(), in its order, without CAP_NET_RAW:
 * with it a sandbox forges frames on its bridge (ARP replies for a
 * neighbour's address, other sources: issue 14). ping keeps working
 * through ICMP datagram sockets, which the sandbox's own network namespace
 * opens to every gid it maps (net.ipv4.ping_group_range, linux.c).
 * `--cap-add NET_RAW` gives it back (with a warning). */
static const cap_value_t default_caps[] = {
  CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,     CAP_MKNOD, CAP_SETGID,      CAP_SETUID,
  CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_KILL,  CAP_AUDIT_WRITE,
};

/* Highest capability number the running kernel knows, at most 63. libcap
 * probes it once (PR_CAPBSET_READ) when it is loaded. */
static int
last_cap (void)
{
  int bits = cap_max_bits ();
  if (bits > 64)
    bits = 64;
  return bits - 1;
}

uint64_t
ohbox_caps_all (void)
{
  int last = last_cap ();
  return last >= 63 ? UINT64_MAX : (OHBOX_CAP_BIT (last + 1) - 1);
}

uint64_t
ohbox_caps_default (void)
{
  uint64_t caps = 0;
  for (size_t i = 0; i < sizeof default_caps / sizeof default_caps[0]; i++)
    caps |= OHBOX_CAP_BIT (default_caps[i]);
  return caps & ohbox_caps_all ();
}

int
ohbox_cap_lookup (const char *name)
{
  char buf[80];
  size_t len = strlen (name);

  /* Only letters, digits and '_', starting with a letter: cap_from_name()
   * would also take numbers and trailing blanks, which are not names. */
  if (len == 0 || len > 64 || !isalpha ((unsigned char) name[0]))
    return -1;
  for (size_t i = 0; i < len; i++)
    if (!isalnum ((unsigned char) name[i]) && name[i] != '_')
      return -1;
  if (strncasecmp (name, "CAP_", 4) == 0)
    snprintf (buf, sizeof buf, "%s", name);
  else
    snprintf (buf, sizeof buf, "cap_%s", name);

  cap_value_t value;
  if (cap_from_name (buf, &value) < 0 || value < 0 || value > 63)
    return -1;
  return (int) value;
}

int
ohbox_cap_parse (const char *name, int *ret_cap, ohbox_error_t *err)
{
  int cap = ohbox_cap_lookup (name);
  if (cap < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "unknown capability `%.80s`: use a name from capabilities(7) such as CAP_NET_ADMIN or "
                        "NET_ADMIN, or ALL",
                        name);
  *ret_cap = cap;
  return 0;
}

char *
ohbox_caps_format (uint64_t caps)
{
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  for (int c = 0; c < 64; c++)
    {
      if (!(caps & OHBOX_CAP_BIT (c)))
        continue;
      char *name = cap_to_name (c);
      if (name == NULL)
        abort ();
      if (b.len > 0)
        ohbox_buf_append (&b, ",", 1);
      /* cap_to_name() gives "cap_chown", or a bare number for a capability
       * newer than libcap. */
      if (isdigit ((unsigned char) name[0]))
        ohbox_buf_append (&b, "CAP_", 4);
      for (char *p = name; *p; p++)
        {
          char u = (char) toupper ((unsigned char) *p);
          ohbox_buf_append (&b, &u, 1);
        }
      cap_free (name);
    }
  return b.data;
}

/* Parses a --cap-add or --cap-drop list into a mask and an ALL flag.
 * REQUIRE_SUPPORTED rejects capabilities the kernel does not have. */
static int
parse_cap_list (const char *what, const char *const *names, size_t n, bool require_supported, uint64_t *ret_mask,
                bool *ret_all, ohbox_error_t *err)
{
  uint64_t all = ohbox_caps_all ();
  *ret_mask = 0;
  *ret_all = false;
  for (size_t i = 0; i < n; i++)
    {
      int cap = 0;
      if (strcasecmp (names[i], "ALL") == 0)
        {
          *ret_all = true;
          continue;
        }
      if (ohbox_cap_parse (names[i], &cap, err) < 0)
        return ohbox_error_prefix (err, "%s", what);
      if (require_supported && !(all & OHBOX_CAP_BIT (cap)))
        return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                            "%s: capability `%s` is not supported by the running kernel (last is %d)", what, names[i],
                            last_cap ());
      *ret_mask |= OHBOX_CAP_BIT (cap);
    }
  *ret_mask &= all;
  return 0;
}

int
ohbox_caps_tweak (uint64_t base, const char *const *add, size_t n_add, const char *const *drop, size_t n_drop,
                  uint64_t *ret_caps, uint64_t *ret_added, ohbox_error_t *err)
{
  uint64_t add_mask, drop_mask, caps, added;
  bool add_all, drop_all;

  if (parse_cap_list ("--cap-add", add, n_add, true, &add_mask, &add_all, err) < 0)
    return -1;
  if (parse_cap_list ("--cap-drop", drop, n_drop, false, &drop_mask, &drop_all, err) < 0)
    return -1;

  /* moby's TweakCapabilities, in the same order of precedence. */
  if (add_all)
    {
      caps = ohbox_caps_all () & ~drop_mask;
      added = caps;
    }
  else if (drop_all)
    {
      caps = add_mask;
      added = add_mask;
    }
  else
    {
      caps = ((base & ~drop_mask) | add_mask) & ohbox_caps_all ();
      added = add_mask;
    }
  *ret_caps = caps;
  if (ret_added)
    *ret_added = added & caps;
  return 0;
}

void
ohbox_caps_sets_for_user (uint64_t caps, uint64_t added, bool root, struct ohbox_caps_sets *ret)
{
  memset (ret, 0, sizeof *ret);
  ret->bounding = caps;
  if (root)
    {
      ret->effective = caps;
      ret->permitted = caps;
      return;
    }
  /* A non-root process keeps nothing through execve (no file
   * capabilities) except its ambient set, which must be in permitted and
   * inheritable. */
  ret->effective = ret->permitted = ret->inheritable = ret->ambient = added & caps;
}

static int
check_subset (uint64_t sub, const char *sub_name, uint64_t super, const char *super_name, ohbox_error_t *err)
{
  if ((sub & ~super) == 0)
    return 0;
  cleanup_free char *extra = ohbox_caps_format (sub & ~super);
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "capabilities: %s has %s, which %s does not have", sub_name, extra,
                      super_name);
}

static int
fill_flag (cap_t c, cap_flag_t flag, uint64_t mask, ohbox_error_t *err)
{
  for (int cap = 0; cap < 64; cap++)
    {
      cap_value_t v = cap;
      if ((mask & OHBOX_CAP_BIT (cap)) && cap_set_flag (c, flag, 1, &v, CAP_SET) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SECURITY, "cap_set_flag `%d`", cap);
    }
  return 0;
}

int
ohbox_caps_plan_new (const struct ohbox_caps_sets *sets, const struct ohbox_caps_user *user, unsigned int flags,
                     struct ohbox_caps_plan **ret, ohbox_error_t *err)
{
  uint64_t all = ohbox_caps_all ();
  const struct
  {
    uint64_t mask;
    const char *name;
  } named[] = {
    { sets->bounding, "the bounding set" },   { sets->effective, "the effective set" },
    { sets->permitted, "the permitted set" }, { sets->inheritable, "the inheritable set" },
    { sets->ambient, "the ambient set" },
  };

  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (check_subset (named[i].mask, named[i].name, all, "the running kernel", err) < 0)
      return -1;
  if (check_subset (sets->effective, "the effective set", sets->permitted, "the permitted set", err) < 0
      || check_subset (sets->ambient, "the ambient set", sets->permitted & sets->inheritable,
                       "the permitted and inheritable sets", err)
           < 0
      || check_subset (sets->inheritable, "the inheritable set", sets->bounding, "the bounding set", err) < 0)
    return -1;
  if (user && user->n_groups > OHBOX_CAPS_MAX_GROUPS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "capabilities: %zu supplementary groups, more than the limit of %d",
                        user->n_groups, OHBOX_CAPS_MAX_GROUPS);

  cap_t proc = cap_init ();
  if (proc == NULL)
    abort ();
  if (fill_flag (proc, CAP_EFFECTIVE, sets->effective, err) < 0
      || fill_flag (proc, CAP_PERMITTED, sets->permitted, err) < 0
      || fill_flag (proc, CAP_INHERITABLE, sets->inheritable, err) < 0)
    {
      cap_free (proc);
      return -1;
    }

  struct ohbox_caps_plan *p = xcalloc (1, sizeof *p);
  p->sets = *sets;
  p->last_cap = last_cap ();
  p->no_new_privs = (flags & OHBOX_CAPS_NO_NEW_PRIVS) != 0;
  p->proc = proc;
  if (user)
    {
      p->change_ids = true;
      p->uid = user->uid;
      p->gid = user->gid;
      p->set_groups = user->set_groups;
      p->n_groups = user->n_groups;
      p->groups = xcalloc (user->n_groups, sizeof (gid_t));
      if (user->n_groups)
        memcpy (p->groups, user->groups, user->n_groups * sizeof (gid_t));
    }
  *ret = p;
  return 0;
}

void
ohbox_caps_plan_free (struct ohbox_caps_plan *plan)
{
  if (plan == NULL)
    return;
  cap_free (plan->proc);
  free (plan->groups);
  free (plan);
}

static int
fail_step (const char **ret_step, const char *step)
{
  *ret_step = step;
  return -1;
}

int
ohbox_caps_apply (const struct ohbox_caps_plan *p, const char **ret_step)
{
  const char *unused;
  if (ret_step == NULL)
    ret_step = &unused;

  /* 1. The bounding set first, while CAP_SETPCAP is still effective: it is
   * what a root process gets back on execve. */
  for (int c = 0; c <= p->last_cap; c++)
    if (!(p->sets.bounding & OHBOX_CAP_BIT (c)) && cap_drop_bound (c) < 0)
      return fail_step (ret_step, "prctl(PR_CAPBSET_DROP)");

  /* 2. The ids. KEEPCAPS keeps the permitted set across a switch away from
   * uid 0 (the effective set is cleared; step 3 sets it again). Raw system
   * calls: glibc's wrappers would signal every thread of the process, and
   * after fork only this one exists; these are async-signal-safe. */
  if (p->change_ids)
    {
      if (prctl (PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) < 0)
        return fail_step (ret_step, "prctl(PR_SET_KEEPCAPS, 1)");
      if (p->set_groups && syscall (OHBOX_SYS_SETGROUPS, p->n_groups, p->groups) < 0)
        return fail_step (ret_step, "setgroups");
      if (syscall (OHBOX_SYS_SETRESGID, p->gid, p->gid, p->gid) < 0)
        return fail_step (ret_step, "setresgid");
      if (syscall (OHBOX_SYS_SETRESUID, p->uid, p->uid, p->uid) < 0)
        return fail_step (ret_step, "setresuid");
      if (prctl (PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) < 0)
        return fail_step (ret_step, "prctl(PR_SET_KEEPCAPS, 0)");
    }

  /* 3. Effective, permitted, inheritable (the cap_t was built in the
   * parent; cap_set_proc is a plain capset(2)). */
  if (cap_set_proc (p->proc) < 0)
    return fail_step (ret_step, "capset");

  /* 4. Ambient: needs each capability in permitted and inheritable, set
   * just above. Kernels without ambient capabilities (< 4.3) are fine as
   * long as none is asked for. */
  if (cap_reset_ambient () < 0 && (p->sets.ambient != 0 || errno != EINVAL))
    return fail_step (ret_step, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
  for (int c = 0; c <= p->last_cap; c++)
    if ((p->sets.ambient & OHBOX_CAP_BIT (c)) && cap_set_ambient (c, CAP_SET) < 0)
      return fail_step (ret_step, "prctl(PR_CAP_AMBIENT_RAISE)");

  /* 5. no_new_privs: execve can no longer grant anything (setuid bits,
   * file capabilities), and seccomp can be loaded without CAP_SYS_ADMIN. */
  if (p->no_new_privs && prctl (PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0)
    return fail_step (ret_step, "prctl(PR_SET_NO_NEW_PRIVS)");
  return 0;
}
