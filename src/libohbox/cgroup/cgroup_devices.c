/* cgroup_devices.c: which device nodes a sandbox may open (cgroup.h).
 *
 * cgroup v1: the devices controller's lists: "a" denied, then each rule
 * allowed.  cgroup v2 has no such files: the kernel asks a BPF program of
 * type BPF_PROG_TYPE_CGROUP_DEVICE attached to the cgroup, which sees the
 * device's type, major, minor and the access asked for, and answers 1
 * (allow) or 0.  The program is built here from the rules, a handful of
 * instructions per rule (as crun and runc build theirs): no compiler, no
 * BPF object file, nothing loaded but these instructions.  A hybrid host
 * gets the v1 lists only: the kernel asks its v1 devices controller as it
 * asks the programs of its (controller-less) v2 hierarchy, so one copy of
 * the rules is enough; the program is for a host without a v1 devices
 * hierarchy.
 *
 * Both are written before any process of the sandbox is in the cgroup, and
 * a sandbox cannot change them: the v1 files and the v2 attachment need
 * CAP_SYS_ADMIN of the host's user namespace, and /sys/fs/cgroup is
 * read-only inside. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "cgroup/cgroup_internal.h"
#include "common/utils.h"

/* What every sandbox may use, as Docker's default: creating nodes (the
 * user namespace refuses it anyway), and the nodes ohbox puts in every
 * /dev: null, zero, full, random, urandom, tty, console, ptmx and the
 * pseudo-terminals, and tun. */
const struct ohbox_device_rule ohbox_default_device_rules[] = {
  { 'c', -1, -1, "m" }, { 'b', -1, -1, "m" }, { 'c', 1, 3, "rwm" },    { 'c', 1, 5, "rwm" },
  { 'c', 1, 7, "rwm" }, { 'c', 1, 8, "rwm" }, { 'c', 1, 9, "rwm" },    { 'c', 5, 0, "rwm" },
  { 'c', 5, 1, "rwm" }, { 'c', 5, 2, "rwm" }, { 'c', 136, -1, "rwm" }, { 'c', 10, 200, "rwm" },
};
const size_t ohbox_n_default_device_rules = sizeof ohbox_default_device_rules / sizeof ohbox_default_device_rules[0];

/* "c 1:3 rwm", "b *:* m". */
static void
rule_text (const struct ohbox_device_rule *r, char *buf, size_t size)
{
  char major[24] = "*", minor[24] = "*";
  if (r->major >= 0)
    snprintf (major, sizeof major, "%lld", (long long) r->major);
  if (r->minor >= 0)
    snprintf (minor, sizeof minor, "%lld", (long long) r->minor);
  snprintf (buf, size, "%c %s:%s %s", r->type, major, minor, r->access);
}

static int
set_v1 (const char *dir, const struct ohbox_device_rule *rules, size_t n, ohbox_error_t *err)
{
  if (ohbox_cg_write (dir, "devices.deny", "a", err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      char text[80];
      rule_text (&rules[i], text, sizeof text);
      if (ohbox_cg_write (dir, rules[i].deny ? "devices.deny" : "devices.allow", text, err) < 0)
        return ohbox_error_prefix (err, "%s device `%s`", rules[i].deny ? "deny" : "allow", text);
    }
  return 0;
}

/* ---- the BPF program ---- */

struct program
{
  struct bpf_insn *insns;
  size_t n, cap;
};

static void
emit (struct program *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
  if (p->n == p->cap)
    p->insns = xrealloc (p->insns, (p->cap = p->cap ? p->cap * 2 : 64) * sizeof *p->insns);
  p->insns[p->n++] = (struct bpf_insn){ .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
}

static uint32_t
access_bits (const char *access)
{
  return (strchr (access, 'm') ? BPF_DEVCG_ACC_MKNOD : 0) | (strchr (access, 'r') ? BPF_DEVCG_ACC_READ : 0)
         | (strchr (access, 'w') ? BPF_DEVCG_ACC_WRITE : 0);
}

/* One rule: each check that does not hold jumps past the rule's "allow"
 * to the next rule.  Registers (set by the prologue): r2 type, r3 access
 * asked, r4 major, r5 minor; r1 is scratch. */
static void
emit_rule (struct program *p, const struct ohbox_device_rule *r)
{
  uint32_t access = access_bits (r->access);
  size_t jumps[4], n_jumps = 0;
  if (r->type != 'a')
    {
      jumps[n_jumps++] = p->n;
      emit (p, BPF_JMP | BPF_JNE | BPF_K, 2, 0, 0, r->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK);
    }
  if (access != (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE))
    {
      /* An allow rule: the access asked for must be within it (asked &
       * ~allowed == 0). A deny rule: any of it denies (asked & denied !=
       * 0), as the v1 lists, where denying w of an rwm entry leaves rm. */
      emit (p, BPF_ALU64 | BPF_MOV | BPF_X, 1, 3, 0, 0);
      emit (p, BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, (int32_t) (r->deny ? access : ~access));
      jumps[n_jumps++] = p->n;
      emit (p, BPF_JMP | (r->deny ? BPF_JEQ : BPF_JNE) | BPF_K, 1, 0, 0, 0);
    }
  if (r->major >= 0)
    {
      jumps[n_jumps++] = p->n;
      emit (p, BPF_JMP | BPF_JNE | BPF_K, 4, 0, 0, (int32_t) r->major);
    }
  if (r->minor >= 0)
    {
      jumps[n_jumps++] = p->n;
      emit (p, BPF_JMP | BPF_JNE | BPF_K, 5, 0, 0, (int32_t) r->minor);
    }
  emit (p, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, r->deny ? 0 : 1);
  emit (p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
  /* A jump's offset counts from the instruction after it. */
  for (size_t i = 0; i < n_jumps; i++)
    p->insns[jumps[i]].off = (int16_t) (p->n - jumps[i] - 1);
}

static void
build_program (struct program *p, const struct ohbox_device_rule *rules, size_t n)
{
  /* struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }:
   * access_type is (access << 16) | type. */
  emit (p, BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0);
  emit (p, BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 0xffff);
  emit (p, BPF_LDX | BPF_MEM | BPF_W, 3, 1, 0, 0);
  emit (p, BPF_ALU64 | BPF_RSH | BPF_K, 3, 0, 0, 16);
  emit (p, BPF_LDX | BPF_MEM | BPF_W, 4, 1, 4, 0);
  emit (p, BPF_LDX | BPF_MEM | BPF_W, 5, 1, 8, 0);
  /* Last rule first: the last one that matches decides. One that matches
   * every device and access (runc's default spec starts with "deny all")
   * decides all that reaches it: the code after it would never run, and
   * the verifier refuses a program with unreachable instructions. */
  for (size_t i = n; i-- > 0;)
    {
      emit_rule (p, &rules[i]);
      if (rules[i].type == 'a' && rules[i].major < 0 && rules[i].minor < 0
          && access_bits (rules[i].access) == (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE))
        return;
    }
  emit (p, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
  emit (p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

static int
set_v2 (const char *dir, const struct ohbox_device_rule *rules, size_t n, ohbox_error_t *err)
{
  struct program p = { NULL, 0, 0 };
  build_program (&p, rules, n);
  union bpf_attr load = {
    .prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
    .insns = (uint64_t) (uintptr_t) p.insns,
    .insn_cnt = (uint32_t) p.n,
    .license = (uint64_t) (uintptr_t) "Apache-2.0",
  };
  int prog = (int) syscall (SYS_bpf, BPF_PROG_LOAD, &load, sizeof load);
  int saved = errno;
  char log[4096] = "";
  if (prog < 0 && saved != EPERM)
    {
      /* Again with the verifier's log, for the message (a log too small
       * for a successful load would fail it with ENOSPC). */
      load.log_buf = (uint64_t) (uintptr_t) log;
      load.log_size = sizeof log;
      load.log_level = 1;
      syscall (SYS_bpf, BPF_PROG_LOAD, &load, sizeof load);
    }
  free (p.insns);
  if (prog < 0)
    return ohbox_error (err, saved == EPERM ? OHBOX_ERR_UNSUPPORTED : OHBOX_ERR_GENERIC, saved,
                        "load the device filter for cgroup `%s`%s%.200s", dir, log[0] ? ": " : "", log);
  cleanup_close int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    {
      close (prog);
      return ohbox_error_sys (err, OHBOX_ERR_CGROUP, "open cgroup `%s`", dir);
    }
  /* ALLOW_MULTI: a program attached above (systemd's, a parent runtime's)
   * still runs; every program must allow. */
  union bpf_attr attach = {
    .target_fd = (uint32_t) fd,
    .attach_bpf_fd = (uint32_t) prog,
    .attach_type = BPF_CGROUP_DEVICE,
    .attach_flags = BPF_F_ALLOW_MULTI,
  };
  int rc = (int) syscall (SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof attach);
  saved = errno;
  close (prog);
  if (rc < 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, saved, "attach the device filter to cgroup `%s`", dir);
  return 0;
}

int
ohbox_cgroup_set_devices (const struct ohbox_cgroup *cg, const struct ohbox_device_rule *rules, size_t n,
                          ohbox_error_t *err)
{
  /* The kernel checks a device access against both the v1 devices
   * controller and the unified hierarchy's BPF programs, so on a hybrid
   * host the v1 lists alone enforce the rules: a second copy as a program
   * would only add a verifier run to every start. */
  bool v1_devices = false;
  for (size_t i = 0; i < cg->n; i++)
    v1_devices = v1_devices || (cg->dirs[i].version == 1 && (cg->dirs[i].controllers & OHBOX_CGROUP_DEVICES));
  for (size_t i = 0; i < cg->n; i++)
    {
      const struct ohbox_cgroup_dir *d = &cg->dirs[i];
      int rc = 0;
      if (d->version == 1 && (d->controllers & OHBOX_CGROUP_DEVICES))
        rc = set_v1 (d->path, rules, n, err);
      else if (d->version == 2 && !v1_devices)
        rc = set_v2 (d->path, rules, n, err);
      if (rc < 0)
        return ohbox_error_prefix (err, "sandbox `%s`", cg->id);
    }
  return 0;
}
