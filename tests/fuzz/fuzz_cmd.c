/*
 * fuzz_cmd.c - libFuzzer harness for yx_cmd_check: every input must
 * satisfy cmd_props_check() (tests/fuzz/path_props.c); a violation aborts.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "path_props.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*why;

	if ((why = cmd_props_check(data, size)) != NULL) {
		fprintf(stderr, "fuzz_cmd: property violated: %s\n", why);
		abort();
	}
	return 0;
}
