/* run_plan.c: a run plan (run_policy.h) as JSON, and its release. */
#include "config.h"
#include "policy/run_policy.h"

#include <string.h>

#include "common/utils.h"

const char *
ohbox_net_backend_name (enum ohbox_net_backend b)
{
  switch (b)
    {
    case OHBOX_NET_BACKEND_VETH:
      return "veth";
    case OHBOX_NET_BACKEND_SLIRP4NETNS:
      return "slirp4netns";
    case OHBOX_NET_BACKEND_PASTA:
      return "pasta";
    case OHBOX_NET_BACKEND_NONE:
      break;
    }
  return NULL;
}

static const char *
network_name (enum ohbox_network_mode m)
{
  switch (m)
    {
    case OHBOX_NETWORK_NONE:
      return "none";
    case OHBOX_NETWORK_HOST:
      return "host";
    case OHBOX_NETWORK_BRIDGE:
      return "bridge";
    case OHBOX_NETWORK_CONTAINER:
      return "container";
    }
  return "?";
}

/* V (NULL-terminated) as an array; NULL as null when NULL_IF_NONE. */
static json_t *
strv_json (char **v, bool null_if_none)
{
  if (v == NULL && null_if_none)
    return json_null ();
  json_t *a = json_array ();
  for (size_t i = 0; v && v[i]; i++)
    json_array_append_new (a, json_string (v[i]));
  return a;
}

static json_t *
str_or_null (const char *s)
{
  return s ? json_string (s) : json_null ();
}

static json_t *
int_or_null (long long v)
{
  return v ? json_integer (v) : json_null ();
}

/* The names of ENV's entries: values may be secrets. */
static json_t *
env_names (char **env)
{
  json_t *a = json_array ();
  for (size_t i = 0; env && env[i]; i++)
    {
      const char *eq = strchr (env[i], '=');
      json_array_append_new (a, eq ? json_stringn (env[i], (size_t) (eq - env[i])) : json_string (env[i]));
    }
  return a;
}

static json_t *
network_json (const struct ohbox_run_plan *p)
{
  const struct ohbox_run_request *r = p->req;
  return json_pack ("{s:s, s:o, s:b, s:o, s:o, s:o, s:o, s:o, s:o}", "mode", network_name (p->network), "backend",
                    str_or_null (ohbox_net_backend_name (p->backend)), "explicit", p->network_explicit, "container",
                    str_or_null (p->network_container), "name", str_or_null (p->network_name), "egress",
                    str_or_null (p->egress), "publish", strv_json (p->publish, false), "dns", strv_json (r->dns, false),
                    "add_hosts", strv_json (r->add_hosts, false));
}

static json_t *
executor_json (const struct ohbox_plan_executor *x)
{
  if (!x->enabled)
    return json_null ();
  return json_pack ("{s:o, s:o, s:b, s:b, s:o, s:o, s:o, s:b, s:s, s:o, s:s, s:b}", "port", int_or_null (x->port),
                    "listen_address", str_or_null (x->own_command ? NULL : x->listen_address), "reachable_from_host",
                    x->reachable, "published", x->published, "host_address",
                    str_or_null (x->reachable ? x->host_address : NULL), "host_port", int_or_null (x->host_port), "url",
                    str_or_null (x->url), "socket", x->socket, "session_key", x->key_source, "argv",
                    strv_json (x->argv, true), "command", x->own_command ? "request" : "executor", "standby",
                    x->standby);
}

static json_t *
process_json (const struct ohbox_run_plan *p)
{
  const struct ohbox_run_request *r = p->req;
  char **command = p->executor.enabled ? p->executor.argv : (r->command && r->command[0] ? r->command : NULL);
  bool executor = p->executor.enabled && !p->executor.own_command;
  return json_pack ("{s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:b, s:f, s:o}", "entrypoint",
                    strv_json (executor ? NULL : r->entrypoint, true), "command", strv_json (command, true), "env",
                    env_names (p->env), "user", str_or_null (r->user), "workdir", str_or_null (r->workdir), "hostname",
                    str_or_null (r->hostname), "tty", r->tty, "interactive", r->interactive, "detach", r->detach, "rm",
                    r->rm, "timeout", r->timeout, "stop_signal", str_or_null (r->stop_signal));
}

static json_t *
limits_json (const struct ohbox_cgroup_limits *l, uint64_t storage_size)
{
  return json_pack ("{s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "memory", int_or_null (l->memory), "memory_swap",
                    (json_int_t) l->memory_swap, "cpu_quota", int_or_null (l->cpu_quota), "cpu_period",
                    int_or_null ((long long) l->cpu_period), "cpu_shares", int_or_null ((long long) l->cpu_shares),
                    "cpu_weight", int_or_null ((long long) l->cpu_weight), "pids", int_or_null (l->pids),
                    "storage_size", int_or_null ((long long) storage_size));
}

static json_t *
security_json (const struct ohbox_run_plan *p)
{
  const struct ohbox_run_request *r = p->req;
  return json_pack ("{s:s, s:o, s:o, s:s, s:b, s:b}", "user_namespace", r->userns_host ? "host" : "private", "cap_add",
                    strv_json (r->cap_add, false), "cap_drop", strv_json (r->cap_drop, false), "seccomp",
                    r->seccomp_profile ? r->seccomp_profile : "default", "no_new_privileges", r->no_new_privs,
                    "read_only", r->read_only);
}

static json_t *
devices_json (const struct ohbox_device_edits *d)
{
  json_t *nodes = ohbox_device_nodes_json (d), *mounts = json_array ();
  for (size_t i = 0; i < d->n_mounts; i++)
    json_array_append_new (mounts,
                           json_pack ("{s:s, s:s, s:o}", "host_path", d->mounts[i].host_path, "container_path",
                                      d->mounts[i].container_path, "options", strv_json (d->mounts[i].options, false)));
  json_t *hooks = json_array ();
  for (size_t i = 0; i < d->n_hooks; i++)
    json_array_append_new (hooks, json_pack ("{s:s, s:o}", "path", d->hooks[i].path, "args",
                                             strv_json (d->hooks[i].args, false)));
  json_t *gids = json_array ();
  for (size_t i = 0; i < d->n_additional_gids; i++)
    json_array_append_new (gids, json_integer (d->additional_gids[i]));
  return json_pack ("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "names", strv_json (d->names, false), "nodes", nodes,
                    "mounts", mounts, "env", env_names (d->env), "hooks", hooks, "additional_gids", gids,
                    "ldconfig_dirs", strv_json (d->ldconfig_dirs, false));
}

json_t *
ohbox_run_plan_json (const struct ohbox_run_plan *p)
{
  const struct ohbox_host_abilities *h = p->host;
  json_t *host = json_pack ("{s:b, s:b, s:s, s:b}", "pasta", h->pasta, "slirp4netns", h->slirp4netns, "cgroup_mode",
                            ohbox_cgroup_mode_name (h->cgroup_mode), "cgroup_limits", h->cgroup_limits);
  json_t *mounts = json_pack ("{s:o, s:o}", "volumes", strv_json (p->req->volumes, false), "tmpfs",
                              strv_json (p->req->tmpfs, false));
  return json_pack ("{s:s, s:o, s:b, s:{s:i, s:b}, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "image",
                    p->req->image, "image_id", str_or_null (p->image_id), "runtime_image", p->runtime_image, "caller",
                    "euid", (int) p->euid, "rootless", p->rootless, "host", host, "network", network_json (p),
                    "executor", executor_json (&p->executor), "process", process_json (p), "limits",
                    limits_json (&p->req->limits, p->opts.storage_size), "security", security_json (p), "mounts",
                    mounts, "devices", devices_json (&p->devices), "warnings", strv_json (p->warnings, false), "labels",
                    strv_json (p->req->labels, false));
}

static void
vfree (char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free (v[i]);
  free (v);
}

void
ohbox_run_plan_clear (struct ohbox_run_plan *p)
{
  free (p->image_id);
  free (p->egress);
  vfree (p->publish);
  vfree (p->env);
  vfree (p->warnings);
  free (p->executor.host_address);
  free (p->executor.api_key);
  free (p->executor.url);
  vfree (p->executor.argv);
  vfree (p->executor.openhands_args);
  ohbox_device_edits_free (&p->devices);
  memset (p, 0, sizeof *p);
}
