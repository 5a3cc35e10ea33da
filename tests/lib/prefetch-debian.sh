#!/bin/bash
# tests/lib/prefetch-debian.sh [agent] [debian]: builds the cached Debian test
# images (tests/lib/images.sh: debootstrap from the apt mirror, minutes the
# first time, mostly waiting for downloads) so that tests/run-tests.sh can do
# it in the background while the other tests run. The tests that use the
# images take the same cache locks: they wait for a build under way, or do
# it themselves when this one failed (they then report why).
. "$(dirname "$0")/common.sh"
. "$T_LIB/images.sh"
for what in "$@"; do
  case $what in
    agent) img_build_debian_agent ;;
    debian) img_build_debian ;;
    *) echo "prefetch-debian.sh: unknown image $what" >&2 ;;
  esac
done
