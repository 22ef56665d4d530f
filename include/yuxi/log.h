/* SPDX-License-Identifier: MIT */
/*
 * yuxi/log.h - the one logging API (after OpenBSD httpd's log.c).
 *
 * Lines go to stderr as "<time> <prog>[pid] <level>: message". log_warn()
 * appends strerror(errno); log_warnx() does not. fatal()/fatalx() log and
 * exit(1): use them only at start-up, never on a request path and never while
 * holding the shared-table lock. Untrusted bytes (thread ids, paths, engine
 * replies) must pass through log_escape() before they reach a format string's
 * arguments.
 */
#ifndef YUXI_LOG_H
#define YUXI_LOG_H

#include <stddef.h>

#define YX_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Set the program name and verbosity (0 = info, 1 = debug). */
void	log_init(const char *progname, int verbose);
void	log_setverbose(int verbose);
void	log_warn(const char *fmt, ...) YX_PRINTF(1, 2);
void	log_warnx(const char *fmt, ...) YX_PRINTF(1, 2);
void	log_info(const char *fmt, ...) YX_PRINTF(1, 2);
void	log_debug(const char *fmt, ...) YX_PRINTF(1, 2);
void	fatal(const char *fmt, ...) YX_PRINTF(1, 2) __attribute__((noreturn));
void	fatalx(const char *fmt, ...) YX_PRINTF(1, 2) __attribute__((noreturn));

/*
 * Copy at most `len` bytes of `src` into `dst` (size `dstlen`, always
 * NUL-terminated), replacing control bytes, backslash, quotes and non-ASCII
 * bytes with \xNN escapes; cut with "..." when it does not fit. Returns dst.
 */
char	*log_escape(char *dst, size_t dstlen, const char *src, size_t len);

#endif /* YUXI_LOG_H */
