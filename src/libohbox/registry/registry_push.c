/* registry_push.c: blob and manifest uploads, and `ohbox push` (see
 * registry_push.h). Requests go through registry_http.c like the pulls:
 * same TLS, redirects, retries; a 401 starts the token flow once, with the
 * push scope. */
#include "config.h"
#include "registry/registry_push.h"

#include <string.h>

#include "image/image.h"
#include "registry/reference.h"
#include "registry/registry_internal.h"

static int
push_request (struct ohbox_registry *r, const char *repository, const char *method, const char *url,
              const char *content_type, const char *body, int body_fd, uint64_t body_len, struct reg_response *resp,
              bool *creds_sent, ohbox_error_t *err)
{
  for (int round = 0;; round++)
    {
      char *authorization = NULL;
      bool sent = false;
      if (reg_auth_header (r, repository, &authorization, &sent, err) < 0)
        return -1;
      struct reg_xfer x;
      reg_xfer_init (&x, r, r->easy, url);
      x.authorization = authorization;
      x.method = method;
      x.content_type = content_type;
      x.body = body;
      x.body_fd = body_fd;
      x.body_len = body_len;
      /* A blob's upload takes as long as it takes: only the deadline
       * bounds it, not the request timeout of small answers. */
      x.long_transfer = body_fd >= 0;
      /* A 2xx body (a HEAD's Content-Length is the blob's) is not needed:
       * without on_data it is dropped; an error body's start is kept. */
      int ret = reg_run_authenticated (r, repository, &x, round, sent, err);
      if (ret > 0)
        {
          reg_xfer_clear (&x);
          continue;
        }
      if (ret == 0)
        {
          *resp = x.resp;
          memset (&x.resp, 0, sizeof x.resp);
          *creds_sent = sent;
        }
      reg_xfer_clear (&x);
      return ret;
    }
}

int
ohbox_registry_blob_exists (struct ohbox_registry *r, const char *repository, const char *digest, bool *exists,
                            ohbox_error_t *err)
{
  *exists = false;
  if (ohbox_digest_validate (digest, err) < 0 || reg_prepare_repository (r, repository, err) < 0)
    return -1;
  cleanup_free char *url = xasprintf ("%s/v2/%s/blobs/%s", r->base_url, repository, digest);
  cleanup_free char *what = xasprintf ("blob %s in %s/%s", digest, r->display, repository);
  struct reg_response resp = { 0 };
  bool sent = false;
  if (push_request (r, repository, "HEAD", url, NULL, NULL, -1, 0, &resp, &sent, err) < 0)
    return ohbox_error_prefix (err, "check %s", what);
  int ret = 0;
  if (resp.status >= 200 && resp.status < 300)
    *exists = true;
  else if (resp.status != 404)
    ret = reg_status_error (r, repository, what, &resp, sent, err);
  reg_response_clear (&resp);
  return ret;
}

/* The URL to PUT the data to: the upload's Location (relative to the
 * registry, or absolute) with the digest added to its query. */
static int
upload_url (struct ohbox_registry *r, const char *location, const char *digest, char **out, ohbox_error_t *err)
{
  cleanup_free char *base = NULL;
  if (location == NULL || *location == '\0')
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s started an upload without a Location", r->display);
  if (location[0] == '/')
    base = xasprintf ("%s%s", r->base_url, location);
  else if (strncmp (location, "https://", 8) == 0 || (strncmp (location, "http://", 7) == 0 && r->insecure))
    base = xstrdup (location);
  else
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s gave an upload Location `%.200s` ohbox does not follow",
                        r->display, location);
  *out = xasprintf ("%s%sdigest=sha256%%3A%s", base, strchr (base, '?') ? "&" : "?", ohbox_digest_hex (digest));
  return 0;
}

int
ohbox_registry_push_blob (struct ohbox_registry *r, struct ohbox_store *s, const char *repository, const char *digest,
                          uint64_t size, ohbox_error_t *err)
{
  if (ohbox_digest_validate (digest, err) < 0 || reg_prepare_repository (r, repository, err) < 0)
    return -1;
  cleanup_free char *what = xasprintf ("upload of blob %s to %s/%s", digest, r->display, repository);
  cleanup_close int fd = -1;
  if (ohbox_store_open_blob (s, digest, &fd, err) < 0)
    return -1;
  cleanup_free char *start = xasprintf ("%s/v2/%s/blobs/uploads/", r->base_url, repository);
  struct reg_response resp = { 0 };
  bool sent = false;
  if (push_request (r, repository, "POST", start, NULL, NULL, -1, 0, &resp, &sent, err) < 0)
    return ohbox_error_prefix (err, "start the %s", what);
  if (resp.status != 202)
    {
      reg_status_error (r, repository, what, &resp, sent, err);
      reg_response_clear (&resp);
      return -1;
    }
  cleanup_free char *url = NULL;
  int ret = upload_url (r, resp.location, digest, &url, err);
  reg_response_clear (&resp);
  if (ret < 0)
    return -1;
  if (push_request (r, repository, "PUT", url, "application/octet-stream", NULL, fd, size, &resp, &sent, err) < 0)
    return ohbox_error_prefix (err, "%s", what);
  if (resp.status != 201 && resp.status != 204)
    ret = reg_status_error (r, repository, what, &resp, sent, err);
  reg_response_clear (&resp);
  return ret;
}

int
ohbox_registry_put_manifest (struct ohbox_registry *r, const char *repository, const char *ref, const char *media_type,
                             const char *body, size_t len, ohbox_error_t *err)
{
  if (reg_prepare_repository (r, repository, err) < 0)
    return -1;
  cleanup_free char *url = xasprintf ("%s/v2/%s/manifests/%s", r->base_url, repository, ref);
  cleanup_free char *what = xasprintf ("manifest %s/%s:%s", r->display, repository, ref);
  struct reg_response resp = { 0 };
  bool sent = false;
  if (push_request (r, repository, "PUT", url, media_type, body, -1, len, &resp, &sent, err) < 0)
    return ohbox_error_prefix (err, "put %s", what);
  int ret = 0;
  if (resp.status != 201 && resp.status != 200 && resp.status != 202)
    ret = reg_status_error (r, repository, what, &resp, sent, err);
  reg_response_clear (&resp);
  return ret;
}

void
ohbox_push_result_clear (struct ohbox_push_result *r)
{
  free (r->dest);
  free (r->digest);
  memset (r, 0, sizeof *r);
}

int
ohbox_push (struct ohbox_store *s, const char *what, const char *dest, const struct ohbox_push_options *opts,
            struct ohbox_push_result *res, ohbox_error_t *err)
{
  memset (res, 0, sizeof *res);
  struct ohbox_image *img = NULL;
  cleanup_reference struct ohbox_reference *ref = NULL;
  struct ohbox_registry *r = NULL;
  int ret = -1;
  if (ohbox_image_load (s, what, &img, err) < 0)
    return -1;
  if (ohbox_reference_parse (dest ? dest : what, &ref, err) < 0)
    {
      if (dest == NULL)
        ohbox_error_hint (err, "give a destination: ohbox push IMAGE REGISTRY/REPO:TAG");
      goto out;
    }
  if (ref->digest && strcmp (ref->digest, img->id) != 0)
    {
      ohbox_error (err, OHBOX_ERR_USAGE, 0, "cannot push image %s as `%s`: the digest is the image's own", img->id,
                   ref->digest);
      goto out;
    }
  res->dest = ohbox_reference_string (ref);
  res->digest = xstrdup (img->id);
  if (ohbox_registry_new (ohbox_registry_endpoint_host (ref->registry), &opts->registry, &r, err) < 0)
    goto out;
  r->push_scope = true;
  /* The config first, then the layers: everything the manifest names
   * must be there before it. */
  size_t n = img->manifest->n_layers + 1;
  for (size_t i = 0; i < n; i++)
    {
      const struct oci_descriptor *d = i == 0 ? &img->manifest->config : &img->manifest->layers[i - 1];
      bool exists;
      if (ohbox_registry_blob_exists (r, ref->repository, d->digest, &exists, err) < 0)
        goto out;
      if (opts->blob)
        opts->blob (opts->userdata, d->digest, (uint64_t) d->size, !exists);
      if (exists)
        {
          res->blobs_skipped++;
          continue;
        }
      if (ohbox_registry_push_blob (r, s, ref->repository, d->digest, (uint64_t) d->size, err) < 0)
        goto out;
      res->blobs_sent++;
      res->bytes_sent += (uint64_t) d->size;
    }
  if (ohbox_registry_put_manifest (r, ref->repository, ref->tag ? ref->tag : img->id, img->manifest->media_type,
                                   img->manifest_raw, img->manifest_len, err)
      < 0)
    goto out;
  ret = 0;
out:
  if (ret < 0)
    ohbox_error_prefix (err, "push `%s`", what);
  ohbox_registry_free (r);
  ohbox_image_free (img);
  return ret;
}
