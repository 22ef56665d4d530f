/* SPDX-License-Identifier: MIT */
/*
 * mcp_int.h - the MCP endpoint (docs/mcp.md), private to src/daemon.
 *
 * POST /mcp speaks the Model Context Protocol's Streamable HTTP transport
 * (revision 2025-11-25; 2025-06-18 and 2025-03-26 accepted): one JSON-RPC
 * 2.0 message per POST (mcp.c). Its tools are thin mappings onto the
 * routes of the one route table (mcp_tools.c): a tool call becomes one
 * sub-request (mcp_call.c) that runs through yx_router_dispatch() exactly
 * as nginx's request for that route would (identity, ownership, body,
 * the user's slots, the handler, its log line, metrics sample and audit
 * line), with the answer captured in memory (yuxi/http.h "Capture mode")
 * and turned into the tool's result or tool error.
 *
 * Nothing is kept between requests: any worker serves any POST, and a
 * session id (Mcp-Session-Id) is made at initialize and only carried into
 * the audit lines. The /mcp route takes none of the router's per-request
 * state (no YX_R_JSON, YX_R_SLOT, YX_R_WAIT): the sub-request's dispatch
 * sets and gives back that state for its own route.
 */
#ifndef YUXI_MCP_INT_H
#define YUXI_MCP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon_int.h"

#define YX_MCP_PROTOCOL_LATEST	"2025-11-25"
#define YX_MCP_SESSION_MAX	128	/* bytes of an Mcp-Session-Id we take */
#define YX_MCP_ANSWER_MAX	(64u << 20)	/* bytes of a route's answer taken */

/* JSON-RPC 2.0 error codes (§5.1) the endpoint answers. */
#define YX_JSONRPC_PARSE_ERROR		(-32700)
#define YX_JSONRPC_INVALID_REQUEST	(-32600)
#define YX_JSONRPC_METHOD_NOT_FOUND	(-32601)
#define YX_JSONRPC_INVALID_PARAMS	(-32602)
#define YX_JSONRPC_INTERNAL_ERROR	(-32603)

/*
 * One JSON-RPC request being answered (mcp.c): where the answer goes and
 * how. The answer is one JSON object (application/json), or an SSE stream
 * (text/event-stream) once a notification had to go out before it.
 */
struct yx_mcp_req {
	struct yx_wctx		*w;
	struct yx_http_req	*r;		/* the POST /mcp */
	struct json_object	*id;		/* the request's id (borrowed) */
	struct json_object	*progress;	/* params._meta.progressToken, NULL */
	const char		*session;	/* Mcp-Session-Id; NULL: none */
	bool			 sse_ok;	/* Accept names text/event-stream */
	bool			 sse;		/* the SSE stream has started */
	bool			 gone;		/* a write to the client failed */
	int64_t			 progress_n;	/* the last progress value sent: output bytes */
	/* the control build's (common/control_int.h), NULL elsewhere */
	struct json_object	*batch;		/* "mcpbatch": the answers of a batch */
	const char		*control_user;	/* "mcpidentity": the user the message named */
};

#define YX_MCP_CT_SSE	"text/event-stream"

/*
 * mcp_call.c: a notification (a JSON-RPC message; the caller puts it) on
 * the request's SSE stream, started if need be. YX_OK; YX_E_CLIENT_GONE
 * when the client cannot be written to; YX_E_BAD_REQUEST when the client
 * does not take SSE (nothing is sent, and that is no failure of the call).
 * yx_mcp_sse_send: one message as an event of the started stream (YX_OK,
 * YX_E_CLIENT_GONE, YX_E_NOMEM).
 */
int	yx_mcp_notify(struct yx_mcp_req *m, struct json_object *note);
int	yx_mcp_sse_send(struct yx_mcp_req *m, struct json_object *msg);

/*
 * mcp_tools.c: the tools. yx_mcp_tools_list: {"tools":[...]} (caller
 * puts; NULL: no memory). yx_mcp_tools_call: the result of tools/call
 * `name` with `args` (an object, or NULL for none) in *result (caller
 * puts), tool errors included (isError); a protocol error (unknown tool,
 * arguments not an object) is a JSON-RPC error code returned with its
 * message in msg; 0 otherwise.
 */
struct json_object *yx_mcp_tools_list(void);
int	yx_mcp_tools_call(struct yx_mcp_req *m, const char *name, struct json_object *args,
		    struct json_object **result, char *msg, size_t msglen);
/* mcp_tools.c: the server's instructions (initialize). */
extern const char yx_mcp_instructions[];

/*
 * mcp_call.c: one sub-request and its answer.
 *
 * struct yx_mcp_call is what a tool asks: the route's method and path
 * (without the URL prefix; its one "{}" filled in), the query string (raw,
 * already percent-encoded) and the body. yx_mcp_call_run runs it through
 * the router with the answer in c->cap (its body at most body_max bytes,
 * a download's at most inline_max) and returns YX_OK, or an error of its
 * own making (no memory, a request the router cannot take) with a message
 * in e. yx_mcp_call_result turns a captured answer into the tool's result:
 * an API error becomes a tool error carrying its code, message, request
 * id, status and Retry-After; a success becomes structuredContent (the
 * answer's JSON) with `text`, or the JSON itself, as its text content.
 */
struct yx_mcp_call {
	enum yx_method		 method;
	char			 path[YX_URI_MAX];
	struct yx_buf		 qs;		/* key=value&... */
	struct yx_buf		 body;
	struct yx_http_capture	 cap;
};

void	yx_mcp_call_init(struct yx_mcp_call *c, size_t body_max, size_t inline_max);
void	yx_mcp_call_fini(struct yx_mcp_call *c);
/* Append &key=value (value len bytes, percent-encoded) to c->qs. */
int	yx_mcp_call_query(struct yx_mcp_call *c, const char *key, const char *val, size_t len);
int	yx_mcp_call_run(struct yx_mcp_req *m, struct yx_mcp_call *c, struct yx_errctx *e);
/* A tool error of our own (the API's shape: code, message, request id). */
struct json_object *yx_mcp_tool_error(struct yx_mcp_req *m, int code, const char *msg);
/* The tool result of a captured answer (see above); text NULL: the JSON. */
struct json_object *yx_mcp_call_result(struct yx_mcp_req *m, struct yx_mcp_call *c,
    const char *text);
/* A tool result: content [{"type":"text",text}], structuredContent sc
 * (taken; may be NULL), isError. */
struct json_object *yx_mcp_result(const char *text, size_t len, struct json_object *sc,
    bool is_error);
/*
 * The execute tool: POST /api/execute in its stream form, the output
 * passed on as progress notifications when the client gave a progress
 * token and takes SSE, the result the plain reply's fields with the
 * output. c->body holds the execute body ("stream": true included).
 */
struct json_object *yx_mcp_execute(struct yx_mcp_req *m, struct yx_mcp_call *c);

#endif /* YUXI_MCP_INT_H */
