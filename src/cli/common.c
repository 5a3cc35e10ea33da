/* common.c: error reporting and output helpers shared by the commands. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The error a command left for main (cli_fail), and whether it is a usage error. */
static ohbox_error_t pending;
static bool pending_usage;

static const char *
command_name (void)
{
  return cli_global.command ? cli_global.command : "";
}

static void
print_error (const ohbox_error_t e, bool usage)
{
  fflush (stdout);
  fprintf (stderr, "ohbox %s: %s\n", command_name (), e ? e->msg : "failed");
  if (usage)
    fprintf (stderr, "Run 'ohbox %s --help' for usage.\n", command_name ());
}

void
cli_report_pending (void)
{
  if (pending == NULL)
    return;
  print_error (pending, pending_usage);
  ohbox_error_release (&pending);
}

static void
keep (ohbox_error_t *err, bool usage)
{
  /* A second error before main: the first one is printed now, in order. */
  cli_report_pending ();
  ohbox_error_move (&pending, err);
  pending_usage = usage;
}

int
cli_fail_code (ohbox_error_t *err, int code)
{
  if (err == NULL || *err == NULL)
    {
      ohbox_error_t e = NULL;
      ohbox_error (&e, OHBOX_ERR_GENERIC, 0, "failed");
      keep (&e, false);
      return code;
    }
  keep (err, false);
  return code;
}

int
cli_fail (ohbox_error_t *err)
{
  return cli_fail_code (err, err && *err ? (*err)->kind : OHBOX_ERR_GENERIC);
}

int
cli_report_now (ohbox_error_t *err)
{
  int code = cli_fail (err);
  cli_report_pending ();
  return code;
}

static int
usage_v (int code, const char *fmt, va_list ap)
{
  ohbox_error_t e = NULL;
  ohbox_error_v (&e, OHBOX_ERR_USAGE, 0, fmt, ap);
  keep (&e, true);
  return code;
}

int
cli_usage_error (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  int code = usage_v (OHBOX_ERR_USAGE, fmt, ap);
  va_end (ap);
  return code;
}

int
cli_usage_error_code (int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  usage_v (code, fmt, ap);
  va_end (ap);
  return code;
}

int
cli_error (int code, const char *fmt, ...)
{
  ohbox_error_t e = NULL;
  va_list ap;
  va_start (ap, fmt);
  ohbox_error_v (&e, OHBOX_ERR_USAGE, 0, fmt, ap);
  va_end (ap);
  keep (&e, false);
  return code;
}

int
cli_usage_hint (int code)
{
  cli_report_pending ();
  fprintf (stderr, "Run 'ohbox %s --help' for usage.\n", command_name ());
  return code;
}

static void
say (const char *what, const char *fmt, va_list ap)
{
  fflush (stdout);
  fprintf (stderr, "ohbox %s: %s", command_name (), what);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
}

void
cli_warn (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  say ("warning: ", fmt, ap);
  va_end (ap);
}

void
cli_note (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  say ("", fmt, ap);
  va_end (ap);
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

int
cli_format_option (const char *arg, enum cli_format *out)
{
  if (cli_parse_format (arg, out) == 0)
    return 0;
  cli_usage_error ("--format takes json or table, not `%s`", arg);
  return -1;
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
cli_open_store (struct ohbox_store **out)
{
  ohbox_error_t err = NULL;
  if (ohbox_store_open (cli_store_root (), out, &err) < 0)
    return cli_fail (&err);
  return 0;
}

int
cli_session_open (struct cli_session *s, ohbox_error_t *err)
{
  memset (s, 0, sizeof *s);
  if (ohbox_store_open (cli_store_root (), &s->store, err) < 0)
    return -1;
  ohbox_store_unlock (s->store);
  if (ohbox_runtime_open (s->store, NULL, &s->rt, err) < 0)
    {
      cli_session_close (s);
      return -1;
    }
  return 0;
}

void
cli_session_close (struct cli_session *s)
{
  ohbox_runtime_close (s->rt);
  ohbox_store_close (s->store);
  s->rt = NULL;
  s->store = NULL;
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
    case 'k':
    case 'K':
      mult = 1ULL << 10;
      end++;
      break;
    case 'm':
    case 'M':
      mult = 1ULL << 20;
      end++;
      break;
    case 'g':
    case 'G':
      mult = 1ULL << 30;
      end++;
      break;
    case 't':
    case 'T':
      mult = 1ULL << 40;
      end++;
      break;
    default:
      break;
    }
  if (*end == 'i' || *end == 'B')
    end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
  if (*end != '\0' || v == 0 || v > UINT64_MAX / mult)
    return -1;
  *out = v * mult;
  return 0;
}

int
cli_registry_option (int opt, const char *arg, struct cli_registry_args *a)
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
        return cli_usage_error ("--tls-verify takes true or false, not `%s`", arg);
      /* false also allows plain HTTP: registry.h, insecure. */
      a->ro->insecure = !verify;
      a->tls_verify_explicit = true;
      return 1;
    default:
      return 0;
    }
}

int
cli_registry_prepare (struct cli_registry_args *a, bool with_conf, struct ohbox_registries_conf **ret_conf)
{
  ohbox_error_t err = NULL;
  if (ret_conf)
    *ret_conf = NULL;
  if (a->creds && ohbox_credentials_parse (a->creds, &a->parsed, &err) < 0)
    return cli_fail (&err);
  a->ro->creds = a->parsed;
  if (with_conf && ohbox_registries_conf_load (cli_global.registries_conf, ret_conf, &err) < 0)
    {
      cli_registry_release (a, NULL);
      return cli_fail (&err);
    }
  return 0;
}

int
cli_pull_prepare (struct cli_registry_args *a, struct ohbox_pull_options *po, struct ohbox_registries_conf **ret_conf)
{
  po->tls_verify_explicit = a->tls_verify_explicit;
  int rc = cli_registry_prepare (a, true, ret_conf);
  po->conf = *ret_conf;
  return rc;
}

void
cli_registry_release (struct cli_registry_args *a, struct ohbox_registries_conf *conf)
{
  ohbox_credentials_free (a->parsed);
  a->parsed = NULL;
  a->ro->creds = NULL;
  ohbox_registries_conf_free (conf);
}

int
cli_pull_limit_option (int opt, const char *arg, struct ohbox_pull_options *po, ohbox_error_t *err)
{
  switch (opt)
    {
    case CLI_OPT_MAX_LAYER:
    case CLI_OPT_MAX_IMAGE:
      if (cli_parse_size (arg, opt == CLI_OPT_MAX_LAYER ? &po->max_layer_size : &po->max_image_size) < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--%s takes a size in bytes (suffixes K, M, G, T), not `%s`",
                            opt == CLI_OPT_MAX_LAYER ? "max-layer-size" : "max-image-size", arg);
      return 1;
    case CLI_OPT_TIMEOUT:
    case CLI_OPT_PULL_TIMEOUT:
      if (cli_parse_timeout (arg, &po->timeout_s) < 0)
        return ohbox_error (err, OHBOX_ERR_USAGE, 0, "--%s takes a duration (30s, 10m, 1h) or 0 for none, not `%s`",
                            opt == CLI_OPT_TIMEOUT ? "timeout" : "pull-timeout", arg);
      return 1;
    default:
      return 0;
    }
}

int
cli_common_option (int opt, const char *arg, struct cli_common_args *a)
{
  int r;
  ohbox_error_t err = NULL;
  switch (opt)
    {
    case CLI_OPT_FORMAT:
      return cli_format_option (arg, &a->format) < 0 ? OHBOX_ERR_USAGE : 0;
    case 'q':
      a->quiet = true;
      return 0;
    default:
      r = a->pull ? cli_pull_limit_option (opt, arg, a->pull, &err) : 0;
      if (r < 0)
        {
          keep (&err, true);
          return OHBOX_ERR_USAGE;
        }
      if (r == 0 && a->registry)
        r = cli_registry_option (opt, arg, a->registry);
      if (r == 1)
        return 0;
      return r == 0 ? cli_usage_error ("invalid option") : r;
    }
}

/* The options cli_common_option parses (those of the registry only where
 * the command has them). */
static bool
is_common_option (int opt, const struct cli_common_args *a)
{
  if (opt == CLI_OPT_FORMAT || opt == 'q')
    return true;
  if (a->pull && opt >= CLI_OPT_MAX_LAYER && opt <= CLI_OPT_PULL_TIMEOUT)
    return true;
  return a->registry && opt >= CLI_OPT_CREDS && opt <= CLI_OPT_TLS_VERIFY;
}

int
cli_next_option (int argc, char **argv, const char *shortopts, const struct option *opts, const char *help,
                 struct cli_common_args *co, int *rc)
{
  *rc = 0;
  for (;;)
    {
      int c = getopt_long (argc, argv, shortopts, opts, NULL);
      if (c == 0)
        continue; /* a flag getopt set (struct option's flag) */
      if (c == 'h')
        {
          fputs (help, stdout);
          *rc = 0;
          return CLI_OPT_RETURN;
        }
      if (c == '?')
        {
          *rc = cli_usage_error ("invalid option");
          return CLI_OPT_RETURN;
        }
      if (co == NULL || !is_common_option (c, co))
        return c;
      *rc = cli_common_option (c, optarg, co);
      if (*rc != 0)
        return CLI_OPT_RETURN;
    }
}

struct ohbox_store *
cli_options_open_store (int argc, char **argv, const char *shortopts, const struct option *opts, const char *help,
                        struct cli_common_args *co, int *rc)
{
  struct ohbox_store *store = NULL;
  int c;
  while ((c = cli_next_option (argc, argv, shortopts, opts, help, co, rc)) >= 0)
    {
      *rc = cli_usage_error ("invalid option"); /* (not a flag: OPTS is wrong) */
      return NULL;
    }
  if (c == CLI_OPT_RETURN)
    return NULL;
  if (optind != argc)
    *rc = cli_usage_error ("unexpected argument `%s`", argv[optind]);
  else
    *rc = cli_open_store (&store);
  return store;
}
