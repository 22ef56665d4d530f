/* SPDX-License-Identifier: MIT */
/*
 * priv_box.c - what the service and the privileged helper both read of a
 * pool box (include/yuxi/priv.h): its name, and its uid file, written by
 * the service when it makes the box and read by the helper (which checks
 * the file's owner and mode first) and by the box's removal.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/priv.h"
#include "yuxi/tree.h"

bool
yx_priv_box_name(const char *s, size_t n)
{
	size_t p = strlen(YX_PRIV_BOX_PREFIX), i;

	if (n != p + YX_PRIV_BOX_HEX || memcmp(s, YX_PRIV_BOX_PREFIX, p) != 0)
		return false;
	for (i = p; i < n; i++)		/* never past s + n */
		if ((s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f'))
			return false;
	return true;
}

int
yx_priv_uid_read(int fd, unsigned *uid)
{
	char		buf[16], *end;
	unsigned long	v;
	ssize_t		n;

	*uid = 0;
	if ((n = read(fd, buf, sizeof(buf) - 1)) == -1)
		return yx_err_from_errno(errno);
	if (n == 0)
		return YX_E_BAD_REQUEST;
	buf[n] = '\0';
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (buf[0] < '0' || buf[0] > '9' || errno != 0 ||
	    (*end != '\n' && *end != '\0') || (*end == '\n' && end[1] != '\0') ||
	    v == 0 || v > YX_PRIV_UID_MAX)
		return YX_E_BAD_REQUEST;
	*uid = (unsigned)v;
	return YX_OK;
}

int
yx_priv_uid_write(int dirfd, unsigned uid)
{
	char	buf[16];
	int	n = snprintf(buf, sizeof(buf), "%u\n", uid);

	return yx_file_put(dirfd, YX_PRIV_BOX_UID, buf, (size_t)n);
}
