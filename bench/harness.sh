# bench/harness.sh: what the benchmarks that drive the test harness
# themselves (pull.sh, build.sh) share, sourced after `set`: `here` (the
# source tree), the build tree (OHBOX_BUILDDIR, default the source tree),
# the harness's image cache in bench/cache, and OHBOX, the binary measured
# (which must be built).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export OHBOX_SRCDIR=$here OHBOX_BUILDDIR=${OHBOX_BUILDDIR:-$here}
export OHBOX_TEST_WORK=${OHBOX_TEST_WORK:-$here/bench/cache}
OHBOX=$OHBOX_BUILDDIR/ohbox
[ -x "$OHBOX" ] || { echo "bench: build ohbox first ($OHBOX)" >&2; exit 1; }
