/* ohbox-executor: the in-sandbox server of the OpenHands REST action
 * protocol (shared/protocol/ACTION-PROTOCOL.md).
 *
 *   ohbox-executor PORT [--listen-address ADDR] [--working-dir DIR]
 *                  [--plugins P...] [--username U] [--user-id N]
 *                  [--enable-browser|--no-enable-browser]
 *                  [--browsergym-eval-env ...]
 *
 * It accepts the argv of `python -m openhands.runtime.action_execution_server`
 * (plus --listen-address, which `ohbox run` always passes: the executor
 * binds the address it serves and no other, see ohbox-run(1))
 * and its environment knobs (SESSION_API_KEY, NO_CHANGE_TIMEOUT_SECONDS,
 * SU_TO_USER), plus OHBOX_EXECUTOR_BASH (the bash to drive),
 * OHBOX_EXECUTOR_MAX_UPLOAD (bytes, default 2 GiB), OHBOX_EXECUTOR_MAX_UNPACKED
 * (bytes one zip upload may unpack to, default the upload limit),
 * OHBOX_EXECUTOR_MAX_ZIP_ENTRIES (default 65536), OHBOX_EXECUTOR_WORKERS
 * (worker threads, default 4) and OHBOX_EXECUTOR_QUEUE (requests waiting
 * for a worker, default 64; more get 503).
 *
 * How it runs in any base image (busybox, Alpine/musl, Debian, distroless):
 * it is NOT linked statically.  Debian 12 ships static archives for
 * libmicrohttpd, jansson and libvterm but a static glibc binary cannot
 * dlopen reliably (libarchive is loaded on demand, see archive.c) and
 * libarchive's static closure drags in a dozen compression libraries built
 * for dynamic use; and a static build would
 * leave the sanitizer and the normal test builds different from the shipped
 * one.  Instead the executor ships with its exact shared-library closure
 * and the dynamic loader under a private prefix (executor/closure.sh makes
 * it: /.ohbox/bin/ohbox-executor, /.ohbox/lib/<every DT_NEEDED library,
 * recursively, and libarchive, which archive.c dlopens on the first zip>,
 * /.ohbox/lib/ld-linux-x86-64.so.2) and is started as
 *
 *   /.ohbox/lib/ld-linux-x86-64.so.2 --library-path /.ohbox/lib /.ohbox/bin/ohbox-executor PORT ...
 *
 * so it never touches the image's libc or loader.  Passing the library path
 * to the loader (rather than setting LD_LIBRARY_PATH) keeps it out of the
 * environment of bash and of everything the agent runs, which must use the
 * image's own libraries.  glibc >= 2.34 has the `files` NSS module built
 * in, but users.c reads /etc/passwd and /etc/group itself anyway, so that
 * no NSS module of the image is ever loaded into the closure's glibc.
 * tests/integration/executor-closure.sh runs it this way in a busybox
 * rootfs without glibc.
 *
 * bash comes from the image (the build layers one in when the base has
 * none); python3 for run_ipython too, and is optional. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "editor.h"
#include "executor.h"
#include "server.h"
#include "users.h"
#include "common/utils.h"

static void
usage (FILE *f)
{
  fprintf (f, "Usage: ohbox-executor PORT [--listen-address ADDR] [--working-dir DIR] [--plugins NAME...]\n"
              "                      [--username USER] [--user-id UID] [--enable-browser|--no-enable-browser]\n"
              "                      [--standby] [--listen-fd FD]\n"
              "Serves the OpenHands action execution protocol on ADDR:PORT (default: every address\n"
              "of its network namespace, IPv4 and IPv6). --standby: wait for POST /ohbox/adopt\n"
              "(with the key of SESSION_API_KEY) to give the session (warm pools of ohbox serve).\n"
              "--listen-fd: also serve the listening socket FD (ohbox run's unix socket).\n");
}

static bool
env_true (const char *name, bool def)
{
  const char *v = getenv (name);
  if (v == NULL || *v == '\0')
    return def;
  return strcasecmp (v, "true") == 0 || strcmp (v, "1") == 0 || strcasecmp (v, "yes") == 0;
}

/* argparse-like: "--opt VALUE" or "--opt=VALUE"; *MISSING when the value
 * is not there. */
static const char *
opt_value (int argc, char **argv, int *i, const char *name, bool *missing)
{
  size_t n = strlen (name);
  if (strncmp (argv[*i], name, n) != 0)
    return NULL;
  if (argv[*i][n] == '=')
    return argv[*i] + n + 1;
  if (argv[*i][n] != '\0')
    return NULL;
  if (*i + 1 >= argc)
    {
      *missing = true;
      return NULL;
    }
  return argv[++*i];
}

static void
free_plugins (struct executor *ex)
{
  if (ex->plugins)
    for (char **p = ex->plugins; *p; p++)
      free (*p);
  free (ex->plugins);
  ex->plugins = NULL;
}

int
executor_parse_args (struct executor *ex, int argc, char **argv, ohbox_error_t *err)
{
  const char *port = NULL;
  size_t nplugins = 0;
  free_plugins (ex);
  ex->plugins = xcalloc (1, sizeof (char *));
  for (int i = 1; i < argc; i++)
    {
      const char *v;
      bool missing = false;
      if ((v = opt_value (argc, argv, &i, "--listen-address", &missing)))
        {
          unsigned char a[sizeof (struct in6_addr)];
          if (inet_pton (AF_INET, v, a) != 1 && inet_pton (AF_INET6, v, a) != 1)
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--listen-address `%s` is not an IPv4 or IPv6 address", v);
          free (ex->listen_address);
          ex->listen_address = xstrdup (v);
        }
      else if ((v = opt_value (argc, argv, &i, "--working-dir", &missing)))
        {
          free (ex->work_dir);
          ex->work_dir = xstrdup (v);
        }
      else if ((v = opt_value (argc, argv, &i, "--username", &missing)))
        {
          free (ex->username);
          ex->username = xstrdup (v);
        }
      else if ((v = opt_value (argc, argv, &i, "--listen-fd", &missing)))
        {
          char *end;
          long fd = strtol (v, &end, 10);
          if (*end || end == v || fd < 3 || fd > 65535)
            return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--listen-fd `%s` is not a file descriptor above 2", v);
          ex->listen_fd = (int) fd;
        }
      else if ((v = opt_value (argc, argv, &i, "--user-id", &missing)))
        ex->uid = (uid_t) strtoul (v, NULL, 10);
      else if ((v = opt_value (argc, argv, &i, "--browsergym-eval-env", &missing)))
        {
          /* nargs: the browser is not available anyway */
          while (i + 1 < argc && strncmp (argv[i + 1], "--", 2) != 0)
            i++;
        }
      else if (strcmp (argv[i], "--plugins") == 0)
        {
          while (i + 1 < argc && strncmp (argv[i + 1], "--", 2) != 0)
            {
              ex->plugins = xrealloc (ex->plugins, (nplugins + 2) * sizeof (char *));
              ex->plugins[nplugins++] = xstrdup (argv[++i]);
              ex->plugins[nplugins] = NULL;
            }
        }
      else if (strcmp (argv[i], "--enable-browser") == 0)
        ex->browser_enabled = true;
      else if (strcmp (argv[i], "--no-enable-browser") == 0)
        ex->browser_enabled = false;
      else if (strcmp (argv[i], "--standby") == 0)
        ex->standby = true;
      else if (missing)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "option %s needs a value", argv[i]);
      else if (argv[i][0] == '-' && argv[i][1])
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unknown option `%s`", argv[i]);
      else if (port == NULL)
        port = argv[i];
      else
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "unexpected argument `%s`", argv[i]);
    }
  if (port == NULL)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "no PORT given");
  char *end;
  long p = strtol (port, &end, 10);
  if (*end || end == port || p < 0 || p > 65535)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "invalid port `%s`", port);
  ex->port = (int) p;
  return 0;
}

/* As the Python server's init_user_and_working_directory, when root:
 * make sure USER exists (users.c appends it to /etc/passwd and /etc/group:
 * busybox has no useradd), in groups root and sudo with passwordless sudo,
 * and, at every start, that the working directory exists and is theirs
 * (umask 002; mkdir -p; chown -R USER:root; chmod g+rw). */
static int
init_user (struct executor *ex, ohbox_error_t *err)
{
  struct user_info pw = { 0 };
  bool found = users_by_name (ex->username, &pw);
  if (!found && strcmp (ex->username, "root") != 0)
    {
      if (users_create (ex->username, ex->uid, err) < 0 || users_sudoers_ensure (err) < 0)
        return -1;
      found = users_by_name (ex->username, &pw);
    }
  if (found)
    {
      /* An existing user keeps its uid (the Python server does the same). */
      ex->uid = pw.uid;
      ex->gid = pw.gid;
      free (ex->home);
      ex->home = steal_pointer (&pw.home);
      user_info_release (&pw);
    }
  else if (strcmp (ex->username, "root") == 0)
    {
      ex->uid = 0;
      ex->gid = 0;
      ex->home = xstrdup ("/root");
    }
  else
    {
      ex->gid = 0;
      ex->home = xasprintf ("/home/%s", ex->username);
    }
  cleanup_free char *warning = NULL;
  if (users_give_dir (ex->work_dir, ex->uid, 0, &warning, err) < 0)
    return -1;
  if (warning)
    fprintf (stderr, "ohbox-executor: warning: %s\n", warning);
  return 0;
}

void
executor_release (struct executor *ex)
{
  free (ex->listen_address);
  free (ex->work_dir);
  free (ex->username);
  free (ex->home);
  free (ex->api_key);
  free (ex->bash_path);
  free (ex->prestarted_user);
  free (ex->prestarted_dir);
  free_plugins (ex);
}

static void
on_stop_signal (int sig OHBOX_UNUSED)
{
}

/* As PID 1 of a sandbox the executor inherits every orphan: reap them. */
static void *
reaper_main (void *arg OHBOX_UNUSED)
{
  for (;;)
    {
      if (waitpid (-1, NULL, 0) < 0 && errno == ECHILD)
        sleep (1);
    }
  return NULL;
}

int
executor_session_start (struct executor *ex, ohbox_error_t *err)
{
  if (geteuid () == 0)
    {
      if (init_user (ex, err) < 0)
        return -1;
      ex->switch_user = env_true ("SU_TO_USER", true);
    }
  else
    {
      /* A plain process: the shell runs as whoever started the executor
       * (a user only a directory service knows: the environment's names). */
      struct user_info pw = { 0 };
      bool found = users_by_uid (geteuid (), &pw);
      const char *user = getenv ("USER"), *home = getenv ("HOME");
      free (ex->username);
      ex->username = found ? steal_pointer (&pw.name) : xstrdup (user && *user ? user : "user");
      ex->uid = geteuid ();
      ex->gid = getegid ();
      free (ex->home);
      ex->home = found ? steal_pointer (&pw.home) : xstrdup (home && *home ? home : "/");
      user_info_release (&pw);
      if (ohbox_mkdir_p (AT_FDCWD, ex->work_dir, 0755, err) < 0)
        return ohbox_error_prefix (err, "create the working directory");
    }
  ex->editor = editor_new (ex->work_dir);
  /* Without bash (a busybox or distroless image before the build layers
   * one in) the server still serves files; `run` reports the problem. */
  ohbox_error_t e = NULL;
  if (executor_bash_start (ex, &e) < 0)
    {
      fprintf (stderr, "ohbox-executor: warning: %s\n", e->msg);
      ohbox_error_release (&e);
    }
  return 0;
}

const char *
executor_api_key (struct executor *ex)
{
  return __atomic_load_n (&ex->api_key, __ATOMIC_ACQUIRE);
}

bool
executor_on_standby (struct executor *ex)
{
  return __atomic_load_n (&ex->standby, __ATOMIC_ACQUIRE);
}

/* OHBOX_EXECUTOR_STANDBY_SESSION=USER:UID:DIR (ohbox serve's pools): the
 * session most adoptions ask for, started now (a login shell takes
 * milliseconds); the variable is gone before anything is spawned. */
static int
standby_prestart (struct executor *ex, ohbox_error_t *err)
{
  const char *v = getenv ("OHBOX_EXECUTOR_STANDBY_SESSION");
  if (v == NULL || *v == '\0')
    return 0;
  cleanup_free char *copy = xstrdup (v);
  unsetenv ("OHBOX_EXECUTOR_STANDBY_SESSION");
  char *c1 = strchr (copy, ':'), *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
  char *end = NULL;
  unsigned long uid = c1 ? strtoul (c1 + 1, &end, 10) : 0;
  if (c1 == NULL || c2 == NULL || end != c2 || c1 == copy || c2[1] != '/')
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "OHBOX_EXECUTOR_STANDBY_SESSION `%s`: use USER:UID:/DIR", v);
  *c1 = *c2 = '\0';
  free (ex->username);
  ex->username = xstrdup (copy);
  ex->uid = (uid_t) uid;
  free (ex->work_dir);
  ex->work_dir = xstrdup (c2 + 1);
  if (executor_session_start (ex, err) < 0)
    return ohbox_error_prefix (err, "the standby session");
  ex->prestarted_user = xstrdup (copy);
  ex->prestarted_uid = (uid_t) uid;
  ex->prestarted_dir = xstrdup (c2 + 1);
  return 0;
}

static bool
wants_help (int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0)
      return true;
  return false;
}

int
main (int argc, char **argv)
{
  /* One malloc arena for every thread: a handful of threads, rarely more
   * than one busy at a time, gain nothing from arenas of their own, and a
   * worker's first request would pay for creating its arena and faulting
   * in its pages (~0.1 ms, on an agent's first command). */
  mallopt (M_ARENA_MAX, 1);
  struct executor ex = { 0 };
  ex.work_dir = xstrdup ("/workspace");
  ex.username = xstrdup ("openhands");
  ex.uid = 1000;
  ex.browser_enabled = true;
  cleanup_error ohbox_error_t err = NULL;
  if (wants_help (argc, argv))
    {
      usage (stdout);
      executor_release (&ex);
      return 0;
    }
  if (executor_parse_args (&ex, argc, argv, &err) < 0)
    {
      fprintf (stderr, "ohbox-executor: %s\n", err->msg);
      usage (stderr);
      executor_release (&ex);
      return 2;
    }

  const char *key = getenv ("SESSION_API_KEY");
  ex.api_key = key && *key ? xstrdup (key) : NULL;
  if (ex.standby && ex.api_key == NULL)
    {
      /* Anyone could adopt it. */
      fprintf (stderr, "ohbox-executor: --standby needs SESSION_API_KEY\n");
      executor_release (&ex);
      return 2;
    }
  const char *nc = getenv ("NO_CHANGE_TIMEOUT_SECONDS");
  ex.no_change_timeout = nc && *nc ? strtod (nc, NULL) : 10;
  if (ex.no_change_timeout <= 0)
    ex.no_change_timeout = 10;
  const char *mu = getenv ("OHBOX_EXECUTOR_MAX_UPLOAD");
  ex.max_upload = mu && *mu ? strtoull (mu, NULL, 10) : (2ULL << 30);
  /* A zip's unpacked bytes and entries are budgeted apart from its upload
   * size: a compressed upload can otherwise fill the disk (archive.c). */
  const char *mun = getenv ("OHBOX_EXECUTOR_MAX_UNPACKED");
  ex.max_unpacked = mun && *mun ? strtoull (mun, NULL, 10) : ex.max_upload;
  const char *mze = getenv ("OHBOX_EXECUTOR_MAX_ZIP_ENTRIES");
  unsigned long ze = mze && *mze ? strtoul (mze, NULL, 10) : 65536;
  ex.max_zip_entries = ze < 1 ? 1 : ze > 1000000 ? 1000000 : (unsigned int) ze;
  /* Fixed at startup: a request never creates a thread (server.h). */
  const char *nw = getenv ("OHBOX_EXECUTOR_WORKERS");
  unsigned long w = nw && *nw ? strtoul (nw, NULL, 10) : 4;
  ex.workers = w < 1 ? 1 : w > 64 ? 64 : (unsigned int) w;
  const char *nq = getenv ("OHBOX_EXECUTOR_QUEUE");
  unsigned long q = nq && *nq ? strtoul (nq, NULL, 10) : 64;
  ex.queue_len = q < 1 ? 1 : q > 1024 ? 1024 : (unsigned int) q;
  const char *bp = getenv ("OHBOX_EXECUTOR_BASH");
  ex.bash_path = bp && *bp ? xstrdup (bp) : NULL;
  pthread_mutex_init (&ex.action_lock, NULL);
  pthread_mutex_init (&ex.stats_lock, NULL);
  pthread_mutex_init (&ex.adopt_lock, NULL);
  ex.start_time = ex.last_exec_time = ohbox_monotonic ();

  /* Signals: a closed client socket must not kill the server; TERM/INT are
   * taken synchronously below, so block them before any thread starts. */
  signal (SIGPIPE, SIG_IGN);
  /* As PID 1 the kernel drops signals whose disposition is the default:
   * give them a handler so that sigwait() below receives them. */
  struct sigaction sa = { .sa_handler = on_stop_signal };
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  sigset_t stop;
  sigemptyset (&stop);
  sigaddset (&stop, SIGTERM);
  sigaddset (&stop, SIGINT);
  sigaddset (&stop, SIGHUP);
  pthread_sigmask (SIG_BLOCK, &stop, NULL);

  if (getpid () == 1)
    {
      pthread_t reaper;
      pthread_create (&reaper, NULL, reaper_main, NULL);
      pthread_detach (reaper);
    }

  /* On standby the session starts with the adoption (adopt.c), or now
   * for the user and directory the pool expects. */
  if (ex.standby && standby_prestart (&ex, &err) < 0)
    {
      fprintf (stderr, "ohbox-executor: %s\n", err->msg);
      executor_release (&ex);
      return 2;
    }
  if (!ex.standby && executor_session_start (&ex, &err) < 0)
    {
      fprintf (stderr, "ohbox-executor: %s\n", err->msg);
      executor_release (&ex);
      return 1;
    }

  struct server *srv = NULL;
  if (server_start (&ex, &srv, &err) < 0)
    {
      fprintf (stderr, "ohbox-executor: %s\n", err->msg);
      bash_session_free (ex.bash);
      editor_free (ex.editor);
      executor_release (&ex);
      return 1;
    }
  if (ex.standby)
    fprintf (stderr, "ohbox-executor: on standby on port %d of %s\n", ex.port,
             ex.listen_address ? ex.listen_address : "every address");
  else
    fprintf (stderr, "ohbox-executor: listening on port %d of %s, working directory %s, user %s\n", ex.port,
             ex.listen_address ? ex.listen_address : "every address", ex.work_dir, ex.username);

  int sig = 0;
  sigwait (&stop, &sig);
  server_stop (srv);
  pthread_mutex_lock (&ex.adopt_lock);
  pthread_mutex_lock (&ex.action_lock);
  bash_session_free (ex.bash);
  ex.bash = NULL;
  editor_free (ex.editor);
  ipython_free (ex.ipython);
  pthread_mutex_unlock (&ex.action_lock);
  pthread_mutex_unlock (&ex.adopt_lock);
  executor_release (&ex);
  return 0;
}
