/* SPDX-License-Identifier: MIT */
/*
 * test_corpus.c - replay the fuzzers' seed corpora (tests/fuzz/corpus/path,
 * tests/fuzz/corpus/cmd) through the same property checks the harnesses
 * assert (tests/fuzz/path_props.c), so every `make check` covers them even
 * where libFuzzer is not built.
 */
#include "config.h"

#include <criterion/criterion.h>

#include "../fuzz/path_props.h"
#include "../lib/corpus.h"

Test(corpus, path)
{
	size_t	 n = corpus_replay("path", path_props_check);

	cr_expect(n >= 20, "only %zu corpus files", n);
}

Test(corpus, cmd)
{
	size_t	 n = corpus_replay("cmd", cmd_props_check);

	cr_expect(n >= 20, "only %zu corpus files", n);
}
