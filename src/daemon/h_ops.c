/* SPDX-License-Identifier: MIT */
/*
 * h_ops.c - operations endpoints (docs/api.md "Operations"): /healthz (no auth,
 * liveness), /readyz (no auth, readiness: yuxi/ready.h), /metrics (Prometheus
 * text; nginx exposes it on loopback only) and the admin sandbox endpoints
 * (YUXI_ROLE=admin, else 403 forbidden).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"

int
yx_h_healthz(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct json_object	*o, *s;
	struct yx_provider_stats st;
	uint32_t		 active = 0, warm = 0;
	bool			 up, table_ok = false;
	int			 rc;

	up = yx_engine_up(w);
	if (yx_provider_stats(w->table, &st, NULL) == YX_OK) {
		active = st.nstate[YX_SLOT_ACTIVE];
		warm = st.nstate[YX_SLOT_WARM];
		table_ok = true;
	}
	if ((o = json_object_new_object()) == NULL || (s = json_object_new_object()) == NULL) {
		json_object_put(o);
		return YX_E_NOMEM;
	}
	json_object_object_add(o, "status",
	    json_object_new_string(up && table_ok ? "ok" : "degraded"));
	json_object_object_add(o, "engine", json_object_new_string(up ? "ok" : "down"));
	json_object_object_add(o, "workers",
	    json_object_new_int(atomic_load(&w->metrics->workers_alive)));
	json_object_object_add(s, "active", json_object_new_int64(active));
	json_object_object_add(s, "warm", json_object_new_int64(warm));
	json_object_object_add(o, "sandboxes", s);
	rc = yx_http_send_json(r, 200, o);
	json_object_put(o);
	return rc;
}

int
yx_ready_begin(struct yx_ready_json *j)
{
	j->bad = 0;
	j->checks = json_object_new_array();
	j->failing = json_object_new_array();
	if (j->checks == NULL || j->failing == NULL) {
		json_object_put(j->checks);
		json_object_put(j->failing);
		return YX_E_NOMEM;
	}
	return YX_OK;
}

void
yx_ready_add(struct yx_ready_json *j, const char *name, bool ok, const char *detail)
{
	struct json_object *c;

	if (!ok) {
		j->bad++;
		json_object_array_add(j->failing, json_object_new_string(name));
	}
	if ((c = json_object_new_object()) == NULL)
		return;
	json_object_object_add(c, "name", json_object_new_string(name));
	json_object_object_add(c, "ok", json_object_new_boolean(ok));
	json_object_object_add(c, "detail", json_object_new_string(detail));
	json_object_array_add(j->checks, c);
}

int
yx_ready_send(struct yx_http_req *r, struct yx_ready_json *j, bool ready)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL) {
		json_object_put(j->checks);
		json_object_put(j->failing);
		return YX_E_NOMEM;
	}
	json_object_object_add(o, "ready", json_object_new_boolean(ready));
	if (j->bad > 0)
		json_object_object_add(o, "failing", j->failing);
	else
		json_object_put(j->failing);
	json_object_object_add(o, "checks", j->checks);
	return yx_http_send_obj(r, ready ? 200 : 503, o);
}

/*
 * GET /readyz: 200 {"ready":true,"checks":[...]} or 503
 * {"ready":false,"failing":[names],"checks":[...]}; each check
 * {"name","ok","detail"}, the detail never naming a host path.
 */
int
yx_h_readyz(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_ready_result	res[YX_READY_N], comps[YX_COMP_N];
	unsigned		n;
	struct yx_ready_json	j;
	int			i, rc;

	(void)yx_ready_run(&w->ready, res);
	if ((rc = yx_ready_begin(&j)) != YX_OK)
		return rc;
	for (i = 0; i < YX_READY_N; i++)
		yx_ready_add(&j, res[i].name, res[i].rc == YX_OK, res[i].detail);
	n = yx_ready_components(&w->ready, yx_agents_profile(w->agents, NULL, NULL), comps);
	for (i = 0; i < (int)n; i++)
		yx_ready_add(&j, comps[i].name, comps[i].rc == YX_OK, comps[i].detail);
	return yx_ready_send(r, &j, j.bad == 0);
}

int
yx_h_metrics(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_ready_result	res[YX_READY_N];
	struct yx_buf		b;
	int			rc;

	(void)yx_ready_run(&w->ready, res);
	yx_buf_init(&b, 4 << 20);
	if ((rc = yx_metrics_render(w->metrics, w->table, res, &b)) == YX_OK &&
	    (rc = yx_users_metrics(w, &b)) == YX_OK &&
	    (rc = yx_metrics_render_disk(w->cfg, &w->store, &b)) == YX_OK)
		rc = yx_http_send_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8",
		    b.data, b.len);
	yx_buf_fini(&b);
	return rc;
}

/* sandbox ids are 8..64 lowercase hex digits */
static bool
sandbox_id_valid(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= 8 && n <= 64 && s[n] == '\0';
}

static struct json_object *
jtime(int64_t ms)
{
	char ts[40];

	return ms > 0 ? json_object_new_string(yx_iso8601_ms(ms, ts, sizeof(ts))) : NULL;
}

static struct json_object *
slot_json(const struct yx_shm_slot *s)
{
	struct json_object *o;

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "sandbox_id", json_object_new_string(s->sandbox_id));
	json_object_object_add(o, "thread_id", json_object_new_string(s->thread_id));
	json_object_object_add(o, "state",
	    json_object_new_string(yx_slot_state_name((int)s->state)));
	json_object_object_add(o, "container", json_object_new_string(s->container_name));
	json_object_object_add(o, "container_id", json_object_new_string(s->container_id));
	json_object_object_add(o, "owner", json_object_new_string(s->owner_user));
	json_object_object_add(o, "agent_id", json_object_new_string(s->agent_id));
	json_object_object_add(o, "skills_fp", json_object_new_string(s->skills_fp));
	json_object_object_add(o, "holds", json_object_new_int((int)s->nholds));
	json_object_object_add(o, "port", json_object_new_int(s->port));
	json_object_object_add(o, "created_at", jtime(s->created_at));
	json_object_object_add(o, "last_used_at", jtime(s->last_used_at));
	return o;
}

/*
 * The table's sandboxes as JSON (GET /api/admin/sandboxes, and a sandbox
 * host's GET /api/sandboxes for its front): each slot, with its thread's
 * disk figures when disk is set, the capacity and the replica limit.
 */
int
yx_send_sandbox_list(struct yx_wctx *w, struct yx_http_req *r, bool disk)
{
	struct yx_provider_snapshot	 snap;
	struct json_object		*o = NULL, *a, *s;
	struct yx_errctx		 e;
	size_t				 i;
	int				 rc;

	yx_errctx_clear(&e);
	memset(&snap, 0, sizeof(snap));
	if (!w->prov_ok)
		return YX_E_BACKEND_UNAVAILABLE;
	if ((rc = yx_provider_list(&w->prov, &snap, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((o = yx_json_list("sandboxes", &a)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	for (i = 0; i < snap.nslots; i++) {
		s = slot_json(&snap.slots[i]);
		if (disk && s != NULL && snap.slots[i].thread_id[0] != '\0')
			json_object_object_add(s, "disk",
			    yx_disk_json(w, snap.slots[i].thread_id));
		json_object_array_add(a, s);
	}
	json_object_object_add(o, "capacity", json_object_new_int64(snap.capacity));
	json_object_object_add(o, "max_replicas", json_object_new_int(w->cfg->max_replicas));
	rc = yx_http_send_json(r, 200, o);
done:
	json_object_put(o);
	yx_provider_snapshot_fini(&snap);
	return rc;
}

int
yx_h_admin_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return yx_send_sandbox_list(w, r, true);
}

int
yx_need_sandbox_id(struct yx_http_req *r, const char *id)
{
	if (sandbox_id_valid(id))
		return YX_OK;
	yx_http_send_error(r, YX_E_BAD_REQUEST, "sandbox_id must be 8-64 hex digits");
	return YX_E_BAD_REQUEST;
}

int
yx_sandbox_act(struct yx_wctx *w, struct yx_http_req *r, const char *id, bool destroy,
    const char *who)
{
	struct json_object	*o;
	struct yx_shm_slot	 slot;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_need_sandbox_id(r, id)) != YX_OK)
		return rc;
	if (!w->prov_ok)
		return YX_E_BACKEND_UNAVAILABLE;
	/* the thread acted upon, for the log and the audit line */
	if (yx_provider_slot(w->table, id, YX_SLOT_BY_SANDBOX, &slot, NULL) == YX_OK)
		snprintf(r->thread_id, sizeof(r->thread_id), "%s", slot.thread_id);
	rc = destroy ? yx_provider_destroy(&w->prov, id, NULL, &e) :
		       yx_provider_release(&w->prov, id, &e);
	if (rc == YX_E_NOT_FOUND)
		return yx_http_send_error(r, rc, "no such sandbox"), rc;
	if (rc != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	log_info("%s: sandbox %s %s", who, id, destroy ? "destroyed" : "released");
	if (destroy)
		return yx_http_send_empty(r, 204);
	if ((o = json_object_new_object()) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "sandbox_id", json_object_new_string(id));
	json_object_object_add(o, "state", json_object_new_string("warm"));
	return yx_http_send_obj(r, 200, o);
}

static int
admin_act(struct yx_wctx *w, struct yx_http_req *r, const char *id, bool destroy)
{
	char	who[16 + sizeof(r->user)];

	snprintf(who, sizeof(who), "admin %s", r->user);
	return yx_sandbox_act(w, r, id, destroy, who);
}

int
yx_h_admin_release(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return admin_act(w, r, arg, false);
}

int
yx_h_admin_destroy(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return admin_act(w, r, arg, true);
}

/* For the provisioner and the front (remote_int.h). */
struct json_object *
yx_slot_json(const struct yx_shm_slot *s)
{
	return slot_json(s);
}

bool
yx_sandbox_id_valid(const char *s)
{
	return sandbox_id_valid(s);
}
