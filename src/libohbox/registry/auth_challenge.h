/* auth_challenge.h: WWW-Authenticate challenges (RFC 7235) as registries send
 * them: `Bearer realm="https://auth.example/token",service="reg",scope="repository:x:pull"`
 * and `Basic realm="R"`. Several challenges in one header and several
 * headers are both handled; quoted strings may hold escaped quotes. */
#ifndef OHBOX_AUTH_CHALLENGE_H
#define OHBOX_AUTH_CHALLENGE_H

#include <stddef.h>

#include "common/error.h"

enum ohbox_auth_scheme
{
  OHBOX_AUTH_NONE = 0,
  OHBOX_AUTH_BASIC,
  OHBOX_AUTH_BEARER,
};

struct ohbox_auth_challenge
{
  enum ohbox_auth_scheme scheme;
  char *realm;
  char *service; /* Bearer only, may be NULL */
  char *scope;   /* Bearer only, may be NULL */
};

/* Parses one header value; fills the best challenge (Bearer preferred over
 * Basic). Unknown schemes alone give OHBOX_ERR_UNSUPPORTED. */
int ohbox_auth_challenge_parse (const char *header_value, struct ohbox_auth_challenge *out, ohbox_error_t *err);
void ohbox_auth_challenge_clear (struct ohbox_auth_challenge *c);

#endif
