/* SPDX-License-Identifier: MIT */
/*
 * broker_write.c - every write the broker makes in a thread's user-data tree:
 * write, edit, upload, the standard layout and the executor's spill files.
 * All of them go through one temp-file writer: a fresh O_EXCL file with a
 * random name in the target's directory (opened by openat2 beneath the
 * root), filled, chowned to the sandbox, then renamed into place; so a
 * planted hardlink or symlink at the target name is replaced, never written
 * through, and a failure leaves nothing behind. In the control build
 * (YX_BROKER_CONTROL_UNSAFE) the target is opened and truncated in place.
 */
#include "config.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/broker.h"
#include "broker/broker_int.h"
#include "yuxi/buf.h"
#include "yuxi/tree.h"

#define BROKER_TMP_TRIES	8

const char *const yx_broker_layout[YX_BROKER_LAYOUT_N] = {
	"workspace",
	"outputs",
	"uploads",
	"uploads/attachments",
	"large_tool_results",
};

/*
 * errno of a write into t -> error: out of space beneath a user-data root
 * that is a mount of its own (the thread's disk image) is the thread's
 * quota, and so is EDQUOT anywhere; the rest as broker_fail_errno.
 */
static int
broker_tmp_fail(const struct broker_tmp *t, int en, struct yx_errctx *e)
{
	if (en == EDQUOT || (en == ENOSPC && t->quota))
		return broker_fail(e, YX_E_QUOTA_EXCEEDED, t->root, t->rel);
	return broker_fail_errno(e, en, t->root, t->rel);
}

/* Policy on an existing target entry. YX_OK when absent or replaceable. */
static int
broker_target_check(struct broker_tmp *t, bool overwrite, struct yx_errctx *e)
{
	struct stat	st;
	int		en, rc = YX_OK;

	if ((en = broker_lstatat(t->dirfd, t->base, &st)) == ENOENT)
		return YX_OK;
	if (en != 0)
		return broker_fail_errno(e, en, t->root, t->rel);
	if (!overwrite)
		rc = YX_E_FILE_EXISTS;
	else if (S_ISDIR(st.st_mode))
		rc = YX_E_IS_DIRECTORY;
	else if (S_ISLNK(st.st_mode))
		rc = YX_E_PATH_NOT_ALLOWED;
	else if (!S_ISREG(st.st_mode))
		rc = YX_E_NOT_REGULAR;
	if (rc != YX_OK)
		rc = broker_fail(e, rc, t->root, t->rel);
	return rc;
}

#ifndef YX_BROKER_CONTROL_UNSAFE
/* A fresh temp in t->dirfd: O_EXCL never follows nor reuses an entry. */
static int
broker_tmp_create(struct broker_tmp *t)
{
	unsigned char	rnd[8];
	int		i, j;

	for (i = 0; i < BROKER_TMP_TRIES; i++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return errno != 0 ? errno : EIO;
		j = snprintf(t->name, sizeof(t->name), ".yx-");
		for (size_t k = 0; k < sizeof(rnd); k++)
			j += snprintf(t->name + j, sizeof(t->name) - (size_t)j,
			    "%02x", rnd[k]);
		snprintf(t->name + j, sizeof(t->name) - (size_t)j, ".tmp");
		t->fd = openat(t->dirfd, t->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (t->fd != -1)
			return 0;
		t->name[0] = '\0';
		if (errno != EEXIST)
			return errno;
	}
	return EEXIST;
}
#else
/* Control build: open the target itself, following links, truncating. */
static int
broker_tmp_create(struct broker_tmp *t)
{
	t->fd = openat(t->dirfd, t->base, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	return t->fd == -1 ? errno : 0;
}
#endif

/*
 * Returns YX_OK with t ready for broker_tmp_write; YX_E_READ_ONLY;
 * YX_E_INVALID_PATH; YX_E_IS_DIRECTORY (rel is the root); resolution and
 * target-policy errors. t must be passed to broker_tmp_abort in all cases.
 */
int
broker_tmp_open(struct yx_broker *b, enum yx_root root, const char *rel,
    bool overwrite, struct broker_tmp *t, struct yx_errctx *e)
{
	const char	*slash;
	uint64_t	 res;
	int		 rootfd, rc, en;

	memset(t, 0, sizeof(*t));
	t->dirfd = t->fd = -1;
	t->root = root;
	t->rel = rel;
	t->quota = b->quota;
	if (broker_read_only(b, root, rel))
		return broker_fail(e, YX_E_READ_ONLY, root, rel != NULL ? rel : "");
	if ((rc = broker_root(b, root, rel, &rootfd, &res, e)) != YX_OK)
		return rc;
	if (rel[0] == '\0')
		return broker_fail(e, YX_E_IS_DIRECTORY, root, rel);
	slash = strrchr(rel, '/');
	t->base = slash != NULL ? slash + 1 : rel;
	en = broker_mkdirs(b, rootfd, res, rel,
	    slash != NULL ? (size_t)(slash - rel) : 0, &t->dirfd);
	if (en != 0)
		return broker_tmp_fail(t, en, e);
	if ((rc = broker_target_check(t, overwrite, e)) != YX_OK)
		return rc;
	if ((en = broker_tmp_create(t)) != 0)
		return broker_tmp_fail(t, en, e);
	return YX_OK;
}

/* Returns YX_OK; YX_E_NOSPACE; YX_E_QUOTA_EXCEEDED (out of space in the
 * thread's own disk image, or EDQUOT); YX_E_PAYLOAD_TOO_LARGE (EFBIG);
 * YX_E_IO. */
int
broker_tmp_write(struct broker_tmp *t, const void *data, size_t len,
    struct yx_errctx *e)
{
	const char	*p = data;
	ssize_t		 n;

	while (len > 0) {
		n = write(t->fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return broker_tmp_fail(t, errno, e);
		p += n;
		len -= (size_t)n;
	}
	return YX_OK;
}

#ifndef YX_BROKER_CONTROL_UNSAFE
/* rename without replacing; filesystems without RENAME_NOREPLACE get
 * link(2), which never replaces either. 0 or errno. */
static int
broker_rename_noreplace(int dirfd, const char *from, const char *to)
{
	if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	if (linkat(dirfd, from, dirfd, to, 0) == -1)
		return errno;
	unlinkat(dirfd, from, 0);
	return 0;
}
#endif

/*
 * Give the temp to the sandbox (owner, `mode`) and move it into place.
 * Returns YX_OK; YX_E_FILE_EXISTS (created concurrently, !overwrite);
 * target-policy errors; YX_E_IO. The temp is removed on failure by
 * broker_tmp_abort.
 */
int
broker_tmp_commit(struct yx_broker *b, struct broker_tmp *t, bool overwrite,
    mode_t mode, struct yx_errctx *e)
{
	int rc, en = 0;

	if (fchown(t->fd, b->uid, b->gid) == -1 || fchmod(t->fd, mode) == -1)
		return broker_fail_errno(e, errno, t->root, t->rel);
#ifndef YX_BROKER_CONTROL_UNSAFE
	if ((rc = broker_target_check(t, overwrite, e)) != YX_OK)
		return rc;
	if (!overwrite)
		en = broker_rename_noreplace(t->dirfd, t->name, t->base);
	else if (renameat(t->dirfd, t->name, t->dirfd, t->base) == -1)
		en = errno;
	if (en == EEXIST || en == ENOTEMPTY)
		en = overwrite ? EISDIR : EEXIST;
	if (en != 0)
		return broker_tmp_fail(t, en, e);
	t->name[0] = '\0';
#else
	(void)rc;
	(void)en;
	(void)overwrite;
#endif
	return YX_OK;
}

void
broker_tmp_abort(struct broker_tmp *t)
{
	if (t->name[0] != '\0' && t->dirfd != -1)
		unlinkat(t->dirfd, t->name, 0);
	t->name[0] = '\0';
	if (t->fd != -1)
		close(t->fd);
	if (t->dirfd != -1)
		close(t->dirfd);
	t->fd = t->dirfd = -1;
}

/* See broker.h. */
int
yx_broker_write(struct yx_broker *b, enum yx_root root, const char *rel,
    const void *data, size_t len, bool overwrite, struct yx_errctx *e)
{
	struct broker_tmp	t;
	int			rc;

	if ((rc = broker_tmp_open(b, root, rel, overwrite, &t, e)) != YX_OK)
		goto out;
	if ((rc = broker_tmp_write(&t, data, len, e)) != YX_OK)
		goto out;
	rc = broker_tmp_commit(b, &t, overwrite, 0644, e);
out:
	broker_tmp_abort(&t);
	return rc;
}

/* Non-overlapping occurrences of needle in hay. */
static size_t
broker_count(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
	const char	*p = hay, *end = hay + hlen, *q;
	size_t		 n = 0;

	while ((size_t)(end - p) >= nlen &&
	    (q = memmem(p, (size_t)(end - p), needle, nlen)) != NULL) {
		n++;
		p = q + nlen;
	}
	return n;
}

/* Build the edited text into out (cap read_max). YX_OK, NOMEM, TOO_LARGE. */
static int
broker_replace(const char *data, size_t len, const char *old, const char *new,
    bool all, struct yx_buf *out)
{
	const char	*p = data, *end = data + len, *q;
	size_t		 olen = strlen(old), nlen = strlen(new);
	int		 rc = YX_OK;

	while ((size_t)(end - p) >= olen &&
	    (q = memmem(p, (size_t)(end - p), old, olen)) != NULL) {
		if ((rc = yx_buf_append(out, p, (size_t)(q - p))) != YX_OK ||
		    (rc = yx_buf_append(out, new, nlen)) != YX_OK)
			return rc;
		p = q + olen;
		if (!all)
			break;
	}
	return yx_buf_append(out, p, (size_t)(end - p));
}

/* See broker.h. */
int
yx_broker_edit(struct yx_broker *b, enum yx_root root, const char *rel,
    const char *old, const char *new, bool replace_all, size_t *occurrencesp,
    struct yx_errctx *e)
{
	struct broker_tmp	t;
	struct yx_buf		out;
	struct stat		st;
	char			*data = NULL;
	size_t			len, n;
	bool			trunc;
	int			rc;

	memset(&t, 0, sizeof(t));
	t.fd = t.dirfd = -1;
	yx_buf_init(&out, b->lim.read_max);
	if (broker_read_only(b, root, rel)) {
		rc = broker_fail(e, YX_E_READ_ONLY, root, rel != NULL ? rel : "");
		goto out;
	}
	if (old == NULL || old[0] == '\0' || new == NULL) {
		rc = yx_fail(e, YX_E_BAD_REQUEST, "old_string must not be empty");
		goto out;
	}
	if ((rc = broker_slurp(b, root, rel, b->lim.read_max, false, true,
		 &data, &len, &st, &trunc, e)) != YX_OK)
		goto out;
	n = broker_count(data, len, old, strlen(old));
	if (n == 0) {
		rc = yx_fail(e, YX_E_STRING_NOT_FOUND, "old_string not found");
		goto out;
	}
	if (n > 1 && !replace_all) {
		rc = yx_fail(e, YX_E_AMBIGUOUS_MATCH, "old_string occurs %zu "
						      "times; give more context or set replace_all",
		    n);
		goto out;
	}
	if ((rc = broker_replace(data, len, old, new, replace_all, &out)) !=
	    YX_OK) {
		rc = yx_fail(e, rc, "edited file too large");
		goto out;
	}
	if ((rc = broker_tmp_open(b, root, rel, true, &t, e)) != YX_OK ||
	    (rc = broker_tmp_write(&t, out.data, out.len, e)) != YX_OK ||
	    (rc = broker_tmp_commit(b, &t, true, st.st_mode & 0777, e)) !=
		YX_OK)
		goto out;
	if (occurrencesp != NULL)
		*occurrencesp = replace_all ? n : 1;
out:
	broker_tmp_abort(&t);
	yx_buf_fini(&out);
	free(data);
	return rc;
}

/* See broker.h. */
int
yx_broker_upload(struct yx_broker *b, enum yx_root root, const char *rel,
    yx_broker_read_fn rd, void *arg, bool overwrite, uint64_t *sizep,
    struct yx_errctx *e)
{
	struct broker_tmp	 t;
	char			*chunk = NULL;
	const size_t		 chunklen = 65536;
	uint64_t		 total = 0;
	ssize_t			 n;
	int			 rc;

	if ((rc = broker_tmp_open(b, root, rel, overwrite, &t, e)) != YX_OK)
		goto out;
	if ((chunk = malloc(chunklen)) == NULL) {
		rc = yx_fail(e, YX_E_NOMEM, NULL);
		goto out;
	}
	while ((n = rd(arg, chunk, chunklen)) != 0) {
		if (n < 0) {
			rc = yx_fail(e, YX_E_IO, "upload body: read error");
			goto out;
		}
		total += (uint64_t)n;
		if (total > b->lim.upload_max) {
			rc = yx_fail(e, YX_E_PAYLOAD_TOO_LARGE,
			    "upload larger than %zu bytes", b->lim.upload_max);
			goto out;
		}
		if ((rc = broker_tmp_write(&t, chunk, (size_t)n, e)) != YX_OK)
			goto out;
	}
	if ((rc = broker_tmp_commit(b, &t, overwrite, 0644, e)) != YX_OK)
		goto out;
	if (sizep != NULL)
		*sizep = total;
out:
	broker_tmp_abort(&t);
	free(chunk);
	return rc;
}

/*
 * The first component of layout folder `path` that is not a directory (a
 * symlink, a file, a FIFO the sandbox put there) is moved aside, within its
 * own directory, to "<name>.moved-<time>-<n>": nothing is deleted and no
 * link is followed. Returns 0 when something was moved, else an errno.
 */
static int
broker_layout_displace(int rootfd, uint64_t res, const char *path)
{
	char		 dir[YX_VPATH_MAX], name[YX_VNAME_MAX + 1];
	char		 aside[YX_VNAME_MAX + 1];
	const char	*p, *slash;
	size_t		 len;
	int		 en, fd = -1, pfd = -1, i;

	for (p = path;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		len = (size_t)(p - path);
		snprintf(dir, sizeof(dir), "%.*s", (int)len, path);
		if ((en = broker_open_dir(rootfd, dir, res, &fd)) == 0) {
			close(fd);
			if (*p == '\0')
				return ENOENT;	/* all directories by now */
			continue;
		}
		if (en != ELOOP && en != ENOTDIR)
			return en;
		break;
	}
	/* dir = "a/b/name": open "a/b", move "name" */
	slash = strrchr(dir, '/');
	snprintf(name, sizeof(name), "%.*s", YX_VNAME_MAX, slash != NULL ? slash + 1 : dir);
	dir[slash != NULL ? (size_t)(slash - dir) : 0] = '\0';
	if ((en = broker_open_dir(rootfd, dir, res, &pfd)) != 0)
		return en;
	en = EEXIST;
	for (i = 0; i < 100 && en == EEXIST; i++) {
		snprintf(aside, sizeof(aside), "%.200s.moved-%lld-%d", name,
		    (long long)time(NULL), i);
		en = renameat2(pfd, name, pfd, aside, RENAME_NOREPLACE) == 0 ?
		    0 :
		    errno;
	}
	close(pfd);
	return en;
}

/* See broker.h. */
int
yx_broker_ensure_layout(struct yx_broker *b, unsigned *repaired,
    struct yx_errctx *e)
{
	uint64_t	res;
	size_t		i;
	int		rootfd, fd, en, den, rc, tries;

	if (repaired != NULL)
		*repaired = 0;
	if ((rc = broker_root(b, YX_ROOT_USER_DATA, "", &rootfd, &res, e)) !=
	    YX_OK)
		return rc;
	for (i = 0; i < YX_BROKER_LAYOUT_N; i++) {
		for (tries = 0;; tries++) {
			en = broker_mkdirs(b, rootfd, res, yx_broker_layout[i],
			    strlen(yx_broker_layout[i]), &fd);
			if (en == 0 || tries == 3 || (en != ELOOP && en != ENOTDIR && en != EEXIST))
				break;
			/* ENOENT: gone meanwhile, just try again */
			den = broker_layout_displace(rootfd, res,
			    yx_broker_layout[i]);
			if (den == 0 && repaired != NULL)
				*repaired |= 1u << i;
			else if (den != 0 && den != ENOENT)
				break;
		}
		if (en != 0)
			return broker_fail_errno(e, en, YX_ROOT_USER_DATA,
			    yx_broker_layout[i]);
		close(fd);
	}
	return YX_OK;
}

/* See broker.h. */
int
yx_broker_spill_open(struct yx_broker *b, const char *name, int *fdp,
    struct yx_errctx *e)
{
	struct broker_tmp	t;
	char			rel[YX_VNAME_MAX + sizeof("large_tool_results/")];
	int			rc;

	memset(&t, 0, sizeof(t));
	t.fd = t.dirfd = -1;
	*fdp = -1;
	if (name == NULL || name[0] == '\0' || strchr(name, '/') != NULL ||
	    strlen(name) > YX_VNAME_MAX || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0) {
		rc = yx_fail(e, YX_E_INVALID_PATH, "invalid spill file name");
		goto out;
	}
	snprintf(rel, sizeof(rel), "large_tool_results/%s", name);
	if ((rc = broker_tmp_open(b, YX_ROOT_USER_DATA, rel, true, &t, e)) !=
		YX_OK ||
	    (rc = broker_tmp_commit(b, &t, true, 0644, e)) != YX_OK)
		goto out;
	*fdp = t.fd;
	t.fd = -1;
out:
	broker_tmp_abort(&t);
	return rc;
}

/* Is rel (user-data) the root or one of the layout folders? */
static bool
broker_is_layout(const char *rel)
{
	size_t i;

	if (rel[0] == '\0')
		return true;
	for (i = 0; i < YX_BROKER_LAYOUT_N; i++)
		if (strcmp(rel, yx_broker_layout[i]) == 0)
			return true;
	return false;
}

/*
 * Remove the directory `name` of pfd with all below: first renamed to a
 * hidden sibling (the path is gone at once, whatever is left is under a
 * name nobody uses), then removed within the time budget. YX_OK; *pending
 * when the budget ran out first (the hidden sibling stays).
 */
static int
broker_delete_tree(struct yx_broker *b, int pfd, const char *name,
    bool *pending)
{
	char	tomb[48];
	int	rc;

	yx_hidden_name(tomb, sizeof(tomb), ".yx-del-");
	if (renameat2(pfd, name, pfd, tomb, RENAME_NOREPLACE) == -1)
		return errno;
	rc = yx_tree_remove_for(pfd, tomb, b->lim.time_ms > 0 ? b->lim.time_ms : 0);
	if (rc == YX_E_TIMEOUT || rc == YX_E_BUSY) {
		*pending = true;
		return 0;
	}
	return rc == YX_OK ? 0 : EIO;
}

/* See broker.h. */
int
yx_broker_delete(struct yx_broker *b, enum yx_root root, const char *rel,
    bool recursive, bool *pending, struct yx_errctx *e)
{
	char		 dir[YX_VPATH_MAX];
	const char	*slash, *name;
	struct stat	 st;
	uint64_t	 res;
	int		 rootfd, pfd = -1, en, rc;

	*pending = false;
	if (broker_read_only(b, root, rel))
		return broker_fail(e, YX_E_READ_ONLY, root, rel);
	if ((rc = broker_root(b, root, rel, &rootfd, &res, e)) != YX_OK)
		return rc;
	if (broker_is_layout(rel))
		return yx_fail(e, YX_E_PATH_NOT_ALLOWED, "cannot delete "
							 "%s%s%s: a folder of the thread's layout",
		    YX_VROOT_USER_DATA,
		    rel[0] != '\0' ? "/" : "", rel);
	slash = strrchr(rel, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash != NULL ? (int)(slash - rel) : 0, rel);
	name = slash != NULL ? slash + 1 : rel;
	/* the parent beneath the root, no symlink on the way */
	if ((en = broker_open_dir(rootfd, dir, res, &pfd)) != 0) {
		rc = broker_fail_errno(e, en == ENOTDIR ? ENOENT : en, root, rel);
		goto out;
	}
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		rc = broker_fail_errno(e, errno, root, rel);
		goto out;
	}
	/* a link (even to a directory), a file, a FIFO: unlinked as itself */
	if (!S_ISDIR(st.st_mode))
		en = unlinkat(pfd, name, 0) == 0 ? 0 : errno;
	else if (unlinkat(pfd, name, AT_REMOVEDIR) == 0)
		en = 0;
	else if ((errno == ENOTEMPTY || errno == EEXIST) && recursive)
		en = broker_delete_tree(b, pfd, name, pending);
	else if (errno == ENOTEMPTY || errno == EEXIST) {
		rc = yx_fail(e, YX_E_BAD_REQUEST, "directory not empty: %s/%s",
		    YX_VROOT_USER_DATA, rel);
		goto out;
	} else
		en = errno;
	rc = en == 0 ? YX_OK : broker_fail_errno(e, en, root, rel);
out:
	if (pfd != -1)
		close(pfd);
	return rc;
}
