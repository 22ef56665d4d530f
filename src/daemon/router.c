/* SPDX-License-Identifier: MIT */
/*
 * router.c - the route table (docs/api.md) and dispatch of one request.
 *
 * Every route is one line of the table below, with what it needs
 * (YX_R_*, daemon_int.h) and the modes it exists in; the router enforces
 * identity, the admin role, the JSON body and the user's slots before the
 * handler runs, and gives them back after it.
 *
 * A pattern is matched segment by segment against DOCUMENT_URI (already
 * normalised by nginx); "{}" matches one non-empty segment, which is handed
 * to the handler (two of them as "first/second"). A path that matches some
 * route with another method is 405 method_not_allowed; no match at all is
 * 404 not_found. Every request ends with one log line and one metrics
 * sample, and every request for a path under /api/ (matched or not) with
 * one audit line (audit.c) carrying what its handler noted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "common/control_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/path.h"

/* Shorthands of the table below: who may ask, where the thread is. */
#define U	YX_R_USER
#define ALL	(YX_R_STANDALONE | YX_R_FRONT | YX_R_PROVISIONER)
#define HOST	(YX_R_STANDALONE | YX_R_PROVISIONER)	/* not a front's */
#define FWDQ	(ALL | U | YX_R_OWNER | YX_R_FWD)	/* thread_id in the query */
#define FWDJ	(FWDQ | YX_R_JSON)			/* ... in the JSON body */
#define FS	(FWDQ | YX_R_PATH)			/* a path in the query */
#define FSJ	(FWDJ | YX_R_PATH | YX_R_WRITE)	/* ... in the body, a write */
#define PROC	(FWDQ | YX_R_PROC)			/* a process id in the path */
#define SESS	(FWDQ | YX_R_SESS)			/* a session id in the path */
#define ADM	(YX_R_USER | YX_R_ADMIN)
/* A route without a default path or a front handler of its own (most):
 * a row of the table is written with its first five fields only. */
/* clang-format off */
#define ROUTE(m, pattern, name, fn, needs)	{ m, pattern, name, fn, needs, NULL, NULL }
/* clang-format on */

/*
 * Every route, with what it needs (docs/api.md; the needs: daemon_int.h).
 * The router enforces identity, the admin role, the JSON body, the user's
 * slots and the modes once, before the handler; a front forwards the
 * YX_R_FWD routes to the thread's host after its own checks of the same
 * declarations (h_front.c), or runs the route's front handler.
 */
const struct yx_route yx_routes[] = {
	{ YX_M_GET,	"/healthz",			"healthz",	yx_h_healthz,		ALL, NULL, yx_h_front_healthz },
	{ YX_M_GET,	"/readyz",			"readyz",	yx_h_readyz,		ALL, NULL, yx_h_front_readyz },
	ROUTE(YX_M_GET,	"/metrics",			"metrics",	yx_h_metrics,		ALL),
	{ YX_M_POST,	"/api/threads",			"thread_create", yx_h_threads_create,	ALL | U | YX_R_JSON_OPT, NULL, yx_h_front_threads_create },
	ROUTE(YX_M_GET,	"/api/threads",			"thread_list",	yx_h_threads_list,	ALL | U),
	{ YX_M_GET,	"/api/threads/{}",		"thread_get",	yx_h_threads_get,	ALL | U | YX_R_OWNER, NULL, yx_h_front_threads_get },
	{ YX_M_DELETE,	"/api/threads/{}",		"thread_delete", yx_h_threads_delete,	ALL | U | YX_R_OWNER, NULL, yx_h_front_threads_delete },
	{ YX_M_PATCH,	"/api/threads/{}",		"thread_update", yx_h_threads_patch,	ALL | U | YX_R_OWNER | YX_R_JSON, NULL, yx_h_front_threads_patch },
	/* previews (docs/api.md "Previews"): the thread's, then nginx's check
	 * of every preview request (auth_request: no identity, the capability
	 * in the host name) */
	{ YX_M_POST,	"/api/threads/{}/previews",	"preview_create", yx_h_preview_create,	ALL | U | YX_R_OWNER | YX_R_JSON, NULL, yx_h_front_preview_create },
	{ YX_M_GET,	"/api/threads/{}/previews",	"preview_list",	yx_h_preview_list,	ALL | U | YX_R_OWNER, NULL, yx_h_front_preview_pass },
	{ YX_M_DELETE,	"/api/threads/{}/previews/{}",	"preview_delete", yx_h_preview_delete,	ALL | U | YX_R_OWNER, NULL, yx_h_front_preview_pass },
	{ YX_M_GET,	"/_yuxi_preview/auth",		"preview_auth",	yx_h_preview_auth,	ALL, NULL, yx_h_front_preview_auth },
	ROUTE(YX_M_POST,	"/api/threads/{}/snapshots",	"snapshot_create", yx_h_snap_create,	ALL | U | YX_R_OWNER | YX_R_FWD | YX_R_JSON_OPT),
	ROUTE(YX_M_GET,	"/api/threads/{}/snapshots",	"snapshot_list", yx_h_snap_list,	ALL | U | YX_R_OWNER | YX_R_FWD),
	ROUTE(YX_M_DELETE,	"/api/threads/{}/snapshots/{}",	"snapshot_delete", yx_h_snap_delete,	ALL | U | YX_R_OWNER | YX_R_FWD),
	ROUTE(YX_M_POST,	"/api/threads/{}/snapshots/{}/restore", "snapshot_restore", yx_h_snap_restore, ALL | U | YX_R_OWNER | YX_R_FWD | YX_R_SLOT),
	ROUTE(YX_M_POST,	"/api/execute",			"execute",	yx_h_execute,		FWDJ | YX_R_EXEC | YX_R_SLOT),
	ROUTE(YX_M_POST,	"/api/processes",		"processes",	yx_h_procs_start,	FWDJ | YX_R_CMD | YX_R_SLOT),
	ROUTE(YX_M_GET,	"/api/processes",		"processes",	yx_h_procs_list,	FWDQ | YX_R_SLOT),
	ROUTE(YX_M_GET,	"/api/processes/{}",		"process",	yx_h_procs_get,		PROC | YX_R_SLOT),
	ROUTE(YX_M_DELETE,	"/api/processes/{}",		"process",	yx_h_procs_kill,	PROC | YX_R_SLOT),
	ROUTE(YX_M_GET,	"/api/processes/{}/output",	"process_output", yx_h_procs_output,	PROC | YX_R_WAIT),
	ROUTE(YX_M_POST,	"/api/processes/{}/stdin",	"process_stdin", yx_h_procs_stdin,	PROC | YX_R_STREAM | YX_R_SLOT),
	ROUTE(YX_M_POST,	"/api/processes/{}/resize",	"process_resize", yx_h_procs_resize,	PROC | YX_R_JSON | YX_R_SLOT),
	ROUTE(YX_M_GET,	"/api/services",		"services",	yx_h_services_list,	FWDQ),
	ROUTE(YX_M_GET,	"/api/services/{}/output",	"service_output", yx_h_services_output,	FWDQ | YX_R_WAIT),
	ROUTE(YX_M_POST,	"/api/sessions",		"session_create", yx_h_sessions_create,	FWDJ | YX_R_SLOT),
	ROUTE(YX_M_GET,	"/api/sessions",		"session_list",	yx_h_sessions_list,	FWDQ | YX_R_SLOT),
	ROUTE(YX_M_GET,	"/api/sessions/{}",		"session_get",	yx_h_sessions_get,	SESS | YX_R_SLOT),
	ROUTE(YX_M_DELETE,	"/api/sessions/{}",		"session_delete", yx_h_sessions_delete,	SESS | YX_R_SLOT),
	ROUTE(YX_M_POST,	"/api/sessions/{}/execute",	"session_execute", yx_h_execute,	FWDJ | YX_R_SESS | YX_R_EXEC | YX_R_SLOT),
	{ YX_M_GET,	"/api/filesystem/ls",		"fs_ls",	yx_h_fs_ls,		FS | YX_R_TOP, YX_VROOT_WORKSPACE, NULL },
	ROUTE(YX_M_GET,	"/api/filesystem/cat",		"fs_cat",	yx_h_fs_cat,		FS),
	ROUTE(YX_M_POST,	"/api/filesystem/write",	"fs_write",	yx_h_fs_write,		FSJ),
	ROUTE(YX_M_POST,	"/api/filesystem/edit",		"fs_edit",	yx_h_fs_edit,		FSJ),
	ROUTE(YX_M_POST,	"/api/filesystem/delete",	"fs_delete",	yx_h_fs_delete,		FSJ),
	{ YX_M_GET,	"/api/filesystem/glob",		"fs_glob",	yx_h_fs_glob,		FS | YX_R_TOP, YX_VROOT_WORKSPACE, NULL },
	{ YX_M_GET,	"/api/filesystem/grep",		"fs_grep",	yx_h_fs_grep,		FS | YX_R_TOP, YX_VROOT_WORKSPACE, NULL },
	ROUTE(YX_M_POST,	"/api/filesystem/upload",	"fs_upload",	yx_h_fs_upload,		FS | YX_R_WRITE | YX_R_STREAM),
	ROUTE(YX_M_GET,	"/api/filesystem/download",	"fs_download",	yx_h_fs_download,	FS | YX_R_ACCEL),
	{ YX_M_GET,	"/api/viewer/filesystem/tree",	"viewer_tree",	yx_h_viewer_tree,	FS | YX_R_TOP, "/", NULL },
	ROUTE(YX_M_GET,	"/api/viewer/filesystem/file",	"viewer_file",	yx_h_viewer_file,	FS),
	ROUTE(YX_M_GET,	"/api/viewer/filesystem/download", "viewer_download", yx_h_viewer_download, FS | YX_R_ACCEL),
	{ YX_M_GET,	"/api/admin/sandboxes",		"admin_list",	yx_h_admin_list,	ALL | ADM, NULL, yx_h_front_admin_list },
	{ YX_M_POST,	"/api/admin/sandboxes/{}/release", "admin_release", yx_h_admin_release, ALL | ADM, NULL, yx_h_front_admin_release },
	{ YX_M_DELETE,	"/api/admin/sandboxes/{}",	"admin_destroy", yx_h_admin_destroy,	ALL | ADM, NULL, yx_h_front_admin_destroy },
	ROUTE(YX_M_GET,	"/api/admin/users",		"admin_users",	yx_h_admin_users,	ALL | ADM),
	/* the MCP endpoint (docs/mcp.md): its tool calls are sub-requests of
	 * the routes above (mcp_call.c); a front serves it itself */
	ROUTE(YX_M_POST,	"/mcp",				"mcp",		yx_h_mcp,		YX_R_STANDALONE | YX_R_FRONT | U),
	/* a front's sandbox hosts (docs/scaling.md) */
	ROUTE(YX_M_GET,	"/api/admin/hosts",		"admin_hosts",	yx_h_front_hosts,	YX_R_FRONT | ADM),
	ROUTE(YX_M_POST,	"/api/admin/hosts/{}/drain",	"admin_drain",	yx_h_front_drain,	YX_R_FRONT | ADM),
	ROUTE(YX_M_DELETE,	"/api/admin/hosts/{}/drain",	"admin_undrain", yx_h_front_undrain,	YX_R_FRONT | ADM),
	/* a sandbox host's lifecycle API, only the front calls it */
	ROUTE(YX_M_POST,	"/api/sandboxes",		"prov_create",	yx_h_prov_create,	YX_R_PROVISIONER | U | YX_R_JSON),
	ROUTE(YX_M_GET,	"/api/sandboxes",		"prov_list",	yx_h_prov_list,		YX_R_PROVISIONER),
	ROUTE(YX_M_GET,	"/api/sandboxes/{}",		"prov_get",	yx_h_prov_get,		YX_R_PROVISIONER),
	ROUTE(YX_M_DELETE,	"/api/sandboxes/{}",		"prov_destroy",	yx_h_prov_destroy,	YX_R_PROVISIONER),
	ROUTE(YX_M_POST,	"/api/sandboxes/{}/release",	"prov_release",	yx_h_prov_release,	YX_R_PROVISIONER),
};
const size_t yx_nroutes = sizeof(yx_routes) / sizeof(yx_routes[0]);

#undef U
#undef ALL
#undef HOST
#undef FWDQ
#undef FWDJ
#undef FS
#undef FSJ
#undef PROC
#undef SESS
#undef ADM
#undef ROUTE

_Static_assert(sizeof(yx_routes) / sizeof(yx_routes[0]) < YX_METRIC_ROUTES,
    "YX_METRIC_ROUTES too small");

/* Does path match pattern? The "{}" segment is copied into arg; a second
 * one follows it after a '/' ("thread/port": a segment holds none). */
static bool
route_match_one(const char *pat, const char *path, char *arg, size_t arglen)
{
	size_t used = 0;

	while (*pat != '\0') {
		if (pat[0] == '{' && pat[1] == '}') {
			size_t n = strcspn(path, "/");

			if (used > 0)
				arg[used++] = '/';
			if (n == 0 || used + n >= arglen)
				return false;
			memcpy(arg + used, path, n);
			used += n;
			arg[used] = '\0';
			path += n;
			pat += 2;
			continue;
		}
		if (*pat++ != *path++)
			return false;
	}
	return *path == '\0';
}

/* Routes of every mode: what the unit tests and the fuzzers match. */
#define ROUTE_ANY_MODE	(YX_R_STANDALONE | YX_R_FRONT | YX_R_PROVISIONER)

/* The route of (m, path) among those of the modes in `modes`. */
static int
route_match(unsigned modes, enum yx_method m, const char *path, size_t *idx,
    char *arg, size_t arglen)
{
	size_t	i;
	bool	other = false;

	arg[0] = '\0';
	for (i = 0; i < yx_nroutes; i++) {
		if ((yx_routes[i].needs & modes) == 0 ||
		    !route_match_one(yx_routes[i].pattern, path, arg, arglen))
			continue;
		if (yx_routes[i].method == m ||
		    (m == YX_M_HEAD && yx_routes[i].method == YX_M_GET)) {
			*idx = i;
			return YX_OK;
		}
		other = true;
		*idx = i;
	}
	arg[0] = '\0';
	if (!other)
		*idx = yx_nroutes;
	return other ? YX_E_METHOD_NOT_ALLOWED : YX_E_NOT_FOUND;
}

int
yx_router_match(enum yx_method m, const char *path, size_t *idx, char *arg, size_t arglen)
{
	return route_match(ROUTE_ANY_MODE, m, path, idx, arg, arglen);
}

/* "Allow: GET, POST, HEAD\r\n" for the routes matching path (RFC 9110 15.5.6). */
static void
router_allow(unsigned modes, const char *path, char *out, size_t outlen)
{
	char	arg[256];
	size_t	i, n;
	bool	get = false;

	n = (size_t)snprintf(out, outlen, "Allow: ");
	for (i = 0; i < yx_nroutes && n < outlen; i++) {
		if ((yx_routes[i].needs & modes) == 0 ||
		    !route_match_one(yx_routes[i].pattern, path, arg, sizeof(arg)))
			continue;
		n += (size_t)snprintf(out + n, outlen - n, "%s%s", n > 7 ? ", " : "",
		    yx_http_method_name(yx_routes[i].method));
		get = get || yx_routes[i].method == YX_M_GET;
	}
	if (get && n < outlen)
		n += (size_t)snprintf(out + n, outlen - n, ", HEAD");
	if (n < outlen)
		snprintf(out + n, outlen - n, "\r\n");
}

static void
route_log(const struct yx_http_req *r, int64_t us)
{
	char m[40], p[160], t[160], u[100];

	/* the request id is [A-Za-z0-9._-] only: no escaping needed */
	log_info("%s %s route=%s status=%d dur_ms=%.1f user=%s thread=%s rid=%s",
	    log_escape(m, sizeof(m), r->method_str, strlen(r->method_str)),
	    log_escape(p, sizeof(p), r->path, strlen(r->path)), r->route, r->status,
	    (double)us / 1000.0, r->user[0] ? log_escape(u, sizeof(u), r->user, strlen(r->user)) : "-", r->thread_id[0] ? log_escape(t, sizeof(t), r->thread_id, strlen(r->thread_id)) : "-",
	    r->request_id[0] ? r->request_id : "-");
}

/*
 * The path below YUXI_URL_PREFIX ("/sandbox/api/x" -> "/api/x"); NULL when
 * the request is not under it.
 */
static const char *
router_unprefix(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	if (n == 0)
		return path;
	if (strncmp(path, prefix, n) != 0 || path[n] != '/')
		return NULL;
	return path + n;
}

/* Length of the host part of "host[:port]" or "[v6]:port". */
static size_t
router_hostlen(const char *s)
{
	const char *e;

	if (s[0] == '[')
		return (e = strchr(s, ']')) != NULL ? (size_t)(e - s) + 1 : strlen(s);
	return strcspn(s, ":/");
}

/*
 * A browser's request made by another site's page (docs/security.md
 * "Cross-site requests"): with cookie or basic-auth sign-in the browser
 * would attach the credentials. State-changing methods are refused when the
 * browser says so (Sec-Fetch-Site cross-site or same-site) or when Origin
 * names another host than the request's (HTTP_HOST; Debian's fastcgi_params
 * pass $host, without the port, so hosts are compared without ports).
 * Agents and curl send neither header.
 */
static bool
router_cross_site(const struct yx_http_req *r)
{
	const char	*site, *origin, *host, *o;
	size_t		 n;

	if (r->method == YX_M_GET || r->method == YX_M_HEAD)
		return false;
	if (YX_CONTROL_OFF("crosssite"))	/* control mode: never refused */
		return false;
	site = FCGX_GetParam("HTTP_SEC_FETCH_SITE", r->fcgi->envp);
	if (site != NULL && (strcmp(site, "cross-site") == 0 || strcmp(site, "same-site") == 0))
		return true;
	origin = FCGX_GetParam("HTTP_ORIGIN", r->fcgi->envp);
	if (origin == NULL || origin[0] == '\0')
		return false;
	host = FCGX_GetParam("HTTP_HOST", r->fcgi->envp);
	if ((o = strstr(origin, "://")) == NULL || host == NULL)
		return true;	/* "null" and other opaque origins */
	o += 3;
	n = router_hostlen(o);
	return n == 0 || n != router_hostlen(host) || strncasecmp(o, host, n) != 0;
}

void
yx_router_finish(struct yx_wctx *w, struct yx_http_req *r, size_t idx, int64_t t0_us)
{
	const char	*path = router_unprefix(w->cfg->url_prefix, r->path);
	int64_t		 us = yx_mono_us() - t0_us;

	yx_metrics_record(w->metrics, (int)idx, r->status, us);
	route_log(r, us);
	if (path != NULL && strncmp(path, "/api/", 5) == 0)
		yx_audit_write(&w->audit, r, &w->note,
		    idx < yx_nroutes ? yx_routes[idx].name : "unmatched", us);
}

/*
 * What the route needs before its handler runs (the YX_R_* of the router,
 * daemon_int.h), in this order: identity (401), the admin role (403), the
 * JSON body (400, 413), one of the user's slots (503) or, for a long-poll
 * that asks to wait, a wait slot (none: it answers at once). YX_OK, or the
 * refusal answered.
 */
static int
route_needs(struct yx_wctx *w, struct yx_http_req *r, const struct yx_route *rt)
{
	struct yx_errctx	 e;
	const char		*wait;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rt->needs & (YX_R_USER | YX_R_ADMIN)) != 0 && (rc = yx_need_user(r)) != YX_OK)
		return rc;
	if ((rt->needs & YX_R_ADMIN) != 0 && (rc = yx_need_admin(r)) != YX_OK)
		return rc;
	if ((rt->needs & YX_R_JSON_OPT) != 0 && r->content_length <= 0)
		w->body = json_object_new_object();
	else if ((rt->needs & (YX_R_JSON | YX_R_JSON_OPT)) != 0 &&
	    ((rc = yx_http_read_body(r, &w->raw, &e)) != YX_OK ||
		(rc = yx_json_parse_object(w->raw.data, w->raw.len, &w->body, &e)) != YX_OK))
		return yx_send_errctx(r, rc, &e), rc;
	if ((rt->needs & (YX_R_JSON | YX_R_JSON_OPT)) != 0 && w->body == NULL)
		return YX_E_NOMEM;
	if ((rt->needs & YX_R_SLOT) != 0 &&
	    yx_slot_user_take(w->cfg, r->user, &w->slot) != YX_OK)
		return yx_slot_user_refuse(w->cfg, r);
	if ((rt->needs & YX_R_WAIT) != 0 &&
	    (wait = yx_query_get(&r->query, "wait_ms", NULL)) != NULL &&
	    strtoul(wait, NULL, 10) > 0 &&
	    !(w->waiting = yx_slot_wait_take(w->cfg, r->user, &w->wait)))
		log_debug("long-poll of %s answered at once: every wait slot is taken",
		    r->user);
	return YX_OK;
}

/* The request's state the router made (route_needs), given back. */
static void
route_done(struct yx_wctx *w)
{
	json_object_put(w->body);
	w->body = NULL;
	yx_buf_fini(&w->raw);
	yx_slot_user_give(w->slot);
	w->slot = -1;
	if (w->waiting)
		yx_slot_wait_give(&w->wait);
	w->waiting = false;
	w->route = NULL;
}

/* Run route idx's handler for this worker's mode, after its needs. */
static int
route_run(struct yx_wctx *w, struct yx_http_req *r, size_t idx, const char *arg)
{
	const struct yx_route	*rt = &yx_routes[idx];
	yx_handler_fn		 refuse, fn;
	int			 rc;

	w->route = rt;
	w->body = NULL;
	w->slot = -1;
	w->waiting = false;
	yx_buf_init(&w->raw, r->body_limit);
	if ((refuse = yx_route_refusal(w, r, rt)) != NULL)
		rc = refuse(w, r, arg);
	else if ((rc = route_needs(w, r, rt)) == YX_OK) {
		fn = yx_route_handler(w, rt);
		rc = fn(w, r, arg);
	}
	route_done(w);
	return rc;
}

int
yx_router_dispatch(struct yx_wctx *w, struct yx_http_req *r)
{
	char		 arg[256], allow[96];
	const char	*path;
	size_t		 idx = yx_nroutes;
	int64_t		 t0 = yx_mono_us();
	unsigned	 modes = yx_route_modes(w);
	int		 rc = YX_E_NOT_FOUND;

	w->note.has_command = w->note.has_path = w->note.has_exit = false;
	w->note.has_meta = w->note.has_preview = false;
	if ((path = router_unprefix(w->cfg->url_prefix, r->path)) != NULL)
		rc = route_match(modes, r->method, path, &idx, arg, sizeof(arg));
	if (rc == YX_E_METHOD_NOT_ALLOWED) {
		/* counted as unmatched: a route's series carry its own method */
		router_allow(modes, path, allow, sizeof(allow));
		idx = yx_nroutes;
	}
	r->route = idx < yx_nroutes ? yx_routes[idx].pattern : "unmatched";
	if (rc == YX_OK && router_cross_site(r))
		yx_http_send_error(r, rc = YX_E_FORBIDDEN,
		    "cross-site request refused");
	else if (rc == YX_E_NOT_FOUND)
		yx_http_send_error(r, rc, "no such endpoint");
	else if (rc == YX_E_METHOD_NOT_ALLOWED)
		yx_http_send_error_hdr(r, rc, NULL, allow);
	else if ((rc = route_run(w, r, idx, arg)) != YX_OK && r->status == 0)
		yx_http_send_error(r, rc, NULL);
	if (r->status == 0)	/* a handler bug: never leave nginx without an answer */
		yx_http_send_error(r, YX_E_INTERNAL, NULL);
	yx_router_finish(w, r, idx, t0);
	return (int)idx;
}

/* The needs' names, as `yuxi-sandbox routes` prints them. */
static const struct {
	unsigned	 bit;
	const char	*name;
} route_need_names[] = {
	{ YX_R_USER, "user" },
	{ YX_R_ADMIN, "admin" },
	{ YX_R_JSON, "json" },
	{ YX_R_JSON_OPT, "json_optional" },
	{ YX_R_SLOT, "slot" },
	{ YX_R_WAIT, "wait" },
	{ YX_R_OWNER, "owner" },
	{ YX_R_WRITE, "write" },
	{ YX_R_PATH, "path" },
	{ YX_R_TOP, "top" },
	{ YX_R_EXEC, "exec" },
	{ YX_R_CMD, "process_command" },
	{ YX_R_PROC, "process_id" },
	{ YX_R_SESS, "session_id" },
	{ YX_R_STREAM, "stream" },
	{ YX_R_ACCEL, "accel" },
	{ YX_R_FWD, "forwarded" },
	{ YX_R_STANDALONE, "standalone" },
	{ YX_R_FRONT, "front" },
	{ YX_R_PROVISIONER, "provisioner" },
};

int
yx_router_describe(struct yx_buf *b)
{
	size_t	i, j;
	int	rc = YX_OK;

	for (i = 0; i < yx_nroutes && rc == YX_OK; i++) {
		rc = yx_buf_printf(b, "{\"method\":\"%s\",\"path\":\"%s\",\"op\":\"%s\",\"needs\":[",
		    yx_http_method_name(yx_routes[i].method), yx_routes[i].pattern,
		    yx_routes[i].name);
		for (j = 0; j < sizeof(route_need_names) / sizeof(route_need_names[0]) &&
		     rc == YX_OK;
		     j++)
			if ((yx_routes[i].needs & route_need_names[j].bit) != 0)
				rc = yx_buf_printf(b, "%s\"%s\"",
				    b->len > 0 && b->data[b->len - 1] != '[' ? "," : "",
				    route_need_names[j].name);
		if (rc == YX_OK)
			rc = yx_buf_puts(b, "]}\n");
	}
	return rc;
}
