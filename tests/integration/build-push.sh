#!/bin/bash
# build-push.sh: `ohbox push` of runtime images to a registry with token
# auth over TLS, and their reuse from another store: a pushed lock snapshot
# pulled into an empty store gives path 2 (from lock), a pushed versioned
# one path 3; the pushed image is what skopeo reads back. A runtime image is
# what this store's `ohbox build` recorded: the image built from a pulled
# lock snapshot is one, the pulled snapshot itself is not, and a pushed
# runtime image pulled into another store (its label and all) runs as an
# ordinary image there (issue 14 item 5).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

t_runtime_exports

setup ()
{
  t_needs_runtime_build "namespaces, overlay" || return 1
  img_build || return 1
  reg_start token REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" private/busybox:latest || return 1
}
t_setup_or_die setup setup

BASE=$REG_HOST/private/busybox:latest
REPO=$REG_HOST/ohbox/runtime
AUTH=(--cert-dir "$REG_CERTDIR" --creds "$REG_USER:$REG_PASS")

build ()
{
  assert_ok ohbox build --format json "${AUTH[@]}" --runtime-repo "$REPO" "$@" "$BASE"
  path=$(jq -r .path <<<"$out")
  image=$(jq -r .image <<<"$out")
  json=$out
}

# A base whose manifest drips from the registry (fault_proxy): the pull's
# deadline, --pull-timeout, ends the build with a registry error.
test_pull_timeout ()
{
  fp_start REG FP
  fp_set FP '{"drip": 1100, "drip_pad": 4000000, "match": "/manifests/"}'
  local start=$SECONDS
  assert_exit 5 ohbox build --tls-verify=false --creds "$REG_USER:$REG_PASS" --pull-timeout 2s \
    --runtime-repo "$FP_HOST/ohbox/runtime" "$FP_HOST/private/busybox:latest"
  assert_int -le $((SECONDS - start)) 20 "seconds before giving up"
  assert_contains "$err" "did not finish within the pull's deadline of 2s"
  assert_exit 2 ohbox build --pull-timeout 1x "$BASE"
  assert_contains "$err" "--pull-timeout takes a duration"
}

# other_store: the next commands use a new, empty store.
other_store ()
{
  T_ROOT=$T_WORK/root2
  mkdir -p "$T_ROOT"
}

test_push_and_read_back ()
{
  build
  assert_eq "$path" from-scratch
  local id lock
  id=$(jq -r .id <<<"$json")
  lock=$(jq -r .tags.lock <<<"$json")
  assert_ok ohbox push --format json "${AUTH[@]}" "$REPO:$lock"
  assert_jq "$out" ".digest == \"$id\" and .blobs_sent >= 3"
  # Again: every blob is already there.
  assert_ok ohbox push --format json "${AUTH[@]}" "$REPO:$lock"
  assert_jq "$out" '.blobs_sent == 0'
  # The registry serves the same manifest (same digest).
  assert_eq "$(reg_manifest_digest REG ohbox/runtime "$lock")" "$id"
  # To another name.
  assert_ok ohbox push "${AUTH[@]}" "$image" "$REG_HOST/other/rt:v1"
  assert_match "$out" "^pushed $REG_HOST/other/rt:v1 $id "
}

test_push_refused_for_reader ()
{
  build
  assert_exit 4 ohbox push --cert-dir "$REG_CERTDIR" --creds reader:readerpass "$image" "$REG_HOST/ro/rt:v1"
  assert_exit 4 ohbox push --cert-dir "$REG_CERTDIR" "$image" "$REG_HOST/ro/rt:v1"
  assert_exit 3 ohbox push "${AUTH[@]}" no-such-image "$REG_HOST/ro/rt:v1"
}

test_lock_from_registry_gives_path_2 ()
{
  build
  local lock source
  lock=$(jq -r .tags.lock <<<"$json")
  source=$(jq -r .tags.source <<<"$json")
  assert_ok ohbox push "${AUTH[@]}" "$REPO:$lock"
  other_store
  # Pulled, the snapshot is an ordinary image here: no build of this store
  # made it.
  assert_ok ohbox pull "${AUTH[@]}" "$REPO:$lock"
  assert_ok ohbox run --dry-run --format json "$REPO:$lock"
  assert_jq "$out" '.runtime_image == false and .executor == null'
  # Another executor source tree would be a new source tag; the same one
  # is too, as the store is empty: the lock snapshot is used, not built.
  build
  assert_eq "$path" from-lock
  assert_eq "$(jq -r .tags.lock <<<"$json")" "$lock"
  assert_eq "$(jq -r .tags.source <<<"$json")" "$source"
  # It serves.
  local port
  port=$(t_free_port)
  assert_ok ohbox run -d --rm --network host "$image" "$port" --working-dir /workspace --username root --user-id 0
  local sid=$out
  t_wait_until 10 curl -sf "http://127.0.0.1:$port/alive" >/dev/null
  assert_jq "$(curl -sf -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$port/execute_action" \
    -d '{"action": {"action": "run", "args": {"command": "echo pulled"}, "timeout": 30}}')" '.content == "pulled"'
  ohbox stop "$sid" >/dev/null
  # What this build made is a runtime image (here the very bytes of the
  # snapshot, with the same executor: the snapshot's name now names it too).
  assert_ok ohbox run --dry-run --format json "$image"
  assert_jq "$out" '.runtime_image == true and .executor.port == 8000'
  # And then reuse.
  build
  assert_eq "$path" reuse
}

# A runtime image pushed and pulled into another store carries the label
# org.ohbox.runtime=1 but was not built there: it starts as an ordinary
# image (its own entrypoint and command, no session key, no executor.json,
# the default network with nothing published), with a warning that says so.
test_label_is_not_a_runtime_image ()
{
  build
  assert_ok ohbox push "${AUTH[@]}" "$image" "$REG_HOST/other/claims:v1"
  other_store
  assert_ok ohbox pull "${AUTH[@]}" "$REG_HOST/other/claims:v1"
  assert_ok ohbox inspect "$REG_HOST/other/claims:v1"
  assert_jq "$out" '.Config.Labels["org.ohbox.runtime"] == "1"' "its labels"
  assert_ok ohbox run -d --rm "$REG_HOST/other/claims:v1"
  local sid=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $sid >/dev/null 2>&1 || true" EXIT
  assert_not_contains "$err" "executor at"
  assert_not_contains "$err" "session API key"
  assert_contains "$err" "carries the label org.ohbox.runtime=1, but \`ohbox build\` did not make it in this store"
  local dir=$OHBOX_RUNROOT/$sid
  assert_file_absent "$dir/executor.json"
  assert_jq "$(cat "$dir/network.json")" '.mode == "bridge" and .ports == []' "its network"
  # The image's own entrypoint and command, nothing of ohbox's executor argv.
  assert_jq "$(cat "$dir/config.json")" '.command[-7:] == ["8000", "--working-dir", "/workspace", "--username", "root", "--user-id", "0"]' "its command"
  assert_exit 125 ohbox action "$sid" run true
  assert_contains "$err" "has no executor"
  ohbox rm -f "$sid" >/dev/null
  # The plan says the same.
  assert_ok ohbox run --dry-run --format json "$REG_HOST/other/claims:v1"
  assert_jq "$out" '.runtime_image == false and .executor == null and .network.mode == "bridge"'
}

test_versioned_from_registry_gives_path_3 ()
{
  # (The registry may have the lock snapshot from another test: only a
  # build from scratch tags the versioned one here.)
  build --force-rebuild
  local versioned
  versioned=$(jq -r .tags.versioned <<<"$json")
  assert_ok ohbox push "${AUTH[@]}" "$REPO:$versioned"
  other_store
  # A new dependency lock (another bash) is not in the registry: from versioned.
  cp /bin/bash-static "$T_WORK/bash2"
  printf 'x' >>"$T_WORK/bash2"
  build --bash "$T_WORK/bash2"
  assert_eq "$path" from-versioned
}

test_no_pull_builds_locally ()
{
  build
  assert_ok ohbox push "${AUTH[@]}" "$REPO:$(jq -r .tags.lock <<<"$json")"
  other_store
  assert_ok ohbox pull "${AUTH[@]}" "$BASE"
  assert_ok ohbox build --format json --no-pull --runtime-repo "$REPO" "$BASE"
  assert_jq "$out" '.path == "from-scratch"'
}

run_test push_and_read_back test_push_and_read_back
run_test push_refused_for_reader test_push_refused_for_reader
run_test lock_from_registry_gives_path_2 test_lock_from_registry_gives_path_2
run_test versioned_from_registry_gives_path_3 test_versioned_from_registry_gives_path_3
run_test no_pull_builds_locally test_no_pull_builds_locally
run_test label_is_not_a_runtime_image test_label_is_not_a_runtime_image
run_test pull_timeout test_pull_timeout
t_summary 2>/dev/null || true
