# src/driver: container engine drivers (Engine API over libcurl, docker CLI)
# and the in-sandbox runner.
libyuxi_a_SOURCES += \
	include/yuxi/driver.h src/driver/driver_int.h src/driver/api_int.h \
	src/driver/driver.c src/driver/demux.c src/driver/spec.c \
	src/driver/spawn.c src/driver/api.c src/driver/api_exec.c \
	src/driver/cli.c

# yuxi-run: a tiny static program bind-mounted into every sandbox. It links
# nothing but libc and is never sanitized (a static binary cannot carry
# ASan), hence its own flags and its own link command without $(LDFLAGS).
pkglibexec_PROGRAMS = yuxi-run
yuxi_run_SOURCES = src/runner/yuxi-run.c src/runner/run_core.c \
	src/runner/run_core.h
yuxi_run_CPPFLAGS = -I$(top_srcdir)/src
yuxi_run_CFLAGS = $(AX_CFLAGS) -fno-sanitize=all -O2
yuxi_run_LDADD =
yuxi_run_LINK = $(CCLD) $(yuxi_run_CFLAGS) $(CFLAGS) -static -o $@
