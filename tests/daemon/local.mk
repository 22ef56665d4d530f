# SPDX-License-Identifier: MIT
# tests/daemon: the daemon's own logic that needs no running service
# (the service itself is tested by tests/e2e, tests/security, tests/proof).
#   test_reload  what a reload reads again: validation, file and line of a
#                refusal, the restart-only settings kept (src/daemon/reload.c)
#   test_http    the HTTP layer's pure helpers and the route table
DAEMON_TESTS = tests/daemon/test_reload tests/daemon/test_http
check_PROGRAMS += $(DAEMON_TESTS)
TESTS += $(DAEMON_TESTS)
