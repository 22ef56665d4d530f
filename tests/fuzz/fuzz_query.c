/* SPDX-License-Identifier: MIT */
/*
 * fuzz_query.c - libFuzzer harness for the HTTP layer: every input must
 * satisfy query_props_check() (tests/fuzz/http_props.c); a violation aborts.
 */
#include "config.h"

#include "fuzz.h"
#include "http_props.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_verdict("fuzz_query", query_props_check(data, size));
}
