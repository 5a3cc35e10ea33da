/* gpus.c: `--gpus` (devices.h).
 *
 * A CDI spec of kind nvidia.com/gpu, where the host has one (what
 * nvidia-ctk generates), says everything.  Without one, the driver's files
 * are found the way NVIDIA's own spec generator finds them:
 *   - the GPUs from /proc/driver/nvidia/gpus/BUS/information (minor number,
 *     UUID), in bus order, else from the /dev/nvidiaN nodes;
 *   - the nodes: /dev/nvidiaN of each GPU given, nvidiactl (required),
 *     nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, the nodes in /dev/nvidia-caps;
 *   - the user-space libraries of the `utility` and `compute` capabilities
 *     (Docker's default NVIDIA_DRIVER_CAPABILITIES) by name, found through
 *     the host's linker cache (`ldconfig -p`) or in the driver's own
 *     folders; mounted read-only at the host's paths, and the sandbox's
 *     linker cache rebuilt with their folders;
 *   - the tools nvidia-smi, nvidia-debugdump, nvidia-persistenced (and the
 *     MPS tools) where present, and the persistenced socket. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/strv.h"
#include "common/utils.h"
#include "devices/devices.h"

extern char **environ;

/* ---- the request ---- */

void
ohbox_gpu_request_free (struct ohbox_gpu_request *req)
{
  ohbox_strv_free (req->ids);
  memset (req, 0, sizeof *req);
}

int
ohbox_gpu_request_parse (const char *arg, struct ohbox_gpu_request *req, ohbox_error_t *err)
{
  memset (req, 0, sizeof *req);
  cleanup_free char *copy = xstrdup (arg);
  char *s = copy;
  size_t len = strlen (s);
  if (len >= 2 && s[0] == '"' && s[len - 1] == '"')
    s[len - 1] = '\0', s++;
  if (strcmp (s, "all") == 0)
    {
      req->all = true;
      return 0;
    }
  if (strncmp (s, "device=", 7) == 0)
    {
      size_t n = 0;
      for (char *save = NULL, *id = strtok_r (s + 7, ",", &save); id; id = strtok_r (NULL, ",", &save))
        ohbox_strv_push (&req->ids, &n, xstrdup (id));
      if (n > 0)
        return 0;
    }
  else if (s[0] >= '1' && s[0] <= '9' && strspn (s, "0123456789") == strlen (s) && strlen (s) < 6)
    {
      req->count = (unsigned) atoi (s);
      return 0;
    }
  ohbox_gpu_request_free (req);
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--gpus `%s`: expected all, a number of GPUs, or device=ID[,ID...]",
                      arg);
}

/* ---- through a CDI spec ---- */

static bool
all_digits (const char *s)
{
  return *s && strspn (s, "0123456789") == strlen (s);
}

static int
compare_indices (const void *a, const void *b)
{
  return atoi (*(char *const *) a) - atoi (*(char *const *) b);
}

static int
gpus_from_cdi (const char *const *dirs, char **names, const struct ohbox_gpu_request *req, struct ohbox_device_edits *e,
               ohbox_error_t *err)
{
  char **want = NULL;
  size_t n = 0;
  if (req->all)
    ohbox_strv_push (&want, &n, xstrdup ("nvidia.com/gpu=all"));
  else if (req->ids != NULL)
    for (size_t i = 0; req->ids[i]; i++)
      ohbox_strv_push (&want, &n, xasprintf ("nvidia.com/gpu=%s", req->ids[i]));
  else
    {
      /* N GPUs: the first N indices the spec names. */
      char **indices = NULL;
      size_t k = 0;
      for (size_t i = 0; names[i]; i++)
        if (all_digits (names[i]))
          ohbox_strv_push (&indices, &k, xstrdup (names[i]));
      if (k > 0)
        qsort (indices, k, sizeof *indices, compare_indices);
      if (k < req->count)
        {
          ohbox_strv_free (indices);
          return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "--gpus %u: the CDI spec for nvidia.com/gpu has %zu GPUs",
                              req->count, k);
        }
      for (size_t i = 0; i < req->count; i++)
        ohbox_strv_push (&want, &n, xasprintf ("nvidia.com/gpu=%s", indices[i]));
      ohbox_strv_free (indices);
    }
  int rc = ohbox_cdi_resolve (dirs, (const char *const *) want, n, e, err);
  ohbox_strv_free (want);
  return rc < 0 ? ohbox_error_prefix (err, "--gpus") : 0;
}

/* ---- from the driver's files ---- */

struct gpu
{
  unsigned minor;
  char uuid[96];
  char bus[64];
};

static int
compare_gpus (const void *a, const void *b)
{
  const struct gpu *x = a, *y = b;
  int c = strcmp (x->bus, y->bus);
  return c != 0 ? c : (int) x->minor - (int) y->minor;
}

/* A "Key: value" line of a /proc/driver/nvidia information file. */
static void
info_field (const char *line, const char *key, char *out, size_t size)
{
  size_t k = strlen (key);
  if (strncmp (line, key, k) != 0)
    return;
  line += k;
  while (*line == ' ' || *line == '\t')
    line++;
  snprintf (out, size, "%s", line);
  out[strcspn (out, "\r\n")] = '\0';
  for (size_t n = strlen (out); n > 0 && isspace ((unsigned char) out[n - 1]); n--)
    out[n - 1] = '\0';
}

static bool
gpus_from_proc (struct gpu **out, size_t *n)
{
  cleanup_dir DIR *d = opendir ("/proc/driver/nvidia/gpus");
  if (d == NULL)
    return false;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (de->d_name[0] == '.')
        continue;
      cleanup_free char *p = xasprintf ("/proc/driver/nvidia/gpus/%s/information", de->d_name);
      cleanup_file FILE *f = fopen (p, "re");
      if (f == NULL)
        continue;
      struct gpu g = { .minor = UINT_MAX };
      if (strlen (de->d_name) >= sizeof g.bus)
        continue;
      memcpy (g.bus, de->d_name, strlen (de->d_name) + 1);
      char line[256], minor[16] = "";
      while (fgets (line, sizeof line, f))
        {
          info_field (line, "GPU UUID:", g.uuid, sizeof g.uuid);
          info_field (line, "Device Minor:", minor, sizeof minor);
        }
      if (!all_digits (minor))
        continue;
      g.minor = (unsigned) atoi (minor);
      *out = xrealloc (*out, (*n + 1) * sizeof **out);
      (*out)[(*n)++] = g;
    }
  return *n > 0;
}

static void
gpus_from_dev (struct gpu **out, size_t *n)
{
  cleanup_dir DIR *d = opendir ("/dev");
  struct dirent *de;
  while (d != NULL && (de = readdir (d)) != NULL)
    {
      if (strncmp (de->d_name, "nvidia", 6) != 0 || !all_digits (de->d_name + 6) || strlen (de->d_name) > 12)
        continue;
      struct gpu g = { .minor = (unsigned) atoi (de->d_name + 6) };
      /* Ordered by minor number: a bus name that sorts the same way. */
      snprintf (g.bus, sizeof g.bus, "%08u", g.minor);
      *out = xrealloc (*out, (*n + 1) * sizeof **out);
      (*out)[(*n)++] = g;
    }
}

static bool
gpus_have_uuids (const struct gpu *gpus, size_t n)
{
  return n > 0 && gpus[0].uuid[0] != '\0';
}

/* The GPUs REQ selects, as indices into GPUS. */
static int
select_gpus (const struct gpu *gpus, size_t n, const struct ohbox_gpu_request *req, bool *chosen, ohbox_error_t *err)
{
  if (req->all)
    {
      for (size_t i = 0; i < n; i++)
        chosen[i] = true;
      return 0;
    }
  if (req->ids == NULL)
    {
      if (req->count > n)
        return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "--gpus %u: this host has %zu GPU%s", req->count, n,
                            n == 1 ? "" : "s");
      for (size_t i = 0; i < req->count; i++)
        chosen[i] = true;
      return 0;
    }
  for (size_t k = 0; req->ids[k]; k++)
    {
      const char *id = req->ids[k];
      size_t i = 0;
      while (i < n
             && !(all_digits (id) ? (size_t) atoi (id) == i && strlen (id) < 6 : strcasecmp (gpus[i].uuid, id) == 0))
        i++;
      if (i == n)
        return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0,
                            "--gpus device=%s: no such GPU (this host has %zu, indices 0 to %zu%s)", id, n, n - 1,
                            gpus_have_uuids (gpus, n) ? ", or their UUIDs" : "");
      chosen[i] = true;
    }
  return 0;
}

/* Adds the host node PATH (at the same path in the sandbox); a missing one
 * is skipped unless REQUIRED. */
static int
add_node (struct ohbox_device_edits *e, const char *path, bool required, ohbox_error_t *err)
{
  if (!required && access (path, F_OK) < 0)
    return 0;
  struct ohbox_device_node node = { .path = xstrdup (path), .host_path = xstrdup (path), .access = "rw" };
  if (ohbox_device_node_from_host (&node, false, false, false, err) < 0)
    {
      free (node.path);
      free (node.host_path);
      return -1;
    }
  return ohbox_device_edits_add_node (e, &node, err);
}

static void
add_ro_mount (struct ohbox_device_edits *e, const char *host, const char *target)
{
  for (size_t i = 0; i < e->n_mounts; i++)
    if (strcmp (e->mounts[i].container_path, target) == 0)
      return;
  static const char *const opts[] = { "ro", "nosuid", "nodev", "bind", NULL };
  e->mounts = xrealloc (e->mounts, (e->n_mounts + 1) * sizeof *e->mounts);
  e->mounts[e->n_mounts++] = (struct ohbox_device_mount){
    .host_path = xstrdup (host),
    .container_path = xstrdup (target),
    .options = ohbox_strv_dup ((char *const *) opts),
  };
}

/* The libraries of the `utility` and `compute` driver capabilities. */
static const char *const driver_libraries[] = {
  "libnvidia-ml",
  "libnvidia-cfg",
  "libnvidia-nscq",
  "libcuda",
  "libcudadebugger",
  "libnvidia-opencl",
  "libnvidia-gpucomp",
  "libnvidia-ptxjitcompiler",
  "libnvidia-fatbinaryloader",
  "libnvidia-allocator",
  "libnvidia-compiler",
  "libnvidia-pkcs11",
  "libnvidia-pkcs11-openssl3",
  "libnvidia-nvvm",
};

/* Folders the driver installs its libraries in outside the linker's. */
static const char *const driver_dirs[] = {
  "/usr/lib/x86_64-linux-gnu/nvidia/current",
  "/usr/lib64/nvidia",
  "/usr/local/nvidia/lib64",
  "/usr/lib/nvidia",
};

/* Whether the file name NAME is a version of library LIB: LIB.so, LIB.so.1, LIB.so.550.54.14. */
static bool
library_file (const char *name, const char *lib)
{
  size_t n = strlen (lib);
  return strncmp (name, lib, n) == 0 && strncmp (name + n, ".so", 3) == 0
         && (name[n + 3] == '\0' || name[n + 3] == '.');
}

/* Mounts the library at PATH: the file it resolves to, at PATH's folder
 * (the linker cache inside makes the soname links there). */
static void
add_library (struct ohbox_device_edits *e, const char *path)
{
  char real[PATH_MAX];
  if (realpath (path, real) == NULL)
    return;
  const char *slash = strrchr (path, '/');
  cleanup_free char *dir = xstrndup (path, (size_t) (slash - path));
  cleanup_free char *target = xasprintf ("%s/%s", dir, strrchr (real, '/') + 1);
  add_ro_mount (e, real, target);
  for (size_t i = 0; i < e->n_ldconfig_dirs; i++)
    if (strcmp (e->ldconfig_dirs[i], dir) == 0)
      return;
  ohbox_strv_push (&e->ldconfig_dirs, &e->n_ldconfig_dirs, xstrdup (dir));
}

/* The host's linker cache as `ldconfig -p` prints it (the host's own
 * ldconfig reading /etc/ld.so.cache: no input from a sandbox). */
static char *
linker_cache (void)
{
  static const char *const candidates[] = { "/sbin/ldconfig", "/usr/sbin/ldconfig" };
  const char *ldconfig = NULL;
  for (size_t i = 0; i < 2 && ldconfig == NULL; i++)
    if (access (candidates[i], X_OK) == 0)
      ldconfig = candidates[i];
  int fds[2];
  if (ldconfig == NULL || pipe2 (fds, O_CLOEXEC) < 0)
    return NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, fds[1], 1);
  posix_spawn_file_actions_addopen (&fa, 2, "/dev/null", O_WRONLY, 0);
  char *const argv[] = { (char *) ldconfig, (char *) "-p", NULL };
  pid_t pid;
  int rc = posix_spawn (&pid, ldconfig, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy (&fa);
  close (fds[1]);
  char *out = NULL;
  size_t len = 0;
  cleanup_error ohbox_error_t err = NULL;
  if (rc == 0 && ohbox_read_fd (fds[0], "ldconfig -p", 16u << 20, &out, &len, &err) < 0)
    out = NULL;
  close (fds[0]);
  int status;
  if (rc == 0)
    while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
      ;
  return out;
}

/* Each driver library: from the linker cache (64-bit entries), else from
 * the driver's folders. */
static size_t
add_libraries (struct ohbox_device_edits *e)
{
  cleanup_free char *cache = linker_cache ();
  size_t found = 0;
  for (size_t l = 0; l < sizeof driver_libraries / sizeof driver_libraries[0]; l++)
    {
      bool have = false;
      /* Lines: "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1". */
      for (char *line = cache; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
        {
          char name[256], flags[128], path[PATH_MAX];
          if (sscanf (line, " %255s (%127[^)]) => %4095s", name, flags, path) != 3)
            continue;
          if (library_file (name, driver_libraries[l]) && strstr (flags, "x86-64") != NULL)
            {
              add_library (e, path);
              have = true;
            }
        }
      for (size_t d = 0; !have && d < sizeof driver_dirs / sizeof driver_dirs[0]; d++)
        {
          cleanup_dir DIR *dir = opendir (driver_dirs[d]);
          struct dirent *de;
          while (dir != NULL && (de = readdir (dir)) != NULL)
            if (library_file (de->d_name, driver_libraries[l]))
              {
                cleanup_free char *p = xasprintf ("%s/%s", driver_dirs[d], de->d_name);
                add_library (e, p);
                have = true;
              }
        }
      found += have;
    }
  return found;
}

static void
add_tools (struct ohbox_device_edits *e)
{
  static const char *const tools[] = { "nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                       "nvidia-cuda-mps-control", "nvidia-cuda-mps-server" };
  static const char *const bins[] = { "/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin", "/sbin" };
  for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++)
    for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++)
      {
        cleanup_free char *p = xasprintf ("%s/%s", bins[b], tools[t]);
        char real[PATH_MAX];
        if (access (p, X_OK) == 0 && realpath (p, real) != NULL)
          {
            add_ro_mount (e, real, p);
            break;
          }
      }
  if (access ("/run/nvidia-persistenced/socket", F_OK) == 0)
    add_ro_mount (e, "/run/nvidia-persistenced/socket", "/run/nvidia-persistenced/socket");
}

static int
add_caps_nodes (struct ohbox_device_edits *e, ohbox_error_t *err)
{
  cleanup_dir DIR *d = opendir ("/dev/nvidia-caps");
  struct dirent *de;
  while (d != NULL && (de = readdir (d)) != NULL)
    {
      if (de->d_name[0] == '.')
        continue;
      cleanup_free char *p = xasprintf ("/dev/nvidia-caps/%s", de->d_name);
      if (add_node (e, p, false, err) < 0)
        return -1;
    }
  return 0;
}

static int
gpus_from_driver (const struct ohbox_gpu_request *req, struct ohbox_device_edits *e, ohbox_error_t *err)
{
  if (access ("/dev/nvidiactl", F_OK) < 0)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "--gpus: no NVIDIA driver found (no /dev/nvidiactl)");
  cleanup_free struct gpu *gpus = NULL;
  size_t n = 0;
  if (!gpus_from_proc (&gpus, &n))
    gpus_from_dev (&gpus, &n);
  if (n == 0)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "--gpus: the NVIDIA driver shows no GPU (no /dev/nvidia0)");
  qsort (gpus, n, sizeof *gpus, compare_gpus);
  cleanup_free bool *chosen = xcalloc (n, sizeof (bool));
  if (select_gpus (gpus, n, req, chosen, err) < 0)
    return -1;
  struct ohbox_buf visible = { 0 };
  for (size_t i = 0; i < n; i++)
    {
      if (!chosen[i])
        continue;
      cleanup_free char *node = xasprintf ("/dev/nvidia%u", gpus[i].minor);
      cleanup_free char *name = xasprintf ("nvidia.com/gpu=%zu", i);
      cleanup_free char *index = xasprintf ("%s%zu", visible.len ? "," : "", i);
      if (add_node (e, node, true, err) < 0)
        {
          ohbox_buf_free (&visible);
          return ohbox_error_prefix (err, "--gpus: GPU %zu", i);
        }
      ohbox_device_edits_add_name (e, name);
      ohbox_buf_append (&visible, index, strlen (index));
    }
  cleanup_free char *env = xasprintf ("NVIDIA_VISIBLE_DEVICES=%s", req->all ? "all" : visible.data);
  ohbox_buf_free (&visible);
  ohbox_device_edits_set_env (e, env);
  static const char *const controls[] = { "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset" };
  if (add_node (e, "/dev/nvidiactl", true, err) < 0)
    return ohbox_error_prefix (err, "--gpus");
  for (size_t i = 0; i < sizeof controls / sizeof controls[0]; i++)
    if (add_node (e, controls[i], false, err) < 0)
      return ohbox_error_prefix (err, "--gpus");
  if (add_caps_nodes (e, err) < 0)
    return ohbox_error_prefix (err, "--gpus");
  if (add_libraries (e) == 0)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0,
                        "--gpus: the NVIDIA driver's libraries were not found (no libcuda or libnvidia-ml in the "
                        "linker cache or in %s)",
                        driver_dirs[0]);
  add_tools (e);
  return 0;
}

int
ohbox_gpus_resolve (const char *const *cdi_dirs, const struct ohbox_gpu_request *req, struct ohbox_device_edits *e,
                    ohbox_error_t *err)
{
  char **names = NULL;
  if (ohbox_cdi_kind_devices (cdi_dirs, "nvidia.com/gpu", &names, err) < 0)
    return -1;
  int rc = names != NULL ? gpus_from_cdi (cdi_dirs, names, req, e, err) : gpus_from_driver (req, e, err);
  ohbox_strv_free (names);
  return rc;
}
