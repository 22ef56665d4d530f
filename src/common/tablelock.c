/* SPDX-License-Identifier: MIT */
/*
 * tablelock.c - the lock of a shared table's owner; see
 * include/yuxi/tablelock.h.
 *
 * Taking it: open (or create) the lock object, flock it without waiting,
 * then check that the name still leads to the object locked: a holder
 * that was leaving removes the name while it still holds the lock, so a
 * lock taken on a removed object is no lock at all, and the next try
 * opens the new one. The object is created 0644 so that any user can read
 * who holds it; a holder that cannot write it (made by another user) still
 * holds the lock, only without its line.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/tablelock.h"

#define TL_TRIES	5	/* the name replaced under us this often: give up */

void
yx_tablelock_init(struct yx_tablelock *l)
{
	l->fd = -1;
	l->name[0] = '\0';
}

/* What the holder wrote into fd, one line, into out (outlen bytes). */
static void
tl_holder(int fd, char *out, size_t outlen)
{
	ssize_t n;

	if (outlen == 0)
		return;
	n = pread(fd, out, outlen - 1, 0);
	if (n < 0)
		n = 0;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	if (out[0] == '\0')
		snprintf(out, outlen, "a process");
}

/* Does the name still lead to the object open on fd? */
static bool
tl_same(const char *name, int fd)
{
	struct stat	a, b;
	int		fd2;
	bool		same;

	if ((fd2 = shm_open(name, O_RDONLY | O_CLOEXEC, 0)) == -1)
		return false;
	same = fstat(fd, &a) == 0 && fstat(fd2, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	close(fd2);
	return same;
}

/* The holder's line into fd: true when written. */
static bool
tl_write(int fd, const char *desc)
{
	size_t n = strlen(desc);

	return ftruncate(fd, 0) == 0 && pwrite(fd, desc, n, 0) == (ssize_t)n &&
	    pwrite(fd, "\n", 1, (off_t)n) == 1;
}

/*
 * One try: 1 when the lock is ours (fd kept in l), 0 to try again (the
 * name moved), or a negative error code with holder filled.
 */
static int
tl_try(struct yx_tablelock *l, const char *desc, char *holder,
    size_t holderlen)
{
	mode_t	old;
	bool	writable = true;
	int	fd;

	old = umask(0022);
	fd = shm_open(l->name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	umask(old);
	if (fd == -1 && errno == EACCES) {
		writable = false;
		fd = shm_open(l->name, O_RDONLY | O_CLOEXEC, 0);
	}
	if (fd == -1) {
		snprintf(holder, holderlen, "%s: %s", l->name, strerror(errno));
		return -YX_E_IO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			tl_holder(fd, holder, holderlen);
		else
			snprintf(holder, holderlen, "%s: flock: %s", l->name,
			    strerror(errno));
		close(fd);
		return errno == EWOULDBLOCK ? -YX_E_BUSY : -YX_E_IO;
	}
	if (!tl_same(l->name, fd)) {
		close(fd);
		return 0;
	}
	if (writable && !tl_write(fd, desc)) {
		snprintf(holder, holderlen, "%s: %s", l->name, strerror(errno));
		(void)shm_unlink(l->name);
		close(fd);
		return -YX_E_IO;
	}
	l->fd = fd;
	return 1;
}

int
yx_tablelock_take(struct yx_tablelock *l, const char *shm_name,
    const char *desc, char *holder, size_t holderlen)
{
	int i, r = 0;

	yx_tablelock_init(l);
	if (holderlen > 0)
		holder[0] = '\0';
	if ((size_t)snprintf(l->name, sizeof(l->name), "%s.lock", shm_name) >=
	    sizeof(l->name)) {
		snprintf(holder, holderlen, "%s: name too long", shm_name);
		l->name[0] = '\0';
		return YX_E_BAD_REQUEST;
	}
	for (i = 0; i < TL_TRIES && r == 0; i++)
		r = tl_try(l, desc, holder, holderlen);
	if (r == 0) {
		snprintf(holder, holderlen, "%s: replaced %d times while taking it",
		    l->name, TL_TRIES);
		return YX_E_IO;
	}
	return r > 0 ? YX_OK : -r;
}

void
yx_tablelock_drop(struct yx_tablelock *l)
{
	if (l->fd == -1)
		return;
	/* the name first, while still held: see tl_same() */
	(void)shm_unlink(l->name);
	close(l->fd);
	l->fd = -1;
}

int
yx_tablelock_each_live(void (*fn)(void *arg, const char *desc), void *arg)
{
	struct dirent	*de;
	DIR		*d;
	char		 name[300], line[512];
	size_t		 n;
	int		 fd;

	if ((d = opendir("/dev/shm")) == NULL)
		return YX_E_IO;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".lock") != 0 ||
		    (size_t)snprintf(name, sizeof(name), "/%s", de->d_name) >= sizeof(name) ||
		    (fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0)) == -1)
			continue;
		/* held by a live instance: our shared lock cannot be had */
		if (flock(fd, LOCK_SH | LOCK_NB) == -1 && errno == EWOULDBLOCK) {
			tl_holder(fd, line, sizeof(line));
			fn(arg, line);
		}
		close(fd);
	}
	closedir(d);
	return YX_OK;
}
