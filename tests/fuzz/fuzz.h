/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what every libFuzzer harness in tests/fuzz shares: the entry
 * point's prototype and the verdict on one input.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* libFuzzer's entry point, defined by each harness. */
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The verdict of harness `name` on one input: why is NULL when every
 * property held (returns 0), else it is printed and the run aborts, so
 * libFuzzer keeps the input as a reproducer.
 */
static inline int
fuzz_verdict(const char *name, const char *why)
{
	if (why != NULL) {
		fprintf(stderr, "%s: property violated: %s\n", name, why);
		abort();
	}
	return 0;
}

#endif
