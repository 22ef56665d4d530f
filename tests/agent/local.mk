# SPDX-License-Identifier: MIT
# tests/agent: the host side of the agent protocol against hostile peers
# (no engine), and the agent in real sandboxes (kill, symlinks, fakes).
#   test_agent_client_control  the same file with src/exec/agent_client.c
#                              compiled again with -DYX_AGENT_CONTROL_UNSAFE
#                              (its checks off): every protection test must
#                              leak, proving it can
AGENT_TESTS = tests/agent/test_agent_client tests/agent/test_agent \
	tests/agent/test_agent_client_control
check_PROGRAMS += $(AGENT_TESTS)
TESTS += $(AGENT_TESTS)
# agent_client.o is compiled again here; the linker then takes nothing
# agent-client-related from libyuxi.a (all its symbols are defined).
tests_agent_test_agent_client_control_SOURCES = tests/agent/test_agent_client.c \
	src/exec/agent_client.c
tests_agent_test_agent_client_control_CPPFLAGS = $(AM_CPPFLAGS) \
	-DYX_AGENT_CONTROL_UNSAFE
