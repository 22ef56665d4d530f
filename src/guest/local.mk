# SPDX-License-Identifier: MIT
# src/guest: the programs that run inside every sandbox, bind-mounted
# read-only at /opt/yuxi/bin: yuxi-run (one command, started by an engine
# exec) and yuxi-agent (the in-sandbox agent serving commands over a unix
# socket, docs/agent.md). Both run a command with the same code,
# run_core.c. They are tiny static programs: libc only (plus the libc-only
# clock of src/common), never sanitized (a static binary cannot carry
# ASan), hence their own flags and link commands without $(LDFLAGS).
# GUEST_LDFLAGS (configure.ac): static PIE, full RELRO, BIND_NOW when the
# toolchain links that; the distribution's CFLAGS/CPPFLAGS (stack
# protector, _FORTIFY_SOURCE) apply as to every other object.
GUEST_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/src
GUEST_CFLAGS = $(AX_CFLAGS) -fno-sanitize=all -O2 $(GUEST_PIE_CFLAGS)
GUEST_CORE = src/guest/run_core.c src/guest/run_core.h \
	include/yuxi/clock.h src/common/clock.c

pkglibexec_PROGRAMS = yuxi-run yuxi-agent
yuxi_run_SOURCES = src/guest/yuxi-run.c $(GUEST_CORE)
yuxi_run_CPPFLAGS = $(GUEST_CPPFLAGS)
yuxi_run_CFLAGS = $(GUEST_CFLAGS)
yuxi_run_LDADD =
yuxi_run_LINK = $(CCLD) $(yuxi_run_CFLAGS) $(CFLAGS) $(GUEST_LDFLAGS) -o $@

yuxi_agent_SOURCES = src/guest/yuxi-agent.c src/guest/agent_proto.h \
	include/yuxi/sock.h include/yuxi/fdio.h \
	src/guest/agent_keeper.c src/guest/agent_keeper.h \
	src/guest/agent_session.c src/guest/keeper_int.h src/guest/keeper_io.c \
	src/guest/agent_prime.c src/guest/agent_prime.h \
	src/guest/relay.c src/guest/relay.h \
	src/guest/agent_ingress.c src/guest/agent_ingress.h \
	src/guest/agent_services.c src/guest/agent_services.h $(GUEST_CORE)
yuxi_agent_CPPFLAGS = $(GUEST_CPPFLAGS)
yuxi_agent_CFLAGS = $(GUEST_CFLAGS)
yuxi_agent_LDADD =
yuxi_agent_LINK = $(CCLD) $(yuxi_agent_CFLAGS) $(CFLAGS) $(GUEST_LDFLAGS) -o $@
EXTRA_DIST += docs/agent.md bench/agent_bench.py
