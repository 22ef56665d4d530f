/* SPDX-License-Identifier: MIT */
/*
 * threads.c - the thread store; see include/yuxi/threads.h.
 *
 * Everything is relative to directory descriptors of <saves>/threads,
 * owners, uids and run, and every open of a name below them uses O_NOFOLLOW,
 * so a symlink planted where a thread directory should be is refused, never
 * followed. Records are small JSON files (at most YX_THREAD_JSON_MAX bytes)
 * written through a temporary file and rename().
 *
 * Trees are removed iteratively (yx_tree_remove), at any depth and with a
 * bounded number of descriptors, and within a time budget where a request
 * or the reaper waits for it: a thread's data that does not go within the
 * budget stays in its hidden tombstone for the reaper's next sweep.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

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
#include <stdint.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/priv.h"
#include "yuxi/replace.h"
#include "yuxi/threads.h"
#include "yuxi/tree.h"
#include "threads/threads_int.h"
#include "common/control_int.h"

#define YX_THREAD_JSON		"thread.json"
#define YX_THREAD_JSON_MAX	16384	/* metadata: at most ~9.4 KiB of it */

static const char *const yx_userdata_dirs[] = {
	"user-data",
	"user-data/workspace",
	"user-data/outputs",
	"user-data/uploads",
	"user-data/uploads/attachments",
	"user-data/large_tool_results",
};

/* Parse what yx_iso8601_ms() wrote; -1 when it does not look like that. */
static int64_t
thread_parse_time(const char *s)
{
	struct tm	 tm;
	const char	*p;
	int		 msec = 0;

	memset(&tm, 0, sizeof(tm));
	if ((p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	if (*p == '.' && sscanf(p + 1, "%3d", &msec) != 1)
		return -1;
	return (int64_t)timegm(&tm) * 1000 + msec;
}

/* mkdirat (EEXIST is fine) then open `name` beneath sfd as a directory. */
static int
thread_store_subdir(int sfd, const char *saves, const char *name, mode_t mode,
    int *fdp, struct yx_errctx *err)
{
	if (mkdirat(sfd, name, mode) == -1 && errno != EEXIST)
		return yx_fail(err, yx_err_from_errno(errno), "cannot create %s/%s: %s",
		    saves, name, strerror(errno));
	*fdp = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fdp == -1)
		return yx_fail(err, yx_err_from_errno(errno), "cannot open %s/%s: %s",
		    saves, name, strerror(errno));
	return YX_OK;
}

int
yx_thread_store_init(struct yx_thread_store *st, const struct yx_config *cfg,
    struct yx_errctx *err)
{
	const char	*saves = cfg->saves_dir;
	int		 rc = YX_OK, sfd = -1;

	st->dirfd = st->ownfd = st->uidfd = st->runfd = -1;
	st->uid = cfg->uid;
	st->gid = cfg->gid;
	st->uid_base = cfg->uid_base;
	st->uid_count = cfg->uid_count;
	st->chown_ok = threads_may_chown();
	if (!st->chown_ok)	/* files could not be given to other uids */
		st->uid_count = 0;
	st->remove_budget_ms = cfg->request_budget_ms;
	st->disk_quota = cfg->thread_disk_quota;
	st->disk_fs = (int)cfg->disk_fs;
	if (mkdir(saves, 0755) == -1 && errno != EEXIST) {
		rc = yx_fail(err, yx_err_from_errno(errno), "cannot create %s: %s",
		    saves, strerror(errno));
		goto done;
	}
	if ((sfd = open(saves, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		rc = yx_fail(err, yx_err_from_errno(errno), "cannot open %s: %s",
		    saves, strerror(errno));
		goto done;
	}
	if ((rc = thread_store_subdir(sfd, saves, "threads", 0755, &st->dirfd,
		 err)) != YX_OK ||
	    (rc = thread_store_subdir(sfd, saves, "owners", 0700, &st->ownfd,
		 err)) != YX_OK ||
	    /* run/ is searchable: the engine binds run/<id> (src/exec) */
	    (rc = thread_store_subdir(sfd, saves, "run", 0711, &st->runfd,
		 err)) != YX_OK)
		goto done;
	if (st->uid_count > 0)
		rc = thread_store_subdir(sfd, saves, "uids", 0700, &st->uidfd, err);
done:
	if (sfd != -1)
		close(sfd);
	if (rc != YX_OK)
		yx_thread_store_fini(st);
	return rc;
}

void
yx_thread_store_fini(struct yx_thread_store *st)
{
	int *fds[] = { &st->dirfd, &st->ownfd, &st->uidfd, &st->runfd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] != -1)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* Serialise a record; heap string (caller frees) or NULL. */
static char *
thread_to_json(const struct yx_thread *t)
{
	struct json_object	*o;
	char			 ts[40];
	char			*s = NULL;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "thread_id", json_object_new_string(t->thread_id));
	json_object_object_add(o, "owner", json_object_new_string(t->owner));
	json_object_object_add(o, "agent_id", json_object_new_string(t->agent_id));
	json_object_object_add(o, "agent_config_id",
	    json_object_new_string(t->agent_config_id));
	json_object_object_add(o, "created_at",
	    json_object_new_string(yx_iso8601_ms(t->created_ms, ts, sizeof(ts))));
	if (t->own_uid)
		json_object_object_add(o, "uid", json_object_new_int64(t->uid));
	if (t->host[0] != '\0')	/* a front's placement, fixed for life */
		json_object_object_add(o, "host", json_object_new_string(t->host));
	if (t->meta.n > 0)
		json_object_object_add(o, "metadata", yx_thread_meta_json(&t->meta));
	if (t->idle_timeout > 0)
		json_object_object_add(o, "idle_timeout",
		    json_object_new_int(t->idle_timeout));
	s = strdup(json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static int
thread_json_str(struct json_object *o, const char *key, char *dst, size_t len)
{
	struct json_object	*v;
	const char		*s;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return YX_E_IO;
	s = json_object_get_string(v);
	if (strlen(s) >= len)
		return YX_E_IO;
	memcpy(dst, s, strlen(s) + 1);
	return YX_OK;
}

/*
 * The record's own uid when it has one ("uid" in [1, 2^31)): records
 * written before uid ranges existed have none and run as the shared user.
 */
static int
thread_json_uid(struct json_object *o, struct yx_thread *t)
{
	struct json_object	*v;
	int64_t			 u;

	if (!json_object_object_get_ex(o, "uid", &v))
		return YX_OK;
	if (!json_object_is_type(v, json_type_int) ||
	    (u = json_object_get_int64(v)) < 1 || u >= INT64_C(1) << 31)
		return YX_E_IO;
	t->uid = t->gid = (unsigned)u;
	t->own_uid = true;
	return YX_OK;
}

/* Parse a record; YX_OK or YX_E_IO for anything malformed. */
static int
thread_from_json(const char *s, size_t len, struct yx_thread *t)
{
	struct json_tokener	*tok = NULL;
	struct json_object	*o = NULL, *v;
	char			 ts[40];
	int			 rc = YX_E_IO;

	memset(t, 0, sizeof(*t));
	if ((tok = json_tokener_new()) == NULL)
		return YX_E_NOMEM;
	o = json_tokener_parse_ex(tok, s, (int)len);
	if (o == NULL || !json_object_is_type(o, json_type_object))
		goto done;
	if (thread_json_str(o, "thread_id", t->thread_id, sizeof(t->thread_id)) ||
	    thread_json_str(o, "owner", t->owner, sizeof(t->owner)) ||
	    thread_json_str(o, "agent_id", t->agent_id, sizeof(t->agent_id)) ||
	    thread_json_str(o, "agent_config_id", t->agent_config_id,
		sizeof(t->agent_config_id)) ||
	    thread_json_str(o, "created_at", ts, sizeof(ts)) ||
	    thread_json_uid(o, t) != YX_OK)
		goto done;
	if (json_object_object_get_ex(o, "host", NULL) &&
	    thread_json_str(o, "host", t->host, sizeof(t->host)) != YX_OK)
		goto done;
	if (json_object_object_get_ex(o, "metadata", &v) &&
	    yx_thread_meta_parse(v, &t->meta, NULL) != YX_OK)
		goto done;
	if (json_object_object_get_ex(o, "idle_timeout", &v) &&
	    (!json_object_is_type(v, json_type_int) ||
		(t->idle_timeout = json_object_get_int(v)) < 0))
		goto done;
	if ((t->created_ms = thread_parse_time(ts)) < 0)
		goto done;
	rc = YX_OK;
done:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}

/*
 * Read <dirfd>/<name>/thread.json without following symlinks. YX_OK,
 * YX_E_NOT_FOUND when the thread (or its record) does not exist, YX_E_IO
 * for a malformed record.
 */
static int
thread_read(int dirfd, const char *name, struct yx_thread *t)
{
	char	buf[YX_THREAD_JSON_MAX];
	ssize_t	n;
	int	tfd = -1, fd = -1, rc = YX_E_NOT_FOUND;

	tfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd == -1)
		goto done;
	fd = openat(tfd, YX_THREAD_JSON, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd == -1)
		goto done;
	rc = YX_E_IO;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0 || (size_t)n >= sizeof(buf))
		goto done;
	rc = thread_from_json(buf, (size_t)n, t);
	if (rc == YX_OK && strcmp(t->thread_id, name) != 0)
		rc = YX_E_IO;
done:
	if (fd != -1)
		close(fd);
	if (tfd != -1)
		close(tfd);
	return rc;
}

/* Write thread.json into directory tfd (yx_replace_at: synced, then
 * renamed into place). YX_OK or errno-mapped. */
static int
thread_write(int tfd, const struct yx_thread *t)
{
	struct yx_replace	 r = { .mode = 0644 };
	char			*js;
	int			 rc;

	if ((js = thread_to_json(t)) == NULL)
		return YX_E_NOMEM;
	r.data = js;
	r.len = strlen(js);
	rc = yx_replace_at(tfd, YX_THREAD_JSON, &r);
	free(js);
	return rc;
}

/*
 * The record of thread `name`, with the shared sandbox user filled in for
 * records that have no uid of their own. Returns as thread_read().
 */
static int
thread_load(struct yx_thread_store *st, const char *name, struct yx_thread *t)
{
	int rc;

	if ((rc = thread_read(st->dirfd, name, t)) == YX_OK && !t->own_uid) {
		t->uid = st->uid;
		t->gid = st->gid;
	}
	return rc;
}

/* Create user-data/ and its subdirectories in tfd, owned by the thread's uid. */
static int
thread_mklayout(struct yx_thread_store *st, int tfd, const struct yx_thread *t)
{
	size_t	i;
	int	fd;

	for (i = 0; i < sizeof(yx_userdata_dirs) / sizeof(yx_userdata_dirs[0]); i++) {
		if (mkdirat(tfd, yx_userdata_dirs[i], 0755) == -1 && errno != EEXIST)
			return yx_err_from_errno(errno);
		if (!st->chown_ok)
			continue;
		fd = openat(tfd, yx_userdata_dirs[i],
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1)
			return yx_err_from_errno(errno);
		if (fchown(fd, t->uid, t->gid) == -1) {
			close(fd);
			return yx_err_from_errno(errno);
		}
		close(fd);
	}
	return YX_OK;
}

/* The thread's own uid has no entry in the image: its files name it yuxi. */
int
yx_thread_etc_write(int tfd, unsigned uid, unsigned gid)
{
	char	pw[256], gr[128];
	int	n, m, rc;

	n = snprintf(pw, sizeof(pw), "root:x:0:0:root:/root:/bin/sh\n"
				     "yuxi:x:%u:%u:yuxi:/home/yuxi:/bin/sh\n"
				     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	    uid, gid);
	m = snprintf(gr, sizeof(gr), "root:x:0:\nyuxi:x:%u:\nnogroup:x:65534:\n",
	    gid);
	if (n < 0 || (size_t)n >= sizeof(pw) || m < 0 || (size_t)m >= sizeof(gr))
		return YX_E_INTERNAL;
	if ((rc = yx_file_put(tfd, "passwd", pw, (size_t)n)) != YX_OK)
		return rc;
	return yx_file_put(tfd, "group", gr, (size_t)m);
}

int
yx_thread_path(const char *saves_dir, const char *thread_id,
    enum yx_thread_part part, char *buf, size_t len)
{
	static const char *const leaf[] = {
		[YX_TP_USER_DATA] = "/user-data",
		[YX_TP_PASSWD] = "/passwd",
		[YX_TP_GROUP] = "/group",
		[YX_TP_RUN] = "",
	};
	int n;

	buf[0] = '\0';
	if (!yx_thread_id_valid(thread_id, strlen(thread_id)))
		return YX_E_INVALID_THREAD_ID;
	if ((unsigned)part >= sizeof(leaf) / sizeof(leaf[0]))
		return YX_E_BAD_REQUEST;
	n = snprintf(buf, len, "%s/%s/%s%s", saves_dir,
	    part == YX_TP_RUN ? "run" : "threads", thread_id, leaf[part]);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return YX_E_BAD_REQUEST;
	}
	return YX_OK;
}

/* Remove directory `name` of threads/ unless a disk image stays mounted
 * in it (then a later sweep does). */
static void
thread_tree_drop(struct yx_thread_store *st, const char *name)
{
	if (thread_disk_drop(st, name) == YX_OK)
		(void)yx_tree_remove(st->dirfd, name);
}

/* Build the thread under a hidden name; the name is returned in tmp. */
static int
thread_build(struct yx_thread_store *st, const struct yx_thread *t, char *tmp, size_t len)
{
	int	tfd = -1, rc;

	yx_hidden_name(tmp, len, ".tmp-");
	if (mkdirat(st->dirfd, tmp, 0755) == -1)
		return yx_err_from_errno(errno);
	tfd = openat(st->dirfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd == -1)
		rc = yx_err_from_errno(errno);
	else if ((rc = thread_disk_make(st, tfd, tmp, t)) == YX_OK &&
	    (rc = thread_mklayout(st, tfd, t)) == YX_OK &&
	    (!t->own_uid || (rc = yx_thread_etc_write(tfd, t->uid, t->gid)) == YX_OK))
		rc = thread_write(tfd, t);
	if (tfd != -1)
		close(tfd);
	if (rc != YX_OK)
		thread_tree_drop(st, tmp);
	return rc;
}

/* Move tmp to name unless name exists: YX_OK, YX_E_FILE_EXISTS, or errno-mapped. */
static int
thread_publish(int dirfd, const char *tmp, const char *name)
{
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return YX_OK;
	if (errno == EINVAL &&
	    /* no RENAME_NOREPLACE here: rename() never replaces a non-empty dir */
	    renameat(dirfd, tmp, dirfd, name) == 0)
		return YX_OK;
	if (errno == EEXIST || errno == ENOTEMPTY)
		return YX_E_FILE_EXISTS;
	return yx_err_from_errno(errno);
}

/* ---- the per-owner index ----------------------------------------------- */

/* owners/<owner> as a directory fd (created when `create`); -1 + errno. */
static int
thread_owner_dir(struct yx_thread_store *st, const char *owner, bool create)
{
	if (!yx_user_valid(owner)) {
		errno = EINVAL;
		return -1;
	}
	if (create && mkdirat(st->ownfd, owner, 0700) == -1 && errno != EEXIST)
		return -1;
	return openat(st->ownfd, owner, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Add owners/<owner>/<id>. true when written now. */
static bool
thread_index_add(struct yx_thread_store *st, const char *owner, const char *id)
{
	int	dfd, fd;
	bool	made = false;

	if ((dfd = thread_owner_dir(st, owner, true)) == -1) {
		log_warn("owner index of %s", owner);
		return false;
	}
	fd = openat(dfd, id, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd != -1) {
		close(fd);
		made = true;
	} else if (errno != EEXIST)
		log_warn("owner index entry %s/%s", owner, id);
	close(dfd);
	return made;
}

static void
thread_index_del(struct yx_thread_store *st, const char *owner, const char *id)
{
	int dfd;

	if ((dfd = thread_owner_dir(st, owner, false)) == -1)
		return;
	(void)unlinkat(dfd, id, 0);
	close(dfd);
}

/*
 * Remove run/<id> (the agent directory of an earlier sandbox of that id).
 * The control build's "rundir" switch keeps it (the leak of finding 1).
 */
static int
thread_run_remove(struct yx_thread_store *st, const char *id)
{
	if (YX_CONTROL_OFF("rundir"))
		return YX_OK;
	return yx_tree_remove(st->runfd, id);
}

/* The existing thread `name` seen by `want->owner`. */
static int
thread_existing(struct yx_thread_store *st, const struct yx_thread *want,
    struct yx_thread *out, struct yx_errctx *err)
{
	int rc;

	rc = thread_load(st, want->thread_id, out);
	if (rc == YX_E_NOT_FOUND || rc == YX_OK) {
		if (rc == YX_OK && strcmp(out->owner, want->owner) == 0)
			return YX_OK;
		/* another owner, or a record vanishing under a concurrent delete */
		return yx_fail(err, YX_E_THREAD_EXISTS, "thread %s already exists",
		    want->thread_id);
	}
	return yx_fail(err, rc, "thread record unreadable");
}

int
yx_thread_create(struct yx_thread_store *st, const struct yx_thread *want,
    struct yx_thread *out, bool *created, struct yx_errctx *err)
{
	struct yx_thread	t;
	char			tmp[64] = "";
	int			rc;

	*created = false;
	if (!yx_thread_id_valid(want->thread_id, strlen(want->thread_id)))
		return yx_fail(err, YX_E_INVALID_THREAD_ID, "invalid thread id");
	if (!yx_user_valid(want->owner))
		return yx_fail(err, YX_E_UNAUTHENTICATED, NULL);
	/* cheap path: an existing thread needs no temporary directory */
	if (thread_load(st, want->thread_id, out) == YX_OK)
		return thread_existing(st, want, out, err);
	t = *want;
	t.created_ms = yx_now_ms();
	if ((rc = thread_uid_assign(st, &t)) != YX_OK)
		return yx_fail(err, rc,
		    rc == YX_E_CAPACITY ? "no free sandbox uid: every uid of the range is in use" : "cannot allocate a sandbox uid");
	if ((rc = thread_build(st, &t, tmp, sizeof(tmp))) != YX_OK) {
		thread_uid_free(st, &t);
		/* with a disk quota: no loop device left, or a full disk */
		return yx_fail(err, rc, rc == YX_E_NOSPACE ? "no room for the thread's disk image on this host (no free loop device, or the saves filesystem is full)" : "cannot create thread directory");
	}
	rc = thread_publish(st->dirfd, tmp, t.thread_id);
	if (rc == YX_OK) {
		/* an earlier thread of this id may have left its agent dir */
		if (thread_run_remove(st, t.thread_id) != YX_OK)
			log_warnx("thread %s: stale run directory not removed",
			    t.thread_id);
		(void)thread_index_add(st, t.owner, t.thread_id);
		*out = t;
		*created = true;
		return YX_OK;
	}
	thread_uid_free(st, &t);
	thread_tree_drop(st, tmp);
	if (rc == YX_E_FILE_EXISTS)
		return thread_existing(st, want, out, err);
	return yx_fail(err, rc, "cannot create thread directory");
}

int
yx_thread_get(struct yx_thread_store *st, const char *id, const char *owner,
    struct yx_thread *out, struct yx_errctx *err)
{
	int rc;

	if (!yx_thread_id_valid(id, strlen(id)))
		return yx_fail(err, YX_E_INVALID_THREAD_ID, "invalid thread id");
	rc = thread_load(st, id, out);
	/* control mode "authz": any caller may use any thread */
	if (rc == YX_OK && owner != NULL && YX_CONTROL_OFF("authz"))
		return YX_OK;
	if (rc != YX_OK || owner == NULL || strcmp(out->owner, owner) != 0) {
		if (rc != YX_OK && rc != YX_E_NOT_FOUND) {
			char esc[300];

			log_warnx("thread %s: unreadable record",
			    log_escape(esc, sizeof(esc), id, strlen(id)));
		}
		memset(out, 0, sizeof(*out));
		/* one message for absent and foreign threads alike */
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	}
	return YX_OK;
}

int
yx_thread_find(struct yx_thread_store *st, const char *id, struct yx_thread *out,
    struct yx_errctx *err)
{
	if (!yx_thread_id_valid(id, strlen(id)))
		return yx_fail(err, YX_E_INVALID_THREAD_ID, "invalid thread id");
	if (thread_load(st, id, out) != YX_OK) {
		memset(out, 0, sizeof(*out));
		return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
	}
	return YX_OK;
}

int
yx_thread_update(struct yx_thread_store *st, const char *id,
    const char *owner, const struct yx_thread_patch *patch,
    struct yx_thread *out, struct yx_errctx *err)
{
	struct yx_thread	t;
	int			tfd = -1, rc;

	if ((rc = yx_thread_get(st, id, owner, &t, err)) != YX_OK)
		return rc;
	tfd = openat(st->dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd == -1 || flock(tfd, LOCK_EX) == -1) {
		rc = errno == ENOENT ? yx_fail(err, YX_E_NOT_FOUND, "thread not found") :
				       yx_fail(err, YX_E_IO, "cannot update thread");
		goto done;
	}
	/* read again under the lock: another update may have come first */
	if ((rc = yx_thread_get(st, id, owner, &t, err)) != YX_OK)
		goto done;
	if (patch->meta != NULL &&
	    (rc = yx_thread_meta_merge(&t.meta, patch->meta, err)) != YX_OK)
		goto done;
	if (patch->set_idle)
		t.idle_timeout = patch->idle_timeout;
	if ((rc = thread_write(tfd, &t)) != YX_OK) {
		rc = yx_fail(err, rc, "cannot update thread");
		goto done;
	}
	*out = t;
done:
	if (tfd != -1)
		close(tfd);	/* drops the lock */
	return rc;
}

static int
thread_cmp_newest(const void *a, const void *b)
{
	const struct yx_thread *x = a, *y = b;

	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? 1 : -1;
	return strcmp(x->thread_id, y->thread_id);
}

/*
 * The directory a listing of `owner` reads: owners/<owner>, whose entries
 * name the owner's threads. The control build's "ownerindex" switch reads
 * every thread instead (what listings did before the index).
 */
static int
thread_list_dir(struct yx_thread_store *st, const char *owner)
{
	if (YX_CONTROL_OFF("ownerindex"))
		return openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return thread_owner_dir(st, owner, false);
}

int
yx_thread_list(struct yx_thread_store *st, const char *owner,
    struct yx_thread **out, size_t *n, struct yx_errctx *err)
{
	struct yx_thread	*v = NULL, *nv, t;
	struct dirent		*de;
	DIR			*d = NULL;
	size_t			 cnt = 0, alloc = 0, scanned = 0;
	int			 fd, rc = YX_OK;

	*out = NULL;
	*n = 0;
	if ((fd = thread_list_dir(st, owner)) == -1) {
		if (errno == ENOENT)	/* no thread yet */
			return YX_OK;
		return yx_fail(err, YX_E_IO, "cannot list threads");
	}
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return yx_fail(err, YX_E_IO, "cannot list threads");
	}
	while ((de = readdir(d)) != NULL && scanned++ < YX_THREADS_SCAN_MAX) {
		/* every record is checked: a stale index entry shows nothing */
		if (!yx_thread_id_valid(de->d_name, strlen(de->d_name)) ||
		    thread_load(st, de->d_name, &t) != YX_OK ||
		    strcmp(t.owner, owner) != 0)
			continue;
		if (cnt == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			if ((nv = reallocarray(v, alloc, sizeof(*v))) == NULL) {
				rc = yx_fail(err, YX_E_NOMEM, NULL);
				goto done;
			}
			v = nv;
		}
		v[cnt++] = t;
	}
	if (scanned > YX_THREADS_SCAN_MAX)
		log_warnx("thread listing stopped after %d entries", YX_THREADS_SCAN_MAX);
	if (cnt > 0)
		qsort(v, cnt, sizeof(*v), thread_cmp_newest);
	*n = cnt < YX_THREADS_LIST_MAX ? cnt : YX_THREADS_LIST_MAX;
	*out = v;
	v = NULL;
done:
	free(v);
	closedir(d);
	return rc;
}

int
yx_thread_retire(struct yx_thread_store *st, const char *id, const char *owner,
    struct yx_thread *t, char *tomb, size_t tomblen, struct yx_errctx *err)
{
	int rc;

	if ((rc = yx_thread_get(st, id, owner, t, err)) != YX_OK)
		return rc;
	yx_hidden_name(tomb, tomblen, ".trash-");
	/* "-<uid>": the sweep that finishes the tombstone frees the uid */
	if (t->own_uid)
		snprintf(tomb + strlen(tomb), tomblen - strlen(tomb), "-%u",
		    t->uid);
	if (renameat(st->dirfd, id, st->dirfd, tomb) == -1) {
		if (errno == ENOENT)	/* a concurrent delete won */
			return yx_fail(err, YX_E_NOT_FOUND, "thread not found");
		return yx_fail(err, yx_err_from_errno(errno), "cannot remove thread");
	}
	thread_index_del(st, t->owner, t->thread_id);
	return YX_OK;
}

int
yx_thread_purge(struct yx_thread_store *st, const struct yx_thread *t,
    const char *tomb, struct yx_errctx *err)
{
	int rc = YX_OK, gone;

	/* a thread of the same id created since has its own run dir */
	if (thread_load(st, t->thread_id, &(struct yx_thread){ 0 }) ==
		YX_E_NOT_FOUND &&
	    thread_run_remove(st, t->thread_id) != YX_OK) {
		log_warnx("thread %s: run directory not fully removed", t->thread_id);
		rc = yx_fail(err, YX_E_IO, "thread data not fully removed");
	}
	/* a disk image still mounted in it (BUSY) waits for the sweep too */
	if ((gone = thread_disk_drop(st, tomb)) == YX_OK)
		gone = yx_tree_remove_for(st->dirfd, tomb, st->remove_budget_ms);
	switch (gone) {
	case YX_OK:
		break;
	case YX_E_TIMEOUT:
	case YX_E_BUSY:
		/* the rest goes in the reaper's sweep; the uid stays claimed,
		 * by the tombstone now, until the sweep has removed it */
		log_info("thread tombstone %s: removal left to the sweep", tomb);
		thread_uid_hand(st, t, tomb);
		return rc;
	default:
		log_warnx("thread tombstone %s not fully removed", tomb);
		rc = yx_fail(err, YX_E_IO, "thread data not fully removed");
	}
	/* the uid only once nothing of the thread is left that it owns */
	if (rc == YX_OK)
		thread_uid_free(st, t);
	return rc;
}

int
yx_thread_remove(struct yx_thread_store *st, const char *id, const char *owner,
    struct yx_errctx *err)
{
	struct yx_thread	t;
	char			tomb[64];
	int			rc;

	if ((rc = yx_thread_retire(st, id, owner, &t, tomb, sizeof(tomb),
		 err)) != YX_OK)
		return rc;
	return yx_thread_purge(st, &t, tomb, err);
}

int
yx_thread_dirfd(struct yx_thread_store *st, const char *id)
{
	if (!yx_thread_id_valid(id, strlen(id))) {
		errno = EINVAL;
		return -1;
	}
	return openat(st->dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* ---- start-up repair ----------------------------------------------------- */

/* Call fn(st, dfd, name, arg) for each entry of directory dfd (not . ..). */
static void
thread_each(struct yx_thread_store *st, int dfd,
    void (*fn)(struct yx_thread_store *, int, const char *, void *), void *arg)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			fn(st, dirfd(d), de->d_name, arg);
	closedir(d);
}

unsigned
yx_thread_store_remount(struct yx_thread_store *st)
{
	struct yx_thread_repair r;

	memset(&r, 0, sizeof(r));
	if (st->disk_quota == 0)
		return 0;
	thread_each(st, st->dirfd, thread_disk_fix, &r);
	if (r.disks_mounted + r.disks_failed > 0)
		log_info("thread store: %u disk image(s) mounted again, %u failed",
		    r.disks_mounted, r.disks_failed);
	return r.disks_mounted;
}

/* threads/<name>: make sure its index entry exists. */
static void
thread_fix_index(struct yx_thread_store *st, int dfd, const char *name, void *arg)
{
	struct yx_thread_repair	*rep = arg;
	struct yx_thread	 t;

	(void)dfd;
	if (yx_thread_id_valid(name, strlen(name)) &&
	    thread_load(st, name, &t) == YX_OK &&
	    thread_index_add(st, t.owner, t.thread_id))
		rep->index_added++;
}

/* owners/<user>/<name>: drop it unless user owns thread name. */
static void
thread_fix_entry(struct yx_thread_store *st, int dfd, const char *name, void *arg)
{
	struct yx_thread_repair	*rep = ((void **)arg)[0];
	const char		*user = ((void **)arg)[1];
	struct yx_thread	 t;

	if (yx_thread_id_valid(name, strlen(name)) &&
	    thread_load(st, name, &t) == YX_OK && strcmp(t.owner, user) == 0)
		return;
	if (unlinkat(dfd, name, 0) == 0)
		rep->index_dropped++;
}

/* owners/<name>: check each entry. */
static void
thread_fix_owner(struct yx_thread_store *st, int dfd, const char *name, void *arg)
{
	void	*pair[2] = { arg, (void *)name };
	int	 ufd;

	if ((ufd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	thread_each(st, ufd, thread_fix_entry, pair);
	close(ufd);
}

/* uids/<name> -> id: drop it unless thread id has exactly that uid. */
static void
thread_fix_uid(struct yx_thread_store *st, int dfd, const char *name, void *arg)
{
	struct yx_thread_repair	*rep = arg;
	struct yx_thread	 t;
	char			 id[sizeof(t.thread_id) + 1];
	ssize_t			 n;

	if (name[0] == '.')	/* the cursor and its temporaries */
		return;
	n = readlinkat(dfd, name, id, sizeof(id) - 1);
	if (n > 0) {
		id[n] = '\0';
		/* a pool box's: freed by the reaper's sweep once the box's
		 * container is gone (its directory names the uid) */
		if (thread_uid_box_left(st, id))
			return;
		if (yx_thread_id_valid(id, (size_t)n) &&
		    thread_load(st, id, &t) == YX_OK && t.own_uid &&
		    t.uid == strtoul(name, NULL, 10))
			return;
	}
	if (unlinkat(dfd, name, 0) == 0)
		rep->uids_dropped++;
}

/* run/<name>: drop it when no thread of that id exists. */
static void
thread_fix_run(struct yx_thread_store *st, int dfd, const char *name, void *arg)
{
	struct yx_thread_repair	*rep = arg;
	struct yx_thread	 t;

	if (yx_thread_id_valid(name, strlen(name)) &&
	    thread_load(st, name, &t) == YX_OK)
		return;
	if (yx_tree_remove(dfd, name) == YX_OK)
		rep->runs_dropped++;
}

void
yx_thread_store_reconcile(struct yx_thread_store *st, struct yx_thread_repair *rep)
{
	struct yx_thread_repair r;

	memset(&r, 0, sizeof(r));
	thread_each(st, st->dirfd, thread_fix_index, &r);
	thread_each(st, st->ownfd, thread_fix_owner, &r);
	if (st->uidfd != -1)
		thread_each(st, st->uidfd, thread_fix_uid, &r);
	thread_each(st, st->runfd, thread_fix_run, &r);
	thread_each(st, st->dirfd, thread_disk_fix, &r);
	if (r.disks_mounted + r.disks_failed > 0)
		log_info("thread store: %u disk image(s) mounted again, %u "
			 "failed",
		    r.disks_mounted, r.disks_failed);
	if (rep != NULL)
		*rep = r;
}

/*
 * Remove the hidden leftovers of the store: tombstones, and with `tmp` the
 * temporaries too, until `deadline` (0: none). Returns the count removed;
 * *leftp the count still there.
 */
static unsigned
thread_sweep(struct yx_thread_store *st, bool tmp, int64_t deadline,
    unsigned *leftp)
{
	struct dirent	*de;
	DIR		*d;
	unsigned	 n = 0, left = 0;
	int		 fd;

	if ((fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		goto done;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		goto done;
	}
	while ((de = readdir(d)) != NULL) {
		if ((!tmp || strncmp(de->d_name, ".tmp-", 5) != 0) &&
		    strncmp(de->d_name, ".trash-", 7) != 0)
			continue;
		if ((deadline == 0 || yx_mono_ms() < deadline) &&
		    thread_disk_drop(st, de->d_name) == YX_OK &&
		    yx_tree_remove_until(st->dirfd, de->d_name, deadline) == YX_OK) {
			thread_uid_release_tomb(st, de->d_name);
			n++;
		} else
			left++;
	}
	closedir(d);
done:
	if (leftp != NULL)
		*leftp = left;
	return n;
}

unsigned
yx_thread_store_sweep(struct yx_thread_store *st)
{
	return thread_sweep(st, true, 0, NULL);
}

unsigned
yx_thread_store_sweep_trash(struct yx_thread_store *st, int64_t budget_ms,
    unsigned *leftp)
{
	return thread_sweep(st, false, budget_ms > 0 ? yx_mono_ms() + budget_ms : 0, leftp);
}
