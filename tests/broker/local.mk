# SPDX-License-Identifier: MIT
# tests/broker: the safe file broker.
#   test_broker          functional semantics (ls/cat/write/edit/glob/grep/...)
#   test_broker_escape   escape scenarios and the RENAME_EXCHANGE race,
#                        protections on: no scenario may leak
#   test_broker_control  the same scenarios with the broker sources compiled
#                        again with -DYX_BROKER_CONTROL_UNSAFE: every scenario
#                        must leak, proving the protections are live
#   test_broker_budget   the budget of a listing/glob/grep (bytes, time, gone),
#                        each with its control (the budget off)
BROKER_TESTS = tests/broker/test_broker tests/broker/test_broker_escape \
	tests/broker/test_broker_control tests/broker/test_broker_budget
check_PROGRAMS += $(BROKER_TESTS)
TESTS += $(BROKER_TESTS)
tests_lib_libyxtest_a_SOURCES += tests/broker/helpers.c tests/broker/helpers.h

tests_broker_test_broker_budget_SOURCES = tests/broker/test_budget.c
tests_broker_test_broker_escape_SOURCES = tests/broker/test_escape.c
# The broker objects are compiled again for this target; the linker then
# takes nothing broker-related from libyuxi.a (all its symbols are defined).
tests_broker_test_broker_control_SOURCES = tests/broker/test_escape.c \
	$(BROKER_SOURCES)
tests_broker_test_broker_control_CPPFLAGS = $(AM_CPPFLAGS) \
	-DYX_BROKER_CONTROL_UNSAFE
