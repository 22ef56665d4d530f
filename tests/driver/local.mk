# SPDX-License-Identifier: MIT
# tests/driver: demultiplexer and runner units, both drivers against the real
# engine (yuxi-sandbox-test:latest), and fault injection with a fake engine.
DRIVER_TESTS = tests/driver/test_demux tests/driver/test_spec \
	tests/driver/test_runner tests/driver/test_fault tests/driver/test_engine
check_PROGRAMS += $(DRIVER_TESTS)
TESTS += $(DRIVER_TESTS)
tests_lib_libyxtest_a_SOURCES += tests/driver/drvtest.c tests/driver/drvtest.h
EXTRA_tests_driver_test_runner_DEPENDENCIES = yuxi-run
EXTRA_tests_driver_test_engine_DEPENDENCIES = yuxi-run
