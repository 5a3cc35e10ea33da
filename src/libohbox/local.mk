# libohbox-internal: the library with all the logic; the CLI and tests link it,
# and the installed libohbox.la (below) wraps it in the public API.
noinst_LTLIBRARIES += libohbox-internal.la
libohbox_internal_la_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS) $(CRYPTO_CFLAGS) $(ARCHIVE_CFLAGS)
# libcurl, libarchive, libnftables and libcrypto are not linked: dl_*.c
# load them on first use (dl.h); their pkg-config CFLAGS give the headers.
libohbox_internal_la_LIBADD = $(JANSSON_LIBS)
libohbox_internal_la_SOURCES = \
	src/libohbox/error.c src/libohbox/error.h \
	src/libohbox/utils.c src/libohbox/utils.h \
	src/libohbox/digest.c src/libohbox/digest.h \
	src/libohbox/reference.c src/libohbox/reference.h \
	src/libohbox/registries_conf.c src/libohbox/registries_conf.h \
	src/libohbox/toml_subset.c src/libohbox/toml_subset.h \
	src/libohbox/authfile.c src/libohbox/authfile.h \
	src/libohbox/auth_challenge.c src/libohbox/auth_challenge.h \
	src/libohbox/layer.c src/libohbox/layer.h src/libohbox/layer_stream.c src/libohbox/layer_stream.h \
	src/libohbox/store.c src/libohbox/store.h src/libohbox/store_internal.h \
	src/libohbox/store_layers.c src/libohbox/store_images.c src/libohbox/store_gc.c \
	src/libohbox/registry.c src/libohbox/registry.h src/libohbox/registry_internal.h \
	src/libohbox/registry_http.c src/libohbox/registry_auth.c src/libohbox/registry_fetch.c \
	src/libohbox/image.c src/libohbox/image.h \
	src/libohbox/pull.c src/libohbox/pull.h \
	src/libohbox/oci_layout.c src/libohbox/oci_layout.h \
	oci/image-spec.c oci/image-spec.h \
	src/libohbox/cgroup.c src/libohbox/cgroup.h src/libohbox/cgroup-internal.h \
	src/libohbox/cgroup-detect.c src/libohbox/cgroup-limits.c src/libohbox/cgroup-utils.c \
	src/libohbox/cgroup-v1.c src/libohbox/cgroup-v2.c

# seccomp and capabilities (used by `ohbox run`).
libohbox_internal_la_CFLAGS += $(SECCOMP_CFLAGS) $(CAP_CFLAGS) -DOHBOX_PKGDATADIR=\"$(pkgdatadir)\" \
	-DOHBOX_SECCOMP_DEFAULT_PROFILE_FILE=\"$(abs_top_srcdir)/seccomp-profiles/default.json\"
libohbox_internal_la_LIBADD += $(SECCOMP_LIBS) $(CAP_LIBS)
libohbox_internal_la_SOURCES += \
	src/libohbox/seccomp.c src/libohbox/seccomp.h src/libohbox/seccomp_internal.h src/libohbox/seccomp_bpf.c \
	src/libohbox/capabilities.c src/libohbox/capabilities.h
# seccomp.c embeds the default profile (.incbin): rebuild it when the profile changes.
# (Through a variable: automake then leaves its own rule for the object alone.)
ohbox_seccomp_lo = src/libohbox/libohbox_internal_la-seccomp.lo
$(ohbox_seccomp_lo): $(top_srcdir)/seccomp-profiles/default.json
seccompdir = $(pkgdatadir)/seccomp
dist_seccomp_DATA = seccomp-profiles/default.json
EXTRA_DIST += seccomp-profiles/README.md

# Sandboxes (`ohbox run` and the lifecycle commands).
libohbox_internal_la_SOURCES += \
	src/libohbox/snapshot.c src/libohbox/snapshot.h \
	src/libohbox/linux.c src/libohbox/linux.h \
	src/libohbox/mounts.c src/libohbox/userns.c src/libohbox/init.c \
	src/libohbox/sandbox.c src/libohbox/sandbox.h src/libohbox/sandbox_internal.h \
	src/libohbox/sandbox_ops.c src/libohbox/state.c src/libohbox/monitor.c
# `ohbox exec` (exec.h).
libohbox_internal_la_SOURCES += src/libohbox/exec.c src/libohbox/exec.h src/libohbox/exec_internal.h src/libohbox/exec_child.c \
	src/libohbox/terminal.c

# `ohbox build`: runtime images (build.h), `ohbox push` (registry_push.c).
# Where build.c looks for the executor, its sources and closure.sh (build.h).
libohbox_internal_la_CFLAGS += -DOHBOX_PKGLIBEXECDIR=\"$(pkglibexecdir)\" -DOHBOX_SRCDIR=\"$(abs_top_srcdir)\" \
	-DOHBOX_BUILDDIR=\"$(abs_top_builddir)\"
libohbox_internal_la_SOURCES += \
	src/libohbox/build.c src/libohbox/build.h src/libohbox/build_tags.c src/libohbox/build_inputs.c \
	src/libohbox/build_layer.c src/libohbox/registry_push.c src/libohbox/registry_push.h \
	src/libohbox/runtime_image.c src/libohbox/runtime_image.h

# Networking (bridge, veth, leases, published ports): network.h.
libohbox_internal_la_CFLAGS += $(MNL_CFLAGS) $(NFTABLES_CFLAGS)
libohbox_internal_la_LIBADD += $(MNL_LIBS)
libohbox_internal_la_SOURCES += \
	src/libohbox/network.c src/libohbox/network.h src/libohbox/network_internal.h src/libohbox/network_etc.c \
	src/libohbox/network_ports.c \
	src/libohbox/netlink.c src/libohbox/netlink.h \
	src/libohbox/nft.c src/libohbox/nft.h \
	src/libohbox/rootless-net.c \
	src/libohbox/rootless-pasta.c

# The action protocol's client (action.h): `ohbox action` and ohbox_action().
libohbox_internal_la_SOURCES += src/libohbox/action.c src/libohbox/action.h

# libohbox.so: the public API (ohbox.h, libohbox(3)) over libohbox-internal,
# exporting only what libohbox.sym lists. -version-info CURRENT:REVISION:AGE
# (libtool's rules: an added function bumps CURRENT and AGE).
lib_LTLIBRARIES = libohbox.la
libohbox_la_SOURCES = src/libohbox/api.c src/libohbox/api_exec.c src/libohbox/api_internal.h src/libohbox/ohbox.h
libohbox_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
libohbox_la_LIBADD = libohbox-internal.la
libohbox_la_LDFLAGS = -version-info 0:0:0 -no-undefined -Wl,--version-script=$(top_srcdir)/src/libohbox/libohbox.sym
EXTRA_libohbox_la_DEPENDENCIES = $(top_srcdir)/src/libohbox/libohbox.sym
include_HEADERS = src/libohbox/ohbox.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libohbox.pc
EXTRA_DIST += src/libohbox/libohbox.sym libohbox.pc.in
EXTRA_DIST += contrib/embed/example.c contrib/embed/Makefile
libohbox_internal_la_SOURCES += src/libohbox/attach.c
# `ohbox check`: store and state consistency, --repair.
libohbox_internal_la_SOURCES += src/libohbox/check.c src/libohbox/check_state.c src/libohbox/check.h

# Libraries loaded on first use instead of linked (dl.h).
libohbox_internal_la_SOURCES += src/libohbox/dl.c src/libohbox/dl.h \
	src/libohbox/dl_curl.c src/libohbox/dl_curl.h src/libohbox/dl_archive.c src/libohbox/dl_archive.h \
	src/libohbox/dl_nft.c src/libohbox/dl_nft.h src/libohbox/dl_crypto.c src/libohbox/dl_crypto.h
