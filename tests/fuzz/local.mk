# SPDX-License-Identifier: MIT
# tests/fuzz: libFuzzer harnesses (configure --enable-fuzzing, CC=clang).
# configure already compiles everything with -fsanitize=fuzzer-no-link; the
# harnesses link with -fsanitize=fuzzer for libFuzzer's main. Run e.g.
#   ./tests/fuzz/fuzz_path -max_total_time=60 <scratch-dir> \
#       $(top_srcdir)/tests/fuzz/corpus/path
# The seed corpora are replayed in every `make check` by tests/path/test_corpus.
noinst_PROGRAMS += tests/fuzz/fuzz_path tests/fuzz/fuzz_cmd
PATH_PROPS = tests/fuzz/fuzz.h tests/fuzz/path_props.c tests/fuzz/path_props.h

tests_fuzz_fuzz_path_SOURCES = tests/fuzz/fuzz_path.c $(PATH_PROPS)
tests_fuzz_fuzz_path_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_path_LDADD = libyuxi.a

tests_fuzz_fuzz_cmd_SOURCES = tests/fuzz/fuzz_cmd.c $(PATH_PROPS)
tests_fuzz_fuzz_cmd_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_cmd_LDADD = libyuxi.a
EXTRA_DIST += tests/fuzz/run-fuzz.sh

# HTTP layer (docs/security.md group 10): query strings and download-name
# encoders, JSON request bodies, FastCGI params through yx_http_req_init and
# route matching. Corpora replayed in `make check` by
# tests/security/test_http_corpus.
noinst_PROGRAMS += tests/fuzz/fuzz_query tests/fuzz/fuzz_json tests/fuzz/fuzz_fcgi
HTTP_PROPS = tests/fuzz/fuzz.h tests/fuzz/http_props.c tests/fuzz/http_props.h

tests_fuzz_fuzz_query_SOURCES = tests/fuzz/fuzz_query.c $(HTTP_PROPS)
tests_fuzz_fuzz_query_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_query_LDADD = $(YX_LIBS)

tests_fuzz_fuzz_json_SOURCES = tests/fuzz/fuzz_json.c $(HTTP_PROPS)
tests_fuzz_fuzz_json_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_json_LDADD = $(YX_LIBS)

tests_fuzz_fuzz_fcgi_SOURCES = tests/fuzz/fuzz_fcgi.c $(HTTP_PROPS)
tests_fuzz_fuzz_fcgi_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_fcgi_LDADD = $(YX_LIBS)
