/* test-strv.c: string vectors, environments and PATH lookup (common/strv.h),
 * which the sandbox, exec, network, serve and executor code share. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/strv.h"
#include "common/utils.h"
#include "unit.h"

static void
test_vectors (void)
{
  CHECK (ohbox_strv_len (NULL) == 0);
  CHECK (ohbox_strv_dup (NULL) == NULL);
  ohbox_strv_free (NULL);
  char **v = NULL;
  size_t n = 0;
  ohbox_strv_push (&v, &n, xstrdup ("a"));
  ohbox_strv_push (&v, &n, xstrdup ("b"));
  CHECK (n == 2 && ohbox_strv_len (v) == 2 && v[2] == NULL);
  char **copy = ohbox_strv_dup (v);
  CHECK (copy != v && copy[0] != v[0] && strcmp (copy[1], "b") == 0 && copy[2] == NULL);
  ohbox_strv_free (copy);
  ohbox_strv_free (v);
}

static void
test_env (void)
{
  char **v = NULL;
  size_t n = 0;
  ohbox_strv_env_set (&v, &n, "PATH=/bin");
  ohbox_strv_env_set (&v, &n, "PATHX=1");
  ohbox_strv_env_set (&v, &n, "PATH=/usr/bin");
  ohbox_strv_env_set (&v, &n, "EMPTY=");
  CHECK (n == 3, "a key is set once: %zu entries", n);
  CHECK (strcmp (v[0], "PATH=/usr/bin") == 0, "replaced in place: %s", v[0]);
  CHECK (strcmp (ohbox_strv_env_get (v, "PATH"), "/usr/bin") == 0);
  CHECK (strcmp (ohbox_strv_env_get (v, "PATHX"), "1") == 0);
  CHECK (strcmp (ohbox_strv_env_get (v, "EMPTY"), "") == 0);
  CHECK (ohbox_strv_env_get (v, "PAT") == NULL, "a prefix of a key is not the key");
  CHECK (ohbox_strv_env_get (NULL, "PATH") == NULL);
  ohbox_strv_free (v);
}

/* DIR/NAME with MODE. */
static void
make_file (const char *dir, const char *name, mode_t mode, const char *text)
{
  cleanup_free char *p = xasprintf ("%s/%s", dir, name);
  int fd = open (p, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd >= 0)
    {
      if (write (fd, text, strlen (text)) < 0)
        abort ();
      close (fd);
    }
  chmod (p, mode);
}

static char *
temp_dir (void)
{
  char tmpl[] = "/tmp/test-strv.XXXXXX";
  return mkdtemp (tmpl) ? xstrdup (tmpl) : NULL;
}

static void
test_path_find (void)
{
  cleanup_free char *a = temp_dir ();
  cleanup_free char *b = temp_dir ();
  CHECK (a && b);
  make_file (a, "tool", 0644, "not executable\n");
  make_file (b, "tool", 0755, "#!/bin/sh\n");
  cleanup_free char *path = xasprintf ("/nonexistent::%s:%s", a, b);
  cleanup_free char *found = ohbox_path_find (path, "/bin", "tool");
  cleanup_free char *want = xasprintf ("%s/tool", b);
  CHECK (found && strcmp (found, want) == 0, "the first executable one: %s", found ? found : "(none)");
  cleanup_free char *none = ohbox_path_find (path, "/bin", "no-such-tool");
  CHECK (none == NULL);
  cleanup_free char *fallback = ohbox_path_find ("", b, "tool");
  CHECK (fallback && strcmp (fallback, want) == 0, "an empty PATH uses the fallback");
  cleanup_free char *cmd = xasprintf ("rm -rf %s %s", a, b);
  CHECK (system (cmd) == 0);
}

/* ohbox_exec_in_path in a child: its exit status, or 100 + the errno it returned. */
static int
exec_status (const char *file, char *const *env)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      char *const argv[] = { (char *) file, (char *) "-c", (char *) "exit 7", NULL };
      int fd = open ("/dev/null", O_WRONLY);
      dup2 (fd, 2);
      _exit (100 + ohbox_exec_in_path (file, argv, env));
    }
  int status = 0;
  waitpid (pid, &status, 0);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static void
test_exec_in_path (void)
{
  cleanup_free char *a = temp_dir ();
  CHECK (a);
  make_file (a, "noexec", 0644, "#!/bin/sh\nexit 3\n");
  cleanup_free char *path = xasprintf ("PATH=%s:/bin:/usr/bin", a);
  char *const env[] = { path, NULL };
  CHECK (exec_status ("sh", env) == 7, "found in PATH and run");
  CHECK (exec_status ("no-such-command", env) == 100 + ENOENT);
  CHECK (exec_status ("noexec", env) == 100 + EACCES, "found but not executable: EACCES, not ENOENT");
  char *const no_path[] = { (char *) "HOME=/", NULL };
  CHECK (exec_status ("sh", no_path) == 7, "no PATH: the default one");
  CHECK (exec_status ("/bin/sh", env) == 7, "a path with a slash is not searched");
  CHECK (exec_status ("/nonexistent/sh", env) == 100 + ENOENT);
  cleanup_free char *cmd = xasprintf ("rm -rf %s", a);
  CHECK (system (cmd) == 0);
}

UNIT_MAIN_BEGIN ("test-strv")
RUN_TEST (test_vectors);
RUN_TEST (test_env);
RUN_TEST (test_path_find);
RUN_TEST (test_exec_in_path);
UNIT_MAIN_END
