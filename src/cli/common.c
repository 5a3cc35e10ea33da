/* common.c: error reporting and output helpers shared by the commands. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/authfile.h"
#include "cli.h"
#include "registry/registries_conf.h"
#include "registry/registry.h"
#include "store/store.h"

int
cli_fail (const char *command, ohbox_error_t *err)
{
  int code = OHBOX_ERR_GENERIC;
  if (err && *err)
    {
      fprintf (stderr, "ohbox %s: %s\n", command, (*err)->msg);
      code = (*err)->kind;
      ohbox_error_release (err);
    }
  else
    fprintf (stderr, "ohbox %s: failed\n", command);
  fflush (stdout);
  return code;
}

int
cli_usage_error (const char *command, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fprintf (stderr, "ohbox %s: ", command);
  vfprintf (stderr, fmt, ap);
  fprintf (stderr, "\nRun 'ohbox %s --help' for usage.\n", command);
  va_end (ap);
  return OHBOX_ERR_USAGE;
}

int
cli_parse_format (const char *s, enum cli_format *out)
{
  if (strcmp (s, "json") == 0)
    *out = CLI_FORMAT_JSON;
  else if (strcmp (s, "table") == 0)
    *out = CLI_FORMAT_TABLE;
  else
    return -1;
  return 0;
}

void
cli_print_json (json_t *j)
{
  json_dumpf (j, stdout, JSON_INDENT (2));
  fputc ('\n', stdout);
}

const char *
cli_store_root (void)
{
  static char *root;
  if (cli_global.root)
    return cli_global.root;
  if (root == NULL)
    root = ohbox_store_default_root ();
  return root;
}

int
cli_open_store (const char *command, struct ohbox_store **out)
{
  ohbox_error_t err = NULL;
  if (ohbox_store_open (cli_store_root (), out, &err) < 0)
    return cli_fail (command, &err);
  return 0;
}

int
cli_parse_bool (const char *s, bool *out)
{
  if (strcmp (s, "true") == 0 || strcmp (s, "1") == 0 || strcmp (s, "yes") == 0)
    *out = true;
  else if (strcmp (s, "false") == 0 || strcmp (s, "0") == 0 || strcmp (s, "no") == 0)
    *out = false;
  else
    return -1;
  return 0;
}

int
cli_parse_duration (const char *s, double *ret)
{
  char *end = NULL;
  errno = 0;
  double v = strtod (s, &end);
  if (errno || end == s || !(v > 0))
    return -1;
  if (strcmp (end, "ms") == 0)
    v /= 1000;
  else if (strcmp (end, "m") == 0)
    v *= 60;
  else if (strcmp (end, "h") == 0)
    v *= 3600;
  else if (*end && strcmp (end, "s") != 0)
    return -1;
  if (v > 366 * 86400.0)
    return -1;
  *ret = v;
  return 0;
}

int
cli_parse_timeout (const char *s, double *ret)
{
  if (strcmp (s, "0") == 0)
    {
      *ret = -1;
      return 0;
    }
  return cli_parse_duration (s, ret);
}

int
cli_parse_size (const char *s, uint64_t *out)
{
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull (s, &end, 10);
  if (errno || end == s || *s == '-')
    return -1;
  uint64_t mult = 1;
  switch (*end)
    {
    case 'k': case 'K': mult = 1ULL << 10; end++; break;
    case 'm': case 'M': mult = 1ULL << 20; end++; break;
    case 'g': case 'G': mult = 1ULL << 30; end++; break;
    case 't': case 'T': mult = 1ULL << 40; end++; break;
    default: break;
    }
  if (*end == 'i' || *end == 'B')
    end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
  if (*end != '\0' || v == 0 || v > UINT64_MAX / mult)
    return -1;
  *out = v * mult;
  return 0;
}

int
cli_registry_option (const char *command, int opt, const char *arg, struct cli_registry_args *a)
{
  bool verify;
  switch (opt)
    {
    case CLI_OPT_CREDS:
      a->creds = arg;
      return 1;
    case CLI_OPT_AUTHFILE:
      a->ro->authfile = arg;
      return 1;
    case CLI_OPT_CERT_DIR:
      a->ro->cert_dir = arg;
      return 1;
    case CLI_OPT_TLS_VERIFY:
      if (cli_parse_bool (arg, &verify) < 0)
        return cli_usage_error (command, "--tls-verify takes true or false, not `%s`", arg);
      /* false also allows plain HTTP: registry.h, insecure. */
      a->ro->insecure = !verify;
      a->tls_verify_explicit = true;
      return 1;
    default:
      return 0;
    }
}

int
cli_registry_prepare (const char *command, struct cli_registry_args *a, bool with_conf,
                      struct ohbox_registries_conf **ret_conf)
{
  ohbox_error_t err = NULL;
  if (ret_conf)
    *ret_conf = NULL;
  if (a->creds && ohbox_credentials_parse (a->creds, &a->parsed, &err) < 0)
    return cli_fail (command, &err);
  a->ro->creds = a->parsed;
  if (with_conf && ohbox_registries_conf_load (cli_global.registries_conf, ret_conf, &err) < 0)
    {
      cli_registry_release (a, NULL);
      return cli_fail (command, &err);
    }
  return 0;
}

void
cli_registry_release (struct cli_registry_args *a, struct ohbox_registries_conf *conf)
{
  ohbox_credentials_free (a->parsed);
  a->parsed = NULL;
  a->ro->creds = NULL;
  ohbox_registries_conf_free (conf);
}

