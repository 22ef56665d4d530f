# tests/agent: the host side of the agent protocol against hostile peers
# (no engine), and the agent in real sandboxes (kill, symlinks, fakes).
check_PROGRAMS += tests/agent/test_agent_client tests/agent/test_agent
TESTS += tests/agent/test_agent_client tests/agent/test_agent
tests_agent_test_agent_client_SOURCES = tests/agent/test_agent_client.c
tests_agent_test_agent_client_CFLAGS = $(TEST_CFLAGS)
tests_agent_test_agent_client_LDADD = $(TEST_LIBS)
tests_agent_test_agent_SOURCES = tests/agent/test_agent.c
tests_agent_test_agent_CFLAGS = $(TEST_CFLAGS)
tests_agent_test_agent_LDADD = $(TEST_LIBS)
