/* SPDX-License-Identifier: MIT */
/*
 * remote.c - the front's HTTPS client of its sandbox hosts; see
 * include/yuxi/remote.h and docs/scaling.md.
 *
 * One CURL easy handle per host, reset (which keeps its connection cache)
 * and set up again for every call: the TLS connection of the previous
 * call is reused while the host keeps it open (the provisioner's nginx
 * keeps idle connections for 300 s). Nagle is off (libcurl's default), and
 * "Expect:" is sent empty so that a body never waits for a 100 Continue.
 *
 * A host that stops answering (docs/scaling.md "Failure"): the connect
 * phase (TCP and TLS) has YX_REMOTE_CONNECT_MS; a connection whose peer
 * acknowledges nothing for YX_REMOTE_ACK_MS is dropped by the kernel
 * (TCP_USER_TIMEOUT, with keepalive probes every second while a call
 * waits), so a host that drops packets or is cut off ends a call within
 * that, not the call's whole timeout; and a request is never sent twice:
 * libcurl sends it again on a fresh connection when a kept one dies before
 * any answer, but the host may have acted on it (a command run), so the
 * call fails instead (remote_resend).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/remote.h"
#include "common/control_int.h"

#define REMOTE_TIMEOUT_MS	60000	/* a call without a timeout of its own */

struct remote_host {
	CURL	*curl;		/* made on first use; keeps the connection */
	int64_t	 down_at_ms;	/* monotonic time it failed; 0: not marked */
};

/* One call: what the callbacks need. */
struct remote_call {
	const struct yx_remote_req	*q;
	struct yx_remote_resp		*resp;
	int				 sink_rc;	/* the sink's refusal */
	int				 sends;		/* times the request went out */
	bool				 refused;	/* ... and a second time was refused */
};

struct yx_remote {
	const struct yx_config	*cfg;
	struct yx_hostlist	 hosts;
	struct remote_host	 h[YX_HOSTS_MAX];
	char			 auth[340];	/* "Authorization: Bearer <secret>" */
};

void
yx_remote_resp_init(struct yx_remote_resp *r)
{
	memset(r, 0, sizeof(*r));
	yx_buf_init(&r->body, YX_REMOTE_BODY_MAX);
}

void
yx_remote_resp_fini(struct yx_remote_resp *r)
{
	yx_buf_fini(&r->body);
}

bool
yx_remote_resp_json(const struct yx_remote_resp *r)
{
	return strncasecmp(r->content_type, "application/json", 16) == 0;
}

struct yx_remote *
yx_remote_new(const struct yx_config *cfg, struct yx_errctx *err)
{
	struct yx_remote	*rm;
	char			 tok[260], why[256];

	if ((rm = calloc(1, sizeof(*rm))) == NULL) {
		yx_fail(err, YX_E_NOMEM, NULL);
		return NULL;
	}
	rm->cfg = cfg;
	if (yx_hostlist_parse(cfg->provisioner_url, &rm->hosts, why, sizeof(why)) != YX_OK ||
	    yx_config_read_token(cfg, tok, sizeof(tok), why, sizeof(why)) != YX_OK) {
		yx_fail(err, YX_E_BAD_REQUEST, "%s", why);
		free(rm);
		return NULL;
	}
	snprintf(rm->auth, sizeof(rm->auth), "Authorization: Bearer %s", tok);
	explicit_bzero(tok, sizeof(tok));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		yx_fail(err, YX_E_INTERNAL, "libcurl initialisation failed");
		yx_remote_free(rm);
		return NULL;
	}
	return rm;
}

void
yx_remote_free(struct yx_remote *rm)
{
	size_t i;

	if (rm == NULL)
		return;
	for (i = 0; i < YX_HOSTS_MAX; i++)
		if (rm->h[i].curl != NULL)
			curl_easy_cleanup(rm->h[i].curl);
	explicit_bzero(rm->auth, sizeof(rm->auth));
	free(rm);
}

const struct yx_hostlist *
yx_remote_hosts(const struct yx_remote *rm)
{
	return &rm->hosts;
}

bool
yx_remote_down(const struct yx_remote *rm, size_t i)
{
	int64_t at = rm->h[i].down_at_ms;

	return at != 0 && yx_mono_ms() - at < YX_REMOTE_DOWN_MS;
}

/* A body piece: to the sink (a 2xx answer with one), else kept. */
static size_t
remote_collect(char *p, size_t sz, size_t n, void *arg)
{
	struct remote_call	*call = arg;
	struct yx_remote_resp	*r = call->resp;

	if (call->q->sink != NULL && r->status >= 200 && r->status < 300) {
		r->streamed = true;
		if ((call->sink_rc = call->q->sink(call->q->sink_arg, r, p, sz * n)) != YX_OK)
			return 0;	/* CURLE_WRITE_ERROR: the call stops */
		return sz * n;
	}
	if (yx_buf_append(&r->body, p, sz * n) != YX_OK)
		return 0;
	return sz * n;
}

/* Copy the value of header line h (n bytes) named `name` into out. */
static bool
remote_header(const char *h, size_t n, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), vl;

	if (n <= nl || strncasecmp(h, name, nl) != 0)
		return false;
	h += nl;
	n -= nl;
	while (n > 0 && (*h == ' ' || *h == '\t')) {
		h++;
		n--;
	}
	while (n > 0 && (h[n - 1] == '\r' || h[n - 1] == '\n' || h[n - 1] == ' '))
		n--;
	vl = n < outlen - 1 ? n : outlen - 1;
	memcpy(out, h, vl);
	out[vl] = '\0';
	return true;
}

/*
 * The status line, and the headers a caller may see: Content-Type and
 * Retry-After, nothing else.
 */
static size_t
remote_on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct yx_remote_resp	*r = ((struct remote_call *)arg)->resp;
	size_t			 len = sz * n;
	const char		*sp;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {	/* a (next) answer */
		r->content_type[0] = r->retry_after[0] = '\0';
		sp = memchr(p, ' ', len);
		r->status = sp != NULL && (size_t)(sp - p) + 4 <= len ? strtol(sp + 1, NULL, 10) : 0;
		return len;
	}
	if (!remote_header(p, len, "content-type:", r->content_type,
		sizeof(r->content_type)))
		(void)remote_header(p, len, "retry-after:", r->retry_after,
		    sizeof(r->retry_after));
	return len;
}

static size_t
remote_on_read(char *buf, size_t sz, size_t n, void *arg)
{
	const struct yx_remote_req	*q = arg;
	ssize_t				 got = q->read(q->read_arg, buf, sz * n);

	return got < 0 ? CURL_READFUNC_ABORT : (size_t)got;
}

/* Does s hold a byte a header value must not carry? */
static bool
remote_unsafe(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/*
 * The request's header lines. HOOK for request ids (docs/scaling.md):
 * q->request_id goes out as X-Request-Id, so a front's id names the same
 * request in the provisioner's log and audit lines. NULL on failure.
 */
static struct curl_slist *
remote_headers(const struct yx_remote *rm, const struct yx_remote_req *q)
{
	struct curl_slist	*l = NULL, *n;
	char			 line[256];
	const char		*lines[6];
	size_t			 k = 0, i;

	lines[k++] = "Expect:";
	lines[k++] = rm->auth;
	lines[k++] = q->admin ? "X-Yuxi-Role: admin" : "X-Yuxi-Role:";
	if (q->body != NULL || q->read != NULL)
		lines[k++] = q->content_type != NULL &&
			strcmp(q->content_type, "application/octet-stream") == 0 ?
		    "Content-Type: application/octet-stream" :
		    "Content-Type: application/json";
	for (i = 0; i < k; i++) {
		if ((n = curl_slist_append(l, lines[i])) == NULL)
			goto fail;
		l = n;
	}
	if (q->user != NULL && !remote_unsafe(q->user)) {
		snprintf(line, sizeof(line), "X-Yuxi-User: %s", q->user);
		if ((n = curl_slist_append(l, line)) == NULL)
			goto fail;
		l = n;
	}
	if (q->request_id != NULL && q->request_id[0] != '\0' &&
	    !remote_unsafe(q->request_id)) {
		snprintf(line, sizeof(line), "X-Request-Id: %s", q->request_id);
		if ((n = curl_slist_append(l, line)) == NULL)
			goto fail;
		l = n;
	}
	return l;
fail:
	curl_slist_free_all(l);
	return NULL;
}

/*
 * Is this a second sending of the call's request? libcurl sends a request
 * again, on a fresh connection, when the kept one it went out on died
 * before any answer ("Connection died, retrying a fresh connect"); the
 * host may have acted on the first (a command run, a file written), so
 * the call fails instead and answers 503 (yx_remote_call).
 */
static bool
remote_resend(struct remote_call *call)
{
	if (call->sends == 0)
		return false;
	if (YX_CONTROL_OFF("resend"))	/* control: libcurl's retry goes out */
		return false;
	call->refused = true;
	return true;
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* libcurl is about to send the request, on a new or a kept connection. */
static int
remote_on_prereq(void *arg, char *ip, char *local_ip, int port, int local_port)
{
	struct remote_call *call = arg;

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	if (remote_resend(call))
		return CURL_PREREQFUNC_ABORT;
	call->sends++;
	return CURL_PREREQFUNC_OK;
}
#endif

/*
 * A new connection's socket (close-on-exec). None once the request went
 * out: the retry stops before it connects, so a host that stopped
 * answering costs no second connect timeout.
 */
static curl_socket_t
remote_on_opensocket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)purpose;
	if (remote_resend(arg))
		return CURL_SOCKET_BAD;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* A new connection: a peer silent for YX_REMOTE_ACK_MS is gone. */
static int
remote_on_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	unsigned int ms = YX_REMOTE_ACK_MS;

	(void)arg;
	if (purpose == CURLSOCKTYPE_IPCXN &&
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) == -1)
		log_warn("TCP_USER_TIMEOUT on a connection to a sandbox host");
	return CURL_SOCKOPT_OK;
}

/*
 * A dead peer noticed within YX_REMOTE_ACK_MS: keepalive probes every
 * second while the connection is idle (a command running on the host),
 * TCP_USER_TIMEOUT for probes and data alike. A live host's kernel answers
 * the probes, however long its command runs.
 */
static CURLcode
remote_setopts_tcp(CURL *c)
{
	CURLcode rc;

	if (YX_CONTROL_OFF("hostack"))	/* control: the kernel's defaults */
		return CURLE_OK;
	if ((rc = curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 1L)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L)))
		return rc;
	return curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, remote_on_sockopt);
}

/*
 * The request at most once (remote_resend). With a libcurl older than
 * 7.80 (no CURLOPT_PREREQFUNCTION to count the sendings), a request other
 * than a GET goes out on a new connection, which libcurl does not retry.
 */
static CURLcode
remote_setopts_once(CURL *c, const struct yx_remote_req *q, struct remote_call *call)
{
	CURLcode rc;

	if ((rc = curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, remote_on_opensocket)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, (void *)call)))
		return rc;
#if LIBCURL_VERSION_NUM >= 0x075000
	(void)q;
	if ((rc = curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, remote_on_prereq)))
		return rc;
	return curl_easy_setopt(c, CURLOPT_PREREQDATA, (void *)call);
#else
	if (strcmp(q->method, "GET") == 0)
		return CURLE_OK;
	return curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
#endif
}

/* The options of one call on the (reset) handle c. */
static CURLcode
remote_setopts(struct yx_remote *rm, CURL *c, const char *url,
    const struct yx_remote_req *q, struct curl_slist *hdrs,
    struct remote_call *call)
{
	long		tmo = q->timeout_ms > 0 ? q->timeout_ms : REMOTE_TIMEOUT_MS;
	CURLcode	rc;

	if ((rc = curl_easy_setopt(c, CURLOPT_URL, url)) ||
#if LIBCURL_VERSION_NUM >= 0x075500
	    (rc = curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https")) ||
#endif
	    (rc = curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)YX_REMOTE_CONNECT_MS)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, tmo)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, remote_on_header)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_HEADERDATA, (void *)call)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, remote_collect)) ||
	    (rc = curl_easy_setopt(c, CURLOPT_WRITEDATA, (void *)call)) ||
	    (rc = remote_setopts_tcp(c)) || (rc = remote_setopts_once(c, q, call)))
		return rc;
	if (rm->cfg->provisioner_ca[0] != '\0' &&
	    (rc = curl_easy_setopt(c, CURLOPT_CAINFO, rm->cfg->provisioner_ca)))
		return rc;
	if (q->read != NULL) {	/* a streamed POST body */
		if ((rc = curl_easy_setopt(c, CURLOPT_POST, 1L)) ||
		    (rc = curl_easy_setopt(c, CURLOPT_READFUNCTION, remote_on_read)) ||
		    (rc = curl_easy_setopt(c, CURLOPT_READDATA, (void *)q)))
			return rc;
		return curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)q->read_len);
	}
	/* a body (POST, PATCH): the caller's buffer outlives the call */
	if (strcmp(q->method, "POST") == 0 || q->body != NULL) {
		if ((rc = curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)(q->body != NULL ? q->body_len : 0))) ||
		    (rc = curl_easy_setopt(c, CURLOPT_POSTFIELDS,
			 q->body != NULL ? q->body : "")))
			return rc;
		if (strcmp(q->method, "POST") == 0)
			return CURLE_OK;
	}
	if (strcmp(q->method, "GET") != 0)
		rc = curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	return rc;
}

/* Mark host i down and say so in our words (the cause to the log). */
static int
remote_unavailable(struct yx_remote *rm, size_t i, const struct yx_remote_req *q,
    const char *cause, struct yx_errctx *err)
{
	rm->h[i].down_at_ms = yx_mono_ms();
	log_warnx("sandbox host %s: %s %s: %s", rm->hosts.v[i].name, q->method,
	    q->path, cause);
	return yx_fail(err, YX_E_BACKEND_UNAVAILABLE, "sandbox host %s unavailable",
	    rm->hosts.v[i].name);
}

int
yx_remote_call(struct yx_remote *rm, size_t i, const struct yx_remote_req *q,
    struct yx_remote_resp *resp, struct yx_errctx *err)
{
	struct remote_call	 call = { q, resp, YX_OK, 0, false };
	struct curl_slist	*hdrs = NULL;
	struct yx_buf		 url;
	char			 why[96];
	CURLcode		 cc;
	int			 rc = YX_E_NOMEM;

	yx_buf_init(&url, 16384);
	resp->status = 0;
	resp->streamed = false;
	resp->content_type[0] = resp->retry_after[0] = '\0';
	yx_buf_reset(&resp->body);
	if (i >= rm->hosts.n) {
		rc = yx_fail(err, YX_E_INTERNAL, "no such sandbox host");
		goto done;
	}
	if (rm->h[i].curl == NULL && (rm->h[i].curl = curl_easy_init()) == NULL)
		goto done;
	if (yx_buf_printf(&url, "%s%s%s%s", rm->hosts.v[i].url, q->path,
		q->query != NULL && q->query[0] != '\0' ? "?" : "",
		q->query != NULL ? q->query : "") != YX_OK ||
	    (hdrs = remote_headers(rm, q)) == NULL)
		goto done;
	curl_easy_reset(rm->h[i].curl);
	if ((cc = remote_setopts(rm, rm->h[i].curl, url.data, q, hdrs, &call)) == CURLE_OK)
		cc = curl_easy_perform(rm->h[i].curl);
	if (cc == CURLE_OUT_OF_MEMORY)
		goto done;
	if (cc == CURLE_WRITE_ERROR && call.sink_rc != YX_OK) {	/* the sink stopped it */
		rc = call.sink_rc;
		goto done;
	}
	if (cc == CURLE_WRITE_ERROR) {
		rc = yx_fail(err, YX_E_PAYLOAD_TOO_LARGE, "answer of the sandbox host too large");
		goto done;
	}
	if (cc != CURLE_OK && call.refused) {	/* remote_resend */
		rc = remote_unavailable(rm, i, q,
		    "connection lost after the request was sent; not sent again "
		    "(it may have been carried out)",
		    err);
		goto done;
	}
	if (cc != CURLE_OK) {
		rc = remote_unavailable(rm, i, q, curl_easy_strerror(cc), err);
		goto done;
	}
	curl_easy_getinfo(rm->h[i].curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (resp->status == 401) {
		rc = remote_unavailable(rm, i, q, "401: the host refused our credential "
						  "(YUXI_PROVISIONER_TOKEN_FILE differs?)",
		    err);
		goto done;
	}
	if (resp->status >= 500 && !yx_remote_resp_json(resp)) {
		snprintf(why, sizeof(why), "its nginx answered %ld (is yuxi-sandboxd running there?)",
		    resp->status);
		rc = remote_unavailable(rm, i, q, why, err);
		goto done;
	}
	rm->h[i].down_at_ms = 0;
	rc = YX_OK;
done:
	if (rc == YX_E_NOMEM)
		yx_fail(err, rc, NULL);
	curl_slist_free_all(hdrs);
	yx_buf_fini(&url);
	return rc;
}
