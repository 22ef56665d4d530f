/* SPDX-License-Identifier: MIT */
/*
 * priv_disk.c - a thread's disk image: create (mke2fs), attach to a loop
 * device, mount on user-data, unmount, remove, statfs. Runs in the helper
 * only (CAP_SYS_ADMIN). Every function takes the thread's directory as an
 * O_PATH descriptor that the helper opened and checked, and reaches the
 * two names it works on, YX_PRIV_IMAGE and user-data, beneath it with
 * yx_openat_beneath(): no symlink followed, no mount crossed on the way.
 *
 * A filesystem on user-data is the thread's own only when user-data is the
 * root of a mount whose device is a loop device backed by exactly this
 * image (the image's st_dev and st_ino in LOOP_GET_STATUS64); anything else
 * mounted there (an operator's, a test's tmpfs) is left alone: YX_E_BUSY.
 * A loop device is attached with LO_FLAGS_AUTOCLEAR, so it is freed when
 * the last user of its filesystem goes (the host mount, or a container that
 * still holds a bind of it), and the descriptor this code holds while
 * mounting is what keeps it until the mount takes over. Its name is kept
 * in the image's xattr, so that a later mount finds it in one lookup: a
 * scan of every loop device costs about 0.2 ms per device, and with
 * thousands of threads it made each new mount take a second.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <linux/loop.h>
#include <linux/major.h>
#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/sig.h"
#include "yuxi/tree.h"
#include "priv/priv_int.h"

#define PRIV_USERDATA		"user-data"
#define PRIV_LOOP_TRIES		16	/* LOOP_CTL_GET_FREE races lost in a row */
#define PRIV_LOOP_SCAN_MAX	65536	/* /sys/block entries looked at */
#define PRIV_LOOP_XATTR		"trusted.yuxi.loop"	/* "loopN" attached */
/* not noexec: commands run scripts and programs from the workspace */
#define PRIV_MOUNT_FLAGS	(MS_NOSUID | MS_NODEV)
/* discard: space freed inside is punched out of the sparse image;
 * noinit_itable: the inode tables of a sparse file read as zeroes already */
#define PRIV_MOUNT_DATA		"discard,noinit_itable"

#ifndef YX_MKE2FS
#define YX_MKE2FS		"/sbin/mke2fs"
#endif

/* errno -> error with a caller-safe message about `what`. */
static int
priv_fail_errno(struct yx_errctx *e, int en, const char *what)
{
	int rc = en == ENOENT ? YX_E_NOT_FOUND : yx_err_from_errno(en);

	return yx_fail(e, rc, "%s: %s", what, strerror(en));
}

/*
 * The image beneath tfd, opened read-write: a regular file of this user
 * with one link, within the size bounds. Returns the fd (st filled), or -1
 * with errno (ENOENT: none; EPERM: something else has its name).
 */
static int
priv_image_open(int tfd, struct stat *st)
{
	int fd, fl;

	if ((fd = yx_openat_beneath(tfd, YX_PRIV_IMAGE, O_RDWR | O_NONBLOCK, 0,
		 false)) == -1)
		return -1;
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode) ||
	    st->st_uid != geteuid() || st->st_nlink != 1 ||
	    st->st_size < PRIV_IMAGE_MIN || st->st_size > PRIV_IMAGE_MAX ||
	    (fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/*
 * user-data beneath tfd as an O_PATH descriptor in *fdp. Returns 0 when
 * nothing is mounted there (the directory itself), 1 when something is
 * (the root of the topmost mount), -1 with errno.
 */
static int
priv_userdata(int tfd, int *fdp)
{
	int fd;

	fd = yx_openat_beneath(tfd, PRIV_USERDATA, O_PATH | O_DIRECTORY, 0, false);
	if (fd != -1) {
		*fdp = fd;
		return 0;
	}
	if (errno != EXDEV)	/* RESOLVE_NO_XDEV: a mount is on it */
		return -1;
	fd = yx_openat_beneath(tfd, PRIV_USERDATA, O_PATH | O_DIRECTORY, 0, true);
	if (fd == -1)
		return -1;
	*fdp = fd;
	return 1;
}

/*
 * Open the loop device node named `base` ("loopN") read-only and check that
 * it is the block device `want` (0: any loop device). fd or -1.
 */
static int
priv_loop_node(const char *base, dev_t want)
{
	struct stat	st;
	char		dev[PATH_MAX];
	int		fd;

	if (strncmp(base, "loop", 4) != 0 || base[4] == '\0' ||
	    strspn(base + 4, "0123456789") != strlen(base + 4))
		return -1;
	snprintf(dev, sizeof(dev), "/dev/%s", base);
	if ((fd = open(dev, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISBLK(st.st_mode) ||
	    major(st.st_rdev) != LOOP_MAJOR ||
	    (want != 0 && st.st_rdev != want)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Is the filesystem of mfd (the root of a mount) on a loop device backed by
 * img? The device's node is found through /sys/dev/block/MAJ:MIN.
 */
static bool
priv_backed_by(int mfd, const struct stat *img)
{
	struct stat	st;
	char		sys[64], link[PATH_MAX];
	const char	*base;
	ssize_t		n;
	bool		ok;
	int		fd;

	if (fstat(mfd, &st) == -1 || major(st.st_dev) != LOOP_MAJOR)
		return false;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev),
	    minor(st.st_dev));
	if ((n = readlink(sys, link, sizeof(link) - 1)) <= 0)
		return false;
	link[n] = '\0';
	base = strrchr(link, '/') != NULL ? strrchr(link, '/') + 1 : link;
	if ((fd = priv_loop_node(base, st.st_dev)) == -1)
		return false;
	ok = priv_loop_backs_fd(fd, img);
	close(fd);
	return ok;
}

/*
 * Every attached loop device, checked one by one (a millisecond or more per
 * thousand devices): only for images on a filesystem without xattrs. Returns
 * the fd of the device backed by img with its node in dev, or -1.
 */
static int
priv_loop_scan(const struct stat *img, char *dev, size_t devlen)
{
	struct dirent	*de;
	DIR		*d;
	char		 bound[PATH_MAX];
	int		 fd = -1, seen = 0;

	if ((d = opendir("/sys/block")) == NULL)
		return -1;
	while (fd == -1 && (de = readdir(d)) != NULL &&
	    seen++ < PRIV_LOOP_SCAN_MAX) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		/* loop/ exists only while a file is attached */
		snprintf(bound, sizeof(bound), "/sys/block/%s/loop", de->d_name);
		if (access(bound, F_OK) == -1 ||
		    (fd = priv_loop_node(de->d_name, 0)) == -1)
			continue;
		if (priv_loop_backs_fd(fd, img))
			snprintf(dev, devlen, "/dev/%s", de->d_name);
		else {
			close(fd);
			fd = -1;
		}
	}
	closedir(d);
	return fd;
}

/*
 * A loop device already attached to the image (a sandbox may still hold
 * the filesystem after the host mount went): mounting that one again
 * shares its superblock, where a second device would corrupt the image.
 * The helper names the device it attached in the image's xattr
 * PRIV_LOOP_XATTR (trusted.*: only CAP_SYS_ADMIN reads or writes it), so
 * this costs one lookup, not a scan of every loop device; the name is
 * checked against the device (LOOP_GET_STATUS64), never trusted alone. No
 * xattr: never attached by a helper, or a device autocleared since (a
 * name recorded there is then stale and fails the check). Returns the
 * device's fd with its node in dev, or -1.
 */
static int
priv_loop_find(int imgfd, const struct stat *img, char *dev, size_t devlen)
{
	char	name[32];
	ssize_t	n;
	int	fd;

	n = fgetxattr(imgfd, PRIV_LOOP_XATTR, name, sizeof(name) - 1);
	if (n == -1 && (errno == ENOTSUP || errno == EOPNOTSUPP))
		return priv_loop_scan(img, dev, devlen);
	if (n <= 0)
		return -1;
	name[n] = '\0';
	if ((fd = priv_loop_node(name, 0)) == -1)
		return -1;
	if (!priv_loop_backs_fd(fd, img)) {
		close(fd);
		return -1;
	}
	snprintf(dev, devlen, "/dev/%s", name);
	return fd;
}

/*
 * Attach imgfd to a free loop device with autoclear. Returns the device's
 * fd (it holds the device until the mount does) with its node in dev, or
 * -1 with errno.
 */
static int
priv_loop_attach(int imgfd, char *dev, size_t devlen)
{
	struct loop_config	lc;
	int			ctl, lfd = -1, n, i, en = EBUSY;

	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) == -1)
		return -1;
	for (i = 0; i < PRIV_LOOP_TRIES && en == EBUSY; i++) {
		if ((n = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
			en = errno;
			break;
		}
		snprintf(dev, devlen, "/dev/loop%d", n);
		if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) == -1) {
			en = errno;
			break;
		}
		memset(&lc, 0, sizeof(lc));
		lc.fd = (uint32_t)imgfd;
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &lc) == 0) {
			/* for priv_loop_find; a failure only costs scans */
			if (fsetxattr(imgfd, PRIV_LOOP_XATTR, dev + 5,
				strlen(dev + 5), 0) == -1)
				log_debug("%s: %s", PRIV_LOOP_XATTR, strerror(errno));
			break;
		}
		en = errno;	/* EBUSY: another process took it first */
		close(lfd);
		lfd = -1;
	}
	close(ctl);
	if (lfd == -1)
		errno = en;
	return lfd;
}

/*
 * No loop device for an image (priv_loop_attach failed with errno en):
 * YX_E_NOSPACE, "no free loop device", when the host has none to give
 * (exhausted, no device node, too many open files); else YX_E_IO.
 */
static int
priv_loop_fail(struct yx_errctx *e, int en, const char *name)
{
	log_warnx("%s: no loop device: %s", name, strerror(en));
	if (en == ENOSPC || en == ENOMEM || en == ENXIO || en == ENOENT ||
	    en == ENODEV || en == EBUSY || en == EMFILE || en == ENFILE)
		return yx_fail(e, YX_E_NOSPACE, "no free loop device on this "
						"host for the disk image");
	return yx_fail(e, YX_E_IO, "no loop device for the disk image");
}

/*
 * Format the image through the loop device open on fd: mke2fs with a fixed
 * argv and a clean environment on /proc/self/fd/3 (this very device). On
 * the device, not the file: for a regular file mke2fs asks every loop
 * device in the system whether the file backs it (0.3-3 s with 7,000
 * threads), for a block device it only reads the mount table.
 */
static int
priv_mkfs(int fd, unsigned uid, unsigned gid, struct yx_errctx *e)
{
	char	 ext[128];
	char	*argv[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", "-E",
		ext, "/proc/self/fd/3", NULL };

	/* lazy: a sparse file reads as zeroes, nothing needs writing */
	snprintf(ext, sizeof(ext), "root_owner=%u:%u,nodiscard,"
				   "lazy_itable_init=1,lazy_journal_init=1",
	    uid, gid);
	return priv_exec_on(YX_MKE2FS, argv, fd, e);
}

/*
 * Open thread directory `name` beneath threads_fd (O_PATH), and require a
 * directory of this user that nobody else may write. fd, or -1 with the
 * error in e.
 */
int
priv_thread_dir(int threads_fd, const char *name, struct yx_errctx *e)
{
	struct stat	st;
	int		fd;

	if ((fd = yx_openat_beneath(threads_fd, name, O_PATH | O_DIRECTORY, 0,
		 false)) == -1) {
		(void)yx_fail(e, errno == ENOENT ? YX_E_NOT_FOUND : YX_E_BAD_REQUEST,
		    "no such thread directory");
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		close(fd);
		(void)yx_fail(e, YX_E_BAD_REQUEST,
		    "thread directory not the service's own");
		return -1;
	}
	return fd;
}

int
priv_image_create(int tfd, uint64_t size, unsigned uid, unsigned gid, bool btrfs,
    struct yx_errctx *e)
{
	char	dev[PATH_MAX];
	int	fd, lfd = -1, rc;

	size = (size + 4095) & ~(uint64_t)4095;
	fd = yx_openat_beneath(tfd, YX_PRIV_IMAGE, O_RDWR | O_CREAT | O_EXCL, 0600,
	    false);
	if (fd == -1)
		return errno == EEXIST ? yx_fail(e, YX_E_FILE_EXISTS,
					     "the thread has a disk image already") :
					 priv_fail_errno(e, errno, "disk image");
	if (ftruncate(fd, (off_t)size) == -1)
		rc = priv_fail_errno(e, errno, "disk image");
	else if ((lfd = priv_loop_attach(fd, dev, sizeof(dev))) == -1)
		rc = priv_loop_fail(e, errno, "new image");
	else if (btrfs)
		rc = priv_btrfs_format(tfd, lfd, dev, uid, gid, e);
	else
		rc = priv_mkfs(lfd, uid, gid, e);
	if (lfd != -1) {
		/* closed, the device goes (autoclear): no record of it */
		(void)fremovexattr(fd, PRIV_LOOP_XATTR);
		close(lfd);
	}
	close(fd);
	if (rc != YX_OK)
		(void)unlinkat(tfd, YX_PRIV_IMAGE, 0);
	return rc;
}

/*
 * A fresh filesystem has lost+found (root's, 0700) in what the sandbox
 * sees as its user-data root: drop it while it is root's and empty. fsck
 * makes it again when it needs one.
 */
static void
priv_tidy_root(int tfd)
{
	struct stat	st;
	int		rfd;

	rfd = yx_openat_beneath(tfd, PRIV_USERDATA, O_RDONLY | O_DIRECTORY, 0, true);
	if (rfd == -1)
		return;
	if (fstatat(rfd, "lost+found", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == 0)
		(void)unlinkat(rfd, "lost+found", AT_REMOVEDIR);
	close(rfd);
}

/*
 * A thread's disk image and the user-data directory it is mounted on, as
 * mount, unmount and usage open them together (-1: not open).
 */
struct priv_disk {
	int		imgfd;
	int		ufd;
	struct stat	img;
};

static void
priv_disk_close(struct priv_disk *d)
{
	if (d->ufd != -1)
		close(d->ufd);
	if (d->imgfd != -1)
		close(d->imgfd);
}

int
priv_image_mount(int tfd, const char *name, struct yx_errctx *e)
{
	struct priv_disk	d = { .imgfd = -1, .ufd = -1 };
	char			dev[PATH_MAX], tgt[40];
	int			lfd = -1, r, rc = YX_OK;

	if ((d.imgfd = priv_image_open(tfd, &d.img)) == -1) {
		rc = priv_fail_errno(e, errno, "disk image");
		goto done;
	}
	if ((r = priv_userdata(tfd, &d.ufd)) == -1) {
		rc = priv_fail_errno(e, errno, "user-data");
		goto done;
	}
	if (r == 1) {	/* mounted already: fine if it is this image */
		if (!priv_backed_by(d.ufd, &d.img) &&
		    !priv_btrfs_backed_by(d.ufd, &d.img))
			rc = yx_fail(e, YX_E_BUSY,
			    "another filesystem is mounted on user-data");
		goto done;
	}
	if ((lfd = priv_loop_find(d.imgfd, &d.img, dev, sizeof(dev))) == -1 &&
	    (lfd = priv_loop_attach(d.imgfd, dev, sizeof(dev))) == -1) {
		rc = priv_loop_fail(e, errno, name);
		goto done;
	}
	if (priv_image_is_btrfs(d.imgfd)) {
		rc = priv_btrfs_mount(tfd, d.ufd, dev, name, &d.img, e);
		goto done;
	}
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", d.ufd);
	if (mount(dev, tgt, "ext4", PRIV_MOUNT_FLAGS, PRIV_MOUNT_DATA) == -1) {
		log_warn("thread %s: mount %s", name, dev);
		rc = yx_fail(e, YX_E_IO, "cannot mount the disk image");
		goto done;
	}
	log_info("thread %s: disk image mounted (%s)", name, dev);
	priv_tidy_root(tfd);
done:
	if (lfd != -1)	/* after the mount: autoclear waits for it now */
		close(lfd);
	priv_disk_close(&d);
	return rc;
}

int
priv_image_unmount(int tfd, const char *name, struct yx_errctx *e)
{
	struct priv_disk	d = { .imgfd = -1, .ufd = -1 };
	char			tgt[40];
	int			r, rc = YX_OK;

	if ((d.imgfd = priv_image_open(tfd, &d.img)) != -1 &&
	    priv_image_is_btrfs(d.imgfd)) {
		rc = priv_btrfs_unmount(tfd, &d.img, name, e);
		goto done;
	}
	if ((r = priv_userdata(tfd, &d.ufd)) == -1) {
		if (errno != ENOENT)
			rc = priv_fail_errno(e, errno, "user-data");
		goto done;
	}
	if (r == 0)	/* nothing mounted */
		goto done;
	if (d.imgfd == -1 || !priv_backed_by(d.ufd, &d.img)) {
		rc = yx_fail(e, YX_E_BUSY,
		    "user-data is not mounted from the thread's disk image");
		goto done;
	}
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", d.ufd);
	/* detach: a descriptor still open inside keeps it alive, not us */
	if (umount2(tgt, MNT_DETACH) == -1) {
		log_warn("thread %s: umount", name);
		rc = yx_fail(e, YX_E_IO, "cannot unmount the disk image");
		goto done;
	}
	log_info("thread %s: disk image unmounted", name);
done:
	priv_disk_close(&d);
	return rc;
}

int
priv_image_remove(int tfd, const char *name, struct yx_errctx *e)
{
	int rc;

	if ((rc = priv_image_unmount(tfd, name, e)) != YX_OK)
		return rc;
	if (unlinkat(tfd, YX_PRIV_IMAGE, 0) == -1 && errno != ENOENT)
		return priv_fail_errno(e, errno, "disk image");
	return YX_OK;
}

int
priv_image_usage(int tfd, struct yx_priv_usage *u, struct yx_errctx *e)
{
	struct priv_disk	d = { .imgfd = -1, .ufd = -1 };
	struct statfs		sf;
	int			rc;

	memset(u, 0, sizeof(*u));
	if (priv_userdata(tfd, &d.ufd) != 1 ||
	    (d.imgfd = priv_image_open(tfd, &d.img)) == -1 ||
	    (!priv_backed_by(d.ufd, &d.img) &&
		!priv_btrfs_backed_by(d.ufd, &d.img))) {
		rc = yx_fail(e, YX_E_NOT_FOUND, "no disk image mounted");
		goto done;
	}
	if (fstatfs(d.ufd, &sf) == -1) {
		rc = priv_fail_errno(e, errno, "user-data");
		goto done;
	}
	u->size = (uint64_t)sf.f_blocks * (uint64_t)sf.f_frsize;
	u->used = (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_frsize;
	u->avail = (uint64_t)sf.f_bavail * (uint64_t)sf.f_frsize;
	u->files = (uint64_t)sf.f_files;
	u->files_free = (uint64_t)sf.f_ffree;
	rc = YX_OK;
done:
	priv_disk_close(&d);
	return rc;
}
