#!/bin/bash
# install.sh: what `make install` puts in place is a working ohbox on its own.
# Installs into a DESTDIR, then, in a private mount namespace where the
# DESTDIR's usr/local is bind-mounted over /usr/local and the source and
# build tree is hidden under an empty tmpfs, runs the installed binary with
# none of the test's OHBOX_* overrides: it must find its executor, the
# executor's sources and closure.sh at the compiled-in installed paths, build
# a runtime image, and run a sandbox of it that serves the action protocol.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (mount namespace, sandboxes)"; return 1; }
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (apt-get install bash-static)"; return 1; }
  command -v curl >/dev/null || { echo "curl is not installed"; return 1; }
  img_build || return 1
  DEST=$T_TMP/dest
  make -s -C "$OHBOX_BUILDDIR" install DESTDIR="$DEST" >"$T_TMP/install.log" 2>&1 ||
    { tail -20 "$T_TMP/install.log"; return 1; }
  PREFIX=$(sed -n 's/^prefix = //p' "$OHBOX_BUILDDIR/Makefile")
}
t_setup_or_die setup setup

# Everything the compiled-in paths name, and a man page for each command.
test_installed_files ()
{
  local p=$DEST$PREFIX f cmd
  for f in bin/ohbox libexec/ohbox/ohbox-executor share/ohbox/closure.sh share/ohbox/seccomp/default.json \
    share/man/man1/ohbox.1 share/man/man1/ohbox-runc.1 share/man/man8/ohbox-executor.8; do
    assert_file_exists "$p/$f"
  done
  assert_ne "" "$(ls "$p/share/ohbox/executor-src/"*.c 2>/dev/null)" "installed executor sources"
  for cmd in $("$p/bin/ohbox" --help | awk '/^Commands:/ {on = 1; next} /^$/ {on = 0} on {print $1}'); do
    assert_file_exists "$p/share/man/man1/ohbox-$cmd.1"
  done
}

# long_options: the long options in the text on stdin but --help, one a
# line, sorted (roff's `\-` read as `-`).
long_options ()
{
  sed 's/\\-/-/g' | { grep -o -e '--[a-z][a-z0-9-]*' || true; } | { grep -v -x -e --help || true; } | sort -u
}

# Every option a command's --help offers is in its man page (the global
# ones in ohbox(1), ohbox-executor's in ohbox-executor(8)), --help aside:
# the two do not drift apart. (A man page may name more: options of other
# commands it refers to.)
test_help_options_in_man ()
{
  local cmd missing
  missing=$(comm -23 <("$OHBOX_BIN" --help | long_options) <(long_options <"$OHBOX_SRCDIR/man/ohbox.1"))
  assert_eq "" "$missing" "options of ohbox --help missing from ohbox(1)"
  for cmd in $("$OHBOX_BIN" --help | awk '/^Commands:/ {on = 1; next} /^$/ {on = 0} on {print $1}'); do
    missing=$(comm -23 <("$OHBOX_BIN" "$cmd" --help | long_options) \
      <(long_options <"$OHBOX_SRCDIR/man/ohbox-$cmd.1"))
    assert_eq "" "$(echo $missing)" "options of ohbox $cmd --help missing from ohbox-$cmd(1)"
  done
  missing=$(comm -23 <("$OHBOX_BUILDDIR/ohbox-executor" --help | long_options) \
    <(long_options <"$OHBOX_SRCDIR/man/ohbox-executor.8"))
  assert_eq "" "$(echo $missing)" "options of ohbox-executor --help missing from ohbox-executor(8)"
}

test_installed_ohbox_builds_and_runs ()
{
  local box=$T_TMP/box
  mkdir -p "$box"
  cp -a "$IMG_BUSYBOX" "$box/busybox-layout"
  # The script runs in the private mount namespace; only $box is visible
  # there (at /mnt/ohbox-install), the source tree is not.
  cat >"$box/job.sh" <<EOF
set -e
mount --make-rprivate /
mount --bind "$box" /mnt
mount --bind "$DEST$PREFIX" "$PREFIX"
mount -t tmpfs none "$OHBOX_SRCDIR"
[ "$OHBOX_BUILDDIR" = "$OHBOX_SRCDIR" ] || mount -t tmpfs none "$OHBOX_BUILDDIR"
cd /
unset OHBOX_EXECUTOR OHBOX_EXECUTOR_SRCDIR OHBOX_CLOSURE_SH
export OHBOX_RUNROOT=/mnt/run
o="$PREFIX/bin/ohbox --root /mnt/root"
\$o load oci:/mnt/busybox-layout:latest localhost/busybox:latest
\$o build --no-pull --format json localhost/busybox:latest >/mnt/build.json
image=\$(sed -n 's/.*"image": *"\([^"]*\)".*/\1/p' /mnt/build.json | head -1)
port=\$1
\$o run -d --rm --executor-port "\$port" -e SESSION_API_KEY=k "\$image" >/mnt/sid 2>/mnt/run.err
for i in \$(seq 100); do curl -sf "http://127.0.0.1:\$port/alive" >/dev/null && break; sleep 0.1; done
curl -sf -X POST -H "X-Session-API-Key: k" -H 'Content-Type: application/json' \
  "http://127.0.0.1:\$port/execute_action" \
  -d '{"action": {"action": "run", "args": {"command": "echo from-installed"}, "timeout": 30}}' >/mnt/obs.json
\$o stop "\$(cat /mnt/sid)" >/dev/null
\$o ps -a -q >/mnt/ps
EOF
  local port
  port=$(t_free_port)
  assert_ok unshare -m sh "$box/job.sh" "$port"
  assert_jq "$(cat "$box/build.json")" '.path == "from-scratch"' "build with the installed ohbox"
  assert_jq "$(cat "$box/obs.json")" '.content == "from-installed"' "action in the installed ohbox's sandbox"
  assert_eq "$(cat "$box/ps")" "" "sandboxes left"
  assert_eq "$(grep -c " $box" /proc/self/mountinfo)" "0" "mounts left"
}

run_test installed_files test_installed_files
run_test help_options_in_man test_help_options_in_man
run_test installed_ohbox_builds_and_runs test_installed_ohbox_builds_and_runs
