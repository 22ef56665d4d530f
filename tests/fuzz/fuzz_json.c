/* SPDX-License-Identifier: MIT */
/*
 * fuzz_json.c - libFuzzer harness for the HTTP layer: every input must
 * satisfy json_props_check() (tests/fuzz/http_props.c); a violation aborts.
 */
#include "config.h"

#include "fuzz.h"
#include "http_props.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_verdict("fuzz_json", json_props_check(data, size));
}
