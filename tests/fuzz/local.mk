# tests/fuzz: libFuzzer harnesses (configure --enable-fuzzing, CC=clang).
# configure already compiles everything with -fsanitize=fuzzer-no-link; the
# harnesses link with -fsanitize=fuzzer for libFuzzer's main. Run e.g.
#   ./tests/fuzz/fuzz_path -max_total_time=60 <scratch-dir> \
#       $(top_srcdir)/tests/fuzz/corpus/path
# The seed corpora are replayed in every `make check` by tests/path/test_corpus.
noinst_PROGRAMS += tests/fuzz/fuzz_path tests/fuzz/fuzz_cmd

tests_fuzz_fuzz_path_SOURCES = tests/fuzz/fuzz_path.c \
	tests/fuzz/path_props.c tests/fuzz/path_props.h
tests_fuzz_fuzz_path_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_path_LDADD = libyuxi.a

tests_fuzz_fuzz_cmd_SOURCES = tests/fuzz/fuzz_cmd.c \
	tests/fuzz/path_props.c tests/fuzz/path_props.h
tests_fuzz_fuzz_cmd_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_cmd_LDADD = libyuxi.a
EXTRA_DIST += tests/fuzz/run-fuzz.sh
