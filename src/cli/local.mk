# The ohbox CLI: one small file per command over libohbox.
bin_PROGRAMS += ohbox
ohbox_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS) -I$(top_srcdir)/src
ohbox_LDADD = libohbox-internal.la $(JANSSON_LIBS)
ohbox_SOURCES = \
	src/cli/main.c src/cli/cli.h \
	src/cli/common.c \
	src/cli/progress.c src/cli/progress.h \
	src/cli/pull.c \
	src/cli/images.c \
	src/cli/inspect.c \
	src/cli/rmi.c \
	src/cli/prune.c \
	src/cli/load_save.c \
	src/cli/login.c \
	src/cli/run.c \
	src/cli/lifecycle.c \
	src/cli/build.c \
	src/cli/push.c
ohbox_SOURCES += src/cli/port.c
ohbox_SOURCES += src/cli/network.c
ohbox_SOURCES += src/cli/exec.c
ohbox_SOURCES += src/cli/action.c
ohbox_SOURCES += src/cli/ci_gitlab.c src/cli/ci_gitlab.h src/cli/ci_gitlab_job.c src/cli/ci_gitlab_services.c
ohbox_SOURCES += src/cli/attach.c
ohbox_SOURCES += src/cli/check.c
ohbox_SOURCES += src/cli/serve.c
# ohbox serve (src/serve/): libmicrohttpd and http-parser are loaded when the
# server starts (dl_mhd.h, dl_http_parser.h), never by the other commands.
ohbox_SOURCES += \
	src/serve/serve.h src/serve/serve_internal.h \
	src/serve/serve.c \
	src/serve/http.c \
	src/serve/api.c \
	src/serve/registry.c \
	src/serve/starter.c \
	src/serve/proxy.c \
	src/serve/upstream.c src/serve/upstream.h \
	src/serve/pool.c \
	src/serve/builds.c \
	src/serve/metrics.c \
	src/serve/validate.c \
	src/serve/dl_mhd.c src/serve/dl_mhd.h \
	src/serve/dl_http_parser.c src/serve/dl_http_parser.h
