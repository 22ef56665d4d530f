# tests/path: golden tables for the path namespace and the command policy,
# output masking, and the fuzz seed corpora replayed through the fuzzers'
# property checks (tests/fuzz/path_props.c).
check_PROGRAMS += tests/path/test_canon tests/path/test_cmd \
	tests/path/test_mask tests/path/test_corpus
TESTS += tests/path/test_canon tests/path/test_cmd \
	tests/path/test_mask tests/path/test_corpus
EXTRA_DIST += tests/path/canon.tsv tests/path/cmd.tsv \
	tests/fuzz/corpus

tests_path_test_canon_SOURCES = tests/path/test_canon.c \
	tests/path/tsv.c tests/path/tsv.h
tests_path_test_canon_CFLAGS = $(TEST_CFLAGS)
tests_path_test_canon_LDADD = $(TEST_LIBS)

tests_path_test_cmd_SOURCES = tests/path/test_cmd.c \
	tests/path/tsv.c tests/path/tsv.h
tests_path_test_cmd_CFLAGS = $(TEST_CFLAGS)
tests_path_test_cmd_LDADD = $(TEST_LIBS)

tests_path_test_mask_SOURCES = tests/path/test_mask.c
tests_path_test_mask_CFLAGS = $(TEST_CFLAGS)
tests_path_test_mask_LDADD = $(TEST_LIBS)

tests_path_test_corpus_SOURCES = tests/path/test_corpus.c \
	tests/fuzz/path_props.c tests/fuzz/path_props.h
tests_path_test_corpus_CFLAGS = $(TEST_CFLAGS)
tests_path_test_corpus_LDADD = $(TEST_LIBS)
