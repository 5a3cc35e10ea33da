/* ci_gitlab.h: what the files of `ohbox ci gitlab` share (ci_gitlab.c:
 * the stages; ci_gitlab_job.c: the job's identity, the sandboxes it owns
 * and its credentials; ci_gitlab_services.c: the job's services). */
#ifndef OHBOX_CI_GITLAB_H
#define OHBOX_CI_GITLAB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/frontend.h"

#define CI_DRIVER_NAME "ohbox"
#define CI_BUILDS_DIR "/builds"
#define CI_CACHE_DIR "/cache"
/* Bounds on what the runner hands us (JOB_RESPONSE_FILE is the whole job). */
#define CI_JOB_RESPONSE_MAX (8 * 1024 * 1024)
#define CI_MAX_SERVICES 16
#define CI_NAME_MAX 128
#define CI_MAX_HOSTNAMES (CI_MAX_SERVICES * 8)
/* What config hands the later stages (job_env): the names of the
 * variables, which a job cannot set (its own arrive as CUSTOM_ENV_*). */
#define CI_ENV_SANDBOX "OHBOX_CI_SANDBOX"
#define CI_ENV_KEY "OHBOX_CI_JOB_KEY"
#define CI_KEY_HEX 64

struct ci_ctx
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
};

int ci_open (struct ci_ctx *c, ohbox_error_t *err);
void ci_close (struct ci_ctx *c);

/* The job, as the runner itself describes it: its id from the job response
 * ($JOB_RESPONSE_FILE, written by the runner, out of the job's reach), and
 * the sandbox name and secret key config made for it (job_env). Nothing of
 * the job's own variables (CUSTOM_ENV_*) decides which sandbox is its. */
struct ci_job
{
  char name[CI_NAME_MAX];   /* gitlab-JOBID-RANDOM */
  char key[CI_KEY_HEX + 1]; /* 256 random bits, hex */
};

/* The job response (required; *RET a JSON object). */
int ci_job_response (json_t **ret, ohbox_error_t *err);
/* config: a new name and key for the job of RESPONSE. */
int ci_job_new (json_t *response, struct ci_job *job, ohbox_error_t *err);
/* prepare, run, cleanup: the name and key config handed over. */
int ci_job_from_env (struct ci_job *job, ohbox_error_t *err);

/* The sandboxes a job owns: STATE/ci-gitlab/ID.json, written by prepare
 * for each sandbox it started, with the sha256 of the job's key and when
 * the job's time is up. */
int ci_own_record (struct ci_ctx *c, const struct ci_job *job, const char *id, double expires, ohbox_error_t *err);
/* 0 when the sandbox ID (named NAME) is the job's; else OHBOX_ERR_USAGE
 * "was not created by this job". */
int ci_own_check (struct ci_ctx *c, const struct ci_job *job, const char *id, const char *name, ohbox_error_t *err);
void ci_own_forget (struct ci_ctx *c, const char *id);
/* Records of sandboxes that are gone are dropped; sandboxes whose job's
 * time is long up (a runner that died before its cleanup) are removed. */
void ci_own_collect (struct ci_ctx *c);

/* When the job's sandboxes become leftovers: its timeout (the job
 * response's runner_info.timeout) plus an hour for the cleanup, from now. */
double ci_job_expiry (json_t *response);

/* The job's own registry credentials as an auth.json document, in the
 * order GitLab's docker executor takes them: $DOCKER_AUTH_CONFIG, the job
 * response's "credentials" (the job token for GitLab's registry), then
 * $CI_REGISTRY_USER / $CI_REGISTRY_PASSWORD for $CI_REGISTRY. *RET is NULL
 * when the job has none. */
int ci_job_auth_json (json_t *response, char **ret, ohbox_error_t *err);

enum ci_pull_policy
{
  CI_PULL_DEFAULT, /* if-not-present, but always for images that needed credentials */
  CI_PULL_ALWAYS,
  CI_PULL_IF_NOT_PRESENT,
  CI_PULL_NEVER,
};

struct prepare_opts
{
  enum ci_pull_policy pull;
  struct ohbox_pull_options po; /* registry options, the job's credentials, limits, deadline */
  bool host_credentials;        /* --host-credentials */
  const char *network;          /* --network as given; NULL: the default (run_policy.h) */
  struct ohbox_cgroup_limits limits;
};

/* Makes IMAGE present in the store as the pull policy says; ID gets the
 * image id the sandbox must start from. */
int ci_ensure_image (struct prepare_opts *po, const char *image, char id[OHBOX_DIGEST_LEN + 1], ohbox_error_t *err);
/* Starts the plan of Q detached (its name and SHOWN_IMAGE in the job's
 * log), owned by JOB. */
struct ohbox_run_request;
int ci_start_detached (struct ci_ctx *c, struct ohbox_run_request *q, const char *shown_image, const struct ci_job *job,
                       double expires, ohbox_error_t *err);
/* JOB-svcI: the sandbox of the job's service I. */
void ci_service_sandbox_name (char *buf, const char *job_name, size_t i);

/* "NAME:127.0.0.1" entries (--add-host) for the job's sandbox, NULL-terminated. */
struct hostnames
{
  char *v[CI_MAX_HOSTNAMES + 1];
  size_t n;
};
void ci_hostnames_clear (struct hostnames *h);

/* The services of the job response (*RET NULL when none) and their names. */
int ci_load_services (json_t *response, json_t **ret, struct hostnames *hosts, ohbox_error_t *err);
/* Starts each service in the job sandbox's network namespace. */
int ci_start_services (struct prepare_opts *po, const struct ci_job *job, double expires, json_t *services,
                       ohbox_error_t *err);

/* "ohbox ci gitlab: warning: ..." now, from any stage. */
void ci_warn (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

#endif
