# src/agent: yuxi-agent, the in-sandbox exec agent. Like yuxi-run it is a
# tiny static program bind-mounted into every sandbox: libc only, never
# sanitized, its own flags and link command without $(LDFLAGS).
pkglibexec_PROGRAMS += yuxi-agent
yuxi_agent_SOURCES = src/agent/yuxi-agent.c src/agent/agent_proto.h \
	src/agent/agent_scm.h \
	src/runner/run_core.c src/runner/run_core.h
yuxi_agent_CPPFLAGS = -I$(top_srcdir)/src
yuxi_agent_CFLAGS = $(AX_CFLAGS) -fno-sanitize=all -O2
yuxi_agent_LDADD =
yuxi_agent_LINK = $(CCLD) $(yuxi_agent_CFLAGS) $(CFLAGS) -static -o $@
EXTRA_DIST += docs/agent.md bench/agent_bench.py
