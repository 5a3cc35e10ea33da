/* ci_gitlab.h: what the files of `ohbox ci gitlab` share (ci_gitlab.c:
 * the stages; ci_gitlab_services.c: the job's services). */
#ifndef OHBOX_CI_GITLAB_H
#define OHBOX_CI_GITLAB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup/cgroup.h"
#include "common/error.h"
#include "sandbox/sandbox.h"

#define CI_DRIVER_NAME "ohbox"
#define CI_BUILDS_DIR "/builds"
#define CI_CACHE_DIR "/cache"
/* Bounds on what the runner hands us (JOB_RESPONSE_FILE is the whole job). */
#define CI_JOB_RESPONSE_MAX (8 * 1024 * 1024)
#define CI_MAX_SERVICES 16
#define CI_NAME_MAX 128
#define CI_JOB_NAME_MAX 100 /* leaves room for the services' "-svcN" */
#define CI_MAX_PULL_ARGS 16
#define CI_MAX_HOSTNAMES (CI_MAX_SERVICES * 8)

struct ci_ctx
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
};

int ci_open (struct ci_ctx *c, ohbox_error_t *err);
void ci_close (struct ci_ctx *c);

struct prepare_opts
{
  const char *pull; /* missing, always, never */
  const char *pull_args[CI_MAX_PULL_ARGS];
  size_t n_pull_args;
  const char *network; /* --network as given; NULL: the default (run_policy.h) */
  struct ohbox_cgroup_limits limits;
};

/* Makes IMAGE present in the store as the pull policy says. */
int ci_ensure_image (struct prepare_opts *po, const char *image, ohbox_error_t *err);
/* Starts the plan of Q detached (its name and image in the job's log). */
struct ohbox_run_request;
int ci_start_detached (struct ci_ctx *c, struct ohbox_run_request *q, ohbox_error_t *err);
/* JOB-svcI: the sandbox of the job's service I. */
void ci_service_sandbox_name (char *buf, const char *job_name, size_t i);

/* "NAME:127.0.0.1" entries (--add-host) for the job's sandbox, NULL-terminated. */
struct hostnames
{
  char *v[CI_MAX_HOSTNAMES + 1];
  size_t n;
};
void ci_hostnames_clear (struct hostnames *h);

/* The services of $JOB_RESPONSE_FILE (*RET NULL when none) and their names. */
int ci_load_services (json_t **ret, struct hostnames *hosts, ohbox_error_t *err);
/* Starts each service in the job sandbox's network namespace. */
int ci_start_services (struct prepare_opts *po, const char *job_name, json_t *services, ohbox_error_t *err);

#endif
