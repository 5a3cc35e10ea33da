# ohbox-runc: runc's command line over libohbox (src/runc/, runc.h lists the files).
bin_PROGRAMS += ohbox-runc
ohbox_runc_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SYSTEMD_CFLAGS) -I$(top_srcdir)/src
# sd-bus for --systemd-cgroup (systemd.c), when configure found libsystemd.
ohbox_runc_LDADD = libohbox-internal.la $(JANSSON_LIBS) $(SYSTEMD_LIBS)
ohbox_runc_SOURCES = src/runc/main.c src/runc/runc.h src/runc/state.c src/runc/lifecycle.c src/runc/query.c src/runc/exec.c src/runc/console.c src/runc/cgroup.c src/runc/systemd.c
