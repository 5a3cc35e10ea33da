#!/bin/bash
# cgroup2-guest.sh: the cgroup tests (tests/unit/test-cgroup*.c) on a pure
# cgroup v2 kernel, inside a qemu TCG guest (tests/guest/run-guest.sh):
# this project's machines are hybrid, so memory.max / memory.events,
# pids.max / pids.events, cpu.max, cgroup.freeze, cgroup.kill and rootless
# delegation can only be exercised there.  The test programs are built
# static from the sources; each check done inside the guest is reported
# here as PASS:/FAIL:/SKIP: cgroup2-guest/PROGRAM/TEST.  In the same boot,
# tests/guest/ohbox-checks.sh runs real sandboxes through `ohbox run` (root
# and rootless, limits, pause, stats, /sys/fs/cgroup inside), reported as
# cgroup2-guest/ohbox/NAME.  The v2 checks that matter must have run (not
# skipped); the guest run's duration is printed (a figure: the guest has 240 s).
. "$(dirname "$0")/../lib/common.sh"

src=$OHBOX_SRCDIR
# Checks that must run in the guest, not skip: the point of booting it.
required="test-cgroup/test_detect_real test-cgroup/test_create_limits test-cgroup/test_oom_kill
test-cgroup/test_pids_limit test-cgroup/test_cpu_quota test-cgroup/test_freeze_thaw test-cgroup/test_stats
test-cgroup-lifecycle/test_clone_into_cgroup test-cgroup-lifecycle/test_kill_all
test-cgroup-lifecycle/test_rootless_delegated test-cgroup-lifecycle/test_create_destroy_loop
test-cgroup-lifecycle/test_device_rules
test-cgroup-lifecycle/test_device_rules_deny_all_first"
# ... and through `ohbox run` (tests/guest/ohbox-checks.sh), unless ohbox
# could not be packed (a FAIL of its own).
ohbox_required="ohbox/memory-oom-exit-137 ohbox/memory-oom-events ohbox/memory-swap ohbox/pids-limit-eagain
ohbox/cpu-max-weight-usage ohbox/pause-unpause ohbox/stats ohbox/stop-rm ohbox/sys-fs-cgroup
ohbox/rootless-delegated ohbox/rootless-undelegated-warns ohbox/device-filter ohbox/nothing-left"

missing=
command -v qemu-system-x86_64 >/dev/null || missing="$missing qemu-system-x86"
ls /boot/vmlinuz-* >/dev/null 2>&1 || missing="$missing linux-image-amd64"
command -v cpio >/dev/null || missing="$missing cpio"
[ -x /bin/busybox ] || missing="$missing busybox-static"
command -v "${CC:-gcc}" >/dev/null || missing="$missing gcc"
if [ -n "$missing" ]; then
  t_skip guest "missing Debian packages:$missing (contrib/install-deps.sh installs them)"
  exit 0
fi

# ---------------------------------------------------------------- payload
payload=$T_TMP/payload
mkdir -p "$payload"
build_log=$T_TMP/build.log
built=1
# Static: the guest has no shared libraries.  The cgroup code needs libc
# only; it is compiled once and linked into each program.
cc_payload=("${CC:-gcc}" -O1 -Wall -Wextra -I"$OHBOX_BUILDDIR" -I"$src" -I"$src/src/libohbox" -I"$src/tests/unit")
objs=$T_TMP/objs
mkdir -p "$objs"
for c in "$src/src/libohbox/common/error.c" "$src/src/libohbox/common/utils.c" "$src"/src/libohbox/cgroup/*.c; do
  "${cc_payload[@]}" -c -o "$objs/$(basename "$c" .c).o" "$c" >>"$build_log" 2>&1 || built=0
done
for t in test-cgroup-parse test-cgroup test-cgroup-lifecycle; do
  [ "$built" = 1 ] || break
  "${cc_payload[@]}" -static -o "$payload/$t" "$src/tests/unit/$t.c" "$objs"/*.o >>"$build_log" 2>&1 || built=0
done
if [ "$built" = 0 ]; then
  t_fail build-payload "static build of the cgroup tests failed (is libc6-dev there?)"
  sed 's/^/    | /' "$build_log" | tail -n 20
  exit 1
fi
t_pass build-payload

# `ohbox run` in the guest (tests/guest/ohbox-checks.sh): ohbox, newuidmap
# and newgidmap with their shared libraries at their host paths
# (tests/guest/lib.sh), and the busybox test image as an OCI layout to
# `ohbox load`.
. "$src/tests/guest/lib.sh"
ohbox_payload ()
{
  . "$T_LIB/images.sh"
  img_build >>"$build_log" 2>&1 || return 1
  cp -a "$IMG_BUSYBOX" "$payload/busybox" || return 1
  guest_pack_binary "$payload/sysroot" "$OHBOX_BIN" /usr/local/bin/ohbox || return 1
  echo /usr/local/bin/ohbox >"$payload/ohbox-path"
  local h
  for h in newuidmap newgidmap; do
    # (setuid root: copied as they are)
    mkdir -p "$payload/sysroot/usr/bin" && cp -a "/usr/bin/$h" "$payload/sysroot/usr/bin/$h" || return 1
    guest_pack_closure "$payload/sysroot" "/usr/bin/$h" || return 1
  done
  cp "$src/tests/guest/ohbox-checks.sh" "$payload/ohbox-checks.sh"
}
ohbox_ok=1
if [ ! -x "$OHBOX_BIN" ]; then
  t_fail build-payload-ohbox "\`$OHBOX_BIN\` is not built (run make)"
  ohbox_ok=0
elif ! command -v newuidmap >/dev/null; then
  t_fail build-payload-ohbox "newuidmap not found (Debian package uidmap; contrib/install-deps.sh)"
  ohbox_ok=0
elif ! ohbox_payload; then
  t_fail build-payload-ohbox "packing ohbox or the busybox image failed"
  sed 's/^/    | /' "$build_log" | tail -n 20
  ohbox_ok=0
else
  t_pass build-payload-ohbox
  echo "# payload: $(du -sh "$payload" | cut -f1)"
fi

cat >"$payload/run.sh" <<'EOF'
#!/bin/sh
# Runs in the guest (busybox sh, root, root cgroup).
rc=0
if grep -q ' cgroup ' /proc/mounts; then
  echo "FAIL: guest/pure-v2: a cgroup v1 hierarchy is mounted"
  rc=1
elif grep -q ' /sys/fs/cgroup cgroup2 .*nsdelegate' /proc/mounts; then
  echo "PASS: guest/pure-v2"
else
  echo "FAIL: guest/pure-v2: no cgroup2 mount with nsdelegate at /sys/fs/cgroup"
  rc=1
fi
echo "# guest kernel $(uname -r), up $(cut -d' ' -f1 /proc/uptime) s, controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
for t in test-cgroup-parse test-cgroup test-cgroup-lifecycle; do
  ./$t || rc=1
done
# Every cgroup the tests made is gone.
left=$({ find /sys/fs/cgroup -mindepth 1 -type d || true; } | wc -l)
if [ "$left" -eq 0 ]; then
  echo "PASS: guest/no-cgroup-left"
else
  echo "FAIL: guest/no-cgroup-left: $(find /sys/fs/cgroup -mindepth 1 -type d | head -n 5 | tr '\n' ' ')"
  rc=1
fi
echo "# unit tests done, up $(cut -d' ' -f1 /proc/uptime) s"
if [ -f ./ohbox-checks.sh ]; then
  sh ./ohbox-checks.sh || rc=1
fi
exit $rc
EOF
chmod +x "$payload/run.sh"

# ---------------------------------------------------------------- boot
out=$T_TMP/guest.out
guest_run "$out" --modules "overlay loop ext4" --timeout 240 "$payload" || exit 1

# The v2 checks ran and passed, rather than skipped.
[ "$ohbox_ok" = 1 ] && required="$required $ohbox_required"
# shellcheck disable=SC2086 # one check per word
guest_required v2-checks-ran "$out" $required
if grep -qx '# this host: cgroup v2, 1 hierarchies' "$out"; then
  t_pass guest-detected-as-v2
else
  t_fail guest-detected-as-v2 "$(grep '^# this host' "$out" || echo 'no detection line')"
fi
