/* image_spec.c: parsers for OCI image-spec and Docker schema2 documents
 * (manifest, index / manifest list, image config) and platform handling.
 *
 * Everything here reads documents that come from a registry or an archive,
 * so every field later code relies on is checked: digests with
 * ohbox_digest_validate() (they become paths and URLs), sizes, counts, types.
 * A document that could be read both as a manifest and as an index
 * (CVE-2021-41190) is refused. Strings from a document are shown escaped. */
#include "config.h"
#include "oci/image_spec.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "common/digest.h"
#include "common/utils.h"

#define SCHEMA1_MESSAGE "schema1 manifests are not supported; push the image again with a current client"

/* Printable and bounded, for messages. */
static char *
shown (const char *s)
{
  size_t n = strlen (s);
  size_t m = n > 100 ? 100 : n;
  char *r = xmalloc (m + 4);
  for (size_t i = 0; i < m; i++)
    r[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  strcpy (r + m, n > m ? "..." : "");
  return r;
}

static int
load_json (const char *body, size_t len, size_t max, const char *what, json_t **out, ohbox_error_t *err)
{
  *out = NULL;
  if (body == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%s: no content", what);
  if (len > max)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%s is %zu bytes, more than the %zu allowed", what, len, max);
  json_error_t jerr;
  /* Duplicate keys would let two readers see two different documents. */
  json_t *j = json_loadb (body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (j == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%s is not valid JSON: line %d: %s", what, jerr.line, jerr.text);
  if (!json_is_object (j))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%s is not a JSON object", what);
    }
  *out = j;
  return 0;
}

/* KEY of OBJ as a string: absent gives NULL (an error when REQUIRED). */
static int
get_string (json_t *obj, const char *key, bool required, const char **out, ohbox_error_t *err)
{
  json_t *v = json_object_get (obj, key);
  *out = NULL;
  if (v == NULL || (json_is_null (v) && !required))
    return required ? ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "missing `%s`", key) : 0;
  if (!json_is_string (v))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`%s` is not a string", key);
  *out = json_string_value (v);
  return 0;
}

/* The array KEY of OBJ (NAME in messages) of at most MAX entries, NOUN in
 * messages: *RET and its size *N. */
static int
get_list (json_t *obj, const char *key, const char *name, const char *noun, size_t max, json_t **ret, size_t *n,
          ohbox_error_t *err)
{
  *ret = json_object_get (obj, key);
  if (!json_is_array (*ret))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`%s` is missing or not an array", name);
  *n = json_array_size (*ret);
  if (*n > max)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%zu %s, more than the %zu allowed", *n, noun, max);
  return 0;
}

static bool
is_schema1_type (const char *mt)
{
  return mt && (strcmp (mt, DOCKER_MEDIA_SCHEMA1) == 0 || strcmp (mt, DOCKER_MEDIA_SCHEMA1_SIGNED) == 0);
}

/* schemaVersion must be 2; 1 is Docker schema1, refused with its own message. */
static int
check_schema_version (json_t *root, ohbox_error_t *err)
{
  json_t *v = json_object_get (root, "schemaVersion");
  const char *mt = json_string_value (json_object_get (root, "mediaType"));
  if ((json_is_integer (v) && json_integer_value (v) == 1) || is_schema1_type (mt))
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, SCHEMA1_MESSAGE);
  if (v == NULL)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "missing `schemaVersion`");
  if (!json_is_integer (v))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`schemaVersion` is not an integer");
  if (json_integer_value (v) != 2)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "schemaVersion %lld is not supported (only 2 is)",
                        (long long) json_integer_value (v));
  return 0;
}

/* os, architecture and variant are short identifiers ("linux", "arm64",
 * "v8"); anything else is refused rather than carried into messages. */
static bool
valid_platform_field (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum ((unsigned char) s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
      return false;
  return true;
}

void
oci_platform_clear (struct oci_platform *p)
{
  free (p->os);
  free (p->architecture);
  free (p->variant);
  p->os = p->architecture = p->variant = NULL;
}

static int
platform_from_json (json_t *obj, struct oci_platform *p, ohbox_error_t *err)
{
  const char *os, *arch, *variant;
  if (get_string (obj, "os", true, &os, err) < 0 || get_string (obj, "architecture", true, &arch, err) < 0
      || get_string (obj, "variant", false, &variant, err) < 0)
    return -1;
  const char *bad = !valid_platform_field (os)                               ? os
                    : !valid_platform_field (arch)                           ? arch
                    : variant && *variant && !valid_platform_field (variant) ? variant
                                                                             : NULL;
  if (bad)
    {
      cleanup_free char *x = shown (bad);
      return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "invalid platform field `%s`", x);
    }
  p->os = xstrdup (os);
  p->architecture = xstrdup (arch);
  p->variant = variant && *variant ? xstrdup (variant) : NULL;
  return 0;
}

static void
descriptor_clear (struct oci_descriptor *d)
{
  free (d->media_type);
  free (d->digest);
  if (d->platform)
    oci_platform_clear (d->platform);
  free (d->platform);
  memset (d, 0, sizeof *d);
}

static int
descriptor_parse (json_t *j, bool with_platform, struct oci_descriptor *d, ohbox_error_t *err)
{
  memset (d, 0, sizeof *d);
  if (!json_is_object (j))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "not a descriptor object");
  const char *mt, *digest;
  if (get_string (j, "mediaType", true, &mt, err) < 0 || get_string (j, "digest", true, &digest, err) < 0)
    return -1;
  if (ohbox_digest_validate (digest, err) < 0)
    return -1;
  json_t *size = json_object_get (j, "size");
  if (!json_is_integer (size) || json_integer_value (size) < 0)
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`size` is missing, negative or not an integer");
  json_t *ann = json_object_get (j, "annotations");
  if (ann && !json_is_null (ann))
    {
      const char *k;
      json_t *v;
      if (!json_is_object (ann))
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`annotations` is not an object");
      json_object_foreach (ann, k, v) if (!json_is_string (v)) return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                                                                                   "annotation values must be strings");
    }
  json_t *plat = json_object_get (j, "platform");
  if (with_platform && plat && !json_is_null (plat))
    {
      if (!json_is_object (plat))
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`platform` is not an object");
      d->platform = xcalloc (1, sizeof *d->platform);
      if (platform_from_json (plat, d->platform, err) < 0)
        {
          descriptor_clear (d);
          return ohbox_error_prefix (err, "platform");
        }
    }
  d->media_type = xstrdup (mt);
  d->digest = xstrdup (digest);
  d->size = (int64_t) json_integer_value (size);
  d->annotations = json_is_object (ann) ? ann : NULL;
  return 0;
}

static void
descriptors_free (struct oci_descriptor *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    descriptor_clear (&v[i]);
  free (v);
}

/* What the descriptors of a list describe. */
enum descriptor_role
{
  ROLE_LAYER,       /* a manifest's layer: of a media type ohbox can unpack */
  ROLE_INDEX_ENTRY, /* an index's entry: any media type, may have a platform */
  ROLE_LIST_ENTRY,  /* a Docker manifest list's entry: has a platform */
};

/* The descriptors in the array KEY of ROOT, at most MAX (NOUN counts them in
 * messages), into *OUT and *N (what an error leaves is freed with them). */
static int
descriptors_parse (json_t *root, const char *key, const char *noun, size_t max, enum descriptor_role role,
                   struct oci_descriptor **out, size_t *n, ohbox_error_t *err)
{
  json_t *a;
  size_t len;
  if (get_list (root, key, key, noun, max, &a, &len, err) < 0)
    return -1;
  *out = xcalloc (len, sizeof **out);
  for (size_t i = 0; i < len; i++)
    {
      struct oci_descriptor *d = &(*out)[i];
      enum oci_layer_compression comp;
      *n = i + 1;
      if (descriptor_parse (json_array_get (a, i), role != ROLE_LAYER, d, err) < 0
          || (role == ROLE_LAYER && oci_layer_compression (d->media_type, &comp, err) < 0))
        return ohbox_error_prefix (err, "%s[%zu]", key, i);
      if (role == ROLE_LIST_ENTRY && d->platform == NULL)
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "%s[%zu]: missing `platform`", key, i);
    }
  return 0;
}

/* ---------------------------------------------------------------- kinds */

static bool
is_manifest_type (const char *mt)
{
  return mt && (strcmp (mt, OCI_MEDIA_MANIFEST) == 0 || strcmp (mt, DOCKER_MEDIA_MANIFEST) == 0);
}

static bool
is_index_type (const char *mt)
{
  return mt && (strcmp (mt, OCI_MEDIA_INDEX) == 0 || strcmp (mt, DOCKER_MEDIA_LIST) == 0);
}

/* The media type of a Content-Type value: parameters and blanks dropped,
 * lowercase (media types are case-insensitive). */
static char *
content_type_base (const char *ct)
{
  while (*ct == ' ' || *ct == '\t')
    ct++;
  size_t n = strcspn (ct, ";");
  while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
    n--;
  char *r = xstrndup (ct, n);
  for (char *p = r; *p; p++)
    *p = (char) tolower ((unsigned char) *p);
  return r;
}

int
oci_document_kind (const char *content_type, const char *body, size_t len, enum oci_document_kind *out,
                   ohbox_error_t *err)
{
  cleanup_free char *ct = content_type ? content_type_base (content_type) : xstrdup ("");
  if (is_schema1_type (ct))
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, SCHEMA1_MESSAGE);
  int by_ct = is_manifest_type (ct) ? OCI_DOC_MANIFEST : is_index_type (ct) ? OCI_DOC_INDEX : -1;

  json_t *root = NULL;
  if (load_json (body, len, OCI_MAX_MANIFEST_SIZE, "manifest", &root, err) < 0)
    return -1;
  int kind = -1;
  const char *mt = json_string_value (json_object_get (root, "mediaType"));
  json_t *mt_json = json_object_get (root, "mediaType");
  if (check_schema_version (root, err) < 0)
    goto out;
  if (mt_json && !json_is_string (mt_json))
    {
      ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "manifest `mediaType` is not a string");
      goto out;
    }
  if (mt)
    {
      /* The document says what it is: that wins over a generic
       * Content-Type, and must agree with a specific one. */
      kind = is_manifest_type (mt) ? OCI_DOC_MANIFEST : is_index_type (mt) ? OCI_DOC_INDEX : -1;
      if (kind < 0)
        {
          cleanup_free char *x = shown (mt);
          ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                       "manifest media type `%s` is not supported (not a container image?)", x);
          goto out;
        }
      if (by_ct >= 0 && by_ct != kind)
        {
          cleanup_free char *x = shown (mt);
          cleanup_free char *y = shown (ct);
          ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "manifest media type `%s` contradicts its Content-Type `%s`", x, y);
          kind = -1;
          goto out;
        }
    }
  else if (by_ct >= 0)
    kind = by_ct;
  else if (json_is_array (json_object_get (root, "manifests")))
    kind = OCI_DOC_INDEX;
  else if (json_object_get (root, "layers") && json_object_get (root, "config"))
    kind = OCI_DOC_MANIFEST;
  else
    {
      cleanup_free char *y = shown (ct);
      ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                   "unknown manifest type (Content-Type `%s`, no mediaType, neither an index nor a manifest)", y);
    }
out:
  json_decref (root);
  if (kind < 0)
    return -1;
  *out = (enum oci_document_kind) kind;
  return 0;
}

/* The schemaVersion and mediaType of ROOT, a document of KIND: *OUT is its
 * media type, the OCI one when it has none (an OCI manifest or index may
 * omit it; Docker's always have it). A type of the other kind makes a
 * malformed document, any other type one ohbox does not support. */
static int
document_media_type (json_t *root, enum oci_document_kind kind, char **out, ohbox_error_t *err)
{
  const char *mt;
  if (check_schema_version (root, err) < 0 || get_string (root, "mediaType", false, &mt, err) < 0)
    return -1;
  bool manifest = kind == OCI_DOC_MANIFEST;
  if (mt && !(manifest ? is_manifest_type (mt) : is_index_type (mt)))
    {
      cleanup_free char *x = shown (mt);
      bool other_kind = manifest ? is_index_type (mt) : is_manifest_type (mt);
      return ohbox_error (err, other_kind ? OHBOX_ERR_INTEGRITY : OHBOX_ERR_UNSUPPORTED, 0,
                          "media type `%s` is not an image %s", x, manifest ? "manifest" : "index");
    }
  *out = xstrdup (mt ? mt : manifest ? OCI_MEDIA_MANIFEST : OCI_MEDIA_INDEX);
  return 0;
}

/* ------------------------------------------------------------- manifest */

static bool
is_config_type (const char *mt)
{
  return strcmp (mt, OCI_MEDIA_CONFIG) == 0 || strcmp (mt, DOCKER_MEDIA_CONFIG) == 0;
}

void
oci_manifest_free (struct oci_manifest *m)
{
  if (m == NULL)
    return;
  free (m->media_type);
  descriptor_clear (&m->config);
  descriptors_free (m->layers, m->n_layers);
  json_decref (m->json);
  free (m);
}

static int
manifest_fill (struct oci_manifest *m, ohbox_error_t *err)
{
  json_t *root = m->json;
  if (document_media_type (root, OCI_DOC_MANIFEST, &m->media_type, err) < 0)
    return -1;
  if (json_object_get (root, "manifests"))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "a manifest with `manifests` is ambiguous");

  if (descriptor_parse (json_object_get (root, "config"), false, &m->config, err) < 0)
    return ohbox_error_prefix (err, "config");
  if (!is_config_type (m->config.media_type))
    {
      cleanup_free char *x = shown (m->config.media_type);
      return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                          "config media type `%s` is not a container image config (an artifact?)", x);
    }

  return descriptors_parse (root, "layers", "layers", OCI_MAX_LAYERS, ROLE_LAYER, &m->layers, &m->n_layers, err);
}

int
oci_manifest_parse (const char *body, size_t len, struct oci_manifest **out, ohbox_error_t *err)
{
  *out = NULL;
  struct oci_manifest *m = xcalloc (1, sizeof *m);
  if (load_json (body, len, OCI_MAX_MANIFEST_SIZE, "manifest", &m->json, err) < 0 || manifest_fill (m, err) < 0)
    {
      oci_manifest_free (m);
      return ohbox_error_prefix (err, "invalid image manifest");
    }
  *out = m;
  return 0;
}

/* ---------------------------------------------------------------- index */

void
oci_index_free (struct oci_index *idx)
{
  if (idx == NULL)
    return;
  free (idx->media_type);
  descriptors_free (idx->manifests, idx->n_manifests);
  json_decref (idx->json);
  free (idx);
}

static int
index_fill (struct oci_index *idx, ohbox_error_t *err)
{
  json_t *root = idx->json;
  if (document_media_type (root, OCI_DOC_INDEX, &idx->media_type, err) < 0)
    return -1;
  if (json_object_get (root, "layers") || json_object_get (root, "config"))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "an index with `layers` or `config` is ambiguous");

  /* A Docker manifest list names the platform of every entry. */
  enum descriptor_role role = strcmp (idx->media_type, DOCKER_MEDIA_LIST) == 0 ? ROLE_LIST_ENTRY : ROLE_INDEX_ENTRY;
  return descriptors_parse (root, "manifests", "entries", OCI_MAX_INDEX_ENTRIES, role, &idx->manifests,
                            &idx->n_manifests, err);
}

int
oci_index_parse (const char *body, size_t len, struct oci_index **out, ohbox_error_t *err)
{
  *out = NULL;
  struct oci_index *idx = xcalloc (1, sizeof *idx);
  if (load_json (body, len, OCI_MAX_MANIFEST_SIZE, "index", &idx->json, err) < 0 || index_fill (idx, err) < 0)
    {
      oci_index_free (idx);
      return ohbox_error_prefix (err, "invalid image index");
    }
  *out = idx;
  return 0;
}

/* --------------------------------------------------------------- config */

void
oci_image_config_free (struct oci_image_config *c)
{
  if (c == NULL)
    return;
  oci_platform_clear (&c->platform);
  for (size_t i = 0; i < c->n_diff_ids; i++)
    free (c->diff_ids[i]);
  free (c->diff_ids);
  free (c->created);
  json_decref (c->json);
  free (c);
}

static bool
is_string_array (json_t *v)
{
  size_t i;
  json_t *e;
  if (!json_is_array (v))
    return false;
  json_array_foreach (v, i, e) if (!json_is_string (e)) return false;
  return true;
}

/* The runtime fields later code reads are checked for their type once
 * here, so that readers can use json_string_value() without surprises. */
static int
check_runtime_config (json_t *rc, ohbox_error_t *err)
{
  static const char *const arrays[] = { "Env", "Cmd", "Entrypoint" };
  static const char *const strings[] = { "WorkingDir", "User", "StopSignal" };
  static const char *const objects[] = { "Labels", "ExposedPorts", "Volumes" };
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    {
      json_t *v = json_object_get (rc, arrays[i]);
      if (v && !json_is_null (v) && !is_string_array (v))
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "config.%s is not an array of strings", arrays[i]);
    }
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    {
      json_t *v = json_object_get (rc, strings[i]);
      if (v && !json_is_null (v) && !json_is_string (v))
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "config.%s is not a string", strings[i]);
    }
  for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
    {
      json_t *v = json_object_get (rc, objects[i]);
      if (v && !json_is_null (v) && !json_is_object (v))
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "config.%s is not an object", objects[i]);
    }
  const char *k;
  json_t *v;
  json_t *labels = json_object_get (rc, "Labels");
  json_object_foreach (labels, k,
                       v) if (!json_is_string (v)) return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0,
                                                                       "config.Labels values must be strings");
  return 0;
}

static int
config_fill (struct oci_image_config *c, ohbox_error_t *err)
{
  json_t *root = c->json;
  const char *created;
  if (platform_from_json (root, &c->platform, err) < 0 || get_string (root, "created", false, &created, err) < 0)
    return -1;
  c->created = created ? xstrdup (created) : NULL;

  json_t *rootfs = json_object_get (root, "rootfs");
  if (!json_is_object (rootfs))
    return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`rootfs` is missing or not an object");
  const char *type;
  if (get_string (rootfs, "type", true, &type, err) < 0)
    return ohbox_error_prefix (err, "rootfs");
  if (strcmp (type, "layers") != 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "rootfs type is not `layers`");
  json_t *ids;
  size_t n;
  if (get_list (rootfs, "diff_ids", "rootfs.diff_ids", "diff_ids", OCI_MAX_LAYERS, &ids, &n, err) < 0)
    return -1;
  c->diff_ids = xcalloc (n, sizeof *c->diff_ids);
  for (size_t i = 0; i < n; i++)
    {
      const char *id = json_string_value (json_array_get (ids, i));
      if (ohbox_digest_validate (id, err) < 0)
        return ohbox_error_prefix (err, "rootfs.diff_ids[%zu]", i);
      c->diff_ids[i] = xstrdup (id);
      c->n_diff_ids = i + 1;
    }

  json_t *rc = json_object_get (root, "config");
  if (rc && !json_is_null (rc))
    {
      if (!json_is_object (rc))
        return ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "`config` is not an object");
      if (check_runtime_config (rc, err) < 0)
        return -1;
      c->runtime_config = rc;
    }
  return 0;
}

int
oci_image_config_parse (const char *body, size_t len, struct oci_image_config **out, ohbox_error_t *err)
{
  *out = NULL;
  struct oci_image_config *c = xcalloc (1, sizeof *c);
  if (load_json (body, len, OCI_MAX_CONFIG_SIZE, "image config", &c->json, err) < 0 || config_fill (c, err) < 0)
    {
      oci_image_config_free (c);
      return ohbox_error_prefix (err, "invalid image config");
    }
  *out = c;
  return 0;
}

/* --------------------------------------------------------------- layers */

int
oci_layer_compression (const char *media_type, enum oci_layer_compression *out, ohbox_error_t *err)
{
  static const struct
  {
    const char *type;
    enum oci_layer_compression comp;
  } known[] = {
    { OCI_MEDIA_LAYER, OCI_COMPRESSION_NONE },
    { OCI_MEDIA_LAYER_GZIP, OCI_COMPRESSION_GZIP },
    { OCI_MEDIA_LAYER_ZSTD, OCI_COMPRESSION_ZSTD },
    { OCI_MEDIA_LAYER_NONDIST, OCI_COMPRESSION_NONE },
    { OCI_MEDIA_LAYER_NONDIST_GZIP, OCI_COMPRESSION_GZIP },
    { OCI_MEDIA_LAYER_NONDIST_ZSTD, OCI_COMPRESSION_ZSTD },
    { DOCKER_MEDIA_LAYER, OCI_COMPRESSION_NONE },
    { DOCKER_MEDIA_LAYER_GZIP, OCI_COMPRESSION_GZIP },
    { DOCKER_MEDIA_LAYER_FOREIGN, OCI_COMPRESSION_GZIP },
  };
  for (size_t i = 0; media_type && i < sizeof known / sizeof known[0]; i++)
    if (strcmp (media_type, known[i].type) == 0)
      {
        *out = known[i].comp;
        return 0;
      }
  cleanup_free char *x = shown (media_type ? media_type : "");
  return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "layer media type `%s` is not supported", x);
}

/* ------------------------------------------------------------- platform */

/* The names architectures also go by (uname, Debian) to the OCI ones. */
static void
normalise_platform (struct oci_platform *p)
{
  static const struct
  {
    const char *alias, *arch, *variant;
  } aliases[] = {
    { "x86_64", "amd64", NULL }, { "x86-64", "amd64", NULL }, { "aarch64", "arm64", NULL },
    { "armhf", "arm", "v7" },    { "armel", "arm", "v6" },    { "i386", "386", NULL },
    { "i486", "386", NULL },     { "i586", "386", NULL },     { "i686", "386", NULL },
  };
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp (p->architecture, aliases[i].alias) == 0)
      {
        free (p->architecture);
        p->architecture = xstrdup (aliases[i].arch);
        if (p->variant == NULL && aliases[i].variant)
          p->variant = xstrdup (aliases[i].variant);
      }
  /* "arm/7" and "arm64/8" are the same as "arm/v7" and "arm64/v8". */
  if (p->variant && isdigit ((unsigned char) p->variant[0])
      && (strcmp (p->architecture, "arm") == 0 || strcmp (p->architecture, "arm64") == 0))
    {
      char *v = xasprintf ("v%s", p->variant);
      free (p->variant);
      p->variant = v;
    }
}

int
oci_platform_parse (const char *s, struct oci_platform *out, ohbox_error_t *err)
{
  memset (out, 0, sizeof *out);
  cleanup_free char *copy = xstrdup (s ? s : "");
  for (char *p = copy; *p; p++)
    *p = (char) tolower ((unsigned char) *p);
  /* Split by hand: strtok_r would skip empty fields ("linux//arm"). */
  char *parts[4] = { NULL };
  size_t n = 0;
  for (char *p = copy; p && n < 4; n++)
    {
      parts[n] = p;
      p = strchr (p, '/');
      if (p)
        *p++ = '\0';
    }
  bool ok = n >= 2 && n <= 3;
  for (size_t i = 0; ok && i < n; i++)
    ok = valid_platform_field (parts[i]);
  if (!ok)
    {
      cleanup_free char *x = shown (s ? s : "");
      return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                          "invalid platform `%s`: expected os/architecture[/variant], e.g. linux/arm64/v8", x);
    }
  out->os = xstrdup (parts[0]);
  out->architecture = xstrdup (parts[1]);
  out->variant = n == 3 ? xstrdup (parts[2]) : NULL;
  normalise_platform (out);
  return 0;
}

void
oci_platform_host (struct oci_platform *out)
{
  struct utsname u;
  memset (out, 0, sizeof *out);
  if (uname (&u) < 0)
    {
      /* Cannot fail on Linux; fall back to what the binary was built for. */
#if defined(__x86_64__)
      strcpy (u.machine, "x86_64");
#elif defined(__aarch64__)
      strcpy (u.machine, "aarch64");
#else
      strcpy (u.machine, "unknown");
#endif
    }
  out->os = xstrdup ("linux");
  const char *m = u.machine;
  if (strcmp (m, "aarch64") == 0 || strcmp (m, "arm64") == 0 || strcmp (m, "aarch64_be") == 0)
    {
      out->architecture = xstrdup ("arm64");
      out->variant = xstrdup ("v8");
    }
  else if (strncmp (m, "armv", 4) == 0 && isdigit ((unsigned char) m[4]))
    {
      /* armv5tel, armv6l, armv7l; armv8l is a 64-bit CPU in 32-bit mode,
       * which runs what arm/v7 images contain. */
      int v = m[4] - '0';
      out->architecture = xstrdup ("arm");
      out->variant = xasprintf ("v%d", v >= 8 ? 7 : v);
    }
  else
    {
      out->architecture = xstrdup (m);
      normalise_platform (out);
    }
}

char *
oci_platform_string (const struct oci_platform *p)
{
  return xasprintf ("%s/%s%s%s", p->os ? p->os : "?", p->architecture ? p->architecture : "?", p->variant ? "/" : "",
                    p->variant ? p->variant : "");
}

static const char *
default_variant (const char *arch)
{
  if (strcmp (arch, "arm64") == 0)
    return "v8";
  if (strcmp (arch, "arm") == 0)
    return "v7";
  return NULL;
}

bool
oci_platform_matches (const struct oci_platform *have, const struct oci_platform *want)
{
  if (have == NULL || have->os == NULL || have->architecture == NULL || want->os == NULL || want->architecture == NULL)
    return false;
  if (strcmp (have->os, want->os) != 0 || strcmp (have->architecture, want->architecture) != 0)
    return false;
  const char *hv = have->variant ? have->variant : default_variant (have->architecture);
  const char *wv = want->variant ? want->variant : default_variant (want->architecture);
  if (hv == NULL || wv == NULL)
    return hv == wv;
  return strcmp (hv, wv) == 0;
}

int
oci_index_select_platform (const struct oci_index *idx, const struct oci_platform *want, ohbox_error_t *err)
{
  for (size_t i = 0; i < idx->n_manifests; i++)
    {
      const struct oci_descriptor *d = &idx->manifests[i];
      if ((is_manifest_type (d->media_type) || is_index_type (d->media_type))
          && oci_platform_matches (d->platform, want))
        return (int) i;
    }

  /* Not found: say what there is, each platform once, the first 16
   * ("unknown/unknown" entries are build attestations, not images). */
  enum
  {
    SHOWN_PLATFORMS = 16
  };
  char *seen[SHOWN_PLATFORMS] = { NULL };
  size_t n_seen = 0;
  bool more = false;
  struct ohbox_buf list = { 0 };
  for (size_t i = 0; i < idx->n_manifests; i++)
    {
      const struct oci_platform *p = idx->manifests[i].platform;
      if (p == NULL || strcmp (p->os, "unknown") == 0)
        continue;
      char *s = oci_platform_string (p);
      bool dup = false;
      for (size_t k = 0; k < n_seen && !dup; k++)
        dup = strcmp (seen[k], s) == 0;
      if (dup || n_seen == SHOWN_PLATFORMS)
        {
          more = more || !dup;
          free (s);
          continue;
        }
      if (n_seen)
        ohbox_buf_append (&list, ", ", 2);
      ohbox_buf_append (&list, s, strlen (s));
      seen[n_seen++] = s;
    }
  if (more)
    ohbox_buf_append (&list, ", ...", 5);
  cleanup_free char *wanted = oci_platform_string (want);
  ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0, "no image for platform %s in the index (%s%s)", wanted,
               n_seen ? "it has: " : "it has no platform-specific image", n_seen ? list.data : "");
  for (size_t k = 0; k < n_seen; k++)
    free (seen[k]);
  ohbox_buf_free (&list);
  return -1;
}
