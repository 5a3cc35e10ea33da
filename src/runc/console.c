/* console.c: --console-socket: the terminal's master handed to the engine
 * (conmon, containerd's shim), which proxies it; see runc.h. */
#include "config.h"
#include "runc/runc.h"
#include "common/utils.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int
send_console (const char *path, int master, ohbox_error_t *err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof addr.sun_path)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--console-socket: `%s` is too long for a unix socket path", path);
  strcpy (addr.sun_path, path);
  cleanup_close int sock = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0 || connect (sock, (struct sockaddr *) &addr, sizeof addr) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_USAGE, "--console-socket: connect to `%s`", path);
  /* The payload is the terminal's name, as runc sends it. */
  char name[128] = "/dev/ptmx";
  if (ptsname_r (master, name, sizeof name) != 0)
    strcpy (name, "/dev/ptmx");
  if (ohbox_send_with_fd (sock, name, strlen (name), master) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "--console-socket: send the terminal to `%s`", path);
  return 0;
}
