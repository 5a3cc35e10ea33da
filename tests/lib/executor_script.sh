# tests/lib/executor_script.sh: the start of the scripts that test
# ohbox-executor as a plain process, without the common.sh harness
# (executor.sh, executor-closure.sh, executor-flood.sh, executor-zip.sh).
# Sourced by bash after `set -u`: sets src and build (the source and build
# trees), exe (the built executor) and name (the script's, for its result
# lines), defines skip_all REASON (one SKIP line for the script, exit 0) and
# skips when the executor is not built.
src=${OHBOX_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${OHBOX_BUILDDIR:-$src}
exe=$build/ohbox-executor
name=$(basename "$0" .sh)

skip_all() {
  echo "SKIP: $name/all: $1"
  exit 0
}
[ -x "$exe" ] || skip_all "ohbox-executor is not built (make ohbox-executor)"
