/* SPDX-License-Identifier: MIT */
/*
 * test_http_corpus.c - replay the HTTP-layer fuzzers' corpora
 * (tests/fuzz/corpus/query, json, fcgi: seeds and every crash turned
 * regression case) through the properties the harnesses assert
 * (tests/fuzz/http_props.c), so every `make check` covers them even where
 * libFuzzer is not built. Also checks, with hand-made inputs, that the
 * properties can fail (a check that cannot fail proves nothing).
 */
#include "config.h"

#include <criterion/criterion.h>

#include "../fuzz/http_props.h"
#include "../lib/corpus.h"

Test(http_corpus, query)
{
	cr_expect(corpus_replay("query", query_props_check) >= 8);
}

Test(http_corpus, json)
{
	cr_expect(corpus_replay("json", json_props_check) >= 8);
}

Test(http_corpus, fcgi)
{
	cr_expect(corpus_replay("fcgi", fcgi_props_check) >= 8);
}

/* The identity property is live: HTTP_X_YUXI_USER never becomes the user. */
Test(http_corpus, spoofed_header_param_ignored)
{
	static const char in[] = "GET\0/api/threads\0\0\0\0\0mallory\0admin";

	cr_expect(fcgi_props_check((const uint8_t *)in, sizeof(in) - 1) == NULL);
}
