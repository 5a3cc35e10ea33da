#!/bin/bash
# contrib/format.sh [--check]: formats every C source git tracks with
# .clang-format (Debian 12's clang-format 14), or with --check lists the
# files that differ from it and exits 1 (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
      echo "not formatted: $f (contrib/format.sh formats it)"
      bad=1
    fi
  done
  exit $bad
fi
clang-format -i "${files[@]}"
