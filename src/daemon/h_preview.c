/* SPDX-License-Identifier: MIT */
/*
 * h_preview.c - previews (docs/api.md "Previews"; include/yuxi/preview.h):
 * POST, GET /api/threads/{id}/previews, DELETE .../previews/{port}, and
 * nginx's check of every preview request, GET /_yuxi_preview/auth.
 *
 * The thread routes check as every thread route: identity (401), thread
 * id (400), the caller's thread (404 for an unknown and for another
 * user's thread alike), then the body.
 *
 * The check (auth_request) carries no identity: the capability is the
 * host name nginx passes as YUXI_PREVIEW_HOST. It answers at once, never
 * holding the worker for the connection that follows:
 *   200 with X-Yuxi-Preview-Socket: <name>, the ingress socket nginx
 *       proxies to (a name only: nginx's configuration holds the
 *       directory, the worker cannot point it anywhere else);
 *   403 for anything that is no live preview (nginx answers 404);
 *   401 with X-Yuxi-Preview-Retry when the sandbox cannot be had now
 *       (nginx answers 503 with Retry-After).
 * On the way it wakes the sandbox: a running one is marked used (not
 * idle); one that is gone, or whose agent does not take the ingress's
 * connection, is acquired and its agent started by running ":" through
 * the executor, as the next command would.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "daemon_int.h"
#include "common/control_int.h"
#include "yuxi/clock.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/preview.h"
#include "yuxi/provider.h"
#include "yuxi/text.h"

#define PV_WAKE_TIMEOUT_S	10	/* the ":" that wakes a sandbox */
#define PV_RETRY_S		5	/* Retry-After of a 503 */

/* Previews are off: the routes do not exist. */
static int
pv_off(struct yx_http_req *r)
{
	return yx_http_send_error(r, YX_E_NOT_FOUND,
	    "previews are off on this service (YUXI_PREVIEW_DOMAIN)");
}

static struct json_object *
pv_time(int64_t ms)
{
	char ts[40];

	return json_object_new_string(yx_iso8601_ms(ms, ts, sizeof(ts)));
}

/* A preview as the API shows it (its owner sees the URL). */
static struct json_object *
pv_json(const struct yx_config *cfg, const struct yx_preview *p)
{
	struct json_object	*o = json_object_new_object();
	char			 url[YX_PREVIEW_URL_MAX];

	if (o == NULL)
		return NULL;
	yx_preview_url(cfg, p->token, url, sizeof(url));
	json_object_object_add(o, "port", json_object_new_int(p->port));
	json_object_object_add(o, "url", json_object_new_string(url));
	json_object_object_add(o, "prefix", json_object_new_string(p->prefix));
	json_object_object_add(o, "created_at", pv_time(p->created_ms));
	json_object_object_add(o, "expires_at", pv_time(p->expires_ms));
	return o;
}

static void
pv_note(struct yx_wctx *w, const struct yx_preview *p)
{
	w->note.has_preview = true;
	w->note.preview_port = p->port;
	snprintf(w->note.preview_prefix, sizeof(w->note.preview_prefix), "%s", p->prefix);
}

/* An integer field of the body in [lo, hi]; absent: *v untouched. */
static int
pv_int_field(struct yx_http_req *r, struct json_object *body, const char *key,
    int lo, int hi, bool required, int *v, const char *why)
{
	struct json_object	*o;
	int64_t			 n;

	if (!json_object_object_get_ex(body, key, &o) || json_object_is_type(o, json_type_null)) {
		if (!required)
			return YX_OK;
	} else if (json_object_is_type(o, json_type_int) &&
	    (n = json_object_get_int64(o)) >= lo && n <= hi) {
		*v = (int)n;
		return YX_OK;
	}
	return yx_http_send_error(r, YX_E_BAD_REQUEST, why), YX_E_BAD_REQUEST;
}

int
yx_h_preview_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const struct yx_config	*cfg = w->cfg;
	struct yx_preview	 p;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	char			 why[160], token[YX_PREVIEW_TOKEN_LEN + 1];
	int			 port = 0, ttl = cfg->preview_ttl, rc;
	bool			 had;

	yx_errctx_clear(&e);
	if (cfg->preview_domain[0] == '\0')
		return pv_off(r);
	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	snprintf(why, sizeof(why), "port must be an integer from %d to %d (YUXI_PREVIEW_PORTS)",
	    cfg->preview_port_min, cfg->preview_port_max);
	if ((rc = pv_int_field(r, w->body, "port", cfg->preview_port_min,
		 cfg->preview_port_max, true, &port, why)) != YX_OK)
		return rc;
	snprintf(why, sizeof(why),
	    "ttl must be an integer number of seconds from 1 to %d (YUXI_PREVIEW_TTL_MAX)",
	    cfg->preview_ttl_max);
	if ((rc = pv_int_field(r, w->body, "ttl", 1, cfg->preview_ttl_max, false, &ttl,
		 why)) != YX_OK)
		return rc;
	/* one preview per port: a new one replaces (revokes) the old */
	had = yx_preview_delete(&w->store, cfg, t.thread_id, port, NULL) == YX_OK;
	if ((rc = yx_preview_create(&w->store, cfg, t.thread_id, port, ttl, token, &p,
		 &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e);
	explicit_bzero(token, sizeof(token));
	if (had)
		(void)yx_preview_revoke(cfg, t.thread_id, port);
	pv_note(w, &p);
	log_info("thread %s: preview of port %d made (%s..., %d s)", t.thread_id, port,
	    p.prefix, ttl);
	return yx_http_send_obj(r, 201, pv_json(cfg, &p));
}

int
yx_h_preview_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o, *a;
	struct yx_preview	*v = NULL;
	struct yx_thread	 t;
	size_t			 n = 0, i;
	int			 rc;

	if (w->cfg->preview_domain[0] == '\0')
		return pv_off(r);
	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((rc = yx_preview_list(&w->store, w->cfg, t.thread_id, &v, &n)) != YX_OK)
		return rc;
	if ((o = yx_json_list("previews", &a)) == NULL) {
		free(v);
		return YX_E_NOMEM;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(a, pv_json(w->cfg, &v[i]));
	if (v != NULL)	/* none yet: no array (explicit_bzero's is nonnull) */
		explicit_bzero(v, n * sizeof(*v));
	free(v);
	return yx_http_send_obj(r, 200, o);
}

int
yx_h_preview_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_preview	 p;
	struct yx_thread	 t;
	const char		*slash = strchr(arg, '/');
	char			*end, tid[YX_THREAD_ID_SIZE + 1];
	long			 port;
	int			 rc;

	if (w->cfg->preview_domain[0] == '\0')
		return pv_off(r);
	/* the router's "thread/port" */
	if (slash == NULL || (size_t)(slash - arg) >= sizeof(tid))
		return yx_load_thread(w, r, arg, slash != NULL ? sizeof(tid) : strlen(arg), &t);
	memcpy(tid, arg, (size_t)(slash - arg));
	tid[slash - arg] = '\0';
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		return rc;
	errno = 0;
	port = strtol(slash + 1, &end, 10);
	if (slash[1] < '1' || slash[1] > '9' || *end != '\0' || errno != 0 || port > 65535)
		return yx_http_send_error(r, YX_E_NOT_FOUND, "no preview of that port");
	rc = yx_preview_delete(&w->store, w->cfg, t.thread_id, (int)port, &p);
	/* its socket and open connections go whatever the record said */
	(void)yx_preview_revoke(w->cfg, t.thread_id, (int)port);
	if (rc != YX_OK)
		return yx_http_send_error(r, YX_E_NOT_FOUND, "no preview of that port");
	pv_note(w, &p);
	log_info("thread %s: preview of port %ld revoked (%s...)", t.thread_id, port, p.prefix);
	return yx_http_send_empty(r, 204);
}

/* ---- nginx's check ------------------------------------------------------ */

/*
 * Control build only (docs/security.md "Control mode"). previewsock: the
 * naive design's socket, in the sandbox's agent directory (what the box
 * makes there, a symlink included, is where nginx connects). previewproxy:
 * the worker-proxied design: the worker reads the whole response of the
 * request nginx checks (from the ingress, as nginx would), so it is held
 * as long as the box takes to answer. Neither exists in production.
 */
static bool
pv_control(struct yx_wctx *w, struct yx_http_req *r, const char *tid,
    const struct yx_preview *p, const struct yx_ingress_state *st)
{
	struct sockaddr_un	 sun;
	const char		*uri, *host;
	char			 hdr[YX_CFG_PATH + 300], buf[65536];
	int64_t			 until = yx_mono_ms() + 60000;
	int			 s;

	if (YX_CONTROL_OFF("previewsock")) {
		snprintf(hdr, sizeof(hdr), "X-Yuxi-Preview-Socket: %s/run/%s/preview-%d.sock\r\n",
		    w->cfg->saves_dir, tid, p->port);
		(void)yx_http_send_empty_hdr(r, 200, hdr);
		return true;
	}
	if (!YX_CONTROL_OFF("previewproxy") ||
	    (uri = FCGX_GetParam("YUXI_PREVIEW_URI", r->fcgi->envp)) == NULL ||
	    (host = FCGX_GetParam("YUXI_PREVIEW_HOST", r->fcgi->envp)) == NULL)
		return false;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/" YX_PREVIEW_DIR "/" YX_PREVIEW_SOCK_DIR "/%s",
		w->cfg->saves_dir, st->name) >= (int)sizeof(sun.sun_path))
		return false;
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1 &&
	    connect(s, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		snprintf(buf, sizeof(buf), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", uri, host);
		if (send(s, buf, strlen(buf), MSG_NOSIGNAL) > 0)
			while (yx_mono_ms() < until && recv(s, buf, sizeof(buf), 0) > 0)
				;
	}
	if (s != -1)
		close(s);
	return false;
}

static int
pv_deny(struct yx_http_req *r)
{
	return yx_http_send_empty_hdr(r, 403, NULL);
}

static int
pv_unavailable(struct yx_http_req *r, const char *tid, const struct yx_errctx *e)
{
	char m[200];

	log_warnx("preview of thread %s: sandbox unavailable: %s", tid,
	    log_escape(m, sizeof(m), e->msg, strlen(e->msg)));
	snprintf(m, sizeof(m), "X-Yuxi-Preview-Retry: %d\r\n", PV_RETRY_S);
	return yx_http_send_empty_hdr(r, 401, m);
}

/* Open the run directory and have the ingress serve (tid, port). */
static int
pv_ingress(struct yx_wctx *w, const struct yx_exec_request *req,
    const struct yx_preview *p, struct yx_ingress_state *st, struct yx_errctx *e)
{
	unsigned	uid = 0;
	int		rundir = -1, rc;

	if ((rc = yx_executor_rundir(w->exec, req, &rundir, &uid, e)) != YX_OK)
		return rc;
	rc = yx_preview_ensure(w->cfg, req->thread_id, p->port, uid, rundir, p->expires_ms,
	    st, e);
	close(rundir);
	return rc;
}

/* Acquire the sandbox and start its agent: one ":" as a command would. */
static int
pv_wake(struct yx_wctx *w, struct yx_exec_request *req, struct yx_errctx *e)
{
	struct yx_exec_output	out;
	int			rc;

	req->command = ":";
	req->timeout_sec = PV_WAKE_TIMEOUT_S;
	rc = yx_executor_run(w->exec, req, &out, e);
	yx_exec_output_fini(&out);
	return rc;
}

int
yx_h_preview_auth(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_exec_request	 req;
	struct yx_ingress_state	 st;
	struct yx_skill_set	 skills;
	struct yx_preview	 p;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	const char		*host = FCGX_GetParam("YUXI_PREVIEW_HOST", r->fcgi->envp);
	char			 tid[YX_THREAD_ID_SIZE], hdr[YX_PREVIEW_NAME_MAX + 40];
	bool			 touched;
	int			 rc;

	(void)arg;
	yx_errctx_clear(&e);
	if (yx_preview_lookup(&w->store, w->cfg, host, tid, &p) != YX_OK ||
	    yx_thread_find(&w->store, tid, &t, NULL) != YX_OK)
		return pv_deny(r);
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", tid);
	if (w->exec == NULL ||
	    yx_agents_skills(w->agents, t.agent_id, t.agent_config_id, &skills) != YX_OK) {
		yx_fail(&e, YX_E_BACKEND_UNAVAILABLE, "no sandbox backend");
		return pv_unavailable(r, tid, &e);
	}
	memset(&req, 0, sizeof(req));
	yx_exec_request_thread(&req, &t);
	req.skills = &skills;
	req.profile = yx_agents_profile(w->agents, t.agent_id, t.agent_config_id);
	touched = yx_provider_touch(w->table, tid) == YX_OK;
	if ((rc = pv_ingress(w, &req, &p, &st, &e)) != YX_OK)
		return pv_unavailable(r, tid, &e);
	if (!touched || !st.linked) {
		if ((rc = pv_wake(w, &req, &e)) != YX_OK ||
		    (rc = pv_ingress(w, &req, &p, &st, &e)) != YX_OK)
			return pv_unavailable(r, tid, &e);
		if (!st.linked)
			log_warnx("preview of thread %s: its agent does not take the "
				  "ingress's connection",
			    tid);
	}
	if (pv_control(w, r, tid, &p, &st))
		return YX_OK;
	snprintf(hdr, sizeof(hdr), "X-Yuxi-Preview-Socket: %s\r\n", st.name);
	return yx_http_send_empty_hdr(r, 200, hdr);
}
