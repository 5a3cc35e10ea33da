/* cli.h: what the command files of the ohbox CLI share: global options,
 * error reporting with documented exit codes, and output helpers. The CLI
 * parses arguments and formats output; all logic lives in libohbox. */
#ifndef OHBOX_CLI_H
#define OHBOX_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/frontend.h"

/* Exit codes (man/ohbox.1, EXIT STATUS): 0 success, else the error kind. */
#define OHBOX_EXIT_OK 0

enum cli_format
{
  CLI_FORMAT_TABLE,
  CLI_FORMAT_JSON,
};

struct cli_global
{
  const char *root;            /* --root, else the default store */
  const char *registries_conf; /* --registries-conf */
  const char *command;         /* what errors are reported as: "pull", "ci gitlab run" */
};

extern struct cli_global cli_global;

typedef int (*cli_command_fn) (int argc, char **argv);

/* Errors (the CLI's contract; HACKING.md, "Errors"): a command returns
 * its exit code; on failure it hands its ohbox_error_t to cli_fail (or
 * cli_fail_code, cli_usage_error) and returns what that returns. main
 * prints the error once, after the command, as "ohbox COMMAND: MESSAGE"
 * (COMMAND is cli_global.command). A command that goes on after an error
 * (one per SANDBOX argument, a pull inside another command) reports it at
 * once with cli_report_now. Nothing else in the CLI prints errors. */

/* Keeps ERR (taken) for main to print; returns the exit code of its kind. */
int cli_fail (ohbox_error_t *err);
/* The same with exit code CODE (ohbox run, exec, action: 125). */
int cli_fail_code (ohbox_error_t *err, int code);
/* A usage error (printed with "Run 'ohbox COMMAND --help' for usage."); returns 2. */
int cli_usage_error (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* The same with exit code CODE. */
int cli_usage_error_code (int code, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* An error of the CLI's own (no library error behind it): kept for main
 * like cli_fail; returns CODE. */
int cli_error (int code, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* After getopt printed what was wrong: "Run 'ohbox COMMAND --help' for
 * usage." now; returns CODE. */
int cli_usage_hint (int code);
/* Prints ERR (taken) now, as main would; returns the exit code of its kind. */
int cli_report_now (ohbox_error_t *err);
/* "ohbox COMMAND: warning: ..." now. */
void cli_warn (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* "ohbox COMMAND: ..." now: what the user must know that is no error. */
void cli_note (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* main: prints the error a command left, if any. */
void cli_report_pending (void);
/* Parses "table" / "json"; returns -1 on unknown values. */
int cli_parse_format (const char *s, enum cli_format *out);
/* --format ARG, for every command that has it: 0, or -1 with the usage
 * error ("--format takes json or table, not `ARG`") kept for main. */
int cli_format_option (const char *arg, enum cli_format *out);
/* Prints JSON to stdout, indented, with a trailing newline. */
void cli_print_json (json_t *j);
/* The store root to use. */
const char *cli_store_root (void);
struct ohbox_store;
/* Opens the store; 0, or the exit code of the error (cli_fail). */
int cli_open_store (struct ohbox_store **out);
/* The store and the runtime of its sandboxes, for a command that never
 * writes the store (ps, stop, exec, attach...): the store is unlocked, GC
 * may run meanwhile. 0, or -1 with ERR (nothing left open). */
struct cli_session
{
  struct ohbox_store *store;
  struct ohbox_runtime *rt;
};
int cli_session_open (struct cli_session *s, ohbox_error_t *err);
/* (also after a failed cli_session_open) */
void cli_session_close (struct cli_session *s);
/* "true"/"false" (also 1/0, yes/no). */
int cli_parse_bool (const char *s, bool *out);
/* "90", "90s", "1.5m", "2h", "500ms" to seconds (> 0, at most a year); -1 when invalid. */
int cli_parse_duration (const char *s, double *ret);
/* A byte count with an optional K/M/G/T suffix (powers of 1024, "KiB" and
 * "KB" too), > 0; -1 when invalid. */
int cli_parse_size (const char *s, uint64_t *out);
/* A pull's --timeout: a duration, or 0 for none (*RET < 0). */
int cli_parse_timeout (const char *s, double *ret);

/* The registry options pull, build, push and login share: one parser, one
 * meaning. Commands put CLI_REGISTRY_OPTIONS (and CLI_CREDS_OPTION where
 * --creds is accepted) in their option table and hand every option they do
 * not know to cli_registry_option. */
enum
{
  CLI_OPT_CREDS = 0x1000,
  CLI_OPT_AUTHFILE,
  CLI_OPT_CERT_DIR,
  CLI_OPT_TLS_VERIFY,
};
#define CLI_CREDS_OPTION                                                                                               \
  {                                                                                                                    \
    "creds", required_argument, NULL, CLI_OPT_CREDS                                                                    \
  }
#define CLI_REGISTRY_OPTIONS                                                                                           \
  { "authfile", required_argument, NULL, CLI_OPT_AUTHFILE },                                                           \
    { "cert-dir", required_argument, NULL, CLI_OPT_CERT_DIR },                                                         \
  {                                                                                                                    \
    "tls-verify", required_argument, NULL, CLI_OPT_TLS_VERIFY                                                          \
  }

struct ohbox_registry_options;
struct cli_registry_args
{
  struct ohbox_registry_options *ro; /* filled by --authfile, --cert-dir, --tls-verify */
  const char *creds;                 /* --creds USER:PASS, parsed by cli_registry_prepare */
  bool tls_verify_explicit;          /* --tls-verify was given */
  struct ohbox_credentials *parsed;  /* what ro->creds points to */
};
/* 1 when OPT was one of the options above (stored in A), 0 when it is not,
 * 2 (a usage error, cli_usage_error) when its value is wrong. */
int cli_registry_option (int opt, const char *arg, struct cli_registry_args *a);
struct ohbox_registries_conf;
/* After the options: --creds parsed into A->ro->creds and, WITH_CONF,
 * registries.conf (--registries-conf) loaded into *RET_CONF. 0, or the
 * exit code of the error (cli_fail). Freed by cli_registry_release. */
int cli_registry_prepare (struct cli_registry_args *a, bool with_conf, struct ohbox_registries_conf **ret_conf);
void cli_registry_release (struct cli_registry_args *a, struct ohbox_registries_conf *conf);
struct ohbox_pull_options;
/* For a command that pulls (pull, build, serve): cli_registry_prepare with
 * registries.conf, and PO given the conf and whether --tls-verify was
 * given (an explicit one wins over the conf's insecure registries). */
int cli_pull_prepare (struct cli_registry_args *a, struct ohbox_pull_options *po,
                      struct ohbox_registries_conf **ret_conf);

/* The limits of a pull (pull, build, ci gitlab), each a long option in
 * the command's table: --max-layer-size, --max-image-size and the pull's
 * timeout, --timeout (pull) or --pull-timeout (the others). */
enum
{
  CLI_OPT_MAX_LAYER = 0x1080,
  CLI_OPT_MAX_IMAGE,
  CLI_OPT_TIMEOUT,
  CLI_OPT_PULL_TIMEOUT,
};
/* 1 when OPT was one of the options above (stored in PO), 0 when it is
 * not, -1 with ERR (a usage error naming the option) when ARG is wrong. */
int cli_pull_limit_option (int opt, const char *arg, struct ohbox_pull_options *po, ohbox_error_t *err);

/* The options several commands share, parsed in one place (common.c):
 * --format, -q/--quiet and, where REGISTRY and PULL are set, the registry
 * options and the pull's limits. A command lists CLI_FORMAT_OPTION (and
 * CLI_QUIET_OPTION, the registry options...) in its table and hands every
 * option its own switch does not know to cli_common_option. */
enum
{
  CLI_OPT_FORMAT = 0x1100,
};
#define CLI_FORMAT_OPTION                                                                                              \
  {                                                                                                                    \
    "format", required_argument, NULL, CLI_OPT_FORMAT                                                                  \
  }
#define CLI_QUIET_OPTION                                                                                               \
  {                                                                                                                    \
    "quiet", no_argument, NULL, 'q'                                                                                    \
  }
struct cli_common_args
{
  enum cli_format format;             /* CLI_FORMAT_TABLE unless --format json */
  bool quiet;                         /* -q */
  struct cli_registry_args *registry; /* NULL: the command has no registry options */
  struct ohbox_pull_options *pull;    /* NULL: no pull limits */
};
/* 0 when OPT was one of the common options, else the exit code: a usage
 * error for an option the command does not take either. */
int cli_common_option (int opt, const char *arg, struct cli_common_args *a);
/* A command's option loop, with what every command answers the same way:
 * -h/--help prints HELP on stdout, an option getopt rejected is a usage
 * error ("invalid option"), a flag getopt sets itself (struct option's
 * flag) is passed over and, where CO is set, the common options above
 * (those CO's command lists) are stored in CO. Returns the next option for
 * the command's own switch, -1 after the last, or CLI_OPT_RETURN: the
 * command returns *RC now (0 after --help, else the error's exit code).
 * *RC is 0 whenever the command goes on.
 *   while ((c = cli_next_option (argc, argv, "h", opts, help, &co, &rc)) >= 0)
 *     switch (c) { ...the command's options... }
 *   if (c == CLI_OPT_RETURN)
 *     return rc; */
#define CLI_OPT_RETURN (-2)
struct option;
int cli_next_option (int argc, char **argv, const char *shortopts, const struct option *opts, const char *help,
                     struct cli_common_args *co, int *rc);
/* For a command that takes no arguments and whose own options are flags
 * getopt sets (struct option's flag): its options (cli_next_option), a
 * usage error for an argument, else the store opened (cli_open_store).
 * The store, or NULL with *RC the exit code to return (0 after --help). */
struct ohbox_store *cli_options_open_store (int argc, char **argv, const char *shortopts, const struct option *opts,
                                            const char *help, struct cli_common_args *co, int *rc);

int cli_pull (int argc, char **argv);
struct ohbox_pull_options;
struct ohbox_pull_result;
/* `ohbox pull IMAGE` with PO ready (registries.conf and credentials in it):
 * progress and the result on stdout as the command prints them, an error
 * at once as "ohbox pull: ..." (cli_report_now: callers go on). 0, or the
 * exit code of the error. RET (may be NULL) gets the result
 * (ohbox_pull_result_clear). */
int cli_pull_image (const char *image, struct ohbox_pull_options *po, enum cli_format format, bool quiet,
                    struct ohbox_pull_result *ret);
int cli_images (int argc, char **argv);
int cli_inspect (int argc, char **argv);
int cli_rmi (int argc, char **argv);
int cli_prune (int argc, char **argv);
int cli_load (int argc, char **argv);
int cli_save (int argc, char **argv);
int cli_login (int argc, char **argv);
int cli_logout (int argc, char **argv);
/* Sandboxes: run.c, lifecycle.c. */
int cli_run (int argc, char **argv);
int cli_ps (int argc, char **argv);
int cli_stop (int argc, char **argv);
int cli_kill (int argc, char **argv);
int cli_rm (int argc, char **argv);
int cli_pause (int argc, char **argv);
int cli_unpause (int argc, char **argv);
int cli_wait (int argc, char **argv);
int cli_logs (int argc, char **argv);
int cli_stats (int argc, char **argv);
int cli_port (int argc, char **argv);
int cli_network (int argc, char **argv);
/* exec.c */
int cli_exec (int argc, char **argv);
/* action.c */
int cli_action (int argc, char **argv);
/* Runtime images: build.c, push.c. */
int cli_build (int argc, char **argv);
int cli_push (int argc, char **argv);
/* attach.c */
int cli_attach (int argc, char **argv);
/* ci_gitlab.c */
int cli_ci (int argc, char **argv);
/* check.c */
int cli_check (int argc, char **argv);
/* serve.c */
int cli_serve (int argc, char **argv);

#endif
