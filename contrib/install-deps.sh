#!/bin/sh
# contrib/install-deps.sh: installs (Debian 12) everything needed to build
# ohbox and run its test suite. Idempotent and quiet; nothing is asked.
# When every package is already installed it does nothing (no network).
#
# Then it builds the libmicrohttpd that runtime images ship (Debian's source
# package of the installed version without HTTPS, executor/mhd-notls.sh)
# into MHD_NOTLS (configure's --with-mhd-notls default), unless the one
# there was built from the installed version: that needs the Debian mirror
# (deb-src) once, here, never in the build or the tests.
#
# Usage: contrib/install-deps.sh [--update]   (--update: apt-get update even
# when nothing is missing)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
MHD_NOTLS=${OHBOX_MHD_NOTLS_PREFIX:-/usr/local/lib/ohbox-mhd-notls}

# Build: autotools, compilers, and the -dev packages configure.ac checks.
BUILD="autoconf automake libtool pkg-config gcc make clang clang-format xz-utils
  libcurl4-openssl-dev libjansson-dev libssl-dev libarchive-dev libminizip-dev libyaml-dev libseccomp-dev
  libcap-dev libmnl-dev libnftables-dev libmicrohttpd-dev libhttp-parser-dev libvterm-dev libzstd-dev dpkg-dev
  libsystemd-dev"
# Tests (tests/lib, tests/integration): a real registry, skopeo/umoci to push
# and read images, htpasswd for Basic auth, busybox-static and zstd for the
# test images, jq/openssl/curl, Debian's python3 for the token server and the
# fault proxy, iproute2, util-linux (setpriv, flock), debootstrap for the
# optional Debian image; python3-httpx for tests/integration/executor.sh;
# qemu-system-x86, linux-image-amd64 and cpio for the cgroup v2 guest (tests/guest),
# systemd for its PID 1 in runc-systemd.sh (ohbox-runc --systemd-cgroup);
# bash-static (layered into runtime images of bases without bash, and the CI
# job image of ci-gitlab.sh), musl-tools
# (a musl base image in the build tests); nftables (the nft CLI to inspect
# ohbox's table in tests), slirp4netns, passt (pasta) and uidmap (rootless
# sandboxes); podman
# (it must read the layouts `ohbox save` writes); libc6-dev and binutils for
# the static seccomp prober (gcc -static, strings) of seccomp.sh and escape.sh;
# strace (net.sh kills a removal at an exact syscall with its fault injection);
# the engines oci-engines.sh drives ohbox-runc with: podman with conmon and
# the CNI plugins, docker.io, containerd (ctr and the runc v2 shim), crun and
# runc (bench/oci.sh compares them).
TEST="docker-registry skopeo umoci apache2-utils busybox-static zstd jq openssl curl
  ca-certificates python3 iproute2 util-linux coreutils tar gzip debootstrap
  python3-httpx qemu-system-x86 linux-image-amd64 cpio bash-static musl-tools nftables
  slirp4netns passt uidmap podman libc6-dev binutils strace
  conmon containernetworking-plugins docker.io containerd crun runc systemd"

PACKAGES=$(echo $BUILD $TEST)

missing=
for p in $PACKAGES; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing="$missing $p"
done

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo -n"
  else
    echo "install-deps: run as root" >&2
    exit 1
  fi
fi

# mhd_notls: the TLS-free libmicrohttpd, (re)built when it is missing or was
# built from another version than the installed libmicrohttpd12.
mhd_notls ()
{
  want="libmicrohttpd12 $(dpkg-query -W -f='${Version}' libmicrohttpd12)"
  if [ "$(cat "$MHD_NOTLS/ohbox-source-version" 2>/dev/null)" = "$want" ]; then
    echo "install-deps: $MHD_NOTLS holds $want without HTTPS"
    return 0
  fi
  echo "install-deps: building $want without HTTPS into $MHD_NOTLS"
  $SUDO sh "$here/executor/mhd-notls.sh" "$MHD_NOTLS"
}

if [ -z "$missing" ] && [ "${1:-}" != --update ]; then
  echo "install-deps: all $(echo $PACKAGES | wc -w) packages are installed"
  mhd_notls
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing:${missing:- (none; updating)}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# apt's chatter goes to a log, shown only when something fails.
run ()
{
  if ! "$@" </dev/null >>"$log" 2>&1; then
    cat "$log" >&2
    echo "install-deps: failed: $*" >&2
    exit 1
  fi
}
run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -qq update
# busybox-static replaces the dynamic busybox package when that one is installed.
run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -qq -y --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold install $PACKAGES
mhd_notls
echo "install-deps: done"
