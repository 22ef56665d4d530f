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

/* What every snapshot route starts with. */
struct snap_req {
	struct yx_thread	t;
	struct yx_errctx	e;	/* cleared */
	char			sid[64];	/* "" without one */
};

/*
 * The route's captures "<thread>[/<snapshot>]": the thread loaded as the
 * caller's (yx_load_thread) into q->t, the snapshot id into q->sid.
 * YX_OK, or the error already sent.
 */
static int
snap_open(struct yx_wctx *w, struct yx_http_req *r, const char *arg, struct snap_req *q)
{
	char	tid[YX_THREAD_ID_SIZE];
	size_t	n = strcspn(arg, "/");

	yx_errctx_clear(&q->e);
	snprintf(tid, sizeof(tid), "%.*s", (int)n, arg);
	snprintf(q->sid, sizeof(q->sid), "%s", arg[n] == '/' ? arg + n + 1 : "");
	return yx_load_thread(w, r, tid, strlen(tid), &q->t);
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
	struct snap_req		 q;
	struct json_object	*v;
	const char		*name = NULL;
	int			 rc;

	if ((rc = snap_open(w, r, arg, &q)) != YX_OK)
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
	if ((rc = yx_thread_snap_create(&w->store, &q.t, name, w->cfg->snapshots_max, &s,
		 &q.e)) != YX_OK)
		return yx_send_errctx(r, rc, &q.e), rc;
	log_info("thread %s: snapshot %s made", q.t.thread_id, s.id);
	return yx_http_send_obj(r, 201, snap_json(q.t.thread_id, &s));
}

int
yx_h_snap_list(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread_snap	*v = NULL;
	struct snap_req		 q;
	struct json_object	*o, *a;
	size_t			 i, n = 0;
	int			 rc;

	if ((rc = snap_open(w, r, arg, &q)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_list(&w->store, &q.t, &v, &n, &q.e)) != YX_OK)
		return yx_send_errctx(r, rc, &q.e), rc;
	if ((o = yx_json_list("snapshots", &a)) == NULL) {
		free(v);
		return YX_E_NOMEM;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(a, snap_json(q.t.thread_id, &v[i]));
	json_object_object_add(o, "max", json_object_new_int(w->cfg->snapshots_max));
	free(v);
	return yx_http_send_obj(r, 200, o);
}

int
yx_h_snap_delete(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct snap_req	q;
	int		rc;

	if ((rc = snap_open(w, r, arg, &q)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_delete(&w->store, &q.t, q.sid, &q.e)) != YX_OK)
		return yx_send_errctx(r, rc, &q.e), rc;
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
	struct snap_req		 q;
	struct json_object	*o;
	int			 lock = -1, rc;

	if ((rc = snap_open(w, r, arg, &q)) != YX_OK)
		return rc;
	if ((rc = yx_thread_snap_get(&w->store, &q.t, q.sid, &s, &q.e)) != YX_OK)
		return yx_send_errctx(r, rc, &q.e), rc;
	if ((rc = yx_thread_txlock(&w->store, &q.t, &lock, &q.e)) != YX_OK)
		return yx_send_errctx(r, rc, &q.e), rc;
	if (snap_thread_busy(w, q.t.thread_id)) {
		rc = yx_fail(&q.e, YX_E_THREAD_BUSY,
		    "a command of this thread is running: restore when it is done");
		goto fail;
	}
	if (w->prov_ok &&
	    (rc = yx_provider_destroy(&w->prov, NULL, q.t.thread_id, &q.e)) != YX_OK &&
	    rc != YX_E_NOT_FOUND)
		goto fail;
	if ((rc = yx_thread_snap_restore(&w->store, &q.t, q.sid, &q.e)) != YX_OK)
		goto fail;
	if (w->prov_ok)	/* one a command made while the files were swapped */
		(void)yx_provider_destroy(&w->prov, NULL, q.t.thread_id, NULL);
	close(lock);
	log_info("thread %s: restored to snapshot %s", q.t.thread_id, q.sid);
	if ((o = snap_json(q.t.thread_id, &s)) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "restored", json_object_new_boolean(1));
	return yx_http_send_obj(r, 200, o);
fail:
	close(lock);
	return yx_send_errctx(r, rc, &q.e), rc;
}
