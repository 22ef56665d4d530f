# SPDX-License-Identifier: MIT
# tests/exec: the executor against the real engine, once per driver on the
# engine exec path, and once more through the in-sandbox agent.
EXEC_TESTS = tests/exec/test_executor_api tests/exec/test_executor_docker_cli \
	tests/exec/test_executor_agent
check_PROGRAMS += $(EXEC_TESTS)
TESTS += $(EXEC_TESTS)
tests_exec_test_executor_api_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_api_CPPFLAGS = $(AM_CPPFLAGS) -DYX_TEST_DRIVER='"api"'
tests_exec_test_executor_docker_cli_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_docker_cli_CPPFLAGS = $(AM_CPPFLAGS) -DYX_TEST_DRIVER='"cli"'
tests_exec_test_executor_agent_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_agent_CPPFLAGS = $(AM_CPPFLAGS) \
	-DYX_TEST_DRIVER='"api"' -DYX_TEST_TRANSPORT='"agent"'
