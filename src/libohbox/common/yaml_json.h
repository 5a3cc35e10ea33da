/* yaml_json.h: one YAML document read into a jansson value, so that a format
 * that comes as JSON or YAML (CDI specs) has one reader: the JSON one. */
#ifndef OHBOX_YAML_JSON_H
#define OHBOX_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

/* The value of the single document in TEXT (LEN bytes); NULL with a
 * message that starts with WHAT (the file's name) and gives the line and
 * column of the problem.  Refuses aliases, more than one document and
 * nesting deeper than 64. */
json_t *ohbox_yaml_to_json (const char *text, size_t len, const char *what, ohbox_error_t *err);

#endif
