#!/bin/bash
# mutations.sh: every deliberate bug of the mutation exercise
# (tests/mutations/*.patch, run by tests/mutate.sh) still applies to the
# code it is about, and names tests that exist. Code moves; a patch that no
# longer applies exercises nothing, and nobody notices until the exercise
# is run again. (Running the exercise itself builds the tree once per patch:
# too slow for the suite.)
. "$(dirname "$0")/../lib/common.sh"

test_patches_apply ()
{
  command -v git >/dev/null || skip "git is not installed"
  git -C "$OHBOX_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 || skip "the source tree is not a git checkout"
  local p stale=""
  for p in "$OHBOX_SRCDIR"/tests/mutations/*.patch; do
    git -C "$OHBOX_SRCDIR" apply --check "$p" 2>/dev/null || stale="$stale $(basename "$p")"
  done
  assert_eq "" "$stale" "patches that no longer apply (re-anchor them: tests/mutate.sh's header)"
}

# Each caught-by test (script/test) names a script of the suite, and a test
# of that name exists in the suite's sources (run_test in a script, a test
# function of a C or Python test program).
test_caught_by_tests_exist ()
{
  local p t script missing=""
  for p in "$OHBOX_SRCDIR"/tests/mutations/*.patch; do
    for t in $(sed -n 's/^# caught-by://p' "$p"); do
      script=${t%%/*}
      if ! [ -f "$OHBOX_SRCDIR/tests/integration/$script.sh" ] && ! [ -f "$OHBOX_SRCDIR/tests/unit/$script.c" ]; then
        missing="$missing $t"
      elif ! grep -rqE --exclude-dir=work --exclude-dir=mutations "(^|[^A-Za-z0-9_]|test_)${t#*/}([^A-Za-z0-9_]|\$)" \
        "$OHBOX_SRCDIR/tests"; then
        missing="$missing $t"
      fi
    done
  done
  assert_eq "" "$missing" "caught-by tests that do not exist"
}

run_test patches_apply test_patches_apply
run_test caught_by_tests_exist test_caught_by_tests_exist
