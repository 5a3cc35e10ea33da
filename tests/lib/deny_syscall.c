/* deny_syscall.c: `deny_syscall ERRNO NAME[,NAME...] CMD [ARGS...]` runs CMD
 * with the named system calls failing with ERRNO (a seccomp filter, kept
 * across exec and by every child): the kernel refusing a step for real,
 * for tests of how ohbox reports it (tests/integration/errors.sh). */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  if (argc < 4)
    {
      fprintf (stderr, "usage: deny_syscall ERRNO NAME[,NAME...] CMD [ARGS...]\n");
      return 2;
    }
  int e = atoi (argv[1]);
  scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
  if (ctx == NULL || e <= 0)
    return 2;
  for (char *save = NULL, *name = strtok_r (argv[2], ",", &save); name; name = strtok_r (NULL, ",", &save))
    {
      int nr = seccomp_syscall_resolve_name (name);
      if (nr == __NR_SCMP_ERROR || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (e), nr, 0) < 0)
        {
          fprintf (stderr, "deny_syscall: unknown system call `%s`\n", name);
          return 2;
        }
    }
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load (ctx) < 0)
    {
      perror ("deny_syscall: load the filter");
      return 2;
    }
  execvp (argv[3], argv + 3);
  perror ("deny_syscall: exec");
  return 127;
}
