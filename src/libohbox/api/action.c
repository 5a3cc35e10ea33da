/* action.c: see action.h. */
#include "config.h"
#include "api/action.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#include "common/dl_curl.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

#define EXECUTOR_FILE "executor.json"

int
ohbox_executor_record (int dirfd, const char *url, const char *api_key, bool socket, ohbox_error_t *err)
{
  json_t *j = json_pack ("{s:s?, s:s}", "url", url, "api_key", api_key ? api_key : "");
  if (j && socket)
    json_object_set_new (j, "socket", json_string (OHBOX_EXECUTOR_SOCKET));
  if (j == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the executor's URL and key must be UTF-8");
  /* ohbox_state_write_json creates it 0600: the key stays the owner's. */
  int r = ohbox_state_write_json (dirfd, EXECUTOR_FILE, j, err);
  json_decref (j);
  return r;
}

/* RECORD's socket, as a path (in RT's state for sandbox ID), or NULL. */
static char *
recorded_socket (struct ohbox_runtime *rt, const char *id, json_t *record)
{
  const char *name = json_string_value (json_object_get (record, "socket"));
  if (name == NULL || strcmp (name, OHBOX_EXECUTOR_SOCKET) != 0)
    return NULL;
  return xasprintf ("%s/%s/%s", rt->root, id, OHBOX_EXECUTOR_SOCKET);
}

void
ohbox_executor_info_clear (struct ohbox_executor_info *x)
{
  free (x->id);
  free (x->url);
  free (x->api_key);
  free (x->socket);
  memset (x, 0, sizeof *x);
}

int
ohbox_sandbox_executor (struct ohbox_runtime *rt, const char *what, struct ohbox_executor_info *ret, ohbox_error_t *err)
{
  memset (ret, 0, sizeof *ret);
  cleanup_free char *id = NULL;
  if (ohbox_sandbox_resolve (rt, what, &id, err) < 0)
    return -1;
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  bool removed = false;
  if (ohbox_state_reconcile (rt, id, dfd, &removed, err) < 0)
    return -1;
  if (removed)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%s`", what);
  if (!ohbox_state_monitor_alive (dfd))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%s` is not running; start a new one with `ohbox run -d`",
                        what);
  struct ohbox_sandbox_record rec;
  ohbox_error_t e = NULL;
  /* A frozen executor would take the request and never answer. */
  if (ohbox_state_load_record (dfd, &rec, &e) == 0)
    {
      bool paused = rec.paused;
      ohbox_sandbox_record_clear (&rec);
      if (paused)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "sandbox `%s` is paused; `ohbox unpause` it first", what);
    }
  ohbox_error_release (&e);
  json_t *j = NULL;
  if (ohbox_state_read_json (dfd, EXECUTOR_FILE, &j, &e) < 0)
    {
      bool missing = e->kind == OHBOX_ERR_NOT_FOUND;
      if (!missing)
        {
          ohbox_error_move (err, &e);
          return ohbox_error_prefix (err, "sandbox `%s`", what);
        }
      ohbox_error_release (&e);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                          "sandbox `%s` has no executor: only a runtime image (`ohbox build`) run without a "
                          "command starts one",
                          what);
    }
  const char *url = json_string_value (json_object_get (j, "url"));
  const char *key = json_string_value (json_object_get (j, "api_key"));
  cleanup_free char *socket = recorded_socket (rt, id, j);
  if (json_is_null (json_object_get (j, "url")) && key && socket == NULL)
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                          "the executor of sandbox `%s` is not reachable from the host (started with --network "
                          "none or container: and without a socket of its own): reach it inside the sandbox's "
                          "network namespace",
                          what);
    }
  if ((url == NULL && socket == NULL) || key == NULL || (url && strncmp (url, "http://", 7) != 0))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_STORE, 0, "state file `%s` of sandbox `%s` is corrupt", EXECUTOR_FILE, what);
    }
  ret->id = steal_pointer (&id);
  ret->url = url ? xstrdup (url) : NULL;
  ret->api_key = xstrdup (key);
  ret->socket = steal_pointer (&socket);
  json_decref (j);
  return 0;
}

int
ohbox_sandbox_executor_record (struct ohbox_runtime *rt, const char *id, struct ohbox_executor_info *ret,
                               ohbox_error_t *err)
{
  memset (ret, 0, sizeof *ret);
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  json_t *j = NULL;
  if (ohbox_state_read_json (dfd, EXECUTOR_FILE, &j, err) < 0)
    return -1;
  const char *url = json_string_value (json_object_get (j, "url"));
  const char *key = json_string_value (json_object_get (j, "api_key"));
  if (key == NULL || (url && strncmp (url, "http://", 7) != 0))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_STORE, 0, "state file `%s` of sandbox `%.12s` is corrupt", EXECUTOR_FILE, id);
    }
  ret->id = xstrdup (id);
  ret->url = url ? xstrdup (url) : NULL;
  ret->api_key = xstrdup (key);
  ret->socket = recorded_socket (rt, id, j);
  json_decref (j);
  return 0;
}

int
ohbox_sandbox_executor_rekey (struct ohbox_runtime *rt, const char *id, const char *api_key, ohbox_error_t *err)
{
  if (api_key == NULL || *api_key == '\0')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "an empty session key would let any request in");
  struct ohbox_executor_info x;
  if (ohbox_sandbox_executor_record (rt, id, &x, err) < 0)
    return -1;
  cleanup_close int dfd = -1;
  int r = ohbox_state_open (rt, id, &dfd, err);
  if (r == 0)
    r = ohbox_executor_record (dfd, x.url, api_key, x.socket != NULL, err);
  ohbox_executor_info_clear (&x);
  return r;
}

/* ---- the request ---- */

struct response
{
  struct ohbox_buf body;
  bool too_big;
};

static size_t
on_body (char *data, size_t size, size_t n, void *ud)
{
  struct response *r = ud;
  size_t len = size * n;
  if (r->body.len + len > OHBOX_ACTION_MAX_RESPONSE)
    {
      r->too_big = true;
      return 0; /* aborts the transfer */
    }
  ohbox_buf_append (&r->body, data, len);
  return len;
}

static void
cleanup_curl_fn (CURL **c)
{
  if (*c)
    curl_easy_cleanup (*c);
}

static void
cleanup_slist_fn (struct curl_slist **l)
{
  curl_slist_free_all (*l);
}

/* The "detail" of an error envelope, or the start of the body. */
static char *
error_detail (const char *body, size_t len)
{
  json_t *j = json_loadb (body, len, 0, NULL);
  const char *d = json_string_value (json_object_get (j, "detail"));
  char *r = d ? xstrndup (d, 1024) : xstrndup (body, len < 256 ? len : 256);
  json_decref (j);
  return r;
}

/* PATH as curl can connect to it: a socket address holds 107 bytes, and
 * state directories can be deeper; then through /proc/self/fd of its
 * directory (*DIRFD, for the caller to close once connected). */
static int
socket_path_for_curl (const char *path, int *dirfd, char **ret, ohbox_error_t *err)
{
  struct sockaddr_un sa;
  if (strlen (path) < sizeof sa.sun_path)
    {
      *ret = xstrdup (path);
      return 0;
    }
  const char *slash = strrchr (path, '/');
  cleanup_free char *dir = slash ? xstrndup (path, (size_t) (slash - path)) : xstrdup (".");
  *dirfd = open (*dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (*dirfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_GENERIC, "open `%s`", dir);
  *ret = xasprintf ("/proc/self/fd/%d/%s", *dirfd, slash ? slash + 1 : path);
  return 0;
}

int
ohbox_action_execute (const char *url, const char *api_key, json_t *action, const struct ohbox_action_options *opts,
                      json_t **ret_obs, ohbox_error_t *err)
{
  struct ohbox_action_options o = { 0 };
  if (opts)
    o = *opts;
  if (!json_is_object (action))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "an action must be a JSON object");
  json_t *inner = json_object_get (action, "action");
  json_t *envelope;
  if (json_is_object (inner))
    envelope = json_incref (action);
  else if (json_is_string (inner))
    {
      envelope = json_object ();
      json_object_set (envelope, "action", action);
      inner = action;
    }
  else
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "an action needs an \"action\" member: its type (\"run\", \"read\", ...) or the action object");
  double timeout = o.timeout;
  if (!(timeout > 0))
    {
      json_t *t = json_object_get (inner, "timeout");
      timeout = json_is_number (t) && json_number_value (t) > 0 ? json_number_value (t) + 5 : 130;
    }
  if (!(o.connect_timeout > 0))
    o.connect_timeout = 10;
  /* Bounded (a week), and NaN never reaches a conversion to long. */
  if (!(timeout <= 7 * 86400))
    timeout = 7 * 86400;
  if (o.connect_timeout > 7 * 86400)
    o.connect_timeout = 7 * 86400;
  cleanup_free char *body = json_dumps (envelope, JSON_COMPACT);
  json_decref (envelope);
  if (body == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the action cannot be serialised");
  if (strlen (body) > OHBOX_ACTION_MAX_REQUEST)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the action is larger than %d bytes", OHBOX_ACTION_MAX_REQUEST);

  if (url == NULL && o.unix_socket == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "no URL and no socket to reach the executor by");
  cleanup_close int socket_dir = -1;
  cleanup_free char *socket_path = NULL;
  if (o.unix_socket && socket_path_for_curl (o.unix_socket, &socket_dir, &socket_path, err) < 0)
    return -1;
  if (ohbox_curl_ready (OHBOX_ERR_GENERIC, err) < 0)
    return -1;
  __attribute__ ((cleanup (cleanup_curl_fn))) CURL *c = curl_easy_init ();
  if (c == NULL)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "curl_easy_init failed");
  __attribute__ ((cleanup (cleanup_slist_fn))) struct curl_slist *h = NULL;
  h = curl_slist_append (h, "Content-Type: application/json");
  cleanup_free char *key_header = xasprintf ("X-Session-API-Key: %s", api_key ? api_key : "");
  if (api_key && *api_key)
    h = curl_slist_append (h, key_header);
  cleanup_free char *endpoint = xasprintf ("%s/execute_action", socket_path ? "http://localhost" : url);
  struct response resp = { { 0 }, false };
  curl_easy_setopt (c, CURLOPT_URL, endpoint);
  curl_easy_setopt (c, CURLOPT_UNIX_SOCKET_PATH, socket_path);
  const char *target = socket_path ? o.unix_socket : endpoint; /* what the messages name */
  /* The URL comes from a state file: plain HTTP to the executor only. */
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http");
#else
  curl_easy_setopt (c, CURLOPT_PROTOCOLS, (long) CURLPROTO_HTTP);
#endif
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM: safe in threaded callers */
  curl_easy_setopt (c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt (c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, &resp);
  curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, (long) (timeout * 1000));
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  /* Right after `ohbox run -d` the executor may not listen yet: retry a
   * refused connection until CONNECT_TIMEOUT. */
  double deadline = ohbox_monotonic () + o.connect_timeout;
  CURLcode cr;
  for (;;)
    {
      resp.body.len = 0;
      cr = curl_easy_perform (c);
      if (cr != CURLE_COULDNT_CONNECT || ohbox_monotonic () >= deadline)
        break;
      struct timespec ts = { 0, 50 * 1000 * 1000 };
      nanosleep (&ts, NULL);
    }
  if (cr != CURLE_OK)
    {
      int kind = resp.too_big ? OHBOX_ERR_INTEGRITY : OHBOX_ERR_GENERIC;
      ohbox_error (err, kind, 0, "POST `%s`: %s", target,
                   resp.too_big ? "the observation is too large" : curl_easy_strerror (cr));
      ohbox_buf_free (&resp.body);
      return -1;
    }
  long status = 0;
  curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200)
    {
      cleanup_free char *detail = error_detail (resp.body.data ? resp.body.data : "", resp.body.len);
      ohbox_buf_free (&resp.body);
      if (status == 401 || status == 403)
        return ohbox_error (err, OHBOX_ERR_AUTH, 0, "POST `%s`: HTTP %ld (%s): wrong session API key", target, status,
                            detail);
      return ohbox_error (err, status == 422 || status == 400 ? OHBOX_ERR_USAGE : OHBOX_ERR_GENERIC, 0,
                          "POST `%s`: HTTP %ld: %s", target, status, detail);
    }
  json_error_t je;
  json_t *obs = json_loadb (resp.body.data ? resp.body.data : "", resp.body.len, 0, &je);
  ohbox_buf_free (&resp.body);
  if (!json_is_object (obs))
    {
      json_decref (obs);
      return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "POST `%s`: the observation is not a JSON object", target);
    }
  *ret_obs = obs;
  return 0;
}

/* ---- shortcuts and presentation ---- */

static size_t
count_args (char **args)
{
  size_t n = 0;
  while (args && args[n])
    n++;
  return n;
}

int
ohbox_action_shortcut (const char *verb, char **args, double timeout, json_t **ret, ohbox_error_t *err)
{
  size_t n = count_args (args);
  json_t *a = NULL;
  if (strcmp (verb, "run") == 0 && n == 1)
    a = json_pack ("{s:s, s:{s:s, s:b, s:b}}", "action", "run", "args", "command", args[0], "is_input", 0, "blocking",
                   timeout > 0);
  else if (strcmp (verb, "read") == 0 && n == 1)
    a = json_pack ("{s:s, s:{s:s}}", "action", "read", "args", "path", args[0]);
  else if (strcmp (verb, "write") == 0 && n == 2)
    a = json_pack ("{s:s, s:{s:s, s:s}}", "action", "write", "args", "path", args[0], "content", args[1]);
  else if (strcmp (verb, "edit") == 0 && n == 3)
    a = json_pack ("{s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "action", "edit", "args", "path", args[0], "command",
                   "str_replace", "old_str", args[1], "new_str", args[2], "impl_source", "oh_aci");
  else
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "expected JSON, `run CMD`, `read PATH`, `write PATH CONTENT` or `edit PATH OLD NEW`");
  if (a == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the arguments of `%s` must be UTF-8", verb);
  if (timeout > 0)
    json_object_set_new (a, "timeout", json_real (timeout));
  *ret = a;
  return 0;
}

int
ohbox_observation_exit_code (json_t *obs)
{
  json_t *extras = json_object_get (obs, "extras");
  json_t *code = json_object_get (json_object_get (extras, "metadata"), "exit_code");
  if (!json_is_integer (code))
    code = json_object_get (extras, "exit_code"); /* the legacy place */
  return json_is_integer (code) ? (int) json_integer_value (code) : -1;
}

char *
ohbox_observation_text (json_t *obs)
{
  struct ohbox_buf b = { 0 };
  const char *type = json_string_value (json_object_get (obs, "observation"));
  const char *content = json_string_value (json_object_get (obs, "content"));
  json_t *md = json_object_get (json_object_get (obs, "extras"), "metadata");
  const char *prefix = json_string_value (json_object_get (md, "prefix"));
  const char *suffix = json_string_value (json_object_get (md, "suffix"));
  if (prefix && *prefix)
    ohbox_buf_append (&b, prefix, strlen (prefix));
  if (content == NULL && type && strcmp (type, "error") == 0)
    content = json_string_value (json_object_get (obs, "message"));
  if (content)
    ohbox_buf_append (&b, content, strlen (content));
  if (suffix && *suffix)
    ohbox_buf_append (&b, suffix, strlen (suffix));
  if (b.len > 0 && b.data[b.len - 1] != '\n')
    ohbox_buf_append (&b, "\n", 1);
  if (b.data == NULL)
    ohbox_buf_append (&b, "", 0);
  return b.data;
}
