# executor/: the in-sandbox server (issue 4).  Built as its own program; it
# shares only error.c and utils.c with libohbox.  executor/closure.sh packs
# it with its shared-library closure and loader (see executor/main.c).
pkglibexec_PROGRAMS += ohbox-executor
ohbox_executor_SOURCES = \
	executor/main.c executor/executor.h \
	executor/adopt.c \
	executor/server.c executor/server.h \
	executor/conn_guard.c executor/conn_guard.h \
	executor/pool.c executor/pool.h \
	executor/actions.c \
	executor/bash_session.c executor/bash_session.h executor/bash_pty.c executor/bash_private.h \
	executor/terminal.c executor/terminal.h \
	executor/cmdsplit.c executor/cmdsplit.h \
	executor/obs.c executor/obs.h \
	executor/files.c \
	executor/editor.c executor/editor.h executor/editor_view.c executor/editor_text.c executor/editor_private.h \
	executor/diff.c \
	executor/archive.c \
	executor/ipython.c \
	executor/users.c executor/users.h \
	src/libohbox/common/error.c src/libohbox/common/error.h \
	src/libohbox/common/strv.c src/libohbox/common/strv.h \
	src/libohbox/common/utils.c src/libohbox/common/utils.h
nodist_ohbox_executor_SOURCES = executor/ipython_driver.inc
ohbox_executor_CFLAGS = $(AM_CFLAGS) -I$(top_builddir) $(MHD_CFLAGS) $(JANSSON_CFLAGS) $(VTERM_CFLAGS) $(MINIZIP_CFLAGS)
ohbox_executor_LDADD = $(MHD_LIBS) $(JANSSON_LIBS) $(VTERM_LIBS) $(MINIZIP_LIBS)

# ipython.c embeds the Python side of run_ipython as a C string literal.
executor/ipython_driver.inc: executor/ipython_driver.py
	$(AM_V_GEN)$(MKDIR_P) executor && sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' \
	  $(top_srcdir)/executor/ipython_driver.py >$@.tmp && mv $@.tmp $@
BUILT_SOURCES += executor/ipython_driver.inc
CLEANFILES += executor/ipython_driver.inc

# The closure directory (binary + every shared library it loads + the loader).
# With executor-mhd-notls/ (below) or configure's --with-mhd-notls it holds
# that libmicrohttpd, as `ohbox build` packs it: no GnuTLS.
executor-closure: ohbox-executor
	libs=; for d in "$$PWD/executor-mhd-notls/lib" "$(MHD_NOTLS_DIR)"; do \
	  if [ -z "$$libs" ] && [ -n "$$d" ] && [ -e "$$d/libmicrohttpd.so.12" ]; then libs=$$d; fi; done; \
	OHBOX_CLOSURE_LIBS="$$libs" $(SHELL) $(top_srcdir)/executor/closure.sh ohbox-executor executor-closure

# Debian's libmicrohttpd source package rebuilt without HTTPS (see
# executor/mhd-notls.sh): halves the executor's idle RSS.
executor-mhd-notls:
	$(SHELL) $(top_srcdir)/executor/mhd-notls.sh executor-mhd-notls

EXTRA_DIST += executor/closure.sh executor/mhd-notls.sh executor/README.md
.PHONY: executor-closure executor-mhd-notls

if SANITIZERS
# The executor as a release build makes it, without the sanitizer runtime
# (libasan: 8 MB of closure): build.sh's layer-size
# test builds its runtime image with it.
check_PROGRAMS += tests/executor/ohbox-executor-release
tests_executor_ohbox_executor_release_SOURCES = $(ohbox_executor_SOURCES)
nodist_tests_executor_ohbox_executor_release_SOURCES = executor/ipython_driver.inc
tests_executor_ohbox_executor_release_CFLAGS = $(WARN_CFLAGS) -pthread -I$(top_builddir) $(MHD_CFLAGS) \
	$(JANSSON_CFLAGS) $(VTERM_CFLAGS) $(MINIZIP_CFLAGS)
tests_executor_ohbox_executor_release_LDFLAGS = -pthread -Wl,--as-needed -Wl,-O1
tests_executor_ohbox_executor_release_LDADD = $(ohbox_executor_LDADD)
endif

# Unit tests of the executor's pure pieces (run by tests/integration/executor-units.sh).
check_PROGRAMS += tests/executor/test-executor-units
tests_executor_test_executor_units_SOURCES = tests/executor/test-executor-units.c tests/unit/unit.h \
	executor/cmdsplit.c executor/terminal.c executor/diff.c executor/obs.c \
	src/libohbox/common/error.c src/libohbox/common/utils.c
tests_executor_test_executor_units_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/executor -I$(top_srcdir)/tests/unit \
	$(JANSSON_CFLAGS) $(VTERM_CFLAGS)
tests_executor_test_executor_units_LDADD = $(JANSSON_LIBS) $(VTERM_LIBS) -lm

# What `ohbox build` needs from an installed ohbox (src/libohbox/build/build_inputs.c
# looks there): closure.sh, and the executor source tree whose digest is the
# runtime images' source tag. Keep this list equal to executor/*.c, *.h, *.py, local.mk.
dist_pkgdata_DATA = executor/closure.sh
executorsrcdir = $(pkgdatadir)/executor-src
dist_executorsrc_DATA = \
	executor/actions.c \
	executor/archive.c \
	executor/bash_private.h \
	executor/bash_pty.c \
	executor/bash_session.c \
	executor/bash_session.h \
	executor/cmdsplit.c \
	executor/cmdsplit.h \
	executor/conn_guard.c \
	executor/conn_guard.h \
	executor/diff.c \
	executor/editor.c \
	executor/editor.h \
	executor/editor_private.h \
	executor/editor_text.c \
	executor/editor_view.c \
	executor/executor.h \
	executor/files.c \
	executor/ipython.c \
	executor/ipython_driver.py \
	executor/local.mk \
	executor/main.c \
	executor/obs.c \
	executor/obs.h \
	executor/server.c \
	executor/server.h \
	executor/terminal.c \
	executor/terminal.h \
	executor/users.c \
	executor/users.h
