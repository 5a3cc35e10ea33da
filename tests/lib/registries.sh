# tests/lib/registries.sh: the header of the scripts that pull from test
# registries (pull.sh, pull-auth.sh, pull-conf.sh, pull-faults.sh,
# pull-stream.sh, pull-tty.sh, layout.sh, store.sh). Source after
# common.sh; it sources registry.sh, images.sh and ohbox.sh and builds the
# test images. The registries: those the script's `setup_registries`
# starts and fills (defined before sourcing), else REG, a plain-HTTP
# registry holding test/busybox:latest; then `setup_more` where the script
# defines one. Both print why and return 1 on failure.
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

_registries_setup ()
{
  img_build || return 1
  if declare -F setup_registries >/dev/null; then
    setup_registries || return 1
  else
    reg_start http REG || return 1
    img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  fi
  if declare -F setup_more >/dev/null; then
    setup_more || return 1
  fi
}
t_setup_or_die setup _registries_setup
