/* strv.c: see strv.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "common/utils.h"

size_t
ohbox_strv_len (char *const *v)
{
  size_t n = 0;
  while (v != NULL && v[n] != NULL)
    n++;
  return n;
}

void
ohbox_strv_free (char **v)
{
  for (size_t i = 0; v != NULL && v[i] != NULL; i++)
    free (v[i]);
  free (v);
}

char **
ohbox_strv_dup (char *const *v)
{
  if (v == NULL)
    return NULL;
  size_t n = ohbox_strv_len (v);
  char **copy = xcalloc (n + 1, sizeof (char *));
  for (size_t i = 0; i < n; i++)
    copy[i] = xstrdup (v[i]);
  return copy;
}

void
ohbox_strv_push (char ***v, size_t *n, char *s)
{
  *v = xrealloc (*v, (*n + 2) * sizeof (char *));
  (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
}

static size_t
key_length (const char *kv)
{
  const char *eq = strchr (kv, '=');
  return eq ? (size_t) (eq - kv) : strlen (kv);
}

void
ohbox_strv_env_set (char ***v, size_t *n, const char *kv)
{
  size_t klen = key_length (kv);
  for (size_t i = 0; i < *n; i++)
    if (strncmp ((*v)[i], kv, klen) == 0 && (*v)[i][klen] == '=')
      {
        free ((*v)[i]);
        (*v)[i] = xstrdup (kv);
        return;
      }
  ohbox_strv_push (v, n, xstrdup (kv));
}

const char *
ohbox_strv_env_get (char *const *v, const char *key)
{
  size_t klen = strlen (key);
  for (size_t i = 0; v != NULL && v[i] != NULL; i++)
    if (strncmp (v[i], key, klen) == 0 && v[i][klen] == '=')
      return v[i] + klen + 1;
  return NULL;
}
