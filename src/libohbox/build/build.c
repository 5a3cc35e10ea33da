/* build.c: `ohbox build` (see build.h): tags, the four paths, and the
 * assembly of a runtime image from kept layers plus new ones. */
#include "config.h"
#include "build/build.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "build/runtime_image.h"
#include "image/image.h"
#include "registry/reference.h"
#include "common/utils.h"

/* The OpenHands-compatible entry: DockerRuntime starts
 *   /openhands/micromamba/bin/micromamba run -n openhands poetry run python -u
 *     -m openhands.runtime.action_execution_server PORT ARGS...
 * which this script turns into the executor with PORT ARGS... (the
 * executor takes the action server's argv). %s is the shell. */
static const char openhands_entry[] =
  "#!%s\n"
  "# ohbox runtime image: the argv OpenHands' DockerRuntime runs starts ohbox-executor.\n"
  "while [ $# -gt 0 ]; do\n"
  "  if [ \"$1\" = openhands.runtime.action_execution_server ]; then\n"
  "    shift\n"
  "    exec " OHBOX_RUNTIME_LOADER " --library-path " OHBOX_RUNTIME_LIBDIR " " OHBOX_RUNTIME_EXECUTOR " \"$@\"\n"
  "  fi\n"
  "  shift\n"
  "done\n"
  "echo 'micromamba (ohbox runtime image): only \"run ... -m openhands.runtime.action_execution_server PORT ...\" "
  "is supported' >&2\n"
  "exit 127\n";

void
ohbox_build_result_clear (struct ohbox_build_result *r)
{
  free (r->image);
  free (r->id);
  free (r->base);
  free (r->base_digest);
  free (r->versioned_tag);
  free (r->lock_tag);
  free (r->source_tag);
  free (r->from);
  json_decref (r->tagged);
  memset (r, 0, sizeof *r);
}

json_t *
ohbox_build_result_json (const struct ohbox_build_result *r)
{
  return json_pack ("{s:s, s:i, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:s?, s:O, s:f}", "path",
                    ohbox_build_path_name (r->path), "path_number", (int) r->path, "image", r->image, "id", r->id,
                    "base", r->base, "base_digest", r->base_digest, "tags", "versioned", r->versioned_tag, "lock",
                    r->lock_tag, "source", r->source_tag, "from", r->from, "tagged",
                    r->tagged ? r->tagged : json_null (), "seconds", r->seconds);
}

/* "REPO:TAG" normalised. */
static int
runtime_name (const char *repo, const char *tag, char **out, ohbox_error_t *err)
{
  cleanup_free char *s = xasprintf ("%s:%s", repo, tag);
  cleanup_reference struct ohbox_reference *ref = NULL;
  if (ohbox_reference_parse (s, &ref, err) < 0)
    return ohbox_error_prefix (err, "runtime repository `%s`", repo);
  if (ref->digest)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "runtime repository `%s` must not have a digest", repo);
  *out = ohbox_reference_string (ref);
  return 0;
}

/* What the layers LAYERS[0..N) show at PATH, the top one winning: 0 when
 * absent (or removed by a whiteout, or behind a symlink), else st_mode. */
static mode_t
lookup_in_layers (struct ohbox_store *s, const struct oci_image_config *cfg, size_t n, const char *path)
{
  for (size_t i = n; i-- > 0;)
    {
      cleanup_free char *dir = ohbox_store_layer_path (s, cfg->diff_ids[i]);
      cleanup_close int dfd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0)
        continue;
      cleanup_close int fd = ohbox_openat_beneath (dfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, 0);
      if (fd < 0)
        continue;
      struct stat st;
      if (fstat (fd, &st) < 0)
        continue;
      if (S_ISCHR (st.st_mode) && st.st_rdev == makedev (0, 0))
        return 0; /* whiteout */
      return st.st_mode;
    }
  return 0;
}

/* The runtime snapshot NAME, locally or pulled from the runtime registry. */
static int
find_snapshot (struct ohbox_store *s, const char *name, bool can_pull, const struct ohbox_build_options *opts,
               struct ohbox_image **out, ohbox_error_t *err)
{
  *out = NULL;
  if (ohbox_image_load (s, name, out, err) == 0)
    return 1;
  if ((*err)->kind != OHBOX_ERR_NOT_FOUND)
    return -1;
  ohbox_error_release (err);
  if (!can_pull)
    return 0;
  struct ohbox_pull_options po = { 0 };
  if (opts->pull)
    po = *opts->pull;
  po.events = NULL;
  struct ohbox_pull_result pr = { 0 };
  int r = ohbox_pull (s, name, &po, &pr, err);
  ohbox_pull_result_clear (&pr);
  if (r < 0)
    {
      /* Not there, or the registry cannot be reached: build instead. */
      if ((*err)->kind != OHBOX_ERR_NOT_FOUND && opts->notice)
        {
          cleanup_free char *m = xasprintf ("cannot pull `%s` (%s): building instead", name, (*err)->msg);
          opts->notice (opts->userdata, m);
        }
      ohbox_error_release (err);
      return 0;
    }
  if (ohbox_image_load (s, name, out, err) < 0)
    return -1;
  return 1;
}

/* The number of base layers a runtime snapshot says it has, checked
 * against its layers (it must have the dependency and executor layers
 * after them); -1 when it is not a usable runtime snapshot of BASE_DIGEST. */
static long
snapshot_base_layers (const struct ohbox_image *img, const char *base_digest)
{
  json_t *labels = json_object_get (img->config->runtime_config, "Labels");
  const char *n = json_string_value (json_object_get (labels, OHBOX_RUNTIME_LABEL_BASE_LAYERS));
  const char *d = json_string_value (json_object_get (labels, OHBOX_RUNTIME_LABEL_BASE_DIGEST));
  if (n == NULL || d == NULL || strcmp (d, base_digest) != 0)
    return -1;
  char *end;
  errno = 0;
  long v = strtol (n, &end, 10);
  if (errno || *end || v < 0 || (size_t) v + 2 > img->manifest->n_layers)
    return -1;
  return v;
}

struct new_layer
{
  char digest[OHBOX_DIGEST_LEN + 1];
  int64_t size;
  const char *comment;
};

static int
dependency_layer (struct ohbox_store *s, const struct ohbox_build_inputs *in, const char *lock_json, bool with_bash,
                  bool bin_is_dir, struct new_layer *out, ohbox_error_t *err)
{
  struct ohbox_build_layer l = { 0 };
  ohbox_build_layer_dir (&l, ".ohbox", 0755);
  ohbox_build_layer_dir (&l, ".ohbox/lib", 0755);
  size_t i;
  json_t *f;
  json_array_foreach (in->closure_files, i, f)
  {
    const char *rel = json_string_value (json_object_get (f, "path"));
    cleanup_free char *src = xasprintf ("%s/%s", in->closure_dir, rel);
    cleanup_free char *dst = xasprintf (".ohbox/%s", rel);
    ohbox_build_layer_file (&l, dst, 0755, src);
  }
  ohbox_build_layer_data (&l, ".ohbox/lock.json", 0644, lock_json, strlen (lock_json));
  if (with_bash)
    {
      ohbox_build_layer_file (&l, OHBOX_RUNTIME_BASH + 1, 0755, in->bash);
      if (bin_is_dir)
        ohbox_build_layer_symlink (&l, "bin/bash", OHBOX_RUNTIME_BASH);
    }
  cleanup_free char *entry = xasprintf (openhands_entry, with_bash ? OHBOX_RUNTIME_BASH : "/bin/sh");
  ohbox_build_layer_dir (&l, "openhands", 0755);
  ohbox_build_layer_dir (&l, "openhands/code", 0755);
  ohbox_build_layer_dir (&l, "openhands/micromamba", 0755);
  ohbox_build_layer_dir (&l, "openhands/micromamba/bin", 0755);
  ohbox_build_layer_data (&l, "openhands/micromamba/bin/micromamba", 0755, entry, strlen (entry));
  ohbox_build_layer_dir (&l, "workspace", 0755);
  out->comment = "ohbox build: executor libraries, bash, lock, OpenHands entry";
  int r = ohbox_build_layer_commit (s, &l, out->digest, &out->size, err);
  ohbox_build_layer_clear (&l);
  return r;
}

static int
executor_layer (struct ohbox_store *s, const struct ohbox_build_inputs *in, struct new_layer *out, ohbox_error_t *err)
{
  struct ohbox_build_layer l = { 0 };
  ohbox_build_layer_dir (&l, ".ohbox", 0755);
  ohbox_build_layer_dir (&l, ".ohbox/bin", 0755);
  ohbox_build_layer_file (&l, OHBOX_RUNTIME_EXECUTOR + 1, 0755, in->executor);
  /* Not the source tag: it has the lock tag in it, and the executor layer
   * of every base would differ; this way it is one blob for all. */
  json_t *j = json_pack ("{s:s, s:s}", "source_digest", in->source_digest, "executor_sha256", in->executor_digest);
  cleanup_free char *data = json_dumps (j, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref (j);
  ohbox_build_layer_data (&l, ".ohbox/executor.json", 0644, data, strlen (data));
  out->comment = "ohbox build: executor";
  int r = ohbox_build_layer_commit (s, &l, out->digest, &out->size, err);
  ohbox_build_layer_clear (&l);
  return r;
}

static json_t *
strv_json (const char *const *v)
{
  json_t *a = json_array ();
  for (; *v; v++)
    json_array_append_new (a, json_string (*v));
  return a;
}

/* The config of the new image: FROM's (base layers KEEP of them, history
 * cut to match) with the new layers and the runtime settings. */
static json_t *
runtime_config (const struct ohbox_image *from, size_t keep, const struct new_layer *nl, size_t n_new, bool with_bash,
                const struct ohbox_build_result *res, size_t base_layers)
{
  json_t *cfg = json_deep_copy (from->config->json);
  json_t *rootfs = json_object_get (cfg, "rootfs");
  json_t *ids = json_array ();
  for (size_t i = 0; i < keep; i++)
    json_array_append_new (ids, json_string (from->config->diff_ids[i]));
  for (size_t i = 0; i < n_new; i++)
    json_array_append_new (ids, json_string (nl[i].digest));
  json_object_set_new (rootfs, "diff_ids", ids);

  json_t *hist = json_object_get (cfg, "history");
  if (json_is_array (hist))
    {
      /* Keep the entries up to the KEEP-th one that made a layer. */
      size_t seen = 0, cut = 0;
      for (; cut < json_array_size (hist) && seen < keep; cut++)
        if (!json_is_true (json_object_get (json_array_get (hist, cut), "empty_layer")))
          seen++;
      while (json_array_size (hist) > cut)
        json_array_remove (hist, cut);
      for (size_t i = 0; i < n_new; i++)
        json_array_append_new (hist, json_pack ("{s:s, s:s}", "created", "1970-01-01T00:00:00Z", "created_by",
                                                nl[i].comment));
    }

  json_t *c = json_object_get (cfg, "config");
  if (!json_is_object (c))
    {
      c = json_object ();
      json_object_set_new (cfg, "config", c);
    }
  static const char *const ep[] = { OHBOX_RUNTIME_LOADER, "--library-path", OHBOX_RUNTIME_LIBDIR,
                                    OHBOX_RUNTIME_EXECUTOR, NULL };
  /* root: a base may have no /etc/passwd for the executor to add a user to. */
  static const char *const cmd[] = {
    "8000", "--working-dir", "/workspace", "--username", "root", "--user-id", "0", NULL
  };
  json_object_set_new (c, "Entrypoint", strv_json (ep));
  json_object_set_new (c, "Cmd", strv_json (cmd));
  json_t *env = json_object_get (c, "Env");
  if (!json_is_array (env))
    {
      env = json_array ();
      json_object_set_new (c, "Env", env);
    }
  for (size_t i = json_array_size (env); i-- > 0;)
    {
      const char *e = json_string_value (json_array_get (env, i));
      if (e && strncmp (e, "OHBOX_EXECUTOR_BASH=", 20) == 0)
        json_array_remove (env, i);
    }
  if (with_bash)
    json_array_append_new (env, json_string ("OHBOX_EXECUTOR_BASH=" OHBOX_RUNTIME_BASH));
  json_t *ports = json_object_get (c, "ExposedPorts");
  if (!json_is_object (ports))
    {
      ports = json_object ();
      json_object_set_new (c, "ExposedPorts", ports);
    }
  json_object_set_new (ports, "8000/tcp", json_object ());
  json_t *labels = json_object_get (c, "Labels");
  if (!json_is_object (labels))
    {
      labels = json_object ();
      json_object_set_new (c, "Labels", labels);
    }
  json_object_set_new (labels, OHBOX_RUNTIME_LABEL, json_string ("1"));
  json_object_set_new (labels, OHBOX_RUNTIME_LABEL_BASE, json_string (res->base));
  json_object_set_new (labels, OHBOX_RUNTIME_LABEL_BASE_DIGEST, json_string (res->base_digest));
  json_object_set_new (labels, OHBOX_RUNTIME_LABEL_BASE_LAYERS, json_sprintf ("%zu", base_layers));
  json_object_set_new (labels, OHBOX_RUNTIME_LABEL_LOCK, json_string (res->lock_tag));
  json_object_set_new (labels, OHBOX_RUNTIME_LABEL_SOURCE, json_string (res->source_tag));
  return cfg;
}

/* Stores the image made of FROM's first KEEP layers and NL, named NAME. */
static int
commit_image (struct ohbox_store *s, const struct ohbox_image *from, size_t keep, const struct new_layer *nl,
              size_t n_new, bool with_bash, size_t base_layers, const char *name, struct ohbox_build_result *res,
              ohbox_error_t *err)
{
  json_t *cfg = runtime_config (from, keep, nl, n_new, with_bash, res, base_layers);
  cleanup_free char *cfg_raw = json_dumps (cfg, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref (cfg);
  char cfg_digest[OHBOX_DIGEST_LEN + 1];
  if (ohbox_store_put_blob (s, NULL, cfg_raw, strlen (cfg_raw), cfg_digest, err) < 0)
    return -1;
  json_t *layers = json_array ();
  json_t *from_layers = json_object_get (from->manifest->json, "layers");
  for (size_t i = 0; i < keep; i++)
    json_array_append_new (layers, json_deep_copy (json_array_get (from_layers, i)));
  for (size_t i = 0; i < n_new; i++)
    json_array_append_new (layers, json_pack ("{s:s, s:s, s:I}", "mediaType", OCI_MEDIA_LAYER, "digest", nl[i].digest,
                                              "size", (json_int_t) nl[i].size));
  json_t *man = json_pack ("{s:i, s:s, s:{s:s, s:s, s:I}, s:o}", "schemaVersion", 2, "mediaType", OCI_MEDIA_MANIFEST,
                           "config", "mediaType", OCI_MEDIA_CONFIG, "digest", cfg_digest, "size",
                           (json_int_t) strlen (cfg_raw), "layers", layers);
  cleanup_free char *man_raw = json_dumps (man, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref (man);
  char man_digest[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer (man_raw, strlen (man_raw), man_digest);
  struct oci_manifest *m = NULL;
  struct oci_image_config *c = NULL;
  int r = -1;
  if (oci_manifest_parse (man_raw, strlen (man_raw), &m, err) < 0
      || oci_image_config_parse (cfg_raw, strlen (cfg_raw), &c, err) < 0)
    {
      ohbox_error_prefix (err, "the runtime image assembled for `%s`", res->base);
      goto out;
    }
  r = ohbox_image_commit (s, name, man_digest, man_raw, strlen (man_raw), m, c, NULL, err);
  if (r == 0)
    res->id = xstrdup (man_digest);
out:
  oci_manifest_free (m);
  oci_image_config_free (c);
  return r;
}

/* The base: the local image, else pulled (unless NO_PULL). Fills
 * res->base (its familiar name) and res->base_digest (what its name
 * resolved to: the index digest for a multi-platform image). */
static int
load_base (struct ohbox_store *s, const char *base, const struct ohbox_build_options *opts,
           struct ohbox_build_result *res, struct ohbox_image **out, ohbox_error_t *err)
{
  cleanup_reference struct ohbox_reference *ref = NULL;
  cleanup_error ohbox_error_t perr = NULL;
  if (ohbox_reference_parse (base, &ref, &perr) == 0)
    res->base = ohbox_reference_familiar (ref);
  else
    res->base = xstrdup (base);
  if (ohbox_image_load (s, base, out, err) < 0)
    {
      if ((*err)->kind != OHBOX_ERR_NOT_FOUND || ref == NULL || opts->no_pull)
        return ohbox_error_prefix (err, "base image");
      ohbox_error_release (err);
      struct ohbox_pull_options po = { 0 };
      if (opts->pull)
        po = *opts->pull;
      struct ohbox_pull_result pr = { 0 };
      int r = ohbox_pull (s, base, &po, &pr, err);
      ohbox_pull_result_clear (&pr);
      if (r < 0 || ohbox_image_load (s, base, out, err) < 0)
        return ohbox_error_prefix (err, "base image `%s`", base);
    }
  const char *idx = json_string_value (json_object_get ((*out)->record, "index_digest"));
  res->base_digest = xstrdup (idx ? idx : (*out)->id);
  const struct oci_platform *p = &(*out)->config->platform;
  if (p->os == NULL || strcmp (p->os, "linux") != 0 || p->architecture == NULL
      || strcmp (p->architecture, "amd64") != 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "base image `%s` is %s/%s: runtime images are built for linux/amd64 only (the "
                        "executor's architecture); pull it with --platform linux/amd64",
                        base, p->os ? p->os : "?", p->architecture ? p->architecture : "?");
  return 0;
}

/* NAME resolves to an image this store recorded as built (*ID set). */
static bool
reusable (struct ohbox_store *s, const char *name, char **id)
{
  cleanup_error ohbox_error_t ignored = NULL;
  json_t *rec = NULL;
  if (ohbox_store_resolve (s, name, id, &ignored) < 0)
    return false;
  bool yes = ohbox_store_get_image (s, *id, &rec, &ignored) == 0 && ohbox_runtime_image_recorded (rec);
  json_decref (rec);
  if (!yes)
    {
      free (*id);
      *id = NULL;
    }
  return yes;
}

static int
set_name (struct ohbox_store *s, const char *name, const char *id, struct ohbox_build_result *res, ohbox_error_t *err)
{
  if (ohbox_store_set_ref (s, name, id, err) < 0)
    return -1;
  json_array_append_new (res->tagged, json_string (name));
  return 0;
}

int
ohbox_build (struct ohbox_store *s, const char *base, const struct ohbox_build_options *opts,
             struct ohbox_build_result *res, ohbox_error_t *err)
{
  double t0 = ohbox_monotonic ();
  memset (res, 0, sizeof *res);
  res->tagged = json_array ();
  const char *repo = opts->runtime_repo ? opts->runtime_repo : OHBOX_BUILD_DEFAULT_REPO;
  struct ohbox_image *base_img = NULL, *from = NULL;
  struct ohbox_build_inputs in = { 0 };
  cleanup_free char *lock_json = NULL, *vname = NULL, *lname = NULL, *sname = NULL;
  cleanup_free char *lock_prefix = NULL, *repo_probe = NULL;
  cleanup_reference struct ohbox_reference *repo_ref = NULL;
  cleanup_error ohbox_error_t ignored = NULL;
  int ret = -1;

  if (load_base (s, base, opts, res, &base_img, err) < 0 || ohbox_build_inputs_load (s, opts, &in, err) < 0)
    goto out;
  size_t nbase = base_img->manifest->n_layers;
  bool with_bash = lookup_in_layers (s, base_img->config, nbase, "usr/bin/bash") == 0
                   && lookup_in_layers (s, base_img->config, nbase, "bin/bash") == 0;
  bool bin_is_dir = S_ISDIR (lookup_in_layers (s, base_img->config, nbase, "bin"));
  lock_json = ohbox_build_lock_json (&in, with_bash);
  char lock_hex[65];
  ohbox_build_lock_digest (res->base, res->base_digest, lock_json, lock_hex);
  res->versioned_tag = ohbox_build_versioned_tag (OHBOX_BUILD_TAG_PREFIX, res->base);
  if (ohbox_build_hash_tag (OHBOX_BUILD_TAG_PREFIX, lock_hex, &res->lock_tag, err) < 0)
    goto out;
  lock_prefix = xasprintf ("%s_", res->lock_tag);
  if (ohbox_build_hash_tag (lock_prefix, in.source_digest, &res->source_tag, err) < 0
      || runtime_name (repo, res->versioned_tag, &vname, err) < 0 || runtime_name (repo, res->lock_tag, &lname, err) < 0
      || runtime_name (repo, res->source_tag, &sname, err) < 0)
    goto out;
  res->image = xstrdup (sname);

  /* 1. reuse: only an image a build recorded (runtime_image.h); one that
   * came in otherwise under the source tag is built again. */
  if (!opts->force_rebuild && reusable (s, sname, &res->id))
    {
      res->path = OHBOX_BUILD_REUSE;
      ret = 0;
      goto out;
    }

  /* Only a runtime repository with a registry host in it is pulled from:
   * the default one is local. */
  repo_probe = xasprintf ("%s:probe", repo);
  bool can_pull = !opts->no_pull && ohbox_reference_parse (repo_probe, &repo_ref, &ignored) == 0
                  && repo_ref->registry_explicit;
  struct new_layer nl[2];
  long kept;
  int found = 0;

  /* 2. from lock: keep its base and dependency layers. */
  if (!opts->force_rebuild)
    {
      found = find_snapshot (s, lname, can_pull, opts, &from, err);
      if (found < 0)
        goto out;
      if (found && (kept = snapshot_base_layers (from, res->base_digest)) >= 0)
        {
          res->path = OHBOX_BUILD_FROM_LOCK;
          res->from = xstrdup (lname);
          if (executor_layer (s, &in, &nl[0], err) < 0
              || commit_image (s, from, (size_t) kept + 1, nl, 1, with_bash, (size_t) kept, sname, res, err) < 0)
            goto out;
          json_array_append_new (res->tagged, json_string (sname));
          /* A lock snapshot pulled under the registry's name gets the local one too. */
          cleanup_free char *lock_id = NULL;
          cleanup_error ohbox_error_t rerr = NULL;
          if (ohbox_store_resolve (s, lname, &lock_id, &rerr) < 0 && set_name (s, lname, from->id, res, err) < 0)
            goto out;
          ret = 0;
          goto out;
        }
      ohbox_image_free (from);
      from = NULL;

      /* 3. from versioned: keep its base layers. */
      found = find_snapshot (s, vname, can_pull, opts, &from, err);
      if (found < 0)
        goto out;
      if (found && (kept = snapshot_base_layers (from, res->base_digest)) >= 0)
        {
          res->path = OHBOX_BUILD_FROM_VERSIONED;
          res->from = xstrdup (vname);
          if (dependency_layer (s, &in, lock_json, with_bash, bin_is_dir, &nl[0], err) < 0
              || executor_layer (s, &in, &nl[1], err) < 0
              || commit_image (s, from, (size_t) kept, nl, 2, with_bash, (size_t) kept, lname, res, err) < 0)
            goto out;
          json_array_append_new (res->tagged, json_string (lname));
          if (set_name (s, sname, res->id, res, err) < 0)
            goto out;
          ret = 0;
          goto out;
        }
      ohbox_image_free (from);
      from = NULL;
    }

  /* 4. from scratch; tagged versioned, lock, then source (the reuse key) last. */
  res->path = OHBOX_BUILD_FROM_SCRATCH;
  if (dependency_layer (s, &in, lock_json, with_bash, bin_is_dir, &nl[0], err) < 0
      || executor_layer (s, &in, &nl[1], err) < 0
      || commit_image (s, base_img, nbase, nl, 2, with_bash, nbase, vname, res, err) < 0)
    goto out;
  json_array_append_new (res->tagged, json_string (vname));
  if (set_name (s, lname, res->id, res, err) < 0 || set_name (s, sname, res->id, res, err) < 0)
    goto out;
  ret = 0;
out:
  /* What a sandbox of it may do is decided from this record, never from
   * the image's labels (runtime_image.h). */
  if (ret == 0 && res->path != OHBOX_BUILD_REUSE && ohbox_runtime_image_mark (s, res->id, err) < 0)
    ret = -1;
  if (ret < 0)
    ohbox_error_prefix (err, "build a runtime image from `%s`", base);
  res->seconds = ohbox_monotonic () - t0;
  ohbox_image_free (base_img);
  ohbox_image_free (from);
  ohbox_build_inputs_clear (&in);
  return ret;
}
