/* adopt.c: POST /ohbox/adopt, the session of a standby executor.
 *
 * A warm pool (`ohbox serve --pool`) keeps sandboxes started with
 * `ohbox-executor PORT ... --standby` and a pool key in SESSION_API_KEY that
 * only the server knows. On standby the executor serves /alive and
 * /server_info (so the server sees it ready) and this one request; every
 * other route answers 503. When the server hands the sandbox to a session
 * it sends, with the pool key:
 *
 *   {"session_api_key": "...",          the session's key (required): from
 *                                       now on the only one accepted
 *    "argv": ["60000", "--working-dir", "/workspace", "--username", "openhands",
 *             "--user-id", "1000", ...] the arguments the session's command
 *                                       gives the action execution server
 *                                       (optional; PORT must be this one)
 *    "environment": {"K": "V"},         over the executor's own (optional)
 *    "working_dir": "/openhands/code"}  the process's working directory
 *                                       (optional; created if missing)
 *
 * and the executor does what it does at startup without --standby with that
 * command line and environment: the user, the working directory, the
 * editor and the bash session, so the agent's first command finds what a
 * sandbox started cold for the same request gives it. The pool key is
 * never accepted again; a second adoption is refused (409). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "editor.h"
#include "executor.h"
#include "common/utils.h"

#define ADOPT_MAX_ARGS 256
#define ADOPT_MAX_ENV 4096
#define ADOPT_MAX_STRING 65536

static json_t *fail (int *status, char **detail, int code, const char *fmt, ...)
  __attribute__ ((format (printf, 4, 5)));

static json_t *
fail (int *status, char **detail, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  if (vasprintf (detail, fmt, ap) < 0)
    abort ();
  va_end (ap);
  *status = code;
  return NULL;
}

/* The body's argv as ARGV[0] = the program and the rest (NULL-terminated). */
static char **
body_argv (json_t *arr, int *argc)
{
  size_t n = json_array_size (arr);
  char **v = xcalloc (n + 2, sizeof (char *));
  v[0] = xstrdup ("ohbox-executor");
  for (size_t i = 0; i < n; i++)
    v[i + 1] = xstrdup (json_string_value (json_array_get (arr, i)));
  *argc = (int) n + 1;
  return v;
}

static void
free_argv (char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free (v[i]);
  free (v);
}

static bool
valid_string (json_t *v)
{
  return json_is_string (v) && json_string_length (v) <= ADOPT_MAX_STRING
         && strlen (json_string_value (v)) == json_string_length (v);
}

/* Checks the whole body before anything changes: a refused adoption leaves
 * the executor on standby. */
static json_t *
check_body (json_t *body, int *status, char **detail)
{
  if (!json_is_object (body))
    return fail (status, detail, 400, "Invalid request: the body must be a JSON object");
  json_t *key = json_object_get (body, "session_api_key");
  if (!valid_string (key) || json_string_length (key) == 0 || json_string_length (key) > 256)
    return fail (status, detail, 400, "Invalid request: `session_api_key` must be a non-empty string");
  json_t *argv = json_object_get (body, "argv"), *env = json_object_get (body, "environment");
  json_t *wd = json_object_get (body, "working_dir");
  if (argv && !json_is_null (argv))
    {
      if (!json_is_array (argv) || json_array_size (argv) > ADOPT_MAX_ARGS)
        return fail (status, detail, 400, "Invalid request: `argv` must be an array of at most %d strings",
                     ADOPT_MAX_ARGS);
      size_t i;
      json_t *a;
      json_array_foreach (argv, i, a) if (!valid_string (
                                            a)) return fail (status, detail, 400,
                                                             "Invalid request: `argv` must hold strings without NUL");
    }
  if (env && !json_is_null (env))
    {
      if (!json_is_object (env) || json_object_size (env) > ADOPT_MAX_ENV)
        return fail (status, detail, 400, "Invalid request: `environment` must be an object of at most %d strings",
                     ADOPT_MAX_ENV);
      const char *k;
      json_t *v;
      json_object_foreach (env, k, v)
      {
        if (*k == '\0' || strchr (k, '=') || !valid_string (v))
          return fail (status, detail, 400,
                       "Invalid request: environment variable `%s`: a name without `=` and a "
                       "string value without NUL",
                       k);
      }
    }
  if (wd && !json_is_null (wd) && (!valid_string (wd) || json_string_value (wd)[0] != '/'))
    return fail (status, detail, 400, "Invalid request: `working_dir` must be an absolute path");
  return body;
}

/* The command line of the session as main() would have parsed it, into
 * *TMP (released by executor_release); checked against what cannot
 * change on standby. NULL with *STATUS and *DETAIL set when refused. */
static json_t *
parse_argv (struct executor *ex, json_t *arr, struct executor *tmp, int *status, char **detail)
{
  tmp->work_dir = xstrdup ("/workspace");
  tmp->username = xstrdup ("openhands");
  tmp->uid = 1000;
  tmp->browser_enabled = true;
  int argc;
  char **argv = body_argv (arr, &argc);
  ohbox_error_t err = NULL;
  int r = executor_parse_args (tmp, argc, argv, &err);
  free_argv (argv);
  json_t *ret = json_true ();
  if (r < 0)
    ret = fail (status, detail, 400, "Invalid request: `argv`: %s", err->msg);
  else if (tmp->port != ex->port)
    ret = fail (status, detail, 400, "Invalid request: `argv` names port %d, the executor listens on %d", tmp->port,
                ex->port);
  else if (tmp->standby)
    ret = fail (status, detail, 400, "Invalid request: `argv` cannot ask for --standby");
  else if (tmp->listen_address && (ex->listen_address == NULL || strcmp (tmp->listen_address, ex->listen_address) != 0))
    ret = fail (status, detail, 400, "Invalid request: `argv` names another listen address");
  else if (tmp->listen_fd && tmp->listen_fd != ex->listen_fd)
    ret = fail (status, detail, 400, "Invalid request: `argv` names another listening socket");
  ohbox_error_release (&err);
  return ret;
}

/* The command line of the session onto a copy of EX's defaults: what main()
 * would have parsed. */
static json_t *
apply_argv (struct executor *ex, json_t *arr, int *status, char **detail)
{
  if (arr == NULL || json_is_null (arr))
    return json_true (); /* the standby command line stands */
  struct executor tmp = { 0 };
  json_t *ret = parse_argv (ex, arr, &tmp, status, detail);
  if (ret)
    {
      free (ex->work_dir);
      ex->work_dir = steal_pointer (&tmp.work_dir);
      free (ex->username);
      ex->username = steal_pointer (&tmp.username);
      ex->uid = tmp.uid;
      ex->browser_enabled = tmp.browser_enabled;
      for (size_t i = 0; ex->plugins && ex->plugins[i]; i++)
        free (ex->plugins[i]);
      free (ex->plugins);
      ex->plugins = steal_pointer (&tmp.plugins);
    }
  executor_release (&tmp);
  return ret;
}

/* Whether the session started ahead (main.c) is the one a start for this
 * adoption would make: the same user (as asked for: an existing user keeps
 * its own uid either way), the same directory, and a shell whose
 * environment the adoption's does not change (a login shell as another
 * user gets a clean one; a shell of the executor's own user inherits it).
 * SU_TO_USER is the adoption's (ENV's, else the executor's). */
static bool
prestarted_fits (struct executor *ex, const char *username, uid_t uid, const char *dir, json_t *env)
{
  if (ex->prestarted_user == NULL || ex->bash == NULL || bash_session_dead (ex->bash))
    return false;
  if (strcmp (ex->prestarted_user, username) != 0 || ex->prestarted_uid != uid || strcmp (ex->prestarted_dir, dir) != 0)
    return false;
  /* SU_TO_USER decides as at a start (main.c). */
  const char *su = json_string_value (json_object_get (env, "SU_TO_USER"));
  if (su == NULL)
    su = getenv ("SU_TO_USER");
  bool want_switch = geteuid () == 0
                     && (su == NULL || *su == '\0' || strcasecmp (su, "true") == 0 || strcmp (su, "1") == 0
                         || strcasecmp (su, "yes") == 0);
  if (want_switch != ex->switch_user)
    return false;
  return ex->switch_user || json_object_size (env) == 0;
}

/* A guess, before anything changes, that adopting with BODY keeps the
 * session started ahead, so the adoption is no more than a few system
 * calls (and can be answered without a worker: server.c). A wrong guess
 * costs time only: executor_adopt decides again. */
bool
executor_adopt_is_quick (struct executor *ex, json_t *body)
{
  int status;
  cleanup_free char *detail = NULL;
  if (check_body (body, &status, &detail) == NULL)
    return true; /* refused at once */
  /* An adoption under way (in a worker) may be changing what is read here:
   * then this one waits for it, in a worker too. */
  if (pthread_mutex_trylock (&ex->adopt_lock) != 0)
    return false;
  bool quick = true; /* not on standby: refused at once */
  json_t *argv = json_object_get (body, "argv");
  json_t *env = json_object_get (body, "environment");
  if (!executor_on_standby (ex))
    ;
  else if (argv == NULL || json_is_null (argv))
    quick = prestarted_fits (ex, ex->username, ex->uid, ex->work_dir, env);
  else
    {
      struct executor tmp = { 0 };
      quick = parse_argv (ex, argv, &tmp, &status, &detail) == NULL
              || prestarted_fits (ex, tmp.username, tmp.uid, tmp.work_dir, env);
      executor_release (&tmp);
    }
  pthread_mutex_unlock (&ex->adopt_lock);
  return quick;
}

json_t *
executor_adopt (struct executor *ex, json_t *body, int *status, char **detail)
{
  if (check_body (body, status, detail) == NULL)
    return NULL;
  pthread_mutex_lock (&ex->adopt_lock);
  json_t *ret = NULL;
  if (!executor_on_standby (ex))
    {
      ret = fail (status, detail, 409, "This executor already has its session");
      goto out;
    }
  /* No other thread reads the session's fields on standby (server.c
   * serves nothing that does), so they are set in place. */
  if (apply_argv (ex, json_object_get (body, "argv"), status, detail) == NULL)
    goto out;
  const char *key = json_string_value (json_object_get (body, "session_api_key"));
  json_t *env = json_object_get (body, "environment");
  const char *k;
  json_t *v;
  json_object_foreach (env, k, v) setenv (k, json_string_value (v), 1);
  /* As a cold start's environment: the key the session was given. */
  setenv ("SESSION_API_KEY", key, 1);
  const char *wd = json_string_value (json_object_get (body, "working_dir"));
  ohbox_error_t err = NULL;
  if (wd && (ohbox_mkdir_p (AT_FDCWD, wd, 0755, &err) < 0 || chdir (wd) < 0))
    {
      if (err == NULL)
        ohbox_error_sys (&err, OHBOX_ERR_GENERIC, "chdir `%s`", wd);
      ret = fail (status, detail, 500, "cannot enter the working directory: %s", err->msg);
      ohbox_error_release (&err);
      goto out;
    }
  pthread_mutex_lock (&ex->action_lock);
  int r = 0;
  if (!prestarted_fits (ex, ex->username, ex->uid, ex->work_dir, env))
    {
      if (ex->prestarted_user)
        {
          /* Started ahead for someone else: as if it had not been. */
          bash_session_free (ex->bash);
          ex->bash = NULL;
          editor_free (ex->editor);
          ex->editor = NULL;
        }
      r = executor_session_start (ex, &err);
    }
  pthread_mutex_unlock (&ex->action_lock);
  if (r < 0)
    {
      ret = fail (status, detail, 500, "cannot start the session: %s", err->msg);
      ohbox_error_release (&err);
      goto out;
    }
  /* The pool key is never freed: a request that read it may still compare
   * with it (it is refused from now on anyway). */
  __atomic_store_n (&ex->api_key, xstrdup (key), __ATOMIC_RELEASE);
  __atomic_store_n (&ex->standby, false, __ATOMIC_RELEASE);
  ret = json_pack ("{s:s, s:s, s:s}", "status", "ok", "username", ex->username, "working_dir", ex->work_dir);
out:
  pthread_mutex_unlock (&ex->adopt_lock);
  return ret;
}
