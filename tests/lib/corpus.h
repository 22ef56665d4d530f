/* SPDX-License-Identifier: MIT */
/*
 * corpus.h - replay a fuzzer's seed corpus (tests/fuzz/corpus/<name>)
 * through the property check its harness asserts, in a Criterion test, so
 * every `make check` covers the corpora even where libFuzzer is not built
 * (tests/path/test_corpus.c, tests/security/test_http_corpus.c).
 */
#ifndef TESTS_LIB_CORPUS_H
#define TESTS_LIB_CORPUS_H

#include <stddef.h>
#include <stdint.h>

/* Returns NULL when every property holds for data, else a static
 * description of the first one violated (tests/fuzz/ *_props.h). */
typedef const char *(*corpus_check_fn)(const uint8_t *data, size_t size);

/*
 * Check every file of $top_srcdir/tests/fuzz/corpus/<name> (top_srcdir
 * default "."; files up to 1 MiB are read whole): a violated property is a
 * failed expectation naming the file. Returns how many files were checked.
 */
size_t	corpus_replay(const char *name, corpus_check_fn check);

#endif
