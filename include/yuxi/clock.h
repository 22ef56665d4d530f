/* SPDX-License-Identifier: MIT */
/*
 * yuxi/clock.h - time for the whole project: monotonic milliseconds and
 * microseconds for deadlines and durations, wall-clock milliseconds for
 * what is stored (records, the shared table), and the ISO 8601 form the API
 * shows. libc only: the in-sandbox programs (src/guest) link it too.
 */
#ifndef YUXI_CLOCK_H
#define YUXI_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ms / us: deadlines and durations. */
int64_t	yx_mono_ms(void);
int64_t	yx_mono_us(void);
/* CLOCK_REALTIME in ms since the epoch: times that are stored or shown. */
int64_t	yx_now_ms(void);

/* Format unix ms as ISO 8601 UTC "2024-05-01T12:00:00.123Z" into buf
 * (len >= 32); returns buf. */
char	*yx_iso8601_ms(int64_t ms, char *buf, size_t len);

#endif /* YUXI_CLOCK_H */
