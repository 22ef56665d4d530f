# tests/driver: demultiplexer and runner units, both drivers against the real
# engine (yuxi-sandbox-test:latest), and fault injection with a fake engine.
check_PROGRAMS += tests/driver/test_demux tests/driver/test_spec tests/driver/test_runner \
	tests/driver/test_fault tests/driver/test_engine
TESTS += tests/driver/test_demux tests/driver/test_spec tests/driver/test_runner \
	tests/driver/test_fault tests/driver/test_engine
EXTRA_DIST += tests/driver/drvtest.h

tests_driver_test_demux_SOURCES = tests/driver/test_demux.c
tests_driver_test_demux_CFLAGS = $(TEST_CFLAGS)
tests_driver_test_demux_LDADD = $(TEST_LIBS)

tests_driver_test_spec_SOURCES = tests/driver/test_spec.c
tests_driver_test_spec_CFLAGS = $(TEST_CFLAGS)
tests_driver_test_spec_LDADD = $(TEST_LIBS)

tests_driver_test_runner_SOURCES = tests/driver/test_runner.c
tests_driver_test_runner_CFLAGS = $(TEST_CFLAGS)
tests_driver_test_runner_LDADD = $(TEST_LIBS)
EXTRA_tests_driver_test_runner_DEPENDENCIES = yuxi-run

tests_driver_test_fault_SOURCES = tests/driver/test_fault.c
tests_driver_test_fault_CFLAGS = $(TEST_CFLAGS)
tests_driver_test_fault_LDADD = $(TEST_LIBS)

tests_driver_test_engine_SOURCES = tests/driver/test_engine.c \
	tests/driver/drvtest.c tests/driver/drvtest.h
tests_driver_test_engine_CFLAGS = $(TEST_CFLAGS)
tests_driver_test_engine_LDADD = $(TEST_LIBS)
EXTRA_tests_driver_test_engine_DEPENDENCIES = yuxi-run
