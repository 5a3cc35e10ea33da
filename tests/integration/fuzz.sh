#!/bin/bash
# fuzz.sh: the libFuzzer targets of fuzz/ (issue 8), briefly.
#
# Builds them (make fuzz-build: clang, ASan+UBSan), runs each for
# FUZZ_SECONDS (default 8) from its seeds in fuzz/corpus/NAME, FUZZ_JOBS
# (default 2) at a time, then replays every input under
# tests/fuzz-regressions/NAME/.  `make fuzz` runs this same script with
# FUZZ_SECONDS=60.  A crash leaves its input in $FUZZ_WORK/artifacts: once
# understood (and fixed), copy it to tests/fuzz-regressions/NAME/ under a
# name that says what it was.
#
# Environment: FUZZ_SECONDS, FUZZ_JOBS, FUZZ_TARGETS (names, space
# separated), FUZZ_WORK (corpus, logs and artifacts; default
# $OHBOX_TEST_WORK/fuzz), FUZZ_NO_BUILD=1 (use what fuzz/bin holds).
set -u
build=${OHBOX_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
src=${OHBOX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
seconds=${FUZZ_SECONDS:-8}
jobs=${FUZZ_JOBS:-2}
targets=${FUZZ_TARGETS:-reference oci auth-challenge authfile registries-conf seccomp layer zip cmdsplit upstream}
work=${FUZZ_WORK:-${OHBOX_TEST_WORK:-$build/tests/work}/fuzz}
bin=$build/fuzz/bin

if [ "${FUZZ_NO_BUILD:-}" != 1 ]; then
  if ! command -v clang >/dev/null 2>&1; then
    echo "SKIP: fuzz/all: clang is not installed (apt-get install clang)"
    exit 0
  fi
  mkdir -p "$work/logs"
  if ! make -C "$build" --no-print-directory fuzz-build >"$work/logs/build.log" 2>&1; then
    if grep -q 'clang was not found by configure' "$work/logs/build.log"; then
      echo "SKIP: fuzz/all: configure found no clang (install clang, then rerun configure)"
      exit 0
    fi
    echo "FAIL: fuzz/build: make fuzz-build failed (log: $work/logs/build.log)"
    tail -n 30 "$work/logs/build.log"
    exit 1
  fi
fi

mkdir -p "$work/logs" "$work/artifacts" "$work/tmp"
# The targets make their scratch directories here; a crashed one cannot
# remove its own, so the whole directory goes at the end.
export TMPDIR=$work/tmp
# Hangs and runaway memory are findings too: an input may take 10 s and
# 1.5 GB (ASan included) at most.
common=(-timeout=10 -rss_limit_mb=1536 -print_final_stats=1)

# run_target NAME: fuzzes NAME for $seconds; prints one result line.
run_target() {
  local t=$1 log=$work/logs/$1.log exe=$bin/fuzz-$1
  if [ ! -x "$exe" ]; then
    echo "FAIL: fuzz/$t: $exe was not built"
    return
  fi
  mkdir -p "$work/corpus/$t"
  local seeds=()
  [ -d "$src/fuzz/corpus/$t" ] && seeds=("$src/fuzz/corpus/$t")
  "$exe" "${common[@]}" -max_total_time="$seconds" -artifact_prefix="$work/artifacts/$t-" \
    "$work/corpus/$t" "${seeds[@]}" >"$log" 2>&1
  local rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ "$rc" -eq 0 ] && grep -q '^FUZZ-SKIP: ' "$log"; then
    echo "SKIP: fuzz/$t: $(sed -n 's/^FUZZ-SKIP: //p' "$log" | head -n 1)"
  elif [ "$rc" -eq 0 ]; then
    echo "PASS: fuzz/$t: ${execs:-?} inputs in ${seconds} s, corpus $(ls "$work/corpus/$t" | wc -l) files"
  else
    local what artifact
    what=$(grep -m1 -E 'fuzz check failed|^SUMMARY|ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error' "$log")
    artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
    echo "FAIL: fuzz/$t: ${what:-exit status $rc}; input: ${artifact:-none} (log: $log)"
  fi
}

# Two at a time (the machine has 2 cores): results are printed in order.
start=$SECONDS
pids=() names=()
for t in $targets; do
  run_target "$t" >"$work/logs/$t.result" &
  pids+=($!) names+=("$t")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
for t in "${names[@]}"; do cat "$work/logs/$t.result"; done

# Regression inputs: each is run once.
for t in $targets; do
  dir=$src/tests/fuzz-regressions/$t
  [ -d "$dir" ] || continue
  inputs=()
  for f in "$dir"/*; do [ -f "$f" ] && inputs+=("$f"); done
  [ ${#inputs[@]} -gt 0 ] || continue
  log=$work/logs/$t.regressions.log
  if [ ! -x "$bin/fuzz-$t" ]; then
    echo "FAIL: fuzz-regressions/$t: $bin/fuzz-$t was not built"
  elif "$bin/fuzz-$t" "${common[@]}" "${inputs[@]}" >"$log" 2>&1; then
    echo "PASS: fuzz-regressions/$t: ${#inputs[@]} inputs"
  else
    what=$(grep -m1 -E 'fuzz check failed|^SUMMARY|ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error' "$log")
    failed=$(grep '^Running: ' "$log" | tail -n 1 | sed 's/^Running: //')
    echo "FAIL: fuzz-regressions/$t: ${what:-crashed} on ${failed:-?} (log: $log)"
  fi
done
rm -rf "$work/tmp"
echo "# fuzzing took $((SECONDS - start)) s"
