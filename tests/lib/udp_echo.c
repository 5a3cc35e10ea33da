/* udp_echo.c: a UDP echo server for the network tests (busybox's nc has no
 * UDP here). Built static by the tests, run inside sandboxes:
 *   udp_echo PORT   echoes every datagram to PORT back to its sender. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

int
main (int argc, char **argv)
{
  if (argc != 2)
    {
      fprintf (stderr, "usage: udp_echo PORT\n");
      return 2;
    }
  int fd = socket (AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons ((unsigned short) atoi (argv[1])) };
  if (fd < 0 || bind (fd, (struct sockaddr *) &a, sizeof a) < 0)
    {
      perror ("udp_echo: bind");
      return 1;
    }
  for (;;)
    {
      char buf[2048];
      struct sockaddr_in from;
      socklen_t len = sizeof from;
      ssize_t n = recvfrom (fd, buf, sizeof buf, 0, (struct sockaddr *) &from, &len);
      if (n >= 0)
        sendto (fd, buf, (size_t) n, 0, (struct sockaddr *) &from, len);
    }
}
