/* strv.h: NULL-terminated string vectors (argv, environments) and PATH
 * lookup, the one implementation the library's modules, the CLI and the
 * executor share. */
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

/* The PATH of a sandbox's command when its environment has none. */
#define OHBOX_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The first NAME in the folders of PATH (colon-separated; NULL or "": in
 * FALLBACK) that the caller may execute, xmalloc'd; NULL when none is. */
char *ohbox_path_find (const char *path, const char *fallback, const char *name);
/* execve of FILE as execvpe(3) does it, over the PATH of ENV (none:
 * OHBOX_DEFAULT_PATH) when FILE has no slash, without allocating (safe in
 * a child of clone or vfork). Returns only on failure: ENOENT when FILE was
 * found nowhere, else the error of a candidate that was found but could not
 * run (EACCES, ENOEXEC, EPERM), or execve's error for a FILE with a slash. */
int ohbox_exec_in_path (const char *file, char *const *argv, char *const *env);

#endif
