/* SPDX-License-Identifier: MIT */
/*
 * session.c - a thread's sessions on the host side; see
 * include/yuxi/sessions.h for the contract and docs/agent.md "Sessions"
 * for the keeper inside the sandbox (src/guest/agent_session.c).
 *
 * The records live in <thread>/sessions/ and are kept as the process
 * records are (keeper_rec.c): written before the shell starts, refreshed
 * from the keepers on every read, an update never brings back a deleted
 * one. Starting takes an exclusive flock on the records' directory, so two
 * workers never both see room for one more session. A command's outcome
 * comes back through the executor (exec_lease.c); yx_session_note writes
 * what it changed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <json-c/json.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/sessions.h"
#include "yuxi/threads.h"
#include "exec/exec_int.h"
#include "guest/agent_proto.h"

#define SESS_DIR	"sessions"
#define SESS_RING	4096	/* the shell's own chatter */

const char *
yx_session_state_name(int state)
{
	switch (state) {
	case YX_SESSION_RUNNING: return "running";
	case YX_SESSION_ENDED: return "ended";
	default: return "lost";
	}
}

static int
sess_state_of(const char *s)
{
	if (strcmp(s, "running") == 0)
		return YX_SESSION_RUNNING;
	return strcmp(s, "ended") == 0 ? YX_SESSION_ENDED : YX_SESSION_LOST;
}

bool
yx_session_id_valid(const char *id)
{
	return exec_rec_id_valid(id, 's');
}

/* Write s's record (how: exec_rec_put's). YX_OK, YX_E_NOT_FOUND (update
 * of a gone record), YX_E_IO, YX_E_NOMEM. */
static int
sess_write(int dfd, const struct yx_session *s, unsigned how)
{
	struct json_object	*o = json_object_new_object();
	int			 rc;

	if (o == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "session_id", json_object_new_string(s->id));
	json_object_object_add(o, "shell", json_object_new_string(s->shell));
	json_object_object_add(o, "state",
	    json_object_new_string(yx_session_state_name(s->state)));
	json_object_object_add(o, "exit_code", json_object_new_int(s->exit_code));
	json_object_object_add(o, "end_reason", json_object_new_string(s->end_reason));
	json_object_object_add(o, "created_at", json_object_new_int64(s->created_at));
	json_object_object_add(o, "last_used", json_object_new_int64(s->last_used));
	json_object_object_add(o, "ended_at", json_object_new_int64(s->ended_at));
	json_object_object_add(o, "commands",
	    json_object_new_int64((int64_t)s->commands));
	json_object_object_add(o, "cwd", json_object_new_string(s->cwd));
	if (s->starting)
		json_object_object_add(o, "starting", json_object_new_boolean(1));
	rc = exec_rec_put(dfd, s->id, o, how);
	json_object_put(o);
	return rc;
}

/* Read the record of id. YX_OK; YX_E_SESSION_NOT_FOUND; YX_E_IO. */
static int
sess_read(int dfd, const char *id, struct yx_session *s,
    struct yx_errctx *err)
{
	struct json_object	*o, *b;
	const char		*state, *v;
	int			 rc;

	memset(s, 0, sizeof(*s));
	if (!yx_session_id_valid(id) ||
	    (rc = exec_rec_get(dfd, id, &o)) == YX_E_NOT_FOUND)
		return yx_fail(err, YX_E_SESSION_NOT_FOUND, "no such session");
	if (rc == YX_OK && (state = exec_rec_str(o, "state")) == NULL)
		rc = YX_E_IO;
	if (rc == YX_OK) {
		snprintf(s->id, sizeof(s->id), "%s", id);
		s->state = sess_state_of(state);
		if ((v = exec_rec_str(o, "shell")) != NULL)
			snprintf(s->shell, sizeof(s->shell), "%s", v);
		if ((v = exec_rec_str(o, "end_reason")) != NULL)
			snprintf(s->end_reason, sizeof(s->end_reason), "%s", v);
		if ((v = exec_rec_str(o, "cwd")) != NULL)
			snprintf(s->cwd, sizeof(s->cwd), "%s", v);
		s->exit_code = (int)exec_rec_int(o, "exit_code", -1);
		s->created_at = exec_rec_int(o, "created_at", 0);
		s->last_used = exec_rec_int(o, "last_used", 0);
		s->ended_at = exec_rec_int(o, "ended_at", 0);
		s->commands = (uint64_t)exec_rec_int(o, "commands", 0);
		s->starting = json_object_object_get_ex(o, "starting", &b) &&
		    json_object_get_boolean(b);
	}
	json_object_put(o);
	if (rc != YX_OK)
		return yx_fail(err, rc, "session record %s unreadable", id);
	return YX_OK;
}

/* What a keeper said of its ended shell, into s. */
static void
sess_ended(struct yx_session *s, const struct exec_kstatus *ks)
{
	s->state = YX_SESSION_ENDED;
	s->busy = false;
	s->exit_code = ks->code >= 0 && ks->code <= 255 ? (int)ks->code : -1;
	s->ended_at = ks->ended > 0 ? ks->ended : yx_now_ms();
	snprintf(s->end_reason, sizeof(s->end_reason), "%s",
	    ks->idle ? "idle" : ks->killed ? "killed" :
					     "exit");
}

/*
 * Ask the keeper of a running session how it is (busy, or ended); a
 * keeper gone leaves its exit file, else the session is lost. True when
 * the record changed.
 */
static bool
sess_refresh(const struct yx_proc_ctx *c, struct yx_session *s)
{
	struct exec_kstatus	ks;
	char			st[YX_AGENT_STATUS_MAX + 1];
	int			rc;

	if (s->state != YX_SESSION_RUNNING)
		return false;
	if (c->until > 0 && yx_mono_ms() >= c->until)
		return false;	/* no time left: as it was */
	rc = exec_keeper_op(c, s->id, YX_AGENT_T_STATUS, NULL, 0, 0, NULL, NULL,
	    st, NULL);
	/* a start still under way (another request's): no keeper yet */
	if (rc == YX_E_NOT_FOUND && s->starting &&
	    yx_now_ms() - s->created_at < YX_PROC_START_MAX_MS)
		return false;
	if (rc == YX_E_NOT_FOUND) {
		if (exec_keeper_exit(c, s->id, &ks) == 0)
			sess_ended(s, &ks);
		else {
			s->state = YX_SESSION_LOST;
			s->ended_at = yx_now_ms();
			snprintf(s->end_reason, sizeof(s->end_reason), "lost");
		}
		return true;
	}
	if (rc != YX_OK || exec_kstatus_parse(st, &ks) == -1)
		return false;	/* unsure: as it was */
	s->busy = ks.busy;
	if (ks.run)
		return false;
	sess_ended(s, &ks);
	return true;
}

/* Read and refresh one record, writing it back when it changed. */
static int
sess_load(const struct yx_proc_ctx *c, int dfd, const char *id,
    struct yx_session *s, struct yx_errctx *err)
{
	int rc;

	if ((rc = sess_read(dfd, id, s, err)) != YX_OK)
		return rc;
	if (sess_refresh(c, s))
		(void)sess_write(dfd, s, EXEC_REC_UPDATE);
	return YX_OK;
}

static int
sess_kload(const struct yx_proc_ctx *c, int dfd, const char *id, void *rec)
{
	return c != NULL ? sess_load(c, dfd, id, rec, NULL) :
			   sess_read(dfd, id, rec, NULL);
}

static int64_t
sess_kkey(const void *rec)
{
	return ((const struct yx_session *)rec)->created_at;
}

static const char *
sess_kid(const void *rec)
{
	return ((const struct yx_session *)rec)->id;
}

static bool
sess_klive(const void *rec)
{
	return ((const struct yx_session *)rec)->state == YX_SESSION_RUNNING;
}

static const struct exec_rec_kind sess_kind = {
	"session", 's', sizeof(struct yx_session), YX_SESSION_RECORDS,
	YX_E_SESSION_LIMIT, sess_kload, sess_kkey, sess_kid, sess_klive, NULL
};

/* All records of dfd, refreshed when c is given, oldest first. */
static int
sess_read_all(const struct yx_proc_ctx *c, int dfd, struct yx_session **out,
    size_t *n, struct yx_errctx *err)
{
	return exec_rec_all(c, &sess_kind, dfd, (void **)out, n, err);
}

int
yx_session_list(const struct yx_proc_ctx *c, struct yx_session **out,
    size_t *n, struct yx_errctx *err)
{
	int dfd, rc;

	*out = NULL;
	*n = 0;
	if ((dfd = exec_rec_dir(c->tdir, SESS_DIR, false)) == -1)
		return errno == ENOENT ? YX_OK :
					 yx_fail(err, YX_E_IO, "session records unreadable");
	rc = sess_read_all(c, dfd, out, n, err);
	close(dfd);
	return rc;
}

int
yx_session_get(const struct yx_proc_ctx *c, const char *id,
    struct yx_session *out, struct yx_errctx *err)
{
	int dfd, rc;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(c->tdir, SESS_DIR, false)) == -1)
		return yx_fail(err, YX_E_SESSION_NOT_FOUND, "no such session");
	rc = sess_load(c, dfd, id, out, err);
	close(dfd);
	return rc;
}

unsigned
yx_session_live(int tdir)
{
	struct yx_session	*v;
	size_t			 n, i;
	unsigned		 live = 0;
	int			 dfd;

	if ((dfd = exec_rec_dir(tdir, SESS_DIR, false)) == -1)
		return 0;
	if (sess_read_all(NULL, dfd, &v, &n, NULL) == YX_OK) {
		for (i = 0; i < n; i++)
			live += v[i].state == YX_SESSION_RUNNING;
		free(v);
	}
	close(dfd);
	return live;
}

/* Before a start (records locked): YX_E_SESSION_LIMIT when
 * YUXI_SESSION_MAX run; the oldest ended records go while there are too
 * many. */
static int
sess_room(const struct yx_proc_ctx *c, int dfd, struct yx_errctx *err)
{
	size_t	running;
	int	rc;

	if ((rc = exec_rec_room(c, &sess_kind, dfd, &running, err)) != YX_OK)
		return rc;
	if (running >= (size_t)c->cfg->session_max)
		return yx_fail(err, YX_E_SESSION_LIMIT,
		    "%d sessions are open in this thread already (YUXI_SESSION_MAX)",
		    c->cfg->session_max);
	return YX_OK;
}

int
yx_session_create(struct yx_executor *ex, const struct yx_proc_ctx *c,
    const struct yx_exec_request *req, const char *shell,
    struct yx_session *out, struct yx_errctx *err)
{
	struct yx_exec_request	r = *req;
	struct yx_spawn		sp;
	char			mode[48];
	int			dfd, rc;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(c->tdir, SESS_DIR, true)) == -1)
		return yx_fail(err, YX_E_IO, "session records: %s", strerror(errno));
	if (flock(dfd, LOCK_EX) == -1) {
		rc = yx_fail(err, YX_E_IO, "session records: %s", strerror(errno));
		goto done;
	}
	if ((rc = sess_room(c, dfd, err)) != YX_OK)
		goto done;
	if (exec_rec_new_id('s', out->id) != YX_OK) {
		rc = yx_fail(err, YX_E_IO, "no session id");
		goto done;
	}
	out->state = YX_SESSION_RUNNING;
	out->exit_code = -1;
	out->created_at = out->last_used = yx_now_ms();
	out->starting = true;
	snprintf(out->cwd, sizeof(out->cwd), "%s",
	    req->cwd != NULL ? req->cwd : YX_VROOT_WORKSPACE);
	/* the record first: a crash from here on leaves it, never an
	 * unknown session */
	if ((rc = sess_write(dfd, out, EXEC_REC_CREATE)) != YX_OK) {
		rc = yx_fail(err, rc, "cannot record the session");
		goto done;
	}
	memset(&sp, 0, sizeof(sp));
	sp.id = out->id;
	sp.ring = SESS_RING;
	snprintf(mode, sizeof(mode), "session %s %d", shell, c->cfg->session_idle);
	sp.mode = mode;
	r.command = "exec sh";	/* the keeper starts the shell itself */
	r.timeout_sec = 0;
	if ((rc = yx_executor_spawn(ex, &r, &sp, err)) != YX_OK) {
		(void)unlinkat(dfd, out->id, 0);
		goto done;
	}
	if (strcmp(sp.started, "shell=bash") == 0 || strcmp(sp.started, "shell=sh") == 0)
		memcpy(out->shell, sp.started + 6, strlen(sp.started + 6) + 1);
	out->starting = false;
	(void)sess_write(dfd, out, EXEC_REC_UPDATE);
	log_info("thread %s: session %s started (%s)", req->thread_id, out->id,
	    out->shell);
done:
	close(dfd);	/* drops the lock */
	return rc;
}

int
yx_session_delete(const struct yx_proc_ctx *c, const char *id,
    struct yx_session *out, struct yx_errctx *err)
{
	struct exec_kstatus	ks;
	char			st[YX_AGENT_STATUS_MAX + 1];
	int			dfd, rc;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(c->tdir, SESS_DIR, false)) == -1)
		return yx_fail(err, YX_E_SESSION_NOT_FOUND, "no such session");
	if ((rc = sess_read(dfd, id, out, err)) != YX_OK)
		goto done;
	/* an ended shell's keeper lingers a little: it goes too */
	if (out->state != YX_SESSION_LOST) {
		rc = exec_keeper_op(c, id, YX_AGENT_T_KILL, NULL, 0, 0, NULL, NULL,
		    st, err);
		if (rc == YX_OK && exec_kstatus_parse(st, &ks) == 0 &&
		    out->state == YX_SESSION_RUNNING) {
			sess_ended(out, &ks);
			snprintf(out->end_reason, sizeof(out->end_reason), "killed");
		} else if (rc == YX_E_NOT_FOUND)
			(void)sess_refresh(c, out);
		else if (rc != YX_OK && out->state == YX_SESSION_RUNNING)
			goto done;	/* unsure whether it died: keep the record */
		rc = YX_OK;
	}
	exec_keeper_forget_exit(c, id);
	rc = unlinkat(dfd, id, 0) == 0 || errno == ENOENT ? YX_OK :
							    yx_fail(err, YX_E_IO, "session record: %s", strerror(errno));
	log_info("session %s killed and forgotten", id);
done:
	close(dfd);
	return rc;
}

int
yx_session_peek(int tdir, const char *id, struct yx_session *out,
    struct yx_errctx *err)
{
	int dfd, rc;

	memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(tdir, SESS_DIR, false)) == -1)
		return yx_fail(err, YX_E_SESSION_NOT_FOUND, "no such session");
	rc = sess_read(dfd, id, out, err);
	close(dfd);
	return rc;
}

void
yx_session_note(int tdir, const char *id, const struct yx_exec_output *o,
    struct yx_session *out)
{
	struct yx_session	s;
	int			dfd;

	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if ((dfd = exec_rec_dir(tdir, SESS_DIR, false)) == -1)
		return;
	if (sess_read(dfd, id, &s, NULL) == YX_OK &&
	    s.state == YX_SESSION_RUNNING) {
		s.last_used = yx_now_ms();
		if (o->session != NULL && o->session->ran) {
			s.commands++;
			snprintf(s.cwd, sizeof(s.cwd), "%s", o->session->cwd);
		}
		if (o->session != NULL && o->session->ended) {
			s.state = YX_SESSION_ENDED;
			s.exit_code = o->session->ran ? o->exit_code : -1;
			s.ended_at = yx_now_ms();
			snprintf(s.end_reason, sizeof(s.end_reason), "exit");
		}
		/* a use is not worth an fsync per command: after a crash the
		 * record may tell an older directory, never a wrong state */
		(void)sess_write(dfd, &s, s.state == YX_SESSION_RUNNING ? EXEC_REC_HINT : EXEC_REC_UPDATE);
		if (out != NULL)
			*out = s;
	}
	close(dfd);
}

bool
yx_session_keeps_alive(const struct yx_config *cfg, struct yx_thread_store *st,
    const char *thread_id, int64_t now_ms)
{
	struct yx_session	*v;
	size_t			 n = 0, i;
	int64_t			 bound;
	bool			 keep = false;
	int			 tdir, dfd;

	bound = (cfg->session_idle > 0 ? cfg->session_idle : cfg->proc_keepalive) *
	    1000LL;
	if (bound == 0 || (tdir = yx_thread_dirfd(st, thread_id)) == -1)
		return false;
	if ((dfd = exec_rec_dir(tdir, SESS_DIR, false)) != -1) {
		if (sess_read_all(NULL, dfd, &v, &n, NULL) == YX_OK) {
			for (i = 0; i < n && !keep; i++)
				keep = v[i].state == YX_SESSION_RUNNING &&
				    now_ms - v[i].last_used < bound;
			free(v);
		}
		close(dfd);
	}
	close(tdir);
	return keep;
}
