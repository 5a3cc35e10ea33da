/* state.c: the state directory of sandboxes (layout in sandbox.h). */
#include "config.h"
#include "sandbox/sandbox_internal.h"
#include "network/network.h"
#include "sandbox/linux.h"
#include "sandbox/snapshot.h"
#include "common/digest.h"
#include "common/utils.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define STATE_FILE_MAX (1024 * 1024)
#define NAME_MAX_LEN 128

char *
ohbox_runtime_base_dir (void)
{
  if (geteuid () == 0)
    return xstrdup ("/run/ohbox");
  const char *xdg = getenv ("XDG_RUNTIME_DIR");
  if (xdg && xdg[0] == '/')
    return xasprintf ("%s/ohbox", xdg);
  /* No runtime directory (su, sudo -u, cron, CI runners, ssh without a
   * session manager): not /tmp, where another local user could have made
   * the directory first, but the user's own home. There it survives a
   * reboot: its sandboxes are then found with their monitors gone and
   * reconciled as after a crash (sandbox.h). */
  const char *state = getenv ("XDG_STATE_HOME");
  if (state && state[0] == '/')
    return xasprintf ("%s/ohbox/run", state);
  const char *home = getenv ("HOME");
  if (home && home[0] == '/')
    return xasprintf ("%s/.local/state/ohbox/run", home);
  struct passwd *pw = getpwuid (geteuid ());
  if (pw && pw->pw_dir && pw->pw_dir[0] == '/')
    return xasprintf ("%s/.local/state/ohbox/run", pw->pw_dir);
  /* Checked like any state directory: refused if another user made it. */
  return xasprintf ("/tmp/ohbox-run-%u", (unsigned) geteuid ());
}

char *
ohbox_runtime_default_state_root (const char *store_root)
{
  const char *env = getenv ("OHBOX_RUNROOT");
  if (env && *env)
    return xstrdup (env);
  char *base = ohbox_runtime_base_dir ();
  cleanup_free char *def = ohbox_store_default_root ();
  if (store_root == NULL || strcmp (store_root, def) == 0)
    return base;
  /* Sandboxes belong to the store holding their layers. */
  char abs[PATH_MAX];
  const char *key = realpath (store_root, abs) ? abs : store_root;
  char hex[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer (key, strlen (key), hex);
  char *r = xasprintf ("%s/stores/%.16s", base, hex + strlen ("sha256:"));
  free (base);
  return r;
}

int
ohbox_runtime_open (struct ohbox_store *store, const char *state_root, struct ohbox_runtime **ret, ohbox_error_t *err)
{
  cleanup_free char *root = state_root ? xstrdup (state_root)
                                       : ohbox_runtime_default_state_root (ohbox_store_root (store));
  int fd = ohbox_private_dir_open (root, err);
  if (fd < 0)
    return ohbox_error_prefix (err, "state directory");
  mkdirat (fd, "names", 0700);
  struct ohbox_runtime *rt = xcalloc (1, sizeof *rt);
  rt->store = store;
  rt->root = steal_pointer (&root);
  rt->dirfd = fd;
  *ret = rt;
  return 0;
}

const char *
ohbox_runtime_state_root (const struct ohbox_runtime *rt)
{
  return rt->root;
}

void
ohbox_runtime_close (struct ohbox_runtime *rt)
{
  if (rt == NULL)
    return;
  if (rt->cg_detected)
    ohbox_cgroup_host_release (&rt->cg);
  close (rt->dirfd);
  free (rt->root);
  free (rt);
}

int
ohbox_runtime_cgroup_host (struct ohbox_runtime *rt, const struct ohbox_cgroup_host **ret, ohbox_error_t *err)
{
  if (!rt->cg_detected)
    {
      if (ohbox_cgroup_detect (NULL, &rt->cg, err) < 0)
        return -1;
      rt->cg_detected = true;
    }
  *ret = &rt->cg;
  return 0;
}

bool
ohbox_state_id_is_valid (const char *id)
{
  if (strlen (id) != OHBOX_ID_LEN)
    return false;
  for (const char *p = id; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

int
ohbox_state_create (struct ohbox_runtime *rt, char id[OHBOX_ID_LEN + 1], int *ret_dirfd, int *ret_lockfd,
                    ohbox_error_t *err)
{
  unsigned char raw[OHBOX_ID_LEN / 2];
  if (getrandom (raw, sizeof raw, 0) != (ssize_t) sizeof raw)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "getrandom");
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf (id + 2 * i, 3, "%02x", raw[i]);
  /* Built under a dot name and renamed once monitor.lock is held: whoever
   * lists sandboxes never sees one whose monitor is not yet known. The
   * shared creation lock, held until the rename, tells those who remove
   * the dot names of creators that died (OHBOX_STATE_CREATE_LOCK) that
   * this one is not such: between mkdir and monitor.lock nothing else
   * could. */
  cleanup_close int creating = ohbox_lock_file (rt->dirfd, OHBOX_STATE_CREATE_LOCK, false, false, err);
  if (creating < 0)
    return -1;
  char tmp[OHBOX_ID_LEN + 8];
  snprintf (tmp, sizeof tmp, ".new-%s", id);
  if (mkdirat (rt->dirfd, tmp, 0711) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "create state directory `%s/%s`", rt->root, tmp);
  int dfd = openat (rt->dirfd, tmp, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dfd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s/%s`", rt->root, tmp);
  int lfd = ohbox_lock_file (dfd, "monitor.lock", true, true, err);
  if (lfd < 0 || mkdirat (dfd, "rootfs", 0700) < 0 || renameat (rt->dirfd, tmp, rt->dirfd, id) < 0)
    {
      if (lfd >= 0)
        ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "set up state directory `%s/%s`", rt->root, tmp);
      ohbox_error_t e2 = NULL;
      ohbox_rm_rf_at (rt->dirfd, tmp, &e2);
      ohbox_error_release (&e2);
      if (lfd >= 0)
        close (lfd);
      close (dfd);
      return -1;
    }
  *ret_dirfd = dfd;
  *ret_lockfd = lfd;
  return 0;
}

bool
ohbox_state_half_created_stale (struct ohbox_runtime *rt, const char *name)
{
  /* Exclusive and not waiting: while it is held no creation is between
   * its mkdir and its rename, so a dot name left is a dead creator's (and
   * stays so: a new creation picks a new id). Busy: someone is creating,
   * perhaps this one; it is left for the next look. */
  cleanup_error ohbox_error_t e = NULL;
  cleanup_close int lock = ohbox_lock_file (rt->dirfd, OHBOX_STATE_CREATE_LOCK, true, true, &e);
  if (lock < 0)
    return false;
  cleanup_close int fd = openat (rt->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd >= 0 && !ohbox_state_monitor_alive (fd);
}

int
ohbox_state_open (struct ohbox_runtime *rt, const char *id, int *ret_dirfd, ohbox_error_t *err)
{
  if (!ohbox_state_id_is_valid (id))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid sandbox id `%s`", id);
  int fd = openat (rt->dirfd, id, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    {
      if (errno == ENOENT)
        return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no such sandbox `%.12s`", id);
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "open `%s/%s`", rt->root, id);
    }
  *ret_dirfd = fd;
  return 0;
}

int
ohbox_state_claim_name (struct ohbox_runtime *rt, const char *name, const char *id, ohbox_error_t *err)
{
  size_t len = strlen (name);
  if (len == 0 || len > NAME_MAX_LEN || name[0] == '.' || name[0] == '-')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid sandbox name `%s`", name);
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'
          || *p == '-'))
      return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid sandbox name `%s`: use [a-zA-Z0-9_.-]", name);
  cleanup_free char *link = xasprintf ("names/%s", name);
  for (int attempt = 0; attempt < 2; attempt++)
    {
      if (symlinkat (id, rt->dirfd, link) == 0)
        return 0;
      if (errno != EEXIST)
        return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "register name `%s`", name);
      /* A name whose sandbox is gone (removed by a crash) is free again. */
      char target[OHBOX_ID_LEN + 2];
      ssize_t n = readlinkat (rt->dirfd, link, target, sizeof target - 1);
      if (n > 0)
        {
          target[n] = '\0';
          struct stat st;
          if (fstatat (rt->dirfd, target, &st, AT_SYMLINK_NOFOLLOW) == 0)
            return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                                "the name `%s` is already used by sandbox `%.12s`; "
                                "remove it with `ohbox rm %s` or pick another name",
                                name, target, name);
        }
      unlinkat (rt->dirfd, link, 0);
    }
  return ohbox_error (err, OHBOX_ERR_USAGE, 0, "the name `%s` is being taken by another sandbox", name);
}

int
ohbox_state_write_json (int dirfd, const char *file, json_t *j, ohbox_error_t *err)
{
  cleanup_free char *text = json_dumps (j, JSON_COMPACT);
  if (text == NULL)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "serialise `%s`", file);
  return ohbox_write_file_nosync (dirfd, file, text, strlen (text), err);
}

int
ohbox_state_read_json (int dirfd, const char *file, json_t **ret, ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len;
  if (ohbox_read_file_at (dirfd, file, STATE_FILE_MAX, &text, &len, err) < 0)
    return -1;
  json_error_t je;
  json_t *j = json_loadb (text, len, JSON_REJECT_DUPLICATES, &je);
  if (j == NULL || !json_is_object (j))
    {
      json_decref (j);
      return ohbox_error (err, OHBOX_ERR_STORE, 0, "state file `%s` is corrupt", file);
    }
  *ret = j;
  return 0;
}

int
ohbox_state_load_config (int dirfd, struct ohbox_sandbox_config *ret, ohbox_error_t *err)
{
  json_t *doc = NULL;
  if (ohbox_state_read_json (dirfd, "config.json", &doc, err) < 0)
    return -1;
  ohbox_sandbox_config_parse (doc, ret);
  json_decref (doc);
  return 0;
}

int
ohbox_state_load_record (int dirfd, struct ohbox_sandbox_record *ret, ohbox_error_t *err)
{
  json_t *doc = NULL;
  if (ohbox_state_read_json (dirfd, "state.json", &doc, err) < 0)
    return -1;
  ohbox_sandbox_record_parse (doc, ret);
  json_decref (doc);
  return 0;
}

int
ohbox_state_write_config (int dirfd, const struct ohbox_sandbox_config *c, ohbox_error_t *err)
{
  json_t *j = ohbox_sandbox_config_to_json (c);
  int r = ohbox_state_write_json (dirfd, "config.json", j, err);
  json_decref (j);
  return r;
}

static int
write_record (int dirfd, const struct ohbox_sandbox_record *rec, ohbox_error_t *err)
{
  json_t *j = ohbox_sandbox_record_to_json (rec);
  int r = ohbox_state_write_json (dirfd, "state.json", j, err);
  json_decref (j);
  return r;
}

int
ohbox_state_record_started (int dirfd, pid_t pid, const char *started_at, ohbox_error_t *err)
{
  struct ohbox_sandbox_record rec = {
    .present = OHBOX_RECORD_STATUS | OHBOX_RECORD_PID | OHBOX_RECORD_PID_START | OHBOX_RECORD_STARTED_AT,
    .status = OHBOX_STATUS_RUNNING,
    .pid = pid,
    .pid_start = ohbox_proc_starttime (pid),
    .started_at = (char *) started_at,
  };
  return write_record (dirfd, &rec, err);
}

/* The record as it is now, for a change written back under "lock" (an
 * unreadable one is started afresh, as it always was). */
static void
load_for_update (int dirfd, struct ohbox_sandbox_record *rec)
{
  ohbox_error_t e = NULL;
  if (ohbox_state_load_record (dirfd, rec, &e) < 0)
    {
      ohbox_error_release (&e);
      memset (rec, 0, sizeof *rec);
    }
}

static void
set_exited (struct ohbox_sandbox_record *rec, int code, char *now)
{
  rec->present |= OHBOX_RECORD_STATUS | OHBOX_RECORD_EXIT_CODE | OHBOX_RECORD_FINISHED_AT;
  rec->status = OHBOX_STATUS_EXITED;
  rec->exit_code = code;
  free (rec->finished_at);
  rec->finished_at = now;
}

int
ohbox_state_record_exit (int dirfd, int exit_code, bool timed_out, const char *hook_warning, ohbox_error_t *err)
{
  cleanup_close int lock = ohbox_lock_file (dirfd, "lock", true, false, err);
  if (lock < 0)
    return -1;
  struct ohbox_sandbox_record rec;
  load_for_update (dirfd, &rec);
  set_exited (&rec, exit_code, ohbox_now_rfc3339 ());
  rec.present |= OHBOX_RECORD_PAUSED | OHBOX_RECORD_TIMED_OUT;
  rec.paused = false;
  rec.timed_out = timed_out;
  if (hook_warning)
    {
      rec.present |= OHBOX_RECORD_HOOK_WARNING;
      free (rec.hook_warning);
      rec.hook_warning = xstrdup (hook_warning);
    }
  int r = write_record (dirfd, &rec, err);
  ohbox_sandbox_record_clear (&rec);
  return r;
}

int
ohbox_state_record_paused (int dirfd, bool paused, ohbox_error_t *err)
{
  cleanup_close int lock = ohbox_lock_file (dirfd, "lock", true, false, err);
  if (lock < 0)
    return -1;
  struct ohbox_sandbox_record rec;
  load_for_update (dirfd, &rec);
  rec.present |= OHBOX_RECORD_PAUSED;
  rec.paused = paused;
  int r = write_record (dirfd, &rec, err);
  ohbox_sandbox_record_clear (&rec);
  return r;
}

int
ohbox_state_record_annotations (int dirfd, json_t *set, size_t max_bytes, ohbox_error_t *err)
{
  cleanup_close int lock = ohbox_lock_file (dirfd, "lock", true, false, err);
  if (lock < 0)
    return -1;
  struct ohbox_sandbox_record rec;
  if (ohbox_state_load_record (dirfd, &rec, err) < 0)
    return -1;
  if (rec.annotations == NULL)
    rec.annotations = json_object ();
  rec.present |= OHBOX_RECORD_ANNOTATIONS;
  const char *key;
  json_t *v;
  int r = 0;
  json_object_foreach (set, key, v)
  {
    if (json_is_null (v))
      json_object_del (rec.annotations, key);
    else if (json_is_string (v))
      json_object_set (rec.annotations, key, v);
    else
      r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "annotation `%s` is not a string", key);
  }
  cleanup_free char *text = r == 0 ? json_dumps (rec.annotations, JSON_COMPACT) : NULL;
  if (r == 0 && text && strlen (text) > max_bytes)
    r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "the annotations are too long (at most %zu bytes)", max_bytes);
  if (r == 0)
    r = write_record (dirfd, &rec, err);
  ohbox_sandbox_record_clear (&rec);
  return r;
}

enum ohbox_sandbox_status
ohbox_state_live_status (int dirfd, const struct ohbox_sandbox_record *r)
{
  if (!ohbox_state_monitor_alive (dirfd))
    return OHBOX_STATUS_EXITED;
  if (r == NULL || !(r->present & OHBOX_RECORD_PID))
    return OHBOX_STATUS_CREATED;
  return r->paused ? OHBOX_STATUS_PAUSED : OHBOX_STATUS_RUNNING;
}

void
ohbox_state_describe (int dirfd, const char *id, struct ohbox_sandbox_info *ret)
{
  memset (ret, 0, sizeof *ret);
  snprintf (ret->id, sizeof ret->id, "%s", id);
  ohbox_error_t e = NULL;
  if (ohbox_state_load_config (dirfd, &ret->config, &e) < 0)
    ohbox_error_release (&e);
  bool have_record = ohbox_state_load_record (dirfd, &ret->record, &e) == 0;
  ohbox_error_release (&e);
  ret->status = ohbox_state_live_status (dirfd, have_record ? &ret->record : NULL);
  ret->network = ohbox_network_read (dirfd);
}

bool
ohbox_state_monitor_alive (int dirfd)
{
  cleanup_close int fd = openat (dirfd, "monitor.lock", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  if (flock (fd, LOCK_SH | LOCK_NB) == 0)
    return false;
  return errno == EWOULDBLOCK;
}

int
ohbox_state_wait_monitor (int dirfd, int *ret_code, ohbox_error_t *err)
{
  if (ret_code)
    *ret_code = -1;
  cleanup_close int fd = openat (dirfd, "monitor.lock", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  while (flock (fd, LOCK_SH) < 0)
    if (errno != EINTR)
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "wait for the sandbox's monitor");
  char buf[16];
  ssize_t n = pread (fd, buf, sizeof buf - 1, 0);
  if (ret_code && n > 0)
    {
      buf[n] = '\0';
      *ret_code = atoi (buf);
    }
  return 0;
}

unsigned long long
ohbox_proc_starttime (pid_t pid)
{
  char path[64], buf[1024];
  snprintf (path, sizeof path, "/proc/%d/stat", pid);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read (fd, buf, sizeof buf - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *p = strrchr (buf, ')');
  if (p == NULL)
    return 0;
  /* Field 3 (state) follows ") "; starttime is field 22. */
  p += 2;
  for (int field = 3; field < 22 && p; field++)
    {
      p = strchr (p, ' ');
      if (p)
        p++;
    }
  return p ? strtoull (p, NULL, 10) : 0;
}

int
ohbox_state_pidfd (int dirfd, bool *ret_exited, ohbox_error_t *err)
{
  *ret_exited = false;
  struct ohbox_sandbox_record rec;
  if (ohbox_state_load_record (dirfd, &rec, err) < 0)
    return -1;
  pid_t pid = rec.pid;
  unsigned long long start = rec.pid_start;
  bool exited = ohbox_sandbox_record_exited (&rec);
  ohbox_sandbox_record_clear (&rec);
  if (pid <= 0 || exited)
    {
      *ret_exited = true;
      return -1;
    }
  int fd = (int) syscall (SYS_pidfd_open, pid, 0);
  /* The pid may have been recycled: the start time must be the recorded one. */
  if (fd < 0 || ohbox_proc_starttime (pid) != start)
    {
      if (fd >= 0)
        close (fd);
      *ret_exited = true;
      return -1;
    }
  return fd;
}

/* Renamed out of the way first (OHBOX_STATE_REMOVING): whoever lists
 * sandboxes from then on does not see a half-removed directory, so does not
 * reconcile it (and create its "lock" in it). One that looked just before
 * still may: the removal is tried again when it finds a file come back. */
static int
remove_state_dir (struct ohbox_runtime *rt, const char *id, ohbox_error_t *err)
{
  char gone[OHBOX_ID_LEN + 8];
  snprintf (gone, sizeof gone, OHBOX_STATE_REMOVING "%s", id);
  if (renameat (rt->dirfd, id, rt->dirfd, gone) < 0)
    {
      if (errno == ENOENT)
        return 0; /* removed meanwhile by another remover */
      return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "rename `%s` to `%s`", id, gone);
    }
  for (int tries = 1;; tries++)
    {
      if (ohbox_rm_rf_at (rt->dirfd, gone, err) == 0)
        return 0;
      if ((*err)->errno_value != ENOTEMPTY || tries == 5)
        return -1;
      ohbox_error_release (err);
    }
}

bool
ohbox_state_teardown_busy (int dirfd)
{
  cleanup_close int fd = openat (dirfd, OHBOX_STATE_TEARDOWN_LOCK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  if (flock (fd, LOCK_SH | LOCK_NB) == 0)
    return false;
  return errno == EWOULDBLOCK;
}

void
ohbox_state_release_name (struct ohbox_runtime *rt, const char *id, const char *name)
{
  cleanup_free char *link = xasprintf ("names/%s", name);
  char target[OHBOX_ID_LEN + 2];
  ssize_t n = readlinkat (rt->dirfd, link, target, sizeof target - 1);
  if (n == OHBOX_ID_LEN && memcmp (target, id, OHBOX_ID_LEN) == 0)
    unlinkat (rt->dirfd, link, 0);
}

static int state_remove_locked (struct ohbox_runtime *rt, const char *id, ohbox_error_t *err);

int
ohbox_state_teardown_locked (struct ohbox_runtime *rt, const char *id, int dirfd, bool remove, ohbox_error_t *err)
{
  if (remove)
    return state_remove_locked (rt, id, err);
  cleanup_free char *dir = xasprintf ("%s/%s", rt->root, id);
  return ohbox_network_release (dir, dirfd, err);
}

int
ohbox_state_remove (struct ohbox_runtime *rt, const char *id, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    return -1;
  /* A teardown in progress finishes first (it removes the same things). */
  cleanup_close int tlock = ohbox_lock_file (dfd, OHBOX_STATE_TEARDOWN_LOCK, true, false, err);
  if (tlock < 0)
    return -1;
  return state_remove_locked (rt, id, err);
}

static int
state_remove_locked (struct ohbox_runtime *rt, const char *id, ohbox_error_t *err)
{
  cleanup_close int dfd = -1;
  if (ohbox_state_open (rt, id, &dfd, err) < 0)
    {
      /* Removed by the teardown we waited for. */
      if ((*err)->kind != OHBOX_ERR_NOT_FOUND)
        return -1;
      ohbox_error_release (err);
      return 0;
    }
  struct ohbox_sandbox_config cfg = { 0 };
  ohbox_error_t e = NULL;
  if (ohbox_state_load_config (dfd, &cfg, &e) < 0)
    ohbox_error_release (&e);
  const struct ohbox_cgroup_host *host;
  if (ohbox_runtime_cgroup_host (rt, &host, err) < 0)
    {
      ohbox_sandbox_config_clear (&cfg);
      return -1;
    }
  struct ohbox_cgroup *cg = NULL;
  if (ohbox_cgroup_open (host, id, &cg, &e) == 0)
    {
      if (ohbox_cgroup_destroy (cg, err) < 0)
        {
          ohbox_cgroup_free (cg);
          ohbox_sandbox_config_clear (&cfg);
          return -1;
        }
      ohbox_cgroup_free (cg);
    }
  ohbox_error_release (&e);
  {
    /* Leases and published ports first: they name this directory. */
    cleanup_free char *dir = xasprintf ("%s/%s", rt->root, id);
    if (ohbox_network_release (dir, dfd, err) < 0 || ohbox_userns_release (dir, err) < 0)
      {
        ohbox_sandbox_config_clear (&cfg);
        return -1;
      }
  }
  if (ohbox_snapshot_remove (rt->store, id, err) < 0)
    {
      ohbox_sandbox_config_clear (&cfg);
      return -1;
    }
  if (cfg.name)
    ohbox_state_release_name (rt, id, cfg.name);
  ohbox_sandbox_config_clear (&cfg);
  if (remove_state_dir (rt, id, err) < 0)
    return ohbox_error_prefix (err, "remove the state of sandbox `%.12s`", id);
  /* Leases taken by a start killed before it recorded them. */
  if (ohbox_network_gc (&e) < 0)
    ohbox_error_release (&e);
  return 0;
}

/* Whether DIRFD still is the directory STATE/ID (not removed, not renamed
 * away for removal). */
static bool
still_named (struct ohbox_runtime *rt, const char *id, int dirfd)
{
  struct stat here, named;
  return fstat (dirfd, &here) == 0 && here.st_nlink > 0 && fstatat (rt->dirfd, id, &named, AT_SYMLINK_NOFOLLOW) == 0
         && named.st_ino == here.st_ino && named.st_dev == here.st_dev;
}

int
ohbox_state_reconcile (struct ohbox_runtime *rt, const char *id, int dirfd, bool *ret_removed, ohbox_error_t *err)
{
  *ret_removed = false;
  if (ohbox_state_monitor_alive (dirfd))
    return 0;
  cleanup_close int lock = ohbox_lock_file (dirfd, "lock", true, false, err);
  if (lock < 0 && (*err)->errno_value == ENOENT && !still_named (rt, id, dirfd))
    {
      /* The monitor of a --rm sandbox removed the whole directory while we
       * looked at it (`rm -f` of one that was just stopped): done, not an
       * error. */
      ohbox_error_release (err);
      *ret_removed = true;
      return 0;
    }
  if (lock < 0)
    return -1;
  if (!still_named (rt, id, dirfd))
    {
      /* Renamed away for removal (remove_state_dir) since we looked. */
      *ret_removed = true;
      return 0;
    }
  ohbox_error_t e = NULL;
  bool exited, rm;
  ohbox_state_recorded_end (dirfd, &exited, &rm);
  if (exited)
    {
      /* Its teardown (OHBOX_STATE_TEARDOWN_LOCK) runs, or ran, or died. */
      json_t *net = ohbox_network_read (dirfd);
      bool net_active = net && json_is_true (json_object_get (net, "active"));
      json_decref (net);
      if (!rm && !net_active)
        return 0;
      cleanup_close int tlock = ohbox_lock_file (dirfd, OHBOX_STATE_TEARDOWN_LOCK, true, true, err);
      if (tlock == -2)
        {
          /* In progress: a --rm sandbox is as good as gone. */
          *ret_removed = rm;
          return 0;
        }
      if (tlock < 0 && (*err)->errno_value == ENOENT && !still_named (rt, id, dirfd))
        {
          /* Its teardown finished meanwhile and removed the directory
           * (the lock file cannot be made in it any more): gone. */
          ohbox_error_release (err);
          *ret_removed = true;
          return 0;
        }
      if (tlock < 0)
        return -1;
      *ret_removed = rm;
      return ohbox_state_teardown_locked (rt, id, dirfd, rm, err);
    }
  /* The monitor is gone without finishing its job: finish it. A sandbox
   * without config never started (killed mid-start): removed, as --rm ones. */
  if (rm)
    {
      *ret_removed = true;
      return ohbox_state_remove (rt, id, err);
    }
  const struct ohbox_cgroup_host *host;
  if (ohbox_runtime_cgroup_host (rt, &host, err) < 0)
    return -1;
  struct ohbox_cgroup *cg = NULL;
  if (ohbox_cgroup_open (host, id, &cg, &e) == 0)
    {
      int r = ohbox_cgroup_destroy (cg, err);
      ohbox_cgroup_free (cg);
      if (r < 0)
        return -1;
    }
  ohbox_error_release (&e);
  {
    cleanup_free char *dir = xasprintf ("%s/%s", rt->root, id);
    if (ohbox_network_release (dir, dirfd, err) < 0)
      return -1;
  }
  /* Merge with the existing state (we hold "lock": write directly). */
  struct ohbox_sandbox_record rec;
  load_for_update (dirfd, &rec);
  if (rec.doc == NULL)
    {
      /* Never started (no state.json): the keys in the order older
       * versions wrote them. */
      rec.present |= OHBOX_RECORD_EXIT_CODE | OHBOX_RECORD_FINISHED_AT;
      rec.doc = json_object ();
      json_object_set_new (rec.doc, "exit_code", json_null ());
      json_object_set_new (rec.doc, "finished_at", json_null ());
    }
  set_exited (&rec, 255, ohbox_now_rfc3339 ());
  int r = write_record (dirfd, &rec, err);
  ohbox_sandbox_record_clear (&rec);
  return r;
}

void
ohbox_state_recorded_end (int dirfd, bool *ret_exited, bool *ret_rm)
{
  struct ohbox_sandbox_record rec;
  struct ohbox_sandbox_config cfg;
  ohbox_error_t e = NULL;
  bool have_rec = ohbox_state_load_record (dirfd, &rec, &e) == 0;
  ohbox_error_release (&e);
  bool have_cfg = ohbox_state_load_config (dirfd, &cfg, &e) == 0;
  ohbox_error_release (&e);
  *ret_exited = have_rec && ohbox_sandbox_record_exited (&rec);
  *ret_rm = !have_cfg || cfg.rm;
  if (have_rec)
    ohbox_sandbox_record_clear (&rec);
  if (have_cfg)
    ohbox_sandbox_config_clear (&cfg);
}

/* Through /proc/self/fd: a socket address holds 107 bytes, and a state
 * directory's path can be longer. Connecting needs write permission on
 * the socket: bind gives it 0777 less the umask, inside the caller's
 * private state root (0700), and fchmodat makes it 0600 at once (no
 * umask(2) here: it is the whole process's, and libohbox may be one
 * thread of many). */
int
ohbox_state_listen (int dirfd, const char *name, int sock_flags, int backlog, ohbox_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dirfd, name);
  cleanup_close int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | sock_flags, 0);
  if (fd < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "create the socket `%s`", name);
  unlinkat (dirfd, name, 0);
  if (bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0 || fchmodat (dirfd, name, 0600, 0) < 0
      || listen (fd, backlog) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_SANDBOX, "listen on `%s` in the state directory", name);
  return steal_fd (&fd);
}
