#!/bin/bash
# build.sh: `ohbox build` on local bases (busybox, a musl base; Debian with
# OHBOX_TEST_DEBIAN=1): each of the four paths taken for the right reason,
# reproducible and shared layers, the tags in `ohbox images`, bad input, and
# runtime images serving /alive and a `run` action (directly and through the
# OpenHands-compatible entry).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

t_runtime_exports

setup ()
{
  t_needs_runtime_build "namespaces, overlay" || return 1
  command -v curl >/dev/null || { echo "curl is not installed"; return 1; }
  img_build || return 1
  # The executor source tree the tests change (a copy).
  mkdir -p "$T_TMP/src"
  cp "$OHBOX_SRCDIR"/executor/*.[ch] "$OHBOX_SRCDIR/executor/local.mk" "$T_TMP/src/"
}
t_setup_or_die setup setup
export OHBOX_EXECUTOR_SRCDIR=$T_TMP/src
SERVE_OPTS=()

BB=localhost/busybox:latest

load_bb ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
}

# build ARGS...: ohbox build --format json, the path in $path, the image in $image.
build ()
{
  assert_ok ohbox build --no-pull --format json "$@"
  path=$(jq -r .path <<<"$out")
  image=$(jq -r .image <<<"$out")
  json=$out
}

# layers IMAGE: its layer digests, one a line.
layers ()
{
  ohbox inspect "$1" | jq -r '.Layers[].Digest'
}

test_paths_in_order ()
{
  load_bb
  build "$BB"
  assert_eq "$path" from-scratch
  assert_jq "$json" '.tagged | length == 3'
  local first=$image lock versioned
  lock=$(jq -r .tags.lock <<<"$json")
  versioned=$(jq -r .tags.versioned <<<"$json")
  assert_eq "$versioned" "ohbox_v$(ohbox --version | awk '{print $3}')_localhost_s_busybox_t_latest"
  assert_match "$lock" '^ohbox_v[0-9.]+_[0-9a-z]{1,16}$'
  assert_match "$(jq -r .tags.source <<<"$json")" "^${lock}_[0-9a-z]{1,16}\$"

  # Nothing changed: reuse, same image.
  build "$BB"
  assert_eq "$path" reuse
  assert_eq "$image" "$first"
  assert_jq "$json" '.tagged == []'

  # Only the executor source changed: from lock; base and dependency layers kept.
  echo "/* changed */" >>"$OHBOX_EXECUTOR_SRCDIR/obs.h"
  build "$BB"
  assert_eq "$path" from-lock
  assert_ne "$image" "$first"
  assert_eq "$(jq -r .tags.lock <<<"$json")" "$lock"
  local a b
  a=$(layers "$first")
  b=$(layers "$image")
  assert_eq "$(head -n -1 <<<"$a")" "$(head -n -1 <<<"$b")"
  # Same executor binary, another source tag: the executor layer records it.
  assert_ne "$(tail -n 1 <<<"$a")" "$(tail -n 1 <<<"$b")"

  # The dependency lock changed (another bash): from versioned.
  cp /bin/bash-static "$T_TMP/bash2"
  printf 'x' >>"$T_TMP/bash2"
  build --bash "$T_TMP/bash2" "$BB"
  assert_eq "$path" from-versioned
  assert_ne "$(jq -r .tags.lock <<<"$json")" "$lock"
  assert_jq "$json" '.tagged | length == 2'
  b=$(layers "$image")
  # Base layers kept, dependency and executor layers new.
  assert_eq "$(head -n -2 <<<"$b")" "$(head -n -2 <<<"$a")"
  assert_ne "$(tail -n 2 <<<"$b" | head -n 1)" "$(tail -n 2 <<<"$a" | head -n 1)"
  # And again with the same inputs: reuse.
  build --bash "$T_TMP/bash2" "$BB"
  assert_eq "$path" reuse

  # --force-rebuild: from scratch, the same bytes (reproducible).
  build --bash "$T_TMP/bash2" --force-rebuild "$BB"
  assert_eq "$path" from-scratch
  build --bash "$T_TMP/bash2" "$BB"
  assert_eq "$path" reuse
}

test_new_base_from_scratch_shares_layers ()
{
  load_bb
  ohbox load "oci:$IMG_ZSTD:latest" localhost/other:1 >/dev/null
  local other=localhost/other:1
  build "$BB"
  local first=$image
  build "$other"
  assert_eq "$path" from-scratch
  # The dependency layer is the same blob in both (deduplicated).
  assert_eq "$(layers "$image" | tail -n 2 | head -n 1)" "$(layers "$first" | tail -n 2 | head -n 1)"
  local n
  n=$(find "$T_ROOT/layers/sha256" -mindepth 1 -maxdepth 1 | wc -l)
  # busybox (2) + busybox-zstd's base layers + one dependency and one executor layer.
  assert_int -le "$n" $(( $(layers "$image" | wc -l) + 2 ))
  # The executor layer too (it does not depend on the base).
  assert_eq "$(layers "$image" | tail -n 1)" "$(layers "$first" | tail -n 1)"
}

test_images_lists_tags ()
{
  load_bb
  build "$BB"
  assert_ok ohbox images
  assert_contains "$out" "ohbox/runtime"
  assert_contains "$out" "$(jq -r .tags.source <<<"$json")"
  assert_contains "$out" "$(jq -r .tags.versioned <<<"$json")"
  # Another runtime repository has its own tags (same image, new names).
  local id
  id=$(jq -r .id <<<"$json")
  build --runtime-repo example.test/me/rt "$BB"
  assert_eq "$path" from-scratch
  assert_eq "$(jq -r .id <<<"$json")" "$id"
  assert_match "$image" '^example.test/me/rt:'
}

test_table_output_and_reuse ()
{
  load_bb
  assert_ok ohbox build --no-pull "$BB"
  assert_match "$out" '^from-scratch ohbox/runtime:ohbox_v.* sha256:[0-9a-f]{64} \([0-9.]+ s\)$'
  assert_ok ohbox build --no-pull "$BB"
  assert_match "$out" '^reuse '
  # Reuse is a few store lookups: nothing is written to the store (its time
  # is measured in bench/build.sh, not asserted here).
  local before after
  before=$(find "$T_ROOT/blobs" "$T_ROOT/layers" "$T_ROOT/images" -maxdepth 2 | sort | sha256sum)
  assert_ok ohbox build --no-pull --format json "$BB"
  assert_jq "$out" '.path == "reuse" and (.seconds | type) == "number"'
  after=$(find "$T_ROOT/blobs" "$T_ROOT/layers" "$T_ROOT/images" -maxdepth 2 | sort | sha256sum)
  assert_eq "$after" "$before" "files in the store after a reuse"
}

test_bad_input ()
{
  load_bb
  assert_exit 3 ohbox build --no-pull localhost/nope:1
  assert_contains "$err" "nope"
  assert_exit 2 ohbox build --no-pull --bash /bin/bash "$BB"
  assert_contains "$err" "bash-static"
  assert_exit 3 ohbox build --no-pull --bash /nonexistent "$BB"
  assert_exit 2 ohbox build --no-pull
  assert_exit 2 ohbox build --no-pull --runtime-repo 'Bad Repo' "$BB"
  assert_exit 2 ohbox build --no-pull --pull-timeout 1x "$BB"
  assert_contains "$err" "ohbox build: --pull-timeout takes a duration (30s, 10m, 1h) or 0 for none, not \`1x\`"
  assert_contains "$err" "Run 'ohbox build --help' for usage."
  assert_exit 2 ohbox build --no-pull --max-image-size 0 "$BB"
  assert_contains "$err" "ohbox build: --max-image-size takes a size in bytes (suffixes K, M, G, T), not \`0\`"
  assert_exit 2 ohbox build --no-pull --max-layer-size 1G "$BB"
  # Nothing was tagged by the failed builds.
  assert_not_contains "$(ohbox images)" "ohbox/runtime"
}

# A build killed while it makes the executor's closure leaves build/closures/tmp-PID
# and no tag; `ohbox prune` removes the half-made closure, and the next build works.
test_killed_build_pruned ()
{
  load_bb
  cat >"$T_TMP/slow-closure.sh" <<EOF
sh "$OHBOX_SRCDIR/executor/closure.sh" "\$@" || exit 1
echo \$\$ >"$T_TMP/closure.pid"
exec sleep 60
EOF
  OHBOX_CLOSURE_SH=$T_TMP/slow-closure.sh ohbox_bg "$T_TMP/build.out" build --no-pull "$BB"
  t_wait_until 30 test -s "$T_TMP/closure.pid" || { t_fail "closure.sh never ran: $(cat "$T_TMP/build.out")"; return; }
  kill -KILL "$OHBOX_BG_PID"
  kill -KILL "$(cat "$T_TMP/closure.pid")"
  wait "$OHBOX_BG_PID" 2>/dev/null || true
  assert_ne "" "$(find "$T_ROOT/build/closures" -maxdepth 1 -name 'tmp-*')" "the killed build's closure"
  assert_not_contains "$(ohbox images)" "ohbox/runtime"
  assert_ok ohbox prune --format json
  assert_jq "$out" '.partials >= 1' "prune after a killed build"
  assert_eq "" "$(find "$T_ROOT/build/closures" -maxdepth 1 -name 'tmp-*')" "half-made closures after prune"
  build "$BB"
  assert_eq "$path" from-scratch
}

test_unsupported_arch ()
{
  ohbox load --platform linux/arm64 "oci:$IMG_MULTI:latest" localhost/multi:arm64 >/dev/null 2>&1 ||
    skip "cannot load the arm64 image of the multi-arch layout"
  assert_exit 8 ohbox build --no-pull localhost/multi:arm64
  assert_contains "$err" "linux/amd64 only"
  assert_not_contains "$(ohbox images)" "ohbox/runtime"
}

test_save_for_skopeo ()
{
  command -v skopeo >/dev/null || skip "skopeo is not installed"
  load_bb
  build "$BB"
  local id
  id=$(jq -r .id <<<"$json")
  assert_ok ohbox save "$image" "oci:$T_WORK/layout:rt"
  assert_ok skopeo inspect "oci:$T_WORK/layout:rt"
  assert_jq "$out" ".Digest == \"$id\" and (.Layers | length) == 4 and .Labels[\"org.ohbox.runtime\"] == \"1\""
  # podman/skopeo copy it (every blob verified) into a fresh layout.
  assert_ok skopeo --insecure-policy copy -q "oci:$T_WORK/layout:rt" "oci:$T_WORK/copy:rt"
}

# serve IMAGE CMD...: runs IMAGE detached on the host network with CMD (PORT
# in it replaced by a free port, kept in $port), options in SERVE_OPTS;
# waits for /alive.
serve ()
{
  local img=$1
  shift
  port=$(t_free_port)
  assert_ok ohbox run -d --rm --network host "${SERVE_OPTS[@]}" "$img" "${@//PORT/$port}"
  sid=$out
  t_wait_until 10 curl -sf "http://127.0.0.1:$port/alive" >/dev/null || {
    ohbox logs "$sid" >&9 2>&1
    _t_assert_fail "the executor of $img did not answer /alive on $port"
  }
}

action ()
{
  curl -sf -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$port/execute_action" \
    -d "{\"action\": $1}"
}

test_runtime_image_serves ()
{
  load_bb
  build "$BB"
  serve "$image" PORT --working-dir /workspace
  local o
  o=$(action '{"action": "run", "args": {"command": "echo hi from $(cat /etc/os-release 2>/dev/null | head -c 0)busybox; pwd"}, "timeout": 30}')
  assert_jq "$o" '.observation == "run" and .extras.metadata.exit_code == 0'
  assert_jq "$o" '.content == "hi from busybox\n/workspace"'
  o=$(action '{"action": "write", "args": {"path": "/workspace/a.txt", "content": "x"}, "timeout": 30}')
  assert_jq "$o" '.observation == "write"'
  # busybox has no python: run_ipython says so.
  o=$(action '{"action": "run_ipython", "args": {"code": "1"}, "timeout": 30}')
  assert_jq "$o" '.observation == "error" and .content == "run_ipython needs python3 in the sandbox, and none was found in PATH"'
  ohbox stop "$sid" >/dev/null
}

# `ohbox run IMAGE` without a command: the executor on a free port (or
# --executor-port), with a session API key it enforces.
test_run_starts_executor ()
{
  load_bb
  build "$BB"
  assert_ok ohbox run -d --rm "$image"
  sid=$out
  local url key
  url=$(sed -n 's/^ohbox run: executor at \([^,]*\), .*/\1/p' <<<"$err")
  key=$(sed -n 's/.*, session API key \([0-9a-f]*\)$/\1/p' <<<"$err")
  assert_match "$url" '^http://127.0.0.1:[0-9]+$'
  assert_match "$key" '^[0-9a-f]{32}$'
  t_wait_until 10 curl -sf "$url/alive" >/dev/null
  assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    "$url/execute_action" -d '{"action": {"action": "run", "args": {"command": "true"}}}')" 403
  assert_jq "$(curl -sf -X POST -H "X-Session-API-Key: $key" -H 'Content-Type: application/json' \
    "$url/execute_action" -d '{"action": {"action": "run", "args": {"command": "echo keyed"}, "timeout": 30}}')" \
    '.content == "keyed"'
  ohbox stop "$sid" >/dev/null
  port=$(t_free_port)
  assert_ok ohbox run -d --rm --executor-port "$port" -e SESSION_API_KEY=mine "$image"
  sid=$out
  assert_contains "$err" "executor at http://127.0.0.1:$port, session API key mine"
  t_wait_until 10 curl -sf "http://127.0.0.1:$port/alive" >/dev/null
  assert_jq "$(curl -sf -X POST -H 'X-Session-API-Key: mine' -H 'Content-Type: application/json' \
    "http://127.0.0.1:$port/execute_action" -d '{"action": {"action": "run", "args": {"command": "echo mine"}, "timeout": 30}}')" \
    '.content == "mine"'
  ohbox stop "$sid" >/dev/null
}

test_openhands_entry ()
{
  load_bb
  build "$BB"
  SERVE_OPTS=(--entrypoint /openhands/micromamba/bin/micromamba)
  serve "$image" run -n openhands poetry run python -u -m \
    openhands.runtime.action_execution_server PORT --working-dir /workspace --plugins agent_skills \
    --username root --user-id 0
  local o
  o=$(action '{"action": "run", "args": {"command": "echo entry"}, "timeout": 30}')
  assert_jq "$o" '.content == "entry"'
  ohbox stop "$sid" >/dev/null
}

# A base with musl and no glibc, no busybox bash: the executor brings its
# own libc; the image's own musl program still runs.
test_musl_base ()
{
  command -v musl-gcc >/dev/null || skip "musl-tools is not installed (apt-get install musl-tools)"
  local rf=$T_WORK/musl
  mkdir -p "$rf/lib" "$rf/bin" "$rf/tmp"
  cp -L /lib/ld-musl-x86_64.so.1 "$rf/lib/"
  printf '#include <stdio.h>\nint main(void){puts("musl says hi");return 0;}\n' >"$T_WORK/hi.c"
  musl-gcc -o "$rf/bin/hi" "$T_WORK/hi.c"
  cp "$(command -v busybox)" "$rf/bin/busybox"
  ln -s busybox "$rf/bin/sh"
  ln -s busybox "$rf/bin/cat"
  mkdir -p "$rf/etc"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$rf/etc/passwd"
  [ -z "$(find "$rf" -name 'libc.so.6' -o -name 'ld-linux*')" ]
  img_layout_init "$T_WORK/musl-layout"
  img_add_layer "$T_WORK/musl-layout" "$rf" gzip
  local ld
  ld=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE")
  img_add_image "$T_WORK/musl-layout" amd64 "" musl "$(_img_layers_json "$ld")" "[\"$LAYER_DIFF\"]"
  img_set_refs "$T_WORK/musl-layout" "latest=$(_img_desc "$IMG_OCI_MANIFEST" "$MANIFEST_DIGEST" "$MANIFEST_SIZE" amd64)"
  ohbox load "oci:$T_WORK/musl-layout:latest" localhost/musl:latest >/dev/null
  build localhost/musl:latest
  assert_eq "$path" from-scratch
  serve "$image" PORT --working-dir /workspace
  local o
  o=$(action '{"action": "run", "args": {"command": "/bin/hi"}, "timeout": 30}')
  assert_jq "$o" '.content == "musl says hi" and .extras.metadata.exit_code == 0'
  ohbox stop "$sid" >/dev/null
}

test_debian_base ()
{
  img_debian_wanted debian "debootstrap, ~80 s the first time"
  img_build_debian >&9 2>&1 || skip "img_build_debian failed"
  ohbox load "oci:$IMG_DEBIAN:bookworm" localhost/debian:bookworm >/dev/null
  build localhost/debian:bookworm
  assert_eq "$path" from-scratch
  # Debian has its own bash: none is layered in.
  assert_jq "$(ohbox inspect "$image")" '[.Config.Env[] | select(startswith("OHBOX_EXECUTOR_BASH="))] | length == 0'
  serve "$image" PORT --working-dir /workspace
  local o
  o=$(action '{"action": "run", "args": {"command": "bash --version | head -n 1; . /etc/os-release; echo $ID"}, "timeout": 30}')
  assert_jq "$o" '(.content | endswith("debian")) and .extras.metadata.exit_code == 0'
  ohbox stop "$sid" >/dev/null
}

# run_ipython in IPython's own shell on a Debian base with python3-ipython, as
# the agent user of OpenHands (tests/executor/client.py test_ipython).
test_debian_agent_ipython ()
{
  /usr/bin/python3 -c 'import httpx' 2>/dev/null || skip "python3-httpx is missing"
  img_debian_wanted debian-agent "debootstrap, ~2 min the first time"
  img_build_debian_agent >&9 2>&1 || skip "img_build_debian_agent failed"
  ohbox load "oci:$IMG_DEBIAN_AGENT:bookworm" localhost/debian-agent:bookworm >/dev/null
  build localhost/debian-agent:bookworm
  serve "$image" PORT --working-dir /workspace --username openhands --user-id 1000
  OHBOX_EXPECT_IPYTHON=ipython OHBOX_EXPECT_PYTHON=/usr/bin/python3 assert_ok /usr/bin/python3 \
    "$OHBOX_SRCDIR/tests/executor/client.py" "http://127.0.0.1:$port" none /workspace ipython
  assert_contains "$out" "PASS: executor/ipython"
  ohbox stop "$sid" >/dev/null
}

# dep_layer IMAGE: the blob of its dependency layer (the executor's
# libraries, bash, the lock) in the store: the layer with .ohbox/lock.json.
dep_layer ()
{
  local d blob
  for d in $(layers "$1"); do
    blob=$T_ROOT/blobs/sha256/${d#sha256:}
    # grep reads the whole listing: with -q it could stop first and tar die
    # of SIGPIPE, which pipefail counts as no match (seen once in a full run)
    if tar -tf "$blob" 2>/dev/null | grep -x '\.ohbox/lock\.json' >/dev/null; then
      echo "$blob"
      return 0
    fi
  done
  return 1
}

# Issue 16: on busybox the dependency layer of a runtime image stays under
# 8 MB, with the executor as a release build makes it (a sanitizer build's
# closure adds libasan) and the libmicrohttpd
# without HTTPS that contrib/install-deps.sh builds (no GnuTLS stack);
# the image runs the executor from those files alone, zips included.
test_dependency_layer_under_8MB ()
{
  local exe=$OHBOX_EXECUTOR blob size o
  [ -x "$OHBOX_BUILDDIR/tests/executor/ohbox-executor-release" ] && exe=$OHBOX_BUILDDIR/tests/executor/ohbox-executor-release
  if ldd "$exe" | grep 'libasan\|libubsan' >/dev/null; then
    t_fail "$exe is a sanitizer build and tests/executor/ohbox-executor-release is not built (make check)"
    return
  fi
  load_bb
  OHBOX_EXECUTOR=$exe build "$BB"
  blob=$(dep_layer "$image") || { t_fail "no dependency layer in $image"; return; }
  size=$(stat -c %s "$blob")
  echo "# dependency layer on busybox: $size bytes; largest files:" >&9
  tar -tvf "$blob" | sort -k3 -n -r | head -n 6 >&9
  assert_int -lt "$size" 8000000 "dependency layer bytes (GnuTLS in it? contrib/install-deps.sh builds the libmicrohttpd without HTTPS)"
  assert_no_match "$(tar -tf "$blob")" 'gnutls|p11-kit|nettle|libasan|libicu'
  serve "$image" PORT --working-dir /workspace
  o=$(action '{"action": "run", "args": {"command": "echo lean; ls /.ohbox/lib | grep -c tls"}, "timeout": 30}')
  assert_jq "$o" '.content == "lean\n0" and .extras.metadata.exit_code == 1'
  # A zip through minizip from the layer: upload, then download.
  printf 'zipped\n' >"$T_TMP/z.txt"
  (cd "$T_TMP" && rm -f up.zip && /usr/bin/python3 -c 'import zipfile; z = zipfile.ZipFile("up.zip", "w"); z.write("z.txt"); z.close()')
  assert_ok curl -sf -F "file=@$T_TMP/up.zip" "http://127.0.0.1:$port/upload_file?destination=/workspace/z&recursive=true"
  o=$(action '{"action": "read", "args": {"path": "/workspace/z/z.txt"}, "timeout": 30}')
  assert_jq "$o" '.content | contains("zipped")'
  assert_ok curl -sf -o "$T_TMP/down.zip" "http://127.0.0.1:$port/download_files?path=/workspace/z"
  assert_eq "$(/usr/bin/python3 -c 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("z.txt").decode(), end="")' "$T_TMP/down.zip")" zipped "the downloaded zip's z.txt"
  ohbox stop "$sid" >/dev/null
}

# The libmicrohttpd without HTTPS is packed only while it was rebuilt from
# the system's version: once the system's is another (an update), closure.sh
# refuses it and the build says how to rebuild it; OHBOX_MHD_NOTLS names a
# directory, or `none` for the system's library (with GnuTLS).
test_mhd_notls_choice ()
{
  local lib
  load_bb
  lib=$(ldd "$OHBOX_EXECUTOR" | awk '$1 == "libmicrohttpd.so.12" {print $3}')
  mkdir -p "$T_TMP/stale/lib"
  cp -L "$lib" "$T_TMP/stale/lib/libmicrohttpd.so.12"
  echo "libmicrohttpd12 0.0.1-1" >"$T_TMP/stale/ohbox-source-version"
  OHBOX_MHD_NOTLS=$T_TMP/stale/lib assert_exit 1 ohbox build --no-pull "$BB"
  assert_contains "$err" "holds libmicrohttpd12 0.0.1-1 rebuilt, but the system has"
  assert_contains "$err" "contrib/install-deps.sh"
  assert_not_contains "$(ohbox images)" "ohbox/runtime"
  OHBOX_MHD_NOTLS=$T_TMP/nowhere assert_exit 2 ohbox build --no-pull "$BB"
  assert_contains "$err" "OHBOX_MHD_NOTLS \`$T_TMP/nowhere\` has no libmicrohttpd.so.12"
  OHBOX_MHD_NOTLS=none build "$BB"
  assert_match "$(tar -tf "$(dep_layer "$image")")" 'libgnutls'
}

run_test paths_in_order test_paths_in_order
run_test new_base_from_scratch_shares_layers test_new_base_from_scratch_shares_layers
run_test images_lists_tags test_images_lists_tags
run_test table_output_and_reuse test_table_output_and_reuse
run_test bad_input test_bad_input
run_test killed_build_pruned test_killed_build_pruned
run_test unsupported_arch test_unsupported_arch
run_test runtime_image_serves test_runtime_image_serves
run_test save_for_skopeo test_save_for_skopeo
run_test run_starts_executor test_run_starts_executor
run_test openhands_entry test_openhands_entry
run_test musl_base test_musl_base
run_test debian_base test_debian_base
run_test debian_agent_ipython test_debian_agent_ipython
run_test dependency_layer_under_8MB test_dependency_layer_under_8MB
run_test mhd_notls_choice test_mhd_notls_choice
t_summary 2>/dev/null || true
