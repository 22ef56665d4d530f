/* SPDX-License-Identifier: MIT */
/*
 * h_prov.c - a sandbox host's side of the remote mode (YUXI_MODE=provisioner,
 * docs/scaling.md): the front's credential, and the lifecycle API only the
 * front calls.
 *
 * The provisioner's nginx passes the Authorization header as the FastCGI
 * param YUXI_FRONT_AUTH and the front's X-Yuxi-User / X-Yuxi-Role as
 * YUXI_USER / YUXI_ROLE (nginx/provisioner.conf.in). The check is here,
 * in the daemon, whatever nginx sits in front: a request without
 * "Bearer <YUXI_PROVISIONER_TOKEN_FILE>" gets 401 on every route but
 * /healthz, /readyz and /metrics, and its claimed user is never used.
 * With the credential the front's word is the identity: the front checked
 * the user, the thread's owner and the path before it called.
 *
 * Lifecycle (docs/api.md "Provisioner API"), {id} a sandbox id:
 *   POST   /api/sandboxes                {thread_id, agent_id?, agent_config_id?}
 *          registers the thread (its files, its uid) for the acting user;
 *          201 created, 200 known; the answer is the sandbox's state. The
 *          container starts with the first execute, as on one host.
 *   GET    /api/sandboxes                 every sandbox of this host
 *   GET    /api/sandboxes/{id}            one (is it alive)
 *   DELETE /api/sandboxes/{id}            its container removed (files kept)
 *   POST   /api/sandboxes/{id}/release    to the warm pool
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <fcgiapp.h>
#include <json-c/json.h>
#include <openssl/crypto.h>

#include "remote_int.h"
#include "yuxi/clock.h"
#include "yuxi/log.h"
#ifdef YX_CONTROL_UNSAFE
#include "common/control_int.h"
#endif

bool
yx_prov_authorized(const struct yx_wctx *w, struct yx_http_req *r)
{
	const char	*got = FCGX_GetParam("YUXI_FRONT_AUTH", r->fcgi->envp);
	size_t		 n;

#ifdef YX_CONTROL_UNSAFE
	if (yx_control_off("provcred"))	/* control: anyone is the front */
		return true;
#endif
	if (got == NULL || w->remote == NULL || w->remote->expect_len == 0)
		return false;
	n = strlen(got);
	return n == w->remote->expect_len &&
	    CRYPTO_memcmp(got, w->remote->expect, n) == 0;
}

int
yx_h_prov_refuse(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	/* the user a caller without the credential claims is nobody */
	r->user[0] = '\0';
	r->admin = false;
	return yx_http_send_error(r, YX_E_UNAUTHENTICATED, "the front's credential is required");
}

static struct json_object *
jtime_ms(int64_t ms)
{
	char ts[40];

	return ms > 0 ? json_object_new_string(yx_iso8601_ms(ms, ts, sizeof(ts))) : NULL;
}

/* {thread_id, sandbox_id, state, container, last_used_at} of a thread here. */
static struct json_object *
prov_state_json(struct yx_wctx *w, const char *tid)
{
	struct json_object	*o;
	struct yx_shm_slot	 s;
	bool			 has;

	memset(&s, 0, sizeof(s));
	has = yx_provider_slot(w->table, tid, YX_SLOT_BY_THREAD, &s, NULL) == YX_OK;
	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "thread_id", json_object_new_string(tid));
	json_object_object_add(o, "sandbox_id", has ? json_object_new_string(s.sandbox_id) : NULL);
	json_object_object_add(o, "state", json_object_new_string(has ? yx_slot_state_name((int)s.state) : "none"));
	json_object_object_add(o, "container",
	    has && s.container_name[0] != '\0' ? json_object_new_string(s.container_name) : NULL);
	json_object_object_add(o, "last_used_at", has ? jtime_ms(s.last_used_at) : NULL);
	return o;
}

/* Parse the create body into want (errors answered). */
static int
prov_parse_create(struct yx_wctx *w, struct yx_http_req *r, struct yx_thread *want)
{
	struct json_object	*body = NULL;
	struct yx_errctx	 e;
	const char		*id = NULL, *agent = NULL, *conf = NULL;
	int			 rc;

	yx_errctx_clear(&e);
	memset(want, 0, sizeof(*want));
	if ((rc = yx_http_read_json(r, &body, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (yx_json_opt_str(body, "thread_id", &id) != YX_OK || id == NULL ||
	    !yx_thread_id_valid(id, strlen(id))) {
		rc = YX_E_INVALID_THREAD_ID;
		yx_http_send_error(r, rc, YX_THREAD_ID_RULE);
	} else if (yx_json_opt_str(body, "agent_id", &agent) != YX_OK ||
	    yx_json_opt_str(body, "agent_config_id", &conf) != YX_OK) {
		rc = YX_E_BAD_REQUEST;
		yx_http_send_error(r, rc, "agent_id and agent_config_id must be strings");
	} else if ((rc = yx_agents_check(w->agents, agent != NULL ? agent : "",
			conf != NULL ? conf : "", &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK) {
		snprintf(want->thread_id, sizeof(want->thread_id), "%s", id);
		snprintf(want->owner, sizeof(want->owner), "%s", r->user);
		snprintf(want->agent_id, sizeof(want->agent_id), "%s", agent ? agent : "");
		snprintf(want->agent_config_id, sizeof(want->agent_config_id), "%s",
		    conf ? conf : "");
	}
	json_object_put(body);
	return rc;
}

/*
 * POST /api/sandboxes: the thread for the acting user, made when new (no
 * per-user thread limit here: the front counts a user's threads).
 */
int
yx_h_prov_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	want, t;
	struct yx_errctx	e;
	bool			created = false;
	int			rc;

	yx_errctx_clear(&e);
	if ((rc = yx_need_user(r)) != YX_OK || (rc = prov_parse_create(w, r, &want)) != YX_OK)
		return rc;
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", want.thread_id);
	if ((rc = yx_thread_create(&w->store, &want, &t, &created, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (created)
		log_info("thread %s registered by the front for %s", t.thread_id, t.owner);
	return yx_http_send_obj(r, created ? 201 : 200, prov_state_json(w, t.thread_id));
}

/* GET /api/sandboxes: as GET /api/admin/sandboxes, for the front. */
int
yx_h_prov_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_provider_snapshot	 snap;
	struct json_object		*o = NULL, *a;
	struct yx_errctx		 e;
	size_t				 i;
	int				 rc;

	yx_errctx_clear(&e);
	memset(&snap, 0, sizeof(snap));
	if (!w->prov_ok)
		return YX_E_BACKEND_UNAVAILABLE;
	if ((rc = yx_provider_list(&w->prov, &snap, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((o = json_object_new_object()) == NULL || (a = json_object_new_array()) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	json_object_object_add(o, "sandboxes", a);
	for (i = 0; i < snap.nslots; i++)
		json_object_array_add(a, yx_slot_json(&snap.slots[i]));
	json_object_object_add(o, "capacity", json_object_new_int64(snap.capacity));
	json_object_object_add(o, "max_replicas", json_object_new_int(w->cfg->max_replicas));
	rc = yx_http_send_json(r, 200, o);
done:
	json_object_put(o);
	yx_provider_snapshot_fini(&snap);
	return rc;
}

static int
prov_bad_id(struct yx_http_req *r, const char *id)
{
	if (yx_sandbox_id_valid(id))
		return YX_OK;
	yx_http_send_error(r, YX_E_BAD_REQUEST, "sandbox_id must be 8-64 hex digits");
	return YX_E_BAD_REQUEST;
}

int
yx_h_prov_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_shm_slot	s;
	int			rc;

	if ((rc = prov_bad_id(r, arg)) != YX_OK)
		return rc;
	if ((rc = yx_provider_slot(w->table, arg, YX_SLOT_BY_SANDBOX, &s, NULL)) == YX_E_NOT_FOUND)
		return yx_http_send_error(r, rc, "no such sandbox"), rc;
	if (rc != YX_OK)
		return rc;
	return yx_http_send_obj(r, 200, yx_slot_json(&s));
}

/* DELETE /api/sandboxes/{id} and POST .../release. */
static int
prov_act(struct yx_wctx *w, struct yx_http_req *r, const char *id, bool destroy)
{
	struct json_object	*o;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = prov_bad_id(r, id)) != YX_OK)
		return rc;
	if (!w->prov_ok)
		return YX_E_BACKEND_UNAVAILABLE;
	rc = destroy ? yx_provider_destroy(&w->prov, id, NULL, &e) :
		       yx_provider_release(&w->prov, id, &e);
	if (rc == YX_E_NOT_FOUND)
		return yx_http_send_error(r, rc, "no such sandbox"), rc;
	if (rc != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	log_info("front: sandbox %s %s", id, destroy ? "destroyed" : "released");
	if (destroy)
		return yx_http_send_empty(r, 204);
	if ((o = json_object_new_object()) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "sandbox_id", json_object_new_string(id));
	json_object_object_add(o, "state", json_object_new_string("warm"));
	return yx_http_send_obj(r, 200, o);
}

int
yx_h_prov_destroy(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return prov_act(w, r, arg, true);
}

int
yx_h_prov_release(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return prov_act(w, r, arg, false);
}
