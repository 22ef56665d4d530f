# SPDX-License-Identifier: MIT
# tests/egress: the egress rules (pure, table-driven) and the proxy
# itself against local upstreams (every byte stays on 127.0.0.1).
EGRESS_TESTS = tests/egress/test_rules tests/egress/test_proxy
check_PROGRAMS += $(EGRESS_TESTS)
TESTS += $(EGRESS_TESTS)
