/* strv.c: see strv.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

char *
ohbox_path_find (const char *path, const char *fallback, const char *name)
{
  cleanup_free char *copy = xstrdup (path && *path ? path : fallback);
  char *save = NULL;
  for (char *d = strtok_r (copy, ":", &save); d; d = strtok_r (NULL, ":", &save))
    {
      char *candidate = xasprintf ("%s/%s", d, name);
      if (access (candidate, X_OK) == 0)
        return candidate;
      free (candidate);
    }
  return NULL;
}

int
ohbox_exec_in_path (const char *file, char *const *argv, char *const *env)
{
  if (strchr (file, '/'))
    {
      execve (file, argv, env);
      return errno;
    }
  const char *path = ohbox_strv_env_get (env, "PATH");
  if (path == NULL)
    path = OHBOX_DEFAULT_PATH;
  int saved = ENOENT;
  char buf[4096];
  for (const char *p = path;;)
    {
      const char *colon = strchr (p, ':');
      size_t len = colon ? (size_t) (colon - p) : strlen (p);
      /* An empty entry is the current folder, as in execvp(3). */
      if (len == 0)
        snprintf (buf, sizeof buf, "%s", file);
      else
        snprintf (buf, sizeof buf, "%.*s/%s", (int) len, p, file);
      execve (buf, argv, env);
      if (errno == EACCES || errno == ENOEXEC || errno == EPERM)
        saved = errno;
      if (!colon)
        break;
      p = colon + 1;
    }
  return saved;
}
