# tests/lib/registry_busybox.sh: the header of the scripts that pull from
# a test registry (pull-faults.sh, pull-stream.sh, pull-tty.sh,
# layout.sh). Source after common.sh; it sources registry.sh, images.sh
# and ohbox.sh, builds the test images and starts REG, a plain-HTTP
# registry holding test/busybox:latest. A script that needs more there
# defines `setup_more` (run after, returns 1 on failure) before sourcing.
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

_registry_busybox_setup ()
{
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  if declare -F setup_more >/dev/null; then
    setup_more || return 1
  fi
}
t_setup_or_die setup _registry_busybox_setup
