/* SPDX-License-Identifier: MIT */
/*
 * priv_snap.c - copy-on-write storage of a thread, in the privileged
 * helper only (CAP_SYS_ADMIN; include/yuxi/priv.h "Snapshots", docs/design.md
 * §10): btrfs images (formatted, their layout, mounted as vol/ with the
 * subvolume live/ bound on user-data), read-only snapshots of live/ and
 * their restore, and a transaction's overlay layer.
 *
 * Everything is reached beneath the thread's directory (an O_PATH fd the
 * helper opened and checked) with yx_openat_beneath(): vol/ is the one mount
 * crossed, and only after its filesystem was checked to be a btrfs on a
 * loop device backed by the thread's own image (BTRFS_IOC_FS_INFO,
 * BTRFS_IOC_DEV_INFO, then LOOP_GET_STATUS64 as priv_disk.c does). A
 * snapshot is named by an id the helper checks ("s" + 16 hex); no name
 * from a request becomes a path.
 *
 * Why btrfs: a snapshot of a subvolume is one metadata operation (about
 * 20 ms whatever the size of the tree) and holds only what changed after
 * it; an ext4 image could only be copied (docs/benchmarks.md
 * "Snapshots"). The filesystem's quota groups (enabled by mkfs) say how
 * many bytes each snapshot holds alone.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/log.h"
#include "yuxi/tree.h"
#include "priv/priv_int.h"

#ifndef MOVE_MOUNT_BENEATH
#define MOVE_MOUNT_BENEATH	0x00000200
#endif
#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC	0x794c7630
#endif

#define SNAP_LIVE	"live"
#define SNAP_DIR	"snap"
#define SNAP_NEXT	"next"	/* a restore's new live, before the exchange */
#define SNAP_BTRFS_OFF	0x10040	/* the superblock's magic */
#define SNAP_BTRFS_MAG	"_BHRfS_M"
#define SNAP_MOUNT_FL	(MS_NOSUID | MS_NODEV)
#define SNAP_SMALL	(256LL << 20)	/* below: mixed block groups */
/* no redirects, index or metacopy: what the upper holds is exactly the
 * files the command changed, whole, and nothing else needs the lower */
#define SNAP_OVL_OPTS	"redirect_dir=off,index=off,metacopy=off,xino=off"

bool
priv_image_is_btrfs(int imgfd)
{
	char m[8];

	return pread(imgfd, m, sizeof(m), SNAP_BTRFS_OFF) == (ssize_t)sizeof(m) &&
	    memcmp(m, SNAP_BTRFS_MAG, sizeof(m)) == 0;
}

bool
priv_snap_id_valid(const char *sid)
{
	return sid != NULL && strlen(sid) == YX_PRIV_SNAP_ID_LEN && sid[0] == 's' &&
	    strspn(sid + 1, "0123456789abcdef") == YX_PRIV_SNAP_ID_LEN - 1;
}

static int
snap_errno(struct yx_errctx *e, int en, const char *what)
{
	int rc = en == ENOENT ? YX_E_NOT_FOUND :
	    en == EEXIST	  ? YX_E_FILE_EXISTS :
				yx_err_from_errno(en);

	return yx_fail(e, rc, "%s: %s", what, strerror(en));
}

/* A readable descriptor of the directory fd (ioctls refuse O_PATH). */
static int
snap_reopen(int fd)
{
	return openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

bool
priv_btrfs_backed_by(int fd, const struct stat *img)
{
	struct btrfs_ioctl_fs_info_args		fi;
	struct btrfs_ioctl_dev_info_args	di;
	struct statfs				sf;
	struct stat				st;
	const char				*base;
	bool					ok = false;
	int					rfd, lfd;

	if ((rfd = snap_reopen(fd)) == -1)
		return false;
	memset(&fi, 0, sizeof(fi));
	memset(&di, 0, sizeof(di));
	if (fstatfs(rfd, &sf) == -1 || sf.f_type != BTRFS_SUPER_MAGIC ||
	    ioctl(rfd, BTRFS_IOC_FS_INFO, &fi) == -1 || fi.num_devices != 1)
		goto done;
	di.devid = fi.max_id;
	if (ioctl(rfd, BTRFS_IOC_DEV_INFO, &di) == -1)
		goto done;
	di.path[sizeof(di.path) - 1] = '\0';
	base = strrchr((char *)di.path, '/');
	base = base != NULL ? base + 1 : (const char *)di.path;
	if (strncmp(base, "loop", 4) != 0)
		goto done;
	{
		char dev[64];

		snprintf(dev, sizeof(dev), "/dev/%.40s", base);
		if ((lfd = open(dev, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
			goto done;
	}
	if (fstat(lfd, &st) == 0 && S_ISBLK(st.st_mode))
		ok = priv_loop_backs_fd(lfd, img);
	close(lfd);
done:
	close(rfd);
	return ok;
}

/* A subvolume `name` in the directory rfd (readable fd). */
static int
snap_subvol_create(int rfd, const char *name)
{
	struct btrfs_ioctl_vol_args va;

	memset(&va, 0, sizeof(va));
	snprintf(va.name, sizeof(va.name), "%s", name);
	return ioctl(rfd, BTRFS_IOC_SUBVOL_CREATE, &va);
}

/* A snapshot of the subvolume src (readable fd) as `name` in rfd. */
static int
snap_snapshot(int src, int rfd, const char *name, bool ro)
{
	struct btrfs_ioctl_vol_args_v2 va;

	memset(&va, 0, sizeof(va));
	va.fd = src;
	va.flags = ro ? BTRFS_SUBVOL_RDONLY : 0;
	snprintf(va.name, sizeof(va.name), "%s", name);
	return ioctl(rfd, BTRFS_IOC_SNAP_CREATE_V2, &va);
}

/* Delete the subvolume `name` of rfd. */
static int
snap_subvol_delete(int rfd, const char *name)
{
	struct btrfs_ioctl_vol_args va;

	memset(&va, 0, sizeof(va));
	snprintf(va.name, sizeof(va.name), "%s", name);
	return ioctl(rfd, BTRFS_IOC_SNAP_DESTROY, &va);
}

/*
 * vol/ of the thread at tfd, opened readable, checked to be the root of the
 * mount of its own image. fd, or -1 with the error in e (YX_E_UNSUPPORTED:
 * no btrfs image mounted).
 */
static int
snap_vol(int tfd, struct yx_errctx *e)
{
	struct stat	img;
	int		imgfd, fd = -1, rfd = -1;

	imgfd = yx_openat_beneath(tfd, YX_PRIV_IMAGE, O_RDONLY | O_NONBLOCK, 0, false);
	if (imgfd == -1 || fstat(imgfd, &img) == -1 || !S_ISREG(img.st_mode) ||
	    img.st_uid != geteuid() || img.st_nlink != 1 ||
	    !priv_image_is_btrfs(imgfd)) {
		(void)yx_fail(e, YX_E_UNSUPPORTED,
		    "snapshots need the thread's user-data on a btrfs disk image "
		    "(YUXI_THREAD_DISK_FS=btrfs)");
		goto done;
	}
	/* a mount is on vol/: RESOLVE_NO_XDEV refuses it, so cross once */
	if ((fd = yx_openat_beneath(tfd, YX_PRIV_VOL, O_PATH | O_DIRECTORY, 0, false)) != -1 ||
	    errno != EXDEV ||
	    (fd = yx_openat_beneath(tfd, YX_PRIV_VOL, O_PATH | O_DIRECTORY, 0, true)) == -1 ||
	    !priv_btrfs_backed_by(fd, &img) || (rfd = snap_reopen(fd)) == -1) {
		(void)yx_fail(e, YX_E_UNSUPPORTED, "the thread's disk image is not mounted");
		goto done;
	}
done:
	if (fd != -1)
		close(fd);
	if (imgfd != -1)
		close(imgfd);
	return rfd;
}

/* The directory `name` beneath dfd (made 0700 when absent), readable. */
static int
snap_subdir(int dfd, const char *name, bool create)
{
	int fd;

	if (create && mkdirat(dfd, name, 0700) == -1 && errno != EEXIST)
		return -1;
	fd = yx_openat_beneath(dfd, name, O_RDONLY | O_DIRECTORY, 0, false);
	return fd;
}

int
priv_btrfs_format(int tfd, int lfd, const char *dev, unsigned uid,
    unsigned gid, struct yx_errctx *e)
{
	char		*argv[] = { "mkfs.btrfs", "-q", "-f", "-R", "quota", "-M",
		      "/proc/self/fd/3", NULL };
	struct stat	 st;
	int		 vfd = -1, rfd = -1, lv = -1, rc;
	char		 tgt[40];

	if (fstat(lfd, &st) == -1)
		return snap_errno(e, errno, "disk image");
	{
		uint64_t bytes = 0;

		/* mixed block groups only where separate ones waste the space */
		if (ioctl(lfd, BLKGETSIZE64, &bytes) == 0 &&
		    bytes >= (uint64_t)SNAP_SMALL) {
			argv[5] = argv[6];
			argv[6] = NULL;
		}
	}
	if ((rc = priv_exec_on(YX_MKFS_BTRFS, argv, lfd, e)) != YX_OK)
		return rc;
	if ((vfd = snap_subdir(tfd, YX_PRIV_VOL, true)) == -1) {
		rc = snap_errno(e, errno, "vol");
		goto done;
	}
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", vfd);
	if (mount(dev, tgt, "btrfs", SNAP_MOUNT_FL, NULL) == -1) {
		rc = snap_errno(e, errno, "mount the new image");
		goto done;
	}
	/* the mount now covers the directory vfd names */
	if ((rfd = yx_openat_beneath(tfd, YX_PRIV_VOL, O_RDONLY | O_DIRECTORY, 0, true)) == -1 ||
	    snap_subvol_create(rfd, SNAP_LIVE) == -1 ||
	    (lv = yx_openat_beneath(rfd, SNAP_LIVE, O_RDONLY | O_DIRECTORY, 0, false)) == -1 ||
	    fchown(lv, uid, gid) == -1 || fchmod(lv, 0755) == -1 ||
	    mkdirat(rfd, SNAP_DIR, 0700) == -1 || mkdirat(rfd, YX_PRIV_TXDIR, 0700) == -1)
		rc = snap_errno(e, errno, "lay out the new image");
	if (rfd != -1)
		close(rfd);
	rfd = -1;
	if (umount2(tgt, MNT_DETACH) == -1 && rc == YX_OK)
		rc = snap_errno(e, errno, "unmount the new image");
done:
	if (lv != -1)
		close(lv);
	if (rfd != -1)
		close(rfd);
	if (vfd != -1)
		close(vfd);
	return rc;
}

int
priv_btrfs_mount(int tfd, int ufd, const char *dev, const char *name,
    const struct stat *img, struct yx_errctx *e)
{
	char	tgt[40], src[40];
	int	vfd = -1, lv = -1, rc = YX_OK;

	if (mkdirat(tfd, YX_PRIV_VOL, 0700) == -1 && errno != EEXIST)
		return snap_errno(e, errno, "vol");
	vfd = yx_openat_beneath(tfd, YX_PRIV_VOL, O_PATH | O_DIRECTORY, 0, false);
	if (vfd == -1 && errno == EXDEV) {	/* mounted: ours? */
		vfd = yx_openat_beneath(tfd, YX_PRIV_VOL, O_PATH | O_DIRECTORY, 0, true);
		if (vfd == -1 || !priv_btrfs_backed_by(vfd, img)) {
			rc = yx_fail(e, YX_E_BUSY, "another filesystem is mounted on vol");
			goto done;
		}
	} else if (vfd == -1) {
		rc = snap_errno(e, errno, "vol");
		goto done;
	} else {
		snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", vfd);
		if (mount(dev, tgt, "btrfs", SNAP_MOUNT_FL, "discard") == -1) {
			log_warn("thread %s: mount %s", name, dev);
			rc = yx_fail(e, YX_E_IO, "cannot mount the disk image");
			goto done;
		}
		close(vfd);
		vfd = yx_openat_beneath(tfd, YX_PRIV_VOL, O_PATH | O_DIRECTORY, 0, true);
		if (vfd == -1) {
			rc = snap_errno(e, errno, "vol");
			goto done;
		}
	}
	if ((lv = yx_openat_beneath(vfd, SNAP_LIVE, O_PATH | O_DIRECTORY, 0, false)) == -1) {
		rc = snap_errno(e, errno, "the image's live subvolume");
		goto done;
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", lv);
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", ufd);
	if (mount(src, tgt, NULL, MS_BIND, NULL) == -1) {
		rc = snap_errno(e, errno, "bind user-data");
		goto done;
	}
	log_info("thread %s: btrfs image mounted (%s)", name, dev);
done:
	if (lv != -1)
		close(lv);
	if (vfd != -1)
		close(vfd);
	return rc;
}

/* Unmount `name` beneath tfd when it is a mount of the image. */
static int
snap_umount_one(int tfd, const char *what, const struct stat *img,
    struct yx_errctx *e)
{
	char	tgt[40];
	int	fd, rc = YX_OK;

	fd = yx_openat_beneath(tfd, what, O_PATH | O_DIRECTORY, 0, false);
	if (fd != -1 || errno != EXDEV) {	/* nothing mounted */
		if (fd != -1)
			close(fd);
		return YX_OK;
	}
	if ((fd = yx_openat_beneath(tfd, what, O_PATH | O_DIRECTORY, 0, true)) == -1)
		return snap_errno(e, errno, what);
	if (!priv_btrfs_backed_by(fd, img))
		rc = yx_fail(e, YX_E_BUSY, "%s is not mounted from the thread's disk image",
		    what);
	else {
		snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", fd);
		if (umount2(tgt, MNT_DETACH) == -1)
			rc = snap_errno(e, errno, "umount");
	}
	close(fd);
	return rc;
}

int
priv_btrfs_unmount(int tfd, const struct stat *img, const char *name,
    struct yx_errctx *e)
{
	int rc, i;

	/* user-data may carry more than one (a restore's, stacked) */
	for (i = 0, rc = YX_OK; i < 4 && rc == YX_OK; i++)
		rc = snap_umount_one(tfd, "user-data", img, e);
	(void)priv_tx_op(tfd, PRIV_TX_UNMOUNT, NULL, NULL);
	if (rc == YX_OK)
		rc = snap_umount_one(tfd, YX_PRIV_VOL, img, e);
	if (rc == YX_OK)
		log_info("thread %s: btrfs image unmounted", name);
	return rc;
}

/* The qgroup of subvolume treeid: bytes only it holds. */
static uint64_t
snap_excl(int rfd, uint64_t treeid)
{
	struct btrfs_ioctl_search_args		sa;
	struct btrfs_ioctl_search_header	sh;
	struct btrfs_qgroup_info_item		qi;

	memset(&sa, 0, sizeof(sa));
	sa.key.tree_id = BTRFS_QUOTA_TREE_OBJECTID;
	sa.key.min_type = sa.key.max_type = BTRFS_QGROUP_INFO_KEY;
	sa.key.min_offset = sa.key.max_offset = treeid;
	sa.key.max_transid = (uint64_t)-1;
	sa.key.nr_items = 1;
	if (ioctl(rfd, BTRFS_IOC_TREE_SEARCH, &sa) == -1 || sa.key.nr_items < 1)
		return 0;
	memcpy(&sh, sa.buf, sizeof(sh));
	if (sh.len < sizeof(qi))
		return 0;
	memcpy(&qi, sa.buf + sizeof(sh), sizeof(qi));
	return le64toh(qi.excl);
}

/* The figures of snapshot fd (readable) into out. */
static int
snap_figures(int vfd, int sfd, struct yx_priv_snap *out)
{
	struct btrfs_ioctl_get_subvol_info_args si;

	memset(&si, 0, sizeof(si));
	if (ioctl(sfd, BTRFS_IOC_GET_SUBVOL_INFO, &si) == -1)
		return -1;
	out->otime = (int64_t)si.otime.sec;
	out->excl = snap_excl(vfd, si.treeid);
	out->kind = YX_PRIV_BTRFS;
	return 0;
}

/* Every id in snap/ into buf ("sid\n" each). */
static int
snap_list(int vfd, char *buf, size_t len, struct yx_errctx *e)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 n = 0;
	int		 fd;

	buf[0] = '\0';
	if ((fd = yx_openat_beneath(vfd, SNAP_DIR, O_RDONLY | O_DIRECTORY, 0, false)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return snap_errno(e, errno, "snapshots");
	}
	while ((de = readdir(d)) != NULL) {
		if (!priv_snap_id_valid(de->d_name) || n + YX_PRIV_SNAP_ID_LEN + 2 > len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s\n", de->d_name);
	}
	closedir(d);
	return YX_OK;
}

/*
 * Restore: snap/<sid> -> next (writable); exchange next and live (one
 * rename: a crash leaves live either old or new, and a stale next that
 * the next restore or snapshot drops); the new live bound beneath the
 * user-data mount, the old one taken off above it, so user-data is never
 * an empty directory in between; the old live deleted.
 */
static int
snap_restore(int tfd, int vfd, int sdir, const char *sid, struct yx_errctx *e)
{
	char	tgt[40];
	int	src = -1, nl = -1, ufd = -1, tree = -1, rc = YX_OK;

	(void)snap_subvol_delete(vfd, SNAP_NEXT);	/* a stale one */
	if ((src = yx_openat_beneath(sdir, sid, O_RDONLY | O_DIRECTORY, 0, false)) == -1) {
		rc = snap_errno(e, errno, "snapshot");
		goto done;
	}
	if (snap_snapshot(src, vfd, SNAP_NEXT, false) == -1) {
		rc = snap_errno(e, errno, "snapshot of the snapshot");
		goto done;
	}
	if (renameat2(vfd, SNAP_NEXT, vfd, SNAP_LIVE, RENAME_EXCHANGE) == -1) {
		rc = snap_errno(e, errno, "exchange");
		goto done;
	}
	if ((nl = yx_openat_beneath(vfd, SNAP_LIVE, O_PATH | O_DIRECTORY, 0, false)) == -1 ||
	    (ufd = yx_openat_beneath(tfd, "user-data", O_PATH | O_DIRECTORY, 0, true)) == -1) {
		rc = snap_errno(e, errno, "live");
		goto done;
	}
	if ((tree = open_tree(nl, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) ==
		-1 ||
	    move_mount(tree, "", ufd, "",
		MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH | MOVE_MOUNT_BENEATH) == -1) {
		rc = snap_errno(e, errno, "mount the restored files");
		goto done;
	}
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", ufd);
	if (umount2(tgt, MNT_DETACH) == -1)
		rc = snap_errno(e, errno, "unmount the old files");
	if (snap_subvol_delete(vfd, SNAP_NEXT) == -1)	/* the old live */
		log_warn("restore: old files kept until the next restore");
done:
	if (tree != -1)
		close(tree);
	if (ufd != -1)
		close(ufd);
	if (nl != -1)
		close(nl);
	if (src != -1)
		close(src);
	return rc;
}

int
priv_snap_op(int tfd, int op, const char *sid, struct priv_rep *rep,
    struct yx_errctx *e)
{
	int	vfd = -1, sdir = -1, lv = -1, sfd = -1, rc = YX_OK;

	if (op != PRIV_SNAP_LIST && !priv_snap_id_valid(sid))
		return yx_fail(e, YX_E_BAD_REQUEST, "bad snapshot id");
	if ((vfd = snap_vol(tfd, e)) == -1)
		return e->code;
	if ((sdir = snap_subdir(vfd, SNAP_DIR, true)) == -1) {
		rc = snap_errno(e, errno, "snapshots");
		goto done;
	}
	switch (op) {
	case PRIV_SNAP_CREATE:
		if ((lv = yx_openat_beneath(vfd, SNAP_LIVE, O_RDONLY | O_DIRECTORY, 0, false)) ==
			-1 ||
		    snap_snapshot(lv, sdir, sid, true) == -1) {
			rc = snap_errno(e, errno, "snapshot");
			break;
		}
		if ((sfd = yx_openat_beneath(sdir, sid, O_RDONLY | O_DIRECTORY, 0, false)) != -1)
			(void)snap_figures(vfd, sfd, &rep->snap);
		break;
	case PRIV_SNAP_DELETE:
		if (snap_subvol_delete(sdir, sid) == -1)
			rc = snap_errno(e, errno, "snapshot");
		break;
	case PRIV_SNAP_INFO:
		if ((sfd = yx_openat_beneath(sdir, sid, O_RDONLY | O_DIRECTORY, 0, false)) == -1 ||
		    snap_figures(vfd, sfd, &rep->snap) == -1)
			rc = snap_errno(e, errno, "snapshot");
		break;
	case PRIV_SNAP_LIST:
		rc = snap_list(vfd, rep->list, sizeof(rep->list), e);
		break;
	case PRIV_SNAP_RESTORE:
		rc = snap_restore(tfd, vfd, sdir, sid, e);
		break;
	default:
		rc = yx_fail(e, YX_E_BAD_REQUEST, "unknown request");
	}
done:
	if (sfd != -1)
		close(sfd);
	if (lv != -1)
		close(lv);
	if (sdir != -1)
		close(sdir);
	if (vfd != -1)
		close(vfd);
	return rc;
}

/* ---- transactions --------------------------------------------------------- */

/*
 * Where the thread's transaction layer lives: vol/tx of its btrfs image
 * (*kind YX_PRIV_BTRFS, *vfdp vol/), else <thread>/tx when user-data is a
 * plain directory (YX_PRIV_PLAIN); an ext4 image has no room for one
 * outside what the sandbox sees: YX_E_UNSUPPORTED. The tx directory,
 * readable, or -1 with the error in e.
 */
static int
tx_dir(int tfd, int *vfdp, enum yx_priv_kind *kind, bool create,
    struct yx_errctx *e)
{
	struct yx_errctx	ign;
	int			fd;

	*vfdp = -1;
	if ((*vfdp = snap_vol(tfd, &ign)) != -1) {
		*kind = YX_PRIV_BTRFS;
		if ((fd = snap_subdir(*vfdp, YX_PRIV_TXDIR, create)) == -1)
			(void)snap_errno(e, errno, "transaction directory");
		return fd;
	}
	if ((fd = yx_openat_beneath(tfd, YX_PRIV_IMAGE, O_PATH, 0, false)) != -1) {
		close(fd);
		(void)yx_fail(e, YX_E_UNSUPPORTED,
		    "transactions need user-data as a plain directory or on a btrfs "
		    "disk image (YUXI_THREAD_DISK_FS=btrfs)");
		return -1;
	}
	*kind = YX_PRIV_PLAIN;
	if ((fd = snap_subdir(tfd, YX_PRIV_TXDIR, create)) == -1)
		(void)snap_errno(e, errno, "transaction directory");
	return fd;
}

/* Unmount the overlay on txm when one is there. */
static int
tx_unmount(int tfd, struct yx_errctx *e)
{
	struct statfs	sf;
	char		tgt[40];
	int		fd, rc = YX_OK;

	fd = yx_openat_beneath(tfd, YX_PRIV_TXM, O_PATH | O_DIRECTORY, 0, false);
	if (fd != -1 || errno != EXDEV) {
		if (fd != -1)
			close(fd);
		return YX_OK;
	}
	if ((fd = yx_openat_beneath(tfd, YX_PRIV_TXM, O_PATH | O_DIRECTORY, 0, true)) == -1)
		return snap_errno(e, errno, YX_PRIV_TXM);
	if (fstatfs(fd, &sf) == -1 || sf.f_type != OVERLAYFS_SUPER_MAGIC)
		rc = yx_fail(e, YX_E_BUSY, "something else is mounted on the layer's mount point");
	else {
		snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", fd);
		if (umount2(tgt, MNT_DETACH) == -1)
			rc = snap_errno(e, errno, "umount the layer");
	}
	close(fd);
	return rc;
}

/* Make the layer's directories and mount the overlay. */
static int
tx_begin(int tfd, struct priv_rep *rep, struct yx_errctx *e)
{
	enum yx_priv_kind	kind = YX_PRIV_PLAIN;
	struct stat		st;
	char			opts[300], tgt[40];
	int			vfd = -1, txd = -1, lower = -1, up = -1, wk = -1, mfd = -1;
	int			rc = YX_OK, lv = -1;

	if ((txd = tx_dir(tfd, &vfd, &kind, true, e)) == -1)
		return e->code;
	if (fstatat(txd, "upper", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		rc = yx_fail(e, YX_E_BUSY, "a transaction layer is there already");
		goto done;
	}
	if (kind == YX_PRIV_BTRFS) {
		(void)snap_subvol_delete(txd, "base");	/* a stale one */
		if ((lv = yx_openat_beneath(vfd, SNAP_LIVE, O_RDONLY | O_DIRECTORY, 0, false)) ==
			-1 ||
		    snap_snapshot(lv, txd, "base", true) == -1 ||
		    (lower = yx_openat_beneath(txd, "base", O_RDONLY | O_DIRECTORY, 0, false)) ==
			-1) {
			rc = snap_errno(e, errno, "the transaction's base");
			goto done;
		}
	} else if ((lower = yx_openat_beneath(tfd, "user-data", O_RDONLY | O_DIRECTORY, 0,
			false)) == -1) {
		rc = snap_errno(e, errno, "user-data");
		goto done;
	}
	if (fstat(lower, &st) == -1 || mkdirat(txd, "upper", 0700) == -1 ||
	    (up = yx_openat_beneath(txd, "upper", O_RDONLY | O_DIRECTORY, 0, false)) == -1 ||
	    fchown(up, st.st_uid, st.st_gid) == -1 ||
	    fchmod(up, st.st_mode & 07777) == -1 ||
	    (mkdirat(txd, "work", 0700) == -1 && errno != EEXIST) ||
	    (wk = yx_openat_beneath(txd, "work", O_PATH | O_DIRECTORY, 0, false)) == -1 ||
	    (mkdirat(tfd, YX_PRIV_TXM, 0755) == -1 && errno != EEXIST)) {
		rc = snap_errno(e, errno, "the transaction's layer");
		goto done;
	}
	if ((mfd = yx_openat_beneath(tfd, YX_PRIV_TXM, O_PATH | O_DIRECTORY, 0, false)) == -1) {
		rc = errno == EXDEV ? yx_fail(e, YX_E_BUSY, "a layer is mounted already") :
				      snap_errno(e, errno, YX_PRIV_TXM);
		goto done;
	}
	snprintf(opts, sizeof(opts),
	    "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,"
	    "workdir=/proc/self/fd/%d," SNAP_OVL_OPTS,
	    lower, up, wk);
	snprintf(tgt, sizeof(tgt), "/proc/self/fd/%d", mfd);
	if (mount("overlay", tgt, "overlay", SNAP_MOUNT_FL, opts) == -1) {
		rc = snap_errno(e, errno, "mount the transaction's layer");
		goto done;
	}
	if (rep != NULL)
		rep->snap.kind = kind;
done:
	if (rc != YX_OK && up != -1)
		(void)yx_tree_remove(txd, "upper");
	if (rc != YX_OK && kind == YX_PRIV_BTRFS && txd != -1)
		(void)snap_subvol_delete(txd, "base");
	if (mfd != -1)
		close(mfd);
	if (wk != -1)
		close(wk);
	if (up != -1)
		close(up);
	if (lower != -1)
		close(lower);
	if (lv != -1)
		close(lv);
	if (txd != -1)
		close(txd);
	if (vfd != -1)
		close(vfd);
	return rc;
}

/* Unmount, remove upper/ and work/, delete base. */
static int
tx_clean(int tfd, struct yx_errctx *e)
{
	enum yx_priv_kind	kind;
	int			vfd = -1, txd, rc;

	if ((rc = tx_unmount(tfd, e)) != YX_OK)
		return rc;
	if ((txd = tx_dir(tfd, &vfd, &kind, false, e)) == -1)
		return errno == ENOENT ? YX_OK : e->code;
	if (yx_tree_remove(txd, "upper") != YX_OK || yx_tree_remove(txd, "work") != YX_OK)
		rc = yx_fail(e, YX_E_IO, "cannot remove the transaction's layer");
	if (kind == YX_PRIV_BTRFS && snap_subvol_delete(txd, "base") == -1 &&
	    errno != ENOENT && rc == YX_OK)
		rc = snap_errno(e, errno, "the transaction's base");
	close(txd);
	if (vfd != -1)
		close(vfd);
	return rc;
}

int
priv_tx_op(int tfd, int op, struct priv_rep *rep, struct yx_errctx *e)
{
	struct yx_errctx ign;

	if (e == NULL)
		e = &ign;
	switch (op) {
	case PRIV_TX_BEGIN:
		return tx_begin(tfd, rep, e);
	case PRIV_TX_UNMOUNT:
		return tx_unmount(tfd, e);
	case PRIV_TX_CLEAN:
		return tx_clean(tfd, e);
	default:
		return yx_fail(e, YX_E_BAD_REQUEST, "unknown request");
	}
}
