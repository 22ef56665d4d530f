# SPDX-License-Identifier: MIT
# tests/guest: the host side of the agent protocol against hostile peers
# (no engine), and the agent in real sandboxes (kill, symlinks, fakes).
#   test_agent_client_control  the same file with src/exec/agent_client.c
#                              compiled again with -DYX_AGENT_CONTROL_UNSAFE
#                              (its checks off): every protection test must
#                              leak, proving it can
GUEST_TESTS = tests/guest/test_agent_client tests/guest/test_agent \
	tests/guest/test_agent_client_control
check_PROGRAMS += $(GUEST_TESTS)
TESTS += $(GUEST_TESTS)
# agent_client.o is compiled again here; the linker then takes nothing
# agent-client-related from libyuxi.a (all its symbols are defined).
tests_guest_test_agent_client_control_SOURCES = tests/guest/test_agent_client.c \
	src/exec/agent_client.c
tests_guest_test_agent_client_control_CPPFLAGS = $(AM_CPPFLAGS) \
	-DYX_AGENT_CONTROL_UNSAFE
