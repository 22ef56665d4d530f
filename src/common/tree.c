/* SPDX-License-Identifier: MIT */
/*
 * tree.c - removing a directory tree that a sandbox controls, and the
 * random hidden names used for temporaries and tombstones; see
 * include/yuxi/tree.h.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <linux/openat2.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/error.h"
#include "yuxi/tree.h"

int
yx_openat_beneath(int dirfd, const char *name, int flags, mode_t mode, bool xdev)
{
	struct open_how	how;
	int		fd, i;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS | (xdev ? 0 : RESOLVE_NO_XDEV);
	for (i = 0; i < 16; i++) {
		fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			return fd;
	}
	return -1;
}

#define YX_TREE_FDS		32	/* directories open at once in a removal */

void
yx_hidden_name(char *buf, size_t len, const char *prefix)
{
	unsigned char	r[8];
	size_t		i, n;

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		uint64_t v = (uint64_t)yx_now_ms() ^ ((uint64_t)getpid() << 32) ^
		    (uint64_t)yx_mono_us();

		memcpy(r, &v, sizeof(r));
	}
	n = (size_t)snprintf(buf, len, "%s", prefix);
	for (i = 0; i < sizeof(r) && n + 2 < len; i++, n += 2)
		snprintf(buf + n, len - n, "%02x", r[i]);
}

/* A deadline budget_ms from now; 0 (none) for budget_ms <= 0. */
static int64_t
tree_deadline(int64_t budget_ms)
{
	return budget_ms > 0 ? yx_mono_ms() + budget_ms : 0;
}

/* One directory of a removal in progress. */
struct tree_level {
	DIR	*d;
	char	 name[NAME_MAX + 1];	/* its name in the level above */
};

/* Open directory `name` of dfd, never through a symlink, into lv. 0 or -1. */
static int
tree_open(int dfd, const char *name, struct tree_level *lv)
{
	int fd;

	if (strlen(name) >= sizeof(lv->name)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if ((lv->d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	memcpy(lv->name, name, strlen(name) + 1);
	return 0;
}

/*
 * Move directory `name` of dfd up into topfd (the top of the tree being
 * removed) under a fresh hidden name, so that no removal goes deeper than
 * YX_TREE_FDS levels. 0 or -1 with errno.
 */
static int
tree_flatten(int dfd, const char *name, int topfd)
{
	char	to[40];
	int	i;

	for (i = 0; i < 4; i++) {
		yx_hidden_name(to, sizeof(to), ".deep-");
		if (renameat2(dfd, name, topfd, to, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EINVAL && renameat(dfd, name, topfd, to) == 0)
			return 0;	/* no RENAME_NOREPLACE here; 64 random bits */
		if (errno != EEXIST)
			break;
	}
	return -1;
}

/*
 * Remove directory `name` of `parent` with everything below, iteratively.
 * lv[0] is the top, lv[n] the directory being read: each entry is unlinked
 * (a symlink is removed, never followed); a subdirectory is entered, or at
 * YX_TREE_FDS levels moved up into the top (read again at its end); an
 * emptied directory is removed from its parent on the way up. Each stream
 * is read once: a failure is remembered and the walk goes on, nothing is
 * retried, so it ends. An flock on the top keeps two removers of one tree
 * apart. `deadline` is yx_mono_ms() time, 0 for none.
 * Returns YX_OK; YX_E_IO (something stayed); YX_E_BUSY (another process
 * holds the lock); YX_E_TIMEOUT (the deadline came first).
 */
static int
tree_remove_dir(int parent, const char *name, int64_t deadline)
{
	struct tree_level	 lv[YX_TREE_FDS];
	struct dirent		*de;
	bool			 moved = false;
	int			 n = 0, fd, rc = YX_OK;

	if (tree_open(parent, name, &lv[0]) == -1)
		return errno == ENOENT ? YX_OK : YX_E_IO;
	if (flock(dirfd(lv[0].d), LOCK_EX | LOCK_NB) == -1) {
		rc = errno == EWOULDBLOCK ? YX_E_BUSY : YX_E_IO;
		goto done;
	}
	while (n >= 0) {
		if (deadline > 0 && yx_mono_ms() >= deadline) {
			rc = YX_E_TIMEOUT;
			goto done;
		}
		fd = dirfd(lv[n].d);
		errno = 0;
		if ((de = readdir(lv[n].d)) == NULL) {
			if (errno != 0)
				rc = YX_E_IO;
			else if (n == 0 && moved && rc == YX_OK) {
				moved = false;	/* read the top again */
				rewinddir(lv[0].d);
				continue;
			}
			closedir(lv[n--].d);
			if (unlinkat(n >= 0 ? dirfd(lv[n].d) : parent,
				lv[n + 1].name, AT_REMOVEDIR) == -1 &&
			    errno != ENOENT)
				rc = YX_E_IO;
			continue;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) == 0 || errno == ENOENT)
			continue;
		if (errno != EISDIR)
			rc = YX_E_IO;
		else if (n + 1 < YX_TREE_FDS) {
			if (tree_open(fd, de->d_name, &lv[n + 1]) == 0)
				n++;
			else if (errno != ENOENT)
				rc = YX_E_IO;
		} else if (tree_flatten(fd, de->d_name, dirfd(lv[0].d)) == 0)
			moved = true;
		else if (errno != ENOENT)
			rc = YX_E_IO;
	}
done:
	while (n >= 0)
		closedir(lv[n--].d);
	return rc;
}

int
yx_tree_remove_until(int parent, const char *name, int64_t deadline)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return YX_OK;
	if (errno != EISDIR)
		return YX_E_IO;
	return tree_remove_dir(parent, name, deadline);
}

int
yx_tree_remove_for(int dirfd, const char *name, int64_t budget_ms)
{
	return yx_tree_remove_until(dirfd, name, tree_deadline(budget_ms));
}

int
yx_tree_remove(int dirfd, const char *name)
{
	return yx_tree_remove_until(dirfd, name, 0);
}

int
yx_file_put(int dirfd, const char *name, const void *data, size_t len)
{
	int	fd, rc = YX_OK;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd == -1)
		return yx_err_from_errno(errno);
	errno = 0;
	if (write(fd, data, len) != (ssize_t)len)
		rc = yx_err_from_errno(errno != 0 ? errno : EIO);
	close(fd);
	return rc;
}
