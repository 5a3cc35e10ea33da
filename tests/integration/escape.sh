#!/bin/bash
# escape.sh: every attack shape against ohbox in one place, one named test
# each, through the real CLI; each must be refused and leave the host as it
# was. tests/escape/README.md lists them with their CVEs.
#
# Layers (layer_*): hostile single-layer images built by
#   tests/escape/evil-layers.py, pushed to a test registry and pulled; the
#   entries aim at $OUT (a host directory with a sentinel file): path
#   traversal (../, absolute), symlink then entries through it, hardlinks out,
#   entries naming the layer root, whiteouts that traverse, and links that a
#   later entry replaces (never written through). Refused pulls exit 6 and
#   name the entry; $OUT is byte for byte unchanged after every case.
# Run time (an image whose symlinks name host paths, pushed and pulled):
#   mount_target_symlink (CVE-2021-30465 shape), dev_symlink,
#   dangling_target, passwd_symlink (CVE-2024-9676), cwd_leaked_fd and
#   fds_inside (CVE-2024-21626), proc_exe_overwrite (CVE-2019-5736),
#   proc_sys_write and sysrq_trigger, masked_paths, ptrace_host (the static
#   prober of seccomp.sh), zip_slip (the executor's /upload_file inside a
#   runtime image).
# The network of runtime sandboxes (issue 14 item 1): runtime_not_on_host_net
#   (no options: the host's loopback services out of reach, the executor
#   published on the host's 127.0.0.1 only), runtime_host_net_loopback_only
#   (--network host: the executor binds the host's 127.0.0.1 only); the
#   rootless refusal of --network host is policy.sh's
#   rootless_runtime_host_network_refused. An image that only claims to be a
#   runtime image: build-push.sh's label_is_not_a_runtime_image.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run
export OHBOX_EXECUTOR=$OHBOX_BUILDDIR/ohbox-executor
export OHBOX_EXECUTOR_SRCDIR=$OHBOX_SRCDIR/executor
OUT=$T_TMP/outside
HOSTDIR=$T_TMP/hostdir
PROBE=$T_TMP/seccomp-probe

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups)"; return 1; }
  img_build || return 1
  reg_start http REG || return 1
  # The target of the layer attacks.
  mkdir -p "$OUT" && echo sentinel >"$OUT/sentinel" && chmod 0644 "$OUT/sentinel" && chmod 0755 "$OUT" || return 1
  /usr/bin/python3 "$OHBOX_SRCDIR/tests/escape/evil-layers.py" "$REG_URL" "$OUT" >"$T_TMP/layer-cases" || return 1
  # The busybox layers plus one with symlinks to host paths (which also
  # exist inside the image: resolved in-root, the links lead there).
  mkdir -p "$HOSTDIR/dev" "$HOSTDIR/mnt" || return 1
  echo "evil:x:4242:4242:evil:/:/bin/sh" >"$HOSTDIR/passwd"
  local evil=$T_TMP/evil r3=$T_TMP/rootfs3 d3 man
  cp -r "$IMG_BUSYBOX" "$evil" || return 1
  mkdir -p "$r3/etc" "$r3/opt" "$r3$HOSTDIR/dev" "$r3$HOSTDIR/mnt" || return 1
  ln -s "../../../../../../../../$HOSTDIR/dev" "$r3/dev"
  ln -s "$HOSTDIR/mnt" "$r3/opt/target"
  ln -s "$HOSTDIR/passwd" "$r3/etc/passwd"
  img_add_layer "$evil" "$r3" gzip || return 1
  d3=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  man=$(jq -c '.' "$evil/blobs/sha256/${IMG_BB_MANIFEST#sha256:}") || return 1
  img_add_image "$evil" amd64 "" evil "$(jq -c --argjson d "$d3" '.layers + [$d]' <<<"$man")" \
    "[\"$IMG_BB_DIFF1\",\"$IMG_BB_DIFF2\",\"$LAYER_DIFF\"]" || return 1
  img_set_refs "$evil" "latest=$(_img_desc "$IMG_OCI_MANIFEST" "$MANIFEST_DIGEST" "$MANIFEST_SIZE" amd64)" || return 1
  img_push REG "oci:$evil:latest" escape/evil:latest || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
}
t_setup_or_die setup setup

BB=$REG_HOST/test/busybox:latest
EVIL=$REG_HOST/escape/evil:latest

pull ()
{
  ohbox pull --tls-verify=false -q "$1" >/dev/null
}

# The outside directory, every attribute that an escape could change.
outside_state ()
{
  find "$OUT" -printf '%p %y %m %s %U:%G %l\n' | LC_ALL=C sort
  sha256sum "$OUT/sentinel"
}
OUTSIDE_BEFORE=$(outside_state)

host_mounts_under ()
{
  grep -c " $1" /proc/self/mountinfo || true
}

# ---------------------------------------------------------------- layers

# test_layer NAME EXPECT TEXT DIFFID
test_layer ()
{
  local name=$1 expect=$2 text=$3 diff=$4
  if [ "$expect" = refuse ]; then
    assert_exit 6 ohbox pull --tls-verify=false "$REG_HOST/escape/$name:latest"
    assert_contains "$err" "$text"
    assert_contains "$err" "layer entry"
    assert_eq "$(ls -A "$T_ROOT/layers/sha256" 2>/dev/null)" "" "unpacked layers after a refused pull"
  else
    assert_ok ohbox pull --tls-verify=false "$REG_HOST/escape/$name:latest"
    local dir path what
    dir=$(t_layer_path "$diff")
    path=${text%%=*} what=${text#*=}
    case $what in
      file:*)
        [ -f "$dir/$path" ] && [ ! -L "$dir/$path" ] || _t_assert_fail "$path is not a regular file in the layer"
        assert_eq "$(cat "$dir/$path")" "${what#file:}"
        ;;
      link:*) assert_eq "$(readlink "$dir/$path")" "${what#link:}" ;;
      dir) [ -d "$dir/$path" ] && [ ! -L "$dir/$path" ] || _t_assert_fail "$path is not a directory in the layer" ;;
    esac
  fi
  assert_eq "$(outside_state)" "$OUTSIDE_BEFORE" "the directory the layer aims at"
}

while IFS='|' read -r name expect text diff; do
  run_test "layer_$name" test_layer "$name" "$expect" "$text" "$diff"
done <"$T_TMP/layer-cases"

# ---------------------------------------------------------------- run time

test_mount_target_symlink ()
{
  pull "$EVIL"
  mkdir -p "$T_WORK/vol"
  echo secret >"$T_WORK/vol/file"
  # /opt/target -> $HOSTDIR/mnt on the host: the volume lands inside the rootfs
  assert_ok ohbox run --rm -v "$T_WORK/vol:/opt/target:ro" "$EVIL" cat /opt/target/file
  assert_eq "$out" "secret"
  assert_eq "$(host_mounts_under "$HOSTDIR")" "0" "host mounts under $HOSTDIR"
  assert_eq "$(ls -A "$HOSTDIR/mnt")" "" "host directory the symlink names"
  assert_ok ohbox run --rm --tmpfs /opt/target "$EVIL" sh -c 'touch /opt/target/x && echo ok'
  assert_eq "$(ls -A "$HOSTDIR/mnt")" ""
}

test_dev_symlink ()
{
  pull "$EVIL"
  # /dev -> ../../..$HOSTDIR/dev: /dev is set up inside the rootfs
  assert_ok ohbox run --rm "$EVIL" sh -c 'echo x > /dev/null && ls /dev/null /dev/zero && echo ok'
  assert_contains "$out" "ok"
  assert_eq "$(ls -A "$HOSTDIR/dev")" "" "host dir the image's /dev names"
  assert_eq "$(host_mounts_under "$HOSTDIR")" "0"
}

test_dangling_target ()
{
  pull "$EVIL"
  # a target whose symlink leads nowhere inside the rootfs is refused
  assert_exit 125 ohbox run --rm -v "$T_WORK:/etc/passwd/x" "$EVIL" true
  assert_eq "$(host_mounts_under "$HOSTDIR")" "0"
}

test_passwd_symlink ()
{
  pull "$EVIL"
  # /etc/passwd -> $HOSTDIR/passwd (which has "evil"): resolved in-root, the
  # link points at nothing inside the rootfs (CVE-2024-9676 shape)
  assert_exit 125 ohbox run --rm -u evil "$EVIL" id
  assert_contains "$err" "not found"
  assert_ok ohbox run --rm -u 4242 "$EVIL" id -u
  assert_eq "$out" "4242"
}

test_cwd_leaked_fd ()
{
  pull "$BB"
  # CVE-2024-21626 shape: a working directory through a runtime fd
  local n
  for n in 3 4 5 6 7 8 9 10; do
    assert_exit 125 ohbox run --rm -w "/proc/self/fd/$n" "$BB" pwd
  done
}

test_fds_inside ()
{
  pull "$BB"
  # No fd of the runtime reaches the command: ls sees its stdio and the
  # directory it reads (3), nothing else; the same through exec.
  assert_ok ohbox run --rm "$BB" ls /proc/self/fd
  assert_eq "$(echo $out)" "0 1 2 3"
  # Nor can it reach the fds of PID 1 (the runtime).
  assert_ok ohbox run --rm "$BB" sh -c 'ls /proc/1/fd >/dev/null 2>&1 && echo LISTED; echo done'
  assert_eq "$out" "done"
  assert_ok ohbox run -d "$BB" sleep 600
  local id=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $id >/dev/null 2>&1 || true" EXIT
  assert_ok ohbox exec "$id" ls /proc/self/fd
  assert_eq "$(echo $out)" "0 1 2 3"
  assert_ok ohbox rm -f "$id"
}

test_proc_exe_overwrite ()
{
  pull "$BB"
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

test_proc_sys_write ()
{
  pull "$BB"
  local files before f
  # (kernels differ in which of these they have)
  files=$(cd /proc/sys && for f in kernel/domainname kernel/core_pattern kernel/sysrq kernel/modprobe \
    kernel/pid_max vm/overcommit_memory; do [ -r "$f" ] && printf '%s ' "$f"; done || true)
  before=$(for f in $files; do cat "/proc/sys/$f"; done | sha256sum)
  # /proc/sys is read-only (kernel.domainname is namespaced, the others are
  # host-wide), even for root sharing the host's user namespace. Each file
  # gets its own value written back: nothing would change even if a write
  # went through, and the test still sees that it did.
  local o
  for o in "" "--userns host"; do
    # shellcheck disable=SC2086
    assert_ok ohbox run --rm $o "$BB" sh -c '
      for f in '"$files"'; do
        (cat /proc/sys/$f > /proc/sys/$f) 2>/dev/null && echo WROTE $f
      done
      (echo h > /proc/sysrq-trigger) 2>/dev/null && echo WROTE sysrq-trigger
      mount -o remount,rw /proc/sys 2>/dev/null && echo REMOUNTED
      echo done'
    assert_eq "$out" "done"
  done
  assert_eq "$(for f in $files; do cat "/proc/sys/$f"; done | sha256sum)" "$before" "host sysctls"
}

test_masked_paths ()
{
  pull "$BB"
  # Masked: empty (a null device or an empty read-only tmpfs), not the
  # host's kernel memory, keys, timers or firmware.
  assert_ok ohbox run --rm --userns host "$BB" sh -c '
    for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/latency_stats /proc/interrupts; do
      [ -e $f ] || continue
      n=$(head -c 4096 $f 2>/dev/null | wc -c)
      [ "$n" = 0 ] || echo "READ $f $n"
    done
    for d in /proc/acpi /proc/scsi /sys/firmware /proc/asound; do
      [ -d $d ] || continue
      [ -z "$(ls -A $d)" ] || echo "LISTED $d"
      (touch $d/x) 2>/dev/null && echo "WROTE $d"
    done
    echo done'
  assert_eq "$out" "done"
}

test_ptrace_host ()
{
  [ -e "$PROBE" ] || gcc -static -O1 -Wall -Wextra -Werror -pthread -I"$OHBOX_BUILDDIR" -o "$PROBE" \
    "$OHBOX_SRCDIR/tests/escape/seccomp-probe.c" || skip "gcc -static failed (needs libc6-dev)"
  pull "$BB"
  t_start "$T_WORK/host-process.log" sleep 600
  local host=$T_PID
  # A host process is not in the sandbox's PID namespace (ESRCH), the
  # sandbox's PID 1 is the runtime (not dumpable: EPERM); with the host's
  # user namespace too.
  local o
  for o in "" "--userns host"; do
    # shellcheck disable=SC2086
    assert_ok ohbox run --rm $o -v "$PROBE:/probe:ro" "$BB" /probe "$host" ptrace_host process_vm_readv_host \
      ptrace_init process_vm_readv_init
    assert_eq "$(echo $out)" \
      "ptrace_host ESRCH process_vm_readv_host ESRCH ptrace_init EPERM process_vm_readv_init EPERM"
  done
  assert_eq "$(awk '/^TracerPid:/ {print $2}' "/proc/$host/status")" 0 "tracer of the host process"
}

test_zip_slip ()
{
  [ -x "$OHBOX_EXECUTOR" ] || skip "ohbox-executor is not built"
  [ -x /bin/bash-static ] || skip "bash-static is not installed (apt-get install bash-static)"
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  assert_ok ohbox build --no-pull --format json localhost/busybox:latest
  local image port url
  image=$(jq -r .image <<<"$out")
  port=$(t_free_port)
  assert_ok ohbox run -d --rm --executor-port "$port" -e SESSION_API_KEY=k "$image"
  local sid=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $sid >/dev/null 2>&1 || true" EXIT
  url=http://127.0.0.1:$port
  t_wait_until 10 curl -sf "$url/alive" >/dev/null
  # A symlink in the destination that leads out of it.
  curl -sf -X POST -H 'X-Session-API-Key: k' "$url/execute_action" \
    -d '{"action": {"action": "run", "args": {"command": "mkdir -p /workspace/dst && ln -s /etc /workspace/dst/link"}, "timeout": 30}}' \
    >/dev/null
  local bad code
  for bad in ../escaped /workspace/escaped ok/../../escaped link/escaped link/../../escaped; do
    /usr/bin/python3 -c 'import io, sys, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("fine.txt", "fine")
    z.writestr(sys.argv[1], "evil")
sys.stdout.buffer.write(buf.getvalue())' "$bad" >"$T_WORK/evil.zip"
    code=$(curl -s -o "$T_WORK/reply" -w '%{http_code}' -H 'X-Session-API-Key: k' \
      -F "file=@$T_WORK/evil.zip;filename=evil.zip" "$url/upload_file?destination=/workspace/dst&recursive=true")
    [ "$code" = 400 ] || [ "$code" = 500 ] || _t_assert_fail "zip entry $bad: HTTP $code: $(cat "$T_WORK/reply")"
  done
  # A symlink entry, then a file through it: links are not unpacked.
  /usr/bin/python3 -c 'import io, sys, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    i = zipfile.ZipInfo("sl")
    i.external_attr = (0o120777 << 16)
    z.writestr(i, "/etc")
    z.writestr("sl/escaped", "evil")
sys.stdout.buffer.write(buf.getvalue())' >"$T_WORK/link.zip"
  code=$(curl -s -o "$T_WORK/reply" -w '%{http_code}' -H 'X-Session-API-Key: k' \
    -F "file=@$T_WORK/link.zip;filename=link.zip" "$url/upload_file?destination=/workspace/dst2&recursive=true")
  echo "# symlink zip: HTTP $code $(cat "$T_WORK/reply")" >&9
  # Nothing landed outside the destinations (a refused zip may have left
  # the entries before the refused one inside it), and no link was made.
  local o
  o=$(curl -sf -X POST -H 'X-Session-API-Key: k' "$url/execute_action" \
    -d '{"action": {"action": "run", "args": {"command": "ls -d /workspace/escaped /workspace/dst/escaped /etc/escaped /escaped /workspace/dst2/escaped 2>/dev/null; find / -xdev -name escaped ! -path /workspace/dst2/sl/escaped 2>/dev/null; find /workspace -type l ! -path /workspace/dst/link"}, "timeout": 30}}')
  assert_jq "$o" '.content == "" and .extras.metadata.exit_code == 0' "what the uploads left"
  assert_ok ohbox stop "$sid"
}

# The runtime image of busybox in this test's store: $RT.
runtime_image ()
{
  [ -x "$OHBOX_EXECUTOR" ] || skip "ohbox-executor is not built"
  [ -x /bin/bash-static ] || skip "bash-static is not installed (apt-get install bash-static)"
  ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null
  assert_ok ohbox build --no-pull -q localhost/busybox:latest
  RT=$out
}

# run_action URL KEY COMMAND: the `run` observation's content.
run_action ()
{
  curl -sf -m 30 -X POST -H "X-Session-API-Key: $2" -H 'Content-Type: application/json' "$1/execute_action" \
    -d "$(jq -cn --arg c "$3" '{action: {action: "run", args: {command: $c}, timeout: 20}}')" | jq -r .content
}

# A runtime sandbox started the usual way (no options) is not on the host's
# network: agent code in it cannot read a service bound to the host's
# 127.0.0.1 nor see the host's interfaces, and its executor is reachable
# from the host on 127.0.0.1 only (not on the host's other addresses).
# Before the fix it ran on the host's network with the executor on *:PORT.
test_runtime_not_on_host_net ()
{
  runtime_image
  local web=$T_WORK/web port secret=secret$RANDOM$RANDOM
  mkdir -p "$web"
  echo "$secret" >"$web/secret"
  port=$(t_free_port)
  t_start "$T_WORK/web.log" "$T_PY" -m http.server --bind 127.0.0.1 --directory "$web" "$port"
  t_wait_port "$port"
  assert_ok curl -sf "http://127.0.0.1:$port/secret"
  assert_ok ohbox run -d --rm -e SESSION_API_KEY=k "$RT"
  local sid=$out url hp
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $sid >/dev/null 2>&1 || true" EXIT
  url=$(sed -n 's/^ohbox run: executor at \([^,]*\), .*/\1/p' <<<"$err")
  assert_match "$url" '^http://127\.0\.0\.1:[0-9]+$'
  hp=${url##*:}
  t_wait_until 10 curl -sf -m 1 -o /dev/null "$url/alive"
  local o
  # (busybox nc: its static wget dies on connecting.)
  o=$(run_action "$url" k "printf 'GET /secret HTTP/1.0\\r\\n\\r\\n' | nc -w 3 127.0.0.1 $port 2>&1")
  assert_not_contains "$o" "$secret" "the host's loopback service read from the sandbox"
  assert_contains "$o" "can't connect" "nc from the sandbox to the host's loopback service"
  assert_eq "$(run_action "$url" k "ls /sys/class/net | tr '\n' ,")" "eth0,lo," "the sandbox's interfaces"
  # The executor's host port answers on 127.0.0.1 only: not on another
  # loopback address, nor on the host's address on the bridge; nothing
  # listens on the host for it at all (the port is reserved, DNAT'ed).
  assert_fails curl -sf -m 2 -o /dev/null "http://127.0.0.2:$hp/alive"
  local gw
  gw=$(jq -r .gateway "$OHBOX_RUNROOT/$sid/network.json")
  assert_fails curl -sf -m 2 -o /dev/null "http://$gw:$hp/alive"
  assert_eq "$(ss -Hltn "sport = :$hp" | wc -l)" 0 "listeners on the host's port $hp"
  assert_ok ohbox stop "$sid"
}

# --network host for a runtime image (asked for, warned about): the
# executor binds the host's 127.0.0.1 and nothing else. Before the fix it
# listened on every address of the host.
test_runtime_host_net_loopback_only ()
{
  runtime_image
  local port
  port=$(t_free_port)
  assert_ok ohbox run -d --rm --network host --executor-port "$port" -e SESSION_API_KEY=k "$RT"
  local sid=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $sid >/dev/null 2>&1 || true" EXIT
  assert_contains "$err" "warning: --network host: the runtime sandbox shares the host's network"
  assert_contains "$err" "executor at http://127.0.0.1:$port, session API key k"
  t_wait_until 10 curl -sf -m 1 -o /dev/null "http://127.0.0.1:$port/alive"
  assert_eq "$(ss -Hltn "sport = :$port" | awk '{print $4}' | tr '\n' ' ')" "127.0.0.1:$port " \
    "the executor's listening sockets"
  assert_fails curl -sf -m 2 -o /dev/null "http://127.0.0.2:$port/alive"
  assert_ok ohbox stop "$sid"
}

run_test mount_target_symlink test_mount_target_symlink
run_test dev_symlink test_dev_symlink
run_test dangling_target test_dangling_target
run_test passwd_symlink test_passwd_symlink
run_test cwd_leaked_fd test_cwd_leaked_fd
run_test fds_inside test_fds_inside
run_test proc_exe_overwrite test_proc_exe_overwrite
run_test proc_sys_write test_proc_sys_write
run_test masked_paths test_masked_paths
run_test ptrace_host test_ptrace_host
run_test zip_slip test_zip_slip
run_test runtime_not_on_host_net test_runtime_not_on_host_net
run_test runtime_host_net_loopback_only test_runtime_host_net_loopback_only
