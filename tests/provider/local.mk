# tests/provider: the shared table and the provider with real processes and
# an in-test fake engine (fault injection the real engine cannot do).
PROV_TEST_COMMON = tests/provider/prov_test.c tests/provider/prov_test.h \
	tests/provider/fake_driver.c tests/provider/fake_driver.h

check_PROGRAMS += tests/provider/test_table tests/provider/test_provider \
	tests/provider/test_killloop tests/provider/test_killloop_soak
TESTS += tests/provider/test_table tests/provider/test_provider \
	tests/provider/test_killloop
# Soak build (thousands of kill rounds), run by `make check-soak`.
SOAK_TESTS += tests/provider/run-killloop-soak.sh
EXTRA_DIST += tests/provider/run-killloop-soak.sh

tests_provider_test_table_SOURCES = tests/provider/test_table.c \
	$(PROV_TEST_COMMON)
tests_provider_test_table_CFLAGS = $(TEST_CFLAGS)
tests_provider_test_table_LDADD = $(TEST_LIBS)

tests_provider_test_provider_SOURCES = tests/provider/test_provider.c \
	$(PROV_TEST_COMMON)
tests_provider_test_provider_CFLAGS = $(TEST_CFLAGS)
tests_provider_test_provider_LDADD = $(TEST_LIBS)

tests_provider_test_killloop_SOURCES = tests/provider/test_killloop.c \
	$(PROV_TEST_COMMON)
tests_provider_test_killloop_CFLAGS = $(TEST_CFLAGS)
tests_provider_test_killloop_LDADD = $(TEST_LIBS)

tests_provider_test_killloop_soak_SOURCES = tests/provider/test_killloop.c \
	$(PROV_TEST_COMMON)
tests_provider_test_killloop_soak_CFLAGS = $(TEST_CFLAGS) \
	-DKILLLOOP_ROUNDS=4000
tests_provider_test_killloop_soak_LDADD = $(TEST_LIBS)
