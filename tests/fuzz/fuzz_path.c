/*
 * fuzz_path.c - libFuzzer harness for yx_path_resolve: every input must
 * satisfy path_props_check() (tests/fuzz/path_props.c); a violation aborts.
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

	if ((why = path_props_check(data, size)) != NULL) {
		fprintf(stderr, "fuzz_path: property violated: %s\n", why);
		abort();
	}
	return 0;
}
