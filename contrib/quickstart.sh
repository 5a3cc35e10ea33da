#!/bin/bash
# contrib/quickstart.sh: on a fresh Debian 12 machine, as root: installs the
# build and test dependencies, builds ohbox, installs it (make install, into
# /usr/local), and runs the main job end to end (contrib/demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
contrib/install-deps.sh
./autogen.sh
./configure
make -j"$(nproc)"
make install
contrib/demo.sh /usr/local/bin/ohbox
