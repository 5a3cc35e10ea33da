/* store_images.c: image records (images/<hex>.json) and names (refs.json).
 *
 * refs.json is one JSON object {"refs": {NAME: ID}}, rewritten atomically
 * under locks/refs. Image records never change once written; a record exists
 * only after every blob and layer it names is in the store. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/reference.h"
#include "store/store_internal.h"
#include "common/utils.h"

static void
cleanup_json_fn (json_t **j)
{
  json_decref (*j);
}
#define cleanup_json __attribute__ ((cleanup (cleanup_json_fn)))

int
store_refs_lock (struct ohbox_store *s, bool exclusive, ohbox_error_t *err)
{
  return ohbox_lock_file (s->dirfd, "locks/refs", exclusive, false, err);
}

int
store_refs_read (struct ohbox_store *s, json_t **out, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (s->dirfd, STORE_REFS_FILE, STORE_REFS_MAX_SIZE, &text, &len, err) < 0)
    {
      if ((*err)->errno_value == ENOENT)
        {
          ohbox_error_release (err);
          *out = json_object ();
          return 0;
        }
      return -1;
    }
  json_error_t jerr;
  json_t *doc = json_loadb (text, len, 0, &jerr);
  json_t *refs = doc ? json_object_get (doc, "refs") : NULL;
  if (!json_is_object (refs))
    {
      json_decref (doc);
      return ohbox_error (err, OHBOX_ERR_STORE, 0, "`%s/refs.json` is damaged (%s); run `ohbox prune` after fixing it",
                          s->root, doc ? "no \"refs\" object" : jerr.text);
    }
  json_incref (refs);
  json_decref (doc);
  *out = refs;
  return 0;
}

int
store_refs_write (struct ohbox_store *s, json_t *refs, ohbox_error_t *err)
{
  cleanup_json json_t *doc = json_pack ("{s:O}", "refs", refs);
  cleanup_free char *text = json_dumps (doc, JSON_INDENT (1) | JSON_SORT_KEYS);
  if (text == NULL)
    abort ();
  return ohbox_write_file_atomic (s->dirfd, STORE_REFS_FILE, text, strlen (text), 0600, err);
}

static void
record_rel_path (const char *id, char buf[128])
{
  snprintf (buf, 128, "images/%s.json", ohbox_digest_hex (id));
}

int
ohbox_store_put_image (struct ohbox_store *s, json_t *record, ohbox_error_t *err)
{
  const char *id = json_string_value (json_object_get (record, "id"));
  if (ohbox_digest_validate (id, err) < 0)
    return ohbox_error_prefix (err, "image record");
  char rel[128];
  record_rel_path (id, rel);
  cleanup_free char *text = json_dumps (record, JSON_INDENT (1) | JSON_SORT_KEYS);
  if (text == NULL)
    abort ();
  return ohbox_write_file_atomic (s->dirfd, rel, text, strlen (text), 0600, err);
}

int
ohbox_store_get_image (struct ohbox_store *s, const char *id, json_t **out, ohbox_error_t *err)
{
  if (ohbox_digest_validate (id, err) < 0)
    return -1;
  char rel[128];
  record_rel_path (id, rel);
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (ohbox_read_file_at (s->dirfd, rel, STORE_RECORD_MAX_SIZE, &text, &len, err) < 0)
    {
      if ((*err)->errno_value == ENOENT)
        {
          ohbox_error_release (err);
          return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "image %s is not in the store", id);
        }
      return -1;
    }
  json_error_t jerr;
  json_t *rec = json_loadb (text, len, 0, &jerr);
  if (!json_is_object (rec))
    {
      json_decref (rec);
      return ohbox_error (err, OHBOX_ERR_STORE, 0, "image record `%s/%s` is damaged: %s", s->root, rel,
                          rec ? "not an object" : jerr.text);
    }
  *out = rec;
  return 0;
}

json_t *
ohbox_store_names_of (struct ohbox_store *s, const char *id)
{
  json_t *names = json_array ();
  cleanup_error ohbox_error_t err = NULL;
  cleanup_close int lock = store_refs_lock (s, false, &err);
  cleanup_json json_t *refs = NULL;
  if (lock < 0 || store_refs_read (s, &refs, &err) < 0)
    return names;
  const char *name;
  json_t *v;
  json_object_foreach (refs, name, v)
  {
    if (json_is_string (v) && strcmp (json_string_value (v), id) == 0)
      json_array_append_new (names, json_string (name));
  }
  return names;
}

/* Calls FN for every valid image id in images/. */
static int
for_each_image_id (struct ohbox_store *s, int (*fn) (void *ud, const char *id, ohbox_error_t *err), void *ud,
                   ohbox_error_t *err)
{
  int fd = openat (s->dirfd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s/images`", s->root);
  cleanup_dir DIR *d = fdopendir (fd);
  if (d == NULL)
    {
      close (fd);
      return ohbox_error_errno (err, "open `%s/images`", s->root);
    }
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      size_t n = strlen (de->d_name);
      if (n != 64 + 5 || strcmp (de->d_name + 64, ".json") != 0)
        continue;
      char id[OHBOX_DIGEST_LEN + 1];
      snprintf (id, sizeof id, "sha256:%.64s", de->d_name);
      if (!ohbox_digest_is_valid (id))
        continue;
      if (fn (ud, id, err) < 0)
        return -1;
    }
  return 0;
}

struct list_ctx
{
  struct ohbox_store *s;
  json_t *out;
  json_t *refs;
};

static int
list_one (void *ud, const char *id, ohbox_error_t *err)
{
  struct list_ctx *c = ud;
  json_t *rec = NULL;
  if (ohbox_store_get_image (c->s, id, &rec, err) < 0)
    return -1;
  json_t *names = json_array ();
  const char *name;
  json_t *v;
  json_object_foreach (c->refs, name, v)
  {
    if (json_is_string (v) && strcmp (json_string_value (v), id) == 0)
      json_array_append_new (names, json_string (name));
  }
  json_object_set_new (rec, "names", names);
  json_array_append_new (c->out, rec);
  return 0;
}

int
ohbox_store_list_images (struct ohbox_store *s, json_t **out, ohbox_error_t *err)
{
  cleanup_close int lock = store_refs_lock (s, false, err);
  if (lock < 0)
    return -1;
  cleanup_json json_t *refs = NULL;
  if (store_refs_read (s, &refs, err) < 0)
    return -1;
  struct list_ctx c = { .s = s, .out = json_array (), .refs = refs };
  if (for_each_image_id (s, list_one, &c, err) < 0)
    {
      json_decref (c.out);
      return -1;
    }
  *out = c.out;
  return 0;
}

int
ohbox_store_set_ref (struct ohbox_store *s, const char *name, const char *image_id, ohbox_error_t *err)
{
  if (ohbox_digest_validate (image_id, err) < 0)
    return -1;
  cleanup_close int lock = store_refs_lock (s, true, err);
  if (lock < 0)
    return -1;
  cleanup_json json_t *refs = NULL;
  if (store_refs_read (s, &refs, err) < 0)
    return -1;
  const char *old = json_string_value (json_object_get (refs, name));
  if (old && strcmp (old, image_id) == 0)
    return 0;
  json_object_set_new (refs, name, json_string (image_id));
  return store_refs_write (s, refs, err);
}

int
ohbox_store_remove_ref (struct ohbox_store *s, const char *name, ohbox_error_t *err)
{
  cleanup_close int lock = store_refs_lock (s, true, err);
  if (lock < 0)
    return -1;
  cleanup_json json_t *refs = NULL;
  if (store_refs_read (s, &refs, err) < 0)
    return -1;
  if (json_object_get (refs, name) == NULL)
    return 0;
  json_object_del (refs, name);
  if (store_refs_write (s, refs, err) < 0)
    return -1;
  return 1;
}

int
ohbox_store_remove_image (struct ohbox_store *s, const char *id, ohbox_error_t *err)
{
  if (ohbox_digest_validate (id, err) < 0)
    return -1;
  cleanup_close int lock = store_refs_lock (s, true, err);
  if (lock < 0)
    return -1;
  cleanup_json json_t *refs = NULL;
  if (store_refs_read (s, &refs, err) < 0)
    return -1;
  const char *name;
  json_t *v;
  void *tmp;
  bool changed = false;
  json_object_foreach_safe (refs, tmp, name, v)
  {
    if (json_is_string (v) && strcmp (json_string_value (v), id) == 0)
      {
        json_object_del (refs, name);
        changed = true;
      }
  }
  if (changed && store_refs_write (s, refs, err) < 0)
    return -1;
  char rel[128];
  record_rel_path (id, rel);
  if (unlinkat (s->dirfd, rel, 0) < 0 && errno != ENOENT)
    return ohbox_error_errno (err, "remove image record `%s/%s`", s->root, rel);
  snprintf (rel, sizeof rel, "needs-auth/%s", ohbox_digest_hex (id));
  if (unlinkat (s->dirfd, rel, 0) < 0 && errno != ENOENT)
    return ohbox_error_errno (err, "remove `%s/%s`", s->root, rel);
  return 0;
}

int
ohbox_store_mark_needs_credentials (struct ohbox_store *s, const char *id, ohbox_error_t *err)
{
  if (ohbox_digest_validate (id, err) < 0)
    return -1;
  char rel[128];
  snprintf (rel, sizeof rel, "needs-auth/%s", ohbox_digest_hex (id));
  /* A store made before the mark existed lacks the directory. */
  if (mkdirat (s->dirfd, "needs-auth", 0700) < 0 && errno != EEXIST)
    return ohbox_error_errno (err, "create `%s/needs-auth`", s->root);
  cleanup_close int fd = openat (s->dirfd, rel, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return ohbox_error_errno (err, "create `%s/%s`", s->root, rel);
  return 0;
}

bool
ohbox_store_needs_credentials (struct ohbox_store *s, const char *id)
{
  if (!ohbox_digest_is_valid (id))
    return false;
  char rel[128];
  snprintf (rel, sizeof rel, "needs-auth/%s", ohbox_digest_hex (id));
  return faccessat (s->dirfd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

struct prefix_ctx
{
  const char *prefix;
  size_t len;
  char *match;
  int count;
};

static int
prefix_one (void *ud, const char *id, ohbox_error_t *err)
{
  struct prefix_ctx *c = ud;
  if (strncmp (ohbox_digest_hex (id), c->prefix, c->len) == 0)
    {
      c->count++;
      free (c->match);
      c->match = xstrdup (id);
    }
  return 0;
}

static bool
is_hex_prefix (const char *s)
{
  size_t n = strlen (s);
  if (n < 4 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isxdigit ((unsigned char) s[i]) || isupper ((unsigned char) s[i]))
      return false;
  return true;
}

/* The id a name points at: WHAT as written, or normalised (busybox ->
 * docker.io/library/busybox:latest), or for NAME@DIGEST an image whose id is
 * DIGEST. NULL when no name matches. */
static char *
resolve_name (struct ohbox_store *s, json_t *refs, const char *what)
{
  const char *id = json_string_value (json_object_get (refs, what));
  if (id)
    return xstrdup (id);
  cleanup_error ohbox_error_t ignored = NULL;
  cleanup_reference struct ohbox_reference *ref = NULL;
  if (ohbox_reference_parse (what, &ref, &ignored) < 0)
    return NULL;
  cleanup_free char *norm = ohbox_reference_string (ref);
  id = json_string_value (json_object_get (refs, norm));
  if (id)
    return xstrdup (id);
  if (ref->digest)
    {
      char rel[128];
      record_rel_path (ref->digest, rel);
      if (faccessat (s->dirfd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return xstrdup (ref->digest);
    }
  return NULL;
}

int
ohbox_store_resolve_name (struct ohbox_store *s, const char *what, char **image_id, ohbox_error_t *err)
{
  cleanup_close int lock = store_refs_lock (s, false, err);
  if (lock < 0)
    return -1;
  cleanup_json json_t *refs = NULL;
  if (store_refs_read (s, &refs, err) < 0)
    return -1;
  char *id = resolve_name (s, refs, what);
  if (id && ohbox_digest_is_valid (id))
    {
      *image_id = id;
      return 0;
    }
  free (id);
  return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no image named `%s` in the store", what);
}

bool
ohbox_store_names_stamp (const char *root, struct ohbox_store_names_stamp *out)
{
  memset (out, 0, sizeof *out);
  cleanup_free char *path = xasprintf ("%s/" STORE_REFS_FILE, root);
  struct stat st;
  if (stat (path, &st) < 0)
    return false;
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  out->size = (uint64_t) st.st_size;
  out->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  out->ctime_ns = (int64_t) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
  return true;
}

bool
ohbox_store_names_stamp_equal (const struct ohbox_store_names_stamp *a, const struct ohbox_store_names_stamp *b)
{
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns
         && a->ctime_ns == b->ctime_ns;
}

int
ohbox_store_resolve (struct ohbox_store *s, const char *what, char **image_id, ohbox_error_t *err)
{
  /* 1. A name. */
  {
    cleanup_error ohbox_error_t e = NULL;
    if (ohbox_store_resolve_name (s, what, image_id, &e) == 0)
      return 0;
    if (e->kind != OHBOX_ERR_NOT_FOUND)
      {
        ohbox_error_move (err, &e);
        return -1;
      }
  }
  /* 2. A full id or a unique prefix of one. */
  const char *hex = strncmp (what, "sha256:", 7) == 0 ? what + 7 : what;
  if (is_hex_prefix (hex))
    {
      struct prefix_ctx c = { .prefix = hex, .len = strlen (hex) };
      if (for_each_image_id (s, prefix_one, &c, err) < 0)
        {
          free (c.match);
          return -1;
        }
      if (c.count == 1)
        {
          *image_id = c.match;
          return 0;
        }
      free (c.match);
      if (c.count > 1)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                            "image id prefix `%s` is ambiguous: %d images match; give more characters", what, c.count);
    }
  return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "image `%s` is not in the store; pull it first (see `ohbox images`)",
                      what);
}
