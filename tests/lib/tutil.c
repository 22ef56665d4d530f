/* SPDX-License-Identifier: MIT */
/*
 * tutil.c - small helpers shared by the Criterion tests (tutil.h).
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutil.h"

extern char **environ;

static int
rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(p);
	return 0;
}

void
tutil_rmtree(const char *path)
{
	(void)nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int
tutil_unix_listen(const char *path, int flags)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	cr_assert_lt(strlen(path), sizeof(sun.sun_path), "%s: too long", path);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	cr_assert_neq(fd = socket(AF_UNIX, SOCK_STREAM | flags, 0), -1);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0,
	    "bind %s: %s", path, strerror(errno));
	cr_assert_eq(listen(fd, 16), 0);
	return fd;
}

void
tutil_clear_yuxi_env(void)
{
	char	name[256];
	size_t	n;
	int	i;

	for (i = 0; environ[i] != NULL;) {
		if (strncmp(environ[i], "YUXI_", 5) != 0) {
			i++;
			continue;
		}
		n = strcspn(environ[i], "=");
		cr_assert_lt(n, sizeof(name));
		memcpy(name, environ[i], n);
		name[n] = '\0';
		cr_assert_eq(unsetenv(name), 0);	/* environ shifts: same i */
	}
}

void
tutil_unmount_below(const char *dir)
{
	char	line[4096], mp[1024], found[64][1024];
	size_t	n = 0, len = strlen(dir);
	FILE	*f;

	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL && n < 64)
		if (sscanf(line, "%*s %*s %*s %*s %1023s", mp) == 1 &&
		    strncmp(mp, dir, len) == 0 && (mp[len] == '/' || mp[len] == '\0'))
			snprintf(found[n++], sizeof(found[0]), "%s", mp);
	fclose(f);
	while (n-- > 0)
		(void)umount2(found[n], MNT_DETACH);
}
