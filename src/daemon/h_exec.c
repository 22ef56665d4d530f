/* SPDX-License-Identifier: MIT */
/*
 * h_exec.c - POST /api/execute (docs/api.md "Agent view"): run one command in
 * the thread's sandbox through the executor (include/yuxi/executor.h),
 * which acquires the container lazily, enforces the timeout and the output
 * cap, and masks host paths. The output is made valid UTF-8 (U+FFFD for
 * invalid bytes) as it is written into the JSON reply. With "stream": true
 * the answer is streamed instead (exec_stream.c). POST
 * /api/sessions/{id}/execute is the same with the command run in the
 * session's shell (docs/api.md "Sessions"): its reply adds "cwd" and
 * "session_ended".
 *
 * A command holds its worker until it ends (up to 600 s): the route takes
 * one of the user's slots (YX_R_SLOT, slots.c) before this runs, and the
 * router reads and parses the JSON body (YX_R_JSON).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/buf.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/path.h"
#include "yuxi/sessions.h"
#include "yuxi/text.h"

#define YX_REPLY_MAX	INT32_MAX	/* yx_http_send_raw's limit */

/*
 * The reply body, written directly rather than through json-c: the output
 * can be megabytes, and json-c would copy it and escape it byte by byte
 * (~20% of a worker's time on a 1 MiB reply). Same JSON, same key order.
 */
static int
exec_body(const struct yx_exec_output *out, struct yx_buf *b)
{
	int rc;

	if ((rc = yx_buf_puts(b, "{\"output\":")) != YX_OK ||
	    (rc = yx_json_str_append(b, out->output != NULL ? out->output : "",
		 out->output != NULL ? out->len : 0)) != YX_OK ||
	    (rc = yx_buf_puts(b, ",")) != YX_OK ||
	    (rc = yx_exec_fields(out, b)) != YX_OK)
		return rc;
	return yx_buf_puts(b, "}");
}

/* The body's "transaction" (docs/api.md "Transactions"): YX_OK with *mode,
 * else the 400 sent. */
static int
exec_tx_parse(struct yx_http_req *r, struct json_object *body, enum yx_tx_mode *mode)
{
	struct json_object	*v;
	const char		*s;

	*mode = YX_TX_NONE;
	if (!json_object_object_get_ex(body, "transaction", &v) ||
	    json_object_is_type(v, json_type_null))
		return YX_OK;
	if (json_object_is_type(v, json_type_boolean)) {
		*mode = json_object_get_boolean(v) ? YX_TX_COMMIT : YX_TX_NONE;
		return YX_OK;
	}
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (strcmp(s, "commit_on_success") == 0)
		*mode = YX_TX_COMMIT;
	else if (strcmp(s, "discard") == 0)
		*mode = YX_TX_DISCARD;
	else {
		yx_http_send_error(r, YX_E_BAD_REQUEST,
		    "transaction must be \"commit_on_success\", true or \"discard\"");
		return YX_E_BAD_REQUEST;
	}
	return YX_OK;
}

/* Parse the body: thread id, command, timeout, stream. Sends errors
 * itself. */
static int
exec_parse(struct yx_http_req *r, struct json_object *body, const char **tid,
    const char **cmd, int *timeout, bool *stream)
{
	struct json_object *v;

	*timeout = 0;
	*stream = false;
	if (json_object_object_get_ex(body, "stream", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "stream must be true or false");
			return YX_E_BAD_REQUEST;
		}
		*stream = json_object_get_boolean(v);
	}
	/* capped, not refused (docs/api.md): the executor caps at 600 s */
	return yx_parse_command(r, body, tid, cmd, timeout, 600);
}

/*
 * A session's command (sid): the caller's thread (into *t) and its
 * directory (*tdir), and the session, which must run as its record says
 * (a busy or ended shell is its own command's answer, at once); its
 * shell keeps its own directory and environment (no cwd or env here).
 * Sends errors.
 */
static int
exec_session(struct yx_wctx *w, struct yx_http_req *r, const char *sid,
    const char *tid, const char *cmd, struct yx_thread *t, int *tdir,
    struct yx_exec_session *sres)
{
	struct yx_session	s;
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	if (json_object_object_get_ex(w->body, "cwd", NULL) ||
	    json_object_object_get_ex(w->body, "env", NULL)) {
		yx_http_send_error(r, YX_E_BAD_REQUEST,
		    "a session's commands run where its shell is, with its "
		    "variables: no cwd or env (run cd or export instead)");
		return YX_E_BAD_REQUEST;
	}
	if (strlen(cmd) > YX_SESSION_CMD_MAX) {
		yx_http_send_error(r, YX_E_PAYLOAD_TOO_LARGE,
		    "a session's command is at most 65000 bytes");
		return YX_E_PAYLOAD_TOO_LARGE;
	}
	if ((rc = yx_keeper_thread(w, r, tid, strlen(tid), t)) != YX_OK ||
	    (rc = yx_need_session_id(r, sid)) != YX_OK)
		return rc;
	if ((*tdir = yx_thread_dirfd(&w->store, t->thread_id)) == -1)
		rc = yx_fail(&e, YX_E_NOT_FOUND, NULL);	/* just deleted */
	else if ((rc = yx_session_peek(*tdir, sid, &s, &e)) == YX_OK &&
	    s.state != YX_SESSION_RUNNING)
		rc = yx_fail(&e, YX_E_SESSION_NOT_FOUND, "the session has ended%s%s",
		    s.end_reason[0] != '\0' ? " by " : "", s.end_reason);
	if (rc != YX_OK) {
		yx_send_errctx(r, rc, &e);
		return rc;
	}
	/* where it is, for a command the path policy refuses (nothing runs) */
	memset(sres, 0, sizeof(*sres));
	memcpy(sres->cwd, s.cwd, sizeof(sres->cwd));
	return YX_OK;
}

int
yx_h_execute(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*body = w->body;
	struct yx_exec_request	 req;
	struct yx_exec_session	 sres;
	struct yx_buf		 reply;
	struct yx_exec_output	 out;
	struct yx_skill_set	 skills;
	struct yx_exec_opts	 opts;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	const char		*tid = NULL, *cmd = NULL;
	const char		*sid = arg != NULL && arg[0] != '\0' ? arg : NULL;
	enum yx_tx_mode		 tx;
	bool			 stream;
	int			 timeout, rc, tdir = -1, txlock = -1;

	yx_errctx_clear(&e);
	memset(&out, 0, sizeof(out));
	yx_buf_init(&reply, YX_REPLY_MAX);
	if ((rc = exec_parse(r, body, &tid, &cmd, &timeout, &stream)) != YX_OK ||
	    (rc = exec_tx_parse(r, body, &tx)) != YX_OK)
		goto done;
	yx_audit_note_command(&w->note, cmd, strlen(cmd));
	if (sid != NULL) {	/* POST /api/sessions/{id}/execute */
		if ((rc = exec_session(w, r, sid, tid, cmd, &t, &tdir, &sres)) != YX_OK)
			goto done;
	} else if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		goto done;
	/* MARK: no executor in this process (engine or provider missing): 503 */
	if (w->exec == NULL) {
		rc = YX_E_BACKEND_UNAVAILABLE;
		yx_http_send_error(r, rc, "sandbox backend unavailable");
		goto done;
	}
	if ((rc = yx_agents_skills(w->agents, t.agent_id, t.agent_config_id, &skills)) != YX_OK)
		goto done;
	memset(&req, 0, sizeof(req));
	yx_exec_request_thread(&req, &t);
	req.skills = &skills;
	req.profile = yx_agents_profile(w->agents, t.agent_id, t.agent_config_id);
	if (sid == NULL) {
		if ((rc = yx_exec_opts_parse(r, body, req.profile, &opts)) != YX_OK)
			goto done;
		yx_exec_opts_apply(&opts, &req);
	} else if (tx != YX_TX_NONE) {
		/* a session's transactional command runs in the session's
		 * directory, not in its shell (docs/api.md "Transactions") */
		struct yx_vpath vp;

		if (yx_path_resolve(sres.cwd, strlen(sres.cwd), &vp) == YX_OK &&
		    vp.root == YX_ROOT_USER_DATA)
			req.cwd = sres.cwd;
	} else {
		req.session_id = sid;
		out.session = &sres;
	}
	req.command = cmd;
	req.timeout_sec = timeout;
	req.tx = tx;
	/* one transaction of a thread at a time: a second is 409 */
	if (tx != YX_TX_NONE &&
	    (rc = yx_thread_txlock(&w->store, &t, &txlock, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if (stream) {
		rc = yx_exec_stream(w, r, &req, &out);
		goto done;
	}
	if ((rc = yx_executor_run(w->exec, &req, &out, &e)) != YX_OK ||
	    (rc = yx_exec_session_ran(&out, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	w->note.has_exit = true;
	w->note.exit_code = out.exit_code;
	if ((rc = exec_body(&out, &reply)) != YX_OK) {
		yx_http_send_error(r, rc, NULL);
		goto done;
	}
	rc = yx_http_send_raw(r, 200, YX_CT_JSON, reply.data, reply.len);
done:
	if (txlock != -1)
		close(txlock);
	if (tdir != -1) {
		/* the session's record takes the use (and the end) */
		if (out.session != NULL)
			yx_session_note(tdir, sid, &out, NULL);
		close(tdir);
	}
	yx_exec_output_fini(&out);
	yx_buf_fini(&reply);
	return rc;
}
