/* SPDX-License-Identifier: MIT */
/*
 * priv_pool.c - the helper's mounts for pre-started sandboxes
 * (include/yuxi/priv.h "Pool"; docs/design.md §2 "Pool").
 *
 * A pool box has its own directory <saves>/pool/<box>/ holding user-data/
 * and skills/, which the box's container mounts with slave propagation.
 * Assigning the box to a thread binds the thread's user-data and each
 * visible skill there; the binds propagate into the running container.
 * Every path is reached by descriptor: the box directory beneath the pool
 * root, the thread's directory beneath threads/, a skill beneath the skills
 * root, each with yx_openat_beneath (no symlink, no magic link); the box's own
 * mount points without crossing a mount, so nothing is stacked twice. The
 * mounts are made detached (open_tree OPEN_TREE_CLONE), given their flags
 * (nosuid, nodev; read-only for a skill) before they are attached with
 * move_mount, so the copies the kernel propagates into the container carry
 * the same flags from the start.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "yuxi/tree.h"
#include "priv/priv_int.h"

#define POOL_USERDATA	"user-data"
#define POOL_SKILLS	"skills"
#define POOL_RUN	"run"

bool
priv_box_name_valid(const char *name)
{
	return yx_priv_box_name(name, strnlen(name, PRIV_NAME_MAX + 1));
}

bool
priv_skill_name_valid(const char *n)
{
	size_t len = strnlen(n, PRIV_NAME_MAX + 1);

	if (len == 0 || len > 128 || strcmp(n, ".") == 0 ||
	    strcmp(n, "..") == 0)
		return false;
	return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == len;
}

/* Is fd the root of a mount? 1, 0, or -1 with errno. */
static int
pool_mount_root(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == -1)
		return -1;
	return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

/* The box directory (O_PATH): ours, written by nobody else. fd or -1. */
static int
pool_box_dir(int pool_fd, const char *box, struct yx_errctx *e)
{
	struct stat	st;
	int		fd;

	if (pool_fd == -1) {
		(void)yx_fail(e, YX_E_BAD_REQUEST, "no pool directory");
		return -1;
	}
	if ((fd = yx_openat_beneath(pool_fd, box, O_PATH | O_DIRECTORY, 0, false)) ==
	    -1) {
		(void)yx_fail(e, errno == ENOENT ? YX_E_NOT_FOUND : YX_E_BAD_REQUEST,
		    "no such pool box");
		return -1;
	}
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		close(fd);
		(void)yx_fail(e, YX_E_BAD_REQUEST, "pool box not the service's own");
		return -1;
	}
	return fd;
}

/*
 * The box's own uid, from <box>/uid (written by the service when it made
 * the box, which cannot reach it): *uid, 0 when the box runs as the shared
 * user (no file). YX_OK or YX_E_BAD_REQUEST.
 */
static int
pool_box_uid(int bfd, unsigned *uid, struct yx_errctx *e)
{
	struct stat	st;
	int		fd, rc = YX_OK;

	*uid = 0;
	if ((fd = yx_openat_beneath(bfd, YX_PRIV_BOX_UID, O_RDONLY | O_NONBLOCK, 0, false)) ==
	    -1)	/* a symlink there: ELOOP, refused */
		return errno == ENOENT ? YX_OK :
					 yx_fail(e, errno == ELOOP ? YX_E_BAD_REQUEST : yx_err_from_errno(errno),
					     "box uid: %s", strerror(errno));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 022) != 0)
		rc = yx_fail(e, YX_E_BAD_REQUEST, "box uid file");
	else if (yx_priv_uid_read(fd, uid) != YX_OK)
		rc = yx_fail(e, YX_E_BAD_REQUEST, "box uid");
	close(fd);
	return rc;
}

/*
 * A user namespace whose id maps show what the thread's files are owned
 * by (uid, gid on disk) as the box's uid (box, its own group): the
 * idmapping of the box's user-data mount. Made by a child that unshares
 * and waits; its maps written here; the child is gone on return. The
 * namespace's fd, or -1 with the error in e.
 */
static int
pool_userns(unsigned uid, unsigned gid, unsigned box, struct yx_errctx *e)
{
	char	path[64], map[64];
	int	p[2], fd = -1, i, mfd, n;
	pid_t	c, parent = getpid();
	char	b;

	if (pipe2(p, O_CLOEXEC) == -1) {
		(void)yx_fail(e, YX_E_IO, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((c = fork()) == -1) {
		(void)yx_fail(e, YX_E_IO, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (c == 0) {
		close(p[0]);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)	/* the helper died meanwhile */
			_exit(1);
		b = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
		if (write(p[1], &b, 1) != 1 || b != 'y')
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &b, 1) != 1 || b != 'y') {
		(void)yx_fail(e, YX_E_IO, "user namespace: unshare failed");
		goto done;
	}
	for (i = 0; i < 3; i++) {
		static const char *const f[3] = { "uid_map", "setgroups", "gid_map" };

		if (i == 1)
			n = snprintf(map, sizeof(map), "deny");
		else
			n = snprintf(map, sizeof(map), "%u %u 1\n",
			    i == 0 ? uid : gid, box);
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)c, f[i]);
		if ((mfd = open(path, O_WRONLY | O_CLOEXEC)) == -1 ||
		    write(mfd, map, (size_t)n) != n) {
			(void)yx_fail(e, YX_E_IO, "user namespace: %s: %s", f[i],
			    strerror(errno));
			if (mfd != -1)
				close(mfd);
			goto done;
		}
		close(mfd);
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)c);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		(void)yx_fail(e, YX_E_IO, "user namespace: %s", strerror(errno));
done:
	close(p[0]);
	(void)kill(c, SIGKILL);
	while (waitpid(c, NULL, 0) == -1 && errno == EINTR)
		;
	return fd;
}

/* Clone the mount at src, set attr (and the idmapping of userns when it
 * is not -1), attach it on dst. YX_OK or YX_E_IO. */
static int
pool_attach(int src, int dst, uint64_t attr, int userns, struct yx_errctx *e)
{
	struct mount_attr	ma;
	int			tree, rc = YX_OK;

	if ((tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) == -1)
		return yx_fail(e, YX_E_IO, "open_tree: %s", strerror(errno));
	memset(&ma, 0, sizeof(ma));
	ma.attr_set = attr;
	if (userns != -1) {
		ma.attr_set |= MOUNT_ATTR_IDMAP;
		ma.userns_fd = (uint64_t)userns;
	}
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &ma, sizeof(ma)) == -1)
		rc = yx_fail(e, YX_E_IO, "mount_setattr: %s", strerror(errno));
	else if (move_mount(tree, "", dst, "",
		     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == -1)
		rc = yx_fail(e, YX_E_IO, "move_mount: %s", strerror(errno));
	close(tree);
	return rc;
}

/* Open the box's mount point `name` below dirfd, refusing one in use. */
static int
pool_target(int dirfd, const char *name, struct yx_errctx *e)
{
	int fd;

	/* no xdev: a mount point already covered does not open */
	if ((fd = yx_openat_beneath(dirfd, name, O_PATH | O_DIRECTORY, 0, false)) ==
	    -1) {
		(void)yx_fail(e, errno == EXDEV ? YX_E_BUSY : YX_E_NOT_FOUND,
		    "pool box mount point %s", errno == EXDEV ? "in use" : "missing");
		return -1;
	}
	return fd;
}

int
priv_pool_bind(int threads_fd, int pool_fd, const char *tid, const char *box,
    struct yx_errctx *e)
{
	struct stat	st;
	unsigned	buid = 0;
	int		bfd = -1, tfd = -1, src = -1, dst = -1, ns = -1, rc;

	if ((bfd = pool_box_dir(pool_fd, box, e)) == -1 ||
	    (tfd = priv_thread_dir(threads_fd, tid, e)) == -1) {
		rc = e->code;
		goto done;
	}
	/* xdev: user-data may be the root of the thread's disk image */
	if ((src = yx_openat_beneath(tfd, POOL_USERDATA, O_PATH | O_DIRECTORY, 0,
		 true)) == -1 ||
	    fstat(src, &st) == -1) {
		rc = yx_fail(e, YX_E_NOT_FOUND, "thread has no user-data");
		goto done;
	}
	if ((rc = pool_box_uid(bfd, &buid, e)) != YX_OK)
		goto done;
	/* a box of its own uid sees the thread's files (owned by the
	 * thread's uid on disk) as its own, and what it writes lands as the
	 * thread's: an idmapped mount, nothing chowned */
	if (buid != 0 && (st.st_uid == 0 || st.st_gid == 0 || st.st_uid == geteuid())) {
		rc = yx_fail(e, YX_E_BAD_REQUEST,
		    "user-data owned by root or the service");
		goto done;
	}
	if (buid != 0 && (st.st_uid != buid || st.st_gid != buid) &&
	    (ns = pool_userns(st.st_uid, st.st_gid, buid, e)) == -1) {
		rc = e->code;
		goto done;
	}
	if ((dst = pool_target(bfd, POOL_USERDATA, e)) == -1) {
		rc = e->code;
		goto done;
	}
	rc = pool_attach(src, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, ns, e);
	if (rc == YX_OK)
		log_debug("pool box %s: user-data of %s bound (box uid %u)", box,
		    tid, buid);
done:
	if (ns != -1)
		close(ns);
	if (dst != -1)
		close(dst);
	if (src != -1)
		close(src);
	if (tfd != -1)
		close(tfd);
	if (bfd != -1)
		close(bfd);
	return rc;
}

int
priv_pool_skill(int skills_fd, int pool_fd, const char *skill,
    const char *box, struct yx_errctx *e)
{
	int bfd = -1, sfd = -1, src = -1, dst = -1, rc;

	if (skills_fd == -1) {
		rc = yx_fail(e, YX_E_BAD_REQUEST, "no skills directory");
		goto done;
	}
	if ((bfd = pool_box_dir(pool_fd, box, e)) == -1) {
		rc = e->code;
		goto done;
	}
	if ((src = yx_openat_beneath(skills_fd, skill, O_PATH | O_DIRECTORY, 0,
		 false)) == -1) {
		rc = yx_fail(e, YX_E_NOT_FOUND, "no such skill");
		goto done;
	}
	if ((sfd = yx_openat_beneath(bfd, POOL_SKILLS, O_RDONLY | O_DIRECTORY, 0,
		 false)) == -1) {
		rc = yx_fail(e, YX_E_NOT_FOUND, "pool box has no skills directory");
		goto done;
	}
	if (mkdirat(sfd, skill, 0755) == -1 && errno != EEXIST) {
		rc = yx_fail(e, YX_E_IO, "skill mount point: %s", strerror(errno));
		goto done;
	}
	if ((dst = pool_target(sfd, skill, e)) == -1) {
		rc = e->code;
		goto done;
	}
	rc = pool_attach(src, dst,
	    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, -1, e);
done:
	if (dst != -1)
		close(dst);
	if (src != -1)
		close(src);
	if (sfd != -1)
		close(sfd);
	if (bfd != -1)
		close(bfd);
	return rc;
}

/* Detach whatever is mounted on name below dirfd (stacked: all). 0 or -1. */
static int
pool_unmount(int dirfd, const char *name)
{
	char	tgt[40];
	int	fd, r, i;

	for (i = 0; i < 16; i++) {
		if ((fd = yx_openat_beneath(dirfd, name, O_PATH | O_DIRECTORY, 0,
			 true)) == -1)
			return errno == ENOENT ? 0 : -1;
		if ((r = pool_mount_root(fd)) == 1) {
			snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", fd);
			r = umount2(tgt, MNT_DETACH) == 0 ? 1 : -1;
		}
		close(fd);
		if (r <= 0)
			return r;
	}
	errno = EBUSY;
	return -1;
}

/* Unmount user-data and every skill of box bfd, removing the skill mount
 * points. YX_OK or YX_E_IO. */
static int
pool_unbind_all(int bfd, struct yx_errctx *e)
{
	struct dirent	*de;
	DIR		*d;
	int		 sfd, rc = YX_OK;

	if (pool_unmount(bfd, POOL_USERDATA) == -1)
		return yx_fail(e, YX_E_IO, "cannot unmount user-data: %s",
		    strerror(errno));
	if ((sfd = yx_openat_beneath(bfd, POOL_SKILLS, O_RDONLY | O_DIRECTORY, 0,
		 false)) == -1)
		return YX_OK;
	if ((d = fdopendir(sfd)) == NULL) {
		close(sfd);
		return yx_fail(e, YX_E_IO, "skills directory");
	}
	while (rc == YX_OK && (de = readdir(d)) != NULL) {
		if (!priv_skill_name_valid(de->d_name))
			continue;
		if (pool_unmount(dirfd(d), de->d_name) == -1)
			rc = yx_fail(e, YX_E_IO, "cannot unmount a skill");
		else
			(void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
	return rc;
}

int
priv_pool_clear(int pool_fd, const char *box, struct yx_errctx *e)
{
	int bfd, rc;

	if ((bfd = pool_box_dir(pool_fd, box, e)) == -1)
		return e->code == YX_E_NOT_FOUND ? YX_OK : e->code;
	rc = pool_unbind_all(bfd, e);
	close(bfd);
	if (rc != YX_OK)
		return rc;
	/* nothing is mounted below the box any more: remove it */
	if (yx_tree_remove(pool_fd, box) != YX_OK)
		return yx_fail(e, YX_E_IO, "pool box directory not removed");
	log_debug("pool box %s cleared", box);
	return YX_OK;
}

int
priv_pool_unbind(int pool_fd, const char *box, struct yx_errctx *e)
{
	int bfd, rc;

	if ((bfd = pool_box_dir(pool_fd, box, e)) == -1)
		return e->code;
	rc = pool_unbind_all(bfd, e);
	close(bfd);
	return rc;
}

int
priv_pool_prepare(const char *path, int *fdp, struct yx_errctx *e)
{
	char	tgt[40];
	int	fd = -1, r, rc = YX_OK;

	*fdp = -1;
	if (mkdir(path, 0755) == -1 && errno != EEXIST)
		return yx_fail(e, YX_E_IO, "pool directory: %s", strerror(errno));
	if ((fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
		-1 ||
	    (r = pool_mount_root(fd)) == -1) {
		rc = yx_fail(e, YX_E_IO, "pool directory: %s", strerror(errno));
		goto done;
	}
	if (r == 0) {
		/* its own mount, so that it can be shared whatever its parent */
		snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", fd);
		if (mount(tgt, tgt, NULL, MS_BIND, NULL) == -1) {
			rc = yx_fail(e, YX_E_IO, "pool directory: bind: %s",
			    strerror(errno));
			goto done;
		}
		close(fd);	/* names the directory below the new mount */
		if ((fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
			rc = yx_fail(e, YX_E_IO, "pool directory: %s",
			    strerror(errno));
			goto done;
		}
	}
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", fd);
	if (mount(NULL, tgt, NULL, MS_SHARED | MS_REC, NULL) == -1) {
		rc = yx_fail(e, YX_E_IO, "pool directory: make shared: %s",
		    strerror(errno));
		goto done;
	}
	*fdp = fd;
	fd = -1;
done:
	if (fd != -1)
		close(fd);
	return rc;
}
