#!/bin/bash
# Runs the whole test suite: every unit test program, then every integration
# script (tests/integration/*.sh). Each prints PASS:/FAIL:/SKIP: lines; this
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

for t in "$builddir"/tests/unit/test-*; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  case $t in *.c|*.o) continue ;; esac
  name=$(basename "$t")
  selected "$name" "$@" || continue
  run_one "$name" "$t"
done

for t in "$srcdir"/tests/integration/*.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  selected "$name" "$@" || continue
  run_one "$name" bash "$t"
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
