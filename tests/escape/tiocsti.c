/* tiocsti: pushes "INJECTED\n" into the input of every terminal it can
 * reach (fds 0, 1, 2 and /dev/tty) with ioctl TIOCSTI, as if typed there,
 * and prints "FD RESULT" per target (ok or the errno's name). Run inside a
 * sandbox by tests/integration/escape.sh: the caller's terminal must not
 * receive it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void
push (const char *what, int fd)
{
  const char *text = "INJECTED\n";
  int r = 0;
  for (const char *p = text; *p && r == 0; p++)
    r = ioctl (fd, TIOCSTI, p);
  printf ("%s %s\n", what, r == 0 ? "ok" : strerrorname_np (errno));
}

int
main (void)
{
  push ("0", 0);
  push ("1", 1);
  push ("2", 2);
  int fd = open ("/dev/tty", O_RDWR | O_NOCTTY);
  if (fd < 0)
    printf ("tty %s\n", strerrorname_np (errno));
  else
    push ("tty", fd);
  fflush (stdout);
  return 0;
}
