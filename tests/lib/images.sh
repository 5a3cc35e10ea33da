# tests/lib/images.sh: test images built without docker, as reproducible OCI
# image layouts (same bytes, same digests on every run with the same tools).
# Source after common.sh (and registry.sh for img_push).
#
#   img_build            builds (or reuses from the cache) every layout below,
#                        and loads their digests into IMG_* variables:
#     $IMG_BUSYBOX  oci layout, tag latest: linux/amd64, 2 gzip layers
#         layer 1: busybox rootfs (/bin/busybox, one symlink per applet,
#                  /etc/passwd, /etc/group, /tmp 1777, /root 0700) plus
#                  /etc/remove-me, /var/lib/old/file and /opt/opaque/{old-a,old-b}
#         layer 2: /etc/.wh.remove-me and /.wh.var (whiteouts),
#                  /opt/opaque/.wh..wh..opq (opaque dir) + /opt/opaque/new, /etc/layer2
#         IMG_BB_MANIFEST IMG_BB_MANIFEST_SIZE IMG_BB_CONFIG IMG_BB_LAYER1 IMG_BB_LAYER2
#         IMG_BB_LAYER1_SIZE IMG_BB_LAYER2_SIZE IMG_BB_DIFF1 IMG_BB_DIFF2
#     $IMG_ZSTD     the same layers compressed with zstd (tar+zstd media type)
#         IMG_ZSTD_MANIFEST IMG_ZSTD_LAYER1 IMG_ZSTD_LAYER2 (DiffIDs: IMG_BB_DIFF*)
#     $IMG_MULTI    tag latest: an image index with linux/amd64 (the busybox
#                   manifest) and linux/arm64/v8 (one small layer: /etc/arch = "arm64")
#         IMG_MULTI_INDEX IMG_MULTI_AMD64 IMG_ARM_MANIFEST IMG_ARM_CONFIG IMG_ARM_LAYER IMG_ARM_DIFF
#     $IMG_COMBO    one layout with two tags: gzip (busybox) and zstd
#     $IMG_DIR/rootfs-layer1, rootfs-layer2   the trees the layers were made from
#   img_push PREFIX SRC NAME:TAG [SKOPEO-ARGS]   skopeo copy SRC (e.g.
#       oci:$IMG_BUSYBOX:latest) to the registry PREFIX (see registry.sh) with
#       the right TLS/credential options; add --all for an index,
#       --format v2s2 for Docker schema 2.
#   img_push_standard PREFIX [NS]   pushes NS/busybox:latest, NS/busybox-zstd:latest,
#       NS/multi:latest (--all), NS/busybox-v2s2:latest (--format v2s2) and sets
#       IMG_V2S2_MANIFEST. NS defaults to "test".
#   img_build_debian     optional (benchmarks): debootstrap --variant=minbase
#       bookworm from the apt mirror, as the layout $IMG_DEBIAN (tag bookworm), cached.
#       IMG_DEBIAN_MANIFEST IMG_DEBIAN_LAYER
#   img_build_debian_agent   optional: the same with --include of
#       $IMG_DEBIAN_AGENT_PACKAGES (python3, python-is-python3, git, sudo, procps,
#       python3-ipython, ca-certificates), an agent's base image as OpenHands
#       runs them, as the layout $IMG_DEBIAN_AGENT (tag bookworm), cached.
#       IMG_DEBIAN_AGENT_MANIFEST IMG_DEBIAN_AGENT_LAYER
#   img_debian_wanted NAME WHY   inside a test: skips it unless OHBOX_TEST_DEBIAN=1
#       or the layout NAME (debian, debian-agent) is cached
#
# The cache lives in $OHBOX_TEST_WORK/cache/images-KEY, KEY being a hash of this
# file, the busybox binary and the tool versions: edit the builder and the
# layouts are rebuilt; rerun the tests and they are reused.

T_IMG_SH=${BASH_SOURCE[0]}
IMG_OCI_MANIFEST=application/vnd.oci.image.manifest.v1+json
IMG_OCI_INDEX=application/vnd.oci.image.index.v1+json
IMG_OCI_CONFIG=application/vnd.oci.image.config.v1+json
IMG_OCI_LAYER_GZIP=application/vnd.oci.image.layer.v1.tar+gzip
IMG_OCI_LAYER_ZSTD=application/vnd.oci.image.layer.v1.tar+zstd

_img_busybox ()
{
  if [ -x /bin/busybox ]; then
    echo /bin/busybox
  else
    command -v busybox
  fi
}

# ---------------------------------------------------------------- layout writer

# img_layout_init DIR
img_layout_init ()
{
  mkdir -p "$1/blobs/sha256" || return 1
  printf '{"imageLayoutVersion":"1.0.0"}' >"$1/oci-layout"
}

# _img_put_blob LAYOUT FILE: moves FILE into the layout; sets BLOB_DIGEST, BLOB_SIZE.
_img_put_blob ()
{
  local hex
  hex=$(t_sha256 "$2") || return 1
  BLOB_SIZE=$(stat -c %s "$2") || return 1
  BLOB_DIGEST=sha256:$hex
  mv -f "$2" "$1/blobs/sha256/$hex"
}

# _img_put_json LAYOUT JSON: stores JSON (no trailing newline) as a blob.
_img_put_json ()
{
  local tmp
  tmp=$(mktemp "$1/.json.XXXXXX") || return 1
  printf '%s' "$2" >"$tmp"
  _img_put_blob "$1" "$tmp"
}

# img_tar ROOTFS OUT: a reproducible tar of ROOTFS's contents (no "./" entry,
# names in C order, uid/gid 0, mtime 0).
img_tar ()
{
  (cd "$1" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort) |
    tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name --format=gnu \
      --no-recursion -C "$1" -T - -cf "$2"
}

# img_add_layer LAYOUT ROOTFS gzip|zstd [GZIP-LEVEL]: adds a layer (gzip -6
# unless told); sets LAYER_DIGEST, LAYER_SIZE, LAYER_DIFF, LAYER_MT.
img_add_layer ()
{
  local layout=$1 rootfs=$2 comp=$3 level=${4:-6} tar
  tar=$(mktemp "$layout/.layer.XXXXXX") || return 1
  img_tar "$rootfs" "$tar" || return 1
  LAYER_DIFF=sha256:$(t_sha256 "$tar")
  case $comp in
    gzip)
      gzip -n "-$level" -c "$tar" >"$tar.c" || return 1
      LAYER_MT=$IMG_OCI_LAYER_GZIP
      ;;
    zstd)
      zstd -q -3 -c "$tar" >"$tar.c" || return 1
      LAYER_MT=$IMG_OCI_LAYER_ZSTD
      ;;
    *) return 2 ;;
  esac
  rm -f "$tar"
  _img_put_blob "$layout" "$tar.c" || return 1
  LAYER_DIGEST=$BLOB_DIGEST LAYER_SIZE=$BLOB_SIZE
}

# img_add_image LAYOUT ARCH VARIANT LABEL LAYERS-JSON DIFFIDS-JSON: writes the
# config and the manifest; sets MANIFEST_DIGEST, MANIFEST_SIZE, CONFIG_DIGEST.
# LAYERS-JSON is an array of descriptors, DIFFIDS-JSON of diff ids.
img_add_image ()
{
  local layout=$1 arch=$2 variant=$3 label=$4 layers=$5 diffs=$6 cfg man
  cfg=$(jq -cn --arg arch "$arch" --arg variant "$variant" --arg lbl "$label" --argjson diffs "$diffs" '
    {created: "1970-01-01T00:00:00Z", architecture: $arch, os: "linux"}
    + (if $variant == "" then {} else {variant: $variant} end)
    + {config: {Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                Cmd: ["/bin/sh"], WorkingDir: "/", Labels: {"org.ohbox.test.image": $lbl}},
       rootfs: {type: "layers", diff_ids: $diffs},
       history: [$diffs[] | {created: "1970-01-01T00:00:00Z", created_by: "tests/lib/images.sh"}]}') || return 1
  _img_put_json "$layout" "$cfg" || return 1
  CONFIG_DIGEST=$BLOB_DIGEST
  man=$(jq -cn --arg mt "$IMG_OCI_MANIFEST" --arg cmt "$IMG_OCI_CONFIG" --arg cd "$BLOB_DIGEST" \
    --argjson cs "$BLOB_SIZE" --argjson layers "$layers" '
    {schemaVersion: 2, mediaType: $mt, config: {mediaType: $cmt, digest: $cd, size: $cs}, layers: $layers}') || return 1
  _img_put_json "$layout" "$man" || return 1
  MANIFEST_DIGEST=$BLOB_DIGEST MANIFEST_SIZE=$BLOB_SIZE
}

# _img_desc MEDIATYPE DIGEST SIZE [ARCH VARIANT]: a descriptor, with a platform when ARCH is given.
_img_desc ()
{
  jq -cn --arg mt "$1" --arg d "$2" --argjson s "$3" --arg arch "${4:-}" --arg variant "${5:-}" '
    {mediaType: $mt, digest: $d, size: $s}
    + (if $arch == "" then {} else
         {platform: ({architecture: $arch, os: "linux"} + (if $variant == "" then {} else {variant: $variant} end))}
       end)'
}

# img_set_refs LAYOUT DESC-WITH-TAG...: writes index.json; each argument is
# TAG=DESCRIPTOR-JSON.
img_set_refs ()
{
  local layout=$1 arr='[]' a tag desc
  shift
  for a in "$@"; do
    tag=${a%%=*} desc=${a#*=}
    arr=$(jq -cn --argjson a "$arr" --argjson d "$desc" --arg tag "$tag" \
      '$a + [$d + {annotations: {"org.opencontainers.image.ref.name": $tag}}]') || return 1
  done
  jq -cn --arg mt "$IMG_OCI_INDEX" --argjson m "$arr" '{schemaVersion: 2, mediaType: $mt, manifests: $m}' \
    >"$layout/index.json"
}

# _img_layers_json DESC...: a JSON array of layer descriptors.
_img_layers_json ()
{
  local arr='[]' d
  for d in "$@"; do
    arr=$(jq -cn --argjson a "$arr" --argjson d "$d" '$a + [$d]') || return 1
  done
  printf '%s' "$arr"
}

# ---------------------------------------------------------------- the test images

_img_make_rootfs1 ()
{
  local r=$1 bb applet
  bb=$(_img_busybox) || return 1
  mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/root" "$r/dev" "$r/proc" "$r/sys" "$r/home" \
    "$r/var/lib/old" "$r/opt/opaque" || return 1
  cp "$bb" "$r/bin/busybox" || return 1
  for applet in $("$bb" --list); do
    [ "$applet" = busybox ] && continue
    ln -s busybox "$r/bin/$applet" || return 1
  done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
    >"$r/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$r/etc/group"
  echo 'deleted by a whiteout in layer 2' >"$r/etc/remove-me"
  echo 'hidden by the whiteout of /var in layer 2' >"$r/var/lib/old/file"
  echo 'old a' >"$r/opt/opaque/old-a"
  echo 'old b' >"$r/opt/opaque/old-b"
  _img_normalise_modes "$r"
  chmod 0755 "$r/bin/busybox"
  chmod 1777 "$r/tmp"
  chmod 0700 "$r/root"
}

_img_make_rootfs2 ()
{
  local r=$1
  mkdir -p "$r/etc" "$r/opt/opaque" || return 1
  : >"$r/etc/.wh.remove-me"
  : >"$r/.wh.var"
  : >"$r/opt/opaque/.wh..wh..opq"
  echo 'new in layer 2' >"$r/opt/opaque/new"
  echo 'layer 2' >"$r/etc/layer2"
  _img_normalise_modes "$r"
}

_img_make_rootfs_arm ()
{
  local r=$1
  mkdir -p "$r/etc" || return 1
  echo arm64 >"$r/etc/arch"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
  _img_normalise_modes "$r"
}

# Modes do not depend on the caller's umask.
_img_normalise_modes ()
{
  find "$1" -type d -exec chmod 0755 {} + && find "$1" -type f -exec chmod 0644 {} +
}

# _img_build_all DIR: builds every layout into DIR (empty).
_img_build_all ()
{
  local d=$1 bb zs multi combo
  bb=$d/busybox zs=$d/busybox-zstd multi=$d/multi combo=$d/combo
  _img_make_rootfs1 "$d/rootfs-layer1" || return 1
  _img_make_rootfs2 "$d/rootfs-layer2" || return 1
  _img_make_rootfs_arm "$d/rootfs-arm64" || return 1

  # busybox, gzip
  img_layout_init "$bb" || return 1
  img_add_layer "$bb" "$d/rootfs-layer1" gzip || return 1
  local l1=$LAYER_DIGEST l1s=$LAYER_SIZE diff1=$LAYER_DIFF d1
  d1=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  img_add_layer "$bb" "$d/rootfs-layer2" gzip || return 1
  local l2=$LAYER_DIGEST l2s=$LAYER_SIZE diff2=$LAYER_DIFF d2
  d2=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  local diffs="[\"$diff1\",\"$diff2\"]"
  img_add_image "$bb" amd64 "" busybox "$(_img_layers_json "$d1" "$d2")" "$diffs" || return 1
  local bbman=$MANIFEST_DIGEST bbsize=$MANIFEST_SIZE bbcfg=$CONFIG_DIGEST bbdesc
  bbdesc=$(_img_desc "$IMG_OCI_MANIFEST" "$bbman" "$bbsize" amd64) || return 1
  img_set_refs "$bb" "latest=$bbdesc" || return 1

  # the same layers, zstd
  img_layout_init "$zs" || return 1
  img_add_layer "$zs" "$d/rootfs-layer1" zstd || return 1
  local z1=$LAYER_DIGEST zd1
  zd1=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  img_add_layer "$zs" "$d/rootfs-layer2" zstd || return 1
  local z2=$LAYER_DIGEST zd2
  zd2=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  img_add_image "$zs" amd64 "" busybox-zstd "$(_img_layers_json "$zd1" "$zd2")" "$diffs" || return 1
  local zman=$MANIFEST_DIGEST zdesc
  zdesc=$(_img_desc "$IMG_OCI_MANIFEST" "$zman" "$MANIFEST_SIZE" amd64) || return 1
  img_set_refs "$zs" "latest=$zdesc" || return 1

  # multi-arch: amd64 = the busybox manifest, arm64/v8 = a one-layer image
  img_layout_init "$multi" || return 1
  cp -a "$bb/blobs/sha256/." "$multi/blobs/sha256/" || return 1
  img_add_layer "$multi" "$d/rootfs-arm64" gzip || return 1
  local al=$LAYER_DIGEST adiff=$LAYER_DIFF ad
  ad=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  img_add_image "$multi" arm64 v8 multi-arm64 "$(_img_layers_json "$ad")" "[\"$adiff\"]" || return 1
  local aman=$MANIFEST_DIGEST acfg=$CONFIG_DIGEST adesc idx
  adesc=$(_img_desc "$IMG_OCI_MANIFEST" "$aman" "$MANIFEST_SIZE" arm64 v8) || return 1
  idx=$(jq -cn --arg mt "$IMG_OCI_INDEX" --argjson a "$bbdesc" --argjson b "$adesc" \
    '{schemaVersion: 2, mediaType: $mt, manifests: [$a, $b]}') || return 1
  _img_put_json "$multi" "$idx" || return 1
  local index=$BLOB_DIGEST
  img_set_refs "$multi" "latest=$(_img_desc "$IMG_OCI_INDEX" "$BLOB_DIGEST" "$BLOB_SIZE")" || return 1

  # two tags in one layout
  img_layout_init "$combo" || return 1
  cp -a "$bb/blobs/sha256/." "$zs/blobs/sha256/." "$combo/blobs/sha256/" || return 1
  img_set_refs "$combo" "gzip=$bbdesc" "zstd=$zdesc" || return 1

  {
    echo "IMG_BB_MANIFEST=$bbman"
    echo "IMG_BB_MANIFEST_SIZE=$bbsize"
    echo "IMG_BB_CONFIG=$bbcfg"
    echo "IMG_BB_LAYER1=$l1"
    echo "IMG_BB_LAYER2=$l2"
    echo "IMG_BB_LAYER1_SIZE=$l1s"
    echo "IMG_BB_LAYER2_SIZE=$l2s"
    echo "IMG_BB_DIFF1=$diff1"
    echo "IMG_BB_DIFF2=$diff2"
    echo "IMG_ZSTD_MANIFEST=$zman"
    echo "IMG_ZSTD_LAYER1=$z1"
    echo "IMG_ZSTD_LAYER2=$z2"
    echo "IMG_MULTI_INDEX=$index"
    echo "IMG_MULTI_AMD64=$bbman"
    echo "IMG_ARM_MANIFEST=$aman"
    echo "IMG_ARM_CONFIG=$acfg"
    echo "IMG_ARM_LAYER=$al"
    echo "IMG_ARM_DIFF=$adiff"
  } >"$d/meta.env"
}

# _img_cache_key: changes when the builder, the busybox binary or a tool changes.
_img_cache_key ()
{
  {
    cat "$T_IMG_SH"
    t_sha256 "$(_img_busybox)"
    tar --version | head -n 1
    gzip --version | head -n 1
    zstd --version
    jq --version
  } | sha256sum | cut -c1-16
}

img_build ()
{
  local cache=$OHBOX_TEST_WORK/cache key dir c
  for c in tar gzip zstd jq sha256sum flock; do
    command -v "$c" >/dev/null || { echo "img_build: $c is not installed (contrib/install-deps.sh)" >&2; return 1; }
  done
  [ -n "$(_img_busybox)" ] || { echo "img_build: busybox is not installed (busybox-static)" >&2; return 1; }
  mkdir -p "$cache" || return 1
  key=$(_img_cache_key) || return 1
  dir=$cache/images-$key
  if [ ! -f "$dir/meta.env" ]; then
    # Several test scripts may build at once: one builds, the others wait.
    (
      flock 8 || exit 1
      [ -f "$dir/meta.env" ] && exit 0
      tmp=$(mktemp -d "$cache/.images-$key.XXXXXX") || exit 1
      if ! _img_build_all "$tmp"; then
        rm -rf "$tmp"
        exit 1
      fi
      rm -rf "$dir"
      mv "$tmp" "$dir"
    ) 8>"$cache/.images.lock" || { echo "img_build: building the test images failed" >&2; return 1; }
  fi
  IMG_DIR=$dir
  IMG_BUSYBOX=$dir/busybox
  IMG_ZSTD=$dir/busybox-zstd
  IMG_MULTI=$dir/multi
  IMG_COMBO=$dir/combo
  # shellcheck disable=SC1091
  . "$dir/meta.env"
}

# ---------------------------------------------------------------- pushing

# img_push PREFIX SRC NAME:TAG [SKOPEO-ARGS...]
img_push ()
{
  local p=$1 src=$2 dest=$3 host
  shift 3
  host=$(_reg_get "$p" HOST)
  reg_skopeo_dest_opts "$p"
  echo "+ skopeo copy ${REG_SKOPEO_OPTS[*]} $* $src docker://$host/$dest" >&9
  skopeo --insecure-policy copy -q "${REG_SKOPEO_OPTS[@]}" "$@" "$src" "docker://$host/$dest"
}

# img_push_standard PREFIX [NS]
img_push_standard ()
{
  local p=$1 ns=${2:-test}
  img_push "$p" "oci:$IMG_BUSYBOX:latest" "$ns/busybox:latest" || return 1
  img_push "$p" "oci:$IMG_ZSTD:latest" "$ns/busybox-zstd:latest" || return 1
  img_push "$p" "oci:$IMG_MULTI:latest" "$ns/multi:latest" --all || return 1
  img_push "$p" "oci:$IMG_BUSYBOX:latest" "$ns/busybox-v2s2:latest" --format v2s2 || return 1
  IMG_V2S2_MANIFEST=$(reg_manifest_digest "$p" "$ns/busybox-v2s2" latest) || return 1
}

# ---------------------------------------------------------------- Debian (optional)

# The Debian mirror apt uses (deb822 .sources or one-line .list), not the security one.
_img_debian_mirror ()
{
  local m
  m=$( {
    grep -hsE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources | awk '{ for (i = 2; i <= NF; i++) print $i }'
    grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
      awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }'
  } | grep -E '/debian/?$' | grep -v security | head -n 1)
  echo "${m:-http://deb.debian.org/debian}"
}

# _img_debootstrap NAME TAG INCLUDE: the OCI layout $cache/NAME-KEY/NAME (tag TAG,
# one gzip layer) of `debootstrap --variant=minbase [--include=INCLUDE] bookworm`,
# built once under a lock shared by every worktree and cached; sets IMG_DEB_DIR
# to the cache directory (its meta.env has IMG_DEB_MANIFEST and IMG_DEB_LAYER).
_img_debootstrap ()
{
  local name=$1 tag=$2 include=$3 cache=$OHBOX_TEST_WORK/cache mirror key dir
  command -v debootstrap >/dev/null || { echo "img_build_$name: debootstrap is not installed" >&2; return 1; }
  mirror=$(_img_debian_mirror)
  if [ "$name" = debian ]; then
    # The key of the first builder, kept so that existing caches stay valid.
    key=$(printf 'debian-minbase-v1 bookworm %s\n' "$mirror" | sha256sum | cut -c1-16)
  else
    key=$(printf '%s-minbase-v1 bookworm %s include=%s\n' "$name" "$mirror" "$include" | sha256sum | cut -c1-16)
  fi
  dir=$cache/$name-$key
  mkdir -p "$cache" || return 1
  if [ ! -f "$dir/meta.env" ]; then
    (
      flock 8 || exit 1
      [ -f "$dir/meta.env" ] && exit 0
      tmp=$(mktemp -d "$cache/.$name-$key.XXXXXX") || exit 1
      trap 'rm -rf "$tmp"' EXIT
      # The downloaded packages are kept in one folder for every image
      # (debootstrap --cache-dir): the second image fetches only what the
      # first did not have. One debootstrap at a time uses it.
      mkdir -p "$cache/debootstrap-debs" || exit 1
      flock "$cache/.debootstrap-debs.lock" \
        debootstrap --variant=minbase --cache-dir="$cache/debootstrap-debs" ${include:+--include="$include"} \
        bookworm "$tmp/rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
        tail -n 20 "$tmp/debootstrap.log" >&2
        exit 1
      }
      rm -rf "$tmp/rootfs/var/cache/apt/archives/"*.deb "$tmp/rootfs/var/lib/apt/lists/"* \
        "$tmp/rootfs/var/log/"*.log "$tmp/rootfs/debootstrap"
      img_layout_init "$tmp/$name" || exit 1
      # gzip -1: the agent's 320 MB tree in 5 s of CPU instead of 14 s
      # with -6, for a layer 10% bigger that inflates as fast.
      img_add_layer "$tmp/$name" "$tmp/rootfs" gzip 1 || exit 1
      local ld
      ld=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || exit 1
      img_add_image "$tmp/$name" amd64 "" "$name-minbase" "$(_img_layers_json "$ld")" "[\"$LAYER_DIFF\"]" || exit 1
      img_set_refs "$tmp/$name" \
        "$tag=$(_img_desc "$IMG_OCI_MANIFEST" "$MANIFEST_DIGEST" "$MANIFEST_SIZE" amd64)" || exit 1
      printf 'IMG_DEB_MANIFEST=%s\nIMG_DEB_LAYER=%s\n' "$MANIFEST_DIGEST" "$LAYER_DIGEST" >"$tmp/meta.env"
      rm -rf "$tmp/rootfs"
      rm -rf "$dir"
      mv "$tmp" "$dir"
      trap - EXIT
    ) 8>"$cache/.$name.lock" || { echo "img_build_$name: failed" >&2; return 1; }
  fi
  IMG_DEB_DIR=$dir
}

# _img_deb_meta DIR: IMG_DEB_MANIFEST and IMG_DEB_LAYER from DIR/meta.env (the
# first builder's cache wrote them as IMG_DEBIAN_*).
_img_deb_meta ()
{
  local IMG_DEBIAN_MANIFEST='' IMG_DEBIAN_LAYER=''
  IMG_DEB_MANIFEST='' IMG_DEB_LAYER=''
  # shellcheck disable=SC1091
  . "$1/meta.env" || return 1
  IMG_DEB_MANIFEST=${IMG_DEB_MANIFEST:-$IMG_DEBIAN_MANIFEST}
  IMG_DEB_LAYER=${IMG_DEB_LAYER:-$IMG_DEBIAN_LAYER}
}

# img_debian_wanted NAME WHY: a test of a Debian layout runs when asked, or
# when the layout is already cached (then it is fast); otherwise it is skipped
# saying how to ask and WHY (what the first build costs, what needs Debian).
img_debian_wanted ()
{
  [ "${OHBOX_TEST_DEBIAN:-0}" = 1 ] && return 0
  compgen -G "$OHBOX_TEST_WORK/cache/$1-*/meta.env" >/dev/null || skip "set OHBOX_TEST_DEBIAN=1 ($2)"
}

# img_build_debian: $IMG_DEBIAN, an OCI layout (tag bookworm, one gzip layer)
# of a debootstrap minbase, built once (~1 min) and cached.
img_build_debian ()
{
  _img_debootstrap debian bookworm "" || return 1
  _img_deb_meta "$IMG_DEB_DIR" || return 1
  IMG_DEBIAN=$IMG_DEB_DIR/debian
  IMG_DEBIAN_MANIFEST=$IMG_DEB_MANIFEST IMG_DEBIAN_LAYER=$IMG_DEB_LAYER
}

# img_build_debian_agent: $IMG_DEBIAN_AGENT, an OCI layout (tag bookworm, one
# gzip layer) of a debootstrap minbase with what an agent's base image has
# (python3 as python, git, sudo, procps, IPython), built once (~2 min) and cached.
IMG_DEBIAN_AGENT_PACKAGES=python3,python-is-python3,git,sudo,procps,python3-ipython,ca-certificates
img_build_debian_agent ()
{
  _img_debootstrap debian-agent bookworm "$IMG_DEBIAN_AGENT_PACKAGES" || return 1
  _img_deb_meta "$IMG_DEB_DIR" || return 1
  IMG_DEBIAN_AGENT=$IMG_DEB_DIR/debian-agent
  IMG_DEBIAN_AGENT_MANIFEST=$IMG_DEB_MANIFEST IMG_DEBIAN_AGENT_LAYER=$IMG_DEB_LAYER
}
