# ohbox-runc: runc's command line over libohbox (src/runc/runc.c).
bin_PROGRAMS += ohbox-runc
ohbox_runc_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) -I$(top_srcdir)/src
ohbox_runc_LDADD = libohbox-internal.la $(JANSSON_LIBS)
ohbox_runc_SOURCES = src/runc/runc.c
