/* cgroup_limits.c: from CLI options (--memory 512m, --cpus 1.5,
 * --pids-limit 100...) to struct ohbox_cgroup_limits, with exact integer
 * arithmetic and the bounds the kernel and Docker use. */
#include "cgroup/cgroup_internal.h"
#include "cgroup/cgroup.h"
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/utils.h"

#define DEFAULT_PERIOD 100000
/* The kernel's bounds for cpu.cfs_period_us / cpu.max period and quota. */
#define MIN_PERIOD 1000
#define MAX_PERIOD 1000000
#define MIN_QUOTA 1000
#define MAX_CPUS 4096
/* Docker's floor: below it a container cannot even start its init. */
#define MIN_MEMORY (6 << 20)
/* PID_MAX_LIMIT on 64-bit kernels. */
#define MAX_PIDS 4194304

/* Parses a decimal "INT[.FRAC]" with at most 9 fraction digits into an
 * integer part and nanounits. */
static int
parse_decimal (const char *s, uint64_t *ipart, uint64_t *nanos, const char **rest)
{
  const char *p = s;
  uint64_t v = 0;
  if (*p < '0' || *p > '9')
    return -1;
  for (; *p >= '0' && *p <= '9'; p++)
    {
      if (v > (UINT64_MAX - 9) / 10)
        return -1;
      v = v * 10 + (uint64_t) (*p - '0');
    }
  uint64_t frac = 0;
  int digits = 0;
  if (*p == '.')
    {
      p++;
      if (*p < '0' || *p > '9')
        return -1;
      for (; *p >= '0' && *p <= '9'; p++, digits++)
        {
          if (digits >= 9)
            return -1;
          frac = frac * 10 + (uint64_t) (*p - '0');
        }
    }
  for (; digits < 9; digits++)
    frac *= 10;
  *ipart = v;
  *nanos = frac;
  *rest = p;
  return 0;
}

int
ohbox_cgroup_parse_size (const char *s, int64_t *out, ohbox_error_t *err)
{
  static const struct
  {
    const char *suffix;
    unsigned shift;
  } units[] = { { "", 0 },     { "b", 0 },  { "k", 10 },  { "kb", 10 },  { "kib", 10 }, { "m", 20 },  { "mb", 20 },
                { "mib", 20 }, { "g", 30 }, { "gb", 30 }, { "gib", 30 }, { "t", 40 },   { "tb", 40 }, { "tib", 40 } };
  uint64_t ip, nanos;
  const char *rest;
  if (s == NULL || parse_decimal (s, &ip, &nanos, &rest) < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "invalid size `%s`: expected a number with an optional unit "
                        "(b, k, m, g, t), e.g. 512m",
                        s ? s : "");
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcasecmp (rest, units[i].suffix) == 0)
      {
        uint64_t mult = (uint64_t) 1 << units[i].shift;
        if (nanos && units[i].shift == 0)
          break; /* a fraction of a byte */
        if (ip > (uint64_t) INT64_MAX / mult)
          return ohbox_error (err, OHBOX_ERR_USAGE, ERANGE, "invalid size `%s`", s);
        /* nanos < 2^30 and mult <= 2^40: 128-bit product, exact. */
        uint64_t frac = (uint64_t) (((unsigned __int128) nanos * mult) / 1000000000u);
        uint64_t v = ip * mult;
        if (v > (uint64_t) INT64_MAX - frac)
          return ohbox_error (err, OHBOX_ERR_USAGE, ERANGE, "invalid size `%s`", s);
        *out = (int64_t) (v + frac);
        return 0;
      }
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid size `%s`: unknown unit `%s` (use b, k, m, g or t)", s, rest);
}

int
ohbox_cgroup_parse_cpus (const char *s, uint64_t period, int64_t *quota, ohbox_error_t *err)
{
  uint64_t ip, nanos;
  const char *rest;
  if (period == 0)
    period = DEFAULT_PERIOD;
  if (s == NULL || parse_decimal (s, &ip, &nanos, &rest) < 0 || *rest != '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid number of CPUs `%s`: expected e.g. 1.5", s ? s : "");
  if (ip > MAX_CPUS || (ip == MAX_CPUS && nanos))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid number of CPUs `%s`: at most %d", s, MAX_CPUS);
  /* ip <= 4096 and period <= 1e6: no overflow. */
  uint64_t q = ip * period + nanos * period / 1000000000u;
  if (q < MIN_QUOTA)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "invalid number of CPUs `%s`: the quota would be %" PRIu64 " us per %" PRIu64
                        " us, below the kernel's minimum of %d us",
                        s, q, period, MIN_QUOTA);
  *quota = (int64_t) q;
  return 0;
}

uint64_t
ohbox_cgroup_shares_to_weight (uint64_t shares)
{
  if (shares == 0)
    return 0;
  if (shares < 2)
    shares = 2;
  if (shares > 262144)
    shares = 262144;
  return 1 + ((shares - 2) * 9999) / 262142;
}

uint64_t
ohbox_cgroup_weight_to_shares (uint64_t weight)
{
  if (weight == 0)
    return 0;
  if (weight > 10000)
    weight = 10000;
  return 2 + ((weight - 1) * 262142) / 9999;
}

static int
parse_uint (const char *option, const char *s, uint64_t lo, uint64_t hi, uint64_t *out, ohbox_error_t *err)
{
  uint64_t ip, nanos;
  const char *rest;
  if (s == NULL || parse_decimal (s, &ip, &nanos, &rest) < 0 || *rest != '\0' || nanos != 0 || ip < lo || ip > hi)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "%s: invalid value `%s`: expected an integer from %" PRIu64 " to %" PRIu64, option, s ? s : "",
                        lo, hi);
  *out = ip;
  return 0;
}

int
ohbox_cgroup_limits_set_option (struct ohbox_cgroup_limits *l, const char *option, const char *value,
                                ohbox_error_t *err)
{
  uint64_t u;
  if (option == NULL || value == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "cgroup limit: missing option or value");
  if (strcmp (option, "memory") == 0)
    {
      int64_t v;
      if (ohbox_cgroup_parse_size (value, &v, err) < 0)
        return ohbox_error_prefix (err, "--memory");
      if (v < MIN_MEMORY)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--memory: `%s` is below the minimum of 6m", value);
      l->memory = v;
      return 0;
    }
  if (strcmp (option, "memory-swap") == 0)
    {
      if (strcmp (value, "-1") == 0)
        {
          l->memory_swap = -1;
          return 0;
        }
      int64_t v;
      if (ohbox_cgroup_parse_size (value, &v, err) < 0)
        return ohbox_error_prefix (err, "--memory-swap");
      if (v == 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--memory-swap: `%s`: use -1 for unlimited swap", value);
      l->memory_swap = v;
      return 0;
    }
  if (strcmp (option, "cpus") == 0)
    {
      int64_t q;
      if (ohbox_cgroup_parse_cpus (value, l->cpu_period, &q, err) < 0)
        return ohbox_error_prefix (err, "--cpus");
      l->cpu_quota = q;
      return 0;
    }
  if (strcmp (option, "cpu-period") == 0)
    {
      if (parse_uint ("--cpu-period", value, MIN_PERIOD, MAX_PERIOD, &u, err) < 0)
        return -1;
      /* --cpus given first was computed for the old period: rescale. */
      if (l->cpu_quota)
        l->cpu_quota = (int64_t) ((uint64_t) l->cpu_quota * u / (l->cpu_period ? l->cpu_period : DEFAULT_PERIOD));
      l->cpu_period = u;
      return 0;
    }
  if (strcmp (option, "cpu-shares") == 0)
    return parse_uint ("--cpu-shares", value, 2, 262144, &l->cpu_shares, err);
  if (strcmp (option, "cpu-weight") == 0)
    return parse_uint ("--cpu-weight", value, 1, 10000, &l->cpu_weight, err);
  if (strcmp (option, "pids-limit") == 0)
    {
      if (strcmp (value, "-1") == 0 || strcmp (value, "0") == 0)
        {
          l->pids = 0;
          return 0;
        }
      if (parse_uint ("--pids-limit", value, 1, MAX_PIDS, &u, err) < 0)
        return ohbox_error_hint (err, "-1 for no limit");
      l->pids = (int64_t) u;
      return 0;
    }
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown cgroup limit `%s`", option);
}

/* "2MB": the kernel's spelling of a huge page size in its hugetlb files
 * (and the only thing that may reach a file name). */
static bool
valid_page_size (const char *s)
{
  size_t digits = strspn (s, "0123456789");
  return digits > 0 && s[0] != '0' && strlen (s) == digits + 2 && strchr ("KMG", s[digits]) && s[digits + 1] == 'B';
}

int
ohbox_cgroup_limits_validate (const struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  /* -1: unlimited (an update lifting a limit). */
  if (l->memory < -1 || l->cpu_quota < -1 || l->pids < -1 || l->memory_swap < -1)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid negative cgroup limit");
  if (l->memory < 0 && l->memory_swap > 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "--memory-swap %" PRId64 " with unlimited memory: it is memory plus swap, so unlimited too",
                        l->memory_swap);
  if (l->memory_swap != 0 && l->memory == 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--memory-swap needs --memory: it is memory plus swap");
  if (l->memory_swap > 0 && l->memory_swap < l->memory)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "--memory-swap (%" PRId64 ") is below --memory (%" PRId64 "): it is memory plus swap, "
                        "so it must be at least as large",
                        l->memory_swap, l->memory);
  if (l->cpu_shares && l->cpu_weight)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--cpu-shares and --cpu-weight set the same thing: give one");
  if (l->cpu_period && (l->cpu_period < MIN_PERIOD || l->cpu_period > MAX_PERIOD))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--cpu-period %" PRIu64 ": expected %d to %d", l->cpu_period,
                        MIN_PERIOD, MAX_PERIOD);
  if (l->n_hugetlb > OHBOX_CGROUP_MAX_HUGETLB)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "more than %d huge page limits", OHBOX_CGROUP_MAX_HUGETLB);
  for (size_t i = 0; i < l->n_hugetlb; i++)
    if (!valid_page_size (l->hugetlb[i].page_size))
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "huge page size `%s`: expected a number and KB, MB or GB, e.g. 2MB",
                          l->hugetlb[i].page_size);
  if (l->n_blkio > OHBOX_CGROUP_MAX_BLKIO)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "more than %d per-device blkio settings", OHBOX_CGROUP_MAX_BLKIO);
  for (size_t i = 0; i < l->n_unified; i++)
    {
      const char *k = l->unified_keys[i];
      /* A file of the cgroup itself: never one elsewhere. */
      if (*k == '\0' || strchr (k, '/') || strcmp (k, ".") == 0 || strcmp (k, "..") == 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unified: `%s` is not the name of a cgroup file", k);
    }
  if (l->cpu_quota > 0 && l->cpu_quota < MIN_QUOTA)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "CPU quota %" PRId64 " us is below the kernel's minimum of %d us",
                        l->cpu_quota, MIN_QUOTA);
  return 0;
}

bool
ohbox_cgroup_limits_any (const struct ohbox_cgroup_limits *l)
{
  return l
         && (l->memory || l->memory_swap || l->cpu_quota || l->cpu_period || l->cpu_shares || l->cpu_weight || l->pids
             || l->n_hugetlb || l->blkio_weight || l->n_blkio || l->n_unified);
}
