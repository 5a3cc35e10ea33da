#!/bin/sh
# closure.sh BINARY PREFIX: makes PREFIX/bin/<binary>, PREFIX/lib/<every
# shared library it loads, recursively> and PREFIX/lib/<the dynamic loader>,
# so that the program runs in any root filesystem (no libc needed there) as
#
#   PREFIX/lib/ld-linux-x86-64.so.2 --library-path PREFIX/lib PREFIX/bin/<binary> ARGS...
#
# (paths as seen inside the sandbox, e.g. PREFIX=/.ohbox).  ldd lists the
# whole closure, the loader included; files are copied dereferenced.
# Libraries the program dlopens at run time are not in ldd's list: the
# program names them in an ELF section `.ohbox.dlopen` (NUL-separated
# sonames, see executor/archive.c); each is packed with its own closure.
# The program looks for them in the directory its other libraries came
# from, so they are found there whatever the loader's search path.
#
# OHBOX_CLOSURE_LIBS=DIR[:DIR...]: libraries there are taken before the
# system's (e.g. the libmicrohttpd without HTTPS of executor/mhd-notls.sh,
# same soname): the closure then holds them and their own dependencies.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: closure.sh BINARY PREFIX" >&2
  exit 2
fi
bin=$1 prefix=$2
[ -x "$bin" ] || { echo "closure.sh: \`$bin\` is not an executable" >&2; exit 1; }
# A libtool wrapper script: take the real binary.
if head -c 2 "$bin" | grep -q '#!' && [ -x "$(dirname "$bin")/.libs/$(basename "$bin")" ]; then
  bin="$(dirname "$bin")/.libs/$(basename "$bin")"
fi
command -v readelf >/dev/null || { echo "closure.sh: readelf (binutils) is needed to find dlopen'ed libraries" >&2; exit 1; }
libs=${OHBOX_CLOSURE_LIBS:-}
# A DIR of OHBOX_CLOSURE_LIBS made by mhd-notls.sh names, in
# DIR/../ohbox-source-version, the Debian package and version it was rebuilt
# from.  Once the system has another version of that package (an update,
# maybe a security fix), the rebuilt library is older than the system's:
# refused, never packed.
for d in $(echo "$libs" | tr ':' ' '); do
  [ -f "$d/../ohbox-source-version" ] || continue
  read -r pkg built <"$d/../ohbox-source-version" || true
  have=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || continue
  [ "$have" = "$built" ] || {
    echo "closure.sh: $(dirname "$d") holds $pkg $built rebuilt, but the system has $have: rebuild it" \
      "(contrib/install-deps.sh, or sh executor/mhd-notls.sh $(dirname "$d")), or set OHBOX_MHD_NOTLS=none" >&2
    exit 1
  }
done
mkdir -p "$prefix/bin" "$prefix/lib"
cp -L "$bin" "$prefix/bin/"
run_ldd() {
  if [ -n "$libs" ]; then LD_LIBRARY_PATH="$libs" ldd "$1"; else ldd "$1"; fi
}

# copy_closure FILE: copies every library ldd lists for FILE (and the loader).
copy_closure() {
  list=$(run_ldd "$1") || { echo "closure.sh: ldd failed on \`$1\` (a static binary needs no closure)" >&2; exit 1; }
  echo "$list" | while read -r a b c d; do
    case $a in
      /*) lib=$a ;;                                  # the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
      *) [ "$b" = "=>" ] && case $c in /*) lib=$c ;; *) continue ;; esac || continue ;;
    esac
    cp -L "$lib" "$prefix/lib/$(basename "$lib")"
  done
}
copy_closure "$bin"

# The dlopen'ed libraries: looked up next to the program's libc (the
# directory its own libraries come from), then in the ld.so cache.
libc=$(run_ldd "$bin" | awk '$1 ~ /^libc\.so/ && $3 ~ /^\// {print $3; exit}')
sonames=$(readelf -p .ohbox.dlopen "$bin" 2>/dev/null | sed -n 's/^ *\[ *[0-9a-f]*\] *//p')
for so in $sonames; do
  path=
  for d in $(echo "$libs" | tr ':' ' '); do
    [ -z "$path" ] && [ -e "$d/$so" ] && path=$d/$so
  done
  [ -z "$path" ] && [ -n "$libc" ] && [ -e "$(dirname "$libc")/$so" ] && path=$(dirname "$libc")/$so
  [ -n "$path" ] || path=$(ldconfig -p 2>/dev/null | awk -v n="$so" '$1 == n {print $NF; exit}')
  [ -n "$path" ] && [ -e "$path" ] || { echo "closure.sh: \`$so\` (dlopen'ed by $(basename "$bin")) not found" >&2; exit 1; }
  cp -L "$path" "$prefix/lib/$so"
  copy_closure "$path"
done

loader=$(ls "$prefix"/lib/ld-linux*.so* 2>/dev/null | head -n 1)
[ -n "$loader" ] || { echo "closure.sh: no dynamic loader found in the ldd output of \`$bin\`" >&2; exit 1; }
echo "closure of $(basename "$bin") in $prefix: $(ls "$prefix/lib" | wc -l) libraries (dlopen'ed: ${sonames:-none}${libs:+; first from $libs}), loader $(basename "$loader")"
