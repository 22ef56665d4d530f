/* SPDX-License-Identifier: MIT */
/*
 * mcp_call.c - a tool call of the MCP endpoint as a sub-request of the
 * POST that carries it (mcp_int.h), and its answer as the tool's result.
 *
 * The sub-request is made by yx_http_req_sub() (yuxi/http.h "Capture
 * mode") from the POST: the same identity (the FastCGI params nginx set;
 * nothing of the JSON-RPC message can change it), request id, client and
 * FastCGI connection; the tool gives only the method, the route's path,
 * the query and the body. It then goes through yx_router_dispatch() like
 * any request of nginx's: the route's declared needs (identity, the JSON
 * body, one of the user's slots), its handler (on a front: the
 * forwarding to the thread's host), one log line, one metrics sample and
 * one audit line marked "via":"mcp" with the session id. The handler's
 * answer lands in memory; an API error becomes a tool error with the
 * same code, message (host paths already masked by the handler) and
 * request id.
 *
 * execute runs in the stream form: its NDJSON events (h_stream.c, or
 * relayed piece by piece from a front's host) are read as they are
 * written; each output event becomes a progress notification when the
 * client asked for them, and the exit event the result. A client that
 * goes away is seen as for the stream form over HTTP: the executor's tick
 * polls the POST's FastCGI connection (yx_http_client_gone), or a
 * notification cannot be written; the command is then killed.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/control_int.h"
#include "mcp_int.h"
#include "yuxi/log.h"

#define MCP_JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define MCP_LINE_MAX	(8u << 20)	/* bytes of one NDJSON event */

void
yx_mcp_call_init(struct yx_mcp_call *c, size_t body_max, size_t inline_max)
{
	c->method = YX_M_GET;
	c->path[0] = '\0';
	yx_buf_init(&c->qs, 4 * YX_QUERY_MAX);
	yx_buf_init(&c->body, SIZE_MAX);
	yx_http_capture_init(&c->cap, body_max);
	c->cap.inline_max = inline_max;
}

void
yx_mcp_call_fini(struct yx_mcp_call *c)
{
	yx_buf_fini(&c->qs);
	yx_buf_fini(&c->body);
	yx_http_capture_fini(&c->cap);
}

int
yx_mcp_call_query(struct yx_mcp_call *c, const char *key, const char *val, size_t len)
{
	static const char	 hex[] = "0123456789ABCDEF";
	const unsigned char	*p = (const unsigned char *)val;
	char			 e[3] = { '%', 0, 0 };
	size_t			 i;
	int			 rc;

	/* the keys are ours ([a-z_.] and a metadata key, which the route
	 * checks); a value's every byte outside [A-Za-z0-9._~/-] is encoded */
	if ((c->qs.len > 0 && (rc = yx_buf_puts(&c->qs, "&")) != YX_OK) ||
	    (rc = yx_pct_encode_path(&c->qs, key)) != YX_OK ||
	    (rc = yx_buf_puts(&c->qs, "=")) != YX_OK)
		return rc;
	for (i = 0; i < len; i++) {
		if ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		    (p[i] >= '0' && p[i] <= '9') || (p[i] != '\0' && strchr("._~/-", p[i]) != NULL))
			rc = yx_buf_append(&c->qs, p + i, 1);
		else {
			e[1] = hex[p[i] >> 4];
			e[2] = hex[p[i] & 15];
			rc = yx_buf_append(&c->qs, e, 3);
		}
		if (rc != YX_OK)
			return rc;
	}
	return YX_OK;
}

int
yx_mcp_call_run(struct yx_mcp_req *m, struct yx_mcp_call *c, struct yx_errctx *e)
{
	struct yx_http_req	sub;
	char			path[YX_URI_MAX + YX_CFG_PATH];
	int			rc;

	if (c->qs.len > YX_QUERY_MAX)
		return yx_fail(e, YX_E_BAD_REQUEST, "query string too long");
	snprintf(path, sizeof(path), "%s%s", m->w->cfg->url_prefix, c->path);
	c->cap.qs = c->qs.data != NULL ? c->qs.data : "";
	if (c->method == YX_M_POST) {
		c->cap.in = c->body.data != NULL ? c->body.data : "";
		c->cap.in_len = c->body.len;
	}
	if ((rc = yx_http_req_sub(&sub, m->r, c->method, path, &c->cap, e)) == YX_OK) {
		sub.via = "mcp";
		sub.via_session = m->session;
		if (YX_CONTROL_BUILD && m->control_user != NULL)	/* control "mcpidentity" */
			snprintf(sub.user, sizeof(sub.user), "%s", m->control_user);
		(void)yx_router_dispatch(m->w, &sub);
		/* the POST's log line names the thread its tool acted in */
		if (sub.thread_id[0] != '\0')
			memcpy(m->r->thread_id, sub.thread_id, sizeof(m->r->thread_id));
	}
	yx_http_req_fini(&sub);
	return rc;
}

/* ---- the SSE stream of a POST ------------------------------------------- */

int
yx_mcp_sse_send(struct yx_mcp_req *m, struct json_object *msg)
{
	struct yx_buf	 ev;
	const char	*s;
	size_t		 len = 0;
	int		 rc = YX_E_NOMEM;

	yx_buf_init(&ev, SIZE_MAX);
	if ((s = json_object_to_json_string_length(msg, MCP_JSON_FLAGS, &len)) != NULL &&
	    (rc = yx_buf_puts(&ev, "event: message\ndata: ")) == YX_OK &&
	    (rc = yx_buf_append(&ev, s, len)) == YX_OK &&
	    (rc = yx_buf_puts(&ev, "\n\n")) == YX_OK &&
	    yx_http_write(m->r, ev.data, ev.len) != YX_OK) {
		m->gone = true;
		rc = YX_E_CLIENT_GONE;
	}
	yx_buf_fini(&ev);
	return rc;
}

int
yx_mcp_notify(struct yx_mcp_req *m, struct json_object *note)
{
	if (m->gone)
		return YX_E_CLIENT_GONE;
	if (!m->sse_ok)
		return YX_E_BAD_REQUEST;
	if (!m->sse) {
		if (yx_http_send_stream(m->r, 200, YX_MCP_CT_SSE) != YX_OK) {
			m->gone = true;
			return YX_E_CLIENT_GONE;
		}
		m->sse = true;
	}
	return yx_mcp_sse_send(m, note);
}

/* ---- results -------------------------------------------------------------- */

struct json_object *
yx_mcp_result(const char *text, size_t len, struct json_object *sc, bool is_error)
{
	struct json_object	*o, *content, *t;
	const char		*s = text;

	if (s == NULL && sc != NULL)
		s = json_object_to_json_string_length(sc, MCP_JSON_FLAGS, &len);
	if (s == NULL || len > INT32_MAX || (o = json_object_new_object()) == NULL) {
		json_object_put(sc);
		return NULL;
	}
	content = json_object_new_array();
	if ((t = json_object_new_object()) != NULL) {
		json_object_object_add(t, "type", json_object_new_string("text"));
		json_object_object_add(t, "text", json_object_new_string_len(s, (int)len));
		json_object_array_add(content, t);
	}
	json_object_object_add(o, "content", content);
	if (sc != NULL)
		json_object_object_add(o, "structuredContent", sc);
	json_object_object_add(o, "isError", json_object_new_boolean(is_error));
	return o;
}

/*
 * The tool error of an API error {"code","message","request_id"} (e,
 * borrowed) with the answer's status and Retry-After (0: none): the text
 * says all of it; structuredContent {"error":e,"status"[,"retry_after"]}.
 */
static struct json_object *
mcp_error_result(struct json_object *e, int status, int retry_after)
{
	struct json_object	*sc, *v;
	const char		*code = "internal", *msg = "", *rid = NULL;
	char			 text[1024];
	int			 n;

	if (json_object_object_get_ex(e, "code", &v) && json_object_is_type(v, json_type_string))
		code = json_object_get_string(v);
	if (json_object_object_get_ex(e, "message", &v) && json_object_is_type(v, json_type_string))
		msg = json_object_get_string(v);
	if (json_object_object_get_ex(e, "request_id", &v) && json_object_is_type(v, json_type_string))
		rid = json_object_get_string(v);
	n = snprintf(text, sizeof(text), "%s: %s", code, msg);
	if (retry_after > 0 && n >= 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, " (retry after %d s)", retry_after);
	if (rid != NULL && n >= 0 && (size_t)n < sizeof(text))
		snprintf(text + n, sizeof(text) - (size_t)n, " [request id %s]", rid);
	if ((sc = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(sc, "error", json_object_get(e));
	json_object_object_add(sc, "status", json_object_new_int(status));
	if (retry_after > 0)
		json_object_object_add(sc, "retry_after", json_object_new_int(retry_after));
	return yx_mcp_result(text, strlen(text), sc, true);
}

struct json_object *
yx_mcp_tool_error(struct yx_mcp_req *m, int code, const char *msg)
{
	struct json_object *e, *res;

	if ((e = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(e, "code", json_object_new_string(yx_err_api_code(code)));
	json_object_object_add(e, "message",
	    json_object_new_string(msg != NULL && msg[0] != '\0' ? msg : yx_strerror(code)));
	json_object_object_add(e, "request_id", json_object_new_string(m->r->request_id));
	res = mcp_error_result(e, yx_err_http_status(code), 0);
	json_object_put(e);
	return res;
}

struct json_object *
yx_mcp_call_result(struct yx_mcp_req *m, struct yx_mcp_call *c, const char *text)
{
	struct json_object	*o = NULL, *e, *res;
	const char		*body = c->cap.body.data != NULL ? c->cap.body.data : "";
	char			 msg[96];

	if (c->cap.overflow || c->cap.status == 0) {
		snprintf(msg, sizeof(msg), "the answer is larger than %zu bytes",
		    c->cap.body.cap);
		return yx_mcp_tool_error(m, YX_E_INTERNAL, c->cap.overflow ? msg : NULL);
	}
	if (c->cap.body.len > 0 && yx_json_parse_object(body, c->cap.body.len, &o, NULL) != YX_OK)
		o = NULL;
	if (c->cap.status >= 400) {
		if (o == NULL || !json_object_object_get_ex(o, "error", &e) ||
		    !json_object_is_type(e, json_type_object)) {
			json_object_put(o);
			return yx_mcp_tool_error(m, YX_E_INTERNAL, NULL);
		}
		res = mcp_error_result(e, c->cap.status, atoi(c->cap.retry_after));
		json_object_put(o);
		return res;
	}
	if (o == NULL && (o = json_object_new_object()) == NULL)	/* 204 */
		return NULL;
	return yx_mcp_result(text, text != NULL ? strlen(text) : 0, o, false);
}

/* ---- execute -------------------------------------------------------------- */

/* An execute's stream being read. */
struct exec_ctx {
	struct yx_mcp_req	*m;
	struct yx_buf		 line;	/* an event not ended yet */
	struct yx_buf		 out;	/* the output, as the plain reply's */
	struct json_object	*end;	/* the exit or error event */
};

/* An output event's data as a progress notification (when asked for). */
static int
exec_progress(struct exec_ctx *x, struct json_object *data)
{
	struct yx_mcp_req	*m = x->m;
	struct json_object	*n, *p;
	int			 rc;

	if (m->progress == NULL || !m->sse_ok)
		return YX_OK;
	if ((n = json_object_new_object()) == NULL || (p = json_object_new_object()) == NULL) {
		json_object_put(n);
		return YX_E_NOMEM;
	}
	m->progress_n += (int64_t)json_object_get_string_len(data);
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(n, "method", json_object_new_string("notifications/progress"));
	json_object_object_add(p, "progressToken", json_object_get(m->progress));
	json_object_object_add(p, "progress", json_object_new_int64(m->progress_n));
	json_object_object_add(p, "message", json_object_get(data));
	json_object_object_add(n, "params", p);
	rc = yx_mcp_notify(m, n);
	json_object_put(n);
	return rc == YX_E_CLIENT_GONE ? rc : YX_OK;
}

/* One NDJSON event of the stream (docs/api.md "The stream form"). */
static int
exec_event(struct exec_ctx *x, const char *s, size_t len)
{
	struct json_object	*o = NULL, *type, *data;
	int			 rc = YX_OK;

	if (yx_json_parse_object(s, len, &o, NULL) != YX_OK ||
	    !json_object_object_get_ex(o, "type", &type)) {
		json_object_put(o);
		return YX_E_INTERNAL;	/* not the stream we know: stop */
	}
	if (strcmp(json_object_get_string(type), "output") == 0 &&
	    json_object_object_get_ex(o, "data", &data) &&
	    json_object_is_type(data, json_type_string)) {
		rc = yx_buf_append(&x->out, json_object_get_string(data),
		    (size_t)json_object_get_string_len(data));
		if (rc == YX_OK)
			rc = exec_progress(x, data);
	} else if (x->end == NULL && (strcmp(json_object_get_string(type), "exit") == 0 || strcmp(json_object_get_string(type), "error") == 0)) {
		x->end = o;	/* the last event */
		o = NULL;
	}
	json_object_put(o);
	return rc;
}

/* yx_http_capture.on_piece: pieces of events, cut anywhere on a front. */
static int
exec_piece(void *arg, const char *data, size_t len)
{
	struct exec_ctx	*x = arg;
	const char	*nl;
	size_t		 start = 0;
	int		 rc;

	/* on a front nothing else asks between pieces (h_stream.c's tick
	 * runs on the host): a client gone stops the call, and the host
	 * sees its client go */
	if (yx_http_client_gone(x->m->r))
		return YX_E_CLIENT_GONE;
	if ((rc = yx_buf_append(&x->line, data, len)) != YX_OK)
		return rc;
	while ((nl = memchr(x->line.data + start, '\n', x->line.len - start)) != NULL) {
		if ((rc = exec_event(x, x->line.data + start,
			 (size_t)(nl - x->line.data) - start)) != YX_OK)
			return rc;
		start = (size_t)(nl - x->line.data) + 1;
	}
	memmove(x->line.data, x->line.data + start, x->line.len - start);
	x->line.len -= start;
	return YX_OK;
}

/* The result of the exit event: the output with a line that says how the
 * command ended; structuredContent the plain reply's fields. */
static struct json_object *
exec_result(struct exec_ctx *x)
{
	struct json_object	*sc = x->end, *v, *res;
	struct yx_buf		 t;
	const char		*full = NULL;
	int			 code = -1;
	bool			 timed = false, refused = false;

	if (json_object_object_get_ex(sc, "exit_code", &v))
		code = json_object_get_int(v);
	if (json_object_object_get_ex(sc, "timed_out", &v))
		timed = json_object_get_boolean(v);
	if (json_object_object_get_ex(sc, "full_output_path", &v))
		full = json_object_get_string(v);
	refused = json_object_object_get_ex(sc, "refused", &v);
	json_object_object_del(sc, "type");
	json_object_object_add(sc, "output", json_object_new_string_len(x->out.data != NULL ? x->out.data : "", (int)x->out.len));
	yx_buf_init(&t, SIZE_MAX);
	(void)yx_buf_append(&t, x->out.data != NULL ? x->out.data : "", x->out.len);
	if (t.len > 0 && t.data[t.len - 1] != '\n')
		(void)yx_buf_puts(&t, "\n");
	(void)yx_buf_printf(&t, "[exit code %d%s%s]", code,
	    timed ? ": timed out, its process group was killed" : "",
	    refused ? ": refused, nothing ran" : "");
	if (full != NULL)
		(void)yx_buf_printf(&t, "\n[output truncated; the whole output is in %s]", full);
	if (json_object_object_get_ex(sc, "session_ended", &v) && json_object_get_boolean(v))
		(void)yx_buf_puts(&t, "\n[the session's shell ended: open another with create_session]");
	x->end = NULL;
	res = yx_mcp_result(t.data != NULL ? t.data : "", t.len, sc, false);
	yx_buf_fini(&t);
	return res;
}

/* The status an API error code comes with (its first entry), 500 else. */
static int
exec_code_status(const char *code)
{
	int e;

	for (e = YX_E_OK + 1; e < YX_E__COUNT; e++)
		if (strcmp(yx_err_api_code(e), code) == 0)
			return yx_err_http_status(e);
	return 500;
}

/* The events of call c for request m: its output pieces come to x. */
static void
exec_ctx_init(struct exec_ctx *x, struct yx_mcp_req *m, struct yx_mcp_call *c)
{
	memset(x, 0, sizeof(*x));
	x->m = m;
	yx_buf_init(&x->line, MCP_LINE_MAX);
	yx_buf_init(&x->out, YX_MCP_ANSWER_MAX);
	c->cap.on_piece = exec_piece;
	c->cap.arg = x;
}

static void
exec_ctx_fini(struct exec_ctx *x)
{
	json_object_put(x->end);
	yx_buf_fini(&x->line);
	yx_buf_fini(&x->out);
}

struct json_object *
yx_mcp_execute(struct yx_mcp_req *m, struct yx_mcp_call *c)
{
	struct json_object	*res = NULL, *e, *code;
	struct exec_ctx		 x;
	struct yx_errctx	 err;
	int			 rc;

	exec_ctx_init(&x, m, c);
	yx_errctx_clear(&err);
	if ((rc = yx_mcp_call_run(m, c, &err)) != YX_OK)
		res = yx_mcp_tool_error(m, rc, err.msg);
	else if (!c->cap.streamed)	/* refused before it ran */
		res = yx_mcp_call_result(m, c, NULL);
	else if (x.end != NULL && json_object_object_get_ex(x.end, "error", &e))
		res = mcp_error_result(e, exec_code_status(json_object_object_get_ex(e, "code", &code) ? json_object_get_string(code) : ""), 0);
	else if (x.end != NULL)
		res = exec_result(&x);
	else if (m->gone || yx_http_client_gone(m->r)) {
		m->gone = true;	/* the command was stopped: nobody to tell */
		log_info("mcp request %s: the client went away; command stopped",
		    m->r->request_id);
	} else
		res = yx_mcp_tool_error(m, YX_E_BACKEND_UNAVAILABLE,
		    "the command's output stream broke off");
	exec_ctx_fini(&x);
	return res;
}
