/* SPDX-License-Identifier: MIT */
/*
 * yuxi/http.h - the request/response layer of the FastCGI workers.
 *
 * Two halves:
 *   - pure helpers (no I/O): query-string parsing with percent-decoding and
 *     bounded sizes, path-segment percent-encoding for X-Accel-Redirect,
 *     RFC 6266/5987 Content-Disposition; unit-tested;
 *   - struct yx_http_req around one accepted FCGX_Request: method, path
 *     (DOCUMENT_URI, i.e. nginx's normalised $document_uri), query, identity
 *     (the FastCGI params YUXI_USER and YUXI_ROLE only; HTTP_* params, which
 *     carry client headers, are never consulted), bounded body, and the
 *     response writers. Every response is JSON (application/json;
 *     charset=utf-8) serialised with JSON_C_TO_STRING_PLAIN |
 *     JSON_C_TO_STRING_NOSLASHESCAPE; every error is
 *     {"error":{"code","message","request_id"}} from the error vocabulary.
 *
 * Request ids: every request gets one before anything else is parsed: a
 * client's X-Request-Id when YUXI_TRUST_REQUEST_ID is on, else nginx's
 * $request_id (the FastCGI param YUXI_REQUEST_ID), else one the worker
 * makes (32 hex digits); each must match [A-Za-z0-9._-]{1,64}. Every
 * answer carries it in an X-Request-Id header, every error object in
 * "request_id".
 *
 * Error messages never name a host path (docs/security.md "Errors"): a
 * server fault (5xx, except the operational 503 capacity, 504 timeout and
 * 507 insufficient_storage) is answered with the code's generic text, and
 * so is any message containing one of the host roots given to
 * yx_http_setup(); the original text goes to the log with the request id.
 *
 * libfcgi's FCGX_FPrintF does not know %zu (NOTES.md): headers are formatted
 * with snprintf and sent with FCGX_PutStr. No header ever carries CR or LF:
 * the writers refuse such values.
 *
 * Ownership: struct yx_http_req is caller storage (yx_http_req_init/_fini);
 * strings it hands out point into it and live until _fini.
 */
#ifndef YUXI_HTTP_H
#define YUXI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yuxi/buf.h"
#include "yuxi/error.h"
#include "yuxi/ident.h"

#define YX_QUERY_MAX		8192	/* bytes of QUERY_STRING */
#define YX_QUERY_PARAMS_MAX	32	/* key=value pairs */
#define YX_URI_MAX		2048	/* bytes of DOCUMENT_URI */

struct json_object;
struct FCGX_Request;

enum yx_method {
	YX_M_OTHER = 0,
	YX_M_GET,
	YX_M_HEAD,
	YX_M_POST,
	YX_M_PUT,
	YX_M_DELETE,
	YX_M_PATCH,
	YX_M__COUNT
};

struct yx_query_kv {
	const char	*key;	/* NUL-terminated, decoded */
	const char	*val;	/* NUL-terminated, decoded; may hold NUL bytes */
	size_t		 vlen;	/* bytes of val */
};

/* A decoded query string; storage owned by the struct (yx_query_fini). */
struct yx_query {
	size_t			n;
	struct yx_query_kv	kv[YX_QUERY_PARAMS_MAX];
	char			*store;
};

/*
 * Parse `len` bytes of a raw query string ("a=1&b=x%2Fy&a=2"; '+' is a
 * space; a key without '=' has the value ""). Repeated keys are kept in
 * order. YX_OK; YX_E_BAD_REQUEST with a message for a bad %-escape, a key
 * with NUL, more than YX_QUERY_PARAMS_MAX pairs or more than YX_QUERY_MAX
 * bytes; YX_E_NOMEM.
 */
int		 yx_query_parse(struct yx_query *q, const char *qs, size_t len,
     struct yx_errctx *err);
void		 yx_query_fini(struct yx_query *q);
/* First value of key (NULL when absent); its length in *lenp if not NULL. */
const char	*yx_query_get(const struct yx_query *q, const char *key, size_t *lenp);
/* How many times key occurs. */
size_t		 yx_query_count(const struct yx_query *q, const char *key);

/*
 * Percent-decode `len` bytes (plus_space: '+' means ' ') into out (size
 * outlen, NUL-terminated). YX_OK with *outlenp; YX_E_BAD_REQUEST for a bad
 * escape or when it does not fit.
 */
int		 yx_pct_decode(const char *in, size_t len, bool plus_space, char *out,
    size_t outlen, size_t *outlenp);

/*
 * Append `path` to b with every byte outside [A-Za-z0-9._~-] of every
 * segment percent-encoded and '/' kept as the separator (X-Accel-Redirect
 * targets: nginx decodes them once and would cut at '?'). YX_OK or a buf
 * error.
 */
int		 yx_pct_encode_path(struct yx_buf *b, const char *path);

/*
 * Content-Disposition for a download of `name` (RFC 6266 §4.3, RFC 5987):
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<pct-encoded>`.
 * The fallback keeps printable ASCII except '"', '\\', '%', replacing
 * others with '_'. Never contains CR or LF. YX_OK or a buf error.
 */
int		 yx_content_disposition(struct yx_buf *b, const char *name);

/* Does s contain a byte that must not appear in a header value? */
bool		 yx_header_unsafe(const char *s);

#define YX_REQUEST_ID_MAX	64	/* bytes of a request id */
#define YX_HTTP_HIDE_MAX	8	/* host roots hidden from error messages */

/* Process-wide options of the request layer (yx_http_setup). */
struct yx_http_opts {
	bool		 trust_request_id;	/* a client X-Request-Id counts */
	/* host roots no error message may name ("" and NULL entries are
	 * skipped); borrowed: they must outlive every request */
	const char	*hide[YX_HTTP_HIDE_MAX];
};

/* Set the options for the requests this process serves (a worker, once). */
void	 yx_http_setup(const struct yx_http_opts *o);
/* Is s a request id: 1 to YX_REQUEST_ID_MAX bytes of [A-Za-z0-9._-]? */
bool	 yx_request_id_valid(const char *s);

struct yx_http_capture;

/* One accepted request. */
struct yx_http_req {
	struct FCGX_Request	*fcgi;
	struct yx_http_capture	*cap;		/* capture mode (below); NULL: nginx's */
	const char		*via;		/* "mcp": a tool call's sub-request; NULL */
	const char		*via_session;	/* ... its Mcp-Session-Id; NULL */
	enum yx_method		 method;
	char			 method_str[16];
	char			 path[YX_URI_MAX];	/* DOCUMENT_URI */
	struct yx_query		 query;
	char			 user[65];	/* YUXI_USER; "" when absent */
	bool			 admin;		/* YUXI_ROLE == "admin" */
	bool			 bad_identity;	/* YUXI_USER present but invalid */
	int64_t		     content_length; /* -1 when absent */
	size_t			 body_limit;
	int			 status;	/* sent status, 0 until sent */
	int			 err;		/* error code sent, YX_OK if none */
	const char		*route;		/* route name for logs/metrics */
	char			 thread_id[YX_THREAD_ID_SIZE]; /* for the log; "" if none */
	char			 request_id[YX_REQUEST_ID_MAX + 1];
	char			 client[64];	/* REMOTE_ADDR; "" if none */
	uint64_t		 bytes_in;	/* request body bytes read */
	uint64_t		 bytes_out;	/* response body bytes (X-Accel: the file's size, set by the handler) */
};

/*
 * Fill r from the FastCGI params of fcgi, the request id first. YX_OK;
 * YX_E_BAD_REQUEST when the URI or query is malformed (r is still usable
 * to send the error, and has its request id).
 */
int	yx_http_req_init(struct yx_http_req *r, struct FCGX_Request *fcgi,
     size_t body_limit, struct yx_errctx *err);
void	yx_http_req_fini(struct yx_http_req *r);

/*
 * Read the whole body (at most r->body_limit bytes) into b.
 * YX_OK; YX_E_PAYLOAD_TOO_LARGE (CONTENT_LENGTH over the limit, checked
 * before reading); YX_E_BAD_REQUEST when the body is shorter than announced.
 */
int	yx_http_read_body(struct yx_http_req *r, struct yx_buf *b, struct yx_errctx *err);

/*
 * Read and parse a JSON object body. YX_OK and *out (caller puts);
 * YX_E_BAD_REQUEST for anything but one JSON object; errors of
 * yx_http_read_body().
 */
int	yx_http_read_json(struct yx_http_req *r, struct json_object **out,
    struct yx_errctx *err);

/*
 * Parse len bytes as exactly one JSON object (surrounding whitespace
 * allowed, nothing else). YX_OK and *out (caller puts); YX_E_BAD_REQUEST.
 * No I/O: the request-body half of yx_http_read_json(), fuzzed on its own.
 */
int	yx_json_parse_object(const char *data, size_t len, struct json_object **out,
    struct yx_errctx *err);

/*
 * Read up to len body bytes (streaming uploads). Returns bytes read, 0 at
 * the end, -1 on a stream error.
 */
long	yx_http_read_some(struct yx_http_req *r, void *buf, size_t len);

/*
 * Is the client gone? nginx closes the FastCGI connection when its client
 * goes away before the answer (fastcgi_ignore_client_abort off, the
 * default; it never sends FCGI_ABORT_REQUEST), so our end sees a hang-up.
 * One poll(2) with a zero timeout: cheap enough to ask every few ms during
 * long work. False when there is no connection to ask. A FastCGI peer that
 * shuts down its sending side after the request counts as gone (nginx
 * never does that).
 */
bool	yx_http_client_gone(struct yx_http_req *r);

#define YX_CT_JSON	"application/json; charset=utf-8"

/* Send `body` (borrowed) as JSON with status. YX_OK or YX_E_IO. */
int	yx_http_send_json(struct yx_http_req *r, int status, struct json_object *body);
/* yx_http_send_json() that takes the object: it is put whatever happens;
 * NULL (a failed allocation upstream) gives YX_E_NOMEM, nothing sent. */
int	yx_http_send_obj(struct yx_http_req *r, int status, struct json_object *o);
/*
 * Send {"error":{"code","message","request_id"}}; msg NULL or "" ->
 * yx_strerror(err). A server fault's message, or one naming a hidden host
 * root, is logged and replaced by the generic text (see above).
 */
int	yx_http_send_error(struct yx_http_req *r, int err, const char *msg);
/* Same with extra header lines ("Retry-After: 5"), no CR/LF inside. */
int	yx_http_send_error_hdr(struct yx_http_req *r, int err, const char *msg,
    const char *hdr);
/* Send an empty response (204). */
int	yx_http_send_empty(struct yx_http_req *r, int status);
/* An empty response (Content-Length: 0) with extra header lines (each
 * ending in CR LF, none inside): an auth subrequest's answer. */
int	yx_http_send_empty_hdr(struct yx_http_req *r, int status, const char *hdr);
/* Send raw bytes with a content type. */
int	yx_http_send_raw(struct yx_http_req *r, int status, const char *ctype,
    const char *data, size_t len);
/*
 * Answer with X-Accel-Redirect to `uri` (already encoded) and
 * Content-Disposition: attachment for `filename`. YX_OK, YX_E_BAD_REQUEST
 * when a value would carry CR/LF, YX_E_IO.
 */
int	yx_http_send_accel(struct yx_http_req *r, const char *uri, const char *filename);

/*
 * A streamed answer (docs/api.md "stream"): the status and headers without
 * Content-Length, with "X-Accel-Buffering: no" so that nginx passes each
 * piece on as it comes (fastcgi_buffering off for this response, whatever
 * the location says, unless fastcgi_ignore_headers names the header), sent
 * at once. Then yx_http_write() each piece. YX_OK or YX_E_IO.
 */
int	yx_http_send_stream(struct yx_http_req *r, int status, const char *ctype);
/* Send len bytes of a streamed answer now (written and flushed). YX_OK,
 * or YX_E_IO when nginx's connection is gone. */
int	yx_http_write(struct yx_http_req *r, const char *data, size_t len);

/*
 * Capture mode: an internal sub-request (the MCP endpoint's tool calls,
 * src/daemon/mcp_call.c) that runs a route exactly as nginx's request
 * would, with the answer kept in memory instead of written to nginx.
 * yx_http_req_sub() makes the sub-request from the request it serves:
 * the same FastCGI connection (client gone, request headers), identity,
 * request id and client address, never anything the caller of the
 * sub-request chooses but the method, the path, the query and the body.
 * Every writer above then records the status, the Content-Type and a
 * Retry-After, and appends the body to `body` (a stream's pieces go to
 * on_piece when it is set); the body is read from `in`. X-Accel-Redirect
 * cannot be followed in memory: a download answers its bytes instead, at
 * most inline_max of them (h_fs.c, h_front.c).
 *
 * Ownership: caller storage (yx_http_capture_init/_fini); qs and in are
 * borrowed and must outlive the sub-request.
 */
struct yx_http_capture {
	const char	*qs;		/* the raw query string ("" or NULL: none) */
	const char	*in;		/* the body, in_len bytes (NULL: none) */
	size_t		 in_len;
	size_t		 in_off;	/* bytes of it read */
	size_t		 inline_max;	/* the largest download answered inline */
	int		 status;	/* 0 until answered */
	char		 ctype[96];	/* Content-Type; "" when none */
	char		 retry_after[16];	/* a Retry-After's value; "" */
	bool		 streamed;	/* answered by yx_http_send_stream */
	bool		 overflow;	/* the body outgrew its limit (YX_E_IO) */
	struct yx_buf	 body;		/* the body (limit: yx_http_capture_init) */
	/* a stream's pieces, as they are written (NULL: into body); not
	 * YX_OK stops the stream as a client gone would */
	int		(*on_piece)(void *arg, const char *data, size_t len);
	void		*arg;
};

/* An empty capture whose body may grow to body_max bytes. */
void	yx_http_capture_init(struct yx_http_capture *c, size_t body_max);
void	yx_http_capture_fini(struct yx_http_capture *c);
/*
 * Make sub (caller storage; yx_http_req_fini) a request of method m for
 * path (DOCUMENT_URI, the URL prefix included) from outer, answered into
 * cap (its qs and in are the query and the body). YX_OK;
 * YX_E_BAD_REQUEST (path too long, or the query as yx_query_parse says).
 */
int	yx_http_req_sub(struct yx_http_req *sub, const struct yx_http_req *outer,
    enum yx_method m, const char *path, struct yx_http_capture *cap,
    struct yx_errctx *err);
/* The request's raw query string (QUERY_STRING; capture: cap->qs), or NULL. */
const char *yx_http_query_string(const struct yx_http_req *r);
/* yx_http_send_raw() with extra header lines ("Name: value\r\n..."). */
int	yx_http_send_raw_hdr(struct yx_http_req *r, int status, const char *ctype,
    const char *data, size_t len, const char *hdr);

/* The method from its name. */
enum yx_method yx_http_method(const char *s);
/*
 * The route table, one JSON line per route: {"method", "path", "op",
 * "needs": [...]} (src/daemon/router.c), appended to b; `yuxi-sandbox
 * routes` prints it, and the suites build their endpoint lists from it.
 */
struct yx_buf;
int		yx_router_describe(struct yx_buf *b);
/* "GET", ... for m; "OTHER" for YX_M_OTHER and unknown values. */
const char	*yx_http_method_name(enum yx_method m);

#endif /* YUXI_HTTP_H */
