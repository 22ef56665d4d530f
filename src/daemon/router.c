/* SPDX-License-Identifier: MIT */
/*
 * router.c - the route table (docs/api.md) and dispatch of one request.
 *
 * A pattern is matched segment by segment against DOCUMENT_URI (already
 * normalised by nginx); "{}" matches one non-empty segment, which is handed
 * to the handler (at most one capture per route). A path that matches some
 * route with another method is 405 method_not_allowed; no match at all is
 * 404 not_found. Every request ends with one log line and one metrics
 * sample, and every request for a path under /api/ (matched or not) with
 * one audit line (audit.c) carrying what its handler noted.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <fcgiapp.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "common/control_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"

const struct yx_route yx_routes[] = {
	{ YX_M_GET,	"/healthz",				"healthz",	yx_h_healthz },
	{ YX_M_GET,	"/readyz",				"readyz",	yx_h_readyz },
	{ YX_M_GET,	"/metrics",				"metrics",	yx_h_metrics },
	{ YX_M_POST,	"/api/threads",				"thread_create", yx_h_threads_create },
	{ YX_M_GET,	"/api/threads",				"thread_list",	yx_h_threads_list },
	{ YX_M_GET,	"/api/threads/{}",			"thread_get",	yx_h_threads_get },
	{ YX_M_DELETE,	"/api/threads/{}",			"thread_delete", yx_h_threads_delete },
	{ YX_M_PATCH,	"/api/threads/{}",			"thread_update", yx_h_threads_patch },
	{ YX_M_POST,	"/api/execute",				"execute",	yx_h_execute },
	{ YX_M_POST,	"/api/processes",			"processes",	yx_h_procs_start },
	{ YX_M_GET,	"/api/processes",			"processes",	yx_h_procs_list },
	{ YX_M_GET,	"/api/processes/{}",			"process",	yx_h_procs_get },
	{ YX_M_DELETE,	"/api/processes/{}",			"process",	yx_h_procs_kill },
	{ YX_M_GET,	"/api/processes/{}/output",		"process_output", yx_h_procs_output },
	{ YX_M_POST,	"/api/processes/{}/stdin",		"process_stdin", yx_h_procs_stdin },
	{ YX_M_GET,	"/api/filesystem/ls",			"fs_ls",	yx_h_fs_ls },
	{ YX_M_GET,	"/api/filesystem/cat",			"fs_cat",	yx_h_fs_cat },
	{ YX_M_POST,	"/api/filesystem/write",		"fs_write",	yx_h_fs_write },
	{ YX_M_POST,	"/api/filesystem/edit",			"fs_edit",	yx_h_fs_edit },
	{ YX_M_POST,	"/api/filesystem/delete",		"fs_delete",	yx_h_fs_delete },
	{ YX_M_GET,	"/api/filesystem/glob",			"fs_glob",	yx_h_fs_glob },
	{ YX_M_GET,	"/api/filesystem/grep",			"fs_grep",	yx_h_fs_grep },
	{ YX_M_POST,	"/api/filesystem/upload",		"fs_upload",	yx_h_fs_upload },
	{ YX_M_GET,	"/api/filesystem/download",		"fs_download",	yx_h_fs_download },
	{ YX_M_GET,	"/api/viewer/filesystem/tree",		"viewer_tree",	yx_h_viewer_tree },
	{ YX_M_GET,	"/api/viewer/filesystem/file",		"viewer_file",	yx_h_viewer_file },
	{ YX_M_GET,	"/api/viewer/filesystem/download",	"viewer_download", yx_h_viewer_download },
	{ YX_M_GET,	"/api/admin/sandboxes",			"admin_list",	yx_h_admin_list },
	{ YX_M_POST,	"/api/admin/sandboxes/{}/release",	"admin_release", yx_h_admin_release },
	{ YX_M_DELETE,	"/api/admin/sandboxes/{}",		"admin_destroy", yx_h_admin_destroy },
	{ YX_M_GET,	"/api/admin/users",			"admin_users",	yx_h_admin_users },
	/* remote mode (docs/scaling.md; remote_route.c hides each from the other modes) */
	{ YX_M_GET,	"/api/admin/hosts",			"admin_hosts",	yx_h_front_hosts },
	{ YX_M_POST,	"/api/admin/hosts/{}/drain",		"admin_drain",	yx_h_front_drain },
	{ YX_M_DELETE,	"/api/admin/hosts/{}/drain",		"admin_undrain", yx_h_front_undrain },
	{ YX_M_POST,	"/api/sandboxes",			"prov_create",	yx_h_prov_create },
	{ YX_M_GET,	"/api/sandboxes",			"prov_list",	yx_h_prov_list },
	{ YX_M_GET,	"/api/sandboxes/{}",			"prov_get",	yx_h_prov_get },
	{ YX_M_DELETE,	"/api/sandboxes/{}",			"prov_destroy",	yx_h_prov_destroy },
	{ YX_M_POST,	"/api/sandboxes/{}/release",		"prov_release",	yx_h_prov_release },
};
const size_t yx_nroutes = sizeof(yx_routes) / sizeof(yx_routes[0]);

_Static_assert(sizeof(yx_routes) / sizeof(yx_routes[0]) < YX_METRIC_ROUTES,
    "YX_METRIC_ROUTES too small");

/* Does path match pattern? The "{}" segment is copied into arg. */
static bool
route_match_one(const char *pat, const char *path, char *arg, size_t arglen)
{
	while (*pat != '\0') {
		if (pat[0] == '{' && pat[1] == '}') {
			size_t n = strcspn(path, "/");

			if (n == 0 || n >= arglen)
				return false;
			memcpy(arg, path, n);
			arg[n] = '\0';
			path += n;
			pat += 2;
			continue;
		}
		if (*pat++ != *path++)
			return false;
	}
	return *path == '\0';
}

int
yx_router_match(enum yx_method m, const char *path, size_t *idx, char *arg, size_t arglen)
{
	size_t	i;
	bool	other = false;

	arg[0] = '\0';
	for (i = 0; i < yx_nroutes; i++) {
		if (!route_match_one(yx_routes[i].pattern, path, arg, arglen))
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

/* "Allow: GET, POST, HEAD\r\n" for the routes matching path (RFC 9110 15.5.6). */
static void
router_allow(const char *path, char *out, size_t outlen)
{
	char	arg[256];
	size_t	i, n;
	bool	get = false;

	n = (size_t)snprintf(out, outlen, "Allow: ");
	for (i = 0; i < yx_nroutes && n < outlen; i++) {
		if (!route_match_one(yx_routes[i].pattern, path, arg, sizeof(arg)))
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
#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("crosssite"))	/* control mode: never refused */
		return false;
#endif
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

int
yx_router_dispatch(struct yx_wctx *w, struct yx_http_req *r)
{
	char		 arg[256], allow[96];
	const char	*path;
	size_t		 idx = yx_nroutes;
	int64_t		 t0 = yx_mono_us();
	int		 rc = YX_E_NOT_FOUND;

	w->note.has_command = w->note.has_path = w->note.has_exit = false;
	w->note.has_meta = false;
	if ((path = router_unprefix(w->cfg->url_prefix, r->path)) != NULL &&
	    !yx_route_hidden(w, r, path))
		rc = yx_router_match(r->method, path, &idx, arg, sizeof(arg));
	if (rc == YX_E_METHOD_NOT_ALLOWED) {
		/* counted as unmatched: a route's series carry its own method */
		router_allow(path, allow, sizeof(allow));
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
	else if ((rc = yx_route_handler(w, r, idx)(w, r, arg)) != YX_OK && r->status == 0)
		yx_http_send_error(r, rc, NULL);
	if (r->status == 0)	/* a handler bug: never leave nginx without an answer */
		yx_http_send_error(r, YX_E_INTERNAL, NULL);
	yx_router_finish(w, r, idx, t0);
	return (int)idx;
}
