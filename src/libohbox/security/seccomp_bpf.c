/* seccomp_bpf.c: the BPF side of the seccomp module (see seccomp.h): the
 * ENOSYS stub in front of libseccomp's program, the export, the cache of
 * compiled programs, and the load in the child. */
#include "config.h"
#include "security/seccomp_internal.h"
/* See seccomp.c: reaches libseccomp's <seccomp.h> past ours. */
#define OHBOX_SECCOMP_WANT_LIBSECCOMP 1
#include <seccomp.h>

#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_STUB_ARCHES 8

bool
ohbox_seccomp_stub_covers (uint32_t token)
{
  /* Not x32 (its numbers carry __X32_SYSCALL_BIT under the x86_64 arch
   * value) nor MIPS (per-ABI offsets): those go straight to the filter. */
  return token == SCMP_ARCH_X86_64 || token == SCMP_ARCH_X86 || token == SCMP_ARCH_AARCH64 || token == SCMP_ARCH_ARM
         || token == SCMP_ARCH_PPC64LE || token == SCMP_ARCH_PPC64 || token == SCMP_ARCH_S390X
         || token == SCMP_ARCH_S390 || token == SCMP_ARCH_RISCV64;
}

/* The ENOSYS stub, placed before libseccomp's program:
 *
 *     ld  [arch]
 *     per architecture A with a highest profile call MAX:
 *       jeq #A, 0, <next architecture>
 *       ld  [nr]
 *       jset #__X32_SYSCALL_BIT, <filter>, 0      (x86_64 only: x32 calls)
 *       jgt #MAX, <enosys>, <filter>
 *     ja  <filter>
 *   enosys:
 *     ret #SECCOMP_RET_ERRNO|ENOSYS
 *   filter:
 *     (libseccomp's program, which loads what it needs itself)
 *
 * Returns the number of instructions written to OUT (room for 1 + 4 per
 * architecture + 2). */
static size_t
build_stub (const struct ohbox_seccomp_arch *arches, size_t n_arches, struct sock_filter *out)
{
  size_t n_blocks = 0, len = 1 + 2;
  for (size_t i = 0; i < n_arches && i < MAX_STUB_ARCHES; i++)
    if (arches[i].max_nr >= 0 && ohbox_seccomp_stub_covers (arches[i].token))
      {
        n_blocks++;
        len += arches[i].token == SCMP_ARCH_X86_64 ? 4 : 3;
      }
  if (n_blocks == 0)
    return 0;

  size_t pos = 0, enosys = len - 1, filter = len;
  out[pos++] = (struct sock_filter) BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch));
  for (size_t i = 0; i < n_arches && i < MAX_STUB_ARCHES; i++)
    {
      const struct ohbox_seccomp_arch *a = &arches[i];
      if (a->max_nr < 0 || !ohbox_seccomp_stub_covers (a->token))
        continue;
      bool x32_bit = a->token == SCMP_ARCH_X86_64;
      size_t block = x32_bit ? 4 : 3;
      out[pos] = (struct sock_filter) BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, a->token, 0, (uint8_t) (block - 1));
      pos++;
      out[pos++] = (struct sock_filter) BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr));
      if (x32_bit)
        {
          out[pos] = (struct sock_filter) BPF_JUMP (BPF_JMP | BPF_JSET | BPF_K, 0x40000000u,
                                                    (uint8_t) (filter - pos - 1), 0);
          pos++;
        }
      out[pos] = (struct sock_filter) BPF_JUMP (BPF_JMP | BPF_JGT | BPF_K, (uint32_t) a->max_nr,
                                                (uint8_t) (enosys - pos - 1), (uint8_t) (filter - pos - 1));
      pos++;
    }
  out[pos++] = (struct sock_filter) BPF_STMT (BPF_JMP | BPF_JA, 1);
  out[pos++] = (struct sock_filter) BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
  return pos;
}

/* Exports the libseccomp program (through a memfd: libseccomp 2.5 only
 * writes to a file descriptor) behind the ENOSYS stub. */
int
ohbox_seccomp_export (void *ctx, const char *name, const struct ohbox_seccomp_arch *arches, size_t n_arches,
                      bool with_stub, unsigned int flags, struct ohbox_seccomp_filter **ret, ohbox_error_t *err)
{
  cleanup_close int fd = memfd_create ("ohbox-seccomp-bpf", MFD_CLOEXEC);
  cleanup_free char *bpf = NULL;
  size_t len = 0;

  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SECURITY, "memfd_create `ohbox-seccomp-bpf`");
  int rc = seccomp_export_bpf (ctx, fd);
  if (rc < 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, -rc, "seccomp profile `%s`: seccomp_export_bpf", name);
  if (lseek (fd, 0, SEEK_SET) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SECURITY, "lseek `ohbox-seccomp-bpf`");
  /* Read well past the kernel's limit so that the message below can say
   * how large the program is. */
  if (ohbox_read_fd (fd, "ohbox-seccomp-bpf", 64 * BPF_MAXINSNS * sizeof (struct sock_filter), &bpf, &len, err) < 0)
    return ohbox_error_prefix (err, "seccomp profile `%s`", name);
  if (len == 0 || len % sizeof (struct sock_filter) != 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "seccomp profile `%s`: libseccomp exported %zu bytes", name, len);

  size_t n_filter = len / sizeof (struct sock_filter);
  struct sock_filter stub[3 + 4 * MAX_STUB_ARCHES];
  size_t n_stub = with_stub ? build_stub (arches, n_arches, stub) : 0;
  if (n_stub + n_filter > BPF_MAXINSNS)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "seccomp profile `%s`: the filter has %zu instructions, more than the kernel's %d", name,
                        n_stub + n_filter, BPF_MAXINSNS);

  struct ohbox_seccomp_filter *f = xcalloc (1, sizeof *f);
  struct sock_filter *insns = xcalloc (n_stub + n_filter, sizeof *insns);
  memcpy (insns, stub, n_stub * sizeof *insns);
  memcpy (insns + n_stub, bpf, len);
  f->prog.filter = insns;
  f->prog.len = (unsigned short) (n_stub + n_filter);
  f->flags = flags;
  *ret = f;
  return 0;
}

/* Bump when the compiler's output changes for the same inputs. */
#define CACHE_FORMAT "ohbox-seccomp-cache-2"
#define CACHE_MAGIC 0x4642484fu /* "OHBF" */
#define KNOWN_FLAGS (SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW | SECCOMP_FILTER_FLAG_TSYNC)

struct cache_header
{
  uint32_t magic;
  uint32_t flags;
  uint32_t len;
  uint32_t reserved;
};

/* An entry holds its whole key (the text below and the profile) in front of
 * the program, and a load compares it byte for byte: the file name is only
 * a bucket, so no digest is needed (starting a sandbox loads no libcrypto)
 * and two keys sharing a bucket cost a compile, never a wrong program. */
struct cache_entry_header
{
  uint32_t magic;
  uint32_t key_len;
};
#define CACHE_ENTRY_MAGIC 0x4b42484fu /* "OHBK" */
#define CACHE_MAX_KEY (OHBOX_SECCOMP_MAX_PROFILE_SIZE + 512)

void
ohbox_seccomp_cache_key (const char *json, size_t len, uint32_t native, const int kernel[3], uint64_t caps,
                         struct ohbox_seccomp_cache_key *key)
{
  const struct scmp_version *v = seccomp_version ();
  char head[256];
  int n = snprintf (head, sizeof head, "%s\n%s\nlibseccomp %u.%u.%u\narch %u\nkernel %d.%d.%d\ncaps %llx\n",
                    CACHE_FORMAT, PACKAGE_VERSION, v->major, v->minor, v->micro, native, kernel[0], kernel[1],
                    kernel[2], (unsigned long long) caps);
  memset (key, 0, sizeof *key);
  ohbox_buf_append (&key->text, head, (size_t) n);
  ohbox_buf_append (&key->text, json, len);
  snprintf (key->bucket, sizeof key->bucket, "%016llx-%zx.bpf", (unsigned long long) caps, key->text.len);
}

void
ohbox_seccomp_cache_key_free (struct ohbox_seccomp_cache_key *key)
{
  ohbox_buf_free (&key->text);
}

/* Reads a program serialized at offset START of FD, which ends the file. */
static int
filter_read (int fd, off_t start, struct ohbox_seccomp_filter **ret)
{
  struct cache_header h;
  struct stat st;

  if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_size < start)
    return -1;
  if (read (fd, &h, sizeof h) != (ssize_t) sizeof h || h.magic != CACHE_MAGIC || h.len == 0 || h.len > BPF_MAXINSNS
      || (h.flags & ~KNOWN_FLAGS) != 0
      || (uint64_t) (st.st_size - start) != sizeof h + (uint64_t) h.len * sizeof (struct sock_filter))
    return -1;
  struct sock_filter *insns = xcalloc (h.len, sizeof *insns);
  size_t want = h.len * sizeof *insns;
  if (read (fd, insns, want) != (ssize_t) want)
    {
      free (insns);
      return -1;
    }
  struct ohbox_seccomp_filter *f = xcalloc (1, sizeof *f);
  f->flags = h.flags;
  f->prog.len = (unsigned short) h.len;
  f->prog.filter = insns;
  *ret = f;
  return 0;
}

int
ohbox_seccomp_cache_load (const char *dir, const struct ohbox_seccomp_cache_key *key, struct ohbox_seccomp_filter **ret)
{
  cleanup_free char *path = xasprintf ("%s/%s", dir, key->bucket);
  cleanup_close int fd = open (path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct cache_entry_header h;
  if (fd < 0 || read (fd, &h, sizeof h) != (ssize_t) sizeof h || h.magic != CACHE_ENTRY_MAGIC
      || h.key_len != key->text.len || h.key_len > CACHE_MAX_KEY)
    return -1;
  cleanup_free char *stored = xmalloc (h.key_len);
  if (read (fd, stored, h.key_len) != (ssize_t) h.key_len || memcmp (stored, key->text.data, h.key_len) != 0)
    return -1;
  return filter_read (fd, (off_t) (sizeof h + h.key_len), ret);
}

int
ohbox_seccomp_filter_load (int dirfd, const char *name, struct ohbox_seccomp_filter **ret)
{
  cleanup_close int fd = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  return filter_read (fd, 0, ret);
}

static void
filter_serialize (const struct ohbox_seccomp_filter *f, struct ohbox_buf *b)
{
  struct cache_header h = { .magic = CACHE_MAGIC, .flags = f->flags, .len = f->prog.len };
  ohbox_buf_append (b, &h, sizeof h);
  ohbox_buf_append (b, f->prog.filter, f->prog.len * sizeof (struct sock_filter));
}

int
ohbox_seccomp_filter_save (int dirfd, const char *name, const struct ohbox_seccomp_filter *f, ohbox_error_t *err)
{
  struct ohbox_buf b = { 0 };
  filter_serialize (f, &b);
  int r = ohbox_write_file_nosync (dirfd, name, b.data, b.len, err);
  ohbox_buf_free (&b);
  return r;
}

void
ohbox_seccomp_cache_store (const char *dir, const struct ohbox_seccomp_cache_key *key,
                           const struct ohbox_seccomp_filter *f)
{
  cleanup_error ohbox_error_t ignored = NULL;
  struct ohbox_buf b = { 0 };

  if (key->text.len > CACHE_MAX_KEY || ohbox_mkdir_p (AT_FDCWD, dir, 0700, &ignored) < 0)
    return;
  cleanup_close int dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return;
  struct cache_entry_header h = { .magic = CACHE_ENTRY_MAGIC, .key_len = (uint32_t) key->text.len };
  ohbox_buf_append (&b, &h, sizeof h);
  ohbox_buf_append (&b, key->text.data, key->text.len);
  filter_serialize (f, &b);
  ohbox_write_file_atomic (dfd, key->bucket, b.data, b.len, 0600, &ignored);
  ohbox_buf_free (&b);
}

void
ohbox_seccomp_filter_free (struct ohbox_seccomp_filter *f)
{
  if (f == NULL)
    return;
  free (f->prog.filter);
  free (f);
}

size_t
ohbox_seccomp_filter_size (const struct ohbox_seccomp_filter *f)
{
  return f->prog.len;
}

int
ohbox_seccomp_load (const struct ohbox_seccomp_filter *f, const char **ret_step)
{
  const char *unused;
  /* The kernel copies the program; the struct itself lives in the parent's
   * (now the child's copy of) memory, nothing is allocated here. */
  struct sock_fprog prog = f->prog;

  if (ret_step == NULL)
    ret_step = &unused;
  if (syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, f->flags, &prog) == 0)
    return 0;
  if (errno == ENOSYS && f->flags == 0)
    {
      /* Before Linux 3.17: the prctl interface, without flags. */
      if (prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0L, 0L) == 0)
        return 0;
      *ret_step = "prctl(PR_SET_SECCOMP)";
      return -1;
    }
  *ret_step = "seccomp(SECCOMP_SET_MODE_FILTER)";
  return -1;
}
