# tests/guest/lib.sh (sourced by the integration scripts that boot the
# guest): packing host binaries for it, booting it and reporting its checks.
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

# guest_run OUT [run-guest.sh options] PAYLOAD: boots the guest
# (run-guest.sh, its console in $T_TMP/console.log) with what it printed in
# OUT, prints how long it ran, reports each PASS:/SKIP:/FAIL: line of it as
# this script's (tests/lib/common.sh) and its "#" lines as they are, then
# guest-finished; 1 when the guest did not finish.
guest_run ()
{
  local out=$1 rc=0 start ms line rest
  shift
  start=$(date +%s%N)
  bash "$(dirname "${BASH_SOURCE[0]}")/run-guest.sh" --log "$T_TMP/console.log" "$@" >"$out" 2>"$T_TMP/guest.err" ||
    rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  echo "# guest run: $((ms / 1000)).$(printf %03d $((ms % 1000))) s, status $rc"
  while IFS= read -r line; do
    rest=${line#*: }
    case $line in
      "PASS: "*) t_pass "$rest" ;;
      "SKIP: "*) t_skip "${rest%%: *}" "${rest#*: }" ;;
      "FAIL: "*) t_fail "${rest%%: *}" "${rest#*: }" ;;
      "#"*) echo "$line" ;;
    esac
  done <"$out"
  if [ "$rc" -eq 125 ]; then
    t_fail guest-finished "the guest did not finish"
    sed 's/^/    | /' "$T_TMP/guest.err" | tail -n 45
    return 1
  fi
  t_pass guest-finished
}

# guest_required NAME OUT CHECK...: the result NAME: every CHECK passed in
# the guest (a "PASS: CHECK" line in OUT), rather than failed, skipped or
# never ran.
guest_required ()
{
  local name=$1 out=$2 not_run= c
  shift 2
  for c in "$@"; do
    grep -qx "PASS: $c" "$out" || not_run="$not_run $c"
  done
  if [ -z "$not_run" ]; then
    t_pass "$name"
  else
    t_fail "$name" "did not pass in the guest:$not_run"
  fi
}
