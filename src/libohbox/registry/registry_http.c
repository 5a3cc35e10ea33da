/* registry_http.c: one HTTP exchange with a registry over libcurl (see
 * registry_internal.h).
 *
 * Redirects are followed here, not by libcurl, so that the decision to send
 * the Authorization header is made for every hop: it goes only to the origin
 * (scheme, host, port) the request was made to. libcurl >= 7.58 also drops a
 * custom Authorization header on a cross-host redirect, and >= 7.83 on a port
 * or scheme change, but configure accepts older versions and a blob redirect
 * to a storage backend must never carry registry credentials (a leaked token
 * or password). Only http and https are allowed, for the request and any
 * redirect target, and an https registry cannot redirect to plain http
 * unless it was declared insecure.
 *
 * A registry elsewhere may not send us to this host: every connection
 * goes through open_socket, which refuses loopback, link-local (the cloud
 * metadata address among them) and unspecified addresses once the first
 * connection of the registry object (its ping) found the registry itself at
 * another address. The resolved address is what counts, so a name that
 * resolves to 127.0.0.1 is refused like the literal; a redirect or a token
 * realm naming such an address literally is refused before any connection
 * (also through an HTTP proxy, where the address connected to is the
 * proxy's). A registry on loopback (a local mirror, the tests) keeps its
 * redirects to loopback.
 *
 * Time: a request answered into memory must end within the request
 * timeout, and every request within the client's deadline (a pull's
 * --timeout): libcurl's low-speed limit alone lets a server that drips a
 * few bytes a second hold a pull for hours. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "registry/registry_internal.h"

/* A header value we keep longer than this is cut: it comes from the network. */
#define MAX_HEADER_VALUE (16 * 1024)
#define MAX_ERROR_BODY 4096

void
reg_response_clear (struct reg_response *resp)
{
  free (resp->content_type);
  free (resp->www_authenticate);
  free (resp->content_range);
  free (resp->location);
  free (resp->content_digest);
  free (resp->foreign_origin);
  ohbox_buf_free (&resp->error_body);
  memset (resp, 0, sizeof *resp);
  resp->retry_after_s = -1;
}

char *
reg_url_origin (const char *url)
{
  CURLU *u = curl_url ();
  if (u == NULL)
    abort ();
  char *scheme = NULL, *host = NULL, *port = NULL, *ret = NULL;
  if (curl_url_set (u, CURLUPART_URL, url, 0) == CURLUE_OK
      && curl_url_get (u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK
      && curl_url_get (u, CURLUPART_HOST, &host, 0) == CURLUE_OK
      && curl_url_get (u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
    {
      /* Host names are case-insensitive. */
      for (char *p = host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
          *p = (char) (*p - 'A' + 'a');
      ret = xasprintf ("%s://%s:%s", scheme, host, port);
    }
  curl_free (scheme);
  curl_free (host);
  curl_free (port);
  curl_url_cleanup (u);
  return ret;
}

void
reg_xfer_init (struct reg_xfer *x, struct ohbox_registry *r, CURL *easy, const char *url)
{
  memset (x, 0, sizeof *x);
  x->r = r;
  x->easy = easy;
  x->start_url = xstrdup (url);
  x->url = xstrdup (url);
  x->auth_origin = reg_url_origin (url);
  reg_response_clear (&x->resp);
}

void
reg_xfer_clear (struct reg_xfer *x)
{
  free (x->start_url);
  free (x->url);
  if (x->authorization)
    explicit_bzero (x->authorization, strlen (x->authorization));
  free (x->authorization);
  free (x->auth_origin);
  curl_slist_free_all (x->headers);
  reg_response_clear (&x->resp);
  ohbox_error_release (&x->cb_err);
  memset (x, 0, sizeof *x);
}

/* Stores a header value in *SLOT (JOIN: append to an existing one). */
static void
keep_header (char **slot, const char *value, size_t len, bool join)
{
  if (len > MAX_HEADER_VALUE)
    len = MAX_HEADER_VALUE;
  if (*slot != NULL && join && strlen (*slot) + len + 2 <= MAX_HEADER_VALUE)
    {
      char *joined = xasprintf ("%s, %.*s", *slot, (int) len, value);
      free (*slot);
      *slot = joined;
      return;
    }
  if (*slot != NULL && join)
    return;
  free (*slot);
  *slot = xstrndup (value, len);
}

static long
parse_retry_after (const char *v, size_t len)
{
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy (buf, v, len);
  buf[len] = '\0';
  if (buf[0] >= '0' && buf[0] <= '9')
    {
      char *end;
      errno = 0;
      long s = strtol (buf, &end, 10);
      if (errno != 0 || *end != '\0')
        return -1;
      return s > REG_MAX_RETRY_AFTER_S ? REG_MAX_RETRY_AFTER_S : s;
    }
  /* An HTTP-date. */
  time_t when = curl_getdate (buf, NULL);
  if (when < 0)
    return -1;
  time_t now = time (NULL);
  long s = when > now ? (long) (when - now) : 0;
  return s > REG_MAX_RETRY_AFTER_S ? REG_MAX_RETRY_AFTER_S : s;
}

static size_t
header_cb (char *buf, size_t size, size_t nitems, void *userdata)
{
  struct reg_xfer *x = userdata;
  size_t len = size * nitems;
  if (len >= 5 && strncmp (buf, "HTTP/", 5) == 0)
    {
      /* A new response (after a 1xx, or through a proxy): forget the last one. */
      reg_response_clear (&x->resp);
      const char *sp = memchr (buf, ' ', len);
      x->resp.status = sp ? strtol (sp + 1, NULL, 10) : 0;
      return len;
    }
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
    len--;
  if (len == 0)
    {
      /* End of the headers. */
      if (x->resp.status >= 200 && x->resp.status < 300 && x->on_headers && x->on_headers (x) < 0)
        return 0;
      return size * nitems;
    }
  const char *colon = memchr (buf, ':', len);
  if (colon == NULL)
    return size * nitems;
  size_t name_len = (size_t) (colon - buf);
  const char *v = colon + 1;
  size_t vlen = len - name_len - 1;
  while (vlen > 0 && (*v == ' ' || *v == '\t'))
    v++, vlen--;
  while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
    vlen--;
#define IS(name) (name_len == strlen (name) && strncasecmp (buf, name, name_len) == 0)
  if (IS ("content-type"))
    keep_header (&x->resp.content_type, v, vlen, false);
  else if (IS ("www-authenticate"))
    keep_header (&x->resp.www_authenticate, v, vlen, true);
  else if (IS ("content-range"))
    keep_header (&x->resp.content_range, v, vlen, false);
  else if (IS ("location"))
    keep_header (&x->resp.location, v, vlen, false);
  else if (IS ("docker-content-digest"))
    keep_header (&x->resp.content_digest, v, vlen, false);
  else if (IS ("retry-after"))
    x->resp.retry_after_s = parse_retry_after (v, vlen);
#undef IS
  return size * nitems;
}

static size_t
write_cb (char *data, size_t size, size_t nmemb, void *userdata)
{
  struct reg_xfer *x = userdata;
  size_t len = size * nmemb;
  if (x->resp.status >= 200 && x->resp.status < 300)
    {
      if (x->on_data && x->on_data (x, data, len) < 0)
        return 0;
      return len;
    }
  /* Keep the start of an error body for the message; drop the rest. */
  size_t room = MAX_ERROR_BODY - x->resp.error_body.len;
  if (x->resp.error_body.len < MAX_ERROR_BODY)
    ohbox_buf_append (&x->resp.error_body, data, len < room ? len : room);
  return len;
}

/* The request body of a POST or PUT (registry_push.c). */
static size_t
read_cb (char *buf, size_t size, size_t nitems, void *userdata)
{
  struct reg_xfer *x = userdata;
  size_t want = size * nitems;
  uint64_t left = x->body_len - x->body_pos;
  if (want > left)
    want = (size_t) left;
  if (want == 0)
    return 0;
  if (x->body)
    memcpy (buf, x->body + x->body_pos, want);
  else
    {
      ssize_t r = pread (x->body_fd, buf, want, (off_t) x->body_pos);
      if (r <= 0)
        return CURL_READFUNC_ABORT;
      want = (size_t) r;
    }
  x->body_pos += want;
  return want;
}

/* ---- addresses a registry elsewhere may not reach ---- */

static const char *
ipv4_kind (uint32_t a)
{
  if ((a >> 24) == 127)
    return "loopback";
  if ((a >> 24) == 0) /* 0.0.0.0/8: connecting there reaches this host */
    return "unspecified";
  if ((a >> 16) == 0xa9fe) /* 169.254/16, with the cloud metadata address */
    return "link-local";
  return NULL;
}

static const char *
ipv6_kind (const struct in6_addr *a)
{
  static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
  if (IN6_IS_ADDR_LOOPBACK (a))
    return "loopback";
  if (IN6_IS_ADDR_UNSPECIFIED (a))
    return "unspecified";
  if (IN6_IS_ADDR_LINKLOCAL (a))
    return "link-local";
  /* An IPv4 address in IPv6 clothing (mapped, or the NAT64 prefix). */
  if (IN6_IS_ADDR_V4MAPPED (a) || memcmp (a->s6_addr, nat64, sizeof nat64) == 0)
    {
      uint32_t v4;
      memcpy (&v4, a->s6_addr + 12, 4);
      return ipv4_kind (ntohl (v4));
    }
  return NULL;
}

/* "loopback", "link-local", "unspecified", or NULL for any other address. */
static const char *
address_kind (const struct sockaddr *sa)
{
  if (sa->sa_family == AF_INET)
    return ipv4_kind (ntohl (((const struct sockaddr_in *) sa)->sin_addr.s_addr));
  if (sa->sa_family == AF_INET6)
    return ipv6_kind (&((const struct sockaddr_in6 *) sa)->sin6_addr);
  return NULL;
}

/* The same for a URL's host when it is an address literal or localhost. */
static const char *
literal_host_kind (const char *url)
{
  CURLU *u = curl_url ();
  if (u == NULL)
    abort ();
  char *host = NULL;
  const char *kind = NULL;
  if (curl_url_set (u, CURLUPART_URL, url, 0) == CURLUE_OK && curl_url_get (u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
    {
      size_t n = strlen (host);
      struct in_addr v4;
      struct in6_addr v6;
      char inner[INET6_ADDRSTRLEN + 1] = "";
      if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof inner)
        memcpy (inner, host + 1, n - 2);
      if (inet_pton (AF_INET, host, &v4) == 1)
        kind = ipv4_kind (ntohl (v4.s_addr));
      else if (inner[0] && inet_pton (AF_INET6, inner, &v6) == 1)
        kind = ipv6_kind (&v6);
      else if (strcasecmp (host, "localhost") == 0 || (n > 10 && strcasecmp (host + n - 10, ".localhost") == 0))
        kind = "loopback";
    }
  curl_free (host);
  curl_url_cleanup (u);
  return kind;
}

/* CURLOPT_OPENSOCKETFUNCTION: every connection libcurl makes, with the
 * address it resolved. The first one of a registry object is its ping to
 * the registry itself, which tells where the registry is. */
static curl_socket_t
open_socket (void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
  (void) purpose;
  struct reg_xfer *x = clientp;
  struct ohbox_registry *r = x->r;
  const char *kind = address_kind (&a->addr);
  if (r->addr_class == REG_ADDR_UNKNOWN)
    r->addr_class = kind && strcmp (kind, "unspecified") != 0 ? REG_ADDR_LOCAL : REG_ADDR_REMOTE;
  else if (kind && r->addr_class == REG_ADDR_REMOTE)
    {
      const void *in = a->addr.sa_family == AF_INET
                         ? (const void *) &((const struct sockaddr_in *) &a->addr)->sin_addr
                         : (const void *) &((const struct sockaddr_in6 *) &a->addr)->sin6_addr;
      if (inet_ntop (a->addr.sa_family, in, x->refused_addr, sizeof x->refused_addr) == NULL)
        snprintf (x->refused_addr, sizeof x->refused_addr, "?");
      x->refused_kind = kind;
      return CURL_SOCKET_BAD;
    }
  return socket (a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ---- time ---- */

/* "30m", "1h30m", "2.5s": a duration for messages. */
static void
format_duration (double s, char *buf, size_t size)
{
  if (s < 60 || s != (double) (long) s)
    {
      snprintf (buf, size, "%gs", s);
      return;
    }
  long v = (long) s;
  int n = 0;
  if (v >= 3600)
    n += snprintf (buf + n, size - (size_t) n, "%ldh", v / 3600);
  if (v % 3600 >= 60 && (size_t) n < size)
    n += snprintf (buf + n, size - (size_t) n, "%ldm", v % 3600 / 60);
  if (v % 60 && (size_t) n < size)
    snprintf (buf + n, size - (size_t) n, "%lds", v % 60);
}

bool
reg_deadline_passed (struct ohbox_registry *r, unsigned ms)
{
  return r->deadline > 0 && ohbox_monotonic () + ms / 1000.0 >= r->deadline;
}

int
reg_deadline_error (struct ohbox_registry *r, const char *what, ohbox_error_t *err)
{
  char limit[64];
  format_duration (r->timeout_s, limit, sizeof limit);
  ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s did not finish within the pull's deadline of %s%s%s", r->display, limit,
               what ? ": " : "", what ? what : "");
  return ohbox_error_hint (err, "a slow or stalled registry; a larger --timeout gives it more time");
}

/* CURLOPT_TIMEOUT_MS for the hop about to start: the request timeout for
 * an answer into memory, and never beyond the deadline (at least 1 ms: 0
 * would mean none). */
static long
hop_timeout_ms (struct reg_xfer *x)
{
  struct ohbox_registry *r = x->r;
  double ms = x->long_transfer ? 0 : (double) r->request_timeout_s * 1000;
  if (r->deadline > 0)
    {
      double left = (r->deadline - ohbox_monotonic ()) * 1000;
      if (left < 1)
        left = 1;
      if (ms == 0 || left < ms)
        ms = left;
    }
  return ms > 0 ? (long) ms + 1 : 0;
}

#define SETOPT(opt, val)                                                                                               \
  do                                                                                                                   \
    {                                                                                                                  \
      CURLcode _c = curl_easy_setopt (e, opt, val);                                                                    \
      if (_c != CURLE_OK)                                                                                              \
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "libcurl option " #opt ": %s", curl_easy_strerror (_c));       \
    }                                                                                                                  \
  while (0)

int
reg_xfer_prepare (struct reg_xfer *x, ohbox_error_t *err)
{
  struct ohbox_registry *r = x->r;
  CURL *e = x->easy;
  curl_easy_reset (e);
  reg_response_clear (&x->resp);
  x->errbuf[0] = '\0';

  curl_slist_free_all (x->headers);
  x->headers = NULL;
  if (x->accept)
    {
      cleanup_free char *h = xasprintf ("Accept: %s", x->accept);
      x->headers = curl_slist_append (x->headers, h);
    }
  if (x->content_type)
    {
      cleanup_free char *h = xasprintf ("Content-Type: %s", x->content_type);
      x->headers = curl_slist_append (x->headers, h);
    }
  if (x->method && x->body_len > 0)
    /* No "Expect: 100-continue" round trip before each body. */
    x->headers = curl_slist_append (x->headers, "Expect:");
  cleanup_free char *origin = reg_url_origin (x->url);
  if (origin == NULL)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "invalid URL `%.200s`", x->url);
  const char *internal = r->addr_class == REG_ADDR_REMOTE ? literal_host_kind (x->url) : NULL;
  if (internal)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "refusing `%.200s`, a %s address: the registry %s is not on this host, and may not send "
                        "ohbox to this host's own services",
                        x->url, internal, r->display);
  if (r->deadline > 0 && ohbox_monotonic () >= r->deadline)
    return reg_deadline_error (r, NULL, err);
  bool same_origin = x->auth_origin != NULL && strcmp (origin, x->auth_origin) == 0;
  if (x->authorization && same_origin)
    x->headers = curl_slist_append (x->headers, x->authorization);
  if (x->headers == NULL && (x->accept || x->content_type || (x->authorization && same_origin)))
    abort ();

  SETOPT (CURLOPT_URL, x->url);
  SETOPT (CURLOPT_HTTPGET, 1L);
  if (x->method)
    {
      x->body_pos = 0;
      if (strcmp (x->method, "HEAD") == 0)
        SETOPT (CURLOPT_NOBODY, 1L);
      else if (strcmp (x->method, "PUT") == 0)
        {
          SETOPT (CURLOPT_UPLOAD, 1L);
          SETOPT (CURLOPT_INFILESIZE_LARGE, (curl_off_t) x->body_len);
        }
      else
        {
          SETOPT (CURLOPT_POST, 1L);
          SETOPT (CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) x->body_len);
        }
      SETOPT (CURLOPT_READFUNCTION, read_cb);
      SETOPT (CURLOPT_READDATA, x);
    }
  SETOPT (CURLOPT_HTTPHEADER, x->headers);
  SETOPT (CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
  SETOPT (CURLOPT_PROTOCOLS_STR, "http,https");
  SETOPT (CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  SETOPT (CURLOPT_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
  SETOPT (CURLOPT_REDIR_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  SETOPT (CURLOPT_NOSIGNAL, 1L);
  SETOPT (CURLOPT_NOPROGRESS, 1L);
  SETOPT (CURLOPT_TCP_KEEPALIVE, 1L);
  SETOPT (CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  SETOPT (CURLOPT_USERAGENT, r->user_agent);
  SETOPT (CURLOPT_CONNECTTIMEOUT, r->connect_timeout_s);
  SETOPT (CURLOPT_LOW_SPEED_LIMIT, 1024L);
  SETOPT (CURLOPT_LOW_SPEED_TIME, r->low_speed_timeout_s);
  SETOPT (CURLOPT_ERRORBUFFER, x->errbuf);
  SETOPT (CURLOPT_HEADERFUNCTION, header_cb);
  SETOPT (CURLOPT_HEADERDATA, x);
  SETOPT (CURLOPT_WRITEFUNCTION, write_cb);
  SETOPT (CURLOPT_WRITEDATA, x);
  SETOPT (CURLOPT_PRIVATE, x);
  SETOPT (CURLOPT_SHARE, r->share);
  SETOPT (CURLOPT_OPENSOCKETFUNCTION, open_socket);
  SETOPT (CURLOPT_OPENSOCKETDATA, x);
  x->refused_addr[0] = '\0';
  x->refused_kind = NULL;
  x->timeout_ms = hop_timeout_ms (x);
  x->started = ohbox_monotonic ();
  if (x->timeout_ms > 0)
    SETOPT (CURLOPT_TIMEOUT_MS, x->timeout_ms);

  char range[64];
  if (x->range_from > 0)
    {
      snprintf (range, sizeof range, "%lld-", (long long) x->range_from);
      SETOPT (CURLOPT_RANGE, range);
    }

  SETOPT (CURLOPT_SSL_VERIFYPEER, r->insecure ? 0L : 1L);
  SETOPT (CURLOPT_SSL_VERIFYHOST, r->insecure ? 0L : 2L);
  if (r->n_cas > 0)
    {
      /* The system bundle plus the registry's CAs (CApath, if libcurl has
       * one, still applies). */
      struct curl_blob blob = { .data = r->ca_blob.data, .len = r->ca_blob.len, .flags = CURL_BLOB_NOCOPY };
      CURLcode c = curl_easy_setopt (e, CURLOPT_CAINFO_BLOB, &blob);
      if (c != CURLE_OK)
        return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                            "the CA certificates for `%s` cannot be used with libcurl's TLS backend (%s)", r->host,
                            curl_easy_strerror (c));
    }
  /* The client certificate identifies us to the registry only. */
  if (r->client_cert && r->base_url)
    {
      cleanup_free char *reg_origin = reg_url_origin (r->base_url);
      if (reg_origin && strcmp (reg_origin, origin) == 0)
        {
          SETOPT (CURLOPT_SSLCERT, r->client_cert);
          SETOPT (CURLOPT_SSLKEY, r->client_key);
        }
    }
  return 0;
}

/* A TLS alert from the peer (e.g. "alert bad certificate" when it wants a
 * client certificate) is a refusal, not a network hiccup. */
static bool
is_tls_alert (struct reg_xfer *x, CURLcode rc)
{
  return (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_SSL_CONNECT_ERROR)
         && strstr (x->errbuf, "SSL routines") != NULL && strstr (x->errbuf, " alert ") != NULL;
}

/* CURLE_OPERATION_TIMEDOUT is also the low-speed limit (a stall, worth
 * another attempt); these are the request timeout and the deadline. */
static bool
hop_timed_out (struct reg_xfer *x, CURLcode rc)
{
  return rc == CURLE_OPERATION_TIMEDOUT && x->timeout_ms > 0
         && (ohbox_monotonic () - x->started) * 1000 >= (double) x->timeout_ms - 20;
}

enum reg_outcome
reg_xfer_outcome (struct reg_xfer *x, CURLcode rc, bool retry_connect)
{
  if (x->cb_err != NULL)
    return REG_ABORTED;
  if (rc != CURLE_OK && (x->refused_kind != NULL || hop_timed_out (x, rc)))
    return REG_FAIL;
  if (rc != CURLE_OK && is_tls_alert (x, rc))
    return REG_FAIL;
  if (rc != CURLE_OK)
    {
      switch (rc)
        {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
          return retry_connect ? REG_RETRY : REG_FAIL;
        case CURLE_SSL_CONNECT_ERROR:
          /* A handshake cut by the network is transient once we know the
           * registry speaks TLS; at the ping it means it does not. */
          return retry_connect ? REG_RETRY : REG_FAIL;
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
        case CURLE_NOT_BUILT_IN:
        case CURLE_OUT_OF_MEMORY:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_FILESIZE_EXCEEDED:
        case CURLE_TOO_MANY_REDIRECTS:
        case CURLE_BAD_FUNCTION_ARGUMENT:
        case CURLE_WRITE_ERROR:
          return REG_FAIL;
        default:
          return REG_RETRY;
        }
    }
  long s = x->resp.status;
  if (s == 301 || s == 302 || s == 303 || s == 307 || s == 308)
    {
      char *next = NULL;
      if (curl_easy_getinfo (x->easy, CURLINFO_REDIRECT_URL, &next) == CURLE_OK && next != NULL)
        return REG_REDIRECT;
      return REG_DONE;
    }
  if (s == 408 || s == 429 || s >= 500)
    return REG_RETRY;
  return REG_DONE;
}

int
reg_xfer_follow (struct reg_xfer *x, ohbox_error_t *err)
{
  char *next = NULL;
  if (curl_easy_getinfo (x->easy, CURLINFO_REDIRECT_URL, &next) != CURLE_OK || next == NULL)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "redirect from `%.200s` without a target", x->url);
  if (++x->redirects > REG_MAX_REDIRECTS)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "too many redirects from `%.200s`", x->start_url);
  bool https_from = strncasecmp (x->url, "https://", 8) == 0;
  bool https_to = strncasecmp (next, "https://", 8) == 0;
  if (!https_to && strncasecmp (next, "http://", 7) != 0)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "refusing redirect from `%.200s` to `%.200s`: only http and https are allowed", x->url, next);
  if (https_from && !https_to && !x->r->insecure)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "refusing redirect from `%.200s` to plain http `%.200s`; use --tls-verify=false if the "
                        "registry is meant to work this way",
                        x->url, next);
  char *copy = xstrdup (next);
  free (x->url);
  x->url = copy;
  return 0;
}

bool
reg_xfer_at_origin (struct reg_xfer *x)
{
  cleanup_free char *origin = reg_url_origin (x->url);
  return origin != NULL && x->auth_origin != NULL && strcmp (origin, x->auth_origin) == 0;
}

void
reg_xfer_note_origin (struct reg_xfer *x)
{
  free (x->resp.foreign_origin);
  x->resp.foreign_origin = NULL;
  if (!reg_xfer_at_origin (x))
    x->resp.foreign_origin = reg_url_origin (x->url);
}

void
reg_xfer_restart (struct reg_xfer *x)
{
  free (x->url);
  x->url = xstrdup (x->start_url);
  x->redirects = 0;
}

static bool
is_tls_error (CURLcode rc)
{
  switch (rc)
    {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return true;
    default:
      return false;
    }
}

int
reg_xfer_net_error (struct reg_xfer *x, CURLcode rc, ohbox_error_t *err)
{
  struct ohbox_registry *r = x->r;
  if (x->refused_kind)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "refusing to connect to %s (%s) for `%.200s`: the registry %s is not on this host, and may not "
                        "send ohbox to this host's own services",
                        x->refused_addr, x->refused_kind, x->url, r->display);
  if (hop_timed_out (x, rc))
    {
      cleanup_free char *what = xasprintf ("GET `%.200s` was still under way", x->url);
      if (r->deadline > 0 && ohbox_monotonic () >= r->deadline - 0.05)
        return reg_deadline_error (r, what, err);
      char limit[64];
      format_duration ((double) r->request_timeout_s, limit, sizeof limit);
      return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "GET `%.200s`: %s did not answer within %s", x->url, r->display,
                          limit);
    }
  const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror (rc);
  ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "GET `%.200s`: %s", x->url, detail);
  if (is_tls_alert (x, rc) && strstr (x->errbuf, "certificate") != NULL)
    ohbox_error_hint (err, "the registry wants a TLS client certificate: put NAME.cert and NAME.key in its "
                           "certificate directory (--cert-dir DIR)");
  else if (is_tls_error (rc) && !x->r->insecure)
    ohbox_error_hint (err, "use --cert-dir DIR with the registry's CA, or --tls-verify=false");
  return -1;
}

unsigned
reg_backoff_ms (struct ohbox_registry *r, unsigned attempt, long retry_after_s)
{
  unsigned long ms = r->retry_delay_ms;
  for (unsigned i = 1; i < attempt && ms < REG_MAX_BACKOFF_MS; i++)
    ms *= 2;
  if (ms > REG_MAX_BACKOFF_MS)
    ms = REG_MAX_BACKOFF_MS;
  /* Up to 1/8 of jitter, so that parallel clients do not retry in step. */
  ms += (unsigned long) random () % (ms / 8 + 1);
  if (retry_after_s > 0 && (unsigned long) retry_after_s * 1000 > ms)
    ms = (unsigned long) retry_after_s * 1000;
  return (unsigned) ms;
}

void
reg_sleep_ms (unsigned ms)
{
  struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
  while (nanosleep (&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* Printable ASCII only, at most MAX characters: text from the network. */
static void
append_sanitized (struct ohbox_buf *b, const char *s, size_t max)
{
  size_t n = 0;
  for (; *s && n < max; s++, n++)
    {
      char c = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
      ohbox_buf_append (b, &c, 1);
    }
  if (*s)
    ohbox_buf_append (b, "...", 3);
}

char *
reg_error_detail (const struct reg_response *resp)
{
  if (resp->error_body.len == 0)
    return xstrdup ("");
  json_t *j = json_loadb (resp->error_body.data, resp->error_body.len, 0, NULL);
  json_t *first = json_array_get (json_object_get (j, "errors"), 0);
  const char *code = json_string_value (json_object_get (first, "code"));
  const char *message = json_string_value (json_object_get (first, "message"));
  struct ohbox_buf b = { 0 };
  ohbox_buf_append (&b, "", 0);
  if (code || message)
    {
      ohbox_buf_append (&b, " (", 2);
      if (code)
        append_sanitized (&b, code, 40);
      if (code && message)
        ohbox_buf_append (&b, ": ", 2);
      if (message)
        append_sanitized (&b, message, 200);
      ohbox_buf_append (&b, ")", 1);
    }
  json_decref (j);
  return b.data;
}

int
reg_run (struct reg_xfer *x, bool retry_connect, ohbox_error_t *err)
{
  unsigned attempt = 1;
  for (;;)
    {
      if (reg_xfer_prepare (x, err) < 0)
        return -1;
      CURLcode rc = curl_easy_perform (x->easy);
      switch (reg_xfer_outcome (x, rc, retry_connect))
        {
        case REG_DONE:
          return 0;
        case REG_ABORTED:
          ohbox_error_move (err, &x->cb_err);
          return -1;
        case REG_FAIL:
          return reg_xfer_net_error (x, rc, err);
        case REG_REDIRECT:
          if (reg_xfer_follow (x, err) < 0)
            return -1;
          continue;
        case REG_RETRY:
          {
            unsigned ms = reg_backoff_ms (x->r, attempt, x->resp.retry_after_s);
            if (attempt < x->r->max_attempts && reg_deadline_passed (x->r, ms))
              {
                /* No time for another attempt: say why the last one failed. */
                cleanup_error ohbox_error_t last = NULL;
                if (rc != CURLE_OK)
                  reg_xfer_net_error (x, rc, &last);
                cleanup_free char *what = last ? xstrdup (last->msg)
                                               : xasprintf ("GET `%.200s` answered HTTP %ld", x->url, x->resp.status);
                return reg_deadline_error (x->r, what, err);
              }
            if (attempt >= x->r->max_attempts)
              {
                if (rc != CURLE_OK)
                  return reg_xfer_net_error (x, rc, err);
                /* The final 5xx/429 answer is the caller's to report. */
                return 0;
              }
            reg_sleep_ms (ms);
          }
          attempt++;
          reg_xfer_restart (x);
          continue;
        }
    }
}

/* ---- bounded in-memory bodies ---- */

static int
membody_headers (struct reg_xfer *x)
{
  struct reg_membody *m = x->userdata;
  curl_off_t cl = -1;
  m->buf.len = 0;
  if (curl_easy_getinfo (x->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl > (curl_off_t) m->max)
    return ohbox_error (&x->cb_err, OHBOX_ERR_INTEGRITY, 0, "%s is larger than the limit of %zu bytes (%lld)", m->what,
                        m->max, (long long) cl);
  return 0;
}

static int
membody_data (struct reg_xfer *x, const char *data, size_t len)
{
  struct reg_membody *m = x->userdata;
  if (m->buf.len + len > m->max)
    return ohbox_error (&x->cb_err, OHBOX_ERR_INTEGRITY, 0, "%s is larger than the limit of %zu bytes", m->what,
                        m->max);
  ohbox_buf_append (&m->buf, data, len);
  return 0;
}

void
reg_membody_attach (struct reg_xfer *x, struct reg_membody *m)
{
  x->on_headers = membody_headers;
  x->on_data = membody_data;
  x->userdata = m;
}

int
reg_run_authenticated (struct ohbox_registry *r, const char *repository, struct reg_xfer *x, int round, bool creds_sent,
                       ohbox_error_t *err)
{
  if (reg_run (x, true, err) < 0)
    return -1;
  reg_xfer_note_origin (x);
  if (x->resp.status == 401 && repository && round == 0 && reg_xfer_at_origin (x))
    return reg_auth_challenged (r, repository, x->resp.www_authenticate, creds_sent, err);
  return 0;
}

int
reg_get (struct ohbox_registry *r, const char *repository, const char *url, const char *accept, size_t max,
         const char *what, struct ohbox_buf *body, struct reg_response *resp, bool *creds_sent, ohbox_error_t *err)
{
  for (int round = 0;; round++)
    {
      char *authorization = NULL;
      bool sent = false;
      if (repository && reg_auth_header (r, repository, &authorization, &sent, err) < 0)
        return -1;
      struct reg_membody m = { .max = max, .what = what };
      struct reg_xfer x;
      reg_xfer_init (&x, r, r->easy, url);
      x.authorization = authorization;
      x.accept = accept;
      reg_membody_attach (&x, &m);
      int ret = reg_run_authenticated (r, repository, &x, round, sent, err);
      if (ret != 0)
        {
          ohbox_buf_free (&m.buf);
          reg_xfer_clear (&x);
          if (ret < 0)
            return -1;
          continue;
        }
      *resp = x.resp;
      memset (&x.resp, 0, sizeof x.resp);
      if (m.buf.data == NULL)
        ohbox_buf_append (&m.buf, "", 0);
      *body = m.buf;
      *creds_sent = sent;
      reg_xfer_clear (&x);
      return 0;
    }
}

int
reg_status_error (struct ohbox_registry *r, const char *repository, const char *what, const struct reg_response *resp,
                  bool creds_sent, ohbox_error_t *err)
{
  cleanup_free char *detail = reg_error_detail (resp);
  if (resp->foreign_origin && (resp->status == 401 || resp->status == 403))
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "%s: `%.200s`, where the registry redirected the request, answered HTTP %ld%s", what,
                        resp->foreign_origin, resp->status, detail);
  if (resp->status == 401)
    return reg_auth_error (r, repository, creds_sent, err);
  if (resp->status == 403)
    return ohbox_error (err, OHBOX_ERR_AUTH, 0, "denied: access to %s/%s is forbidden%s", r->display, repository,
                        detail);
  if (resp->status == 429)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0,
                        "%s: too many requests (HTTP 429)%s after %u attempts; try again later", what, detail,
                        r->max_attempts);
  if (resp->status >= 500 || resp->status == 408)
    return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s: the registry answered HTTP %ld%s after %u attempts", what,
                        resp->status, detail, r->max_attempts);
  return ohbox_error (err, OHBOX_ERR_REGISTRY, 0, "%s: the registry answered HTTP %ld%s", what, resp->status, detail);
}
