/* test-digest.c: digest validation and sha256 (streaming and one-shot). */
#include "config.h"

#include <string.h>

#include "common/digest.h"
#include "unit.h"
#include "common/utils.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SHA_EMPTY "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA_ABC "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_448 "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
#define SHA_MILLION_A "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

static void
test_valid (void)
{
  static const char *const ok[] = { "sha256:" D64, SHA_EMPTY, SHA_ABC,
                                    "sha256:0000000000000000000000000000000000000000000000000000000000000000" };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      CHECK (ohbox_digest_is_valid (ok[i]), "%s", ok[i]);
      CHECK (ohbox_digest_validate (ok[i], &err) == 0 && err == NULL, "%s", ok[i]);
      CHECK (strlen (ok[i]) == OHBOX_DIGEST_LEN);
      CHECK (ohbox_digest_hex (ok[i]) == ok[i] + 7);
    }
}

static void
test_invalid (void)
{
  static const char *const bad[] = {
    "",
    "sha256:",
    "sha256",
    D64,                                                                       /* no algorithm */
    ":" D64,                                                                   /* empty algorithm */
    "sha256:" D64 "0",                                                         /* 65 hex */
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",  /* 63 hex */
    "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", /* uppercase hex */
    "SHA256:" D64,                                                             /* uppercase algorithm */
    "sha256:0123456789abcdeg0123456789abcdef0123456789abcdef0123456789abcdef", /* 'g' */
    "sha256:../../x",
    "sha256:../../../../../../../../../../../../../../../../../../../etc/passwd",
    "sha256:" D64 "/",
    "sha256:/" D64,
    "sha256:" D64 " ",
    " sha256:" D64,
    "sha256: " D64,
    "sha256:" D64 "\n",
    "sha512:" D64 D64,
    "sha384:" D64 "0123456789abcdef0123456789abcdef",
    "md5:0123456789abcdef0123456789abcdef",
    "blake3:" D64,
    "sha256+b64:" D64,
    "sha256::" D64,
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      CHECK (!ohbox_digest_is_valid (bad[i]), "`%s` accepted", bad[i]);
      CHECK (ohbox_digest_validate (bad[i], &err) < 0, "`%s` accepted", bad[i]);
      CHECK (err && err->kind == OHBOX_ERR_INTEGRITY, "%s", bad[i]);
      CHECK (strstr (err->msg, "invalid digest `") != NULL, "%s", err->msg);
    }
  cleanup_error ohbox_error_t err = NULL;
  CHECK (!ohbox_digest_is_valid (NULL));
  CHECK (ohbox_digest_validate (NULL, &err) < 0 && err->kind == OHBOX_ERR_INTEGRITY);
}

/* A NUL inside a buffer ends the C string: a digest cut short by an
 * embedded NUL must not pass, whatever follows it in memory. */
static void
test_nul_tricks (void)
{
  char buf[OHBOX_DIGEST_LEN + 1];
  memcpy (buf, "sha256:" D64, sizeof buf);
  CHECK (ohbox_digest_is_valid (buf));
  for (size_t pos = 0; pos < OHBOX_DIGEST_LEN; pos++)
    {
      char b[OHBOX_DIGEST_LEN + 1];
      memcpy (b, buf, sizeof b);
      b[pos] = '\0';
      CHECK (!ohbox_digest_is_valid (b), "NUL at %zu accepted", pos);
    }
  /* The 64 hex are followed by more than a NUL in memory: still valid,
   * and only the string part counts. */
  char longer[OHBOX_DIGEST_LEN + 8];
  memcpy (longer, buf, OHBOX_DIGEST_LEN);
  memcpy (longer + OHBOX_DIGEST_LEN, "\0abcdef", 8);
  CHECK (ohbox_digest_is_valid (longer));
}

/* Messages show only printable characters and stay bounded. */
static void
test_message (void)
{
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_digest_validate ("sha256:\x1b[2J\n../x", &err) < 0);
  CHECK (strchr (err->msg, '\x1b') == NULL && strchr (err->msg, '\n') == NULL, "%s", err->msg);
  CHECK (strstr (err->msg, "sha256:?[2J?../x") != NULL, "%s", err->msg);
  ohbox_error_release (&err);

  char huge[10000];
  memset (huge, 'a', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  CHECK (ohbox_digest_validate (huge, &err) < 0);
  CHECK (strlen (err->msg) < 300, "message of %zu bytes", strlen (err->msg));
  CHECK (strstr (err->msg, "...") != NULL, "%s", err->msg);
}

static void
test_known_vectors (void)
{
  char out[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer ("", 0, out);
  CHECK_STR (out, SHA_EMPTY);
  ohbox_sha256_buffer ("abc", 3, out);
  CHECK_STR (out, SHA_ABC);
  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  ohbox_sha256_buffer (m448, strlen (m448), out);
  CHECK_STR (out, SHA_448);
  CHECK (ohbox_digest_is_valid (out));

  struct ohbox_sha256 *h = ohbox_sha256_new ();
  ohbox_sha256_final (h, out);
  ohbox_sha256_free (h);
  CHECK_STR (out, SHA_EMPTY);
}

static void
test_million_a (void)
{
  char block[1000];
  memset (block, 'a', sizeof block);
  struct ohbox_sha256 *h = ohbox_sha256_new ();
  for (int i = 0; i < 1000; i++)
    ohbox_sha256_update (h, block, sizeof block);
  char out[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_final (h, out);
  ohbox_sha256_free (h);
  CHECK_STR (out, SHA_MILLION_A);
}

/* Streaming in chunks of every size gives the one-shot digest. */
static void
test_streaming_equals_oneshot (void)
{
  unsigned char data[4099];
  unsigned int x = 12345;
  for (size_t i = 0; i < sizeof data; i++)
    {
      x = x * 1103515245u + 12345u;
      data[i] = (unsigned char) (x >> 16);
    }
  char expect[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_buffer (data, sizeof data, expect);
  for (size_t chunk = 1; chunk <= 257; chunk += 16)
    {
      struct ohbox_sha256 *h = ohbox_sha256_new ();
      for (size_t off = 0; off < sizeof data; off += chunk)
        {
          size_t n = sizeof data - off < chunk ? sizeof data - off : chunk;
          ohbox_sha256_update (h, data + off, n);
          ohbox_sha256_update (h, data, 0); /* empty updates change nothing */
        }
      char out[OHBOX_DIGEST_LEN + 1];
      ohbox_sha256_final (h, out);
      ohbox_sha256_free (h);
      CHECK_STR (out, expect);
    }
}

/* A copy gives the digest so far without ending the original. */
static void
test_dup (void)
{
  struct ohbox_sha256 *h = ohbox_sha256_new ();
  ohbox_sha256_update (h, "ab", 2);
  struct ohbox_sha256 *copy = ohbox_sha256_dup (h);
  char out[OHBOX_DIGEST_LEN + 1];
  ohbox_sha256_update (copy, "c", 1);
  ohbox_sha256_final (copy, out);
  ohbox_sha256_free (copy);
  CHECK_STR (out, SHA_ABC);

  ohbox_sha256_update (h, "cdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 54);
  ohbox_sha256_final (h, out);
  ohbox_sha256_free (h);
  CHECK_STR (out, SHA_448);
  ohbox_sha256_free (NULL);
}

UNIT_MAIN_BEGIN ("test-digest")
RUN_TEST (test_valid);
RUN_TEST (test_invalid);
RUN_TEST (test_nul_tricks);
RUN_TEST (test_message);
RUN_TEST (test_known_vectors);
RUN_TEST (test_million_a);
RUN_TEST (test_streaming_equals_oneshot);
RUN_TEST (test_dup);
UNIT_MAIN_END
