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
#include "common/control_int.h"

bool
yx_prov_authorized(const struct yx_wctx *w, struct yx_http_req *r)
{
	const char	*got = FCGX_GetParam("YUXI_FRONT_AUTH", r->fcgi->envp);
	size_t		 n;

	if (YX_CONTROL_OFF("provcred"))	/* control: anyone is the front */
		return true;
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

/*
 * POST /api/sandboxes: the thread for the acting user, made when new (no
 * per-user thread limit here: the front counts a user's threads).
 */
int
yx_h_prov_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	t;
	bool			created;
	int			rc;

	if ((rc = yx_thread_req_create(w, r, true, &t, &created)) != YX_OK)
		return rc;
	if (created)
		log_info("thread %s registered by the front for %s", t.thread_id, t.owner);
	return yx_http_send_obj(r, created ? 201 : 200, prov_state_json(w, t.thread_id));
}

/* GET /api/sandboxes: as GET /api/admin/sandboxes, for the front. */
int
yx_h_prov_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return yx_send_sandbox_list(w, r, false);
}

int
yx_h_prov_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_shm_slot	s;
	int			rc;

	if ((rc = yx_need_sandbox_id(r, arg)) != YX_OK)
		return rc;
	if ((rc = yx_provider_slot(w->table, arg, YX_SLOT_BY_SANDBOX, &s, NULL)) == YX_E_NOT_FOUND)
		return yx_http_send_error(r, rc, "no such sandbox"), rc;
	if (rc != YX_OK)
		return rc;
	return yx_http_send_obj(r, 200, yx_slot_json(&s));
}

/* DELETE /api/sandboxes/{id} and POST .../release. */
int
yx_h_prov_destroy(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return yx_sandbox_act(w, r, arg, true, "front");
}

int
yx_h_prov_release(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	return yx_sandbox_act(w, r, arg, false, "front");
}
