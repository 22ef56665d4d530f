/* SPDX-License-Identifier: MIT */
/*
 * yuxi/replace.h - put a new directory entry in place of an old one
 * atomically: the new entry is made under a temporary name beside it and
 * renamed over it, so whoever opens the name gets the old entry or the
 * whole new one, never a part.
 *
 * Every such writer of the service goes through yx_replace_at(), so the
 * policy is decided here once:
 *  - the temporary is ".<name>.<pid>.tmp" in the same directory, made
 *    exclusively (O_EXCL, never following a symlink; one a dead process of
 *    the same pid left is removed first): two processes never write into
 *    one temporary, and nothing planted under its name is written through;
 *  - a regular file gets exactly `mode` (the umask does not narrow it), and
 *    its bytes reach the disk (fsync) before the rename: after a crash the
 *    name holds the old file or the whole new one. YX_REPLACE_HINT skips
 *    the fsync, for bytes whose reader checks them and recovers when they
 *    are lost (a cursor, a file compared and rewritten at every start);
 *  - the directory is not synced: a crash may lose the latest rename (the
 *    old entry stays), which every caller accepts;
 *  - on any failure the temporary is removed and the old entry is left as
 *    it was.
 */
#ifndef YUXI_REPLACE_H
#define YUXI_REPLACE_H

#include <sys/types.h>

#include <stddef.h>

#define YX_REPLACE_HINT		0x1	/* no fsync: the reader copes (above) */
#define YX_REPLACE_EXISTING	0x2	/* only over an existing entry (a file):
					 * RENAME_EXCHANGE, then the old one is
					 * removed; nothing written when it is gone */

/* The new entry: a regular file of len bytes at data, or a symlink to
 * link, or, with make set, whatever make() creates under the name tmp of
 * dfd (0, or -1 with errno; a socket bound there). */
struct yx_replace {
	const void	*data;
	size_t		 len;
	mode_t		 mode;		/* a regular file's, exactly */
	const char	*link;
	int		(*make)(int dfd, const char *tmp, void *arg);
	void		*arg;
	unsigned	 flags;		/* YX_REPLACE_* */
};

/*
 * Replace dfd/name by the entry r describes (see above). YX_OK;
 * YX_E_NOT_FOUND with YX_REPLACE_EXISTING when there is no name to
 * replace; otherwise the errno-mapped error of the step that failed, with
 * errno set (YX_E_INVALID_PATH when the temporary's name is too long).
 */
int	yx_replace_at(int dfd, const char *name, const struct yx_replace *r);

/*
 * Listen on the unix socket dfd/name, bound under the temporary name and
 * renamed into place (yx_replace_at), owned by uid:gid (either (uid_t)-1
 * or (gid_t)-1 keeps that id; both: no chown) with `mode`, with `backlog`.
 * Returns the non-blocking, close-on-exec listening fd (and *ino, the
 * socket's inode as made) or -1 with errno set.
 */
int	yx_replace_listen(int dfd, const char *name, uid_t uid, gid_t gid,
    mode_t mode, int backlog, ino_t *ino);

#endif /* YUXI_REPLACE_H */
