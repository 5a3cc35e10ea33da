#!/bin/bash
# devices.sh: devices in sandboxes through the real CLI, as root.
#   - CDI specs in JSON and YAML (folders given with --cdi-spec-dir): device
#     nodes that exist everywhere (/dev/zero, /dev/full) under other names,
#     their owner and mode, environment, mounts, additional groups, =all;
#   - errors: an unknown device, a malformed spec (file and field named), a
#     device two specs define, a missing NVIDIA driver;
#   - access limited to the devices given: a node bound by hand (a volume)
#     cannot be opened, a device given read-only cannot be opened for
#     writing (the device cgroup), a sandbox without --device has only the
#     standard nodes;
#   - `--device HOSTPATH[:CTRPATH][:rwm]`;
#   - --gpus against a fake NVIDIA installation made in a private mount
#     namespace: /dev/nvidia* nodes made from other character devices'
#     numbers, /proc/driver/nvidia/gpus, stub driver libraries registered in
#     a test linker cache, a stub nvidia-smi linked against them that finds
#     them inside through the sandbox's own linker cache (Debian image:
#     OHBOX_TEST_DEBIAN=1 or a cached one); all, N, device=INDEX,
#     device=UUID, an index that does not exist, a CDI spec of
#     nvidia.com/gpu preferred when there is one.
# Rootless CDI devices are in rootless.sh.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"

# A folder of CDI specs: test.ohbox/card in JSON (two devices, spec-level
# env, a mount, a group), test.ohbox/gauge in YAML.
make_specs ()
{
  SPECS=$T_WORK/cdi
  mkdir -p "$SPECS" "$T_WORK/share"
  echo "card firmware" >"$T_WORK/share/firmware"
  cat >"$SPECS/card.json" <<EOF
{
  "cdiVersion": "0.7.0",
  "kind": "test.ohbox/card",
  "containerEdits": { "env": ["CARD_DRIVER=7"], "additionalGids": [4242] },
  "devices": [
    { "name": "c0", "containerEdits": {
        "env": ["CARD=0"],
        "deviceNodes": [ { "path": "/dev/card0", "hostPath": "/dev/zero", "fileMode": 416, "uid": 1000, "gid": 44 } ],
        "mounts": [ { "hostPath": "$T_WORK/share", "containerPath": "/opt/card", "options": ["ro", "bind"] } ] } },
    { "name": "c1", "containerEdits": {
        "deviceNodes": [ { "path": "/dev/card1", "hostPath": "/dev/full", "permissions": "rw" } ] } }
  ]
}
EOF
  cat >"$SPECS/gauge.yaml" <<'EOF'
cdiVersion: 0.5.0
kind: test.ohbox/gauge
devices:
  - name: g0
    containerEdits:
      env: [GAUGE=on]
      deviceNodes:
        - path: /dev/gauge
          hostPath: /dev/full
          fileMode: 0600
EOF
}

test_cdi_json_and_yaml ()
{
  load_bb
  make_specs
  assert_ok ohbox run --rm --network none --cdi-spec-dir "$SPECS" --device test.ohbox/card=c0 \
    --device test.ohbox/gauge=g0 "$BB" sh -c 'stat -c "%n %t:%T %a %u:%g" /dev/card0 /dev/gauge
      head -c 3 /dev/card0 | od -An -c; echo "$CARD $CARD_DRIVER $GAUGE"; cat /opt/card/firmware
      (echo x >/opt/card/firmware) 2>/dev/null || echo read-only; id -G; ls /dev/card1 2>&1 || true'
  local lines
  mapfile -t lines <<<"$out"
  assert_eq "${lines[0]}" "/dev/card0 1:5 640 1000:44" "the spec's mode and owner"
  assert_eq "${lines[1]}" "/dev/gauge 1:7 600 0:0" "YAML 0600 is octal; the host node's owner"
  assert_match "${lines[2]}" '\\0 +\\0 +\\0'
  assert_eq "${lines[3]}" "0 7 on"
  assert_eq "${lines[4]}" "card firmware"
  assert_eq "${lines[5]}" "read-only"
  assert_contains "${lines[6]}" "4242"
  assert_contains "${lines[7]}" "No such file" "a device not asked for is not there"
  # =all: every device of the kind.
  assert_ok ohbox run --rm --network none --cdi-spec-dir "$SPECS" --device test.ohbox/card=all "$BB" \
    sh -c 'ls /dev/card0 /dev/card1'
  # ps shows a sandbox's devices.
  assert_ok ohbox run -d --network none --cdi-spec-dir "$SPECS" --device test.ohbox/gauge=g0 "$BB" sleep 30
  local id=$out
  assert_ok ohbox ps --format json
  assert_jq "$out" '.[0].devices.names == ["test.ohbox/gauge=g0"] and .[0].devices.nodes[0].path == "/dev/gauge" and .[0].devices.nodes[0].major == 1 and .[0].devices.nodes[0].minor == 7'
  assert_ok ohbox inspect "${id:0:12}"
  assert_jq "$out" '.id == "'"$id"'" and .devices.names == ["test.ohbox/gauge=g0"] and .devices.nodes[0].access == "rwm"'
  assert_ok ohbox rm -f "$id"
  # The dry run shows what the devices add.
  assert_ok ohbox run --dry-run --cdi-spec-dir "$SPECS" --device test.ohbox/card=all "$BB"
  assert_jq "$out" '.devices.names == ["test.ohbox/card=c0", "test.ohbox/card=c1"] and (.devices.nodes | length) == 2'
}

# exec into a sandbox with a device of additional groups: exec's process
# has the groups the init gave the sandbox's command (issue 19).
test_exec_additional_gids ()
{
  load_bb
  make_specs
  assert_ok ohbox run -d --network none --cdi-spec-dir "$SPECS" --device test.ohbox/card=c0 "$BB" sleep 30
  local id=$out
  # The sandbox's command (sleep) and exec's process, as the kernel shows them.
  assert_ok ohbox exec "$id" sh -c 'grep ^Groups: /proc/self/status
    for p in /proc/[0-9]*; do grep -q "^Name:.sleep" $p/status && grep ^Groups: $p/status; done; true'
  local lines
  mapfile -t lines <<<"$out"
  assert_match "${lines[0]}" '[[:space:]]4242( |$)' "exec's process has the device's group"
  assert_eq "${lines[0]}" "${lines[1]}" "the same groups as the sandbox's command"
  assert_ok ohbox rm -f "$id"
}

test_cdi_errors ()
{
  load_bb
  make_specs
  assert_exit 125 ohbox run --rm --cdi-spec-dir "$SPECS" --device test.ohbox/card=c9 "$BB" true
  assert_contains "$err" "CDI device \`test.ohbox/card=c9\` is not defined by any spec"
  printf 'cdiVersion: 0.5.0\nkind: test.ohbox/bad\ndevices:\n  - name: b\n    containerEdits:\n      colour: red\n' \
    >"$SPECS/bad.yaml"
  assert_exit 125 ohbox run --rm --cdi-spec-dir "$SPECS" --device test.ohbox/bad=b "$BB" true
  assert_contains "$err" "bad.yaml\`: devices[0].containerEdits.colour: unknown field"
  # A broken spec of another kind does not take the others away.
  assert_ok ohbox run --rm --network none --cdi-spec-dir "$SPECS" --device test.ohbox/gauge=g0 "$BB" true
  cp "$SPECS/gauge.yaml" "$SPECS/gauge-copy.yaml"
  assert_exit 125 ohbox run --rm --cdi-spec-dir "$SPECS" --device test.ohbox/gauge=g0 "$BB" true
  assert_contains "$err" "is defined twice"
  assert_contains "$err" "gauge-copy.yaml"
  assert_exit 125 ohbox run --rm --device /etc/hostname "$BB" true
  assert_contains "$err" "is not a device node"
  assert_exit 125 ohbox run --rm --device no-such "$BB" true
  assert_contains "$err" "must be absolute"
  if [ ! -e /dev/nvidiactl ]; then
    assert_exit 125 ohbox run --rm --gpus all "$BB" true
    assert_contains "$err" "--gpus: no NVIDIA driver found (no /dev/nvidiactl)"
  fi
  assert_exit 125 ohbox run --rm --gpus some "$BB" true
  assert_contains "$err" "expected all, a number of GPUs, or device=ID"
  # Nothing of the failed runs is left.
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

# A character device not in the standard set, present on this host.
extra_device ()
{
  local d
  for d in /dev/loop-control /dev/fuse /dev/vhost-net /dev/kmsg; do
    [ -c "$d" ] && { echo "$d"; return 0; }
  done
  return 1
}

# A CDI device's hooks: every stage, in order, with the OCI state on stdin;
# the pre-start ones see the sandbox set up (its root at /proc/PID/root); a
# failing or hanging pre-start hook stops the start, a failing poststart
# one is a warning.
write_hook_spec ()
{
  local dir=$1 env=$2 timeout=$3 stage hooks=
  for stage in createRuntime createContainer startContainer poststart poststop; do
    hooks="$hooks{\"hookName\": \"$stage\", \"path\": \"$dir/hook.sh\", \"args\": [\"hook.sh\", \"$stage\"],
      \"env\": [\"PATH=/usr/bin:/bin\", \"$env\"], \"timeout\": $timeout},"
  done
  mkdir -p "$dir/specs"
  cat >"$dir/specs/hooked.json" <<EOF
{ "cdiVersion": "0.5.0", "kind": "test.ohbox/hooked", "devices": [ { "name": "h", "containerEdits": {
  "deviceNodes": [ { "path": "/dev/hooked", "hostPath": "/dev/zero" } ], "hooks": [ ${hooks%,} ] } } ] }
EOF
}

test_cdi_hooks ()
{
  load_bb
  local dir=$T_WORK/hooks log=$T_WORK/hooks/log id
  mkdir -p "$dir"
  cat >"$dir/hook.sh" <<EOF
#!/bin/bash
state=\$(cat)
pid=\$(jq -r .pid <<<"\$state")
seen=no
# (poststart races with a short command: only the pre-start stages are asked)
[ "\$(jq -r .status <<<"\$state")" = created ] || seen=-
[ "\$seen" = no ] && [ -e "/proc/\$pid/root/dev/hooked" ] && seen=yes
echo "\$1 \$(jq -r .status <<<"\$state") \$(jq -r .id <<<"\$state" | cut -c1-12) root-set-up:\$seen" >>"$log"
[ "\$1" != "\${FAIL_AT:-}" ] || { echo "hook refuses at \$1" >&2; exit 3; }
[ "\$1" != "\${HANG_AT:-}" ] || sleep 30
exit 0
EOF
  chmod +x "$dir/hook.sh"
  write_hook_spec "$dir" NONE=1 10
  assert_ok ohbox run --rm --network none --cdi-spec-dir "$dir/specs" --device test.ohbox/hooked=h "$BB" echo ran
  assert_eq "$out" "ran"
  id=$(awk 'NR == 1 { print $3 }' "$log")
  assert_eq "$(cat "$log")" "createRuntime created $id root-set-up:yes
createContainer created $id root-set-up:yes
startContainer created $id root-set-up:yes
poststart running $id root-set-up:-
poststop stopped $id root-set-up:-"
  # A failing createContainer hook: no sandbox, its message.
  rm -f "$log"
  write_hook_spec "$dir" FAIL_AT=createContainer 10
  assert_exit 125 ohbox run --rm --network none --cdi-spec-dir "$dir/specs" --device test.ohbox/hooked=h "$BB" echo never
  assert_contains "$err" "createContainer hook \`$dir/hook.sh\` failed (exit status 3): hook refuses at createContainer"
  assert_not_contains "$out" never
  # A hanging one is killed at its timeout.
  write_hook_spec "$dir" HANG_AT=startContainer 1
  assert_exit 125 ohbox run --rm --network none --cdi-spec-dir "$dir/specs" --device test.ohbox/hooked=h "$BB" true
  assert_contains "$err" "startContainer hook \`$dir/hook.sh\` did not finish within 1 s"
  # A failing poststart hook is a warning.
  write_hook_spec "$dir" FAIL_AT=poststart 10
  assert_ok ohbox run --rm --network none --cdi-spec-dir "$dir/specs" --device test.ohbox/hooked=h "$BB" echo ran
  assert_eq "$out" "ran"
  assert_contains "$err" "poststart hook"
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

test_access_limited ()
{
  load_bb
  local dev
  dev=$(extra_device) || skip "no character device beyond the standard ones on this host"
  # By hand: a node of that device (mode 0666) on a volume cannot be opened.
  mkdir -p "$T_WORK/byhand"
  mknod -m 0666 "$T_WORK/byhand/node" c "$(stat -c '%t' "$dev" | xargs printf '%d')" \
    "$(stat -c '%T' "$dev" | xargs printf '%d')"
  assert_ok ohbox run --rm --network none -v "$T_WORK/byhand:/x" "$BB" sh -c \
    '(exec 3</x/node) 2>/dev/null && echo read-opened; (exec 3>/x/node) 2>/dev/null && echo write-opened; echo done'
  assert_eq "$out" "done"
  # Given read-only, it opens for reading, not for writing (the cgroup).
  assert_ok ohbox run --rm --network none --device "$dev:/dev/given:r" "$BB" sh -c \
    '(exec 3</dev/given) && echo read-ok; (exec 3>/dev/given) || echo write-refused'
  assert_contains "$out" "read-ok"
  assert_contains "$out" "write-refused"
  assert_contains "$err" "Operation not permitted"
  # The device cgroup of a sandbox without devices: the standard list only.
  assert_ok ohbox run -d --network none "$BB" sleep 30
  local id=$out list
  list=$(ls /sys/fs/cgroup/devices/ohbox/*"$id"*/devices.list 2>/dev/null | head -n 1)
  if [ -n "$list" ]; then
    assert_ok cat "$list"
    assert_not_contains "$out" "a *:* rwm"
    assert_contains "$out" "c 1:3 rwm"
    assert_not_contains "$out" "c 10:237"
  fi
  assert_ok ohbox rm -f "$id"
  assert_ok ohbox run --rm --network none "$BB" sh -c 'ls /dev | tr "\n" " "'
  assert_eq "$out" "core fd full mqueue null ptmx pts random shm stderr stdin stdout tty urandom zero "
}

test_host_device ()
{
  load_bb
  assert_ok ohbox run --rm --network none --device /dev/full --device /dev/zero:/dev/z:rw "$BB" sh -c \
    'stat -c "%n %t:%T %u:%g" /dev/full /dev/z'
  assert_eq "$out" "/dev/full 1:7 0:0
/dev/z 1:5 0:0"
}

# ---------------------------------------------------------------- --gpus

# A stub driver: libnvidia-ml and libcuda with the driver's sonames, and an
# nvidia-smi linked against libnvidia-ml that prints what it sees.
make_fake_driver ()
{
  FAKE=$T_WORK/fake
  mkdir -p "$FAKE/lib" "$FAKE/bin" "$FAKE/upper" "$FAKE/work" "$FAKE/proc"
  cat >"$FAKE/nvml.c" <<'EOF'
const char *nvmlSystemGetDriverVersion (void) { return "550.54.14-fake"; }
EOF
  cat >"$FAKE/smi.c" <<'EOF'
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
const char *nvmlSystemGetDriverVersion (void);
int main (void)
{
  printf ("driver %s\n", nvmlSystemGetDriverVersion ());
  DIR *d = opendir ("/dev");
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    if (strncmp (e->d_name, "nvidia", 6) == 0)
      printf ("%s\n", e->d_name);
  const char *v = getenv ("NVIDIA_VISIBLE_DEVICES");
  printf ("visible %s\n", v ? v : "(unset)");
  return 0;
}
EOF
  gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$FAKE/lib/libnvidia-ml.so.550.54.14" "$FAKE/nvml.c" || return 1
  gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$FAKE/lib/libcuda.so.550.54.14" "$FAKE/nvml.c" || return 1
  ln -sf libnvidia-ml.so.550.54.14 "$FAKE/lib/libnvidia-ml.so.1"
  ln -sf libnvidia-ml.so.1 "$FAKE/lib/libnvidia-ml.so"
  gcc -o "$FAKE/bin/nvidia-smi" "$FAKE/smi.c" -L"$FAKE/lib" -lnvidia-ml || return 1
  echo "$FAKE/lib" >"$FAKE/ld.so.conf"
  echo "include /etc/ld.so.conf.d/*.conf" >>"$FAKE/ld.so.conf"
  ldconfig -C "$FAKE/ld.so.cache" -f "$FAKE/ld.so.conf" || return 1
  # The GPUs as the driver describes them (bus order differs from minor order).
  mkdir -p "$FAKE/proc/nvidia/gpus/0000:3b:00.0" "$FAKE/proc/nvidia/gpus/0000:af:00.0"
  printf 'Model: \t\t Fake GPU\nGPU UUID: \t GPU-aaaaaaaa-0000-0000-0000-000000000001\nDevice Minor: \t 1\n' \
    >"$FAKE/proc/nvidia/gpus/0000:3b:00.0/information"
  printf 'Model: \t\t Fake GPU\nGPU UUID: \t GPU-bbbbbbbb-0000-0000-0000-000000000002\nDevice Minor: \t 0\n' \
    >"$FAKE/proc/nvidia/gpus/0000:af:00.0/information"
}

# in_fake_host CMD...: CMD in a private mount namespace where this host has
# the fake driver: /dev a tmpfs with the standard nodes and the NVIDIA ones
# (made from other devices' numbers: nvidia0 = full, nvidia1 = zero,
# nvidiactl = null, nvidia-uvm = zero), /proc/driver/nvidia, the test linker
# cache over /etc/ld.so.cache, nvidia-smi in /usr/local/bin (an overlay).
in_fake_host ()
{
  local script='
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=755 fakedev /dev
for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0 nvidia0:1:7 nvidia1:1:5 nvidiactl:1:3 nvidia-uvm:1:5; do
  IFS=: read -r name ma mi <<<"$n"; mknod -m 666 "/dev/$name" c "$ma" "$mi"
done
mkdir /dev/pts /dev/shm
mount -t tmpfs fakeproc /proc/driver && cp -r "$FAKE/proc/nvidia" /proc/driver/
# /proc is now covered in part: a sandbox may mount a proc of its own only
# where one is fully visible in its mount namespace (mount_too_revealing).
mkdir -p "$FAKE/fullproc" && mount -t proc proc "$FAKE/fullproc"
mount --bind "$FAKE/ld.so.cache" /etc/ld.so.cache
mount -t overlay overlay -o "lowerdir=/usr/local/bin,upperdir=$FAKE/upper,workdir=$FAKE/work" /usr/local/bin
cp "$FAKE/bin/nvidia-smi" /usr/local/bin/
exec "$@"'
  FAKE=$FAKE unshare --mount --propagation private bash -c "$script" fake-host "$@"
}

debian_image ()
{
  img_debian_wanted debian "the stub nvidia-smi needs glibc and ldconfig in the image"
  img_build_debian >&9 2>&1 || skip "img_build_debian failed"
  ohbox load "oci:$IMG_DEBIAN:bookworm" localhost/debian:bookworm >/dev/null
}

# fake_ohbox ARGS...: ohbox (the test's store) on the fake host.
fake_ohbox ()
{
  echo "+ (fake driver) ohbox --root $T_ROOT $*" >&9
  in_fake_host timeout -k 5 "$T_OHBOX_TIMEOUT" "$OHBOX_BIN" --root "$T_ROOT" "$@"
}

test_gpus_fake_driver ()
{
  require_cmd gcc unshare
  load_bb
  debian_image
  make_fake_driver || skip "cannot build the stub driver"
  local D=localhost/debian:bookworm
  assert_ok fake_ohbox run --rm --network none --gpus all "$D" nvidia-smi
  assert_contains "$out" "driver 550.54.14-fake" "nvidia-smi found libnvidia-ml.so.1 through the linker cache"
  assert_contains "$out" "nvidia0"
  assert_contains "$out" "nvidia1"
  assert_contains "$out" "nvidiactl"
  assert_contains "$out" "visible all"
  # The libraries and the tool are read-only.
  assert_ok fake_ohbox run --rm --network none --gpus all "$D" sh -c \
    "touch /usr/local/bin/nvidia-smi 2>/dev/null || echo tool-ro; ls $FAKE/lib; ldconfig -p | grep -c libnvidia-ml.so.1"
  assert_contains "$out" "tool-ro"
  assert_contains "$out" "libnvidia-ml.so.550.54.14"
  # One GPU: the first in bus order (0000:3b, minor 1).
  assert_ok fake_ohbox run --rm --network none --gpus 1 "$D" nvidia-smi
  assert_contains "$out" "nvidia1"
  assert_not_contains "$out" "nvidia0"
  assert_contains "$out" "visible 0"
  # By index and by UUID.
  assert_ok fake_ohbox run --rm --network none --gpus device=1 "$D" nvidia-smi
  assert_contains "$out" "nvidia0"
  assert_not_contains "$out" "nvidia1"
  assert_contains "$out" "visible 1"
  assert_ok fake_ohbox run --rm --network none --gpus '"device=GPU-aaaaaaaa-0000-0000-0000-000000000001"' "$D" nvidia-smi
  assert_contains "$out" "nvidia1"
  assert_not_contains "$out" "nvidia0"
  assert_fails fake_ohbox run --rm --network none --gpus device=7 "$D" true
  assert_contains "$err" "--gpus device=7: no such GPU (this host has 2, indices 0 to 1, or their UUIDs)"
  assert_fails fake_ohbox run --rm --network none --gpus 3 "$D" true
  assert_contains "$err" "--gpus 3: this host has 2 GPUs"
  # A CDI spec of nvidia.com/gpu wins over discovery.
  mkdir -p "$T_WORK/nvcdi"
  printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n  - name: "0"\n    containerEdits:\n      deviceNodes:\n        - path: /dev/from-cdi\n          hostPath: /dev/full\n' \
    >"$T_WORK/nvcdi/nvidia.yaml"
  assert_ok fake_ohbox run --rm --network none --cdi-spec-dir "$T_WORK/nvcdi" --gpus 1 "$BB" ls /dev
  assert_contains "$out" "from-cdi"
  assert_not_contains "$out" "nvidiactl"
}

run_test cdi_json_and_yaml test_cdi_json_and_yaml
run_test exec_additional_gids test_exec_additional_gids
run_test cdi_errors test_cdi_errors
run_test cdi_hooks test_cdi_hooks
run_test access_limited test_access_limited
run_test host_device test_host_device
run_test gpus_fake_driver test_gpus_fake_driver
t_summary 2>/dev/null || true
