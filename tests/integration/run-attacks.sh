#!/bin/bash
# run-attacks.sh: the attack shapes `ohbox run` must resist, each with an
# image built for it, and a long start/stop loop that must leak nothing
# (mounts, cgroups, processes, fds, state).
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

# Sandbox state of this script's stores lives in its temp dir (removed with it).
export OHBOX_RUNROOT=$T_TMP/run

# A host directory the evil image's symlinks point at.
HOSTDIR=$T_TMP/hostdir

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups)"; return 1; }
  img_build || return 1
  mkdir -p "$HOSTDIR/dev" "$HOSTDIR/mnt" || return 1
  echo "evil:x:4242:4242:evil:/:/bin/sh" >"$HOSTDIR/passwd"
  # The busybox layers plus one with symlinks to host paths.
  EVIL=$T_TMP/evil
  cp -r "$IMG_BUSYBOX" "$EVIL" || return 1
  local r3=$T_TMP/rootfs3
  mkdir -p "$r3/etc" "$r3/opt" || return 1
  # the host paths the links name also exist inside the image: resolved
  # in-root, the links lead there, never to the host's
  mkdir -p "$r3$HOSTDIR/dev" "$r3$HOSTDIR/mnt" || return 1
  ln -s "../../../../../../../../$HOSTDIR/dev" "$r3/dev"
  ln -s "$HOSTDIR/mnt" "$r3/opt/target"
  ln -s "$HOSTDIR/passwd" "$r3/etc/passwd"
  img_add_layer "$EVIL" "$r3" gzip || return 1
  local d3 man
  d3=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  man=$(jq -c '.' "$EVIL/blobs/sha256/${IMG_BB_MANIFEST#sha256:}") || return 1
  img_add_image "$EVIL" amd64 "" evil "$(jq -c --argjson d "$d3" '.layers + [$d]' <<<"$man")" \
    "[\"$IMG_BB_DIFF1\",\"$IMG_BB_DIFF2\",\"$LAYER_DIFF\"]" || return 1
  img_set_refs "$EVIL" "latest=$(_img_desc "$IMG_OCI_MANIFEST" "$MANIFEST_DIGEST" "$MANIFEST_SIZE" amd64)"
}
t_setup_or_die setup setup

BB=localhost/busybox:latest

load_images ()
{
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  ohbox load "oci:$EVIL:latest" evil:latest >/dev/null 2>&1 || ohbox load "oci:$EVIL:latest" >/dev/null
  EVIL_ID=$(ohbox images --format json | jq -r '.[] | select(.names | any(test("evil"))) | .id' | head -1)
  [ -n "$EVIL_ID" ] || EVIL_ID=$(ohbox images -q 2>/dev/null | head -1)
}

host_mounts_under ()
{
  grep -c " $1" /proc/self/mountinfo || true
}

test_mount_target_symlink ()
{
  load_images
  mkdir -p "$T_WORK/vol"
  echo secret >"$T_WORK/vol/file"
  # /opt/target -> $HOSTDIR/mnt on the host: the volume lands inside the rootfs
  assert_ok ohbox run --rm -v "$T_WORK/vol:/opt/target:ro" "$EVIL_ID" cat /opt/target/file
  assert_eq "$out" "secret"
  assert_eq "$(host_mounts_under "$HOSTDIR")" "0" "host mounts under $HOSTDIR"
  assert_eq "$(ls -A "$HOSTDIR/mnt")" "" "host directory the symlink names"
  assert_ok ohbox run --rm --tmpfs /opt/target "$EVIL_ID" sh -c 'touch /opt/target/x && echo ok'
  assert_eq "$(ls -A "$HOSTDIR/mnt")" ""
}

test_dev_symlink ()
{
  load_images
  # /dev -> ../../..$HOSTDIR/dev: /dev is set up inside the rootfs
  assert_ok ohbox run --rm "$EVIL_ID" sh -c 'echo x > /dev/null && ls /dev/null /dev/zero && echo ok'
  assert_contains "$out" "ok"
  assert_eq "$(ls -A "$HOSTDIR/dev")" "" "host dir the image's /dev names"
  assert_eq "$(host_mounts_under "$HOSTDIR")" "0"
}

test_dangling_target ()
{
  load_images
  # a target whose symlink leads nowhere inside the rootfs is refused
  assert_exit 125 ohbox run --rm -v "$T_WORK:/etc/passwd/x" "$EVIL_ID" true
  assert_eq "$(host_mounts_under "$HOSTDIR")" "0"
}

test_passwd_symlink ()
{
  load_images
  # /etc/passwd -> $HOSTDIR/passwd (which has "evil"): resolved in-root, the
  # link points at nothing inside the rootfs (CVE-2024-9676 shape)
  assert_exit 125 ohbox run --rm -u evil "$EVIL_ID" id
  assert_contains "$err" "not found"
  assert_ok ohbox run --rm -u 4242 "$EVIL_ID" id -u
  assert_eq "$out" "4242"
}

test_cwd_leaked_fd ()
{
  load_images
  # CVE-2024-21626 shape: a working directory through a runtime fd
  local n
  for n in 3 4 5 6 7 8 9 10; do
    assert_exit 125 ohbox run --rm -w "/proc/self/fd/$n" "$BB" pwd
  done
  # no fd of the runtime reaches the command
  # (ls itself: its stdio and the directory it reads, fd 3)
  assert_ok ohbox run --rm "$BB" ls /proc/self/fd
  assert_eq "$(echo $out)" "0 1 2 3"
}

test_proc_exe_overwrite ()
{
  load_images
  local before after
  before=$(sha256sum "$OHBOX_BIN" | cut -d' ' -f1)
  # CVE-2019-5736 shape: PID 1 runs the runtime's binary; it is not dumpable,
  # so /proc/1/exe cannot be opened, even by root sharing the host's userns
  assert_ok ohbox run --rm --userns host "$BB" sh -c '
    (echo x >> /proc/1/exe) 2>/dev/null && echo WROTE1
    (cat /proc/1/exe > /dev/null) 2>/dev/null && echo READ1
    readlink /proc/1/exe 2>/dev/null && echo LINK1
    for fd in /proc/1/fd/*; do (echo x >> $fd) 2>/dev/null && echo WROTEFD; done
    echo done'
  assert_eq "$out" "done"
  assert_ok ohbox run --rm "$BB" sh -c '(echo x >> /proc/1/exe) 2>/dev/null && echo WROTE; echo done'
  assert_eq "$out" "done"
  after=$(sha256sum "$OHBOX_BIN" | cut -d' ' -f1)
  assert_eq "$after" "$before" "the runtime binary"
}

# What sandboxes of this test's store leave on the host (only theirs: other
# programs on the machine come and go): mounts naming the test's paths,
# cgroup directories of ids this store knows, processes of this store's
# runtime, state and writable-layer directories.
leak_snapshot ()
{
  local mounts cg procs state upper
  mounts=$(grep -c "$T_TMP" /proc/self/mountinfo || true)
  # Cgroups of the ids this test started (in $T_TMP/ids): other ohbox users
  # on the machine create and remove theirs meanwhile.
  # (grep exits 1 when no line matches: not a failure here.)
  touch "$T_TMP/ids"
  cg=$(find /sys/fs/cgroup -maxdepth 3 -path '*/ohbox/*' -type d 2>/dev/null |
    { grep -F -f "$T_TMP/ids" || true; } | wc -l)
  procs=$(pgrep -c -f -- "--root $T_ROOT " || true)
  state=$(ls -A "$STATE_ROOT" 2>/dev/null | grep -cv '^names$\|^seccomp-cache$' || true)
  upper=$(ls -A "$T_ROOT/sandboxes" 2>/dev/null | wc -l)
  echo "mounts=$mounts cgroups=$cg procs=$procs state=$state sandboxes=$upper"
}

test_start_stop_loop ()
{
  load_images
  local n=${OHBOX_RUN_CYCLES:-200} i id before after keeper mon fds_before fds_after
  # a long-lived sandbox whose monitor's fds must not grow meanwhile
  assert_ok ohbox run -d "$BB" sleep 600
  keeper=$out
  assert_ok ohbox ps --format json
  mon=$(ps -o ppid= -p "$(jq '.[0].pid' <<<"$out")" | tr -d ' ')
  fds_before=$(ls /proc/$mon/fd | wc -l)
  STATE_ROOT=$OHBOX_RUNROOT
  before=$(leak_snapshot)
  for i in $(seq "$n"); do
    id=$("$OHBOX_BIN" --root "$T_ROOT" run -d "$BB" sleep 600) || t_fail "run $i failed"
    echo "$id" >>"$T_TMP/ids"
    if [ $((i % 2)) = 0 ]; then
      "$OHBOX_BIN" --root "$T_ROOT" rm -f "$id" >/dev/null || t_fail "rm -f $i failed"
    else
      "$OHBOX_BIN" --root "$T_ROOT" stop -t 0 "$id" >/dev/null || t_fail "stop $i failed"
      "$OHBOX_BIN" --root "$T_ROOT" rm "$id" >/dev/null || t_fail "rm $i failed"
    fi
  done
  # and foreground --rm runs, some killed by a signal
  for i in $(seq 20); do
    "$OHBOX_BIN" --root "$T_ROOT" run --rm "$BB" sh -c 'kill -9 $$' && t_fail "exit 0 from a killed command"
  done
  after=$(leak_snapshot)
  fds_after=$(ls /proc/$mon/fd | wc -l)
  assert_eq "$after" "$before" "host resources after $n cycles"
  assert_eq "$fds_after" "$fds_before" "fds of a running sandbox's monitor"
  assert_ok ohbox rm -f "$keeper"
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

run_test mount_target_symlink test_mount_target_symlink
run_test dev_symlink test_dev_symlink
run_test dangling_target test_dangling_target
run_test passwd_symlink test_passwd_symlink
run_test cwd_leaked_fd test_cwd_leaked_fd
run_test proc_exe_overwrite test_proc_exe_overwrite
run_test start_stop_loop test_start_stop_loop
