# SPDX-License-Identifier: MIT
# tests/daemon: the daemon's own logic that needs no running service
# (the service itself is tested by tests/e2e, tests/security, tests/proof).
#   test_reload  what a reload reads again: validation, file and line of a
#                refusal, the restart-only settings kept (src/daemon/reload.c)
#   test_http    the HTTP layer's pure helpers and the route table
#   test_slots   a sandbox host's share of a front's workers (YUXI_HOST_CALLS,
#                src/daemon/slots.c)
DAEMON_TESTS = tests/daemon/test_reload tests/daemon/test_http tests/daemon/test_slots
check_PROGRAMS += $(DAEMON_TESTS)
TESTS += $(DAEMON_TESTS)
