/* SPDX-License-Identifier: MIT */
/*
 * front_hosts.c - a front's side of its sandbox hosts (docs/scaling.md),
 * shared by its forwarding handlers (h_front.c) and its admin ones
 * (h_front_admin.c): a host's answer relayed to the client (its own error
 * codes and Retry-After kept), a thread's host, whether a host drains,
 * and a host's health (its /healthz, cached YX_FRONT_HEALTH_MS).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "remote_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"

#define FRONT_HEALTH_TMO_MS	2000	/* a host's /healthz */

/* The enum of an API error code the host answered with status, or -1. */
static int
front_err_code(const char *code, long status)
{
	int e;

	for (e = YX_E_OK + 1; e < YX_E__COUNT; e++)
		if (yx_err_http_status(e) == status && strcmp(yx_err_api_code(e), code) == 0)
			return e;
	return -1;
}

/* error.code and error.message of a JSON error answer (borrowed from o). */
bool
yx_front_json_error(struct json_object *o, const char **code, const char **msg)
{
	struct json_object *e, *c, *m;

	if (o == NULL || !json_object_object_get_ex(o, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &c) ||
	    !json_object_object_get_ex(e, "message", &m) ||
	    !json_object_is_type(c, json_type_string) || !json_object_is_type(m, json_type_string))
		return false;
	*code = json_object_get_string(c);
	*msg = json_object_get_string(m);
	return true;
}

struct json_object *
yx_front_parse(const struct yx_remote_resp *p)
{
	struct json_object *o = NULL;

	if (!yx_remote_resp_json(p) ||
	    yx_json_parse_object(p->body.data, p->body.len, &o, NULL) != YX_OK)
		return NULL;
	return o;
}

int
yx_front_relay(struct yx_http_req *r, int rc, const struct yx_errctx *e,
    const struct yx_remote_resp *p)
{
	struct json_object	*o;
	const char		*code, *msg, *ct;
	char			 hdr[48];
	int			 err;

	if (rc == YX_E_BACKEND_UNAVAILABLE)
		return yx_http_send_error_hdr(r, rc, e != NULL ? e->msg : NULL, YX_FRONT_RETRY_HDR),
		       rc;
	if (rc == YX_E_BUSY)	/* the host's slots: front_host_call */
		return yx_http_send_error_hdr(r, rc, e != NULL ? e->msg : NULL,
			   "Retry-After: 1\r\n"),
		       rc;
	if (rc != YX_OK)
		return yx_send_errctx(r, rc, e), rc;
	if (p->status < 200 || p->status > 599)
		return yx_http_send_error_hdr(r, YX_E_BACKEND_UNAVAILABLE,
			   "sandbox host answered nonsense", YX_FRONT_RETRY_HDR),
		       YX_E_BACKEND_UNAVAILABLE;
	if (p->status == 204)
		return yx_http_send_empty(r, 204);
	/* an error with Retry-After: our own writer, which carries headers */
	if (p->retry_after[0] != '\0' && p->status >= 400 &&
	    strspn(p->retry_after, "0123456789") == strlen(p->retry_after) &&
	    strlen(p->retry_after) <= 6 && (o = yx_front_parse(p)) != NULL) {
		err = yx_front_json_error(o, &code, &msg) ? front_err_code(code, p->status) : -1;
		if (err > 0) {
			snprintf(hdr, sizeof(hdr), "Retry-After: %s\r\n", p->retry_after);
			rc = yx_http_send_error_hdr(r, err, msg, hdr);
			json_object_put(o);
			return rc;
		}
		json_object_put(o);
	}
	ct = p->content_type[0] != '\0' && !yx_header_unsafe(p->content_type) ?
	    p->content_type :
	    YX_CT_JSON;
	return yx_http_send_raw(r, (int)p->status, ct, p->body.data, p->body.len);
}

int
yx_front_host(struct yx_wctx *w, struct yx_http_req *r, const struct yx_thread *t,
    size_t *host)
{
	int i;

	if (t->host[0] == '\0' ||
	    (i = yx_hostlist_find(yx_remote_hosts(w->remote->rm), t->host)) < 0) {
		log_warnx("thread %s: its sandbox host \"%s\" is not configured",
		    t->thread_id, t->host);
		yx_http_send_error_hdr(r, YX_E_BACKEND_UNAVAILABLE,
		    "the sandbox host of this thread is not configured", YX_FRONT_RETRY_HDR);
		return YX_E_BACKEND_UNAVAILABLE;
	}
	*host = (size_t)i;
	return YX_OK;
}

bool
yx_front_draining(const struct yx_wctx *w, const char *name)
{
	char p[YX_CFG_PATH + 64];

	snprintf(p, sizeof(p), "%s/hosts/%s.draining", w->cfg->saves_dir, name);
	return access(p, F_OK) == 0;
}

const char *
yx_front_health(struct yx_wctx *w, size_t i, bool fresh)
{
	struct yx_remote_ctx	*x = w->remote;
	struct yx_remote_req	 q;
	struct yx_remote_resp	 p;
	struct json_object	*o, *s;
	const char		*state = "down";
	int64_t			 now = yx_mono_ms();

	if (!fresh && x->health_at_ms[i] != 0 && now - x->health_at_ms[i] < YX_FRONT_HEALTH_MS)
		return x->health[i];
	memset(&q, 0, sizeof(q));
	q.method = "GET";
	q.path = "/healthz";
	q.timeout_ms = FRONT_HEALTH_TMO_MS;
	yx_remote_resp_init(&p);
	if (yx_remote_call(x->rm, i, &q, &p, NULL) == YX_OK && p.status == 200) {
		state = "degraded";
		if ((o = yx_front_parse(&p)) != NULL) {
			if (json_object_object_get_ex(o, "status", &s) &&
			    json_object_is_type(s, json_type_string) &&
			    strcmp(json_object_get_string(s), "ok") == 0)
				state = "ok";
			json_object_put(o);
		}
	}
	yx_remote_resp_fini(&p);
	snprintf(x->health[i], sizeof(x->health[i]), "%s", state);
	x->health_at_ms[i] = yx_mono_ms();
	return x->health[i];
}
