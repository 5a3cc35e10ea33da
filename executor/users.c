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
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/utils.h"

#define PASSWD_FILE "/etc/passwd"
#define GROUP_FILE "/etc/group"
#define SHADOW_FILE "/etc/shadow"
#define SUDOERS_FILE "/etc/sudoers"
#define SUDOERS_LINE "%sudo ALL=(ALL) NOPASSWD:ALL"
#define ETC_MAX (16u << 20)

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

void
users_child_new_session (void)
{
  sigset_t none;
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    signal (sig, SIG_DFL);
  setsid ();
}

int
users_child_become (unsigned int keep_fds, bool switch_user, const gid_t *groups, int ngroups, gid_t gid, uid_t uid,
                    const char *dir)
{
  syscall (SYS_close_range, keep_fds, ~0U, 0U);
  if (switch_user && (setgroups ((size_t) ngroups, groups) < 0 || setgid (gid) < 0 || setuid (uid) < 0))
    return -1;
  if (chdir (dir) < 0 && chdir ("/") < 0)
    return -1;
  return 0;
}

int
users_create (const char *name, uid_t uid, ohbox_error_t *err)
{
  struct user_info other = { 0 };
  if (users_by_uid (uid, &other))
    {
      int r = ohbox_error (err, OHBOX_ERR_USAGE, 0,
                           "create user `%s`: uid %u already belongs to `%s`; pass a free --user-id", name,
                           (unsigned) uid, other.name);
      user_info_release (&other);
      return r;
    }
  /* useradd -rm -d /home/U -s /bin/bash -g root -G sudo -u UID U */
  if (users_group_add_member ("sudo", name, err) < 0)
    return -1;
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

/* Whether the comma-separated member list LIST names USER. */
static bool
list_has (const char *list, const char *user)
{
  size_t n = strlen (user);
  for (const char *p = list; *p;)
    {
      const char *end = strchrnul (p, ',');
      if ((size_t) (end - p) == n && strncmp (p, user, n) == 0)
        return true;
      p = *end ? end + 1 : end;
    }
  return false;
}

/* The lowest gid from 27 (Debian's `sudo`) on that no line of CONTENT uses. */
static gid_t
free_gid (const char *content)
{
  for (unsigned long want = 27;; want++)
    {
      bool used = false;
      for (const char *l = content; *l && !used;)
        {
          const char *nl = strchrnul (l, '\n');
          cleanup_free char *line = strndup (l, (size_t) (nl - l));
          char *fld[4];
          unsigned long g;
          used = line && split_fields (line, fld, 4) >= 3 && parse_id (fld[2], &g) && g == want;
          l = *nl ? nl + 1 : nl;
        }
      if (!used)
        return (gid_t) want;
    }
}

int
users_group_add_member (const char *group, const char *user, ohbox_error_t *err)
{
  cleanup_free char *content = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (AT_FDCWD, GROUP_FILE, ETC_MAX, &content, &len, NULL) < 0)
    content = xstrdup ("");
  struct ohbox_buf out = { 0 };
  bool found = false, changed = false;
  for (const char *l = content; *l;)
    {
      const char *nl = strchrnul (l, '\n');
      cleanup_free char *line = xstrndup (l, (size_t) (nl - l));
      cleanup_free char *copy = xstrdup (line);
      char *fld[4];
      bool ours = !found && split_fields (copy, fld, 4) == 4 && strcmp (fld[0], group) == 0;
      ohbox_buf_append (&out, line, strlen (line));
      if (ours && !list_has (fld[3], user))
        {
          if (*fld[3])
            ohbox_buf_append (&out, ",", 1);
          ohbox_buf_append (&out, user, strlen (user));
          changed = true;
        }
      found |= ours;
      ohbox_buf_append (&out, "\n", 1);
      l = *nl ? nl + 1 : nl;
    }
  if (!found)
    {
      /* groupadd GROUP, as a missing `sudo` on a busybox image */
      cleanup_free char *line = xasprintf ("%s:x:%u:%s\n", group, (unsigned) free_gid (content), user);
      ohbox_buf_append (&out, line, strlen (line));
      changed = true;
    }
  int r = 0;
  if (changed)
    r = ohbox_write_file_atomic (AT_FDCWD, GROUP_FILE, out.data, out.len, 0644, err);
  if (r < 0 && (*err)->errno_value == EBUSY)
    {
      /* /etc/group is a mount point (bound in by an engine or a test): it
       * cannot be replaced, only rewritten where it is. */
      ohbox_error_release (err);
      int fd = open (GROUP_FILE, O_WRONLY | O_TRUNC | O_CLOEXEC);
      r = fd < 0 || ohbox_write_all (fd, out.data, out.len) < 0
            ? ohbox_error_sys (err, OHBOX_ERR_GENERIC, "rewrite `%s`", GROUP_FILE)
            : 0;
      if (fd >= 0)
        close (fd);
    }
  ohbox_buf_free (&out);
  return r < 0 ? ohbox_error_prefix (err, "add `%s` to group `%s`", user, group) : 0;
}

int
users_sudoers_ensure (ohbox_error_t *err)
{
  cleanup_free char *content = NULL;
  size_t len = 0;
  if (access (SUDOERS_FILE, F_OK) < 0)
    return 0; /* no sudo in the image */
  if (ohbox_read_file_at (AT_FDCWD, SUDOERS_FILE, ETC_MAX, &content, &len, err) < 0)
    return ohbox_error_prefix (err, "read `" SUDOERS_FILE "`");
  for (const char *l = content; *l;)
    {
      const char *nl = strchrnul (l, '\n');
      if ((size_t) (nl - l) == strlen (SUDOERS_LINE) && strncmp (l, SUDOERS_LINE, strlen (SUDOERS_LINE)) == 0)
        return 0;
      l = *nl ? nl + 1 : nl;
    }
  cleanup_free char *add = xasprintf ("%s%s\n", len && content[len - 1] != '\n' ? "\n" : "", SUDOERS_LINE);
  int fd = open (SUDOERS_FILE, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || ohbox_write_all (fd, add, strlen (add)) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      return ohbox_error (err, OHBOX_ERR_GENERIC, e, "append to `" SUDOERS_FILE "`");
    }
  close (fd);
  return 0;
}

/* nftw has no closure: the owner the walk gives away to, and what failed. */
static struct
{
  uid_t uid;
  gid_t gid;
  unsigned failed;
  int first_errno;
  char *first_path;
} chown_walk;

static int
chown_one (const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void) type;
  (void) ftw;
  if ((st->st_uid == chown_walk.uid && st->st_gid == chown_walk.gid)
      || lchown (path, chown_walk.uid, chown_walk.gid) == 0)
    return 0;
  if (chown_walk.failed++ == 0)
    {
      chown_walk.first_errno = errno;
      chown_walk.first_path = xstrdup (path);
    }
  return 0;
}

int
users_give_dir (const char *dir, uid_t uid, gid_t gid, char **ret_warning, ohbox_error_t *err)
{
  *ret_warning = NULL;
  mode_t old = umask (002);
  int r = ohbox_mkdir_p (AT_FDCWD, dir, 0775, err);
  umask (old);
  if (r < 0)
    return ohbox_error_prefix (err, "create the working directory");
  /* chown -R USER:GROUP DIR: symbolic links themselves, never what they
   * point to (FTW_PHYS + lchown); what cannot be given (a volume's files
   * of host ids outside the sandbox's range) is a warning, as the Python
   * server ignores chown's failures. */
  chown_walk.uid = uid;
  chown_walk.gid = gid;
  chown_walk.failed = 0;
  chown_walk.first_path = NULL;
  nftw (dir, chown_one, 64, FTW_PHYS);
  if (chown_walk.failed)
    *ret_warning = xasprintf ("chown -R %u:%u `%s`: %u file(s) kept their owner (first: `%s`: %s)", (unsigned) uid,
                              (unsigned) gid, dir, chown_walk.failed, chown_walk.first_path,
                              strerror (chown_walk.first_errno));
  free (chown_walk.first_path);
  chown_walk.first_path = NULL;
  /* chmod g+rw DIR */
  struct stat st;
  if (lstat (dir, &st) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "stat `%s`", dir);
  if (S_ISDIR (st.st_mode) && (st.st_mode & 060) != 060 && chmod (dir, (st.st_mode & 07777) | 060) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "chmod g+rw `%s`", dir);
  return 0;
}
