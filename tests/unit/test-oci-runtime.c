/* test-oci-runtime.c: the runtime-spec config.json parser (oci/runtime_spec.c):
 * the default `spec` document parses back, fields land in the typed structs,
 * and every unknown, unsupported or malformed field is an error that names it. */
#include "config.h"

#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "oci/runtime_spec.h"
#include "unit.h"

#define MINIMAL                                                                                                        \
  "{\"ociVersion\": \"1.1.0\", \"root\": {\"path\": \"rootfs\"}, \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"]}"

/* Parses TEXT and expects an error of KIND whose message contains NEEDLE;
 * returns NULL when it does, else what went wrong (static). */
static const char *
expect_error (const char *text, int kind, const char *needle)
{
  static char why[512];
  struct oci_runtime_spec *s = NULL;
  ohbox_error_t err = NULL;
  int r = oci_runtime_spec_parse (text, strlen (text), &s, &err);
  if (r == 0)
    {
      oci_runtime_spec_free (s);
      snprintf (why, sizeof why, "accepted: %.200s", text);
      return why;
    }
  const char *res = NULL;
  if (err->kind != kind || strstr (err->msg, needle) == NULL)
    {
      snprintf (why, sizeof why, "kind %d (want %d), message `%.300s` (want `%s`)", err->kind, kind, err->msg, needle);
      res = why;
    }
  ohbox_error_release (&err);
  oci_runtime_spec_free (s);
  return res;
}

static struct oci_runtime_spec *
parse_ok (const char *text, char *why, size_t len)
{
  struct oci_runtime_spec *s = NULL;
  ohbox_error_t err = NULL;
  if (oci_runtime_spec_parse (text, strlen (text), &s, &err) < 0)
    {
      snprintf (why, len, "%s", err->msg);
      ohbox_error_release (&err);
      oci_runtime_spec_free (s);
      return NULL;
    }
  return s;
}

static void
test_default_spec_roundtrip (void)
{
  for (int rootless = 0; rootless <= 1; rootless++)
    {
      json_t *j = oci_runtime_spec_default (rootless, 1000, 1000);
      CHECK (j != NULL);
      char *text = json_dumps (j, 0);
      json_decref (j);
      char why[512] = "";
      struct oci_runtime_spec *s = parse_ok (text, why, sizeof why);
      free (text);
      CHECK (s != NULL, "%s", why);
      CHECK_STR (s->oci_version, OCI_RUNTIME_SPEC_VERSION);
      CHECK (s->process && s->process->terminal);
      CHECK (s->linux_config && s->linux_config->masked_paths && s->linux_config->readonly_paths);
      bool userns = false, netns = false;
      for (size_t i = 0; i < s->linux_config->n_namespaces; i++)
        {
          userns |= s->linux_config->namespaces[i].type == CLONE_NEWUSER;
          netns |= s->linux_config->namespaces[i].type == CLONE_NEWNET;
        }
      CHECK (userns == (rootless == 1), "rootless=%d", rootless);
      CHECK (netns == (rootless == 0), "rootless=%d", rootless);
      if (rootless)
        CHECK (s->linux_config->uid_mappings.n == 1 && s->linux_config->uid_mappings.v[0].host_id == 1000
               && s->linux_config->uid_mappings.v[0].container_id == 0);
      oci_runtime_spec_free (s);
    }
}

static void
test_fields (void)
{
  const char *text =
    "{\"ociVersion\": \"1.0.2-dev\", \"root\": {\"path\": \"/b/rootfs\", \"readonly\": true},"
    " \"hostname\": \"h\", \"annotations\": {\"a\": \"b\"},"
    " \"process\": {\"cwd\": \"/w\", \"args\": [\"sh\", \"-c\", \"x\"], \"env\": [\"A=1\"],"
    "   \"user\": {\"uid\": 5, \"gid\": 6, \"umask\": 18, \"additionalGids\": [7, 8]},"
    "   \"noNewPrivileges\": true, \"oomScoreAdj\": 100,"
    "   \"capabilities\": {\"bounding\": [\"CAP_KILL\"], \"effective\": [\"CAP_KILL\"]},"
    "   \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"soft\": 1024, \"hard\": 4096}],"
    "   \"scheduler\": {\"policy\": \"SCHED_FIFO\", \"priority\": 5, \"flags\": [\"SCHED_FLAG_RECLAIM\"]},"
    "   \"ioPriority\": {\"class\": \"IOPRIO_CLASS_IDLE\"}},"
    " \"mounts\": [{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"/srv\","
    "   \"options\": [\"rbind\", \"ro\", \"nosuid\", \"rprivate\"]}],"
    " \"hooks\": {\"prestart\": [{\"path\": \"/bin/true\", \"timeout\": 5}]},"
    " \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\", \"path\": \"/run/netns/x\"}],"
    "   \"cgroupsPath\": \"/ohbox/c1\", \"rootfsPropagation\": \"rslave\","
    "   \"personality\": {\"domain\": \"LINUX32\"}, \"timeOffsets\": {\"boottime\": {\"secs\": -5}},"
    "   \"devices\": [{\"type\": \"p\", \"path\": \"/dev/fifo\", \"fileMode\": 420}],"
    "   \"resources\": {\"memory\": {\"limit\": 67108864}, \"pids\": {\"limit\": 64},"
    "     \"devices\": [{\"allow\": false, \"access\": \"rwm\"}, {\"allow\": true, \"type\": \"c\", \"major\": 1}],"
    "     \"blockIO\": {\"weightDevice\": [{\"major\": 8, \"minor\": 0, \"leafWeight\": 20}],"
    "       \"throttleWriteBpsDevice\": [{\"major\": 8, \"minor\": 16, \"rate\": 1048576}]},"
    "     \"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 4}],"
    "     \"network\": {\"classID\": 9, \"priorities\": [{\"name\": \"eth0\", \"priority\": 3}]}},"
    "   \"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1, \"architectures\": "
    "[\"SCMP_ARCH_X86_64\"],"
    "     \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\","
    "       \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}]}}}";
  char why[512] = "";
  struct oci_runtime_spec *s = parse_ok (text, why, sizeof why);
  CHECK (s != NULL, "%s", why);
  CHECK (s->root_readonly);
  CHECK_STR (s->root_path, "/b/rootfs");
  CHECK_STR (s->hostname, "h");
  CHECK_STR (oci_map_get (&s->annotations, "a"), "b");
  struct oci_process *p = s->process;
  CHECK (p->user.uid == 5 && p->user.gid == 6 && p->user.has_umask && p->user.umask == 18);
  CHECK (p->user.n_additional_gids == 2 && p->user.additional_gids[1] == 8);
  CHECK (p->no_new_privileges && p->has_oom_score_adj && p->oom_score_adj == 100);
  CHECK (p->has_capabilities && p->caps.bounding && p->caps.permitted == NULL);
  CHECK (p->n_rlimits == 1 && p->rlimits[0].resource == RLIMIT_NOFILE && p->rlimits[0].hard == 4096);
  CHECK (p->scheduler.present && p->scheduler.policy == 1 && p->scheduler.priority == 5 && p->scheduler.flags == 2);
  CHECK (p->io_priority.present && p->io_priority.ioclass == 3);
  CHECK (s->n_mounts == 1 && s->mounts[0].opts.bind && s->mounts[0].opts.recursive);
  CHECK ((s->mounts[0].opts.flags & (MS_RDONLY | MS_NOSUID)) == (MS_RDONLY | MS_NOSUID));
  CHECK (s->mounts[0].opts.propagation == (MS_PRIVATE | MS_REC));
  CHECK (s->hooks.n[OCI_HOOK_PRESTART] == 1 && s->hooks.v[OCI_HOOK_PRESTART][0].timeout == 5);
  struct oci_linux *l = s->linux_config;
  CHECK (l->n_namespaces == 2 && l->namespaces[0].type == CLONE_NEWPID && l->namespaces[0].path == NULL);
  CHECK_STR (l->namespaces[1].path, "/run/netns/x");
  CHECK (l->rootfs_propagation == (MS_SLAVE | MS_REC));
  CHECK (l->has_resources && l->resources.has_memory && l->resources.memory.limit == 67108864);
  CHECK (l->resources.has_pids && l->resources.pids_limit == 64);
  CHECK (l->has_personality && !l->monotonic.present && l->boottime.present && l->boottime.secs == -5);
  CHECK (l->n_devices == 1 && l->devices[0].type == 'p' && l->devices[0].file_mode == 420);
  struct oci_resources *r = &l->resources;
  CHECK (r->n_devices == 2 && !r->devices[0].allow && r->devices[1].allow && r->devices[1].type == 'c');
  CHECK (r->devices[1].major == 1 && r->devices[1].minor == -1);
  CHECK_STR (r->devices[1].access, "rwm");
  CHECK (r->has_blkio && r->blkio.weight_device.n == 1 && !r->blkio.weight_device.v[0].has_weight);
  CHECK (r->blkio.weight_device.v[0].leaf_weight == 20 && r->blkio.throttle_read_bps.n == 0);
  CHECK (r->blkio.throttle_write_bps.n == 1 && r->blkio.throttle_write_bps.v[0].rate == 1048576);
  CHECK (r->n_hugepages == 1 && r->hugepages[0].limit == 4);
  CHECK_STR (r->hugepages[0].page_size, "2MB");
  CHECK (r->has_network && r->class_id == 9 && r->n_net_priorities == 1 && r->net_priorities[0].priority == 3);
  CHECK (l->seccomp != NULL);
  oci_runtime_spec_free (s);
}

/* Each bad document, the kind of error and the field its message must name. */
static void
test_errors_name_the_field (void)
{
  static const struct unit_refusal cases[] = {
    { "{\"root\": {\"path\": \"r\"}}", OHBOX_ERR_USAGE, "ociVersion" },
    { "{\"ociVersion\": \"2.0.0\"}", OHBOX_ERR_UNSUPPORTED, "ociVersion" },
    { "{\"ociVersion\": \"one\"}", OHBOX_ERR_USAGE, "ociVersion" },
    { MINIMAL ", \"bogus\": 1}", OHBOX_ERR_USAGE, "bogus" },
    { MINIMAL ", \"solaris\": {}}", OHBOX_ERR_UNSUPPORTED, "solaris" },
    { MINIMAL ", \"linux\": {\"intelRdt\": {}}}", OHBOX_ERR_UNSUPPORTED, "linux.intelRdt" },
    { MINIMAL ", \"linux\": {\"resources\": {\"memory\": {\"limitt\": 1}}}}", OHBOX_ERR_USAGE,
      "linux.resources.memory.limitt" },
    { MINIMAL ", \"linux\": {\"resources\": {\"memory\": {\"limit\": \"1G\"}}}}", OHBOX_ERR_USAGE,
      "linux.resources.memory.limit" },
    { MINIMAL ", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"nonesuch\"}]}}", OHBOX_ERR_USAGE,
      "linux.namespaces[1]" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_MAYBE\"}}}", OHBOX_ERR_USAGE,
      "linux.seccomp.defaultAction" },
    { MINIMAL ", \"mounts\": [{\"destination\": \"/x\", \"type\": \"bind\", \"source\": \"/y\", \"options\": "
              "[\"rbind\", \"a,b\"]}]}",
      OHBOX_ERR_USAGE, "mounts[0].options[1]" },
    /* A misspelt flag on a bind mount would be dropped by the kernel: refused. */
    { MINIMAL ", \"mounts\": [{\"destination\": \"/x\", \"type\": \"bind\", \"source\": \"/y\", \"options\": "
              "[\"rbind\", \"nosiud\"]}]}",
      OHBOX_ERR_USAGE, "nosiud" },
    { MINIMAL ", \"mounts\": [{\"destination\": \"/x\", \"weird\": true}]}", OHBOX_ERR_USAGE, "mounts[0].weird" },
    { MINIMAL ", \"hooks\": {\"prestart\": [{\"path\": \"relative/hook\"}]}}", OHBOX_ERR_USAGE,
      "hooks.prestart[0].path" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"rel\", \"args\": [\"sh\"]}}", OHBOX_ERR_USAGE,
      "process.cwd" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"],"
      " \"rlimits\": [{\"type\": \"RLIMIT_NOPE\", \"soft\": 1, \"hard\": 1}]}}",
      OHBOX_ERR_USAGE, "process.rlimits[0]" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"capabilities\": {\"bnding\": "
      "[]}}}",
      OHBOX_ERR_USAGE, "process.capabilities.bnding" },
    { MINIMAL ", \"linux\": {\"resources\": {\"rdma\": {\"mlx5_0\": {\"hcaHandles\": 1}}}}}", OHBOX_ERR_UNSUPPORTED,
      "linux.resources.rdma" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_NOTIFY\"}}}", OHBOX_ERR_UNSUPPORTED,
      "SCMP_ACT_NOTIFY" },
    /* Each object and list of the spec names its fields the same way. */
    { MINIMAL ", \"hooks\": []}", OHBOX_ERR_USAGE, "config.json: hooks: must be an object" },
    { MINIMAL ", \"hooks\": {\"bogus\": []}}", OHBOX_ERR_USAGE, "config.json: hooks.bogus: unknown field" },
    { MINIMAL ", \"hooks\": {\"poststop\": [{\"path\": \"/x\", \"timeout\": 0}]}}", OHBOX_ERR_USAGE,
      "hooks.poststop[0].timeout: must be greater than zero" },
    { "{\"ociVersion\": \"1.1.0\", \"root\": {\"path\": \"\"}}", OHBOX_ERR_USAGE, "config.json: root.path: empty" },
    { MINIMAL ", \"mounts\": [7]}", OHBOX_ERR_USAGE, "config.json: mounts[0]: must be an object" },
    { MINIMAL ", \"mounts\": [{\"destination\": \"/x\", \"type\": \"tmpfs\", \"uidMappings\": "
              "[{\"containerID\": 0, \"hostID\": 1, \"size\": 1}]}]}",
      OHBOX_ERR_USAGE, "mounts[0]: uidMappings and gidMappings go together" },
    { MINIMAL ", \"mounts\": [{\"destination\": \"/x\", \"type\": \"bind\", \"source\": \"/y\", \"uidMappings\": "
              "[{\"containerID\": 0, \"hostID\": 1, \"size\": 0}], \"gidMappings\": []}]}",
      OHBOX_ERR_USAGE, "mounts[0].uidMappings[0]: an empty range" },
    { MINIMAL ", \"linux\": {\"uidMappings\": {}}}", OHBOX_ERR_USAGE, "linux.uidMappings: must be an array" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"env\": [\"X\"]}}",
      OHBOX_ERR_USAGE, "process.env[0]: `X` is not KEY=VALUE" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"capabilities\": "
      "{\"bounding\": [1]}}}",
      OHBOX_ERR_USAGE, "process.capabilities.bounding[0]: must be a string" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"rlimits\": [{\"type\": "
      "\"RLIMIT_NOFILE\", \"soft\": 1, \"hard\": 1}, {\"type\": \"RLIMIT_NOFILE\", \"soft\": 1, \"hard\": 1}]}}",
      OHBOX_ERR_USAGE, "process.rlimits[1].type: `RLIMIT_NOFILE` given twice" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"user\": {\"umask\": 512}}}",
      OHBOX_ERR_USAGE, "process.user.umask: 1000 is not a umask" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"user\": {\"username\": "
      "\"x\"}}}",
      OHBOX_ERR_UNSUPPORTED, "process.user.username: a Windows field" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"user\": "
      "{\"additionalGids\": [1, -1]}}}",
      OHBOX_ERR_USAGE, "process.user.additionalGids[1]: must be a gid" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"scheduler\": {\"policy\": "
      "\"SCHED_ISO\"}}}",
      OHBOX_ERR_UNSUPPORTED, "process.scheduler.policy: SCHED_ISO" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"scheduler\": {\"policy\": "
      "\"SCHED_FIFO\", \"flags\": [\"SCHED_FLAG_NOPE\"]}}}",
      OHBOX_ERR_USAGE, "process.scheduler.flags[0]: unknown flag" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"ioPriority\": {\"class\": "
      "\"IOPRIO_CLASS_NONE\"}}}",
      OHBOX_ERR_USAGE, "process.ioPriority.class: unknown class `IOPRIO_CLASS_NONE`" },
    { "{\"ociVersion\": \"1.1.0\", \"process\": {\"cwd\": \"/\", \"args\": [\"sh\"], \"consoleSize\": {\"height\": "
      "70000, \"width\": 80}}}",
      OHBOX_ERR_USAGE, "process.consoleSize: larger than 65535" },
    { MINIMAL ", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"pid\"}]}}", OHBOX_ERR_USAGE,
      "linux.namespaces[1].type: the pid namespace is listed twice" },
    { MINIMAL ", \"linux\": {\"namespaces\": [{\"type\": \"pid\", \"path\": \"proc/1/ns/pid\"}]}}", OHBOX_ERR_USAGE,
      "linux.namespaces[0].path: `proc/1/ns/pid` is not an absolute path" },
    { MINIMAL ", \"linux\": {\"devices\": [{\"type\": \"c\", \"path\": \"/tmp/x\", \"major\": 1, \"minor\": 3}]}}",
      OHBOX_ERR_USAGE, "linux.devices[0].path: `/tmp/x` is not below /dev" },
    { MINIMAL ", \"linux\": {\"devices\": [{\"type\": \"x\", \"path\": \"/dev/x\"}]}}", OHBOX_ERR_USAGE,
      "linux.devices[0].type: `x` is not a device type" },
    { MINIMAL ", \"linux\": {\"rootfsPropagation\": \"rbind\"}}", OHBOX_ERR_USAGE,
      "linux.rootfsPropagation: unknown propagation `rbind`" },
    { MINIMAL ", \"linux\": {\"sysctl\": {\"k\": 1}}}", OHBOX_ERR_USAGE, "linux.sysctl.k: must be a string" },
    { MINIMAL ", \"linux\": {\"maskedPaths\": [\"/a\", \"b\"]}}", OHBOX_ERR_USAGE,
      "linux.maskedPaths[1]: `b` is not an absolute path" },
    { MINIMAL ", \"linux\": {\"timeOffsets\": {\"monotonic\": {\"nanosecs\": 1000000000}}}}", OHBOX_ERR_USAGE,
      "linux.timeOffsets.monotonic: nanosecs must be below 1000000000" },
    { MINIMAL ", \"linux\": {\"timeOffsets\": {\"realtime\": {}}}}", OHBOX_ERR_USAGE,
      "linux.timeOffsets.realtime: unknown field" },
    { MINIMAL ", \"linux\": {\"personality\": {\"domain\": \"LINUX64\"}}}", OHBOX_ERR_USAGE,
      "linux.personality.domain: `LINUX64` is not LINUX or LINUX32" },
    { MINIMAL ", \"linux\": {\"personality\": {\"domain\": \"LINUX\", \"flags\": [\"x\"]}}}", OHBOX_ERR_UNSUPPORTED,
      "linux.personality.flags: no personality flag is supported" },
    { MINIMAL ", \"linux\": {\"resources\": {\"devices\": [{\"access\": \"r\"}]}}}", OHBOX_ERR_USAGE,
      "linux.resources.devices[0].allow: required" },
    { MINIMAL ", \"linux\": {\"resources\": {\"devices\": [{\"allow\": true, \"access\": \"rwx\"}]}}}", OHBOX_ERR_USAGE,
      "linux.resources.devices[0].access: `rwx` is not a subset of \"rwm\"" },
    { MINIMAL ", \"linux\": {\"resources\": {\"memory\": {\"swappiness\": 101}}}}", OHBOX_ERR_USAGE,
      "linux.resources.memory.swappiness: 101 is out of range (-1..100)" },
    { MINIMAL ", \"linux\": {\"resources\": {\"cpu\": {\"mems\": \"0-1;\"}}}}", OHBOX_ERR_USAGE,
      "linux.resources.cpu.mems: `0-1;` is not a node list" },
    { MINIMAL ", \"linux\": {\"resources\": {\"pids\": {}}}}", OHBOX_ERR_USAGE,
      "linux.resources.pids.limit: required" },
    { MINIMAL ", \"linux\": {\"resources\": {\"blockIO\": {\"weightDevice\": [{\"major\": 8, \"minor\": 0, \"rate\": "
              "1}]}}}}",
      OHBOX_ERR_USAGE, "linux.resources.blockIO.weightDevice[0].rate: unknown field" },
    { MINIMAL ", \"linux\": {\"resources\": {\"blockIO\": {\"throttleReadBpsDevice\": [{\"major\": 8, \"minor\": 0, "
              "\"weight\": 1}]}}}}",
      OHBOX_ERR_USAGE, "linux.resources.blockIO.throttleReadBpsDevice[0].weight: unknown field" },
    { MINIMAL ", \"linux\": {\"resources\": {\"blockIO\": {\"throttleWriteIOPSDevice\": [{\"major\": 8}]}}}}",
      OHBOX_ERR_USAGE, "linux.resources.blockIO.throttleWriteIOPSDevice[0].minor: required" },
    { MINIMAL ", \"linux\": {\"resources\": {\"hugepageLimits\": [{\"pageSize\": \"2XB\", \"limit\": 1}]}}}",
      OHBOX_ERR_USAGE, "linux.resources.hugepageLimits[0].pageSize: `2XB` is not a page size" },
    { MINIMAL ", \"linux\": {\"resources\": {\"network\": {\"priorities\": [{\"name\": \"eth0\"}]}}}}", OHBOX_ERR_USAGE,
      "linux.resources.network.priorities[0].priority: required" },
    { MINIMAL ", \"linux\": {\"resources\": {\"unified\": {\"memory/high\": \"1\"}}}}", OHBOX_ERR_USAGE,
      "linux.resources.unified.memory/high: not a cgroup v2 interface file name" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": "
              "[\"SCMP_ARCH_Z80\"]}}}",
      OHBOX_ERR_USAGE, "linux.seccomp.architectures[0]: unknown architecture `SCMP_ARCH_Z80`" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"flags\": "
              "[\"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV\"]}}}",
      OHBOX_ERR_UNSUPPORTED, "linux.seccomp.flags[0]: flag `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"listenerPath\": \"/x\"}}}",
      OHBOX_ERR_UNSUPPORTED, "linux.seccomp.listenerPath: seccomp agents are not supported" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [], "
              "\"action\": \"SCMP_ACT_ALLOW\"}]}}}",
      OHBOX_ERR_USAGE, "linux.seccomp.syscalls[0].names: required (at least one system call)" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": "
              "[\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": "
              "\"SCMP_CMP_X\"}]}]}}}",
      OHBOX_ERR_USAGE, "linux.seccomp.syscalls[0].args[0].op: unknown operator `SCMP_CMP_X`" },
    { MINIMAL ", \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": "
              "[\"read\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}}}",
      OHBOX_ERR_UNSUPPORTED, "linux.seccomp.syscalls[0].action: SCMP_ACT_NOTIFY" },
    { "[1]", OHBOX_ERR_USAGE, "config.json" },
    { "{\"ociVersion\": ", OHBOX_ERR_USAGE, "config.json" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      const char *why = expect_error (cases[i].doc, cases[i].kind, cases[i].msg);
      CHECK (why == NULL, "case %zu: %s", i, why);
    }
}

static void
test_resources_and_process_alone (void)
{
  struct oci_resources r;
  ohbox_error_t err = NULL;
  const char *res = "{\"memory\": {\"limit\": 1048576}, \"cpu\": {\"quota\": 50000, \"period\": 100000}}";
  CHECK (oci_runtime_resources_parse (res, strlen (res), "resources", &r, &err) == 0, "%s", err ? err->msg : "");
  CHECK (r.has_memory && r.memory.limit == 1048576 && r.has_cpu && r.cpu.quota == 50000);
  oci_resources_clear (&r);
  const char *bad = "{\"cpu\": {\"qouta\": 1}}";
  CHECK (oci_runtime_resources_parse (bad, strlen (bad), "resources", &r, &err) < 0);
  CHECK (strstr (err->msg, "cpu.qouta") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  oci_resources_clear (&r);

  struct oci_process *p = NULL;
  const char *proc =
    "{\"cwd\": \"/\", \"args\": [\"ls\"], \"terminal\": true, \"consoleSize\": {\"height\": 24, \"width\": 80}}";
  CHECK (oci_runtime_process_parse (proc, strlen (proc), "process.json", &p, &err) == 0, "%s", err ? err->msg : "");
  CHECK (p->terminal && p->has_console_size && p->console_width == 80);
  oci_process_free (p);
  p = NULL;
  const char *noargs = "{\"cwd\": \"/\"}";
  CHECK (oci_runtime_process_parse (noargs, strlen (noargs), "process.json", &p, &err) < 0);
  CHECK (strstr (err->msg, "process.json") != NULL && strstr (err->msg, "args") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  oci_process_free (p);
}

static void
test_mount_options (void)
{
  struct oci_mount_options o;
  ohbox_error_t err = NULL;
  char *opts[] = { "nosuid", "noexec", "nodev", "mode=755", "size=64k", "relatime", NULL };
  CHECK (oci_mount_options_parse (opts, "tmpfs", "m", &o, &err) == 0, "%s", err ? err->msg : "");
  CHECK ((o.flags & (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME))
         == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME));
  CHECK_STR (o.data, "mode=755,size=64k");
  CHECK (!o.bind);
  oci_mount_options_clear (&o);
  char *rw[] = { "ro", "rw", NULL };
  CHECK (oci_mount_options_parse (rw, "tmpfs", "m", &o, &err) == 0, "%s", err ? err->msg : "");
  CHECK ((o.flags & MS_RDONLY) == 0, "the later rw wins");
  oci_mount_options_clear (&o);
}

UNIT_MAIN_BEGIN ("test-oci-runtime")
RUN_TEST (test_default_spec_roundtrip);
RUN_TEST (test_fields);
RUN_TEST (test_errors_name_the_field);
RUN_TEST (test_resources_and_process_alone);
RUN_TEST (test_mount_options);
UNIT_MAIN_END
