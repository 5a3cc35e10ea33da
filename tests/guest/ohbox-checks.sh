#!/bin/sh
# tests/guest/ohbox-checks.sh: `ohbox run` on a pure cgroup v2 kernel, run
# inside the qemu guest by tests/integration/cgroup2-guest.sh (busybox sh,
# root, from /payload).  Each check prints one line
#   PASS: cgroup2-guest/ohbox/NAME   or   FAIL: cgroup2-guest/ohbox/NAME: WHY
# and the script exits 1 when any failed.
#
# The payload holds:
#   sysroot/   ohbox, newuidmap and newgidmap with their shared libraries,
#              at their host paths (copied over the guest's /)
#   busybox/   the busybox test image as an OCI layout (tests/lib/images.sh)
#
# Every sandbox runs with --network none: the guest has no bridge modules
# and nothing here needs a network.
set -u
rc=0
p=ohbox
cg=/sys/fs/cgroup
pass ()
{
  echo "PASS: $p/$1"
}
fail ()
{
  echo "FAIL: $p/$1: $2" | tr '\n' ' '
  echo
  rc=1
}
# centis: monotonic time in hundredths of a second.
centis ()
{
  cut -d' ' -f1 /proc/uptime | tr -d .
}
# check NAME FN: runs FN in a subshell, which fails it with `why`.
check ()
{
  _name=$1
  shift
  _t0=$(centis)
  if _why=$( ("$@") 2>&1 >/dev/null); then
    pass "$_name"
  else
    fail "$_name" "${_why:-$1 failed}"
  fi
  _t=$(($(centis) - _t0))
  echo "# $_name: $((_t / 100)).$((_t / 10 % 10)) s"
}
# why MSG: ends the check with MSG as the reason.
why ()
{
  echo "$*" >&2
  exit 1
}
# fd 4: the console, for "# ..." notes from inside a check.
exec 4>&1
# wait_until TENTHS CMD...: polls CMD every 0.1 s for up to TENTHS tenths.
wait_until ()
{
  _n=$1
  shift
  while [ "$_n" -gt 0 ]; do
    "$@" 2>/dev/null && return 0
    sleep 0.1
    _n=$((_n - 1))
  done
  "$@"
}
# key FILE KEY: the value of "KEY VALUE" in FILE (memory.events, cpu.stat).
key ()
{
  sed -n "s/^$2 //p" "$1" 2>/dev/null
}
# jnum JSON KEY: a number from ohbox's one-line JSON.
jnum ()
{
  echo "$1" | sed -n "s/.*\"$2\": *\([0-9-]*\).*/\1/p"
}

# ---------------------------------------------------------------- setup
# Links rather than a copy of the libraries (60 MB, seconds under TCG):
# the guest has no /lib, /lib64 or /usr/local of its own.
for d in lib lib64 usr/local; do
  [ -e /payload/sysroot/$d ] || continue
  [ -e /$d ] && { echo "FAIL: $p/setup: the guest has a /$d already"; exit 1; }
  ln -s /payload/sysroot/$d /$d
done
cp -a /payload/sysroot/usr/bin/newuidmap /payload/sysroot/usr/bin/newgidmap /usr/bin/ ||
  { echo "FAIL: $p/setup: cannot install newuidmap/newgidmap"; exit 1; }
# The layout is read by uid 1000 too.
chmod -R a+rX /payload/busybox
# setuid as Debian installs them (cpio kept the mode, but be explicit).
chmod 4755 /usr/bin/newuidmap /usr/bin/newgidmap
# Root leases a block of 65536 ids per sandbox: a range of 16 blocks.
printf 'root:100000:1048576\nuser:1200000:65536\n' >/etc/subuid
cp /etc/subuid /etc/subgid
# The stores on ext4 (a loop device): the guest's / is a tmpfs, and Linux
# 6.1's tmpfs has neither idmapped mounts (root's sandboxes mount the
# image's layers idmapped) nor user.* xattrs (rootless overlay's
# userxattr).
if ! out=$( (dd if=/dev/zero of=/tmp/store.img bs=1M count=0 seek=64 && loop=$(losetup -f) &&
  losetup "$loop" /tmp/store.img && mke2fs -q "$loop" && mkdir -p /store && mount -t ext4 "$loop" /store) 2>&1); then
  echo "FAIL: $p/setup: cannot make an ext4 store (loop, ext4 modules):" $out
  exit 1
fi
OHBOX=$(cat /payload/ohbox-path)
IMG=localhost/busybox:latest
ob ()
{
  "$OHBOX" --root /store/root "$@"
}
mounts_before=$(wc -l </proc/mounts)
echo "# ohbox checks set up, up $(cut -d' ' -f1 /proc/uptime) s"

t_load ()
{
  out=$(ob load oci:/payload/busybox:latest "$IMG" 2>&1) || why "ohbox load: $out"
}
check load t_load

# --memory: the command itself is the biggest process and gets killed.
t_memory_oom ()
{
  out=$(ob run --rm --network none --memory 32m "$IMG" dd if=/dev/zero of=/dev/null bs=64M count=1 2>&1)
  r=$?
  [ "$r" = 137 ] || why "dd of 64 MiB under --memory 32m exited $r, not 137: $out"
}
check memory-oom-exit-137 t_memory_oom

oom_killed ()
{
  [ "$(key "$1/memory.events" oom_kill)" -ge 1 ]
}
# The same with a surviving shell, so that the cgroup can be looked at:
# memory.max, memory.events oom_kill (from the guest and from inside),
# ohbox stats.
t_memory_events ()
{
  id=$(ob run -d --name oomd --network none --memory 32m "$IMG" \
    sh -c 'dd if=/dev/zero of=/dev/null bs=64M count=1; sleep 600') || why "run -d: $id"
  d=$cg/ohbox/$id
  [ "$(cat $d/memory.max)" = 33554432 ] || why "memory.max is $(cat $d/memory.max), not 33554432"
  wait_until 100 oom_killed "$d" ||
    why "memory.events oom_kill stayed at $(key $d/memory.events oom_kill): $(cat $d/memory.events)"
  inside=$(ob exec oomd cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.events 2>&1) ||
    why "exec cat inside: $inside"
  echo "$inside" | grep -qx 33554432 || why "memory.max inside: $inside"
  echo "$inside" | grep -q '^oom_kill [1-9]' || why "memory.events inside: $inside"
  js=$(ob stats --format json oomd 2>&1) || why "stats: $js"
  [ "$(jnum "$js" memory_max)" = 33554432 ] || why "stats memory_max: $js"
  [ "$(jnum "$js" oom_kills)" -ge 1 ] || why "stats oom_kills: $js"
  ob rm -f oomd >/dev/null 2>&1 || why "rm -f oomd"
  [ ! -e "$d" ] || why "$d left after rm -f"
}
check memory-oom-events t_memory_events
ob rm -f oomd >/dev/null 2>&1

# --memory-swap is memory + swap (Docker): v2's memory.swap.max holds the
# swap alone; without it, as much swap as memory; -1 is unlimited.
t_memory_swap ()
{
  for a in "96m 67108864" "0 33554432" "-1 max"; do
    set -- $a
    if [ "$1" = 0 ]; then
      opt=
    else
      opt="--memory-swap $1"
    fi
    out=$(ob run --rm --network none --memory 32m $opt "$IMG" cat /sys/fs/cgroup/memory.swap.max 2>&1) ||
      why "--memory 32m $opt: $out"
    [ "$out" = "$2" ] || why "--memory 32m $opt: memory.swap.max is '$out', not $2"
  done
  out=$(ob run --rm --network none --memory 32m --memory-swap 16m "$IMG" true 2>&1) &&
    why "--memory-swap below --memory was accepted"
  return 0
}
check memory-swap t_memory_swap

# --pids-limit: forks beyond it fail with EAGAIN inside.
t_pids ()
{
  out=$(ob run --rm --network none --pids-limit 20 "$IMG" sh -c \
    'cat /sys/fs/cgroup/pids.max; n=0; while [ $n -lt 40 ]; do sleep 60 & n=$((n + 1)); echo started $n; done' 2>&1)
  [ "$(echo "$out" | head -n 1)" = 20 ] || why "pids.max inside: $out"
  echo "$out" | grep -q "Resource temporarily unavailable" || why "no EAGAIN from fork: $out"
  last=$(echo "$out" | sed -n 's/^started //p' | tail -n 1)
  [ -n "$last" ] && [ "$last" -lt 20 ] || why "$last background processes started under --pids-limit 20"
}
check pids-limit-eagain t_pids

# Devices: on v2 the device cgroup is a BPF filter: a device given
# read-only (one outside the standard list) opens for reading and not for
# writing; /dev/full (standard) opens for writing.
t_device_filter ()
{
  [ -c /dev/loop-control ] || { echo "no /dev/loop-control (the loop module)" >&2; return 1; }
  out=$(ob run --rm --network none --device /dev/loop-control:/dev/given:r "$IMG" sh -c \
    '(exec 3</dev/given) && echo read-ok; (exec 3>/dev/given) 2>/dev/null || echo write-refused; (exec 3>/dev/full) && echo full-ok' 2>&1)
  case $out in *read-ok*write-refused*full-ok*) ;; *) echo "$out" >&2; return 1 ;; esac
}
check device-filter t_device_filter

# --cpus, --cpu-shares, pause/unpause, stats, stop/rm on one busy sandbox:
# a shell loop that counts into a file on a volume.
mkdir -p /tmp/busy
chmod 1777 /tmp/busy
busy_id=
t_busy_start ()
{
  busy_id=$(ob run -d --name busy --network none --cpus 0.5 --cpu-shares 512 --memory 64m --pids-limit 50 \
    -v /tmp/busy:/busy "$IMG" sh -c 'i=0; while :; do i=$((i + 1)); echo $i >/busy/c; done' 2>&1) ||
    why "run -d: $busy_id"
  echo "$busy_id" >/tmp/busy.id
  wait_until 100 test -s /tmp/busy/c || why "the counter never started"
}
check busy-start t_busy_start
busy_id=$(cat /tmp/busy.id 2>/dev/null)
bd=$cg/ohbox/$busy_id

t_cpu ()
{
  [ "$(cat $bd/cpu.max)" = "50000 100000" ] || why "cpu.max is '$(cat $bd/cpu.max)'"
  # --cpu-shares 512 -> weight 1 + (512 - 2) * 9999 / 262142 = 20 (runc, crun).
  [ "$(cat $bd/cpu.weight)" = 20 ] || why "cpu.weight is '$(cat $bd/cpu.weight)', not 20"
  inside=$(ob exec busy cat /sys/fs/cgroup/cpu.max 2>&1)
  [ "$inside" = "50000 100000" ] || why "cpu.max inside: $inside"
  u0=$(key $bd/cpu.stat usage_usec)
  t0=$(centis)
  sleep 2
  u1=$(key $bd/cpu.stat usage_usec)
  t1=$(centis)
  thr=$(key $bd/cpu.stat nr_throttled)
  used=$((u1 - u0))
  wall=$(((t1 - t0) * 10000))
  echo "# --cpus 0.5: ${used} us of CPU in ${wall} us, throttled ${thr} periods" >&4
  # Loosely: at most 0.5 CPU plus slack (TCG timers are coarse).
  [ $((used * 100 / wall)) -le 70 ] || why "used $used us in $wall us under --cpus 0.5"
  [ "$used" -gt 0 ] || why "the loop used no CPU"
  # A loop that got near its quota was throttled.  (On a host too busy to
  # give the guest's vCPU half a core the loop never reaches it: then the
  # bound above is all that can be seen.)
  if [ "$thr" -lt 1 ]; then
    [ $((used * 100 / wall)) -lt 40 ] || why "nr_throttled is $thr after $used us in $wall us: the quota never stopped the loop"
    echo "# --cpus 0.5: the loop got too little CPU to reach the quota" >&4
  fi
}
check cpu-max-weight-usage t_cpu

t_pause ()
{
  ob pause busy >/dev/null 2>&1 || why "ohbox pause failed"
  [ "$(cat $bd/cgroup.freeze)" = 1 ] || why "cgroup.freeze is $(cat $bd/cgroup.freeze) after pause"
  [ "$(key $bd/cgroup.events frozen)" = 1 ] || why "cgroup.events: $(cat $bd/cgroup.events)"
  ob ps -a --format json | grep -q '"status": *"paused"' || why "ps does not say paused: $(ob ps -a --format json)"
  c0=$(cat /tmp/busy/c)
  sleep 1
  c1=$(cat /tmp/busy/c)
  [ "$c0" = "$c1" ] || why "the counter moved while paused: $c0 -> $c1"
  ob unpause busy >/dev/null 2>&1 || why "ohbox unpause failed"
  [ "$(cat $bd/cgroup.freeze)" = 0 ] || why "cgroup.freeze is $(cat $bd/cgroup.freeze) after unpause"
  [ "$(key $bd/cgroup.events frozen)" = 0 ] || why "cgroup.events after unpause: $(cat $bd/cgroup.events)"
  wait_until 50 sh -c "c=\$(cat /tmp/busy/c); [ -n \"\$c\" ] && [ \"\$c\" != '$c1' ]" ||
    why "the counter did not resume after unpause (still $c1)"
}
check pause-unpause t_pause

# ohbox stats reads the v2 files: compare with them.
t_stats ()
{
  u0=$(key $bd/cpu.stat usage_usec)
  t0=$(key $bd/cpu.stat nr_throttled)
  js=$(ob stats --format json busy 2>&1) || why "stats: $js"
  u1=$(key $bd/cpu.stat usage_usec)
  t1=$(key $bd/cpu.stat nr_throttled)
  su=$(jnum "$js" cpu_usage_usec)
  [ "$su" -ge "$u0" ] && [ "$su" -le "$u1" ] || why "cpu_usage_usec $su not within cpu.stat's $u0..$u1"
  [ "$(jnum "$js" memory_max)" = 67108864 ] || why "memory_max: $js"
  [ "$(jnum "$js" pids_max)" = 50 ] || why "pids_max: $js"
  pc=$(cat $bd/pids.current)
  [ "$(jnum "$js" pids_current)" = "$pc" ] || why "pids_current: $js, pids.current $pc"
  mc=$(jnum "$js" memory_current)
  [ "$mc" -gt 0 ] && [ "$mc" -le 67108864 ] || why "memory_current: $js"
  st=$(jnum "$js" cpu_nr_throttled)
  [ "$st" -ge "$t0" ] && [ "$st" -le "$t1" ] || why "cpu_nr_throttled $st not within cpu.stat's $t0..$t1"
  text=$(ob stats busy 2>&1) || why "stats (table): $text"
}
check stats t_stats

t_stop_rm ()
{
  ob stop -t 1 busy >/dev/null 2>&1 || why "ohbox stop failed"
  ob rm busy >/dev/null 2>&1 || why "ohbox rm failed"
  [ ! -e "$bd" ] || why "$bd left after rm"
  left=$(ps -o pid,args | grep 'busy/c' | grep -v grep)
  [ -z "$left" ] || why "processes left: $left"
}
check stop-rm t_stop_rm
ob rm -f busy >/dev/null 2>&1

# /sys/fs/cgroup inside: the sandbox's own cgroup (cgroup namespace root),
# cgroup2, read-only.
t_cgroupfs ()
{
  out=$(ob run --rm --network none --memory 48m "$IMG" sh -c \
    'cat /proc/self/cgroup; grep " /sys/fs/cgroup " /proc/mounts; cat /sys/fs/cgroup/memory.max;
     (echo 1 >/sys/fs/cgroup/cgroup.freeze) 2>/dev/null && echo WRITABLE; mkdir /sys/fs/cgroup/x 2>/dev/null && echo MKDIR; true' 2>&1) ||
    why "run: $out"
  echo "$out" | grep -qx '0::/' || why "/proc/self/cgroup is not 0::/: $out"
  echo "$out" | grep -q '^cgroup2 /sys/fs/cgroup cgroup2 ro,' || why "no read-only cgroup2 mount: $out"
  echo "$out" | grep -qx 50331648 || why "memory.max inside: $out"
  echo "$out" | grep -q 'WRITABLE\|MKDIR' && why "/sys/fs/cgroup is writable inside: $out"
  return 0
}
check sys-fs-cgroup t_cgroupfs

# ---------------------------------------------------------------- rootless
# As systemd does: user.slice/user-1000.slice/user@1000.service owned by
# uid 1000 with the controllers enabled down to it; the user's shell in a
# leaf below it.
deleg=$cg/user.slice/user-1000.slice/user@1000.service
leaf=$deleg/app.slice/shell.scope
mkdir -p /store/uhome /tmp/urun
chown 1000:1000 /store/uhome /tmp/urun
chmod 700 /tmp/urun
# as_user CGROUP CMD: runs the shell command CMD as uid 1000 from CGROUP
# (root moves the shell there first, as systemd starts a user's session).
as_user ()
{
  printf 'export HOME=/store/uhome XDG_RUNTIME_DIR=/tmp/urun\n%s\n' "$2" >/tmp/user-cmd.sh
  chmod 644 /tmp/user-cmd.sh
  sh -c "echo \$\$ >$1/cgroup.procs && exec su -s /bin/sh user -c 'sh /tmp/user-cmd.sh'"
}
t_deleg_setup ()
{
  echo "+memory +pids +cpu" >$cg/cgroup.subtree_control || why "enable controllers at the root"
  mkdir -p "$leaf" || why "mkdir $leaf"
  echo "+memory +pids +cpu" >$cg/user.slice/cgroup.subtree_control || why "enable in user.slice"
  echo "+memory +pids +cpu" >$cg/user.slice/user-1000.slice/cgroup.subtree_control || why "enable in user-1000.slice"
  for d in "$deleg" "$deleg/app.slice" "$leaf"; do
    chown 1000:1000 "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" "$d/cgroup.threads" || why "chown $d"
  done
  out=$(as_user "$leaf" "$OHBOX load oci:/payload/busybox:latest $IMG" 2>&1) || why "rootless load: $out"
}
check rootless-setup t_deleg_setup

t_rootless_deleg ()
{
  out=$(as_user "$leaf" "$OHBOX run --rm --network none --memory 32m --pids-limit 30 $IMG sh -c 'cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max'" 2>&1) ||
    why "rootless run: $out"
  echo "$out" | grep -qx 33554432 || why "memory.max inside: $out"
  echo "$out" | grep -qx 30 || why "pids.max inside: $out"
  echo "$out" | grep -qi warn && why "a warning with a delegated subtree: $out"
  id=$(as_user "$leaf" "$OHBOX run -d --network none --memory 40m $IMG sleep 600" 2>&1) || why "rootless run -d: $id"
  d=$deleg/ohbox/$id
  [ "$(cat $d/memory.max 2>&1)" = 41943040 ] || why "$d/memory.max: $(cat $d/memory.max 2>&1)"
  [ "$(stat -c %u $d)" = 1000 ] || why "$d is not owned by uid 1000"
  out=$(as_user "$leaf" "$OHBOX run --rm --network none --memory 32m $IMG dd if=/dev/zero of=/dev/null bs=64M count=1" 2>&1)
  r=$?
  [ "$r" = 137 ] || why "rootless dd under --memory 32m exited $r: $out"
  as_user "$leaf" "$OHBOX rm -f $id" >/dev/null 2>&1 || why "rootless rm -f"
  [ ! -e "$d" ] || why "$d left after rm -f"
}
check rootless-delegated t_rootless_deleg
as_user "$leaf" "$OHBOX ps -a -q | xargs -r $OHBOX rm -f" >/dev/null 2>&1

# Without delegation (the user's shell in the root cgroup, owned by root):
# runs without limits, one warning.
t_rootless_nodeleg ()
{
  out=$(as_user "$cg" "$OHBOX run --rm --network none --memory 32m $IMG sh -c 'echo ran'" 2>&1) ||
    why "rootless run without delegation: $out"
  echo "$out" | grep -qx ran || why "the command did not run: $out"
  n=$(echo "$out" | grep -ci 'cgroup')
  [ "$n" = 1 ] || why "$n cgroup warnings, not 1: $out"
}
check rootless-undelegated-warns t_rootless_nodeleg

# ---------------------------------------------------------------- leftovers
t_nothing_left ()
{
  left=$(find $cg/ohbox $deleg/ohbox -mindepth 1 -type d 2>/dev/null)
  [ -z "$left" ] || why "cgroups left: $left"
  [ "$(wc -l </proc/mounts)" = "$mounts_before" ] || why "mounts: $mounts_before before, now: $(grep -c . /proc/mounts)"
  ob ps -a --format json 2>&1 | grep -q '"id"' && why "sandboxes left: $(ob ps -a --format json 2>&1)"
  n=$(ps -o pid,args | grep -c 'sleep 600' | tr -d ' ')
  [ "$n" -le 1 ] || why "sleep processes left: $(ps -o pid,args | grep 'sleep 600')"
}
check nothing-left t_nothing_left
exit $rc
