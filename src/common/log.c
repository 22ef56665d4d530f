/* SPDX-License-Identifier: MIT */
/*
 * log.c - stderr logging with levels; see include/yuxi/log.h.
 *
 * Each message is formatted into one buffer and written with a single
 * write(2), so lines from concurrent workers sharing stderr do not interleave.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/log.h"

static const char	*log_prog = "yuxi";
static int		 log_verbose;

void
log_init(const char *progname, int verbose)
{
	if (progname != NULL)
		log_prog = progname;
	log_verbose = verbose;
}

void
log_setverbose(int verbose)
{
	log_verbose = verbose;
}

static void log_vemit(const char *, int, const char *, va_list)
    __attribute__((format(printf, 3, 0)));

static void
log_vemit(const char *level, int errnum, const char *fmt, va_list ap)
{
	char		 line[2048];
	struct timespec	 ts;
	struct tm	 tm;
	size_t		 n;
	int		 r;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	r = snprintf(line + n, sizeof(line) - n, ".%03ldZ %s[%ld] %s: ",
	    ts.tv_nsec / 1000000, log_prog, (long)getpid(), level);
	if (r > 0 && (size_t)r < sizeof(line) - n)
		n += (size_t)r;
	r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (r > 0)
		n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	if (errnum != 0 && n < sizeof(line) - 1) {
		r = snprintf(line + n, sizeof(line) - n, ": %s", strerror(errnum));
		if (r > 0)
			n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	}
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}

#define LOG_BODY(level, errnum)                    \
	do {                                       \
		va_list ap;                        \
		va_start(ap, fmt);                 \
		log_vemit(level, errnum, fmt, ap); \
		va_end(ap);                        \
	} while (0)

void
log_warn(const char *fmt, ...)
{
	int saved = errno;

	LOG_BODY("warn", saved);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY("warn", 0);
}

void
log_info(const char *fmt, ...)
{
	LOG_BODY("info", 0);
}

void
log_debug(const char *fmt, ...)
{
	if (!log_verbose)
		return;
	LOG_BODY("debug", 0);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;

	LOG_BODY("fatal", saved);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY("fatal", 0);
	exit(1);
}

char *
log_escape(char *dst, size_t dstlen, const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	if (dstlen == 0)
		return dst;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];
		size_t need = (c < 0x20 || c >= 0x7f || c == '\\' || c == '"') ? 4 : 1;

		if (o + need + 4 > dstlen) {
			if (dstlen >= 4) {
				o = o < dstlen - 4 ? o : dstlen - 4;
				memcpy(dst + o, "...", 3);
				o += 3;
			}
			break;
		}
		if (need == 1) {
			dst[o++] = (char)c;
			continue;
		}
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hex[c >> 4];
		dst[o++] = hex[c & 15];
	}
	dst[o] = '\0';
	return dst;
}
