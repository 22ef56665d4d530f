/*
 * h_exec.c - POST /api/execute (API.md "Agent view"): run one command in
 * the thread's sandbox through the executor (include/yuxi/executor.h),
 * which acquires the container lazily, enforces the timeout and the output
 * cap, and masks host paths. The output is made valid UTF-8 (U+FFFD for
 * invalid bytes) before it goes into JSON.
 */
#include "config.h"

#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid. */
static size_t
utf8_seq(const unsigned char *p, size_t n)
{
	size_t	len, i;
	unsigned c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
		return 0;
	return len;
}

/* A JSON string of s with invalid UTF-8 replaced by U+FFFD; NULL on ENOMEM. */
static struct json_object *
json_utf8(const char *s, size_t len)
{
	struct json_object	*o;
	struct yx_buf		 b;
	size_t			 i = 0, k;

	yx_buf_init(&b, len * 3 + 16);
	while (i < len) {
		k = utf8_seq((const unsigned char *)s + i, len - i);
		if ((k > 0 ? yx_buf_append(&b, s + i, k) :
		    yx_buf_append(&b, "\xef\xbf\xbd", 3)) != YX_OK) {
			yx_buf_fini(&b);
			return NULL;
		}
		i += k > 0 ? k : 1;
	}
	o = json_object_new_string_len(b.data != NULL ? b.data : "", (int)b.len);
	yx_buf_fini(&b);
	return o;
}

static struct json_object *
exec_json(const struct yx_exec_output *out)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "output", json_utf8(out->output != NULL ? out->output : "",
	    out->output != NULL ? out->len : 0));
	json_object_object_add(o, "exit_code", json_object_new_int(out->exit_code));
	json_object_object_add(o, "truncated", json_object_new_boolean(out->truncated));
	json_object_object_add(o, "timed_out", json_object_new_boolean(out->timed_out));
	json_object_object_add(o, "duration_ms", json_object_new_int64(out->duration_ms));
	if (out->truncated && out->full_output_path[0] != '\0')
		json_object_object_add(o, "full_output_path",
		    json_object_new_string(out->full_output_path));
	return o;
}

/* Parse the body: thread id, command, timeout. Sends errors itself. */
static int
exec_parse(struct yx_http_req *r, struct json_object *body, const char **tid,
    const char **cmd, int *timeout)
{
	struct json_object *v;

	*timeout = 0;
	if (yx_json_opt_str(body, "thread_id", tid) != YX_OK || *tid == NULL ||
	    !yx_thread_id_valid(*tid, strlen(*tid))) {
		yx_http_send_error(r, YX_E_INVALID_THREAD_ID,
		    "thread_id must match [A-Za-z0-9_-]{1,128}");
		return YX_E_INVALID_THREAD_ID;
	}
	if (yx_json_opt_str(body, "command", cmd) != YX_OK || *cmd == NULL ||
	    (*cmd)[0] == '\0') {
		yx_http_send_error(r, YX_E_BAD_REQUEST, "command must be a non-empty string");
		return YX_E_BAD_REQUEST;
	}
	if (json_object_object_get_ex(body, "timeout", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0) {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "timeout must be a positive integer number of seconds");
			return YX_E_BAD_REQUEST;
		}
		/* capped, not refused (API.md): the executor caps at 600 s */
		*timeout = json_object_get_int64(v) > 600 ? 600 :
		    (int)json_object_get_int64(v);
	}
	return YX_OK;
}

int
yx_h_execute(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*body = NULL, *o = NULL;
	struct yx_exec_request	 req;
	struct yx_exec_output	 out;
	struct yx_skill_set	 skills;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	const char		*tid = NULL, *cmd = NULL;
	int			 timeout, rc;

	yx_errctx_clear(&e);
	memset(&out, 0, sizeof(out));
	if ((rc = yx_need_user(r)) != YX_OK)
		return rc;
	if ((rc = yx_http_read_json(r, &body, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((rc = exec_parse(r, body, &tid, &cmd, &timeout)) != YX_OK ||
	    (rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
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
	req.thread_id = t.thread_id;
	req.owner = t.owner;
	req.agent_id = t.agent_id;
	req.skills = &skills;
	req.command = cmd;
	req.timeout_sec = timeout;
	if ((rc = yx_executor_run(w->exec, &req, &out, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((o = exec_json(&out)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	rc = yx_http_send_json(r, 200, o);
done:
	yx_exec_output_fini(&out);
	json_object_put(o);
	json_object_put(body);
	return rc;
}
