/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cmd.c - libFuzzer harness for yx_cmd_check: every input must
 * satisfy cmd_props_check() (tests/fuzz/path_props.c); a violation aborts.
 */
#include "config.h"

#include "fuzz.h"
#include "path_props.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_verdict("fuzz_cmd", cmd_props_check(data, size));
}
