# SPDX-License-Identifier: MIT
# tests/provider: the shared table and the provider with real processes and
# an in-test fake engine (fault injection the real engine cannot do).
PROVIDER_TESTS = tests/provider/test_table tests/provider/test_provider \
	tests/provider/test_killloop tests/provider/test_evict
check_PROGRAMS += $(PROVIDER_TESTS) tests/provider/test_killloop_soak
TESTS += $(PROVIDER_TESTS)
tests_lib_libyxtest_a_SOURCES += tests/provider/prov_test.c \
	tests/provider/prov_test.h tests/provider/fake_driver.c \
	tests/provider/fake_driver.h

# Soak build (thousands of kill rounds), run by `make check-soak`.
SOAK_TESTS += tests/provider/run-killloop-soak.sh
EXTRA_DIST += tests/provider/run-killloop-soak.sh
tests_provider_test_killloop_soak_SOURCES = tests/provider/test_killloop.c
tests_provider_test_killloop_soak_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKILLLOOP_ROUNDS=4000
