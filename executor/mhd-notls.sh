#!/bin/sh
# mhd-notls.sh PREFIX: builds Debian's libmicrohttpd source package -- the
# version installed here, so the ABI is the one the executor was compiled
# against, Debian's patches applied -- without HTTPS, into PREFIX/lib.
#
# Why: Debian's libmicrohttpd12 links GnuTLS and its constructor calls
# gnutls_global_init(), so every executor maps and relocates GnuTLS, p11-kit,
# nettle, hogweed, gmp, libunistring, libidn2, libtasn1 and libffi (~2.3 MiB
# resident, ~240 KiB of it private) although it never speaks TLS.  With
# this build the executor's idle RSS is ~2.2 MiB instead of ~4.7 MiB.
# contrib/install-deps.sh runs it (PREFIX /usr/local/lib/ohbox-mhd-notls,
# configure's --with-mhd-notls) and `ohbox build` packs that library into
# runtime images instead of the system's (see build_inputs.c); `make
# executor-mhd-notls` builds one in the build tree, which is taken first.
# PREFIX/ohbox-source-version says which Debian package version it was
# built from: closure.sh refuses it once the system's differs (a library
# older than the system's may lack its security fixes).
#
# The source comes from the Debian mirrors apt is configured with (a deb-src
# copy of the system's entries, in a private apt state: the system's apt
# configuration is not touched).  Needs dpkg-dev and the build tools.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: mhd-notls.sh PREFIX" >&2
  exit 2
fi
prefix=$(realpath -m "$1")
version=$(dpkg-query -W -f='${Version}' libmicrohttpd12 2>/dev/null) ||
  { echo "mhd-notls.sh: libmicrohttpd12 is not installed (apt-get install libmicrohttpd-dev)" >&2; exit 1; }
command -v dpkg-source >/dev/null || { echo "mhd-notls.sh: dpkg-source is missing (apt-get install dpkg-dev)" >&2; exit 1; }

work=$(mktemp -d /tmp/ohbox-mhd-notls.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources.list.d" "$work/lists/partial"
# deb-src twins of the configured binary entries (one-line and deb822 files).
if [ -f /etc/apt/sources.list ]; then
  sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$work/sources.list.d/system.list"
fi
for f in /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >"$work/sources.list.d/$(basename "$f")"
done
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$work/sources.list.d/$(basename "$f")"
done
apt_private() {
  apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/sources.list.d" \
    -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" "$@"
}
apt_private update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; echo "mhd-notls.sh: apt-get update failed" >&2; exit 1; }
(cd "$work" && apt_private source "libmicrohttpd=$version") >>"$work/apt.log" 2>&1 ||
  { tail -n 20 "$work/apt.log" >&2; echo "mhd-notls.sh: cannot fetch the source of libmicrohttpd $version" >&2; exit 1; }
src=$(find "$work" -maxdepth 1 -type d -name 'libmicrohttpd-*' | head -n 1)
[ -n "$src" ] || { echo "mhd-notls.sh: the source package did not unpack" >&2; exit 1; }

# Debian's hardening flags (debian/rules: hardening=+all), HTTPS off.
# The stamp goes first and comes back last: a failed build leaves none.
rm -f "$prefix/ohbox-source-version"
cd "$src"
eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
./configure --prefix="$prefix" --disable-https --disable-static --disable-doc --disable-examples --disable-curl \
  >"$work/configure.log" 2>&1 || { tail -n 30 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
make install-strip >"$work/install.log" 2>&1 || { tail -n 30 "$work/install.log" >&2; exit 1; }
rm -f "$prefix"/lib/*.la
if ldd "$prefix/lib/libmicrohttpd.so.12" | grep -q gnutls; then
  echo "mhd-notls.sh: the build still links GnuTLS" >&2
  exit 1
fi
echo "libmicrohttpd12 $version" >"$prefix/ohbox-source-version"
echo "libmicrohttpd $version without HTTPS in $prefix/lib"
