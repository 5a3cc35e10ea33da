/* runtime_image.c: see runtime_image.h. */
#include "config.h"
#include "build/runtime_image.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "build/build.h"
#include "common/utils.h"
#include "oci/image_spec.h"

int
ohbox_runtime_image_mark (struct ohbox_store *s, const char *id, ohbox_error_t *err)
{
  json_t *rec = NULL;
  if (ohbox_store_get_image (s, id, &rec, err) < 0)
    return ohbox_error_prefix (err, "record runtime image %s", id);
  int r = 0;
  if (!ohbox_runtime_image_recorded (rec))
    {
      json_object_set_new (rec, OHBOX_RECORD_RUNTIME_IMAGE,
                           json_pack ("{s:s, s:s}", "built_by", "ohbox build", "ohbox_version", PACKAGE_VERSION));
      r = ohbox_store_put_image (s, rec, err);
    }
  json_decref (rec);
  return r;
}

bool
ohbox_runtime_image_recorded (json_t *record)
{
  return json_is_object (json_object_get (record, OHBOX_RECORD_RUNTIME_IMAGE));
}

/* The config of the image of record REC says org.ohbox.runtime=1. Reading
 * it cannot fail the run: an unreadable config is the run's to report. */
static bool
config_labelled (struct ohbox_store *s, json_t *rec)
{
  const char *digest = json_string_value (json_object_get (rec, "config_digest"));
  cleanup_free char *raw = NULL;
  size_t len = 0;
  cleanup_error ohbox_error_t ignored = NULL;
  if (digest == NULL || ohbox_store_read_blob_unverified (s, digest, OCI_MAX_CONFIG_SIZE, &raw, &len, &ignored) < 0)
    return false;
  json_t *cfg = json_loadb (raw, len, 0, NULL);
  json_t *labels = json_object_get (json_object_get (cfg, "config"), "Labels");
  const char *v = json_string_value (json_object_get (labels, OHBOX_RUNTIME_LABEL));
  bool yes = v && strcmp (v, "1") == 0;
  json_decref (cfg);
  return yes;
}

int
ohbox_runtime_image_facts (struct ohbox_store *s, const char *image, bool check_label,
                           struct ohbox_runtime_image_facts *ret, ohbox_error_t *err)
{
  memset (ret, 0, sizeof *ret);
  json_t *rec = NULL;
  if (ohbox_store_resolve (s, image, &ret->id, err) < 0)
    return -1;
  if (ohbox_store_get_image (s, ret->id, &rec, err) < 0)
    {
      ohbox_runtime_image_facts_clear (ret);
      return ohbox_error_prefix (err, "image `%s`", image);
    }
  ret->runtime = ohbox_runtime_image_recorded (rec);
  ret->labelled = !ret->runtime && check_label && config_labelled (s, rec);
  json_decref (rec);
  return 0;
}

void
ohbox_runtime_image_facts_clear (struct ohbox_runtime_image_facts *f)
{
  free (f->id);
  memset (f, 0, sizeof *f);
}

int
ohbox_runtime_session_key (char **ret, ohbox_error_t *err)
{
  unsigned char r[16];
  if (getrandom (r, sizeof r, 0) != (ssize_t) sizeof r)
    return ohbox_error_errno (err, "getrandom for the session API key");
  char *key = xmalloc (2 * sizeof r + 1);
  for (size_t i = 0; i < sizeof r; i++)
    snprintf (key + 2 * i, 3, "%02x", r[i]);
  *ret = key;
  return 0;
}

char **
ohbox_runtime_executor_argv (int port, const char *listen_address, char *const *args)
{
  /* root: a base may have no /etc/passwd for the executor to add a user to. */
  static char *const defaults[] = { "--working-dir", "/workspace", "--username", "root", "--user-id", "0", NULL };
  char *const *rest = args ? args : defaults;
  size_t n = 0;
  while (rest[n])
    n++;
  char **argv = xcalloc (n + 4, sizeof (char *));
  size_t k = 0;
  argv[k++] = xasprintf ("%d", port);
  argv[k++] = xstrdup ("--listen-address");
  argv[k++] = xstrdup (listen_address);
  for (size_t i = 0; i < n; i++)
    argv[k++] = xstrdup (rest[i]);
  return argv;
}

const char *const ohbox_openhands_server_prefix[OHBOX_OPENHANDS_SERVER_PREFIX_N] = {
  "/openhands/micromamba/bin/micromamba",      "run", "-n", "openhands", "poetry", "run", "python", "-u", "-m",
  "openhands.runtime.action_execution_server",
};

char **
ohbox_runtime_openhands_server_args (char *const *entrypoint, char *const *command, int port)
{
  /* ENTRYPOINT + COMMAND as one list. */
  size_t ne = 0, nc = 0;
  while (entrypoint && entrypoint[ne])
    ne++;
  while (command && command[nc])
    nc++;
  if (ne + nc <= OHBOX_OPENHANDS_SERVER_PREFIX_N)
    return NULL;
#define ARG(i) ((i) < ne ? entrypoint[i] : command[(i) -ne])
  for (size_t i = 0; i < OHBOX_OPENHANDS_SERVER_PREFIX_N; i++)
    if (strcmp (ARG (i), ohbox_openhands_server_prefix[i]) != 0)
      return NULL;
  char want[16];
  snprintf (want, sizeof want, "%d", port);
  if (strcmp (ARG (OHBOX_OPENHANDS_SERVER_PREFIX_N), want) != 0)
    return NULL;
  char **args = xcalloc (ne + nc - OHBOX_OPENHANDS_SERVER_PREFIX_N, sizeof (char *));
  for (size_t i = OHBOX_OPENHANDS_SERVER_PREFIX_N + 1; i < ne + nc; i++)
    args[i - OHBOX_OPENHANDS_SERVER_PREFIX_N - 1] = xstrdup (ARG (i));
#undef ARG
  return args;
}

int
ohbox_runtime_free_port (const char *address, int *port, ohbox_error_t *err)
{
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
  if (inet_pton (AF_INET, address, &a.sin_addr) != 1)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is not an IPv4 address", address);
  cleanup_close int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return ohbox_error_errno (err, "socket");
  socklen_t l = sizeof a;
  if (bind (fd, (struct sockaddr *) &a, sizeof a) < 0 || getsockname (fd, (struct sockaddr *) &a, &l) < 0)
    return ohbox_error_errno (err, "find a free port for the executor on %s", address);
  *port = ntohs (a.sin_port);
  return 0;
}
