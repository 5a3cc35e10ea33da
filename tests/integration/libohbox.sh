#!/bin/bash
# libohbox.sh: the installed library. `make install DESTDIR=...` into a temp
# dir; contrib/embed/example.c and tests/lib/libohbox-check.c built against
# the installed header and library with pkg-config; the example pulls from
# a test registry, runs, execs, stops and removes a sandbox, and nothing is
# left; libohbox-check drives the rest of the API (errors, options ABI,
# build, run, list, actions, exec capture) under LeakSanitizer; ohbox_run
# from threads while another thread holds libc's locks (libohbox-threads.c).
# The exported symbols are exactly the header's functions. `ohbox action` against a runtime-image sandbox.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

t_runtime_exports
INST=$T_TMP/inst

setup ()
{
  t_needs_runtime_build "namespaces, overlay, cgroups" || return 1
  command -v pkg-config >/dev/null || { echo "pkg-config is not installed"; return 1; }
  [ -f "$OHBOX_BUILDDIR/Makefile" ] || { echo "no configured build tree at $OHBOX_BUILDDIR"; return 1; }
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  # Only install: the build is up to date (make check built everything).
  nice make -s -C "$OHBOX_BUILDDIR" install DESTDIR="$INST" >"$T_TMP/install.log" 2>&1 || {
    tail -n 20 "$T_TMP/install.log"
    return 1
  }
}
t_setup_or_die setup setup
# A library built with --enable-sanitizers needs their runtimes in the
# programs that load it (ASan's must come first): build them the same way.
SAN=$(sed -n 's/^SANITIZER_LDFLAGS = //p' "$OHBOX_BUILDDIR/Makefile")

# The prefix configure was given, where the DESTDIR install put things.
PREFIX=$(sed -n 's/^prefix=//p' "$OHBOX_BUILDDIR/libohbox.pc")
LIBDIR=$(sed -n 's/^libdir=//p' "$OHBOX_BUILDDIR/libohbox.pc")
LIBDIR=${LIBDIR/\$\{exec_prefix\}/$PREFIX}
export PKG_CONFIG_PATH=$INST$LIBDIR/pkgconfig PKG_CONFIG_SYSROOT_DIR=$INST
# The installed library, not one of the build tree's.
export LD_LIBRARY_PATH=$INST$LIBDIR

test_installed_files ()
{
  assert_file_exists "$INST$PREFIX/include/ohbox.h"
  assert_file_exists "$INST$LIBDIR/pkgconfig/libohbox.pc"
  assert_ok pkg-config --modversion libohbox
  assert_eq "$out" "$(ohbox --version | awk '{print $3}')" "pkg-config version"
  assert_ok pkg-config --cflags --libs libohbox
  assert_contains "$out" "-I$INST$PREFIX/include"
  assert_contains "$out" "-lohbox"
  # Private dependencies only for static linking; libcurl, libarchive,
  # libnftables and libcrypto are loaded on first use, never linked.
  assert_not_contains "$out" "-lseccomp"
  assert_ok pkg-config --static --libs libohbox
  assert_contains "$out" "-lseccomp"
  assert_not_contains "$out" "-lcurl"
  assert_ok readelf -d "$INST$LIBDIR/libohbox.so"
  assert_contains "$out" "(SONAME)             Library soname: [libohbox.so.0]"
}

# The header's functions = the library's exported symbols (nothing of the
# internals leaks), each with the version node.
test_exported_symbols ()
{
  local hdr syms
  # (indented inside the header's extern "C" block, as clang-format puts it)
  hdr=$(grep -oE '^[[:space:]]*[a-z][a-z_ *]*\b(ohbox_[a-z0-9_]+) \(' "$INST$PREFIX/include/ohbox.h" |
    sed -E 's/.*\b(ohbox_[a-z0-9_]+) \($/\1/' | sort)
  syms=$(nm -D --defined-only "$INST$LIBDIR/libohbox.so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort)
  assert_ne "$hdr" "" "functions found in ohbox.h"
  assert_eq "$hdr" "$syms" "exported symbols vs ohbox.h"
  assert_eq "$(nm -D --defined-only "$INST$LIBDIR/libohbox.so" | awk '$2 != "A"' |
    { grep -vEc '@@LIBOHBOX_0(\.[0-9]+)?$' || true; })" 0 "symbols without a version node"
  # Functions added after the first release are in the node that added them.
  assert_contains "$(nm -D --defined-only "$INST$LIBDIR/libohbox.so")" "ohbox_run_plan@@LIBOHBOX_0.1"
  # Every one of them is also in the version script and the man page.
  local f
  for f in $hdr; do
    grep -qw "$f" "$OHBOX_SRCDIR/src/libohbox/api/libohbox.sym" || _t_assert_fail "$f missing from libohbox.sym"
    grep -qw "$f" "$OHBOX_SRCDIR/man/libohbox.3" || _t_assert_fail "$f missing from man/libohbox.3"
  done
  # The header stands alone, C and C++.
  printf '#include <ohbox.h>\nint main (void) { return ohbox_version () == 0; }\n' >"$T_WORK/h.c"
  assert_ok cc -std=c99 -Wall -Wextra -Werror $SAN $(pkg-config --cflags libohbox) "$T_WORK/h.c" -o "$T_WORK/h" \
    $(pkg-config --libs libohbox)
  assert_ok "$T_WORK/h"
  if command -v g++ >/dev/null; then
    cp "$T_WORK/h.c" "$T_WORK/h.cc"
    assert_ok g++ -Wall -Werror $(pkg-config --cflags libohbox) -c "$T_WORK/h.cc" -o "$T_WORK/h.o"
  fi
}

# cgroups and state of sandbox ID are gone.
assert_no_trace ()
{
  local id=$1 d
  for d in /sys/fs/cgroup/*/ohbox/"$id" /sys/fs/cgroup/ohbox/"$id"; do
    [ ! -e "$d" ] || _t_assert_fail "cgroup $d left behind"
  done
  [ -z "$(find "$OHBOX_RUNROOT" -maxdepth 3 -name "$id*" 2>/dev/null)" ] ||
    _t_assert_fail "state of $id left behind: $(find "$OHBOX_RUNROOT" -maxdepth 3 -name "$id*")"
  assert_not_contains "$(cat /proc/self/mountinfo)" "$id" "host mounts"
}

test_example ()
{
  cp "$OHBOX_SRCDIR/contrib/embed/example.c" "$OHBOX_SRCDIR/contrib/embed/Makefile" "$T_WORK/"
  assert_ok make -C "$T_WORK" CFLAGS="-O1 -Wall -Wextra -Werror $SAN"
  # Linked to the installed library.
  assert_ok ldd "$T_WORK/example"
  assert_contains "$out" "libohbox.so.0 => $INST$LIBDIR/libohbox.so.0"
  assert_exit 7 "$T_WORK/example" --root "$T_ROOT" --tls-verify=false "$REG_HOST/test/busybox:latest" \
    sh -c 'echo "in $(hostname) as $(id -u), $(readlink /proc/self/ns/pid)"; echo oops >&2; exit 7'
  assert_contains "$out" "pulled $REG_HOST/test/busybox:latest: $IMG_BB_MANIFEST"
  local id
  id=$(sed -n 's/^sandbox \([0-9a-f]\{64\}\)$/\1/p' <<<"$out")
  assert_match "$id" '^[0-9a-f]{64}$'
  # The command ran in the sandbox: its hostname, another pid namespace.
  assert_contains "$out" "in ${id:0:12} as 0, pid:["
  assert_not_contains "$out" "$(readlink /proc/self/ns/pid)"
  assert_contains "$out" "exec exit code 7"
  assert_eq "$err" "oops"
  assert_contains "$out" "stopped and removed $id"
  assert_ok ohbox ps -a --format json
  assert_jq "$out" 'length == 0'
  assert_no_trace "$id"
  # An error is a value with a message and a code (3: not found).
  assert_exit 125 "$T_WORK/example" --root "$T_ROOT" --tls-verify=false "$REG_HOST/test/nothing:here"
  assert_contains "$err" "example: pull:"
  assert_contains "$err" "(error code 3)"
}

runtime_image ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  assert_ok ohbox build --no-pull -q localhost/busybox:latest
  rt_image=$out
}

test_api ()
{
  runtime_image
  # With AddressSanitizer: its leak checker intercepts malloc for the whole
  # process, the library's allocations included (a leak fails the run).
  assert_ok cc -O1 -g -fsanitize=address -Wall -Wextra -Werror $(pkg-config --cflags libohbox) \
    "$OHBOX_SRCDIR/tests/lib/libohbox-check.c" -o "$T_WORK/check" $(pkg-config --libs libohbox)
  ASAN_OPTIONS=detect_leaks=1 t_run "$T_WORK/check" "$T_ROOT" localhost/busybox:latest "$rt_image"
  [ "$rc" = 0 ] || _t_assert_fail "libohbox-check (status $rc): $(grep FAIL: <<<"$out" || true) $(grep -m1 SUMMARY <<<"$err" || true)"
  assert_contains "$out" "all ok"
  local obs id
  obs=$(sed -n 's/^obs: //p' <<<"$out")
  assert_jq "$obs" '.observation == "run" and .content == "from-action" and .extras.metadata.exit_code == 4'
  id=$(sed -n 's/^id: //p' <<<"$out")
  assert_no_trace "$id"
}

test_threads ()
{
  # ohbox_run from two threads at once while a third keeps taking malloc's
  # and stdio's locks (tests/lib/libohbox-threads.c): the sandbox's first
  # process is made through a forked helper, so none inherits a held lock
  # (with a clone right in the threaded caller this hung every time).
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  assert_ok cc -O1 -g -Wall -Wextra -Werror $SAN $(pkg-config --cflags libohbox) \
    "$OHBOX_SRCDIR/tests/lib/libohbox-threads.c" -o "$T_WORK/threads" $(pkg-config --libs libohbox) -lpthread
  t_run "$T_WORK/threads" "$T_ROOT" localhost/busybox:latest 15
  [ "$rc" != 142 ] || _t_assert_fail "ohbox_run hung in a threaded program (killed by its alarm)"
  [ "$rc" = 0 ] || _t_assert_fail "libohbox-threads (status $rc): $(_t_short "$err")"
  assert_eq "ok: 30 runs" "$out"
  assert_ok ohbox ps -a -q
  assert_eq "" "$out" "sandboxes left"
  assert_ok ohbox check
}

test_action_cli ()
{
  runtime_image
  assert_ok ohbox run -d --rm "$rt_image"
  local sid=$out
  # Right after the start: action waits for the executor to listen.
  assert_exit 3 ohbox action "$sid" run 'echo hi; (exit 3)'
  assert_eq "$out" $'hi\n[The command completed with exit code 3.]'
  assert_exit 0 ohbox action --format json "$sid" run 'pwd'
  assert_jq "$out" '.observation == "run" and .content == "/workspace" and .extras.metadata.exit_code == 0'
  assert_ok ohbox action "$sid" write /workspace/f.txt 'one two'
  assert_ok ohbox action "$sid" edit /workspace/f.txt one three
  assert_ok ohbox action "$sid" read /workspace/f.txt
  assert_contains "$out" "three two"
  assert_exit 0 ohbox action "$sid" '{"action": "run", "args": {"command": "cat /workspace/f.txt"}}'
  assert_eq "$out" $'three two\n[The command completed with exit code 0.]'
  echo '{"action": {"action": "read", "args": {"path": "/nonexistent"}}}' >"$T_WORK/a.json"
  assert_exit 1 ohbox action "$sid" - <"$T_WORK/a.json"
  assert_contains "$out" "File not found"
  assert_exit 124 ohbox action --timeout 1 "$sid" run 'sleep 5'
  assert_exit 125 ohbox action "$sid" fly away
  assert_contains "$err" "expected JSON, \`run CMD\`"
  assert_exit 125 ohbox action "$sid" '{"action": 1}'
  assert_ok ohbox pause "$sid"
  assert_exit 125 ohbox action "$sid" run true
  assert_contains "$err" "is paused"
  assert_ok ohbox unpause "$sid"
  # (read: the shell session is still busy with the `sleep 5` above.)
  assert_ok ohbox action "$sid" read /workspace/f.txt
  # The key is the owner's only, and a wrong one is refused.
  local f
  f=$(find "$OHBOX_RUNROOT" -path "*/$sid/executor.json")
  assert_eq "$(stat -c %a "$f")" 600 "mode of executor.json"
  jq -c '.api_key = "wrong"' "$f" >"$f.new" && mv "$f.new" "$f"
  assert_exit 125 ohbox action "$sid" run true
  assert_contains "$err" "HTTP 403"
  ohbox stop "$sid" >/dev/null
  assert_exit 125 ohbox action "$sid" run true
  # A sandbox without an executor.
  assert_ok ohbox run -d localhost/busybox:latest sleep 60
  sid=$out
  assert_exit 125 ohbox action "$sid" run true
  assert_contains "$err" "has no executor"
  ohbox rm -f "$sid" >/dev/null
}

run_test installed_files test_installed_files
run_test exported_symbols test_exported_symbols
run_test example test_example
run_test api test_api
run_test threads test_threads
run_test action_cli test_action_cli
t_summary 2>/dev/null || true
