#!/bin/bash
# tests/guest/run-guest.sh: runs a test payload inside a qemu guest (TCG)
# with Debian's kernel and a pure cgroup v2 hierarchy, and hands back what
# it printed.  See /work/shared/testing/CGROUP2-GUEST.md for the why.
#
# Usage: run-guest.sh [--modules "overlay veth ..."] [--timeout SECS]
#                     [--mem MB] [--log FILE] PAYLOAD_DIR
#
# PAYLOAD_DIR must hold an executable run.sh; the guest gets the directory
# as /payload and runs ./run.sh there (busybox sh, as root, in the guest's
# root cgroup).  Or an executable init, exec'd as PID 1 once the guest is
# set up, which ends the run with /sbin/guest-exit RC (runc-systemd.sh's
# boots systemd).  Programs in the payload must be static, or bring their
# shared libraries at the same paths.  Prints the payload's console output
# (without the kernel's) and exits with the payload's status; 125 when the
# guest did not get to the end (no boot, timeout: the console log's tail
# goes to stderr).
#
# Cached under $OHBOX_TEST_WORK/cache/guest (default tests/work/cache/guest):
#   vmlinux-KVER      the uncompressed kernel: TCG boots it directly through
#                     its PVH note in ~7 s, skipping the slow decompressor;
#   base-KEY.cpio.gz  busybox, its applet links, tests/guest/init (and
#                     guest-exit, which ends the run) and the modules
#                     (KEY hashes them all, so a change rebuilds).
# The payload is a second, uncompressed cpio appended to the base one.
#
# Needs (Debian): qemu-system-x86, linux-image-amd64, busybox-static, cpio,
# python3 (lzma).  Environment: OHBOX_GUEST_KVER picks the kernel version.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=${OHBOX_SRCDIR:-$(cd "$here/../.." && pwd)}
work=${OHBOX_TEST_WORK:-${OHBOX_BUILDDIR:-$srcdir}/tests/work}
cache=$work/cache/guest
modules= timeout=240 mem=1024 log=

die ()
{
  echo "run-guest: $*" >&2
  exit 125
}

while [ $# -gt 0 ]; do
  case $1 in
    --modules) modules=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || die "usage: run-guest.sh [--modules LIST] [--timeout S] [--mem MB] [--log FILE] PAYLOAD_DIR"
payload=$1
[ -x "$payload/run.sh" ] || [ -x "$payload/init" ] || die "$payload/run.sh (or init): missing or not executable"

qemu=$(command -v qemu-system-x86_64) || die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || die "cpio not found (apt-get install cpio)"
busybox=
for b in /bin/busybox /usr/bin/busybox; do
  if [ -x "$b" ] && ! LC_ALL=C ldd "$b" >/dev/null 2>&1; then
    busybox=$b
    break
  fi
done
[ -n "$busybox" ] || die "no static busybox (apt-get install busybox-static)"
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || die "python3 not found"

# The kernel: the newest /boot/vmlinuz-* that has its modules.
kver=${OHBOX_GUEST_KVER:-}
if [ -z "$kver" ]; then
  for k in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|.*/vmlinuz-||' | sort -V); do
    [ -d "/lib/modules/$k" ] && kver=$k
  done
fi
[ -n "$kver" ] && [ -r "/boot/vmlinuz-$kver" ] || die "no kernel in /boot (apt-get install linux-image-amd64)"

mkdir -p "$cache"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ohbox-guest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------- vmlinux
vmlinux=$cache/vmlinux-$kver
if [ ! -s "$vmlinux" ]; then
  # The bzImage holds the kernel as one XZ stream: find its magic and
  # decompress it (the decompressor stops at the end of the stream).
  "$py" - "/boot/vmlinuz-$kver" "$tmp/vmlinux" <<'EOF' || die "cannot extract vmlinux from /boot/vmlinuz-$kver"
import lzma, sys
data = open(sys.argv[1], "rb").read()
off = data.find(b"\xfd7zXZ\x00")
if off < 0:
    sys.exit("no XZ stream in " + sys.argv[1])
out = lzma.LZMADecompressor().decompress(data[off:])
if out[:4] != b"\x7fELF":
    sys.exit("the XZ stream is not an ELF kernel")
open(sys.argv[2], "wb").write(out)
EOF
  mv "$tmp/vmlinux" "$vmlinux"
fi

# ---------------------------------------------------------------- base initramfs
# Modules in load order, dependencies first, each once.
mod_files=()
if [ -n "$modules" ]; then
  declare -A seen=()
  for m in $modules; do
    deps=$(modprobe -S "$kver" --show-depends "$m" 2>&1) || die "module $m for $kver: $deps"
    while read -r cmd path _; do
      [ "$cmd" = insmod ] || continue
      [ -n "${seen[$path]:-}" ] && continue
      seen[$path]=1
      mod_files+=("$path")
    done <<<"$deps"
  done
fi
key=$( (echo "$kver"; sha256sum "$here/init" "$here/guest-exit" "$busybox"; printf '%s\n' "${mod_files[@]+"${mod_files[@]}"}") |
  sha256sum | cut -c1-16)
base=$cache/base-$key.cpio.gz
if [ ! -s "$base" ]; then
  root=$tmp/base
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,mnt,etc,root,modules,payload}
  cp "$busybox" "$root/bin/busybox"
  for a in $("$busybox" --list-full); do
    [ "$a" = bin/busybox ] || [ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
  done
  cp "$here/init" "$root/init"
  cp "$here/guest-exit" "$root/sbin/guest-exit"
  chmod 755 "$root/init" "$root/sbin/guest-exit"
  printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' \
    >"$root/etc/passwd"
  printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
  chmod 1777 "$root/tmp"
  # The kernel gives init its console from /dev/console in the initramfs.
  mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
  i=0
  for f in "${mod_files[@]+"${mod_files[@]}"}"; do
    name=$(printf '%02d-%s' "$i" "$(basename "$f")")
    case $f in
      *.xz) xz -dc "$f" >"$root/modules/${name%.xz}"; name=${name%.xz} ;;
      *.zst) zstd -qdc "$f" >"$root/modules/${name%.zst}"; name=${name%.zst} ;;
      *) cp "$f" "$root/modules/$name" ;;
    esac
    echo "$name" >>"$root/modules/order"
    i=$((i + 1))
  done
  (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$tmp/base.cpio.gz"
  mv "$tmp/base.cpio.gz" "$base"
fi

# ---------------------------------------------------------------- payload
mkdir -p "$tmp/p/payload"
cp -a "$payload/." "$tmp/p/payload/"
# Not compressed: gzip here and its inflation by the guest's kernel under
# TCG cost more than the kernel's copy of the plain archive.  The kernel
# reads an uncompressed cpio that starts on a 4-byte boundary (zero bytes
# between the archives are skipped).
cp "$base" "$tmp/initrd"
head -c $(((4 - $(stat -c %s "$base") % 4) % 4)) /dev/zero >>"$tmp/initrd"
(cd "$tmp/p" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >>"$tmp/initrd"

# ---------------------------------------------------------------- boot
console=${log:-$tmp/console.log}
rc=0
timeout --kill-after=10 "$timeout" "$qemu" -accel tcg -cpu max -smp 2 -m "$mem" \
  -display none -no-reboot -monitor none -serial "file:$console" \
  -kernel "$vmlinux" -initrd "$tmp/initrd" \
  -append "console=ttyS0 panic=-1 quiet loglevel=3" \
  -device isa-debug-exit,iobase=0xf4,iosize=0x04 -nic none </dev/null >"$tmp/qemu.out" 2>&1 || rc=$?

tr -d '\r' <"$console" >"$tmp/console.txt"
if ! grep -q '^OHBOX-GUEST-END rc=' "$tmp/console.txt"; then
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "run-guest: the guest did not finish within $timeout s" >&2
  else
    echo "run-guest: the guest stopped without finishing (qemu status $rc)" >&2
  fi
  grep -v '^$' "$tmp/qemu.out" | tail -n 5 | sed 's/^/  qemu: /' >&2
  tail -n 40 "$tmp/console.txt" | sed 's/^/  console: /' >&2
  exit 125
fi
sed -n '/^OHBOX-GUEST-BEGIN$/,/^OHBOX-GUEST-END rc=/p' "$tmp/console.txt" | sed '1d;$d'
guest_rc=$(sed -n 's/^OHBOX-GUEST-END rc=\([0-9]*\)$/\1/p' "$tmp/console.txt" | tail -n 1)
# qemu's own status says the same through isa-debug-exit: (rc << 1) | 1.
if [ "$rc" -ne $(((guest_rc > 127 ? 127 : guest_rc) * 2 + 1)) ]; then
  echo "run-guest: qemu exited with $rc, the guest said rc=$guest_rc" >&2
fi
exit "$guest_rc"
