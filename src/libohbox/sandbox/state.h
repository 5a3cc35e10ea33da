/* state.h: a sandbox's recorded state, typed.
 *
 * The state module (state.c, state_record.c) is the only code that reads or
 * writes the keys of STATE/<id>/config.json and state.json (layout in
 * sandbox.h) or compares a status; everything else uses these structs and
 * the status enum.
 *
 * Compatibility: the files stay what older versions wrote and read. A record
 * keeps the file's whole object as read (`doc`), and writing one back sets
 * only the fields it knows, in place: keys this version does not know
 * (written by a newer version, or by a feature this one lacks) survive, and
 * key order and bytes stay what the old read-modify-write produced. */
#ifndef OHBOX_STATE_H
#define OHBOX_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

#define OHBOX_ID_LEN 64

/* Whether ID is a sandbox ID: OHBOX_ID_LEN lowercase hex characters. */
bool ohbox_state_id_is_valid (const char *id);

/* What a sandbox is doing. state.json records "running" when the command
 * started and "exited" when the monitor recorded its end; the live status
 * (ohbox_state_live_status) also asks whether the monitor is there. */
enum ohbox_sandbox_status
{
  OHBOX_STATUS_CREATED, /* its monitor is up, its command not yet started */
  OHBOX_STATUS_RUNNING,
  OHBOX_STATUS_PAUSED, /* its cgroup is frozen (ohbox pause) */
  OHBOX_STATUS_EXITED,
};
#define OHBOX_STATUS_COUNT 4

/* "created", "running", "paused", "exited": the words of ps and state.json. */
const char *ohbox_status_name (enum ohbox_sandbox_status s);
/* The status NAME names: 0, or -1 when it names none. */
int ohbox_status_parse (const char *name, enum ohbox_sandbox_status *ret);

/* config.json: what was asked, written once when the sandbox starts. */
enum
{
  OHBOX_CONFIG_ID = 1u << 0,
  OHBOX_CONFIG_NAME = 1u << 1,
  OHBOX_CONFIG_IMAGE = 1u << 2,
  OHBOX_CONFIG_IMAGE_ID = 1u << 3,
  OHBOX_CONFIG_COMMAND = 1u << 4,
  OHBOX_CONFIG_CREATED = 1u << 5,
  OHBOX_CONFIG_RM = 1u << 6,
  OHBOX_CONFIG_DETACHED = 1u << 7,
  OHBOX_CONFIG_STORE = 1u << 8,
  OHBOX_CONFIG_STOP_SIGNAL = 1u << 9,
  OHBOX_CONFIG_TTY = 1u << 10,
  OHBOX_CONFIG_STORAGE_SIZE = 1u << 11,
  OHBOX_CONFIG_DEVICES = 1u << 12,
  OHBOX_CONFIG_LABELS = 1u << 13,
};
struct ohbox_sandbox_config
{
  unsigned present; /* OHBOX_CONFIG_*: the fields the file has (or will have) */
  char *id;
  char *name;  /* NULL: none (recorded as null) */
  char *image; /* as the user named it */
  char *image_id;
  char **command; /* NULL-terminated */
  char *created;  /* RFC 3339 */
  bool rm, detached, tty;
  char *store; /* the store's root */
  int stop_signal;
  unsigned long long storage_size; /* bytes, 0: none */
  json_t *devices;                 /* the devices given (--device, CDI), as ps shows them */
  json_t *labels;                  /* an object of strings, given at the run, never changed */
  json_t *doc;                     /* the object as read (NULL for a new one) */
};

/* state.json: the sandbox's life so far. */
enum
{
  OHBOX_RECORD_STATUS = 1u << 0,
  OHBOX_RECORD_PID = 1u << 1,
  OHBOX_RECORD_PID_START = 1u << 2,
  OHBOX_RECORD_STARTED_AT = 1u << 3,
  OHBOX_RECORD_EXIT_CODE = 1u << 4,
  OHBOX_RECORD_FINISHED_AT = 1u << 5,
  OHBOX_RECORD_PAUSED = 1u << 6,
  OHBOX_RECORD_TIMED_OUT = 1u << 7,
  OHBOX_RECORD_HOOK_WARNING = 1u << 8,
  OHBOX_RECORD_ANNOTATIONS = 1u << 9,
};
struct ohbox_sandbox_record
{
  unsigned present;                 /* OHBOX_RECORD_* */
  enum ohbox_sandbox_status status; /* as recorded: running or exited */
  char *status_unknown;             /* a status word this version does not know, or NULL */
  pid_t pid;                        /* the sandbox's init */
  unsigned long long pid_start;     /* its start time (/proc/PID/stat field 22) */
  char *started_at, *finished_at;   /* RFC 3339 */
  int exit_code;
  bool paused, timed_out;
  char *hook_warning;  /* a poststop hook failed: why */
  json_t *annotations; /* an object of strings (ohbox_sandbox_annotate) */
  json_t *doc;
};

/* Parse and serialise (state_record.c). Parsing never fails on a field of
 * the wrong type: it is taken as absent (and kept in doc as it is). */
int ohbox_sandbox_config_parse (json_t *doc, struct ohbox_sandbox_config *ret);
json_t *ohbox_sandbox_config_to_json (const struct ohbox_sandbox_config *c);
void ohbox_sandbox_config_clear (struct ohbox_sandbox_config *c);
int ohbox_sandbox_record_parse (json_t *doc, struct ohbox_sandbox_record *ret);
json_t *ohbox_sandbox_record_to_json (const struct ohbox_sandbox_record *r);
void ohbox_sandbox_record_clear (struct ohbox_sandbox_record *r);
/* Whether the record says the command's end was recorded (an exit code). */
static inline bool
ohbox_sandbox_record_exited (const struct ohbox_sandbox_record *r)
{
  return (r->present & OHBOX_RECORD_EXIT_CODE) != 0;
}

/* Reading and writing them in STATE/<id>/ (state.c). A load fails when the
 * file is missing or is not a JSON object (OHBOX_ERR_STORE: corrupt). */
int ohbox_state_load_config (int dirfd, struct ohbox_sandbox_config *ret, ohbox_error_t *err);
int ohbox_state_load_record (int dirfd, struct ohbox_sandbox_record *ret, ohbox_error_t *err);
int ohbox_state_write_config (int dirfd, const struct ohbox_sandbox_config *c, ohbox_error_t *err);
/* The command started: state.json becomes running, PID with its start time. */
int ohbox_state_record_started (int dirfd, pid_t pid, const char *started_at, ohbox_error_t *err);
/* The monitor saw the command end (under "lock", fields merged). */
int ohbox_state_record_exit (int dirfd, int exit_code, bool timed_out, const char *hook_warning, ohbox_error_t *err);
/* ohbox pause / unpause froze or thawed it (under "lock", merged). */
int ohbox_state_record_paused (int dirfd, bool paused, ohbox_error_t *err);
/* Sets the string members of SET (a null member removes that key) into the
 * annotations (under "lock", merged), at most MAX_BYTES of JSON. */
int ohbox_state_record_annotations (int dirfd, json_t *set, size_t max_bytes, ohbox_error_t *err);
/* Whether state.json records the command's end (*RET_EXITED) and whether
 * the sandbox goes when it ends (*RET_RM: --rm, or no config.json: killed
 * before it started). */
void ohbox_state_recorded_end (int dirfd, bool *ret_exited, bool *ret_rm);
/* The status now: the monitor's lock says whether it lives, R (may be NULL:
 * no state.json) whether the command started and is paused. */
enum ohbox_sandbox_status ohbox_state_live_status (int dirfd, const struct ohbox_sandbox_record *r);

/* One sandbox as ps and inspect show it. */
struct ohbox_sandbox_info
{
  char id[OHBOX_ID_LEN + 1];
  enum ohbox_sandbox_status status; /* live */
  struct ohbox_sandbox_config config;
  struct ohbox_sandbox_record record;
  json_t *network; /* network.json as read, or NULL: none */
};
/* The JSON of `ohbox ps --format json` and `ohbox inspect` for INFO. */
json_t *ohbox_sandbox_info_to_json (const struct ohbox_sandbox_info *info);
void ohbox_sandbox_info_clear (struct ohbox_sandbox_info *info);
/* Reads the records of the sandbox ID in DIRFD (missing ones empty). */
void ohbox_state_describe (int dirfd, const char *id, struct ohbox_sandbox_info *ret);
static inline void
cleanup_sandbox_info_p (struct ohbox_sandbox_info *info)
{
  ohbox_sandbox_info_clear (info);
}
#define cleanup_sandbox_info __attribute__ ((cleanup (cleanup_sandbox_info_p)))

#endif
