/* check.c: the store half of `ohbox check` (see check.h); the state half
 * is in check_state.c.
 *
 * The store lock is held exclusively for the whole check, as GC holds it:
 * no other ohbox process is pulling, unpacking or naming anything, so a
 * partial download, a temporary or a lock file found now belongs to a
 * process that is gone, and removing it cannot break anyone. */
#include "config.h"
#include "store/check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/sandbox_internal.h"
#include "sandbox/snapshot.h"
#include "store/store_internal.h"
#include "common/utils.h"

/* Image records and names a check looks at, at most: bounds memory on a
 * damaged store (a store with more is reported, not walked further). */
#define CHECK_MAX_ENTRIES (1 << 20)

struct store_check
{
  struct ohbox_check_ctx *c;
  json_t *corrupt; /* blob hex -> true: present but damaged */
  json_t *blobs;   /* referenced blob hex -> true */
  json_t *layers;  /* referenced layer hex -> true */
  unsigned n_blobs, n_layers, n_images, n_names;
};

json_t *
ohbox_check_add (struct ohbox_check_ctx *c, const char *kind, const char *where, bool repairable, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *what = xvasprintf (fmt, ap);
  va_end (ap);
  json_t *f = json_pack ("{s:s, s:s, s:s, s:b, s:b}", "kind", kind, "where", where, "what", what, "repairable",
                         repairable, "repaired", 0);
  free (what);
  json_array_append_new (c->findings, f);
  return f;
}

void
ohbox_check_repaired (json_t *f, int r, ohbox_error_t *err)
{
  if (r == 0)
    json_object_set_new (f, "repaired", json_true ());
  else
    json_object_set_new (f, "repair_error", json_string (*err ? (*err)->msg : "unknown error"));
  ohbox_error_release (err);
}

/* Opens DIR of the store for reading its entries; NULL (no error) when missing. */
static int
open_dir (struct ohbox_store *s, const char *dir, DIR **ret, ohbox_error_t *err)
{
  *ret = NULL;
  int fd = openat (s->dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    {
      if (errno == ENOENT)
        return 0;
      return ohbox_error_errno (err, "open `%s/%s`", s->root, dir);
    }
  *ret = fdopendir (fd);
  if (*ret == NULL)
    {
      close (fd);
      return ohbox_error_errno (err, "open `%s/%s`", s->root, dir);
    }
  return 0;
}

static bool
is_dot (const char *n)
{
  return strcmp (n, ".") == 0 || strcmp (n, "..") == 0;
}

/* Hashes DIRFD/NAME; 0 and OUT filled, or -1 with ERR. */
static int
hash_file (int dirfd, const char *name, const char *what, char out[OHBOX_DIGEST_LEN + 1], ohbox_error_t *err)
{
  cleanup_close int fd = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return ohbox_error_errno (err, "open `%s`", what);
  return ohbox_sha256_fd (fd, what, out, NULL, err);
}

static void
remove_entry (struct store_check *sc, json_t *f, int dfd, const char *name)
{
  ohbox_error_t e = NULL;
  ohbox_check_repaired (f, ohbox_rm_rf_at (dfd, name, &e), &e);
  (void) sc;
}

/* Every blob must hash to its name: a damaged one is never trusted (the
 * images needing it are reported incomplete afterwards). */
static int
check_blobs (struct store_check *sc, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, "blobs/sha256", &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      if (is_dot (de->d_name))
        continue;
      cleanup_free char *where = xasprintf ("%s/blobs/sha256/%s", c->s->root, de->d_name);
      struct stat st;
      if (!ohbox_digest_hex_is_valid (de->d_name) || fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
          || !S_ISREG (st.st_mode))
        {
          json_t *f = ohbox_check_add (c, "stray-file", where, true,
                                       "not a blob (a blob is a regular file named "
                                       "by its sha256)");
          if (c->repair)
            remove_entry (sc, f, dirfd (d), de->d_name);
          continue;
        }
      sc->n_blobs++;
      char got[OHBOX_DIGEST_LEN + 1];
      ohbox_error_t e = NULL;
      if (hash_file (dirfd (d), de->d_name, where, got, &e) < 0)
        {
          ohbox_check_add (c, "unreadable-blob", where, false, "%s", e->msg);
          ohbox_error_release (&e);
          json_object_set_new (sc->corrupt, de->d_name, json_true ());
          continue;
        }
      if (strcmp (ohbox_digest_hex (got), de->d_name) != 0)
        {
          json_t *f = ohbox_check_add (c, "corrupt-blob", where, true, "its content hashes to %s (%lld bytes)", got,
                                       (long long) st.st_size);
          json_object_set_new (sc->corrupt, de->d_name, json_true ());
          if (c->repair)
            remove_entry (sc, f, dirfd (d), de->d_name);
        }
    }
  return 0;
}

static bool
blob_ok (struct store_check *sc, const char *digest)
{
  return ohbox_store_has_blob (sc->c->s, digest) && json_object_get (sc->corrupt, ohbox_digest_hex (digest)) == NULL;
}

/* One image record: everything it names must be there and sound. */
static void
check_image (struct store_check *sc, const char *id, json_t *rec)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_free char *where = xasprintf ("%s/images/%s.json", c->s->root, ohbox_digest_hex (id));
  const char *cfg = json_string_value (json_object_get (rec, "config_digest"));
  const char *index = json_string_value (json_object_get (rec, "index_digest"));
  json_t *layers = json_object_get (rec, "layers");
  const char *missing = NULL;
  store_mark_image (rec, sc->blobs, sc->layers);
  if (!blob_ok (sc, id))
    missing = id;
  else if (cfg == NULL || !blob_ok (sc, cfg))
    missing = cfg ? cfg : "(no config digest)";
  else if (index && !blob_ok (sc, index))
    missing = index;
  size_t i;
  json_t *l;
  json_array_foreach (layers, i, l)
  {
    const char *dg = json_string_value (json_object_get (l, "digest"));
    const char *diff = json_string_value (json_object_get (l, "diff_id"));
    if (dg == NULL || diff == NULL || !ohbox_digest_is_valid (dg) || !ohbox_digest_is_valid (diff))
      {
        missing = missing ? missing : "(a layer without digest or diff_id)";
        continue;
      }
    if (!blob_ok (sc, dg))
      {
        /* The unpacked layer may be fine, but save and push need the blob. */
        missing = missing ? missing : dg;
        continue;
      }
    if (ohbox_store_has_layer (c->s, diff))
      continue;
    cleanup_free char *lwhere = ohbox_store_layer_path (c->s, diff);
    json_t *f = ohbox_check_add (c, "missing-layer", lwhere, true, "layer %s of image %.19s is not unpacked", diff, id);
    if (c->repair)
      {
        /* Unpacked again from its verified blob, checked against its DiffID. */
        struct ohbox_layer_options lo = { .privileged = ohbox_store_privileged (c->s) };
        ohbox_error_t e = NULL;
        ohbox_check_repaired (f, ohbox_store_unpack_layer (c->s, dg, diff, &lo, NULL, &e), &e);
      }
  }
  if (missing)
    {
      json_t *f = ohbox_check_add (c, "incomplete-image", where, false,
                                   "image %s needs %s, which is missing or "
                                   "damaged",
                                   id, missing);
      json_object_set_new (f, "hint", json_string ("pull the image again, or remove it with `ohbox rmi`"));
    }
}

static int
check_images (struct store_check *sc, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, "images", &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL && sc->n_images < CHECK_MAX_ENTRIES)
    {
      if (is_dot (de->d_name))
        continue;
      cleanup_free char *where = xasprintf ("%s/images/%s", c->s->root, de->d_name);
      size_t n = strlen (de->d_name);
      char hex[65] = "";
      if (n == 64 + 5 && strcmp (de->d_name + 64, ".json") == 0)
        memcpy (hex, de->d_name, 64);
      if (!ohbox_digest_hex_is_valid (hex))
        {
          /* A record being written (.tmp of an atomic write) by a process
           * that is gone, or a stray file. */
          json_t *f = ohbox_check_add (c, "stray-file", where, true, "not an image record");
          if (c->repair)
            remove_entry (sc, f, dirfd (d), de->d_name);
          continue;
        }
      sc->n_images++;
      char id[OHBOX_DIGEST_LEN + 1];
      snprintf (id, sizeof id, "sha256:%s", hex);
      json_t *rec = NULL;
      ohbox_error_t e = NULL;
      if (ohbox_store_get_image (c->s, id, &rec, &e) < 0 || !json_is_object (rec)
          || !json_is_array (json_object_get (rec, "layers")))
        {
          json_t *f = ohbox_check_add (c, "corrupt-image-record", where, true, "%s",
                                       e ? e->msg : "not an image record");
          ohbox_error_release (&e);
          json_object_set_new (f, "hint",
                               json_string ("the repair removes the record and its names: pull the "
                                            "image again"));
          if (c->repair)
            ohbox_check_repaired (f, ohbox_store_remove_image (c->s, id, &e), &e);
          json_decref (rec);
          continue;
        }
      check_image (sc, id, rec);
      json_decref (rec);
    }
  return 0;
}

static int
check_names (struct store_check *sc, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  json_t *refs = NULL;
  {
    cleanup_close int lock = store_refs_lock (c->s, false, err);
    if (lock < 0)
      return -1;
    ohbox_error_t e = NULL;
    if (store_refs_read (c->s, &refs, &e) < 0)
      {
        cleanup_free char *where = xasprintf ("%s/refs.json", c->s->root);
        json_t *f = ohbox_check_add (c, "corrupt-names", where, false, "%s", e->msg);
        json_object_set_new (f, "hint",
                             json_string ("restore refs.json from a backup, or remove it (every image "
                                          "loses its names) and pull again"));
        ohbox_error_release (&e);
        return 0;
      }
  }
  cleanup_free char *where = xasprintf ("%s/refs.json", c->s->root);
  const char *name;
  json_t *v;
  json_object_foreach (refs, name, v)
  {
    sc->n_names++;
    const char *id = json_string_value (v);
    json_t *rec = NULL;
    ohbox_error_t e = NULL;
    if (id && ohbox_store_get_image (c->s, id, &rec, &e) == 0)
      {
        json_decref (rec);
        continue;
      }
    ohbox_error_release (&e);
    json_t *f = ohbox_check_add (c, "dangling-name", where, true, "`%s` names image %s, which does not exist", name,
                                 id ? id : "(not a string)");
    if (c->repair)
      ohbox_check_repaired (f, ohbox_store_remove_ref (c->s, name, &e) < 0 ? -1 : 0, &e);
  }
  json_decref (refs);
  return 0;
}

/* ROOT/sandboxes/<id>: the writable layer of a sandbox, removed with its
 * state (first: a removal that dies leaves the state, which a later rm or
 * check finishes). One whose state is gone leaked: a removal by hand, state
 * lost with /run (a reboot keeps the store), the sandbox's processes maybe
 * still running. The layer names its state directory
 * (ohbox_snapshot_sandbox_gone); one of an older ohbox, which does not, is
 * taken for this runtime's (its state root derives from the store's path). */
static int
check_sandbox_layers (struct store_check *sc, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  if (ohbox_snapshot_layers_in_use (c->s, store_mark_layer, sc->layers, err) < 0)
    return -1;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, "sandboxes", &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      if (is_dot (de->d_name))
        continue;
      cleanup_free char *owner = NULL;
      int gone = ohbox_snapshot_sandbox_gone (c->s, de->d_name, &owner);
      if (gone < 0)
        {
          struct stat st;
          if (c->rt == NULL)
            continue;
          gone = fstatat (c->rt->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0;
          owner = xasprintf ("%s/%s", c->rt->root, de->d_name);
        }
      if (!gone)
        continue;
      /* Its processes first: they may still be writing to the layer. */
      if (c->rt)
        ohbox_check_sandbox_gone (c, de->d_name);
      cleanup_free char *where = xasprintf ("%s/sandboxes/%s", c->s->root, de->d_name);
      json_t *f = ohbox_check_add (c, "orphan-sandbox-layer", where, true,
                                   "writable layer of sandbox `%.12s`, "
                                   "whose state `%s` is gone",
                                   de->d_name, owner);
      if (c->repair)
        {
          ohbox_error_t e = NULL;
          ohbox_check_repaired (f, ohbox_snapshot_remove (c->s, de->d_name, &e), &e);
        }
    }
  return 0;
}

/* Blobs and layers nothing references: what a killed pull or build
 * stored before the image record that would have named them. */
static int
check_unreferenced (struct store_check *sc, const char *dir, json_t *set, const char *kind, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, dir, &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      if (is_dot (de->d_name))
        continue;
      if (strcmp (dir, "layers/sha256") == 0)
        sc->n_layers++;
      if (json_object_get (set, de->d_name) || json_object_get (sc->corrupt, de->d_name))
        continue;
      cleanup_free char *where = xasprintf ("%s/%s/%s", c->s->root, dir, de->d_name);
      struct stat st;
      if (fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue; /* removed by a repair above */
      json_t *f = ohbox_check_add (c, kind, where, true, "no image%s uses it",
                                   strcmp (dir, "layers/sha256") == 0 ? " and no sandbox" : "");
      if (c->repair)
        remove_entry (sc, f, dirfd (d), de->d_name);
    }
  return 0;
}

/* Everything in DIR is a leftover of a dead process (we hold the store
 * exclusively); KIND/WHAT describe it. */
static int
check_leftovers (struct store_check *sc, const char *dir, const char *kind, const char *what, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, dir, &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      if (is_dot (de->d_name))
        continue;
      cleanup_free char *where = xasprintf ("%s/%s/%s", c->s->root, dir, de->d_name);
      json_t *f = ohbox_check_add (c, kind, where, true, "%s", what);
      if (c->repair)
        remove_entry (sc, f, dirfd (d), de->d_name);
    }
  return 0;
}

/* locks/blob-HEX and locks/layer-HEX stay after their object is made
 * (unlinking a lock file races with its next user); one whose object never
 * came is what a killed or failed process left. */
static int
check_locks (struct store_check *sc, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, "locks", &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      const char *n = de->d_name;
      if (is_dot (n) || strcmp (n, "store") == 0 || strcmp (n, "refs") == 0)
        continue;
      char digest[OHBOX_DIGEST_LEN + 1] = "";
      bool present = false;
      if (strncmp (n, "blob-", 5) == 0 && ohbox_digest_hex_is_valid (n + 5))
        {
          snprintf (digest, sizeof digest, "sha256:%s", n + 5);
          present = ohbox_store_has_blob (c->s, digest);
        }
      else if (strncmp (n, "layer-", 6) == 0 && ohbox_digest_hex_is_valid (n + 6))
        {
          snprintf (digest, sizeof digest, "sha256:%s", n + 6);
          present = ohbox_store_has_layer (c->s, digest);
        }
      if (present)
        continue;
      /* Free now (we hold the store exclusively, and object locks are only
       * taken under the shared store lock): never held by a live process. */
      cleanup_free char *where = xasprintf ("%s/locks/%s", c->s->root, n);
      json_t *f = ohbox_check_add (c, "stale-lock", where, true, "lock of %s, which is not in the store",
                                   digest[0] ? digest : "an unknown object");
      if (c->repair)
        {
          ohbox_error_t e = NULL;
          ohbox_check_repaired (f,
                                unlinkat (dirfd (d), n, 0) < 0 && errno != ENOENT
                                  ? ohbox_error_errno (&e, "remove `%s`", where)
                                  : 0,
                                &e);
        }
    }
  return 0;
}

/* build/closures/tmp-PID: a closure being made by build PID. */
static int
check_build_area (struct store_check *sc, ohbox_error_t *err)
{
  struct ohbox_check_ctx *c = sc->c;
  cleanup_dir DIR *d = NULL;
  if (open_dir (c->s, "build/closures", &d, err) < 0)
    return -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      if (strncmp (de->d_name, "tmp-", 4) != 0)
        continue;
      /* A build running now holds the store shared (we waited for it). */
      pid_t pid = (pid_t) atol (de->d_name + 4);
      if (pid > 0 && kill (pid, 0) == 0 && pid != getpid ())
        {
          cleanup_free char *comm_path = xasprintf ("/proc/%d/comm", (int) pid);
          cleanup_free char *comm = NULL;
          ohbox_error_t e = NULL;
          if (ohbox_read_file_at (AT_FDCWD, comm_path, 64, &comm, NULL, &e) == 0 && strncmp (comm, "ohbox", 5) == 0)
            continue;
          ohbox_error_release (&e);
        }
      cleanup_free char *where = xasprintf ("%s/build/closures/%s", c->s->root, de->d_name);
      json_t *f = ohbox_check_add (c, "build-temporary", where, true,
                                   "executor closure half-made by a build that "
                                   "is gone");
      if (c->repair)
        remove_entry (sc, f, dirfd (d), de->d_name);
    }
  return 0;
}

static int
check_store (struct ohbox_check_ctx *c, json_t *checked, ohbox_error_t *err)
{
  struct store_check sc = { .c = c, .corrupt = json_object (), .blobs = json_object (), .layers = json_object () };
  int ret = -1;
  if (c->s->lock_fd < 0)
    {
      ohbox_error (err, OHBOX_ERR_USAGE, 0, "check store `%s`: the store lock was released", c->s->root);
      goto out;
    }
  if (store_lock_op (c->s, LOCK_EX, err) < 0)
    goto out;
  if (check_blobs (&sc, err) < 0 || check_images (&sc, err) < 0 || check_names (&sc, err) < 0
      || check_sandbox_layers (&sc, err) < 0
      || check_unreferenced (&sc, "blobs/sha256", sc.blobs, "unreferenced-blob", err) < 0
      || check_unreferenced (&sc, "layers/sha256", sc.layers, "unreferenced-layer", err) < 0
      || check_leftovers (&sc, "ingest", "partial-download", "a download interrupted before it was complete", err) < 0
      || check_leftovers (&sc, "tmp", "temporary", "a half-unpacked layer or temporary of a process that is gone", err)
           < 0
      || check_build_area (&sc, err) < 0 || check_locks (&sc, err) < 0)
    goto unlock;
  json_object_set_new (checked, "blobs", json_integer (sc.n_blobs));
  json_object_set_new (checked, "layers", json_integer (sc.n_layers));
  json_object_set_new (checked, "images", json_integer (sc.n_images));
  json_object_set_new (checked, "names", json_integer (sc.n_names));
  ret = 0;
unlock:
  {
    ohbox_error_t e = NULL;
    store_lock_op (c->s, LOCK_SH, &e);
    ohbox_error_release (&e);
  }
out:
  json_decref (sc.corrupt);
  json_decref (sc.blobs);
  json_decref (sc.layers);
  return ret;
}

int
ohbox_check (struct ohbox_store *s, struct ohbox_runtime *rt, bool repair, json_t **ret, ohbox_error_t *err)
{
  struct ohbox_check_ctx c = { .s = s, .rt = rt, .repair = repair, .findings = json_array () };
  json_t *checked = json_object ();
  json_object_set_new (checked, "sandboxes", json_integer (0));
  c.checked = checked;
  /* State first: reconciling a dead sandbox may free its writable layer,
   * which the store half then sees as it is. */
  if ((rt && ohbox_check_state (&c, err) < 0) || check_store (&c, checked, err) < 0)
    {
      json_decref (c.findings);
      json_decref (checked);
      return -1;
    }
  size_t i, repaired = 0;
  json_t *f;
  json_array_foreach (c.findings, i, f) if (json_is_true (json_object_get (f, "repaired"))) repaired++;
  *ret = json_pack ("{s:o, s:o, s:I, s:I, s:I}", "findings", c.findings, "checked", checked, "found",
                    (json_int_t) json_array_size (c.findings), "repaired", (json_int_t) repaired, "remaining",
                    (json_int_t) (json_array_size (c.findings) - repaired));
  return 0;
}
