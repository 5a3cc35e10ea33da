/* store_gc.c: garbage collection. Runs with locks/store held exclusively,
 * so no other ohbox process is pulling, unpacking or naming anything while it
 * decides what is unreferenced: partial downloads and temporaries it finds
 * belong to processes that are gone. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_internal.h"
#include "sandbox/snapshot.h"
#include "common/utils.h"

struct gc_ctx
{
  struct ohbox_store *s;
  json_t *blobs;  /* referenced blob hex -> true */
  json_t *layers; /* referenced layer hex -> true */
  struct ohbox_gc_stats *stats;
};

static void
mark (json_t *set, const char *digest)
{
  if (digest && ohbox_digest_is_valid (digest))
    json_object_set_new (set, ohbox_digest_hex (digest), json_true ());
}

void
store_mark_image (json_t *rec, json_t *blobs, json_t *layers)
{
  mark (blobs, json_string_value (json_object_get (rec, "id")));
  mark (blobs, json_string_value (json_object_get (rec, "config_digest")));
  mark (blobs, json_string_value (json_object_get (rec, "index_digest")));
  size_t i;
  json_t *l;
  json_array_foreach (json_object_get (rec, "layers"), i, l)
  {
    mark (blobs, json_string_value (json_object_get (l, "digest")));
    mark (layers, json_string_value (json_object_get (l, "diff_id")));
  }
}

int
store_mark_layer (const char *diff_id, void *layers)
{
  mark (layers, diff_id);
  return 0;
}

int
store_lock_op (struct ohbox_store *s, int op, ohbox_error_t *err)
{
  while (flock (s->lock_fd, op) < 0)
    if (errno != EINTR)
      return ohbox_error_errno (err, "lock store `%s`", s->root);
  return 0;
}

/* Disk usage of a tree, without following symlinks. */
static uint64_t
tree_size (int dirfd, const char *name)
{
  struct stat st;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return 0;
  uint64_t total = (uint64_t) st.st_blocks * 512;
  if (!S_ISDIR (st.st_mode))
    return total;
  int fd = openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return total;
  DIR *d = fdopendir (fd);
  if (d == NULL)
    {
      close (fd);
      return total;
    }
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    if (strcmp (de->d_name, ".") && strcmp (de->d_name, ".."))
      total += tree_size (fd, de->d_name);
  closedir (d);
  return total;
}

/* Removes every entry of DIR (relative to the store) for which KEEP says no. */
static int
sweep (struct ohbox_store *s, const char *dir, bool (*keep) (struct gc_ctx *, const char *), struct gc_ctx *c,
       uint64_t *count, ohbox_error_t *err)
{
  cleanup_close int dfd = openat (s->dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    {
      if (errno == ENOENT)
        return 0;
      return ohbox_error_errno (err, "open `%s/%s`", s->root, dir);
    }
  int fd2 = dup (dfd);
  if (fd2 < 0)
    return ohbox_error_errno (err, "dup");
  cleanup_dir DIR *d = fdopendir (fd2);
  if (d == NULL)
    {
      close (fd2);
      return ohbox_error_errno (err, "open `%s/%s`", s->root, dir);
    }
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      if (keep && keep (c, de->d_name))
        continue;
      uint64_t size = tree_size (dfd, de->d_name);
      if (ohbox_rm_rf_at (dfd, de->d_name, err) < 0)
        return ohbox_error_prefix (err, "remove `%s/%s/%s`", s->root, dir, de->d_name);
      if (count)
        (*count)++;
      c->stats->bytes_freed += size;
    }
  return 0;
}

static bool
keep_blob (struct gc_ctx *c, const char *name)
{
  return json_object_get (c->blobs, name) != NULL;
}

static bool
keep_layer (struct gc_ctx *c, const char *name)
{
  return json_object_get (c->layers, name) != NULL;
}

static bool
keep_store_lock (struct gc_ctx *c, const char *name)
{
  /* The store and refs locks are held or waited on by other processes;
   * per-object locks are free now (GC holds the store exclusively). */
  return strcmp (name, "store") == 0 || strcmp (name, "refs") == 0;
}

/* What a killed `ohbox build` leaves: closures it was still making
 * (build/closures/tmp-PID; finished ones are renamed to their digest). */
static bool
keep_finished_closure (struct gc_ctx *c, const char *name)
{
  (void) c;
  return strncmp (name, "tmp-", 4) != 0;
}

/* What a killed ohbox_write_file_atomic leaves: its `.tmp-NAME-PID-N`
 * (utils.c); every other entry is the store's own. */
static bool
keep_unless_atomic_temp (struct gc_ctx *c, const char *name)
{
  (void) c;
  return strncmp (name, ".tmp-", 5) != 0;
}

static int
gc_locked (struct ohbox_store *s, bool untagged_images, struct ohbox_gc_stats *stats, ohbox_error_t *err)
{
  json_t *images = NULL;
  if (ohbox_store_list_images (s, &images, err) < 0)
    return -1;
  struct gc_ctx c = { .s = s, .blobs = json_object (), .layers = json_object (), .stats = stats };
  int ret = -1;
  size_t i;
  json_t *rec;
  json_array_foreach (images, i, rec)
  {
    const char *id = json_string_value (json_object_get (rec, "id"));
    if (untagged_images && json_array_size (json_object_get (rec, "names")) == 0)
      {
        if (ohbox_store_remove_image (s, id, err) < 0)
          goto out;
        stats->images_removed++;
        continue;
      }
    store_mark_image (rec, c.blobs, c.layers);
  }
  /* Layers of existing sandboxes (snapshot.h) are kept even without an image. */
  if (ohbox_snapshot_layers_in_use (s, store_mark_layer, c.layers, err) < 0)
    goto out;
  if (sweep (s, "blobs/sha256", keep_blob, &c, &stats->blobs_removed, err) < 0
      || sweep (s, "layers/sha256", keep_layer, &c, &stats->layers_removed, err) < 0
      || sweep (s, "ingest", NULL, &c, &stats->partials_removed, err) < 0
      || sweep (s, "tmp", NULL, &c, &stats->partials_removed, err) < 0
      || sweep (s, "build/closures", keep_finished_closure, &c, &stats->partials_removed, err) < 0
      || sweep (s, ".", keep_unless_atomic_temp, &c, &stats->partials_removed, err) < 0
      || sweep (s, "build", keep_unless_atomic_temp, &c, &stats->partials_removed, err) < 0
      || sweep (s, "locks", keep_store_lock, &c, NULL, err) < 0)
    goto out;
  ret = 0;
out:
  json_decref (images);
  json_decref (c.blobs);
  json_decref (c.layers);
  return ret;
}

int
ohbox_store_gc (struct ohbox_store *s, bool untagged_images, struct ohbox_gc_stats *stats, ohbox_error_t *err)
{
  memset (stats, 0, sizeof *stats);
  if (store_lock_op (s, LOCK_EX, err) < 0)
    return -1;
  int ret = gc_locked (s, untagged_images, stats, err);
  cleanup_error ohbox_error_t ignored = NULL;
  store_lock_op (s, LOCK_SH, &ignored);
  return ret;
}
