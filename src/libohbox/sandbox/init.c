/* init.c: the sandbox's PID 1, and the lookup of the user it runs as.
 *
 * The init is the child ohbox cloned (the same process image, forked, never
 * re-executed): it forks the command, forwards every signal it gets to it,
 * reaps every process that ends up reparented to it, and exits with the
 * command's status once the command ends (the kernel then kills whatever is
 * left in the PID namespace).
 *
 * The runtime's binary (CVE-2019-5736 shape): the init runs the host's ohbox
 * executable, so /proc/1/exe inside the sandbox is a link to it. The child
 * makes itself non-dumpable (PR_SET_DUMPABLE 0) before anything in the
 * sandbox can run: /proc/1/exe, /proc/1/fd, /proc/1/mem and ptrace of the
 * init then need CAP_SYS_PTRACE in the user namespace its memory belongs to,
 * the host's, which no sandbox process has. The command's process is also
 * non-dumpable until its execve replaces the image. And with the default
 * user namespace, sandbox root is an unprivileged host uid that cannot write
 * the root-owned binary anyway. tests/integration/run-attacks.sh checks it.
 *
 * Its command line and environment are the host's ohbox's (store path,
 * volumes, the caller's variables): /proc/1/cmdline is readable by every
 * process of the sandbox, dumpable or not. The child points the kernel's
 * view of both elsewhere before anything of the sandbox runs
 * (ohbox_hide_host_args), or where the kernel does not let it, PID 1 wipes
 * them once it forked the command. */
#include "config.h"
#include "sandbox/linux.h"
#include "common/utils.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <linux/prctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PASSWD_MAX (4 * 1024 * 1024)
#define MAX_GROUPS 256

/* Fields 26.. of /proc/self/stat (Linux >= 3.5), by their numbers. */
static bool
read_stat_fields (unsigned long v[52])
{
  char buf[2048];
  cleanup_close int fd = open ("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read (fd, buf, sizeof buf - 1) : -1;
  if (n <= 0)
    return false;
  buf[n] = '\0';
  /* After the command name (which may hold anything): ") S ", field 4 on. */
  char *p = strrchr (buf, ')');
  if (p == NULL || strlen (p) < 4)
    return false;
  p += 4;
  for (int field = 4; field < 52; field++)
    {
      char *end;
      errno = 0;
      v[field] = strtoul (p, &end, 10);
      if (end == p || errno)
        return false;
      p = end + (*end == ' ');
    }
  return true;
}

bool
ohbox_hide_host_args (const char *title)
{
  unsigned long v[52];
  if (!read_stat_fields (v))
    return false;
  prctl (PR_SET_NAME, title);
  /* The kernel reads the arguments only from anonymous memory. */
  size_t len = strlen (title) + 1;
  char *buf = mmap (NULL, (size_t) sysconf (_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED)
    return false;
  memcpy (buf, title, len);
  /* Everything as it is but where the arguments and the environment are;
   * PR_SET_MM_MAP needs no privilege for that (CONFIG_CHECKPOINT_RESTORE). */
  struct prctl_mm_map m = {
    .start_code = v[26],
    .end_code = v[27],
    .start_stack = v[28],
    .start_data = v[45],
    .end_data = v[46],
    .start_brk = v[47],
    .brk = (unsigned long) syscall (SYS_brk, 0),
    .arg_start = (unsigned long) buf,
    .arg_end = (unsigned long) buf + len,
    .env_start = (unsigned long) buf + len,
    .env_end = (unsigned long) buf + len,
    .exe_fd = (uint32_t) -1,
  };
  if (prctl (PR_SET_MM, PR_SET_MM_MAP, &m, sizeof m, 0) == 0)
    return true;
  munmap (buf, (size_t) sysconf (_SC_PAGESIZE));
  return false;
}

/* Without PR_SET_MM_MAP: the strings themselves are wiped, in the init
 * only, once the command's process (which may still use some of them:
 * the spec points into ohbox's arguments) has its own copy. */
static void
wipe_host_args (void)
{
  unsigned long v[52];
  if (!read_stat_fields (v) || v[49] < v[48] || v[51] < v[50])
    return;
  memset ((void *) v[50], 0, v[51] - v[50]);
  memset ((void *) v[48], 0, v[49] - v[48]);
}

__attribute__ ((noreturn)) void
ohbox_init_run (void (*exec_fn) (void *arg), void *arg, int sync_fd, bool wipe_args)
{
  sigset_t all, old;
  sigfillset (&all);
  sigprocmask (SIG_BLOCK, &all, &old);
  pid_t child = fork ();
  if (child == 0)
    {
      /* The command starts with default dispositions and no blocked signal. */
      for (int s = 1; s < NSIG; s++)
        signal (s, SIG_DFL);
      sigset_t none;
      sigemptyset (&none);
      sigprocmask (SIG_SETMASK, &none, NULL);
      exec_fn (arg);
      _exit (OHBOX_EXIT_RUNTIME);
    }
  if (child < 0)
    _exit (OHBOX_EXIT_RUNTIME);
  if (wipe_args)
    wipe_host_args ();
  /* Nothing of the runtime stays open in PID 1: the sync socket goes (the
   * command holds it until its execve), and stdio too (the command has its
   * own copies), so that readers see EOF when the command's side closes. */
  (void) sync_fd;
  close_range (0, ~0U, 0);
  /* From here PID 1 only waits: the heap of the setup goes back to the
   * host (as the monitor's does), ~100 KiB per running sandbox. */
  malloc_trim (0);
  int status = 0;
  for (;;)
    {
      siginfo_t si;
      int sig = sigwaitinfo (&all, &si);
      if (sig < 0)
        continue;
      if (sig != SIGCHLD)
        {
          kill (child, sig);
          continue;
        }
      pid_t p;
      bool done = false;
      while ((p = waitpid (-1, &status, WNOHANG)) > 0)
        if (p == child)
          {
            done = true;
            break;
          }
      if (done)
        break;
    }
  if (WIFSIGNALED (status))
    _exit (128 + WTERMSIG (status));
  _exit (WEXITSTATUS (status));
}

static bool
parse_id (const char *s, uint32_t *out)
{
  if (s == NULL || *s < '0' || *s > '9')
    return false;
  char *end;
  errno = 0;
  unsigned long v = strtoul (s, &end, 10);
  if (errno || *end || v >= UINT32_MAX)
    return false;
  *out = (uint32_t) v;
  return true;
}

static char *
read_in_root (int rootfd, const char *path)
{
  /* In-root, so /etc/passwd -> /host/etc/passwd stays inside (CVE-2024-9676). */
  cleanup_close int fd = ohbox_openat_in_root (rootfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY, 0, 0);
  if (fd < 0)
    return NULL;
  char *text = NULL;
  size_t len;
  ohbox_error_t e = NULL;
  if (ohbox_read_fd (fd, path, PASSWD_MAX, &text, &len, &e) < 0)
    {
      ohbox_error_release (&e);
      return NULL;
    }
  return text;
}

/* Splits a passwd/group line in place into at most N fields. */
static size_t
split_fields (char *line, char **f, size_t n)
{
  size_t k = 0;
  f[k++] = line;
  for (char *p = line; *p && k < n; p++)
    if (*p == ':')
      {
        *p = '\0';
        f[k++] = p + 1;
      }
  return k;
}

int
ohbox_user_lookup (int rootfd, const char *user, struct ohbox_user_ids *ret, ohbox_error_t *err)
{
  memset (ret, 0, sizeof *ret);
  cleanup_free char *spec = xstrdup (user ? user : "0");
  char *group = strchr (spec, ':');
  if (group)
    *group++ = '\0';
  if (*spec == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid user `%s`", user);
  uint32_t uid = 0, gid = 0;
  bool uid_numeric = parse_id (spec, &uid);
  bool have_gid = false;
  const char *name = NULL;
  cleanup_free char *passwd = read_in_root (rootfd, "/etc/passwd");
  for (char *save = NULL, *line = passwd ? strtok_r (passwd, "\n", &save) : NULL; line;
       line = strtok_r (NULL, "\n", &save))
    {
      char *f[7];
      if (split_fields (line, f, 7) < 7)
        continue;
      uint32_t pu, pg;
      if (!parse_id (f[2], &pu) || !parse_id (f[3], &pg))
        continue;
      if (uid_numeric ? pu == uid : strcmp (f[0], spec) == 0)
        {
          uid = pu;
          gid = pg;
          have_gid = true;
          name = f[0];
          ret->home = xstrdup (f[5]);
          break;
        }
    }
  if (!uid_numeric && name == NULL)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0,
                        "user `%s` not found in the image's /etc/passwd; use a numeric "
                        "uid",
                        spec);
  if (!have_gid)
    gid = 0;
  cleanup_free char *groups = read_in_root (rootfd, "/etc/group");
  bool group_found = group == NULL;
  if (group && parse_id (group, &gid))
    group_found = true;
  gid_t *list = xcalloc (MAX_GROUPS, sizeof (gid_t));
  size_t n = 0;
  for (char *save = NULL, *line = groups ? strtok_r (groups, "\n", &save) : NULL; line;
       line = strtok_r (NULL, "\n", &save))
    {
      char *f[4];
      if (split_fields (line, f, 4) < 4)
        continue;
      uint32_t g;
      if (!parse_id (f[2], &g))
        continue;
      if (!group_found && strcmp (f[0], group) == 0)
        {
          gid = g;
          group_found = true;
        }
      /* Supplementary groups: those listing the user by name. */
      if (name && n < MAX_GROUPS)
        for (char *s2 = NULL, *m = strtok_r (f[3], ",", &s2); m; m = strtok_r (NULL, ",", &s2))
          if (strcmp (m, name) == 0)
            {
              list[n++] = g;
              break;
            }
    }
  if (!group_found)
    {
      free (list);
      free (ret->home);
      ret->home = NULL;
      return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "group `%s` not found in the image's /etc/group", group);
    }
  ret->uid = uid;
  ret->gid = gid;
  ret->groups = list;
  ret->n_groups = n;
  if (ret->home == NULL)
    ret->home = xstrdup ("/");
  return 0;
}

void
ohbox_user_ids_add_groups (struct ohbox_user_ids *ids, const uint32_t *gids, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      bool have = ids->gid == gids[i];
      for (size_t j = 0; j < ids->n_groups && !have; j++)
        have = ids->groups[j] == gids[i];
      if (have)
        continue;
      ids->groups = xrealloc (ids->groups, (ids->n_groups + 1) * sizeof *ids->groups);
      ids->groups[ids->n_groups++] = gids[i];
    }
}

void
ohbox_user_ids_release (struct ohbox_user_ids *ids)
{
  free (ids->groups);
  free (ids->home);
  ids->groups = NULL;
  ids->home = NULL;
}
