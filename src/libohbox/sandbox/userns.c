/* userns.c: uid/gid maps of a sandbox's user namespace.
 *
 * Root's sandboxes: the range /etc/subuid gives "root" (or uid 0), else the
 * dedicated range OHBOX_USERNS_DEFAULT_START (65536 ids), written directly
 * to /proc/PID/uid_map. Unprivileged callers: 0 -> their own uid plus the
 * subordinate range from 1 on, written by the setuid helpers newuidmap and
 * newgidmap; without a range (or the helpers), a single-id map 0 -> uid
 * with setgroups denied, and a warning (files owned by other ids show up as
 * "nobody", and the command cannot change to another user). */
#include "config.h"
#include "sandbox/linux.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SUBID_FILE_MAX (4 * 1024 * 1024)

int
ohbox_subid_parse (const char *text, const char *name, uint32_t id, uint32_t first_inside, struct ohbox_idmap *map)
{
  char idstr[16];
  snprintf (idstr, sizeof idstr, "%u", id);
  int found = 0;
  uint32_t inside = first_inside;
  const char *p = text;
  while (p && *p && map->n < OHBOX_IDMAP_MAX)
    {
      const char *eol = strchr (p, '\n');
      size_t len = eol ? (size_t) (eol - p) : strlen (p);
      char line[256];
      if (len < sizeof line && p[0] != '#')
        {
          memcpy (line, p, len);
          line[len] = '\0';
          char *c1 = strchr (line, ':');
          char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
          if (c1 && c2)
            {
              *c1 = *c2 = '\0';
              char *end1, *end2;
              errno = 0;
              unsigned long start = strtoul (c1 + 1, &end1, 10);
              unsigned long count = strtoul (c2 + 1, &end2, 10);
              bool ok = errno == 0 && *end1 == '\0' && *end2 == '\0' && count > 0 && start + count <= UINT32_MAX
                        && (uint64_t) inside + count <= UINT32_MAX;
              if (ok && ((name && strcmp (line, name) == 0) || strcmp (line, idstr) == 0))
                {
                  map->r[map->n].inside = inside;
                  map->r[map->n].outside = (uint32_t) start;
                  map->r[map->n].count = (uint32_t) count;
                  map->n++;
                  inside += (uint32_t) count;
                  found++;
                }
            }
        }
      p = eol ? eol + 1 : NULL;
    }
  return found;
}

uint32_t
ohbox_idmap_to_host (const struct ohbox_idmap *map, uint32_t id)
{
  for (size_t i = 0; i < map->n; i++)
    if (id >= map->r[i].inside && id - map->r[i].inside < map->r[i].count)
      return map->r[i].outside + (id - map->r[i].inside);
  return (uint32_t) -1;
}

static int
read_subids (const char *path, const char *name, uint32_t id, uint32_t first, struct ohbox_idmap *map)
{
  cleanup_free char *text = NULL;
  size_t len;
  ohbox_error_t e = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, SUBID_FILE_MAX, &text, &len, &e) < 0)
    {
      /* A missing or unreadable file is "no range": the fallbacks apply. */
      ohbox_error_release (&e);
      return 0;
    }
  return ohbox_subid_parse (text, name, id, first, map);
}

static bool
have_helper (const char *name)
{
  static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/sbin", "/sbin" };
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    {
      char p[64];
      snprintf (p, sizeof p, "%s/%s", dirs[i], name);
      if (access (p, X_OK) == 0)
        return true;
    }
  return false;
}

int
ohbox_userns_plan (const char *subuid, const char *subgid, struct ohbox_userns_plan *plan, ohbox_error_t *err)
{
  (void) err;
  memset (plan, 0, sizeof *plan);
  uid_t uid = geteuid ();
  gid_t gid = getegid ();
  struct passwd *pw = getpwuid (uid);
  const char *name = pw ? pw->pw_name : NULL;
  if (subuid == NULL)
    subuid = "/etc/subuid";
  if (subgid == NULL)
    subgid = "/etc/subgid";
  if (uid == 0)
    {
      if (read_subids (subuid, name, 0, 0, &plan->uids) == 0)
        {
          plan->uids.r[0] = (struct ohbox_idmap_range){ 0, OHBOX_USERNS_DEFAULT_START, OHBOX_USERNS_DEFAULT_COUNT };
          plan->uids.n = 1;
        }
      if (read_subids (subgid, name, 0, 0, &plan->gids) == 0)
        {
          plan->gids.r[0] = (struct ohbox_idmap_range){ 0, OHBOX_USERNS_DEFAULT_START, OHBOX_USERNS_DEFAULT_COUNT };
          plan->gids.n = 1;
        }
      return 0;
    }
  plan->uids.r[0] = (struct ohbox_idmap_range){ 0, uid, 1 };
  plan->gids.r[0] = (struct ohbox_idmap_range){ 0, gid, 1 };
  plan->uids.n = plan->gids.n = 1;
  if (have_helper ("newuidmap") && have_helper ("newgidmap") && read_subids (subuid, name, uid, 1, &plan->uids) > 0
      && read_subids (subgid, name, uid, 1, &plan->gids) > 0)
    {
      plan->use_helpers = true;
      return 0;
    }
  plan->uids.n = plan->gids.n = 1;
  plan->single = true;
  plan->warning = xasprintf ("no subordinate ids for user `%s` in %s/%s (or no newuidmap/newgidmap): the sandbox "
                             "maps only your uid to root; add a range with `usermod --add-subuids` and "
                             "`--add-subgids` for more",
                             name ? name : "?", subuid, subgid);
  return 0;
}

void
ohbox_userns_plan_release (struct ohbox_userns_plan *plan)
{
  free (plan->warning);
  plan->warning = NULL;
}

static void
format_map (const struct ohbox_idmap *map, char *buf, size_t size)
{
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < map->n && len < size; i++)
    len += snprintf (buf + len, size - len, "%u %u %u\n", map->r[i].inside, map->r[i].outside, map->r[i].count);
}

static int
write_proc (pid_t pid, const char *file, const char *data, ohbox_error_t *err)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/%s", pid, file);
  cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s`", path);
  if (write (fd, data, strlen (data)) < 0)
    return ohbox_error_errno (err, "write `%s` (\"%s\")", path, data);
  return 0;
}

/* newuidmap PID inside outside count ...: the helper checks /etc/subuid. */
static int
run_helper (const char *helper, pid_t pid, const struct ohbox_idmap *map, ohbox_error_t *err)
{
  char *argv[3 + 3 * OHBOX_IDMAP_MAX + 1];
  char nums[1 + 3 * OHBOX_IDMAP_MAX][16];
  size_t n = 0, k = 0;
  argv[n++] = (char *) helper;
  snprintf (nums[k], sizeof nums[k], "%d", pid);
  argv[n++] = nums[k++];
  for (size_t i = 0; i < map->n; i++)
    {
      uint32_t v[3] = { map->r[i].inside, map->r[i].outside, map->r[i].count };
      for (int j = 0; j < 3; j++)
        {
          snprintf (nums[k], sizeof nums[k], "%u", v[j]);
          argv[n++] = nums[k++];
        }
    }
  argv[n] = NULL;
  pid_t child = fork ();
  if (child < 0)
    return ohbox_error_errno (err, "fork `%s`", helper);
  if (child == 0)
    {
      execvp (helper, argv);
      _exit (127);
    }
  int status;
  while (waitpid (child, &status, 0) < 0)
    if (errno != EINTR)
      return ohbox_error_errno (err, "wait for `%s`", helper);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "`%s %d ...` failed (status %d): check /etc/subuid and /etc/subgid",
                        helper, pid, status);
  return 0;
}

int
ohbox_userns_write_maps (pid_t pid, const struct ohbox_userns_plan *plan, ohbox_error_t *err)
{
  if (plan->use_helpers)
    {
      if (run_helper ("newuidmap", pid, &plan->uids, err) < 0 || run_helper ("newgidmap", pid, &plan->gids, err) < 0)
        return -1;
      return 0;
    }
  char buf[64 * OHBOX_IDMAP_MAX];
  format_map (&plan->uids, buf, sizeof buf);
  if (write_proc (pid, "uid_map", buf, err) < 0)
    return -1;
  /* An unprivileged single-id map needs setgroups denied (user_namespaces(7)). */
  if (plan->single && write_proc (pid, "setgroups", "deny", err) < 0)
    return -1;
  format_map (&plan->gids, buf, sizeof buf);
  return write_proc (pid, "gid_map", buf, err);
}
