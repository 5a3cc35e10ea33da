#!/bin/bash
# Runs the whole test suite: every unit test program, then every integration
# script (tests/integration/*.sh; those that use the Debian images last). Each prints PASS:/FAIL:/SKIP: lines; this
# runner shows them, keeps full logs under $OHBOX_TEST_WORK/logs, and ends
# with the line "N passed, N failed, N skipped". Exit status 1 if anything failed.
#
# Usage: tests/run-tests.sh [PATTERN...]   (only tests whose file name contains a PATTERN;
#        =NAME selects exactly the test NAME: `=run` is run.sh, not run-ci.sh)
set -u
builddir=${OHBOX_BUILDDIR:-$(pwd)}
srcdir=${OHBOX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
export OHBOX_BUILDDIR=$builddir OHBOX_SRCDIR=$srcdir
export OHBOX_TEST_WORK=${OHBOX_TEST_WORK:-$builddir/tests/work}
mkdir -p "$OHBOX_TEST_WORK/logs"

passed=0 failed=0 skipped=0
selected() {
  [ $# -gt 1 ] || return 0
  local name=$1; shift
  for p in "$@"; do
    case $p in
      =*) [ "$name" = "${p#=}" ] && return 0 ;;
      *) case $name in *"$p"*) return 0 ;; esac ;;
    esac
  done
  return 1
}

run_one() {  # run_one NAME COMMAND...
  local name=$1; shift
  local log="$OHBOX_TEST_WORK/logs/$name.log"
  local start=$SECONDS
  "$@" >"$log" 2>&1 </dev/null
  local rc=$?
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
  echo "# $name: $p passed, $f failed, $s skipped ($((SECONDS - start)) s)"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# The scripts that use the Debian test images (debootstrap from the apt
# mirror: minutes on a machine without the cache, mostly spent waiting for
# downloads) run last, and the images are built in the background from the
# start, while the other tests run. agent-user needs the agent image always;
# build and devices need the plain one with OHBOX_TEST_DEBIAN=1.
early=() late=() prefetch=()
for t in "$srcdir"/tests/integration/*.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  selected "$name" "$@" || continue
  if grep -q 'img_build_debian' "$t"; then
    late+=("$t")
    grep -q 'img_build_debian_agent' "$t" && [[ " ${prefetch[*]} " != *" agent "* ]] && prefetch+=(agent)
    [ "${OHBOX_TEST_DEBIAN:-0}" = 1 ] && grep -q 'img_build_debian ' "$t" &&
      [[ " ${prefetch[*]} " != *" debian "* ]] && prefetch+=(debian)
  else
    early+=("$t")
  fi
done
prefetch_pid=
if [ ${#prefetch[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then
  # its own session: the whole process tree goes if this runner is stopped
  setsid bash "$srcdir/tests/lib/prefetch-debian.sh" "${prefetch[@]}" \
    >"$OHBOX_TEST_WORK/logs/prefetch-debian.log" 2>&1 </dev/null &
  prefetch_pid=$!
  trap '[ -z "$prefetch_pid" ] || kill -TERM -- "-$prefetch_pid" 2>/dev/null' EXIT
fi

for t in "$builddir"/tests/unit/test-*; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  case $t in *.c|*.o) continue ;; esac
  name=$(basename "$t")
  selected "$name" "$@" || continue
  run_one "$name" "$t"
done

for t in "${early[@]}" "${late[@]}"; do
  run_one "$(basename "$t" .sh)" bash "$t"
done
if [ -n "$prefetch_pid" ]; then
  wait "$prefetch_pid" 2>/dev/null
  prefetch_pid=
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
