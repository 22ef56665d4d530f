/* SPDX-License-Identifier: MIT */
/*
 * threads_limit.c - the per-user thread limit (YUXI_MAX_THREADS_PER_USER,
 * docs/configuration.md) and the per-user thread counts admins see; see
 * include/yuxi/threads.h.
 *
 * A user's threads are counted from the owner index: the entries of
 * owners/<user>/ (one per thread, written once the thread is published,
 * removed when it is retired). Counting reads names only, never a record,
 * so it costs a readdir of what the user owns. The count is exact while
 * the service runs; after a crash between publishing a thread and writing
 * its entry (or retiring it and removing the entry) it is off by that one
 * thread until the next start's reconcile.
 *
 * Two creates of one user racing at the limit must not both pass: the
 * count and the create run under an exclusive flock(2) of the directory
 * owners/<user> itself. flock, because the workers are separate processes
 * that each open the directory (their own open file descriptions, so the
 * lock excludes across workers and within one), and because it goes with
 * its holder: a killed worker leaves no stale lock behind. The directory
 * itself, not a lock file in it: the index's start-up repair removes every
 * entry that names no thread, and the directory is never removed, so every
 * process locks the same inode. Deletes take no lock (they only lower the
 * count); other users never wait for it. It is taken with LOCK_NB in a
 * bounded loop, so a stopped holder costs 503 (BUSY), not a hung worker.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yuxi/buf.h"
#include "yuxi/clock.h"
#include "yuxi/threads.h"
#include "common/control_int.h"

#define YX_OWNER_LOCK_WAIT_MS	5000	/* then YX_E_BUSY */
#define YX_OWNER_LOCK_STEP_MS	2

/*
 * owners/<owner> (made when missing) open and exclusively locked into *fdp
 * (close it to unlock). YX_OK; YX_E_BUSY when the lock did not come within
 * YX_OWNER_LOCK_WAIT_MS; errno-mapped errors.
 */
static int
thread_owner_lock(struct yx_thread_store *st, const char *owner, int *fdp)
{
	const struct timespec	 step = { 0, YX_OWNER_LOCK_STEP_MS * 1000000L };
	int64_t			 deadline;
	int			 fd, rc = YX_OK;

	*fdp = -1;
	if (mkdirat(st->ownfd, owner, 0700) == -1 && errno != EEXIST)
		return yx_err_from_errno(errno);
	fd = openat(st->ownfd, owner,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return yx_err_from_errno(errno);
	if (YX_CONTROL_OFF("limitlock")) {	/* control: count unlocked */
		*fdp = fd;
		return YX_OK;
	}
	deadline = yx_mono_ms() + YX_OWNER_LOCK_WAIT_MS;
	while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if ((errno != EWOULDBLOCK && errno != EINTR) ||
		    yx_mono_ms() >= deadline) {
			rc = errno == EWOULDBLOCK ? YX_E_BUSY :
						    yx_err_from_errno(errno);
			close(fd);
			return rc;
		}
		nanosleep(&step, NULL);
	}
	*fdp = fd;
	return rc;
}

/*
 * Count the thread-id entries of the owner directory dfd, stopping at
 * `stop` (0: no stop). YX_OK with *n, or errno-mapped.
 */
static int
thread_owner_count(int dfd, unsigned stop, unsigned *n)
{
	struct dirent	*de;
	DIR		*d;
	unsigned	 scanned = 0;
	int		 fd;

	*n = 0;
	/* a description of its own: closing the stream keeps dfd's lock */
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return yx_err_from_errno(errno);
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return yx_err_from_errno(errno);
	}
	while ((stop == 0 || *n < stop) && scanned++ < YX_THREADS_SCAN_MAX &&
	    (de = readdir(d)) != NULL)
		if (yx_thread_id_valid(de->d_name, strlen(de->d_name)))
			(*n)++;
	closedir(d);
	return YX_OK;
}

int
yx_thread_create_limited(struct yx_thread_store *st,
    const struct yx_thread *want, unsigned limit, struct yx_thread *out,
    bool *created, struct yx_errctx *err)
{
	struct yx_thread	had;
	unsigned		n = 0;
	int			fd = -1, rc;

	*created = false;
	/* no limit, or a request create refuses anyway: nothing to count */
	if (limit == 0 || !yx_user_valid(want->owner) ||
	    !yx_thread_id_valid(want->thread_id, strlen(want->thread_id)))
		return yx_thread_create(st, want, out, created, err);
	if ((rc = thread_owner_lock(st, want->owner, &fd)) != YX_OK)
		return yx_fail(err, rc, rc == YX_E_BUSY ? "thread store busy" : "cannot lock the owner index");
	if ((rc = thread_owner_count(fd, limit, &n)) != YX_OK)
		rc = yx_fail(err, rc, "cannot count threads");
	else if (n >= limit &&
	    /* an existing id is answered by create (200, or 409) */
	    yx_thread_find(st, want->thread_id, &had, NULL) != YX_OK)
		rc = yx_fail(err, YX_E_THREAD_LIMIT,
		    "thread limit reached: at most %u threads per user; "
		    "delete some first",
		    limit);
	else
		rc = yx_thread_create(st, want, out, created, err);
	close(fd);	/* unlocks */
	return rc;
}

static int
thread_owner_cmp(const void *a, const void *b)
{
	const struct yx_owner_threads *x = a, *y = b;

	return strcmp(x->owner, y->owner);
}

/* Append (owner, count) to *v (grown as needed). YX_OK or YX_E_NOMEM. */
static int
thread_owner_push(struct yx_owner_threads **v, size_t *cnt, size_t *alloc,
    const char *owner, unsigned threads)
{
	struct yx_owner_threads *nv;

	if (*cnt == *alloc) {
		*alloc = *alloc ? *alloc * 2 : 16;
		if ((nv = reallocarray(*v, *alloc, sizeof(**v))) == NULL)
			return YX_E_NOMEM;
		*v = nv;
	}
	(void)yx_strlcpy((*v)[*cnt].owner, owner, sizeof((*v)[*cnt].owner));
	(*v)[(*cnt)++].threads = threads;
	return YX_OK;
}

int
yx_thread_owner_counts(struct yx_thread_store *st,
    struct yx_owner_threads **out, size_t *n, bool *truncated,
    struct yx_errctx *err)
{
	struct yx_owner_threads	*v = NULL;
	struct dirent		*de;
	DIR			*d = NULL;
	size_t			 cnt = 0, alloc = 0;
	unsigned		 k, total = 0;
	int			 fd, ufd, rc = YX_OK;

	*out = NULL;
	*n = 0;
	*truncated = false;
	if ((fd = openat(st->ownfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return yx_fail(err, YX_E_IO, "cannot read the owner index");
	}
	while (rc == YX_OK && (de = readdir(d)) != NULL) {
		if (!yx_user_valid(de->d_name))
			continue;
		if (cnt >= YX_OWNERS_MAX || total >= YX_THREADS_SCAN_MAX) {
			*truncated = true;
			break;
		}
		ufd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ufd == -1 || thread_owner_count(ufd, 0, &k) != YX_OK)
			k = 0;
		if (ufd != -1)
			close(ufd);
		total += k;
		if (k > 0 && thread_owner_push(&v, &cnt, &alloc, de->d_name, k) != YX_OK)
			rc = yx_fail(err, YX_E_NOMEM, NULL);
	}
	closedir(d);
	if (rc != YX_OK) {
		free(v);
		return rc;
	}
	if (cnt > 0)
		qsort(v, cnt, sizeof(*v), thread_owner_cmp);
	*out = v;
	*n = cnt;
	return YX_OK;
}
