/* SPDX-License-Identifier: MIT */
/*
 * yuxi/fdio.h - a small file read whole into a string, written once for
 * the service and the programs inside the sandbox (a /proc stat line, a
 * record, a cursor). Static inline and libc only: src/guest's programs are
 * static binaries that link nothing but libc.
 */
#ifndef YUXI_FDIO_H
#define YUXI_FDIO_H

#include <sys/types.h>

#include <unistd.h>

/*
 * One read() of fd into buf, at most len - 1 bytes, NUL-terminated; fd is
 * closed (the caller's descriptor is consumed). The bytes read (> 0), or
 * -1 when nothing was (an empty file, an error: buf is then untouched).
 * A file longer than len - 1 bytes is cut: callers read what fits a line.
 */
static inline ssize_t
yx_fd_read_str(int fd, char *buf, size_t len)
{
	ssize_t n;

	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

#endif /* YUXI_FDIO_H */
