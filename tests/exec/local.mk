# tests/exec: the executor against the real engine, once per driver.
check_PROGRAMS += tests/exec/test_executor_api tests/exec/test_executor_cli
TESTS += tests/exec/test_executor_api tests/exec/test_executor_cli
tests_exec_test_executor_api_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_api_CFLAGS = $(TEST_CFLAGS) -DYX_TEST_DRIVER='"api"'
tests_exec_test_executor_api_LDADD = $(TEST_LIBS)
tests_exec_test_executor_cli_SOURCES = tests/exec/test_executor.c
tests_exec_test_executor_cli_CFLAGS = $(TEST_CFLAGS) -DYX_TEST_DRIVER='"cli"'
tests_exec_test_executor_cli_LDADD = $(TEST_LIBS)
TESTS += tests/exec/test_cli.sh
EXTRA_DIST += tests/exec/test_cli.sh
