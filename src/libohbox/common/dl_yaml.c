/* dl_yaml.c: loads libyaml on first use (dl.h, dl_yaml.h). */
#include "config.h"

#include "common/dl_yaml.h"

OHBOX_DL_DEFINE (yaml, OHBOX_DL_YAML_SYMBOLS, OHBOX_YAML_SONAME, "reading YAML device specs (CDI)", "libyaml-0-2")
