#!/bin/sh
# closure.sh BINARY PREFIX: makes PREFIX/bin/<binary>, PREFIX/lib/<every
# shared library it loads, recursively> and PREFIX/lib/<the dynamic loader>,
# so that the program runs in any root filesystem (no libc needed there) as
#
#   PREFIX/lib/ld-linux-x86-64.so.2 --library-path PREFIX/lib PREFIX/bin/<binary> ARGS...
#
# (paths as seen inside the sandbox, e.g. PREFIX=/.ohbox).  ldd lists the
# whole closure, the loader included; files are copied dereferenced.
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
mkdir -p "$prefix/bin" "$prefix/lib"
cp -L "$bin" "$prefix/bin/"
list=$(ldd "$bin") || { echo "closure.sh: ldd failed on \`$bin\` (a static binary needs no closure)" >&2; exit 1; }
echo "$list" | while read -r a b c d; do
  case $a in
    /*) lib=$a ;;                                  # the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
    *) [ "$b" = "=>" ] && case $c in /*) lib=$c ;; *) continue ;; esac || continue ;;
  esac
  cp -L "$lib" "$prefix/lib/$(basename "$lib")"
done
loader=$(ls "$prefix"/lib/ld-linux*.so* 2>/dev/null | head -n 1)
[ -n "$loader" ] || { echo "closure.sh: no dynamic loader found in the ldd output of \`$bin\`" >&2; exit 1; }
echo "closure of $(basename "$bin") in $prefix: $(ls "$prefix/lib" | wc -l) libraries, loader $(basename "$loader")"
