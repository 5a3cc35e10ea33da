# tests/guest/pack.sh (sourced): packing host binaries for the guest.
#
# guest_pack_closure SYSROOT BINARY: copies BINARY's shared libraries (ldd's
# list, the loader included, as executor/closure.sh packs a closure) under
# SYSROOT at their host paths, and the libraries it dlopens (libohbox's
# dl_*.c name them in the `.ohbox.dlopen` section, as executor/closure.sh
# reads them) with theirs, unless GUEST_PACK_DLOPEN=no (a program that
# will not load them: ohbox-runc runs bundles, never pulls images).
guest_pack_closure ()
{
  local root=$1 bin=$2 lib so path
  for lib in $(ldd "$bin" | awk '$1 ~ /^\// {print $1} $2 == "=>" && $3 ~ /^\// {print $3}'); do
    cp -L --parents "$lib" "$root/" || return 1
  done
  [ "${GUEST_PACK_DLOPEN:-yes}" = no ] && return 0
  for so in $(readelf -p .ohbox.dlopen "$bin" 2>/dev/null | sed -n 's/^ *\[ *[0-9a-f]*\] *//p'); do
    path=$(ldconfig -p | awk -v n="$so" '$1 == n && /x86-64/ {print $NF; exit}')
    [ -n "$path" ] || { echo "guest_pack_closure: \`$so\` (dlopen'ed by $bin) not found" >&2; return 1; }
    cp -L --parents "$path" "$root/" || return 1
    guest_pack_closure "$root" "$path" || return 1
  done
}

# guest_pack_binary SYSROOT BINARY [PATH]: BINARY at PATH (default: its own)
# under SYSROOT, stripped (the guest has no use for the debug info: a
# smaller initramfs boots faster), with its closure.
guest_pack_binary ()
{
  local root=$1 bin=$2 at=${3:-$2}
  mkdir -p "$root/$(dirname "$at")" || return 1
  cp -L "$bin" "$root/$at" || return 1
  strip "$root/$at" 2>/dev/null
  guest_pack_closure "$root" "$bin"
}
