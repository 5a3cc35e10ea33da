/* setuid-probe.c: installed setuid root inside a sandbox and run by an
 * unprivileged user there, prints what the setuid bit gave it, one line per
 * fact; tests/integration/escape.sh (setuid_gains_nothing) judges them:
 *
 *   ids RUID EUID               after the exec
 *   uid_map INSIDE OUTSIDE COUNT   each line of /proc/self/uid_map
 *   CapEff: ... / CapPrm / CapBnd / CapInh / CapAmb / NoNewPrivs / Seccomp
 *                               as /proc/self/status has them
 *   NAME ok|ERRNO               what the would-be root tries:
 *     setresuid_0   become root for real (all three ids)
 *     unshare_user  a new user namespace (seccomp: EPERM)
 *     mount_tmpfs   mount(2) (no CAP_SYS_ADMIN: EPERM)
 *     keyctl        the kernel keyring (seccomp: EPERM)
 *     create_FILE   create FILE (a host directory of host root's)
 *
 * Built static at test time so that it runs in any image; every probe is
 * harmless if allowed (the namespace is made in a child that exits, the
 * tmpfs goes on a fresh directory under /tmp). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void
report (const char *name, long rc, int e)
{
  if (rc >= 0)
    printf ("%s ok\n", name);
  else
    printf ("%s %s\n", name, e == EPERM ? "EPERM" : e == EACCES ? "EACCES" : e == EROFS ? "EROFS" : strerror (e));
}

static void
copy_lines (const char *path, const char *prefix)
{
  FILE *f = fopen (path, "re");
  char line[512];
  if (f == NULL)
    {
      printf ("%s unreadable\n", path);
      return;
    }
  while (fgets (line, sizeof line, f))
    {
      static const char *const keys[] = { "CapEff:", "CapPrm:",     "CapBnd:", "CapInh:",
                                          "CapAmb:", "NoNewPrivs:", "Seccomp:" };
      bool want = prefix != NULL;
      for (size_t i = 0; !want && i < sizeof keys / sizeof *keys; i++)
        want = strncmp (line, keys[i], strlen (keys[i])) == 0;
      if (want)
        printf ("%s%s", prefix ? prefix : "", line);
    }
  fclose (f);
}

int
main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  printf ("ids %u %u\n", (unsigned) getuid (), (unsigned) geteuid ());
  copy_lines ("/proc/self/uid_map", "uid_map ");
  copy_lines ("/proc/self/status", NULL);

  /* (the call first: an argument list's order of evaluation is unspecified) */
  long rc = setresuid (0, 0, 0);
  report ("setresuid_0", rc, errno);

  pid_t pid = fork ();
  if (pid == 0)
    _exit (unshare (CLONE_NEWUSER) == 0 ? 0 : errno);
  int status = 0;
  waitpid (pid, &status, 0);
  report ("unshare_user", WIFEXITED (status) && WEXITSTATUS (status) == 0 ? 0 : -1,
          WIFEXITED (status) ? WEXITSTATUS (status) : EINTR);

  char dir[] = "/tmp/setuid-probe-XXXXXX";
  if (mkdtemp (dir) == NULL)
    report ("mount_tmpfs", -1, errno);
  else
    {
      rc = mount ("none", dir, "tmpfs", 0, NULL);
      report ("mount_tmpfs", rc, errno);
      if (rc == 0)
        umount (dir);
      rmdir (dir);
    }

  rc = syscall (SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  report ("keyctl", rc, errno);

  for (int i = 1; i < argc; i++)
    {
      int fd = open (argv[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      char name[256];
      snprintf (name, sizeof name, "create_%s", argv[i]);
      report (name, fd, errno);
      if (fd >= 0)
        close (fd);
    }
  return 0;
}
