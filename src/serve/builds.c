/* builds.c: POST /build and GET /build_status (RUNTIME-API.md, detail 6).
 *
 * OpenHands sends a multipart form: `context`, a file part whose content is
 * the base64 text of a tar.gz of its build directory (a Dockerfile and its
 * own sources), `target_image` and repeated `tags`. The base64 is decoded
 * as it arrives into a file (at most --max-build-context bytes); the POST
 * answers a build id at once (the client gives it 30 s) and the build runs
 * in the background, one at a time, in a worker of the starter:
 *
 *   1. the tar.gz is unpacked with the library's layer code (layer.h):
 *      nothing is created outside its directory whatever the archive
 *      holds (absolute or `..` paths, symlinks out, hard links out: the
 *      build fails naming the entry), at most 4x the compressed size;
 *   2. the Dockerfile's FROM names the base (opened beneath the context
 *      directory, no symlink followed);
 *   3. the runtime image is `ohbox build` of that base (build.h), pulled as
 *      needed; a FROM that names a runtime image this store holds (OpenHands
 *      builds onto its own lock and versioned tags) is that image;
 *   4. it is stored under target_image and every tag, so /image_exists and
 *      /start find each of them.
 *
 * The Dockerfile's other steps (OpenHands' RUN and COPY of its own server)
 * are not run: the executor inside every ohbox runtime image serves the
 * action protocol in their place. The build's log says so.
 *
 * Build jobs live in memory only. A build id carries its target image, so a
 * server started again after a crash answers /build_status of an old id
 * from the store: SUCCESS when the target exists, RUNNING while the build's
 * worker (which outlives the server) still holds its directory, FAILURE
 * otherwise. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/build.h"
#include "build/runtime_image.h"
#include "common/dl_crypto.h"
#include "image/layer.h"
#include "registry/reference.h"
#include "serve/dl_mhd.h"
#include "serve/serve_internal.h"
#include "store/store.h"

#define BUILD_DIR_PREFIX "ohbox-serve-build."
#define MAX_TAGS 16
#define MAX_FIELD 1024
#define DOCKERFILE_MAX (1024 * 1024)
#define KEEP_FINISHED 256
#define LOG_LINES_MAX 1000

enum build_status
{
  B_QUEUED,
  B_RUNNING,
  B_SUCCESS,
  B_FAILURE,
};

struct build
{
  char id[600];
  char rnd[17];
  char *target;
  json_t *tags;
  char *dir;
  int lock_fd;
  enum build_status status;
  char *error;
  char *image_id;
  json_t *log;
  struct build *next;
};

struct builds
{
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct build *head;
  unsigned finished;
  pthread_t runner;
  bool runner_started;
  uint64_t ok, failed;
};

/* ---- ids ---- */

static char *
b64url (const char *s)
{
  size_t n = strlen (s);
  char *out = xmalloc (4 * ((n + 2) / 3) + 1);
  int len = EVP_EncodeBlock ((unsigned char *) out, (const unsigned char *) s, (int) n);
  for (int i = 0; i < len; i++)
    out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
  while (len > 0 && out[len - 1] == '=')
    len--;
  out[len] = '\0';
  return out;
}

/* The target an id names (NULL: not one of ours). */
static char *
id_target (const char *id, char rnd[17])
{
  if (id == NULL || strlen (id) < 18 || strlen (id) > 590 || id[16] != '-')
    return NULL;
  for (int i = 0; i < 16; i++)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
      return NULL;
  memcpy (rnd, id, 16);
  rnd[16] = '\0';
  const char *b = id + 17;
  size_t n = strlen (b);
  cleanup_free char *std = xmalloc (n + 4);
  for (size_t i = 0; i < n; i++)
    {
      char c = b[i];
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
        return NULL;
      std[i] = c == '-' ? '+' : c == '_' ? '/' : c;
    }
  while (n % 4)
    std[n++] = '=';
  std[n] = '\0';
  char *out = xcalloc (1, n + 1);
  int len = EVP_DecodeBlock ((unsigned char *) out, (unsigned char *) std, (int) n);
  if (len < 0)
    {
      free (out);
      return NULL;
    }
  out[len] = '\0';
  /* EVP_DecodeBlock keeps the padding's zero bytes. */
  return out;
}

/* ---- the upload ---- */

struct build_upload
{
  struct serve *srv;
  struct MHD_PostProcessor *pp;
  char *dir;
  int lock_fd;
  int ctx_fd;
  uint64_t ctx_len;
  char quad[4];
  int nq;
  bool padded, bad_base64, too_big, has_context;
  struct ohbox_buf target;
  json_t *tags;
  struct ohbox_buf field; /* a tag being read */
  char *field_key;
  char rnd[17];
};

static bool
b64_char (char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
}

static void
b64_quad (struct build_upload *bu)
{
  if (bu->padded)
    {
      bu->bad_base64 = true; /* data after the padding */
      return;
    }
  unsigned char out[3];
  int pads = (bu->quad[3] == '=') + (bu->quad[2] == '=');
  if (bu->quad[0] == '=' || bu->quad[1] == '=' || (bu->quad[2] == '=' && bu->quad[3] != '='))
    {
      bu->bad_base64 = true;
      return;
    }
  if (EVP_DecodeBlock (out, (unsigned char *) bu->quad, 4) != 3)
    {
      bu->bad_base64 = true;
      return;
    }
  bu->padded = pads > 0;
  size_t n = 3 - (size_t) pads;
  if (bu->ctx_len + n > bu->srv->cfg->max_build_context)
    {
      bu->too_big = true;
      return;
    }
  if (ohbox_write_all (bu->ctx_fd, out, n) < 0)
    bu->too_big = true;
  bu->ctx_len += n;
}

static void
context_data (struct build_upload *bu, const char *data, size_t len)
{
  bu->has_context = true;
  for (size_t i = 0; i < len && !bu->bad_base64 && !bu->too_big; i++)
    {
      char c = data[i];
      if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
        continue;
      if (!b64_char (c))
        {
          bu->bad_base64 = true;
          break;
        }
      bu->quad[bu->nq++] = c;
      if (bu->nq == 4)
        {
          b64_quad (bu);
          bu->nq = 0;
        }
    }
}

static enum MHD_Result
post_iter (void *cls, enum MHD_ValueKind kind, const char *key, const char *filename, const char *content_type,
           const char *transfer_encoding, const char *data, uint64_t off, size_t size)
{
  (void) kind;
  (void) filename;
  (void) content_type;
  (void) transfer_encoding;
  struct build_upload *bu = cls;
  if (key == NULL)
    return MHD_YES;
  if (strcmp (key, "context") == 0)
    {
      context_data (bu, data, size);
      return bu->bad_base64 || bu->too_big ? MHD_NO : MHD_YES;
    }
  struct ohbox_buf *to = NULL;
  if (strcmp (key, "target_image") == 0)
    to = &bu->target;
  else if (strcmp (key, "tags") == 0)
    {
      /* A new tag begins at offset 0. */
      if (off == 0 && bu->field_key)
        {
          json_array_append_new (bu->tags, json_stringn (bu->field.data ? bu->field.data : "", bu->field.len));
          bu->field.len = 0;
        }
      free (bu->field_key);
      bu->field_key = xstrdup (key);
      to = &bu->field;
    }
  else
    return MHD_YES; /* other fields are ignored */
  if (to->len + size > MAX_FIELD || json_array_size (bu->tags) >= MAX_TAGS)
    {
      bu->too_big = true;
      return MHD_NO;
    }
  ohbox_buf_append (to, data, size);
  return MHD_YES;
}

static void
random_hex (char out[17])
{
  unsigned char r[8];
  if (getrandom (r, sizeof r, 0) != (ssize_t) sizeof r)
    memset (r, 0, sizeof r);
  for (int i = 0; i < 8; i++)
    snprintf (out + 2 * i, 3, "%02x", r[i]);
}

struct build_upload *
build_upload_new (struct serve *srv, struct MHD_Connection *mc, unsigned *status, char **detail)
{
  ohbox_error_t e = NULL;
  if (ohbox_dl_crypto_load (&e) < 0)
    {
      *status = 500;
      *detail = xstrdup (e->msg);
      ohbox_error_release (&e);
      return NULL;
    }
  struct build_upload *bu = xcalloc (1, sizeof *bu);
  bu->srv = srv;
  bu->ctx_fd = bu->lock_fd = -1;
  bu->tags = json_array ();
  random_hex (bu->rnd);
  bu->pp = MHD_create_post_processor (mc, 64 * 1024, post_iter, bu);
  if (bu->pp == NULL)
    {
      *status = 400;
      *detail = xstrdup ("/build takes multipart/form-data: `context` (base64 of a tar.gz), `target_image`, `tags`");
      build_upload_free (bu);
      return NULL;
    }
  bu->dir = xasprintf ("%s/" BUILD_DIR_PREFIX "%s", srv->tmp_dir, bu->rnd);
  int dfd = -1;
  if (mkdir (bu->dir, 0700) < 0 || (dfd = open (bu->dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC)) < 0
      || (bu->lock_fd = ohbox_lock_file (dfd, "lock", false, false, &e)) < 0
      || (bu->ctx_fd = openat (dfd, "context.tar.gz", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600)) < 0)
    {
      *status = 500;
      *detail = xasprintf ("cannot make the build's directory `%s`: %s", bu->dir, e ? e->msg : strerror (errno));
      ohbox_error_release (&e);
      if (dfd >= 0)
        close (dfd);
      build_upload_free (bu);
      return NULL;
    }
  close (dfd);
  return bu;
}

bool
build_upload_data (struct build_upload *bu, const char *data, size_t len)
{
  if (MHD_post_process (bu->pp, data, len) != MHD_YES && !bu->too_big && !bu->bad_base64)
    bu->bad_base64 = true; /* a malformed form */
  return !bu->too_big;
}

void
build_upload_free (struct build_upload *bu)
{
  if (bu == NULL)
    return;
  if (bu->pp)
    MHD_destroy_post_processor (bu->pp);
  if (bu->ctx_fd >= 0)
    close (bu->ctx_fd);
  if (bu->dir)
    {
      /* Not handed to a build: nothing of it stays. */
      ohbox_error_t e = NULL;
      ohbox_rm_rf_at (AT_FDCWD, bu->dir, &e);
      ohbox_error_release (&e);
      free (bu->dir);
    }
  if (bu->lock_fd >= 0)
    close (bu->lock_fd);
  ohbox_buf_free (&bu->target);
  ohbox_buf_free (&bu->field);
  free (bu->field_key);
  json_decref (bu->tags);
  free (bu);
}

/* A name images can be stored under: a reference with a tag. */
static bool
valid_target (const char *s, char **why)
{
  if (!valid_image_name (s, why))
    return false;
  struct ohbox_reference *ref = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_reference_parse (s, &ref, &e) < 0)
    {
      *why = xstrdup (e->msg);
      ohbox_error_release (&e);
      return false;
    }
  bool ok = ref->digest == NULL;
  ohbox_reference_free (ref);
  if (!ok)
    *why = xstrdup ("must be a name with a tag, not a digest");
  return ok;
}

static void
queue_build (struct serve *srv, struct build *b)
{
  struct builds *bs = srv->builds;
  pthread_mutex_lock (&bs->lock);
  b->next = bs->head;
  bs->head = b;
  pthread_cond_signal (&bs->cond);
  pthread_mutex_unlock (&bs->lock);
}

void
build_upload_finish (struct build_upload *bu, struct reply *out)
{
  if (bu->field_key)
    json_array_append_new (bu->tags, json_stringn (bu->field.data ? bu->field.data : "", bu->field.len));
  if (bu->bad_base64 || (bu->nq != 0 && !bu->padded))
    {
      reply_error (out, 400, "context", "`context` must be base64 text of a tar.gz (context.tar.gz)");
      return;
    }
  if (!bu->has_context || bu->ctx_len == 0)
    {
      reply_error (out, 400, "context", "`context` is missing or empty");
      return;
    }
  cleanup_free char *target = xstrndup (bu->target.data ? bu->target.data : "", bu->target.len);
  cleanup_free char *why = NULL;
  if (!valid_target (target, &why))
    {
      reply_error (out, 400, "target_image", "`target_image` %s", why);
      return;
    }
  size_t i;
  json_t *t;
  json_array_foreach (bu->tags, i, t)
  {
    free (why);
    why = NULL;
    if (!valid_target (json_string_value (t), &why))
      {
        reply_error (out, 400, "tags", "tag `%.128s` %s", json_string_value (t), why);
        return;
      }
  }
  close (bu->ctx_fd);
  bu->ctx_fd = -1;
  struct build *b = xcalloc (1, sizeof *b);
  cleanup_free char *enc = b64url (target);
  snprintf (b->id, sizeof b->id, "%s-%s", bu->rnd, enc);
  memcpy (b->rnd, bu->rnd, sizeof b->rnd);
  b->target = steal_pointer (&target);
  b->tags = json_incref (bu->tags);
  b->dir = steal_pointer (&bu->dir);
  b->lock_fd = bu->lock_fd;
  bu->lock_fd = -1;
  b->log = json_array ();
  b->status = B_QUEUED;
  serve_log (bu->srv, json_pack ("{s:s, s:s, s:s, s:I}", "event", "build-queued", "build_id", b->id, "target",
                                 b->target, "context_bytes", (json_int_t) bu->ctx_len));
  out->status = 200;
  out->json = json_pack ("{s:s, s:s}", "build_id", b->id, "image", b->target);
  queue_build (bu->srv, b);
}

/* ---- the worker (starter.c forks it) ---- */

struct wlog
{
  void (*log) (const char *line);
};

static void
notice (void *ud, const char *msg)
{
  struct wlog *w = ud;
  w->log (msg);
}

/* The image the Dockerfile's first FROM names. */
static int
dockerfile_from (int ctxfd, char **ret, size_t *others, ohbox_error_t *err)
{
  int fd = ohbox_openat_beneath (ctxfd, "Dockerfile", O_RDONLY | O_CLOEXEC, 0, 0);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "the build context has no Dockerfile (a regular file at its top)");
  cleanup_free char *text = NULL;
  size_t len;
  int r = ohbox_read_fd (fd, "the Dockerfile", DOCKERFILE_MAX, &text, &len, err);
  close (fd);
  if (r < 0)
    return -1;
  /* Continuation lines joined, comments and blank lines dropped. */
  *ret = NULL;
  *others = 0;
  char *save = NULL;
  struct ohbox_buf inst = { 0 };
  for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      while (*line == ' ' || *line == '\t')
        line++;
      if (*line == '#' && inst.len == 0)
        continue;
      size_t l = strlen (line);
      while (l && (line[l - 1] == '\r' || line[l - 1] == ' '))
        line[--l] = '\0';
      bool cont = l && line[l - 1] == '\\';
      if (cont)
        line[--l] = '\0';
      ohbox_buf_append (&inst, line, l);
      ohbox_buf_append (&inst, " ", 1);
      if (cont)
        continue;
      ohbox_buf_append (&inst, "", 1);
      char *s = inst.data;
      inst.len = 0;
      if (strncasecmp (s, "FROM", 4) != 0 || (s[4] != ' ' && s[4] != '\t'))
        {
          if (*s && *s != ' ')
            (*others)++;
          continue;
        }
      if (*ret)
        {
          (*others)++;
          continue;
        }
      char *tok, *save2 = NULL;
      for (tok = strtok_r (s + 4, " \t", &save2); tok && strncmp (tok, "--", 2) == 0;
           tok = strtok_r (NULL, " \t", &save2))
        ;
      if (tok == NULL)
        break;
      if (strchr (tok, '$'))
        {
          ohbox_buf_free (&inst);
          return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                              "the Dockerfile's FROM `%s` uses a build argument: "
                              "ohbox serve does not expand them",
                              tok);
        }
      *ret = xstrdup (tok);
    }
  ohbox_buf_free (&inst);
  if (*ret == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the Dockerfile has no FROM");
  return 0;
}

static int
store_names (struct ohbox_store *s, const char *id, json_t *names, void (*log) (const char *), ohbox_error_t *err)
{
  size_t i;
  json_t *n;
  json_array_foreach (names, i, n)
  {
    struct ohbox_reference *ref = NULL;
    if (ohbox_reference_parse (json_string_value (n), &ref, err) < 0)
      return -1;
    cleanup_free char *name = ohbox_reference_string (ref);
    ohbox_reference_free (ref);
    if (ohbox_store_set_ref (s, name, id, err) < 0)
      return -1;
    cleanup_free char *l = xasprintf ("stored as %s", name);
    log (l);
  }
  return 0;
}

int build_job (struct serve *srv, json_t *job, void (*log) (const char *line), ohbox_error_t *err);

int
build_job (struct serve *srv, json_t *job, void (*log) (const char *line), ohbox_error_t *err)
{
  const char *dir = json_string_value (json_object_get (job, "dir"));
  cleanup_close int dfd = dir ? open (dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC) : -1;
  if (dfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "open the build's directory");
  /* Held while it works: a server started again sees the build running. */
  cleanup_close int lock = ohbox_lock_file (dfd, "lock", false, false, err);
  if (lock < 0)
    return -1;
  cleanup_close int tgz = openat (dfd, "context.tar.gz", O_RDONLY | O_CLOEXEC);
  if (tgz < 0 || mkdirat (dfd, "context", 0700) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_STORE, "open the build context");
  cleanup_close int ctx = openat (dfd, "context", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  struct stat st;
  fstat (tgz, &st);
  struct ohbox_layer_options lo = { .privileged = false, .max_uncompressed = 4 * (uint64_t) st.st_size + (1 << 20) };
  char diffid[OHBOX_DIGEST_LEN + 1];
  struct ohbox_layer_stats stats = { 0 };
  if (ctx < 0 || ohbox_layer_unpack (tgz, ctx, &lo, diffid, &stats, err) < 0)
    return ohbox_error_prefix (err, "the build context");
  cleanup_free char *l1 = xasprintf ("build context: %llu entries, %llu bytes", (unsigned long long) stats.entries,
                                     (unsigned long long) stats.uncompressed_size);
  log (l1);
  cleanup_free char *base = NULL;
  size_t others = 0;
  if (dockerfile_from (ctx, &base, &others, err) < 0)
    return -1;
  cleanup_free char *l2 = xasprintf ("Dockerfile: FROM %s", base);
  log (l2);
  cleanup_free char *l3 = xasprintf ("ohbox serve builds the runtime image from FROM alone: the Dockerfile's %zu "
                                     "other instruction(s) (RUN, COPY, ...) are not run; the image is the base "
                                     "plus ohbox's executor, which serves the action protocol in place of "
                                     "OpenHands' server",
                                     others);
  log (l3);
  struct ohbox_store *store = NULL;
  if (ohbox_store_open (srv->cfg->store_root, &store, err) < 0)
    return -1;
  struct ohbox_runtime_image_facts f = { 0 };
  cleanup_free char *id = NULL;
  ohbox_error_t e = NULL;
  int r = 0;
  if (ohbox_runtime_image_facts (store, base, false, &f, &e) == 0 && f.runtime)
    {
      id = xstrdup (f.id);
      log ("FROM names a runtime image of this store: used as it is");
    }
  else
    {
      struct wlog w = { log };
      struct ohbox_build_options bo = { .pull = &srv->cfg->pull, .notice = notice, .userdata = &w };
      struct ohbox_build_result res;
      memset (&res, 0, sizeof res);
      r = ohbox_build (store, base, &bo, &res, err);
      if (r == 0)
        {
          id = xstrdup (res.id);
          cleanup_free char *l = xasprintf ("%s %s", ohbox_build_path_name (res.path), res.image);
          log (l);
        }
      else
        ohbox_error_prefix (err, "build the runtime image of `%s`", base);
      ohbox_build_result_clear (&res);
    }
  ohbox_runtime_image_facts_clear (&f);
  ohbox_error_release (&e);
  if (r == 0)
    {
      json_t *names = json_pack ("[s]", json_string_value (json_object_get (job, "target")));
      json_array_extend (names, json_object_get (job, "tags"));
      r = store_names (store, id, names, log, err);
      json_decref (names);
    }
  ohbox_store_close (store);
  if (r < 0)
    return -1;
  json_t *ans = json_pack ("{s:s, s:s}", "image", json_string_value (json_object_get (job, "target")), "id", id);
  char *s = json_dumps (ans, JSON_COMPACT);
  json_decref (ans);
  size_t n = strlen (s);
  s[n] = '\n';
  ohbox_write_all (1, s, n + 1);
  free (s);
  return 0;
}

/* ---- the runner ---- */

struct log_target
{
  struct builds *bs;
  struct build *b;
};

static void
on_log_line (json_t *line, void *data)
{
  struct log_target *t = data;
  pthread_mutex_lock (&t->bs->lock);
  if (json_array_size (t->b->log) < LOG_LINES_MAX)
    json_array_append (t->b->log, json_object_get (line, "log"));
  pthread_mutex_unlock (&t->bs->lock);
}

static struct build *
next_queued (struct builds *bs)
{
  struct build *found = NULL;
  for (struct build *b = bs->head; b; b = b->next)
    if (b->status == B_QUEUED)
      found = b; /* the oldest: the list is newest first */
  return found;
}

/* B, unlinked: its lock (held while it is queued or runs) released. */
static void
build_free (struct build *b)
{
  if (b->lock_fd >= 0)
    close (b->lock_fd);
  free (b->target);
  json_decref (b->tags);
  free (b->dir);
  free (b->error);
  free (b->image_id);
  json_decref (b->log);
  free (b);
}

/* Finished builds beyond KEEP_FINISHED are forgotten (their images stay). */
static void
expire (struct builds *bs)
{
  unsigned kept = 0;
  for (struct build **p = &bs->head; *p;)
    {
      struct build *b = *p;
      if ((b->status == B_SUCCESS || b->status == B_FAILURE) && ++kept > KEEP_FINISHED)
        {
          *p = b->next;
          build_free (b);
          continue;
        }
      p = &b->next;
    }
}

static void *
runner_main (void *arg)
{
  struct serve *srv = arg;
  struct builds *bs = srv->builds;
  pthread_mutex_lock (&bs->lock);
  for (;;)
    {
      struct build *b;
      while ((b = next_queued (bs)) == NULL && !srv->quitting)
        pthread_cond_wait (&bs->cond, &bs->lock);
      if (b == NULL)
        break;
      b->status = B_RUNNING;
      json_t *job = json_pack ("{s:s, s:s, s:s, s:O}", "type", "build", "dir", b->dir, "target", b->target, "tags",
                               b->tags);
      pthread_mutex_unlock (&bs->lock);
      int fd = -1;
      json_t *res = NULL;
      ohbox_error_t e = NULL;
      int r = starter_job (srv->starter, job, &fd, &e);
      json_decref (job);
      /* b stays: only this thread removes finished builds (expire). */
      struct log_target lt = { bs, b };
      if (r == 0)
        r = starter_result (fd, on_log_line, &lt, &res, &e);
      pthread_mutex_lock (&bs->lock);
      if (r == 0)
        {
          b->status = B_SUCCESS;
          b->image_id = xstrdup (json_string_value (json_object_get (res, "id")) ?: "");
          bs->ok++;
        }
      else
        {
          b->status = B_FAILURE;
          b->error = xstrdup (e->msg);
          bs->failed++;
        }
      serve_log (srv, json_pack ("{s:s, s:s, s:s, s:s?}", "event", "build-finished", "build_id", b->id, "status",
                                 r == 0 ? "SUCCESS" : "FAILURE", "error", r == 0 ? NULL : e->msg));
      ohbox_error_release (&e);
      json_decref (res);
      ohbox_error_t e2 = NULL;
      ohbox_rm_rf_at (AT_FDCWD, b->dir, &e2);
      ohbox_error_release (&e2);
      if (b->lock_fd >= 0)
        close (b->lock_fd);
      b->lock_fd = -1;
      expire (bs);
    }
  pthread_mutex_unlock (&bs->lock);
  return NULL;
}

static const char *
status_name (enum build_status s)
{
  switch (s)
    {
    case B_QUEUED:
      return "QUEUED";
    case B_RUNNING:
      return "RUNNING";
    case B_SUCCESS:
      return "SUCCESS";
    case B_FAILURE:
      return "FAILURE";
    }
  return "INTERNAL_ERROR";
}

/* A build this server does not know: from its id and what is left of it. */
static void
unknown_build (struct serve *srv, const char *id, struct reply *out)
{
  char rnd[17];
  cleanup_free char *target = id_target (id, rnd);
  if (target == NULL)
    {
      reply_error (out, 404, "build_id", "no build `%.64s`", id);
      return;
    }
  cleanup_free char *dir = xasprintf ("%s/" BUILD_DIR_PREFIX "%s", srv->tmp_dir, rnd);
  cleanup_close int dfd = open (dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  ohbox_error_t e = NULL;
  if (dfd >= 0)
    {
      int l = ohbox_lock_file (dfd, "lock", true, true, &e);
      ohbox_error_release (&e);
      if (l == -2)
        {
          out->status = 200;
          out->json = json_pack ("{s:s, s:s, s:s}", "build_id", id, "status", "RUNNING", "image", target);
          return;
        }
      if (l >= 0)
        close (l);
    }
  struct ohbox_store *store;
  cleanup_free char *image_id = NULL;
  bool exists = false;
  if (ohbox_store_open (srv->cfg->store_root, &store, &e) == 0)
    {
      exists = ohbox_store_resolve (store, target, &image_id, &e) == 0;
      ohbox_store_close (store);
    }
  ohbox_error_release (&e);
  out->status = 200;
  if (exists)
    out->json = json_pack ("{s:s, s:s, s:s}", "build_id", id, "status", "SUCCESS", "image", target);
  else
    out->json = json_pack ("{s:s, s:s, s:s, s:s}", "build_id", id, "status", "FAILURE", "image", target, "error",
                           "the build is unknown to this server (it was started again while the build ran?) and "
                           "its image is not in the store: build again");
}

void
builds_status (struct serve *srv, const char *id, struct reply *out)
{
  if (id == NULL || *id == '\0' || strlen (id) > 600)
    {
      reply_error (out, 400, "build_id", "the query parameter `build_id` is required");
      return;
    }
  struct builds *bs = srv->builds;
  pthread_mutex_lock (&bs->lock);
  struct build *b = bs->head;
  while (b && strcmp (b->id, id) != 0)
    b = b->next;
  if (b)
    {
      out->status = 200;
      out->json = json_pack ("{s:s, s:s, s:s, s:O}", "build_id", b->id, "status", status_name (b->status), "image",
                             b->target, "log", b->log);
      if (b->error)
        json_object_set_new (out->json, "error", json_string (b->error));
      if (b->image_id)
        json_object_set_new (out->json, "image_id", json_string (b->image_id));
    }
  pthread_mutex_unlock (&bs->lock);
  if (b == NULL)
    unknown_build (srv, id, out);
}

/* Directories of builds whose server and worker are gone. */
static void
remove_stale_dirs (struct serve *srv)
{
  cleanup_dir DIR *d = opendir (srv->tmp_dir);
  struct dirent *de;
  while (d && (de = readdir (d)))
    {
      if (strncmp (de->d_name, BUILD_DIR_PREFIX, strlen (BUILD_DIR_PREFIX)) != 0)
        continue;
      cleanup_close int dfd = openat (dirfd (d), de->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      struct stat st;
      if (dfd < 0 || fstat (dfd, &st) < 0 || st.st_uid != geteuid ())
        continue;
      ohbox_error_t e = NULL;
      int l = ohbox_lock_file (dfd, "lock", true, true, &e);
      ohbox_error_release (&e);
      if (l < 0)
        continue;
      ohbox_rm_rf_at (dirfd (d), de->d_name, &e);
      ohbox_error_release (&e);
      close (l);
    }
}

int
builds_init (struct serve *srv, ohbox_error_t *err)
{
  struct builds *bs = xcalloc (1, sizeof *bs);
  pthread_mutex_init (&bs->lock, NULL);
  pthread_cond_init (&bs->cond, NULL);
  srv->builds = bs;
  remove_stale_dirs (srv);
  if (pthread_create (&bs->runner, NULL, runner_main, srv) != 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "start the build thread");
  bs->runner_started = true;
  return 0;
}

void
builds_free (struct serve *srv)
{
  struct builds *bs = srv->builds;
  if (bs == NULL)
    return;
  if (bs->runner_started)
    {
      pthread_mutex_lock (&bs->lock);
      pthread_cond_broadcast (&bs->cond);
      pthread_mutex_unlock (&bs->lock);
      pthread_join (bs->runner, NULL);
    }
  while (bs->head)
    {
      struct build *b = bs->head;
      bs->head = b->next;
      if (b->status == B_QUEUED && b->dir)
        {
          ohbox_error_t e = NULL;
          ohbox_rm_rf_at (AT_FDCWD, b->dir, &e);
          ohbox_error_release (&e);
        }
      build_free (b);
    }
  pthread_mutex_destroy (&bs->lock);
  pthread_cond_destroy (&bs->cond);
  free (bs);
  srv->builds = NULL;
}

void
builds_text_metrics (struct serve *srv, struct ohbox_buf *b)
{
  struct builds *bs = srv->builds;
  unsigned running = 0, queued = 0;
  pthread_mutex_lock (&bs->lock);
  for (struct build *x = bs->head; x; x = x->next)
    {
      running += x->status == B_RUNNING;
      queued += x->status == B_QUEUED;
    }
  cleanup_free char *t = xasprintf ("# HELP ohbox_serve_builds Builds by state.\n"
                                    "# TYPE ohbox_serve_builds gauge\n"
                                    "ohbox_serve_builds{state=\"running\"} %u\n"
                                    "ohbox_serve_builds{state=\"queued\"} %u\n"
                                    "# HELP ohbox_serve_builds_finished_total Builds finished, by result.\n"
                                    "# TYPE ohbox_serve_builds_finished_total counter\n"
                                    "ohbox_serve_builds_finished_total{result=\"success\"} %llu\n"
                                    "ohbox_serve_builds_finished_total{result=\"failure\"} %llu\n",
                                    running, queued, (unsigned long long) bs->ok, (unsigned long long) bs->failed);
  pthread_mutex_unlock (&bs->lock);
  ohbox_buf_append (b, t, strlen (t));
}
