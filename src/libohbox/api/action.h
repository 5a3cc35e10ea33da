/* action.h: the client side of the action protocol
 * (shared/protocol/ACTION-PROTOCOL.md): the executor of a sandbox started
 * from a runtime image (runtime_image.h), and POST /execute_action.
 *
 * `ohbox run` records where the executor listens and the session API key
 * it was started with in STATE/<id>/executor.json (mode 0600, in a state
 * directory only its owner can list: the key is a secret). */
#ifndef OHBOX_ACTION_H
#define OHBOX_ACTION_H

#include <jansson.h>

#include "common/error.h"
#include "sandbox/sandbox.h"

/* The executor's unix socket in its sandbox's state directory, which the
 * run made and gave the executor (ohbox_run_options.executor_socket):
 * reached without the network, by the state directory's owner only. */
#define OHBOX_EXECUTOR_SOCKET "executor.sock"

struct ohbox_executor_info
{
  char *id;      /* the sandbox's full id */
  char *url;     /* "http://127.0.0.1:PORT" */
  char *api_key; /* the session API key */
  char *socket;  /* STATE/<id>/OHBOX_EXECUTOR_SOCKET when it also listens there, else NULL */
};

/* Writes executor.json into the state directory DIRFD (URL NULL: the
 * executor is not reachable from the host's network; its key is still
 * kept). SOCKET: it also listens on OHBOX_EXECUTOR_SOCKET there. */
int ohbox_executor_record (int dirfd, const char *url, const char *api_key, bool socket, ohbox_error_t *err);
/* The executor of the running sandbox WHAT (name, id or id prefix).
 * OHBOX_ERR_USAGE when it is not running, has no executor (not started
 * from a runtime image without a command), or the host can reach it
 * neither by its socket nor over the network. */
int ohbox_sandbox_executor (struct ohbox_runtime *rt, const char *what, struct ohbox_executor_info *ret,
                            ohbox_error_t *err);
void ohbox_executor_info_clear (struct ohbox_executor_info *x);
/* The record of sandbox ID (its full id) as the run wrote it, whatever
 * state the sandbox is in (URL NULL: not reachable from the host);
 * OHBOX_ERR_NOT_FOUND when it has none. For front doors that watch their
 * sandboxes' state themselves (`ohbox serve`). */
int ohbox_sandbox_executor_record (struct ohbox_runtime *rt, const char *id, struct ohbox_executor_info *ret,
                                   ohbox_error_t *err);
/* Replaces the session key of sandbox ID's record (`ohbox serve`: a warm
 * pool's sandbox given to a session, whose executor took that key). */
int ohbox_sandbox_executor_rekey (struct ohbox_runtime *rt, const char *id, const char *api_key, ohbox_error_t *err);

struct ohbox_action_options
{
  /* Seconds to wait for the executor to accept the connection (it may
   * still be starting right after `ohbox run -d`); 0: 10. */
  double connect_timeout;
  /* Seconds the whole request may take; 0: the action's "timeout" + 5 (what
   * the OpenHands client does), or 130 when it has none. */
  double timeout;
  /* The executor's unix socket (ohbox_executor_info.socket), used instead
   * of URL's host and port: no network on the way. */
  const char *unix_socket;
};

/* POSTs ACTION to URL/execute_action (URL NULL: to the unix socket of
 * OPTS) with the session API key and returns the observation. ACTION is an
 * action object ({"action": "run", "args": {...}}) or the whole envelope
 * ({"action": {...}}). An HTTP error is an error whose message carries the
 * server's "detail" (403: OHBOX_ERR_AUTH). */
int ohbox_action_execute (const char *url, const char *api_key, json_t *action, const struct ohbox_action_options *opts,
                          json_t **ret_obs, ohbox_error_t *err);

/* Actions for the CLI's shortcuts (NULL-terminated ARGS as typed):
 *   run CMD                    {"action":"run","args":{"command":CMD,...}}
 *   read PATH                  {"action":"read","args":{"path":PATH}}
 *   write PATH CONTENT         {"action":"write","args":{"path":PATH,"content":CONTENT}}
 *   edit PATH OLD NEW          str_replace with the oh_aci editor
 * TIMEOUT > 0 sets the action's "timeout" (seconds). OHBOX_ERR_USAGE for
 * anything else. */
int ohbox_action_shortcut (const char *verb, char **args, double timeout, json_t **ret, ohbox_error_t *err);

/* The observation for humans: content, then for run observations the
 * suffix and "[exit code N]"; error observations as their message. */
char *ohbox_observation_text (json_t *obs);
/* The exit code of a run observation (metadata.exit_code), or -1. */
int ohbox_observation_exit_code (json_t *obs);

/* Bounds: an observation larger than this is refused. */
#define OHBOX_ACTION_MAX_RESPONSE (64 * 1024 * 1024)
#define OHBOX_ACTION_MAX_REQUEST (64 * 1024 * 1024)

#endif
