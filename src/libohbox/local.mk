# libohbox-internal: the library with all the logic; the CLI and tests link it,
# and the installed libohbox.la (below) wraps it in the public API.
noinst_LTLIBRARIES += libohbox-internal.la
libohbox_internal_la_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS) $(CRYPTO_CFLAGS) $(ARCHIVE_CFLAGS) $(YAML_CFLAGS)
# libcurl, libarchive, libnftables, libcrypto and libyaml are not linked: dl_*.c
# load them on first use (dl.h); their pkg-config CFLAGS give the headers.
libohbox_internal_la_LIBADD = $(JANSSON_LIBS)
libohbox_internal_la_SOURCES = \
	src/libohbox/common/error.c src/libohbox/common/error.h \
	src/libohbox/common/utils.c src/libohbox/common/utils.h \
	src/libohbox/common/digest.c src/libohbox/common/digest.h \
	src/libohbox/registry/reference.c src/libohbox/registry/reference.h \
	src/libohbox/registry/registries_conf.c src/libohbox/registry/registries_conf.h \
	src/libohbox/common/toml_subset.c src/libohbox/common/toml_subset.h \
	src/libohbox/common/strv.c src/libohbox/common/strv.h \
	src/libohbox/registry/authfile.c src/libohbox/registry/authfile.h \
	src/libohbox/registry/auth_challenge.c src/libohbox/registry/auth_challenge.h \
	src/libohbox/image/layer.c src/libohbox/image/layer.h src/libohbox/image/layer_stream.c src/libohbox/image/layer_stream.h \
	src/libohbox/store/store.c src/libohbox/store/store.h src/libohbox/store/store_internal.h \
	src/libohbox/store/store_layers.c src/libohbox/store/store_images.c src/libohbox/store/store_gc.c \
	src/libohbox/registry/registry.c src/libohbox/registry/registry.h src/libohbox/registry/registry_internal.h \
	src/libohbox/registry/registry_http.c src/libohbox/registry/registry_auth.c src/libohbox/registry/registry_fetch.c \
	src/libohbox/image/image.c src/libohbox/image/image.h \
	src/libohbox/image/pull.c src/libohbox/image/pull.h \
	src/libohbox/image/oci_layout.c src/libohbox/image/oci_layout.h \
	oci/image_spec.c oci/image_spec.h \
	oci/runtime_spec.c oci/runtime_spec.h oci/runtime_spec_default.c \
	src/libohbox/cgroup/cgroup.c src/libohbox/cgroup/cgroup.h src/libohbox/cgroup/cgroup_internal.h \
	src/libohbox/cgroup/cgroup_detect.c src/libohbox/cgroup/cgroup_limits.c src/libohbox/cgroup/cgroup_utils.c \
	src/libohbox/cgroup/cgroup_v1.c src/libohbox/cgroup/cgroup_v2.c src/libohbox/cgroup/cgroup_devices.c

# seccomp and capabilities (used by `ohbox run`).
libohbox_internal_la_CFLAGS += $(SECCOMP_CFLAGS) $(CAP_CFLAGS) -DOHBOX_PKGDATADIR=\"$(pkgdatadir)\" \
	-DOHBOX_SECCOMP_DEFAULT_PROFILE_FILE=\"$(abs_top_srcdir)/seccomp-profiles/default.json\"
libohbox_internal_la_LIBADD += $(SECCOMP_LIBS) $(CAP_LIBS)
libohbox_internal_la_SOURCES += \
	src/libohbox/security/seccomp.c src/libohbox/security/seccomp.h src/libohbox/security/seccomp_internal.h src/libohbox/security/seccomp_bpf.c \
	src/libohbox/security/capabilities.c src/libohbox/security/capabilities.h
# seccomp.c embeds the default profile (.incbin): rebuild it when the profile changes.
# (Through a variable: automake then leaves its own rule for the object alone.)
ohbox_seccomp_lo = src/libohbox/security/libohbox_internal_la-seccomp.lo
$(ohbox_seccomp_lo): $(top_srcdir)/seccomp-profiles/default.json
seccompdir = $(pkgdatadir)/seccomp
dist_seccomp_DATA = seccomp-profiles/default.json
EXTRA_DIST += seccomp-profiles/README.md

# Sandboxes (`ohbox run` and the lifecycle commands).
libohbox_internal_la_SOURCES += \
	src/libohbox/sandbox/snapshot.c src/libohbox/sandbox/snapshot.h src/libohbox/sandbox/snapshot_size.c \
	src/libohbox/sandbox/linux.c src/libohbox/sandbox/linux.h \
	src/libohbox/sandbox/mounts.c src/libohbox/sandbox/userns.c src/libohbox/sandbox/init.c \
	src/libohbox/sandbox/sandbox.c src/libohbox/sandbox/sandbox.h src/libohbox/sandbox/sandbox_internal.h \
	src/libohbox/sandbox/sandbox_ops.c src/libohbox/sandbox/state.c src/libohbox/sandbox/state_record.c src/libohbox/sandbox/state.h src/libohbox/sandbox/monitor.c \
	src/libohbox/sandbox/relay.c src/libohbox/sandbox/relay.h \
	src/libohbox/sandbox/bundle.c src/libohbox/sandbox/bundle.h
# `ohbox exec` (exec.h).
libohbox_internal_la_SOURCES += src/libohbox/sandbox/exec.c src/libohbox/sandbox/exec.h src/libohbox/sandbox/exec_internal.h src/libohbox/sandbox/exec_child.c \
	src/libohbox/sandbox/terminal.c

# `ohbox build`: runtime images (build.h), `ohbox push` (registry_push.c).
# Where build.c looks for the executor, its sources and closure.sh (build.h).
libohbox_internal_la_CFLAGS += -DOHBOX_PKGLIBEXECDIR=\"$(pkglibexecdir)\" -DOHBOX_SRCDIR=\"$(abs_top_srcdir)\" \
	-DOHBOX_BUILDDIR=\"$(abs_top_builddir)\"
libohbox_internal_la_SOURCES += \
	src/libohbox/build/build.c src/libohbox/build/build.h src/libohbox/build/build_tags.c src/libohbox/build/build_inputs.c \
	src/libohbox/build/build_layer.c src/libohbox/registry/registry_push.c src/libohbox/registry/registry_push.h \
	src/libohbox/build/runtime_image.c src/libohbox/build/runtime_image.h

# Networking (bridge, veth, leases, published ports): network.h.
libohbox_internal_la_CFLAGS += $(MNL_CFLAGS) $(NFTABLES_CFLAGS)
libohbox_internal_la_LIBADD += $(MNL_LIBS)
libohbox_internal_la_SOURCES += \
	src/libohbox/network/network.c src/libohbox/network/network.h src/libohbox/network/network_internal.h src/libohbox/network/network_etc.c \
	src/libohbox/network/network_ports.c \
	src/libohbox/network/netlink.c src/libohbox/network/netlink.h \
	src/libohbox/network/nft.c src/libohbox/network/nft.h \
	src/libohbox/network/nfnl.c src/libohbox/network/nfnl.h \
	src/libohbox/network/egress.c src/libohbox/network/egress.h \
	src/libohbox/network/network_bridge.c src/libohbox/network/network_named.c \
	src/libohbox/network/rootless_net.c \
	src/libohbox/network/rootless_pasta.c

# The run policy (run_policy.h): every front door's request to one plan.
libohbox_internal_la_SOURCES += src/libohbox/policy/run_policy.c src/libohbox/policy/run_policy.h \
	src/libohbox/policy/run_plan.c src/libohbox/policy/host_probe.c

# The action protocol's client (action.h): `ohbox action` and ohbox_action().
libohbox_internal_la_SOURCES += src/libohbox/api/action.c src/libohbox/api/action.h src/libohbox/api/frontend.h

# libohbox.so: the public API (ohbox.h, libohbox(3)) over libohbox-internal,
# exporting only what libohbox.sym lists. -version-info CURRENT:REVISION:AGE
# (libtool's rules: an added function bumps CURRENT and AGE).
lib_LTLIBRARIES = libohbox.la
libohbox_la_SOURCES = src/libohbox/api/api.c src/libohbox/api/api_exec.c src/libohbox/api/api_internal.h src/libohbox/api/ohbox.h
libohbox_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
libohbox_la_LIBADD = libohbox-internal.la
libohbox_la_LDFLAGS = -version-info 1:0:1 -no-undefined -Wl,--version-script=$(top_srcdir)/src/libohbox/api/libohbox.sym
EXTRA_libohbox_la_DEPENDENCIES = $(top_srcdir)/src/libohbox/api/libohbox.sym
include_HEADERS = src/libohbox/api/ohbox.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libohbox.pc
EXTRA_DIST += src/libohbox/api/libohbox.sym libohbox.pc.in
EXTRA_DIST += contrib/embed/example.c contrib/embed/Makefile
libohbox_internal_la_SOURCES += src/libohbox/sandbox/attach.c
# `ohbox check`: store and state consistency, --repair.
libohbox_internal_la_SOURCES += src/libohbox/store/check.c src/libohbox/sandbox/check_state.c src/libohbox/store/check.h

# Libraries loaded on first use instead of linked (dl.h).
libohbox_internal_la_SOURCES += src/libohbox/common/dl.c src/libohbox/common/dl.h \
	src/libohbox/common/dl_curl.c src/libohbox/common/dl_curl.h src/libohbox/common/dl_archive.c src/libohbox/common/dl_archive.h \
	src/libohbox/common/dl_nft.c src/libohbox/common/dl_nft.h src/libohbox/common/dl_crypto.c src/libohbox/common/dl_crypto.h \
	src/libohbox/common/dl_yaml.c src/libohbox/common/dl_yaml.h

# Devices given to sandboxes: CDI specs (JSON or YAML), host device nodes.
libohbox_internal_la_SOURCES += src/libohbox/devices/devices.c src/libohbox/devices/devices.h \
	src/libohbox/devices/cdi.c src/libohbox/devices/gpus.c src/libohbox/devices/hooks.c src/libohbox/common/yaml_json.c src/libohbox/common/yaml_json.h
