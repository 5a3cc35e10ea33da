#!/bin/bash
# contrib/format.sh [--check]: formats every C source git tracks with
# .clang-format (Debian 12's clang-format 14), or with --check lists the
# files that differ from it and exits 1 (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = --check ]; then
  # One clang-format for every file (each start costs ~70 ms): its
  # warnings name the files that differ.
  rc=0
  out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
  mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*\[-Wclang-format-violations\]$/\1/p' <<<"$out" | sort -u)
  for f in "${bad[@]}"; do
    echo "not formatted: $f (contrib/format.sh formats it)"
  done
  if [ "$rc" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
    echo "clang-format failed (exit $rc): $(tail -3 <<<"$out")" >&2
  fi
  [ "$rc" -eq 0 ] && [ ${#bad[@]} -eq 0 ]
  exit
fi
clang-format -i "${files[@]}"
