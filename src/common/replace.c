/* SPDX-License-Identifier: MIT */
/*
 * replace.c - one directory entry put in place of another through a
 * temporary and a rename; see include/yuxi/replace.h for the policy (the
 * temporary's name, O_EXCL, the mode, when to fsync); and through it a
 * listening unix socket put in place (yx_replace_listen).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/error.h"
#include "yuxi/replace.h"

/* Write a regular file's bytes into the new temporary tmp. 0 or -1. */
static int
replace_file(int dfd, const char *tmp, const struct yx_replace *r)
{
	const char	*p = r->data;
	size_t		 left = r->len;
	ssize_t		 w;
	int		 fd, en = 0;

	if ((fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		 r->mode)) == -1)
		return -1;
	while (left > 0 && en == 0) {
		if ((w = write(fd, p, left)) > 0) {
			p += w;
			left -= (size_t)w;
		} else if (w == 0)
			en = EIO;
		else if (errno != EINTR)
			en = errno;
	}
	if (en == 0 && fchmod(fd, r->mode) == -1)
		en = errno;
	if (en == 0 && (r->flags & YX_REPLACE_HINT) == 0 && fsync(fd) == -1)
		en = errno;
	if (close(fd) == -1 && en == 0)
		en = errno;
	errno = en;
	return en == 0 ? 0 : -1;
}

/* Make the new entry under the name tmp. 0 or -1 with errno. */
static int
replace_make(int dfd, const char *tmp, const struct yx_replace *r)
{
	if (r->make != NULL)
		return r->make(dfd, tmp, r->arg);
	if (r->link != NULL)
		return symlinkat(r->link, dfd, tmp);
	return replace_file(dfd, tmp, r);
}

int
yx_replace_at(int dfd, const char *name, const struct yx_replace *r)
{
	char	tmp[NAME_MAX + 1];
	bool	gone = false;
	int	n, en = 0;

	n = snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return yx_err_from_errno(ENAMETOOLONG);
	}
	(void)unlinkat(dfd, tmp, 0);	/* a dead process's of the same pid */
	if (replace_make(dfd, tmp, r) == -1)
		en = errno;
	else if ((r->flags & YX_REPLACE_EXISTING) != 0) {
		if (renameat2(dfd, tmp, dfd, name, RENAME_EXCHANGE) == -1) {
			en = errno;
			gone = en == ENOENT;
		}
	} else if (renameat(dfd, tmp, dfd, name) == -1)
		en = errno;
	/* after an exchange the temporary holds the old entry */
	if (en != 0 || (r->flags & YX_REPLACE_EXISTING) != 0)
		(void)unlinkat(dfd, tmp, 0);
	if (en == 0)
		return YX_OK;
	errno = en;
	return gone ? YX_E_NOT_FOUND : yx_err_from_errno(en);
}

/* A listening socket as yx_replace_listen() asks for it. */
struct replace_bind {
	uid_t	uid;		/* (uid_t)-1 and (gid_t)-1: keep both */
	gid_t	gid;
	mode_t	mode;
	int	backlog;
	int	s;		/* the socket; -1: none yet */
	ino_t	ino;
};

/* yx_replace_at's make: bind and listen at the temporary name tmp (any
 * path length: bound through /proc/self/fd), owned and mode as asked. */
static int
replace_bind_tmp(int dfd, const char *tmp, void *arg)
{
	struct replace_bind	*b = arg;
	struct sockaddr_un	 sun;
	struct stat		 st;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s", dfd, tmp);
	if ((b->s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (bind(b->s, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    ((b->uid != (uid_t)-1 || b->gid != (gid_t)-1) &&
		fchownat(dfd, tmp, b->uid, b->gid, AT_SYMLINK_NOFOLLOW) == -1) ||
	    fchmodat(dfd, tmp, b->mode, 0) == -1 || listen(b->s, b->backlog) == -1 ||
	    fstatat(dfd, tmp, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	b->ino = st.st_ino;
	return 0;
}

int
yx_replace_listen(int dfd, const char *name, uid_t uid, gid_t gid, mode_t mode,
    int backlog, ino_t *ino)
{
	struct replace_bind	b = { uid, gid, mode, backlog, -1, 0 };
	struct yx_replace	r = { .make = replace_bind_tmp, .arg = &b };
	int			en;

	if (yx_replace_at(dfd, name, &r) != YX_OK) {
		en = errno;
		if (b.s != -1)
			close(b.s);
		errno = en;
		return -1;
	}
	*ino = b.ino;
	return b.s;
}
