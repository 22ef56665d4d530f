/* SPDX-License-Identifier: MIT */
/*
 * sandbox_req.c - what the sandbox endpoints share (docs/api.md "Admin
 * endpoints", docs/scaling.md "Provisioner API"): a sandbox id's syntax, a
 * slot as JSON, the table's listing, and releasing or destroying one
 * sandbox, for the admin routes (h_ops.c), a sandbox host's provisioner
 * routes (h_prov.c) and a front (h_front_admin.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "yuxi/log.h"
#include "yuxi/text.h"

/* sandbox ids are 8..64 lowercase hex digits */
static bool
sandbox_id_valid(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= 8 && n <= 64 && s[n] == '\0';
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
	json_object_object_add(o, "created_at", yx_json_time(s->created_at));
	json_object_object_add(o, "last_used_at", yx_json_time(s->last_used_at));
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
