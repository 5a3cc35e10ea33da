#!/bin/sh
# tests/guest/runc-systemd-checks.sh: ohbox-runc --systemd-cgroup against a
# real systemd (PID 1 of the qemu guest, pure cgroup v2, no dbus-daemon: its
# private socket), run by tests/integration/runc-systemd.sh as the guest's
# ohbox-checks.service (busybox sh, root). Each check prints one line
#   PASS: guest/NAME   or   FAIL: guest/NAME: WHY
# and the run ends with /sbin/guest-exit (1 when any failed).
#
# The payload holds sysroot/ (ohbox-runc, systemd and systemctl with their
# libraries, over the guest's /), rootfs/ (static busybox) and one bundle
# per case, b-NAME/ (config.json, rootfs -> ../rootfs).
set -u
exec >/dev/console 2>&1
rc=0
R="/usr/local/bin/ohbox-runc --systemd-cgroup"
cg=/sys/fs/cgroup
pass ()
{
  echo "PASS: guest/$1"
}
fail ()
{
  echo "FAIL: guest/$1: $2" | tr '\n' ' '
  echo
  rc=1
}
# check NAME FN: runs FN in a subshell, which fails it with `why`.
check ()
{
  _name=$1
  shift
  if _why=$( ("$@") 2>&1 >/dev/null); then
    pass "$_name"
  else
    fail "$_name" "${_why:-$1 failed}"
  fi
  echo "# $_name: done at $(cut -d' ' -f1 /proc/uptime) s"
}
why ()
{
  echo "$*" >&2
  exit 1
}
# expect WHAT GOT WANT
expect ()
{
  [ "$2" = "$3" ] || why "$1: \`$2\`, expected \`$3\`"
}
prop ()
{
  systemctl show -p "$1" --value "$2"
}
# json_field KEY: KEY's value in the JSON object on stdin (flat, as state prints it).
json_field ()
{
  tr -d ' \n' | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}
status_of ()
{
  $R state "$1" | json_field status
}
# gone UNIT DIR ID: nothing of the container is left.
gone ()
{
  expect "$1 LoadState" "$(prop LoadState "$1")" not-found
  [ ! -e "$2" ] || why "$2 is left"
  [ ! -e "/run/ohbox-runc/$3" ] || why "/run/ohbox-runc/$3 is left"
}

echo "# systemd $(systemctl --version | head -n 1), up $(cut -d' ' -f1 /proc/uptime) s"

# The default place: system.slice:ohbox-runc:ID; the limits in the scope's
# files and as its properties; the holder gone once the init is in.
u1=ohbox-runc-c1.scope
d1=$cg/system.slice/$u1
create_default ()
{
  $R create --bundle /payload/b-main c1 >/tmp/c1.out 2>&1 || why "create: $(cat /tmp/c1.out)"
  expect "$u1 ActiveState" "$(prop ActiveState $u1)" active
  expect "$u1 Delegate" "$(prop Delegate $u1)" yes
  expect "memory.max" "$(cat $d1/memory.max)" 67108864
  expect "pids.max" "$(cat $d1/pids.max)" 32
  expect "MemoryMax" "$(prop MemoryMax $u1)" 67108864
  expect "TasksMax" "$(prop TasksMax $u1)" 32
  pid=$($R state c1 | json_field pid)
  # The container's processes only (the holder the scope started with is gone).
  for p in $(cat $d1/cgroup.procs); do
    expect "pid namespace of $p in the scope" "$(readlink /proc/$p/ns/pid)" "$(readlink /proc/$pid/ns/pid)"
  done
  expect "the init's cgroup" "$(cat /proc/$pid/cgroup)" "0::/system.slice/$u1"
  expect status "$(status_of c1)" created
}
check systemd-create-default create_default

# The same scope for a container of another --root: systemd refuses it, and
# the failed create leaves the first one's scope alone.
same_unit ()
{
  out=$($R --root /run/other create --bundle /payload/b-main c1 2>&1) && why "a second c1 was made"
  # (systemd 252: "Unit NAME was already loaded or has a fragment file.")
  echo "$out" | grep -q "start the scope $u1: Unit $u1 was already loaded" || why "$out"
  [ "$(echo "$out" | wc -l)" = 1 ] || why "not one error line: $out"
  expect "$u1 ActiveState" "$(prop ActiveState $u1)" active
  [ -d $d1 ] || why "$d1 is gone"
  [ ! -e /run/other/c1 ] || why "/run/other/c1 is left"
}
check systemd-same-scope-other-root same_unit

lifecycle ()
{
  $R start c1 || why "start failed"
  expect status "$(status_of c1)" running
  $R ps c1 | grep -q sleep || why "ps c1 does not list sleep: $($R ps c1)"
  $R pause c1 || why "pause failed"
  expect "cgroup.freeze" "$(cat $d1/cgroup.freeze)" 1
  expect status "$(status_of c1)" paused
  $R resume c1 || why "resume failed"
  expect status "$(status_of c1)" running
  $R events --stats c1 | grep -q '"limit":67108864' || why "events --stats: $($R events --stats c1)"
}
check systemd-state-ps-pause-events lifecycle

# update: the files and the unit's properties, which a daemon-reload
# writes back over the files (so a limit set in the files only would go).
update ()
{
  $R update --memory 128M --pids-limit 40 c1 || why "update failed"
  expect "memory.max" "$(cat $d1/memory.max)" 134217728
  systemctl daemon-reload || why "daemon-reload failed"
  expect "memory.max after daemon-reload" "$(cat $d1/memory.max)" 134217728
  expect "pids.max after daemon-reload" "$(cat $d1/pids.max)" 40
  expect "MemoryMax" "$(prop MemoryMax $u1)" 134217728
  expect "TasksMax" "$(prop TasksMax $u1)" 40
}
check systemd-update-survives-reload update

delete_stopped ()
{
  $R kill c1 KILL || why "kill failed"
  n=0
  while [ "$(status_of c1)" != stopped ] && [ $n -lt 50 ]; do
    sleep 0.1
    n=$((n + 1))
  done
  $R delete c1 || why "delete failed"
  gone $u1 $d1 c1
}
check systemd-delete-leaves-nothing delete_stopped

# slice:prefix:name with a nested slice: a-b.slice is a.slice/a-b.slice.
slice_form ()
{
  $R create --bundle /payload/b-slice c2 >/tmp/c2.out 2>&1 || why "create: $(cat /tmp/c2.out)"
  d=$cg/ohbox.slice/ohbox-a.slice/test-c2.scope
  [ -d $d ] || why "no $d"
  expect "Slice" "$(prop Slice test-c2.scope)" ohbox-a.slice
  $R delete --force c2 || why "delete --force failed"
  gone test-c2.scope $d c2
}
check systemd-slice-prefix-name slice_form

# run in the foreground, no prefix (":ohbox:r1"): inside, its cgroup
# namespace is the scope, where no process is outside its pid namespace
# (cgroup.procs would list the holder as 0).
run_foreground ()
{
  out=$($R run --bundle /payload/b-run r1 2>&1) || why "run: $out"
  expect "the container's /proc/self/cgroup" "$(echo "$out" | head -n 1)" "0::/"
  echo "$out" | sed 1d | grep -qx '[1-9][0-9]*' || why "no process of the container in its cgroup.procs: $out"
  echo "$out" | sed 1d | grep -vqx '[1-9][0-9]*' && why "a process from outside in the scope: $out"
  gone ohbox-r1.scope $cg/system.slice/ohbox-r1.scope r1
}
check systemd-run-foreground run_foreground

# A cgroupsPath that is not slice:prefix:name, or whose slice is none: an
# error that names it, and nothing made.
bad_paths ()
{
  out=$($R create --bundle /payload/b-bad1 bad1 2>&1) && why "a/b was taken"
  echo "$out" | grep -q 'linux.cgroupsPath: `a/b` is not slice:prefix:name' || why "a/b: $out"
  out=$($R create --bundle /payload/b-bad2 bad2 2>&1) && why "notaslice:p:n was taken"
  echo "$out" | grep -q '`notaslice` is not a systemd slice' || why "notaslice: $out"
  gone p-n.scope $cg/system.slice/p-n.scope bad2
  [ ! -e /run/ohbox-runc/bad1 ] || why "bad1 is left"
}
check systemd-bad-cgroups-path bad_paths

echo "# done, up $(cut -d' ' -f1 /proc/uptime) s"
exec /sbin/guest-exit "$rc"
