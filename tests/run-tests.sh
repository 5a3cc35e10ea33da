#!/bin/bash
# Runs the whole test suite: every unit test program, then every integration
# script (tests/integration/*.sh; those that use the Debian images last), up
# to OHBOX_TEST_JOBS at a time (default: the number of CPUs). Each prints
# PASS:/FAIL:/SKIP: lines; this runner shows them when the program or script
# ends, keeps full logs under $OHBOX_TEST_WORK/logs, and ends with the line
# "N passed, N failed, N skipped". Exit status 1 if anything failed.
#
# Usage: tests/run-tests.sh [PATTERN...]   (only tests whose file name contains a PATTERN;
#        =NAME selects exactly the test NAME: `=run` is run.sh, not run-ci.sh)
#
# Isolation of concurrent scripts. As root, each script runs in a network and
# mount namespace of its own (its own loopback, ohbox0 bridge, nftables and
# OHBOX_NETROOT leases), so that two scripts never see each other's sandboxes
# on the network. A script says what else it needs in a comment line
#   # run-tests: WORD...
# host-network  runs in the host's namespaces (pasta copies the host's
#               routes): one such script at a time.
# lock=NAME     never runs beside another script holding lock NAME (users:
#               useradd, /etc/subuid).
# alone         runs with nothing else (a qemu guest, load measurements).
set -u
builddir=${OHBOX_BUILDDIR:-$(pwd)}
srcdir=${OHBOX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
export OHBOX_BUILDDIR=$builddir OHBOX_SRCDIR=$srcdir
export OHBOX_TEST_WORK=${OHBOX_TEST_WORK:-$builddir/tests/work}
mkdir -p "$OHBOX_TEST_WORK/logs"
max_jobs=${OHBOX_TEST_JOBS:-$(nproc)}
[ "$max_jobs" -ge 1 ] 2>/dev/null || max_jobs=1
durations=$OHBOX_TEST_WORK/durations

passed=0 failed=0 skipped=0
selected ()
{
  [ $# -gt 1 ] || return 0
  local name=$1
  shift
  for p in "$@"; do
    case $p in
      =*) [ "$name" = "${p#=}" ] && return 0 ;;
      *) case $name in *"$p"*) return 0 ;; esac ;;
    esac
  done
  return 1
}

# report NAME RC SECONDS: the PASS/FAIL/SKIP lines of NAME's log, its tail on
# a failure, and its counts added to the totals.
report ()
{
  local name=$1 rc=$2 secs=$3
  local log="$OHBOX_TEST_WORK/logs/$name.log"
  local p f s
  p=$(grep -c '^PASS: ' "$log")
  f=$(grep -c '^FAIL: ' "$log")
  s=$(grep -c '^SKIP: ' "$log")
  grep -E '^(PASS|FAIL|SKIP): ' "$log"
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL: $name: exited with status $rc without reporting a failure (see $log)"
    tail -n 20 "$log" | sed 's/^/    /'
    f=$((f + 1))
  elif [ "$f" -gt 0 ]; then
    echo "---- last lines of $log"
    tail -n 30 "$log" | sed 's/^/    /'
  fi
  if [ $((p + f + s)) -eq 0 ]; then
    echo "FAIL: $name: ran no test (see $log)"
    f=1
  fi
  echo "# $name: $p passed, $f failed, $s skipped ($secs s)"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  echo "$name $secs" >>"$durations.new"
}

# The words of a script's "# run-tests:" lines.
needs ()
{
  sed -n 's/^# run-tests: *//p' "$1" | tr '\n' ' '
}

# The queue: unit programs, scripts that run alone, the others by their last
# duration (longest first, so that the end is not one long script; the last
# local run's, or tests/durations on a fresh tree), the users
# of the Debian images last (their images are built in the background from the
# start: agent-user needs the agent image always, build and devices the plain
# one with OHBOX_TEST_DEBIAN=1; the prefetch runs in the host's network, the
# scripts find its images in the cache).
queue=() alone=() middle=() late=() prefetch=()
for t in "$builddir"/tests/unit/test-*; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  case $t in *.c | *.o) continue ;; esac
  selected "$(basename "$t")" "$@" && queue+=("$t")
done
for t in "$srcdir"/tests/integration/*.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  selected "$name" "$@" || continue
  if grep -q 'img_build_debian' "$t"; then
    late+=("$t")
    grep -q 'img_build_debian_agent' "$t" && [[ " ${prefetch[*]} " != *" agent "* ]] && prefetch+=(agent)
    [ "${OHBOX_TEST_DEBIAN:-0}" = 1 ] && grep -q 'img_build_debian ' "$t" &&
      [[ " ${prefetch[*]} " != *" debian "* ]] && prefetch+=(debian)
  elif [[ " $(needs "$t") " == *" alone "* ]]; then
    alone+=("$t")
  else
    middle+=("$t")
  fi
done
known=$durations
[ -s "$known" ] || known=$srcdir/tests/durations
if [ ${#middle[@]} -gt 1 ] && [ -s "$known" ]; then
  mapfile -t middle < <(for t in "${middle[@]}"; do
    n=$(basename "$t" .sh)
    echo "$(awk -v n="$n" '$1 == n { print $2 }' "$known" | tail -n 1) $t"
  done | sort -k1,1nr -s | cut -d' ' -f2-)
fi
queue+=("${alone[@]}" "${middle[@]}" "${late[@]}")
rm -f "$durations.new"

prefetch_pid=
declare -A job_name=() job_start=() job_words=() held=()
cleanup ()
{
  local pid
  for pid in "${!job_name[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null
  done
  [ -z "$prefetch_pid" ] || kill -TERM -- "-$prefetch_pid" 2>/dev/null
  # A job removes its network state directory when it ends; those stopped
  # above, once their scripts' own cleanup is done (up to 10 s).
  local i
  for ((i = 0; i < 50; i++)); do
    [ -n "$(jobs -pr)" ] || break
    sleep 0.2
  done
  rm -rf "/run/ohbox-net-test-$$-"*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ ${#prefetch[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then
  # its own session: the whole process tree goes if this runner is stopped
  setsid bash "$srcdir/tests/lib/prefetch-debian.sh" "${prefetch[@]}" \
    >"$OHBOX_TEST_WORK/logs/prefetch-debian.log" 2>&1 </dev/null &
  prefetch_pid=$!
fi

# can_start WORDS: whether a job that needs WORDS may start beside the
# running ones.
can_start ()
{
  local w
  [ ${#job_name[@]} -lt "$max_jobs" ] || return 1
  [[ " $1 " != *" alone "* ]] || [ ${#job_name[@]} -eq 0 ] || return 1
  [ -z "${held[alone]:-}" ] || return 1
  for w in $1; do
    case $w in
      lock=* | host-network) [ -z "${held[$w]:-}" ] || return 1 ;;
    esac
  done
  return 0
}

# start PATH: the program or script in the background, in a session of its
# own (stopped as a whole with the runner) and, as root and unless it needs
# the host's network, in namespaces of its own.
start ()
{
  local t=$1 name words w
  case $t in
    *.sh) name=$(basename "$t" .sh) words=$(needs "$t") ;;
    *) name=$(basename "$t") words= ;;
  esac
  local log="$OHBOX_TEST_WORK/logs/$name.log"
  local cmd=("$t")
  [[ $t != *.sh ]] || cmd=(bash "$t")
  if [ "$(id -u)" = 0 ] && [ "$max_jobs" -gt 1 ] && [[ " $words " != *" host-network "* ]]; then
    cmd=(env "OHBOX_NETROOT=/run/ohbox-net-test-$$-$name" unshare --net --mount --propagation private -- bash -c '
      ip link set lo up || exit 1
      "$@"; rc=$?; rm -rf "$OHBOX_NETROOT"; exit $rc' run-tests "${cmd[@]}")
  fi
  setsid "${cmd[@]}" >"$log" 2>&1 </dev/null &
  local pid=$!
  job_name[$pid]=$name job_start[$pid]=$SECONDS job_words[$pid]=$words
  for w in $words; do
    case $w in lock=* | host-network | alone) held[$w]=$pid ;; esac
  done
}

# finish: waits for one job to end and reports it.
finish ()
{
  local pid rc w
  wait -n -p pid
  rc=$?
  [ -n "${job_name[$pid]:-}" ] || return 0
  report "${job_name[$pid]}" "$rc" $((SECONDS - job_start[$pid]))
  for w in ${job_words[$pid]}; do
    [ "${held[$w]:-}" != "$pid" ] || unset "held[$w]"
  done
  unset "job_name[$pid]" "job_start[$pid]" "job_words[$pid]"
}

while [ ${#queue[@]} -gt 0 ] || [ ${#job_name[@]} -gt 0 ]; do
  started=
  for i in "${!queue[@]}"; do
    t=${queue[$i]}
    words=
    [[ $t != *.sh ]] || words=$(needs "$t")
    # a script that runs alone waits for the others to end, and nothing
    # behind it starts meanwhile
    if [[ " $words " == *" alone "* ]] && [ ${#job_name[@]} -gt 0 ]; then
      break
    fi
    if can_start "$words"; then
      start "$t"
      unset "queue[$i]"
      queue=("${queue[@]}")
      started=1
      break
    fi
  done
  [ -n "$started" ] || finish
done
if [ -n "$prefetch_pid" ]; then
  wait "$prefetch_pid" 2>/dev/null
  prefetch_pid=
fi
# the durations of this run, and the last known ones of what it did not run
if [ -s "$durations.new" ]; then
  awk 'NR == FNR { seen[$1] = 1; print; next } !($1 in seen)' "$durations.new" "$durations" \
    >"$durations.tmp" 2>/dev/null || cp "$durations.new" "$durations.tmp"
  mv -f "$durations.tmp" "$durations"
  rm -f "$durations.new"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
