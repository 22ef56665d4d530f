# SPDX-License-Identifier: MIT
# tests/path: golden tables for the path namespace and the command policy,
# output masking, and the fuzz seed corpora replayed through the fuzzers'
# property checks (tests/fuzz/path_props.c).
PATH_TESTS = tests/path/test_canon tests/path/test_cmd tests/path/test_mask \
	tests/path/test_corpus
check_PROGRAMS += $(PATH_TESTS)
TESTS += $(PATH_TESTS)
tests_lib_libyxtest_a_SOURCES += tests/fuzz/path_props.c tests/fuzz/path_props.h
EXTRA_DIST += tests/path/canon.tsv tests/path/cmd.tsv tests/fuzz/corpus
