/* SPDX-License-Identifier: MIT */
/*
 * h_snap.c - a thread's snapshots (docs/api.md "Snapshots"): create, list,
 * delete, restore under /api/threads/{id}/snapshots, and the fork of a
 * new thread from one (POST /api/threads with "from_snapshot",
 * yx_snap_fork). Every route loads the thread as the caller's first
 * (yx_load_thread: another user's thread is 404, as everywhere); a
 * snapshot id names a snapshot of that thread only.
 *
 * A restore holds the thread's transaction lock (no transaction or other
 * restore meanwhile: 409 thread_busy), refuses while a command of the
 * thread runs (409 thread_busy), destroys the thread's sandbox (its
 * background processes and sessions end: they hold the old files), has
 * the helper swap the files and destroys again whatever sandbox a command
 * made in between.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon_int.h"
#include "yuxi/log.h"
#include "yuxi/priv.h"
#include "yuxi/provider.h"

/* The route's captures "<thread>[/<snapshot>]" split into tid and sid. */
static void
snap_args(const char *arg, char *tid, size_t tlen, char *sid, size_t slen)
{
	size_t n = strcspn(arg, "/");

	snprintf(tid, tlen, "%.*s", (int)n, arg);
	snprintf(sid, slen, "%s", arg[n] == '/' ? arg + n + 1 : "");
}

static struct json_object *
snap_json(const char *tid, const struct yx_thread_snap *s)
{
	struct json_object	*o;
	char			 ts[40];

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "snapshot_id", json_object_new_string(s->id));
	json_object_object_add(o, "thread_id", json_object_new_string(tid));
	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "created_at",
	    json_object_new_string(yx_iso8601_ms(s->created_ms, ts, sizeof(ts))));
	json_object_object_add(o, "size_bytes", json_object_new_int64((int64_t)s->size_bytes));
	return o;
}

int
yx_h_snap_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_snap	 s;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	struct json_object	*v;
	const char		*name = NULL;
	char			 tid[YX_THREAD_ID_SIZE], sid[64];
	int			 rc;

	yx_errctx_clear(&e);
	snap_args(arg, tid, sizeof(tid), sid, sizeof(sid));
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		return rc;
	if (json_object_object_get_ex(w->body, "name", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_string))
			return yx_http_send_error(r, YX_E_BAD_REQUEST, "name must be a string"),
			       YX_E_BAD_REQUEST;
		name = json_object_get_string(v);
	}
	if (w->cfg->snapshots_max <= 0)
		return yx_http_send_error(r, YX_E_UNSUPPORTED,
			   "snapshots are off (YUXI_THREAD_SNAPSHOTS_MAX=0)"),
		       YX_E_UNSUPPORTED;
	if ((rc = yx_thread_snap_create(&w->store, &t, name, w->cfg->snapshots_max, &s, &e)) !=
	    YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	log_info("thread %s: snapshot %s made", t.thread_id, s.id);
	return yx_http_send_obj(r, 201, snap_json(t.thread_id, &s));
}

int
yx_h_snap_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_snap	*v = NULL;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	struct json_object	*o, *a;
	char			 tid[YX_THREAD_ID_SIZE], sid[64];
	size_t			 i, n = 0;
	int			 rc;

	yx_errctx_clear(&e);
	snap_args(arg, tid, sizeof(tid), sid, sizeof(sid));
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_list(&w->store, &t, &v, &n, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((o = yx_json_list("snapshots", &a)) == NULL) {
		free(v);
		return YX_E_NOMEM;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(a, snap_json(t.thread_id, &v[i]));
	json_object_object_add(o, "max", json_object_new_int(w->cfg->snapshots_max));
	free(v);
	return yx_http_send_obj(r, 200, o);
}

int
yx_h_snap_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	t;
	struct yx_errctx	e;
	char			tid[YX_THREAD_ID_SIZE], sid[64];
	int			rc;

	yx_errctx_clear(&e);
	snap_args(arg, tid, sizeof(tid), sid, sizeof(sid));
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_delete(&w->store, &t, sid, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	return yx_http_send_empty(r, 204);
}

/* Is a command of thread tid in flight (a hold on its sandbox)? */
static bool
snap_thread_busy(struct yx_wctx *w, const char *tid)
{
	struct yx_shm_slot slot;

	return w->prov_ok &&
	    yx_provider_slot(w->prov.table, tid, YX_SLOT_BY_THREAD, &slot, NULL) == YX_OK &&
	    slot.nholds > 0;
}

int
yx_h_snap_restore(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_snap	 s;
	struct yx_thread	 t;
	struct yx_errctx	 e;
	struct json_object	*o;
	char			 tid[YX_THREAD_ID_SIZE], sid[64];
	int			 lock = -1, rc;

	yx_errctx_clear(&e);
	snap_args(arg, tid, sizeof(tid), sid, sizeof(sid));
	if ((rc = yx_load_thread(w, r, tid, strlen(tid), &t)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_get(&w->store, &t, sid, &s, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((rc = yx_thread_txlock(&w->store, &t, &lock, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (snap_thread_busy(w, t.thread_id)) {
		rc = yx_fail(&e, YX_E_THREAD_BUSY,
		    "a command of this thread is running: restore when it is done");
		goto fail;
	}
	if (w->prov_ok && (rc = yx_provider_destroy(&w->prov, NULL, t.thread_id, &e)) != YX_OK &&
	    rc != YX_E_NOT_FOUND)
		goto fail;
	if ((rc = yx_thread_snap_restore(&w->store, &t, sid, &e)) != YX_OK)
		goto fail;
	if (w->prov_ok)	/* one a command made while the files were swapped */
		(void)yx_provider_destroy(&w->prov, NULL, t.thread_id, NULL);
	close(lock);
	log_info("thread %s: restored to snapshot %s", t.thread_id, sid);
	if ((o = snap_json(t.thread_id, &s)) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "restored", json_object_new_boolean(1));
	return yx_http_send_obj(r, 200, o);
fail:
	close(lock);
	return yx_send_errctx(r, rc, &e), rc;
}
