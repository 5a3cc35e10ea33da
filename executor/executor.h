/* executor.h: the state of one ohbox-executor process and the entry points
 * of its request handlers.  One `struct executor` per process; actions run
 * one at a time under action_lock (on the server's worker threads) while
 * /alive and /server_info answer from the epoll thread. */
#ifndef OHBOX_EXECUTOR_EXECUTOR_H
#define OHBOX_EXECUTOR_EXECUTOR_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bash_session.h"
#include "common/error.h"

struct editor;
struct ipython;

struct executor
{
  int port;
  /* --listen-address: the one address it binds (IPv4 or IPv6 literal);
   * NULL: every address of its network namespace, IPv4 and IPv6. */
  char *listen_address;
  /* --listen-fd: a listening socket it serves too (the unix socket `ohbox
   * run` made in the sandbox's state directory); 0: none. */
  int listen_fd;
  char *work_dir;
  char *username;
  uid_t uid;
  gid_t gid;
  char *home;
  bool switch_user;     /* running as root: the shell becomes USERNAME (`su USER -`) */
  bool browser_enabled; /* --enable-browser (there is no browser either way) */
  char **plugins;       /* --plugins values, NULL-terminated */
  /* SESSION_API_KEY; NULL: no authentication. Read and replaced (an
   * adoption) atomically: executor_api_key (). */
  char *api_key;
  /* --standby (a warm pool's sandbox): nothing but /alive, /server_info
   * and POST /ohbox/adopt is served until an adoption (adopt.c) gives the
   * executor its session; read atomically. */
  bool standby;
  pthread_mutex_t adopt_lock;
  /* On standby with OHBOX_EXECUTOR_STANDBY_SESSION=USER:UID:DIR: the
   * session that was started ahead for that user and directory (adopt.c);
   * an adoption asking for the same keeps it. */
  char *prestarted_user;
  uid_t prestarted_uid;
  char *prestarted_dir;
  double no_change_timeout;
  uint64_t max_upload;          /* bytes */
  uint64_t max_unpacked;        /* OHBOX_EXECUTOR_MAX_UNPACKED: bytes one zip upload may unpack to */
  unsigned int max_zip_entries; /* OHBOX_EXECUTOR_MAX_ZIP_ENTRIES */
  char *bash_path;
  unsigned int workers;   /* OHBOX_EXECUTOR_WORKERS: threads running blocking requests */
  unsigned int queue_len; /* OHBOX_EXECUTOR_QUEUE: requests waiting for one; more get 503 */

  pthread_mutex_t action_lock;
  struct bash_session *bash;
  struct editor *editor;
  struct ipython *ipython;

  double start_time;     /* monotonic */
  double last_exec_time; /* monotonic, end of the last action */
  pthread_mutex_t stats_lock;
};

/* Starts (or restarts) the main bash session. */
int executor_bash_start (struct executor *ex, ohbox_error_t *err);

/* The command line (main.c): ARGV[0] is the program; fills EX's options.
 * -1 with a message in ERR on a bad one. */
int executor_parse_args (struct executor *ex, int argc, char **argv, ohbox_error_t *err);
/* The session: the user and working directory (created as root), the
 * editor and the bash session (main.c). */
int executor_session_start (struct executor *ex, ohbox_error_t *err);
/* The key requests must carry now (NULL: none). */
const char *executor_api_key (struct executor *ex);
bool executor_on_standby (struct executor *ex);
/* Frees what EX holds (main.c). */
void executor_release (struct executor *ex);
/* POST /ohbox/adopt (adopt.c): the body's session for a standby executor.
 * Returns the reply or NULL with *STATUS and *DETAIL. */
json_t *executor_adopt (struct executor *ex, json_t *body, int *status, char **detail);
bool executor_adopt_is_quick (struct executor *ex, json_t *body);

/* Request handlers (server.c routes to them). */
/* POST /execute_action: BODY is the request JSON.  Returns the observation,
 * or NULL with *STATUS and *DETAIL set for a request the protocol rejects. */
json_t *executor_execute_action (struct executor *ex, json_t *body, int *status, char **detail);
/* POST /list_files */
json_t *executor_list_files (struct executor *ex, json_t *body);
/* GET /server_info */
json_t *executor_server_info (struct executor *ex);

/* Action handlers, called with action_lock held; ARGS is action.args. */
json_t *action_read (struct executor *ex, json_t *args);
json_t *action_write (struct executor *ex, json_t *args);
json_t *action_edit (struct executor *ex, json_t *args);
json_t *action_run_ipython (struct executor *ex, json_t *args, double timeout);
/* Stops the Python interpreter of run_ipython, if any. */
void ipython_free (struct ipython *py);

/* Resolves PATH against the bash session's cwd when relative. */
char *executor_resolve (struct executor *ex, const char *path);

#endif
