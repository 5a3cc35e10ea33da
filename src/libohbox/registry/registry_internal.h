/* registry_internal.h: what the files of the registry client share (not a
 * public interface):
 *   registry.c        the object, TLS material, ping, manifests, small blobs
 *   registry_http.c   one HTTP exchange over libcurl: options, header and body
 *                     callbacks, manual redirects, retries with backoff, errors
 *   registry_auth.c   credentials, Bearer token flow and cache, Basic
 *   registry_fetch.c  parallel resumable blob downloads into the store
 *   registry_push.c   blob and manifest uploads (registry_push.h) */
#ifndef OHBOX_REGISTRY_INTERNAL_H
#define OHBOX_REGISTRY_INTERNAL_H

#include "common/dl_curl.h"
#include <stdbool.h>
#include <stdint.h>

#include "registry/auth_challenge.h"
#include "registry/authfile.h"
#include "registry/registry.h"
#include "common/utils.h"

#define REG_MAX_TOKENS 16
#define REG_MAX_REDIRECTS 10
/* Bound of the token server's answer. */
#define REG_MAX_TOKEN_RESPONSE (1024 * 1024)
/* Retry-After is honoured up to this many seconds. */
#define REG_MAX_RETRY_AFTER_S 10
/* Bound of one backoff delay. */
#define REG_MAX_BACKOFF_MS 10000
/* One request answered into memory (ping, token, manifest, config) must
 * end within this many seconds ($OHBOX_REQUEST_TIMEOUT replaces it). */
#define REG_DEFAULT_REQUEST_TIMEOUT_S 300

/* Where the registry itself was found, by the address of the first
 * connection made to it (its ping): a registry elsewhere may not send us to
 * this host's own services (registry_http.c, open_socket). */
enum reg_addr_class
{
  REG_ADDR_UNKNOWN,
  REG_ADDR_LOCAL,  /* loopback or link-local: anything goes */
  REG_ADDR_REMOTE, /* elsewhere: no loopback, link-local or unspecified address */
};

struct reg_token
{
  char *scope;
  char *token;
  double expires; /* ohbox_monotonic () time */
  bool with_creds;
};

struct ohbox_registry
{
  char *host;     /* "host[:port]" contacted */
  char *display;  /* name used in messages ("docker.io" for Docker Hub's endpoint) */
  char *base_url; /* "https://host[:port]" once the ping chose a scheme, else NULL */
  bool insecure;

  char *authfile;
  char *auth_json; /* credentials in memory (registry.h) */
  char *auth_json_name;
  bool no_default_authfiles;           /* never the user's auth files */
  struct ohbox_credentials *opt_creds; /* --creds */
  unsigned max_parallel;
  unsigned max_attempts;
  unsigned retry_delay_ms;
  long connect_timeout_s;
  long low_speed_timeout_s;
  long request_timeout_s;
  double deadline;  /* ohbox_monotonic () time every request must end by; 0: none */
  double timeout_s; /* what DEADLINE came from, for messages */
  char *user_agent;
  enum reg_addr_class addr_class;
  bool creds_used; /* some request went with credentials (registry.h) */

  /* TLS material from the certificate directory: when it has CAs, CA_BLOB
   * is the system bundle followed by them (CURLOPT_CAINFO_BLOB). */
  size_t n_cas;
  struct ohbox_buf ca_blob;
  char *client_cert;
  char *client_key;

  CURL *easy;    /* sequential requests (ping, manifests, configs, tokens) */
  CURLSH *share; /* DNS and TLS session cache shared by every handle */

  /* Authentication state. */
  struct ohbox_auth_challenge challenge; /* scheme NONE while none was seen */
  char *creds_repo;                      /* repository CREDS were looked up for */
  struct ohbox_credentials *creds;       /* from the auth files, may be NULL */
  struct reg_token tokens[REG_MAX_TOKENS];
  bool push_scope; /* ask tokens for "pull,push" (set by registry_push.c) */
};

/* ---- registry.c ---- */

/* Validates REPOSITORY and pings the registry unless done already. */
int reg_prepare_repository (struct ohbox_registry *r, const char *repository, ohbox_error_t *err);

/* ---- registry_http.c ---- */

struct reg_response
{
  long status;
  char *content_type;
  char *www_authenticate; /* every challenge header, joined with ", " */
  char *content_range;
  char *location;              /* Location (uploads: where to send the data) */
  char *content_digest;        /* Docker-Content-Digest */
  long retry_after_s;          /* -1 when absent */
  char *foreign_origin;        /* set when the answer came from another origin (a redirect) */
  struct ohbox_buf error_body; /* the start of a non-2xx body, for messages */
};

struct reg_xfer;
/* Called at the end of the headers of a 2xx response, and for each piece of
 * its body. Returning -1 (with x->cb_err set) aborts the transfer. */
typedef int (*reg_headers_fn) (struct reg_xfer *x);
typedef int (*reg_data_fn) (struct reg_xfer *x, const char *data, size_t len);

struct reg_xfer
{
  struct ohbox_registry *r;
  CURL *easy;
  /* A transfer whose length has no fixed bound (a blob download or
   * upload): only the deadline limits it, not the request timeout. */
  bool long_transfer;
  double started;  /* ohbox_monotonic () when the current hop began */
  long timeout_ms; /* CURLOPT_TIMEOUT_MS of the current hop, 0: none */
  /* The address open_socket refused, and what it is ("loopback", ...). */
  char refused_addr[64];
  const char *refused_kind;
  char *start_url;     /* the request as made (retries start here again) */
  char *url;           /* the current hop (after redirects) */
  char *authorization; /* "Authorization: ..." header line, or NULL */
  char *auth_origin;   /* the only origin AUTHORIZATION is sent to */
  const char *accept;
  int64_t range_from; /* > 0: ask for "bytes=RANGE_FROM-" */
  /* Other requests than GET (registry_push.c): METHOD "HEAD", "POST" or
   * "PUT" with a body of BODY_LEN bytes from BODY, or from BODY_FD when
   * BODY is NULL and BODY_LEN > 0 (read with pread from 0: a retry sends
   * it again), typed CONTENT_TYPE. */
  const char *method;
  const char *content_type;
  const char *body;
  int body_fd;
  uint64_t body_len;
  uint64_t body_pos;
  unsigned redirects;
  struct curl_slist *headers;
  struct reg_response resp;
  reg_headers_fn on_headers;
  reg_data_fn on_data;
  void *userdata;
  ohbox_error_t cb_err;
  char errbuf[CURL_ERROR_SIZE];
};

enum reg_outcome
{
  REG_DONE,     /* a final HTTP answer (any status) is in x->resp */
  REG_REDIRECT, /* 3xx with a Location: call reg_xfer_follow () */
  REG_RETRY,    /* transient: network error, 408, 429 or 5xx */
  REG_FAIL,     /* permanent network or TLS error */
  REG_ABORTED,  /* a callback failed: x->cb_err holds why */
};

/* Initialises X for a GET of URL. AUTH_ORIGIN defaults to URL's origin. */
void reg_xfer_init (struct reg_xfer *x, struct ohbox_registry *r, CURL *easy, const char *url);
void reg_xfer_clear (struct reg_xfer *x);
/* Sets every option of X->easy for the hop X->url. */
int reg_xfer_prepare (struct reg_xfer *x, ohbox_error_t *err);
/* Classifies the result of a finished transfer. RETRY_CONNECT: a refused
 * connection or a failed name lookup is worth retrying (not for the ping). */
enum reg_outcome reg_xfer_outcome (struct reg_xfer *x, CURLcode rc, bool retry_connect);
/* Moves X to its redirect target (bounded, http/https only, no downgrade). */
int reg_xfer_follow (struct reg_xfer *x, ohbox_error_t *err);
/* Is X's current hop at the origin its request was made to? (A 401 from a
 * storage backend a blob was redirected to must not start the token flow:
 * its realm would receive the registry's credentials.) */
bool reg_xfer_at_origin (struct reg_xfer *x);
/* Records in x->resp where the answer came from when that is not the origin. */
void reg_xfer_note_origin (struct reg_xfer *x);
/* Starts X again from its first URL (for a retry). */
void reg_xfer_restart (struct reg_xfer *x);
/* Fills ERR from a network failure (REG_FAIL or an exhausted REG_RETRY). */
int reg_xfer_net_error (struct reg_xfer *x, CURLcode rc, ohbox_error_t *err);
/* Delay before attempt ATTEMPT + 1, honouring Retry-After. */
unsigned reg_backoff_ms (struct ohbox_registry *r, unsigned attempt, long retry_after_s);
/* Has the registry's deadline passed, or will it have in MS milliseconds? */
bool reg_deadline_passed (struct ohbox_registry *r, unsigned ms);
/* Fills ERR for a pull that reached its deadline (OHBOX_ERR_REGISTRY),
 * naming the registry, the deadline and WHAT was under way (may be NULL). */
int reg_deadline_error (struct ohbox_registry *r, const char *what, ohbox_error_t *err);
void reg_sleep_ms (unsigned ms);
/* " (CODE: message)" from a distribution error body, or "". */
char *reg_error_detail (const struct reg_response *resp);
/* Copies of the URL's scheme, host and port ("https://h:443"); NULL when invalid. */
char *reg_url_origin (const char *url);

/* Runs X on its own easy handle to the end: redirects followed, transient
 * failures retried with backoff. 0 with x->resp.status set. RETRY_CONNECT as
 * for reg_xfer_outcome(). */
int reg_run (struct reg_xfer *x, bool retry_connect, ohbox_error_t *err);
/* reg_run for a request about REPOSITORY (NULL: none) sent with
 * credentials or not (CREDS_SENT): 1 when it was the first ROUND's 401 from
 * the registry itself (not a redirect's target) and a retry with the
 * challenge's new authentication can succeed; else 0 with x->resp set, or
 * -1. */
int reg_run_authenticated (struct ohbox_registry *r, const char *repository, struct reg_xfer *x, int round,
                           bool creds_sent, ohbox_error_t *err);

/* A bounded in-memory body (on_headers/on_data for reg_xfer). */
struct reg_membody
{
  struct ohbox_buf buf;
  size_t max;
  const char *what; /* "manifest of `reg/repo:tag`", for the size error */
};
void reg_membody_attach (struct reg_xfer *x, struct reg_membody *m);

/* GET URL for REPOSITORY (NULL: no authentication) into memory, at most MAX
 * bytes, authenticating as the registry asks (one retry after a 401).
 * *CREDS_SENT tells whether credentials were offered (for the 401 wording). */
int reg_get (struct ohbox_registry *r, const char *repository, const char *url, const char *accept, size_t max,
             const char *what, struct ohbox_buf *body, struct reg_response *resp, bool *creds_sent, ohbox_error_t *err);
void reg_response_clear (struct reg_response *resp);
/* Fills ERR for an unexpected final status of a request about REPOSITORY:
 * 401/403 -> AUTH, else REGISTRY with the status and the registry's message.
 * WHAT names the object ("manifest of `reg/repo:tag`"). */
int reg_status_error (struct ohbox_registry *r, const char *repository, const char *what,
                      const struct reg_response *resp, bool creds_sent, ohbox_error_t *err);

/* ---- registry_auth.c ---- */

/* The Authorization header line for a request about REPOSITORY (NULL: none),
 * fetching a token when the registry uses Bearer and none is cached. *OUT is
 * NULL when the request goes anonymously. */
int reg_auth_header (struct ohbox_registry *r, const char *repository, char **out, bool *creds_sent,
                     ohbox_error_t *err);
/* A request about REPOSITORY got 401 with WWW_AUTHENTICATE: learns the
 * challenge and prepares new authentication. Returns 1 when a retry can
 * succeed, 0 when not (Basic without credentials, or with the ones that were
 * just refused), -1 on error. */
int reg_auth_challenged (struct ohbox_registry *r, const char *repository, const char *www_authenticate,
                         bool creds_sent, ohbox_error_t *err);
/* The error for a final 401 about REPOSITORY. */
int reg_auth_error (struct ohbox_registry *r, const char *repository, bool creds_sent, ohbox_error_t *err);
void reg_auth_clear (struct ohbox_registry *r);

#endif
