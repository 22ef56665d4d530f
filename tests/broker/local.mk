# tests/broker: the safe file broker.
#   test_broker          functional semantics (ls/cat/write/edit/glob/grep/...)
#   test_broker_escape   escape scenarios and the RENAME_EXCHANGE race,
#                        protections on: no scenario may leak
#   test_broker_control  the same scenarios with the broker sources compiled
#                        again with -DYX_BROKER_CONTROL_UNSAFE: every scenario
#                        must leak, proving the protections are live
#   test_broker_budget   the budget of a listing/glob/grep (bytes, time, gone),
#                        each with its control (the budget off)
BROKER_TEST_HELPERS = tests/broker/helpers.c tests/broker/helpers.h

check_PROGRAMS += tests/broker/test_broker tests/broker/test_broker_escape \
	tests/broker/test_broker_control tests/broker/test_broker_budget
TESTS += tests/broker/test_broker tests/broker/test_broker_escape \
	tests/broker/test_broker_control tests/broker/test_broker_budget

tests_broker_test_broker_SOURCES = tests/broker/test_broker.c \
	$(BROKER_TEST_HELPERS)
tests_broker_test_broker_CFLAGS = $(TEST_CFLAGS)
tests_broker_test_broker_LDADD = $(TEST_LIBS)

tests_broker_test_broker_budget_SOURCES = tests/broker/test_budget.c \
	$(BROKER_TEST_HELPERS)
tests_broker_test_broker_budget_CFLAGS = $(TEST_CFLAGS)
tests_broker_test_broker_budget_LDADD = $(TEST_LIBS)

tests_broker_test_broker_escape_SOURCES = tests/broker/test_escape.c \
	$(BROKER_TEST_HELPERS)
tests_broker_test_broker_escape_CFLAGS = $(TEST_CFLAGS)
tests_broker_test_broker_escape_LDADD = $(TEST_LIBS)

# The broker objects are compiled again for this target; the linker then
# takes nothing broker-related from libyuxi.a (all its symbols are defined).
tests_broker_test_broker_control_SOURCES = tests/broker/test_escape.c \
	$(BROKER_TEST_HELPERS) $(BROKER_SOURCES)
tests_broker_test_broker_control_CPPFLAGS = $(AM_CPPFLAGS) \
	-DYX_BROKER_CONTROL_UNSAFE
tests_broker_test_broker_control_CFLAGS = $(TEST_CFLAGS)
tests_broker_test_broker_control_LDADD = $(TEST_LIBS)
