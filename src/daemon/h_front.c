/* SPDX-License-Identifier: MIT */
/*
 * h_front.c - the front of the remote mode (YUXI_MODE=front,
 * docs/scaling.md): the public API, unchanged for clients, over sandbox
 * hosts that keep the threads' files and run their sandboxes.
 *
 * What stays here, before any call goes out: identity (401), the thread id
 * (400), the thread's owner (the one 404 for unknown and foreign threads,
 * from the front's own records), the path model (400 invalid_path, 403
 * path_not_allowed, 403 read_only for writes under /home/yuxi/skills), the
 * JSON body's shape and execute's fields (400), an upload's size (413).
 * What a host answers is relayed as it is (status, Content-Type,
 * Retry-After, body): the answers that depend on the thread's files
 * (404 file_not_found, 400 is_directory, 409 ..., a command's output).
 * A host that does not answer gives 503 backend_unavailable with
 * Retry-After; other hosts' threads are not affected: a host holds at
 * most YUXI_HOST_CALLS of the workers at once (front_host_call), each for
 * at most the call's bound (include/yuxi/remote.h), and one more call
 * answers 503 capacity at once.
 *
 * Placement: a new thread tries the hosts in rendezvous order of its id
 * (include/yuxi/hostlist.h), passing over draining hosts and, until the
 * others have failed, hosts this worker saw fail; the first host that
 * registers it (POST /api/sandboxes) is written into the thread's record
 * ("host") when the record is made, and never changes.
 *
 * Downloads: the worker checks and answers X-Accel-Redirect to
 * <prefix>/_yuxi_remote/<host>/<user><route>?<query>, an internal location
 * of the front's nginx that proxies the request to the host's nginx with
 * the credential (scripts/remote-nginx-conf.sh): the host checks again and
 * its nginx sends the file; no worker of either side streams file bytes.
 * A sub-request (the MCP endpoint's download tool) cannot follow that
 * header: the front then asks the host like any forwarded route and
 * passes the bytes on as they come, up to the capture's limit.
 *
 * The forwarded routes are those the one route table (router.c) marks
 * YX_R_FWD: forwarding another route is that flag on its line, and what
 * is checked here before it goes out is what the line declares. Routes
 * with a front handler of their own (the table's `front`) run it; the
 * others run their own handler (the thread list, /metrics). Execute with
 * "stream": true is relayed piece by piece as the host sends it (a client
 * that leaves stops the call, and the host sees its client go). The
 * background process routes are forwarded too; an output long-poll holds
 * a front worker besides the host's, so the front bounds them with its
 * own YUXI_PROCESS_WAITERS slots: past them the host is asked not to wait
 * and the answer says "wait_capped", as on one host.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "remote_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"
#include "yuxi/path.h"

_Static_assert(YX_THREAD_HOST_MAX == YX_HOST_NAME_MAX, "a placement is a host name");

#define FRONT_MARGIN_MS		30000	/* beyond the host's own bound of a request */
#define FRONT_LIFECYCLE_MS	60000	/* a registration, a delete */
#define FRONT_RETRY_HDR		YX_FRONT_RETRY_HDR

/* One forwarded request, checked. */
struct fwd_req {
	const struct yx_route	*route;
	struct yx_thread	 t;
	struct yx_vpath		 vp;
	int			 timeout_s;	/* execute's; 0: the host's default */
};

/* How long the host may take: its own bound of the request and a margin. */
static long
front_timeout_ms(const struct yx_config *cfg, const struct yx_route *f, int exec_s)
{
	if (f != NULL && (f->needs & YX_R_EXEC) != 0)
		return (long)(exec_s > 0 ? exec_s : cfg->exec_timeout) * 1000 + FRONT_MARGIN_MS;
	return (cfg->request_budget_ms > 0 ? cfg->request_budget_ms : 600000) + FRONT_MARGIN_MS;
}

/* GET /healthz of a front: its workers and each host's state. */
int
yx_h_front_healthz(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const struct yx_hostlist	*hl = yx_remote_hosts(w->remote->rm);
	struct json_object		*o, *h;
	const char			*st;
	bool				 all = true;
	size_t				 i;

	if ((o = json_object_new_object()) == NULL || (h = json_object_new_object()) == NULL) {
		json_object_put(o);
		return YX_E_NOMEM;
	}
	for (i = 0; i < hl->n; i++) {
		st = yx_front_health(w, i, false);
		all = all && strcmp(st, "ok") == 0;
		json_object_object_add(h, hl->v[i].name, json_object_new_string(st));
	}
	json_object_object_add(o, "status", json_object_new_string(all ? "ok" : "degraded"));
	json_object_object_add(o, "mode", json_object_new_string("front"));
	json_object_object_add(o, "workers",
	    json_object_new_int(atomic_load(&w->metrics->workers_alive)));
	json_object_object_add(o, "hosts", h);
	return yx_http_send_obj(r, 200, o);
}

/*
 * GET /readyz of a front: ready when at least one host is (threads can be
 * made and served); each host a check ("host <name>"), asked now.
 */
int
yx_h_front_readyz(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const struct yx_hostlist	*hl = yx_remote_hosts(w->remote->rm);
	struct yx_ready_json		 j;
	const char			*st;
	char				 name[YX_HOST_NAME_MAX + 8];
	size_t				 i, up = 0;
	int				 rc;

	if ((rc = yx_ready_begin(&j)) != YX_OK)
		return rc;
	for (i = 0; i < hl->n; i++) {
		st = yx_front_health(w, i, true);
		snprintf(name, sizeof(name), "host %s", hl->v[i].name);
		up += strcmp(st, "ok") == 0;
		yx_ready_add(&j, name, strcmp(st, "ok") == 0, st);
	}
	return yx_ready_send(r, &j, up > 0);
}

/* Is p the host's "thread not found" (it does not know the thread)? */
static bool
front_unknown_thread(const struct yx_remote_resp *p)
{
	struct json_object	*o;
	const char		*code, *msg;
	bool			 yes = false;

	if (p->status != 404 || (o = yx_front_parse(p)) == NULL)
		return false;
	yes = yx_front_json_error(o, &code, &msg) && strcmp(code, "not_found") == 0 &&
	    strcmp(msg, "thread not found") == 0;
	json_object_put(o);
	return yes;
}

/*
 * A call to host i in one of its slots (YUXI_HOST_CALLS, slots.c): a host
 * that is slow or does not answer holds at most that many of this front's
 * workers, each for at most the call's bound, and the other hosts' threads
 * keep the rest. yx_remote_call's answers, or YX_E_BUSY (503 capacity)
 * at once when the host holds every slot.
 */
static int
front_host_call(struct yx_wctx *w, size_t i, const struct yx_remote_req *q,
    struct yx_remote_resp *p, struct yx_errctx *e)
{
	const struct yx_hostlist	*hl = yx_remote_hosts(w->remote->rm);
	int				 fd, rc;

	if (yx_slot_host_take(w->cfg, hl->n, hl->v[i].name, &fd) != YX_OK)
		return yx_fail(e, YX_E_BUSY,
		    "sandbox host %s is busy: %d calls of this front are waiting for it, "
		    "the most one host may hold",
		    hl->v[i].name, yx_slots_per_host(w->cfg, hl->n));
	rc = yx_remote_call(w->remote->rm, i, q, p, e);
	yx_slot_host_give(fd);
	return rc;
}

/*
 * Register thread t on host i (POST /api/sandboxes as its owner). YX_OK
 * with the host's answer in p (201 or 200 when registered, else its
 * refusal); yx_remote_call's errors.
 */
static int
front_register(struct yx_wctx *w, size_t i, const struct yx_thread *t, const char *rid,
    struct json_object *fork, struct yx_remote_resp *p, struct yx_errctx *e)
{
	struct yx_remote_req	 q;
	struct json_object	*o;
	const char		*s;
	size_t			 len = 0;
	int			 rc;

	if ((o = json_object_new_object()) == NULL)
		return yx_fail(e, YX_E_NOMEM, NULL);
	json_object_object_add(o, "thread_id", json_object_new_string(t->thread_id));
	if (t->agent_id[0] != '\0')
		json_object_object_add(o, "agent_id", json_object_new_string(t->agent_id));
	if (t->agent_config_id[0] != '\0')
		json_object_object_add(o, "agent_config_id",
		    json_object_new_string(t->agent_config_id));
	/* the host's reaper needs the thread's idle timeout; the metadata
	 * stays the front's */
	if (t->idle_timeout > 0)
		json_object_object_add(o, "idle_timeout", json_object_new_int(t->idle_timeout));
	/* a fork: the host copies the snapshot (it has it: the same host) */
	if (fork != NULL)
		json_object_object_add(o, "from_snapshot", json_object_get(fork));
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	memset(&q, 0, sizeof(q));
	q.method = "POST";
	q.path = "/api/sandboxes";
	q.user = t->owner;
	q.request_id = rid;
	q.body = s;
	q.body_len = len;
	q.timeout_ms = FRONT_LIFECYCLE_MS;
	rc = s != NULL ? front_host_call(w, i, &q, p, e) : yx_fail(e, YX_E_NOMEM, NULL);
	json_object_put(o);
	return rc;
}

/*
 * Call the thread's host. When the host does not know the thread (a
 * registration the front could not finish: it was stopped in between, or
 * the host lost it), the thread is registered there again and the call
 * made once more; a streamed body cannot be sent twice, so an upload is
 * not repeated (it answers the 404, and the next request registers).
 */
static int
front_call(struct yx_wctx *w, struct yx_http_req *r, const struct yx_thread *t, size_t i,
    const struct yx_remote_req *q, struct yx_remote_resp *p, struct yx_errctx *e)
{
	struct yx_remote_resp	reg;
	struct yx_thread	still;
	int			rc;

	if ((rc = front_host_call(w, i, q, p, e)) != YX_OK || !front_unknown_thread(p))
		return rc;
	/* a thread deleted meanwhile is not made again */
	if (yx_thread_get(&w->store, t->thread_id, t->owner, &still, NULL) != YX_OK)
		return rc;
	log_warnx("thread %s: host %s did not know it; registered again (files it had "
		  "there, if any, are gone)",
	    t->thread_id, t->host);
	yx_remote_resp_init(&reg);
	rc = front_register(w, i, t, q->request_id, NULL, &reg, e);
	if (rc == YX_OK && (reg.status == 200 || reg.status == 201)) {
		if (q->read != NULL)
			log_warnx("thread %s: upload not repeated", t->thread_id);
		else
			rc = front_host_call(w, i, q, p, e);
	}
	yx_remote_resp_fini(&reg);
	return rc;
}

/* The path of f for the request (query or body), checked. Answers errors. */
static int
fwd_path(struct yx_wctx *w, struct yx_http_req *r, struct fwd_req *fq)
{
	const struct yx_route	*f = fq->route;
	struct json_object	*v;
	const char		*path = NULL;
	size_t			 len = 0;
	int			 rc;

	if ((f->needs & YX_R_JSON) != 0) {
		if (!json_object_object_get_ex(w->body, "path", &v) ||
		    !json_object_is_type(v, json_type_string)) {
			yx_http_send_error(r, YX_E_INVALID_PATH, "path is required");
			return YX_E_INVALID_PATH;
		}
		path = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
	} else if ((path = yx_query_get(&r->query, "path", &len)) != NULL && len == 0)
		path = NULL;
	if (path == NULL && f->dflt == NULL) {
		yx_http_send_error(r, YX_E_INVALID_PATH, "path is required");
		return YX_E_INVALID_PATH;
	}
	if (path == NULL) {
		path = f->dflt;
		len = strlen(path);
	}
	if ((f->needs & YX_R_TOP) != 0 && yx_path_is_top(path, len))
		return YX_OK;
	if ((rc = yx_path_resolve(path, len, &fq->vp)) != YX_OK) {
		yx_http_send_error(r, rc, rc == YX_E_PATH_NOT_ALLOWED ? "path outside /home/yuxi/user-data and /home/yuxi/skills" : "invalid path");
		return rc;
	}
	if ((f->needs & YX_R_WRITE) != 0 && fq->vp.root == YX_ROOT_SKILLS) {
		char msg[YX_VPATH_MAX + 32];

		snprintf(msg, sizeof(msg), "%s: %s", yx_strerror(YX_E_READ_ONLY), fq->vp.canon);
		yx_http_send_error(r, YX_E_READ_ONLY, msg);
		return YX_E_READ_ONLY;
	}
	return YX_OK;
}

/* execute's command and timeout, as the host would check them. */
static int
fwd_exec(struct yx_wctx *w, struct yx_http_req *r, struct fwd_req *fq)
{
	struct json_object	*v;
	const char		*cmd = NULL;

	if (yx_json_opt_str(w->body, "command", &cmd) != YX_OK || cmd == NULL || cmd[0] == '\0') {
		yx_http_send_error(r, YX_E_BAD_REQUEST, "command must be a non-empty string");
		return YX_E_BAD_REQUEST;
	}
	if (json_object_object_get_ex(w->body, "timeout", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0) {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "timeout must be a positive integer number of seconds");
			return YX_E_BAD_REQUEST;
		}
		fq->timeout_s = json_object_get_int64(v) > 600 ? 600 : (int)json_object_get_int64(v);
	}
	return YX_OK;
}

/*
 * The thread, the command, the path and the upload's size: what is
 * checked here (identity, the body and the slots: the router's).
 */
static int
fwd_check(struct yx_wctx *w, struct yx_http_req *r, const char *arg, struct fwd_req *fq)
{
	const unsigned	 needs = fq->route->needs;
	const char	*tid = NULL, *cmd;
	char		 ptid[YX_THREAD_ID_SIZE];
	size_t		 tl = 0;
	int		 rc, cmd_timeout;

	if ((needs & YX_R_JSON) != 0) {
		if (yx_json_opt_str(w->body, "thread_id", &tid) != YX_OK)
			tid = NULL;
		tl = tid != NULL ? strlen(tid) : 0;
	}
	if (tid == NULL && strncmp(fq->route->pattern, "/api/threads/{}", 15) == 0) {
		/* the thread in the path (snapshots): the first capture */
		tl = strcspn(arg, "/");
		snprintf(ptid, sizeof(ptid), "%.*s", (int)(tl < sizeof(ptid) ? tl : 0), arg);
		tid = ptid;
		tl = strlen(ptid);
	}
	if (tid == NULL)	/* a JSON route may name it in the query too */
		tid = yx_query_get(&r->query, "thread_id", &tl);
	if ((needs & YX_R_EXEC) != 0 && (tid == NULL || !yx_thread_id_valid(tid, tl))) {
		yx_http_send_error(r, YX_E_INVALID_THREAD_ID, YX_THREAD_ID_RULE);
		return YX_E_INVALID_THREAD_ID;
	}
	if ((needs & YX_R_EXEC) != 0 && (rc = fwd_exec(w, r, fq)) != YX_OK)
		return rc;
	if ((needs & YX_R_CMD) != 0 &&
	    (rc = yx_parse_command(r, w->body, &tid, &cmd, &cmd_timeout, 86400)) != YX_OK)
		return rc;
	if ((rc = yx_load_thread(w, r, tid, tid != NULL ? tl : 0, &fq->t)) != YX_OK)
		return rc;
	if ((needs & YX_R_PATH) != 0 && (rc = fwd_path(w, r, fq)) != YX_OK)
		return rc;
	if ((needs & YX_R_PROC) != 0 && (rc = yx_need_proc_id(r, arg)) != YX_OK)
		return rc;
	if ((needs & YX_R_SESS) != 0 && (rc = yx_need_session_id(r, arg)) != YX_OK)
		return rc;
	if ((needs & YX_R_STREAM) != 0 && (needs & YX_R_WRITE) != 0 &&
	    r->content_length > 0 && (uint64_t)r->content_length > w->cfg->upload_limit) {
		yx_http_send_error(r, YX_E_PAYLOAD_TOO_LARGE, "upload larger than the limit");
		return YX_E_PAYLOAD_TOO_LARGE;
	}
	return YX_OK;
}

/*
 * A download: X-Accel-Redirect to the front's internal location of host i,
 * which proxies it (query and all) to the host. Only the status line and
 * that header: the host's answer brings Content-Type, Content-Disposition
 * and the rest (nginx would keep a second Content-Disposition of ours).
 */
static int
front_accel(struct yx_wctx *w, struct yx_http_req *r, const struct fwd_req *fq, size_t i)
{
	const char	*qs = yx_http_query_string(r);
	struct yx_buf	 h;
	int		 rc;

	yx_buf_init(&h, 16384);
	if ((rc = yx_buf_printf(&h, "Status: 200 OK\r\nX-Accel-Redirect: %s/_yuxi_remote/%s/",
		 w->cfg->url_prefix, yx_remote_hosts(w->remote->rm)->v[i].name)) != YX_OK ||
	    (rc = yx_pct_encode_path(&h, r->user)) != YX_OK ||
	    (rc = yx_buf_printf(&h, "%s%s%s", fq->route->pattern,
		 qs != NULL && qs[0] != '\0' ? "?" : "", qs != NULL ? qs : "")) != YX_OK)
		goto done;
	if (yx_header_unsafe(h.data + strlen("Status: 200 OK\r\n"))) {
		rc = yx_http_send_error(r, YX_E_BAD_REQUEST, "unsafe request");
		goto done;
	}
	if ((rc = yx_buf_puts(&h, "\r\n\r\n")) != YX_OK)
		goto done;
	r->status = 200;
	rc = FCGX_PutStr(h.data, (int)h.len, r->fcgi->out) == (int)h.len ? YX_OK : YX_E_IO;
done:
	yx_buf_fini(&h);
	return rc;
}

static ssize_t
front_read_body(void *arg, char *buf, size_t len)
{
	return (ssize_t)yx_http_read_some(arg, buf, len);
}

/* Does an execute body ask for the stream form ("stream": true)? */
static bool
fwd_streamed(struct json_object *body)
{
	struct json_object *v;

	return json_object_object_get_ex(body, "stream", &v) &&
	    json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/*
 * The host's stream, piece by piece: the head once (its status and type),
 * then each piece written and flushed. YX_E_IO when the client left.
 */
static int
front_sink(void *arg, const struct yx_remote_resp *p, const char *data, size_t len)
{
	struct yx_http_req	*r = arg;
	const char		*ct;
	int			 rc;

	if (r->status == 0) {
		ct = p->content_type[0] != '\0' && !yx_header_unsafe(p->content_type) ?
		    p->content_type :
		    YX_CT_JSON;
		if ((rc = yx_http_send_stream(r, (int)p->status, ct)) != YX_OK)
			return rc;
	}
	return yx_http_write(r, data, len);
}

/*
 * The host's path of a route with a process id (checked: [p][0-9a-f]) in
 * place of its "{}".
 */
static void
fwd_proc_path(char *buf, size_t len, const char *pattern, const char *arg)
{
	const char	*brace;
	size_t		 n = 0, k;

	/* each "{}" takes the next of arg's captures (joined by '/') */
	buf[0] = '\0';
	while ((brace = strstr(pattern, "{}")) != NULL && n < len) {
		k = strcspn(arg, "/");
		n += (size_t)snprintf(buf + n, len - n, "%.*s%.*s", (int)(brace - pattern),
		    pattern, (int)k, arg);
		pattern = brace + 2;
		arg += k + (arg[k] == '/');
	}
	if (n < len)
		snprintf(buf + n, len - n, "%s", pattern);
}

/*
 * A long-poll forwarded when every slot of the front is taken: the query
 * with wait_ms=0 (the host answers at once), into qs.
 */
static int
fwd_nowait_query(struct yx_buf *qs, const char *orig)
{
	const char	*s = orig != NULL ? orig : "", *amp;
	size_t		 n;
	int		 rc = YX_OK;

	while (rc == YX_OK && *s != '\0') {
		amp = strchr(s, '&');
		n = amp != NULL ? (size_t)(amp - s) : strlen(s);
		if (qs->len > 0)
			rc = yx_buf_puts(qs, "&");
		if (rc == YX_OK)
			rc = strncmp(s, "wait_ms=", 8) == 0 ? yx_buf_puts(qs, "wait_ms=0") :
							      yx_buf_append(qs, s, n);
		s += n + (amp != NULL);
	}
	return rc;
}

/* The host's answer to a long-poll the front did not let wait: flagged. */
static int
fwd_relay_capped(struct yx_http_req *r, int rc, const struct yx_errctx *e,
    const struct yx_remote_resp *p)
{
	struct json_object *o;

	if (rc != YX_OK || p->status != 200 || (o = yx_front_parse(p)) == NULL)
		return yx_front_relay(r, rc, e, p);
	json_object_object_add(o, "wait_capped", json_object_new_boolean(1));
	return yx_http_send_obj(r, 200, o);
}

/* A forwarded route (YX_R_FWD without a front handler of its own). */
int
yx_h_front_forward(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_remote_req	 q;
	struct yx_remote_resp	 p;
	struct fwd_req		 fq;
	struct yx_errctx	 e;
	struct yx_buf		 qs;
	const char		*wait;
	char			 path[320 + YX_THREAD_ID_SIZE];
	size_t			 host;
	unsigned		 needs;
	int			 rc;
	bool			 capped = false;

	yx_errctx_clear(&e);
	memset(&fq, 0, sizeof(fq));
	yx_buf_init(&qs, 16384);
	yx_remote_resp_init(&p);
	fq.route = w->route;
	needs = fq.route->needs;
	if ((rc = fwd_check(w, r, arg, &fq)) != YX_OK ||
	    (rc = yx_front_host(w, r, &fq.t, &host)) != YX_OK)
		goto done;
	/* a sub-request (capture mode) gets the bytes: the host's nginx
	 * follows its own X-Accel-Redirect, and they come as a stream */
	if ((needs & YX_R_ACCEL) != 0 && r->cap == NULL) {
		rc = front_accel(w, r, &fq, host);
		goto done;
	}
	memset(&q, 0, sizeof(q));
	q.method = yx_http_method_name(fq.route->method);
	q.path = fq.route->pattern;
	if ((needs & (YX_R_PROC | YX_R_SESS)) != 0 || strstr(fq.route->pattern, "{}") != NULL) {
		fwd_proc_path(path, sizeof(path), fq.route->pattern, arg);
		q.path = path;
	}
	q.query = yx_http_query_string(r);
	/* a long-poll holds this worker too: without one of the front's own
	 * wait slots (the router's), the host is asked not to wait */
	if ((needs & YX_R_WAIT) != 0 && !w->waiting &&
	    (wait = yx_query_get(&r->query, "wait_ms", NULL)) != NULL && strtoul(wait, NULL, 10) > 0) {
		if ((rc = fwd_nowait_query(&qs, q.query)) != YX_OK)
			goto done;
		q.query = qs.data;
		capped = true;
	}
	q.user = r->user;
	q.request_id = r->request_id;	/* the host's log and audit line carry ours */
	q.timeout_ms = front_timeout_ms(w->cfg, fq.route, fq.timeout_s);
	if ((needs & YX_R_STREAM) != 0) {
		q.read = front_read_body;
		q.read_arg = r;
		q.read_len = r->content_length > 0 ? r->content_length : 0;
		q.content_type = "application/octet-stream";
	} else if ((needs & (YX_R_JSON | YX_R_JSON_OPT)) != 0) {
		q.body = w->raw.data;
		q.body_len = w->raw.len;
	}
	if (((needs & YX_R_EXEC) != 0 && fwd_streamed(w->body)) || (needs & YX_R_ACCEL) != 0) {
		q.sink = front_sink;
		q.sink_arg = r;
	}
	rc = front_call(w, r, &fq.t, host, &q, &p, &e);
	if (capped)
		rc = fwd_relay_capped(r, rc, &e, &p);
	else if (!p.streamed)
		rc = yx_front_relay(r, rc, &e, &p);
	else if (rc != YX_OK)	/* a stream cut: the client, or the host, left */
		log_info("thread %s: stream from host %s cut: %s", fq.t.thread_id, fq.t.host,
		    rc == YX_E_IO ? "the client left" : e.msg);
done:
	yx_buf_fini(&qs);
	yx_remote_resp_fini(&p);
	return rc;
}

/*
 * The hosts a new thread of id may go to, best first: rendezvous order,
 * draining hosts left out, hosts this worker saw fail last.
 */
static size_t
front_candidates(struct yx_wctx *w, const char *id, size_t *cand)
{
	const struct yx_hostlist	*hl = yx_remote_hosts(w->remote->rm);
	size_t				 order[YX_HOSTS_MAX], i, n = 0;
	int				 pass;

	yx_hostlist_order(hl, id, order);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < hl->n; i++)
			if (!yx_front_draining(w, hl->v[order[i]].name) &&
			    yx_remote_down(w->remote->rm, order[i]) == (pass == 1))
				cand[n++] = order[i];
	return n;
}

/*
 * POST /api/threads: the record is made with the first host that takes
 * the thread, so it never names a host without it. The record comes first
 * (the id, the per-user limit, another user's id: all decided here), then
 * the host registers it; a host that does not answer has the record
 * undone and the next host tried.
 */
int
yx_h_front_threads_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	const struct yx_hostlist	*hl = yx_remote_hosts(w->remote->rm);
	struct yx_remote_resp		 p;
	struct yx_thread		 want, t, src;
	struct yx_errctx		 e;
	struct json_object		*fork = NULL, *v;
	size_t				 cand[YX_HOSTS_MAX], n, i;
	bool				 created = false;
	int				 rc;

	yx_errctx_clear(&e);
	yx_remote_resp_init(&p);
	if ((rc = yx_parse_thread_create(w, r, false, &want)) != YX_OK)
		goto done;
	/* a fork (docs/api.md "Snapshots"): on the source thread's host, the
	 * source the caller's (404 otherwise); the host checks the snapshot */
	if (json_object_object_get_ex(w->body, "from_snapshot", &fork) &&
	    !json_object_is_type(fork, json_type_null)) {
		if (!json_object_is_type(fork, json_type_object) ||
		    !json_object_object_get_ex(fork, "thread_id", &v) ||
		    !json_object_is_type(v, json_type_string)) {
			rc = yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "from_snapshot must be {\"thread_id\": ..., \"snapshot_id\": ...}");
			goto done;
		}
		if ((rc = yx_load_thread(w, r, json_object_get_string(v),
			 (size_t)json_object_get_string_len(v), &src)) != YX_OK ||
		    (rc = yx_front_host(w, r, &src, &cand[0])) != YX_OK)
			goto done;
		n = 1;
	} else
		fork = NULL;
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", want.thread_id);
	if (fork == NULL && (n = front_candidates(w, want.thread_id, cand)) == 0) {
		rc = yx_http_send_error_hdr(r, YX_E_BACKEND_UNAVAILABLE,
		    "no sandbox host takes new threads (all are draining)", FRONT_RETRY_HDR);
		goto done;
	}
	for (i = 0; i < n; i++) {
		snprintf(want.host, sizeof(want.host), "%s", hl->v[cand[i]].name);
		yx_errctx_clear(&e);
		if ((rc = yx_thread_create_limited(&w->store, &want,
			 (unsigned)w->cfg->max_threads_per_user, &t, &created, &e)) != YX_OK) {
			yx_send_errctx(r, rc, &e);
			goto done;
		}
		if (!created && fork != NULL) {
			rc = yx_http_send_error(r, YX_E_THREAD_EXISTS,
			    "a fork makes a new thread: this one exists");
			goto done;
		}
		if (!created) {	/* the caller's own, placed before */
			rc = yx_http_send_obj(r, 200, yx_thread_json(&t));
			goto done;
		}
		rc = front_register(w, cand[i], &t, r->request_id, fork, &p, &e);
		if (rc == YX_OK && (p.status == 201 || p.status == 200)) {
			log_info("thread %s placed on host %s", t.thread_id, t.host);
			rc = yx_http_send_obj(r, 201, yx_thread_json(&t));
			goto done;
		}
		/* undone: the record must not name a host that does not have it */
		if (yx_thread_remove(&w->store, t.thread_id, t.owner, NULL) != YX_OK)
			log_warnx("thread %s: record on host %s not undone", t.thread_id, t.host);
		/* the host refused: say why; not answering or busy: the next */
		if (rc != YX_E_BACKEND_UNAVAILABLE && rc != YX_E_BUSY) {
			rc = yx_front_relay(r, rc, &e, &p);
			goto done;
		}
	}
	rc = yx_http_send_error_hdr(r, YX_E_BACKEND_UNAVAILABLE, "no sandbox host answered",
	    FRONT_RETRY_HDR);
done:
	yx_remote_resp_fini(&p);
	return rc;
}

/*
 * Method (with body: NULL or a JSON text) on the host's /api/threads/{id}
 * of the caller's thread t: a GET or a PATCH through front_call, a DELETE
 * straight, with FRONT_LIFECYCLE_MS more time. YX_OK and *sent false when
 * the host took it (200; a DELETE's 204, or 404: it had the thread no
 * more), with ans (a GET's) its answer, an object with a "sandbox" (caller
 * puts). Otherwise *sent is true: the reply is sent (503 for no host, or
 * what the host said relayed) and rc is its.
 */
static int
front_thread_call(struct yx_wctx *w, struct yx_http_req *r, const struct yx_thread *t,
    const char *method, const char *body, struct json_object **ans, bool *sent)
{
	struct yx_remote_req	 q;
	struct yx_remote_resp	 p;
	struct yx_errctx	 e;
	struct json_object	*o = NULL;
	char			 path[64 + YX_THREAD_ID_SIZE];
	size_t			 host;
	bool			 del = strcmp(method, "DELETE") == 0;
	int			 rc;

	*sent = true;
	yx_errctx_clear(&e);
	yx_remote_resp_init(&p);
	if ((rc = yx_front_host(w, r, t, &host)) != YX_OK)
		goto done;
	snprintf(path, sizeof(path), "/api/threads/%s", t->thread_id);
	memset(&q, 0, sizeof(q));
	q.method = method;
	q.path = path;
	q.user = r->user;
	q.request_id = r->request_id;
	q.body = body;
	q.body_len = body != NULL ? strlen(body) : 0;
	q.timeout_ms = front_timeout_ms(w->cfg, NULL, 0);
	if (del) {
		q.timeout_ms += FRONT_LIFECYCLE_MS;
		rc = front_host_call(w, host, &q, &p, &e);
	} else
		rc = front_call(w, r, t, host, &q, &p, &e);
	if (rc != YX_OK || (del ? p.status != 204 && p.status != 404 : p.status != 200) ||
	    (ans != NULL && ((o = yx_front_parse(&p)) == NULL || !json_object_object_get_ex(o, "sandbox", NULL)))) {
		rc = yx_front_relay(r, rc, &e, &p);
		goto done;
	}
	if (ans != NULL) {
		*ans = o;	/* the caller's now */
		o = NULL;
	}
	*sent = false;
done:
	json_object_put(o);
	yx_remote_resp_fini(&p);
	return rc;
}

/* GET /api/threads/{id}: the front's record, the sandbox from its host. */
int
yx_h_front_threads_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o = NULL, *rec, *sb, *svc;
	struct yx_thread	 t;
	bool			 sent;
	int			 rc;

	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK ||
	    (rc = front_thread_call(w, r, &t, "GET", NULL, &o, &sent)) != YX_OK || sent)
		goto done;
	if ((rec = yx_thread_json(&t)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	if (json_object_object_get_ex(o, "sandbox", &sb))	/* front_thread_call's */
		json_object_object_add(rec, "sandbox", json_object_get(sb));
	if (json_object_object_get_ex(o, "services", &svc))	/* the host's word */
		json_object_object_add(rec, "services", json_object_get(svc));
	rc = yx_http_send_obj(r, 200, rec);
done:
	json_object_put(o);
	return rc;
}

/*
 * DELETE /api/threads/{id}: the host removes the sandbox and the files
 * first (not answering: 503, nothing deleted, as with an engine that is
 * down), then the front's record goes as on one host.
 */
int
yx_h_front_threads_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	t;
	bool			sent;
	int			rc;

	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) == YX_OK &&
	    (rc = front_thread_call(w, r, &t, "DELETE", NULL, NULL, &sent)) == YX_OK && !sent)
		rc = yx_h_threads_delete(w, r, arg);	/* no provider here: the record */
	return rc;
}

/*
 * PATCH /api/threads/{id}: the metadata is the front's alone; a new idle
 * timeout goes to the host first (its reaper applies it), and only when
 * the host took it is the front's record changed, so both agree.
 */
int
yx_h_front_threads_patch(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_patch	p;
	struct yx_thread	t;
	struct yx_errctx	e;
	char			body[64];
	bool			sent = false;
	int			rc;

	yx_errctx_clear(&e);
	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((rc = yx_parse_thread_patch(w, &p, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (p.set_idle) {
		if (p.idle_timeout > 0)
			snprintf(body, sizeof(body), "{\"idle_timeout\":%d}", p.idle_timeout);
		else
			snprintf(body, sizeof(body), "{\"idle_timeout\":null}");
		if ((rc = front_thread_call(w, r, &t, "PATCH", body, NULL, &sent)) != YX_OK || sent)
			return rc;
	}
	if ((rc = yx_thread_update(&w->store, t.thread_id, r->user, &p, &t, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	yx_audit_note_meta(&w->note, &t.meta);
	return yx_http_send_obj(r, 200, yx_thread_json(&t));
}

#ifdef YX_CONTROL_UNSAFE
/*
 * Control build, YX_CONTROL_OFF=provroutes: the naive front, which passes
 * a request for a route it does not serve to the first host with its
 * credential. The remote security test must then reach the
 * provisioner-only routes through the front.
 */
int
yx_front_proxy_any(struct yx_wctx *w, struct yx_http_req *r, const char *path)
{
	struct yx_remote_req	 q;
	struct yx_remote_resp	 p;
	struct yx_buf		 body;
	struct yx_errctx	 e;
	int			 rc = YX_OK;

	yx_errctx_clear(&e);
	yx_buf_init(&body, r->body_limit);
	yx_remote_resp_init(&p);
	if (r->content_length > 0)
		rc = yx_http_read_body(r, &body, &e);
	memset(&q, 0, sizeof(q));
	q.method = r->method_str;
	q.path = path;
	q.query = yx_http_query_string(r);
	q.user = r->user[0] != '\0' ? r->user : NULL;
	q.admin = r->admin;
	q.body = r->content_length > 0 ? body.data : NULL;
	q.body_len = body.len;
	if (rc == YX_OK)
		rc = yx_remote_call(w->remote->rm, 0, &q, &p, &e);
	rc = yx_front_relay(r, rc, &e, &p);
	yx_remote_resp_fini(&p);
	yx_buf_fini(&body);
	return rc;
}
#endif
