/* deep-dirs DIR N: makes a chain of N directories DIR/d/d/.../d, one level
 * at a time through descriptors (no path is ever longer than "d"), holding
 * at most two open: what a sandbox does to make its writable layer hard to
 * remove. Static, run inside a sandbox by tests/integration/escape.sh. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  if (argc != 3)
    {
      fprintf (stderr, "usage: deep-dirs DIR N\n");
      return 2;
    }
  long n = strtol (argv[2], NULL, 10);
  if (mkdir (argv[1], 0755) < 0)
    {
      perror (argv[1]);
      return 1;
    }
  int fd = open (argv[1], O_RDONLY | O_DIRECTORY);
  for (long i = 0; i < n && fd >= 0; i++)
    {
      if (mkdirat (fd, "d", 0755) < 0)
        {
          perror ("mkdirat");
          return 1;
        }
      int next = openat (fd, "d", O_RDONLY | O_DIRECTORY);
      close (fd);
      fd = next;
    }
  if (fd < 0)
    {
      perror ("openat");
      return 1;
    }
  printf ("%ld\n", n);
  return 0;
}
