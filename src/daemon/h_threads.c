/* SPDX-License-Identifier: MIT */
/*
 * h_threads.c - POST/GET/DELETE /api/threads (docs/api.md "Threads").
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/rand.h>

#include "daemon_int.h"
#include "remote_int.h"
#include "yuxi/log.h"
#include "yuxi/path.h"

static struct json_object *
jstr_or_null(const char *s)
{
	return s[0] != '\0' ? json_object_new_string(s) : NULL;
}

/* The API view of a record (caller puts). */
static struct json_object *
thread_json(const struct yx_thread *t)
{
	struct json_object	*o;
	char			 ts[40];

	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "thread_id", json_object_new_string(t->thread_id));
	json_object_object_add(o, "owner", json_object_new_string(t->owner));
	json_object_object_add(o, "agent_id", jstr_or_null(t->agent_id));
	json_object_object_add(o, "agent_config_id", jstr_or_null(t->agent_config_id));
	json_object_object_add(o, "created_at",
	    json_object_new_string(yx_iso8601_ms(t->created_ms, ts, sizeof(ts))));
	if (t->host[0] != '\0')	/* a front's placement (docs/scaling.md) */
		json_object_object_add(o, "host", json_object_new_string(t->host));
	return o;
}

static void
thread_new_id(char *buf, size_t len)
{
	unsigned char	rnd[8];
	size_t		i;

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		for (i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)(random() & 0xff);
	snprintf(buf, len, "t-");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 + 2 * i, len - 2 - 2 * i, "%02x", rnd[i]);
}

int
yx_parse_thread_create(struct yx_wctx *w, struct yx_http_req *r, bool id_required,
    struct yx_thread *want)
{
	struct json_object	*body = NULL;
	struct yx_errctx	 e;
	const char		*id = NULL, *agent = NULL, *conf = NULL;
	int			 rc = YX_OK;

	yx_errctx_clear(&e);
	memset(want, 0, sizeof(*want));
	/* every field may be optional: no body (no Content-Length) or an empty one is {} */
	if ((id_required || r->content_length > 0) &&
	    (rc = yx_http_read_json(r, &body, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if (body != NULL && (yx_json_opt_str(body, "thread_id", &id) != YX_OK || yx_json_opt_str(body, "agent_id", &agent) != YX_OK || yx_json_opt_str(body, "agent_config_id", &conf) != YX_OK)) {
		rc = YX_E_BAD_REQUEST;
		yx_http_send_error(r, rc, "thread_id, agent_id and agent_config_id must be strings");
	} else if (id == NULL ? id_required : !yx_thread_id_valid(id, strlen(id))) {
		rc = YX_E_INVALID_THREAD_ID;
		yx_http_send_error(r, rc, YX_THREAD_ID_RULE);
	} else if ((rc = yx_agents_check(w->agents, agent != NULL ? agent : "",
			conf != NULL ? conf : "", &e)) != YX_OK)
		yx_send_errctx(r, rc, &e);
	if (rc == YX_OK) {
		if (id != NULL)
			snprintf(want->thread_id, sizeof(want->thread_id), "%s", id);
		else
			thread_new_id(want->thread_id, sizeof(want->thread_id));
		snprintf(want->owner, sizeof(want->owner), "%s", r->user);
		snprintf(want->agent_id, sizeof(want->agent_id), "%s", agent ? agent : "");
		snprintf(want->agent_config_id, sizeof(want->agent_config_id), "%s",
		    conf ? conf : "");
	}
	json_object_put(body);
	return rc;
}

int
yx_h_threads_create(struct yx_wctx *w, struct yx_http_req *r, const char *arg)
{
	struct yx_thread	 want, t;
	struct yx_errctx	 e;
	bool			 created = false;
	int			 rc;

	yx_errctx_clear(&e);
	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_parse_thread_create(w, r, false, &want)) != YX_OK)
		return rc;
	snprintf(r->thread_id, sizeof(r->thread_id), "%s", want.thread_id);
	if ((rc = yx_thread_create_limited(&w->store, &want,
		 (unsigned)w->cfg->max_threads_per_user, &t, &created, &e)) !=
	    YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	return yx_http_send_obj(r, created ? 201 : 200, thread_json(&t));
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
	if ((rc = yx_need_user(r)) != YX_OK)
		return rc;
	if ((rc = yx_thread_list(&w->store, r->user, &v, &n, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	if ((o = yx_json_list("threads", &a)) == NULL) {
		rc = YX_E_NOMEM;
		goto done;
	}
	for (i = 0; i < n; i++)
		json_object_array_add(a, thread_json(&v[i]));
	rc = yx_http_send_json(r, 200, o);
done:
	json_object_put(o);
	free(v);
	return rc;
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
	struct json_object	*o;
	int			 rc;

	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
		return rc;
	if ((o = thread_json(&t)) == NULL)
		return YX_E_NOMEM;
	json_object_object_add(o, "sandbox", thread_sandbox_json(w, t.thread_id));
	json_object_object_add(o, "disk", yx_disk_json(w, t.thread_id));
	return yx_http_send_obj(r, 200, o);
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
	if ((rc = yx_need_user(r)) != YX_OK ||
	    (rc = yx_load_thread(w, r, arg, strlen(arg), &t)) != YX_OK)
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
	if (w->prov_ok)
		(void)yx_provider_destroy(&w->prov, NULL, t.thread_id, NULL);
	if ((rc = yx_thread_purge(&w->store, &t, tomb, &e)) != YX_OK)
		return yx_send_errctx(r, rc, &e), rc;
	return yx_http_send_empty(r, 204);
}

/* For the front (remote_int.h): the record's view and the create body. */
struct json_object *
yx_thread_json(const struct yx_thread *t)
{
	return thread_json(t);
}
