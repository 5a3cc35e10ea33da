# tests/lib/sandbox.sh: the header of the scripts that run sandboxes of the
# busybox image as root (run.sh, run-ci.sh, run-attacks.sh, exec.sh,
# attach.sh, devices.sh, footprint.sh, state-compat.sh). Source after
# common.sh; it sources images.sh and ohbox.sh and gives:
#   OHBOX_RUNROOT   the sandboxes' state, in the script's temp dir (removed with it)
#   BB              the busybox image's name once loaded
#   load_bb         loads it into the test's store (t_load_busybox, ohbox.sh)
# and skips the script unless it runs as root with the test images built.
# A script that needs more defines `setup_more` (prints why and returns 1
# when something is missing) before sourcing this file.
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run

_sandbox_setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups, device nodes)"; return 1; }
  if declare -F setup_more >/dev/null; then
    setup_more || return 1
  fi
  img_build || return 1
}
t_setup_or_die setup _sandbox_setup

BB=localhost/busybox:latest

load_bb ()
{
  t_load_busybox
}
