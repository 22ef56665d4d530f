/* SPDX-License-Identifier: MIT */
/*
 * threads_snap.c - a thread's snapshots (docs/api.md "Snapshots";
 * include/yuxi/threads.h): their records, the per-thread maximum, the
 * thread's transaction lock, and the copy of a snapshot into a new thread
 * (fork). The snapshots themselves are btrfs subvolumes the privileged
 * helper makes, restores and deletes (src/priv/priv_snap.c); a record
 * <thread>/snaps/<sid> (JSON: the caller's name, the creation time) is
 * written before the snapshot and removed after it, so a crash between
 * leaves at most a record without a snapshot, which listings skip and
 * drop.
 *
 * The fork's copy reads the source snapshot (read-only: no sandbox can
 * reach or change it) and writes the new thread's user-data (no sandbox
 * of it runs yet) by descriptor, never following a symlink
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
 * O_NOFOLLOW, types checked on the descriptor); files become the new
 * thread's uid. Hard links are copied as separate files; sockets and
 * devices are skipped.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "yuxi/clock.h"
#include "yuxi/fdio.h"
#include "yuxi/ident.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "yuxi/text.h"
#include "yuxi/tree.h"
#include "threads/threads_int.h"
#include "common/control_int.h"

#define SNAP_RECS	"snaps"
#define SNAP_LOCK	"tx.lock"
#define SNAP_DEPTH_MAX	256	/* directories deep a fork copies */

/* openat2 beneath dirfd without symlinks; xdev: may cross a mount. */
static int
snap_openat(int dirfd, const char *name, int flags, mode_t mode, bool xdev)
{
	/* control: the naive open, symlinks followed */
	if (YX_CONTROL_OFF("snapcopy"))
		return openat(dirfd, name, flags | O_CLOEXEC, mode);
	return yx_openat_beneath(dirfd, name, flags, mode, xdev);
}

/*
 * The directory of thread t (O_PATH), checked to be t's still: with its
 * own uid, its user-data must belong to that uid (a thread deleted and
 * made again under the id since has another). fd or -1 (not found).
 */
static int
snap_tdir(struct yx_thread_store *st, const struct yx_thread *t)
{
	struct stat	sb;
	int		fd;

	if (!yx_thread_id_valid(t->thread_id, strlen(t->thread_id)))
		return -1;
	fd = openat(st->dirfd, t->thread_id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (t->own_uid && (fstatat(fd, "user-data", &sb, AT_SYMLINK_NOFOLLOW) == -1 || sb.st_uid != t->uid)) {
		close(fd);
		return -1;
	}
	return fd;
}

int
yx_thread_txlock(struct yx_thread_store *st, const struct yx_thread *t, int *fdp,
    struct yx_errctx *err)
{
	int tfd, fd;

	*fdp = -1;
	if ((tfd = snap_tdir(st, t)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	fd = openat(tfd, SNAP_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(tfd);
	if (fd == -1)
		return yx_fail(err, yx_err_from_errno(errno), "transaction lock");
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		close(fd);
		return yx_fail(err, YX_E_THREAD_BUSY,
		    "a transaction or a restore of this thread is in progress");
	}
	*fdp = fd;
	return YX_OK;
}

/* The records' directory of tfd (made when absent), or -1. */
static int
snap_recdir(int tfd)
{
	if (mkdirat(tfd, SNAP_RECS, 0700) == -1 && errno != EEXIST)
		return -1;
	return snap_openat(tfd, SNAP_RECS, O_RDONLY | O_DIRECTORY, 0, false);
}

/* Read record sid of rdir into s (name, created). 0 or -1. */
static int
snap_rec_read(int rdir, const char *sid, struct yx_thread_snap *s)
{
	struct json_object	*o = NULL, *v;
	char			 buf[1024];
	int			 fd, rc = -1;

	if ((fd = snap_openat(rdir, sid, O_RDONLY, 0, false)) == -1 ||
	    yx_fd_read_str(fd, buf, sizeof(buf)) == -1)
		return -1;
	if ((o = json_tokener_parse(buf)) == NULL || !json_object_is_type(o, json_type_object))
		goto done;
	snprintf(s->id, sizeof(s->id), "%s", sid);
	if (json_object_object_get_ex(o, "name", &v) && json_object_is_type(v, json_type_string))
		snprintf(s->name, sizeof(s->name), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "created_ms", &v))
		s->created_ms = json_object_get_int64(v);
	rc = 0;
done:
	json_object_put(o);
	return rc;
}

/* Write record s into rdir, durably. YX_OK or errno-mapped. */
static int
snap_rec_write(int rdir, const struct yx_thread_snap *s)
{
	struct json_object	*o;
	const char		*txt;
	int			 fd, rc = YX_OK;

	if ((o = json_object_new_object()) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "created_ms", json_object_new_int64(s->created_ms));
	txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	fd = snap_openat(rdir, s->id, O_WRONLY | O_CREAT | O_EXCL, 0600, false);
	if (fd == -1 || write(fd, txt, strlen(txt)) != (ssize_t)strlen(txt) ||
	    fsync(fd) == -1)
		rc = yx_err_from_errno(errno);
	if (fd != -1)
		close(fd);
	json_object_put(o);
	return rc;
}

/* The helper's ids of thread `id` into buf; YX_OK or its error. */
static int
snap_ids(const char *id, char *buf, size_t len, struct yx_errctx *err)
{
	return yx_priv_snap_list(id, buf, len, err);
}

/* How many lines (ids) in buf. */
static size_t
snap_count(const char *buf)
{
	size_t n = 0;

	for (; *buf != '\0'; buf++)
		n += *buf == '\n';
	return n;
}

int
yx_thread_snap_create(struct yx_thread_store *st, const struct yx_thread *t,
    const char *name, int max, struct yx_thread_snap *out, struct yx_errctx *err)
{
	struct yx_priv_snap	 ps;
	char			*ids = NULL;
	int			 tfd = -1, rdir = -1, rc;

	memset(out, 0, sizeof(*out));
	if (name != NULL && (strlen(name) >= sizeof(out->name) || !yx_utf8_valid(name, strlen(name)) || strpbrk(name, "\n\r\t") != NULL))
		return yx_fail(err, YX_E_BAD_REQUEST,
		    "name must be UTF-8 text of at most 128 bytes");
	if ((tfd = snap_tdir(st, t)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	if ((ids = malloc(YX_PRIV_SNAP_LIST)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	if ((rdir = snap_recdir(tfd)) == -1 || flock(rdir, LOCK_EX) == -1) {
		rc = yx_fail(err, yx_err_from_errno(errno), "snapshot records");
		goto done;
	}
	if ((rc = snap_ids(t->thread_id, ids, YX_PRIV_SNAP_LIST, err)) != YX_OK)
		goto done;
	if ((int)snap_count(ids) >= max) {
		rc = yx_fail(err, YX_E_SNAPSHOT_LIMIT,
		    "the thread has %d snapshots, the most it may keep "
		    "(YUXI_THREAD_SNAPSHOTS_MAX): delete one first",
		    max);
		goto done;
	}
	yx_hidden_name(out->id, sizeof(out->id), "s");
	snprintf(out->name, sizeof(out->name), "%s", name != NULL ? name : "");
	out->created_ms = yx_now_ms();
	if ((rc = snap_rec_write(rdir, out)) != YX_OK) {
		(void)yx_fail(err, rc, "snapshot record");
		goto done;
	}
	if ((rc = yx_priv_snap_create(t->thread_id, out->id, &ps, err)) != YX_OK) {
		(void)unlinkat(rdir, out->id, 0);
		goto done;
	}
	out->size_bytes = ps.excl;
done:
	if (rdir != -1)
		close(rdir);
	if (tfd != -1)
		close(tfd);
	free(ids);
	return rc;
}

int
yx_thread_snap_get(struct yx_thread_store *st, const struct yx_thread *t,
    const char *sid, struct yx_thread_snap *out, struct yx_errctx *err)
{
	struct yx_priv_snap	ps;
	int			tfd, rdir = -1, rc;

	memset(out, 0, sizeof(*out));
	if (!yx_priv_snap_id_valid(sid))
		return yx_fail(err, YX_E_NOT_FOUND, "no such snapshot");
	if ((tfd = snap_tdir(st, t)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	if ((rdir = snap_recdir(tfd)) == -1 || snap_rec_read(rdir, sid, out) == -1) {
		rc = yx_fail(err, YX_E_NOT_FOUND, "no such snapshot");
		goto done;
	}
	if ((rc = yx_priv_snap_info(t->thread_id, sid, &ps, err)) != YX_OK) {
		if (rc == YX_E_NOT_FOUND)
			(void)yx_fail(err, rc, "no such snapshot");
		goto done;
	}
	out->size_bytes = ps.excl;
done:
	if (rdir != -1)
		close(rdir);
	close(tfd);
	return rc;
}

/* Newest first. */
static int
snap_cmp(const void *a, const void *b)
{
	const struct yx_thread_snap *x = a, *y = b;

	return x->created_ms < y->created_ms ? 1 : x->created_ms > y->created_ms ? -1 :
										   strcmp(x->id, y->id);
}

int
yx_thread_snap_list(struct yx_thread_store *st, const struct yx_thread *t,
    struct yx_thread_snap **vp, size_t *np, struct yx_errctx *err)
{
	struct yx_thread_snap	*v = NULL;
	struct dirent		*de;
	DIR			*d = NULL;
	char			*ids = NULL, *p, *nl;
	size_t			 n = 0, cap;
	int			 tfd, rdir = -1, rc = YX_OK;

	*vp = NULL;
	*np = 0;
	if ((tfd = snap_tdir(st, t)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	if ((ids = malloc(YX_PRIV_SNAP_LIST)) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	if ((rc = snap_ids(t->thread_id, ids, YX_PRIV_SNAP_LIST, err)) != YX_OK) {
		if (rc == YX_E_UNSUPPORTED) {	/* none: an empty list */
			rc = YX_OK;
			ids[0] = '\0';
		} else
			goto done;
	}
	cap = snap_count(ids) + 1;
	if ((v = calloc(cap, sizeof(*v))) == NULL) {
		rc = yx_fail(err, YX_E_NOMEM, NULL);
		goto done;
	}
	rdir = snap_recdir(tfd);
	for (p = ids; rdir != -1 && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		struct yx_priv_snap ps;

		*nl = '\0';
		if (snap_rec_read(rdir, p, &v[n]) == -1)
			continue;	/* its record is written first: a crash */
		if (yx_priv_snap_info(t->thread_id, p, &ps, NULL) == YX_OK)
			v[n].size_bytes = ps.excl;
		n++;
	}
	/* records without a snapshot: a create that did not finish */
	if (rdir != -1 && (d = fdopendir(dup(rdir))) != NULL) {
		while ((de = readdir(d)) != NULL) {
			size_t i;

			if (!yx_priv_snap_id_valid(de->d_name))
				continue;
			for (i = 0; i < n && strcmp(v[i].id, de->d_name) != 0; i++)
				;
			if (i == n && strstr(ids, de->d_name) == NULL &&
			    flock(rdir, LOCK_EX | LOCK_NB) == 0) {
				(void)unlinkat(rdir, de->d_name, 0);
				(void)flock(rdir, LOCK_UN);
			}
		}
		closedir(d);
	}
	qsort(v, n, sizeof(*v), snap_cmp);
	*vp = v;
	*np = n;
	v = NULL;
done:
	free(v);
	free(ids);
	if (rdir != -1)
		close(rdir);
	close(tfd);
	return rc;
}

int
yx_thread_snap_delete(struct yx_thread_store *st, const struct yx_thread *t,
    const char *sid, struct yx_errctx *err)
{
	struct yx_thread_snap	s;
	int			tfd, rdir = -1, rc;

	if ((rc = yx_thread_snap_get(st, t, sid, &s, err)) != YX_OK)
		return rc;
	if ((tfd = snap_tdir(st, t)) == -1)
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	if ((rc = yx_priv_snap_delete(t->thread_id, sid, err)) == YX_OK &&
	    (rdir = snap_recdir(tfd)) != -1)
		(void)unlinkat(rdir, sid, 0);
	if (rdir != -1)
		close(rdir);
	close(tfd);
	return rc;
}

int
yx_thread_snap_restore(struct yx_thread_store *st, const struct yx_thread *t,
    const char *sid, struct yx_errctx *err)
{
	struct yx_thread_snap	s;
	int			rc;

	if ((rc = yx_thread_snap_get(st, t, sid, &s, err)) != YX_OK)
		return rc;
	return yx_priv_snap_restore(t->thread_id, sid, err);
}

/* Does thread directory tfd hold a transaction's journal or layer? */
static bool
snap_tx_left(int tfd)
{
	static const char *const marks[] = { YX_PRIV_TXDIR "/journal", YX_PRIV_TXDIR "/upper",
		YX_PRIV_VOL "/" YX_PRIV_TXDIR "/journal", YX_PRIV_VOL "/" YX_PRIV_TXDIR "/upper" };
	struct stat	sb;
	size_t		i;

	for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (fstatat(tfd, marks[i], &sb, AT_SYMLINK_NOFOLLOW) == 0)
			return true;
	return false;
}

unsigned
yx_thread_tx_left(struct yx_thread_store *st, void (*fn)(void *, const char *),
    void *arg)
{
	struct dirent	*de;
	DIR		*d;
	unsigned	 n = 0;
	size_t		 scanned = 0;
	int		 fd, tfd;

	if ((fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL && scanned++ < YX_THREADS_SCAN_MAX) {
		if (!yx_thread_id_valid(de->d_name, strlen(de->d_name)))
			continue;
		tfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (tfd == -1)
			continue;
		if (snap_tx_left(tfd)) {
			fn(arg, de->d_name);
			n++;
		}
		close(tfd);
	}
	closedir(d);
	return n;
}

/* ---- fork: copy a snapshot's tree into a new thread's user-data ------------ */

struct snap_copy {
	unsigned	uid, gid;	/* the new thread's */
	uint64_t	files;
	int		en;		/* the first errno that stopped it */
};

/* Copy regular file name of sd into dd. */
static int
snap_copy_file(int sd, int dd, const char *name, const struct stat *sb,
    struct snap_copy *c)
{
	struct stat	st;
	int		in, out = -1, rc = -1;
	ssize_t		k;

	if ((in = snap_openat(sd, name, O_RDONLY | O_NONBLOCK, 0, false)) == -1)
		return -1;
	if (fstat(in, &st) == -1 || !S_ISREG(st.st_mode))
		goto done;
	if ((out = snap_openat(dd, name, O_WRONLY | O_CREAT | O_EXCL, 0600, false)) == -1)
		goto done;
	do
		k = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
	while (k > 0);
	if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP)) {
		/* another filesystem (each image is its own): plain copy */
		char buf[65536];

		while ((k = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)k) != k) {
				k = -1;
				break;
			}
	}
	if (k < 0)
		goto done;
	if (fchown(out, c->uid, c->gid) == -1 || fchmod(out, sb->st_mode & 01777) == -1)
		goto done;
	{
		struct timespec ts[2] = { sb->st_atim, sb->st_mtim };

		(void)futimens(out, ts);
	}
	c->files++;
	rc = 0;
done:
	if (rc == -1 && c->en == 0)
		c->en = errno != 0 ? errno : EIO;
	if (out != -1)
		close(out);
	close(in);
	return rc;
}

/* Copy the directory sd's entries into dd, depth levels deep so far. */
static int
snap_copy_dir(int sd, int dd, int depth, struct snap_copy *c)
{
	struct dirent	*de;
	struct stat	 sb;
	DIR		*d;
	char		 link[PATH_MAX];
	ssize_t		 n;
	int		 fd, s2, d2, rc = 0;

	if (depth > SNAP_DEPTH_MAX) {
		c->en = ELOOP;
		return -1;
	}
	if ((fd = dup(sd)) == -1 || (d = fdopendir(fd)) == NULL) {
		c->en = errno;
		if (fd != -1)
			close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(sd, de->d_name, &sb,
			YX_CONTROL_OFF("snapcopy") ? 0 : AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (S_ISREG(sb.st_mode))
			rc = snap_copy_file(sd, dd, de->d_name, &sb, c);
		else if (S_ISLNK(sb.st_mode)) {
			if ((n = readlinkat(sd, de->d_name, link, sizeof(link) - 1)) < 0)
				continue;
			link[n] = '\0';
			if (symlinkat(link, dd, de->d_name) == -1 ||
			    fchownat(dd, de->d_name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) == -1)
				rc = -1;
		} else if (S_ISFIFO(sb.st_mode)) {
			if (mkfifoat(dd, de->d_name, sb.st_mode & 0777) == -1 ||
			    fchownat(dd, de->d_name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) == -1)
				rc = -1;
		} else if (S_ISDIR(sb.st_mode)) {
			s2 = d2 = -1;
			/* the new thread's layout folders are there already */
			if ((mkdirat(dd, de->d_name, 0700) == -1 && errno != EEXIST) ||
			    (s2 = snap_openat(sd, de->d_name, O_RDONLY | O_DIRECTORY, 0, false)) ==
				-1 ||
			    (d2 = snap_openat(dd, de->d_name, O_RDONLY | O_DIRECTORY, 0, false)) ==
				-1 ||
			    snap_copy_dir(s2, d2, depth + 1, c) == -1 ||
			    fchown(d2, c->uid, c->gid) == -1 ||
			    fchmod(d2, sb.st_mode & 01777) == -1)
				rc = -1;
			if (s2 != -1)
				close(s2);
			if (d2 != -1)
				close(d2);
		}
		if (rc == -1 && c->en == 0)
			c->en = errno != 0 ? errno : EIO;
	}
	closedir(d);
	return rc;
}

int
yx_thread_snap_copy(struct yx_thread_store *st, const struct yx_thread *src,
    const char *sid, const struct yx_thread *dst, struct yx_errctx *err)
{
	struct snap_copy	c;
	char			rel[64];
	int			stfd = -1, dtfd = -1, vol = -1, sd = -1, dd = -1, rc;

	memset(&c, 0, sizeof(c));
	c.uid = dst->uid;
	c.gid = dst->gid;
	if (!yx_priv_snap_id_valid(sid))
		return yx_fail(err, YX_E_NOT_FOUND, "no such snapshot");
	snprintf(rel, sizeof(rel), "snap/%s", sid);
	if ((stfd = snap_tdir(st, src)) == -1 || (dtfd = snap_tdir(st, dst)) == -1) {
		rc = yx_fail(err, YX_E_NOT_FOUND, "thread not found");
		goto done;
	}
	/* vol/ is the image's mount: crossed once, then nothing else */
	if ((vol = snap_openat(stfd, YX_PRIV_VOL, O_RDONLY | O_DIRECTORY, 0, true)) == -1 ||
	    (sd = snap_openat(vol, rel, O_RDONLY | O_DIRECTORY, 0, false)) == -1) {
		rc = yx_fail(err, YX_E_NOT_FOUND, "no such snapshot");
		goto done;
	}
	if ((dd = snap_openat(dtfd, "user-data", O_RDONLY | O_DIRECTORY, 0, true)) == -1) {
		rc = yx_fail(err, YX_E_IO, "the new thread's files");
		goto done;
	}
	if (snap_copy_dir(sd, dd, 0, &c) == -1) {
		log_warnx("thread %s: fork from %s: %s", dst->thread_id, src->thread_id,
		    strerror(c.en));
		rc = yx_fail(err, c.en == ENOSPC || c.en == EDQUOT ? YX_E_QUOTA_EXCEEDED : c.en == ELOOP ? YX_E_BAD_REQUEST :
													   YX_E_IO,
		    "cannot copy the snapshot: %s", strerror(c.en));
		goto done;
	}
	log_info("thread %s: %llu files of snapshot %s of thread %s copied",
	    dst->thread_id, (unsigned long long)c.files, sid, src->thread_id);
	rc = YX_OK;
done:
	if (dd != -1)
		close(dd);
	if (sd != -1)
		close(sd);
	if (vol != -1)
		close(vol);
	if (dtfd != -1)
		close(dtfd);
	if (stfd != -1)
		close(stfd);
	return rc;
}
