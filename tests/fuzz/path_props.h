/* SPDX-License-Identifier: MIT */
/*
 * path_props.h - the properties the path fuzzers assert, shared by the
 * libFuzzer harnesses (fuzz_path.c, fuzz_cmd.c) and the Criterion test that
 * replays the seed corpora in every `make check` (tests/path/test_corpus.c).
 */
#ifndef TESTS_FUZZ_PATH_PROPS_H
#define TESTS_FUZZ_PATH_PROPS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Resolve data (size bytes) as a request path and check every property of
 * the result. Returns NULL when all hold, else a static description of the
 * first one violated.
 */
const char	*path_props_check(const uint8_t *data, size_t size);

/*
 * Check data (up to its first NUL) as a command under both policies.
 * Returns NULL or a static description of the violated property. NULL is
 * also returned (nothing checked) when a copy cannot be allocated.
 */
const char	*cmd_props_check(const uint8_t *data, size_t size);

#endif
