# tests/common: the ground floor (src/common).
#   test_text      UTF-8 scanning and cleaning, JSON strings
check_PROGRAMS += tests/common/test_text
TESTS += tests/common/test_text
tests_common_test_text_SOURCES = tests/common/test_text.c
tests_common_test_text_CFLAGS = $(TEST_CFLAGS)
tests_common_test_text_LDADD = $(TEST_LIBS)

#   test_conffile  the configuration file and its errors
check_PROGRAMS += tests/common/test_conffile
TESTS += tests/common/test_conffile
tests_common_test_conffile_SOURCES = tests/common/test_conffile.c
tests_common_test_conffile_CFLAGS = $(TEST_CFLAGS)
tests_common_test_conffile_LDADD = $(TEST_LIBS)
