/* SPDX-License-Identifier: MIT */
/*
 * h_front_preview.c - previews on a front (docs/scaling.md "Previews";
 * remote_int.h). The thread's sandbox host makes, lists and revokes them
 * and checks every request's token; the front checks the caller and the
 * thread as on one host, forwards, and keeps for each preview it made only
 * the index entry (the token's hash -> the thread), so that nginx's check
 * on the front can name the host to proxy to. An entry the host no longer
 * honours (revoked, expired, the thread gone) costs nothing: the host's
 * own check answers 404.
 *
 * nginx's check on the front answers 200 with X-Yuxi-Preview-Host: <host
 * name> (the front's nginx proxies to that host's nginx, adding the
 * front's credential), 403 for no such preview.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "remote_int.h"
#include "yuxi/log.h"
#include "yuxi/preview.h"

#define FRONT_PREVIEW_MS	65000	/* the host may wake a sandbox */

/* Call the thread's host with the same method, path and body. */
static int
front_preview_call(struct yx_wctx *w, struct yx_http_req *r, const char *arg,
    struct yx_thread *t, struct yx_remote_resp *p, struct yx_errctx *e, bool *called)
{
	struct yx_remote_req	 q;
	const char		*slash = strchr(arg, '/');
	char			 path[YX_THREAD_ID_SIZE + 64], tid[YX_THREAD_ID_SIZE + 1];
	size_t			 host, tl = slash != NULL ? (size_t)(slash - arg) : strlen(arg);
	int			 rc;

	*called = false;
	if (w->cfg->preview_domain[0] == '\0')
		return yx_http_send_error(r, YX_E_NOT_FOUND,
		    "previews are off on this service (YUXI_PREVIEW_DOMAIN)");
	if (tl >= sizeof(tid))
		tl = sizeof(tid) - 1;	/* too long: refused as such below */
	memcpy(tid, arg, tl);
	tid[tl] = '\0';
	if ((rc = yx_load_thread(w, r, tid, tl, t)) != YX_OK ||
	    (rc = yx_front_host(w, r, t, &host)) != YX_OK)
		return rc;
	snprintf(path, sizeof(path), "/api/threads/%s/previews%s%s", t->thread_id,
	    slash != NULL ? "/" : "", slash != NULL ? slash + 1 : "");
	memset(&q, 0, sizeof(q));
	q.method = yx_http_method_name(r->method);
	q.path = path;
	q.user = r->user;
	q.request_id = r->request_id;
	if (r->method == YX_M_POST) {
		q.body = w->raw.data;
		q.body_len = w->raw.len;
	}
	q.timeout_ms = FRONT_PREVIEW_MS;
	*called = true;
	return yx_remote_call(w->remote->rm, host, &q, p, e);
}

/* The token of a preview URL ("https://<token>.<domain>/"); NULL. */
static const char *
front_token(const char *url, char *tok)
{
	const char *s;

	if (url == NULL || strncmp(url, "https://", 8) != 0)
		return NULL;
	s = url + 8;
	if (strlen(s) <= YX_PREVIEW_TOKEN_LEN || s[YX_PREVIEW_TOKEN_LEN] != '.' ||
	    !yx_preview_token_valid(s, YX_PREVIEW_TOKEN_LEN))
		return NULL;
	memcpy(tok, s, YX_PREVIEW_TOKEN_LEN);
	tok[YX_PREVIEW_TOKEN_LEN] = '\0';
	return tok;
}

/*
 * The front's route to the preview the host made for thread t (its 201
 * with the URL and port in p): the index entry, until exp at the latest,
 * and the audit line's preview fields. Any other answer: nothing. The
 * host checks the token.
 */
static void
front_preview_keep(struct yx_wctx *w, const struct yx_thread *t,
    const struct yx_remote_resp *p, int64_t exp)
{
	struct json_object	*o = NULL, *v;
	char			 tok[YX_PREVIEW_TOKEN_LEN + 1];
	int			 port = 0;

	if (p->status == 201 && yx_remote_resp_json(p) &&
	    (o = json_tokener_parse(p->body.data)) != NULL &&
	    json_object_object_get_ex(o, "url", &v) &&
	    front_token(json_object_get_string(v), tok) != NULL &&
	    json_object_object_get_ex(o, "port", &v) && (port = json_object_get_int(v)) > 0) {
		if (yx_preview_index_put(w->cfg, tok, t->thread_id, port, exp) != YX_OK)
			log_warnx("thread %s: the front cannot keep its preview's route",
			    t->thread_id);
		w->note.has_preview = true;
		w->note.preview_port = port;
		snprintf(w->note.preview_prefix, sizeof(w->note.preview_prefix), "%.*s",
		    YX_PREVIEW_PREFIX_LEN, tok);
		explicit_bzero(tok, sizeof(tok));
	}
	json_object_put(o);
}

/* The request to the thread's host, its answer relayed; keep: a create's,
 * whose preview the front keeps a route to. */
static int
front_preview_forward(struct yx_wctx *w, struct yx_http_req *r, const char *arg, bool keep)
{
	struct yx_remote_resp	p;
	struct yx_thread	t;
	struct yx_errctx	e;
	int64_t			exp = yx_now_ms() + (int64_t)w->cfg->preview_ttl_max * 1000;
	bool			called;
	int			rc;

	yx_errctx_clear(&e);
	yx_remote_resp_init(&p);
	rc = front_preview_call(w, r, arg, &t, &p, &e, &called);
	if (called && rc == YX_OK && keep)
		front_preview_keep(w, &t, &p, exp);
	if (called)
		rc = yx_front_relay(r, rc, &e, &p);
	yx_remote_resp_fini(&p);
	return rc;
}

int
yx_h_front_preview_pass(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return front_preview_forward(w, r, arg, false);
}

int
yx_h_front_preview_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return front_preview_forward(w, r, arg, true);
}

int
yx_h_front_preview_auth(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const char		*host = FCGX_GetParam("YUXI_PREVIEW_HOST", r->fcgi->envp);
	struct yx_thread	 t;
	char			 tid[YX_THREAD_ID_SIZE], hdr[YX_THREAD_HOST_MAX + 40];

	(void)arg;
	if (yx_preview_route(w->cfg, host, tid) != YX_OK ||
	    yx_thread_find(&w->store, tid, &t, NULL) != YX_OK || t.host[0] == '\0' ||
	    yx_hostlist_find(yx_remote_hosts(w->remote->rm), t.host) < 0)
		return yx_http_send_empty_hdr(r, 403, NULL);
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", tid);
	snprintf(hdr, sizeof(hdr), "X-Yuxi-Preview-Host: %s\r\n", t.host);
	return yx_http_send_empty_hdr(r, 200, hdr);
}
