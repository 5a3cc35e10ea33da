#!/bin/bash
# executor-units.sh: runs the executor's unit test program (built by
# `make check` or `make tests/executor/test-executor-units`).
build=${OHBOX_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
t=$build/tests/executor/test-executor-units
if [ ! -x "$t" ]; then
  echo "SKIP: test-executor-units/all: not built (make tests/executor/test-executor-units)"
  exit 0
fi
exec "$t"
