# tests/exec: the executor against the real engine, once per driver on the
# engine exec path, and once more through the in-sandbox agent.
check_PROGRAMS += tests/exec/test_executor_api tests/exec/test_executor_cli \
	tests/exec/test_executor_agent
TESTS += tests/exec/test_executor_api tests/exec/test_executor_cli \
	tests/exec/test_executor_agent
tests_exec_test_executor_api_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_api_CFLAGS = $(TEST_CFLAGS) -DYX_TEST_DRIVER='"api"'
tests_exec_test_executor_api_LDADD = $(TEST_LIBS)
tests_exec_test_executor_cli_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_cli_CFLAGS = $(TEST_CFLAGS) -DYX_TEST_DRIVER='"cli"'
tests_exec_test_executor_cli_LDADD = $(TEST_LIBS)
tests_exec_test_executor_agent_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_agent_CFLAGS = $(TEST_CFLAGS) -DYX_TEST_DRIVER='"api"' \
	-DYX_TEST_TRANSPORT='"agent"'
tests_exec_test_executor_agent_LDADD = $(TEST_LIBS)
TESTS += tests/exec/test_cli.sh
EXTRA_DIST += tests/exec/test_cli.sh
