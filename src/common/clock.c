/* SPDX-License-Identifier: MIT */
/*
 * clock.c - the project's clocks; see include/yuxi/clock.h.
 */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "yuxi/clock.h"

static int64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
yx_mono_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

int64_t
yx_mono_us(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000;
}

int64_t
yx_now_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

char *
yx_iso8601_ms(int64_t ms, char *buf, size_t len)
{
	struct tm	tm;
	time_t		sec = (time_t)(ms / 1000);
	size_t		n;

	if (gmtime_r(&sec, &tm) == NULL ||
	    (n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return buf;
	}
	snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000));
	return buf;
}
