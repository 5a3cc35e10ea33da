# tests/lib/ohbox.sh: helpers about ohbox's store (layout in
# src/libohbox/store/store.h) and its options, for the integration tests.
# Source after common.sh and registry.sh.
#
#   pull_opts PREFIX        sets PULL_OPTS (array): how to reach registry PREFIX
#                           (--tls-verify=false for plain HTTP, --cert-dir for TLS)
#   t_blob_path DIGEST      $T_ROOT/blobs/sha256/HEX
#   t_layer_path DIFFID     $T_ROOT/layers/sha256/HEX
#   assert_blob_present DIGEST / assert_blob_absent DIGEST
#   assert_layer_present DIFFID / assert_layer_absent DIFFID
#   assert_store_blobs_valid    every file under blobs/ hashes to its name
#   store_blob_files        the files under $T_ROOT/blobs (one per line)
#   t_auth_json FILE HOST USER PASS [more HOST USER PASS...]   writes an auth.json
#   short_hex DIGEST        the first 12 hex digits
#   t_flip_byte FILE OFFSET  inverts the byte at OFFSET (to corrupt a blob)
#   T_DEFAULT_CAPS          the capabilities root in a default sandbox has
#   t_caps_mask NAME...     their mask as /proc/PID/status prints it
#   assert_default_caps STATUS [WHAT]   a root process with exactly the default set
#   t_runtime_exports       the executor (and its sources) of this tree, state in $T_TMP
#   t_remove_leftover_sandboxes   after the tests: what failed ones left
#   t_load_busybox          ohbox load of the busybox test image ($IMG_BUSYBOX,
#                           images.sh) into the test's store, copied from a store
#                           the script loaded once

pull_opts ()
{
  PULL_OPTS=()
  case $(_reg_get "$1" MODE) in
    http|http-*) PULL_OPTS+=(--tls-verify=false) ;;
    *) PULL_OPTS+=(--cert-dir "$(_reg_get "$1" CERTDIR)") ;;
  esac
}

short_hex ()
{
  local h=${1#sha256:}
  printf '%s' "${h:0:12}"
}

t_blob_path ()
{
  printf '%s' "$T_ROOT/blobs/sha256/${1#sha256:}"
}

t_layer_path ()
{
  printf '%s' "$T_ROOT/layers/sha256/${1#sha256:}"
}

store_blob_files ()
{
  [ -d "$T_ROOT/blobs" ] || return 0
  find "$T_ROOT/blobs" -type f | sort
}

assert_blob_present ()
{
  local f
  f=$(t_blob_path "$1")
  if [ ! -f "$f" ]; then
    _t_assert_fail "${2:-blob} $1 is not in the store ($(store_blob_files | wc -l) blobs)"
    return 1
  fi
  [ "$(t_sha256 "$f")" = "${1#sha256:}" ] && return 0
  _t_assert_fail "${2:-blob} \`$f\` does not hash to its name"
}

# assert_blob_absent DIGEST: nothing under ROOT/blobs is named after DIGEST
# (not even a temporary or partial file).
assert_blob_absent ()
{
  local hex=${1#sha256:} found
  [ -d "$T_ROOT/blobs" ] || return 0
  found=$(find "$T_ROOT/blobs" -name "*$hex*")
  [ -z "$found" ] && return 0
  _t_assert_fail "${2:-blob} $1 is in the store: $found"
}

assert_layer_present ()
{
  [ -d "$(t_layer_path "$1")" ] && return 0
  _t_assert_fail "${2:-layer} $1 is not unpacked in the store"
}

assert_layer_absent ()
{
  [ ! -e "$(t_layer_path "$1")" ] && return 0
  _t_assert_fail "${2:-layer} $1 is still in the store"
}

assert_store_blobs_valid ()
{
  local f bad=
  while read -r f; do
    [ -n "$f" ] || continue
    case $f in
      "$T_ROOT/blobs/sha256/"*) ;;
      *) bad="$bad $f(unexpected)"; continue ;;
    esac
    [ "$(t_sha256 "$f")" = "$(basename "$f")" ] || bad="$bad $f"
  done < <(store_blob_files)
  [ -z "$bad" ] && return 0
  _t_assert_fail "blobs that do not match their digest:$bad"
}

t_auth_json ()
{
  local file=$1 entries='{}'
  shift
  while [ $# -ge 3 ]; do
    entries=$(jq -cn --argjson e "$entries" --arg h "$1" --arg a "$(printf '%s:%s' "$2" "$3" | base64 -w0)" \
      '$e + {($h): {auth: $a}}')
    shift 3
  done
  mkdir -p "$(dirname "$file")"
  jq -n --argjson e "$entries" '{auths: $e}' >"$file"
}

t_flip_byte ()
{
  "$T_PY" -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)
    f.seek(int(sys.argv[2]))
    f.write(bytes([b[0] ^ 0xFF]))' "$1" "$2"
}

# nft_orphan_elements [NETROOT]: the sandbox addresses that an element of
# ohbox's tables (a published port's DNAT in `table inet ohbox`; a
# sandbox's dns, egress, noegress there; its port, uplink, open in `table
# bridge ohbox`) or a permanent neighbour entry on one of ohbox's bridges
# still names although no address lease does: what a release left that
# nothing would delete.
nft_orphan_elements ()
{
  local netroot=${1:-${OHBOX_NETROOT:-/run/ohbox/net}} e
  for e in $({
    nft -j list table inet ohbox 2>/dev/null |
      jq -r '.nftables[] | (select(.map) | .map.elem[]? | .[1].concat[0]),
        (select(.set.name == "dns" or .set.name == "egress") | .set.elem[]? | .concat[0]),
        (select(.set.name == "noegress") | .set.elem[]?)' 2>/dev/null
    nft -j list table bridge ohbox 2>/dev/null |
      jq -r '.nftables[] | (select(.set.name == "ports") | .set.elem[]? | .concat[2]),
        (select(.set.name == "uplink" or .set.name == "open") | .set.elem[]? | .concat[1])' 2>/dev/null
    ip -j neigh show nud permanent 2>/dev/null |
      jq -r '.[] | select(.dev == "ohbox0" or (.dev | startswith("ohbn"))) | .dst' 2>/dev/null
  } | grep -E '^[0-9.]+$' | sort -u); do
    [ -L "$netroot/ip/$e" ] || echo "$e"
  done
}

# The capabilities root in a sandbox has by default: Docker's default set
# (moby's oci/caps DefaultCapabilities) without NET_RAW, which forges frames
# on the bridge (src/libohbox/security/capabilities.c; ping works through
# net.ipv4.ping_group_range).
# The shell tests write the set here and nowhere else: changing ohbox's
# default set is changing this line (and tests/unit/test-capabilities.c).
T_DEFAULT_CAPS="CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD SETGID SETUID SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE"

# capability(7) numbers, in order from 0: the kernel's ABI.
_T_CAP_NAMES="CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
  NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE
  SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL
  SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE"

t_caps_mask ()
{
  local mask=0 want n i
  for want in "$@"; do
    i=0
    for n in $_T_CAP_NAMES; do
      [ "$n" = "${want#CAP_}" ] && break
      i=$((i + 1))
    done
    [ "$n" = "${want#CAP_}" ] || { echo "t_caps_mask: unknown capability $want" >&2; return 1; }
    mask=$((mask | 1 << i))
  done
  printf '%016x\n' "$mask"
}

# _t_caps_names HEXMASK: its names, for messages.
_t_caps_names ()
{
  local mask=$((16#$1)) i=0 n out=
  for n in $_T_CAP_NAMES; do
    [ $((mask >> i & 1)) = 1 ] && out="$out${out:+,}$n"
    i=$((i + 1))
  done
  echo "${out:-none}"
}

# assert_default_caps STATUS [WHAT]: STATUS (the text of /proc/PID/status)
# is a root process with exactly the default set effective, permitted and
# bounding, and nothing inheritable or ambient. Compared with the set
# written out above, never with another process of the same sandbox (both
# would keep a capability given by mistake).
assert_default_caps ()
{
  local want f got w
  want=$(t_caps_mask $T_DEFAULT_CAPS) || return 1
  for f in CapEff CapPrm CapBnd CapInh CapAmb; do
    got=$(awk -v k="$f:" '$1 == k {print $2}' <<<"$1")
    case $f in CapInh | CapAmb) w=0000000000000000 ;; *) w=$want ;; esac
    [ "$got" = "$w" ] && continue
    _t_assert_fail "${2:-capabilities}: $f is $got ($(_t_caps_names "${got:-0}")), expected $w ($(_t_caps_names "$w"))"
    return 1
  done
}

# The scripts that build and run runtime images (build.sh, build-push.sh,
# agent-user.sh, faults-*.sh): sandboxes' state in the script's temp dir,
# the executor built here from the sources here (not an installed ohbox's).
t_runtime_exports ()
{
  export OHBOX_RUNROOT=$T_TMP/run
  export OHBOX_EXECUTOR=$OHBOX_BUILDDIR/ohbox-executor
  export OHBOX_EXECUTOR_SRCDIR=$OHBOX_SRCDIR/executor
}

# After the last test: removes the sandboxes a failed test left behind (a
# passing one removed its own).
t_remove_leftover_sandboxes ()
{
  local id
  for id in $(ohbox ps -a -q 2>/dev/null); do
    ohbox rm -f "$id" >/dev/null 2>&1 || echo "# could not remove sandbox $id" >&2
  done
}

# t_needs_runtime_build WHY: root (for WHY), the executor built, bash-static
# installed; prints what is missing and returns 1 otherwise (setup).
t_needs_runtime_build ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root ($1)"; return 1; }
  [ -x "$OHBOX_EXECUTOR" ] || { echo "ohbox-executor is not built (make ohbox-executor)"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
}

# t_load_busybox: `ohbox load oci:$IMG_BUSYBOX:latest` into the test's store.
# The script's first call loads the image into a store of the script's own
# ($T_TMP/bb-store); every call then copies that store's files into the
# test's store when it is empty (cp -a: 25 ms, where ohbox load under the
# sanitizers takes half a second); into a store that holds something
# already, ohbox load itself.
t_load_busybox ()
{
  local tpl=$T_TMP/bb-store
  if [ -n "$(ls -A "$T_ROOT" 2>/dev/null)" ]; then
    ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
    return
  fi
  if [ ! -d "$tpl" ]; then
    rm -rf "$tpl.new"
    T_ROOT=$tpl.new ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null || return 1
    mv "$tpl.new" "$tpl"
  fi
  mkdir -p "$T_ROOT" && cp -a "$tpl/." "$T_ROOT/"
}
