# Tests. `make check` runs tests/run-tests.sh, which runs every unit test
# program and every integration script and ends with "N passed, N failed, N skipped".
UNIT_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(ARCHIVE_CFLAGS) $(CURL_CFLAGS) -I$(top_srcdir)/tests/unit
UNIT_LDADD = libohbox-internal.la $(JANSSON_LIBS) $(ARCHIVE_LIBS) $(CRYPTO_LIBS)

check_PROGRAMS += tests/unit/test-digest tests/unit/test-reference tests/unit/test-registries-conf \
	tests/unit/test-authfile tests/unit/test-auth-challenge tests/unit/test-oci tests/unit/test-oci-runtime tests/unit/test-layer \
	tests/unit/test-store

tests_unit_test_digest_SOURCES = tests/unit/test-digest.c tests/unit/unit.h
tests_unit_test_digest_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_digest_LDADD = $(UNIT_LDADD)
tests_unit_test_reference_SOURCES = tests/unit/test-reference.c tests/unit/unit.h
tests_unit_test_reference_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_reference_LDADD = $(UNIT_LDADD)
tests_unit_test_registries_conf_SOURCES = tests/unit/test-registries-conf.c tests/unit/unit.h
tests_unit_test_registries_conf_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_registries_conf_LDADD = $(UNIT_LDADD)
tests_unit_test_authfile_SOURCES = tests/unit/test-authfile.c tests/unit/unit.h
tests_unit_test_authfile_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_authfile_LDADD = $(UNIT_LDADD)
tests_unit_test_auth_challenge_SOURCES = tests/unit/test-auth-challenge.c tests/unit/unit.h
tests_unit_test_auth_challenge_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_auth_challenge_LDADD = $(UNIT_LDADD)
tests_unit_test_oci_SOURCES = tests/unit/test-oci.c tests/unit/unit.h
tests_unit_test_oci_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_oci_LDADD = $(UNIT_LDADD)
tests_unit_test_oci_runtime_SOURCES = tests/unit/test-oci-runtime.c tests/unit/unit.h
tests_unit_test_oci_runtime_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_oci_runtime_LDADD = $(UNIT_LDADD)
tests_unit_test_layer_SOURCES = tests/unit/test-layer.c tests/unit/unit.h
tests_unit_test_layer_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_layer_LDADD = $(UNIT_LDADD)
tests_unit_test_store_SOURCES = tests/unit/test-store.c tests/unit/unit.h
tests_unit_test_store_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_store_LDADD = $(UNIT_LDADD)

EXTRA_DIST += tests/run-tests.sh tests/durations tests/lib tests/integration tests/fixtures tests/mutate.sh tests/mutations

check-local: $(check_PROGRAMS) $(bin_PROGRAMS)
	@OHBOX_BUILDDIR=$(abs_top_builddir) OHBOX_SRCDIR=$(abs_top_srcdir) \
	  $(SHELL) $(top_srcdir)/tests/run-tests.sh $(TESTS_ARGS)

check_PROGRAMS += tests/unit/test-seccomp tests/unit/test-capabilities
tests_unit_test_seccomp_SOURCES = tests/unit/test-seccomp.c tests/unit/unit.h
tests_unit_test_seccomp_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_seccomp_LDADD = $(UNIT_LDADD) $(SECCOMP_LIBS) $(CAP_LIBS)
tests_unit_test_capabilities_SOURCES = tests/unit/test-capabilities.c tests/unit/unit.h
tests_unit_test_capabilities_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_capabilities_LDADD = $(UNIT_LDADD) $(CAP_LIBS)

check_PROGRAMS += tests/unit/test-cgroup tests/unit/test-cgroup-lifecycle tests/unit/test-cgroup-parse
tests_unit_test_cgroup_SOURCES = tests/unit/test-cgroup.c tests/unit/cgroup-test.h tests/unit/unit.h
tests_unit_test_cgroup_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cgroup_LDADD = $(UNIT_LDADD)
tests_unit_test_cgroup_lifecycle_SOURCES = tests/unit/test-cgroup-lifecycle.c tests/unit/cgroup-test.h tests/unit/unit.h
tests_unit_test_cgroup_lifecycle_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cgroup_lifecycle_LDADD = $(UNIT_LDADD)
tests_unit_test_cgroup_parse_SOURCES = tests/unit/test-cgroup-parse.c tests/unit/unit.h
tests_unit_test_cgroup_parse_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cgroup_parse_LDADD = $(UNIT_LDADD)
EXTRA_DIST += tests/guest

check_PROGRAMS += tests/unit/test-build-tags
tests_unit_test_build_tags_SOURCES = tests/unit/test-build-tags.c tests/unit/unit.h
tests_unit_test_build_tags_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_build_tags_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test-network
tests_unit_test_network_SOURCES = tests/unit/test-network.c tests/unit/unit.h
tests_unit_test_network_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_network_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test-egress
tests_unit_test_egress_SOURCES = tests/unit/test-egress.c tests/unit/unit.h
tests_unit_test_egress_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_egress_LDADD = $(UNIT_LDADD)
EXTRA_DIST += tests/escape

# Libraries loaded on first use (dl.h).
check_PROGRAMS += tests/unit/test-dl
tests_unit_test_dl_SOURCES = tests/unit/test-dl.c tests/unit/unit.h
tests_unit_test_dl_CFLAGS = $(UNIT_CFLAGS) $(NFTABLES_CFLAGS)
tests_unit_test_dl_LDADD = $(UNIT_LDADD)
EXTRA_DIST += tests/soak

# The run policy (run_policy.h) over made-up hosts.
check_PROGRAMS += tests/unit/test-run-policy
tests_unit_test_run_policy_SOURCES = tests/unit/test-run-policy.c tests/unit/unit.h
tests_unit_test_run_policy_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_run_policy_LDADD = $(UNIT_LDADD)

# One run request through the public API (tests/integration/policy.sh
# compares it with `ohbox run`): linked to the build tree's libohbox.so.
check_PROGRAMS += tests/lib/libohbox-plan
tests_lib_libohbox_plan_SOURCES = tests/lib/libohbox-plan.c
tests_lib_libohbox_plan_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/src/libohbox/api
tests_lib_libohbox_plan_LDADD = libohbox.la
tests_lib_libohbox_plan_LDFLAGS = -no-install

check_PROGRAMS += tests/unit/test-cdi
tests_unit_test_cdi_SOURCES = tests/unit/test-cdi.c tests/unit/unit.h
tests_unit_test_cdi_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cdi_LDADD = $(UNIT_LDADD)

# String vectors, environments and PATH lookup (common/strv.h).
check_PROGRAMS += tests/unit/test-strv
tests_unit_test_strv_SOURCES = tests/unit/test-strv.c tests/unit/unit.h
tests_unit_test_strv_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_strv_LDADD = $(UNIT_LDADD)

# The typed sandbox state (sandbox/state.h): parse, serialise, every status.
check_PROGRAMS += tests/unit/test-state
tests_unit_test_state_SOURCES = tests/unit/test-state.c tests/unit/unit.h
tests_unit_test_state_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_state_LDADD = $(UNIT_LDADD)
