/* login.c: `ohbox login` and `ohbox logout` (auth.json, as podman and skopeo). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

/* Reads one line from stdin (the password), without echo on a terminal. */
static char *
read_secret (const char *prompt)
{
  struct termios old, noecho;
  bool tty = isatty (STDIN_FILENO);
  if (tty && prompt)
    {
      fprintf (stderr, "%s", prompt);
      tcgetattr (STDIN_FILENO, &old);
      noecho = old;
      noecho.c_lflag &= ~(tcflag_t) ECHO;
      tcsetattr (STDIN_FILENO, TCSANOW, &noecho);
    }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline (&line, &cap, stdin);
  if (tty && prompt)
    {
      tcsetattr (STDIN_FILENO, TCSANOW, &old);
      fputc ('\n', stderr);
    }
  if (n < 0)
    {
      free (line);
      return NULL;
    }
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  return line;
}

/* "docker.io", "https://index.docker.io/v1/" and "host:port/path" all name a registry host. */
static char *
registry_key (const char *arg)
{
  const char *p = arg;
  if (strncmp (p, "https://", 8) == 0)
    p += 8;
  else if (strncmp (p, "http://", 7) == 0)
    p += 7;
  const char *slash = strchr (p, '/');
  char *host = slash ? xstrndup (p, (size_t) (slash - p)) : xstrdup (p);
  if (strcmp (host, "index.docker.io") == 0 || strcmp (host, "registry-1.docker.io") == 0)
    {
      free (host);
      host = xstrdup ("docker.io");
    }
  return host;
}

int
cli_login (int argc, char **argv)
{
  enum
  {
    OPT_PASSWORD_STDIN = 256,
  };
  static const struct option opts[] = {
    { "username", required_argument, NULL, 'u' },
    { "password", required_argument, NULL, 'p' },
    { "password-stdin", no_argument, NULL, OPT_PASSWORD_STDIN },
    CLI_REGISTRY_OPTIONS,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *username = NULL, *password_arg = NULL;
  bool password_stdin = false;
  struct ohbox_registry_options ro = { 0 };
  struct cli_registry_args ra = { .ro = &ro };
  struct cli_common_args co = { .registry = &ra };
  static const char help[] = "Usage: ohbox login [-u USER] [-p PASS | --password-stdin] [--authfile FILE]\n"
                             "                   [--cert-dir DIR] [--tls-verify=BOOL] REGISTRY\n\n"
                             "Check credentials against REGISTRY and store them in auth.json.\n";
  int c, rc;
  while ((c = cli_next_option (argc, argv, "u:p:h", opts, help, &co, &rc)) >= 0)
    switch (c)
      {
      case 'u':
        username = optarg;
        break;
      case 'p':
        password_arg = optarg;
        break;
      case OPT_PASSWORD_STDIN:
        password_stdin = true;
        break;
      }
  if (c == CLI_OPT_RETURN)
    return rc;
  if (argc - optind != 1)
    return cli_usage_error ("expected one REGISTRY");
  if (password_arg && password_stdin)
    return cli_usage_error ("--password and --password-stdin cannot be used together");
  cleanup_free char *host = registry_key (argv[optind]);
  cleanup_free char *user = NULL;
  if (username)
    user = xstrdup (username);
  else if (password_stdin || !isatty (STDIN_FILENO))
    return cli_usage_error ("--username is required when the password comes from stdin");
  else
    {
      fprintf (stderr, "Username: ");
      user = read_secret (NULL);
    }
  cleanup_free char *password = NULL;
  if (password_arg)
    password = xstrdup (password_arg);
  else
    password = read_secret (password_stdin ? NULL : "Password: ");
  if (user == NULL || *user == '\0' || password == NULL)
    return cli_usage_error ("a username and a password are required");

  struct ohbox_credentials creds = { .username = user, .password = password };
  ro.creds = &creds;
  ohbox_error_t err = NULL;
  struct ohbox_registry *r = NULL;
  if (ohbox_registry_new (ohbox_registry_endpoint_host (host), &ro, &r, &err) < 0)
    return cli_fail (&err);
  if (ohbox_registry_check_credentials (r, &err) < 0)
    rc = cli_fail (&err);
  ohbox_registry_free (r);
  if (rc)
    return rc;
  cleanup_free char *path = ohbox_authfile_default_path (ro.authfile);
  if (ohbox_authfile_store (path, host, &creds, &err) < 0)
    return cli_fail (&err);
  printf ("Login Succeeded\n");
  return 0;
}

int
cli_logout (int argc, char **argv)
{
  static const struct option opts[] = {
    { "authfile", required_argument, NULL, 'a' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  static const char help[] = "Usage: ohbox logout [--authfile FILE] REGISTRY\n\n"
                             "Remove the stored credentials for REGISTRY from auth.json.\n";
  const char *authfile = NULL;
  int c, rc;
  while ((c = cli_next_option (argc, argv, "h", opts, help, NULL, &rc)) >= 0)
    if (c == 'a')
      authfile = optarg;
  if (c == CLI_OPT_RETURN)
    return rc;
  if (argc - optind != 1)
    return cli_usage_error ("expected one REGISTRY");
  cleanup_free char *host = registry_key (argv[optind]);
  cleanup_free char *path = ohbox_authfile_default_path (authfile);
  ohbox_error_t err = NULL;
  int r = ohbox_authfile_remove (path, host, &err);
  if (r < 0)
    return cli_fail (&err);
  if (r == 0)
    {
      return cli_error (OHBOX_ERR_NOT_FOUND, "not logged in to %s (no entry in %s)", host, path);
    }
  printf ("Removed login credentials for %s\n", host);
  return 0;
}
