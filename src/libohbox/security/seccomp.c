/* seccomp.c: see seccomp.h. */
#include "config.h"
#include "security/seccomp_internal.h"
/* libseccomp's header has the same name as ours: with -I src/libohbox,
 * <seccomp.h> finds ours again, which forwards to the next one on the
 * include path when this is defined (see the end of seccomp.h). */
#define OHBOX_SECCOMP_WANT_LIBSECCOMP 1
#include <seccomp.h>

#include "security/capabilities.h"
#include "common/utils.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The default profile, compiled in (see seccomp.h). The build passes the
 * absolute path; the relative one works for a build in the source tree. */
#ifndef OHBOX_SECCOMP_DEFAULT_PROFILE_FILE
#define OHBOX_SECCOMP_DEFAULT_PROFILE_FILE "seccomp-profiles/default.json"
#endif
__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        ".hidden ohbox_seccomp_builtin_start\n"
        ".globl ohbox_seccomp_builtin_start\n"
        "ohbox_seccomp_builtin_start:\n"
        ".incbin \"" OHBOX_SECCOMP_DEFAULT_PROFILE_FILE "\"\n"
        ".hidden ohbox_seccomp_builtin_end\n"
        ".globl ohbox_seccomp_builtin_end\n"
        "ohbox_seccomp_builtin_end:\n"
        ".byte 0\n"
        ".popsection\n");
extern const char ohbox_seccomp_builtin_start[] __attribute__ ((visibility ("hidden")));
extern const char ohbox_seccomp_builtin_end[] __attribute__ ((visibility ("hidden")));

#define MAX_NAME_LEN 64
#define MAX_LIST_LEN 64 /* caps or arches in one includes/excludes */
#define MAX_ARCHES 8    /* architectures in one filter */
#define MAX_ERRNO 4095

struct compile
{
  const char *name; /* of the profile, for messages */
  ohbox_error_t *err;
  const struct ohbox_seccomp_options *opts;
  scmp_filter_ctx ctx;
  uint32_t native;
  const char *native_docker; /* the host in Docker's arch names */
  int kernel[3];
  uint32_t default_action;
  struct ohbox_seccomp_arch arches[MAX_ARCHES];
  size_t n_arches;
  size_t n_names;
};

static void
cleanup_json_fn (json_t **j)
{
  json_decref (*j);
}
#define cleanup_json __attribute__ ((cleanup (cleanup_json_fn)))

static void
cleanup_scmp_fn (scmp_filter_ctx *ctx)
{
  if (*ctx)
    seccomp_release (*ctx);
}
#define cleanup_scmp __attribute__ ((cleanup (cleanup_scmp_fn)))

/* "seccomp profile `NAME`: WHERE: MESSAGE", an invalid profile. */
static int __attribute__ ((format (printf, 4, 5)))
perr (struct compile *c, int kind, const char *where, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = xvasprintf (fmt, ap);
  va_end (ap);
  return ohbox_error (c->err, kind, 0, "seccomp profile `%s`: %s%s%s", c->name, where ? where : "", where ? ": " : "",
                      msg);
}

/* Docker's architecture names (Go's GOARCH) for includes/excludes.arches. */
static const struct
{
  uint32_t token;
  const char *docker;
  uint32_t compat[2]; /* other ABIs the kernel runs on this host */
} arch_table[] = {
  { SCMP_ARCH_X86_64, "amd64", { SCMP_ARCH_X86, SCMP_ARCH_X32 } },
  { SCMP_ARCH_X86, "x86", { 0, 0 } },
  { SCMP_ARCH_X32, "x32", { 0, 0 } },
  { SCMP_ARCH_AARCH64, "arm64", { SCMP_ARCH_ARM, 0 } },
  { SCMP_ARCH_ARM, "arm", { 0, 0 } },
  { SCMP_ARCH_PPC64LE, "ppc64le", { 0, 0 } },
  { SCMP_ARCH_PPC64, "ppc64", { SCMP_ARCH_PPC, 0 } },
  { SCMP_ARCH_S390X, "s390x", { SCMP_ARCH_S390, 0 } },
  { SCMP_ARCH_S390, "s390", { 0, 0 } },
  { SCMP_ARCH_RISCV64, "riscv64", { 0, 0 } },
  { SCMP_ARCH_MIPS64, "mips64", { SCMP_ARCH_MIPS, SCMP_ARCH_MIPS64N32 } },
  { SCMP_ARCH_MIPSEL64, "mipsel64", { SCMP_ARCH_MIPSEL, SCMP_ARCH_MIPSEL64N32 } },
};

static bool
arch_runs_here (uint32_t native, uint32_t token)
{
  if (token == native)
    return true;
  for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
    if (arch_table[i].token == native)
      return arch_table[i].compat[0] == token || arch_table[i].compat[1] == token;
  return false;
}

/* "SCMP_ARCH_X86_64" -> the libseccomp token, 0 when unknown to it. */
static uint32_t
arch_token (const char *s)
{
  char buf[MAX_NAME_LEN + 1];
  if (strncmp (s, "SCMP_ARCH_", 10) != 0 || strlen (s + 10) > MAX_NAME_LEN)
    return 0;
  size_t i;
  for (i = 0; s[10 + i]; i++)
    buf[i] = (char) tolower ((unsigned char) s[10 + i]);
  buf[i] = '\0';
  return seccomp_arch_resolve_name (buf);
}

static int
add_arch (struct compile *c, uint32_t token)
{
  for (size_t i = 0; i < c->n_arches; i++)
    if (c->arches[i].token == token)
      return 0;
  if (c->n_arches == MAX_ARCHES)
    return 0;
  if (token != c->native)
    {
      int rc = seccomp_arch_add (c->ctx, token);
      if (rc < 0 && rc != -EEXIST)
        return ohbox_error (c->err, OHBOX_ERR_GENERIC, -rc, "seccomp_arch_add `%u`", token);
    }
  c->arches[c->n_arches].token = token;
  c->arches[c->n_arches].max_nr = -1;
  c->n_arches++;
  return 0;
}

/* "6.18.44-fc" -> {6, 18, 44}, "4.8" -> {4, 8, 0}; at least major.minor.
 * STRICT (minKernel) wants nothing after the numbers. */
static int
parse_version (const char *s, bool strict, int out[3])
{
  int n = 0;
  out[0] = out[1] = out[2] = 0;
  while (n < 3 && isdigit ((unsigned char) *s))
    {
      long v = 0;
      while (isdigit ((unsigned char) *s))
        {
          v = v * 10 + (*s++ - '0');
          if (v > 1000000)
            return -1;
        }
      out[n++] = (int) v;
      if (*s != '.' || n == 3 || !isdigit ((unsigned char) s[1]))
        break;
      s++;
    }
  if (n < 2 || (strict && *s != '\0'))
    return -1;
  return 0;
}

static int
version_cmp (const int a[3], const int b[3])
{
  for (int i = 0; i < 3; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* The string at KEY of OBJ, NULL when absent or null; an error (-1) when
 * it has another type. */
static int
get_string (struct compile *c, json_t *obj, const char *key, const char *where, const char **ret)
{
  json_t *v = json_object_get (obj, key);
  *ret = NULL;
  if (v == NULL || json_is_null (v))
    return 0;
  if (!json_is_string (v))
    return perr (c, OHBOX_ERR_USAGE, where, "`%s` must be a string", key);
  *ret = json_string_value (v);
  return 0;
}

static int
get_uint (struct compile *c, json_t *obj, const char *key, const char *where, uint64_t max, bool *ret_set,
          uint64_t *ret)
{
  json_t *v = json_object_get (obj, key);
  *ret_set = false;
  *ret = 0;
  if (v == NULL || json_is_null (v))
    return 0;
  if (!json_is_integer (v) || json_integer_value (v) < 0 || (uint64_t) json_integer_value (v) > max)
    return perr (c, OHBOX_ERR_USAGE, where, "`%s` must be an integer from 0 to %llu", key, (unsigned long long) max);
  *ret_set = true;
  *ret = (uint64_t) json_integer_value (v);
  return 0;
}

/* An array of strings at KEY (absent or null: empty), at most MAX long. */
static int
get_string_array (struct compile *c, json_t *obj, const char *key, const char *where, size_t max, json_t **ret)
{
  json_t *v = json_object_get (obj, key);
  *ret = NULL;
  if (v == NULL || json_is_null (v))
    return 0;
  if (!json_is_array (v))
    return perr (c, OHBOX_ERR_USAGE, where, "`%s` must be an array of strings", key);
  if (json_array_size (v) > max)
    return perr (c, OHBOX_ERR_USAGE, where, "`%s` has %zu entries, more than the limit of %zu", key,
                 json_array_size (v), max);
  for (size_t i = 0; i < json_array_size (v); i++)
    {
      const char *s = json_string_value (json_array_get (v, i));
      if (s == NULL)
        return perr (c, OHBOX_ERR_USAGE, where, "`%s[%zu]` must be a string", key, i);
      if (strlen (s) > MAX_NAME_LEN)
        return perr (c, OHBOX_ERR_USAGE, where, "`%s[%zu]` is longer than %d characters", key, i, MAX_NAME_LEN);
    }
  *ret = v;
  return 0;
}

static bool
array_has (json_t *arr, const char *s)
{
  for (size_t i = 0; arr && i < json_array_size (arr); i++)
    if (strcmp (json_string_value (json_array_get (arr, i)), s) == 0)
      return true;
  return false;
}

/* Parses an action; *RET_ACT is the libseccomp action with ERRNO_RET (or
 * the default) folded in. */
static int
parse_action (struct compile *c, const char *where, const char *action, bool has_ret, uint64_t ret_value,
              uint32_t default_errno, uint32_t *ret_act)
{
  uint32_t data = has_ret ? (uint32_t) ret_value : default_errno;

  if (action == NULL)
    return perr (c, OHBOX_ERR_USAGE, where, "`action` is missing");
  if (strcmp (action, "SCMP_ACT_ALLOW") == 0)
    *ret_act = SCMP_ACT_ALLOW;
  else if (strcmp (action, "SCMP_ACT_ERRNO") == 0)
    *ret_act = SCMP_ACT_ERRNO (data);
  else if (strcmp (action, "SCMP_ACT_KILL") == 0 || strcmp (action, "SCMP_ACT_KILL_THREAD") == 0)
    *ret_act = SCMP_ACT_KILL_THREAD;
  else if (strcmp (action, "SCMP_ACT_KILL_PROCESS") == 0)
    *ret_act = SCMP_ACT_KILL_PROCESS;
  else if (strcmp (action, "SCMP_ACT_TRAP") == 0)
    *ret_act = SCMP_ACT_TRAP;
  else if (strcmp (action, "SCMP_ACT_TRACE") == 0)
    *ret_act = SCMP_ACT_TRACE (data);
  else if (strcmp (action, "SCMP_ACT_LOG") == 0)
    *ret_act = SCMP_ACT_LOG;
  else if (strcmp (action, "SCMP_ACT_NOTIFY") == 0)
    return perr (c, OHBOX_ERR_UNSUPPORTED, where,
                 "action `SCMP_ACT_NOTIFY` needs a seccomp agent, which ohbox does not support");
  else
    return perr (c, OHBOX_ERR_USAGE, where,
                 "unknown action `%.64s` (expected SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL, "
                 "SCMP_ACT_KILL_THREAD, SCMP_ACT_KILL_PROCESS, SCMP_ACT_TRAP, SCMP_ACT_TRACE or SCMP_ACT_LOG)",
                 action);
  return 0;
}

static int
parse_op (struct compile *c, const char *where, const char *op, enum scmp_compare *ret)
{
  static const struct
  {
    const char *name;
    enum scmp_compare op;
  } ops[] = {
    { "SCMP_CMP_NE", SCMP_CMP_NE },
    { "SCMP_CMP_LT", SCMP_CMP_LT },
    { "SCMP_CMP_LE", SCMP_CMP_LE },
    { "SCMP_CMP_EQ", SCMP_CMP_EQ },
    { "SCMP_CMP_GE", SCMP_CMP_GE },
    { "SCMP_CMP_GT", SCMP_CMP_GT },
    { "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
  };
  if (op == NULL)
    return perr (c, OHBOX_ERR_USAGE, where, "`op` is missing");
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp (op, ops[i].name) == 0)
      {
        *ret = ops[i].op;
        return 0;
      }
  return perr (c, OHBOX_ERR_USAGE, where,
               "unknown operator `%.64s` (expected SCMP_CMP_NE, SCMP_CMP_LT, "
               "SCMP_CMP_LE, SCMP_CMP_EQ, SCMP_CMP_GE, SCMP_CMP_GT or SCMP_CMP_MASKED_EQ)",
               op);
}

static int
parse_args (struct compile *c, json_t *entry, const char *where, struct scmp_arg_cmp *conds, unsigned int *ret_n)
{
  json_t *args = json_object_get (entry, "args");
  char here[96];

  *ret_n = 0;
  if (args == NULL || json_is_null (args))
    return 0;
  if (!json_is_array (args))
    return perr (c, OHBOX_ERR_USAGE, where, "`args` must be an array");
  if (json_array_size (args) > 6)
    return perr (c, OHBOX_ERR_USAGE, where, "`args` has %zu conditions, more than the 6 arguments of a system call",
                 json_array_size (args));
  for (size_t i = 0; i < json_array_size (args); i++)
    {
      json_t *a = json_array_get (args, i);
      const char *op;
      uint64_t index, value, value_two;
      bool has_index, has_value, has_two;

      snprintf (here, sizeof here, "%s.args[%zu]", where, i);
      if (!json_is_object (a))
        return perr (c, OHBOX_ERR_USAGE, here, "must be an object");
      if (get_uint (c, a, "index", here, 5, &has_index, &index) < 0
          || get_uint (c, a, "value", here, INT64_MAX, &has_value, &value) < 0
          || get_uint (c, a, "valueTwo", here, INT64_MAX, &has_two, &value_two) < 0
          || get_string (c, a, "op", here, &op) < 0)
        return -1;
      if (!has_index)
        return perr (c, OHBOX_ERR_USAGE, here, "`index` is missing");
      conds[i].arg = (unsigned int) index;
      conds[i].datum_a = value;
      conds[i].datum_b = value_two;
      if (parse_op (c, here, op, &conds[i].op) < 0)
        return -1;
    }
  *ret_n = (unsigned int) json_array_size (args);
  return 0;
}

/* Evaluates includes (INCLUDE true) or excludes against the host, the
 * kernel and the capabilities, as moby does: includes need every listed
 * cap, the host arch listed, the kernel at least minKernel; excludes drop
 * the rule on any listed cap, the host arch listed, or a kernel at least
 * minKernel. Sets *RET_MATCH when the filter matches. */
static int
eval_filter (struct compile *c, json_t *entry, const char *key, const char *where, bool *ret_match)
{
  json_t *f = json_object_get (entry, key);
  json_t *caps, *arches;
  const char *min_kernel;
  char here[96];
  bool include = strcmp (key, "includes") == 0;

  *ret_match = include;
  if (f == NULL || json_is_null (f))
    return 0;
  snprintf (here, sizeof here, "%s.%s", where, key);
  if (!json_is_object (f))
    return perr (c, OHBOX_ERR_USAGE, here, "must be an object");
  if (get_string_array (c, f, "caps", here, MAX_LIST_LEN, &caps) < 0
      || get_string_array (c, f, "arches", here, MAX_LIST_LEN, &arches) < 0
      || get_string (c, f, "minKernel", here, &min_kernel) < 0)
    return -1;

  int want[3];
  if (min_kernel && parse_version (min_kernel, true, want) < 0)
    return perr (c, OHBOX_ERR_USAGE, here, "`minKernel` `%.64s` is not a version such as \"4.8\"", min_kernel);

  bool kernel_ok = min_kernel == NULL || version_cmp (c->kernel, want) >= 0;
  bool arch_listed = arches && array_has (arches, c->native_docker);
  size_t n_caps = caps ? json_array_size (caps) : 0;
  size_t caps_present = 0;
  for (size_t i = 0; i < n_caps; i++)
    {
      /* A name unknown to libcap is simply not in the set, as in Docker. */
      int cap = ohbox_cap_lookup (json_string_value (json_array_get (caps, i)));
      if (cap >= 0 && (c->opts->caps & OHBOX_CAP_BIT (cap)))
        caps_present++;
    }

  if (include)
    *ret_match = (arches == NULL || json_array_size (arches) == 0 || arch_listed) && caps_present == n_caps
                 && kernel_ok;
  else
    *ret_match = arch_listed || caps_present > 0 || (min_kernel && kernel_ok);
  return 0;
}

static bool
valid_syscall_name (const char *s)
{
  if (*s == '\0' || strlen (s) > MAX_NAME_LEN)
    return false;
  for (; *s; s++)
    if (!islower ((unsigned char) *s) && !isdigit ((unsigned char) *s) && *s != '_')
      return false;
  return true;
}

static int
add_rule (struct compile *c, const char *where, const char *name, uint32_t act, const struct scmp_arg_cmp *conds,
          unsigned int n_conds)
{
  int nr = seccomp_syscall_resolve_name (name);
  bool same_arg = false;
  int rc;

  /* Unknown to this libseccomp (newer, or another OS's name): skipped;
   * the ENOSYS stub answers for calls newer than the profile. */
  if (nr == __NR_SCMP_ERROR)
    return 0;
  /* libseccomp refuses rules that repeat the default action. */
  if (act == c->default_action)
    return 0;

  for (unsigned int i = 0; i < n_conds; i++)
    for (unsigned int j = i + 1; j < n_conds; j++)
      same_arg |= conds[i].arg == conds[j].arg;
  if (!same_arg)
    rc = seccomp_rule_add_array (c->ctx, act, nr, n_conds, conds);
  else
    {
      /* libseccomp cannot AND two conditions on one argument; runc and
       * crun then add one rule per condition (OR), and profiles rely on
       * it. */
      rc = 0;
      for (unsigned int i = 0; i < n_conds && rc == 0; i++)
        rc = seccomp_rule_add_array (c->ctx, act, nr, 1, &conds[i]);
    }
  /* -EDOM/-EOPNOTSUPP: the call does not exist on any architecture of the
   * filter (an ARM-only call on x86), nothing to filter. */
  if (rc == -EDOM || rc == -EOPNOTSUPP)
    return 0;
  if (rc < 0)
    return perr (c, OHBOX_ERR_USAGE, where, "cannot add a rule for `%s`: %s", name, strerror (-rc));
  return 0;
}

/* Tracks, per architecture with an ENOSYS stub, the highest number among
 * the system calls the profile names (whether or not the rule applies). */
static void
track_max (struct compile *c, const char *name)
{
  for (size_t i = 0; i < c->n_arches; i++)
    {
      if (!ohbox_seccomp_stub_covers (c->arches[i].token))
        continue;
      int nr = seccomp_syscall_resolve_name_arch (c->arches[i].token, name);
      if (nr >= 0 && nr > c->arches[i].max_nr)
        c->arches[i].max_nr = nr;
    }
}

static int
compile_entry (struct compile *c, json_t *entry, size_t idx, uint32_t default_errno)
{
  char where[64];
  const char *action, *single;
  json_t *names;
  uint64_t errno_ret;
  bool has_errno, included, excluded;
  struct scmp_arg_cmp conds[6];
  unsigned int n_conds;
  uint32_t act;

  snprintf (where, sizeof where, "syscalls[%zu]", idx);
  if (!json_is_object (entry))
    return perr (c, OHBOX_ERR_USAGE, where, "must be an object");
  if (get_string (c, entry, "name", where, &single) < 0
      || get_string_array (c, entry, "names", where, OHBOX_SECCOMP_MAX_NAMES, &names) < 0
      || get_string (c, entry, "action", where, &action) < 0
      || get_uint (c, entry, "errnoRet", where, MAX_ERRNO, &has_errno, &errno_ret) < 0
      || parse_action (c, where, action, has_errno, errno_ret, default_errno, &act) < 0
      || parse_args (c, entry, where, conds, &n_conds) < 0 || eval_filter (c, entry, "includes", where, &included) < 0
      || eval_filter (c, entry, "excludes", where, &excluded) < 0)
    return -1;
  if (single && names && json_array_size (names) > 0)
    return perr (c, OHBOX_ERR_USAGE, where, "both `name` and `names` are set: use one");
  if (single == NULL && (names == NULL || json_array_size (names) == 0))
    return perr (c, OHBOX_ERR_USAGE, where, "no system call: set `names`");

  size_t n = single ? 1 : json_array_size (names);
  c->n_names += n;
  if (c->n_names > OHBOX_SECCOMP_MAX_NAMES)
    return perr (c, OHBOX_ERR_USAGE, where, "more than %d system call names in the profile", OHBOX_SECCOMP_MAX_NAMES);
  for (size_t i = 0; i < n; i++)
    {
      const char *name = single ? single : json_string_value (json_array_get (names, i));
      if (!valid_syscall_name (name))
        return perr (c, OHBOX_ERR_USAGE, where, "`%.64s` is not a system call name", name);
      track_max (c, name);
      if (included && !excluded && add_rule (c, where, name, act, conds, n_conds) < 0)
        return -1;
    }
  return 0;
}

static int
setup_arches (struct compile *c, json_t *root)
{
  json_t *flat, *map = json_object_get (root, "archMap");

  if (add_arch (c, c->native) < 0)
    return -1;
  if (get_string_array (c, root, "architectures", NULL, MAX_LIST_LEN, &flat) < 0)
    return -1;
  if (map && !json_is_null (map) && !json_is_array (map))
    return perr (c, OHBOX_ERR_USAGE, NULL, "`archMap` must be an array");
  if (flat && json_array_size (flat) && map && json_array_size (map))
    return perr (c, OHBOX_ERR_USAGE, NULL, "both `architectures` and `archMap` are set: use one");

  /* Only the host's ABIs matter: the kernel never reports another one.
   * Names unknown to this libseccomp are skipped like unknown syscalls. */
  for (size_t i = 0; flat && i < json_array_size (flat); i++)
    {
      uint32_t t = arch_token (json_string_value (json_array_get (flat, i)));
      if (t && arch_runs_here (c->native, t) && add_arch (c, t) < 0)
        return -1;
    }
  for (size_t i = 0; map && json_is_array (map) && i < json_array_size (map); i++)
    {
      char where[64];
      json_t *e = json_array_get (map, i), *subs;
      const char *arch;

      snprintf (where, sizeof where, "archMap[%zu]", i);
      if (!json_is_object (e))
        return perr (c, OHBOX_ERR_USAGE, where, "must be an object");
      if (get_string (c, e, "architecture", where, &arch) < 0
          || get_string_array (c, e, "subArchitectures", where, MAX_LIST_LEN, &subs) < 0)
        return -1;
      if (arch == NULL)
        return perr (c, OHBOX_ERR_USAGE, where, "`architecture` is missing");
      if (arch_token (arch) != c->native)
        continue;
      for (size_t j = 0; subs && j < json_array_size (subs); j++)
        {
          uint32_t t = arch_token (json_string_value (json_array_get (subs, j)));
          if (t && arch_runs_here (c->native, t) && add_arch (c, t) < 0)
            return -1;
        }
    }
  return 0;
}

static int
parse_flags (struct compile *c, json_t *root, unsigned int *ret)
{
  json_t *flags;
  *ret = 0;
  if (get_string_array (c, root, "flags", NULL, MAX_LIST_LEN, &flags) < 0)
    return -1;
  for (size_t i = 0; flags && i < json_array_size (flags); i++)
    {
      const char *f = json_string_value (json_array_get (flags, i));
      if (strcmp (f, "SECCOMP_FILTER_FLAG_LOG") == 0)
        *ret |= SECCOMP_FILTER_FLAG_LOG;
      else if (strcmp (f, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
        *ret |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
      else if (strcmp (f, "SECCOMP_FILTER_FLAG_TSYNC") == 0)
        *ret |= SECCOMP_FILTER_FLAG_TSYNC;
      else
        return perr (c, OHBOX_ERR_UNSUPPORTED, "flags",
                     "unsupported flag `%.64s` (supported: "
                     "SECCOMP_FILTER_FLAG_LOG, SECCOMP_FILTER_FLAG_SPEC_ALLOW, SECCOMP_FILTER_FLAG_TSYNC)",
                     f);
    }
  return 0;
}

static int
compile_root (struct compile *c, json_t *root, struct ohbox_seccomp_filter **ret)
{
  const char *default_action;
  uint64_t default_errno;
  bool has_default_errno;
  json_t *syscalls;
  unsigned int flags;

  if (!json_is_object (root))
    return perr (c, OHBOX_ERR_USAGE, NULL, "the profile must be a JSON object");
  if (get_string (c, root, "defaultAction", NULL, &default_action) < 0
      || get_uint (c, root, "defaultErrnoRet", NULL, MAX_ERRNO, &has_default_errno, &default_errno) < 0)
    return -1;
  if (default_action == NULL)
    return perr (c, OHBOX_ERR_USAGE, NULL, "`defaultAction` is missing");
  if (parse_action (c, "defaultAction", default_action, has_default_errno, default_errno, EPERM, &c->default_action)
      < 0)
    return -1;
  if (parse_flags (c, root, &flags) < 0)
    return -1;
  syscalls = json_object_get (root, "syscalls");
  if (syscalls && !json_is_null (syscalls) && !json_is_array (syscalls))
    return perr (c, OHBOX_ERR_USAGE, NULL, "`syscalls` must be an array");
  if (json_array_size (syscalls) > OHBOX_SECCOMP_MAX_RULES)
    return perr (c, OHBOX_ERR_USAGE, NULL, "`syscalls` has %zu entries, more than the limit of %d",
                 json_array_size (syscalls), OHBOX_SECCOMP_MAX_RULES);

  cleanup_scmp scmp_filter_ctx ctx = seccomp_init (c->default_action);
  if (ctx == NULL)
    return perr (c, OHBOX_ERR_GENERIC, NULL, "seccomp_init failed for defaultAction `%s`", default_action);
  c->ctx = ctx;
  /* ohbox loads the program itself: no_new_privs belongs to the
   * capabilities step, not to libseccomp. A binary tree keeps the cost per
   * system call logarithmic in the size of the allow list. */
  seccomp_attr_set (ctx, SCMP_FLTATR_CTL_NNP, 0);
  seccomp_attr_set (ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
  seccomp_attr_set (ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

  if (setup_arches (c, root) < 0)
    return -1;
  /* Rules from SCMP_ACT_ERRNO entries without errnoRet return EPERM, as
   * in runc and crun; only the default action uses defaultErrnoRet. */
  for (size_t i = 0; i < json_array_size (syscalls); i++)
    if (compile_entry (c, json_array_get (syscalls, i), i, EPERM) < 0)
      return -1;

  /* The stub only where a blocked call already gets an errno: profiles
   * that kill, trap, log or allow by default are left exactly as written. */
  bool stub = (c->default_action & SECCOMP_RET_ACTION_FULL) == SCMP_ACT_ERRNO (0);
  return ohbox_seccomp_export (ctx, c->name, c->arches, c->n_arches, stub, flags, ret, c->err);
}

int
ohbox_seccomp_compile_json (const char *json, size_t len, const char *name, const struct ohbox_seccomp_options *opts,
                            struct ohbox_seccomp_filter **ret, ohbox_error_t *err)
{
  struct ohbox_seccomp_options no_opts = { 0 };
  struct compile c = { .name = name, .err = err, .opts = opts ? opts : &no_opts };
  json_error_t jerr;

  if (len > OHBOX_SECCOMP_MAX_PROFILE_SIZE)
    return perr (&c, OHBOX_ERR_USAGE, NULL, "%zu bytes, more than the limit of %d", len,
                 OHBOX_SECCOMP_MAX_PROFILE_SIZE);

  c.native = seccomp_arch_native ();
  c.native_docker = "unknown";
  for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
    if (arch_table[i].token == c.native)
      c.native_docker = arch_table[i].docker;

  const char *release = c.opts->kernel_release;
  struct utsname u;
  if (release == NULL)
    {
      if (uname (&u) < 0)
        return ohbox_error_sys (err, OHBOX_ERR_SECURITY, "uname");
      release = u.release;
    }
  if (parse_version (release, false, c.kernel) < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "seccomp: cannot parse the kernel release `%.64s`", release);

  cleanup_seccomp_cache_key struct ohbox_seccomp_cache_key key = { 0 };
  if (c.opts->cache_dir)
    {
      ohbox_seccomp_cache_key (json, len, c.native, c.kernel, c.opts->caps, &key);
      if (ohbox_seccomp_cache_load (c.opts->cache_dir, &key, ret) == 0)
        return 0;
    }

  cleanup_json json_t *root = json_loadb (json, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL)
    return perr (&c, OHBOX_ERR_USAGE, NULL, "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                 jerr.text);
  if (compile_root (&c, root, ret) < 0)
    return -1;
  if (c.opts->cache_dir)
    ohbox_seccomp_cache_store (c.opts->cache_dir, &key, *ret);
  return 0;
}

const char *
ohbox_seccomp_builtin_profile (size_t *ret_len)
{
  if (ret_len)
    *ret_len = (size_t) (ohbox_seccomp_builtin_end - ohbox_seccomp_builtin_start);
  return ohbox_seccomp_builtin_start;
}

int
ohbox_seccomp_compile_file (const char *path, const struct ohbox_seccomp_options *opts,
                            struct ohbox_seccomp_filter **ret, ohbox_error_t *err)
{
  cleanup_free char *data = NULL;
  size_t len = 0;

  if (path == NULL)
    {
#ifdef OHBOX_PKGDATADIR
      const char *installed = OHBOX_PKGDATADIR "/seccomp/default.json";
      if (access (installed, F_OK) == 0)
        return ohbox_seccomp_compile_file (installed, opts, ret, err);
#endif
      const char *builtin = ohbox_seccomp_builtin_profile (&len);
      return ohbox_seccomp_compile_json (builtin, len, "(built-in default)", opts, ret, err);
    }
  if (ohbox_read_file_at (AT_FDCWD, path, OHBOX_SECCOMP_MAX_PROFILE_SIZE, &data, &len, err) < 0)
    return ohbox_error_prefix (err, "seccomp profile");
  return ohbox_seccomp_compile_json (data, len, path, opts, ret, err);
}
