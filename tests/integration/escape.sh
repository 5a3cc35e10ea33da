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
#   runtime image), setuid_gains_nothing (sudo's way up, with no_new_privs
#   off by default as in Docker, stops at the sandbox's root).
# The network of runtime sandboxes (issue 14 item 1): runtime_not_on_host_net
#   (no options: the host's loopback services out of reach, the executor
#   published on the host's 127.0.0.1 only), runtime_host_net_loopback_only
#   (--network host: the executor binds the host's 127.0.0.1 only); the
#   rootless refusal of --network host is policy.sh's
#   rootless_runtime_host_network_refused. An image that only claims to be a
#   runtime image: build-push.sh's label_is_not_a_runtime_image.
# run-tests: lock=users
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

# ---------------------------------------------------------------- local users and the host

# static_helper NAME: builds tests/escape/NAME.c as a static program in
# $T_TMP (once) and prints its path.
static_helper ()
{
  local bin=$T_TMP/$1
  [ -e "$bin" ] || gcc -static -O1 -Wall -Wextra -Werror -o "$bin" "$OHBOX_SRCDIR/tests/escape/$1.c" >&2 ||
    skip "gcc -static failed (needs libc6-dev)"
  printf '%s' "$bin"
}

test_deep_writable_layer ()
{
  local deep
  deep=$(static_helper deep-dirs)
  pull "$BB"
  assert_ok ohbox run -d -v "$deep:/deep-dirs:ro" "$BB" sleep 600
  local id=$out
  trap "timeout 60 '$OHBOX_BIN' --root '$T_ROOT' rm -f $id >/dev/null 2>&1 || true" EXIT
  # Deeper than the open-files limit allows descriptors (the review's
  # 30 000 levels under a limit of 20 000; here 3 000 under 256, which is
  # quicker to make and remove on a loaded machine), and than PATH_MAX
  # allows a path ("d/" per level).
  assert_ok ohbox exec "$id" /deep-dirs /tmp/chain 3000
  ulimit -n 256
  assert_ok ohbox rm -f "$id"
  [ ! -e "$T_ROOT/sandboxes/$id" ] || _t_assert_fail "the writable layer is left"
  [ ! -e "$OHBOX_RUNROOT/$id" ] || _t_assert_fail "the sandbox's state is left"
  assert_ok ohbox check
  assert_contains "$out" "consistent"
}

# A file only root may read, whose content must never show up in a message.
secret_file ()
{
  echo topsecretword >"$T_WORK/secret"
  chmod 0600 "$T_WORK/secret"
}

test_save_planted_links ()
{
  pull "$BB"
  secret_file
  local target=$T_WORK/target dest
  mkdir -m 0777 "$target"
  # blobs/sha256 a link to elsewhere, in a directory another user made
  dest=$T_WORK/export-user
  mkdir -p "$dest/blobs" && ln -s "$target" "$dest/blobs/sha256" && chown -R -h 65534:65534 "$dest"
  assert_exit 2 ohbox save "$BB" "oci:$dest"
  assert_contains "$err" "uid 65534"
  # the same links in directories of root's own: never followed
  dest=$T_WORK/export-sha256
  mkdir -p "$dest/blobs" && ln -s "$target" "$dest/blobs/sha256"
  assert_exit 2 ohbox save "$BB" "oci:$dest"
  assert_contains "$err" "symbolic link"
  dest=$T_WORK/export-blobs
  mkdir -p "$dest" && ln -s "$target" "$dest/blobs"
  assert_exit 2 ohbox save "$BB" "oci:$dest"
  assert_contains "$err" "symbolic link"
  assert_eq "$(ls -A "$target")" "" "the directory the links name"
  # an index.json linked to a root-only file is neither read nor written through
  dest=$T_WORK/export-index
  mkdir -p "$dest" && ln -s "$T_WORK/secret" "$dest/index.json"
  assert_exit 2 ohbox save "$BB" "oci:$dest"
  assert_not_contains "$err" "topsecretword"
  assert_eq "$(cat "$T_WORK/secret")" "topsecretword" "the file the link names"
  # a directory of root's that others may write gets copies, not the
  # store's own files; one nobody else may write gets hard links
  dest=$T_WORK/export-shared
  mkdir -m 0777 "$dest"
  assert_ok ohbox save "$BB" "oci:$dest"
  assert_eq "$(find "$dest/blobs/sha256" -type f -links +1 | wc -l)" "0" "blobs shared with the store"
  dest=$T_WORK/export-own
  assert_ok ohbox save "$BB" "oci:$dest"
  [ "$(find "$dest/blobs/sha256" -type f -links +1 | wc -l)" -gt 0 ] || _t_assert_fail "no blob hard-linked"
  assert_ok ohbox load "oci:$T_WORK/export-shared" localhost/reloaded:latest
}

test_load_planted_files ()
{
  pull "$BB"
  secret_file
  local good=$T_WORK/good bad T_OHBOX_TIMEOUT=20
  assert_ok ohbox save "$BB" "oci:$good"
  ohbox rmi -f "$BB" >/dev/null
  # index.json a link to a root-only file: not followed, not echoed
  bad=$T_WORK/index-link
  cp -a "$good" "$bad" && ln -sf "$T_WORK/secret" "$bad/index.json"
  assert_exit 2 ohbox load "oci:$bad"
  assert_contains "$err" "symbolic link"
  assert_not_contains "$err" "topsecretword"
  # a FIFO as index.json or as a blob: refused at once, never waited on
  bad=$T_WORK/index-fifo
  cp -a "$good" "$bad" && rm "$bad/index.json" && mkfifo "$bad/index.json"
  assert_exit 2 ohbox load "oci:$bad"
  assert_contains "$err" "not a regular file"
  bad=$T_WORK/blob-fifo
  cp -a "$good" "$bad"
  local manifest
  manifest=$(jq -r '.manifests[0].digest' "$bad/index.json")
  rm "$bad/blobs/sha256/${manifest#sha256:}" && mkfifo "$bad/blobs/sha256/${manifest#sha256:}"
  assert_exit 2 ohbox load "oci:$bad"
  assert_contains "$err" "not a regular file"
  assert_ok ohbox load "oci:$good"
}

# Two local users of this test's own (removed by the test's EXIT trap),
# with homes in $USERS_DIR; as_user runs a command as one of them with the
# environment su, sudo -u, cron and CI runners give: no XDG_RUNTIME_DIR.
make_users ()
{
  USERS_DIR=$(mktemp -d /tmp/ohbox-escape-users.XXXXXX)
  USERS=$*
  USERS_CLEANUP=$USERS_DIR
  chmod 0755 "$USERS_DIR"
  local u
  for u in "$@"; do
    useradd -M -s /bin/sh "$u"
    mkdir -m 0700 "$USERS_DIR/$u"
    chown "$u:" "$USERS_DIR/$u"
  done
  trap users_cleanup EXIT
}

# Also removes whatever the test added to $USERS_CLEANUP.
users_cleanup ()
{
  local u
  for u in $USERS; do
    pkill -KILL -u "$u" 2>/dev/null || true
    userdel "$u" 2>/dev/null || true
  done
  # shellcheck disable=SC2086
  rm -rf $USERS_CLEANUP
}

as_user ()
{
  local u=$1
  shift
  echo "+ (as $u) $*" >&9
  timeout -k 5 60 setpriv --reuid="$u" --regid="$u" --init-groups --reset-env \
    env HOME="$USERS_DIR/$u" PATH=/usr/local/bin:/usr/bin:/bin "$@"
}

test_state_root_takeover ()
{
  local vic=ohbv$$ att=ohba$$ vuid fake
  make_users "$vic" "$att"
  vuid=$(id -u "$vic")
  USERS_CLEANUP="$USERS_CLEANUP /tmp/ohbox-run-$vuid /tmp/ohbox-$vuid"
  chmod 0755 "$USERS_DIR/$att"
  cp -r "$IMG_BUSYBOX" "$USERS_DIR/bb" && chmod -R a+rX "$USERS_DIR/bb"
  # The other user goes first: the directories in /tmp where the victim's
  # state and network state used to be, writable by all, one with a
  # sandbox of the attacker's making (its state.json chooses what `kill`
  # signals and where `action` sends), one a link to a directory of its own.
  fake=$(printf 'f%.0s' $(seq 64))
  as_user "$att" sh -c "mkdir -m 0777 /tmp/ohbox-run-$vuid /tmp/ohbox-run-$vuid/names /tmp/ohbox-run-$vuid/$fake &&
    ln -s $fake /tmp/ohbox-run-$vuid/names/planted &&
    echo '{\"id\":\"$fake\",\"name\":\"planted\",\"image\":\"x\",\"command\":[\"x\"],\"rm\":false}' \
      >/tmp/ohbox-run-$vuid/$fake/config.json &&
    echo '{\"status\":\"exited\",\"exit_code\":0}' >/tmp/ohbox-run-$vuid/$fake/state.json &&
    mkdir -m 0777 \$HOME/net && ln -s \$HOME /tmp/ohbox-$vuid"
  local before
  before=$(find /tmp/ohbox-run-$vuid "$USERS_DIR/$att" | sort)
  assert_ok as_user "$vic" "$OHBOX_BIN" load "oci:$USERS_DIR/bb:latest"
  assert_ok as_user "$vic" "$OHBOX_BIN" run --rm --network none localhost/bb:latest echo ran
  assert_contains "$out" "ran"
  assert_ok as_user "$vic" "$OHBOX_BIN" ps -a --format json
  assert_jq "$out" 'length == 0' "the victim's sandboxes"
  assert_eq "$(find /tmp/ohbox-run-$vuid "$USERS_DIR/$att" | sort)" "$before" "the attacker's directories"
  # the victim's state is in its home, its own and private
  assert_eq "$(stat -c '%U %a' "$USERS_DIR/$vic/.local/state/ohbox/run")" "$vic 700"
  # a state directory of another user's is refused, by name and through a link
  assert_exit 7 as_user "$vic" env OHBOX_RUNROOT=/tmp/ohbox-run-$vuid "$OHBOX_BIN" ps -a
  assert_contains "$err" "refusing \`/tmp/ohbox-run-$vuid\`"
  assert_contains "$err" "belongs to another user"
  assert_exit 7 as_user "$vic" env XDG_RUNTIME_DIR=/tmp/ohbox-$vuid "$OHBOX_BIN" ps -a
  assert_contains "$err" "belongs to another user"
  assert_eq "$(find /tmp/ohbox-run-$vuid "$USERS_DIR/$att" | sort)" "$before" "the attacker's directories"
}

# on_terminal [--raw] [--input TEXT] ohbox ARGS...: ohbox on a terminal of
# its own (tests/escape/on-terminal.py); sets $out to its JSON report.
on_terminal ()
{
  local opts=()
  while [ "${1#--}" != "$1" ]; do
    case $1 in
      --raw) opts+=("$1"); shift ;;
      --input | --after) opts+=("$1" "$2"); shift 2 ;;
    esac
  done
  shift # "ohbox"
  echo "+ (on a terminal) ohbox $*" >&9
  out=$(timeout -k 5 60 "$T_PY" "$OHBOX_SRCDIR/tests/escape/on-terminal.py" "${opts[@]}" \
    "$OHBOX_BIN" --root "$T_ROOT" "$@")
  echo "  $out" >&9
}

test_caller_terminal ()
{
  local probe
  probe=$(static_helper tiocsti)
  pull "$BB"
  # Without -t the command never holds the caller's terminal: it cannot
  # turn off its echo (with or without -i), nor push input into it.
  on_terminal ohbox run --rm "$BB" sh -c 'stty -echo <&1; stty -echo <&2; echo ran'
  assert_jq "$out" '.echo and .pending_input == 0 and (.output | contains("ran"))' "the caller's terminal"
  on_terminal ohbox run --rm -i "$BB" stty -echo
  assert_jq "$out" '.echo' "the caller's terminal after -i"
  on_terminal ohbox run --rm -v "$probe:/tiocsti:ro" "$BB" /tiocsti
  assert_jq "$out" '.echo and .pending_input == 0 and (.output | contains(" ok") | not)' "TIOCSTI"
  # What the terminal carries still arrives: input up to its EOF (^D),
  # exit codes, signals (^C), output byte for byte.
  on_terminal --input 'hello\n\x04' ohbox run --rm -i "$BB" sh -c 'cat; echo "cat=$?"'
  assert_jq "$out" '.status == 0 and (.output | test("hello\r\nhello\r\ncat=0"))' "stdin relayed to EOF"
  on_terminal ohbox run --rm "$BB" sh -c 'echo out; echo err >&2; exit 3'
  assert_jq "$out" '.status == 3 and (.output | contains("out")) and (.output | contains("err"))'
  on_terminal --input '\x03' --after started ohbox run --rm "$BB" sh -c 'echo started; exec sleep 30'
  assert_jq "$out" '.status == 130' "^C"
  on_terminal --raw ohbox run --rm "$BB" cat /bin/busybox
  assert_eq "$(jq -r .output <<<"$out" | xxd -r -p | sha256sum | cut -d' ' -f1)" \
    "$(ohbox run --rm "$BB" sha256sum /bin/busybox | cut -d' ' -f1)" "binary output"
  # exec too
  assert_ok ohbox run -d -v "$probe:/tiocsti:ro" "$BB" sleep 600
  local id=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $id >/dev/null 2>&1 || true" EXIT
  on_terminal ohbox exec "$id" sh -c 'stty -echo <&1; /tiocsti; echo ran'
  assert_jq "$out" '.echo and .pending_input == 0 and (.output | contains("ran")) and (.output | contains(" ok") | not)' \
    "the caller's terminal after exec"
  on_terminal --input 'hi\n\x04' ohbox exec -i "$id" cat
  assert_jq "$out" '.status == 0 and (.output | test("hi\r\nhi"))' "exec stdin relayed to EOF"
  assert_ok ohbox rm -f "$id"
}

test_init_cmdline ()
{
  pull "$BB"
  mkdir -p "$T_WORK/volume-source"
  # PID 1 is a copy of the host's ohbox: its command line (store, volumes)
  # and environment are not the sandbox's to read, with or without the
  # host's user namespace.
  local o
  for o in "" "--userns host"; do
    # shellcheck disable=SC2086
    assert_ok env OHBOX_ESCAPE_MARKER=host-secret-env "$OHBOX_BIN" --root "$T_ROOT" run --rm $o \
      -v "$T_WORK/volume-source:/vol" "$BB" sh -c 'tr "\0" " " </proc/1/cmdline; echo; cat /proc/1/environ 2>/dev/null | tr "\0" " "; echo; cat /proc/1/comm'
    assert_not_contains "$out" "$T_ROOT"
    assert_not_contains "$out" "volume-source"
    assert_not_contains "$out" "host-secret-env"
    assert_contains "$out" "ohbox-init"
  done
}

# sudo works as in Docker (no_new_privs off by default), so a setuid-root
# program inside is root -- of the sandbox only: root of its user namespace
# (uid 0 maps to a host id that is not 0), the default capabilities at most,
# the bounding set and the seccomp filter still in force, a host directory
# of host root's still closed to it. With no-new-privileges the bit gives
# nothing at all.
test_setuid_gains_nothing ()
{
  local probe
  probe=$(static_helper setuid-probe)
  pull "$BB"
  local hostdir=$T_WORK/root-owned
  mkdir -p -m 0755 "$hostdir"
  assert_ok ohbox run -d -v "$probe:/probe:ro" -v "$hostdir:/hostdir" "$BB" sleep 600
  local id=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $id >/dev/null 2>&1 || true" EXIT
  assert_ok ohbox exec "$id" sh -c 'cp /probe /bin/suprobe && chmod 4755 /bin/suprobe'
  assert_ok ohbox exec -u 1000 "$id" /bin/suprobe /hostdir/x
  local res=$out
  # the bit worked: effective root (before, no_new_privs ignored it)
  assert_contains "$res" "ids 1000 0"
  assert_contains "$res" "setresuid_0 ok"
  # ... of the user namespace only: 0 inside is no host root
  local inside outside count
  read -r _ inside outside count < <(grep '^uid_map ' <<<"$res" | head -n 1)
  assert_eq "$inside" 0
  [ "$outside" != 0 ] || _t_assert_fail "sandbox root is host root: $(grep uid_map <<<"$res")"
  # the default set at most, the filter in force, no_new_privs off
  assert_default_caps "$res" "the setuid program's capabilities"
  assert_match "$res" "Seccomp:[[:space:]]+2"
  assert_match "$res" "NoNewPrivs:[[:space:]]+0"
  assert_contains "$res" "unshare_user EPERM"
  assert_contains "$res" "mount_tmpfs EPERM"
  assert_contains "$res" "keyctl EPERM"
  assert_contains "$res" "create_/hostdir/x EACCES"
  [ ! -e "$hostdir/x" ] || _t_assert_fail "the setuid program created a file in host root's directory"
  ohbox rm -f "$id" >/dev/null
  # asked for by name, no_new_privs leaves the bit without effect
  assert_ok ohbox run -d --security-opt no-new-privileges -v "$probe:/probe:ro" "$BB" sleep 600
  id=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $id >/dev/null 2>&1 || true" EXIT
  assert_ok ohbox exec "$id" sh -c 'cp /probe /bin/suprobe && chmod 4755 /bin/suprobe'
  assert_ok ohbox exec -u 1000 "$id" /bin/suprobe
  assert_contains "$out" "ids 1000 1000"
  assert_contains "$out" "setresuid_0 EPERM"
  assert_match "$out" "NoNewPrivs:[[:space:]]+1"
  ohbox rm -f "$id" >/dev/null
}

test_id_ranges ()
{
  pull "$BB"
  local vol=$T_WORK/shared a b ma mb
  mkdir -m 1777 "$vol"
  assert_ok ohbox run -d -v "$vol:/vol" "$BB" sleep 600
  a=$out
  assert_ok ohbox run -d -v "$vol:/vol" "$BB" sleep 600
  b=$out
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $a $b >/dev/null 2>&1 || true" EXIT
  # Two sandboxes are never the same host user: disjoint uid and gid ranges
  local f
  for f in uid_map gid_map; do
    assert_ok ohbox exec "$a" cat "/proc/self/$f"
    ma=$out
    assert_ok ohbox exec "$b" cat "/proc/self/$f"
    mb=$out
    read -r _ sa ca <<<"$ma"
    read -r _ sb cb <<<"$mb"
    [ $((sa + ca)) -le "$sb" ] || [ $((sb + cb)) -le "$sa" ] || _t_assert_fail "$f ranges overlap: $ma / $mb"
  done
  # A file one's root made private on a volume both see is not the other's
  assert_ok ohbox exec "$a" sh -c 'echo private-to-a >/vol/a && chmod 0600 /vol/a && stat -c %u /vol/a'
  assert_eq "$out" "0" "the owner as its maker sees it"
  assert_ok ohbox exec "$b" sh -c 'stat -c %u /vol/a; cat /vol/a 2>/dev/null || echo refused'
  assert_eq "$out" "65534
refused" "the owner and content as the other sees them"
  # Each range is leased to its sandbox, and free again once it is removed
  local lease_a
  lease_a=$(find /run/ohbox/userns -lname "$OHBOX_RUNROOT/$a")
  [ -n "$lease_a" ] || _t_assert_fail "no lease of sandbox $a in /run/ohbox/userns"
  if ! grep -qE '^(root|0):' /etc/subuid /etc/subgid; then
    # the default pool: block N starts at 0x70000000 + N * 65536
    assert_eq "$((${lease_a##*/} * 65536 + 1879048192))" "$(read -r _ s _ <<<"$ma"; echo "$s")" "the leased block"
  fi
  assert_ok ohbox rm -f "$a" "$b"
  assert_eq "$(find /run/ohbox/userns -lname "$OHBOX_RUNROOT/$a" -o -lname "$OHBOX_RUNROOT/$b" | wc -l)" "0" \
    "leases left after rm"
}

test_storage_size ()
{
  pull "$BB"
  # A sandbox that writes past its --storage-size gets ENOSPC; the store's
  # filesystem gives its writable layer no more than that.
  assert_ok ohbox run -d --storage-size 32m "$BB" sleep 600
  local id=$out img
  trap "timeout 30 '$OHBOX_BIN' --root '$T_ROOT' rm -f $id >/dev/null 2>&1 || true" EXIT
  img=$T_ROOT/sandboxes/$id/upper.img
  assert_ok ohbox exec "$id" sh -c 'dd if=/dev/zero of=/fill bs=1M count=100 2>&1; echo "dd=$?"; df -k / | tail -n 1'
  assert_contains "$out" "No space left on device"
  assert_contains "$out" "dd=1"
  assert_eq "$(stat -c %s "$img")" "$((32 << 20))" "the writable layer's file"
  [ "$(du -k "$img" | cut -f1)" -le $((32 << 10)) ] || _t_assert_fail "the writable layer takes $(du -k "$img")"
  # the rest of the sandbox still works, and writes again once room is made
  assert_ok ohbox exec "$id" sh -c 'rm /fill && echo again >/again && cat /again'
  assert_eq "$out" "again"
  assert_ok ohbox rm -f "$id"
  [ ! -e "$img" ] || _t_assert_fail "the writable layer's file is left"
  assert_eq "$(losetup -j "$img" | wc -l)" "0" "loop devices left on it"
  assert_exit 125 ohbox run --rm --storage-size 1m "$BB" true
  assert_contains "$err" "at least 16 MiB"
  assert_exit 125 ohbox run --rm --storage-size lots "$BB" true
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
run_test deep_writable_layer test_deep_writable_layer
run_test save_planted_links test_save_planted_links
run_test load_planted_files test_load_planted_files
run_test state_root_takeover test_state_root_takeover
run_test caller_terminal test_caller_terminal
run_test init_cmdline test_init_cmdline
run_test id_ranges test_id_ranges
run_test setuid_gains_nothing test_setuid_gains_nothing
run_test storage_size test_storage_size
