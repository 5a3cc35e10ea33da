/* strv.h: NULL-terminated string vectors (argv, environments), the one
 * implementation the library's modules share. */
#ifndef OHBOX_STRV_H
#define OHBOX_STRV_H

#include <stddef.h>

/* Entries of V (NULL: 0). */
size_t ohbox_strv_len (char *const *v);
/* Frees V and its strings (NULL is fine). */
void ohbox_strv_free (char **v);
/* A copy of V and its strings (NULL for NULL). */
char **ohbox_strv_dup (char *const *v);
/* Appends S (taken over) to *V of *N entries, keeping it NULL-terminated. */
void ohbox_strv_push (char ***v, size_t *n, char *s);
/* Sets KV ("KEY=VALUE") in the environment *V of *N entries: replaces the
 * entry of KEY where there is one, else appends a copy. */
void ohbox_strv_env_set (char ***v, size_t *n, const char *kv);
/* The value of KEY in the environment V, or NULL. */
const char *ohbox_strv_env_get (char *const *v, const char *key);

#endif
