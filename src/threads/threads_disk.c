/* SPDX-License-Identifier: MIT */
/*
 * threads_disk.c - a thread's own disk (YUXI_THREAD_DISK_QUOTA; see
 * include/yuxi/threads.h and include/yuxi/priv.h): made and mounted while
 * the thread is a hidden temporary, dropped before its directory is
 * removed, mounted again at start, and read (statfs) for the API and the
 * metrics. The mount and the image are the privileged helper's business;
 * this file only asks for them and looks at the result.
 *
 * Beneath the mount, user-data/ is an empty directory of the service (made
 * 0755 here, before the image is mounted on it): should the image ever not
 * be mounted, a sandbox cannot write there, and the broker refuses it for
 * a thread with its own uid (the root does not belong to that uid).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "threads/threads_int.h"
#include "common/control_int.h"

#define THREAD_USER_DATA	"user-data"

/* Is user-data/ of directory tfd the root of a mount? */
static bool
thread_disk_mounted(int tfd)
{
	struct statx stx;

	if (statx(tfd, THREAD_USER_DATA, AT_SYMLINK_NOFOLLOW, STATX_TYPE,
		&stx) == -1)
		return false;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

/* Does directory tfd hold an image? */
static bool
thread_disk_image(int tfd, struct stat *sb)
{
	return fstatat(tfd, YX_PRIV_IMAGE, sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(sb->st_mode);
}

int
thread_disk_make(struct yx_thread_store *st, int tfd, const char *name,
    const struct yx_thread *t)
{
	struct yx_errctx	e;
	int			rc;

	if (st->disk_quota <= 0)
		return YX_OK;
	/* control "quota": a plain directory, as without a quota */
	if (YX_CONTROL_OFF("quota"))
		return YX_OK;
	yx_errctx_clear(&e);
	/* the mount point: the service's, empty, below the image */
	if (mkdirat(tfd, THREAD_USER_DATA, 0755) == -1 && errno != EEXIST)
		return yx_err_from_errno(errno);
	if ((rc = yx_priv_create_image_fs(name, st->disk_quota, t->uid, t->gid,
		 (enum yx_disk_fs)st->disk_fs, &e)) != YX_OK ||
	    (rc = yx_priv_mount(name, &e)) != YX_OK)
		log_warnx("thread %s: disk image: %s", t->thread_id, e.msg);
	return rc;
}

int
thread_disk_drop(struct yx_thread_store *st, const char *name)
{
	struct yx_errctx	e;
	struct stat		sb;
	bool			mounted;
	int			tfd, rc = YX_OK;

	tfd = openat(st->dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd == -1)	/* gone, or no directory: nothing mounted in it */
		return YX_OK;
	mounted = thread_disk_mounted(tfd);
	if ((mounted || thread_disk_image(tfd, &sb)) && yx_priv_running()) {
		yx_errctx_clear(&e);
		if (yx_priv_remove(name, &e) != YX_OK)
			log_warnx("thread directory %s: disk image not removed: %s",
			    name, e.msg);
		mounted = thread_disk_mounted(tfd);
	}
	if (mounted) {
		log_warnx("thread directory %s: still mounted, left for a "
			  "later sweep",
		    name);
		rc = YX_E_BUSY;
	}
	close(tfd);
	return rc;
}

void
thread_disk_fix(struct yx_thread_store *st, int dfd, const char *name,
    void *arg)
{
	struct yx_thread_repair	*rep = arg;
	struct yx_errctx	 e;
	struct stat		 sb;
	int			 tfd;

	(void)st;
	if (!yx_thread_id_valid(name, strlen(name)))
		return;
	tfd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd == -1)
		return;
	if (thread_disk_image(tfd, &sb) && !thread_disk_mounted(tfd)) {
		yx_errctx_clear(&e);
		if (yx_priv_mount(name, &e) == YX_OK)
			rep->disks_mounted++;
		else {
			log_warnx("thread %s: disk image not mounted: %s", name,
			    e.msg);
			rep->disks_failed++;
		}
	}
	close(tfd);
}

/* The image of directory tfd, when mounted. YX_OK or YX_E_NOT_FOUND. */
static int
thread_disk_stat(int tfd, struct yx_thread_disk *u)
{
	struct statfs	sf;
	struct stat	sb;
	int		ufd, rc = YX_E_NOT_FOUND;

	memset(u, 0, sizeof(*u));
	if (!thread_disk_image(tfd, &sb) || !thread_disk_mounted(tfd))
		return YX_E_NOT_FOUND;
	ufd = openat(tfd, THREAD_USER_DATA, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd == -1)
		return YX_E_NOT_FOUND;
	if (fstatfs(ufd, &sf) == 0) {
		u->quota = (uint64_t)sb.st_size;
		u->size = (uint64_t)sf.f_blocks * (uint64_t)sf.f_frsize;
		u->used = (uint64_t)(sf.f_blocks - sf.f_bfree) *
		    (uint64_t)sf.f_frsize;
		u->avail = (uint64_t)sf.f_bavail * (uint64_t)sf.f_frsize;
		rc = YX_OK;
	}
	close(ufd);
	return rc;
}

int
yx_thread_disk_usage(struct yx_thread_store *st, const char *id,
    struct yx_thread_disk *u)
{
	int tfd, rc;

	memset(u, 0, sizeof(*u));
	if (!yx_thread_id_valid(id, strlen(id)))
		return YX_E_INVALID_THREAD_ID;
	tfd = openat(st->dirfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd == -1)
		return YX_E_NOT_FOUND;
	rc = thread_disk_stat(tfd, u);
	close(tfd);
	return rc;
}

void
yx_thread_disk_totals(struct yx_thread_store *st,
    struct yx_thread_disk_totals *tot)
{
	struct yx_thread_disk	 u;
	struct dirent		*de;
	struct stat		 sb;
	DIR			*d;
	size_t			 scanned = 0;
	int			 fd, tfd;

	memset(tot, 0, sizeof(*tot));
	if ((fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (scanned++ >= YX_THREADS_SCAN_MAX) {
			tot->truncated = true;
			break;
		}
		if (!yx_thread_id_valid(de->d_name, strlen(de->d_name)) ||
		    (tfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		if (thread_disk_stat(tfd, &u) == YX_OK) {
			tot->images++;
			tot->quota += u.quota;
			tot->used += u.used;
			if (u.avail < u.size / 20)
				tot->full++;
		} else if (thread_disk_image(tfd, &sb))
			tot->unmounted++;
		close(tfd);
	}
	closedir(d);
}
