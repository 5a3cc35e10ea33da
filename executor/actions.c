/* actions.c: POST /execute_action -- the envelope, dispatch by action type,
 * the `run` action and the actions that only answer with an error
 * (browse, browse_interactive); and GET /server_info. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "executor.h"
#include "obs.h"
#include "common/utils.h"

/* The options of a bash session of EX's user, starting in WORK_DIR. */
static struct bash_opts
bash_opts_of (const struct executor *ex, const char *work_dir)
{
  return (struct bash_opts){
    .bash_path = ex->bash_path,
    .work_dir = work_dir,
    .switch_user = ex->switch_user,
    .username = ex->username,
    .uid = ex->uid,
    .gid = ex->gid,
    .home = ex->home,
    .no_change_timeout = ex->no_change_timeout,
  };
}

int
executor_bash_start (struct executor *ex, ohbox_error_t *err)
{
  struct bash_opts o = bash_opts_of (ex, ex->work_dir);
  if (ex->bash)
    {
      bash_session_free (ex->bash);
      ex->bash = NULL;
    }
  return bash_session_start (&o, &ex->bash, err);
}

char *
executor_resolve (struct executor *ex, const char *path)
{
  if (path[0] == '/')
    return xstrdup (path);
  cleanup_free char *cwd = ex->bash ? bash_session_cwd (ex->bash) : xstrdup (ex->work_dir);
  size_t cl = strlen (cwd);
  if (*path == '\0')
    return xstrdup (cwd);
  return xasprintf ("%s%s%s", cwd, cl && cwd[cl - 1] == '/' ? "" : "/", path);
}

static bool
arg_bool (json_t *args, const char *key, bool def)
{
  json_t *v = json_object_get (args, key);
  if (json_is_boolean (v))
    return json_is_true (v);
  if (json_is_integer (v))
    return json_integer_value (v) != 0;
  return def;
}

static json_t *
action_run (struct executor *ex, json_t *args, json_t *timeout)
{
  json_t *cmd = json_object_get (args, "command");
  if (!json_is_string (cmd))
    return obs_error ("Missing required argument `command` (a string) for action `run`.");
  struct run_request req = {
    .command = json_string_value (cmd),
    .is_input = arg_bool (args, "is_input", false),
    .hidden = arg_bool (args, "hidden", false),
  };
  /* As action_from_dict: the hard timeout and `blocking` apply only when
   * the envelope carries a timeout. */
  if (json_is_number (timeout) && json_number_value (timeout) > 0)
    {
      req.timeout = json_number_value (timeout);
      req.timeout_str = py_number_str (timeout);
      req.blocking = arg_bool (args, "blocking", false);
    }

  json_t *obs;
  if (arg_bool (args, "is_static", false))
    {
      /* A fresh shell in `cwd` for this one command (hidden git helpers). */
      json_t *cwd = json_object_get (args, "cwd");
      const char *dir = json_is_string (cwd) && *json_string_value (cwd) ? json_string_value (cwd) : ex->work_dir;
      struct bash_opts o = bash_opts_of (ex, dir);
      struct bash_session *tmp = NULL;
      cleanup_error ohbox_error_t err = NULL;
      if (bash_session_start (&o, &tmp, &err) < 0)
        obs = obs_errorf ("Failed to start a static bash session: %s", err->msg);
      else
        {
          obs = bash_session_run (tmp, &req);
          bash_session_free (tmp);
        }
    }
  else
    {
      cleanup_error ohbox_error_t err = NULL;
      if ((ex->bash == NULL || bash_session_dead (ex->bash)) && executor_bash_start (ex, &err) < 0)
        obs = obs_errorf ("The bash session could not be started: %s", err->msg);
      else
        {
          obs = bash_session_run (ex->bash, &req);
          /* `exit` ends the shell: start the next one now so the following
           * action finds a shell. */
          if (bash_session_dead (ex->bash))
            {
              ohbox_error_release (&err);
              executor_bash_start (ex, &err);
            }
        }
    }
  free (req.timeout_str);
  return obs;
}

json_t *
executor_execute_action (struct executor *ex, json_t *body, int *status, char **detail)
{
  json_t *action = json_is_object (body) ? json_object_get (body, "action") : NULL;
  if (!json_is_object (action))
    {
      *status = 400;
      *detail = xstrdup ("Invalid request: the body must be a JSON object with an `action` object");
      return NULL;
    }
  json_t *type = json_object_get (action, "action");
  if (!json_is_string (type))
    {
      *status = 400;
      *detail = xstrdup ("Invalid request: `action.action` (the action type) is missing");
      return NULL;
    }
  json_t *args = json_object_get (action, "args");
  json_t *empty = NULL;
  if (!json_is_object (args))
    args = empty = json_object ();
  json_t *timeout = json_object_get (action, "timeout");
  const char *t = json_string_value (type);

  pthread_mutex_lock (&ex->action_lock);
  json_t *obs;
  if (strcmp (t, "run") == 0)
    obs = action_run (ex, args, timeout);
  else if (strcmp (t, "run_ipython") == 0)
    obs = action_run_ipython (ex, args, json_is_number (timeout) ? json_number_value (timeout) : 0);
  else if (strcmp (t, "read") == 0)
    obs = action_read (ex, args);
  else if (strcmp (t, "write") == 0)
    obs = action_write (ex, args);
  else if (strcmp (t, "edit") == 0)
    obs = action_edit (ex, args);
  else if (strcmp (t, "browse") == 0 || strcmp (t, "browse_interactive") == 0)
    obs = obs_error ("Browser functionality is not supported or disabled.");
  else
    obs = obs_errorf ("Action type `%s` is not supported by ohbox-executor (it runs run, run_ipython, read, write, "
                      "edit, browse and browse_interactive).",
                      t);
  pthread_mutex_unlock (&ex->action_lock);

  pthread_mutex_lock (&ex->stats_lock);
  ex->last_exec_time = ohbox_monotonic ();
  pthread_mutex_unlock (&ex->stats_lock);
  json_decref (empty);
  return obs;
}

/* ---- /server_info ------------------------------------------------------- */

static long long
proc_field (const char *file, const char *key)
{
  cleanup_file FILE *f = fopen (file, "re");
  if (f == NULL)
    return 0;
  char line[256];
  size_t kl = strlen (key);
  while (fgets (line, sizeof (line), f))
    if (strncmp (line, key, kl) == 0)
      return strtoll (line + kl, NULL, 10);
  return 0;
}

json_t *
executor_server_info (struct executor *ex)
{
  static double last_wall, last_cpu;
  double now = ohbox_monotonic ();
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  double cpu = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 + (double) ru.ru_stime.tv_sec
               + (double) ru.ru_stime.tv_usec / 1e6;

  pthread_mutex_lock (&ex->stats_lock);
  double uptime = now - ex->start_time;
  double idle = now - ex->last_exec_time;
  /* psutil's cpu_percent() without interval: usage since the previous
   * call, 0.0 the first time. */
  double cpu_percent = 0;
  if (last_wall > 0 && now > last_wall)
    cpu_percent = (cpu - last_cpu) / (now - last_wall) * 100.0;
  last_wall = now;
  last_cpu = cpu;
  pthread_mutex_unlock (&ex->stats_lock);

  long page = sysconf (_SC_PAGESIZE);
  long long vms = 0, rss = 0;
  cleanup_file FILE *f = fopen ("/proc/self/statm", "re");
  if (f && fscanf (f, "%lld %lld", &vms, &rss) == 2)
    {
      vms *= page;
      rss *= page;
    }
  long long mem_total = proc_field ("/proc/meminfo", "MemTotal:") * 1024;
  double mem_percent = mem_total > 0 ? (double) rss / (double) mem_total * 100.0 : 0;

  struct statvfs sv;
  long long dtotal = 0, dused = 0, dfree = 0;
  double dpercent = 0;
  if (statvfs ("/", &sv) == 0)
    {
      dtotal = (long long) sv.f_blocks * (long long) sv.f_frsize;
      dfree = (long long) sv.f_bavail * (long long) sv.f_frsize;
      dused = (long long) (sv.f_blocks - sv.f_bfree) * (long long) sv.f_frsize;
      if (dused + dfree > 0)
        dpercent = (double) (long long) ((double) dused / (double) (dused + dfree) * 1000.0 + 0.5) / 10.0;
    }

  json_t *memory = json_pack ("{s:I, s:I, s:f}", "rss", (json_int_t) rss, "vms", (json_int_t) vms, "percent",
                              mem_percent);
  json_t *disk = json_pack ("{s:I, s:I, s:I, s:f}", "total", (json_int_t) dtotal, "used", (json_int_t) dused, "free",
                            (json_int_t) dfree, "percent", dpercent);
  json_t *io = json_pack ("{s:I, s:I}", "read_bytes", (json_int_t) proc_field ("/proc/self/io", "read_bytes:"),
                          "write_bytes", (json_int_t) proc_field ("/proc/self/io", "write_bytes:"));
  json_t *res = json_pack ("{s:f, s:o, s:o, s:o}", "cpu_percent", cpu_percent, "memory", memory, "disk", disk, "io",
                           io);
  return json_pack ("{s:f, s:f, s:o}", "uptime", uptime, "idle_time", idle, "resources", res);
}
