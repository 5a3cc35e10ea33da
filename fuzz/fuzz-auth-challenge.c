/* fuzz-auth-challenge.c: WWW-Authenticate values (ohbox_auth_challenge_parse),
 * which come from whatever server a pull talks to. */
#include "config.h"

#include "registry/auth_challenge.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cleanup_free char *s = fuzz_cstring (data, size);
  cleanup_error ohbox_error_t err = NULL;
  struct ohbox_auth_challenge c;

  memset (&c, 0, sizeof (c));
  if (ohbox_auth_challenge_parse (s, &c, &err) < 0)
    {
      FUZZ_CHECK (err != NULL && err->msg != NULL, "failure without an error");
      ohbox_auth_challenge_clear (&c);
      return 0;
    }
  FUZZ_CHECK (c.scheme == OHBOX_AUTH_BASIC || c.scheme == OHBOX_AUTH_BEARER, "scheme %d", (int) c.scheme);
  if (c.scheme == OHBOX_AUTH_BEARER)
    FUZZ_CHECK (c.realm != NULL, "Bearer challenge without a realm from `%s`", s);
  /* Values are C strings cut from the input: never longer than it. */
  FUZZ_CHECK (c.realm == NULL || strlen (c.realm) <= size, "realm longer than the input");
  FUZZ_CHECK (c.service == NULL || strlen (c.service) <= size, "service longer than the input");
  FUZZ_CHECK (c.scope == NULL || strlen (c.scope) <= size, "scope longer than the input");
  ohbox_auth_challenge_clear (&c);
  return 0;
}
