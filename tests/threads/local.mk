# tests/threads: thread store, agents rules, HTTP helpers and router.
check_PROGRAMS += tests/threads/test_store tests/threads/test_agents tests/threads/test_http \
	tests/threads/test_tree
TESTS += tests/threads/test_store tests/threads/test_agents tests/threads/test_http \
	tests/threads/test_tree
tests_threads_test_store_SOURCES = tests/threads/test_store.c
tests_threads_test_store_CFLAGS = $(TEST_CFLAGS)
tests_threads_test_store_LDADD = $(TEST_LIBS)
tests_threads_test_agents_SOURCES = tests/threads/test_agents.c
tests_threads_test_agents_CFLAGS = $(TEST_CFLAGS)
tests_threads_test_agents_LDADD = $(TEST_LIBS)
tests_threads_test_http_SOURCES = tests/threads/test_http.c
tests_threads_test_http_CFLAGS = $(TEST_CFLAGS)
tests_threads_test_http_LDADD = $(TEST_LIBS)
tests_threads_test_tree_SOURCES = tests/threads/test_tree.c
tests_threads_test_tree_CFLAGS = $(TEST_CFLAGS)
tests_threads_test_tree_LDADD = $(TEST_LIBS)
