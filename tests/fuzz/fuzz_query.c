/*
 * fuzz_query.c - libFuzzer harness for the HTTP layer: every input must
 * satisfy query_props_check() (tests/fuzz/http_props.c); a violation aborts.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "http_props.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*why;

	if ((why = query_props_check(data, size)) != NULL) {
		fprintf(stderr, "fuzz_query: property violated: %s\n", why);
		abort();
	}
	return 0;
}
