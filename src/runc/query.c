/* query.c: state. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
cmd_state (int argc, char **argv)
{
  if (argc != 2)
    return fail ("usage: state ID");
  struct container c;
  int rc = container_open (argv[1], &c);
  if (rc == 0)
    {
      json_t *out = json_deep_copy (c.state);
      json_object_del (out, "starttime");
      json_object_set_new (out, "status", json_string (c.status));
      if (strcmp (c.status, "stopped") == 0)
        json_object_set_new (out, "pid", json_integer (0));
      char *text = json_dumps (out, JSON_INDENT (2));
      printf ("%s\n", text);
      free (text);
      json_decref (out);
    }
  container_close (&c);
  return rc;
}
