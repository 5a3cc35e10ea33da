/* runtime_image.c: see runtime_image.h. */
#include "config.h"
#include "build/runtime_image.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "build/build.h"
#include "image/image.h"
#include "common/utils.h"

int
ohbox_runtime_image_is (struct ohbox_store *s, const char *image, bool *yes, ohbox_error_t *err)
{
  struct ohbox_image *img = NULL;
  *yes = false;
  if (ohbox_image_load (s, image, &img, err) < 0)
    return -1;
  json_t *labels = json_object_get (img->config->runtime_config, "Labels");
  const char *v = json_string_value (json_object_get (labels, OHBOX_RUNTIME_LABEL));
  *yes = v && strcmp (v, "1") == 0;
  ohbox_image_free (img);
  return 0;
}

/* A port nobody listens on now (the kernel's choice for an ephemeral bind). */
static int
free_port (int *port, ohbox_error_t *err)
{
  cleanup_close int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return ohbox_error_errno (err, "socket");
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  if (bind (fd, (struct sockaddr *) &a, sizeof a) < 0 || getsockname (fd, (struct sockaddr *) &a, &l) < 0)
    return ohbox_error_errno (err, "find a free port for the executor");
  *port = ntohs (a.sin_port);
  return 0;
}

int
ohbox_runtime_exec_prepare (int port, const char *api_key, struct ohbox_runtime_exec *out, ohbox_error_t *err)
{
  memset (out, 0, sizeof *out);
  if (port < 0 || port > 65535)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "executor port %d is not a port number", port);
  if (port == 0 && free_port (&port, err) < 0)
    return -1;
  if (api_key)
    out->api_key = xstrdup (api_key);
  else
    {
      unsigned char r[16];
      if (getrandom (r, sizeof r, 0) != (ssize_t) sizeof r)
        return ohbox_error_errno (err, "getrandom for the session API key");
      out->api_key = xmalloc (33);
      for (size_t i = 0; i < sizeof r; i++)
        snprintf (out->api_key + 2 * i, 3, "%02x", r[i]);
    }
  out->port = port;
  static const char *const rest[] = { "--working-dir", "/workspace", "--username", "root", "--user-id", "0" };
  size_t n = sizeof rest / sizeof rest[0];
  out->argv = xcalloc (n + 2, sizeof (char *));
  out->argv[0] = xasprintf ("%d", port);
  for (size_t i = 0; i < n; i++)
    out->argv[i + 1] = xstrdup (rest[i]);
  out->env_key = xasprintf ("SESSION_API_KEY=%s", out->api_key);
  out->url = xasprintf ("http://127.0.0.1:%d", port);
  return 0;
}

void
ohbox_runtime_exec_clear (struct ohbox_runtime_exec *x)
{
  if (x->argv)
    for (char **p = x->argv; *p; p++)
      free (*p);
  free (x->argv);
  free (x->api_key);
  free (x->env_key);
  free (x->url);
  memset (x, 0, sizeof *x);
}

int
ohbox_runtime_image_prepare_run (struct ohbox_store *s, const char *image, char **env, int port, bool *yes,
                                 struct ohbox_runtime_exec *out, ohbox_error_t *err)
{
  ohbox_error_t ignored = NULL;
  memset (out, 0, sizeof *out);
  *yes = false;
  bool is = false;
  if (ohbox_runtime_image_is (s, image, &is, &ignored) < 0)
    {
      ohbox_error_release (&ignored);
      return 0;
    }
  if (!is)
    return 0;
  const char *key = NULL;
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp (env[i], "SESSION_API_KEY=", 16) == 0)
      key = env[i] + 16;
  if (ohbox_runtime_exec_prepare (port, key, out, err) < 0)
    return -1;
  *yes = true;
  return 0;
}
