# SPDX-License-Identifier: MIT
# tests/threads: the thread store (records, uids, metadata), tree removal,
# the per-user thread limit.
THREADS_TESTS = tests/threads/test_store tests/threads/test_tree \
	tests/threads/test_limit
check_PROGRAMS += $(THREADS_TESTS)
TESTS += $(THREADS_TESTS)
