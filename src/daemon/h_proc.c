/* SPDX-License-Identifier: MIT */
/*
 * h_proc.c - a thread's background processes (docs/api.md "Background
 * processes"): POST /api/processes, GET /api/processes, GET and DELETE
 * /api/processes/{id}, GET /api/processes/{id}/output (long-poll) and
 * POST /api/processes/{id}/stdin, over include/yuxi/procs.h.
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
 * Bounded time: a request talks to the keepers for at most PROC_BUDGET_MS
 * (a long-poll: its wait and that), whatever the sandbox does (a keeper
 * stopped with SIGSTOP, a socket that takes connections and never
 * answers). A keeper that did not answer in time marks the sandbox
 * stalled for PROC_STALL_MS (yx_provider_stall): meanwhile its requests
 * give the keepers PROC_STALLED_MS in all (the listing and a process's
 * state then answer from the records as they were), and the first keeper
 * that answers again lifts the mark.
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

/* One request's view of a thread's processes. */
#define PROC_BUDGET_MS	3000	/* a request's time with the keepers, past its wait */
#define PROC_STALL_MS	10000	/* how long a sandbox stays marked stalled */
#define PROC_STALLED_MS	500	/* a request's time with a stalled sandbox's keepers */
#define PROC_SLOTLESS_MS 300	/* ... of a long-poll without a slot (answers at once) */

struct proc_req {
	struct yx_wctx		*w;
	bool			 stalled;	/* a keeper did not answer in time */
	bool			 answered;	/* ... and one did */
	bool			 marked;	/* the sandbox was marked stalled */
	struct yx_thread	 t;
	struct yx_exec_request	 req;
	struct yx_exec_masks	 masks;
	struct yx_proc_ctx	 c;
};

/*
 * The caller's thread. Control build only: with YX_CONTROL_OFF=procowner
 * the process routes skip the owner check (docs/security.md "Control
 * mode"), so that the suite's 404 test can be seen to fail.
 */
static int
proc_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id,
    size_t len, struct yx_thread *t)
{
#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("procowner") && id != NULL &&
	    yx_thread_id_valid(id, len) && strlen(id) == len &&
	    yx_thread_find(&w->store, id, t, NULL) == YX_OK)
		return YX_OK;
#endif
	return yx_load_thread(w, r, id, len, t);
}

static void
proc_close(struct proc_req *p)
{
	if (p->stalled && p->w != NULL) {
		if (!p->marked)
			log_warnx("thread %s: a process keeper did not answer in time; "
				  "its process requests get %d ms for %d s",
			    p->t.thread_id, PROC_STALLED_MS, PROC_STALL_MS / 1000);
		yx_provider_stall(p->w->table, p->t.thread_id, yx_mono_ms() + PROC_STALL_MS);
	} else if (p->marked && p->answered && p->w != NULL)
		yx_provider_stall(p->w->table, p->t.thread_id, 0);	/* it answers again */
	p->stalled = p->marked = p->answered = false;
	if (p->c.tdir != -1)
		close(p->c.tdir);
	if (p->c.rundir != -1)
		close(p->c.rundir);
	p->c.tdir = p->c.rundir = -1;
}

/*
 * Thread (tid, tl bytes), its directories and masks into p, and the
 * keepers' budget: wait_ms more for a long-poll, PROC_STALLED_MS in all
 * for a sandbox marked stalled. A request without a slot of its user's
 * (an output read that could not wait: it holds a worker all the same)
 * gets PROC_SLOTLESS_MS, and 503 at once from a stalled sandbox. Sends
 * errors.
 */
static int
proc_open(struct yx_wctx *w, struct yx_http_req *r, const char *tid,
    size_t tl, int wait_ms, struct proc_req *p)
{
	struct yx_errctx	e;
	bool			slotless = !w->waiting && w->slot == -1 &&
	    yx_slots_per_user(w->cfg) > 0;
	int64_t			left;
	char			hdr[40];
	int			rc;

	memset(p, 0, sizeof(*p));
	p->c.tdir = p->c.rundir = -1;
	yx_errctx_clear(&e);
	if ((rc = proc_thread(w, r, tid, tl, &p->t)) != YX_OK)
		return rc;
	if (w->exec == NULL) {
		yx_http_send_error(r, YX_E_BACKEND_UNAVAILABLE,
		    "sandbox backend unavailable");
		return YX_E_BACKEND_UNAVAILABLE;
	}
	p->c.until = yx_mono_ms() +
	    (slotless ? PROC_SLOTLESS_MS : PROC_BUDGET_MS + (wait_ms > 0 ? wait_ms : 0));
	if ((left = yx_provider_stalled(w->table, p->t.thread_id)) > 0) {
		if (slotless) {
			snprintf(hdr, sizeof(hdr), "Retry-After: %lld\r\n",
			    (long long)(left + 999) / 1000);
			yx_http_send_error_hdr(r, YX_E_BACKEND_UNAVAILABLE,
			    "the sandbox's process keepers do not answer", hdr);
			return YX_E_BACKEND_UNAVAILABLE;
		}
		p->marked = true;
		if (p->c.until > yx_mono_ms() + PROC_STALLED_MS)
			p->c.until = yx_mono_ms() + PROC_STALLED_MS;
	}
	p->w = w;
	p->c.stalled = &p->stalled;
	p->c.answered = &p->answered;
	yx_exec_request_thread(&p->req, &p->t);
	/* the thread's profile, as execute's: a process never gets a sandbox
	 * made under other settings (a writable workspace for a read-only one) */
	p->req.profile = yx_agents_profile(w->agents, p->t.agent_id,
	    p->t.agent_config_id);
	p->c.cfg = w->cfg;
	if ((p->c.tdir = yx_thread_dirfd(&w->store, p->t.thread_id)) == -1) {
		yx_http_send_error(r, YX_E_NOT_FOUND, NULL);	/* just deleted */
		return YX_E_NOT_FOUND;
	}
	if ((rc = yx_executor_rundir(w->exec, &p->req, &p->c.rundir, &p->c.uid,
		 &e)) != YX_OK) {
		log_warnx("thread %s: agent directory: %s", p->t.thread_id, e.msg);
		proc_close(p);
		yx_http_send_error(r, YX_E_AGENT_UNAVAILABLE,
		    "the in-sandbox agent cannot be used (details in the server log)");
		return YX_E_AGENT_UNAVAILABLE;
	}
	(void)yx_executor_mask_rules(w->exec, &p->req, &p->masks);
	p->c.rules = p->masks.rules;
	p->c.nrules = p->masks.n;
	return YX_OK;
}

/* proc_open with thread_id from the query. */
static int
proc_open_q(struct yx_wctx *w, struct yx_http_req *r, int wait_ms, struct proc_req *p)
{
	const char	*tid;
	size_t		 tl = 0;

	tid = yx_query_get(&r->query, "thread_id", &tl);
	return proc_open(w, r, tid, tl, wait_ms, p);
}

static struct json_object *
proc_time(int64_t ms)
{
	char ts[40];

	return ms > 0 ? json_object_new_string(yx_iso8601_ms(ms, ts, sizeof(ts))) :
			NULL;
}

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
	json_object_object_add(o, "started_at", proc_time(p->started_at));
	json_object_object_add(o, "ended_at", proc_time(p->ended_at));
	json_object_object_add(o, "output_bytes",
	    json_object_new_int64((int64_t)p->output_bytes));
	return o;
}

int
yx_h_procs_start(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct proc_req		 p;
	struct yx_proc		 proc;
	struct json_object	*body = w->body;
	struct yx_skill_set	 skills;
	struct yx_exec_opts	 opts;
	struct yx_errctx	 e;
	const char		*tid = NULL, *cmd = NULL;
	int			 timeout, rc;

	(void)arg;
	memset(&proc, 0, sizeof(proc));
	p.c.tdir = p.c.rundir = -1;
	yx_errctx_clear(&e);
	/* the timeout capped at YUXI_PROCESS_LIFETIME's most, not refused */
	if ((rc = yx_parse_command(r, body, &tid, &cmd, &timeout, 86400)) != YX_OK)
		goto done;
	yx_audit_note_command(&w->note, cmd, strlen(cmd));
	if ((rc = proc_open(w, r, tid, strlen(tid), 0, &p)) != YX_OK)
		goto done;
	if ((rc = yx_agents_skills(w->agents, p.t.agent_id, p.t.agent_config_id,
		 &skills)) != YX_OK)
		goto done;
	p.req.skills = &skills;
	p.req.command = cmd;
	if ((rc = yx_exec_opts_parse(r, body, p.req.profile, &opts)) != YX_OK)
		goto done;
	yx_exec_opts_apply(&opts, &p.req);
	if ((rc = yx_proc_start(w->exec, &p.c, &p.req, timeout, &proc, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	rc = yx_http_send_obj(r, 201, proc_json(&proc));
done:
	yx_proc_fini(&proc);
	proc_close(&p);
	return rc;
}

int
yx_h_procs_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o = NULL, *a;
	struct yx_proc		*v = NULL;
	struct proc_req		 p;
	struct yx_errctx	 e;
	size_t			 n = 0, i;
	int			 rc;

	(void)arg;
	yx_errctx_clear(&e);
	if ((rc = proc_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = yx_proc_list(&p.c, &v, &n, &e)) != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((o = yx_json_list("processes", &a)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(a, proc_json(&v[i]));
	rc = yx_http_send_obj(r, 200, o);
	o = NULL;
done:
	json_object_put(o);
	yx_proc_list_free(v, n);
	proc_close(&p);
	return rc;
}

int
yx_h_procs_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct proc_req		p;
	struct yx_proc		proc;
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	if ((rc = proc_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = yx_need_proc_id(r, arg)) == YX_OK &&
	    (rc = yx_proc_get(&p.c, arg, &proc, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK)
		rc = yx_http_send_obj(r, 200, proc_json(&proc));
	yx_proc_fini(&proc);
	proc_close(&p);
	return rc;
}

int
yx_h_procs_kill(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o;
	struct proc_req		 p;
	struct yx_proc		 proc;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	memset(&proc, 0, sizeof(proc));
	if ((rc = proc_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = yx_need_proc_id(r, arg)) == YX_OK &&
	    (rc = yx_proc_kill(&p.c, arg, &proc, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK) {
		if ((o = proc_json(&proc)) != NULL)
			json_object_object_add(o, "forgotten", json_object_new_boolean(1));
		rc = yx_http_send_obj(r, 200, o);
	}
	yx_proc_fini(&proc);
	proc_close(&p);
	return rc;
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

int
yx_h_procs_output(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_proc_chunk	 c;
	struct yx_buf		 b;
	struct proc_req		 p;
	struct yx_errctx	 e;
	unsigned long long	 off, wait, max;
	int			 rc;

	yx_errctx_clear(&e);
	memset(&c, 0, sizeof(c));
	yx_buf_init(&b, SIZE_MAX);
	if ((rc = proc_open_q(w, r, proc_wait_ms(w, r), &p)) != YX_OK)
		goto out;
	if ((rc = yx_need_proc_id(r, arg)) != YX_OK ||
	    (rc = proc_q_num(r, "offset", 0, 1ULL << 62, &off)) != YX_OK ||
	    (rc = proc_q_num(r, "wait_ms", 0, 1ULL << 31, &wait)) != YX_OK ||
	    (rc = proc_q_num(r, "max_bytes", YX_PROC_READ_DEFAULT, YX_PROC_READ_MAX,
		 &max)) != YX_OK)
		goto done;
	if (wait > YX_PROC_WAIT_MAX_MS)
		wait = YX_PROC_WAIT_MAX_MS;
	if (max == 0)
		max = YX_PROC_READ_DEFAULT;
	/* the router took a wait slot when wait_ms asks to wait (YX_R_WAIT) */
	rc = yx_proc_output(&p.c, arg, off, w->waiting ? (int)wait : 0, (size_t)max,
	    &c, &e);
	if (rc != YX_OK) {
		yx_send_errctx(r, rc, &e);
		goto done;
	}
	if ((rc = proc_output_body(&c, wait > 0 && !w->waiting, &b)) != YX_OK)
		goto done;
	rc = yx_http_send_raw(r, 200, YX_CT_JSON, b.data, b.len);
done:
	proc_close(&p);
out:
	yx_proc_chunk_fini(&c);
	yx_buf_fini(&b);
	return rc;
}

int
yx_h_procs_stdin(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o;
	struct yx_buf		 body;
	struct proc_req		 p;
	struct yx_errctx	 e;
	unsigned long long	 eof;
	size_t			 written = 0;
	bool			 open = false;
	int			 rc;

	yx_errctx_clear(&e);
	yx_buf_init(&body, w->cfg->body_limit);
	if ((rc = proc_open_q(w, r, 0, &p)) != YX_OK)
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
	proc_close(&p);
out:
	yx_buf_fini(&body);
	return rc;
}
