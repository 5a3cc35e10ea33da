/* test-build-tags.c: the runtime image tag formulas (build.h) against the
 * worked examples of shared/protocol/ACTION-PROTOCOL.md section 5, and the
 * inputs they digest. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build/build.h"
#include "unit.h"
#include "common/utils.h"

/* ohbox_build_trunc36 (HEX) is WANT. */
static void
check_trunc36 (const char *hex, const char *want)
{
  cleanup_error ohbox_error_t err = NULL;
  char t[17];
  CHECK (ohbox_build_trunc36 (hex, t, &err) == 0, "%s: %s", hex, err->msg);
  CHECK_STR (t, want);
}

static void
test_trunc36_worked_example (void)
{
  /* The lock tag example: md5 3f99cef5... -> oh_v0.62.0_rfgqc2dfh0uu1w9e. */
  check_trunc36 ("3f99cef575b74eefd4239c1575e639b7", "rfgqc2dfh0uu1w9e");
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *tag = NULL;
  CHECK (ohbox_build_hash_tag ("oh_v0.62.0_", "3f99cef575b74eefd4239c1575e639b7", &tag, &err) == 0);
  CHECK_STR (tag, "oh_v0.62.0_rfgqc2dfh0uu1w9e");
  /* Upper-case hex is the same number. */
  check_trunc36 ("3F99CEF575B74EEFD4239C1575E639B7", "rfgqc2dfh0uu1w9e");
}

static void
test_trunc36_digits (void)
{
  /* Least significant digit first, not reversed: 255 = 7*36 + 3. */
  check_trunc36 ("ff", "37");
  /* Leading zeros do not matter; 35 -> "z". */
  check_trunc36 ("0000000000023", "z");
  /* A sha256 (computed with Python's int(h, 16) and divmod): 16 digits. */
  check_trunc36 ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "13sa5tv3mk9dphwu");
  cleanup_error ohbox_error_t err = NULL;
  char t[17];
  CHECK (ohbox_build_trunc36 ("xyz", t, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_USAGE);
  ohbox_error_release (&err);
  CHECK (ohbox_build_trunc36 ("", t, &err) < 0);
}

static void
test_versioned_worked_examples (void)
{
  cleanup_free char *a = ohbox_build_versioned_tag ("oh_v0.62.0_", "nikolaik/python-nodejs:python3.12-nodejs22");
  CHECK_STR (a, "oh_v0.62.0_nikolaik_s_python-nodejs_t_python3.12-nodejs22");
  cleanup_free char *b = ohbox_build_versioned_tag ("oh_v0.62.0_", "ubuntu:24.04");
  CHECK_STR (b, "oh_v0.62.0_ubuntu_t_24.04");
  cleanup_free char *c = ohbox_build_versioned_tag ("oh_v0.62.0_", "Ubuntu:24.04");
  CHECK_STR (c, "oh_v0.62.0_ubuntu_t_24.04");
  /* ohbox's own prefix, and a registry with a port. */
  cleanup_free char *d = ohbox_build_versioned_tag (OHBOX_BUILD_TAG_PREFIX, "127.0.0.1:5000/test/busybox:latest");
  cleanup_free char *want = xasprintf ("ohbox_v%s_127.0.0.1_t_5000_s_test_s_busybox_t_latest", PACKAGE_VERSION);
  CHECK_STR (d, want);
}

static void
test_versioned_keeps_last_96 (void)
{
  char base[300];
  memset (base, 'a', 200);
  strcpy (base + 200, ":tag-end");
  cleanup_free char *t = ohbox_build_versioned_tag ("p_", base);
  CHECK (strlen (t) == 2 + 96, "length %zu", strlen (t));
  const char *tail = t + strlen (t) - 10;
  CHECK_STR (tail, "_t_tag-end");
  CHECK (strncmp (t, "p_aaaa", 6) == 0);
}

static void
test_lock_digest_inputs (void)
{
  char a[65], b[65], c[65], d[65], e[65];
  ohbox_build_lock_digest ("busybox:latest", "sha256:11", "{\"x\":1}", a);
  ohbox_build_lock_digest ("busybox:latest", "sha256:11", "{\"x\":1}", b);
  ohbox_build_lock_digest ("busybox:latest", "sha256:12", "{\"x\":1}", c);
  ohbox_build_lock_digest ("busybox:other", "sha256:11", "{\"x\":1}", d);
  ohbox_build_lock_digest ("busybox:latest", "sha256:11", "{\"x\":2}", e);
  CHECK (strlen (a) == 64);
  CHECK (strcmp (a, b) == 0, "not deterministic");
  CHECK (strcmp (a, c) != 0, "base digest ignored");
  CHECK (strcmp (a, d) != 0, "base name ignored");
  CHECK (strcmp (a, e) != 0, "lock ignored");
  /* The NUL separators keep "ab"+"c" apart from "a"+"bc". */
  ohbox_build_lock_digest ("ab", "c", "", b);
  ohbox_build_lock_digest ("a", "bc", "", c);
  CHECK (strcmp (b, c) != 0);
}

static void
test_source_digest (void)
{
  cleanup_error ohbox_error_t err = NULL;
  char tmpl[] = "/tmp/ohbox-test-build-tags.XXXXXX";
  char *dir = mkdtemp (tmpl);
  CHECK (dir != NULL);
  unit_put_file (dir, "main.c", "int main;\n");
  unit_put_file (dir, "x.h", "#define X\n");
  unit_put_file (dir, "local.mk", "x:\n");
  char d1[65], d2[65], d3[65], d4[65], d5[65];
  CHECK (ohbox_build_source_digest (dir, NULL, d1, &err) == 0);
  /* Files that are not sources (objects, docs, hidden) do not count. */
  unit_put_file (dir, "main.o", "obj");
  unit_put_file (dir, "README.md", "doc");
  unit_put_file (dir, ".x.c", "hidden");
  CHECK (ohbox_build_source_digest (dir, NULL, d2, &err) == 0);
  CHECK_STR (d2, d1);
  unit_put_file (dir, "x.h", "#define Y\n");
  CHECK (ohbox_build_source_digest (dir, NULL, d3, &err) == 0);
  CHECK (strcmp (d3, d1) != 0, "an edited header did not change the digest");
  /* Back to the original contents: back to the original digest. */
  unit_put_file (dir, "x.h", "#define X\n");
  CHECK (ohbox_build_source_digest (dir, NULL, d4, &err) == 0);
  CHECK_STR (d4, d1);
  CHECK (ohbox_build_source_digest (dir, "binary-digest", d5, &err) == 0);
  CHECK (strcmp (d5, d1) != 0, "the extra input is ignored");
  cleanup_free char *cmd = xasprintf ("rm -rf '%s'", dir);
  CHECK (system (cmd) == 0);
  CHECK (ohbox_build_source_digest (dir, NULL, d5, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_NOT_FOUND);
}

UNIT_MAIN_BEGIN ("test-build-tags")
RUN_TEST (test_trunc36_worked_example);
RUN_TEST (test_trunc36_digits);
RUN_TEST (test_versioned_worked_examples);
RUN_TEST (test_versioned_keeps_last_96);
RUN_TEST (test_lock_digest_inputs);
RUN_TEST (test_source_digest);
UNIT_MAIN_END
