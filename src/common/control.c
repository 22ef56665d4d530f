/* SPDX-License-Identifier: MIT */
/*
 * control.c - the test-only control mode switch (see control_int.h). The
 * whole file is empty unless compiled with -DYX_CONTROL_UNSAFE, which only
 * the check_PROGRAMS control daemons are.
 */
#include "config.h"

#include "common/control_int.h"

#ifdef YX_CONTROL_UNSAFE
#include <stdlib.h>
#include <string.h>

/*
 * Returns true when `name` is one of the comma-separated words of
 * YX_CONTROL_OFF ("all" switches every protection off). Read on every call:
 * cheap, and a test binary only.
 */
bool
yx_control_off(const char *name)
{
	const char	*s = getenv("YX_CONTROL_OFF"), *p;
	size_t		 n = strlen(name), w;

	if (s == NULL)
		return false;
	for (p = s; *p != '\0'; p += w + (p[w] == ',')) {
		w = strcspn(p, ",");
		if ((w == n && strncmp(p, name, n) == 0) ||
		    (w == 3 && strncmp(p, "all", 3) == 0))
			return true;
	}
	return false;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int yx_control_unused;
#endif
