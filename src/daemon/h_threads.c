/* SPDX-License-Identifier: MIT */
/*
 * h_threads.c - POST/GET/PATCH/DELETE /api/threads (docs/api.md "Threads"):
 * records with the caller's metadata and idle timeout, listings filtered
 * by metadata.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "yuxi/log.h"
#include "yuxi/preview.h"
#include "yuxi/path.h"

int
yx_h_threads_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	t;
	bool			created;
	int			rc;

	if ((rc = yx_thread_req_create(w, r, false, &t, &created)) != YX_OK)
		return rc;
	yx_audit_note_meta(&w->note, &t.meta);
	return yx_http_send_obj(r, created ? 201 : 200, yx_thread_json(&t));
}

#define THREAD_FILTER	"metadata."

/*
 * The listing's filters: every query key "metadata.KEY" (repeatable; each
 * must match). Any other key is refused, so a misspelt filter never
 * silently lists everything. YX_OK or the 400 sent.
 */
static int
thread_filter_check(struct yx_http_req *r)
{
	const struct yx_query_kv	*kv;
	size_t				 i;

	for (i = 0; i < r->query.n; i++) {
		kv = &r->query.kv[i];
		if (strncmp(kv->key, THREAD_FILTER, strlen(THREAD_FILTER)) != 0 ||
		    kv->key[strlen(THREAD_FILTER)] == '\0') {
			yx_http_send_error(r, YX_E_BAD_REQUEST,
			    "the only query parameters are metadata.KEY=VALUE filters");
			return YX_E_BAD_REQUEST;
		}
		if (strlen(kv->val) != kv->vlen) {
			yx_http_send_error(r, YX_E_BAD_REQUEST, "a filter value holds NUL");
			return YX_E_BAD_REQUEST;
		}
	}
	return YX_OK;
}

/* Does t match every metadata.KEY=VALUE filter of r? */
static bool
thread_filter_match(const struct yx_http_req *r, const struct yx_thread *t)
{
	size_t i;

	for (i = 0; i < r->query.n; i++)
		if (!yx_thread_meta_has(&t->meta, r->query.kv[i].key + strlen(THREAD_FILTER),
			r->query.kv[i].val))
			return false;
	return true;
}

int
yx_h_threads_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	*v = NULL;
	struct json_object	*o = NULL, *a;
	struct yx_errctx	 e;
	size_t			 i, n = 0;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = thread_filter_check(r)) != YX_OK)
		return rc;
	if ((rc = yx_thread_list(&w->store, r->user, &v, &n, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((o = yx_json_list("threads", &a)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	for (i = 0; i < n; i++)
		if (thread_filter_match(r, &v[i]))
			json_object_array_add(a, yx_thread_json(&v[i]));
	rc = yx_http_send_json(r, 200, o);
done:
	json_object_put(o);
	free(v);
	return rc;
}

static struct json_object *
jstr_or_null(const char *s)
{
	return s[0] != '\0' ? json_object_new_string(s) : NULL;
}

/* "sandbox": {...} of a thread from the provider table. */
static struct json_object *
thread_sandbox_json(struct yx_wctx *w, const char *id)
{
	struct json_object	*s;
	struct yx_shm_slot	 slot;
	char			 ts[40];
	int			 i = -1;

	memset(&slot, 0, sizeof(slot));
	if (yx_provider_slot(w->table, id, YX_SLOT_BY_THREAD, &slot, NULL) ==
	    YX_OK)
		i = 0;
	if ((s = json_object_new_object()) == NULL)
		return NULL;
	if (i < 0) {
		json_object_object_add(s, "sandbox_id", NULL);
		json_object_object_add(s, "state", json_object_new_string("none"));
		json_object_object_add(s, "container", NULL);
		json_object_object_add(s, "last_used_at", NULL);
		return s;
	}
	json_object_object_add(s, "sandbox_id", json_object_new_string(slot.sandbox_id));
	json_object_object_add(s, "state",
	    json_object_new_string(yx_slot_state_name((int)slot.state)));
	json_object_object_add(s, "container", jstr_or_null(slot.container_name));
	json_object_object_add(s, "last_used_at",
	    slot.last_used_at > 0 ? json_object_new_string(yx_iso8601_ms(slot.last_used_at,
					ts, sizeof(ts))) :
				    NULL);
	return s;
}

int
yx_h_threads_get(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	 t;
	struct json_object	*o, *svc;
	int			 rc;

	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((o = yx_thread_json(&t)) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "sandbox", thread_sandbox_json(w, t.thread_id));
	json_object_object_add(o, "disk", yx_disk_json(w, t.thread_id));
	if ((svc = yx_services_json(w, &t)) != NULL)	/* its profile's */
		json_object_object_add(o, "services", svc);
	return yx_http_send_obj(r, 200, o);
}

/*
 * PATCH: {"metadata"?: merge patch, "idle_timeout"?: seconds or null}.
 * The new idle timeout reaches the thread's sandbox at once (its slot),
 * not only at its next command.
 */
int
yx_h_threads_patch(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_patch	 p;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	int			 rc;

	yx_errctx_clear(&e);
	memset(&p, 0, sizeof(p));
	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((rc = yx_parse_thread_patch(w, &p, &e)) != YX_OK ||
	    (rc = yx_thread_update(&w->store, t.thread_id, r->user, &p, &t,
		 &e)) != YX_OK)
		goto fail;
	yx_audit_note_meta(&w->note, &t.meta);
	if (p.set_idle)
		(void)yx_provider_set_idle(w->table, t.thread_id, t.idle_timeout);
	return yx_http_send_obj(r, 200, yx_thread_json(&t));
fail:
	return yx_send_errctx(r, rc, &e), rc;
}

/*
 * DELETE: the sandbox first (it must not keep writing into removed data),
 * then the id is retired (renamed away: from here on the thread is not
 * found), then the sandbox again (an execute that looked the thread up
 * before the rename may have made one meanwhile), and only then the data,
 * the agent directory and the uid go: a thread of the same id created
 * later, by anyone, starts from nothing.
 */
int
yx_h_threads_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	t;
	struct yx_errctx	e;
	char			tomb[64];
	int			rc;

	yx_errctx_clear(&e);
	if ((rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if (w->prov_ok) {
		rc = yx_provider_destroy(&w->prov, NULL, t.thread_id, &e);
		if (rc != YX_OK && rc != YX_E_NOT_FOUND)
			return yx_send_errctx(r, rc, &e), rc;
	}
	yx_errctx_clear(&e);
	if ((rc = yx_thread_retire(&w->store, t.thread_id, r->user, &t, tomb,
		 sizeof(tomb), &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	/* its previews: the records went with the thread's directory; the
	 * sockets and open connections go now */
	(void)yx_preview_revoke(w->cfg, t.thread_id, 0);
	if (w->prov_ok)
		(void)yx_provider_destroy(&w->prov, NULL, t.thread_id, NULL);
	if ((rc = yx_thread_purge(&w->store, &t, tomb, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	return yx_http_send_empty(r, 204);
}
