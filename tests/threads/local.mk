# SPDX-License-Identifier: MIT
# tests/threads: thread store, agents rules and profiles, HTTP helpers and
# router.
THREADS_TESTS = tests/threads/test_store tests/threads/test_agents \
	tests/threads/test_profiles \
	tests/threads/test_http tests/threads/test_tree tests/threads/test_limit
check_PROGRAMS += $(THREADS_TESTS)
TESTS += $(THREADS_TESTS)
