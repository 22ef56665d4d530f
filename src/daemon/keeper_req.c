/* SPDX-License-Identifier: MIT */
/*
 * keeper_req.c - one request's view of a thread's keepers, the in-sandbox
 * owners of its background processes (h_proc.c) and sessions
 * (h_session.c): the caller's thread, its directory, its agent directory,
 * its output masks and the request's budget with the keepers
 * (daemon_int.h "Keepers"); and the states of the thread's profile
 * services, whose keepers the in-sandbox agent starts (yx_services_json,
 * for GET /api/threads/{id} and GET /api/services).
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

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "common/control_int.h"
#include "yuxi/agents.h"
#include "yuxi/clock.h"
#include "yuxi/executor.h"
#include "yuxi/log.h"
#include "yuxi/procs.h"
#include "yuxi/provider.h"
#include "yuxi/text.h"

#define PROC_BUDGET_MS	3000	/* a request's time with the keepers, past its wait */
#define PROC_STALL_MS	10000	/* how long a sandbox stays marked stalled */
#define PROC_STALLED_MS	500	/* a request's time with a stalled sandbox's keepers */
#define PROC_SLOTLESS_MS 300	/* ... of a long-poll without a slot (answers at once) */

/*
 * The caller's thread. Control build only: with YX_CONTROL_OFF=procowner
 * the process and session routes skip the owner check (docs/security.md
 * "Control mode"), so that the suite's 404 tests can be seen to fail.
 */
int
yx_keeper_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id,
    size_t len, struct yx_thread *t)
{
	if (YX_CONTROL_OFF("procowner") && id != NULL &&
	    yx_thread_id_valid(id, len) && strlen(id) == len &&
	    yx_thread_find(&w->store, id, t, NULL) == YX_OK)
		return YX_OK;
	return yx_load_thread(w, r, id, len, t);
}

void
yx_keeper_close(struct yx_keeper_req *p)
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
int
yx_keeper_open(struct yx_wctx *w, struct yx_http_req *r, const char *tid,
    size_t tl, int wait_ms, struct yx_keeper_req *p)
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
	if ((rc = yx_keeper_thread(w, r, tid, tl, &p->t)) != YX_OK)
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
		yx_keeper_close(p);
		yx_http_send_error(r, YX_E_AGENT_UNAVAILABLE,
		    "the in-sandbox agent cannot be used (details in the server log)");
		return YX_E_AGENT_UNAVAILABLE;
	}
	(void)yx_executor_mask_rules(w->exec, &p->req, &p->masks);
	p->c.rules = p->masks.rules;
	p->c.nrules = p->masks.n;
	return YX_OK;
}

/* yx_keeper_open with thread_id from the query. */
int
yx_keeper_open_q(struct yx_wctx *w, struct yx_http_req *r, int wait_ms, struct yx_keeper_req *p)
{
	const char	*tid;
	size_t		 tl = 0;

	tid = yx_query_get(&r->query, "thread_id", &tl);
	return yx_keeper_open(w, r, tid, tl, wait_ms, p);
}

int
yx_exec_session_ran(const struct yx_exec_output *out, struct yx_errctx *e)
{
	if (out->session == NULL || out->session->ran || out->refused != NULL)
		return YX_OK;	/* a refusal is an ordinary answer (exit 126) */
	if (out->session->busy)
		return yx_fail(e, YX_E_SESSION_BUSY,
		    "the session runs another command; one at a time");
	return yx_fail(e, YX_E_SESSION_NOT_FOUND, "the session has ended");
}

int
yx_keeper_list(struct yx_wctx *w, struct yx_http_req *r,
    const struct yx_keeper_listing *l)
{
	struct json_object	*o, *a;
	struct yx_keeper_req	 p;
	struct yx_errctx	 e;
	void			*v = NULL;
	size_t			 n = 0, i;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_keeper_open_q(w, r, 0, &p)) != YX_OK)
		return rc;
	if ((rc = l->list(&p.c, &v, &n, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	else if ((o = yx_json_list(l->key, &a)) == NULL)
		rc = YX_E_NOMEM;
	else {
		for (i = 0; i < n; i++)
			json_object_array_add(a, l->json((const char *)v + i * l->size, p.t.thread_id));
		rc = yx_http_send_obj(r, 200, o);
	}
	l->free(v, n);
	yx_keeper_close(&p);
	return rc;
}

/*
 * A profile's services (docs/api.md "Services"): their states, read from
 * the files the in-sandbox agent keeps beside its socket (no keeper is
 * asked: bounded by a few small reads), as GET /api/threads/{id} and
 * GET /api/services show them. NULL when the profile has none (or on
 * ENOMEM).
 */
struct json_object *
yx_services_json(struct yx_wctx *w, const struct yx_thread *t)
{
	const struct yx_profile	*prof;
	struct yx_svc_state	 st[YX_SERVICES_MAX];
	struct yx_exec_request	 req;
	struct yx_shm_slot	 slot;
	struct yx_proc_ctx	 c;
	struct json_object	*a, *o;
	bool			 running;
	size_t			 i;

	prof = yx_agents_profile(w->agents, t->agent_id, t->agent_config_id);
	if (prof->nservices == 0 || (a = json_object_new_array()) == NULL)
		return NULL;
	memset(&c, 0, sizeof(c));
	c.rundir = -1;
	memset(&slot, 0, sizeof(slot));
	running = yx_provider_slot(w->table, t->thread_id, YX_SLOT_BY_THREAD,
		      &slot, NULL) == YX_OK &&
	    (slot.state == YX_SLOT_ACTIVE || slot.state == YX_SLOT_WARM);
	memset(&req, 0, sizeof(req));
	yx_exec_request_thread(&req, t);
	req.profile = prof;
	if (running && w->exec != NULL &&
	    yx_executor_rundir(w->exec, &req, &c.rundir, &c.uid, NULL) != YX_OK)
		c.rundir = -1;
	yx_svc_states(&c, prof, running, st);
	if (c.rundir != -1)
		close(c.rundir);
	for (i = 0; i < prof->nservices; i++) {
		if ((o = json_object_new_object()) == NULL)
			break;
		json_object_object_add(o, "name", json_object_new_string(st[i].svc->name));
		json_object_object_add(o, "process_id",
		    json_object_new_string(st[i].process_id));
		json_object_object_add(o, "state", json_object_new_string(st[i].state));
		json_object_object_add(o, "ready_port",
		    st[i].svc->ready_port > 0 ? json_object_new_int(st[i].svc->ready_port) :
						NULL);
		json_object_object_add(o, "restarts", json_object_new_int64(st[i].restarts));
		json_object_object_add(o, "pid",
		    st[i].pid > 0 ? json_object_new_int(st[i].pid) : NULL);
		json_object_object_add(o, "last_exit_code",
		    st[i].exit_code >= 0 ? json_object_new_int(st[i].exit_code) : NULL);
		json_object_object_add(o, "since", yx_json_time(st[i].since));
		json_object_object_add(o, "command",
		    yx_json_text(st[i].svc->command, strlen(st[i].svc->command)));
		json_object_array_add(a, o);
	}
	return a;
}
