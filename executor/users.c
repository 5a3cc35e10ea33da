/* users.c: user and group lookups from /etc/passwd and /etc/group, and
 * the creation of the sandbox user.
 *
 * The executor does not use getpwnam()/getgrouplist(): those go through
 * NSS, which dlopens the modules /etc/nsswitch.conf names.  Run from its
 * closure (executor/closure.sh), the executor's glibc would load the
 * image's libnss_*.so, built against the image's glibc: at best a failed
 * dlopen, at worst a module using GLIBC_PRIVATE symbols of another glibc
 * version.  Sandbox users live in the image's files (the Python server
 * creates them with useradd), and reading the files also keeps NSS modules
 * (libnss_systemd + libcap on Debian hosts: ~280 KiB resident) out of the
 * idle executor. */
#include "config.h"
#include "users.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/utils.h"

#define PASSWD_FILE "/etc/passwd"
#define GROUP_FILE "/etc/group"
#define SHADOW_FILE "/etc/shadow"

void
user_info_release (struct user_info *u)
{
  free (u->name);
  free (u->home);
  u->name = u->home = NULL;
}

/* Splits LINE (without its newline) at ':' into at most N fields; returns
 * how many. */
static int
split_fields (char *line, char **f, int n)
{
  int k = 0;
  f[k++] = line;
  for (char *p = line; *p && k < n; p++)
    if (*p == ':')
      {
        *p = '\0';
        f[k++] = p + 1;
      }
  return k;
}

static bool
parse_id (const char *s, unsigned long *out)
{
  char *end;
  if (*s == '\0')
    return false;
  errno = 0;
  *out = strtoul (s, &end, 10);
  return errno == 0 && *end == '\0' && *out < (unsigned long) (uid_t) -1;
}

/* Finds the passwd entry with NAME (or, when NAME is NULL, with UID). */
static int
passwd_find (const char *name, uid_t uid, struct user_info *out)
{
  cleanup_file FILE *f = fopen (PASSWD_FILE, "re");
  if (f == NULL)
    return 0;
  cleanup_free char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline (&line, &cap, f)) > 0)
    {
      if (line[n - 1] == '\n')
        line[n - 1] = '\0';
      char *fld[7];
      unsigned long u, g;
      if (split_fields (line, fld, 7) < 7 || !parse_id (fld[2], &u) || !parse_id (fld[3], &g))
        continue;
      if (name ? strcmp (fld[0], name) != 0 : (uid_t) u != uid)
        continue;
      out->name = xstrdup (fld[0]);
      out->uid = (uid_t) u;
      out->gid = (gid_t) g;
      out->home = xstrdup (fld[5]);
      return 1;
    }
  return 0;
}

int
users_by_name (const char *name, struct user_info *out)
{
  return passwd_find (name, 0, out);
}

int
users_by_uid (uid_t uid, struct user_info *out)
{
  return passwd_find (NULL, uid, out);
}

int
users_groups (const char *name, gid_t gid, gid_t *groups, int max)
{
  int n = 0;
  if (max > 0)
    groups[n++] = gid;
  cleanup_file FILE *f = fopen (GROUP_FILE, "re");
  if (f == NULL)
    return n;
  cleanup_free char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while (n < max && (len = getline (&line, &cap, f)) > 0)
    {
      if (line[len - 1] == '\n')
        line[len - 1] = '\0';
      char *fld[4];
      unsigned long g;
      if (split_fields (line, fld, 4) < 4 || !parse_id (fld[2], &g) || (gid_t) g == gid)
        continue;
      char *save = NULL;
      for (char *m = strtok_r (fld[3], ",", &save); m; m = strtok_r (NULL, ",", &save))
        if (strcmp (m, name) == 0)
          {
            groups[n++] = (gid_t) g;
            break;
          }
    }
  return n;
}

int
users_create (const char *name, uid_t uid, ohbox_error_t *err)
{
  struct user_info other = { 0 };
  if (users_by_uid (uid, &other))
    {
      int r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "create user `%s`: uid %u already belongs to `%s`; pass a free --user-id",
                           name, (unsigned) uid, other.name);
      user_info_release (&other);
      return r;
    }
  /* useradd -rm -d /home/U -s /bin/bash -g root -u UID U */
  cleanup_free char *home = xasprintf ("/home/%s", name);
  cleanup_free char *line = xasprintf ("%s:x:%u:0::%s:/bin/bash\n", name, (unsigned) uid, home);
  int fd = open (PASSWD_FILE, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || ohbox_write_all (fd, line, strlen (line)) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      return ohbox_error (err, OHBOX_ERR_GENERIC, e, "add user `%s` to `" PASSWD_FILE "`", name);
    }
  close (fd);
  if (access (SHADOW_FILE, F_OK) == 0)
    {
      cleanup_free char *sline = xasprintf ("%s:!:19000:0:99999:7:::\n", name);
      int sfd = open (SHADOW_FILE, O_WRONLY | O_APPEND | O_CLOEXEC);
      if (sfd >= 0)
        {
          /* Best effort: a missing shadow entry only matters to password logins. */
          ohbox_write_all (sfd, sline, strlen (sline));
          close (sfd);
        }
    }
  if (mkdir ("/home", 0755) < 0 && errno != EEXIST)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "create `/home`");
  if (mkdir (home, 0750) == 0 && chown (home, uid, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "chown `%s`", home);
  return 0;
}
