#!/bin/bash
# contrib/demo.sh: the main job end to end, with the installed `ohbox`:
# starts a real registry on 127.0.0.1 (TLS with a CA made here, htpasswd
# Basic auth), builds a busybox image and pushes it there with skopeo, then
# logs in, pulls it, lists it and inspects it with ohbox. Everything it starts
# is stopped and its temporary files are removed at the end.
#
# Usage: contrib/demo.sh [OHBOX-BINARY]   (default: ohbox on PATH)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export OHBOX_SRCDIR=$here OHBOX_BUILDDIR=$here
export OHBOX_TEST_WORK=${OHBOX_TEST_WORK:-${TMPDIR:-/tmp}/ohbox-demo}
OHBOX=${1:-$(command -v ohbox || true)}
[ -x "$OHBOX" ] || { echo "demo: no ohbox binary (install it, or pass its path)" >&2; exit 1; }

set +eu
. "$here/tests/lib/common.sh"
. "$here/tests/lib/registry.sh"
. "$here/tests/lib/images.sh"
set -eu

say () { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run () { say "$*"; "$@"; }

echo "demo: building the test image and starting a TLS registry with Basic auth on 127.0.0.1"
img_build
reg_start basic DEMO
img_push DEMO "oci:$IMG_BUSYBOX:latest" demo/busybox:1.0 9>/dev/null

root=$T_TMP/store
export REGISTRY_AUTH_FILE=$T_TMP/auth.json
image=$DEMO_HOST/demo/busybox:1.0
run "$OHBOX" --root "$root" login --cert-dir "$DEMO_CERTDIR" -u "$DEMO_USER" -p "$DEMO_PASS" "$DEMO_HOST"
run "$OHBOX" --root "$root" pull --cert-dir "$DEMO_CERTDIR" "$image"
run "$OHBOX" --root "$root" pull --cert-dir "$DEMO_CERTDIR" "$image"
run "$OHBOX" --root "$root" images
say "$OHBOX --root $root inspect $image | jq '{Id, RepoTags, Os, Architecture, Layers: (.Layers | length)}'"
"$OHBOX" --root "$root" inspect "$image" | jq '{Id, RepoTags, Os, Architecture, Layers: (.Layers | length)}'
layer=$("$OHBOX" --root "$root" inspect "$image" | jq -r '.RootFS.Layers[0]' | cut -d: -f2)
say "ls -l $root/layers/sha256/${layer:0:12}.../bin/{busybox,sh}   # an unpacked layer, ready for overlayfs"
ls -l "$root/layers/sha256/$layer/bin/busybox" "$root/layers/sha256/$layer/bin/sh"
run "$OHBOX" --root "$root" save "$image" "oci:$T_TMP/layout:1.0"
run skopeo inspect --raw "oci:$T_TMP/layout:1.0"
echo
run "$OHBOX" --root "$root" rmi "$image"
run "$OHBOX" --root "$root" prune
echo
echo "demo: done (registry stopped, temporary files removed)"
