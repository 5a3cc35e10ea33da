#!/bin/bash
# contrib/demo.sh: the main job end to end, with the installed `ohbox`:
# starts a real registry on 127.0.0.1 (TLS with a CA made here, htpasswd
# Basic auth), builds a busybox base image and pushes it there with skopeo;
# then, with ohbox: logs in, pulls it, lists and inspects it, builds the
# runtime image (base + executor), runs a sandbox from it and sends actions
# over the OpenHands action protocol (a command, a file write and read, an
# edit), printing the observations. Everything it starts is stopped and its
# temporary files are removed at the end.
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

# The runtime image: the base plus ohbox-executor (from this source tree).
build_opts=(--no-pull --executor "${OHBOX_EXECUTOR:-$here/ohbox-executor}" --executor-src "$here/executor")
run "$OHBOX" --root "$root" build "${build_opts[@]}" "$image"
run "$OHBOX" --root "$root" build "${build_opts[@]}" "$image"
runtime=$("$OHBOX" --root "$root" build -q "${build_opts[@]}" "$image")

say "$OHBOX --root $root run -d --rm $runtime"
sid=$("$OHBOX" --root "$root" run -d --rm "$runtime" 2>"$T_TMP/run.err")
cat "$T_TMP/run.err"
echo "$sid"
url=$(sed -n 's/.*executor at \([^,]*\),.*/\1/p' "$T_TMP/run.err")
key=$(sed -n 's/.*session API key \(.*\)$/\1/p' "$T_TMP/run.err")
for _ in $(seq 50); do curl -sf "$url/alive" >/dev/null && break; sleep 0.1; done
action ()
{
  say "POST $url/execute_action $1"
  curl -sf -X POST -H 'Content-Type: application/json' -H "X-Session-API-Key: $key" \
    "$url/execute_action" -d "{\"action\": $1}" | jq '{observation, content, exit_code: .extras.metadata.exit_code}'
}
action '{"action": "run", "args": {"command": "cd /workspace && echo hello from $(uname -n) && ls /"}}'
action '{"action": "write", "args": {"path": "/workspace/notes.txt", "content": "first line\nsecond line\n"}}'
action '{"action": "read", "args": {"path": "/workspace/notes.txt"}}'
action '{"action": "edit", "args": {"path": "/workspace/notes.txt", "command": "str_replace", "old_str": "second", "new_str": "edited"}}'
action '{"action": "run", "args": {"command": "cat notes.txt"}}'
run "$OHBOX" --root "$root" ps
run "$OHBOX" --root "$root" stop "$sid"

echo
run "$OHBOX" --root "$root" rmi "$image"
run "$OHBOX" --root "$root" prune
echo
echo "demo: done (registry stopped, temporary files removed)"
