/* ci_gitlab_services.c: the services of an `ohbox ci gitlab` job (see
 * ci_gitlab.c and ohbox-ci(1)): read from the job response, pulled as the
 * job's image is, started in the job sandbox's network namespace, named in
 * its /etc/hosts. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ci_gitlab.h"

/* "KEY=VALUE" strings from the runner's [{"key","value"}] list. */
static char **
service_env (json_t *vars)
{
  size_t n = json_is_array (vars) ? json_array_size (vars) : 0;
  if (n > 4096)
    n = 4096;
  char **env = xcalloc (n + 1, sizeof (char *));
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    {
      json_t *v = json_array_get (vars, i);
      const char *key = json_string_value (json_object_get (v, "key"));
      const char *value = json_string_value (json_object_get (v, "value"));
      if (key && *key && strchr (key, '=') == NULL && value)
        env[k++] = xasprintf ("%s=%s", key, value);
    }
  return env;
}

/* A JSON array of strings as a NULL-terminated vector (NULL when absent). */
static char **
json_strv (json_t *arr)
{
  if (!json_is_array (arr) || json_array_size (arr) == 0 || json_array_size (arr) > OHBOX_SANDBOX_MAX_ARGS)
    return NULL;
  char **v = xcalloc (json_array_size (arr) + 1, sizeof (char *));
  size_t k = 0;
  for (size_t i = 0; i < json_array_size (arr); i++)
    {
      const char *s = json_string_value (json_array_get (arr, i));
      if (s)
        v[k++] = xstrdup (s);
    }
  return v;
}

static bool
hostname_ok (const char *h, size_t len)
{
  if (len == 0 || len > 253 || h[0] == '-' || h[0] == '.')
    return false;
  for (size_t i = 0; i < len; i++)
    {
      char c = h[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-'
            || c == '_'))
        return false;
    }
  return true;
}

/* As --add-host NAME:127.0.0.1 of the job's sandbox. */
static void
hostnames_add (struct hostnames *h, const char *name, size_t len)
{
  if (h->n < CI_MAX_HOSTNAMES && hostname_ok (name, len))
    h->v[h->n++] = xasprintf ("%.*s:127.0.0.1", (int) len, name);
}

void
ci_hostnames_clear (struct hostnames *h)
{
  for (size_t i = 0; i < h->n; i++)
    free (h->v[i]);
  h->n = 0;
}

/* The names GitLab's docker executor gives a service: each of its aliases
 * (separated by spaces or commas), and from the image without its tag,
 * "reg/group/img" as "reg__group__img" and "reg-group-img". */
static void
service_hostnames (struct hostnames *h, const char *image, const char *alias)
{
  for (const char *p = alias; p && *p;)
    {
      size_t len = strcspn (p, " ,");
      hostnames_add (h, p, len);
      p += len;
      p += strspn (p, " ,");
    }
  size_t len = strcspn (image, "@");
  const char *slash = memrchr (image, '/', len);
  const char *colon = memchr (slash ? slash : image, ':', len - (size_t) ((slash ? slash : image) - image));
  if (colon)
    len = (size_t) (colon - image);
  char a[512], b[512];
  size_t na = 0, nb = 0;
  for (size_t i = 0; i < len && na + 2 < sizeof a && nb + 1 < sizeof b; i++)
    {
      if (image[i] == '/')
        {
          a[na++] = '_';
          a[na++] = '_';
          b[nb++] = '-';
        }
      else
        a[na++] = b[nb++] = image[i];
    }
  hostnames_add (h, a, na);
  if (nb != na || memcmp (a, b, nb) != 0)
    hostnames_add (h, b, nb);
}

/* The job's services, from the job response (the custom executor exposes
 * them nowhere else): *RET the "services" array (NULL when none), *HOSTS
 * the names the docker executor would give them. */
int
ci_load_services (json_t *response, json_t **ret, struct hostnames *hosts, ohbox_error_t *err)
{
  *ret = NULL;
  json_t *services = json_object_get (response, "services");
  if (json_is_array (services) && json_array_size (services) > CI_MAX_SERVICES)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the job has %zu services; ohbox runs at most %d",
                        json_array_size (services), CI_MAX_SERVICES);
  if (json_is_array (services) && json_array_size (services) > 0)
    *ret = json_incref (services);
  for (size_t i = 0; *ret && i < json_array_size (*ret); i++)
    {
      json_t *sv = json_array_get (*ret, i);
      const char *image = json_string_value (json_object_get (sv, "name"));
      if (image && *image)
        service_hostnames (hosts, image, json_string_value (json_object_get (sv, "alias")));
    }
  return 0;
}

/* Each service runs in the job sandbox's network namespace: reachable on
 * 127.0.0.1, as with GitLab's Kubernetes executor, and under its names
 * (the job's /etc/hosts). */
int
ci_start_services (struct prepare_opts *po, const struct ci_job *job, double expires, json_t *services,
                   ohbox_error_t *err)
{
  int r = 0;
  for (size_t i = 0; r == 0 && i < json_array_size (services); i++)
    {
      json_t *s = json_array_get (services, i);
      const char *image = json_string_value (json_object_get (s, "name"));
      if (image == NULL || *image == '\0')
        continue;
      const char *alias = json_string_value (json_object_get (s, "alias"));
      printf ("Starting service %s%s%s\n", image, alias ? " as " : "", alias ? alias : "");
      char id[OHBOX_DIGEST_LEN + 1];
      if (ci_ensure_image (po, image, id, err) < 0)
        return -1;
      char name[CI_NAME_MAX];
      ci_service_sandbox_name (name, job->name, i);
      char **env = service_env (json_object_get (s, "variables"));
      char **entrypoint = json_strv (json_object_get (s, "entrypoint"));
      char **command = json_strv (json_object_get (s, "command"));
      /* A service runs its image's own command (no executor), in the job
       * sandbox's network namespace; from the id the pull gave. */
      cleanup_free char *network = xasprintf ("container:%s", job->name);
      struct ohbox_run_request o = { .image = id,
                                     .name = name,
                                     .env = env,
                                     .entrypoint = entrypoint,
                                     .command = command,
                                     .network = network,
                                     .limits = po->limits,
                                     .no_executor = true };
      struct ci_ctx c;
      r = ci_open (&c, err);
      if (r == 0)
        r = ci_start_detached (&c, &o, image, job, expires, err);
      ci_close (&c);
      ohbox_strv_free (env);
      ohbox_strv_free (entrypoint);
      ohbox_strv_free (command);
    }
  return r;
}
