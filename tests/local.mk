# Tests. `make check` runs tests/run-tests.sh, which runs every unit test
# program and every integration script and ends with "N passed, N failed, N skipped".

# The unit test programs: tests/unit/test-NAME.c each, compiled with the
# global flags (AM_CPPFLAGS has libohbox's dependencies' include paths) and
# linked with the global LDADD: the programs without an LDADD of their own
# are these (and bench/workfloor, which sets an empty one).
LDADD = libohbox-internal.la $(JANSSON_LIBS) $(ARCHIVE_LIBS) $(CRYPTO_LIBS)
noinst_HEADERS = tests/unit/unit.h tests/unit/cgroup-test.h
check_PROGRAMS += tests/unit/test-digest tests/unit/test-reference tests/unit/test-registries-conf \
	tests/unit/test-authfile tests/unit/test-auth-challenge tests/unit/test-oci tests/unit/test-oci-runtime \
	tests/unit/test-layer tests/unit/test-store tests/unit/test-seccomp tests/unit/test-capabilities \
	tests/unit/test-cgroup tests/unit/test-cgroup-lifecycle tests/unit/test-cgroup-parse tests/unit/test-build-tags \
	tests/unit/test-network tests/unit/test-egress tests/unit/test-dl tests/unit/test-run-policy tests/unit/test-cdi \
	tests/unit/test-strv tests/unit/test-state tests/unit/test-upstream
tests_unit_test_seccomp_LDADD = $(LDADD) $(SECCOMP_LIBS) $(CAP_LIBS)
tests_unit_test_capabilities_LDADD = $(LDADD) $(CAP_LIBS)
# ohbox serve's HTTP client to sandboxes, with http-parser (loaded on first use).
tests_unit_test_upstream_SOURCES = tests/unit/test-upstream.c src/serve/upstream.c src/serve/dl_http_parser.c
tests_unit_test_upstream_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src
# Libraries loaded on first use (dl.h): the nftables table too.
tests_unit_test_dl_CPPFLAGS = $(AM_CPPFLAGS) $(NFTABLES_CFLAGS)

EXTRA_DIST += tests/run-tests.sh tests/durations tests/lib tests/integration tests/fixtures tests/mutate.sh \
	tests/mutations tests/guest tests/escape tests/soak

# The test programs alone: .ci/run builds them in parallel after `make`
# (after it: the generated sources of BUILT_SOURCES exist then; make check
# builds what is missing one at a time).
check-programs: $(check_PROGRAMS)
.PHONY: check-programs

check-local: $(check_PROGRAMS) $(bin_PROGRAMS)
	@OHBOX_BUILDDIR=$(abs_top_builddir) OHBOX_SRCDIR=$(abs_top_srcdir) \
	  $(SHELL) $(top_srcdir)/tests/run-tests.sh $(TESTS_ARGS)

if SANITIZERS
# One fault of each kind the sanitizer build must report (tests/integration/sanitizers.sh).
check_PROGRAMS += tests/lib/sanitizer-probe
tests_lib_sanitizer_probe_SOURCES = tests/lib/sanitizer-probe.c src/libohbox/common/error.c src/libohbox/common/error.h
tests_lib_sanitizer_probe_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/src/libohbox
endif

# One run request through the public API (tests/integration/policy.sh
# compares it with `ohbox run`): linked to the build tree's libohbox.so.
check_PROGRAMS += tests/lib/libohbox-plan
tests_lib_libohbox_plan_SOURCES = tests/lib/libohbox-plan.c
tests_lib_libohbox_plan_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/src/libohbox/api
tests_lib_libohbox_plan_LDADD = libohbox.la
tests_lib_libohbox_plan_LDFLAGS = -no-install
