# fuzz/: libFuzzer targets for the parsers of hostile input (issue 8).
#
# They are built with clang whatever CC is (libFuzzer is clang's), from the
# same sources as libohbox and the executor, into fuzz/obj and fuzz/bin:
#   make fuzz-build                build them
#   make fuzz [FUZZ_SECONDS=60]    run each for FUZZ_SECONDS (two at a time),
#                                  then replay tests/fuzz-regressions/
# The default suite runs them briefly (tests/integration/fuzz.sh, which is
# also what `make fuzz` runs).  Seeds: fuzz/corpus/NAME/, written by
# fuzz/gen-corpus.py.  New inputs found by `make fuzz` stay in fuzz/work/.
FUZZ_TARGETS = reference oci auth-challenge authfile registries-conf seccomp layer zip cmdsplit upstream
FUZZ_SECONDS = 60
FUZZ_JOBS = 2

# Library sources the targets link (as objects in one archive: each target
# pulls what it needs).
FUZZ_LIB_SRCS = \
	src/libohbox/common/error.c src/libohbox/common/utils.c src/libohbox/common/digest.c \
	src/libohbox/registry/reference.c src/libohbox/registry/registries_conf.c src/libohbox/common/toml_subset.c \
	src/libohbox/registry/authfile.c src/libohbox/registry/auth_challenge.c \
	src/libohbox/image/layer.c src/libohbox/image/layer_stream.c src/libohbox/common/dl.c src/libohbox/common/dl_archive.c src/libohbox/common/dl_crypto.c \
	src/libohbox/security/seccomp.c src/libohbox/security/seccomp_bpf.c src/libohbox/security/capabilities.c \
	oci/image_spec.c executor/archive.c executor/cmdsplit.c executor/obs.c \
	src/serve/upstream.c src/serve/dl_http_parser.c
# A change to any of these rebuilds every object (simpler than per-file
# dependencies, and a full rebuild takes well under a minute).
FUZZ_LIB_HDRS = \
	config.h src/libohbox/common/error.h src/libohbox/common/utils.h src/libohbox/common/digest.h \
	src/libohbox/registry/reference.h src/libohbox/registry/registries_conf.h src/libohbox/common/toml_subset.h \
	src/libohbox/registry/authfile.h src/libohbox/registry/auth_challenge.h src/libohbox/image/layer.h src/libohbox/image/layer_stream.h \
	src/libohbox/common/dl.h src/libohbox/common/dl_archive.h src/libohbox/common/dl_crypto.h src/libohbox/security/seccomp.h src/libohbox/security/seccomp_internal.h src/libohbox/security/capabilities.h \
	oci/image_spec.h executor/executor.h executor/server.h executor/cmdsplit.h executor/obs.h \
	src/serve/upstream.h src/serve/dl_http_parser.h seccomp-profiles/default.json
FUZZ_TARGET_SRCS = fuzz/fuzz.h fuzz/escape-check.h \
	fuzz/fuzz-reference.c fuzz/fuzz-oci.c fuzz/fuzz-auth-challenge.c fuzz/fuzz-authfile.c \
	fuzz/fuzz-registries-conf.c fuzz/fuzz-seccomp.c fuzz/fuzz-layer.c fuzz/fuzz-zip.c fuzz/fuzz-cmdsplit.c \
	fuzz/fuzz-upstream.c

FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-pthread $(WARN_CFLAGS) -Wno-unused-parameter -Wno-format-nonliteral -I$(top_builddir) -I$(top_srcdir) -I$(top_srcdir)/src/libohbox \
	-I$(top_srcdir)/src -I$(top_srcdir)/executor -DLOCALSTATEDIR=\"$(localstatedir)\" -DSYSCONFDIR=\"$(sysconfdir)\" \
	-DOHBOX_SECCOMP_DEFAULT_PROFILE_FILE=\"$(abs_top_srcdir)/seccomp-profiles/default.json\" \
	$(JANSSON_CFLAGS) $(ARCHIVE_CFLAGS) $(MINIZIP_CFLAGS) $(CRYPTO_CFLAGS) $(SECCOMP_CFLAGS) $(CAP_CFLAGS) $(CURL_CFLAGS)
FUZZ_LIBS = $(JANSSON_LIBS) $(ARCHIVE_LIBS) $(MINIZIP_LIBS) $(CRYPTO_LIBS) $(SECCOMP_LIBS) $(CAP_LIBS) -ldl

EXTRA_DIST += $(FUZZ_TARGET_SRCS) fuzz/gen-corpus.py fuzz/corpus tests/fuzz-regressions

if HAVE_CLANG
# Objects: those whose source is newer than them, or all when a header changed
# (and the missing ones when the list above changed: hence Makefile).
fuzz/obj/libfuzz.a: $(FUZZ_LIB_SRCS) $(FUZZ_LIB_HDRS) Makefile
	@mkdir -p fuzz/obj
	@all=no; for h in $(FUZZ_LIB_HDRS); do \
	  f=$(top_srcdir)/$$h; test -f $$f || f=$$h; \
	  if test -f $@ && test $$f -nt $@; then all=yes; fi; \
	done; \
	pids=; objs=; \
	for s in $(FUZZ_LIB_SRCS); do \
	  o=fuzz/obj/`echo $$s | tr / _ | sed 's/\.c$$/.o/'`; objs="$$objs $$o"; \
	  if test $$all = yes || ! test -f $$o || test $(top_srcdir)/$$s -nt $$o; then \
	    echo "  CLANG    $$o"; \
	    $(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $(top_srcdir)/$$s -o $$o & pids="$$pids $$!"; \
	  fi; \
	done; \
	rc=0; for p in $$pids; do wait $$p || rc=1; done; test $$rc = 0 || exit 1; \
	rm -f $@; ar rcs $@ $$objs

# Targets: each links its own fuzz/fuzz-NAME.c with the archive.
fuzz/bin/.stamp: fuzz/obj/libfuzz.a $(FUZZ_TARGET_SRCS)
	@mkdir -p fuzz/bin
	@for t in $(FUZZ_TARGETS); do \
	  b=fuzz/bin/fuzz-$$t; s=$(top_srcdir)/fuzz/fuzz-$$t.c; \
	  if ! test -f $$b || test $$s -nt $$b || test fuzz/obj/libfuzz.a -nt $$b \
	     || test $(top_srcdir)/fuzz/fuzz.h -nt $$b || test $(top_srcdir)/fuzz/escape-check.h -nt $$b; then \
	    echo "  CLANG    $$b"; \
	    $(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $$s fuzz/obj/libfuzz.a $(FUZZ_LIBS) -o $$b || exit 1; \
	  fi; \
	done; touch $@

fuzz-build: fuzz/bin/.stamp

fuzz: fuzz-build
	OHBOX_BUILDDIR=$(abs_top_builddir) OHBOX_SRCDIR=$(abs_top_srcdir) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_WORK=$(abs_top_builddir)/fuzz/work FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	  $(SHELL) $(top_srcdir)/tests/integration/fuzz.sh
else
fuzz-build fuzz:
	@echo "clang was not found by configure: the fuzz targets need it (apt-get install clang)" >&2; exit 1
endif

fuzz-clean:
	rm -rf fuzz/obj fuzz/bin fuzz/work

.PHONY: fuzz fuzz-build fuzz-clean
