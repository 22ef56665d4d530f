/* SPDX-License-Identifier: MIT */
/*
 * h_common.c - what every handler shares: identity (401), the caller's
 * thread with the one 404 for unknown and foreign threads alike, error
 * replies from an errctx, optional JSON string fields, the cached
 * engine ping and a thread's disk figures.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/clock.h"

#define YX_ENGINE_CACHE_MS	2000	/* /healthz pings the engine at most this often */

int
yx_need_user(struct yx_http_req *r)
{
	if (r->user[0] != '\0')
		return YX_OK;
	yx_http_send_error(r, YX_E_UNAUTHENTICATED,
	    r->bad_identity ? "invalid identity" : "no identity");
	return YX_E_UNAUTHENTICATED;
}

int
yx_send_errctx(struct yx_http_req *r, int rc, const struct yx_errctx *e)
{
	const char *msg = NULL;

	if (e != NULL && e->code == rc && e->msg[0] != '\0')
		msg = e->msg;
	if (rc == YX_E_BUSY || rc == YX_E_CAPACITY)
		return yx_http_send_error_hdr(r, rc, msg, "Retry-After: 5\r\n");
	return yx_http_send_error(r, rc, msg);
}

int
yx_load_thread(struct yx_wctx *w, struct yx_http_req *r, const char *id, size_t idlen,
    struct yx_thread *t)
{
	struct yx_errctx	e;
	int			rc;

	yx_errctx_clear(&e);
	if (id == NULL || !yx_thread_id_valid(id, idlen) || strlen(id) != idlen) {
		yx_http_send_error(r, YX_E_INVALID_THREAD_ID,
		    YX_THREAD_ID_RULE);
		return YX_E_INVALID_THREAD_ID;
	}
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", id);
	if ((rc = yx_thread_get(&w->store, id, r->user, t, &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	return rc;
}

int
yx_json_opt_str(struct json_object *o, const char *key, const char **out)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return YX_OK;
	if (!json_object_is_type(v, json_type_string))
		return YX_E_BAD_REQUEST;
	/* "\u0000" inside: the C string would silently name something else */
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return YX_E_BAD_REQUEST;
	*out = json_object_get_string(v);
	return YX_OK;
}

bool
yx_engine_up(struct yx_wctx *w)
{
	int64_t now = yx_mono_ms();

	if (w->engine_at_ms != 0 && now - w->engine_at_ms < YX_ENGINE_CACHE_MS)
		return w->engine_ok;
	w->engine_ok = w->drv != NULL && w->drv->ops->ping(w->drv, NULL) == YX_OK;
	w->engine_at_ms = yx_mono_ms();
	return w->engine_ok;
}

struct json_object *
yx_disk_json(struct yx_wctx *w, const char *id)
{
	struct yx_thread_disk	 u;
	struct json_object	*o;

	if (yx_thread_disk_usage(&w->store, id, &u) != YX_OK ||
	    (o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "quota_bytes", json_object_new_int64((int64_t)u.quota));
	json_object_object_add(o, "used_bytes", json_object_new_int64((int64_t)u.used));
	json_object_object_add(o, "available_bytes",
	    json_object_new_int64((int64_t)u.avail));
	return o;
}
