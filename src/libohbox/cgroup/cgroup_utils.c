/* cgroup_utils.c: what the cgroup modules share: controller names, reading
 * and writing cgroup files, bounded waiting. */
#include "cgroup/cgroup_internal.h"
#include "cgroup/cgroup.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/utils.h"

static const struct
{
  const char *v1, *v2;
  unsigned bit;
} controller_names[] = {
  { "cpu", "cpu", OHBOX_CGROUP_CPU },
  { "cpuacct", NULL, OHBOX_CGROUP_CPUACCT },
  { "cpuset", "cpuset", OHBOX_CGROUP_CPUSET },
  { "memory", "memory", OHBOX_CGROUP_MEMORY },
  { "pids", "pids", OHBOX_CGROUP_PIDS },
  { "freezer", NULL, OHBOX_CGROUP_FREEZER },
  { "blkio", "io", OHBOX_CGROUP_IO },
  { "devices", NULL, OHBOX_CGROUP_DEVICES },
  { "hugetlb", "hugetlb", OHBOX_CGROUP_HUGETLB },
};

unsigned
ohbox_cg_parse_controllers (const char *list, const char *separators)
{
  unsigned mask = 0;
  cleanup_free char *copy = xstrdup (list);
  char *save = NULL;
  for (char *tok = strtok_r (copy, separators, &save); tok; tok = strtok_r (NULL, separators, &save))
    for (size_t i = 0; i < sizeof controller_names / sizeof controller_names[0]; i++)
      if ((controller_names[i].v1 && strcmp (tok, controller_names[i].v1) == 0)
          || (controller_names[i].v2 && strcmp (tok, controller_names[i].v2) == 0))
        mask |= controller_names[i].bit;
  return mask;
}

const char *
ohbox_cg_controller_name (unsigned bit, int version)
{
  for (size_t i = 0; i < sizeof controller_names / sizeof controller_names[0]; i++)
    if (controller_names[i].bit == bit)
      return version == 2 && controller_names[i].v2 ? controller_names[i].v2 : controller_names[i].v1;
  return "?";
}

char *
ohbox_cg_controllers_list (unsigned mask, int version, char sep)
{
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  for (size_t i = 0; i < sizeof controller_names / sizeof controller_names[0]; i++)
    {
      const char *n = version == 2 ? controller_names[i].v2 : controller_names[i].v1;
      if ((mask & controller_names[i].bit) == 0 || n == NULL)
        continue;
      if (b.len)
        ohbox_buf_append (&b, &sep, 1);
      ohbox_buf_append (&b, n, strlen (n));
    }
  return b.data;
}

const char *
ohbox_cgroup_mode_name (enum ohbox_cgroup_mode mode)
{
  switch (mode)
    {
    case OHBOX_CGROUP_MODE_V1:
      return "v1";
    case OHBOX_CGROUP_MODE_HYBRID:
      return "hybrid";
    case OHBOX_CGROUP_MODE_V2:
      return "v2";
    default:
      return "none";
    }
}

/* ------------------------------------------------------------ file helpers */

int
ohbox_cg_write (const char *dir, const char *file, const char *value, ohbox_error_t *err)
{
  char path[4096];
  if ((size_t) snprintf (path, sizeof path, "%s/%s", dir, file) >= sizeof path)
    return ohbox_error (err, OHBOX_ERR_GENERIC, ENAMETOOLONG, "write `%s/%s`", dir, file);
  cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open `%s`", path);
  /* cgroup files take a value in one write(2): no retry on short writes. */
  size_t len = strlen (value);
  ssize_t w;
  do
    w = write (fd, value, len);
  while (w < 0 && errno == EINTR);
  if (w < 0)
    return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "write `%s` to `%s`", value, path);
  if ((size_t) w != len)
    return ohbox_error (err, OHBOX_ERR_GENERIC, EIO, "write `%s` to `%s`: short write", value, path);
  return 0;
}

int
ohbox_cg_read (const char *dir, const char *file, size_t max, char **out, ohbox_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/%s", dir, file);
  if (ohbox_read_file_at (AT_FDCWD, path, max, out, NULL, err) < 0)
    return ohbox_error_rekind (err, OHBOX_ERR_CGROUP);
  return 0;
}

static int
parse_u64 (const char *s, uint64_t *out)
{
  while (*s == ' ' || *s == '\t')
    s++;
  if (strncmp (s, "max", 3) == 0 && (s[3] == '\0' || s[3] == '\n' || s[3] == ' '))
    {
      *out = UINT64_MAX;
      return 0;
    }
  if (*s < '0' || *s > '9')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull (s, &end, 10);
  if (errno != 0 || (*end != '\0' && *end != '\n' && *end != ' '))
    return -1;
  *out = v;
  return 0;
}

int
ohbox_cg_read_u64 (const char *dir, const char *file, uint64_t *out, ohbox_error_t *err)
{
  cleanup_free char *s = NULL;
  if (ohbox_cg_read (dir, file, OHBOX_CG_SMALL_MAX, &s, err) < 0)
    return -1;
  if (parse_u64 (s, out) < 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "read `%s/%s`: not a number: `%.32s`", dir, file, s);
  return 0;
}

int
ohbox_cg_read_key (const char *dir, const char *file, const char *key, uint64_t *out, ohbox_error_t *err)
{
  cleanup_free char *s = NULL;
  if (ohbox_cg_read (dir, file, OHBOX_CG_SMALL_MAX, &s, err) < 0)
    return -1;
  size_t klen = strlen (key);
  for (char *line = s; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
    if (strncmp (line, key, klen) == 0 && line[klen] == ' ')
      {
        if (parse_u64 (line + klen + 1, out) < 0)
          return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "read `%s/%s`: bad value for `%s`", dir, file, key);
        return 1;
      }
  return 0;
}

bool
ohbox_cg_has (const char *dir, const char *file)
{
  char path[4096];
  if ((size_t) snprintf (path, sizeof path, "%s/%s", dir, file) >= sizeof path)
    return false;
  return access (path, F_OK) == 0;
}

bool
ohbox_cg_backoff (double deadline, unsigned *round)
{
  if (ohbox_monotonic () >= deadline)
    return false;
  /* 0.1 ms doubling up to 10 ms: a freeze or a kill usually completes in
   * well under a millisecond, so start small. */
  long ns = 100000L << (*round < 7 ? *round : 7);
  if (ns > 10000000L)
    ns = 10000000L;
  (*round)++;
  struct timespec ts = { 0, ns };
  nanosleep (&ts, NULL);
  return true;
}
