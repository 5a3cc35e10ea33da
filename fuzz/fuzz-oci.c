/* fuzz-oci.c: registry documents (oci/image_spec.c): oci_document_kind,
 * oci_manifest_parse, oci_index_parse and oci_image_config_parse, all fed
 * the same bytes.  The first byte picks the Content-Type oci_document_kind
 * sees, the rest is the body (not NUL-terminated: the parsers take a
 * length).  A document is never both a manifest and an index. */
#include "config.h"

#include <jansson.h>
#include <stdbool.h>

#include "fuzz.h"
#include "oci/image_spec.h"

static const char *const content_types[] = {
  NULL,
  "application/json",
  OCI_MEDIA_MANIFEST,
  OCI_MEDIA_INDEX,
  DOCKER_MEDIA_MANIFEST,
  DOCKER_MEDIA_LIST,
  "application/vnd.docker.distribution.manifest.v1+prettyjws",
  "application/vnd.oci.image.manifest.v1+json; charset=utf-8",
};

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  const char *ct = content_types[data[0] % (sizeof (content_types) / sizeof (content_types[0]))];
  const char *body = (const char *) data + 1;
  size_t len = size - 1;

  cleanup_error ohbox_error_t err = NULL;
  enum oci_document_kind kind;
  int kind_ret = oci_document_kind (ct, body, len, &kind, &err);
  FUZZ_CHECK (kind_ret == 0 || (err != NULL && err->msg != NULL), "kind failed without an error");
  ohbox_error_release (&err);

  struct oci_manifest *m = NULL;
  int m_ret = oci_manifest_parse (body, len, &m, &err);
  FUZZ_CHECK (m_ret == 0 || (err != NULL && err->msg != NULL), "manifest failed without an error");
  ohbox_error_release (&err);
  if (m_ret == 0)
    {
      FUZZ_CHECK (m->n_layers <= OCI_MAX_LAYERS, "%zu layers", m->n_layers);
      FUZZ_CHECK (m->config.digest != NULL && m->config.size >= 0, "bad config descriptor");
      for (size_t i = 0; i < m->n_layers; i++)
        {
          enum oci_layer_compression c;
          FUZZ_CHECK (m->layers[i].digest != NULL && m->layers[i].size >= 0, "bad layer %zu", i);
          /* The parser promised the layer media types are usable. */
          FUZZ_CHECK (oci_layer_compression (m->layers[i].media_type, &c, &err) == 0, "layer %zu: %s", i,
                      err ? err->msg : "?");
        }
    }

  struct oci_index *idx = NULL;
  int i_ret = oci_index_parse (body, len, &idx, &err);
  FUZZ_CHECK (i_ret == 0 || (err != NULL && err->msg != NULL), "index failed without an error");
  ohbox_error_release (&err);
  if (i_ret == 0)
    {
      FUZZ_CHECK (idx->n_manifests <= OCI_MAX_INDEX_ENTRIES, "%zu entries", idx->n_manifests);
      struct oci_platform want = { (char *) "linux", (char *) "amd64", NULL };
      int pos = oci_index_select_platform (idx, &want, &err);
      FUZZ_CHECK (pos == -1 || (pos >= 0 && (size_t) pos < idx->n_manifests), "position %d", pos);
      ohbox_error_release (&err);
      for (size_t i = 0; i < idx->n_manifests; i++)
        if (idx->manifests[i].platform)
          free (oci_platform_string (idx->manifests[i].platform));
    }
  FUZZ_CHECK (m_ret != 0 || i_ret != 0, "both a manifest and an index");
  /* Without a telling Content-Type the kind comes from the document alone,
   * so the parser that accepts it must agree.  (With one, a document
   * without a mediaType is what the Content-Type says: an index-shaped body
   * served as a manifest is a manifest that then fails to parse.) */
  bool generic = ct == NULL || strcmp (ct, "application/json") == 0;
  if (generic && kind_ret == 0 && m_ret == 0)
    FUZZ_CHECK (kind == OCI_DOC_MANIFEST, "a manifest classified as an index");
  if (generic && kind_ret == 0 && i_ret == 0)
    FUZZ_CHECK (kind == OCI_DOC_INDEX, "an index classified as a manifest");
  oci_manifest_free (m);
  oci_index_free (idx);

  struct oci_image_config *c = NULL;
  if (oci_image_config_parse (body, len, &c, &err) == 0)
    {
      FUZZ_CHECK (c->n_diff_ids <= OCI_MAX_LAYERS, "%zu diff_ids", c->n_diff_ids);
      for (size_t i = 0; i < c->n_diff_ids; i++)
        FUZZ_CHECK (c->diff_ids[i] != NULL, "diff_id %zu is NULL", i);
      free (oci_platform_string (&c->platform));
    }
  else
    FUZZ_CHECK (err != NULL && err->msg != NULL, "config failed without an error");
  oci_image_config_free (c);

  /* oci_platform_parse on the body as a string, too. */
  cleanup_free char *s = fuzz_cstring ((const uint8_t *) body, len < 256 ? len : 256);
  struct oci_platform p;
  memset (&p, 0, sizeof (p));
  ohbox_error_release (&err);
  if (oci_platform_parse (s, &p, &err) == 0)
    {
      cleanup_free char *ps = oci_platform_string (&p);
      FUZZ_CHECK (ps != NULL && oci_platform_matches (&p, &p), "platform `%s` does not match itself", s);
    }
  oci_platform_clear (&p);
  return 0;
}
