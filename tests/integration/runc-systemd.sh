#!/bin/bash
# runc-systemd.sh: ohbox-runc --systemd-cgroup. On this host (no systemd as
# PID 1): the clear error, and `features` saying what the build can do. With
# a real systemd: a qemu TCG guest (tests/guest/run-guest.sh, pure cgroup v2,
# a Kubernetes node's shape) whose PID 1 is the host's own /lib/systemd/systemd,
# started with only ohbox-checks.service, which runs
# tests/guest/runc-systemd-checks.sh: scopes made, limited, paused, updated
# and deleted through systemd's D-Bus API (its private socket: the guest has
# no dbus-daemon), checked with systemctl and the cgroup files, reported as
# runc-systemd/guest/NAME. The guest run's duration is printed.
. "$(dirname "$0")/../lib/common.sh"

src=$OHBOX_SRCDIR
RUNC=$OHBOX_BUILDDIR/ohbox-runc
sd_bus=0
grep -q '^#define HAVE_SYSTEMD 1' "$OHBOX_BUILDDIR/config.h" && sd_bus=1

if [ ! -x "$RUNC" ]; then
  t_fail setup "ohbox-runc is not built (make ohbox-runc)"
  exit 1
fi

# What the build says it can do, and what it does without sd-bus or systemd.
if [ "$(id -u)" = 0 ] && [ ! -d /run/systemd/system ]; then
  test_host_errors ()
  {
    assert_ok "$RUNC" features
    assert_jq "$out" ".linux.cgroup.systemd == $([ $sd_bus = 1 ] && echo true || echo false)"
    assert_exit 1 "$RUNC" --root "$T_WORK/state" --systemd-cgroup create --bundle /nonexistent c1
    if [ $sd_bus = 1 ]; then
      assert_contains "$err" "--systemd-cgroup: systemd does not run on this host (no /run/systemd/system)"
    else
      assert_contains "$err" "this ohbox-runc was built without sd-bus (libsystemd-dev"
    fi
    assert_gone "$T_WORK/state/c1"
  }
  run_test host-errors test_host_errors
else
  t_skip host-errors "needs root on a host where systemd is not PID 1"
fi

missing=
command -v qemu-system-x86_64 >/dev/null || missing="$missing qemu-system-x86"
ls /boot/vmlinuz-* >/dev/null 2>&1 || missing="$missing linux-image-amd64"
command -v cpio >/dev/null || missing="$missing cpio"
[ -x /bin/busybox ] || missing="$missing busybox-static"
[ -x /lib/systemd/systemd ] || missing="$missing systemd"
command -v jq >/dev/null || missing="$missing jq"
if [ $sd_bus = 0 ]; then
  t_skip guest "ohbox-runc is built without sd-bus (libsystemd-dev): nothing to run against systemd"
  exit 0
elif [ -n "$missing" ]; then
  t_skip guest "missing Debian packages:$missing (contrib/install-deps.sh installs them)"
  exit 0
fi

# ---------------------------------------------------------------- payload
. "$src/tests/guest/lib.sh"
payload=$T_TMP/payload
sysroot=$payload/sysroot
# bundle NAME JQ-FILTER: b-NAME/ with `ohbox-runc spec`'s config through FILTER.
bundle ()
{
  mkdir -p "$payload/b-$1" || return 1
  ln -s ../rootfs "$payload/b-$1/rootfs" || return 1
  jq ".process.terminal = false | .process.args = [\"sleep\", \"1000\"] | $2" "$T_TMP/spec/config.json" \
    >"$payload/b-$1/config.json"
}
make_payload ()
{
  GUEST_PACK_DLOPEN=no guest_pack_binary "$sysroot" "$RUNC" /usr/local/bin/ohbox-runc || return 1
  guest_pack_binary "$sysroot" /lib/systemd/systemd || return 1
  guest_pack_binary "$sysroot" "$(command -v systemctl)" /usr/bin/systemctl || return 1
  mkdir -p "$sysroot/etc/systemd/system" "$payload/rootfs/bin" "$T_TMP/spec" || return 1
  # Only the checks: no default dependencies (the guest has no targets).
  printf '[Unit]\nDefaultDependencies=no\n[Service]\nType=oneshot\nExecStart=/bin/sh /payload/checks.sh\n' \
    >"$sysroot/etc/systemd/system/ohbox-checks.service"
  cp /bin/busybox "$payload/rootfs/bin/busybox" || return 1
  local a
  for a in sh sleep cat; do
    ln -s busybox "$payload/rootfs/bin/$a" || return 1
  done
  "$RUNC" spec --bundle "$T_TMP/spec" || return 1
  bundle main '.linux.resources = {"memory": {"limit": 67108864}, "pids": {"limit": 32}}' &&
    bundle slice '.linux.cgroupsPath = "ohbox-a.slice:test:c2"' &&
    bundle run '.linux.cgroupsPath = ":ohbox:r1" | .process.args = ["cat", "/proc/self/cgroup", "/sys/fs/cgroup/cgroup.procs"]' &&
    bundle bad1 '.linux.cgroupsPath = "a/b"' && bundle bad2 '.linux.cgroupsPath = "notaslice:p:n"' || return 1
  cp "$src/tests/guest/runc-systemd-checks.sh" "$payload/checks.sh" || return 1
  # The guest's PID 1 after tests/guest/init: the packed programs over /,
  # then systemd, with the checks as its only unit.
  cat >"$payload/init" <<'EOF'
#!/bin/sh
cp -a /payload/sysroot/. / || exec /sbin/guest-exit 1
exec /lib/systemd/systemd --unit=ohbox-checks.service --log-level=warning --log-target=console --show-status=no
EOF
  chmod +x "$payload/init"
}
if ! make_payload >"$T_TMP/build.log" 2>&1; then
  t_fail build-payload "packing ohbox-runc, systemd or the bundles failed"
  sed 's/^/    | /' "$T_TMP/build.log" | tail -n 20
  exit 1
fi
t_pass build-payload
echo "# payload: $(du -sh "$payload" | cut -f1)"

# ---------------------------------------------------------------- boot
out=$T_TMP/guest.out
guest_run "$out" --timeout 180 "$payload" || exit 1
# Every check ran (a check that never printed is no pass).
guest_required guest-checks-passed "$out" guest/systemd-create-default guest/systemd-same-scope-other-root \
  guest/systemd-state-ps-pause-events guest/systemd-update-survives-reload guest/systemd-delete-leaves-nothing \
  guest/systemd-slice-prefix-name guest/systemd-run-foreground guest/systemd-bad-cgroups-path
