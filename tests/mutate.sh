#!/bin/bash
# mutate.sh: the mutation exercise. Each tests/mutations/NAME.patch is a small
# deliberate bug in security-relevant code; its header names the tests that
# must catch it:
#
#   # what: the executor accepts an empty key or a prefix of the key
#   # tests: =executor           (tests/run-tests.sh patterns to run)
#   # caught-by: executor/auth_refused_without_or_with_wrong_key
#   # only: auth                 (optional: OHBOX_TEST_ONLY for those scripts)
#   # requires: /proc/kcore      (optional: a path the host must have)
#
# For each patch: apply it to the work tree, build (`make check
# TESTS_ARGS=none`), run those tests (as root inside a private network and
# mount namespace, so the bridge and nftables table of other builds on the
# host are not touched), revert it. A mutation is "caught" when one of the
# `caught-by` tests (script/test, as FAIL lines name them) fails; a failure
# of another test only is reported, not counted (a flaky test on a loaded
# machine is no catch). A mutation whose `requires` path this host lacks is
# skipped: no test here can see it. The tree is reverted and rebuilt at the
# end, also when interrupted.
#
# Usage: tests/mutate.sh [NAME|PATCH...]   (default: every patch)
# Exit status: 0 if every mutation was caught or skipped, 1 if one was
# missed, 2 on usage or setup errors. Logs: $OHBOX_TEST_WORK/logs/mutate-NAME.log.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src" || exit 2
export OHBOX_TEST_WORK=${OHBOX_TEST_WORK:-$src/tests/work}
mkdir -p "$OHBOX_TEST_WORK/logs"

patches=()
if [ $# -eq 0 ]; then
  patches=(tests/mutations/*.patch)
else
  for a in "$@"; do
    if [ -f "$a" ]; then patches+=("$a")
    elif [ -f "tests/mutations/$a.patch" ]; then patches+=("tests/mutations/$a.patch")
    else echo "mutate.sh: no mutation \`$a\` (see tests/mutations/)" >&2; exit 2
    fi
  done
fi

applied=
revert() {
  [ -n "$applied" ] || return 0
  git apply -R "$applied" || echo "mutate.sh: could not revert $applied: revert it by hand" >&2
  applied=
}
build() {
  nice make -j2 check TESTS_ARGS=none >"$1" 2>&1
}
on_exit() {
  local rc=$?
  if [ -n "$applied" ]; then
    revert
    build "$OHBOX_TEST_WORK/logs/mutate-rebuild.log" || echo "mutate.sh: the rebuild after revert failed" >&2
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

header() {  # header FIELD PATCH
  sed -n "s/^# $1: *//p" "$2" | head -1
}
catchers() {  # catchers LOG TEST...: those of TEST that failed in LOG; false if none
  local log=$1 t found=
  shift
  for t in "$@"; do
    grep -qF "FAIL: $t: " "$log" && found="$found${found:+ }$t"
  done
  [ -n "$found" ] && echo "$found"
}

missed=0 caught=0 skipped=0
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  log=$OHBOX_TEST_WORK/logs/mutate-$name.log
  tests=$(header tests "$p")
  caught_by=$(header caught-by "$p")
  only=$(header only "$p")
  requires=$(header requires "$p")
  if [ -z "$tests" ] || [ -z "$caught_by" ]; then
    echo "mutate.sh: $p needs a \`# tests:\` and a \`# caught-by:\` line" >&2
    exit 2
  fi
  if [ -n "$requires" ] && [ ! -e "$requires" ]; then
    echo "SKIP: $name: this host has no $requires"
    skipped=$((skipped + 1))
    continue
  fi
  if ! git apply --check "$p" 2>"$log"; then
    echo "STALE: $name: the patch no longer applies (see $log); make it again on today's code"
    missed=$((missed + 1))
    continue
  fi
  git apply "$p" && applied=$p
  if ! build "$log"; then
    echo "STALE: $name: the mutated tree does not build (see $log)"
    revert
    missed=$((missed + 1))
    continue
  fi
  # shellcheck disable=SC2086 # the patterns are words
  if [ "$(id -u)" = 0 ]; then
    OHBOX_TEST_ONLY=$only unshare --net --mount --propagation private sh -c \
      'ip link set lo up; export OHBOX_NETROOT=/run/ohbox-net-mutate-$$
       tests/run-tests.sh "$@"; rc=$?; rm -rf "$OHBOX_NETROOT"; exit $rc' \
      sh $tests >>"$log" 2>&1
  else
    OHBOX_TEST_ONLY=$only tests/run-tests.sh $tests >>"$log" 2>&1
  fi
  rc=$?
  revert
  if grep -q '^FAIL: .*: ran no test' "$log"; then
    echo "STALE: $name: a test script ran no test (\`# only:\` matches nothing in it?) (see $log)"
    missed=$((missed + 1))
  elif [ "$rc" -ne 0 ] && catchers "$log" $caught_by >/dev/null; then
    echo "caught: $name ($(header what "$p")) by $(catchers "$log" $caught_by)"
    caught=$((caught + 1))
  else
    echo "MISSED: $name ($(header what "$p")): none of $caught_by failed (see $log)"
    grep -E '^FAIL: ' "$log" | head -5 | sed 's/^/    other failure: /'
    missed=$((missed + 1))
  fi
done
build "$OHBOX_TEST_WORK/logs/mutate-rebuild.log" || { echo "mutate.sh: the rebuild after the exercise failed" >&2; exit 2; }
echo "$caught caught, $missed missed or stale, $skipped skipped"
[ "$missed" -eq 0 ]
