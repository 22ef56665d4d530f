/* SPDX-License-Identifier: MIT */
/*
 * test_priv.c - the privileged helper (src/priv) and the thread store's
 * disk images (src/threads/threads_disk.c) with the real thing: a forked
 * helper, real sparse ext4 images, real loop devices and mounts. Needs
 * root (skipped otherwise).
 *
 * Each test has its own saves directory under /tmp and its own helper,
 * started without dropping CAP_SYS_ADMIN from the test (priv_start(...,
 * false)) so that the test can plant what an attacker would (symlinks,
 * foreign mounts) and clean up; one test drops it, as the daemon does,
 * and checks that the process can no longer mount.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <linux/capability.h>

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "yuxi/clock.h"
#include "yuxi/priv.h"
#include "yuxi/threads.h"
#include "priv/priv_int.h"
#include "../lib/storetest.h"
#include "../lib/tutil.h"

#define QUOTA		(16LL << 20)
#define EXT4_MAGIC	0xEF53
#define UID		2000000123u

static char			base[256];
static struct yx_config		cfg;
static struct yx_thread_store	st;
static bool			started;

/* Can this process run the helper at all (root, loop devices)? */
static bool
priv_possible(void)
{
	return geteuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0;
}

static void
setup(void)
{
	if (!priv_possible())
		return;
	storetest_priv_open("yx-priv", base, sizeof(base), &cfg, &st, QUOTA,
	    YX_DISK_FS_EXT4);
	started = true;
}

static void
teardown(void)
{
	if (started)
		storetest_priv_close(base, &st);
}

TestSuite(priv, .init = setup, .fini = teardown, .timeout = 120);

#define NEED_PRIV()                                                      \
	do {                                                             \
		if (!priv_possible())                                    \
			cr_skip_test("needs root and /dev/loop-control"); \
	} while (0)

/* <base>/saves/threads/<name>[/<leaf>] into buf. */
static const char *
tpath(char *buf, size_t len, const char *name, const char *leaf)
{
	snprintf(buf, len, "%s/saves/threads/%s%s%s", base, name,
	    leaf != NULL ? "/" : "", leaf != NULL ? leaf : "");
	return buf;
}

/* tpath(), made a directory (0755). */
static void
tmkdir(char *buf, size_t len, const char *name, const char *leaf)
{
	cr_assert_eq(mkdir(tpath(buf, len, name, leaf), 0755), 0, "%s", buf);
}

static bool
is_mount_root(const char *path)
{
	struct statx stx;

	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) == 0 &&
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

/* Loop devices whose backing file lies beneath base. */
static int
loops_below(void)
{
	char		 p[512], back[4096];
	struct dirent	*de;
	DIR		*d;
	FILE		*f;
	int		 n = 0;

	if ((d = opendir("/sys/block")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		if ((f = fopen(p, "r")) == NULL)
			continue;
		if (fgets(back, sizeof(back), f) != NULL &&
		    strncmp(back, base, strlen(base)) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Wait (bounded) until no loop device is backed by a file under base. */
static int
loops_gone(void)
{
	int64_t deadline = yx_mono_ms() + 5000;
	int	n;

	while ((n = loops_below()) > 0 && yx_mono_ms() < deadline)
		usleep(20000);
	return n;
}

static struct yx_thread
mk(const char *id)
{
	struct yx_thread	w, t;
	struct yx_errctx	e;
	bool			created;

	memset(&w, 0, sizeof(w));
	snprintf(w.thread_id, sizeof(w.thread_id), "%s", id);
	snprintf(w.owner, sizeof(w.owner), "alice");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, &e), YX_OK, "%s",
	    e.msg);
	cr_assert(created);
	return t;
}

/* Write `len` bytes of 'x' to path; returns 0 or the errno of the failure. */
static int
fill(const char *path, size_t len)
{
	char	buf[65536];
	int	fd, en = 0;

	memset(buf, 'x', sizeof(buf));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		return errno;
	while (len > 0 && en == 0) {
		size_t	k = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t	w = write(fd, buf, k);

		if (w < 0)
			en = errno;
		else
			len -= (size_t)w;
	}
	if (en == 0 && fsync(fd) == -1)
		en = errno;
	close(fd);
	return en;
}

/* ---- names --------------------------------------------------------------- */

Test(names, what_the_helper_accepts)
{
	static const char *const good[] = { "t1", "a", "T-x_9",
		".tmp-0123456789abcdef", ".trash-0123456789abcdef",
		".trash-0123456789abcdef-2000000000" };
	static const char *const bad[] = { "", ".", "..", "../t1", "a/b", "/t1",
		".tmp-", ".tmp-XYZ", ".trash-", ".trash-00-", ".trash-00-x",
		".trash-00-12345678901", ".deep-0011", "t 1", "t\n1",
		".tmp-00/../x" };
	char	longid[200];
	size_t	i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert(priv_name_valid(good[i]), "%s", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(priv_name_valid(bad[i]), "%s", bad[i]);
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	cr_assert_not(priv_name_valid(longid));
}

/* ---- images through the thread store -------------------------------------- */

Test(priv, a_new_thread_gets_a_mounted_image)
{
	struct yx_priv_usage	u;
	struct yx_thread_disk	d;
	struct statfs		sf;
	struct stat		sb;
	struct yx_thread	t;
	char			p[512];

	NEED_PRIV();
	t = mk("t1");
	tpath(p, sizeof(p), "t1", "user-data");
	cr_assert(is_mount_root(p));
	cr_assert_eq(statfs(p, &sf), 0);
	cr_assert_eq(sf.f_type, EXT4_MAGIC);
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_uid, t.uid);
	cr_assert_eq(sb.st_gid, t.gid);
	/* the layout is inside the image; lost+found is not */
	tpath(p, sizeof(p), "t1", "user-data/workspace");
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_uid, t.uid);
	tpath(p, sizeof(p), "t1", "user-data/lost+found");
	cr_assert_eq(stat(p, &sb), -1);
	/* sparse: the 16 MiB image costs the host little */
	tpath(p, sizeof(p), "t1", YX_PRIV_IMAGE);
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_size, QUOTA);
	cr_assert_eq(sb.st_uid, 0);
	cr_assert_eq(sb.st_mode & 0777, 0600);
	cr_log_info("16 MiB image: %lld bytes on the host after mkfs",
	    (long long)sb.st_blocks * 512);
	cr_assert_lt(sb.st_blocks * 512, 4 << 20);
	cr_assert_eq(yx_thread_disk_usage(&st, "t1", &d), YX_OK);
	cr_assert_eq(d.quota, (uint64_t)QUOTA);
	cr_assert_gt(d.avail, (uint64_t)QUOTA * 8 / 10);
	cr_assert_eq(yx_priv_usage("t1", &u, NULL), YX_OK);
	cr_assert_eq(u.size, d.size);
	cr_assert_eq(loops_below(), 1);
}

Test(priv, writes_stop_at_the_quota_and_work_again_after_rm)
{
	struct yx_broker	b;
	struct yx_errctx	e;
	struct yx_thread	t;
	struct stat		sb;
	char			ud[512], p[600], img[512], *big;
	long long		before, after;

	NEED_PRIV();
	t = mk("t2");
	tpath(ud, sizeof(ud), "t2", "user-data");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_broker_init(&b, ud, NULL, NULL, 0, t.uid, t.gid, NULL,
			 YX_BROKER_OWNED, &e),
	    YX_OK, "%s", e.msg);
	cr_assert(b.quota);
	cr_assert_eq(yx_broker_write(&b, YX_ROOT_USER_DATA, "workspace/keep.txt",
			 "old", 3, false, NULL),
	    YX_OK);
	/* twice the quota through the broker: quota_exceeded, old file kept */
	cr_assert_not_null(big = malloc((size_t)QUOTA * 2));
	memset(big, 'b', (size_t)QUOTA * 2);
	cr_assert_eq(yx_broker_write(&b, YX_ROOT_USER_DATA, "workspace/keep.txt",
			 big, (size_t)QUOTA * 2, true, &e),
	    YX_E_QUOTA_EXCEEDED, "%s", e.msg);
	snprintf(p, sizeof(p), "%s/workspace/keep.txt", ud);
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_size, 3);
	/* no temporary left behind */
	snprintf(p, sizeof(p), "%s/workspace", ud);
	{
		DIR		*d = opendir(p);
		struct dirent	*de;
		int		 n = 0;

		cr_assert_not_null(d);
		while ((de = readdir(d)) != NULL)
			n += de->d_name[0] != '.';
		closedir(d);
		cr_assert_eq(n, 1);
	}
	/* the same from a plain writer (as root: no reserved blocks) */
	snprintf(p, sizeof(p), "%s/workspace/fill", ud);
	cr_assert_eq(fill(p, (size_t)QUOTA * 2), ENOSPC);
	tpath(img, sizeof(img), "t2", YX_PRIV_IMAGE);
	{
		int sfd = open(ud, O_RDONLY | O_DIRECTORY);

		cr_assert_eq(syncfs(sfd), 0);
		close(sfd);
	}
	cr_assert_eq(stat(img, &sb), 0);
	before = (long long)sb.st_blocks * 512;
	/* full: even a megabyte more does not fit, nor leave a temporary */
	cr_assert_eq(yx_broker_write(&b, YX_ROOT_USER_DATA, "workspace/more",
			 big, 1 << 20, false, &e),
	    YX_E_QUOTA_EXCEEDED);
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(yx_broker_write(&b, YX_ROOT_USER_DATA, "workspace/more",
			 big, 1 << 20, false, &e),
	    YX_OK, "%s", e.msg);
	/* discard: the freed blocks leave the sparse image at the commit */
	{
		int64_t t0 = yx_mono_ms();
		int	sfd = open(ud, O_RDONLY | O_DIRECTORY);

		cr_assert_neq(sfd, -1);
		do {
			cr_assert_eq(syncfs(sfd), 0);
			cr_assert_eq(stat(img, &sb), 0);
			after = (long long)sb.st_blocks * 512;
		} while (after >= before / 2 && yx_mono_ms() - t0 < 10000 &&
		    usleep(50000) == 0);
		cr_log_info("image on the host: %lld bytes full, %lld after rm "
			    "(discard, %lld ms)",
		    before, after, (long long)(yx_mono_ms() - t0));
		close(sfd);
	}
	cr_assert_lt(after, before / 2);
	free(big);
	yx_broker_fini(&b);
}

Test(priv, remove_leaves_no_mount_no_loop_no_image)
{
	char p[512];

	NEED_PRIV();
	(void)mk("t3");
	cr_assert_eq(loops_below(), 1);
	cr_assert_eq(yx_thread_remove(&st, "t3", "alice", NULL), YX_OK);
	tpath(p, sizeof(p), "t3", NULL);
	cr_assert_eq(access(p, F_OK), -1);
	cr_assert_eq(loops_gone(), 0);
	{
		char	line[4096];
		FILE	*f = fopen("/proc/self/mountinfo", "r");
		bool	seen = false;

		cr_assert_not_null(f);
		while (fgets(line, sizeof(line), f) != NULL)
			seen |= strstr(line, base) != NULL;
		fclose(f);
		cr_assert_not(seen);
	}
}

Test(priv, a_tombstone_with_a_mount_waits_for_the_sweep)
{
	struct yx_thread	t;
	char			tomb[64], p[512];
	unsigned		left = 0;

	NEED_PRIV();
	(void)mk("t4");
	cr_assert_eq(yx_thread_retire(&st, "t4", "alice", &t, tomb, sizeof(tomb),
			 NULL),
	    YX_OK);
	/* the helper gone: the purge must not descend into the image */
	yx_priv_stop();
	tpath(p, sizeof(p), tomb, "user-data/workspace/keep");
	cr_assert_eq(fill(p, 10), 0);
	cr_assert_eq(yx_thread_purge(&st, &t, tomb, NULL), YX_OK);
	cr_assert_eq(access(p, F_OK), 0, "a removal descended into the image");
	cr_assert_eq(yx_thread_store_sweep_trash(&st, 0, &left), 0u);
	cr_assert_eq(left, 1u);
	cr_assert_eq(access(p, F_OK), 0);
	/* with a helper again, the sweep finishes it */
	cr_assert_eq(priv_start(&cfg, false, NULL), YX_OK);
	cr_assert_eq(yx_thread_store_sweep_trash(&st, 0, &left), 1u);
	cr_assert_eq(left, 0u);
	tpath(p, sizeof(p), tomb, NULL);
	cr_assert_eq(access(p, F_OK), -1);
	cr_assert_eq(loops_gone(), 0);
}

Test(priv, reconcile_mounts_again_after_a_reboot)
{
	struct yx_thread_repair	rep;
	char			ud[512], p[600];

	NEED_PRIV();
	(void)mk("t5");
	tpath(ud, sizeof(ud), "t5", "user-data");
	snprintf(p, sizeof(p), "%s/workspace/keep", ud);
	cr_assert_eq(fill(p, 1000), 0);
	cr_assert_eq(yx_priv_unmount("t5", NULL), YX_OK);
	cr_assert_not(is_mount_root(ud));
	cr_assert_eq(access(p, F_OK), -1);
	cr_assert_eq(loops_gone(), 0);
	yx_thread_store_reconcile(&st, &rep);
	cr_assert_eq(rep.disks_mounted, 1u);
	cr_assert_eq(rep.disks_failed, 0u);
	cr_assert(is_mount_root(ud));
	cr_assert_eq(access(p, F_OK), 0);
	/* idempotent */
	yx_thread_store_reconcile(&st, &rep);
	cr_assert_eq(rep.disks_mounted, 0u);
	cr_assert_eq(yx_priv_mount("t5", NULL), YX_OK);
	cr_assert_eq(loops_below(), 1);
}

/*
 * A filesystem still held after its host mount went (a sandbox's bind)
 * is mounted again from the same loop device: two devices on one image
 * would corrupt it.
 */
Test(priv, a_held_image_is_never_attached_twice)
{
	char	ud[512], p[600], buf[8] = "";
	int	held, fd;

	NEED_PRIV();
	(void)mk("t6");
	tpath(ud, sizeof(ud), "t6", "user-data");
	cr_assert_neq(held = open(ud, O_RDONLY | O_DIRECTORY), -1);
	cr_assert_eq(yx_priv_unmount("t6", NULL), YX_OK);
	cr_assert_not(is_mount_root(ud));
	/* written through the held, detached filesystem */
	cr_assert_neq(fd = openat(held, "workspace/late", O_WRONLY | O_CREAT, 0644), -1);
	cr_assert_eq(write(fd, "late", 4), 4);
	close(fd);
	cr_assert_eq(loops_below(), 1);
	cr_assert_eq(yx_priv_mount("t6", NULL), YX_OK);
	cr_assert_eq(loops_below(), 1);
	snprintf(p, sizeof(p), "%s/workspace/late", ud);
	cr_assert_neq(fd = open(p, O_RDONLY), -1);
	cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 4);
	cr_assert_str_eq(buf, "late");
	close(fd);
	close(held);
}

/* The device a mount reuses is named in the image; a stale name (the
 * device autocleared and taken by another image) is checked, not trusted. */
Test(priv, a_stale_loop_record_is_not_trusted)
{
	char	a[512], b[512], loop_b[32] = "";
	ssize_t	n;

	NEED_PRIV();
	(void)mk("t13");
	(void)mk("t14");
	tpath(a, sizeof(a), "t13", YX_PRIV_IMAGE);
	tpath(b, sizeof(b), "t14", YX_PRIV_IMAGE);
	n = getxattr(b, "trusted.yuxi.loop", loop_b, sizeof(loop_b) - 1);
	cr_assert_gt(n, 4, "no loop record on the image");
	cr_assert_eq(strncmp(loop_b, "loop", 4), 0);
	cr_assert_eq(yx_priv_unmount("t13", NULL), YX_OK);
	/* t13's record now names t14's device */
	cr_assert_eq(setxattr(a, "trusted.yuxi.loop", loop_b, strlen(loop_b), 0), 0);
	cr_assert_eq(yx_priv_mount("t13", NULL), YX_OK);
	cr_assert_eq(loops_below(), 2);
	tpath(a, sizeof(a), "t13", "user-data/workspace");
	tpath(b, sizeof(b), "t14", "user-data/workspace");
	{
		struct stat sa, sb;

		cr_assert_eq(stat(a, &sa), 0);
		cr_assert_eq(stat(b, &sb), 0);
		cr_assert_neq(sa.st_dev, sb.st_dev, "one device for two images");
	}
}

/* ---- what the helper refuses ---------------------------------------------- */

static int
raw(enum priv_op op, const char *name, uint64_t size, unsigned uid)
{
	struct priv_req	rq;
	struct priv_rep	rep;

	memset(&rq, 0, sizeof(rq));
	rq.op = op;
	rq.size = size;
	rq.uid = rq.gid = uid;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	return priv_call(&rq, &rep, NULL);
}

/* A directory outside the store shaped like a thread: user-data, image. */
static void
outside(char *dir, size_t len)
{
	char p[600];

	snprintf(dir, len, "%s/outside", base);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/user-data", dir);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/%s", dir, YX_PRIV_IMAGE);
	cr_assert_eq(fill(p, 20 << 20), 0);
}

Test(priv, names_sizes_and_owners_are_checked_by_the_helper)
{
	char p[512];

	NEED_PRIV();
	tmkdir(p, sizeof(p), "t7", NULL);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "../t7", QUOTA, UID), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_MOUNT, "t7/user-data", 0, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_MOUNT, "..", 0, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_MOUNT, "", 0, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(99, "t7", 0, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t7", QUOTA, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t7", 1 << 20, UID), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t7", (uint64_t)1 << 50, UID),
	    YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_MOUNT, "nosuch", 0, 0), YX_E_NOT_FOUND);
	/* the client refuses the same names before sending */
	cr_assert_eq(yx_priv_mount("../t7", NULL), YX_E_BAD_REQUEST);
	/* twice: the first image stays */
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t7", QUOTA, UID), YX_OK);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t7", QUOTA * 2, UID),
	    YX_E_FILE_EXISTS);
	tpath(p, sizeof(p), "t7", YX_PRIV_IMAGE);
	{
		struct stat sb;

		cr_assert_eq(stat(p, &sb), 0);
		cr_assert_eq(sb.st_size, QUOTA);
	}
	/* a directory others may write is not the service's own */
	tpath(p, sizeof(p), "t7", NULL);
	cr_assert_eq(chmod(p, 0777), 0);
	cr_assert_eq(raw(PRIV_MOUNT, "t7", 0, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(chmod(p, 0755), 0);
	cr_assert_eq(raw(PRIV_REMOVE, "t7", 0, 0), YX_OK);
	tpath(p, sizeof(p), "t7", YX_PRIV_IMAGE);
	cr_assert_eq(access(p, F_OK), -1);
	cr_assert_eq(loops_below(), 0);
}

Test(priv, no_symlink_is_followed)
{
	char	out[512], p[600], q[600];
	int	before;

	NEED_PRIV();
	outside(out, sizeof(out));
	before = loops_below();
	/* a thread directory that is a symlink */
	tpath(p, sizeof(p), "evil", NULL);
	cr_assert_eq(symlink(out, p), 0);
	cr_assert_eq(raw(PRIV_MOUNT, "evil", 0, 0), YX_E_BAD_REQUEST);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "evil", QUOTA, UID), YX_E_BAD_REQUEST);
	/* user-data a symlink to the outside */
	tmkdir(p, sizeof(p), "t8", NULL);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t8", QUOTA, UID), YX_OK);
	snprintf(q, sizeof(q), "%s/user-data", out);
	tpath(p, sizeof(p), "t8", "user-data");
	cr_assert_eq(symlink(q, p), 0);
	cr_assert_neq(raw(PRIV_MOUNT, "t8", 0, 0), YX_OK);
	cr_assert_not(is_mount_root(q));
	/* the image a symlink to an outside file */
	tmkdir(p, sizeof(p), "t9", NULL);
	tmkdir(p, sizeof(p), "t9", "user-data");
	snprintf(q, sizeof(q), "%s/%s", out, YX_PRIV_IMAGE);
	tpath(p, sizeof(p), "t9", YX_PRIV_IMAGE);
	cr_assert_eq(symlink(q, p), 0);
	cr_assert_neq(raw(PRIV_MOUNT, "t9", 0, 0), YX_OK);
	cr_assert_neq(raw(PRIV_CREATE_IMAGE, "t9", QUOTA, UID), YX_OK);
	/* ... or a hardlink of one (two links: not ours alone) */
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(link(q, p), 0);
	cr_assert_neq(raw(PRIV_MOUNT, "t9", 0, 0), YX_OK);
	tpath(p, sizeof(p), "t9", "user-data");
	cr_assert_not(is_mount_root(p));
	cr_assert_eq(loops_below(), before);
	{
		struct stat sb;

		/* the outside file was never formatted nor grown */
		cr_assert_eq(stat(q, &sb), 0);
		cr_assert_eq(sb.st_size, 20 << 20);
	}
}

Test(priv, a_foreign_mount_is_left_alone)
{
	char p[512];

	NEED_PRIV();
	tmkdir(p, sizeof(p), "t10", NULL);
	cr_assert_eq(raw(PRIV_CREATE_IMAGE, "t10", QUOTA, UID), YX_OK);
	tmkdir(p, sizeof(p), "t10", "user-data");
	cr_assert_eq(mount("yxtest", p, "tmpfs", 0, "size=64k"), 0);
	cr_assert_eq(raw(PRIV_MOUNT, "t10", 0, 0), YX_E_BUSY);
	cr_assert_eq(raw(PRIV_UNMOUNT, "t10", 0, 0), YX_E_BUSY);
	cr_assert_eq(raw(PRIV_REMOVE, "t10", 0, 0), YX_E_BUSY);
	cr_assert_eq(raw(PRIV_USAGE, "t10", 0, 0), YX_E_NOT_FOUND);
	cr_assert(is_mount_root(p));
	cr_assert_eq(umount2(p, 0), 0);
	cr_assert_eq(loops_below(), 0);
}

/* ---- the process model ---------------------------------------------------- */

static bool
has_sys_admin(unsigned which)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[_LINUX_CAPABILITY_U32S_3];
	uint32_t			bit = 1U << (CAP_SYS_ADMIN % 32), v;

	memset(d, 0, sizeof(d));
	cr_assert_eq(syscall(SYS_capget, &hdr, d), 0);
	v = which == 0 ? d[CAP_SYS_ADMIN / 32].effective :
	    which == 1 ? d[CAP_SYS_ADMIN / 32].permitted :
			 d[CAP_SYS_ADMIN / 32].inheritable;
	return (v & bit) != 0;
}

Test(priv, the_starter_loses_cap_sys_admin_the_helper_keeps_it)
{
	struct yx_config	c2;
	struct yx_errctx	e;
	char			p[512];

	NEED_PRIV();
	/* this test's own helper, started as the daemon starts it */
	yx_priv_stop();
	c2 = cfg;
	yx_errctx_clear(&e);
	cr_assert(has_sys_admin(0));
	cr_assert_eq(yx_priv_start(&c2, &e), YX_OK, "%s", e.msg);
	/* the starter (the master) keeps it permitted only, to start a new
	 * helper: never effective, never inheritable, out of the bounding set */
	cr_assert_not(has_sys_admin(0));
	cr_assert(has_sys_admin(1));
	cr_assert_not(has_sys_admin(2));
	cr_assert_eq(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0), 0);
	snprintf(p, sizeof(p), "%s/saves", base);
	cr_assert_eq(mount("yxtest", p, "tmpfs", 0, NULL), -1);
	cr_assert_eq(errno, EPERM);
	/* every other child drops it from the permitted set too */
	{
		pid_t	kid;
		int	ws;

		if ((kid = fork()) == 0) {
			yx_priv_child_drop();
			_exit(has_sys_admin(0) || has_sys_admin(1) || has_sys_admin(2) ||
				    mount("yxtest", p, "tmpfs", 0, NULL) == 0 ?
				1 :
				0);
		}
		cr_assert_gt(kid, 0);
		cr_assert_eq(waitpid(kid, &ws, 0), kid);
		cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "a child kept it: 0x%x", ws);
	}
	/* a child forked now cannot either; the helper still mounts */
	(void)mk("t11");
	tpath(p, sizeof(p), "t11", "user-data");
	cr_assert(is_mount_root(p));
	cr_assert_eq(yx_thread_remove(&st, "t11", "alice", NULL), YX_OK);
	cr_assert_not(is_mount_root(p));
	cr_assert_eq(loops_gone(), 0);
}

Test(priv, without_the_helper_requests_fail_fast_and_creation_leaves_nothing)
{
	struct yx_thread	w, t;
	struct yx_errctx	e;
	struct dirent		*de;
	DIR			*d;
	bool			created;
	char			p[512];
	int64_t			t0;
	int			n = 0;

	NEED_PRIV();
	yx_priv_stop();
	memset(&w, 0, sizeof(w));
	snprintf(w.thread_id, sizeof(w.thread_id), "t12");
	snprintf(w.owner, sizeof(w.owner), "alice");
	t0 = yx_mono_ms();
	yx_errctx_clear(&e);
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, &e),
	    YX_E_BACKEND_UNAVAILABLE);
	cr_assert_lt(yx_mono_ms() - t0, 2000);
	cr_assert_null(strstr(e.msg, base), "host path in %s", e.msg);
	snprintf(p, sizeof(p), "%s/saves/threads", base);
	cr_assert_not_null(d = opendir(p));
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	cr_assert_eq(n, 0);
	cr_assert_eq(yx_priv_mount("t12", NULL), YX_E_BACKEND_UNAVAILABLE);
}

/* Is pid a live process (not gone, not a zombie)? */
static bool
alive(pid_t pid)
{
	char	path[64], buf[512], *rp;
	FILE	*f;
	bool	yes = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) != NULL && (rp = strrchr(buf, ')')) != NULL)
		yes = rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
	fclose(f);
	return yes;
}

Test(priv, the_helper_dies_with_its_master)
{
	pid_t	child, helper = 0;
	int	pfd[2], ws;

	NEED_PRIV();
	cr_assert_eq(pipe(pfd), 0);
	if ((child = fork()) == 0) {
		struct yx_config c2 = cfg;

		yx_priv_stop();
		if (priv_start(&c2, false, NULL) != YX_OK)
			_exit(1);
		/* the helper is this process's only child */
		{
			char	path[64], buf[4096];
			FILE	*f;
			pid_t	h = 0;

			snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
			    (int)getpid(), (int)getpid());
			if ((f = fopen(path, "r")) != NULL) {
				if (fgets(buf, sizeof(buf), f) != NULL)
					h = (pid_t)atoi(buf);
				fclose(f);
			}
			(void)!write(pfd[1], &h, sizeof(h));
		}
		_exit(0);	/* SIGKILL-like: no yx_priv_stop */
	}
	close(pfd[1]);
	cr_assert_eq(read(pfd[0], &helper, sizeof(helper)), (ssize_t)sizeof(helper));
	close(pfd[0]);
	cr_assert_gt(helper, 0);
	cr_assert_eq(waitpid(child, &ws, 0), child);
	{
		int64_t deadline = yx_mono_ms() + 5000;

		while (alive(helper) && yx_mono_ms() < deadline)
			usleep(10000);
		cr_assert_not(alive(helper), "helper %d outlived its master",
		    (int)helper);
	}
}

/*
 * A host that cannot give a loop device (here: a mount namespace of the
 * test's own whose /dev holds /dev/loop-control but no loop device node,
 * as in a container without devtmpfs; on a host that ran out the kernel
 * answers LOOP_CTL_GET_FREE with an error): a new thread's creation fails
 * as "no room" (507 through the API), naming the loop device, and leaves
 * neither a thread directory, an image nor a uid claim behind.
 */
Test(loops, no_loop_device_is_a_clear_error_and_leaves_nothing)
{
	struct yx_thread	w, t;
	struct yx_errctx	e;
	struct dirent		*de;
	DIR			*d;
	bool			created;
	char			p[512];
	int			n = 0;

	NEED_PRIV();
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "%s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	cr_assert_eq(mount("yx-nodev", "/dev", "tmpfs", MS_NOSUID, "mode=0755"), 0);
	cr_assert_eq(mknod("/dev/loop-control", S_IFCHR | 0600, makedev(10, 237)), 0);
	cr_assert_eq(mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3)), 0);
	storetest_open("yx-priv-noloop", base, sizeof(base), &cfg, &st);
	cfg.thread_disk_quota = QUOTA;
	st.disk_quota = QUOTA;
	yx_errctx_clear(&e);
	cr_assert_eq(priv_start(&cfg, false, &e), YX_OK, "%s", e.msg);
	memset(&w, 0, sizeof(w));
	snprintf(w.thread_id, sizeof(w.thread_id), "t13");
	snprintf(w.owner, sizeof(w.owner), "alice");
	yx_errctx_clear(&e);
	cr_assert_eq(yx_thread_create(&st, &w, &t, &created, &e), YX_E_NOSPACE,
	    "%s", e.msg);
	cr_assert_eq(yx_err_http_status(YX_E_NOSPACE), 507);
	cr_assert_not_null(strstr(e.msg, "loop device"), "%s", e.msg);
	cr_assert_null(strstr(e.msg, base), "host path in %s", e.msg);
	snprintf(p, sizeof(p), "%s/saves/threads", base);
	cr_assert_not_null(d = opendir(p));
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	cr_assert_eq(n, 0, "thread directories left");
	snprintf(p, sizeof(p), "%s/saves/uids", base);
	n = 0;
	if ((d = opendir(p)) != NULL) {
		while ((de = readdir(d)) != NULL)
			n += de->d_name[0] != '.';
		closedir(d);
	}
	cr_assert_eq(n, 0, "uid claims left");
	cr_assert_eq(loops_gone(), 0);
	storetest_priv_close(base, &st);
}

/*
 * What the defaults settle against (yx_priv_probe): here, root with loop
 * devices, both protections; the quota only when the mkfs of the images'
 * filesystem is there. In a mount namespace of the process's own
 * (systemd's PrivateMounts=), neither, the reason named: its mounts would
 * never reach the engine's sandboxes (checked where init's namespace can
 * be read; where it cannot, the probe takes the process's to be it).
 */
Test(probe, what_the_host_gives)
{
	char		why[256], init[64];
	unsigned	can;

	NEED_PRIV();
	can = yx_priv_probe(YX_DISK_FS_EXT4, why, sizeof(why));
	if (!(can & YX_PROTECT_POOL))
		cr_skip_test("no pool on this host: %s", why);
	cr_expect_eq(can, access(YX_MKE2FS, X_OK) == 0 ? YX_PROTECT_ALL : YX_PROTECT_POOL,
	    "%u: %s", can, why);
	can = yx_priv_probe(YX_DISK_FS_BTRFS, why, sizeof(why));
	if (access(YX_MKFS_BTRFS, X_OK) == 0)
		cr_expect_eq(can, YX_PROTECT_ALL, "%u: %s", can, why);
	else {
		cr_expect_eq(can, YX_PROTECT_POOL, "%u", can);
		cr_expect_not_null(strstr(why, "mkfs.btrfs"), "%s", why);
	}
	if (readlink("/proc/1/ns/mnt", init, sizeof(init)) <= 0)
		return;
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "%s", strerror(errno));
	can = yx_priv_probe(YX_DISK_FS_EXT4, why, sizeof(why));
	cr_expect_eq(can, 0u);
	cr_expect_not_null(strstr(why, "mount namespace"), "%s", why);
}
