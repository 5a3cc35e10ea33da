/* toml_subset.h: a parser for the part of TOML that the containers
 * configuration files use (registries.conf and its drop-ins). Debian has no
 * TOML library for C.
 *
 * Understood: one statement per line, `key = value`, `[table.name]`,
 * `[[array.of.tables]]`, bare and quoted keys, comments, "basic" strings with
 * escapes, 'literal' strings, true/false, arrays of strings (multi-line,
 * trailing comma). Refused with "FILE:LINE: what" (OHBOX_ERR_USAGE):
 * numbers, dates, inline tables, multi-line strings, dotted keys, nested
 * arrays, control characters, strings over TOML_STRING_MAX bytes, arrays over
 * TOML_ARRAY_MAX elements. The caller gives meaning to tables and keys. */
#ifndef OHBOX_TOML_SUBSET_H
#define OHBOX_TOML_SUBSET_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define TOML_STRING_MAX 4096
#define TOML_ARRAY_MAX 1000
#define TOML_PATH_MAX 4 /* parts of a table name */

enum toml_type
{
  TOML_STRING,
  TOML_BOOL,
  TOML_ARRAY,
};

struct toml_value
{
  enum toml_type type;
  char *s;      /* TOML_STRING */
  bool b;       /* TOML_BOOL */
  char **items; /* TOML_ARRAY: NULL-terminated strings */
  size_t n;
};

/* Frees what V holds (a handler may have taken some with steal_pointer). */
void ohbox_toml_value_clear (struct toml_value *v);

struct toml_handler
{
  /* A `[PATH]` (or `[[PATH]]` when ARRAY) header at LINE. */
  int (*table) (void *data, char **path, size_t n, bool array, int line, ohbox_error_t *err);
  /* `KEY = V` at LINE (the line of the key for a multi-line array). */
  int (*keyval) (void *data, const char *key, struct toml_value *v, int line, ohbox_error_t *err);
};

/* Parses TEXT, calling H for each header and statement in order; stops at
 * the first error, from the parser or from a handler. */
int ohbox_toml_parse (const char *text, const char *filename, const struct toml_handler *h, void *data,
                      ohbox_error_t *err);

/* "FILE:LINE: message" ("FILE: message" when LINE <= 0) with
 * OHBOX_ERR_USAGE, control characters shown as '?'; for handlers too.
 * Returns -1. */
int ohbox_toml_error (ohbox_error_t *err, const char *file, int line, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

#endif
