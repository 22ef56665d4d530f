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
#include "yuxi/preview.h"

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

/*
 * GET /readyz: 200 {"ready":true,"checks":[...]} or 503
 * {"ready":false,"failing":[names],"checks":[...]}; each check
 * {"name","ok","detail"}, the detail never naming a host path. Then the
 * protections the instance runs with (never a reason to be unready) and,
 * when the defaults asked for one this host does not give, "warnings".
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
	yx_ready_protections(&j, w->cfg);
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
	    (rc = yx_metrics_render_disk(w->cfg, &w->store, &b)) == YX_OK &&
	    (rc = yx_preview_metrics(w->cfg, &b)) == YX_OK)
		rc = yx_http_send_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8",
		    b.data, b.len);
	yx_buf_fini(&b);
	return rc;
}

int
yx_h_admin_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return yx_send_sandbox_list(w, r, true);
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
