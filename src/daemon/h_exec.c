/* SPDX-License-Identifier: MIT */
/*
 * h_exec.c - POST /api/execute (docs/api.md "Agent view"): run one command in
 * the thread's sandbox through the executor (include/yuxi/executor.h),
 * which acquires the container lazily, enforces the timeout and the output
 * cap, and masks host paths. The output is made valid UTF-8 (U+FFFD for
 * invalid bytes) as it is written into the JSON reply. With "stream": true
 * the answer is streamed instead (h_stream.c).
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

int
yx_h_execute(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*body = w->body;
	struct yx_exec_request	 req;
	struct yx_buf		 reply;
	struct yx_exec_output	 out;
	struct yx_skill_set	 skills;
	struct yx_exec_opts	 opts;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	const char		*tid = NULL, *cmd = NULL;
	bool			 stream;
	int			 timeout, rc;

	yx_errctx_clear(&e);
	memset(&out, 0, sizeof(out));
	yx_buf_init(&reply, YX_REPLY_MAX);
	if ((rc = exec_parse(r, body, &tid, &cmd, &timeout, &stream)) != YX_OK)
		goto done;
	yx_audit_note_command(&w->note, cmd, strlen(cmd));
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
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
	if ((rc = yx_exec_opts_parse(r, body, req.profile, &opts)) != YX_OK)
		goto done;
	yx_exec_opts_apply(&opts, &req);
	req.command = cmd;
	req.timeout_sec = timeout;
	if (stream) {
		rc = yx_exec_stream(w, r, &req);
		goto done;
	}
	if ((rc = yx_executor_run(w->exec, &req, &out, &e)) != YX_OK) {
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
	yx_exec_output_fini(&out);
	yx_buf_fini(&reply);
	return rc;
}
