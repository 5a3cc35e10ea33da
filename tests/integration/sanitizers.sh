#!/bin/bash
# sanitizers.sh: the sanitizer build (configure --enable-sanitizers, what CI
# runs) reports each kind of fault it is there for, at the faulty line:
# UBSan's checks (traps that ASan reports, configure.ac), ASan's and
# LeakSanitizer's, through tests/lib/sanitizer-probe, which is linked with
# the ASan defaults every program of the build has (common/error.c).
. "$(dirname "$0")/../lib/common.sh"

PROBE=$OHBOX_BUILDDIR/tests/lib/sanitizer-probe
SRC=$OHBOX_SRCDIR/tests/lib/sanitizer-probe.c

# line TAG: the source line marked "probe: TAG".
line ()
{
  grep -n "probe: $1 \*/" "$SRC" | cut -d: -f1
}

need_probe ()
{
  t_sanitized || skip "not a sanitizer build (configure --enable-sanitizers)"
  [ -x "$PROBE" ] || skip "$PROBE is not built (make check-programs)"
}

# probe KIND: runs the probe, which must fail with ASan's report.
probe ()
{
  need_probe
  assert_exit 1 "$PROBE" "$1"
}

test_undefined_behaviour_trapped ()
{
  local kind
  for kind in overflow shift; do
    probe "$kind"
    assert_contains "$err" "ERROR: AddressSanitizer: ILL"
    assert_match "$err" "SUMMARY: AddressSanitizer: ILL .*sanitizer-probe\.c:$(line "$kind") in main"
  done
}

test_heap_overflow ()
{
  probe heap
  assert_contains "$err" "ERROR: AddressSanitizer: heap-buffer-overflow"
  assert_match "$err" "#0 .* in main .*sanitizer-probe\.c:$(line heap)"
}

test_leak ()
{
  probe leak
  assert_contains "$err" "ERROR: LeakSanitizer: detected memory leaks"
  assert_match "$err" "Direct leak of 4096 byte\(s\) in 1 object\(s\) allocated from:"
  assert_contains "$err" "in leak_block"
}

test_nothing_wrong ()
{
  need_probe
  assert_ok "$PROBE" none
  assert_eq "" "$err" "stderr of a clean run"
}

run_test undefined_behaviour_trapped test_undefined_behaviour_trapped
run_test heap_overflow test_heap_overflow
run_test leak test_leak
run_test nothing_wrong test_nothing_wrong
