# tests/common: the ground floor (src/common).
#   test_text      UTF-8 scanning and cleaning, JSON strings
#   test_conffile  the configuration file and its errors
COMMON_TESTS = tests/common/test_text tests/common/test_conffile
check_PROGRAMS += $(COMMON_TESTS)
TESTS += $(COMMON_TESTS)
