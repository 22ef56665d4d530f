/* SPDX-License-Identifier: MIT */
/*
 * mcp.c - POST /mcp: the Model Context Protocol's Streamable HTTP
 * transport (MCP 2025-11-25, basic/transports "Streamable HTTP"), one
 * JSON-RPC 2.0 message per POST (docs/mcp.md).
 *
 * What each POST gets, in this order:
 *   - identity: the router's (YX_R_USER): no token is the API's 401
 *     before any JSON-RPC is read; a cross-site browser request the
 *     router's 403 (the transport's Origin check);
 *   - an MCP-Protocol-Version we do not speak, or a malformed
 *     Mcp-Session-Id: 400 (transports "Protocol Version Header");
 *   - a body over YUXI_BODY_LIMIT: 413, from Content-Length, unread;
 *   - a batch (a JSON array; removed from the protocol in 2025-06-18):
 *     400 Invalid Request, unparsed; not JSON: 400 Parse error; not a
 *     JSON-RPC message: 400 Invalid Request;
 *   - a notification or a response: 202 Accepted, no body;
 *   - a request: initialize, ping, tools/list, tools/call, or -32601
 *     Method not found; its answer is one JSON object
 *     (application/json), or an SSE stream (text/event-stream) when a
 *     tool call sends progress notifications before it (execute, when the
 *     request carries a progress token and the client's Accept names
 *     text/event-stream). The stream's events carry no id: a stream
 *     cannot be resumed (nothing is kept to resume it from), so the
 *     client never tries.
 * Errors at the HTTP level carry a JSON-RPC error response with the
 * request's id when it was read, else null (transports "Sending Messages
 * to the Server" 4; JSON-RPC 2.0 §5).
 *
 * Stateless: no worker holds anything between POSTs. initialize makes a
 * session id (Mcp-Session-Id, 32 hex digits) that later requests carry
 * and the audit lines record; no request needs one, none is looked up.
 * GET (a stream for server-initiated messages) and DELETE (ending a
 * session) are not routes: the router answers 405, which the transport
 * allows for both ("Listening for Messages from the Server" 3, "Session
 * Management" 5).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "mcp_int.h"
#include "yuxi/log.h"
#include "common/control_int.h"

#define MCP_JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* The revisions we speak, newest first (lifecycle "Version Negotiation"). */
static const char *const mcp_versions[] = { YX_MCP_PROTOCOL_LATEST, "2025-06-18",
	"2025-03-26" };

static bool
mcp_version_known(const char *v)
{
	size_t i;

	for (i = 0; i < sizeof(mcp_versions) / sizeof(mcp_versions[0]); i++)
		if (strcmp(v, mcp_versions[i]) == 0)
			return true;
	return false;
}

/* {"jsonrpc":"2.0","id":id (null when NULL),"error":{"code","message"}}. */
static struct json_object *
mcp_error_msg(struct json_object *id, int code, const char *text)
{
	struct json_object *o, *e;

	if ((o = json_object_new_object()) == NULL || (e = json_object_new_object()) == NULL) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(text));
	json_object_object_add(o, "error", e);
	return o;
}

/* {"jsonrpc":"2.0","id":id,"result":result} (result taken). */
static struct json_object *
mcp_result_msg(struct json_object *id, struct json_object *result)
{
	struct json_object *o;

	if (result == NULL || (o = json_object_new_object()) == NULL) {
		json_object_put(result);
		return NULL;
	}
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(o, "result", result);
	return o;
}

/* msg (taken) as the whole answer: a JSON body with status and hdr. */
static int
mcp_send_json(struct yx_http_req *r, int status, struct json_object *msg, const char *hdr)
{
	const char	*s;
	size_t		 len = 0;
	int		 rc;

	if (msg == NULL || (s = json_object_to_json_string_length(msg, MCP_JSON_FLAGS, &len)) == NULL)
		rc = YX_E_NOMEM;
	else
		rc = yx_http_send_raw_hdr(r, status, YX_CT_JSON, s, len, hdr);
	json_object_put(msg);
	return rc;
}

/* An HTTP-level refusal: status with a JSON-RPC error (id NULL: null). */
static int
mcp_refuse(struct yx_mcp_req *m, int status, struct json_object *id, int code, const char *text)
{
	log_debug("mcp request %s refused: %d %s", m->r->request_id, status, text);
	if (YX_CONTROL_BUILD && m->batch != NULL) {	/* control "mcpbatch" */
		json_object_array_add(m->batch, mcp_error_msg(id, code, text));
		return YX_OK;
	}
	(void)mcp_send_json(m->r, status, mcp_error_msg(id, code, text), NULL);
	return YX_E_BAD_REQUEST;
}

/* A notification or a response taken: 202, no body. */
static int
mcp_accepted(struct yx_mcp_req *m)
{
	if (YX_CONTROL_BUILD && m->batch != NULL)	/* control "mcpbatch" */
		return YX_OK;
	return yx_http_send_raw(m->r, 202, NULL, "", 0);
}

/* The answer to the request (msg taken): its SSE event, or the body. */
static int
mcp_answer(struct yx_mcp_req *m, struct json_object *msg, const char *hdr)
{
	int rc;

	if (m->gone) {	/* nobody to answer: nginx's word for it */
		json_object_put(msg);
		if (m->r->status == 0)
			m->r->status = 499;
		return YX_OK;
	}
	if (msg == NULL)
		return YX_E_NOMEM;
	if (YX_CONTROL_BUILD && m->batch != NULL) {	/* control "mcpbatch" */
		json_object_array_add(m->batch, msg);
		return YX_OK;
	}
	if (!m->sse)
		return mcp_send_json(m->r, 200, msg, hdr);
	rc = yx_mcp_sse_send(m, msg);
	json_object_put(msg);
	return rc == YX_E_CLIENT_GONE ? YX_OK : rc;
}

/*
 * The request headers of the transport: MCP-Protocol-Version (400 when we
 * do not speak it), Mcp-Session-Id (visible ASCII, at most
 * YX_MCP_SESSION_MAX bytes, else 400), Accept. YX_OK or refused.
 */
static int
mcp_headers(struct yx_mcp_req *m)
{
	const char	*v, *sid, *acc;
	char		 msg[200];
	size_t		 i, n;

	v = FCGX_GetParam("HTTP_MCP_PROTOCOL_VERSION", m->r->fcgi->envp);
	if (v != NULL && v[0] != '\0' && !mcp_version_known(v)) {
		snprintf(msg, sizeof(msg), "unsupported MCP-Protocol-Version \"%.32s\" "
					   "(this server speaks %s, %s and %s)",
		    v, mcp_versions[0], mcp_versions[1], mcp_versions[2]);
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_INVALID_REQUEST, msg);
	}
	sid = FCGX_GetParam("HTTP_MCP_SESSION_ID", m->r->fcgi->envp);
	if (sid != NULL && sid[0] != '\0') {
		n = strlen(sid);
		for (i = 0; i < n && sid[i] > 0x20 && sid[i] < 0x7f; i++)
			continue;
		if (i < n || n > YX_MCP_SESSION_MAX)
			return mcp_refuse(m, 400, NULL, YX_JSONRPC_INVALID_REQUEST,
			    "malformed Mcp-Session-Id");
		m->session = sid;
	}
	acc = FCGX_GetParam("HTTP_ACCEPT", m->r->fcgi->envp);
	m->sse_ok = acc != NULL && strstr(acc, YX_MCP_CT_SSE) != NULL;
	return YX_OK;
}

/*
 * Control mode "mcpbatch" (tests only): a batch is answered as MCP
 * 2025-03-26 allowed, each message in turn in this worker, the answers
 * in one array; the limit suite must then see a worker held for the
 * whole batch.
 */
static int	mcp_message(struct yx_mcp_req *m, struct json_object *msg);

static int
mcp_control_run_batch(struct yx_mcp_req *m, struct json_object *msgs)
{
	struct yx_mcp_req	one;
	struct json_object	*out = json_object_new_array();
	size_t			 i;

	for (i = 0; out != NULL && i < json_object_array_length(msgs); i++) {
		one = *m;
		one.batch = out;
		one.sse_ok = false;
		(void)mcp_message(&one, json_object_array_get_idx(msgs, i));
	}
	return mcp_send_json(m->r, 200, out, NULL);
}

/*
 * The POST's body as one JSON-RPC message (*msg, caller puts): 413 over
 * the body limit (unread), 400 for a batch, for anything not JSON or with
 * bytes after the value. YX_OK or refused.
 */
static int
mcp_read(struct yx_mcp_req *m, struct yx_buf *raw, struct json_object **msg)
{
	struct yx_http_req	*r = m->r;
	struct json_tokener	*tok;
	struct yx_errctx	 e;
	char			 text[160];
	size_t			 off;
	int			 rc;

	*msg = NULL;
	yx_errctx_clear(&e);
	if (r->content_length > 0 && (uint64_t)r->content_length > r->body_limit) {
		snprintf(text, sizeof(text), "request larger than %zu bytes", r->body_limit);
		(void)mcp_send_json(r, 413, mcp_error_msg(NULL, YX_JSONRPC_INVALID_REQUEST, text),
		    NULL);
		return YX_E_PAYLOAD_TOO_LARGE;
	}
	if ((rc = yx_http_read_body(r, raw, &e)) != YX_OK) {
		(void)mcp_send_json(r, yx_err_http_status(rc),
		    mcp_error_msg(NULL, YX_JSONRPC_INVALID_REQUEST, e.msg), NULL);
		return rc;
	}
	for (off = 0; off < raw->len && strchr(" \t\r\n", raw->data[off]) != NULL; off++)
		continue;
	if (off < raw->len && raw->data[off] == '[' && !YX_CONTROL_OFF("mcpbatch"))
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_INVALID_REQUEST,
		    "batches are not supported: send one JSON-RPC message per POST "
		    "(MCP 2025-06-18 and later)");
	if (raw->len == 0 || raw->len > INT32_MAX || (tok = json_tokener_new()) == NULL)
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_PARSE_ERROR, "Parse error: empty body");
	/* with the buffer's NUL: the end of a value that could go on ("42") */
	*msg = json_tokener_parse_ex(tok, raw->data, (int)raw->len + 1);
	off = json_tokener_get_parse_end(tok);
	rc = json_tokener_get_error(tok);
	json_tokener_free(tok);
	while (off < raw->len && strchr(" \t\r\n", raw->data[off]) != NULL)
		off++;
	if (rc != json_tokener_success || off < raw->len) {
		json_object_put(*msg);
		*msg = NULL;
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_PARSE_ERROR,
		    "Parse error: the body is not one JSON value");
	}
	if (*msg == NULL)	/* JSON's null */
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_INVALID_REQUEST,
		    "Invalid Request: not a JSON-RPC message (an object)");
	return YX_OK;
}

/* initialize (lifecycle "Initialization"): a new session id in a header. */
static int
mcp_initialize(struct yx_mcp_req *m, struct json_object *params)
{
	struct json_object	*res, *caps, *tools, *info, *v;
	const char		*want = NULL;
	char			 sid[33] = "", hdr[64];

	if (params != NULL && json_object_object_get_ex(params, "protocolVersion", &v) &&
	    json_object_is_type(v, json_type_string))
		want = json_object_get_string(v);
	if ((res = json_object_new_object()) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(res, "protocolVersion",
	    json_object_new_string(want != NULL && mcp_version_known(want) ? want :
									     YX_MCP_PROTOCOL_LATEST));
	caps = json_object_new_object();
	tools = json_object_new_object();
	json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(res, "capabilities", caps);
	info = json_object_new_object();
	json_object_object_add(info, "name", json_object_new_string("yuxi-sandbox"));
	json_object_object_add(info, "title", json_object_new_string("yuxi-sandbox"));
	json_object_object_add(info, "version", json_object_new_string(YX_VERSION));
	json_object_object_add(res, "serverInfo", info);
	json_object_object_add(res, "instructions", json_object_new_string(yx_mcp_instructions));
	yx_rand_hex(sid, sizeof(sid), 16);	/* 32 hex digits */
	snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s\r\n", sid);
	return mcp_answer(m, mcp_result_msg(m->id, res), hdr);
}

/* The request's progress token (params._meta.progressToken), or NULL. */
static struct json_object *
mcp_progress_token(struct json_object *params)
{
	struct json_object *meta, *t;

	if (params == NULL || !json_object_object_get_ex(params, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object) ||
	    !json_object_object_get_ex(meta, "progressToken", &t) ||
	    !(json_object_is_type(t, json_type_string) || json_object_is_type(t, json_type_int)))
		return NULL;
	return t;
}

/* tools/call (server/tools "Calling Tools"). */
static int
mcp_tools_call(struct yx_mcp_req *m, struct json_object *params)
{
	struct json_object	*name = NULL, *args = NULL, *result = NULL, *meta, *user;
	char			 msg[256];
	int			 code;

	if (params == NULL || !json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return mcp_answer(m, mcp_error_msg(m->id, YX_JSONRPC_INVALID_PARAMS, "tools/call needs params.name, a string"),
		    NULL);
	if (json_object_object_get_ex(params, "arguments", &args) &&
	    json_object_is_type(args, json_type_null))
		args = NULL;
	m->progress = mcp_progress_token(params);
	/* control mode "mcpidentity" (tests only): the message names the user */
	if (YX_CONTROL_OFF("mcpidentity") && json_object_object_get_ex(params, "_meta", &meta) &&
	    json_object_object_get_ex(meta, "yuxi/user", &user) &&
	    json_object_is_type(user, json_type_string))
		m->control_user = json_object_get_string(user);
	msg[0] = '\0';
	code = yx_mcp_tools_call(m, json_object_get_string(name), args, &result, msg,
	    sizeof(msg));
	if (code != 0)
		return mcp_answer(m, mcp_error_msg(m->id, code, msg), NULL);
	return mcp_answer(m, mcp_result_msg(m->id, result), NULL);
}

/* A JSON-RPC request (id and method known). */
static int
mcp_request(struct yx_mcp_req *m, const char *method, struct json_object *params)
{
	char msg[160];

	if (params != NULL && !json_object_is_type(params, json_type_object))
		return mcp_answer(m, mcp_error_msg(m->id, YX_JSONRPC_INVALID_PARAMS, "params must be an object"),
		    NULL);
	if (strcmp(method, "initialize") == 0)
		return mcp_initialize(m, params);
	if (strcmp(method, "ping") == 0)
		return mcp_answer(m, mcp_result_msg(m->id, json_object_new_object()), NULL);
	if (strcmp(method, "tools/list") == 0)
		return mcp_answer(m, mcp_result_msg(m->id, yx_mcp_tools_list()), NULL);
	if (strcmp(method, "tools/call") == 0)
		return mcp_tools_call(m, params);
	snprintf(msg, sizeof(msg), "Method not found: %.100s", method);
	return mcp_answer(m, mcp_error_msg(m->id, YX_JSONRPC_METHOD_NOT_FOUND, msg), NULL);
}

/*
 * One message (JSON-RPC 2.0 §4, §5; MCP basic "Messages": ids are strings
 * or integers, never null): a request is answered; a notification or a
 * response is taken with 202 Accepted.
 */
static int
mcp_message(struct yx_mcp_req *m, struct json_object *msg)
{
	struct json_object	*v, *id = NULL, *method = NULL, *params = NULL;
	bool			 has_id;

	if (!json_object_is_type(msg, json_type_object))
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_INVALID_REQUEST,
		    "Invalid Request: not a JSON-RPC message (an object)");
	has_id = json_object_object_get_ex(msg, "id", &id);
	if (has_id && !json_object_is_type(id, json_type_string) &&
	    !json_object_is_type(id, json_type_int))
		return mcp_refuse(m, 400, NULL, YX_JSONRPC_INVALID_REQUEST,
		    "Invalid Request: id must be a string or an integer");
	if (!json_object_object_get_ex(msg, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0)
		return mcp_refuse(m, 400, id, YX_JSONRPC_INVALID_REQUEST,
		    "Invalid Request: jsonrpc must be \"2.0\"");
	if (!json_object_object_get_ex(msg, "method", &method)) {
		if (has_id && (json_object_object_get_ex(msg, "result", &v) || json_object_object_get_ex(msg, "error", &v)))
			return mcp_accepted(m);	/* a response */
		return mcp_refuse(m, 400, id, YX_JSONRPC_INVALID_REQUEST,
		    "Invalid Request: no method");
	}
	if (!json_object_is_type(method, json_type_string))
		return mcp_refuse(m, 400, id, YX_JSONRPC_INVALID_REQUEST,
		    "Invalid Request: method must be a string");
	if (!has_id)	/* notifications/initialized, cancelled, ... */
		return mcp_accepted(m);
	m->id = id;
	(void)json_object_object_get_ex(msg, "params", &params);
	if (params != NULL && json_object_is_type(params, json_type_null))
		params = NULL;
	return mcp_request(m, json_object_get_string(method), params);
}

/* POST /mcp. */
int
yx_h_mcp(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_mcp_req	 m;
	struct json_object	*msg = NULL;
	struct yx_buf		 raw;
	int			 rc;

	memset(&m, 0, sizeof(m));
	m.w = w;
	m.r = r;
	yx_buf_init(&raw, r->body_limit);
	if ((rc = mcp_headers(&m)) == YX_OK && (rc = mcp_read(&m, &raw, &msg)) == YX_OK) {
		if (YX_CONTROL_OFF("mcpbatch") && json_object_is_type(msg, json_type_array))
			rc = mcp_control_run_batch(&m, msg);	/* control: run a batch */
		else
			rc = mcp_message(&m, msg);
	}
	json_object_put(msg);
	yx_buf_fini(&raw);
	return rc;
}
