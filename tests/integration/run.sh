#!/bin/bash
# run.sh: `ohbox run` and the lifecycle commands on real sandboxes from the
# busybox image (loaded with `ohbox load`, no registry): the command's exit
# code, isolation, users, mounts, limits on this host, lifecycle.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"

test_exit_codes ()
{
  load_bb
  assert_ok ohbox run --rm "$BB" echo hello
  assert_eq "$out" "hello"
  assert_exit 3 ohbox run --rm "$BB" sh -c 'exit 3'
  assert_exit 127 ohbox run --rm "$BB" no-such-command
  assert_contains "$err" "not found"
  assert_exit 126 ohbox run --rm "$BB" /etc/passwd
  assert_exit 125 ohbox run --rm no-such-image true
  assert_exit 137 ohbox run --rm "$BB" sh -c 'kill -9 $$'
}

test_image_layers ()
{
  load_bb
  # layer 2 whites out /etc/remove-me and /var, makes /opt/opaque opaque
  assert_ok ohbox run --rm "$BB" sh -c 'ls /etc/remove-me /var 2>&1; ls /opt/opaque; cat /etc/layer2 >/dev/null && echo l2'
  assert_contains "$out" "l2"
  assert_contains "$out" "new"
  assert_not_contains "$out" "old-a"
  assert_match "$out" "remove-me: No such file"
  # root in the sandbox owns the image's files (idmapped layers)
  assert_ok ohbox run --rm "$BB" stat -c '%u:%g' /bin/busybox /etc/passwd
  assert_eq "$out" "0:0
0:0"
  # writes land in the sandbox's upper layer, never in the store's layers
  assert_ok ohbox run --rm "$BB" sh -c 'echo x > /etc/passwd && echo new > /newfile && cat /newfile'
  assert_ok ohbox run --rm "$BB" sh -c 'cat /newfile 2>&1; grep -c root /etc/passwd'
  assert_contains "$out" "No such file"
}

test_isolation ()
{
  load_bb
  assert_ok ohbox run --rm --hostname box1 "$BB" sh -c 'echo $$; hostname; ps -o pid= | wc -l'
  local lines
  mapfile -t lines <<<"$out"
  assert_eq "${lines[0]}" "2" "the command is PID 2 under the init"
  assert_eq "${lines[1]}" "box1"
  [ "${lines[2]}" -le 4 ] || t_fail "host processes visible: ${lines[2]}"
  assert_ok ohbox run --rm "$BB" cat /proc/1/cmdline
  assert_contains "$out" "ohbox"
  # --network none: loopback only
  assert_ok ohbox run --rm --network none "$BB" ls /sys/class/net
  assert_eq "$out" "lo"
  # ... and up, as in docker: a server inside answers on 127.0.0.1
  assert_ok ohbox run --rm --network none "$BB" sh -c \
    'httpd -p 127.0.0.1:8080 -h /etc && wget -qO- http://127.0.0.1:8080/hostname >/dev/null && echo reached'
  assert_eq "$out" "reached"
  assert_ok ohbox run --rm --network host "$BB" ls /sys/class/net
  assert_ne "$out" "lo"
  # uid 0 inside is not host root
  assert_ok ohbox run --rm "$BB" cat /proc/self/uid_map
  assert_no_match "$out" "^ *0 +0 "
  # ... and neither uids nor gids map onto host root or the host's users:
  # every range of root's sandboxes starts at or above 65536 on the host
  # (/etc/subuid and /etc/subgid, else 0x70000000).
  local map
  for map in uid_map gid_map; do
    assert_ok ohbox run --rm --network none "$BB" cat /proc/self/$map
    assert_match "$out" "^ *0 +[0-9]+ +[0-9]+" "$map"
    assert_eq "" "$(awk '$2 < 65536' <<<"$out")" "$map ranges on host ids below 65536 ($out)"
  done
  assert_ok ohbox run --rm --userns host "$BB" cat /proc/self/uid_map
  assert_match "$out" "^ *0 +0 +4294967295"
}

test_security ()
{
  load_bb
  assert_fails ohbox run --rm "$BB" mount -t tmpfs x /mnt
  # no CAP_SYS_MODULE, CAP_SYS_ADMIN: bits 16 and 21 absent from the bounding set
  assert_ok ohbox run --rm "$BB" sh -c 'grep CapBnd /proc/self/status'
  local bnd=$((16#$(awk '{print $2}' <<<"$out")))
  [ $((bnd >> 16 & 1)) = 0 ] && [ $((bnd >> 21 & 1)) = 0 ] || t_fail "CapBnd $out has SYS_MODULE or SYS_ADMIN"
  assert_fails ohbox run --rm "$BB" insmod /nonexistent.ko
  # root has exactly the default set (tests/lib/ohbox.sh), nothing more
  assert_ok ohbox run --rm --network none "$BB" cat /proc/self/status
  assert_default_caps "$out" "run as root"
  # --cap-drop removes it from every set; --cap-add adds
  assert_ok ohbox run --rm --cap-drop chown "$BB" sh -c 'grep CapEff /proc/self/status'
  [ $((16#$(awk '{print $2}' <<<"$out") & 1)) = 0 ] || t_fail "CAP_CHOWN still effective: $out"
  assert_fails ohbox run --rm --cap-drop chown "$BB" chown 1 /tmp
  # no_new_privs: off by default as in Docker, on when asked (both spellings)
  assert_ok ohbox run --rm "$BB" grep NoNewPrivs /proc/self/status
  assert_match "$out" "0$"
  local o
  for o in no-new-privileges no-new-privileges=true no-new-privileges:true; do
    assert_ok ohbox run --rm -u 1000 --security-opt "$o" "$BB" grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status
    assert_match "$out" "NoNewPrivs:[[:space:]]+1"
    assert_match "$out" "Seccomp:[[:space:]]+2"
  done
  assert_ok ohbox run --rm --security-opt no-new-privileges=false "$BB" grep NoNewPrivs /proc/self/status
  assert_match "$out" "0$"
  assert_fails ohbox run --rm --security-opt no-new-privileges=maybe "$BB" true
  assert_contains "$err" "unknown --security-opt"
  # seccomp: unshare(CLONE_NEWUSER) is refused with EPERM by the default
  # profile, allowed when unconfined
  assert_fails ohbox run --rm "$BB" unshare -U true
  assert_contains "$err" "Operation not permitted"
  assert_ok ohbox run --rm --security-opt seccomp=unconfined "$BB" unshare -U true
  assert_ok ohbox run --rm "$BB" grep Seccomp: /proc/self/status
  assert_match "$out" "2$"
  # masked and read-only paths: the OCI runtime-spec defaults, written out
  # here (not read from the code). Each one that exists on this kernel is
  # checked by what is mounted on it, not by whether reading it fails: root
  # in the sandbox lacks CAP_SYS_RAWIO, so an unmasked /proc/kcore reads as
  # nothing either. Masked files are /dev/null (1:3), masked directories an
  # empty read-only tmpfs, read-only paths a read-only mount.
  assert_ok ohbox run --rm "$BB" sh -c '
    last_mount() { awk -v p="$1" '\''$5 == p {m = $0} END {print m}'\'' /proc/self/mountinfo; }
    for f in /proc/interrupts /proc/kcore /proc/keys /proc/latency_stats /proc/timer_list /proc/timer_stats /proc/sched_debug; do
      [ -e $f ] || continue
      [ "$(stat -c "%F %t:%T" $f)" = "character special file 1:3" ] || echo "NOT MASKED $f"
    done
    for d in /proc/acpi /proc/asound /proc/scsi /sys/firmware /sys/devices/virtual/powercap; do
      [ -e $d ] || continue
      case $(last_mount $d) in *" $d ro"[,\ ]*" - tmpfs "*) ;; *) echo "NOT MASKED $d" ;; esac
    done
    for p in /proc/bus /proc/fs /proc/irq /proc/sys /proc/sysrq-trigger; do
      [ -e $p ] || continue
      case $(last_mount $p) in *" $p ro"[,\ ]*) ;; *) echo "NOT READ-ONLY $p" ;; esac
    done
    echo 1 > /proc/sysrq-trigger 2>/dev/null || echo ro'
  assert_eq ro "$out" "masked and read-only paths"
  assert_fails ohbox run --rm "$BB" touch /sys/kernel/x
}

test_users_env_mounts ()
{
  load_bb
  assert_ok ohbox run --rm -u nobody "$BB" id
  assert_eq "$out" "uid=65534(nobody) gid=65534(nogroup)"
  assert_ok ohbox run --rm -u 1234:55 "$BB" id -u
  assert_eq "$out" "1234"
  assert_exit 125 ohbox run --rm -u nosuchuser "$BB" true
  printf 'A=1\n# c\nB=two words\n' >"$T_WORK/env"
  assert_ok ohbox run --rm -e C=3 --env-file "$T_WORK/env" -w /tmp/wd "$BB" sh -c 'echo $A $B $C $HOME; pwd'
  assert_eq "$out" "1 two words 3 /root
/tmp/wd"
  mkdir -p "$T_WORK/vol"
  echo data >"$T_WORK/vol/f"
  # the volume is not idmapped: sandbox root (an unprivileged host uid) may
  # read what others may read, and write only where the host lets it
  assert_fails ohbox run --rm -v "$T_WORK/vol:/mnt/v" "$BB" sh -c 'cat /mnt/v/f; echo w > /mnt/v/g'
  assert_eq "$out" "data"
  assert_file_absent "$T_WORK/vol/g"
  assert_ok ohbox run --rm --userns host -v "$T_WORK/vol:/mnt/v" "$BB" sh -c 'echo w > /mnt/v/g'
  assert_file_exists "$T_WORK/vol/g"
  assert_fails ohbox run --rm -v "$T_WORK/vol:/mnt/v:ro" "$BB" sh -c 'echo w > /mnt/v/h'
  assert_file_absent "$T_WORK/vol/h"
  assert_fails ohbox run --rm --read-only "$BB" touch /x
  assert_ok ohbox run --rm --read-only --tmpfs /scratch "$BB" sh -c 'touch /scratch/x && echo ok'
  assert_eq "$out" "ok"
}

# :idmap volumes: host ids seen through the sandbox's own mapping, so the
# sandbox's root owns what host root owns there, and what it writes is host
# root's; a host uid 1000 file is uid 1000 inside. Refused where it cannot work.
test_idmap_volume ()
{
  load_bb
  mkdir -p "$T_WORK/idv"
  echo data >"$T_WORK/idv/root-file"
  echo u >"$T_WORK/idv/user-file"
  chown 1000:1000 "$T_WORK/idv/user-file"
  chmod 0755 "$T_WORK/idv"
  assert_ok ohbox run --rm -v "$T_WORK/idv:/v" "$BB" stat -c '%u %u' /v/root-file /v/user-file
  assert_eq "$out" "65534 65534
65534 65534" "owners without idmap (unmapped host ids)"
  assert_ok ohbox run --rm -v "$T_WORK/idv:/v:idmap" "$BB" sh -c \
    'stat -c %u /v/root-file /v/user-file; echo new >/v/made-inside; stat -c %u /v/made-inside'
  assert_eq "$out" "0
1000
0" "owners through the idmapped volume"
  assert_eq "$(stat -c %u:%g "$T_WORK/idv/made-inside")" "0:0" "host owner of a file the sandbox's root made"
  assert_ok ohbox run --rm -v "$T_WORK/idv:/v:ro,idmap" "$BB" stat -c %u /v/root-file
  assert_eq "$out" "0"
  assert_fails ohbox run --rm -v "$T_WORK/idv:/v:ro,idmap" "$BB" sh -c 'echo x >/v/ro-write'
  assert_file_absent "$T_WORK/idv/ro-write"
  assert_exit 125 ohbox run --rm --userns host -v "$T_WORK/idv:/v:idmap" "$BB" true
  assert_contains "$err" "idmap needs a user namespace"
  assert_exit 125 ohbox run --rm -v "$T_WORK/idv:/v:idmap,bogus" "$BB" true
  assert_contains "$err" "invalid volume"
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

test_limits_v1 ()
{
  load_bb
  assert_ok ohbox run --rm --memory 64m --pids-limit 20 --cpus 0.5 "$BB" sh -c \
    'cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null; cat /proc/self/cgroup | head -3'
  # From the host too (test_sys_fs_cgroup checks the view inside).
  local id
  id=$(ohbox run -d --memory 64m --pids-limit 20 --cpus 0.5 "$BB" sleep 30)
  local d
  for d in /sys/fs/cgroup/memory/ohbox/$id /sys/fs/cgroup/unified/ohbox/$id; do
    [ -d "$d" ] || continue
    if [ -f "$d/memory.limit_in_bytes" ]; then
      assert_eq "$(cat "$d/memory.limit_in_bytes")" "67108864"
    fi
    # Docker's default without --memory-swap: as much swap as memory, so
    # memory+swap is twice --memory (the file exists with swap accounting).
    if [ -f "$d/memory.memsw.limit_in_bytes" ]; then
      assert_eq 134217728 "$(cat "$d/memory.memsw.limit_in_bytes")" "memory+swap of --memory 64m"
    fi
  done
  if [ -f /sys/fs/cgroup/pids/ohbox/$id/pids.max ]; then
    assert_eq "$(cat /sys/fs/cgroup/pids/ohbox/$id/pids.max)" "20"
    assert_eq "$(cat /sys/fs/cgroup/cpu/ohbox/$id/cpu.cfs_quota_us)" "50000"
  elif [ -f /sys/fs/cgroup/ohbox/$id/pids.max ]; then
    assert_eq "$(cat /sys/fs/cgroup/ohbox/$id/pids.max)" "20"
  fi
  assert_ok ohbox stats "$id"
  assert_contains "$out" "${id:0:12}"
  assert_ok ohbox stats --format json "$id"
  assert_jq "$out" '.pids_current >= 1 and .pids_max == 20' "stats"
  # the pids limit refuses forks
  assert_fails ohbox run --rm --pids-limit 5 "$BB" sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; echo done'
  assert_contains "$err" "can't fork"
  assert_ok ohbox run --rm --pids-limit 50 "$BB" sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done; wait; echo done'
  assert_eq "$out" "done"
  # --memory-swap is memory plus swap, as seen inside
  if [ -f /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ]; then
    assert_ok ohbox run --rm --network none --memory 64m --memory-swap 96m "$BB" \
      cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes
    assert_eq "67108864
100663296" "$out" "memory, memory+swap with --memory 64m --memory-swap 96m"
  fi
  assert_ok ohbox rm -f "$id"
  assert_gone "/sys/fs/cgroup/memory/ohbox/$id"
}

# /sys/fs/cgroup inside shows the sandbox's own cgroups, read-only: on a
# v1 or hybrid host a read-only tmpfs with a bind of the sandbox's directory
# in each hierarchy (under the host's names), on a pure v2 host a cgroup2
# mount rooted at the sandbox's cgroup (tests/guest/ohbox-checks.sh checks
# that one in the qemu guest).
test_sys_fs_cgroup ()
{
  load_bb
  local script='grep " /sys/fs/cgroup" /proc/mounts | cut -d" " -f1-4; echo ---; ls /sys/fs/cgroup; echo ---
    cat /proc/self/cgroup; echo ---
    for f in memory/memory.limit_in_bytes pids/pids.max cpu/cpu.cfs_quota_us memory.max pids.max cpu.max; do
      [ -f /sys/fs/cgroup/$f ] && echo "$f=$(cat /sys/fs/cgroup/$f)"
    done
    (echo 1 >/sys/fs/cgroup/pids/pids.max) 2>/dev/null && echo WRITABLE-V1
    (echo 1 >/sys/fs/cgroup/pids.max) 2>/dev/null && echo WRITABLE-V2
    mkdir /sys/fs/cgroup/memory/x 2>/dev/null && echo MKDIR; mkdir /sys/fs/cgroup/x 2>/dev/null && echo MKDIR; true'
  assert_ok ohbox run --rm --network none --memory 64m --pids-limit 20 --cpus 0.5 "$BB" sh -c "$script"
  assert_not_contains "$out" WRITABLE
  assert_not_contains "$out" MKDIR
  # The cgroup namespace: every hierarchy's root is the sandbox's cgroup.
  assert_not_contains "$out" ":/ohbox" "/proc/self/cgroup"
  if grep -q ' /sys/fs/cgroup cgroup2 ' /proc/self/mounts; then
    assert_match "$out" '^cgroup2 /sys/fs/cgroup cgroup2 ro,'
    assert_contains "$out" "memory.max=67108864"
    assert_contains "$out" "pids.max=20"
    assert_contains "$out" "cpu.max=50000 100000"
  else
    assert_match "$out" '^tmpfs /sys/fs/cgroup tmpfs ro,'
    assert_match "$out" '^cgroup /sys/fs/cgroup/memory cgroup ro,'
    assert_contains "$out" "memory/memory.limit_in_bytes=67108864"
    assert_contains "$out" "pids/pids.max=20"
    assert_contains "$out" "cpu/cpu.cfs_quota_us=50000"
    if [ -d /sys/fs/cgroup/unified ]; then
      assert_match "$out" '^cgroup2 /sys/fs/cgroup/unified cgroup2 ro,'
    fi
    # Only the sandbox's own cgroups: no sibling or parent directory.
    assert_ok ohbox run --rm --network none "$BB" sh -c 'ls /sys/fs/cgroup/memory | grep -v "^memory\.\|^cgroup\.\|^notify_on_release$\|^tasks$"; true'
    assert_eq "$out" ""
  fi
}

test_lifecycle ()
{
  load_bb
  local id
  assert_ok ohbox run -d --name web "$BB" sh -c 'echo started; trap "echo bye; exit 7" TERM; while true; do sleep 0.1; done'
  id=$out
  assert_match "$id" "^[0-9a-f]{64}$"
  assert_ok ohbox ps
  assert_contains "$out" "${id:0:12}"
  assert_contains "$out" "running"
  assert_ok ohbox ps --format json
  assert_jq "$out" ".[0].id == \"$id\" and .[0].name == \"web\" and .[0].status == \"running\"" "ps json"
  t_wait_until 5 sh -c "'$OHBOX_BIN' --root '$T_ROOT' logs web | grep -q started"
  assert_exit 125 ohbox run -d --name web "$BB" true
  assert_contains "$err" "already used"
  assert_ok ohbox pause web
  assert_ok ohbox ps --format json
  assert_jq "$out" '.[0].status == "paused"' "paused"
  assert_ok ohbox unpause web
  assert_fails ohbox rm web
  assert_ok ohbox stop -t 5 web
  assert_ok ohbox ps
  assert_not_contains "$out" "${id:0:12}"
  assert_ok ohbox ps -a --format json
  assert_jq "$out" '.[0].status == "exited" and .[0].exit_code == 7' "exited 7 (trap ran)"
  assert_ok ohbox wait web
  assert_eq "$out" "7"
  assert_ok ohbox logs web
  assert_eq "$out" "started
bye"
  assert_ok ohbox rm web
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
  # kill, wait, and a name reused after rm
  assert_ok ohbox run -d --name web "$BB" sleep 60
  id=$out
  assert_ok ohbox kill -s KILL "${id:0:8}"
  assert_ok ohbox wait "$id"
  assert_eq "$out" "137"
  assert_ok ohbox rm "$id"
  # stop escalates to SIGKILL after the timeout
  assert_ok ohbox run -d "$BB" sh -c 'trap "" TERM; while true; do sleep 0.1; done'
  id=$out
  assert_ok ohbox stop -t 1 "$id"
  assert_ok ohbox wait "$id"
  assert_eq "$out" "137"
  assert_ok ohbox rm "$id"
  # -d --rm leaves nothing once it exits
  assert_ok ohbox run -d --rm "$BB" sleep 1
  id=$out
  assert_ok ohbox wait "$id"
  assert_eq "$out" "0"
  t_wait_until 5 sh -c "! '$OHBOX_BIN' --root '$T_ROOT' ps -a -q | grep -q ."
  assert_gone "$T_ROOT/sandboxes/$id"
}

# with_stop_signal SIG NAME: loads the busybox image with its config's
# StopSignal set to SIG, as NAME.
with_stop_signal ()
{
  local layout=$T_TMP/stopsig-$1 man cfg
  cp -a "$IMG_BUSYBOX" "$layout"
  man=$(jq -r '.manifests[0].digest' "$layout/index.json")
  cfg=$(jq -r .config.digest "$layout/blobs/sha256/${man#sha256:}")
  _img_put_json "$layout" "$(jq -c --arg s "$1" '.config.StopSignal = $s' "$layout/blobs/sha256/${cfg#sha256:}")"
  _img_put_json "$layout" "$(jq -c --arg d "$BLOB_DIGEST" --argjson n "$BLOB_SIZE" '.config.digest = $d | .config.size = $n' \
    "$layout/blobs/sha256/${man#sha256:}")"
  img_set_refs "$layout" "latest=$(_img_desc "$IMG_OCI_MANIFEST" "$BLOB_DIGEST" "$BLOB_SIZE")"
  ohbox load "oci:$layout:latest" "$2" >/dev/null
}

# The stop signal: the image's StopSignal, overridden by --stop-signal; a bad one fails the run.
test_stop_signal ()
{
  local trap='echo up; trap "echo got-usr1; exit 3" USR1; trap "echo got-term; exit 4" TERM; while true; do sleep 0.1; done'
  with_stop_signal SIGUSR1 localhost/stopsig:usr1 || { t_fail "could not make the StopSignal image"; return; }
  local id
  assert_ok ohbox run -d localhost/stopsig:usr1 sh -c "$trap"
  id=$out
  t_wait_until 5 sh -c "'$OHBOX_BIN' --root '$T_ROOT' logs $id | grep -q up"
  assert_ok ohbox stop -t 5 "$id"
  assert_ok ohbox wait "$id"
  assert_eq "$out" "3" "exit code after the image's StopSignal"
  assert_ok ohbox rm "$id"
  assert_ok ohbox run -d --stop-signal TERM localhost/stopsig:usr1 sh -c "$trap"
  id=$out
  t_wait_until 5 sh -c "'$OHBOX_BIN' --root '$T_ROOT' logs $id | grep -q up"
  assert_ok ohbox stop -t 5 "$id"
  assert_ok ohbox wait "$id"
  assert_eq "$out" "4" "exit code after --stop-signal TERM"
  assert_ok ohbox rm "$id"
  assert_exit 125 ohbox run --rm --stop-signal NOPE localhost/stopsig:usr1 true
  assert_contains "$err" "--stop-signal \`NOPE\` is not a signal"
  with_stop_signal SIGBOGUS localhost/stopsig:bad || { t_fail "could not make the bad StopSignal image"; return; }
  assert_exit 125 ohbox run --rm localhost/stopsig:bad true
  assert_contains "$err" "StopSignal \`SIGBOGUS\`"
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

# `rm -f` of a running --rm sandbox: its monitor removes the state directory
# while rm looks at it; rm still succeeds (it used to fail with "open lock").
test_rm_force_of_rm_sandbox ()
{
  load_bb
  local i id
  for i in $(seq 20); do
    id=$("$OHBOX_BIN" --root "$T_ROOT" run -d --rm --network none "$BB" sleep 0.1)
    t_run "$OHBOX_BIN" --root "$T_ROOT" rm -f "$id"
    # Gone by itself before rm looked: "no such sandbox" (exit 3) is right too.
    [ "$rc" = 0 ] || { [ "$rc" = 3 ] && [[ $err == *"no such sandbox"* ]]; } ||
      _t_assert_fail "rm -f of --rm sandbox $i: status $rc: $err"
  done
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
}

test_logs_follow ()
{
  load_bb
  assert_ok ohbox run -d "$BB" sh -c 'for i in 1 2 3; do echo line$i; sleep 0.2; done'
  local id=$out
  assert_ok ohbox logs -f "$id"
  assert_eq "$out" "line1
line2
line3"
  assert_ok ohbox rm "$id"
}

test_reconcile_killed_monitor ()
{
  load_bb
  assert_ok ohbox run -d "$BB" sleep 60
  local id=$out mon
  # the monitor is the init's parent: kill it, the sandbox dies with it
  assert_ok ohbox ps --format json
  mon=$(ps -o ppid= -p "$(jq '.[0].pid' <<<"$out")" | tr -d ' ')
  local init
  init=$(jq '.[0].pid' <<<"$out")
  kill -9 "$mon"
  # the init dies with its monitor (parent-death signal), before any reconciliation
  t_wait_until 5 sh -c "! kill -0 $init 2>/dev/null"
  assert_ok ohbox ps -a --format json
  assert_jq "$out" ".[0].id == \"$id\" and .[0].status == \"exited\" and .[0].exit_code == 255" "reconciled"
  assert_gone "/sys/fs/cgroup/pids/ohbox/$id"
  assert_gone "/sys/fs/cgroup/unified/ohbox/$id"
  assert_ok ohbox rm "$id"
  assert_gone "$T_ROOT/sandboxes/$id"
}

# `ps` removes the state of creations that died half-way (.new-<id>): never
# that of a creation still going on. Two loops of `ps -a` while 30 sandboxes
# start (before the creation lock, a start lost its state dir to such a
# cleanup about once in 15 tries of check.sh's single start).
test_ps_during_starts ()
{
  load_bb
  local i pids=() failed=0
  for i in 1 2; do
    (while [ ! -e "$T_WORK/stop" ]; do
      "$OHBOX_BIN" --root "$T_ROOT" ps -a >/dev/null 2>>"$T_WORK/ps.err" || echo "ps exited $?" >>"$T_WORK/ps.err"
    done) &
    pids+=($!)
    t_track "$!"
  done
  for i in $(seq 30); do
    if ! "$OHBOX_BIN" --root "$T_ROOT" run --rm --network none "$BB" true >"$T_WORK/run.$i" 2>&1; then
      failed=$((failed + 1))
      echo "start $i: $(cat "$T_WORK/run.$i")"
    fi
  done
  touch "$T_WORK/stop"
  wait "${pids[@]}" 2>/dev/null || true
  assert_eq 0 "$failed" "starts that failed while ps ran"
  assert_eq "" "$(cat "$T_WORK/ps.err" 2>/dev/null)" "ps while sandboxes started"
  assert_ok ohbox ps -a -q
  assert_eq "" "$out" "sandboxes left"
  assert_eq 0 "$(ls -A "$OHBOX_RUNROOT" | grep -c '^\.new-' || true)" "half-created state left"
}

test_gc_keeps_layers ()
{
  load_bb
  assert_ok ohbox run -d "$BB" sleep 60
  local id=$out
  assert_ok ohbox rmi "$BB"
  assert_layer_present "$IMG_BB_DIFF1"
  assert_ok ohbox rm -f "$id"
  assert_ok ohbox prune
  assert_layer_absent "$IMG_BB_DIFF1"
}

run_test exit_codes test_exit_codes
run_test image_layers test_image_layers
run_test isolation test_isolation
run_test security test_security
run_test users_env_mounts test_users_env_mounts
run_test idmap_volume test_idmap_volume
run_test limits_v1 test_limits_v1
run_test sys_fs_cgroup test_sys_fs_cgroup
run_test lifecycle test_lifecycle
run_test stop_signal test_stop_signal
run_test rm_force_of_rm_sandbox test_rm_force_of_rm_sandbox
run_test logs_follow test_logs_follow
run_test reconcile_killed_monitor test_reconcile_killed_monitor
run_test gc_keeps_layers test_gc_keeps_layers
run_test ps_during_starts test_ps_during_starts
t_summary 2>/dev/null || true
