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

# nft_orphan_elements [NETROOT]: the sandbox addresses that a published
# port's DNAT element (table inet ohbox) still points at although no address
# lease names them: elements a release left that nothing would delete.
nft_orphan_elements ()
{
  local netroot=${1:-${OHBOX_NETROOT:-/run/ohbox/net}} e
  for e in $(nft -j list table inet ohbox 2>/dev/null |
    jq -r '.nftables[] | select(.map) | .map.elem[]? | .[1].concat[0]' 2>/dev/null | sort -u); do
    [ -L "$netroot/ip/$e" ] || echo "$e"
  done
}
