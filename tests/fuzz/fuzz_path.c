/* SPDX-License-Identifier: MIT */
/*
 * fuzz_path.c - libFuzzer harness for yx_path_resolve: every input must
 * satisfy path_props_check() (tests/fuzz/path_props.c); a violation aborts.
 */
#include "config.h"

#include "fuzz.h"
#include "path_props.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_verdict("fuzz_path", path_props_check(data, size));
}
