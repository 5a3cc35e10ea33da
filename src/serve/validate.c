/* validate.c: checks of request fields that several endpoints share. */
#include "config.h"

#include <string.h>

#include "registry/reference.h"
#include "serve/serve_internal.h"

#define IMAGE_NAME_MAX 512
#define SESSION_ID_MAX 128

/* A reference ohbox can resolve, or an image id (sha256:HEX or a prefix of
 * at least 12 hex digits): nothing else reaches the store. */
bool
valid_image_name (const char *s, char **why)
{
  *why = NULL;
  size_t n = s ? strlen (s) : 0;
  if (n == 0 || n > IMAGE_NAME_MAX)
    {
      *why = xasprintf ("must be an image reference of 1 to %d characters", IMAGE_NAME_MAX);
      return false;
    }
  const char *hex = strncmp (s, "sha256:", 7) == 0 ? s + 7 : s;
  size_t hl = strlen (hex);
  bool is_hex = hl >= 12 && hl <= 64;
  for (size_t i = 0; is_hex && i < hl; i++)
    is_hex = (hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f');
  if (is_hex)
    return true;
  struct ohbox_reference *ref = NULL;
  ohbox_error_t e = NULL;
  if (ohbox_reference_parse (s, &ref, &e) < 0)
    {
      *why = xstrdup (e->msg);
      ohbox_error_release (&e);
      return false;
    }
  ohbox_reference_free (ref);
  return true;
}

/* What OpenHands makes (a conversation id, base62 of V1, "default"). */
bool
valid_session_id (const char *s)
{
  size_t n = s ? strlen (s) : 0;
  if (n == 0 || n > SESSION_ID_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    {
      char c = s[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
            || c == '.'))
        return false;
    }
  return true;
}
