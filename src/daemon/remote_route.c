/* SPDX-License-Identifier: MIT */
/*
 * remote_route.c - the handler of each request for the worker's mode
 * (YUXI_MODE, docs/scaling.md), the routes each mode hides, and a worker's
 * side of the front and provisioner roles.
 *
 * standalone   every route's own handler; the provisioner's lifecycle
 *              routes (/api/sandboxes...) and the front's host routes
 *              (/api/admin/hosts...) do not exist (404 as any unknown
 *              path). A request carrying YUXI_FRONT_AUTH (a provisioner's
 *              nginx configuration in front of a daemon that is not one,
 *              which would take the caller's X-Yuxi-User as identity) is
 *              refused with 401.
 * front        the front's handler where it has one (h_front.c), else the
 *              route's own; the lifecycle routes do not exist.
 * provisioner  every route but /healthz, /readyz and /metrics needs the
 *              front's credential (h_prov.c), else 401; the host routes
 *              do not exist.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>

#include "remote_int.h"
#include "yuxi/log.h"
#include "common/control_int.h"

int
yx_remote_worker_open(struct yx_wctx *w)
{
	struct yx_errctx	e;
	char			tok[260], why[256];
	int			rc = YX_OK;

	yx_errctx_clear(&e);
	w->remote = NULL;
	if (w->cfg->mode == YX_MODE_STANDALONE)
		return YX_OK;
	if ((w->remote = calloc(1, sizeof(*w->remote))) == NULL) {
		log_warnx("worker start: out of memory");
		return YX_E_NOMEM;
	}
	if (w->cfg->mode == YX_MODE_FRONT) {
		if ((w->remote->rm = yx_remote_new(w->cfg, &e)) == NULL) {
			log_warnx("worker start: sandbox hosts: %s", e.msg);
			rc = e.code != YX_OK ? e.code : YX_E_INTERNAL;
		}
		return rc;
	}
	if ((rc = yx_config_read_token(w->cfg, tok, sizeof(tok), why, sizeof(why))) != YX_OK) {
		log_warnx("worker start: YUXI_PROVISIONER_TOKEN_FILE: %s", why);
		return rc;
	}
	snprintf(w->remote->expect, sizeof(w->remote->expect), "Bearer %s", tok);
	w->remote->expect_len = strlen(w->remote->expect);
	explicit_bzero(tok, sizeof(tok));
	return YX_OK;
}

void
yx_remote_worker_close(struct yx_wctx *w)
{
	if (w->remote == NULL)
		return;
	yx_remote_free(w->remote->rm);
	explicit_bzero(w->remote->expect, sizeof(w->remote->expect));
	free(w->remote);
	w->remote = NULL;
}

unsigned
yx_route_modes(const struct yx_wctx *w)
{
	switch (w->cfg->mode) {
	case YX_MODE_FRONT:
		if (YX_CONTROL_OFF("provroutes"))	/* control: the naive front */
			return YX_R_FRONT | YX_R_PROVISIONER;
		return YX_R_FRONT;
	case YX_MODE_PROVISIONER:
		return YX_R_PROVISIONER;
	default:
		return YX_R_STANDALONE;
	}
}

/* A daemon that is no provisioner behind a provisioner's nginx. */
static int
route_misplaced(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	log_warnx("refused: a request with YUXI_FRONT_AUTH, but YUXI_MODE is not "
		  "provisioner (its nginx would pass a client's X-Yuxi-User)");
	r->user[0] = '\0';
	r->admin = false;
	return yx_http_send_error(r, YX_E_UNAUTHENTICATED, "invalid identity");
}

#ifdef YX_CONTROL_UNSAFE
static int
route_proxy_any(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	size_t n = strlen(w->cfg->url_prefix);

	return yx_front_proxy_any(w, r, r->path + n);
}
#endif

yx_handler_fn
yx_route_refusal(struct yx_wctx *w, struct yx_http_req *r, const struct yx_route *rt)
{
	switch (w->cfg->mode) {
	case YX_MODE_FRONT:
		return NULL;
	case YX_MODE_PROVISIONER:
		if (strcmp(rt->pattern, "/healthz") == 0 || strcmp(rt->pattern, "/readyz") == 0 ||
		    strcmp(rt->pattern, "/metrics") == 0 || yx_prov_authorized(w, r))
			return NULL;
		return yx_h_prov_refuse;
	default:
		if (FCGX_GetParam("YUXI_FRONT_AUTH", r->fcgi->envp) != NULL)
			return route_misplaced;
		return NULL;
	}
}

yx_handler_fn
yx_route_handler(struct yx_wctx *w, const struct yx_route *rt)
{
	if (w->cfg->mode != YX_MODE_FRONT)
		return rt->fn;
#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("provroutes") && (rt->needs & YX_R_FRONT) == 0)
		return route_proxy_any;
#endif
	if (rt->front != NULL)
		return rt->front;
	return (rt->needs & YX_R_FWD) != 0 ? yx_h_front_forward : rt->fn;
}
