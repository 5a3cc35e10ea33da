/* test-oci.c: OCI / Docker schema2 manifest, index and config parsers,
 * document kinds, layer compression and platforms. */
#include "config.h"

#include <string.h>
#include <sys/utsname.h>

#include "oci/image_spec.h"
#include "unit.h"
#include "common/utils.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DA "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

#define OCI_MANIFEST_DOC                                                                                               \
  "{\"schemaVersion\": 2, \"mediaType\": \"" OCI_MEDIA_MANIFEST "\","                                                  \
  " \"config\": {\"mediaType\": \"" OCI_MEDIA_CONFIG "\", \"digest\": \"" DA "\", \"size\": 123},"                     \
  " \"layers\": [{\"mediaType\": \"" OCI_MEDIA_LAYER_GZIP "\", \"digest\": \"" DB "\", \"size\": 4567,"                \
  "   \"annotations\": {\"k\": \"v\"}},"                                                                               \
  "  {\"mediaType\": \"" OCI_MEDIA_LAYER_ZSTD "\", \"digest\": \"" DC "\", \"size\": 0}],"                             \
  " \"annotations\": {\"org.opencontainers.image.created\": \"now\"}}"

/* A valid manifest as a json_t, to mutate. */
static json_t *
manifest_json (void)
{
  json_t *j = json_loads (OCI_MANIFEST_DOC, 0, NULL);
  if (j == NULL)
    abort ();
  return j;
}

/* J (consumed) as JSON text, to free. */
static char *
json_text (json_t *j)
{
  char *s = json_dumps (j, 0);
  json_decref (j);
  return s;
}

/* Parses J (consumed) as a manifest; returns the result, fills *ERR. */
static int
parse_manifest_json (json_t *j, struct oci_manifest **m, ohbox_error_t *err)
{
  cleanup_free char *s = json_text (j);
  return oci_manifest_parse (s, strlen (s), m, err);
}

/* NULL when a parse that returned R failed with an error of KIND whose
 * message starts with PREFIX and contains MSG (ERR: the error, NULL when
 * none); else what is wrong. */
static const char *
refusal_problem (int r, const ohbox_error_t err, const char *prefix, int kind, const char *msg)
{
  static char why[1024];
  if (r == 0)
    return "accepted";
  if (err->kind != kind || strstr (err->msg, msg) == NULL || strncmp (err->msg, prefix, strlen (prefix)) != 0)
    {
      snprintf (why, sizeof why, "kind %d (want %d), message `%.600s` (want `%s...%s...`)", err->kind, kind, err->msg,
                prefix, msg);
      return why;
    }
  return NULL;
}

static void
test_manifest_oci (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct oci_manifest *m = NULL;
  CHECK (oci_manifest_parse (OCI_MANIFEST_DOC, strlen (OCI_MANIFEST_DOC), &m, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (m->media_type, OCI_MEDIA_MANIFEST);
  CHECK_STR (m->config.media_type, OCI_MEDIA_CONFIG);
  CHECK_STR (m->config.digest, DA);
  CHECK (m->config.size == 123);
  CHECK (m->n_layers == 2);
  CHECK_STR (m->layers[0].digest, DB);
  CHECK (m->layers[0].size == 4567);
  CHECK_STR (m->layers[1].media_type, OCI_MEDIA_LAYER_ZSTD);
  CHECK (m->layers[1].size == 0);
  CHECK (m->layers[0].annotations != NULL);
  CHECK_STR (json_string_value (json_object_get (m->layers[0].annotations, "k")), "v");
  CHECK (m->layers[1].annotations == NULL);
  CHECK (m->layers[0].platform == NULL);
  CHECK (json_is_object (m->json));
  oci_manifest_free (m);
  oci_manifest_free (NULL);
}

static void
test_manifest_docker_and_defaults (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct oci_manifest *m = NULL;
  json_t *j = manifest_json ();
  json_object_set_new (j, "mediaType", json_string (DOCKER_MEDIA_MANIFEST));
  json_object_set_new (json_object_get (j, "config"), "mediaType", json_string (DOCKER_MEDIA_CONFIG));
  json_t *layers = json_object_get (j, "layers");
  json_object_set_new (json_array_get (layers, 0), "mediaType", json_string (DOCKER_MEDIA_LAYER_GZIP));
  json_object_set_new (json_array_get (layers, 1), "mediaType", json_string (DOCKER_MEDIA_LAYER_FOREIGN));
  CHECK (parse_manifest_json (j, &m, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (m->media_type, DOCKER_MEDIA_MANIFEST);
  CHECK_STR (m->config.media_type, DOCKER_MEDIA_CONFIG);
  oci_manifest_free (m);
  m = NULL;

  /* An OCI manifest may omit its mediaType; no layers is valid too. */
  j = manifest_json ();
  json_object_del (j, "mediaType");
  json_object_set_new (j, "layers", json_array ());
  CHECK (parse_manifest_json (j, &m, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (m->media_type, OCI_MEDIA_MANIFEST);
  CHECK (m->n_layers == 0);
  oci_manifest_free (m);
}

struct mutation
{
  const char *what;
  const char *path; /* "config", "layers.N", "" (root) */
  const char *key;
  const char *value_json; /* NULL: delete the key */
  int kind;
  const char *msg; /* substring */
};

static const struct mutation manifest_bad[] = {
  { "layer digest traversal", "layers.1", "digest", "\"sha256:../../x\"", OHBOX_ERR_INTEGRITY, "layers[1]" },
  { "layer digest uppercase", "layers.0", "digest",
    "\"sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"", OHBOX_ERR_INTEGRITY,
    "invalid digest" },
  { "layer digest sha512", "layers.0", "digest", "\"sha512:" D64 D64 "\"", OHBOX_ERR_INTEGRITY, "invalid digest" },
  { "layer digest number", "layers.0", "digest", "42", OHBOX_ERR_INTEGRITY, "`digest` is not a string" },
  { "layer digest missing", "layers.0", "digest", NULL, OHBOX_ERR_INTEGRITY, "missing `digest`" },
  { "config digest", "config", "digest", "\"sha256:" D64 "0\"", OHBOX_ERR_INTEGRITY, "config: invalid digest" },
  { "negative size", "layers.0", "size", "-1", OHBOX_ERR_INTEGRITY, "size" },
  { "real size", "layers.0", "size", "1.5", OHBOX_ERR_INTEGRITY, "size" },
  { "string size", "layers.0", "size", "\"12\"", OHBOX_ERR_INTEGRITY, "size" },
  { "missing size", "config", "size", NULL, OHBOX_ERR_INTEGRITY, "size" },
  { "missing layer media type", "layers.0", "mediaType", NULL, OHBOX_ERR_INTEGRITY, "missing `mediaType`" },
  { "unknown layer type", "layers.1", "mediaType", "\"application/vnd.cncf.helm.chart.content.v1.tar+gzip\"",
    OHBOX_ERR_UNSUPPORTED, "layer media type `application/vnd.cncf.helm.chart.content.v1.tar+gzip`" },
  { "artifact config", "config", "mediaType", "\"application/vnd.cncf.helm.config.v1+json\"", OHBOX_ERR_UNSUPPORTED,
    "not a container image config" },
  { "annotations not object", "layers.0", "annotations", "[]", OHBOX_ERR_INTEGRITY, "annotations" },
  { "annotation not string", "layers.0", "annotations", "{\"a\": 1}", OHBOX_ERR_INTEGRITY, "annotation" },
  { "layer not object", "layers", NULL, "[1]", OHBOX_ERR_INTEGRITY, "descriptor" },
  { "layers not array", "", "layers", "{}", OHBOX_ERR_INTEGRITY, "`layers`" },
  { "no layers", "", "layers", NULL, OHBOX_ERR_INTEGRITY, "`layers`" },
  { "no config", "", "config", NULL, OHBOX_ERR_INTEGRITY, "config" },
  { "schema1", "", "schemaVersion", "1", OHBOX_ERR_UNSUPPORTED,
    "schema1 manifests are not supported; push the image again with a current client" },
  { "schema1 type", "", "mediaType", "\"" DOCKER_MEDIA_SCHEMA1_SIGNED "\"", OHBOX_ERR_UNSUPPORTED, "schema1" },
  { "schema 3", "", "schemaVersion", "3", OHBOX_ERR_UNSUPPORTED, "schemaVersion 3" },
  { "schema string", "", "schemaVersion", "\"2\"", OHBOX_ERR_INTEGRITY, "schemaVersion" },
  { "schema missing", "", "schemaVersion", NULL, OHBOX_ERR_INTEGRITY, "schemaVersion" },
  { "index type", "", "mediaType", "\"" OCI_MEDIA_INDEX "\"", OHBOX_ERR_INTEGRITY, "not an image manifest" },
  { "artifact type", "", "mediaType", "\"application/vnd.oci.artifact.manifest.v1+json\"", OHBOX_ERR_UNSUPPORTED,
    "not an image manifest" },
  { "media type number", "", "mediaType", "7", OHBOX_ERR_INTEGRITY, "mediaType" },
  { "ambiguous", "", "manifests", "[]", OHBOX_ERR_INTEGRITY, "ambiguous" },
};

/* Applies M to J: sets or deletes KEY in the object at PATH. */
static void
apply_mutation (json_t *j, const struct mutation *m)
{
  json_t *target = j;
  if (strcmp (m->path, "config") == 0)
    target = json_object_get (j, "config");
  else if (strncmp (m->path, "layers.", 7) == 0)
    target = json_array_get (json_object_get (j, "layers"), (size_t) atoi (m->path + 7));
  else if (strcmp (m->path, "layers") == 0)
    {
      json_object_set_new (j, "layers", json_loads (m->value_json, JSON_DECODE_ANY, NULL));
      return;
    }
  if (m->value_json == NULL)
    json_object_del (target, m->key);
  else
    json_object_set_new (target, m->key, json_loads (m->value_json, JSON_DECODE_ANY, NULL));
}

static void
test_manifest_bad (void)
{
  for (size_t i = 0; i < sizeof manifest_bad / sizeof manifest_bad[0]; i++)
    {
      const struct mutation *mu = &manifest_bad[i];
      cleanup_error ohbox_error_t err = NULL;
      struct oci_manifest *m = (struct oci_manifest *) 0x1;
      json_t *j = manifest_json ();
      apply_mutation (j, mu);
      int r = parse_manifest_json (j, &m, &err);
      if (r == 0)
        oci_manifest_free (m);
      const char *why = refusal_problem (r, err, "invalid image manifest: ", mu->kind, mu->msg);
      CHECK (why == NULL, "%s: %s", mu->what, why);
      CHECK (m == NULL, "%s", mu->what);
    }
}

static void
test_manifest_hostile_bodies (void)
{
  static const char *const bodies[] = {
    "",
    "{",
    "[]",
    "\"x\"",
    "null",
    "{\"schemaVersion\": 2, \"schemaVersion\": 2}", /* duplicate key */
    "{\"schemaVersion\": 2, \"mediaType\": \"a\\u0000b\"}",
    "{\"schemaVersion\": 2, \"mediaType\": \"\xff\xfe\"}", /* not UTF-8 */
  };
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct oci_manifest *m = NULL;
      CHECK (oci_manifest_parse (bodies[i], strlen (bodies[i]), &m, &err) < 0, "body %zu accepted", i);
      CHECK (err->kind == OHBOX_ERR_INTEGRITY, "body %zu: %s", i, err->msg);
    }

  /* A NUL byte inside the body (the length says there is more). */
  cleanup_error ohbox_error_t err = NULL;
  struct oci_manifest *m = NULL;
  static const char with_nul[] = "{\"schemaVersion\": 2}\0{\"x\":1}";
  CHECK (oci_manifest_parse (with_nul, sizeof with_nul - 1, &m, &err) < 0);
  ohbox_error_release (&err);

  /* Deep nesting: refused by the JSON parser, no stack exhaustion. */
  size_t depth = 200000;
  char *deep = xmalloc (2 * depth + 1);
  memset (deep, '[', depth);
  memset (deep + depth, ']', depth);
  deep[2 * depth] = '\0';
  CHECK (oci_manifest_parse (deep, 2 * depth, &m, &err) < 0);
  free (deep);
  ohbox_error_release (&err);

  /* Larger than OCI_MAX_MANIFEST_SIZE: refused before parsing. */
  size_t big = OCI_MAX_MANIFEST_SIZE + 1;
  char *huge = xmalloc (big + 1);
  memset (huge, ' ', big);
  memcpy (huge, OCI_MANIFEST_DOC, strlen (OCI_MANIFEST_DOC));
  huge[big] = '\0';
  CHECK (oci_manifest_parse (huge, big, &m, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && strstr (err->msg, "allowed") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  /* ... and exactly the limit is fine (trailing blanks are valid JSON). */
  CHECK (oci_manifest_parse (huge, big - 1, &m, &err) == 0, "%s", err ? err->msg : "");
  oci_manifest_free (m);
  free (huge);

  /* NULL body. */
  CHECK (oci_manifest_parse (NULL, 0, &m, &err) < 0 && err->kind == OHBOX_ERR_INTEGRITY);
}

static json_t *
layer_json (void)
{
  return json_pack ("{s:s, s:s, s:i}", "mediaType", OCI_MEDIA_LAYER, "digest", DB, "size", 1);
}

static void
test_manifest_layer_count (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct oci_manifest *m = NULL;
  json_t *j = manifest_json ();
  json_t *layers = json_array ();
  for (int i = 0; i < OCI_MAX_LAYERS; i++)
    json_array_append_new (layers, layer_json ());
  json_object_set_new (j, "layers", layers);
  CHECK (parse_manifest_json (json_incref (j), &m, &err) == 0, "%s", err ? err->msg : "");
  CHECK (m->n_layers == OCI_MAX_LAYERS);
  oci_manifest_free (m);
  json_array_append_new (layers, layer_json ());
  CHECK (parse_manifest_json (j, &m, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && strstr (err->msg, "1001 layers") != NULL, "%s", err->msg);
}

#define index_doc_for_mutations                                                                                        \
  "{\"schemaVersion\": 2, \"manifests\": [{\"mediaType\": \"" OCI_MEDIA_MANIFEST "\", \"digest\": \"" DA "\","         \
  " \"size\": 7, \"platform\": {\"os\": \"linux\", \"architecture\": \"arm64\", \"variant\": \"v8\"}}]}"

/* Random damage to valid documents: no crash, no leak, and a refusal is
 * always a malformed (INTEGRITY) or unsupported document. */
static void
test_mutations (void)
{
  static const char *const docs[] = { OCI_MANIFEST_DOC, index_doc_for_mutations };
  static const char alphabet[] = "{}[]\":,0123456789-.\\ abcdef\x00\xff";
  unsigned int seed = 7;
  for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++)
    for (int round = 0; round < 3000; round++)
      {
        size_t len = strlen (docs[d]);
        char *text = xstrdup (docs[d]);
        for (int k = 0; k < 1 + round % 3; k++)
          {
            seed = seed * 1103515245u + 12345u;
            size_t pos = (seed >> 8) % len;
            seed = seed * 1103515245u + 12345u;
            text[pos] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
          }
        cleanup_error ohbox_error_t err = NULL;
        enum oci_document_kind kind;
        struct oci_manifest *m = NULL;
        struct oci_index *idx = NULL;
        int r1 = oci_document_kind (NULL, text, len, &kind, &err);
        int k1 = err ? err->kind : 0;
        ohbox_error_release (&err);
        int r2 = oci_manifest_parse (text, len, &m, &err);
        int k2 = err ? err->kind : 0;
        ohbox_error_release (&err);
        int r3 = oci_index_parse (text, len, &idx, &err);
        int k3 = err ? err->kind : 0;
        free (text);
        oci_manifest_free (m);
        oci_index_free (idx);
        CHECK (r1 == 0 || k1 == OHBOX_ERR_INTEGRITY || k1 == OHBOX_ERR_UNSUPPORTED, "doc %zu round %d", d, round);
        CHECK (r2 == 0 || k2 == OHBOX_ERR_INTEGRITY || k2 == OHBOX_ERR_UNSUPPORTED, "doc %zu round %d", d, round);
        CHECK (r3 == 0 || k3 == OHBOX_ERR_INTEGRITY || k3 == OHBOX_ERR_UNSUPPORTED, "doc %zu round %d", d, round);
        /* Never both: a document is a manifest or an index (CVE-2021-41190). */
        CHECK (!(r2 == 0 && r3 == 0), "doc %zu round %d parsed as both", d, round);
      }
}

/* ---------------------------------------------------------------- index */

#define INDEX_ENTRY(mt, d, plat) "{\"mediaType\": \"" mt "\", \"digest\": \"" d "\", \"size\": 500" plat "}"
#define PLAT(os, arch) ", \"platform\": {\"os\": \"" os "\", \"architecture\": \"" arch "\"}"
#define PLATV(os, arch, v)                                                                                             \
  ", \"platform\": {\"os\": \"" os "\", \"architecture\": \"" arch "\", \"variant\": \"" v "\"}"

static const char index_doc[] =
  "{\"schemaVersion\": 2, \"mediaType\": \"" OCI_MEDIA_INDEX
  "\", \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, PLAT ("linux", "amd64")) "," INDEX_ENTRY (
    OCI_MEDIA_MANIFEST, DB,
    PLATV (
      "linux", "arm64",
      "v8")) "," INDEX_ENTRY (OCI_MEDIA_MANIFEST, DC,
                              PLATV (
                                "linux", "arm",
                                "v6")) "," INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA,
                                                        PLATV (
                                                          "linux", "arm",
                                                          "v7")) "," INDEX_ENTRY (OCI_MEDIA_MANIFEST, DB,
                                                                                  PLAT (
                                                                                    "unknown",
                                                                                    "unknown")) "," INDEX_ENTRY ("appli"
                                                                                                                 "catio"
                                                                                                                 "n/"
                                                                                                                 "vnd."
                                                                                                                 "in-"
                                                                                                                 "toto+"
                                                                                                                 "json",
                                                                                                                 DC,
                                                                                                                 PLAT (
                                                                                                                   "lin"
                                                                                                                   "ux",
                                                                                                                   "ppc"
                                                                                                                   "64l"
                                                                                                                   "e")) "," INDEX_ENTRY (OCI_MEDIA_MANIFEST,
                                                                                                                                          DC,
                                                                                                                                          "") "],"
                                                                                                                                              " \"annotations\": {\"a\": \"b\"}}";

static void
test_index_parse (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct oci_index *idx = NULL;
  CHECK (oci_index_parse (index_doc, strlen (index_doc), &idx, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (idx->media_type, OCI_MEDIA_INDEX);
  CHECK (idx->n_manifests == 7);
  CHECK_STR (idx->manifests[1].digest, DB);
  CHECK (idx->manifests[1].size == 500);
  CHECK_STR (idx->manifests[1].platform->os, "linux");
  CHECK_STR (idx->manifests[1].platform->architecture, "arm64");
  CHECK_STR (idx->manifests[1].platform->variant, "v8");
  CHECK (idx->manifests[0].platform->variant == NULL);
  CHECK (idx->manifests[6].platform == NULL);
  CHECK_STR (idx->manifests[5].media_type, "application/vnd.in-toto+json");
  oci_index_free (idx);
  oci_index_free (NULL);

  /* Docker manifest list; an empty variant is no variant. */
  static const char list[] = "{\"schemaVersion\": 2, \"mediaType\": \"" DOCKER_MEDIA_LIST
                             "\", \"manifests\": [" INDEX_ENTRY (DOCKER_MEDIA_MANIFEST, DA,
                                                                 PLATV ("linux", "amd64", "")) "]}";
  CHECK (oci_index_parse (list, strlen (list), &idx, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (idx->media_type, DOCKER_MEDIA_LIST);
  CHECK (idx->manifests[0].platform->variant == NULL);
  oci_index_free (idx);

  /* No mediaType: an OCI index. */
  static const char bare[] = "{\"schemaVersion\": 2, \"manifests\": []}";
  CHECK (oci_index_parse (bare, strlen (bare), &idx, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (idx->media_type, OCI_MEDIA_INDEX);
  CHECK (idx->n_manifests == 0);
  oci_index_free (idx);
}

static void
test_index_bad (void)
{
  static const struct unit_refusal bad[] = {
    { "{\"schemaVersion\": 2, \"mediaType\": \"" DOCKER_MEDIA_LIST
      "\", \"manifests\": [" INDEX_ENTRY (DOCKER_MEDIA_MANIFEST, DA, "") "]}",
      OHBOX_ERR_INTEGRITY, "missing `platform`" },
    { "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, "sha256:../../../x", "") "]}",
      OHBOX_ERR_INTEGRITY, "manifests[0]: invalid digest" },
    { "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, PLAT ("linux\\n", "amd64")) "]}",
      OHBOX_ERR_INTEGRITY, "invalid platform field `linux?`" },
    { "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, PLAT ("linux", "../x")) "]}",
      OHBOX_ERR_INTEGRITY, "invalid platform field" },
    { "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, PLAT ("", "amd64")) "]}",
      OHBOX_ERR_INTEGRITY, "invalid platform field" },
    { "{\"schemaVersion\": 2, \"manifests\": [{\"mediaType\": \"" OCI_MEDIA_MANIFEST "\", \"digest\": \"" DA
      "\", \"size\": 1, \"platform\": {\"os\": \"linux\"}}]}",
      OHBOX_ERR_INTEGRITY, "missing `architecture`" },
    { "{\"schemaVersion\": 2, \"manifests\": [{\"mediaType\": \"" OCI_MEDIA_MANIFEST "\", \"digest\": \"" DA
      "\", \"size\": 1, \"platform\": \"linux/amd64\"}]}",
      OHBOX_ERR_INTEGRITY, "`platform` is not an object" },
    { "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, "") "], \"layers\": []}",
      OHBOX_ERR_INTEGRITY, "ambiguous" },
    { "{\"schemaVersion\": 2, \"manifests\": [], \"config\": {}}", OHBOX_ERR_INTEGRITY, "ambiguous" },
    { "{\"schemaVersion\": 2, \"manifests\": {}}", OHBOX_ERR_INTEGRITY, "`manifests`" },
    { "{\"schemaVersion\": 2}", OHBOX_ERR_INTEGRITY, "`manifests`" },
    { "{\"schemaVersion\": 1, \"manifests\": []}", OHBOX_ERR_UNSUPPORTED, "schema1" },
    { "{\"schemaVersion\": 2, \"mediaType\": \"" OCI_MEDIA_MANIFEST "\", \"manifests\": []}", OHBOX_ERR_INTEGRITY,
      "not an image index" },
    { "{\"schemaVersion\": 2, \"manifests\": [{\"digest\": \"" DA "\", \"size\": 1}]}", OHBOX_ERR_INTEGRITY,
      "missing `mediaType`" },
    { "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, "") "],"
                                                                                         " \"manifests\": []}",
      OHBOX_ERR_INTEGRITY, "duplicate" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct oci_index *idx = NULL;
      int r = oci_index_parse (bad[i].doc, strlen (bad[i].doc), &idx, &err);
      const char *why = refusal_problem (r, err, "invalid image index: ", bad[i].kind, bad[i].msg);
      CHECK (why == NULL, "case %zu: %s", i, why);
    }
}

/* An index entry: a manifest for linux/ARCH. */
static json_t *
index_entry_json (const char *arch)
{
  return json_pack ("{s:s, s:s, s:i, s:{s:s, s:s}}", "mediaType", OCI_MEDIA_MANIFEST, "digest", DA, "size", 10,
                    "platform", "os", "linux", "architecture", arch);
}

/* An index of the array ENTRIES (consumed) as JSON text, to free. */
static char *
index_text (json_t *entries)
{
  return json_text (json_pack ("{s:i, s:o}", "schemaVersion", 2, "manifests", entries));
}

static char *
index_with_entries (size_t n)
{
  json_t *arr = json_array ();
  for (size_t i = 0; i < n; i++)
    json_array_append_new (arr, index_entry_json (i % 2 ? "amd64" : "riscv64"));
  return index_text (arr);
}

static void
test_index_count (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct oci_index *idx = NULL;
  cleanup_free char *ok = index_with_entries (OCI_MAX_INDEX_ENTRIES);
  CHECK (oci_index_parse (ok, strlen (ok), &idx, &err) == 0, "%s", err ? err->msg : "");
  CHECK (idx->n_manifests == OCI_MAX_INDEX_ENTRIES);
  oci_index_free (idx);
  cleanup_free char *too_many = index_with_entries (OCI_MAX_INDEX_ENTRIES + 1);
  CHECK (oci_index_parse (too_many, strlen (too_many), &idx, &err) < 0);
  CHECK (strstr (err->msg, "1001 entries") != NULL, "%s", err->msg);
}

/* --------------------------------------------------------------- config */

static const char config_doc[] =
  "{\"created\": \"2024-01-02T03:04:05Z\", \"architecture\": \"arm64\", \"variant\": \"v8\", \"os\": \"linux\","
  " \"config\": {\"Env\": [\"PATH=/bin\"], \"Cmd\": [\"sh\"], \"Entrypoint\": null, \"WorkingDir\": \"/w\","
  "  \"User\": \"1000\", \"Labels\": {\"a\": \"b\"}, \"ExposedPorts\": {\"80/tcp\": {}}},"
  " \"rootfs\": {\"type\": \"layers\", \"diff_ids\": [\"" DA "\", \"" DB "\"]},"
  " \"history\": [{\"created_by\": \"x\"}]}";

static void
test_config_parse (void)
{
  cleanup_error ohbox_error_t err = NULL;
  struct oci_image_config *c = NULL;
  CHECK (oci_image_config_parse (config_doc, strlen (config_doc), &c, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (c->platform.os, "linux");
  CHECK_STR (c->platform.architecture, "arm64");
  CHECK_STR (c->platform.variant, "v8");
  CHECK (c->n_diff_ids == 2);
  CHECK_STR (c->diff_ids[0], DA);
  CHECK_STR (c->diff_ids[1], DB);
  CHECK_STR (c->created, "2024-01-02T03:04:05Z");
  CHECK (c->runtime_config != NULL);
  CHECK_STR (json_string_value (json_object_get (c->runtime_config, "WorkingDir")), "/w");
  oci_image_config_free (c);
  oci_image_config_free (NULL);

  /* Minimal: no created, no config, no layers. */
  static const char minimal[] =
    "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}}";
  CHECK (oci_image_config_parse (minimal, strlen (minimal), &c, &err) == 0, "%s", err ? err->msg : "");
  CHECK (c->created == NULL && c->runtime_config == NULL && c->n_diff_ids == 0 && c->platform.variant == NULL);
  oci_image_config_free (c);
}

static void
test_config_bad (void)
{
  static const struct unit_refusal bad[] = {
    { "{\"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}}", OHBOX_ERR_INTEGRITY,
      "missing `architecture`" },
    { "{\"architecture\": \"amd64\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}}", OHBOX_ERR_INTEGRITY,
      "missing `os`" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\"}", OHBOX_ERR_INTEGRITY, "`rootfs`" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"other\", \"diff_ids\": []}}",
      OHBOX_ERR_UNSUPPORTED, "rootfs type" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"diff_ids\": []}}", OHBOX_ERR_INTEGRITY,
      "rootfs: missing `type`" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\"}}", OHBOX_ERR_INTEGRITY,
      "diff_ids" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": "
      "[\"" DA "\", \"sha256:../../etc\"]}}",
      OHBOX_ERR_INTEGRITY, "rootfs.diff_ids[1]: invalid digest" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": [7]}}",
      OHBOX_ERR_INTEGRITY, "diff_ids[0]" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []},"
      " \"config\": []}",
      OHBOX_ERR_INTEGRITY, "`config` is not an object" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []},"
      " \"config\": {\"Env\": [\"A=1\", 2]}}",
      OHBOX_ERR_INTEGRITY, "config.Env" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []},"
      " \"config\": {\"Cmd\": \"sh\"}}",
      OHBOX_ERR_INTEGRITY, "config.Cmd" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []},"
      " \"config\": {\"User\": 0}}",
      OHBOX_ERR_INTEGRITY, "config.User" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []},"
      " \"config\": {\"Labels\": {\"a\": 1}}}",
      OHBOX_ERR_INTEGRITY, "config.Labels" },
    { "{\"architecture\": \"amd64\", \"os\": \"linux\", \"created\": 5, \"rootfs\": {\"type\": \"layers\","
      " \"diff_ids\": []}}",
      OHBOX_ERR_INTEGRITY, "`created`" },
    { "{\"architecture\": \"am d64\", \"os\": \"linux\", \"rootfs\": {\"type\": \"layers\", \"diff_ids\": []}}",
      OHBOX_ERR_INTEGRITY, "invalid platform field" },
    { "[1]", OHBOX_ERR_INTEGRITY, "not a JSON object" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct oci_image_config *c = NULL;
      int r = oci_image_config_parse (bad[i].doc, strlen (bad[i].doc), &c, &err);
      const char *why = refusal_problem (r, err, "invalid image config: ", bad[i].kind, bad[i].msg);
      CHECK (why == NULL, "case %zu: %s", i, why);
    }

  /* 1001 diff_ids. */
  cleanup_error ohbox_error_t err = NULL;
  struct oci_image_config *c = NULL;
  json_t *ids = json_array ();
  for (int i = 0; i <= OCI_MAX_LAYERS; i++)
    json_array_append_new (ids, json_string (DA));
  cleanup_free char *s = json_text (json_pack ("{s:s, s:s, s:{s:s, s:o}}", "os", "linux", "architecture", "amd64",
                                               "rootfs", "type", "layers", "diff_ids", ids));
  int r = oci_image_config_parse (s, strlen (s), &c, &err);
  CHECK (r < 0 && strstr (err->msg, "1001 diff_ids") != NULL, "%s", err ? err->msg : "accepted");
}

/* ---------------------------------------------------------------- kinds */

static void
test_document_kind (void)
{
  static const char manifest_no_mt[] = "{\"schemaVersion\": 2, \"config\": {}, \"layers\": []}";
  static const char index_no_mt[] = "{\"schemaVersion\": 2, \"manifests\": []}";
  static const char index_mt[] = "{\"schemaVersion\": 2, \"mediaType\": \"" OCI_MEDIA_INDEX "\", \"manifests\": []}";
  static const char list_mt[] = "{\"schemaVersion\": 2, \"mediaType\": \"" DOCKER_MEDIA_LIST "\", \"manifests\": []}";
  static const char docker_mt[] = "{\"schemaVersion\": 2, \"mediaType\": \"" DOCKER_MEDIA_MANIFEST "\"}";
  static const char oci_mt[] = "{\"schemaVersion\": 2, \"mediaType\": \"" OCI_MEDIA_MANIFEST "\"}";
  static const char neither[] = "{\"schemaVersion\": 2}";
  static const char schema1[] = "{\"schemaVersion\": 1, \"name\": \"x\", \"fsLayers\": []}";
  static const char schema1_mt[] = "{\"schemaVersion\": 2, \"mediaType\": \"" DOCKER_MEDIA_SCHEMA1 "\"}";
  static const char artifact[] =
    "{\"schemaVersion\": 2, \"mediaType\": \"application/vnd.oci.artifact.manifest.v1+json\"}";
  static const struct
  {
    const char *ct;
    const char *body;
    int want; /* kind, or -ERRKIND */
  } cases[] = {
    { OCI_MEDIA_MANIFEST, manifest_no_mt, OCI_DOC_MANIFEST },
    { DOCKER_MEDIA_MANIFEST, manifest_no_mt, OCI_DOC_MANIFEST },
    { OCI_MEDIA_INDEX, index_no_mt, OCI_DOC_INDEX },
    { DOCKER_MEDIA_LIST, index_no_mt, OCI_DOC_INDEX },
    /* Parameters, blanks and case in the Content-Type. */
    { " Application/VND.OCI.image.index.v1+json ; charset=utf-8", index_no_mt, OCI_DOC_INDEX },
    /* A generic or missing Content-Type: the mediaType, then the shape. */
    { NULL, index_mt, OCI_DOC_INDEX },
    { NULL, list_mt, OCI_DOC_INDEX },
    { "text/plain", docker_mt, OCI_DOC_MANIFEST },
    { "application/json", oci_mt, OCI_DOC_MANIFEST },
    { "text/plain; charset=utf-8", index_no_mt, OCI_DOC_INDEX },
    { NULL, manifest_no_mt, OCI_DOC_MANIFEST },
    { "", manifest_no_mt, OCI_DOC_MANIFEST },
    { "application/octet-stream", neither, -OHBOX_ERR_UNSUPPORTED },
    /* Docker and OCI types of the same kind may be mixed. */
    { DOCKER_MEDIA_MANIFEST, oci_mt, OCI_DOC_MANIFEST },
    { OCI_MEDIA_INDEX, list_mt, OCI_DOC_INDEX },
    /* But not a manifest claimed to be an index. */
    { OCI_MEDIA_INDEX, docker_mt, -OHBOX_ERR_INTEGRITY },
    { OCI_MEDIA_MANIFEST, index_mt, -OHBOX_ERR_INTEGRITY },
    /* Schema1 by type or by version. */
    { DOCKER_MEDIA_SCHEMA1, manifest_no_mt, -OHBOX_ERR_UNSUPPORTED },
    { DOCKER_MEDIA_SCHEMA1_SIGNED "; charset=utf-8", manifest_no_mt, -OHBOX_ERR_UNSUPPORTED },
    { NULL, schema1, -OHBOX_ERR_UNSUPPORTED },
    { "text/plain", schema1_mt, -OHBOX_ERR_UNSUPPORTED },
    { OCI_MEDIA_MANIFEST, schema1, -OHBOX_ERR_UNSUPPORTED },
    { NULL, artifact, -OHBOX_ERR_UNSUPPORTED },
    { OCI_MEDIA_MANIFEST, "{\"schemaVersion\": 2, \"mediaType\": 4}", -OHBOX_ERR_INTEGRITY },
    { OCI_MEDIA_MANIFEST, "not json", -OHBOX_ERR_INTEGRITY },
    { OCI_MEDIA_MANIFEST, "{\"schemaVersion\": 3}", -OHBOX_ERR_UNSUPPORTED },
    { NULL, "{\"manifests\": []}", -OHBOX_ERR_INTEGRITY },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      enum oci_document_kind kind = (enum oci_document_kind) 77;
      int r = oci_document_kind (cases[i].ct, cases[i].body, strlen (cases[i].body), &kind, &err);
      if (cases[i].want >= 0)
        {
          CHECK (r == 0, "case %zu: %s", i, err ? err->msg : "");
          CHECK ((int) kind == cases[i].want, "case %zu: kind %d", i, (int) kind);
        }
      else
        {
          CHECK (r < 0, "case %zu accepted as %d", i, (int) kind);
          CHECK (err->kind == -cases[i].want, "case %zu: kind %d: %s", i, err->kind, err->msg);
        }
    }

  cleanup_error ohbox_error_t err = NULL;
  enum oci_document_kind kind;
  CHECK (oci_document_kind (NULL, schema1, strlen (schema1), &kind, &err) < 0);
  CHECK_STR (err->msg, "schema1 manifests are not supported; push the image again with a current client");
  ohbox_error_release (&err);

  size_t big = OCI_MAX_MANIFEST_SIZE + 1;
  char *huge = xmalloc (big);
  memset (huge, ' ', big);
  memcpy (huge, index_mt, strlen (index_mt));
  CHECK (oci_document_kind (NULL, huge, big, &kind, &err) < 0 && err->kind == OHBOX_ERR_INTEGRITY);
  free (huge);
}

/* --------------------------------------------------------------- layers */

static void
test_layer_compression (void)
{
  static const struct
  {
    const char *mt;
    enum oci_layer_compression c;
  } ok[] = {
    { OCI_MEDIA_LAYER, OCI_COMPRESSION_NONE },
    { OCI_MEDIA_LAYER_GZIP, OCI_COMPRESSION_GZIP },
    { OCI_MEDIA_LAYER_ZSTD, OCI_COMPRESSION_ZSTD },
    { "application/vnd.oci.image.layer.nondistributable.v1.tar", OCI_COMPRESSION_NONE },
    { "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", OCI_COMPRESSION_GZIP },
    { "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", OCI_COMPRESSION_ZSTD },
    { "application/vnd.docker.image.rootfs.diff.tar", OCI_COMPRESSION_NONE },
    { "application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_COMPRESSION_GZIP },
    { "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", OCI_COMPRESSION_GZIP },
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      enum oci_layer_compression c = (enum oci_layer_compression) 99;
      CHECK (oci_layer_compression (ok[i].mt, &c, &err) == 0, "%s", ok[i].mt);
      CHECK (c == ok[i].c, "%s: %d", ok[i].mt, (int) c);
    }
  static const char *const bad[] = {
    "application/vnd.oci.image.layer.v1.tar+bzip2",
    "application/vnd.oci.image.layer.v1.tar+gzip ",
    "APPLICATION/VND.OCI.IMAGE.LAYER.V1.TAR",
    "application/vnd.oci.empty.v1+json",
    "",
    NULL,
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      enum oci_layer_compression c;
      CHECK (oci_layer_compression (bad[i], &c, &err) < 0, "%zu accepted", i);
      CHECK (err->kind == OHBOX_ERR_UNSUPPORTED, "%s", err->msg);
      CHECK (strstr (err->msg, "is not supported") != NULL, "%s", err->msg);
    }
}

/* ------------------------------------------------------------- platform */

static void
test_platform_parse (void)
{
  static const struct
  {
    const char *in, *os, *arch, *variant, *str;
  } ok[] = {
    { "linux/amd64", "linux", "amd64", NULL, "linux/amd64" },
    { "linux/arm64/v8", "linux", "arm64", "v8", "linux/arm64/v8" },
    { "LINUX/ARM64", "linux", "arm64", NULL, "linux/arm64" },
    { "linux/x86_64", "linux", "amd64", NULL, "linux/amd64" },
    { "linux/aarch64", "linux", "arm64", NULL, "linux/arm64" },
    { "linux/armhf", "linux", "arm", "v7", "linux/arm/v7" },
    { "linux/armel", "linux", "arm", "v6", "linux/arm/v6" },
    { "linux/arm/7", "linux", "arm", "v7", "linux/arm/v7" },
    { "linux/arm64/8", "linux", "arm64", "v8", "linux/arm64/v8" },
    { "linux/i686", "linux", "386", NULL, "linux/386" },
    { "linux/amd64/v3", "linux", "amd64", "v3", "linux/amd64/v3" },
    { "windows/amd64", "windows", "amd64", NULL, "windows/amd64" },
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct oci_platform p;
      CHECK (oci_platform_parse (ok[i].in, &p, &err) == 0, "%s: %s", ok[i].in, err ? err->msg : "");
      cleanup_free char *s = oci_platform_string (&p);
      bool same = strcmp (p.os, ok[i].os) == 0 && strcmp (p.architecture, ok[i].arch) == 0
                  && (p.variant == NULL ? ok[i].variant == NULL
                                        : ok[i].variant != NULL && strcmp (p.variant, ok[i].variant) == 0);
      oci_platform_clear (&p);
      CHECK (same, "%s", ok[i].in);
      CHECK_STR (s, ok[i].str);
      CHECK (p.os == NULL && p.architecture == NULL && p.variant == NULL);
    }
  static const char *const bad[] = { "",
                                     "linux",
                                     "linux/",
                                     "/amd64",
                                     "linux//v7",
                                     "linux/arm/v7/x",
                                     "linux/amd 64",
                                     "linux/amd64/",
                                     "linux/\x1b[1m",
                                     "a/b/c/d/e/f",
                                     NULL };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      struct oci_platform p;
      CHECK (oci_platform_parse (bad[i], &p, &err) < 0, "`%s` accepted", bad[i] ? bad[i] : "(null)");
      CHECK (err->kind == OHBOX_ERR_USAGE && strstr (err->msg, "invalid platform `") != NULL, "%s", err->msg);
      CHECK (strchr (err->msg, '\x1b') == NULL, "%s", err->msg);
      CHECK (p.os == NULL && p.architecture == NULL);
    }
}

static void
test_platform_host (void)
{
  struct oci_platform p;
  oci_platform_host (&p);
  cleanup_free char *s = oci_platform_string (&p);
  struct utsname u;
  CHECK (uname (&u) == 0);
  const char *expect = NULL;
  if (strcmp (u.machine, "x86_64") == 0)
    expect = "linux/amd64";
  else if (strcmp (u.machine, "aarch64") == 0)
    expect = "linux/arm64/v8";
  else if (strcmp (u.machine, "armv7l") == 0)
    expect = "linux/arm/v7";
  oci_platform_clear (&p);
  if (expect == NULL)
    {
      unit_skip ("no expected platform recorded for machine `%s` (got %s)", u.machine, s);
      return;
    }
  CHECK_STR (s, expect);

  /* The host platform string parses back to itself. */
  cleanup_error ohbox_error_t err = NULL;
  struct oci_platform q;
  CHECK (oci_platform_parse (s, &q, &err) == 0);
  cleanup_free char *s2 = oci_platform_string (&q);
  oci_platform_clear (&q);
  CHECK_STR (s2, s);
}

static int
select_in (const char *doc, const char *want_s, ohbox_error_t *err)
{
  struct oci_index *idx = NULL;
  struct oci_platform want;
  if (oci_index_parse (doc, strlen (doc), &idx, err) < 0)
    return -100;
  if (oci_platform_parse (want_s, &want, err) < 0)
    {
      oci_index_free (idx);
      return -100;
    }
  int r = oci_index_select_platform (idx, &want, err);
  oci_platform_clear (&want);
  oci_index_free (idx);
  return r;
}

static void
test_select_platform (void)
{
  cleanup_error ohbox_error_t err = NULL;
  CHECK (select_in (index_doc, "linux/amd64", &err) == 0, "%s", err ? err->msg : "");
  CHECK (select_in (index_doc, "linux/x86_64", &err) == 0);
  CHECK (select_in (index_doc, "linux/arm64", &err) == 1);
  CHECK (select_in (index_doc, "linux/arm64/v8", &err) == 1);
  CHECK (select_in (index_doc, "linux/arm", &err) == 3); /* default v7, not the v6 entry before it */
  CHECK (select_in (index_doc, "linux/arm/v7", &err) == 3);
  CHECK (select_in (index_doc, "linux/arm/v6", &err) == 2);
  CHECK (err == NULL);

  /* ppc64le exists only as a non-manifest entry; s390x not at all. */
  CHECK (select_in (index_doc, "linux/ppc64le", &err) == -1);
  CHECK (err->kind == OHBOX_ERR_UNSUPPORTED);
  CHECK_STR (err->msg, "no image for platform linux/ppc64le in the index (it has: linux/amd64, linux/arm64/v8, "
                       "linux/arm/v6, linux/arm/v7, linux/ppc64le)");
  ohbox_error_release (&err);
  CHECK (select_in (index_doc, "linux/arm64/v9", &err) == -1);
  ohbox_error_release (&err);
  CHECK (select_in (index_doc, "windows/amd64", &err) == -1);
  ohbox_error_release (&err);

  static const char two[] = "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (
    OCI_MEDIA_MANIFEST, DA,
    PLAT ("linux",
          "amd64")) "," INDEX_ENTRY (OCI_MEDIA_MANIFEST, DB,
                                     PLAT (
                                       "linux",
                                       "amd64")) "," INDEX_ENTRY (OCI_MEDIA_MANIFEST, DB,
                                                                  PLAT (
                                                                    "unknown",
                                                                    "unknown")) "," INDEX_ENTRY (OCI_MEDIA_INDEX, DC,
                                                                                                 PLAT ("linux",
                                                                                                       "arm64")) "]}";
  CHECK (select_in (two, "linux/s390x", &err) == -1);
  CHECK_STR (err->msg, "no image for platform linux/s390x in the index (it has: linux/amd64, linux/arm64)");
  ohbox_error_release (&err);
  /* arm64 entry without variant matches a want of arm64/v8; a nested index is fine. */
  CHECK (select_in (two, "linux/arm64/v8", &err) == 3, "%s", err ? err->msg : "");

  static const char none[] = "{\"schemaVersion\": 2, \"manifests\": [" INDEX_ENTRY (OCI_MEDIA_MANIFEST, DA, "") "]}";
  CHECK (select_in (none, "linux/amd64", &err) == -1);
  CHECK_STR (err->msg, "no image for platform linux/amd64 in the index (it has no platform-specific image)");
  ohbox_error_release (&err);

  /* Many platforms: the message lists 16 and stops. */
  json_t *arr = json_array ();
  for (int i = 0; i < 40; i++)
    {
      char arch[16];
      snprintf (arch, sizeof arch, "arch%d", i);
      json_array_append_new (arr, index_entry_json (arch));
    }
  cleanup_free char *many = index_text (arr);
  int r = select_in (many, "linux/amd64", &err);
  CHECK (r == -1);
  CHECK (strstr (err->msg, "linux/arch15, ...)") != NULL, "%s", err->msg);
  CHECK (strstr (err->msg, "arch16") == NULL, "%s", err->msg);
}

static void
test_platform_matches (void)
{
  struct oci_platform want = { (char *) "linux", (char *) "arm64", NULL };
  struct oci_platform have = { (char *) "linux", (char *) "arm64", (char *) "v8" };
  CHECK (oci_platform_matches (&have, &want));
  CHECK (oci_platform_matches (&want, &have));
  CHECK (!oci_platform_matches (NULL, &want));
  have.variant = (char *) "v9";
  CHECK (!oci_platform_matches (&have, &want));
  struct oci_platform amd = { (char *) "linux", (char *) "amd64", NULL };
  struct oci_platform amd3 = { (char *) "linux", (char *) "amd64", (char *) "v3" };
  CHECK (oci_platform_matches (&amd, &amd));
  CHECK (!oci_platform_matches (&amd3, &amd));
  CHECK (!oci_platform_matches (&amd, &amd3));
  struct oci_platform win = { (char *) "windows", (char *) "amd64", NULL };
  CHECK (!oci_platform_matches (&win, &amd));
}

UNIT_MAIN_BEGIN ("test-oci")
RUN_TEST (test_manifest_oci);
RUN_TEST (test_manifest_docker_and_defaults);
RUN_TEST (test_manifest_bad);
RUN_TEST (test_manifest_hostile_bodies);
RUN_TEST (test_manifest_layer_count);
RUN_TEST (test_mutations);
RUN_TEST (test_index_parse);
RUN_TEST (test_index_bad);
RUN_TEST (test_index_count);
RUN_TEST (test_config_parse);
RUN_TEST (test_config_bad);
RUN_TEST (test_document_kind);
RUN_TEST (test_layer_compression);
RUN_TEST (test_platform_parse);
RUN_TEST (test_platform_host);
RUN_TEST (test_select_platform);
RUN_TEST (test_platform_matches);
UNIT_MAIN_END
