/* api.c: the public API (ohbox.h) over the internal modules: errors,
 * contexts, images, and the sandbox lifecycle. Exec and actions are in
 * api_exec.c. Nothing here decides how a sandbox runs: ohbox_run maps its
 * options onto a run request and runs the plan of the run policy
 * (policy/run_policy.h), as `ohbox run` does. */
#include "config.h"
#include "api/ohbox.h"
#include "api/api_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "build/build.h"
#include "image/pull.h"
#include "network/network.h"
#include "policy/run_policy.h"
#include "sandbox/linux.h"

_Static_assert((int) OHBOX_E_GENERIC == (int) OHBOX_ERR_GENERIC && (int) OHBOX_E_USAGE == (int) OHBOX_ERR_USAGE
                 && (int) OHBOX_E_NOT_FOUND == (int) OHBOX_ERR_NOT_FOUND && (int) OHBOX_E_AUTH == (int) OHBOX_ERR_AUTH
                 && (int) OHBOX_E_REGISTRY == (int) OHBOX_ERR_REGISTRY
                 && (int) OHBOX_E_INTEGRITY == (int) OHBOX_ERR_INTEGRITY && (int) OHBOX_E_STORE == (int) OHBOX_ERR_STORE
                 && (int) OHBOX_E_UNSUPPORTED == (int) OHBOX_ERR_UNSUPPORTED
                 && (int) OHBOX_E_SANDBOX == (int) OHBOX_ERR_SANDBOX && (int) OHBOX_E_NETWORK == (int) OHBOX_ERR_NETWORK
                 && (int) OHBOX_E_CGROUP == (int) OHBOX_ERR_CGROUP
                 && (int) OHBOX_E_SECURITY == (int) OHBOX_ERR_SECURITY,
               "the public error codes are the internal kinds");

/* Option structs larger than this are a caller's bug, not a newer ABI. */
#define API_MAX_OPTS_SIZE 4096

const char *
ohbox_version (void)
{
  return PACKAGE_VERSION;
}

void
ohbox_free (void *p)
{
  free (p);
}

/* ---- errors ---- */

struct ohbox_err
{
  int code;
  int errno_value;
  char *message;
};

int
api_fail (ohbox_err **err, ohbox_error_t *e)
{
  if (err && *e)
    {
      ohbox_err *x = xmalloc (sizeof *x);
      x->code = (*e)->kind;
      x->errno_value = (*e)->errno_value;
      x->message = steal_pointer (&(*e)->msg);
      *err = x;
    }
  ohbox_error_release (e);
  return -1;
}

int
ohbox_err_code (const ohbox_err *e)
{
  return e ? e->code : 0;
}

int
ohbox_err_errno (const ohbox_err *e)
{
  return e ? e->errno_value : 0;
}

const char *
ohbox_err_message (const ohbox_err *e)
{
  return e && e->message ? e->message : "";
}

void
ohbox_err_free (ohbox_err *e)
{
  if (e == NULL)
    return;
  free (e->message);
  free (e);
}

int
api_copy_opts (void *dst, size_t dst_size, const void *src, const char *what, ohbox_error_t *err)
{
  memset (dst, 0, dst_size);
  if (src == NULL)
    {
      *(size_t *) dst = dst_size;
      return 0;
    }
  size_t n = *(const size_t *) src;
  if (n < sizeof (size_t) || n > API_MAX_OPTS_SIZE)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s: `size` is %zu: set it to sizeof (%s) (OHBOX_OPTS_INIT)", what, n,
                        what);
  /* A caller built against a newer header: fine while it leaves what we
   * do not know about zero. */
  const unsigned char *p = src;
  for (size_t i = dst_size; i < n; i++)
    if (p[i])
      return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                          "%s uses options this libohbox %s does not know: link a newer libohbox", what,
                          PACKAGE_VERSION);
  memcpy (dst, src, n < dst_size ? n : dst_size);
  return 0;
}

/* ---- context ---- */

static char *
dup_or_null (const char *s)
{
  return s ? xstrdup (s) : NULL;
}

int
ohbox_ctx_new (const ohbox_ctx_opts *opts, ohbox_ctx **ret, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  ohbox_ctx_opts o;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_ctx_opts", &e) < 0)
    return api_fail (err, &e);
  ohbox_ctx *c = xcalloc (1, sizeof *c);
  c->store_root = o.store_root ? xstrdup (o.store_root) : ohbox_store_default_root ();
  c->state_root = dup_or_null (o.state_root);
  c->authfile = dup_or_null (o.authfile);
  c->tls_insecure = o.tls_insecure;
  /* Loaded once: a bad file is reported now, not at the first pull. */
  if (ohbox_registries_conf_load (o.registries_conf, &c->conf, &e) < 0)
    {
      ohbox_ctx_free (c);
      return api_fail (err, &e);
    }
  /* Open once to report an unusable store now too. */
  struct ohbox_store *s = NULL;
  if (ohbox_store_open (c->store_root, &s, &e) < 0)
    {
      ohbox_ctx_free (c);
      return api_fail (err, &e);
    }
  ohbox_store_close (s);
  *ret = c;
  return 0;
}

void
ohbox_ctx_free (ohbox_ctx *ctx)
{
  if (ctx == NULL)
    return;
  free (ctx->store_root);
  free (ctx->state_root);
  free (ctx->authfile);
  ohbox_registries_conf_free (ctx->conf);
  free (ctx);
}

int
api_open (ohbox_ctx *ctx, struct ohbox_store **store, struct ohbox_runtime **rt, ohbox_error_t *err)
{
  *store = NULL;
  if (rt)
    *rt = NULL;
  if (ohbox_store_open (ctx->store_root, store, err) < 0)
    return -1;
  if (rt && ohbox_runtime_open (*store, ctx->state_root, rt, err) < 0)
    {
      ohbox_store_close (*store);
      *store = NULL;
      return -1;
    }
  return 0;
}

void
api_close (struct ohbox_store *store, struct ohbox_runtime *rt)
{
  if (rt)
    ohbox_runtime_close (rt);
  if (store)
    ohbox_store_close (store);
}

/* ---- images ---- */

static void
pull_options (ohbox_ctx *ctx, const char *platform, struct ohbox_pull_options *po)
{
  memset (po, 0, sizeof *po);
  po->platform = platform;
  po->registry.authfile = ctx->authfile;
  po->registry.insecure = ctx->tls_insecure;
  po->tls_verify_explicit = ctx->tls_insecure;
  po->conf = ctx->conf;
}

int
ohbox_pull_image (ohbox_ctx *ctx, const char *ref, const ohbox_pull_opts *opts, char **ret_id, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  ohbox_pull_opts o;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_pull_opts", &e) < 0)
    return api_fail (err, &e);
  if (ref == NULL)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "ohbox_pull_image: no image given"), api_fail (err, &e);
  struct ohbox_pull_options po;
  pull_options (ctx, o.platform, &po);
  po.max_image_size = o.max_image_size;
  po.timeout_s = o.timeout;
  struct ohbox_store *store;
  if (api_open (ctx, &store, NULL, &e) < 0)
    return api_fail (err, &e);
  struct ohbox_pull_result res = { 0 };
  int r = ohbox_pull (store, ref, &po, &res, &e);
  ohbox_store_close (store);
  if (r == 0 && ret_id)
    *ret_id = steal_pointer (&res.id);
  ohbox_pull_result_clear (&res);
  return r < 0 ? api_fail (err, &e) : 0;
}

int
ohbox_build_image (ohbox_ctx *ctx, const char *base, const ohbox_build_opts *opts, char **ret_image, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  ohbox_build_opts o;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_build_opts", &e) < 0)
    return api_fail (err, &e);
  if (base == NULL)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "ohbox_build_image: no base image given"), api_fail (err, &e);
  struct ohbox_pull_options po;
  pull_options (ctx, NULL, &po);
  struct ohbox_build_options bo = {
    .runtime_repo = o.runtime_repo,
    .force_rebuild = o.force_rebuild,
    .no_pull = o.no_pull,
    .pull = &po,
  };
  struct ohbox_store *store;
  if (api_open (ctx, &store, NULL, &e) < 0)
    return api_fail (err, &e);
  struct ohbox_build_result res;
  memset (&res, 0, sizeof res);
  int r = ohbox_build (store, base, &bo, &res, &e);
  ohbox_store_close (store);
  if (r == 0 && ret_image)
    *ret_image = steal_pointer (&res.image);
  ohbox_build_result_clear (&res);
  return r < 0 ? api_fail (err, &e) : 0;
}

/* ---- run ---- */

static int
set_limit (struct ohbox_cgroup_limits *l, const char *option, const char *value, ohbox_error_t *err)
{
  return ohbox_cgroup_limits_set_option (l, option, value, err);
}

static int
run_limits (const ohbox_run_opts *o, struct ohbox_cgroup_limits *l, ohbox_error_t *err)
{
  char buf[64];
  memset (l, 0, sizeof *l);
  if (o->memory < 0 || o->pids_limit < 0 || o->cpus < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "ohbox_run_opts: memory, cpus and pids_limit must not be negative");
  /* Through the CLI's parser: the same checks and units as `ohbox run`. */
  if (o->memory > 0)
    {
      snprintf (buf, sizeof buf, "%lld", (long long) o->memory);
      if (set_limit (l, "memory", buf, err) < 0)
        return -1;
    }
  if (o->cpus > 0)
    {
      snprintf (buf, sizeof buf, "%.6f", o->cpus);
      if (set_limit (l, "cpus", buf, err) < 0)
        return -1;
    }
  if (o->pids_limit > 0)
    {
      snprintf (buf, sizeof buf, "%lld", (long long) o->pids_limit);
      if (set_limit (l, "pids-limit", buf, err) < 0)
        return -1;
    }
  return ohbox_cgroup_limits_validate (l, err);
}

static size_t
count_strv (const char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

/* The run request for O (the policy's input, as `ohbox run` fills it). */
static int
run_request (const ohbox_run_opts *o, struct ohbox_run_request *q, ohbox_error_t *err)
{
  memset (q, 0, sizeof *q);
  if (o->image == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "ohbox_run: no image given");
  size_t n_argv = count_strv (o->argv), n_env = count_strv (o->env);
  if (n_argv > OHBOX_SANDBOX_MAX_ARGS || n_env > OHBOX_SANDBOX_MAX_ENV)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "ohbox_run: more than %d arguments or environment entries",
                        OHBOX_SANDBOX_MAX_ARGS);
  static const char *const networks[] = {
    [OHBOX_NETMODE_DEFAULT] = NULL,
    [OHBOX_NETMODE_NONE] = "none",
    [OHBOX_NETMODE_HOST] = "host",
    [OHBOX_NETMODE_BRIDGE] = "bridge",
  };
  if ((unsigned) o->network >= sizeof networks / sizeof networks[0])
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "ohbox_run: unknown network %d", (int) o->network);
  q->network = networks[o->network];
  if (o->network_name && *o->network_name)
    {
      if (o->network != OHBOX_NETMODE_DEFAULT && o->network != OHBOX_NETMODE_BRIDGE)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "ohbox_run: network_name needs network DEFAULT or BRIDGE");
      if (ohbox_network_name_check (o->network_name, err) < 0)
        return ohbox_error_prefix (err, "ohbox_run");
      q->network = o->network_name;
    }
  q->egress = o->egress;
  q->image = o->image;
  q->name = o->name;
  q->workdir = o->workdir;
  q->user = o->user;
  q->detach = o->detach;
  q->rm = o->remove;
  /* The request's vectors are not const but are only read. */
  q->command = n_argv ? (char **) o->argv : NULL;
  q->env = (char **) o->env;
  q->executor_port = o->executor_port;
  q->api_key = o->api_key;
  q->no_new_privs = o->no_new_privileges;
  if (o->storage_size < 0)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "ohbox_run_opts: storage_size must not be negative");
  q->storage_size = (uint64_t) o->storage_size;
  q->devices = (char **) o->devices;
  q->cdi_spec_dirs = (char **) o->cdi_spec_dirs;
  q->gpus = o->gpus;
  return run_limits (o, &q->limits, err);
}

/* The plan for OPTS in CTX's store (RT: the runtime the run will use, or
 * NULL for a dry run). */
static int
api_plan (struct ohbox_store *store, struct ohbox_runtime *rt, const struct ohbox_run_request *q,
          struct ohbox_host_abilities *host, struct ohbox_run_plan *plan, ohbox_error_t *err)
{
  if (ohbox_host_probe (rt, host, err) < 0)
    return -1;
  if (ohbox_run_plan_make (store, q, host, plan, err) < 0)
    {
      ohbox_host_abilities_clear (host);
      return -1;
    }
  return 0;
}

int
ohbox_run_plan (ohbox_ctx *ctx, const ohbox_run_opts *opts, char **ret_json, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  ohbox_run_opts o;
  struct ohbox_run_request q;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_run_opts", &e) < 0 || run_request (&o, &q, &e) < 0)
    return api_fail (err, &e);
  struct ohbox_store *store;
  if (api_open (ctx, &store, NULL, &e) < 0)
    return api_fail (err, &e);
  struct ohbox_host_abilities host;
  struct ohbox_run_plan plan;
  int r = api_plan (store, NULL, &q, &host, &plan, &e);
  api_close (store, NULL);
  if (r < 0)
    return api_fail (err, &e);
  json_t *j = ohbox_run_plan_json (&plan);
  char *text = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  ohbox_run_plan_clear (&plan);
  ohbox_host_abilities_clear (&host);
  if (text == NULL)
    abort ();
  if (ret_json)
    *ret_json = text;
  else
    free (text);
  return 0;
}

int
ohbox_run (ohbox_ctx *ctx, const ohbox_run_opts *opts, char **ret_id, int *ret_exit_code, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  int dummy_code;
  if (ret_exit_code == NULL)
    ret_exit_code = &dummy_code;
  *ret_exit_code = OHBOX_EXIT_RUNTIME;
  ohbox_run_opts o;
  struct ohbox_run_request q;
  if (api_copy_opts (&o, sizeof o, opts, "ohbox_run_opts", &e) < 0 || run_request (&o, &q, &e) < 0)
    return api_fail (err, &e);
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  if (api_open (ctx, &store, &rt, &e) < 0)
    return api_fail (err, &e);
  struct ohbox_host_abilities host;
  struct ohbox_run_plan plan;
  if (api_plan (store, rt, &q, &host, &plan, &e) < 0)
    {
      api_close (store, rt);
      return api_fail (err, &e);
    }
  for (size_t i = 0; o.warn && i < plan.n_warnings; i++)
    o.warn (plan.warnings[i], o.warn_data);
  int r = ohbox_run_plan_realize (&plan, &e);
  if (r == 0)
    {
      plan.opts.warn = o.warn;
      plan.opts.warn_data = o.warn_data;
      /* A foreground run blocks the forwarded signals in this thread: give
       * the caller its mask back. */
      sigset_t mask;
      pthread_sigmask (SIG_SETMASK, NULL, &mask);
      r = ohbox_sandbox_run (rt, &plan.opts, ret_id, ret_exit_code, &e);
      pthread_sigmask (SIG_SETMASK, &mask, NULL);
    }
  ohbox_run_plan_clear (&plan);
  ohbox_host_abilities_clear (&host);
  api_close (store, rt);
  return r < 0 ? api_fail (err, &e) : 0;
}

/* ---- lifecycle ---- */

/* Resolves WHAT and calls FN on the sandbox's id. */
static int
with_sandbox (ohbox_ctx *ctx, const char *what,
              int (*fn) (struct ohbox_runtime *, const char *, void *, ohbox_error_t *), void *data, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  if (what == NULL)
    return ohbox_error (&e, OHBOX_ERR_USAGE, 0, "no sandbox given"), api_fail (err, &e);
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  if (api_open (ctx, &store, &rt, &e) < 0)
    return api_fail (err, &e);
  cleanup_free char *id = NULL;
  int r = ohbox_sandbox_resolve (rt, what, &id, &e);
  if (r == 0)
    r = fn (rt, id, data, &e);
  api_close (store, rt);
  return r < 0 ? api_fail (err, &e) : 0;
}

static int
do_stop (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_stop (rt, id, *(int *) data, err);
}

int
ohbox_stop (ohbox_ctx *ctx, const char *id, int timeout, ohbox_err **err)
{
  if (timeout < 0)
    timeout = 10;
  return with_sandbox (ctx, id, do_stop, &timeout, err);
}

static int
do_remove (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_remove (rt, id, *(bool *) data, err);
}

int
ohbox_remove (ohbox_ctx *ctx, const char *id, bool force, ohbox_err **err)
{
  return with_sandbox (ctx, id, do_remove, &force, err);
}

static int
do_wait (struct ohbox_runtime *rt, const char *id, void *data, ohbox_error_t *err)
{
  return ohbox_sandbox_wait (rt, id, data, err);
}

int
ohbox_wait (ohbox_ctx *ctx, const char *id, int *ret_exit_code, ohbox_err **err)
{
  int code = -1;
  int r = with_sandbox (ctx, id, do_wait, &code, err);
  if (r == 0 && ret_exit_code)
    *ret_exit_code = code;
  return r;
}

/* ---- list ---- */

struct ohbox_listing
{
  struct ohbox_sandbox_info *infos;
  size_t n;
  char *text; /* the JSON of `ohbox ps --format json` */
};

int
ohbox_list (ohbox_ctx *ctx, bool all, ohbox_listing **ret, ohbox_err **err)
{
  cleanup_error ohbox_error_t e = NULL;
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
  if (api_open (ctx, &store, &rt, &e) < 0)
    return api_fail (err, &e);
  ohbox_listing *l = xcalloc (1, sizeof *l);
  int r = ohbox_sandbox_list_info (rt, all, &l->infos, &l->n, &e);
  api_close (store, rt);
  if (r < 0)
    {
      free (l);
      return api_fail (err, &e);
    }
  json_t *arr = json_array ();
  for (size_t i = 0; i < l->n; i++)
    json_array_append_new (arr, ohbox_sandbox_info_to_json (&l->infos[i]));
  l->text = json_dumps (arr, JSON_COMPACT);
  json_decref (arr);
  if (l->text == NULL)
    l->text = xstrdup ("[]");
  *ret = l;
  return 0;
}

size_t
ohbox_listing_count (const ohbox_listing *l)
{
  return l ? l->n : 0;
}

static const struct ohbox_sandbox_info *
listing_at (const ohbox_listing *l, size_t i)
{
  return l && i < l->n ? &l->infos[i] : NULL;
}

const char *
ohbox_listing_id (const ohbox_listing *l, size_t i)
{
  const struct ohbox_sandbox_info *s = listing_at (l, i);
  return s ? s->id : NULL;
}

const char *
ohbox_listing_name (const ohbox_listing *l, size_t i)
{
  const struct ohbox_sandbox_info *s = listing_at (l, i);
  return s ? s->config.name : NULL;
}

const char *
ohbox_listing_image (const ohbox_listing *l, size_t i)
{
  const struct ohbox_sandbox_info *s = listing_at (l, i);
  return s ? s->config.image : NULL;
}

const char *
ohbox_listing_status (const ohbox_listing *l, size_t i)
{
  const struct ohbox_sandbox_info *s = listing_at (l, i);
  return s ? ohbox_status_name (s->status) : NULL;
}

int
ohbox_listing_exit_code (const ohbox_listing *l, size_t i)
{
  const struct ohbox_sandbox_info *s = listing_at (l, i);
  /* As ps shows it: only once the sandbox exited. */
  return s && s->status == OHBOX_STATUS_EXITED && ohbox_sandbox_record_exited (&s->record) ? s->record.exit_code : -1;
}

const char *
ohbox_listing_json (const ohbox_listing *l)
{
  return l ? l->text : "[]";
}

void
ohbox_listing_free (ohbox_listing *l)
{
  if (l == NULL)
    return;
  ohbox_sandbox_infos_free (l->infos, l->n);
  free (l->text);
  free (l);
}
