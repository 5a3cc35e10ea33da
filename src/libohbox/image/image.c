/* image.c: see image.h. */
#include "config.h"
#include "image/image.h"

#include <string.h>

#include "registry/reference.h"
#include "common/utils.h"

json_t *
ohbox_image_record_new (const char *id, const struct oci_manifest *man, const struct oci_image_config *cfg,
                        const char *index_digest)
{
  json_t *layers = json_array ();
  int64_t total = man->config.size;
  for (size_t i = 0; i < man->n_layers; i++)
    {
      json_array_append_new (layers, json_pack ("{s:s, s:s, s:I, s:s}", "digest", man->layers[i].digest, "diff_id",
                                                cfg->diff_ids[i], "size", (json_int_t) man->layers[i].size,
                                                "media_type", man->layers[i].media_type));
      total += man->layers[i].size;
    }
  cleanup_free char *platform = oci_platform_string (&cfg->platform);
  cleanup_free char *now = ohbox_now_rfc3339 ();
  json_t *rec = json_pack ("{s:s, s:s, s:s, s:I, s:s, s:o, s:I, s:s}", "id", id, "manifest_media_type", man->media_type,
                           "config_digest", man->config.digest, "config_size", (json_int_t) man->config.size,
                           "platform", platform, "layers", layers, "size", (json_int_t) total, "stored_at", now);
  if (cfg->created)
    json_object_set_new (rec, "created", json_string (cfg->created));
  if (index_digest)
    json_object_set_new (rec, "index_digest", json_string (index_digest));
  return rec;
}

int
ohbox_image_commit (struct ohbox_store *s, const char *name, const char *manifest_digest, const char *manifest,
                    size_t manifest_len, const struct oci_manifest *man, const struct oci_image_config *cfg,
                    const char *index_digest, ohbox_error_t *err)
{
  if (ohbox_store_put_blob (s, manifest_digest, manifest, manifest_len, NULL, err) < 0)
    return -1;
  json_t *rec = ohbox_image_record_new (manifest_digest, man, cfg, index_digest);
  /* The same id is the same bytes (the manifest digest covers the config
   * and the layers): a pull or load of exactly the image `ohbox build`
   * made keeps its mark (runtime_image.h). */
  json_t *old = NULL;
  cleanup_error ohbox_error_t ignored = NULL;
  if (ohbox_store_get_image (s, manifest_digest, &old, &ignored) == 0
      && json_is_object (json_object_get (old, OHBOX_RECORD_RUNTIME_IMAGE)))
    json_object_set (rec, OHBOX_RECORD_RUNTIME_IMAGE, json_object_get (old, OHBOX_RECORD_RUNTIME_IMAGE));
  json_decref (old);
  int r = ohbox_store_put_image (s, rec, err);
  json_decref (rec);
  if (r < 0)
    return -1;
  return ohbox_store_set_ref (s, name, manifest_digest, err);
}

void
ohbox_image_free (struct ohbox_image *img)
{
  if (img == NULL)
    return;
  free (img->id);
  json_decref (img->record);
  oci_manifest_free (img->manifest);
  oci_image_config_free (img->config);
  free (img->manifest_raw);
  free (img);
}

/* WHAT is resolved as ohbox_store_resolve does, or taken as the image id
 * when RESOLVED. */
static int
image_load (struct ohbox_store *s, const char *what, bool resolved, bool verify, struct ohbox_image **out,
            ohbox_error_t *err)
{
  int (*read_blob) (struct ohbox_store *, const char *, size_t, char **, size_t *,
                    ohbox_error_t *) = verify ? ohbox_store_read_blob : ohbox_store_read_blob_unverified;
  struct ohbox_image *img = xcalloc (1, sizeof *img);
  cleanup_free char *cfg_raw = NULL;
  size_t cfg_len = 0;
  if (resolved)
    img->id = xstrdup (what);
  if ((!resolved && ohbox_store_resolve (s, what, &img->id, err) < 0)
      || ohbox_store_get_image (s, img->id, &img->record, err) < 0
      || read_blob (s, img->id, OCI_MAX_MANIFEST_SIZE, &img->manifest_raw, &img->manifest_len, err) < 0
      || oci_manifest_parse (img->manifest_raw, img->manifest_len, &img->manifest, err) < 0
      || read_blob (s, img->manifest->config.digest, OCI_MAX_CONFIG_SIZE, &cfg_raw, &cfg_len, err) < 0
      || (!verify && (int64_t) cfg_len != img->manifest->config.size
          && ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                          "config blob %s in the store has %zu bytes, its manifest says %lld: the store is "
                          "damaged (see `ohbox check`)",
                          img->manifest->config.digest, cfg_len, (long long) img->manifest->config.size)
               < 0)
      || oci_image_config_parse (cfg_raw, cfg_len, &img->config, err) < 0)
    {
      ohbox_image_free (img);
      return ohbox_error_prefix (err, "image `%s`", what);
    }
  *out = img;
  return 0;
}

int
ohbox_image_load (struct ohbox_store *s, const char *what, struct ohbox_image **out, ohbox_error_t *err)
{
  return image_load (s, what, false, true, out, err);
}

int
ohbox_image_load_for_run (struct ohbox_store *s, const char *what, struct ohbox_image **out, ohbox_error_t *err)
{
  return image_load (s, what, false, false, out, err);
}

int
ohbox_image_load_id_for_run (struct ohbox_store *s, const char *id, struct ohbox_image **out, ohbox_error_t *err)
{
  return image_load (s, id, true, false, out, err);
}

json_t *
ohbox_image_inspect_json (struct ohbox_store *s, const struct ohbox_image *img)
{
  json_t *names = ohbox_store_names_of (s, img->id);
  json_t *tags = json_array ();
  json_t *digests = json_array ();
  const char *index_digest = json_string_value (json_object_get (img->record, "index_digest"));
  size_t i;
  json_t *n;
  json_array_foreach (names, i, n)
  {
    cleanup_error ohbox_error_t ignored = NULL;
    cleanup_reference struct ohbox_reference *ref = NULL;
    if (ohbox_reference_parse (json_string_value (n), &ref, &ignored) < 0)
      continue;
    if (ref->tag && ref->digest == NULL)
      json_array_append (tags, n);
    cleanup_free char *name = ohbox_reference_name (ref);
    json_array_append_new (digests, json_sprintf ("%s@%s", name, index_digest ? index_digest : img->id));
  }
  json_decref (names);
  json_t *diff_ids = json_array ();
  json_t *layers = json_array ();
  for (i = 0; i < img->manifest->n_layers; i++)
    {
      json_array_append_new (diff_ids, json_string (img->config->diff_ids[i]));
      json_array_append_new (layers,
                             json_pack ("{s:s, s:s, s:I, s:s}", "Digest", img->manifest->layers[i].digest, "DiffID",
                                        img->config->diff_ids[i], "Size", (json_int_t) img->manifest->layers[i].size,
                                        "MediaType", img->manifest->layers[i].media_type));
    }
  json_t *config = img->config->runtime_config ? json_deep_copy (img->config->runtime_config) : json_object ();
  json_t *out = json_pack ("{s:s, s:s, s:o, s:o, s:s?, s:s, s:s, s:O, s:o, s:{s:s, s:o}, s:o, s:s, s:s?}", "Id",
                           img->id, "Digest", img->id, "RepoTags", tags, "RepoDigests", digests, "Created",
                           img->config->created, "Os", img->config->platform.os, "Architecture",
                           img->config->platform.architecture, "Size", json_object_get (img->record, "size"), "Config",
                           config, "RootFS", "Type", "layers", "Layers", diff_ids, "Layers", layers,
                           "ManifestMediaType", img->manifest->media_type, "IndexDigest", index_digest);
  if (img->config->platform.variant)
    json_object_set_new (out, "Variant", json_string (img->config->platform.variant));
  json_object_set_new (out, "ConfigDigest", json_string (img->manifest->config.digest));
  return out;
}
