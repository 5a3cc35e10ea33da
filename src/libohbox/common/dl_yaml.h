/* dl_yaml.h: libyaml, loaded on first use (dl.h).
 *
 * Include this instead of <yaml.h>: the functions below keep their names and
 * go through the table ohbox_dl_yaml.  Entry points call ohbox_dl_yaml_load ()
 * first.  Only CDI specs are YAML, so no other command maps the library. */
#ifndef OHBOX_DL_YAML_H
#define OHBOX_DL_YAML_H

#include <yaml.h>

#include "common/dl.h"

#define OHBOX_DL_YAML_SYMBOLS(X)                                                                                       \
  X (yaml_parser_initialize)                                                                                           \
  X (yaml_parser_set_input_string)                                                                                     \
  X (yaml_parser_parse)                                                                                                \
  X (yaml_parser_delete)                                                                                               \
  X (yaml_event_delete)

/* The table and loader of libyaml (loaded once). */
OHBOX_DL_DECLARE (yaml, OHBOX_DL_YAML_SYMBOLS);

#define yaml_parser_initialize (ohbox_dl_yaml.yaml_parser_initialize)
#define yaml_parser_set_input_string (ohbox_dl_yaml.yaml_parser_set_input_string)
#define yaml_parser_parse (ohbox_dl_yaml.yaml_parser_parse)
#define yaml_parser_delete (ohbox_dl_yaml.yaml_parser_delete)
#define yaml_event_delete (ohbox_dl_yaml.yaml_event_delete)

#endif
