/* SPDX-License-Identifier: MIT */
/*
 * threads_uids.c - the uid claims of the thread store (docs/design.md §2,
 * "Uids"): with a uid range, <saves>/uids/<uid> is a symlink naming what
 * holds the uid - a thread id, a tombstone (the thread's files are still on
 * disk), a pool box ("<box>"), or a box assigned to a thread
 * ("<box>/<thread>"). A symlinkat() that fails with EEXIST is the lock; a
 * claim is moved by a temporary symlink renamed over it.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yuxi/fdio.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "yuxi/replace.h"
#include "yuxi/threads.h"
#include "threads/threads_int.h"

#define YX_UID_CURSOR	".cursor"	/* where the last allocation ended */

/*
 * May this process give files to other uids (docs/design.md §8)? Root, or
 * a service user holding CAP_CHOWN in its effective set (the packaged
 * daemon: AmbientCapabilities in its unit).
 */
bool
threads_may_chown(void)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	data[_LINUX_CAPABILITY_U32S_3];

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data) == -1)
		return false;
	return (data[CAP_CHOWN / 32].effective & (1U << (CAP_CHOWN % 32))) != 0;
}

/* ---- uids: one per thread from the configured range -------------------- */

/* Where the last allocation ended (uids/.cursor), uid_base when unknown. */
static unsigned
thread_uid_cursor(struct yx_thread_store *st)
{
	char		buf[24];
	unsigned long	v;
	int		fd;

	fd = openat(st->uidfd, YX_UID_CURSOR, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd == -1 || yx_fd_read_str(fd, buf, sizeof(buf)) == -1)
		return st->uid_base;
	v = strtoul(buf, NULL, 10);
	if (v < st->uid_base || v - st->uid_base >= st->uid_count)
		return st->uid_base;
	return (unsigned)v;
}

/* Remember `next` as the cursor (yx_replace_at; racing writers are fine).
 * Not synced: a cursor lost or torn in a crash reads as uid_base. */
static void
thread_uid_cursor_set(struct yx_thread_store *st, unsigned next)
{
	char			buf[24];
	struct yx_replace	r = { .data = buf, .mode = 0600, .flags = YX_REPLACE_HINT };

	r.len = (size_t)snprintf(buf, sizeof(buf), "%u\n", next);
	(void)yx_replace_at(st->uidfd, YX_UID_CURSOR, &r);
}

/*
 * Claim a free uid of the range for thread id: the first uids/<n> that a
 * symlinkat() can create, from the cursor on. YX_OK with *uid;
 * YX_E_CAPACITY when every uid is taken; errno-mapped errors.
 */
static int
thread_uid_alloc(struct yx_thread_store *st, const char *id, unsigned *uid)
{
	char		name[16];
	unsigned	start = thread_uid_cursor(st) - st->uid_base, i, u;

	for (i = 0; i < st->uid_count; i++) {
		u = st->uid_base + (unsigned)(((uint64_t)start + i) % st->uid_count);
		snprintf(name, sizeof(name), "%u", u);
		if (symlinkat(id, st->uidfd, name) == 0) {
			thread_uid_cursor_set(st,
			    u + 1 - st->uid_base < st->uid_count ? u + 1 : st->uid_base);
			*uid = u;
			return YX_OK;
		}
		if (errno != EEXIST)
			return yx_err_from_errno(errno);
	}
	return YX_E_CAPACITY;
}

/* Free the claim of t's uid if it is still t's. */
void
thread_uid_free(struct yx_thread_store *st, const struct yx_thread *t)
{
	char	name[16], target[sizeof(t->thread_id) + 1];
	ssize_t	n;

	if (st->uidfd == -1 || !t->own_uid)
		return;
	snprintf(name, sizeof(name), "%u", t->uid);
	n = readlinkat(st->uidfd, name, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	if (strcmp(target, t->thread_id) == 0)
		(void)unlinkat(st->uidfd, name, 0);
}

/* Point the claim uids/<uid> at target: a temporary symlink renamed over
 * it (yx_replace_at). YX_OK or errno-mapped. */
static int
thread_uid_relink(int uidfd, unsigned uid, const char *target)
{
	char name[16];

	snprintf(name, sizeof(name), "%u", uid);
	return yx_replace_at(uidfd, name, &(struct yx_replace){ .link = target });
}

/*
 * Point t's uid claim at its tombstone (temp link renamed over the claim):
 * files the uid owns are still on disk, so the uid must not go to another
 * thread before the sweep removed them (thread_sweep frees it then).
 */
void
thread_uid_hand(struct yx_thread_store *st, const struct yx_thread *t,
    const char *tomb)
{
	if (st->uidfd == -1 || !t->own_uid)
		return;
	if (thread_uid_relink(st->uidfd, t->uid, tomb) != YX_OK)
		log_warn("uid %u: cannot hand the claim to %s", t->uid, tomb);
}

/* After tombstone `tomb` is gone: free the uid claim handed to it. */
void
thread_uid_release_tomb(struct yx_thread_store *st, const char *tomb)
{
	const char	*u = strrchr(tomb, '-');
	char		 target[80];
	ssize_t		 n;

	if (st->uidfd == -1 || u == NULL || strspn(u + 1, "0123456789") != strlen(u + 1) || u[1] == '\0')
		return;
	n = readlinkat(st->uidfd, u + 1, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	if (strcmp(target, tomb) == 0)
		(void)unlinkat(st->uidfd, u + 1, 0);
}

/* Give thread `t` (being created) its uid: its own, or the shared user. */
int
thread_uid_assign(struct yx_thread_store *st, struct yx_thread *t)
{
	int rc;

	t->uid = st->uid;
	t->gid = st->gid;
	t->own_uid = false;
	if (st->uidfd == -1 || st->uid_count == 0)
		return YX_OK;
	if ((rc = thread_uid_alloc(st, t->thread_id, &t->uid)) != YX_OK)
		return rc;
	t->gid = t->uid;
	t->own_uid = true;
	return YX_OK;
}

/* ---- uids of pool boxes (docs/design.md §2 "Pool", Uids) -------------- */

/* <saves>/uids of cfg as a store with only the range: *st for the calls
 * above. YX_OK; YX_E_NOT_FOUND without a range (none configured, or the
 * service could not chown and never made the directory). */
static int
thread_uid_store(const struct yx_config *cfg, struct yx_thread_store *st)
{
	char path[YX_CFG_PATH + 8];

	memset(st, 0, sizeof(*st));
	st->dirfd = st->ownfd = st->runfd = st->uidfd = -1;
	st->uid_base = cfg->uid_base;
	st->uid_count = cfg->uid_count;
	/* as yx_thread_store_init: no range without the means to chown */
	if (cfg->uid_count == 0 || !threads_may_chown())
		return YX_E_NOT_FOUND;
	snprintf(path, sizeof(path), "%s/uids", cfg->saves_dir);
	st->uidfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (st->uidfd == -1)
		return errno == ENOENT ? YX_E_NOT_FOUND : yx_err_from_errno(errno);
	return YX_OK;
}

int
yx_uid_claim_box(const struct yx_config *cfg, const char *box, unsigned *uid)
{
	struct yx_thread_store	st;
	int			rc;

	if ((rc = thread_uid_store(cfg, &st)) == YX_OK) {
		rc = thread_uid_alloc(&st, box, uid);
		close(st.uidfd);
	}
	return rc;
}

/* uids/<uid>'s target into buf; its length, or -1. */
static ssize_t
thread_uid_target(int uidfd, unsigned uid, char *buf, size_t len)
{
	char	name[16];
	ssize_t	n;

	snprintf(name, sizeof(name), "%u", uid);
	if ((n = readlinkat(uidfd, name, buf, len - 1)) <= 0 ||
	    (size_t)n >= len - 1)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Does target name box: "<box>" or "<box>/<thread>"? */
static bool
thread_uid_is_box(const char *target, const char *box)
{
	size_t n = strlen(box);

	return strncmp(target, box, n) == 0 &&
	    (target[n] == '\0' || target[n] == '/');
}

int
yx_uid_tag_box(const struct yx_config *cfg, unsigned uid, const char *box,
    const char *thread_id)
{
	struct yx_thread_store	st;
	char			target[YX_THREAD_ID_SIZE + 64];
	int			rc;

	if ((rc = thread_uid_store(cfg, &st)) != YX_OK)
		return rc;
	rc = YX_E_NOT_FOUND;
	if (thread_uid_target(st.uidfd, uid, target, sizeof(target)) < 0 ||
	    !thread_uid_is_box(target, box))
		goto done;
	snprintf(target, sizeof(target), "%s/%s", box, thread_id);
	rc = thread_uid_relink(st.uidfd, uid, target);
done:
	close(st.uidfd);
	return rc;
}

/* Every claim of box in uids/ (a box that died before its uid file). */
static void
thread_uid_release_scan(int uidfd, const char *box)
{
	char		 target[YX_THREAD_ID_SIZE + 64];
	struct dirent	*de;
	DIR		*d;
	ssize_t		 n;
	int		 fd;

	if ((fd = openat(uidfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		if (n <= 0 || (size_t)n >= sizeof(target) - 1)
			continue;
		target[n] = '\0';
		if (thread_uid_is_box(target, box))
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

void
yx_uid_release_box(const struct yx_config *cfg, unsigned uid, const char *box)
{
	struct yx_thread_store	st;
	char			target[YX_THREAD_ID_SIZE + 64], name[16];
	int			rc;

	if ((rc = thread_uid_store(cfg, &st)) != YX_OK) {
		if (rc != YX_E_NOT_FOUND)
			log_warnx("pool box %s: uid claims: %s", box,
			    yx_strerror(rc));
		return;
	}
	snprintf(name, sizeof(name), "%u", uid);
	if (uid != 0 &&
	    thread_uid_target(st.uidfd, uid, target, sizeof(target)) >= 0 &&
	    thread_uid_is_box(target, box)) {
		if (unlinkat(st.uidfd, name, 0) == -1 && errno != ENOENT)
			log_warn("pool box %s: uid %u not freed", box, uid);
	} else	/* no uid file, or it names another's claim: look */
		thread_uid_release_scan(st.uidfd, box);
	close(st.uidfd);
}

bool
yx_uid_serves(const char *saves_dir, unsigned uid, const char *thread_id)
{
	char	path[YX_CFG_PATH + 32], target[YX_THREAD_ID_SIZE + 64];
	char	*slash;
	ssize_t	n;

	snprintf(path, sizeof(path), "%s/uids/%u", saves_dir, uid);
	if ((n = readlink(path, target, sizeof(target) - 1)) <= 0 ||
	    (size_t)n >= sizeof(target) - 1)
		return false;
	target[n] = '\0';
	if ((slash = strchr(target, '/')) == NULL)
		return false;
	return yx_priv_box_name(target, (size_t)(slash - target)) &&
	    strcmp(slash + 1, thread_id) == 0;
}

/* Is target the claim of a pool box whose directory is still there? */
bool
thread_uid_box_left(struct yx_thread_store *st, const char *target)
{
	size_t	n = strcspn(target, "/");
	char	rel[64];

	if (!yx_priv_box_name(target, n))
		return false;
	snprintf(rel, sizeof(rel), "../%s/%.*s", YX_PRIV_POOL_DIR, (int)n, target);
	return faccessat(st->dirfd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}
