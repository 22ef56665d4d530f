/* SPDX-License-Identifier: MIT */
/*
 * h_proc.c - a thread's background processes (docs/api.md "Background
 * processes"): POST /api/processes, GET /api/processes, GET and DELETE
 * /api/processes/{id}, GET /api/processes/{id}/output (long-poll),
 * POST /api/processes/{id}/stdin and POST /api/processes/{id}/resize (a
 * terminal's), over include/yuxi/procs.h; and a profile's services, whose
 * output is a background process's: GET /api/services and
 * GET /api/services/{name}/output (long-poll), their states in
 * GET /api/threads/{id} (keeper_req.c).
 *
 * Checks as for execute, in this order: identity (401), thread id (400),
 * the caller's thread (404 for an unknown and for another user's thread
 * alike, h_common.c), then the process (404 "no such process").
 *
 * Worker occupancy: every route here that talks to the sandbox holds its
 * worker while it does, so each takes one of the user's slots (YX_R_SLOT,
 * slots.c, taken by the router). An output long-poll holds its worker for
 * up to wait_ms (at most YX_PROC_WAIT_MAX_MS), and only with a wait slot
 * (YX_R_WAIT: one of the user's slots, the user's share of
 * YUXI_PROCESS_WAITERS, one of those); without one it answers at once,
 * with "wait_capped": true.
 *
 * Bounded time: each talks to the keepers within a budget (keeper_req.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "common/control_int.h"
#include "yuxi/clock.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/procs.h"
#include "yuxi/text.h"

/* A process as the API shows it; NULL on ENOMEM. */
static struct json_object *
proc_json(const struct yx_proc *p)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return NULL;
	json_object_object_add(o, "process_id", json_object_new_string(p->id));
	json_object_object_add(o, "command",
	    yx_json_text(p->command, p->command != NULL ? strlen(p->command) : 0));
	json_object_object_add(o, "state",
	    json_object_new_string(yx_proc_state_name(p->state)));
	json_object_object_add(o, "exit_code",
	    p->state == YX_PROC_EXITED ? json_object_new_int(p->exit_code) : NULL);
	json_object_object_add(o, "timed_out", json_object_new_boolean(p->timed_out));
	json_object_object_add(o, "timeout", json_object_new_int(p->timeout));
	json_object_object_add(o, "started_at", yx_json_time(p->started_at));
	json_object_object_add(o, "ended_at", yx_json_time(p->ended_at));
	json_object_object_add(o, "output_bytes",
	    json_object_new_int64((int64_t)p->output_bytes));
	if (p->cols > 0) {
		struct json_object *t = json_object_new_object();

		json_object_object_add(t, "cols", json_object_new_int(p->cols));
		json_object_object_add(t, "rows", json_object_new_int(p->rows));
		json_object_object_add(o, "pty", t);
	}
	return o;
}

/* {"cols": C, "rows": R}, each 1..YX_PROC_TTY_MAX. Sends errors. */
static int
proc_size(struct yx_http_req *r, struct json_object *o, int *cols, int *rows)
{
	struct json_object	*c, *w;
	char			 msg[96];

	if (json_object_is_type(o, json_type_object) &&
	    json_object_object_get_ex(o, "cols", &c) &&
	    json_object_object_get_ex(o, "rows", &w) &&
	    json_object_is_type(c, json_type_int) &&
	    json_object_is_type(w, json_type_int) &&
	    json_object_get_int64(c) >= 1 && json_object_get_int64(c) <= YX_PROC_TTY_MAX &&
	    json_object_get_int64(w) >= 1 && json_object_get_int64(w) <= YX_PROC_TTY_MAX) {
		*cols = (int)json_object_get_int64(c);
		*rows = (int)json_object_get_int64(w);
		return YX_OK;
	}
	snprintf(msg, sizeof(msg), "a terminal's size is {\"cols\": N, \"rows\": N}, "
				   "each 1 to %d",
	    YX_PROC_TTY_MAX);
	yx_http_send_error(r, YX_E_BAD_REQUEST, msg);
	return YX_E_BAD_REQUEST;
}

int
yx_h_procs_start(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_keeper_req		 p;
	struct yx_proc		 proc;
	struct json_object	*body = w->body;
	struct yx_skill_set	 skills;
	struct yx_exec_opts	 opts;
	struct yx_proc_opts	 po;
	struct yx_errctx	 e;
	struct json_object	*pty;
	const char		*tid = NULL, *cmd = NULL;
	int			 rc;

	(void)arg;
	memset(&proc, 0, sizeof(proc));
	memset(&po, 0, sizeof(po));
	memset(&p, 0, sizeof(p));	/* closed below before it was opened */
	p.c.tdir = p.c.rundir = -1;
	yx_errctx_clear(&e);
	/* the timeout capped at YUXI_PROCESS_LIFETIME's most, not refused */
	if ((rc = yx_parse_command(r, body, &tid, &cmd, &po.timeout, 86400)) != YX_OK)
		goto done;
	if (json_object_object_get_ex(body, "pty", &pty) &&
	    !json_object_is_type(pty, json_type_null) &&
	    (rc = proc_size(r, pty, &po.cols, &po.rows)) != YX_OK)
		goto done;
	yx_audit_note_command(&w->note, cmd, strlen(cmd));
	if ((rc = yx_keeper_open(w, r, tid, strlen(tid), 0, &p)) != YX_OK)
		goto done;
	if ((rc = yx_agents_skills(w->agents, p.t.agent_id, p.t.agent_config_id,
		 &skills)) != YX_OK)
		goto done;
	p.req.skills = &skills;
	p.req.command = cmd;
	if ((rc = yx_exec_opts_parse(r, body, p.req.profile, &opts)) != YX_OK)
		goto done;
	yx_exec_opts_apply(&opts, &p.req);
	if ((rc = yx_proc_start(w->exec, &p.c, &p.req, &po, &proc, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	rc = yx_http_send_obj(r, 201, proc_json(&proc));
done:
	yx_proc_fini(&proc);
	yx_keeper_close(&p);
	return rc;
}

/* The listing's parts (yx_keeper_list). */
static int
proc_list_any(const struct yx_proc_ctx *c, void **v, size_t *n,
    struct yx_errctx *e)
{
	return yx_proc_list(c, (struct yx_proc **)v, n, e);
}

static struct json_object *
proc_item(const void *item, const char *tid)
{
	(void)tid;
	return proc_json(item);
}

static void
proc_free_any(void *v, size_t n)
{
	yx_proc_list_free(v, n);
}

int
yx_h_procs_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	static const struct yx_keeper_listing l = { "processes",
		sizeof(struct yx_proc), proc_list_any, proc_item, proc_free_any };

	(void)arg;
	return yx_keeper_list(w, r, &l);
}

/*
 * GET and DELETE /api/processes/{id}: the process (kill false), or the
 * process killed and forgotten (kill true), its last state with
 * "forgotten": true. Sends the reply or the error.
 */
static int
proc_one(struct yx_wctx *w, struct yx_http_req *r, const char *arg, bool kill)
{
	struct json_object	*o;
	struct yx_keeper_req	 p;
	struct yx_proc		 proc;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	memset(&proc, 0, sizeof(proc));
	if ((rc = yx_keeper_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = yx_need_proc_id(r, arg)) == YX_OK &&
	    (rc = (kill ? yx_proc_kill : yx_proc_get)(&p.c, arg, &proc, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK) {
		if ((o = proc_json(&proc)) != NULL && kill)
			json_object_object_add(o, "forgotten", json_object_new_boolean(1));
		rc = yx_http_send_obj(r, 200, o);
	}
	yx_proc_fini(&proc);
	yx_keeper_close(&p);
	return rc;
}

int
yx_h_procs_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return proc_one(w, r, arg, false);
}

int
yx_h_procs_kill(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return proc_one(w, r, arg, true);
}

/* Unsigned query parameter up to max (dflt when absent). Sends errors. */
static int
proc_q_num(struct yx_http_req *r, const char *key, unsigned long long dflt,
    unsigned long long max, unsigned long long *out)
{
	const char	*s = yx_query_get(&r->query, key, NULL);
	char		*end, msg[96];

	*out = dflt;
	if (s == NULL || s[0] == '\0')
		return YX_OK;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (*end == '\0' && s[0] >= '0' && s[0] <= '9' && errno == 0 && *out <= max)
		return YX_OK;
	snprintf(msg, sizeof(msg), "%s must be an integer in [0, %llu]", key, max);
	yx_http_send_error(r, YX_E_BAD_REQUEST, msg);
	return YX_E_BAD_REQUEST;
}

/* How long a long-poll may wait (0 without a wait slot): for its budget. */
static int
proc_wait_ms(const struct yx_wctx *w, struct yx_http_req *r)
{
	const char		*s = yx_query_get(&r->query, "wait_ms", NULL);
	unsigned long long	 v;

	if (!w->waiting || s == NULL)
		return 0;
	v = strtoull(s, NULL, 10);
	return v > YX_PROC_WAIT_MAX_MS ? YX_PROC_WAIT_MAX_MS : (int)v;
}

/* The output reply's body into b. */
static int
proc_output_body(const struct yx_proc_chunk *c, bool capped, struct yx_buf *b)
{
	const struct yx_proc	*p = &c->proc;
	int			 rc;

	if ((rc = yx_buf_puts(b, "{\"data\":")) != YX_OK ||
	    (rc = yx_json_str_append(b, c->data.data != NULL ? c->data.data : "",
		 c->data.len)) != YX_OK ||
	    (rc = yx_buf_printf(b, ",\"offset\":%llu,\"next_offset\":%llu,"
				   "\"dropped\":%llu,\"running\":%s,\"state\":\"%s\",",
		 (unsigned long long)c->offset, (unsigned long long)c->next_offset,
		 (unsigned long long)c->dropped,
		 p->state == YX_PROC_RUNNING ? "true" : "false",
		 yx_proc_state_name(p->state))) != YX_OK)
		return rc;
	if (p->state == YX_PROC_EXITED)
		rc = yx_buf_printf(b, "\"exit_code\":%d,\"timed_out\":%s", p->exit_code,
		    p->timed_out ? "true" : "false");
	else
		rc = yx_buf_puts(b, "\"exit_code\":null,\"timed_out\":false");
	if (rc == YX_OK && capped)
		rc = yx_buf_puts(b, ",\"wait_capped\":true");
	return rc == YX_OK ? yx_buf_puts(b, "}") : rc;
}

/*
 * An output read's query, shared by processes and services: offset,
 * wait_ms (capped at YX_PROC_WAIT_MAX_MS), max_bytes (0: the default).
 * YX_OK, or the error already sent.
 */
static int
proc_output_q(struct yx_http_req *r, unsigned long long *off,
    unsigned long long *wait, unsigned long long *max)
{
	int rc;

	if ((rc = proc_q_num(r, "offset", 0, 1ULL << 62, off)) != YX_OK ||
	    (rc = proc_q_num(r, "wait_ms", 0, 1ULL << 31, wait)) != YX_OK ||
	    (rc = proc_q_num(r, "max_bytes", YX_PROC_READ_DEFAULT, YX_PROC_READ_MAX,
		 max)) != YX_OK)
		return rc;
	if (*wait > YX_PROC_WAIT_MAX_MS)
		*wait = YX_PROC_WAIT_MAX_MS;
	if (*max == 0)
		*max = YX_PROC_READ_DEFAULT;
	return YX_OK;
}

/*
 * An output long-poll, shared by processes and services: a process's (svc
 * false, arg its id, checked first) or a service's (svc true, arg its
 * name), read from its keeper. Sends the reply or the error.
 */
static int
proc_output_send(struct yx_wctx *w, struct yx_http_req *r, const char *arg, bool svc)
{
	struct yx_proc_chunk	 c;
	struct yx_buf		 b;
	struct yx_keeper_req	 p;
	struct yx_errctx	 e;
	unsigned long long	 off, wait, max;
	int			 ms, rc;

	yx_errctx_clear(&e);
	memset(&c, 0, sizeof(c));
	yx_buf_init(&b, SIZE_MAX);
	if ((rc = yx_keeper_open_q(w, r, proc_wait_ms(w, r), &p)) != YX_OK)
		goto out;
	if ((!svc && (rc = yx_need_proc_id(r, arg)) != YX_OK) ||
	    (rc = proc_output_q(r, &off, &wait, &max)) != YX_OK)
		goto done;
	/* the router took a wait slot when wait_ms asks to wait (YX_R_WAIT) */
	ms = w->waiting ? (int)wait : 0;
	if (svc)
		rc = yx_svc_output(&p.c, p.req.profile, arg, off, ms, (size_t)max, &c, &e);
	else
		rc = yx_proc_output(&p.c, arg, off, ms, (size_t)max, &c, &e);
	if (rc != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((rc = proc_output_body(&c, wait > 0 && !w->waiting, &b)) != YX_OK)
		goto done;
	rc = yx_http_send_raw(r, 200, YX_CT_JSON, b.data, b.len);
done:
	yx_keeper_close(&p);
out:
	yx_proc_chunk_fini(&c);
	yx_buf_fini(&b);
	return rc;
}

int
yx_h_procs_output(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return proc_output_send(w, r, arg, false);
}

int
yx_h_procs_stdin(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o;
	struct yx_buf		 body;
	struct yx_keeper_req		 p;
	struct yx_errctx	 e;
	unsigned long long	 eof;
	size_t			 written = 0;
	bool			 open = false;
	int			 rc;

	yx_errctx_clear(&e);
	yx_buf_init(&body, w->cfg->body_limit);
	if ((rc = yx_keeper_open_q(w, r, 0, &p)) != YX_OK)
		goto out;
	if ((rc = yx_need_proc_id(r, arg)) != YX_OK ||
	    (rc = proc_q_num(r, "eof", 0, 1, &eof)) != YX_OK)
		goto done;
	if ((rc = yx_http_read_body(r, &body, &e)) != YX_OK ||
	    (rc = yx_proc_stdin(&p.c, arg, body.data, body.len, eof != 0, &written,
		 &open, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((o = json_object_new_object()) != NULL) {
		json_object_object_add(o, "written", json_object_new_int64((int64_t)written));
		json_object_object_add(o, "stdin_open", json_object_new_boolean(open));
	}
	rc = yx_http_send_obj(r, 200, o);
done:
	yx_keeper_close(&p);
out:
	yx_buf_fini(&body);
	return rc;
}

int
yx_h_procs_resize(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o;
	struct yx_keeper_req	 p;
	struct yx_errctx	 e;
	int			 cols, rows, rc;

	yx_errctx_clear(&e);
	if ((rc = yx_keeper_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = yx_need_proc_id(r, arg)) == YX_OK &&
	    (rc = proc_size(r, w->body, &cols, &rows)) == YX_OK &&
	    (rc = yx_proc_resize(&p.c, arg, cols, rows, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK && (o = json_object_new_object()) != NULL) {
		json_object_object_add(o, "cols", json_object_new_int(cols));
		json_object_object_add(o, "rows", json_object_new_int(rows));
		rc = yx_http_send_obj(r, 200, o);
	}
	yx_keeper_close(&p);
	return rc;
}

/* GET /api/services?thread_id=: {"services": [...]} ([] without any). */
int
yx_h_services_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o, *a;
	struct yx_thread	 t;
	const char		*tid;
	size_t			 tl = 0;
	int			 rc;

	(void)arg;
	tid = yx_query_get(&r->query, "thread_id", &tl);
	if ((rc = yx_keeper_thread(w, r, tid, tl, &t)) != YX_OK)
		return rc;
	if ((a = yx_services_json(w, &t)) == NULL)
		a = json_object_new_array();
	if ((o = json_object_new_object()) != NULL)
		json_object_object_add(o, "services", a);
	else
		json_object_put(a);
	return yx_http_send_obj(r, 200, o);
}

/*
 * GET /api/services/{name}/output?thread_id=&offset=&wait_ms=&max_bytes=:
 * a service's output, read from its keeper as a background process's
 * (the same answer; "state" is "lost" while it has no keeper: no
 * sandbox, or its keeper is starting again).
 */
int
yx_h_services_output(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return proc_output_send(w, r, arg, true);
}
