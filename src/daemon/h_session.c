/* SPDX-License-Identifier: MIT */
/*
 * h_session.c - a thread's sessions (docs/api.md "Sessions"): POST
 * /api/sessions, GET /api/sessions, GET and DELETE /api/sessions/{id}, over
 * include/yuxi/sessions.h. A session's command, POST
 * /api/sessions/{id}/execute, is execute's handler (h_exec.c).
 *
 * Checks as for processes, in this order: identity (401), thread id (400),
 * the caller's thread (404 for an unknown and for another user's thread
 * alike), then the session (404 session_not_found, also for the id of
 * another thread's session: the records are the thread's own). Each route
 * takes one of the user's slots (YX_R_SLOT) and talks to the keepers within
 * the request's budget (keeper_req.c).
 *
 * Limits: YUXI_SESSION_MAX live sessions per thread (counted under the
 * thread's records lock, session.c) and YUXI_SESSION_USER_MAX per user,
 * counted over the user's threads that have a sandbox (a thread without
 * one has no live session) under an flock of the user's directory of the
 * owners' index, so that two creates of one user never both see room.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "common/control_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/sessions.h"
#include "yuxi/text.h"

/* A session as the API shows it; NULL on ENOMEM. */
static struct json_object *
sess_json(const struct yx_session *s, const char *tid)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return NULL;
	json_object_object_add(o, "session_id", json_object_new_string(s->id));
	json_object_object_add(o, "thread_id", json_object_new_string(tid));
	json_object_object_add(o, "shell",
	    s->shell[0] != '\0' ? json_object_new_string(s->shell) : NULL);
	json_object_object_add(o, "state",
	    json_object_new_string(yx_session_state_name(s->state)));
	json_object_object_add(o, "busy", json_object_new_boolean(s->busy));
	json_object_object_add(o, "cwd", yx_json_text(s->cwd, strlen(s->cwd)));
	json_object_object_add(o, "created_at", yx_json_time(s->created_at));
	json_object_object_add(o, "last_used", yx_json_time(s->last_used));
	json_object_object_add(o, "commands", json_object_new_int64((int64_t)s->commands));
	if (s->state != YX_SESSION_RUNNING) {
		json_object_object_add(o, "ended_at", yx_json_time(s->ended_at));
		json_object_object_add(o, "end_reason",
		    json_object_new_string(s->end_reason));
		json_object_object_add(o, "exit_code",
		    s->exit_code >= 0 ? json_object_new_int(s->exit_code) : NULL);
	}
	return o;
}

/* "shell": absent (auto), "bash" or "sh". Sends errors. */
static int
sess_shell(struct yx_http_req *r, struct json_object *body, const char **shell)
{
	const char *s = NULL;

	*shell = "auto";
	if (yx_json_opt_str(body, "shell", &s) == YX_OK &&
	    (s == NULL || strcmp(s, "bash") == 0 || strcmp(s, "sh") == 0)) {
		if (s != NULL)
			*shell = s;
		return YX_OK;
	}
	yx_http_send_error(r, YX_E_BAD_REQUEST, "shell must be \"bash\" or \"sh\"");
	return YX_E_BAD_REQUEST;
}

/*
 * The live sessions of owner across the threads that have a sandbox
 * (their records, not asked: a refreshed count is the thread's own).
 */
static unsigned
sess_user_live(struct yx_wctx *w, const char *owner)
{
	struct yx_shm_slot	 slot;
	struct yx_thread	*v = NULL;
	size_t			 n = 0, i;
	unsigned		 live = 0;
	int			 tdir;

	if (yx_thread_list(&w->store, owner, &v, &n, NULL) != YX_OK)
		return 0;
	for (i = 0; i < n; i++) {
		if (yx_provider_slot(w->table, v[i].thread_id, YX_SLOT_BY_THREAD,
			&slot, NULL) != YX_OK ||
		    (tdir = yx_thread_dirfd(&w->store, v[i].thread_id)) == -1)
			continue;
		live += yx_session_live(tdir);
		close(tdir);
	}
	free(v);
	return live;
}

/* The user's lock over session starts: an flock of their directory of
 * the owners' index (-1 when it cannot be had: no lock, as before). */
static int
sess_user_lock(struct yx_wctx *w, const char *owner)
{
	int fd;

	if (w->store.ownfd == -1 ||
	    (fd = openat(w->store.ownfd, owner,
		 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (flock(fd, LOCK_EX) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int
yx_h_sessions_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_keeper_req	 p;
	struct yx_session	 s;
	struct json_object	*body = w->body;
	struct yx_skill_set	 skills;
	struct yx_exec_opts	 opts;
	struct yx_errctx	 e;
	const char		*tid = NULL, *shell;
	int			 rc, lock = -1;

	(void)arg;
	memset(&p, 0, sizeof(p));	/* closed below before it was opened */
	p.c.tdir = p.c.rundir = -1;
	yx_errctx_clear(&e);
	if ((rc = sess_shell(r, body, &shell)) != YX_OK)
		return rc;
	if (yx_json_opt_str(body, "thread_id", &tid) != YX_OK)
		tid = NULL;
	if ((rc = yx_keeper_open(w, r, tid, tid != NULL ? strlen(tid) : 0, 0,
		 &p)) != YX_OK)
		goto done;
	if ((rc = yx_exec_opts_parse(r, body, p.req.profile, &opts)) != YX_OK ||
	    (rc = yx_agents_skills(w->agents, p.t.agent_id, p.t.agent_config_id,
		 &skills)) != YX_OK)
		goto done;
	p.req.skills = &skills;
	yx_exec_opts_apply(&opts, &p.req);
	lock = sess_user_lock(w, p.t.owner);
	if (!YX_CONTROL_OFF("sesslimit") &&
	    sess_user_live(w, p.t.owner) >= (unsigned)w->cfg->session_user_max) {
		rc = yx_fail(&e, YX_E_SESSION_LIMIT,
		    "%d sessions are open across your threads already "
		    "(YUXI_SESSION_USER_MAX)",
		    w->cfg->session_user_max);
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((rc = yx_session_create(w->exec, &p.c, &p.req, shell, &s, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	rc = yx_http_send_obj(r, 201, sess_json(&s, p.t.thread_id));
done:
	if (lock != -1)
		close(lock);
	yx_keeper_close(&p);
	return rc;
}

/* The listing's parts (yx_keeper_list). */
static int
sess_list_any(const struct yx_proc_ctx *c, void **v, size_t *n,
    struct yx_errctx *e)
{
	return yx_session_list(c, (struct yx_session **)v, n, e);
}

static struct json_object *
sess_item(const void *item, const char *tid)
{
	return sess_json(item, tid);
}

static void
sess_free_any(void *v, size_t n)
{
	(void)n;
	free(v);
}

int
yx_h_sessions_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	static const struct yx_keeper_listing l = { "sessions",
		sizeof(struct yx_session), sess_list_any, sess_item, sess_free_any };

	(void)arg;
	return yx_keeper_list(w, r, &l);
}

/* GET (del false) or DELETE of one session. */
static int
sess_one(struct yx_wctx *w, struct yx_http_req *r, const char *arg, bool del)
{
	struct json_object	*o;
	struct yx_keeper_req	 p;
	struct yx_session	 s;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_keeper_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = yx_need_session_id(r, arg)) == YX_OK &&
	    (rc = del ? yx_session_delete(&p.c, arg, &s, &e) :
			yx_session_get(&p.c, arg, &s, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK) {
		if ((o = sess_json(&s, p.t.thread_id)) != NULL && del)
			json_object_object_add(o, "forgotten", json_object_new_boolean(1));
		rc = yx_http_send_obj(r, 200, o);
	}
	yx_keeper_close(&p);
	return rc;
}

int
yx_h_sessions_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return sess_one(w, r, arg, false);
}

int
yx_h_sessions_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return sess_one(w, r, arg, true);
}
