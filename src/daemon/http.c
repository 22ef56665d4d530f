/* SPDX-License-Identifier: MIT */
/*
 * http.c - request parsing and response writing for the FastCGI workers;
 * see include/yuxi/http.h.
 *
 * FastCGI params used (all set by nginx, nginx/yuxi-sandbox.conf):
 * REQUEST_METHOD, DOCUMENT_URI, QUERY_STRING, CONTENT_LENGTH, YUXI_USER,
 * YUXI_ROLE, YUXI_REQUEST_ID, REMOTE_ADDR, and HTTP_X_REQUEST_ID only with
 * YUXI_TRUST_REQUEST_ID. Response headers follow RFC 3875 §6.3 as libfcgi
 * expects: a "Status:" line, then the other header lines, a blank line and
 * the body. In capture mode (a sub-request, yuxi/http.h) the same writers
 * record the answer in memory instead (http_put, http_flush).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "yuxi/buf.h"
#include "yuxi/http.h"
#include "yuxi/log.h"
#include "yuxi/threads.h"
#include "common/control_int.h"

#define YX_JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static struct yx_http_opts	http_opts;

void
yx_http_setup(const struct yx_http_opts *o)
{
	http_opts = *o;
}

bool
yx_request_id_valid(const char *s)
{
	size_t n;

	if (s == NULL)
		return false;
	n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789._-");
	return n > 0 && n <= YX_REQUEST_ID_MAX && s[n] == '\0';
}

/*
 * The request id (see yuxi/http.h): the client's when trusted, else
 * nginx's, else 32 hex digits of getrandom(2) (the clock and the pid when
 * that fails: unique enough to find a log line).
 */
static void
http_request_id(struct yx_http_req *r)
{
	static const char	 hex[] = "0123456789abcdef";
	static unsigned		 seq;
	const char		*s = NULL;
	unsigned char		 rnd[16];
	struct timespec		 ts;
	size_t			 i;

	if (http_opts.trust_request_id)
		s = FCGX_GetParam("HTTP_X_REQUEST_ID", r->fcgi->envp);
	if (!yx_request_id_valid(s))
		s = FCGX_GetParam("YUXI_REQUEST_ID", r->fcgi->envp);
	if (yx_request_id_valid(s)) {
		snprintf(r->request_id, sizeof(r->request_id), "%s", s);
		return;
	}
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(r->request_id, sizeof(r->request_id), "%lx%09ld-%ld-%u",
		    (long)ts.tv_sec, ts.tv_nsec, (long)getpid(), seq++);
		return;
	}
	for (i = 0; i < sizeof(rnd); i++) {
		r->request_id[2 * i] = hex[rnd[i] >> 4];
		r->request_id[2 * i + 1] = hex[rnd[i] & 15];
	}
	r->request_id[2 * sizeof(rnd)] = '\0';
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
yx_pct_decode(const char *in, size_t len, bool plus_space, char *out,
    size_t outlen, size_t *outlenp)
{
	size_t	i, o = 0;
	int	h, l;

	for (i = 0; i < len; i++) {
		char c = in[i];

		if (o + 1 >= outlen)
			return YX_E_BAD_REQUEST;
		if (c == '%') {
			if (i + 2 >= len || (h = hexval((unsigned char)in[i + 1])) < 0 ||
			    (l = hexval((unsigned char)in[i + 2])) < 0)
				return YX_E_BAD_REQUEST;
			c = (char)(h << 4 | l);
			i += 2;
		} else if (c == '+' && plus_space)
			c = ' ';
		out[o++] = c;
	}
	out[o] = '\0';
	if (outlenp != NULL)
		*outlenp = o;
	return YX_OK;
}

int
yx_query_parse(struct yx_query *q, const char *qs, size_t len, struct yx_errctx *err)
{
	const char	*p, *end, *amp, *eq;
	size_t		 used = 0, kl, vl, cap;

	memset(q, 0, sizeof(*q));
	if (len > YX_QUERY_MAX)
		return yx_fail(err, YX_E_BAD_REQUEST, "query string too long");
	cap = len + 2 * YX_QUERY_PARAMS_MAX + 2;
	if ((q->store = malloc(cap)) == NULL)
		return yx_fail(err, YX_E_NOMEM, NULL);
	for (p = qs, end = qs + len; p < end; p = amp + 1) {
		if ((amp = memchr(p, '&', (size_t)(end - p))) == NULL)
			amp = end;
		if (amp == p)
			continue;
		if (q->n == YX_QUERY_PARAMS_MAX)
			return yx_fail(err, YX_E_BAD_REQUEST, "too many query parameters");
		if ((eq = memchr(p, '=', (size_t)(amp - p))) == NULL)
			eq = amp;
		if (yx_pct_decode(p, (size_t)(eq - p), true, q->store + used, cap - used,
			&kl) != YX_OK ||
		    memchr(q->store + used, '\0', kl) != NULL)
			return yx_fail(err, YX_E_BAD_REQUEST, "malformed query string");
		q->kv[q->n].key = q->store + used;
		used += kl + 1;
		vl = 0;
		q->store[used] = '\0';
		if (eq < amp && yx_pct_decode(eq + 1, (size_t)(amp - eq - 1), true, q->store + used, cap - used, &vl) != YX_OK)
			return yx_fail(err, YX_E_BAD_REQUEST, "malformed query string");
		q->kv[q->n].val = q->store + used;
		q->kv[q->n].vlen = vl;
		used += vl + 1;
		q->n++;
		if (amp == end)
			break;
	}
	return YX_OK;
}

void
yx_query_fini(struct yx_query *q)
{
	free(q->store);
	memset(q, 0, sizeof(*q));
}

const char *
yx_query_get(const struct yx_query *q, const char *key, size_t *lenp)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		if (!strcmp(q->kv[i].key, key)) {
			if (lenp != NULL)
				*lenp = q->kv[i].vlen;
			return q->kv[i].val;
		}
	return NULL;
}

size_t
yx_query_count(const struct yx_query *q, const char *key)
{
	size_t i, n = 0;

	for (i = 0; i < q->n; i++)
		if (!strcmp(q->kv[i].key, key))
			n++;
	return n;
}

static bool
pct_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' || c == '-';
}

int
yx_pct_encode_path(struct yx_buf *b, const char *path)
{
	static const char	 hex[] = "0123456789ABCDEF";
	const unsigned char	*p;
	char			 e[3];
	int			 rc = YX_OK;

	/* control mode "headers": the path goes out raw */
	if (YX_CONTROL_OFF("headers"))
		return yx_buf_puts(b, path);
	for (p = (const unsigned char *)path; *p != '\0' && rc == YX_OK; p++) {
		if (*p == '/' || pct_unreserved(*p)) {
			rc = yx_buf_append(b, p, 1);
			continue;
		}
		e[0] = '%';
		e[1] = hex[*p >> 4];
		e[2] = hex[*p & 15];
		rc = yx_buf_append(b, e, 3);
	}
	return rc;
}

int
yx_content_disposition(struct yx_buf *b, const char *name)
{
	static const char	 hex[] = "0123456789ABCDEF";
	const unsigned char	*p;
	int			 rc;

	/* control mode "headers": the name goes out raw */
	if (YX_CONTROL_OFF("headers"))
		return yx_buf_printf(b, "attachment; filename=\"%s\"", name);
	rc = yx_buf_puts(b, "attachment; filename=\"");
	for (p = (const unsigned char *)name; *p != '\0' && rc == YX_OK; p++) {
		char c = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' &&
			     *p != '%') ?
		    (char)*p :
		    '_';

		rc = yx_buf_append(b, &c, 1);
	}
	if (rc == YX_OK)
		rc = yx_buf_puts(b, "\"; filename*=UTF-8''");
	/* RFC 5987 attr-char: ALPHA DIGIT !#$&+-.^_`|~ ; encode the rest */
	for (p = (const unsigned char *)name; *p != '\0' && rc == YX_OK; p++) {
		char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };

		if (pct_unreserved(*p) && *p != '~')
			rc = yx_buf_append(b, p, 1);
		else
			rc = yx_buf_append(b, e, 3);
	}
	return rc;
}

bool
yx_header_unsafe(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

enum yx_method
yx_http_method(const char *s)
{
	if (s == NULL)
		return YX_M_OTHER;
	if (!strcmp(s, "GET"))
		return YX_M_GET;
	if (!strcmp(s, "HEAD"))
		return YX_M_HEAD;
	if (!strcmp(s, "POST"))
		return YX_M_POST;
	if (!strcmp(s, "PUT"))
		return YX_M_PUT;
	if (!strcmp(s, "DELETE"))
		return YX_M_DELETE;
	if (!strcmp(s, "PATCH"))
		return YX_M_PATCH;
	return YX_M_OTHER;
}

const char *
yx_http_method_name(enum yx_method m)
{
	static const char *const names[YX_M__COUNT] = {
		[YX_M_OTHER] = "OTHER",
		[YX_M_GET] = "GET",
		[YX_M_HEAD] = "HEAD",
		[YX_M_POST] = "POST",
		[YX_M_PUT] = "PUT",
		[YX_M_DELETE] = "DELETE",
		[YX_M_PATCH] = "PATCH",
	};

	return (unsigned)m < YX_M__COUNT ? names[m] : "OTHER";
}

/* Identity from YUXI_USER / YUXI_ROLE only (never HTTP_* params). */
static void
http_identity(struct yx_http_req *r)
{
	const char *u, *role;

	u = FCGX_GetParam("YUXI_USER", r->fcgi->envp);
	role = FCGX_GetParam("YUXI_ROLE", r->fcgi->envp);
	/* control mode "identity": a client header counts as identity */
	if (YX_CONTROL_OFF("identity") &&
	    FCGX_GetParam("HTTP_X_YUXI_USER", r->fcgi->envp) != NULL &&
	    FCGX_GetParam("HTTP_X_YUXI_USER", r->fcgi->envp)[0] != '\0') {
		u = FCGX_GetParam("HTTP_X_YUXI_USER", r->fcgi->envp);
		role = FCGX_GetParam("HTTP_X_YUXI_ROLE", r->fcgi->envp);
	}
	if (u == NULL || u[0] == '\0')
		return;
	if (!yx_user_valid(u)) {
		r->bad_identity = true;
		return;
	}
	snprintf(r->user, sizeof(r->user), "%s", u);
	r->admin = role != NULL && !strcmp(role, "admin");
}

int
yx_http_req_init(struct yx_http_req *r, struct FCGX_Request *fcgi, size_t body_limit,
    struct yx_errctx *err)
{
	const char	*m, *uri, *qs, *cl, *ra;
	char		*end;
	long long	 v;

	memset(r, 0, sizeof(*r));
	r->fcgi = fcgi;
	r->body_limit = body_limit;
	r->content_length = -1;
	r->route = "unknown";
	http_request_id(r);
	if ((ra = FCGX_GetParam("REMOTE_ADDR", fcgi->envp)) != NULL)
		snprintf(r->client, sizeof(r->client), "%s", ra);
	m = FCGX_GetParam("REQUEST_METHOD", fcgi->envp);
	snprintf(r->method_str, sizeof(r->method_str), "%s", m != NULL ? m : "");
	r->method = yx_http_method(m);
	http_identity(r);
	if ((cl = FCGX_GetParam("CONTENT_LENGTH", fcgi->envp)) != NULL && cl[0] != '\0') {
		errno = 0;
		v = strtoll(cl, &end, 10);
		if (errno != 0 || *end != '\0' || v < 0)
			return yx_fail(err, YX_E_BAD_REQUEST, "bad Content-Length");
		r->content_length = v;
	}
	uri = FCGX_GetParam("DOCUMENT_URI", fcgi->envp);
	if (uri == NULL || uri[0] != '/' || strlen(uri) >= sizeof(r->path))
		return yx_fail(err, YX_E_BAD_REQUEST, "bad request URI");
	memcpy(r->path, uri, strlen(uri) + 1);
	qs = FCGX_GetParam("QUERY_STRING", fcgi->envp);
	if (qs == NULL)
		qs = "";
	return yx_query_parse(&r->query, qs, strlen(qs), err);
}

void
yx_http_req_fini(struct yx_http_req *r)
{
	yx_query_fini(&r->query);
}

long
yx_http_read_some(struct yx_http_req *r, void *buf, size_t len)
{
	int n;

	if (r->cap != NULL) {
		if (r->cap->in == NULL || r->cap->in_off >= r->cap->in_len)
			return 0;
		if (len > r->cap->in_len - r->cap->in_off)
			len = r->cap->in_len - r->cap->in_off;
		memcpy(buf, r->cap->in + r->cap->in_off, len);
		r->cap->in_off += len;
		r->bytes_in += (uint64_t)len;
		return (long)len;
	}
	if (len > (1 << 20))
		len = 1 << 20;
	n = FCGX_GetStr(buf, (int)len, r->fcgi->in);
	if (n < 0 || (n == 0 && FCGX_GetError(r->fcgi->in) != 0))
		return -1;
	r->bytes_in += (uint64_t)n;
	return n;
}

bool
yx_http_client_gone(struct yx_http_req *r)
{
	struct pollfd	pfd;

	if (YX_CONTROL_OFF("clientgone"))
		return false;
	if (r->fcgi == NULL || r->fcgi->ipcFd < 0)
		return false;
	memset(&pfd, 0, sizeof(pfd));
	pfd.fd = r->fcgi->ipcFd;
	pfd.events = POLLRDHUP;
	if (poll(&pfd, 1, 0) != 1)
		return false;
	return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

int
yx_http_read_body(struct yx_http_req *r, struct yx_buf *b, struct yx_errctx *err)
{
	char	chunk[16384];
	long	n;
	int	rc;

	if (r->content_length > 0 && (uint64_t)r->content_length > r->body_limit)
		return yx_fail(err, YX_E_PAYLOAD_TOO_LARGE,
		    "request body larger than %zu bytes", r->body_limit);
	yx_buf_init(b, r->body_limit);
	while ((n = yx_http_read_some(r, chunk, sizeof(chunk))) > 0)
		if ((rc = yx_buf_append(b, chunk, (size_t)n)) != YX_OK)
			return yx_fail(err, rc,
			    rc == YX_E_PAYLOAD_TOO_LARGE ? "request body too large" : NULL);
	if (n < 0 || (r->content_length >= 0 && b->len != (size_t)r->content_length))
		return yx_fail(err, YX_E_BAD_REQUEST, "incomplete request body");
	return YX_OK;
}

int
yx_json_parse_object(const char *data, size_t len, struct json_object **out,
    struct yx_errctx *err)
{
	struct json_tokener	*tok = NULL;
	struct json_object	*o = NULL;
	size_t			 off;
	int			 rc;

	*out = NULL;
	rc = yx_fail(err, YX_E_BAD_REQUEST, "body must be a JSON object");
	if (len == 0 || len > INT32_MAX || (tok = json_tokener_new()) == NULL)
		goto done;
	o = json_tokener_parse_ex(tok, data, (int)len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(o, json_type_object))
		goto done;
	/* trailing garbage after the object is refused (whitespace allowed) */
	for (off = json_tokener_get_parse_end(tok); off < len &&
	     strchr(" \t\r\n", data[off]) != NULL;
	     off++)
		continue;
	if (off != len)
		goto done;
	*out = o;
	o = NULL;
	rc = YX_OK;
	yx_errctx_clear(err);
done:
	json_object_put(o);
	if (tok != NULL)
		json_tokener_free(tok);
	return rc;
}

int
yx_http_read_json(struct yx_http_req *r, struct json_object **out, struct yx_errctx *err)
{
	struct yx_buf	b;
	int		rc;

	*out = NULL;
	yx_buf_init(&b, r->body_limit);
	if ((rc = yx_http_read_body(r, &b, err)) == YX_OK)
		rc = yx_json_parse_object(b.data, b.len, out, err);
	yx_buf_fini(&b);
	return rc;
}

/*
 * Capture mode: what a header block says, recorded (status, Content-Type,
 * Retry-After; the rest is nginx's business).
 */
static int
http_head_capture(struct yx_http_req *r, int status, const char *ctype, const char *extra)
{
	struct yx_http_capture	*c = r->cap;
	const char		*ra;

	r->status = c->status = status;
	snprintf(c->ctype, sizeof(c->ctype), "%s", ctype != NULL ? ctype : "");
	c->retry_after[0] = '\0';
	if (extra != NULL && (ra = strstr(extra, "Retry-After: ")) != NULL)
		snprintf(c->retry_after, sizeof(c->retry_after), "%.*s",
		    (int)strcspn(ra + 13, "\r\n"), ra + 13);
	return YX_OK;
}

/*
 * len bytes of the body: to nginx, or in capture mode to the capture (a
 * stream's pieces to its on_piece). YX_OK or YX_E_IO.
 */
static int
http_put(struct yx_http_req *r, const char *data, size_t len)
{
	struct yx_http_capture *c = r->cap;

	if (len == 0)
		return YX_OK;
	if (len > INT32_MAX)
		return YX_E_IO;
	if (c == NULL)
		return FCGX_PutStr(data, (int)len, r->fcgi->out) == (int)len ? YX_OK : YX_E_IO;
	if (c->streamed && c->on_piece != NULL)
		return c->on_piece(c->arg, data, len) == YX_OK ? YX_OK : YX_E_IO;
	if (yx_buf_append(&c->body, data, len) != YX_OK) {
		c->overflow = true;
		return YX_E_IO;
	}
	return YX_OK;
}

/* Status line and common headers, then `extra` header lines. */
static int
http_head(struct yx_http_req *r, int status, const char *ctype, long long clen,
    const char *extra)
{
	char	h[1024];
	int	n;

	if (r->cap != NULL)
		return http_head_capture(r, status, ctype, extra);

	/* the request id is [A-Za-z0-9._-] only: safe in a header */
	n = snprintf(h, sizeof(h), "Status: %d %s\r\n%s%s%sCache-Control: no-store\r\n"
				   "X-Content-Type-Options: nosniff\r\n"
				   "%s%s%s",
	    status, yx_http_reason(status),
	    ctype != NULL ? "Content-Type: " : "", ctype != NULL ? ctype : "",
	    ctype != NULL ? "\r\n" : "",
	    r->request_id[0] != '\0' ? "X-Request-Id: " : "", r->request_id,
	    r->request_id[0] != '\0' ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(h))
		return YX_E_INTERNAL;
	if (clen >= 0) {
		int m = snprintf(h + n, sizeof(h) - (size_t)n, "Content-Length: %lld\r\n", clen);

		if (m < 0 || (size_t)m >= sizeof(h) - (size_t)n)
			return YX_E_INTERNAL;
		n += m;
	}
	r->status = status;
	if (FCGX_PutStr(h, n, r->fcgi->out) != n ||
	    (extra != NULL && FCGX_PutS(extra, r->fcgi->out) < 0) ||
	    FCGX_PutStr("\r\n", 2, r->fcgi->out) != 2)
		return YX_E_IO;
	return YX_OK;
}

int
yx_http_send_raw_hdr(struct yx_http_req *r, int status, const char *ctype,
    const char *data, size_t len, const char *hdr)
{
	int rc;

	if (len > INT32_MAX)
		return YX_E_INTERNAL;
	if ((rc = http_head(r, status, ctype, (long long)len, hdr)) != YX_OK)
		return rc;
	r->bytes_out = len;
	return http_put(r, data, len);
}

int
yx_http_send_raw(struct yx_http_req *r, int status, const char *ctype,
    const char *data, size_t len)
{
	return yx_http_send_raw_hdr(r, status, ctype, data, len, NULL);
}

int
yx_http_send_json(struct yx_http_req *r, int status, struct json_object *body)
{
	size_t		 len = 0;
	const char	*s;

	s = json_object_to_json_string_length(body, YX_JSON_FLAGS, &len);
	if (s == NULL)
		return yx_http_send_error(r, YX_E_NOMEM, NULL);
	return yx_http_send_raw(r, status, YX_CT_JSON, s, len);
}

int
yx_http_send_obj(struct yx_http_req *r, int status, struct json_object *o)
{
	int rc;

	if (o == NULL)
		return YX_E_NOMEM;
	rc = yx_http_send_json(r, status, o);
	json_object_put(o);
	return rc;
}

/*
 * May msg not reach the client? A server fault's text may say anything
 * (engine replies, host paths); an operational refusal (capacity, busy,
 * timeout, no space) says what the caller can act on. Any text naming a
 * hidden host root is withheld too.
 */
static bool
http_msg_hidden(int err, const char *msg)
{
	size_t i;

	if (YX_CONTROL_OFF("errmask"))	/* control mode: every text goes out */
		return false;
	if (yx_err_http_status(err) >= 500 && err != YX_E_CAPACITY &&
	    err != YX_E_BUSY && err != YX_E_TIMEOUT && err != YX_E_NOSPACE)
		return true;
	for (i = 0; i < YX_HTTP_HIDE_MAX; i++)
		if (http_opts.hide[i] != NULL && http_opts.hide[i][0] != '\0' &&
		    strstr(msg, http_opts.hide[i]) != NULL)
			return true;
	return false;
}

int
yx_http_send_error_hdr(struct yx_http_req *r, int err, const char *msg, const char *hdr)
{
	struct json_object	*o, *e;
	const char		*s;
	char			 generic[160], esc[600];
	size_t			 len = 0;
	int			 status, rc;

	status = yx_err_http_status(err);
	r->err = err;
	if (msg != NULL && msg[0] != '\0' && http_msg_hidden(err, msg)) {
		log_warnx("request %s: %s %s: %s: %s", r->request_id,
		    r->method_str, r->route, yx_err_api_code(err),
		    log_escape(esc, sizeof(esc), msg, strlen(msg)));
		snprintf(generic, sizeof(generic), "%s (details in the server log)",
		    yx_strerror(err));
		msg = generic;
	}
	if (msg == NULL || msg[0] == '\0')
		msg = yx_strerror(err);
	o = json_object_new_object();
	e = json_object_new_object();
	if (o == NULL || e == NULL) {
		json_object_put(o);
		json_object_put(e);
		s = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
		return yx_http_send_raw(r, 500, YX_CT_JSON, s, strlen(s));
	}
	json_object_object_add(e, "code", json_object_new_string(yx_err_api_code(err)));
	json_object_object_add(e, "message", json_object_new_string(msg));
	if (r->request_id[0] != '\0')
		json_object_object_add(e, "request_id",
		    json_object_new_string(r->request_id));
	json_object_object_add(o, "error", e);
	s = json_object_to_json_string_length(o, YX_JSON_FLAGS, &len);
	r->bytes_out = len;
	if ((rc = http_head(r, status, YX_CT_JSON, (long long)len, hdr)) == YX_OK)
		rc = http_put(r, s, len);
	json_object_put(o);
	return rc;
}

int
yx_http_send_error(struct yx_http_req *r, int err, const char *msg)
{
	return yx_http_send_error_hdr(r, err, msg, NULL);
}

int
yx_http_send_empty(struct yx_http_req *r, int status)
{
	return http_head(r, status, NULL, -1, NULL);
}

int
yx_http_send_empty_hdr(struct yx_http_req *r, int status, const char *hdr)
{
	return http_head(r, status, NULL, 0, hdr);
}

int
yx_http_send_accel(struct yx_http_req *r, const char *uri, const char *filename)
{
	struct yx_buf	h;
	bool		check = true;
	int		rc;

	yx_buf_init(&h, 16384);
	if (r->cap != NULL) {	/* nobody would follow it: a handler's bug */
		log_warnx("request %s: X-Accel-Redirect in a sub-request", r->request_id);
		return yx_http_send_error(r, YX_E_INTERNAL, NULL);
	}
	check = !YX_CONTROL_OFF("headers");	/* control: no CR/LF refusal */
	if (check && (yx_header_unsafe(uri) || yx_header_unsafe(filename))) {
		rc = yx_http_send_error(r, YX_E_BAD_REQUEST, "unsafe file name");
		goto done;
	}
	if ((rc = yx_buf_printf(&h, "X-Accel-Redirect: %s\r\nContent-Disposition: ", uri)) ||
	    (rc = yx_content_disposition(&h, filename)) ||
	    (rc = yx_buf_puts(&h, "\r\n")))
		goto done;
	rc = http_head(r, 200, "application/octet-stream", -1, h.data);
done:
	yx_buf_fini(&h);
	return rc;
}

int
yx_http_send_stream(struct yx_http_req *r, int status, const char *ctype)
{
	int rc;

	if ((rc = http_head(r, status, ctype, -1, "X-Accel-Buffering: no\r\n")) != YX_OK)
		return rc;
	if (r->cap != NULL) {
		r->cap->streamed = true;
		return YX_OK;
	}
	return FCGX_FFlush(r->fcgi->out) == 0 ? YX_OK : YX_E_IO;
}

int
yx_http_write(struct yx_http_req *r, const char *data, size_t len)
{
	int rc;

	if (len > INT32_MAX)
		return YX_E_INTERNAL;
	if ((rc = http_put(r, data, len)) != YX_OK)
		return rc;
	if (r->cap == NULL && FCGX_FFlush(r->fcgi->out) != 0)
		return YX_E_IO;
	return YX_OK;
}

void
yx_http_capture_init(struct yx_http_capture *c, size_t body_max)
{
	memset(c, 0, sizeof(*c));
	yx_buf_init(&c->body, body_max);
}

void
yx_http_capture_fini(struct yx_http_capture *c)
{
	yx_buf_fini(&c->body);
}

int
yx_http_req_sub(struct yx_http_req *sub, const struct yx_http_req *outer, enum yx_method m,
    const char *path, struct yx_http_capture *cap, struct yx_errctx *err)
{
	const char *qs = cap->qs != NULL ? cap->qs : "";

	memset(sub, 0, sizeof(*sub));
	sub->fcgi = outer->fcgi;	/* client gone, the request's headers */
	sub->cap = cap;
	sub->method = m;
	snprintf(sub->method_str, sizeof(sub->method_str), "%s", yx_http_method_name(m));
	memcpy(sub->user, outer->user, sizeof(sub->user));
	sub->admin = outer->admin;
	sub->bad_identity = outer->bad_identity;
	sub->body_limit = outer->body_limit;
	sub->content_length = cap->in != NULL ? (int64_t)cap->in_len : -1;
	sub->route = "unknown";
	memcpy(sub->request_id, outer->request_id, sizeof(sub->request_id));
	memcpy(sub->client, outer->client, sizeof(sub->client));
	if (path[0] != '/' || strlen(path) >= sizeof(sub->path))
		return yx_fail(err, YX_E_BAD_REQUEST, "bad request URI");
	snprintf(sub->path, sizeof(sub->path), "%s", path);
	return yx_query_parse(&sub->query, qs, strlen(qs), err);
}

const char *
yx_http_query_string(const struct yx_http_req *r)
{
	if (r->cap != NULL)
		return r->cap->qs;
	return FCGX_GetParam("QUERY_STRING", r->fcgi->envp);
}
