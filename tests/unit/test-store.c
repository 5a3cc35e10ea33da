/* test-store.c: the content-addressed store: atomic verified blobs, resume
 * of partial downloads, locks, names, resolution, GC, layer unpack. */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "unit.h"
#include "common/utils.h"

static char *tmproot;

static struct ohbox_store *
open_fresh (void)
{
  static int n;
  char *root = xasprintf ("%s/store-%d", tmproot, n++);
  struct ohbox_store *s = NULL;
  ohbox_error_t err = NULL;
  if (ohbox_store_open (root, &s, &err) < 0)
    {
      fprintf (stderr, "open: %s\n", err->msg);
      exit (1);
    }
  free (root);
  return s;
}

static bool
exists (struct ohbox_store *s, const char *rel)
{
  struct stat st;
  return fstatat (ohbox_store_dirfd (s), rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void
test_put_and_read_blob (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  char d[OHBOX_DIGEST_LEN + 1];
  CHECK (ohbox_store_put_blob (s, NULL, "hello", 5, d, &err) == 0);
  CHECK_STR (d, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  CHECK (ohbox_store_has_blob (s, d));
  char *data = NULL;
  size_t len = 0;
  CHECK (ohbox_store_read_blob (s, d, 100, &data, &len, &err) == 0);
  CHECK (len == 5 && memcmp (data, "hello", 5) == 0);
  free (data);
  /* Bounded read. */
  CHECK (ohbox_store_read_blob (s, d, 4, &data, &len, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY);
  ohbox_error_release (&err);
  /* Wrong expected digest: refused, nothing stored. */
  const char *other = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
  CHECK (ohbox_store_put_blob (s, other, "x", 1, NULL, &err) < 0 && err->kind == OHBOX_ERR_INTEGRITY);
  ohbox_error_release (&err);
  CHECK (!ohbox_store_has_blob (s, other));
  ohbox_store_close (s);
}

static void
test_digest_validated_before_paths (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  struct ohbox_blob_writer *w = NULL;
  CHECK (ohbox_store_blob_begin (s, "sha256:../../../etc/passwd", -1, true, &w, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && w == NULL);
  ohbox_error_release (&err);
  int fd = -1;
  CHECK (ohbox_store_open_blob (s, "sha256:../../x", &fd, &err) < 0 && fd == -1);
  ohbox_error_release (&err);
  CHECK (!ohbox_store_has_blob (s, "sha256:AB"));
  ohbox_store_close (s);
}

static void
test_damaged_blob_detected (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  char d[OHBOX_DIGEST_LEN + 1];
  CHECK (ohbox_store_put_blob (s, NULL, "{\"a\":1}", 7, d, &err) == 0);
  char *path = ohbox_store_blob_path (s, d);
  FILE *f = fopen (path, "w");
  fputs ("{\"a\":2}", f);
  fclose (f);
  free (path);
  char *data = NULL;
  CHECK (ohbox_store_read_blob (s, d, 100, &data, NULL, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && strstr (err->msg, "damaged"));
  ohbox_error_release (&err);
  ohbox_store_close (s);
}

static void
test_writer_resume_and_verify (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  const char *content = "0123456789abcdefghij";
  char d[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer (content, 20, d);

  struct ohbox_blob_writer *w = NULL;
  CHECK (ohbox_store_blob_begin (s, d, 20, true, &w, &err) == 0 && w != NULL);
  CHECK (ohbox_blob_writer_offset (w) == 0);
  CHECK (ohbox_blob_writer_write (w, content, 8, &err) == 0);
  ohbox_blob_writer_abort (w, true); /* an interrupted download */
  CHECK (!ohbox_store_has_blob (s, d));
  char partial[128];
  snprintf (partial, sizeof partial, "ingest/%s.partial", ohbox_digest_hex (d));
  CHECK (exists (s, partial));

  /* The next attempt resumes at byte 8 and the digest still checks out. */
  CHECK (ohbox_store_blob_begin (s, d, 20, true, &w, &err) == 0 && w != NULL);
  CHECK (ohbox_blob_writer_offset (w) == 8, "offset %lld", (long long) ohbox_blob_writer_offset (w));
  CHECK (ohbox_blob_writer_write (w, content + 8, 12, &err) == 0);
  CHECK (ohbox_blob_writer_commit (w, &err) == 0, "%s", err ? err->msg : "");
  CHECK (ohbox_store_has_blob (s, d));
  CHECK (!exists (s, partial));

  /* Already present: begin says so with no writer. */
  CHECK (ohbox_store_blob_begin (s, d, 20, true, &w, &err) == 0 && w == NULL);
  ohbox_store_close (s);
}

static void
test_writer_rejects_bad_data (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  char d[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer ("good data", 9, d);
  struct ohbox_blob_writer *w = NULL;
  /* Corrupted byte: digest mismatch at commit, partial deleted. */
  CHECK (ohbox_store_blob_begin (s, d, 9, true, &w, &err) == 0 && w);
  CHECK (ohbox_blob_writer_write (w, "goXd data", 9, &err) == 0);
  CHECK (ohbox_blob_writer_commit (w, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && strstr (err->msg, d) != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  CHECK (!ohbox_store_has_blob (s, d));
  char partial[128];
  snprintf (partial, sizeof partial, "ingest/%s.partial", ohbox_digest_hex (d));
  CHECK (!exists (s, partial));
  /* Too much data: refused as it arrives. */
  CHECK (ohbox_store_blob_begin (s, d, 9, true, &w, &err) == 0 && w);
  CHECK (ohbox_blob_writer_write (w, "good data and more", 18, &err) < 0 && err->kind == OHBOX_ERR_INTEGRITY);
  ohbox_error_release (&err);
  ohbox_blob_writer_abort (w, false);
  /* Too little: size mismatch at commit. */
  CHECK (ohbox_store_blob_begin (s, d, 9, true, &w, &err) == 0 && w);
  CHECK (ohbox_blob_writer_write (w, "good", 4, &err) == 0);
  CHECK (ohbox_blob_writer_commit (w, &err) < 0 && strstr (err->msg, "size mismatch"));
  ohbox_error_release (&err);
  CHECK (!ohbox_store_has_blob (s, d));
  ohbox_store_close (s);
}

static void
test_blob_lock_excludes_other_process (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  char d[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer ("locked", 6, d);
  struct ohbox_blob_writer *w = NULL;
  CHECK (ohbox_store_blob_begin (s, d, 6, true, &w, &err) == 0 && w);
  pid_t pid = fork ();
  if (pid == 0)
    {
      /* flock locks belong to open file descriptions: a fresh open in the
       * child contends like another process would. */
      struct ohbox_store *s2 = NULL;
      ohbox_error_t e2 = NULL;
      if (ohbox_store_open (ohbox_store_root (s), &s2, &e2) < 0)
        _exit (10);
      struct ohbox_blob_writer *w2 = NULL;
      int r = ohbox_store_blob_begin (s2, d, 6, false, &w2, &e2);
      _exit (r == 1 && w2 == NULL ? 0 : 11);
    }
  int status = 0;
  waitpid (pid, &status, 0);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0, "child status %d", status);
  CHECK (ohbox_blob_writer_write (w, "locked", 6, &err) == 0);
  CHECK (ohbox_blob_writer_commit (w, &err) == 0);
  ohbox_store_close (s);
}

static json_t *
fake_record (struct ohbox_store *s, const char *content, char id_out[OHBOX_DIGEST_LEN + 1],
             char blob_out[OHBOX_DIGEST_LEN + 1])
{
  ohbox_error_t err = NULL;
  ohbox_store_put_blob (s, NULL, content, strlen (content), id_out, &err);
  char *layer_content = xasprintf ("layer of %s", content);
  ohbox_store_put_blob (s, NULL, layer_content, strlen (layer_content), blob_out, &err);
  free (layer_content);
  return json_pack ("{s:s, s:s, s:[{s:s, s:s, s:i, s:s}], s:i}", "id", id_out, "config_digest", id_out, "layers",
                    "digest", blob_out, "diff_id", blob_out, "size", 1, "media_type", "x", "size", 1);
}

static void
test_names_resolve_and_remove (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  char id[OHBOX_DIGEST_LEN + 1], blob[OHBOX_DIGEST_LEN + 1];
  json_t *rec = fake_record (s, "image one", id, blob);
  CHECK (ohbox_store_put_image (s, rec, &err) == 0);
  json_decref (rec);
  CHECK (ohbox_store_set_ref (s, "docker.io/library/busybox:latest", id, &err) == 0);
  CHECK (ohbox_store_set_ref (s, "127.0.0.1:5000/x/y:1", id, &err) == 0);

  char *got = NULL;
  CHECK (ohbox_store_resolve (s, "busybox", &got, &err) == 0, "%s", err ? err->msg : "");
  CHECK_STR (got, id);
  free (got);
  CHECK (ohbox_store_resolve (s, "127.0.0.1:5000/x/y:1", &got, &err) == 0);
  free (got);
  char prefix[16];
  snprintf (prefix, sizeof prefix, "%.8s", id + 7);
  CHECK (ohbox_store_resolve (s, prefix, &got, &err) == 0);
  CHECK_STR (got, id);
  free (got);
  CHECK (ohbox_store_resolve (s, id, &got, &err) == 0);
  free (got);
  CHECK (ohbox_store_resolve (s, "nothere:1", &got, &err) < 0 && err->kind == OHBOX_ERR_NOT_FOUND);
  ohbox_error_release (&err);

  json_t *names = ohbox_store_names_of (s, id);
  CHECK (json_array_size (names) == 2);
  json_decref (names);
  json_t *list = NULL;
  CHECK (ohbox_store_list_images (s, &list, &err) == 0 && json_array_size (list) == 1);
  CHECK (json_array_size (json_object_get (json_array_get (list, 0), "names")) == 2);
  json_decref (list);

  CHECK (ohbox_store_remove_ref (s, "docker.io/library/busybox:latest", &err) == 1);
  CHECK (ohbox_store_remove_ref (s, "docker.io/library/busybox:latest", &err) == 0);
  CHECK (ohbox_store_remove_image (s, id, &err) == 0);
  CHECK (ohbox_store_resolve (s, "127.0.0.1:5000/x/y:1", &got, &err) < 0);
  ohbox_error_release (&err);
  ohbox_store_close (s);
}

static void
test_gc (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  char id1[OHBOX_DIGEST_LEN + 1], b1[OHBOX_DIGEST_LEN + 1], id2[OHBOX_DIGEST_LEN + 1], b2[OHBOX_DIGEST_LEN + 1];
  json_t *r1 = fake_record (s, "kept", id1, b1);
  json_t *r2 = fake_record (s, "untagged", id2, b2);
  CHECK (ohbox_store_put_image (s, r1, &err) == 0 && ohbox_store_put_image (s, r2, &err) == 0);
  json_decref (r1);
  json_decref (r2);
  CHECK (ohbox_store_set_ref (s, "localhost/kept:1", id1, &err) == 0);
  char stray[OHBOX_DIGEST_LEN + 1];
  CHECK (ohbox_store_put_blob (s, NULL, "stray", 5, stray, &err) == 0);
  /* Leftovers of a killed process. */
  int dfd = ohbox_store_dirfd (s);
  close (openat (dfd, "ingest/abc.partial", O_CREAT | O_WRONLY, 0600));
  mkdirat (dfd, "tmp/layer-x", 0700);
  mkdirat (dfd, "layers/sha256/0000000000000000000000000000000000000000000000000000000000000000", 0700);

  struct ohbox_gc_stats st;
  CHECK (ohbox_store_gc (s, false, &st, &err) == 0, "%s", err ? err->msg : "");
  CHECK (st.images_removed == 0 && st.blobs_removed == 1, "blobs removed %llu", (unsigned long long) st.blobs_removed);
  CHECK (ohbox_store_has_blob (s, id2) && !ohbox_store_has_blob (s, stray));
  CHECK (st.partials_removed == 2 && st.layers_removed == 1);
  CHECK (!exists (s, "ingest/abc.partial") && !exists (s, "tmp/layer-x"));

  CHECK (ohbox_store_gc (s, true, &st, &err) == 0);
  CHECK (st.images_removed == 1 && st.blobs_removed == 2);
  CHECK (ohbox_store_has_blob (s, id1) && ohbox_store_has_blob (s, b1));
  CHECK (!ohbox_store_has_blob (s, id2) && !ohbox_store_has_blob (s, b2));
  ohbox_store_close (s);
}

/* A small tar.gz with one file, written with libarchive. */
static size_t
make_layer (char *buf, size_t cap)
{
  struct archive *a = archive_write_new ();
  archive_write_set_format_pax_restricted (a);
  archive_write_add_filter_gzip (a);
  size_t used = 0;
  archive_write_open_memory (a, buf, cap, &used);
  struct archive_entry *e = archive_entry_new ();
  archive_entry_set_pathname (e, "etc/hello");
  archive_entry_set_filetype (e, AE_IFREG);
  archive_entry_set_perm (e, 0644);
  archive_entry_set_size (e, 6);
  archive_write_header (a, e);
  archive_write_data (a, "hello\n", 6);
  archive_entry_free (e);
  archive_write_close (a);
  archive_write_free (a);
  return used;
}

static void
test_unpack_layer (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  static char buf[1 << 16];
  size_t n = make_layer (buf, sizeof buf);
  char blob[OHBOX_DIGEST_LEN + 1];
  CHECK (ohbox_store_put_blob (s, NULL, buf, n, blob, &err) == 0);
  struct ohbox_layer_options lo = { 0 };
  struct ohbox_layer_stats st;
  /* A wrong DiffID: refused, nothing left behind. */
  const char *wrong = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
  CHECK (ohbox_store_unpack_layer (s, blob, wrong, &lo, &st, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && strstr (err->msg, wrong), "%s", err->msg);
  /* The message names the real DiffID: use it. */
  const char *p = strstr (err->msg, "hashes to ");
  CHECK (p != NULL);
  char diff_id[OHBOX_DIGEST_LEN + 1];
  snprintf (diff_id, sizeof diff_id, "%.71s", p + 10);
  ohbox_error_release (&err);
  CHECK (!ohbox_store_has_layer (s, wrong));
  int dfd = openat (ohbox_store_dirfd (s), "tmp", O_RDONLY | O_DIRECTORY);
  DIR *d = fdopendir (dfd);
  int entries = 0;
  struct dirent *de;
  while ((de = readdir (d)))
    entries += de->d_name[0] != '.';
  closedir (d);
  CHECK (entries == 0, "tmp/ has %d leftovers", entries);

  CHECK (ohbox_store_unpack_layer (s, blob, diff_id, &lo, &st, &err) == 0, "%s", err ? err->msg : "");
  CHECK (ohbox_store_has_layer (s, diff_id));
  char *path = ohbox_store_layer_path (s, diff_id);
  char *file = xasprintf ("%s/etc/hello", path);
  char *content = NULL;
  CHECK (ohbox_read_file_at (AT_FDCWD, file, 100, &content, NULL, &err) == 0);
  CHECK_STR (content, "hello\n");
  free (content);
  free (file);
  free (path);
  ohbox_store_close (s);
}

/* ---- unpacking a layer while its blob downloads ---- */

/* A download into the store's blob writer on a thread, and the wait_more
 * callback of the unpack that reads it (what pull.c does). */
struct download
{
  struct ohbox_store *s;
  const char *digest; /* the descriptor's */
  int64_t size;
  const char *data; /* what the registry sends */
  size_t len;
  const char *first; /* sent first, then dropped (a restart from zero) */
  size_t first_len;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool started; /* the writer (and its partial file) exists */
  size_t written;
  int state;         /* 0: running, 1: committed, -1: failed */
  bool end_wanted;   /* the unpack waits for the end alone */
  bool read_partial; /* the unpack read while the blob was incomplete */
};

static void
dl_set (struct download *d, size_t written, int state)
{
  pthread_mutex_lock (&d->lock);
  d->written = written;
  d->state = state;
  pthread_cond_broadcast (&d->cond);
  pthread_mutex_unlock (&d->lock);
}

/* After the first piece, until the unpack has come to the end of what is
 * written and asked for more (10 s at most): a loaded machine could
 * otherwise schedule the unpack only once the whole blob is there, and the
 * test would not test streaming. */
static void
dl_wait_reader (struct download *d)
{
  struct timespec until;
  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock (&d->lock);
  while (!d->read_partial)
    if (pthread_cond_timedwait (&d->cond, &d->lock, &until) != 0)
      break;
  pthread_mutex_unlock (&d->lock);
}

static int
dl_write (struct download *d, struct ohbox_blob_writer *w, const char *data, size_t len)
{
  ohbox_error_t err = NULL;
  for (size_t done = 0; done < len;)
    {
      size_t n = len - done < 16384 ? len - done : 16384;
      if (ohbox_blob_writer_write (w, data + done, n, &err) < 0)
        {
          ohbox_error_release (&err);
          return -1;
        }
      done += n;
      dl_set (d, (size_t) ohbox_blob_writer_offset (w), 0);
      if (done == n && d->first == NULL)
        dl_wait_reader (d);
      usleep (200);
    }
  return 0;
}

static void *
dl_run (void *arg)
{
  struct download *d = arg;
  ohbox_error_t err = NULL;
  struct ohbox_blob_writer *w = NULL;
  if (ohbox_store_blob_begin (d->s, d->digest, d->size, true, &w, &err) < 0 || w == NULL)
    abort ();
  pthread_mutex_lock (&d->lock);
  d->started = true;
  pthread_cond_broadcast (&d->cond);
  pthread_mutex_unlock (&d->lock);
  if (d->first)
    {
      /* Bad bytes first; once the unpack has failed on them (it then waits
       * for the end of the download), start over from zero. */
      if (dl_write (d, w, d->first, d->first_len) < 0)
        abort ();
      struct timespec until;
      clock_gettime (CLOCK_REALTIME, &until);
      until.tv_sec += 10;
      pthread_mutex_lock (&d->lock);
      while (!d->end_wanted)
        if (pthread_cond_timedwait (&d->cond, &d->lock, &until) != 0)
          break;
      pthread_mutex_unlock (&d->lock);
      if (ohbox_blob_writer_reset (w, &err) < 0)
        abort ();
      dl_set (d, 0, 0);
    }
  if (dl_write (d, w, d->data, d->len) < 0)
    {
      ohbox_blob_writer_abort (w, false);
      dl_set (d, d->written, -1);
      return NULL;
    }
  int r = ohbox_blob_writer_commit (w, &err);
  ohbox_error_release (&err);
  dl_set (d, d->written, r == 0 ? 1 : -1);
  return NULL;
}

static int
dl_wait_more (void *userdata, uint64_t offset, ohbox_error_t *err)
{
  struct download *d = userdata;
  int r;
  pthread_mutex_lock (&d->lock);
  if (offset == UINT64_MAX)
    {
      d->end_wanted = true;
      pthread_cond_broadcast (&d->cond);
    }
  else if (d->state == 0)
    {
      d->read_partial = true;
      pthread_cond_broadcast (&d->cond);
    }
  for (;;)
    {
      if (d->state != 0)
        {
          r = d->state > 0 ? 0 : ohbox_error (err, OHBOX_ERR_INTEGRITY, 0, "test: blob %s failed", d->digest);
          break;
        }
      if (offset != UINT64_MAX && d->written > offset)
        {
          r = 1;
          break;
        }
      pthread_cond_wait (&d->cond, &d->lock);
    }
  pthread_mutex_unlock (&d->lock);
  return r;
}

/* Starts D and unpacks DIFF_ID from it once its partial file exists. */
static int
unpack_downloading (struct download *d, const char *diff_id, ohbox_error_t *err)
{
  pthread_mutex_init (&d->lock, NULL);
  pthread_cond_init (&d->cond, NULL);
  if (pthread_create (&d->thread, NULL, dl_run, d) != 0)
    abort ();
  pthread_mutex_lock (&d->lock);
  while (!d->started)
    pthread_cond_wait (&d->cond, &d->lock);
  pthread_mutex_unlock (&d->lock);
  struct ohbox_layer_options lo = { .wait_more = dl_wait_more, .userdata = d };
  struct ohbox_layer_stats st;
  int r = ohbox_store_unpack_layer (d->s, d->digest, diff_id, &lo, &st, err);
  pthread_join (d->thread, NULL);
  pthread_mutex_destroy (&d->lock);
  pthread_cond_destroy (&d->cond);
  return r;
}

/* A gzip layer of about 1 MB (many pieces of download) with etc/hello. */
static char *
big_layer (size_t *len, char diff_id[OHBOX_DIGEST_LEN + 1], char digest[OHBOX_DIGEST_LEN + 1])
{
  static char noise[1000 * 1000];
  uint32_t x = 777;
  for (size_t i = 0; i < sizeof noise; i++)
    noise[i] = (char) ((x = x * 1103515245 + 12345) >> 24);
  char *out[2] = { NULL, NULL };
  size_t used[2] = { 0, 0 };
  for (int gz = 0; gz < 2; gz++)
    {
      size_t cap = 2 * sizeof noise;
      out[gz] = xmalloc (cap);
      struct archive *a = archive_write_new ();
      archive_write_set_format_pax_restricted (a);
      if (gz)
        archive_write_add_filter_gzip (a);
      archive_write_set_bytes_in_last_block (a, 1);
      archive_write_open_memory (a, out[gz], cap, &used[gz]);
      const char *names[2] = { "etc/hello", "etc/noise" };
      const char *datas[2] = { "hello\n", noise };
      size_t lens[2] = { 6, sizeof noise };
      for (int i = 0; i < 2; i++)
        {
          struct archive_entry *e = archive_entry_new ();
          archive_entry_set_pathname (e, names[i]);
          archive_entry_set_filetype (e, AE_IFREG);
          archive_entry_set_perm (e, 0644);
          archive_entry_set_size (e, (la_int64_t) lens[i]);
          archive_write_header (a, e);
          archive_write_data (a, datas[i], lens[i]);
          archive_entry_free (e);
        }
      archive_write_close (a);
      archive_write_free (a);
    }
  ohbox_sha256_buffer (out[0], used[0], diff_id);
  ohbox_sha256_buffer (out[1], used[1], digest);
  free (out[0]);
  *len = used[1];
  return out[1];
}

static int
tmp_entries (struct ohbox_store *s)
{
  DIR *d = fdopendir (openat (ohbox_store_dirfd (s), "tmp", O_RDONLY | O_DIRECTORY));
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir (d)))
    n += de->d_name[0] != '.';
  if (d)
    closedir (d);
  return n;
}

static void
test_unpack_while_downloading (void)
{
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  size_t len;
  char diff_id[OHBOX_DIGEST_LEN + 1], digest[OHBOX_DIGEST_LEN + 1];
  char *blob = big_layer (&len, diff_id, digest);
  struct download d = { .s = s, .digest = digest, .size = (int64_t) len, .data = blob, .len = len };
  CHECK (unpack_downloading (&d, diff_id, &err) == 0, "%s", err ? err->msg : "");
  CHECK (d.read_partial, "the unpack did not read the blob while it downloaded");
  CHECK (ohbox_store_has_layer (s, diff_id) && ohbox_store_has_blob (s, digest));
  char *path = ohbox_store_layer_path (s, diff_id);
  char *file = xasprintf ("%s/etc/hello", path);
  char *content = NULL;
  CHECK (ohbox_read_file_at (AT_FDCWD, file, 100, &content, NULL, &err) == 0);
  CHECK_STR (content, "hello\n");
  CHECK (tmp_entries (s) == 0, "tmp/ has leftovers");
  free (content);
  free (file);
  free (path);
  free (blob);
  ohbox_store_close (s);
}

static void
test_unpack_while_downloading_bad_blob (void)
{
  /* The registry sends the right layer (its DiffID matches) under a
   * descriptor whose digest it does not have: the commit fails after the
   * unpack has read it all, and no layer may appear. */
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  size_t len;
  char diff_id[OHBOX_DIGEST_LEN + 1], digest[OHBOX_DIGEST_LEN + 1], other[OHBOX_DIGEST_LEN + 1];
  char *blob = big_layer (&len, diff_id, digest);
  ohbox_sha256_buffer ("something else", 14, other);
  struct download d = { .s = s, .digest = other, .size = (int64_t) len, .data = blob, .len = len };
  CHECK (unpack_downloading (&d, diff_id, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_INTEGRITY && strstr (err->msg, "test: blob"), "%s", err->msg);
  ohbox_error_release (&err);
  CHECK (d.read_partial, "the unpack did not read the blob while it downloaded");
  CHECK (!ohbox_store_has_layer (s, diff_id), "a layer from an unverified blob is visible");
  CHECK (!ohbox_store_has_blob (s, other));
  CHECK (tmp_entries (s) == 0, "tmp/ has leftovers");
  free (blob);
  ohbox_store_close (s);
}

static void
test_unpack_while_downloading_restart (void)
{
  /* The unpack reads bytes that the download then drops (a resume that
   * starts over from zero): it fails on them, waits for the verified blob
   * and unpacks that. */
  struct ohbox_store *s = open_fresh ();
  ohbox_error_t err = NULL;
  size_t len;
  char diff_id[OHBOX_DIGEST_LEN + 1], digest[OHBOX_DIGEST_LEN + 1];
  char *blob = big_layer (&len, diff_id, digest);
  static char garbage[600 * 1024];
  memcpy (garbage, "\x1f\x8b\x08\x00", 4);
  for (size_t i = 4; i < sizeof garbage; i++)
    garbage[i] = (char) (i * 7 + 3);
  struct download d = { .s = s,
                        .digest = digest,
                        .size = (int64_t) len,
                        .data = blob,
                        .len = len,
                        .first = garbage,
                        .first_len = sizeof garbage };
  CHECK (unpack_downloading (&d, diff_id, &err) == 0, "%s", err ? err->msg : "");
  CHECK (d.end_wanted, "the unpack did not fail on the dropped bytes");
  CHECK (ohbox_store_has_layer (s, diff_id));
  CHECK (tmp_entries (s) == 0, "tmp/ has leftovers");
  free (blob);
  ohbox_store_close (s);
}

/* An unprivileged store must be able to remove layers holding mode 0000
 * directories (GC, failed unpacks). */
static void
test_rm_rf_unreadable_dirs_unprivileged (void)
{
  if (geteuid () != 0)
    {
      unit_skip ("needs root to switch to an unprivileged uid for the test");
      return;
    }
  pid_t pid = fork ();
  if (pid == 0)
    {
      if (setresgid (65534, 65534, 65534) < 0 || setresuid (65534, 65534, 65534) < 0)
        _exit (10);
      char tmpl[] = "/tmp/ohbox-test-rmrf-XXXXXX";
      if (mkdtemp (tmpl) == NULL)
        _exit (11);
      int dfd = open (tmpl, O_RDONLY | O_DIRECTORY);
      if (mkdirat (dfd, "layer", 0755) < 0 || mkdirat (dfd, "layer/locked", 0755) < 0
          || close (openat (dfd, "layer/locked/file", O_CREAT | O_WRONLY, 0600)) < 0
          || mkdirat (dfd, "layer/locked/sub", 0000) < 0 || fchmodat (dfd, "layer/locked", 0000, 0) < 0)
        _exit (12);
      ohbox_error_t e = NULL;
      int r = ohbox_rm_rf_at (dfd, "layer", &e);
      struct stat st;
      bool gone = fstatat (dfd, "layer", &st, AT_SYMLINK_NOFOLLOW) < 0;
      rmdir (tmpl);
      _exit (r == 0 && gone ? 0 : 13);
    }
  int status = 0;
  waitpid (pid, &status, 0);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0, "child status %d", status);
}

/* Builds, below DFD, a chain of DEPTH directories "d", with at every level
 * a file and, every STEP levels, WIDTH sibling directories holding a file. */
static int
make_tree (int dfd, int depth, int step, int width)
{
  int cur = dup (dfd);
  for (int i = 0; i < depth && cur >= 0; i++)
    {
      int f = openat (cur, "file", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      if (f < 0)
        return -1;
      close (f);
      for (int k = 0; step > 0 && i % step == 0 && k < width; k++)
        {
          char name[32];
          snprintf (name, sizeof name, "side-%d", k);
          if (mkdirat (cur, name, 0755) < 0)
            return -1;
          snprintf (name, sizeof name, "side-%d/f", k);
          f = openat (cur, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
          if (f < 0)
            return -1;
          close (f);
        }
      if (mkdirat (cur, "d", 0755) < 0)
        return -1;
      int next = openat (cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      close (cur);
      cur = next;
    }
  if (cur < 0)
    return -1;
  close (cur);
  return 0;
}

/* A tree far deeper than the descriptors the process may open (a sandbox
 * nests 30 000 directories in its writable layer): removed with a bounded
 * number of descriptors, wide levels and deep ones alike. */
static void
test_rm_rf_deep_tree (void)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      char dir[4096];
      snprintf (dir, sizeof dir, "%s/rmrf-deep", tmproot);
      if (mkdir (dir, 0700) < 0)
        _exit (10);
      int dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0 || mkdirat (dfd, "tree", 0755) < 0)
        _exit (11);
      int tfd = openat (dfd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (tfd < 0 || make_tree (tfd, 5000, 7, 5) < 0)
        _exit (12);
      close (tfd);
      struct rlimit rl = { 32, 32 };
      if (setrlimit (RLIMIT_NOFILE, &rl) < 0)
        _exit (13);
      ohbox_error_t e = NULL;
      int r = ohbox_rm_rf_at (dfd, "tree", &e);
      if (r < 0)
        fprintf (stderr, "rm_rf: %s\n", e->msg);
      struct stat st;
      bool gone = fstatat (dfd, "tree", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
      _exit (r == 0 && gone ? 0 : 14);
    }
  int status = 0;
  waitpid (pid, &status, 0);
  CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0, "child status %d", status);
}

/* However long what an error names, its message stays readable: head and
 * tail kept, the middle cut. */
static void
test_error_message_bounded (void)
{
  size_t n = 100000;
  char *path = xmalloc (n + 1);
  for (size_t i = 0; i < n; i++)
    path[i] = i % 2 ? '/' : 'a';
  path[n] = '\0';
  ohbox_error_t e = NULL;
  errno = EMFILE;
  ohbox_error_errno (&e, "open `%s`", path);
  for (int i = 0; i < 1000; i++)
    ohbox_error_prefix (&e, "level %d", i);
  CHECK (strlen (e->msg) <= OHBOX_ERROR_MSG_MAX, "message of %zu bytes", strlen (e->msg));
  CHECK (strncmp (e->msg, "level 999: ", 11) == 0, "%.40s", e->msg);
  CHECK (strstr (e->msg, "Too many open files") != NULL, "the cause was cut");
  CHECK (e->errno_value == EMFILE);
  ohbox_error_release (&e);
  free (path);
}

UNIT_MAIN_BEGIN ("test-store")
{
  char tmpl[] = "/tmp/ohbox-test-store-XXXXXX";
  tmproot = mkdtemp (tmpl);
  RUN_TEST (test_put_and_read_blob);
  RUN_TEST (test_digest_validated_before_paths);
  RUN_TEST (test_damaged_blob_detected);
  RUN_TEST (test_writer_resume_and_verify);
  RUN_TEST (test_writer_rejects_bad_data);
  RUN_TEST (test_blob_lock_excludes_other_process);
  RUN_TEST (test_names_resolve_and_remove);
  RUN_TEST (test_gc);
  RUN_TEST (test_unpack_layer);
  RUN_TEST (test_unpack_while_downloading);
  RUN_TEST (test_unpack_while_downloading_bad_blob);
  RUN_TEST (test_unpack_while_downloading_restart);
  RUN_TEST (test_rm_rf_unreadable_dirs_unprivileged);
  RUN_TEST (test_rm_rf_deep_tree);
  RUN_TEST (test_error_message_bounded);
  ohbox_rm_rf_at (AT_FDCWD, tmproot, NULL);
}
UNIT_MAIN_END
