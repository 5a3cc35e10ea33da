/* oci/runtime_spec_default.c: the config.json `spec` writes (see
 * runtime_spec.h): a shell on a terminal, run as root with three
 * capabilities (as runc's template), every namespace of its own, the usual
 * mounts, and the masked and read-only paths every runtime applies. */
#include "config.h"
#include "oci/runtime_spec.h"

#include <stdbool.h>

static json_t *
mount_entry (const char *dest, const char *type, const char *source, const char *const *options)
{
  json_t *opts = json_array ();
  for (size_t i = 0; options[i]; i++)
    json_array_append_new (opts, json_string (options[i]));
  return json_pack ("{s:s, s:s, s:s, s:o}", "destination", dest, "type", type, "source", source, "options", opts);
}

json_t *
oci_json_strings (const char *const *v)
{
  json_t *a = json_array ();
  for (size_t i = 0; v[i]; i++)
    json_array_append_new (a, json_string (v[i]));
  return a;
}

json_t *
oci_runtime_spec_default (bool rootless, uid_t uid, gid_t gid)
{
  static const char *const caps[] = { "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL };
  static const char *const masked[] = { "/proc/acpi",
                                        "/proc/asound",
                                        "/proc/kcore",
                                        "/proc/keys",
                                        "/proc/latency_stats",
                                        "/proc/timer_list",
                                        "/proc/timer_stats",
                                        "/proc/sched_debug",
                                        "/sys/firmware",
                                        "/proc/scsi",
                                        "/sys/devices/virtual/powercap",
                                        NULL };
  static const char *const readonly[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL
  };
  static const char *const o_proc[] = { "nosuid", "noexec", "nodev", NULL };
  static const char *const o_dev[] = { "nosuid", "strictatime", "mode=755", "size=65536k", NULL };
  static const char *const o_pts[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", NULL };
  static const char *const o_pts_rootless[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL };
  static const char *const o_shm[] = { "nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL };
  static const char *const o_mqueue[] = { "nosuid", "noexec", "nodev", NULL };
  static const char *const o_sys[] = { "nosuid", "noexec", "nodev", "ro", NULL };
  static const char *const o_sys_rootless[] = { "rbind", "nosuid", "noexec", "nodev", "ro", NULL };
  static const char *const o_cgroup[] = { "nosuid", "noexec", "nodev", "relatime", "ro", NULL };

  json_t *capset = json_pack ("{s:o, s:o, s:o}", "bounding", oci_json_strings (caps), "effective",
                              oci_json_strings (caps), "permitted", oci_json_strings (caps));
  json_t *process = json_pack ("{s:b, s:{s:i, s:i}, s:[s], s:[s, s], s:s, s:o, s:[{s:s, s:i, s:i}], s:b}", "terminal",
                               1, "user", "uid", 0, "gid", 0, "args", "sh", "env",
                               "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm", "cwd",
                               "/", "capabilities", capset, "rlimits", "type", "RLIMIT_NOFILE", "hard", 1024, "soft",
                               1024, "noNewPrivileges", 1);

  json_t *mounts = json_array ();
  json_array_append_new (mounts, mount_entry ("/proc", "proc", "proc", o_proc));
  json_array_append_new (mounts, mount_entry ("/dev", "tmpfs", "tmpfs", o_dev));
  json_array_append_new (mounts, mount_entry ("/dev/pts", "devpts", "devpts", rootless ? o_pts_rootless : o_pts));
  json_array_append_new (mounts, mount_entry ("/dev/shm", "tmpfs", "shm", o_shm));
  json_array_append_new (mounts, mount_entry ("/dev/mqueue", "mqueue", "mqueue", o_mqueue));
  if (rootless)
    json_array_append_new (mounts, mount_entry ("/sys", "none", "/sys", o_sys_rootless));
  else
    {
      json_array_append_new (mounts, mount_entry ("/sys", "sysfs", "sysfs", o_sys));
      json_array_append_new (mounts, mount_entry ("/sys/fs/cgroup", "cgroup", "cgroup", o_cgroup));
    }

  json_t *ns = json_array ();
  static const char *const ns_root[] = { "pid", "network", "ipc", "uts", "mount", "cgroup", NULL };
  static const char *const ns_rootless[] = { "pid", "ipc", "uts", "mount", "user", NULL };
  for (const char *const *n = rootless ? ns_rootless : ns_root; *n; n++)
    json_array_append_new (ns, json_pack ("{s:s}", "type", *n));

  json_t *lx = json_pack ("{s:o, s:o, s:o}", "namespaces", ns, "maskedPaths", oci_json_strings (masked),
                          "readonlyPaths", oci_json_strings (readonly));
  if (rootless)
    {
      json_object_set_new (lx, "uidMappings",
                           json_pack ("[{s:i, s:I, s:i}]", "containerID", 0, "hostID", (json_int_t) uid, "size", 1));
      json_object_set_new (lx, "gidMappings",
                           json_pack ("[{s:i, s:I, s:i}]", "containerID", 0, "hostID", (json_int_t) gid, "size", 1));
    }
  else
    json_object_set_new (lx, "resources", json_pack ("{s:[{s:b, s:s}]}", "devices", "allow", 0, "access", "rwm"));

  return json_pack ("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o}", "ociVersion", OCI_RUNTIME_SPEC_VERSION, "process",
                    process, "root", "path", "rootfs", "readonly", 1, "hostname", "ohbox", "mounts", mounts, "linux",
                    lx);
}
